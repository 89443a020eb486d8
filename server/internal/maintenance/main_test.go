package maintenance

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/convergehq/converge/server/internal/notify"
	"github.com/convergehq/converge/server/internal/pgtest"
	"github.com/convergehq/converge/server/internal/service"
	"github.com/convergehq/converge/server/internal/store"
	"github.com/convergehq/converge/server/internal/testkit"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// tick is the interval the duties run at in tests.
const tick = 20 * time.Millisecond

// env is a fresh database with a leaf kind, and a bus whose task wake-ups
// the test can see.
type env struct {
	t     *testing.T
	ctx   context.Context
	st    *store.Store
	bus   *notify.Bus
	rev   int64
	woken <-chan struct{}
}

func newEnv(t *testing.T) *env {
	t.Helper()
	db := pgtest.New(t)
	e := &env{t: t, ctx: context.Background(), st: store.New(db.Pool, db.Pool), bus: notify.New(db.Pool, "test", 1000, quiet)}
	woken, stop := e.bus.Subscribe(notify.Tasks)
	t.Cleanup(stop)
	e.woken = woken
	e.rev = e.kind("leaf")
	return e
}

// kind registers kind v1 and returns its revision.
func (e *env) kind(name string) int64 {
	e.t.Helper()
	k, _, err := e.st.ApplyKind(e.ctx, store.Kind{Kind: name, Version: 1, Manifest: []byte(`{"kind":"` + name + `"}`)}, nil)
	if err != nil {
		e.t.Fatal(err)
	}
	return k.Revision
}

// apply creates or updates a resource of kind (v1, revision rev).
func (e *env) apply(kind string, rev int64, name, spec string) {
	e.t.Helper()
	if _, _, err := e.st.ApplyResources(e.ctx, "test", []store.ApplyInput{{Namespace: "default", Kind: kind, KindVersion: 1,
		Name: name, Labels: []byte(`{}`), Spec: []byte(spec), KindRevision: rev}}); err != nil {
		e.t.Fatal(err)
	}
}

// claim claims the oldest ready task of kind and trigger for member.
func (e *env) claim(kind, trigger, member string, lease time.Duration) store.Claimed {
	e.t.Helper()
	got, err := e.st.Claim(e.ctx, member, lease, []store.Want{{Kind: kind, Version: 1, Trigger: trigger, N: 1}})
	if err != nil || len(got) != 1 {
		e.t.Fatalf("%s claimed %v, %v; want one %s %s task", member, got, err, kind, trigger)
	}
	return got[0]
}

func (e *env) get(kind, name string) store.Resource {
	e.t.Helper()
	r, err := e.st.GetResource(e.ctx, "default", kind, name)
	if err != nil {
		e.t.Fatalf("get %s/%s: %v", kind, name, err)
	}
	return r
}

// lastEvent returns the newest event of a resource.
func (e *env) lastEvent(kind, name string) store.Event {
	e.t.Helper()
	evs, err := e.st.ListEvents(e.ctx, store.EventFilter{Namespace: "default", Kind: kind, Name: name, Limit: 1})
	if err != nil || len(evs) != 1 {
		e.t.Fatalf("events of %s/%s: %v, %v", kind, name, evs, err)
	}
	return evs[0]
}

func (e *env) heartbeat(ids ...string) {
	e.t.Helper()
	for _, id := range ids {
		if err := e.st.HeartbeatMember(e.ctx, store.Member{ID: id, Roles: []string{"broker"}, Hostname: "h"}); err != nil {
			e.t.Fatal(err)
		}
	}
}

// run runs services until the test ends.
func (e *env) run(svcs ...service.Service) {
	g := service.Start(context.Background(), quiet, svcs...)
	e.t.Cleanup(g.Stop)
}

// drainWake empties the wake-up channel, so wokeUp sees only later wakes.
func (e *env) drainWake() {
	select {
	case <-e.woken:
	default:
	}
}

// wokeUp fails unless a task wake-up was published.
func (e *env) wokeUp(what string) {
	e.t.Helper()
	testkit.ReceiveWithin(e.t, 5*time.Second, e.woken, "a task wake-up after "+what)
}
