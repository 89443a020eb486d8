package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/convergehq/converge/server/internal/labels"
	"github.com/convergehq/converge/server/internal/pgtest"
	"github.com/convergehq/converge/server/internal/store"
	"github.com/convergehq/converge/server/internal/testkit"
	"github.com/convergehq/converge/server/internal/trigger"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

var fast = store.Backoff{Base: 10 * time.Millisecond, Max: 50 * time.Millisecond}

func newStore(t *testing.T) (*store.Store, context.Context) {
	t.Helper()
	db := pgtest.New(t)
	return store.New(db.Pool, db.Pool), context.Background()
}

// applyKind registers kind v1 and returns its revision.
func applyKind(t *testing.T, s *store.Store, kind string, p store.Policy) int64 {
	t.Helper()
	k, _, err := s.ApplyKind(context.Background(), store.Kind{Kind: kind, Version: 1, Manifest: []byte(`{"kind":"` + kind + `"}`), Policy: p}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return k.Revision
}

func apply(t *testing.T, s *store.Store, rev int64, name, spec string) store.ApplyResult {
	t.Helper()
	res, _, err := s.ApplyResources(context.Background(), "test", []store.ApplyInput{{
		Namespace: "default", Kind: "leaf", KindVersion: 1, Name: name,
		Labels: []byte(`{}`), Spec: []byte(spec), KindRevision: rev,
	}})
	if err != nil {
		t.Fatal(err)
	}
	return res[0]
}

func claimOne(t *testing.T, s *store.Store) store.Claimed {
	t.Helper()
	got, err := s.Claim(context.Background(), "m1", time.Minute, []store.Want{{Kind: "leaf", Version: 1, Trigger: trigger.SpecChange, N: 10}})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 {
		t.Fatalf("claimed %d tasks, want 1", len(got))
	}
	return got[0]
}

func get(t *testing.T, s *store.Store, name string) store.Resource {
	t.Helper()
	return getKind(t, s, "leaf", name)
}

func getKind(t *testing.T, s *store.Store, kind, name string) store.Resource {
	t.Helper()
	r, err := s.GetResource(context.Background(), "default", kind, name)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestApplyResults(t *testing.T) {
	s, ctx := newStore(t)
	rev := applyKind(t, s, "leaf", store.Policy{})
	if r := apply(t, s, rev, "a", `{"x":1}`); r.Result != "created" || r.Generation != 1 {
		t.Fatalf("first apply = %+v", r)
	}
	if r := apply(t, s, rev, "a", `{"x":1}`); r.Result != "unchanged" {
		t.Fatalf("same spec = %+v", r)
	}
	if r := apply(t, s, rev, "a", `{"x":2}`); r.Result != "configured" || r.Generation != 2 {
		t.Fatalf("new spec = %+v", r)
	}
	res, _, err := s.ApplyResources(ctx, "test", []store.ApplyInput{{Namespace: "default", Kind: "leaf", KindVersion: 1,
		Name: "a", Labels: []byte(`{"team":"x"}`), Spec: []byte(`{"x":2}`), KindRevision: rev}})
	if err != nil || res[0].Result != "relabeled" || res[0].Generation != 2 {
		t.Fatalf("labels only = %+v, %v", res, err)
	}
	if got := get(t, s, "a"); got.Phase != "Reconciling" || got.Task == nil || got.Task.Trigger != trigger.SpecChange {
		t.Fatalf("resource = %+v", got)
	}
	// A stale kind revision is refused, and nothing is written.
	_, _, err = s.ApplyResources(ctx, "test", []store.ApplyInput{{Namespace: "default", Kind: "leaf", KindVersion: 1,
		Name: "b", Labels: []byte(`{}`), Spec: []byte(`{}`), KindRevision: rev + 1}})
	if !errors.Is(err, store.ErrStaleKind) {
		t.Fatalf("stale revision: err = %v", err)
	}
	if _, err := s.GetResource(ctx, "default", "leaf", "b"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("b exists after a refused apply: %v", err)
	}
}

func TestReconcileSuccess(t *testing.T) {
	s, ctx := newStore(t)
	rev := applyKind(t, s, "leaf", store.Policy{})
	apply(t, s, rev, "a", `{"x":1}`)
	c := claimOne(t, s)
	if c.Generation != 1 || c.Attempt != 1 || string(c.Spec) != `{"x": 1}` {
		t.Fatalf("claimed %+v", c)
	}
	res, err := s.ApplyOutcomes(ctx, []store.Outcome{{Lease: c.Lease, Actor: "w", Status: []byte(`{"ok":true}`),
		Conditions: []byte(`[{"type":"Custom","status":"True"}]`)}}, fast)
	if err != nil || !res[0].Applied {
		t.Fatalf("apply = %+v, %v", res, err)
	}
	r := get(t, s, "a")
	if r.Phase != "Ready" || r.SyncedGeneration != 1 || string(r.Status) != `{"ok": true}` || r.Task != nil || r.Reconciles != 1 {
		t.Fatalf("after success: %+v", r)
	}
	// The same result again is discarded: the task is gone.
	res, err = s.ApplyOutcomes(ctx, []store.Outcome{{Lease: c.Lease, Status: []byte(`{"ok":false}`)}}, fast)
	if err != nil || res[0].Applied {
		t.Fatalf("redelivery = %+v, %v", res, err)
	}
	if r := get(t, s, "a"); r.Reconciles != 1 || string(r.Status) != `{"ok": true}` {
		t.Fatalf("redelivered result applied: %+v", r)
	}
}

func TestStaleAndSupersededResults(t *testing.T) {
	s, ctx := newStore(t)
	rev := applyKind(t, s, "leaf", store.Policy{})
	apply(t, s, rev, "a", `{"x":1}`)
	c := claimOne(t, s)
	// The spec changes while the task runs: the result for generation 1
	// is not applied, and the task is released for generation 2.
	apply(t, s, rev, "a", `{"x":2}`)
	res, err := s.ApplyOutcomes(ctx, []store.Outcome{{Lease: c.Lease, Status: []byte(`{"v":1}`)}}, fast)
	if err != nil || res[0].Applied || !res[0].Superseded {
		t.Fatalf("superseded = %+v, %v", res, err)
	}
	c2 := claimOne(t, s)
	if c2.Generation != 2 || c2.Epoch == c.Epoch {
		t.Fatalf("reclaimed %+v after %+v", c2, c)
	}
	// A result under the old epoch is stale.
	res, _ = s.ApplyOutcomes(ctx, []store.Outcome{{Lease: store.Lease{TaskID: c.TaskID, Epoch: c.Epoch, Generation: 2}}}, fast)
	if res[0].Applied || res[0].Superseded {
		t.Fatalf("stale epoch = %+v", res)
	}
	res, _ = s.ApplyOutcomes(ctx, []store.Outcome{{Lease: c2.Lease, Status: []byte(`{"v":2}`)}}, fast)
	if !res[0].Applied {
		t.Fatalf("current lease not applied: %+v", res)
	}
	if r := get(t, s, "a"); r.SyncedGeneration != 2 || r.Phase != "Ready" {
		t.Fatalf("after: %+v", r)
	}
}

func TestFailures(t *testing.T) {
	s, ctx := newStore(t)
	rev := applyKind(t, s, "leaf", store.Policy{MaxTransientAttempts: 3})
	apply(t, s, rev, "a", `{}`)
	var last store.Claimed
	for attempt := int32(1); attempt <= 2; attempt++ {
		c := waitClaim(t, s)
		if c.Attempt != attempt {
			t.Fatalf("attempt = %d, want %d", c.Attempt, attempt)
		}
		res, err := s.ApplyOutcomes(ctx, []store.Outcome{{Lease: c.Lease, Failed: true, Message: "boom"}}, fast)
		if err != nil || !res[0].Applied || res[0].RetryAt.IsZero() {
			t.Fatalf("transient = %+v, %v", res, err)
		}
		r := get(t, s, "a")
		if r.Phase != "Reconciling" || r.FailureAttempts != attempt || r.FailureMessage == nil || *r.FailureMessage != "boom" {
			t.Fatalf("after transient %d: %+v", attempt, r)
		}
		last = c
	}
	_ = last
	// The third consecutive failure exhausts max_transient_attempts.
	c := waitClaim(t, s)
	res, err := s.ApplyOutcomes(ctx, []store.Outcome{{Lease: c.Lease, Failed: true, Message: "boom"}}, fast)
	if err != nil || !res[0].Applied {
		t.Fatalf("escalation = %+v, %v", res, err)
	}
	r := get(t, s, "a")
	if r.Phase != "Failed" || !r.FailureTerminal || r.Task != nil {
		t.Fatalf("after escalation: %+v", r)
	}
	if want := "boom (gave up after 3 consecutive transient failures: the kind's max_transient_attempts of 3 was reached)"; *r.FailureMessage != want {
		t.Fatalf("message = %q, want %q", *r.FailureMessage, want)
	}
	if r.FailureReason == nil || *r.FailureReason != "AttemptsExhausted" {
		t.Fatalf("reason = %v, want AttemptsExhausted", r.FailureReason)
	}
	// A terminal failure pins Failed until the spec changes.
	apply(t, s, rev, "a", `{"fixed":true}`)
	c = waitClaim(t, s)
	if _, err := s.ApplyOutcomes(ctx, []store.Outcome{{Lease: c.Lease, Failed: true, Terminal: true, Message: "bad input"}}, fast); err != nil {
		t.Fatal(err)
	}
	if r := get(t, s, "a"); r.Phase != "Failed" || r.FailureAttempts != 1 || *r.FailureMessage != "bad input" {
		t.Fatalf("after terminal: %+v", r)
	}
	events, err := s.ListEvents(ctx, store.EventFilter{Namespace: "default", Kind: "leaf", Name: "a"})
	if err != nil {
		t.Fatal(err)
	}
	reasons := map[string]int{}
	for _, e := range events {
		reasons[e.Reason]++
	}
	if reasons["TransientFailure"] != 2 || reasons["Failed"] != 2 || reasons["Created"] != 1 || reasons["SpecChanged"] != 1 {
		t.Fatalf("events by reason = %v", reasons)
	}
}

// waitClaim claims the resource's task once its backoff has passed.
func waitClaim(t *testing.T, s *store.Store) store.Claimed {
	t.Helper()
	got := testkit.PollWithin(t, 5*time.Second, "a task to become claimable", func() []store.Claimed {
		got, err := s.Claim(context.Background(), "m1", time.Minute, []store.Want{{Kind: "leaf", Version: 1, Trigger: trigger.SpecChange, N: 1}})
		if err != nil {
			t.Fatal(err)
		}
		return got
	}, func(got []store.Claimed) bool { return len(got) == 1 })
	return got[0]
}

func TestLeaseExpiry(t *testing.T) {
	s, ctx := newStore(t)
	rev := applyKind(t, s, "leaf", store.Policy{})
	apply(t, s, rev, "a", `{}`)
	got, err := s.Claim(ctx, "m1", time.Millisecond, []store.Want{{Kind: "leaf", Version: 1, Trigger: trigger.SpecChange, N: 1}})
	if err != nil || len(got) != 1 {
		t.Fatal(got, err)
	}
	testkit.EventuallyWithin(t, 5*time.Second, "the expired lease to be released", func() bool {
		n, err := s.ReleaseExpired(ctx, 100)
		if err != nil {
			t.Fatal(err)
		}
		return n == 1
	})
	c := claimOne(t, s)
	if c.Epoch == got[0].Epoch {
		t.Fatal("a reclaimed task kept its epoch")
	}
	// Renewing the old lease fails; renewing the new one works.
	until := time.Now().Add(time.Minute)
	renewed, err := s.ExtendLeases(ctx, "m2", []store.Renewal{{Lease: got[0].Lease, Until: until}, {Lease: c.Lease, Until: until}})
	if err != nil || len(renewed) != 1 || renewed[0].TaskID != c.TaskID {
		t.Fatalf("renewed = %+v, %v", renewed, err)
	}
}

func TestChangesFeed(t *testing.T) {
	s, ctx := newStore(t)
	rev := applyKind(t, s, "leaf", store.Policy{})
	start, err := s.CurrentCursor(ctx)
	if err != nil {
		t.Fatal(err)
	}
	apply(t, s, rev, "a", `{}`)
	c := claimOne(t, s)
	if _, err := s.ApplyOutcomes(ctx, []store.Outcome{{Lease: c.Lease}}, fast); err != nil {
		t.Fatal(err)
	}
	changes, next, err := s.ReadChanges(ctx, start, store.ChangeFilter{Kind: "leaf"}, 100)
	if err != nil {
		t.Fatal(err)
	}
	var phases []string
	for _, ch := range changes {
		phases = append(phases, ch.Type+":"+ch.Phase)
	}
	if len(phases) != 2 || phases[0] != "created:Reconciling" || phases[1] != "updated:Ready" {
		t.Fatalf("changes = %v", phases)
	}
	more, _, err := s.ReadChanges(ctx, next, store.ChangeFilter{}, 100)
	if err != nil || len(more) != 0 {
		t.Fatalf("after the cursor: %v, %v", more, err)
	}
	tok := next.String()
	back, err := store.ParseCursor(tok)
	if err != nil || back != next {
		t.Fatalf("cursor round trip: %v %v", back, err)
	}
}

func TestListFilters(t *testing.T) {
	s, ctx := newStore(t)
	rev := applyKind(t, s, "leaf", store.Policy{})
	for _, in := range []struct{ name, labels string }{
		{"a", `{"team":"x","tier":"db"}`}, {"b", `{"team":"y"}`}, {"c", `{}`},
	} {
		if _, _, err := s.ApplyResources(ctx, "t", []store.ApplyInput{{Namespace: "default", Kind: "leaf", KindVersion: 1,
			Name: in.name, Labels: []byte(in.labels), Spec: []byte(`{}`), KindRevision: rev}}); err != nil {
			t.Fatal(err)
		}
	}
	names := func(f store.ListFilter) []string {
		t.Helper()
		if f.Limit == 0 {
			f.Limit = 100
		}
		rs, _, err := s.ListResources(ctx, f)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, r := range rs {
			out = append(out, r.Name)
		}
		return out
	}
	sel := func(s string) labels.Selector {
		x, err := labels.Parse(s)
		if err != nil {
			t.Fatal(err)
		}
		return x
	}
	check := func(got []string, want ...string) {
		t.Helper()
		if len(got) != len(want) {
			t.Fatalf("got %v, want %v", got, want)
		}
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("got %v, want %v", got, want)
			}
		}
	}
	check(names(store.ListFilter{}), "a", "b", "c")
	check(names(store.ListFilter{Selector: sel("team=x")}), "a")
	check(names(store.ListFilter{Selector: sel("team!=x")}), "b", "c")
	check(names(store.ListFilter{Selector: sel("team")}), "a", "b")
	check(names(store.ListFilter{Selector: sel("!team")}), "c")
	check(names(store.ListFilter{Selector: sel("team in (x, y),tier notin (web)")}), "a", "b")
	check(names(store.ListFilter{Phases: []string{"Ready"}}))
	check(names(store.ListFilter{Phases: []string{"Reconciling"}, Kind: "leaf"}), "a", "b", "c")
	page, more, err := s.ListResources(ctx, store.ListFilter{Limit: 2})
	if err != nil || len(page) != 2 || !more {
		t.Fatalf("page 1: %d, %v, %v", len(page), more, err)
	}
	check(names(store.ListFilter{After: &store.ResourceKey{Namespace: "default", Kind: "leaf", Name: "b"}}), "c")
}

