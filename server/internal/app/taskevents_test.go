package app_test

import (
	"context"
	"fmt"
	"testing"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
	"github.com/convergehq/converge/sdk-go/gen/converge/v1/convergev1connect"
)

// eventsWith lists the events of kind/name with reason, oldest first.
func eventsWith(t *testing.T, ctl convergev1connect.ControlServiceClient, kind, name, reason string) []*convergev1.Event {
	t.Helper()
	resp, err := ctl.ListEvents(context.Background(), &convergev1.ListEventsRequest{Kind: kind, Name: name, PageSize: 1000})
	if err != nil {
		t.Fatal(err)
	}
	var out []*convergev1.Event
	evs := resp.GetEvents()
	for i := len(evs) - 1; i >= 0; i-- {
		if evs[i].GetReason() == reason {
			out = append(out, evs[i])
		}
	}
	return out
}

// TestTaskEventsAreRecordedWhileTheLeaseIsCurrent: a running task's events
// land on its resource, by the worker, at the task's generation, and
// before its result's; past the cap one Warning says the rest are
// dropped; after the result the lease is spent and records nothing.
func TestTaskEventsAreRecordedWhileTheLeaseIsCurrent(t *testing.T) {
	_, ctl, wrk := server(t)
	applyGreeting(t, ctl)
	applyResource(t, ctl, "hello", map[string]any{"name": "world"})
	w, _ := connectWorker(t, wrk, 1)
	task := w.Task()
	for i := range 12 {
		w.Event(task.GetLease(), "Normal", "Step", fmt.Sprintf("step %d", i))
	}
	w.Result(task.GetLease(), `{"message":"hi"}`)
	if a := w.Ack(); !a.GetApplied() {
		t.Fatalf("ack = %v", a)
	}
	// The broker reads a stream in order: the events were handled before
	// the result was acknowledged.
	steps := eventsWith(t, ctl, "greeting", "hello", "Step")
	if len(steps) != 10 {
		t.Fatalf("%d Step events recorded; want the cap, 10", len(steps))
	}
	for i, e := range steps {
		if e.GetMessage() != fmt.Sprintf("step %d", i) || e.GetType() != "Normal" || e.GetActor() != "worker:raw" || e.GetGeneration() != 1 {
			t.Errorf("event %d = %v; want step %d, Normal, by worker:raw at generation 1", i, e, i)
		}
	}
	dropped := eventsWith(t, ctl, "greeting", "hello", "TaskEventsDropped")
	if len(dropped) != 1 || dropped[0].GetType() != "Warning" || dropped[0].GetActor() != "worker:raw" {
		t.Fatalf("TaskEventsDropped events %v; want one Warning by worker:raw", dropped)
	}

	// The result spent the lease: a late event is dropped, and the stream
	// goes on (a resent result is still answered).
	w.Event(task.GetLease(), "Warning", "Late", "after the result")
	w.Result(task.GetLease(), `{"message":"again"}`)
	if a := w.Ack(); a.GetApplied() {
		t.Fatalf("a resent result was applied: %v", a)
	}
	if late := eventsWith(t, ctl, "greeting", "hello", "Late"); len(late) != 0 {
		t.Errorf("an event after the result was recorded: %v", late)
	}
}

// TestTaskEventsOfAReassignedTaskAreDropped: once the task went to another
// worker under a new epoch, the old lease's events are dropped; the new
// one's are recorded.
func TestTaskEventsOfAReassignedTaskAreDropped(t *testing.T) {
	_, ctl, wrk := server(t)
	applyGreeting(t, ctl)
	applyResource(t, ctl, "hello", map[string]any{"name": "world"})
	w1, _ := connectWorker(t, wrk, 1)
	first := w1.Task()
	w1.Close()
	w2, _ := connectWorker(t, wrk, 1)
	second := w2.Task()
	if second.GetLease().GetEpoch() == first.GetLease().GetEpoch() {
		t.Fatalf("not redispatched: %v", second.GetLease())
	}
	w2.Event(first.GetLease(), "Warning", "Stale", "under the old epoch")
	w2.Event(second.GetLease(), "Normal", "Current", "under the new epoch")
	w2.Result(second.GetLease(), `{"message":"fresh"}`)
	if a := w2.Ack(); !a.GetApplied() {
		t.Fatalf("ack = %v", a)
	}
	if stale := eventsWith(t, ctl, "greeting", "hello", "Stale"); len(stale) != 0 {
		t.Errorf("the old lease's event was recorded: %v", stale)
	}
	if cur := eventsWith(t, ctl, "greeting", "hello", "Current"); len(cur) != 1 {
		t.Errorf("the current lease's events: %v; want one", cur)
	}
}

// TestPreviewTaskEventsAreNotRecorded: a preview changes nothing, its
// events included.
func TestPreviewTaskEventsAreNotRecorded(t *testing.T) {
	_, ctl, wrk := server(t)
	applyPlanKinds(t, ctl)
	ctx := context.Background()
	if _, err := ctl.ApplyResource(ctx, planStackRequest(t, "s", map[string]any{"count": 0})); err != nil {
		t.Fatal(err)
	}
	w, _ := connectWorkerServing(t, wrk, 1, []*convergev1.ReactionRef{{Kind: "stack", KindVersion: 1, Reaction: "compose"}})
	task := w.Task()
	w.Compose(task.GetLease(), &convergev1.Composition{})
	if a := w.Ack(); !a.GetApplied() {
		t.Fatalf("ack = %v", a)
	}
	planned := make(chan error, 1)
	go func() {
		_, err := ctl.PlanChange(ctx, &convergev1.PlanChangeRequest{Resources: []*convergev1.ApplyResourceRequest{
			planStackRequest(t, "s", map[string]any{"count": 1})}})
		planned <- err
	}()
	preview := w.Task()
	if !preview.GetPreview() {
		t.Fatalf("task %v; want the plan's preview", preview)
	}
	w.Event(preview.GetLease(), "Warning", "Previewed", "a preview's event")
	w.Compose(preview.GetLease(), &convergev1.Composition{})
	w.Ack()
	if err := <-planned; err != nil {
		t.Fatal(err)
	}
	if got := eventsWith(t, ctl, "stack", "s", "Previewed"); len(got) != 0 {
		t.Errorf("a preview's event was recorded: %v", got)
	}
}
