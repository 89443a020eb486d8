package stdio

import (
	"encoding/json"
	"time"

	"github.com/convergehq/converge/sdk-go/converge"
)

// emptyObject stands in for a spec, status, config or input that is absent,
// so a program can always index into them.
var emptyObject = json.RawMessage(`{}`)

// NewRequest builds the request for task t of a reaction that emits emits.
func NewRequest(t *converge.Task, emits []string) *Request {
	req := &Request{
		Protocol:   Protocol,
		Reaction:   Reaction{Name: t.Reaction, Trigger: t.Trigger, Emits: emits},
		Spec:       object(t.Spec),
		Status:     object(t.Status),
		Config:     object(t.Config),
		Attempt:    t.Attempt,
		DedupToken: t.DedupToken,
		Preview:    t.Preview(),
		ImportID:   t.ImportID,
	}
	if len(t.RejectedStatus) > 0 && json.Valid(t.RejectedStatus) {
		req.RejectedStatus = t.RejectedStatus
	}
	if req.Reaction.Emits == nil {
		req.Reaction.Emits = []string{}
	}
	if !t.Deadline.IsZero() {
		req.Deadline = t.Deadline.UTC().Format(time.RFC3339Nano)
	}
	if t.Reactor == nil {
		labels := t.Labels
		if labels == nil {
			labels = map[string]string{}
		}
		req.Resource = &Resource{Kind: t.Kind, Version: t.KindVersion, Namespace: t.Namespace,
			Name: t.Name, UID: t.UID, Generation: t.Generation, Labels: labels}
	}
	if r := t.Rollup; r != nil {
		req.Rollup = &Rollup{Total: r.Total, Ready: r.Ready, Reconciling: r.Reconciling, Degraded: r.Degraded,
			Failed: r.Failed, Deleting: r.Deleting, Excluded: r.Excluded, Culprits: []Culprit{}}
		for _, c := range r.Culprits {
			cu := Culprit{Resource: ref(c.Resource), Phase: c.Phase, Message: c.Message, Path: []Ref{}}
			for _, p := range c.Path {
				cu.Path = append(cu.Path, ref(p))
			}
			req.Rollup.Culprits = append(req.Rollup.Culprits, cu)
		}
	}
	if op := t.Operation; op != nil {
		req.Operation = &Operation{ID: op.ID, Verb: op.Verb, Input: object(op.Input)}
	}
	if ev := t.Reactor; ev != nil {
		req.Reactor = &Reactor{Binding: ev.Binding, Transition: ev.Transition, Watched: ref(ev.Watched),
			WatchedVersion: ev.WatchedKindVersion, WatchedGeneration: ev.WatchedGeneration,
			WatchedPhase: ev.WatchedPhase, WatchedStatus: object(ev.WatchedStatus)}
	}
	return req
}

func ref(r converge.Ref) Ref { return Ref{Namespace: r.Namespace, Kind: r.Kind, Name: r.Name} }

// object returns raw, or {} when it is empty or not valid JSON (the server
// sends objects; this keeps the request well-formed whatever it holds).
func object(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 || !json.Valid(raw) {
		return emptyObject
	}
	return raw
}
