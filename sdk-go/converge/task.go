package converge

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
)

// HandlerFunc runs one task. It returns the outcome to report to the server:
// a nil error is a success (a nil *Result leaves the resource's status as it
// was); an error is a failure, transient unless wrapped with [Terminal].
//
// ctx is cancelled when the server cancels the task (or, after a reconnect,
// reports its lease lost), when the task's deadline passes, and when a drain
// outlasts the drain timeout. A handler that panics is reported as a
// [PanicError], terminal after [PanicRetries] retries; the worker keeps
// running.
type HandlerFunc func(ctx context.Context, t *Task) (*Result, error)

// Task is one unit of work the server asks a handler to do: run a reaction
// of a kind for one resource.
type Task struct {
	// Kind, KindVersion and Reaction select the handler.
	Kind        string
	KindVersion int
	Reaction    string
	// Trigger is what fired the reaction, e.g. "specChange", or
	// [TriggerObserve] for a resource whose management policy is observe
	// (see [Task.Observing]).
	Trigger string

	// Namespace, Name and UID identify the resource.
	Namespace string
	Name      string
	UID       string
	// Generation counts real changes to the resource's spec.
	Generation int64
	Labels     map[string]string
	// Spec is the resource's spec, a JSON object.
	Spec json.RawMessage
	// Status is the last status applied to the resource, a JSON object;
	// empty when none has been reported yet.
	Status json.RawMessage
	// RejectedStatus is the last status a handler reported for the
	// resource that its kind's status_schema refused (that task failed
	// terminally), a JSON object; empty when there is none, or a
	// conforming status was applied since. It records what the handler
	// said it created: a teardown reads it to remove what Status does not
	// name.
	RejectedStatus json.RawMessage
	// ImportID names an existing external object the resource adopts
	// (the resource's import.id), on every task of a resource that names
	// one; empty otherwise. A handler that does not manage the object yet
	// adopts it instead of creating one, and returns [ImportNotFound] when
	// no object has that id.
	ImportID string

	// Attempt is 1 for the first attempt at this generation.
	Attempt int
	// DedupToken is stable across redeliveries of the same piece of work
	// (a retry, a reassignment) and differs between pieces of work: a
	// forced reconcile or a resync at an unchanged generation gets a new
	// one; an operation's is its id, a reactor delivery's its event. Use it
	// to make side effects idempotent.
	DedupToken string
	// Deadline is when the server gives up on this attempt; zero when the
	// server set none. The handler's context carries the same deadline.
	Deadline time.Time

	// Config is the resource's effective provider config: its kind
	// version's default config with the keys of the resource's named
	// config, if any, on top. A JSON object; empty when there is neither.
	// See [Task.DecodeConfig], [NeedsConfig] and [WithOnConfig].
	Config json.RawMessage

	// Rollup summarises the composite's children for a childrenSettled
	// reaction; nil for other triggers.
	Rollup *Rollup
	// Operation is the operation to run, for an operation reaction; nil
	// for other triggers.
	Operation *Operation
	// Reactor says what happened to the watched resource, for a reactor
	// reaction; nil for other triggers.
	Reactor *ReactorEvent

	// TraceParent is the W3C traceparent of the server's span for this
	// task when the change behind it was traced and sampled; empty
	// otherwise. The SDK has no tracing of its own: the middleware of
	// package github.com/convergehq/converge/sdk-go/otelconverge starts the
	// handler's span under it with OpenTelemetry, so the handler's own
	// outbound calls join the trace.
	TraceParent string

	// preview is set for a preview task (see [Task.Preview]).
	preview bool
	// events takes what [Task.Event] accepts: the worker's queue, a
	// test's recorder, or nil for nothing.
	events func(Event) error
}

// TriggerObserve is the trigger of an observe reaction: the task of a
// resource whose management policy is observe, in place of specChange and
// resync.
const TriggerObserve = "observe"

// Observing reports whether the task only observes its resource: its
// management policy is observe, so the handler must read what exists
// (looking it up by [Task.ImportID] or its last status) and report it,
// creating, changing and deleting nothing.
func (t *Task) Observing() bool { return t.Trigger == TriggerObserve }

// Preview reports whether the task is a preview for a plan (conctl plan,
// ControlService.PlanChange): the server wants to know what the handler
// would answer for the spec a change would give the resource, and never
// applies the result. A handler with side effects (creating something
// outside Converge, sending a message) must skip them and answer what it
// would report; a composer just composes, as it always does.
func (t *Task) Preview() bool { return t.preview }

// AsPreview returns a copy of t marked as a preview, as the server sends
// one: for tests of a handler's preview path (convergetest.AsPreview).
func (t *Task) AsPreview() *Task {
	c := *t
	c.preview = true
	return &c
}

// DecodeSpec unmarshals the task's spec into v, as [json.Unmarshal] does.
// An empty spec leaves v unchanged. An error names the path of the value
// that does not fit v (it wraps a [*DecodeError]). [Typed] handlers get
// the spec decoded.
func (t *Task) DecodeSpec(v any) error {
	return t.decode("spec", t.Spec, v)
}

// DecodeStatus unmarshals the resource's last applied status into v, as
// [json.Unmarshal] does. An empty status (none reported yet) leaves v
// unchanged.
func (t *Task) DecodeStatus(v any) error {
	return t.decode("status", t.Status, v)
}

// DecodeConfig unmarshals the task's effective provider config into v, as
// [json.Unmarshal] does. An empty config leaves v unchanged, so defaults
// set in v before the call stay.
func (t *Task) DecodeConfig(v any) error {
	return t.decode("config", t.Config, v)
}

func (t *Task) decode(field string, data json.RawMessage, v any) error {
	if err := decodeJSON(field, data, v); err != nil {
		return fmt.Errorf("converge: decode %s of %s %s/%s: %w", field, t.Kind, t.Namespace, t.Name, err)
	}
	return nil
}

// newTask converts a wire task into the handler's view of it.
func newTask(m *convergev1.Task) *Task {
	r := m.GetResource()
	t := &Task{
		Kind:        m.GetKind(),
		KindVersion: int(m.GetKindVersion()),
		Reaction:    m.GetReaction(),
		Trigger:     m.GetTrigger(),
		Namespace:   r.GetNamespace(),
		Name:        r.GetName(),
		UID:         r.GetUid(),
		Generation:  r.GetGeneration(),
		Labels:      r.GetLabels(),
		Spec:        json.RawMessage(r.GetSpec()),
		Status:      json.RawMessage(r.GetStatus()),

		RejectedStatus: json.RawMessage(r.GetRejectedStatus()),
		ImportID:       r.GetImportId(),
		Attempt:        int(m.GetAttempt()),
		DedupToken:     m.GetDedupToken(),
		TraceParent:    m.GetTraceparent(),
		Config:         json.RawMessage(m.GetConfig()),
		Rollup:         newRollup(m.GetRollup()),
		Operation:      newOperation(m.GetOperation()),
		Reactor:        newReactorEvent(m.GetReactor()),
		preview:        m.GetPreview(),
	}
	if d := m.GetDeadline(); d != nil {
		t.Deadline = d.AsTime()
	}
	return t
}
