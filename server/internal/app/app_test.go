package app_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/structpb"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
	"github.com/convergehq/converge/sdk-go/gen/converge/v1/convergev1connect"
	"github.com/convergehq/converge/server/internal/app"
	"github.com/convergehq/converge/server/internal/broker"
	"github.com/convergehq/converge/server/internal/pgtest"
	"github.com/convergehq/converge/server/internal/store"
	"github.com/convergehq/converge/server/internal/testkit"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// server starts a full server (all roles) on a fresh database.
func server(t *testing.T) (base string, ctl convergev1connect.ControlServiceClient, wrk convergev1connect.WorkerServiceClient) {
	t.Helper()
	a := startWith(t, nil)
	base = "http://" + a.Addr().String()
	return base, convergev1connect.NewControlServiceClient(http.DefaultClient, base), convergev1connect.NewWorkerServiceClient(testkit.H2C(), base)
}

// serverWith starts a full server whose config tune changes first, and
// returns its base URL, address and a control client.
func serverWith(t *testing.T, tune func(*app.Config)) (base, addr string, ctl convergev1connect.ControlServiceClient) {
	t.Helper()
	a := startWith(t, tune)
	base = "http://" + a.Addr().String()
	return base, a.Addr().String(), convergev1connect.NewControlServiceClient(http.DefaultClient, base)
}

func startWith(t *testing.T, tune func(*app.Config)) *app.App {
	t.Helper()
	db := pgtest.New(t)
	cfg := app.Config{
		DatabaseURL: db.URL, Listen: "127.0.0.1:0", Role: app.RoleAll, Migrate: false,
		Broker: broker.Config{Lease: 2 * time.Second, HeartbeatInterval: 200 * time.Millisecond,
			PollInterval: 200 * time.Millisecond, Backoff: store.Backoff{Base: 50 * time.Millisecond, Max: 200 * time.Millisecond}},
		Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
	if tune != nil {
		tune(&cfg)
	}
	a, err := app.Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Stop() })
	return a
}

