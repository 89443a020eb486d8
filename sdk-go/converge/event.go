package converge

import (
	"context"
	"errors"
	"fmt"

	"buf.build/go/protovalidate"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
)

// EventType is the type of an event a task records: [EventNormal] or
// [EventWarning].
type EventType string

// Event types.
const (
	EventNormal  EventType = "Normal"
	EventWarning EventType = "Warning"
)

// Event is one event a task reported with [Task.Event].
type Event struct {
	Type EventType
	// Reason is a machine-readable cause in UpperCamelCase, e.g. Replacing.
	Reason  string
	Message string
}

// maxQueuedEvents bounds the events that wait for the stream, across all
// tasks, so a handler that reports faster than the stream sends (or while
// it is down) does not grow the worker without bound.
const maxQueuedEvents = 1000

// ErrEventQueueFull is returned by [Task.Event] when too many events wait
// for the stream already; the event is dropped.
var ErrEventQueueFull = errors.New("converge: too many task events wait for the stream; the event is dropped")

// Event records an event on the task's resource now, while the task runs,
// rather than with its result: for what the resource's owner should see
// before the task ends, e.g. that the handler is about to replace an
// object. The server records it only while the task's lease is current,
// and at most 10 per attempt (one more, a Warning, says the rest were
// dropped); an event the server drops is not an error here.
//
// Event does not wait for the server: it queues the event for the stream,
// in order before the task's result, and returns. It returns an error for
// an invalid type, reason (UpperCamelCase, at most 63 characters) or
// message (at most 4,096 characters), [ErrEventQueueFull], or ctx's error
// when ctx is done. For a preview (see [Task.Preview]) it records nothing
// and returns nil, as it does for a task not dispatched by a worker (one a
// test built, unless convergetest built it: it keeps the events).
func (t *Task) Event(ctx context.Context, typ EventType, reason, message string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	// The lease is a stand-in: the check is of what the handler chose.
	m := &convergev1.TaskEvent{Lease: &convergev1.Lease{TaskId: 1, Epoch: 1}, Type: string(typ), Reason: reason, Message: message}
	if err := protovalidate.Validate(m); err != nil {
		return fmt.Errorf("converge: event %q of %s %s/%s: %w", reason, t.Kind, t.Namespace, t.Name, err)
	}
	if t.preview || t.events == nil {
		return nil
	}
	return t.events(Event{Type: typ, Reason: reason, Message: message})
}

// WithEventRecorder returns a copy of t whose [Task.Event] passes the
// events it accepts to record instead of sending them: for test
// harnesses (convergetest.NewTask and convergetest.Events).
func (t *Task) WithEventRecorder(record func(Event)) *Task {
	c := *t
	c.events = func(e Event) error {
		record(e)
		return nil
	}
	return &c
}

// queueEvent queues a running task's event for the stream. An event of a
// task the worker no longer runs for the server (cancelled, its lease
// lost, given back) is dropped without an error: the server would drop it.
func (l *ledger) queueEvent(ex *execution, e Event) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if ex.abandoned || l.running[ex.key] != ex {
		return nil
	}
	if len(l.events) >= maxQueuedEvents {
		return ErrEventQueueFull
	}
	l.events = append(l.events, &convergev1.TaskEvent{Lease: ex.task.GetLease(),
		Type: string(e.Type), Reason: e.Reason, Message: e.Message})
	l.poke()
	return nil
}

// takeEvents returns the queued events, oldest first, and forgets them.
// The sender takes them after the results it sends in the same round, so
// an event queued before its task's result goes out before it.
func (l *ledger) takeEvents() []*convergev1.TaskEvent {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := l.events
	l.events = nil
	return out
}