func TestDeleteKindInUse(t *testing.T) {
	s, ctx := newStore(t)
	rev := applyKind(t, s, "leaf", store.Policy{})
	apply(t, s, rev, "a", `{}`)
	if err := s.DeleteKind(ctx, "leaf", 1); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("delete in use: %v", err)
	}
	if _, gone, err := s.DeleteResource(ctx, "t", store.ResourceKey{Namespace: "default", Kind: "leaf", Name: "a"}, store.TeardownPolicy{}); err != nil || !gone {
		t.Fatalf("delete resource: %v %v", gone, err)
	}
	assertNoTasks(t, s)
	if err := s.DeleteKind(ctx, "leaf", 1); err != nil {
		t.Fatalf("delete unused: %v", err)
	}
}

func TestTeardown(t *testing.T) {
	s, ctx := newStore(t)
	rev := applyKind(t, s, "leaf", store.Policy{})
	apply(t, s, rev, "a", `{}`)
	key := store.ResourceKey{Namespace: "default", Kind: "leaf", Name: "a"}
	r, gone, err := s.DeleteResource(ctx, "t", key, store.TeardownPolicy{Reaction: true})
	if err != nil || gone || r.Phase != "Deleting" {
		t.Fatalf("delete = %+v %v %v", r, gone, err)
	}
	// The teardown task sees nothing left under or after the resource and
	// queues its deleteRequested reaction.
	internal, err := s.ClaimInternal(ctx, "m1", time.Minute, 10)
	if err != nil || len(internal) != 1 || internal[0].Trigger != trigger.Teardown {
		t.Fatalf("internal claim = %+v, %v", internal, err)
	}
	queued, err := s.Teardown(ctx, internal[0], func(string, int32) store.TeardownPolicy { return store.TeardownPolicy{Reaction: true} })
	if err != nil || !queued {
		t.Fatalf("teardown: queued %v, %v", queued, err)
	}
	got, err := s.Claim(ctx, "m1", time.Minute, []store.Want{
		{Kind: "leaf", Version: 1, Trigger: trigger.SpecChange, N: 1},
		{Kind: "leaf", Version: 1, Trigger: trigger.DeleteRequested, N: 1},
	})
	if err != nil || len(got) != 1 || got[0].Trigger != trigger.DeleteRequested {
		t.Fatalf("claim = %+v, %v", got, err)
	}
	// A teardown failure marked terminal is still retried.
	res, err := s.ApplyOutcomes(ctx, []store.Outcome{{Lease: got[0].Lease, Failed: true, Terminal: true, Message: "no"}}, fast)
	if err != nil || !res[0].Applied || res[0].RetryAt.IsZero() {
		t.Fatalf("teardown failure = %+v, %v", res, err)
	}
	got = testkit.PollWithin(t, 5*time.Second, "the teardown to be retried", func() []store.Claimed {
		got, err := s.Claim(ctx, "m1", time.Minute, []store.Want{{Kind: "leaf", Version: 1, Trigger: trigger.DeleteRequested, N: 1}})
		if err != nil {
			t.Fatal(err)
		}
		return got
	}, func(got []store.Claimed) bool { return len(got) == 1 })
	if res, err := s.ApplyOutcomes(ctx, []store.Outcome{{Lease: got[0].Lease}}, fast); err != nil || !res[0].Applied {
		t.Fatalf("teardown = %+v %v", res, err)
	}
	if _, err := s.GetResource(ctx, "default", "leaf", "a"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("resource still there: %v", err)
	}
	assertNoTasks(t, s)
}

// assertNoTasks checks that deleting resources left no task behind.
func assertNoTasks(t *testing.T, s *store.Store) {
	t.Helper()
	var n int
	if err := s.Pool().QueryRow(context.Background(), `SELECT count(*) FROM tasks`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("%d tasks left after deleting every resource (%v)", n, err)
	}
}

func TestExpiredCursor(t *testing.T) {
	s, ctx := newStore(t)
	rev := applyKind(t, s, "leaf", store.Policy{})
	start, err := s.CurrentCursor(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.CheckCursor(ctx, start); err != nil {
		t.Fatalf("fresh cursor: %v", err)
	}
	apply(t, s, rev, "a", `{}`)
	xid, err := s.CurrentXID(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n, err := s.PruneChanges(ctx, xid, 100); err != nil || n != 1 {
		t.Fatalf("pruned %d, %v", n, err)
	}
	if err := s.CheckCursor(ctx, start); !errors.Is(err, store.ErrCursorExpired) {
		t.Fatalf("pruned cursor: %v", err)
	}
	now, _ := s.CurrentCursor(ctx)
	if err := s.CheckCursor(ctx, now); err != nil {
		t.Fatalf("current cursor: %v", err)
	}
}
