package taskrec

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/convergehq/converge/server/internal/pgtest"
	"github.com/convergehq/converge/server/internal/store"
	"github.com/convergehq/converge/server/internal/trigger"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// TestRecorderPrunesWhenDue writes records through a recorder against a
// real PostgreSQL: a resource is trimmed to Keep once it has Keep/2 new
// records, a teardown's record of a deleted resource goes at once, and
// the shutdown trims the rest.
func TestRecorderPrunesWhenDue(t *testing.T) {
	db := pgtest.New(t)
	st := store.New(db.Pool, db.Pool)
	ctx := context.Background()
	k, _, err := st.ApplyKind(ctx, store.Kind{Kind: "leaf", Version: 1, Manifest: []byte(`{"kind":"leaf"}`)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var in []store.ApplyInput
	for _, n := range []string{"hot", "cold", "gone"} {
		in = append(in, store.ApplyInput{Namespace: "default", Kind: "leaf", KindVersion: 1, Name: n,
			Labels: []byte(`{}`), Spec: []byte(`{}`), KindRevision: k.Revision})
	}
	res, _, err := st.ApplyResources(ctx, "test", in)
	if err != nil {
		t.Fatal(err)
	}
	hot, cold, gone := res[0].ID, res[1].ID, res[2].ID
	r := New(Config{Keep: 4}, st, slog.New(slog.DiscardHandler))
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); r.Run(runCtx) }()
	record := func(id int64, trig string, n int) {
		for i := 0; i < n; i++ {
			p := r.Start(store.Claimed{Lease: store.Lease{TaskID: int64(i + 1), Generation: 1}, Trigger: trig, ResourceID: id},
				Input{KindVersion: 1}, time.Now())
			r.Finish(p, store.Outcome{}, store.RecordApplied, "")
		}
	}
	count := func(id int64) int {
		var n int
		if err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM task_records WHERE resource_id = $1`, id).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	eventually := func(what string, ok func() bool) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); !ok(); time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: hot %d, cold %d, gone %d records", what, count(hot), count(cold), count(gone))
			}
		}
	}
	record(hot, trigger.SpecChange, 9)
	record(cold, trigger.SpecChange, 1)
	eventually("hot's 9 records pruned to 4 or 5 (Keep 4, pruned at every 2nd new one)", func() bool {
		n := count(hot)
		return r.Written() == 10 && n >= 4 && n <= 5
	})
	if _, err := db.Pool.Exec(ctx, `DELETE FROM resources WHERE id = $1`, gone); err != nil {
		t.Fatal(err)
	}
	record(gone, trigger.DeleteRequested, 1)
	eventually("the teardown record of a deleted resource is pruned", func() bool { return r.Written() == 11 && count(gone) == 0 })
	stop()
	<-done
	if h, c := count(hot), count(cold); h != 4 || c != 1 {
		t.Fatalf("after shutdown hot has %d records, cold %d; want 4 and 1", h, c)
	}
	if r.Dropped() != 0 {
		t.Fatalf("%d records dropped", r.Dropped())
	}
}
