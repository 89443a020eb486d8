package store_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/convergehq/converge/server/internal/pgtest"
	"github.com/convergehq/converge/server/internal/store"
	"github.com/convergehq/converge/server/internal/trigger"
)

func histKey(kind, name string) store.ResourceKey {
	return store.ResourceKey{Namespace: "default", Kind: kind, Name: name}
}

// histApply applies a resource of kind at version as actor.
func histApply(t *testing.T, s *store.Store, actor, kind string, version int32, rev int64, name, spec string) store.ApplyResult {
	t.Helper()
	res, _, err := s.ApplyResources(context.Background(), actor, []store.ApplyInput{{Namespace: "default", Kind: kind,
		KindVersion: version, Name: name, Labels: []byte(`{}`), Spec: []byte(spec), KindRevision: rev}})
	if err != nil {
		t.Fatal(err)
	}
	return res[0]
}

// histAll returns every kept revision, newest first, as
// "generation:vN:source:actor:spec".
func histAll(t *testing.T, s *store.Store, kind, name string) []string {
	t.Helper()
	page, err := s.ResourceHistory(context.Background(), histKey(kind, name), 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range page.Revisions {
		out = append(out, fmt.Sprintf("%d:v%d:%s:%s:%s", r.Generation, r.KindVersion, r.Source, r.Actor, r.Spec))
	}
	return out
}

// histRollback rolls back with a Check that accepts every spec at the
// given kind revisions (by version).
func histRollback(s *store.Store, kind, name string, gen int64, revs map[int32]int64) (bool, error) {
	return s.RollbackResource(context.Background(), store.Rollback{Key: histKey(kind, name), Generation: gen,
		Actor: "api:op", Reason: "bad deploy",
		Check: func(version int32, _ []byte) (int64, error) { return revs[version], nil }})
}

func TestHistoryOrderAndPaging(t *testing.T) {
	s, ctx := newStore(t)
	rev := cfgKind(t, s, "leaf", 1, store.Policy{})
	for i := 1; i <= 25; i++ {
		histApply(t, s, "alice", "leaf", 1, rev, "a", fmt.Sprintf(`{"n":%d}`, i))
	}
	// Labels alone make no revision.
	if _, _, err := s.ApplyResources(ctx, "alice", []store.ApplyInput{{Namespace: "default", Kind: "leaf", KindVersion: 1,
		Name: "a", Labels: []byte(`{"x":"y"}`), Spec: []byte(`{"n":25}`), KindRevision: rev}}); err != nil {
		t.Fatal(err)
	}
	var gens []int64
	before := int64(0)
	for pages := 0; ; pages++ {
		page, err := s.ResourceHistory(ctx, histKey("leaf", "a"), before, 10)
		if err != nil {
			t.Fatal(err)
		}
		if page.Keep != store.DefaultHistoryKeep {
			t.Fatalf("keep = %d", page.Keep)
		}
		for _, r := range page.Revisions {
			if r.Source != store.SourceApply || r.Actor != "alice" || string(r.Spec) != fmt.Sprintf(`{"n": %d}`, r.Generation) {
				t.Fatalf("revision = %+v", r)
			}
			gens = append(gens, r.Generation)
		}
		if !page.More {
			if pages != 2 {
				t.Fatalf("%d pages, want 3", pages+1)
			}
			break
		}
		before = page.Revisions[len(page.Revisions)-1].Generation
	}
	if len(gens) != 25 {
		t.Fatalf("generations = %v", gens)
	}
	for i, g := range gens {
		if g != int64(25-i) {
			t.Fatalf("generations out of order: %v", gens)
		}
	}
	_, err := s.ResourceHistory(ctx, histKey("leaf", "nope"), 0, 10)
	wantErr(t, err, store.ErrNotFound, "resource default/leaf/nope not found")
}

func TestHistoryKeep(t *testing.T) {
	db := pgtest.New(t)
	ctx := context.Background()
	pc, err := pgxpool.ParseConfig(db.URL)
	if err != nil {
		t.Fatal(err)
	}
	pc.ConnConfig.RuntimeParams[store.HistoryKeepSetting] = "3"
	pool, err := pgxpool.NewWithConfig(ctx, pc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	s := store.New(pool, pool)
	rev := cfgKind(t, s, "leaf", 1, store.Policy{})
	for i := 1; i <= 6; i++ {
		histApply(t, s, "alice", "leaf", 1, rev, "a", fmt.Sprintf(`{"n":%d}`, i))
	}
	page, err := s.ResourceHistory(ctx, histKey("leaf", "a"), 0, 100)
	if err != nil || page.Keep != 3 || len(page.Revisions) != 3 || page.Revisions[2].Generation != 4 {
		t.Fatalf("history with keep 3 = %+v, %v", page, err)
	}
	var stored int
	// The current revision is read from the resource row: the kept
	// superseded ones alone are stored.
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM spec_revisions`).Scan(&stored); err != nil || stored != 2 {
		t.Fatalf("%d revisions stored, want exactly 2 (%v)", stored, err)
	}
	revs := map[int32]int64{1: rev}
	_, err = histRollback(s, "leaf", "a", 3, revs)
	wantErr(t, err, store.ErrNotFound, "generation 3 of default/leaf/a: aged out: the oldest kept generation is 4 (the last 3 are kept)")
	_, err = histRollback(s, "leaf", "a", 7, revs)
	wantErr(t, err, store.ErrNotFound, "generation 7 of default/leaf/a: never existed; the current generation is 6")
	if changed, err := histRollback(s, "leaf", "a", 4, revs); err != nil || !changed {
		t.Fatalf("rollback to a kept generation: %v, %v", changed, err)
	}
	if got := histAll(t, s, "leaf", "a"); len(got) != 3 || got[0] != `7:v1:rollback:api:op:{"n": 4}` {
		t.Fatalf("history after rollback = %v", got)
	}
}

func TestRollback(t *testing.T) {
	s, ctx := newStore(t)
	rev := cfgKind(t, s, "leaf", 1, store.Policy{})
	revs := map[int32]int64{1: rev}
	histApply(t, s, "alice", "leaf", 1, rev, "a", `{"n":1}`)
	histApply(t, s, "alice", "leaf", 1, rev, "a", `{"n":2}`)
	// The current work is done, so the rollback's reconcile is new work.
	c := claimOne(t, s)
	if _, err := s.ApplyOutcomes(ctx, []store.Outcome{{Lease: c.Lease, Status: []byte(`{}`)}}, fast); err != nil {
		t.Fatal(err)
	}

	changed, err := histRollback(s, "leaf", "a", 1, revs)
	if err != nil || !changed {
		t.Fatalf("rollback = %v, %v", changed, err)
	}
	r := get(t, s, "a")
	if r.Generation != 3 || string(r.Spec) != `{"n": 1}` || r.Task == nil || r.Task.Trigger != trigger.SpecChange {
		t.Fatalf("after rollback: generation %d, spec %s, task %+v", r.Generation, r.Spec, r.Task)
	}
	if got := histAll(t, s, "leaf", "a"); strings.Join(got, " ") !=
		`3:v1:rollback:api:op:{"n": 1} 2:v1:apply:alice:{"n": 2} 1:v1:apply:alice:{"n": 1}` {
		t.Fatalf("history = %v", got)
	}
	evs, err := s.ListEvents(ctx, store.EventFilter{Namespace: "default", Kind: "leaf", Name: "a", Limit: 1})
	if err != nil || len(evs) != 1 || evs[0].Reason != "RolledBack" || evs[0].Actor != "api:op" ||
		!strings.Contains(evs[0].Message, "generation 1") || !strings.Contains(evs[0].Message, "bad deploy") {
		t.Fatalf("event = %+v, %v", evs, err)
	}

	// Rolling back to the spec it has now changes nothing.
	if changed, err := histRollback(s, "leaf", "a", 1, revs); err != nil || changed {
		t.Fatalf("rollback to the current spec = %v, %v", changed, err)
	}
	if r := get(t, s, "a"); r.Generation != 3 {
		t.Fatalf("generation after a no-op rollback = %d", r.Generation)
	}

	// Check's verdict is returned as is; a kind changed since is stale.
	refused := errors.New("spec no longer valid")
	_, err = s.RollbackResource(ctx, store.Rollback{Key: histKey("leaf", "a"), Generation: 2, Actor: "x",
		Check: func(int32, []byte) (int64, error) { return 0, refused }})
	if !errors.Is(err, refused) {
		t.Fatalf("check error = %v", err)
	}
	_, err = histRollback(s, "leaf", "a", 2, map[int32]int64{1: rev + 1})
	wantErr(t, err, store.ErrStaleKind)
	if r := get(t, s, "a"); r.Generation != 3 {
		t.Fatalf("a refused rollback changed the resource: generation %d", r.Generation)
	}
	_, err = histRollback(s, "leaf", "nope", 1, revs)
	wantErr(t, err, store.ErrNotFound, "resource default/leaf/nope not found")
}

func TestRollbackVersionMove(t *testing.T) {
	s, ctx := newStore(t)
	rev1 := cfgKind(t, s, "leaf", 1, store.Policy{})
	rev2 := cfgKind(t, s, "leaf", 2, store.Policy{})
	revs := map[int32]int64{1: rev1, 2: rev2}
	histApply(t, s, "alice", "leaf", 1, rev1, "a", `{"n":1}`)
	histApply(t, s, "alice", "leaf", 2, rev2, "a", `{"size":1}`)
	histApply(t, s, "alice", "leaf", 1, rev1, "b", `{"n":1}`)
	histApply(t, s, "alice", "leaf", 2, rev2, "b", `{"size":1}`)

	var checked int32
	changed, err := s.RollbackResource(ctx, store.Rollback{Key: histKey("leaf", "a"), Generation: 1, Actor: "api:op",
		Check: func(version int32, spec []byte) (int64, error) {
			checked = version
			if string(spec) != `{"n": 1}` {
				t.Errorf("checked spec %s", spec)
			}
			return revs[version], nil
		}})
	if err != nil || !changed || checked != 1 {
		t.Fatalf("rollback across versions = %v, %v (checked at v%d)", changed, err, checked)
	}
	if r := get(t, s, "a"); r.KindVersion != 1 || r.Generation != 3 || string(r.Spec) != `{"n": 1}` {
		t.Fatalf("after the version move: v%d generation %d spec %s", r.KindVersion, r.Generation, r.Spec)
	}

	// A retired version takes no resource moving to it.
	k, _, err := s.ApplyKind(ctx, store.Kind{Kind: "leaf", Version: 1, Manifest: []byte(`{"kind":"leaf"}`),
		Policy: store.Policy{Retired: true}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	revs[1] = k.Revision
	_, err = histRollback(s, "leaf", "b", 1, revs)
	wantErr(t, err, store.ErrConflict, "generation 1 of default/leaf/b was at kind leaf v1, which is retired")
	// A resource still at the retired version may roll back within it, and
	// out of it.
	histApply(t, s, "alice", "leaf", 1, revs[1], "a", `{"n":5}`)
	if changed, err := histRollback(s, "leaf", "a", 3, revs); err != nil || !changed {
		t.Fatalf("rollback within a retired version: %v, %v", changed, err)
	}
	if changed, err := histRollback(s, "leaf", "a", 2, revs); err != nil || !changed {
		t.Fatalf("rollback out of a retired version: %v, %v", changed, err)
	}
	if r := get(t, s, "a"); r.KindVersion != 2 || r.Generation != 6 || string(r.Spec) != `{"size": 1}` {
		t.Fatalf("after leaving v1: v%d generation %d spec %s", r.KindVersion, r.Generation, r.Spec)
	}
}

func TestRollbackRefusals(t *testing.T) {
	s, ctx := newStore(t)
	rev1 := cfgKind(t, s, "leaf", 1, store.Policy{})
	rev2 := cfgKind(t, s, "leaf", 2, store.Policy{})
	revs := map[int32]int64{1: rev1, 2: rev2}

	// A kind version that is gone.
	histApply(t, s, "alice", "leaf", 1, rev1, "gone", `{"n":1}`)
	histApply(t, s, "alice", "leaf", 2, rev2, "gone", `{"size":1}`)
	if err := s.DeleteKind(ctx, "leaf", 1); err != nil {
		t.Fatal(err)
	}
	_, err := histRollback(s, "leaf", "gone", 1, revs)
	wantErr(t, err, store.ErrConflict, "generation 1 of default/leaf/gone was at kind leaf v1, which is no longer registered")

	// A named provider config missing at the version rolled back to.
	rev1 = cfgKind(t, s, "leaf", 1, store.Policy{})
	revs[1] = rev1
	histApply(t, s, "alice", "leaf", 1, rev1, "cfg", `{"n":1}`)
	cfgV2 := store.ConfigValidator{KindRevision: rev2, Validate: func([]byte) error { return nil }}
	if _, _, err := s.ApplyProviderConfig(ctx, store.ProviderConfig{Kind: "leaf", Version: 2, Name: "big", Config: []byte(`{}`)}, cfgV2); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.ApplyResources(ctx, "alice", []store.ApplyInput{{Namespace: "default", Kind: "leaf", KindVersion: 2,
		Name: "cfg", Labels: []byte(`{}`), Spec: []byte(`{"size":2}`), KindRevision: rev2, ProviderConfig: "big"}}); err != nil {
		t.Fatal(err)
	}
	_, err = histRollback(s, "leaf", "cfg", 1, revs)
	wantErr(t, err, store.ErrConflict, `provider_config: kind leaf v1 has no provider config named "big"`)

	// A resource being deleted.
	histApply(t, s, "alice", "leaf", 2, rev2, "del", `{"size":1}`)
	histApply(t, s, "alice", "leaf", 2, rev2, "del", `{"size":2}`)
	if _, _, err := s.DeleteResource(ctx, "alice", histKey("leaf", "del"), store.TeardownPolicy{Reaction: true}); err != nil {
		t.Fatal(err)
	}
	_, err = histRollback(s, "leaf", "del", 1, revs)
	wantErr(t, err, store.ErrConflict, "default/leaf/del is being deleted")
}

func TestRevisionSources(t *testing.T) {
	s, ctx := newStore(t)
	stackRev := cfgKind(t, s, "stack", 1, store.Policy{})
	partRev := cfgKind(t, s, "part", 1, store.Policy{})
	histApply(t, s, "alice", "stack", 1, stackRev, "s", `{}`)
	got, err := s.Claim(ctx, "m1", time.Minute, []store.Want{{Kind: "stack", Version: 1, Trigger: trigger.SpecChange, N: 1}})
	if err != nil || len(got) != 1 {
		t.Fatalf("claim the composite: %v, %v", got, err)
	}
	ref := func(name string) store.Ref { return store.Ref{Namespace: "default", Kind: "part", Name: name} }
	res, err := s.ApplyComposition(ctx, store.Composition{
		Outcome: store.Outcome{Lease: got[0].Lease, Actor: "worker:w1", Status: []byte(`{}`)},
		Children: []store.ChildSpec{
			{Kind: "part", Version: 1, Name: "s-a", Labels: []byte(`{}`), Spec: []byte(`{}`), KindRevision: partRev},
			{Kind: "part", Version: 1, Name: "s-b", Labels: []byte(`{}`), Spec: []byte(`{"n":1}`), KindRevision: partRev},
		},
		Edges: []store.EdgeSpec{{Dependent: ref("s-b"), Dependency: ref("s-a"), Flows: []byte(`[{"from":"/id","to":"/upstream"}]`)}},
	})
	if err != nil || !res.Applied || res.Refused != nil {
		t.Fatalf("compose = %+v, %v", res, err)
	}
	if h := histAll(t, s, "part", "s-a"); len(h) != 1 || h[0] != "1:v1:compose:worker:w1:{}" {
		t.Fatalf("child history = %v", h)
	}

	// The gate opens s-b with a flowed value: a flow revision by the system.
	tasks, err := s.ClaimInternal(ctx, "m1", time.Minute, 100)
	if err != nil {
		t.Fatal(err)
	}
	var gates []store.InternalTask
	for _, tk := range tasks {
		if tk.Trigger == trigger.Gate {
			gates = append(gates, tk)
		}
	}
	if len(gates) != 1 {
		t.Fatalf("gate tasks = %+v", tasks)
	}
	if _, err := s.Gates(ctx, gates, func(store.GateInput) store.GateDecision {
		return store.GateDecision{Spec: []byte(`{"n":1,"upstream":"a-1"}`)}
	}); err != nil {
		t.Fatal(err)
	}
	h := histAll(t, s, "part", "s-b")
	if strings.Join(h, " ") != `2:v1:flow:system:{"n": 1, "upstream": "a-1"} 1:v1:compose:worker:w1:{"n": 1}` {
		t.Fatalf("dependent history = %v", h)
	}

	// A child's spec comes from its composer: it is not rolled back alone.
	_, err = histRollback(s, "part", "s-b", 1, map[int32]int64{1: partRev})
	wantErr(t, err, store.ErrConflict, "default/part/s-b is owned by composite stack/s: its spec comes from its composer; roll back the composite")
	if h := histAll(t, s, "stack", "s"); len(h) != 1 || h[0] != "1:v1:apply:alice:{}" {
		t.Fatalf("composite history = %v", h)
	}
}
