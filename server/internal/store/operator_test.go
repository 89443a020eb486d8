package store_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/convergehq/converge/server/internal/store"
	"github.com/convergehq/converge/server/internal/trigger"
)

func leafKey(name string) store.ResourceKey {
	return store.ResourceKey{Namespace: "default", Kind: "leaf", Name: name}
}

// lastEvent returns the newest event of a leaf resource.
func lastEvent(t *testing.T, s *store.Store, name string) store.Event {
	t.Helper()
	evs, err := s.ListEvents(context.Background(), store.EventFilter{Namespace: "default", Kind: "leaf", Name: name, Limit: 1})
	if err != nil || len(evs) == 0 {
		t.Fatalf("events of %s: %v, %v", name, evs, err)
	}
	return evs[0]
}

func countEvents(t *testing.T, s *store.Store, name, reason string) int {
	t.Helper()
	var n int
	if err := s.Pool().QueryRow(context.Background(), `SELECT count(*) FROM events WHERE name = $1 AND reason = $2`,
		name, reason).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// taskTriggers lists a resource's tasks as trigger, or trigger+"*" when claimed.
func taskTriggers(t *testing.T, s *store.Store, name string) string {
	t.Helper()
	var got []string
	rows, err := s.Pool().Query(context.Background(), `
		SELECT t.trigger || CASE WHEN t.claimed_by IS NULL THEN '' ELSE '*' END
		FROM tasks t JOIN resources r ON r.id = t.resource_id
		WHERE r.name = $1 AND t.trigger NOT IN ('rollup', 'gate', 'teardown') ORDER BY 1`, name)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		got = append(got, s)
	}
	return strings.Join(got, ",")
}

func wantEvent(t *testing.T, e store.Event, reason, actor string, parts ...string) {
	t.Helper()
	if e.Reason != reason || e.Actor != actor {
		t.Fatalf("event = %s by %s (%q), want %s by %s", e.Reason, e.Actor, e.Message, reason, actor)
	}
	for _, p := range parts {
		if !strings.Contains(e.Message, p) {
			t.Fatalf("event %s message %q does not mention %q", reason, e.Message, p)
		}
	}
}

func TestQuarantineDropsQueuedWork(t *testing.T) {
	s, ctx := newStore(t)
	rev := applyKind(t, s, "leaf", store.Policy{})
	apply(t, s, rev, "a", `{"x":1}`)
	op, err := s.InvokeOperation(ctx, store.OperationRequest{Key: leafKey("a"), Verb: "restart", Input: []byte(`{}`),
		KindVersion: 1, KindRevision: rev, Actor: "alice", Reason: "stuck"})
	if err != nil {
		t.Fatal(err)
	}
	if got := taskTriggers(t, s, "a"); got != "operation:restart,specChange" {
		t.Fatalf("tasks before quarantine = %q", got)
	}
	// A childrenSettled and a resync task are dropped as well.
	if _, err := s.Pool().Exec(ctx, `INSERT INTO tasks (resource_id, trigger, kind, kind_version, shard, generation)
		SELECT id, t, kind, kind_version, shard, generation FROM resources, unnest(ARRAY['childrenSettled', 'resync']) t
		WHERE name = 'a'`); err != nil {
		t.Fatal(err)
	}

	r, changed, err := s.QuarantineResource(ctx, "bob", leafKey("a"), "poison pill")
	if err != nil || !changed {
		t.Fatalf("quarantine = %v, %v", changed, err)
	}
	if r.Phase != "Quarantined" || !r.Quarantined || r.OrphanedUntil != nil || r.Task != nil || r.Wait != store.HoldQuarantined {
		t.Fatalf("after quarantine: phase %s, quarantined %v, orphaned until %v, task %+v, wait %q",
			r.Phase, r.Quarantined, r.OrphanedUntil, r.Task, r.Wait)
	}
	if got := taskTriggers(t, s, "a"); got != "" {
		t.Fatalf("tasks after quarantine = %q, want none", got)
	}
	got, err := s.GetOperation(ctx, op.ID)
	if err != nil || got.State != "failed" || got.Message == nil || *got.Message != store.QuarantineMessage || got.FinishedAt == nil {
		t.Fatalf("operation after quarantine = %+v, %v", got, err)
	}
	wantEvent(t, lastEvent(t, s, "a"), "Quarantined", "bob", "poison pill", "dropped 4 queued task(s)",
		"1 operation(s) cancelled")

	// Again: nothing changes and nothing is recorded.
	r2, changed, err := s.QuarantineResource(ctx, "bob", leafKey("a"), "again")
	if err != nil || changed || r2.ResourceVersion != r.ResourceVersion {
		t.Fatalf("second quarantine = %v, rv %d→%d, %v", changed, r.ResourceVersion, r2.ResourceVersion, err)
	}
	if n := countEvents(t, s, "a", "Quarantined"); n != 1 {
		t.Fatalf("%d Quarantined events, want 1", n)
	}
	// A new spec while quarantined queues nothing.
	if res := apply(t, s, rev, "a", `{"x":2}`); res.Generation != 2 {
		t.Fatalf("apply while quarantined = %+v", res)
	}
	if got := taskTriggers(t, s, "a"); got != "" {
		t.Fatalf("tasks after a spec change while quarantined = %q", got)
	}
}

