package reactor

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/convergehq/converge/server/internal/notify"
	"github.com/convergehq/converge/server/internal/pgtest"
	"github.com/convergehq/converge/server/internal/store"
	"github.com/convergehq/converge/server/internal/testkit"
	"github.com/convergehq/converge/server/internal/trigger"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// env is a database with the watched kind leaf (v1, v2) and the reactor
// kinds pager and slow (v1).
type env struct {
	t    *testing.T
	ctx  context.Context
	st   *store.Store
	bus  *notify.Bus
	revs map[int32]int64
}

func newEnv(t *testing.T) *env {
	t.Helper()
	db := pgtest.New(t)
	e := &env{t: t, ctx: context.Background(), st: store.New(db.Pool, db.Pool),
		bus: notify.New(db.Pool, "test", 1000, quiet), revs: map[int32]int64{}}
	for _, k := range []struct {
		kind    string
		version int32
	}{{"leaf", 1}, {"leaf", 2}, {"pager", 1}, {"slow", 1}} {
		row, _, err := e.st.ApplyKind(e.ctx, store.Kind{Kind: k.kind, Version: k.version,
			Manifest: []byte(`{"kind":"` + k.kind + `"}`)}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if k.kind == "leaf" {
			e.revs[k.version] = row.Revision
		}
	}
	return e
}

func (e *env) emitter() *Emitter {
	return New(Config{PollInterval: 10 * time.Millisecond, CountInterval: 10 * time.Millisecond, MinGap: time.Millisecond},
		e.st, e.bus, quiet)
}

// bind applies a binding to pager v1 watching leaf.
func (e *env) bind(name string, edit func(*store.ReactorBinding)) {
	e.t.Helper()
	b := store.ReactorBinding{Name: name, WatchKind: "leaf", Transitions: Transitions, ReactorKind: "pager", ReactorKindVersion: 1}
	if edit != nil {
		edit(&b)
	}
	if _, _, err := e.st.ApplyReactorBinding(e.ctx, b); err != nil {
		e.t.Fatal(err)
	}
}

// apply creates or updates leaf resources at a version and returns their ids.
func (e *env) apply(version int32, labels, spec string, names ...string) []int64 {
	e.t.Helper()
	in := make([]store.ApplyInput, len(names))
	for i, n := range names {
		in[i] = store.ApplyInput{Namespace: "default", Kind: "leaf", KindVersion: version, Name: n,
			Labels: []byte(labels), Spec: []byte(spec), KindRevision: e.revs[version]}
	}
	res, _, err := e.st.ApplyResources(e.ctx, "test", in)
	if err != nil {
		e.t.Fatal(err)
	}
	ids := make([]int64, len(res))
	for i, r := range res {
		ids[i] = r.ID
	}
	return ids
}

// reconcile claims the resource's specChange task and applies out to it.
func (e *env) reconcile(id int64, out store.Outcome) {
	e.t.Helper()
	testkit.Eventually(e.t, fmt.Sprintf("a specChange task for resource %d", id), func() bool {
		got, err := e.st.Claim(e.ctx, "m1", time.Minute, []store.Want{{Kind: "leaf", Version: 1, Trigger: trigger.SpecChange, N: 10}})
		if err != nil {
			e.t.Fatal(err)
		}
		for _, c := range got {
			if c.ResourceID == id {
				out.Lease = c.Lease
				res, err := e.st.ApplyOutcomes(e.ctx, []store.Outcome{out}, store.Backoff{Base: time.Millisecond, Max: time.Millisecond})
				if err != nil || !res[0].Applied {
					e.t.Fatalf("outcome = %+v, %v", res, err)
				}
				return true
			}
		}
		return false
	})
}

// settle drains until the emitter's cursor is past every change recorded
// so far. Polling, because a change becomes readable only once every
// older transaction of the cluster has ended.
func (e *env) settle(em *Emitter) {
	e.t.Helper()
	var last store.Cursor
	var xid *int64
	var seq *int64
	if err := e.st.Pool().QueryRow(e.ctx, `SELECT xid::text::bigint, seq FROM changes ORDER BY xid DESC, seq DESC LIMIT 1`).Scan(&xid, &seq); err != nil {
		e.t.Fatal(err)
	}
	last = store.Cursor{XID: uint64(*xid), Seq: *seq}
	testkit.PollWithin(e.t, 15*time.Second, fmt.Sprintf("the emitter's cursor to pass the last change %+v", last), func() store.Cursor {
		if _, err := em.Drain(e.ctx); err != nil {
			e.t.Fatal(err)
		}
		cur, err := e.st.ReactorCursor(e.ctx)
		if err != nil {
			e.t.Fatal(err)
		}
		return cur
	}, func(cur store.Cursor) bool {
		return cur.XID > last.XID || (cur.XID == last.XID && cur.Seq >= last.Seq)
	})
}

type queued struct {
	key     string
	kind    string
	version int32
	id      int64
	payload Payload
}

// deliveries lists the reactor tasks, by key.
func (e *env) deliveries() []queued {
	e.t.Helper()
	rows, err := e.st.Pool().Query(e.ctx, `SELECT key, kind, kind_version, resource_id, payload, shard, generation
		FROM tasks WHERE trigger = 'reactor' ORDER BY key`)
	if err != nil {
		e.t.Fatal(err)
	}
	defer rows.Close()
	var out []queued
	for rows.Next() {
		var q queued
		var raw []byte
		var shard int16
		var generation int64
		if err := rows.Scan(&q.key, &q.kind, &q.version, &q.id, &raw, &shard, &generation); err != nil {
			e.t.Fatal(err)
		}
		if shard != 0 || generation != 1 {
			e.t.Fatalf("delivery %s: shard %d generation %d; want 0 and 1", q.key, shard, generation)
		}
		if err := json.Unmarshal(raw, &q.payload); err != nil {
			e.t.Fatal(err)
		}
		out = append(out, q)
	}
	if err := rows.Err(); err != nil {
		e.t.Fatal(err)
	}
	return out
}

// keys lists the deliveries as binding/name/transition.
func (e *env) keys() []string {
	var out []string
	for _, d := range e.deliveries() {
		out = append(out, d.payload.Binding+"/"+d.payload.Watched.Name+"/"+d.payload.Transition)
	}
	sort.Strings(out)
	return out
}

func (e *env) wantKeys(want ...string) {
	e.t.Helper()
	sort.Strings(want)
	if got := e.keys(); !slices.Equal(got, want) {
		e.t.Fatalf("deliveries = %v\nwant        %v", got, want)
	}
}

func TestEveryTransition(t *testing.T) {
	e := newEnv(t)
	em := e.emitter()
	if _, err := em.Drain(e.ctx); err != nil {
		t.Fatal(err)
	}
	e.bind("all", nil)
	id := e.apply(1, `{}`, `{"x":1}`, "a")[0]
	e.settle(em)
	e.wantKeys("all/a/created")

	e.reconcile(id, store.Outcome{Actor: "w", Status: []byte(`{"ok":true}`)})
	e.settle(em)
	e.wantKeys("all/a/created", "all/a/synced")

	e.apply(1, `{}`, `{"x":2}`, "a") // Ready -> Reconciling: no transition
	e.settle(em)
	e.wantKeys("all/a/created", "all/a/synced")
	e.reconcile(id, store.Outcome{Actor: "w", Status: []byte(`{"ok":false}`), Unhealthy: true})
	e.settle(em)
	e.wantKeys("all/a/created", "all/a/synced", "all/a/degraded")

	e.apply(1, `{}`, `{"x":3}`, "a")
	e.reconcile(id, store.Outcome{Actor: "w", Failed: true, Terminal: true, Message: "boom"})
	e.settle(em)
	e.wantKeys("all/a/created", "all/a/synced", "all/a/degraded", "all/a/failed")

	if _, gone, err := e.st.DeleteResource(e.ctx, "test", store.ResourceKey{Namespace: "default", Kind: "leaf", Name: "a"},
		store.TeardownPolicy{}); err != nil || !gone {
		t.Fatalf("delete = %v, %v", gone, err)
	}
	e.settle(em)
	e.wantKeys("all/a/created", "all/a/synced", "all/a/degraded", "all/a/failed", "all/a/deleted")

	byTransition := map[string]queued{}
	for _, d := range e.deliveries() {
		byTransition[d.payload.Transition] = d
		prefix := fmt.Sprintf("all/%d/%s/", id, d.payload.Transition)
		rv, err := strconv.ParseInt(strings.TrimPrefix(d.key, prefix), 10, 64)
		if !strings.HasPrefix(d.key, prefix) || err != nil || rv < 1 {
			t.Errorf("key %q; want %s<resource version>", d.key, prefix)
		}
		if d.kind != "pager" || d.version != 1 || d.id != id {
			t.Errorf("delivery %s: kind %s v%d resource %d", d.key, d.kind, d.version, d.id)
		}
		w := d.payload.Watched
		if w != (Watched{Namespace: "default", Kind: "leaf", Name: "a", UID: strconv.FormatInt(id, 10)}) || d.payload.WatchedKindVersion != 1 {
			t.Errorf("delivery %s watched %+v v%d", d.key, w, d.payload.WatchedKindVersion)
		}
	}
	for tr, want := range map[string]struct {
		phase      string
		generation int64
		status     string
	}{
		Created:  {"Reconciling", 1, `{}`},
		Synced:   {"Ready", 1, `{"ok": true}`},
		Degraded: {"Degraded", 2, `{"ok": false}`},
		Failed:   {"Failed", 3, `{"ok": false}`},
		Deleted:  {"Failed", 3, `null`},
	} {
		p := byTransition[tr].payload
		if p.WatchedPhase != want.phase || p.WatchedGeneration != want.generation || string(p.WatchedStatus) != want.status {
			t.Errorf("%s: phase %s generation %d status %s; want %s %d %s", tr, p.WatchedPhase, p.WatchedGeneration,
				p.WatchedStatus, want.phase, want.generation, want.status)
		}
	}
}

func TestLabelSelector(t *testing.T) {
	e := newEnv(t)
	em := e.emitter()
	if _, err := em.Drain(e.ctx); err != nil {
		t.Fatal(err)
	}
	e.bind("prod", func(b *store.ReactorBinding) { b.LabelSelector = "env=prod" })
	e.bind("other", func(b *store.ReactorBinding) {
		b.LabelSelector, b.Transitions = "env!=prod", []string{Created}
	})
	e.apply(1, `{"env":"prod"}`, `{}`, "p")
	e.apply(1, `{"env":"dev"}`, `{}`, "d")
	e.apply(1, `{}`, `{}`, "none")
	e.settle(em)
	e.wantKeys("prod/p/created", "other/d/created", "other/none/created")
	// A gone resource's labels are unknown: a selector never matches it.
	if _, _, err := e.st.DeleteResource(e.ctx, "test", store.ResourceKey{Namespace: "default", Kind: "leaf", Name: "p"},
		store.TeardownPolicy{}); err != nil {
		t.Fatal(err)
	}
	e.settle(em)
	e.wantKeys("prod/p/created", "other/d/created", "other/none/created")
}

func TestDisabledBindingDeliversNothing(t *testing.T) {
	e := newEnv(t)
	em := e.emitter()
	if _, err := em.Drain(e.ctx); err != nil {
		t.Fatal(err)
	}
	e.bind("b", func(b *store.ReactorBinding) { b.Disabled = true })
	e.apply(1, `{}`, `{}`, "while-off")
	e.settle(em)
	e.wantKeys()
	// Enabled again, it sees what happens from then on, not what it missed.
	e.bind("b", nil)
	e.apply(1, `{}`, `{}`, "after")
	e.settle(em)
	e.wantKeys("b/after/created")
}

func TestWatchKindVersion(t *testing.T) {
	e := newEnv(t)
	em := e.emitter()
	if _, err := em.Drain(e.ctx); err != nil {
		t.Fatal(err)
	}
	e.bind("any", func(b *store.ReactorBinding) { b.Transitions = []string{Created} })
	e.bind("v2", func(b *store.ReactorBinding) { b.WatchKindVersion, b.Transitions = 2, []string{Created} })
	e.apply(1, `{}`, `{}`, "one")
	e.apply(2, `{}`, `{}`, "two")
	e.settle(em)
	e.wantKeys("any/one/created", "any/two/created", "v2/two/created")
}

func TestNoReplayBeforeTheBinding(t *testing.T) {
	e := newEnv(t)
	em := e.emitter()
	if _, err := em.Drain(e.ctx); err != nil {
		t.Fatal(err)
	}
	e.apply(1, `{}`, `{}`, "early")
	e.bind("b", nil)
	e.apply(1, `{}`, `{}`, "late")
	e.settle(em)
	e.wantKeys("b/late/created")
}

func TestCursorSurvivesARestart(t *testing.T) {
	e := newEnv(t)
	first := e.emitter()
	if _, err := first.Drain(e.ctx); err != nil {
		t.Fatal(err)
	}
	e.bind("b", func(b *store.ReactorBinding) { b.Transitions = []string{Created} })
	e.apply(1, `{}`, `{}`, "a")
	e.settle(first)
	e.wantKeys("b/a/created")
	// The delivery ran; a new emitter (a restarted server) must not queue
	// it again, and continues with what comes next.
	if _, err := e.st.Pool().Exec(e.ctx, `DELETE FROM tasks WHERE trigger = 'reactor'`); err != nil {
		t.Fatal(err)
	}
	second := e.emitter()
	e.apply(1, `{}`, `{}`, "b")
	e.settle(second)
	e.wantKeys("b/b/created")
}

func TestCursorStartsAtTheEndOfTheFeed(t *testing.T) {
	e := newEnv(t)
	if err := e.st.StartReactorFeed(e.ctx); err != nil {
		t.Fatal(err)
	}
	cur, err := e.st.ReactorCursor(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	next, err := e.st.CurrentXID(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if cur.XID >= next || cur.Seq != math.MaxInt64 {
		t.Fatalf("cursor %+v; want it before the next transaction %d", cur, next)
	}
	// Starting again keeps the cursor where it is.
	e.bind("b", nil)
	e.apply(1, `{}`, `{}`, "a")
	e.settle(e.emitter())
	moved, err := e.st.ReactorCursor(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.st.StartReactorFeed(e.ctx); err != nil {
		t.Fatal(err)
	}
	if again, err := e.st.ReactorCursor(e.ctx); err != nil || again != moved || moved == cur {
		t.Fatalf("cursor %+v after a second start, %v; want %+v (moved from %+v)", again, err, moved, cur)
	}
}
