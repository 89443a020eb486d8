package manifest

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
	"github.com/convergehq/converge/server/internal/schema"
	"github.com/convergehq/converge/server/internal/trigger"
)

// DefaultTaskDeadline is the time a worker has for one task when the
// manifest's policy.task_deadline_seconds is 0.
const DefaultTaskDeadline = 300 * time.Second

// Kind is a legal manifest compiled for use: what the server caches per
// (kind, kind_version). A Kind is read-only once Compile returns it, apart
// from Revision, and is safe for concurrent use.
type Kind struct {
	// Kind is the kind's name.
	Kind string
	// Version is the kind's version.
	Version int32
	// Revision is the stored manifest's revision. Compile copies it from
	// the manifest; the server sets it from the database.
	Revision int64
	// Manifest is a private copy of the compiled manifest. Do not modify it.
	Manifest *convergev1.KindManifest
	// Spec, Status and Config validate resource specs, reported statuses
	// and provider configs. A nil schema accepts anything (Validate on a
	// nil *schema.Schema returns nil).
	Spec, Status, Config *schema.Schema
	// Policy is the manifest's policy with defaults applied.
	Policy Policy

	inputs    map[string]*schema.Schema
	byTrigger map[string]*convergev1.Reaction
	byVerb    map[string]*convergev1.Reaction
}

// Policy is a kind's policy with server defaults applied. Zero values mean
// what the manifest says they mean: no cap, never, prune at once.
type Policy struct {
	// MaxInflight caps tasks of this kind in flight across replicas (0: no cap).
	MaxInflight int32
	// TaskDeadline is the time a worker has for one task.
	TaskDeadline time.Duration
	// ResyncInterval is how often settled resources are re-observed (0: never).
	ResyncInterval time.Duration
	// ResyncRecomposes re-runs the composer on resync as well.
	ResyncRecomposes bool
	// OrphanGrace is how long an orphaned child is kept (0: pruned at once).
	OrphanGrace time.Duration
	// MaxTransientAttempts is the number of consecutive transient failures
	// after which a failure turns terminal (0: never).
	MaxTransientAttempts int32
	// Retired refuses new resources of this kind version.
	Retired bool
}

// Compile checks m against every legality rule and compiles its schemas.
// On failure the error is an *Error listing every problem. m is copied:
// later changes to m do not affect the Kind.
func Compile(m *convergev1.KindManifest) (*Kind, error) {
	if m == nil {
		return nil, errors.New("manifest: missing")
	}
	m = proto.CloneOf(m)
	c := &checker{m: m}
	c.checkReactions()
	c.checkKind()
	schemas := c.compileSchemas()
	if len(c.problems) > 0 {
		sortProblems(c.problems)
		return nil, &Error{Problems: c.problems}
	}
	k := &Kind{
		Kind:      m.GetKind(),
		Version:   m.GetKindVersion(),
		Revision:  m.GetRevision(),
		Manifest:  m,
		Spec:      schemas.spec,
		Status:    schemas.status,
		Config:    schemas.config,
		Policy:    policyOf(m.GetPolicy()),
		inputs:    schemas.inputs,
		byTrigger: map[string]*convergev1.Reaction{},
		byVerb:    map[string]*convergev1.Reaction{},
	}
	for _, r := range m.GetReactions() {
		if r.GetTrigger() == trigger.Operation {
			k.byVerb[r.GetVerb()] = r
		} else {
			k.byTrigger[r.GetTrigger()] = r
		}
	}
	return k, nil
}

func policyOf(p *convergev1.KindPolicy) Policy {
	deadline := DefaultTaskDeadline
	if s := p.GetTaskDeadlineSeconds(); s > 0 {
		deadline = seconds(s)
	}
	return Policy{
		MaxInflight:          p.GetMaxInflight(),
		TaskDeadline:         deadline,
		ResyncInterval:       seconds(p.GetResyncIntervalSeconds()),
		ResyncRecomposes:     p.GetResyncRecomposes(),
		OrphanGrace:          seconds(p.GetOrphanGraceSeconds()),
		MaxTransientAttempts: p.GetMaxTransientAttempts(),
		Retired:              p.GetRetired(),
	}
}

func seconds(s int32) time.Duration {
	if s <= 0 {
		return 0
	}
	return time.Duration(s) * time.Second
}

// Reaction returns the reaction for a trigger other than operation (see
// OperationReaction). Do not modify the returned reaction.
func (k *Kind) Reaction(trigger string) (*convergev1.Reaction, bool) {
	r, ok := k.byTrigger[trigger]
	return r, ok
}

// OperationReaction returns the reaction that implements a verb.
// Do not modify the returned reaction.
func (k *Kind) OperationReaction(verb string) (*convergev1.Reaction, bool) {
	r, ok := k.byVerb[verb]
	return r, ok
}

// OperationInput returns the input schema of a declared verb; ok is false
// for an undeclared verb. A nil schema (no input_schema) accepts any input.
func (k *Kind) OperationInput(verb string) (s *schema.Schema, ok bool) {
	s, ok = k.inputs[verb]
	return s, ok
}

// HasVerb reports whether the kind declares verb in operations[].
func (k *Kind) HasVerb(verb string) bool {
	_, ok := k.inputs[verb]
	return ok
}

// Verbs returns the declared operation verbs in manifest order.
func (k *Kind) Verbs() []string {
	out := make([]string, 0, len(k.Manifest.GetOperations()))
	for _, op := range k.Manifest.GetOperations() {
		out = append(out, op.GetVerb())
	}
	return out
}

// ValidateInput checks a decoded operation input (see schema.Decode)
// against the verb's input_schema. It returns nil, a
// *schema.ValidationError whose paths point into the input, or an error
// naming an undeclared verb and the declared ones. A verb without an
// input_schema accepts any input.
func (k *Kind) ValidateInput(verb string, doc any) error {
	s, ok := k.inputs[verb]
	if !ok {
		return fmt.Errorf("verb %q is not declared by kind %s v%d; %s", verb, k.Kind, k.Version, k.declaredVerbs())
	}
	return s.Validate(doc)
}

// declaredVerbs says which verbs the kind declares, for error messages.
func (k *Kind) declaredVerbs() string {
	verbs := k.Verbs()
	if len(verbs) == 0 {
		return "it declares no operations"
	}
	return "declared verbs: " + strings.Join(verbs, ", ")
}

// IsReactor reports whether this is a reactor kind: one whose only reaction
// has trigger reactor.
func (k *Kind) IsReactor() bool {
	_, ok := k.byTrigger[trigger.Reactor]
	return ok
}

// IsComposite reports whether the kind has a composer: a specChange
// reaction that emits children.
func (k *Kind) IsComposite() bool {
	r, ok := k.byTrigger[trigger.SpecChange]
	return ok && emits(r, EmitChildren)
}