func quarantined(t *testing.T, s *store.Store, name string) bool {
	t.Helper()
	var q bool
	if err := s.Pool().QueryRow(context.Background(), `SELECT quarantined AND orphaned_until IS NULL
		FROM resources WHERE name = $1`, name).Scan(&q); err != nil {
		t.Fatal(err)
	}
	return q
}

func TestQuarantineLeavesRunningTaskAlone(t *testing.T) {
	s, ctx := newStore(t)
	rev := applyKind(t, s, "leaf", store.Policy{})
	apply(t, s, rev, "a", `{"x":1}`)
	c := claimOne(t, s)
	if _, _, err := s.QuarantineResource(ctx, "bob", leafKey("a"), "hold"); err != nil {
		t.Fatal(err)
	}
	if got := taskTriggers(t, s, "a"); got != "specChange*" {
		t.Fatalf("tasks = %q, want the running specChange", got)
	}
	// Its result still lands; the resource stays quarantined.
	res, err := s.ApplyOutcomes(ctx, []store.Outcome{{Lease: c.Lease, Actor: "w", Status: []byte(`{}`)}}, fast)
	if err != nil || !res[0].Applied {
		t.Fatalf("result = %+v, %v", res, err)
	}
	if r := get(t, s, "a"); r.Phase != "Quarantined" || r.SyncedGeneration != 1 {
		t.Fatalf("after the result: %s synced %d", r.Phase, r.SyncedGeneration)
	}
}

