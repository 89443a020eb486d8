package app_test

import (
	"context"
	"fmt"
	"testing"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
	"github.com/convergehq/converge/sdk-go/gen/converge/v1/convergev1connect"
	"github.com/convergehq/converge/server/internal/broker"
	"github.com/convergehq/converge/server/internal/limits"
	"github.com/convergehq/converge/server/internal/testkit"
)

// TestClaimingIsFairAcrossKinds queues a backlog of kind fair.a and then
// single resources of kind fair.b, on one worker serving both, and checks
// that each fair.b task is dispatched within one claim round.
//
// The bound. The broker claims for every (kind, version, trigger) a worker
// serves in the same round, each up to the worker's free slots, capped at
// MaxClaim. So once fair.b's task is queued, the next round takes it along
// with at most min(capacity, MaxClaim) fair.a tasks, and those may reach
// the worker first (one of the round's tasks may wait for a slot in the
// broker's pending queue, and a freed slot goes to the pending queue
// before any new claim). Before queueing fair.b the test lets the worker
// hold all its slots, so the broker has no claim in progress and nothing
// claimed but unsent: every fair.a task the worker receives after that is
// one claimed after fair.b was queued. At most one round's worth of them
// may arrive before fair.b's task. Claiming that served kinds one at a
// time, or oldest first across kinds, would hand out the whole remaining
// backlog first.
func TestClaimingIsFairAcrossKinds(t *testing.T) {
	const (
		backlog  = 100_000
		capacity = 4
		probes   = 3
	)
	roundWorth := min(capacity, broker.DefaultConfig().MaxClaim)
	_, ctl, wrk := server(t)
	ctx := context.Background()
	for _, k := range []string{"fair.a", "fair.b"} {
		applyFairKind(t, ctl, k)
	}
	queueFairBacklog(t, ctl, backlog)

	w, _ := connectWorkerServing(t, wrk, capacity, []*convergev1.ReactionRef{
		{Kind: "fair.a", KindVersion: 1, Reaction: "reconcile"},
		{Kind: "fair.b", KindVersion: 1, Reaction: "reconcile"},
	})
	tasks := taskStream(w)
	next := func() *convergev1.Task {
		t.Helper()
		return testkit.Receive(t, tasks, "a task").task
	}
	answer := func(ts ...*convergev1.Task) {
		t.Helper()
		rs := make([]*convergev1.TaskResult, len(ts))
		for i, task := range ts {
			rs[i] = &convergev1.TaskResult{Lease: task.GetLease(),
				Outcome: &convergev1.TaskResult_Success{Success: &convergev1.Success{Status: []byte(`{}`)}}}
		}
		w.Send(&convergev1.WorkerMessage{Msg: &convergev1.WorkerMessage_Results{Results: &convergev1.Results{Results: rs}}})
	}

	done := 0
	var holding []*convergev1.Task
	for probe := range probes {
		// Drain the backlog for a while, answering each task as it comes.
		for range 50 {
			task := next()
			if task.GetKind() != "fair.a" {
				t.Fatalf("got a %s task while only fair.a is queued", task.GetKind())
			}
			answer(task)
			done++
		}
		// Stop answering until the worker holds every slot: the broker is
		// idle (no free slot, so no claim) and holds nothing unsent.
		holding = holding[:0]
		for len(holding) < capacity {
			holding = append(holding, next())
		}
		name := fmt.Sprintf("b-%d", probe)
		if _, err := ctl.ApplyResource(ctx, &convergev1.ApplyResourceRequest{
			Kind: "fair.b", KindVersion: 1, Name: name, Spec: mustStruct(t, map[string]any{})}); err != nil {
			t.Fatal(err)
		}
		// Free every slot at once, so the round that claims fair.b can take
		// the most fair.a tasks it ever can.
		answer(holding...)
		done += len(holding)
		before := 0
		for {
			task := next()
			if task.GetKind() == "fair.b" {
				if task.GetResource().GetName() != name {
					t.Fatalf("fair.b task for %s; want %s", task.GetResource().GetName(), name)
				}
				answer(task)
				break
			}
			if before++; before > roundWorth {
				t.Fatalf("probe %d: %d fair.a tasks dispatched after fair.b/%s was queued and before it; "+
					"one claim round holds at most %d (capacity %d, MaxClaim %d); %d of the backlog of %d were left",
					probe, before, name, roundWorth, capacity, broker.DefaultConfig().MaxClaim, backlog-done, backlog)
			}
			answer(task)
			done++
		}
		t.Logf("probe %d: %d fair.a tasks before fair.b/%s (bound %d), %d of the backlog left", probe, before, name, roundWorth, backlog-done)
		testkit.Eventually(t, "fair.b/"+name+" Ready", func() bool { return get(t, ctl, "fair.b", name).GetPhase() == "Ready" })
	}
}

// applyFairKind applies a leaf kind with an empty spec and status.
func applyFairKind(t *testing.T, ctl convergev1connect.ControlServiceClient, kind string) {
	t.Helper()
	_, err := ctl.ApplyKind(context.Background(), &convergev1.ApplyKindRequest{Manifest: &convergev1.KindManifest{
		Kind: kind, KindVersion: 1,
		SpecSchema:   mustStruct(t, map[string]any{"type": "object"}),
		StatusSchema: mustStruct(t, map[string]any{"type": "object"}),
		Reactions:    []*convergev1.Reaction{{Name: "reconcile", Trigger: "specChange", Emits: []string{"status"}}},
	}})
	if err != nil {
		t.Fatalf("applying kind %s: %v", kind, err)
	}
}

// queueFairBacklog applies n fair.a resources in batches as large as the
// API takes, several calls in flight.
func queueFairBacklog(t *testing.T, ctl convergev1connect.ControlServiceClient, n int) {
	t.Helper()
	empty := mustStruct(t, map[string]any{})
	starts := make(chan int)
	errs := make(chan error, 4)
	for range cap(errs) {
		go func() {
			var err error
			for start := range starts {
				if err != nil {
					continue
				}
				req := &convergev1.ApplyResourcesRequest{}
				for i := start; i < min(start+limits.MaxBatch, n); i++ {
					req.Resources = append(req.Resources, &convergev1.ApplyResourceRequest{
						Kind: "fair.a", KindVersion: 1, Name: fmt.Sprintf("a-%06d", i), Spec: empty})
				}
				_, err = ctl.ApplyResources(context.Background(), req)
			}
			errs <- err
		}()
	}
	for start := 0; start < n; start += limits.MaxBatch {
		starts <- start
	}
	close(starts)
	for range cap(errs) {
		if err := <-errs; err != nil {
			t.Fatalf("queueing the fair.a backlog: %v", err)
		}
	}
}
