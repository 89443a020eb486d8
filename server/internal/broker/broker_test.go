package broker_test

import (
	"strings"
	"testing"
	"time"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
	"github.com/convergehq/converge/server/internal/store"
	"github.com/convergehq/converge/server/internal/testkit"
)

// TestQueuedTaskIsDeliveredAppliedAndAcked: a queued task reaches a
// worker connected over the real handler; its result is applied (the
// resource is Ready with the status) and acknowledged; the same result
// again, and a result for a lease never given out, are refused.
func TestQueuedTaskIsDeliveredAppliedAndAcked(t *testing.T) {
	e := newEnv(t)
	e.apply("hello", `{"name":"world"}`)
	w, sub := e.worker(e.broker("b1"), 4)
	if sub.GetMemberId() != "b1" || sub.GetLeaseSeconds() != 5 || sub.GetHeartbeatIntervalMs() != 100 {
		t.Fatalf("subscribed = %v", sub)
	}
	task := w.Task()
	if task.GetResource().GetName() != "hello" || task.GetReaction() != "reconcile" || task.GetTrigger() != "specChange" ||
		task.GetAttempt() != 1 || task.GetLease().GetGeneration() != 1 || !strings.Contains(string(task.GetResource().GetSpec()), `"world"`) {
		t.Fatalf("task = %v", task)
	}
	w.Result(task.GetLease(), `{"message":"hello, world"}`)
	if a := w.Ack(); !a.GetApplied() || a.GetLease().GetTaskId() != task.GetLease().GetTaskId() {
		t.Fatalf("ack = %v", a)
	}
	r := e.get("hello")
	if r.Phase != "Ready" || r.SyncedGeneration != 1 || string(r.Status) != `{"message": "hello, world"}` || r.Reconciles != 1 {
		t.Fatalf("after the result: phase %s, synced %d, status %s, reconciles %d", r.Phase, r.SyncedGeneration, r.Status, r.Reconciles)
	}
	w.Result(task.GetLease(), `{"message":"again"}`)
	if a := w.Ack(); a.GetApplied() || a.GetReason() == "" {
		t.Fatalf("ack of a redelivered result = %v; want refused with a reason", a)
	}
	w.Result(&convergev1.Lease{TaskId: 999999, Epoch: 1, Generation: 1}, `{}`)
	if a := w.Ack(); a.GetApplied() {
		t.Fatalf("ack of a forged lease = %v; want refused", a)
	}
	if r := e.get("hello"); r.Reconciles != 1 || string(r.Status) != `{"message": "hello, world"}` {
		t.Fatalf("a refused result changed the resource: reconciles %d, status %s", r.Reconciles, r.Status)
	}
}

// TestStaleLeaseIsRefusedByTheFence: while the worker runs a task, its
// lease is given back and the task claimed again elsewhere under a new
// epoch (as after an expiry). The broker still holds the old lease, so
// only the database's fence stands between the stale result and the
// resource: the result is refused, and the new claim's result applies.
func TestStaleLeaseIsRefusedByTheFence(t *testing.T) {
	e := newEnv(t)
	e.apply("hello", `{"name":"world"}`)
	w, _ := e.worker(e.broker("b1"), 1)
	task := w.Task()
	if err := e.st.ReleaseLeases(e.ctx, []store.Lease{lease(task.GetLease())}); err != nil {
		t.Fatal(err)
	}
	again, err := e.st.Claim(e.ctx, "elsewhere", time.Minute, []store.Want{{Kind: "greeting", Version: 1, Trigger: "specChange", N: 1}})
	if err != nil || len(again) != 1 || again[0].Epoch == task.GetLease().GetEpoch() {
		t.Fatalf("claim elsewhere = %v, %v; want the task under a new epoch", again, err)
	}
	w.Result(task.GetLease(), `{"message":"stale"}`)
	if a := w.Ack(); a.GetApplied() || !strings.Contains(a.GetReason(), "no longer current") {
		t.Fatalf("ack of the stale result = %v; want refused as no longer current", a)
	}
	if r := e.get("hello"); r.Phase != "Reconciling" || len(r.Status) > 2 {
		t.Fatalf("the stale result changed the resource: phase %s, status %s", r.Phase, r.Status)
	}
	res, err := e.st.ApplyOutcomes(e.ctx, []store.Outcome{{Lease: again[0].Lease, Actor: "elsewhere", Status: []byte(`{"message":"fresh"}`)}},
		store.Backoff{Base: time.Second, Max: time.Second})
	if err != nil || !res[0].Applied {
		t.Fatalf("the current claim's result: %+v, %v", res, err)
	}
}

// TestSpecChangeWhileRunningSupersedes: a result for a generation the
// resource has moved past is refused, and the task comes back at once for
// the new generation.
func TestSpecChangeWhileRunningSupersedes(t *testing.T) {
	e := newEnv(t)
	e.apply("hello", `{"name":"one"}`)
	w, _ := e.worker(e.broker("b1"), 1)
	first := w.Task()
	e.apply("hello", `{"name":"two"}`)
	w.Result(first.GetLease(), `{"message":"one"}`)
	if a := w.Ack(); a.GetApplied() || !strings.Contains(a.GetReason(), "new generation") {
		t.Fatalf("ack = %v; want refused for the new generation", a)
	}
	second := w.Task()
	if second.GetLease().GetGeneration() != 2 || !strings.Contains(string(second.GetResource().GetSpec()), `"two"`) {
		t.Fatalf("next task = %v; want generation 2 with the new spec", second)
	}
	w.Result(second.GetLease(), `{"message":"two"}`)
	if a := w.Ack(); !a.GetApplied() {
		t.Fatalf("ack = %v", a)
	}
	if r := e.get("hello"); r.Phase != "Ready" || r.SyncedGeneration != 2 {
		t.Fatalf("resource: phase %s, synced %d; want Ready at 2", r.Phase, r.SyncedGeneration)
	}
}