func TestQuarantineRefusalsAndOrphans(t *testing.T) {
	s, ctx := newStore(t)
	rev := applyKind(t, s, "leaf", store.Policy{})
	if _, _, err := s.QuarantineResource(ctx, "bob", leafKey("nope"), "x"); !errors.Is(err, store.ErrNotFound) ||
		!strings.Contains(err.Error(), "default/leaf/nope") {
		t.Fatalf("missing: %v", err)
	}
	apply(t, s, rev, "gone", `{}`)
	if _, _, err := s.DeleteResource(ctx, "t", leafKey("gone"), store.TeardownPolicy{Reaction: true}); err != nil {
		t.Fatal(err)
	}
	// a stuck teardown can be quarantined; its queued teardown is dropped.
	r, changed, err := s.QuarantineResource(ctx, "bob", leafKey("gone"), "teardown keeps failing")
	if err != nil || !changed || r.Phase != "Deleting" || !quarantined(t, s, "gone") {
		t.Fatalf("quarantine deleting = %s, %v, %v", r.Phase, changed, err)
	}
	var teardowns int
	if err := s.Pool().QueryRow(ctx, `SELECT count(*) FROM tasks t JOIN resources r ON r.id = t.resource_id
		WHERE r.name = 'gone' AND t.trigger IN ('deleteRequested', 'teardown')`).Scan(&teardowns); err != nil || teardowns != 0 {
		t.Fatalf("queued teardown tasks after quarantine = %d, %v; want 0", teardowns, err)
	}

	apply(t, s, rev, "orphan", `{}`)
	if _, err := s.Pool().Exec(ctx, `UPDATE resources SET orphaned_until = now() - interval '1 second' WHERE name = 'orphan'`); err != nil {
		t.Fatal(err)
	}
	if r := get(t, s, "orphan"); r.Phase != "Orphaned" {
		t.Fatalf("phase = %s, want Orphaned", r.Phase)
	}
	r, changed, err = s.QuarantineResource(ctx, "bob", leafKey("orphan"), "keep it")
	if err != nil || !changed || r.Phase != "Quarantined" || !quarantined(t, s, "orphan") {
		t.Fatalf("quarantine orphan = %s, %v, %v", r.Phase, changed, err)
	}
	wantEvent(t, lastEvent(t, s, "orphan"), "Quarantined", "bob", "keep it", "replaces its orphan grace period")
	// Its grace period had run out, but the orphan sweeper no longer sees it.
	if n, err := s.ExpireOrphans(ctx, 10); err != nil || n != 0 {
		t.Fatalf("ExpireOrphans = %d, %v", n, err)
	}
}

func TestUnquarantine(t *testing.T) {
	s, ctx := newStore(t)
	rev := applyKind(t, s, "leaf", store.Policy{})
	apply(t, s, rev, "a", `{"x":1}`)
	_, _, err := s.UnquarantineResource(ctx, "bob", leafKey("a"), "")
	if !errors.Is(err, store.ErrConflict) || !strings.Contains(err.Error(), "default/leaf/a is not quarantined (phase Reconciling)") {
		t.Fatalf("not quarantined: %v", err)
	}
	if _, _, err := s.UnquarantineResource(ctx, "bob", leafKey("nope"), ""); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("missing: %v", err)
	}

	// Quarantined with generation 1 unobserved (its task was dropped), then
	// a new spec arrives: unquarantine queues generation 2.
	if _, _, err := s.QuarantineResource(ctx, "bob", leafKey("a"), "hold"); err != nil {
		t.Fatal(err)
	}
	apply(t, s, rev, "a", `{"x":2}`)
	r, queued, err := s.UnquarantineResource(ctx, "carol", leafKey("a"), "fixed upstream")
	if err != nil || !queued {
		t.Fatalf("unquarantine = %v, %v", queued, err)
	}
	if r.Phase != "Reconciling" || r.Quarantined || r.Task == nil || r.Task.Trigger != trigger.SpecChange || r.Wait != store.WaitWorker {
		t.Fatalf("after unquarantine: %s quarantined %v task %+v wait %q", r.Phase, r.Quarantined, r.Task, r.Wait)
	}
	wantEvent(t, lastEvent(t, s, "a"), "Unquarantined", "carol", "fixed upstream", "generation 2 queued for reconcile")
	if c := claimOne(t, s); c.Generation != 2 {
		t.Fatalf("claimed generation %d, want 2", c.Generation)
	}

	// A synced resource comes back Ready with nothing queued.
	apply(t, s, rev, "b", `{}`)
	c := claimOne(t, s)
	if _, err := s.ApplyOutcomes(ctx, []store.Outcome{{Lease: c.Lease, Status: []byte(`{}`)}}, fast); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.QuarantineResource(ctx, "bob", leafKey("b"), "hold"); err != nil {
		t.Fatal(err)
	}
	r, queued, err = s.UnquarantineResource(ctx, "carol", leafKey("b"), "")
	if err != nil || queued || r.Phase != "Ready" || r.Task != nil {
		t.Fatalf("unquarantine synced = %s queued %v task %+v, %v", r.Phase, queued, r.Task, err)
	}
	if e := lastEvent(t, s, "b"); e.Reason != "Unquarantined" || e.Message != "unquarantined" || e.Actor != "carol" {
		t.Fatalf("event = %+v", e)
	}
}