func mustStruct(t *testing.T, v map[string]any) *structpb.Struct {
	t.Helper()
	s, err := structpb.NewStruct(v)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func applyGreeting(t *testing.T, ctl convergev1connect.ControlServiceClient) {
	t.Helper()
	_, err := ctl.ApplyKind(context.Background(), &convergev1.ApplyKindRequest{Manifest: &convergev1.KindManifest{
		Kind: "greeting", KindVersion: 1,
		SpecSchema: mustStruct(t, map[string]any{"type": "object", "required": []any{"name"},
			"properties": map[string]any{"name": map[string]any{"type": "string", "minLength": 1}}}),
		StatusSchema: mustStruct(t, map[string]any{"type": "object",
			"properties": map[string]any{"message": map[string]any{"type": "string"}}}),
		Reactions: []*convergev1.Reaction{{Name: "reconcile", Trigger: "specChange", Emits: []string{"status", "conditions"}}},
	}})
	if err != nil {
		t.Fatal(err)
	}
}

func applyResource(t *testing.T, ctl convergev1connect.ControlServiceClient, name string, spec map[string]any) {
	t.Helper()
	if _, err := ctl.ApplyResource(context.Background(), &convergev1.ApplyResourceRequest{
		Kind: "greeting", KindVersion: 1, Name: name, Spec: mustStruct(t, spec)}); err != nil {
		t.Fatal(err)
	}
}

func getResource(t *testing.T, ctl convergev1connect.ControlServiceClient, name string) *convergev1.Resource {
	t.Helper()
	r, err := ctl.GetResource(context.Background(), &convergev1.GetResourceRequest{Kind: "greeting", Name: name})
	if err != nil {
		t.Fatal(err)
	}
	return r.GetResource()
}

func waitPhase(t *testing.T, ctl convergev1connect.ControlServiceClient, name, phase string) *convergev1.Resource {
	t.Helper()
	return testkit.Poll(t, fmt.Sprintf("%s to reach phase %s", name, phase),
		func() *convergev1.Resource { return getResource(t, ctl, name) },
		func(r *convergev1.Resource) bool { return r.GetPhase() == phase })
}

// rawWorker is a worker speaking the protocol by hand, to test what the
// SDK would hide.
type rawWorker = testkit.Worker

var greetingReactions = []*convergev1.ReactionRef{{Kind: "greeting", KindVersion: 1, Reaction: "reconcile"}}

// connectWorker subscribes a heartbeating greeting worker.
func connectWorker(t *testing.T, wrk convergev1connect.WorkerServiceClient, capacity int32, resumed ...*convergev1.Lease) (*rawWorker, *convergev1.Subscribed) {
	return connectWorkerServing(t, wrk, capacity, greetingReactions, resumed...)
}

// connectWorkerServing subscribes a heartbeating worker serving reactions.
func connectWorkerServing(t *testing.T, wrk convergev1connect.WorkerServiceClient, capacity int32, reactions []*convergev1.ReactionRef,
	resumed ...*convergev1.Lease) (*rawWorker, *convergev1.Subscribed) {
	t.Helper()
	return testkit.Subscribe(t, wrk, testkit.Subscription{Capacity: capacity, Reactions: reactions, Resumed: resumed,
		Heartbeat: 100 * time.Millisecond})
}

// connectSilentWorker subscribes a greeting worker that never heartbeats.
func connectSilentWorker(t *testing.T, wrk convergev1connect.WorkerServiceClient, capacity int32, resumed ...*convergev1.Lease) (*rawWorker, *convergev1.Subscribed) {
	return subscribe(t, wrk, capacity, greetingReactions, resumed...)
}

// subscribe subscribes a worker that never heartbeats.
func subscribe(t *testing.T, wrk convergev1connect.WorkerServiceClient, capacity int32, reactions []*convergev1.ReactionRef,
	resumed ...*convergev1.Lease) (*rawWorker, *convergev1.Subscribed) {
	t.Helper()
	return testkit.Subscribe(t, wrk, testkit.Subscription{Capacity: capacity, Reactions: reactions, Resumed: resumed})
}

func TestLeafReconcilesOverTheWorkerStream(t *testing.T) {
	_, ctl, wrk := server(t)
	applyGreeting(t, ctl)
	applyResource(t, ctl, "hello", map[string]any{"name": "world"})

	// Without a worker the resource is parked, and says why.
	r := getResource(t, ctl, "hello")
	if r.GetPhase() != "Reconciling" || !hasCondition(r, "WorkerAvailable", "False") {
		t.Fatalf("parked resource = %v", r)
	}

	w, _ := connectWorker(t, wrk, 4)
	task := w.Task()
	if task.GetResource().GetName() != "hello" || task.GetReaction() != "reconcile" || task.GetAttempt() != 1 ||
		!strings.Contains(string(task.GetResource().GetSpec()), `"world"`) || task.GetDedupToken() == "" {
		t.Fatalf("task = %v", task)
	}
	w.Result(task.GetLease(), `{"message":"hello, world"}`)
	if a := w.Ack(); !a.GetApplied() {
		t.Fatalf("ack = %v", a)
	}
	r = waitPhase(t, ctl, "hello", "Ready")
	if r.GetStatus().GetFields()["message"].GetStringValue() != "hello, world" || r.GetSyncedGeneration() != 1 {
		t.Fatalf("ready resource = %v", r)
	}
	// Sending the same result again is discarded: it applies once.
	w.Result(task.GetLease(), `{"message":"again"}`)
	if a := w.Ack(); a.GetApplied() {
		t.Fatalf("second ack = %v", a)
	}
	// A result for a lease the worker never held is discarded.
	w.Result(&convergev1.Lease{TaskId: 999999, Epoch: 1, Generation: 1}, `{}`)
	if a := w.Ack(); a.GetApplied() || a.GetReason() == "" {
		t.Fatalf("forged ack = %v", a)
	}
	if r := getResource(t, ctl, "hello"); r.GetReconciles() != 1 {
		t.Fatalf("reconciles = %d, want 1", r.GetReconciles())
	}
}

func TestStatusMustConformToStatusSchema(t *testing.T) {
	_, ctl, wrk := server(t)
	applyGreeting(t, ctl)
	applyResource(t, ctl, "hello", map[string]any{"name": "world"})
	w, _ := connectWorker(t, wrk, 1)
	task := w.Task()
	w.Result(task.GetLease(), `{"message":42}`)
	w.Ack()
	r := waitPhase(t, ctl, "hello", "Failed")
	if msg := r.GetFailure().GetMessage(); !strings.Contains(msg, "/message") || !r.GetFailure().GetTerminal() {
		t.Fatalf("failure = %v", r.GetFailure())
	}
}

// TestUnstorableStatusFailsTheTask: a worker's status holding a value the
// database cannot store (a NUL character) fails its task terminally,
// naming where, and the server goes on serving others.
func TestUnstorableStatusFailsTheTask(t *testing.T) {
	var logs testkit.Buffer
	base, _, ctl := serverWith(t, func(c *app.Config) { c.Log = slog.New(slog.NewTextHandler(&logs, nil)) })
	wrk := convergev1connect.NewWorkerServiceClient(testkit.H2C(), base)
	applyGreeting(t, ctl)
	applyResource(t, ctl, "hello", map[string]any{"name": "world"})
	w, _ := connectWorker(t, wrk, 1)
	task := w.Task()
	w.Result(task.GetLease(), `{"message":"a\u0000b"}`)
	w.Ack()
	r := waitPhase(t, ctl, "hello", "Failed")
	if msg := r.GetFailure().GetMessage(); !strings.Contains(msg, "status.message") || !strings.Contains(msg, "NUL") || !r.GetFailure().GetTerminal() {
		t.Fatalf("failure = %v; want a terminal failure naming status.message and the NUL", r.GetFailure())
	}
	// The server logs the failure once, naming the attempt.
	testkit.Eventually(t, "the failure logged", func() bool { return strings.Contains(logs.String(), `msg="task failed"`) })
	for _, want := range []string{"level=ERROR", "kind=greeting", "name=hello", "generation=1", "attempt=1", "terminal=true"} {
		if line := logs.String(); !strings.Contains(line, want) {
			t.Errorf("the failure's log line lacks %s:\n%s", want, line)
		}
	}
	if n := strings.Count(logs.String(), `msg="task failed"`); n != 1 {
		t.Errorf("the failure was logged %d times, want once", n)
	}
	applyResource(t, ctl, "next", map[string]any{"name": "you"})
	next := w.Task()
	w.Result(next.GetLease(), `{"message":"hi"}`)
	w.Ack()
	waitPhase(t, ctl, "next", "Ready")
}

func TestResumeAfterReconnect(t *testing.T) {
	_, ctl, wrk := server(t)
	applyGreeting(t, ctl)
	applyResource(t, ctl, "hello", map[string]any{"name": "world"})
	w1, _ := connectWorker(t, wrk, 1)
	task := w1.Task()
	w1.Close()

	// The worker comes back within the lease, still running the task.
	w2, sub := connectWorker(t, wrk, 1, task.GetLease())
	if len(sub.GetAdopted()) != 1 || len(sub.GetLost()) != 0 {
		t.Fatalf("subscribed = %v", sub)
	}
	w2.Result(task.GetLease(), `{"message":"resumed"}`)
	if a := w2.Ack(); !a.GetApplied() {
		t.Fatalf("ack = %v", a)
	}
	waitPhase(t, ctl, "hello", "Ready")
}

func TestLeaseExpiryRedispatches(t *testing.T) {
	_, ctl, wrk := server(t)
	applyGreeting(t, ctl)
	applyResource(t, ctl, "hello", map[string]any{"name": "world"})
	w1, _ := connectWorker(t, wrk, 1)
	first := w1.Task()
	// The worker dies and does not come back: after the lease window the
	// task is given out again under a new epoch.
	w1.Close()
	w2, _ := connectWorker(t, wrk, 1)
	second := w2.Task()
	if second.GetLease().GetTaskId() != first.GetLease().GetTaskId() || second.GetLease().GetEpoch() == first.GetLease().GetEpoch() {
		t.Fatalf("redispatched %v after %v", second.GetLease(), first.GetLease())
	}
	// A late result under the old lease is discarded.
	w2.Result(first.GetLease(), `{"message":"late"}`)
	if a := w2.Ack(); a.GetApplied() {
		t.Fatalf("late ack = %v", a)
	}
	w2.Result(second.GetLease(), `{"message":"fresh"}`)
	if a := w2.Ack(); !a.GetApplied() {
		t.Fatalf("fresh ack = %v", a)
	}
	r := waitPhase(t, ctl, "hello", "Ready")
	if r.GetStatus().GetFields()["message"].GetStringValue() != "fresh" || r.GetReconciles() != 1 {
		t.Fatalf("resource = %v", r)
	}
}

func TestSilentWorkerGetsNoTasks(t *testing.T) {
	_, ctl, wrk := server(t)
	applyGreeting(t, ctl)
	applyResource(t, ctl, "hello", map[string]any{"name": "world"})
	w1, _ := connectSilentWorker(t, wrk, 5)
	first := w1.Task()
	// w1 stays connected but never heartbeats: its lease runs out and the
	// task goes to w2, never back to the silent w1.
	w2, _ := connectWorker(t, wrk, 5)
	second := w2.Task()
	if second.GetLease().GetEpoch() == first.GetLease().GetEpoch() {
		t.Fatalf("not redispatched: %v", second.GetLease())
	}
	w2.Result(second.GetLease(), `{"message":"ok"}`)
	if a := w2.Ack(); !a.GetApplied() {
		t.Fatalf("ack = %v", a)
	}
}

func hasCondition(r *convergev1.Resource, typ, status string) bool {
	for _, c := range r.GetConditions() {
		if c.GetType() == typ && c.GetStatus() == status {
			return true
		}
	}
	return false
}

// TestSplitRoles runs the API and the broker as separate replicas over one
// database: work applied through one reaches a worker of the other.
func TestSplitRoles(t *testing.T) {
	db := pgtest.New(t)
	start := func(role string) *app.App {
		a, err := app.Start(context.Background(), app.Config{
			DatabaseURL: db.URL, Listen: "127.0.0.1:0", Role: role,
			Broker: broker.Config{Lease: 2 * time.Second, HeartbeatInterval: 200 * time.Millisecond, PollInterval: 5 * time.Second},
			Log:    slog.New(slog.NewTextHandler(io.Discard, nil)),
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = a.Stop() })
		return a
	}
	control, brk := start(app.RoleControl), start(app.RoleBroker)
	controlURL, brokerURL := "http://"+control.Addr().String(), "http://"+brk.Addr().String()
	ctl := convergev1connect.NewControlServiceClient(http.DefaultClient, controlURL)
	wrk := convergev1connect.NewWorkerServiceClient(testkit.H2C(), brokerURL)
	// The broker replica serves no API, and the control replica no workers.
	if _, err := convergev1connect.NewControlServiceClient(http.DefaultClient, brokerURL).ListKinds(context.Background(),
		&convergev1.ListKindsRequest{}); err == nil {
		t.Fatal("the broker replica answered a control call")
	}
	applyGreeting(t, ctl)
	w, _ := connectWorker(t, wrk, 2)
	// Once the control replica knows the broker replica from the members
	// table, it wakes it by NOTIFY: a new resource reaches the worker well
	// before the broker's 5 s failsafe poll.
	testkit.Eventually(t, "the control replica to see the broker replica", func() bool { return len(control.Peers()) > 0 })
	applyResource(t, ctl, "split", map[string]any{"name": "x"})
	got := make(chan *convergev1.Task, 1)
	go func() { got <- w.Task() }()
	task := testkit.ReceiveWithin(t, 3*time.Second, got, "the broker replica to get the task, woken by NOTIFY")
	w.Result(task.GetLease(), `{"message":"ok"}`)
	waitPhase(t, ctl, "split", "Ready")
}