// TestResumeOnAnotherBroker: a worker whose stream to one broker ended
// resumes its lease on another broker over the same database, which
// applies its result.
func TestResumeOnAnotherBroker(t *testing.T) {
	e := newEnv(t)
	e.apply("hello", `{"name":"world"}`)
	w1, _ := e.worker(e.broker("b1"), 1)
	task := w1.Task()
	w1.Close()
	w2, sub := e.worker(e.broker("b2"), 1, task.GetLease())
	if len(sub.GetAdopted()) != 1 || len(sub.GetLost()) != 0 || sub.GetMemberId() != "b2" {
		t.Fatalf("subscribed = %v; want the lease adopted by b2", sub)
	}
	w2.Result(task.GetLease(), `{"message":"resumed"}`)
	if a := w2.Ack(); !a.GetApplied() {
		t.Fatalf("ack = %v", a)
	}
	if r := e.get("hello"); r.Phase != "Ready" || string(r.Status) != `{"message": "resumed"}` {
		t.Fatalf("resource: phase %s, status %s", r.Phase, r.Status)
	}
}

// TestStatusOutsideTheSchemaFailsTerminally: the broker enforces the
// kind's status schema: a status that does not conform is applied as a
// terminal failure naming the field, not as the status.
func TestStatusOutsideTheSchemaFailsTerminally(t *testing.T) {
	e := newEnv(t)
	e.apply("hello", `{"name":"world"}`)
	w, _ := e.worker(e.broker("b1"), 1)
	task := w.Task()
	w.Result(task.GetLease(), `{"message":42}`)
	if a := w.Ack(); !a.GetApplied() {
		t.Fatalf("ack = %v; the failure is applied", a)
	}
	r := e.get("hello")
	if r.Phase != "Failed" || !r.FailureTerminal || r.FailureMessage == nil || !strings.Contains(*r.FailureMessage, "/message") {
		t.Fatalf("resource: phase %s, terminal %v, message %v", r.Phase, r.FailureTerminal, r.FailureMessage)
	}
	// The refused status is kept apart from the status, and the next task
	// of the resource carries it: what the handler made is not lost.
	if string(r.Status) != `{}` || string(r.RejectedStatus) != `{"message": 42}` {
		t.Fatalf("status %s, rejected status %s; want {} and the refused one", r.Status, r.RejectedStatus)
	}
	if _, err := e.st.ReconcileResource(e.ctx, "op", store.ResourceKey{Namespace: "default", Kind: "greeting", Name: "hello"}, ""); err != nil {
		t.Fatal(err)
	}
	again := w.Task()
	if got := string(again.GetResource().GetRejectedStatus()); got != `{"message": 42}` {
		t.Fatalf("the next task's rejected status = %q, want the refused status", got)
	}
	w.Result(again.GetLease(), `{"message":"fixed"}`)
	if a := w.Ack(); !a.GetApplied() {
		t.Fatalf("ack = %v", a)
	}
	if r := e.get("hello"); r.Phase != "Ready" || r.RejectedStatus != nil {
		t.Fatalf("after a conforming status: phase %s, rejected status %s; want Ready and none", r.Phase, r.RejectedStatus)
	}
}

// TestPendingTasksGoBackWhenTheirWorkerLeaves: a worker with one slot
// serving two kinds gets one task; the other kind's task waits in the
// broker. When the worker leaves, that task goes back to the queue at once
// (no connected worker is ready for it) instead of seeming to run.
func TestPendingTasksGoBackWhenTheirWorkerLeaves(t *testing.T) {
	e := newEnv(t)
	rev := testkit.ApplyKind(t, e.st, &convergev1.KindManifest{
		Kind: "farewell", KindVersion: 1, SpecSchema: testkit.Object(t),
		Reactions: []*convergev1.Reaction{{Name: "reconcile", Trigger: "specChange", Emits: []string{"status"}}},
	}).Revision
	e.apply("hello", `{}`)
	if _, _, err := e.st.ApplyResources(e.ctx, "test", []store.ApplyInput{{Namespace: "default", Kind: "farewell", KindVersion: 1,
		Name: "bye", Labels: []byte(`{}`), Spec: []byte(`{}`), KindRevision: rev}}); err != nil {
		t.Fatal(err)
	}
	w, _ := testkit.Subscribe(t, e.broker("b1"), testkit.Subscription{Capacity: 1, Heartbeat: 100 * time.Millisecond,
		Reactions: []*convergev1.ReactionRef{
			{Kind: "greeting", KindVersion: 1, Reaction: "reconcile"},
			{Kind: "farewell", KindVersion: 1, Reaction: "reconcile"}}})
	task := w.Task()
	other := "bye"
	if task.GetKind() == "farewell" {
		other = "hello"
	}
	otherKind := map[string]string{"bye": "farewell", "hello": "greeting"}[other]
	testkit.Eventually(t, "the other task to be claimed too", func() bool {
		r, err := e.st.GetResource(e.ctx, "default", otherKind, other)
		return err == nil && r.Wait == store.WaitRunning
	})
	w.Close()
	testkit.Eventually(t, "the pending task back in the queue", func() bool {
		r, err := e.st.GetResource(e.ctx, "default", otherKind, other)
		return err == nil && r.Wait == store.WaitWorker
	})
}
