package store_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/convergehq/converge/server/internal/store"
	"github.com/convergehq/converge/server/internal/trigger"
)

// claimSettled claims the stack's childrenSettled task.
func claimSettled(t *testing.T, s *store.Store) store.Claimed {
	t.Helper()
	got, err := s.Claim(context.Background(), "m1", time.Minute,
		[]store.Want{{Kind: "stack", Version: 1, Trigger: trigger.ChildrenSettled, N: 1}})
	if err != nil || len(got) != 1 {
		t.Fatalf("claim childrenSettled: %v, %v", got, err)
	}
	return got[0]
}

// TestSettlingCompositeIsReadyOnlyWithItsProjection: a composite whose
// kind projects its children (childrenSettled) is Reconciling between
// its children settling and that reaction's result, so a reader that
// sees it Ready sees the projected status; and a childrenSettled task
// that goes without a result (dropped, or failed for good) cannot leave
// it Reconciling.
func TestSettlingCompositeIsReadyOnlyWithItsProjection(t *testing.T) {
	s, ctx := newStore(t)
	stackRev := applyKind(t, s, "stack", store.Policy{})
	partRev := applyKind(t, s, "part", store.Policy{})
	histApply(t, s, "alice", "stack", 1, stackRev, "s", `{}`)

	composeAs(t, s, partRev, "s-a", "s-b")
	settleKind(t, s, "part")
	runRollupsOf(t, s, true)
	if p := getKind(t, s, "stack", "s").Phase; p != "Reconciling" {
		t.Fatalf("settled children, childrenSettled not run: the composite is %s, want Reconciling", p)
	}
	// A rollup that finds the same counts again changes nothing.
	if _, err := s.Pool().Exec(ctx, `SELECT converge_wake(ARRAY[id], 'rollup') FROM resources WHERE name = 's'`); err != nil {
		t.Fatal(err)
	}
	runRollupsOf(t, s, true)
	c := claimSettled(t, s)
	var counts store.RollupCounts
	if err := json.Unmarshal(c.Rollup, &counts); err != nil || counts.Ready != 2 {
		t.Fatalf("childrenSettled rollup = %s (%v), want 2 ready", c.Rollup, err)
	}
	if _, err := s.ApplyOutcomes(ctx, []store.Outcome{{Lease: c.Lease, Status: []byte(`{"parts":2}`)}}, fast); err != nil {
		t.Fatal(err)
	}
	r := getKind(t, s, "stack", "s")
	if r.Phase != "Ready" || string(r.Status) != `{"parts": 2}` {
		t.Fatalf("after childrenSettled: phase %s, status %s; want Ready with the projected status", r.Phase, r.Status)
	}
	// Settled and ready: the same counts again do not re-run the reaction.
	if _, err := s.Pool().Exec(ctx, `SELECT converge_wake(ARRAY[id], 'rollup') FROM resources WHERE name = 's'`); err != nil {
		t.Fatal(err)
	}
	runRollupsOf(t, s, true)
	if p := getKind(t, s, "stack", "s").Phase; p != "Ready" {
		t.Fatalf("a rollup with unchanged counts made the settled composite %s", p)
	}
	if got := taskTriggers(t, s, "s"); got != "" {
		t.Fatalf("tasks after an unchanged rollup = %q, want none", got)
	}

	// The composer runs again with the same children: its status replaces
	// the projection, so the composite settles again and is Ready only
	// with a projection of its children.
	if _, err := s.ReconcileResource(ctx, "alice", histKey("stack", "s"), "test"); err != nil {
		t.Fatal(err)
	}
	if res := compose(t, s, partRev, []string{"s-a", "s-b"}, nil, true); res.Created+res.Updated+res.Deleted != 0 {
		t.Fatalf("recompose with the same children changed them: %+v", res)
	}
	runRollupsOf(t, s, true)
	if r := getKind(t, s, "stack", "s"); r.Phase != "Reconciling" {
		t.Fatalf("recomposed with unchanged children, childrenSettled not run again: %s with status %s, want Reconciling", r.Phase, r.Status)
	}
	c = claimSettled(t, s)
	if _, err := s.ApplyOutcomes(ctx, []store.Outcome{{Lease: c.Lease, Status: []byte(`{"parts":2}`)}}, fast); err != nil {
		t.Fatal(err)
	}
	if r := getKind(t, s, "stack", "s"); r.Phase != "Ready" || string(r.Status) != `{"parts": 2}` {
		t.Fatalf("after the recompose's childrenSettled: phase %s, status %s; want Ready with the projected status", r.Phase, r.Status)
	}

	// A new child: settling again; this time the task is dropped.
	if _, err := s.ReconcileResource(ctx, "alice", histKey("stack", "s"), "test"); err != nil {
		t.Fatal(err)
	}
	composeAs(t, s, partRev, "s-a", "s-b", "s-c")
	settleKind(t, s, "part")
	runRollupsOf(t, s, true)
	if p := getKind(t, s, "stack", "s").Phase; p != "Reconciling" {
		t.Fatalf("a third child settled: the composite is %s, want Reconciling", p)
	}
	if _, err := s.Pool().Exec(ctx, `DELETE FROM tasks WHERE trigger = 'childrenSettled'`); err != nil {
		t.Fatal(err)
	}
	if p := getKind(t, s, "stack", "s").Phase; p != "Ready" {
		t.Fatalf("childrenSettled dropped: the composite is %s, want Ready (nothing left to wait for)", p)
	}
}

