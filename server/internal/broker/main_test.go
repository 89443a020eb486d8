package broker_test

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
	"github.com/convergehq/converge/sdk-go/gen/converge/v1/convergev1connect"
	"github.com/convergehq/converge/server/internal/broker"
	"github.com/convergehq/converge/server/internal/kinds"
	"github.com/convergehq/converge/server/internal/notify"
	"github.com/convergehq/converge/server/internal/pgtest"
	"github.com/convergehq/converge/server/internal/service"
	"github.com/convergehq/converge/server/internal/store"
	"github.com/convergehq/converge/server/internal/testkit"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// env is a database with the kind greeting (v1, reaction reconcile, a
// status with a string message) and what a broker needs to run on it.
type env struct {
	t   *testing.T
	ctx context.Context
	db  *pgtest.DB
	st  *store.Store
	rev int64
}

func newEnv(t *testing.T) *env {
	t.Helper()
	db := pgtest.New(t)
	e := &env{t: t, ctx: context.Background(), db: db, st: store.New(db.Pool, db.Pool)}
	e.rev = testkit.ApplyKind(t, e.st, &convergev1.KindManifest{
		Kind: "greeting", KindVersion: 1,
		SpecSchema: testkit.Object(t),
		StatusSchema: testkit.Schema(t, map[string]any{"type": "object",
			"properties": map[string]any{"message": map[string]any{"type": "string"}}}),
		Reactions: []*convergev1.Reaction{{Name: "reconcile", Trigger: "specChange", Emits: []string{"status"}}},
	}).Revision
	return e
}

// broker runs a broker as member, served through the real Connect
// handler, until the test ends, and returns a client of it.
func (e *env) broker(member string) convergev1connect.WorkerServiceClient {
	e.t.Helper()
	bus := notify.New(e.db.Pool, member, 1000, quiet)
	reg := kinds.New(e.st, bus, quiet)
	if err := reg.Refresh(e.ctx); err != nil {
		e.t.Fatal(err)
	}
	b := broker.New(broker.Config{MemberID: member, Lease: 5 * time.Second, HeartbeatInterval: 100 * time.Millisecond,
		PollInterval: 50 * time.Millisecond, Backoff: store.Backoff{Base: 50 * time.Millisecond, Max: 100 * time.Millisecond}},
		e.st, reg, bus, quiet)
	client := testkit.ServeWorkers(e.t, b)
	g := service.Start(context.Background(), quiet, bus, reg, b)
	// Registered after the server's cleanup, so it runs first: the broker
	// ends its streams, and the server can close.
	e.t.Cleanup(g.Stop)
	return client
}

// worker subscribes a heartbeating greeting worker of capacity n.
func (e *env) worker(client convergev1connect.WorkerServiceClient, n int32, resumed ...*convergev1.Lease) (*testkit.Worker, *convergev1.Subscribed) {
	e.t.Helper()
	return testkit.Subscribe(e.t, client, testkit.Subscription{Capacity: n, Heartbeat: 100 * time.Millisecond, Resumed: resumed,
		Reactions: []*convergev1.ReactionRef{{Kind: "greeting", KindVersion: 1, Reaction: "reconcile"}}})
}

// apply creates or updates a greeting.
func (e *env) apply(name, spec string) {
	e.t.Helper()
	if _, _, err := e.st.ApplyResources(e.ctx, "test", []store.ApplyInput{{Namespace: "default", Kind: "greeting", KindVersion: 1,
		Name: name, Labels: []byte(`{}`), Spec: []byte(spec), KindRevision: e.rev}}); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) get(name string) store.Resource {
	e.t.Helper()
	r, err := e.st.GetResource(e.ctx, "default", "greeting", name)
	if err != nil {
		e.t.Fatal(err)
	}
	return r
}

func lease(l *convergev1.Lease) store.Lease {
	return store.Lease{TaskID: l.GetTaskId(), Epoch: l.GetEpoch(), Generation: l.GetGeneration()}
}