func TestUnquarantineResumesTeardown(t *testing.T) {
	s, ctx := newStore(t)
	rev := applyKind(t, s, "leaf", store.Policy{})
	apply(t, s, rev, "a", `{}`)
	if _, _, err := s.QuarantineResource(ctx, "bob", leafKey("a"), "hold"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.DeleteResource(ctx, "t", leafKey("a"), store.TeardownPolicy{Reaction: true}); err != nil {
		t.Fatal(err)
	}
	var wakes int64
	teardownWakes := func() int64 {
		t.Helper()
		if err := s.Pool().QueryRow(ctx, `SELECT coalesce(max(generation), 0) FROM tasks WHERE trigger = 'teardown'`).Scan(&wakes); err != nil {
			t.Fatal(err)
		}
		return wakes
	}
	// The frozen resource's teardown does not run: its teardown task
	// queues no teardown reaction and removes nothing.
	internal, err := s.ClaimInternal(ctx, "m1", time.Minute, 10)
	if err != nil || len(internal) != 1 || internal[0].Trigger != trigger.Teardown {
		t.Fatalf("internal tasks = %+v, %v; want the teardown", internal, err)
	}
	if queued, err := s.Teardown(ctx, internal[0], func(string, int32) store.TeardownPolicy { return store.TeardownPolicy{Reaction: true} }); err != nil || queued {
		t.Fatalf("teardown of a quarantined resource queued %v, %v; want nothing", queued, err)
	}
	if got := taskTriggers(t, s, "a"); got != "" {
		t.Fatalf("tasks of the quarantined deleting resource = %q, want none", got)
	}
	if r := get(t, s, "a"); r.Phase != "Deleting" || !quarantined(t, s, "a") {
		t.Fatalf("quarantined deleting resource is %s", r.Phase)
	}
	before := teardownWakes()
	r, queued, err := s.UnquarantineResource(ctx, "carol", leafKey("a"), "let it go")
	if err != nil || !queued || r.Phase != "Deleting" || quarantined(t, s, "a") {
		t.Fatalf("unquarantine deleting = %s queued %v, %v", r.Phase, queued, err)
	}
	if after := teardownWakes(); after != before+1 {
		t.Fatalf("teardown wakes %d → %d, want one more", before, after)
	}
	wantEvent(t, lastEvent(t, s, "a"), "Unquarantined", "carol", "let it go", "its teardown resumes")
}

func TestForcedReconcileOfSyncedResource(t *testing.T) {
	s, ctx := newStore(t)
	rev := applyKind(t, s, "leaf", store.Policy{})
	apply(t, s, rev, "a", `{"x":1}`)
	c := claimOne(t, s)
	if _, err := s.ApplyOutcomes(ctx, []store.Outcome{{Lease: c.Lease, Status: []byte(`{}`)}}, fast); err != nil {
		t.Fatal(err)
	}
	r, err := s.ReconcileResource(ctx, "dave", leafKey("a"), "drift suspected")
	if err != nil {
		t.Fatal(err)
	}
	if r.Phase != "Ready" || r.Task == nil || r.Task.Trigger != trigger.SpecChange || r.Task.Claimed {
		t.Fatalf("after forced reconcile: %s task %+v", r.Phase, r.Task)
	}
	wantEvent(t, lastEvent(t, s, "a"), "ReconcileRequested", "dave", "reconcile forced at generation 1", "drift suspected")
	c = claimOne(t, s)
	if c.Generation != 1 || c.Attempt != 1 {
		t.Fatalf("claimed %+v", c)
	}
	// While it runs, another forced reconcile leaves the claim alone and
	// its result applies.
	if _, err := s.ReconcileResource(ctx, "dave", leafKey("a"), ""); err != nil {
		t.Fatal(err)
	}
	if got := taskTriggers(t, s, "a"); got != "specChange*" {
		t.Fatalf("tasks = %q", got)
	}
	res, err := s.ApplyOutcomes(ctx, []store.Outcome{{Lease: c.Lease, Status: []byte(`{"seen":2}`)}}, fast)
	if err != nil || !res[0].Applied {
		t.Fatalf("result = %+v, %v", res, err)
	}
	if r := get(t, s, "a"); r.Reconciles != 2 || r.Task != nil {
		t.Fatalf("after: reconciles %d task %+v", r.Reconciles, r.Task)
	}
}

func TestForcedReconcileClearsFailures(t *testing.T) {
	s, ctx := newStore(t)
	rev := applyKind(t, s, "leaf", store.Policy{})
	apply(t, s, rev, "a", `{"x":1}`)
	c := claimOne(t, s)
	if _, err := s.ApplyOutcomes(ctx, []store.Outcome{{Lease: c.Lease, Failed: true, Terminal: true, Message: "bad credentials"}}, fast); err != nil {
		t.Fatal(err)
	}
	if r := get(t, s, "a"); r.Phase != "Failed" || r.Task != nil {
		t.Fatalf("before: %s task %+v", r.Phase, r.Task)
	}
	rv := get(t, s, "a").ResourceVersion
	r, err := s.ReconcileResource(ctx, "dave", leafKey("a"), "credentials rotated")
	if err != nil {
		t.Fatal(err)
	}
	if r.Phase != "Reconciling" || r.FailureMessage != nil || r.FailureTerminal || r.FailureAttempts != 0 ||
		r.FailureGeneration != 0 || r.ResourceVersion != rv+1 || r.Task == nil {
		t.Fatalf("after: %+v", r)
	}
	wantEvent(t, lastEvent(t, s, "a"), "ReconcileRequested", "dave", "credentials rotated",
		"cleared the terminal failure: bad credentials")
	if c := claimOne(t, s); c.Generation != 1 || c.Attempt != 1 {
		t.Fatalf("claimed %+v", c)
	}

	// A task backing off after a transient failure runs now, from attempt
	// 1, as a new piece of work: a new task, so a new dedup token.
	apply(t, s, rev, "b", `{}`)
	got, err := s.Claim(ctx, "m1", time.Minute, []store.Want{{Kind: "leaf", Version: 1, Trigger: trigger.SpecChange, N: 10}})
	if err != nil || len(got) != 1 || got[0].Name != "b" {
		t.Fatalf("claim b = %+v, %v", got, err)
	}
	first := got[0].TaskID
	slow := store.Backoff{Base: time.Hour, Max: time.Hour}
	if _, err := s.ApplyOutcomes(ctx, []store.Outcome{{Lease: got[0].Lease, Failed: true, Message: "timeout"}}, slow); err != nil {
		t.Fatal(err)
	}
	if r, err := s.ReconcileResource(ctx, "dave", leafKey("b"), ""); err != nil || r.FailureMessage != nil {
		t.Fatalf("reconcile b = %+v, %v", r, err)
	}
	got, err = s.Claim(ctx, "m1", time.Minute, []store.Want{{Kind: "leaf", Version: 1, Trigger: trigger.SpecChange, N: 10}})
	if err != nil || len(got) != 1 || got[0].Name != "b" || got[0].Attempt != 1 || got[0].TaskID == first {
		t.Fatalf("claim b after reconcile = %+v, %v; want attempt 1 of a new task (not %d)", got, err, first)
	}

	// A running task is the forced run: a transient failure of it is
	// retried as the next attempt of the same task, never as an attempt
	// that already ran under its dedup token.
	running := got[0]
	if _, err := s.ApplyOutcomes(ctx, []store.Outcome{{Lease: running.Lease, Failed: true, Message: "timeout"}}, fast); err != nil {
		t.Fatal(err)
	}
	second := waitClaim(t, s)
	if second.TaskID != running.TaskID || second.Attempt != 2 {
		t.Fatalf("retry = task %d attempt %d; want task %d attempt 2", second.TaskID, second.Attempt, running.TaskID)
	}
	if _, err := s.ReconcileResource(ctx, "dave", leafKey("b"), "while it runs"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ApplyOutcomes(ctx, []store.Outcome{{Lease: second.Lease, Failed: true, Message: "timeout"}}, fast); err != nil {
		t.Fatal(err)
	}
	third := waitClaim(t, s)
	if third.TaskID != running.TaskID || third.Attempt != 3 {
		t.Fatalf("retry after a reconcile forced while attempt 2 ran = task %d attempt %d; want task %d attempt 3",
			third.TaskID, third.Attempt, running.TaskID)
	}
}

func TestForcedReconcileRefusals(t *testing.T) {
	s, ctx := newStore(t)
	rev := applyKind(t, s, "leaf", store.Policy{})
	if _, err := s.ReconcileResource(ctx, "dave", leafKey("nope"), ""); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("missing: %v", err)
	}
	apply(t, s, rev, "q", `{}`)
	if _, _, err := s.QuarantineResource(ctx, "bob", leafKey("q"), "hold"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ReconcileResource(ctx, "dave", leafKey("q"), ""); !errors.Is(err, store.ErrConflict) ||
		!strings.Contains(err.Error(), "quarantined: unquarantine it first") {
		t.Fatalf("quarantined: %v", err)
	}
	apply(t, s, rev, "gone", `{}`)
	if _, _, err := s.DeleteResource(ctx, "t", leafKey("gone"), store.TeardownPolicy{Reaction: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ReconcileResource(ctx, "dave", leafKey("gone"), ""); !errors.Is(err, store.ErrConflict) ||
		!strings.Contains(err.Error(), "is being deleted") {
		t.Fatalf("deleting: %v", err)
	}
	apply(t, s, rev, "held", `{}`)
	if _, err := s.Pool().Exec(ctx, `UPDATE resources SET waiting = 'waits for leaf/db to be Ready' WHERE name = 'held'`); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ReconcileResource(ctx, "dave", leafKey("held"), ""); !errors.Is(err, store.ErrConflict) ||
		!strings.Contains(err.Error(), "held by its dependency gate: waits for leaf/db to be Ready") {
		t.Fatalf("waiting: %v", err)
	}
	for _, name := range []string{"q", "gone", "held"} {
		if n := countEvents(t, s, name, "ReconcileRequested"); n != 0 {
			t.Fatalf("%s: %d ReconcileRequested events after a refusal", name, n)
		}
	}
}

// TestUnquarantineRecomposesAComposite: children of a quarantined
// composite may go meanwhile (deleted by hand, orphans expired), and the
// recompose their going asks for is not queued for a held composite; so a
// synced composite's composer runs again when it is unquarantined.
func TestUnquarantineRecomposesAComposite(t *testing.T) {
	s, ctx := newStore(t)
	rev := applyKind(t, s, "leaf", store.Policy{})
	apply(t, s, rev, "c", `{}`)
	c := claimOne(t, s)
	if _, err := s.ApplyOutcomes(ctx, []store.Outcome{{Lease: c.Lease, Status: []byte(`{}`)}}, fast); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Pool().Exec(ctx, `UPDATE resources SET subtree = 'ready' WHERE name = 'c'`); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.QuarantineResource(ctx, "bob", leafKey("c"), ""); err != nil {
		t.Fatal(err)
	}
	r, queued, err := s.UnquarantineResource(ctx, "carol", leafKey("c"), "")
	if err != nil || !queued || r.Task == nil || r.Task.Trigger != trigger.SpecChange {
		t.Fatalf("unquarantine of a synced composite = queued %v, task %+v, %v; want its composer queued", queued, r.Task, err)
	}
	wantEvent(t, lastEvent(t, s, "c"), "Unquarantined", "carol", "its composer runs again at generation 1")
}