// TestSettledTaskRequeuedWhileRunningIsFenced: a childrenSettled task
// the rollup queues again while a handler holds it (the children moved
// on meanwhile) takes a new lease, so the running handler's answer, a
// projection of children as they were, is not applied and does not end
// the composite's hold; the new run has a dedup token of its own.
func TestSettledTaskRequeuedWhileRunningIsFenced(t *testing.T) {
	s, ctx := newStore(t)
	stackRev := applyKind(t, s, "stack", store.Policy{})
	partRev := applyKind(t, s, "part", store.Policy{})
	histApply(t, s, "alice", "stack", 1, stackRev, "s", `{}`)
	composeAs(t, s, partRev, "s-a", "s-b")
	settleKind(t, s, "part")
	runRollupsOf(t, s, true)
	old := claimSettled(t, s)

	// A child reconciles again and fails for good while the handler runs.
	if _, err := s.ReconcileResource(ctx, "alice", histKey("part", "s-a"), "test"); err != nil {
		t.Fatal(err)
	}
	got, err := s.Claim(ctx, "m1", time.Minute, []store.Want{{Kind: "part", Version: 1, Trigger: trigger.SpecChange, N: 1}})
	if err != nil || len(got) != 1 {
		t.Fatalf("claim the child: %v, %v", got, err)
	}
	if _, err := s.ApplyOutcomes(ctx, []store.Outcome{{Lease: got[0].Lease, Failed: true, Terminal: true, Message: "gone"}}, fast); err != nil {
		t.Fatal(err)
	}
	runRollupsOf(t, s, true)

	res, err := s.ApplyOutcomes(ctx, []store.Outcome{{Lease: old.Lease, Status: []byte(`{"parts":"stale"}`)}}, fast)
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 1 || res[0].Applied {
		t.Fatalf("the answer of a childrenSettled task queued again while it ran was applied: %+v", res)
	}
	if r := getKind(t, s, "stack", "s"); r.Status != nil && string(r.Status) != `{}` {
		t.Fatalf("after the stale answer: %s with status %s, want the stale projection not applied", r.Phase, r.Status)
	}
	c := claimSettled(t, s)
	if c.TaskID == old.TaskID && c.Attempt == old.Attempt {
		t.Fatalf("the childrenSettled task queued again while it ran has the running one's id %d and attempt %d: "+
			"its dedup token would repeat", c.TaskID, c.Attempt)
	}
	if _, err := s.ApplyOutcomes(ctx, []store.Outcome{{Lease: c.Lease, Status: []byte(`{"parts":2}`)}}, fast); err != nil {
		t.Fatal(err)
	}
	if r := getKind(t, s, "stack", "s"); r.Phase != "Failed" || string(r.Status) != `{"parts": 2}` {
		t.Fatalf("after the new childrenSettled: phase %s, status %s; want Failed (a child failed) with the projected status", r.Phase, r.Status)
	}
}
