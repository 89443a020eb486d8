package store_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/convergehq/converge/server/internal/store"
	"github.com/convergehq/converge/server/internal/testkit"
	"github.com/convergehq/converge/server/internal/trigger"
)

// queueTask inserts a task of trigger for the named leaf, as its producer
// would.
func queueTask(t *testing.T, s *store.Store, name, trig string, notBefore time.Duration) {
	t.Helper()
	if _, err := s.Pool().Exec(context.Background(), `
		INSERT INTO tasks (resource_id, trigger, kind, kind_version, shard, generation, not_before)
		SELECT id, $2, kind, kind_version, shard, generation, now() + $3 * interval '1 millisecond'
		FROM resources WHERE name = $1
		ON CONFLICT (resource_id, trigger, key) DO UPDATE SET not_before = EXCLUDED.not_before`,
		name, trig, notBefore.Milliseconds()); err != nil {
		t.Fatal(err)
	}
}

func claimWants(t *testing.T, s *store.Store, wants ...store.Want) []store.Claimed {
	t.Helper()
	got, err := s.Claim(context.Background(), "m1", time.Minute, wants)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func countByTrigger(cs []store.Claimed) map[string]int {
	out := map[string]int{}
	for _, c := range cs {
		out[c.Trigger]++
	}
	return out
}

// TestCappedKindSharesSlotsByWhatIsTaken is README step 7 at the store: a
// kind capped at 10 whose worker (capacity 16) serves both specChange and
// resync. The resync want asks for 16 and has nothing queued; it must not
// take the slots, so the 12 queued specChange tasks get all 10.
func TestCappedKindSharesSlotsByWhatIsTaken(t *testing.T) {
	s, _ := newStore(t)
	rev := applyKind(t, s, "leaf", store.Policy{MaxInflight: 10, ResyncIntervalSeconds: 300})
	for i := range 12 {
		apply(t, s, rev, fmt.Sprintf("r%02d", i), `{}`)
	}
	got := claimWants(t, s,
		store.Want{Kind: "leaf", Version: 1, Trigger: trigger.Resync, N: 16, KindN: 16, MaxInflight: 10},
		store.Want{Kind: "leaf", Version: 1, Trigger: trigger.SpecChange, N: 16, KindN: 16, MaxInflight: 10})
	if n := countByTrigger(got); n[trigger.SpecChange] != 10 || len(got) != 10 {
		t.Fatalf("claimed %v, want 10 specChange tasks", n)
	}
	// The cap is full: nothing more, whatever is asked.
	if more := claimWants(t, s, store.Want{Kind: "leaf", Version: 1, Trigger: trigger.SpecChange, N: 16, KindN: 16, MaxInflight: 10}); len(more) != 0 {
		t.Fatalf("claimed %d more past the cap", len(more))
	}
}

// TestClaimTakesTheOldestAcrossTriggers: the triggers of one kind version
// share its limit oldest first, so a stream of new work of one trigger
// cannot starve older work of another, capped or not.
func TestClaimTakesTheOldestAcrossTriggers(t *testing.T) {
	for _, capped := range []int32{0, 3} {
		t.Run(fmt.Sprintf("max_inflight=%d", capped), func(t *testing.T) {
			s, _ := newStore(t)
			rev := applyKind(t, s, "leaf", store.Policy{MaxInflight: capped})
			for i := range 6 {
				apply(t, s, rev, fmt.Sprintf("r%d", i), `{}`)
			}
			// Older resync work on r0..r2; specChange work on all six is newer.
			if _, err := s.Pool().Exec(context.Background(), `UPDATE tasks SET not_before = now() - interval '1 minute'
				WHERE trigger = 'specChange'`); err != nil {
				t.Fatal(err)
			}
			for i := range 3 {
				queueTask(t, s, fmt.Sprintf("r%d", i), trigger.Resync, -2*time.Minute)
			}
			got := claimWants(t, s,
				store.Want{Kind: "leaf", Version: 1, Trigger: trigger.SpecChange, N: 3, KindN: 3, MaxInflight: capped},
				store.Want{Kind: "leaf", Version: 1, Trigger: trigger.Resync, N: 3, KindN: 3, MaxInflight: capped})
			if n := countByTrigger(got); n[trigger.Resync] != 3 || len(got) != 3 {
				t.Fatalf("claimed %v, want the 3 older resync tasks", n)
			}
		})
	}
}

// TestWaitReasons: what a pending reconcile waits for is the scheduler's
// own reading: running, backoff, capped, a worker, or the hold.
func TestWaitReasons(t *testing.T) {
	s, ctx := newStore(t)
	rev := applyKind(t, s, "leaf", store.Policy{MaxInflight: 1})
	apply(t, s, rev, "a", `{}`)
	apply(t, s, rev, "b", `{}`)
	if w := get(t, s, "a").Wait; w != store.WaitWorker {
		t.Fatalf("queued: wait %q, want %q", w, store.WaitWorker)
	}
	c := claimWants(t, s, store.Want{Kind: "leaf", Version: 1, Trigger: trigger.SpecChange, N: 1, KindN: 1, MaxInflight: 1})
	if len(c) != 1 {
		t.Fatalf("claimed %d", len(c))
	}
	running, other := c[0].Name, "b"
	if running == "b" {
		other = "a"
	}
	if w := get(t, s, running).Wait; w != store.WaitRunning {
		t.Fatalf("claimed: wait %q, want %q", w, store.WaitRunning)
	}
	if w := get(t, s, other).Wait; w != store.WaitCapped {
		t.Fatalf("behind the cap: wait %q, want %q", w, store.WaitCapped)
	}
	res, err := s.ApplyOutcomes(ctx, []store.Outcome{{Lease: c[0].Lease, Failed: true, Message: "flaky"}},
		store.Backoff{Base: time.Hour, Max: time.Hour})
	if err != nil || !res[0].Applied {
		t.Fatalf("transient failure = %+v, %v", res, err)
	}
	if w := get(t, s, running).Wait; w != store.WaitBackoff {
		t.Fatalf("after a transient failure: wait %q, want %q", w, store.WaitBackoff)
	}
	if w := get(t, s, other).Wait; w != store.WaitWorker {
		t.Fatalf("with the slot free again: wait %q, want %q", w, store.WaitWorker)
	}
	if _, _, err := s.QuarantineResource(ctx, "op", leafKey(other), ""); err != nil {
		t.Fatal(err)
	}
	if w := get(t, s, other).Wait; w != store.HoldQuarantined {
		t.Fatalf("quarantined: wait %q, want %q", w, store.HoldQuarantined)
	}
}

// TestPhaseIsAboutTheCurrentGeneration: a composite whose children failed
// is Failed only while it is synced at its generation; a new generation
// makes it Reconciling until it is observed.
func TestPhaseIsAboutTheCurrentGeneration(t *testing.T) {
	s, ctx := newStore(t)
	rev := applyKind(t, s, "leaf", store.Policy{})
	apply(t, s, rev, "a", `{"x":1}`)
	if _, err := s.Pool().Exec(ctx, `UPDATE resources SET synced_generation = generation, subtree = 'failed' WHERE name = 'a'`); err != nil {
		t.Fatal(err)
	}
	if p := get(t, s, "a").Phase; p != "Failed" {
		t.Fatalf("synced with a failed subtree: %s, want Failed", p)
	}
	apply(t, s, rev, "a", `{"x":2}`)
	if p := get(t, s, "a").Phase; p != "Reconciling" {
		t.Fatalf("a new generation over a failed subtree: %s, want Reconciling", p)
	}
}

// TestTaskTriggersAreTheOneList: the database accepts exactly the task
// triggers package trigger lists (and operation:<verb>), nothing else.
func TestTaskTriggersAreTheOneList(t *testing.T) {
	s, ctx := newStore(t)
	rev := applyKind(t, s, "leaf", store.Policy{})
	apply(t, s, rev, "a", `{}`)
	try := func(trig string) error {
		_, err := s.Pool().Exec(ctx, `INSERT INTO tasks (resource_id, trigger, kind, kind_version, shard, generation)
			SELECT id, $1, kind, kind_version, shard, generation FROM resources WHERE name = 'a'
			ON CONFLICT DO NOTHING`, trig)
		return err
	}
	for _, trig := range append(slices.Clone(trigger.Queued), trigger.OfOperation("restart")) {
		if err := try(trig); err != nil {
			t.Errorf("trigger %q refused: %v", trig, err)
		}
	}
	for _, trig := range []string{trigger.Operation, trigger.OperationPrefix, "specchange", "bogus"} {
		if err := try(trig); err == nil || !strings.Contains(err.Error(), "tasks_trigger") {
			t.Errorf("trigger %q accepted (err %v), want the tasks_trigger constraint to refuse it", trig, err)
		}
	}
}

// TestTeardownWaits: a deleting resource waits for what must go first
// until its teardown is queued; then for what the teardown task waits for.
func TestTeardownWaits(t *testing.T) {
	s, ctx := newStore(t)
	rev := applyKind(t, s, "leaf", store.Policy{})
	apply(t, s, rev, "a", `{}`)
	if _, _, err := s.DeleteResource(ctx, "t", leafKey("a"), store.TeardownPolicy{Reaction: true}); err != nil {
		t.Fatal(err)
	}
	if w := get(t, s, "a").Wait; w != store.HoldDeleting {
		t.Fatalf("before its teardown is queued: wait %q, want %q", w, store.HoldDeleting)
	}
	queueTask(t, s, "a", trigger.DeleteRequested, 0)
	if w := get(t, s, "a").Wait; w != store.WaitWorker {
		t.Fatalf("with its teardown queued: wait %q, want %q", w, store.WaitWorker)
	}
}

// TestDeleteSeesChildrenComposedWhileItWaited: a delete that waits for a
// composer's lock on the composite must see the children that composer
// committed, and take them down with it, rather than remove the composite
// and leave them behind.
func TestDeleteSeesChildrenComposedWhileItWaited(t *testing.T) {
	s, ctx := newStore(t)
	rev := applyKind(t, s, "leaf", store.Policy{})
	apply(t, s, rev, "p", `{}`)
	composer, err := s.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer composer.Rollback(ctx)
	var pid int64
	if err := composer.QueryRow(ctx, `SELECT id FROM resources WHERE name = 'p' FOR NO KEY UPDATE`).Scan(&pid); err != nil {
		t.Fatal(err)
	}
	if _, err := composer.Exec(ctx, `INSERT INTO resources (namespace, kind, kind_version, name, owner_id, root_id)
		VALUES ('default', 'leaf', 1, 'p-child', $1, $1)`, pid); err != nil {
		t.Fatal(err)
	}
	deleted := make(chan error, 1)
	go func() {
		_, _, err := s.DeleteResource(context.Background(), "t", leafKey("p"), store.TeardownPolicy{})
		deleted <- err
	}()
	// The delete is waiting for the composer's lock on p.
	testkit.Eventually(t, "the delete to wait for the lock", func() bool {
		var waiting bool
		err := s.Pool().QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_stat_activity
			WHERE wait_event_type = 'Lock' AND datname = current_database())`).Scan(&waiting)
		return err == nil && waiting
	})
	if err := composer.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-deleted; err != nil {
		t.Fatal(err)
	}
	child := get(t, s, "p-child")
	if child.DeletionRequestedAt == nil {
		t.Fatalf("the child composed while the delete waited is %s, not being deleted", child.Phase)
	}
	if p := get(t, s, "p"); p.Phase != "Deleting" {
		t.Fatalf("the composite is %s, want Deleting until its child is gone", p.Phase)
	}
}
