package converge

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
)

// The transitions a reactor binding watches for, in [ReactorEvent.Transition].
const (
	TransitionCreated  = "created"
	TransitionSynced   = "synced"
	TransitionDegraded = "degraded"
	TransitionFailed   = "failed"
	TransitionDeleted  = "deleted"
)

// ReactorEvent is what a reactor reaction is told: a resource matched by a
// reactor binding went through a transition. A reactor acts on it (posts a
// message, opens a ticket, calls a webhook) and returns a nil [Result], or
// an error: a transient one has the server deliver the event again later.
//
// Delivery is at least once. The same event can arrive more than once:
// after a transient failure, after a lease expires, or after the worker
// reconnects. [Task.DedupToken] is the same on every delivery of one event
// and differs between events, so key the side effect by it: pass it as the
// idempotency key of the API you call, or record it (say, under a unique
// constraint) with the effect and skip events whose token is already
// recorded.
type ReactorEvent struct {
	// Binding names the reactor binding that matched.
	Binding string
	// Transition is what happened: one of TransitionCreated,
	// TransitionSynced, TransitionDegraded, TransitionFailed or
	// TransitionDeleted.
	Transition string
	// Watched names the resource it happened to.
	Watched Ref
	// WatchedKindVersion and WatchedGeneration are the watched resource's
	// kind version and generation when it happened.
	WatchedKindVersion int
	WatchedGeneration  int64
	// WatchedPhase is the watched resource's phase when it happened, e.g.
	// "Ready" or "Failed".
	WatchedPhase string
	// WatchedStatus is the watched resource's status when it happened, a
	// JSON object; empty when it had none.
	WatchedStatus json.RawMessage
}

// DecodeWatchedStatus unmarshals the watched resource's status into v, as
// [json.Unmarshal] does. An empty status leaves v unchanged.
func (e *ReactorEvent) DecodeWatchedStatus(v any) error {
	if err := decodeJSON("status", e.WatchedStatus, v); err != nil {
		return fmt.Errorf("converge: decode watched status of %s (binding %q): %w", describeRef(e.Watched), e.Binding, err)
	}
	return nil
}

// newReactorEvent converts the wire event; nil when the task carries none.
func newReactorEvent(m *convergev1.ReactorTask) *ReactorEvent {
	if m == nil {
		return nil
	}
	return &ReactorEvent{
		Binding:            m.GetBinding(),
		Transition:         m.GetTransition(),
		Watched:            refOf(m.GetWatched()),
		WatchedKindVersion: int(m.GetWatchedKindVersion()),
		WatchedGeneration:  m.GetWatchedGeneration(),
		WatchedPhase:       m.GetWatchedPhase(),
		WatchedStatus:      json.RawMessage(m.GetWatchedStatus()),
	}
}

// checkReactorResult refuses a reactor's result that carries anything: a
// reactor emits side effects only, so whatever it carried would be lost.
func checkReactorResult(s *convergev1.Success) error {
	var parts []string
	if len(s.GetStatus()) > 0 {
		parts = append(parts, "status")
	}
	if s.GetUnhealthy() {
		parts = append(parts, "unhealthy")
	}
	if len(s.GetConditions()) > 0 {
		parts = append(parts, "conditions")
	}
	if s.GetComposition() != nil {
		parts = append(parts, "a composition")
	}
	if len(s.GetOperationOutput()) > 0 {
		parts = append(parts, "an output")
	}
	if len(parts) == 0 {
		return nil
	}
	return errors.New("of a reactor task carries " + strings.Join(parts, ", ") +
		": a reactor emits side effects only; return a nil Result")
}
