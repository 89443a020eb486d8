package reactor

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"

	"github.com/convergehq/converge/server/internal/labels"
	"github.com/convergehq/converge/server/internal/store"
)

// Transitions a binding can watch for.
const (
	Created  = "created"
	Synced   = "synced"
	Degraded = "degraded"
	Failed   = "failed"
	Deleted  = "deleted"
)

// Transitions lists every transition in its canonical order.
var Transitions = []string{Created, Synced, Degraded, Failed, Deleted}

// phaseTransitions: reaching one of these phases from another is a
// transition of its own.
var phaseTransitions = map[string]string{"Ready": Synced, "Degraded": Degraded, "Failed": Failed}

// transitionsOf reads the transitions one change of the feed stands for:
// created and deleted from its type, the others from a phase reached
// from a different one (a resource created already Ready is created and
// synced).
func transitionsOf(c store.Change) []string {
	if c.Type == "deleted" {
		return []string{Deleted}
	}
	var out []string
	if c.Type == "created" {
		out = append(out, Created)
	}
	if t, ok := phaseTransitions[c.Phase]; ok && (c.PreviousPhase == nil || *c.PreviousPhase != c.Phase) {
		out = append(out, t)
	}
	return out
}

// Payload is what a delivery task carries: the reactor's worker is told
// which binding matched, what happened, and to which resource.
type Payload struct {
	Binding            string  `json:"binding"`
	Transition         string  `json:"transition"`
	Watched            Watched `json:"watched"`
	WatchedKindVersion int32   `json:"watched_kind_version"`
	WatchedGeneration  int64   `json:"watched_generation"`
	WatchedPhase       string  `json:"watched_phase"`
	// WatchedStatus is the resource's status when the delivery was
	// queued (filled in by the store, see store.Delivery.WithStatus);
	// null once the resource is gone.
	WatchedStatus json.RawMessage `json:"watched_status"`
}

// Watched names the resource a delivery is about.
type Watched struct {
	Namespace string `json:"namespace"`
	Kind      string `json:"kind"`
	Name      string `json:"name"`
	UID       string `json:"uid"`
}

// DedupToken is a delivery's task key: the same for every redelivery of
// one transition to one binding, different for anything else.
func DedupToken(binding string, resourceID int64, transition string, resourceVersion int64) string {
	return binding + "/" + strconv.FormatInt(resourceID, 10) + "/" + transition + "/" + strconv.FormatInt(resourceVersion, 10)
}

// binding is a stored binding ready to match.
type binding struct {
	store.ReactorBinding
	selector    labels.Selector
	transitions map[string]bool
}

// bindingError reports a stored binding that cannot match anything.
type bindingError struct {
	name     string
	revision int64
	err      error
}

// compile prepares the enabled bindings. A binding whose selector no
// longer parses (it was checked at apply) matches nothing and is
// reported, so one bad row cannot stop every other binding.
func compile(bs []store.ReactorBinding) ([]binding, []*bindingError) {
	var out []binding
	var bad []*bindingError
	for _, b := range bs {
		if b.Disabled {
			continue
		}
		sel, err := labels.Parse(b.LabelSelector)
		if err != nil {
			bad = append(bad, &bindingError{name: b.Name, revision: b.Revision, err: fmt.Errorf("label_selector: %w", err)})
			continue
		}
		ts := map[string]bool{}
		for _, t := range b.Transitions {
			ts[t] = true
		}
		out = append(out, binding{ReactorBinding: b, selector: sel, transitions: ts})
	}
	return out, bad
}

// watches reports whether a binding cares about a change's resource at
// all: its kind and version, and a change made after the binding was
// created (a new binding does not replay older history).
func (b *binding) watches(c store.WatchedChange) bool {
	return c.Kind == b.WatchKind &&
		(b.WatchKindVersion == 0 || c.KindVersion == b.WatchKindVersion) &&
		!c.At.Before(b.CreatedAt)
}

// selects reports whether the resource's labels match the selector. The
// labels of a resource that is gone are unknown: only a binding without
// selector matches it (apply refuses a selector with the deleted
// transition for that reason).
func (b *binding) selects(c store.WatchedChange) bool {
	if len(b.selector) == 0 {
		return true
	}
	if !c.Exists {
		return false
	}
	var l map[string]string
	if err := json.Unmarshal(c.Labels, &l); err != nil {
		return false
	}
	return matches(b.selector, l)
}

// match turns changes into deliveries for the bindings.
func match(bs []binding, changes []store.WatchedChange) ([]store.Delivery, error) {
	var out []store.Delivery
	for _, c := range changes {
		ts := transitionsOf(c.Change)
		if len(ts) == 0 {
			continue
		}
		for i := range bs {
			b := &bs[i]
			if !b.watches(c) {
				continue
			}
			for _, t := range ts {
				if !b.transitions[t] || !b.selects(c) {
					continue
				}
				d, err := delivery(b, t, c)
				if err != nil {
					return nil, err
				}
				out = append(out, d)
			}
		}
	}
	return out, nil
}

func delivery(b *binding, transition string, c store.WatchedChange) (store.Delivery, error) {
	p := Payload{
		Binding:    b.Name,
		Transition: transition,
		Watched: Watched{Namespace: c.Namespace, Kind: c.Kind, Name: c.Name,
			UID: strconv.FormatInt(c.ResourceID, 10)},
		WatchedKindVersion: c.KindVersion,
		WatchedGeneration:  c.Generation,
		WatchedPhase:       c.Phase,
	}
	raw, err := json.Marshal(p)
	if err != nil {
		return store.Delivery{}, fmt.Errorf("reactor binding %q: payload for %s/%s/%s: %w", b.Name, c.Namespace, c.Kind, c.Name, err)
	}
	return store.Delivery{
		ResourceID: c.ResourceID, Key: DedupToken(b.Name, c.ResourceID, transition, c.ResourceVersion),
		ReactorKind: b.ReactorKind, ReactorKindVersion: b.ReactorKindVersion, Payload: raw,
		WithStatus: c.Exists && transition != Deleted,
	}, nil
}

// matches evaluates a selector on a resource's labels, with the meaning
// the resource list's filter gives it: a negated term holds for a
// resource without the label.
func matches(sel labels.Selector, l map[string]string) bool {
	for _, t := range sel {
		v, ok := l[t.Key]
		var hold bool
		switch t.Op {
		case labels.Equals:
			hold = ok && v == t.Values[0]
		case labels.NotEquals:
			hold = !ok || v != t.Values[0]
		case labels.Exists:
			hold = ok
		case labels.NotExists:
			hold = !ok
		case labels.In:
			hold = ok && slices.Contains(t.Values, v)
		case labels.NotIn:
			hold = !ok || !slices.Contains(t.Values, v)
		}
		if !hold {
			return false
		}
	}
	return true
}
