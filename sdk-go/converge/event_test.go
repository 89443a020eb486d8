package converge

import (
	"context"
	"errors"
	"strings"
	"testing"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
)

// TestEventsGoOutBeforeTheResult: a handler's events are sent on the
// stream under its lease, in order, before its result.
func TestEventsGoOutBeforeTheResult(t *testing.T) {
	f := newFakeServer(t)
	w := newTestWorker(f)
	w.Handle("greeting", 1, "reconcile", func(ctx context.Context, task *Task) (*Result, error) {
		if err := task.Event(ctx, EventWarning, "Replacing", "replacing the object"); err != nil {
			return nil, err
		}
		if err := task.Event(ctx, EventNormal, "Replaced", "done"); err != nil {
			return nil, err
		}
		return nil, nil
	})
	w.run(t)
	s := f.accept(t)
	s.subscribed(t, nil, nil)
	s.task(t, greetingTask(1, `{}`))
	r := s.result(t)
	var got []string
	sawResult := false
	for _, m := range s.sent() {
		if e := m.GetTaskEvent(); e != nil {
			if sawResult {
				t.Errorf("event %v sent after the result", e)
			}
			if e.GetLease().GetTaskId() != 1 || e.GetLease().GetEpoch() != 1 {
				t.Errorf("event lease %v; want the task's", e.GetLease())
			}
			got = append(got, e.GetType()+" "+e.GetReason()+": "+e.GetMessage())
		}
		if resultOf(m) != nil {
			sawResult = true
		}
	}
	if r.GetSuccess() == nil {
		t.Fatalf("result %v; want success", r)
	}
	if want := "Warning Replacing: replacing the object|Normal Replaced: done"; strings.Join(got, "|") != want {
		t.Errorf("events sent: %q; want %q", got, want)
	}
}

// TestEventRefusals: an invalid event is an error naming what is wrong; a
// preview's and a hand-built task's events are accepted and go nowhere.
func TestEventRefusals(t *testing.T) {
	ctx := context.Background()
	var recorded []Event
	task := (&Task{Kind: "greeting", Namespace: "default", Name: "hello"}).WithEventRecorder(func(e Event) { recorded = append(recorded, e) })
	for _, c := range []struct {
		typ            EventType
		reason, msg    string
		wantErrContain string
	}{
		{"Info", "Replacing", "", "type"},
		{EventNormal, "replacing", "", "reason"},
		{EventNormal, "", "", "reason"},
		{EventNormal, strings.Repeat("A", 64), "", "reason"},
		{EventWarning, "Replacing", strings.Repeat("x", 4097), "message"},
	} {
		err := task.Event(ctx, c.typ, c.reason, c.msg)
		if err == nil || !strings.Contains(err.Error(), c.wantErrContain) || !strings.Contains(err.Error(), "greeting default/hello") {
			t.Errorf("Event(%q, %q, %d bytes) = %v; want an error about the %s naming the resource", c.typ, c.reason, len(c.msg), err, c.wantErrContain)
		}
	}
	if len(recorded) != 0 {
		t.Errorf("refused events were recorded: %v", recorded)
	}
	if err := task.AsPreview().Event(ctx, EventWarning, "Replacing", "x"); err != nil || len(recorded) != 0 {
		t.Errorf("a preview's event: %v, recorded %v; want nil and nothing", err, recorded)
	}
	if err := (&Task{}).Event(ctx, EventNormal, "Started", ""); err != nil {
		t.Errorf("a hand-built task's event: %v; want nil", err)
	}
	done, cancel := context.WithCancel(ctx)
	cancel()
	if err := task.Event(done, EventNormal, "Started", ""); !errors.Is(err, context.Canceled) {
		t.Errorf("an event with a cancelled context: %v; want context.Canceled", err)
	}
	if err := task.Event(ctx, EventNormal, "Started", "ok"); err != nil || len(recorded) != 1 || recorded[0] != (Event{EventNormal, "Started", "ok"}) {
		t.Errorf("a valid event: %v, recorded %v", err, recorded)
	}
}

// TestEventQueueIsBounded: past the bound an event is refused with
// ErrEventQueueFull; an abandoned task's events are dropped quietly.
func TestEventQueueIsBounded(t *testing.T) {
	l := newLedger(1)
	starts, err := l.accept(&convergev1.Task{Lease: lease(1)}, nop)
	if err != nil || len(starts) != 1 {
		t.Fatalf("accept: %v, %d started", err, len(starts))
	}
	ex := starts[0]
	for i := range maxQueuedEvents {
		if err := l.queueEvent(ex, Event{EventNormal, "Step", ""}); err != nil {
			t.Fatalf("event %d: %v", i, err)
		}
	}
	if err := l.queueEvent(ex, Event{EventNormal, "Step", ""}); !errors.Is(err, ErrEventQueueFull) {
		t.Fatalf("an event past the bound: %v; want ErrEventQueueFull", err)
	}
	if n := len(l.takeEvents()); n != maxQueuedEvents {
		t.Fatalf("took %d events; want %d", n, maxQueuedEvents)
	}
	l.abandon(ex.key)
	if err := l.queueEvent(ex, Event{EventNormal, "Step", ""}); err != nil || len(l.takeEvents()) != 0 {
		t.Errorf("an abandoned task's event: %v; want it dropped without an error", err)
	}
}
