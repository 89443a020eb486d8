package convergetest_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/convergehq/converge/sdk-go/converge"
	"github.com/convergehq/converge/sdk-go/convergetest"
	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
	"github.com/convergehq/converge/sdk-go/gen/converge/v1/convergev1connect"
)

// composeBadChild is a composer with a bug: an upper-case child name.
func composeBadChild(context.Context, *converge.Task) (*converge.Result, error) {
	return &converge.Result{Compose: true, Children: []converge.Child{{Kind: "vpc", KindVersion: 1, Name: "Vpc-1"}}}, nil
}

// TestRunFailsAsTheWorkerReports: a composer emitting a bad child name
// fails its unit test with the very message a worker sends the server.
func TestRunFailsAsTheWorkerReports(t *testing.T) {
	zone := convergetest.ReadManifests(t, "testdata/kinds.json").Get(t, "zone", 2)
	task := convergetest.NewTask(t, zone, "compose", `{"size":1}`)
	_, unitErr := convergetest.Run(t, composeBadChild, task)
	if unitErr == nil || !converge.IsTerminal(unitErr) || !strings.HasPrefix(unitErr.Error(), `converge: result children[0] "Vpc-1": name: `) {
		t.Fatalf("Run: %v; want the terminal failure naming the child", unitErr)
	}

	srv := convergetest.NewServer(t)
	w := convergetest.NewWorker(t, srv)
	w.Handle("zone", 2, "compose", composeBadChild)
	convergetest.RunWorker(t, w)
	srv.Send(task)
	r := srv.ResultFor(t.Context(), task)
	if r.Err == nil || r.Err.Error() != unitErr.Error() || !converge.IsTerminal(r.Err) {
		t.Fatalf("the worker reported %v; the unit test saw %v", r.Err, unitErr)
	}
}

// TestRunRecoversAPanicAsTheWorkerDoes: a panic is the worker's panic
// failure, transient until the attempts run out.
func TestRunRecoversAPanicAsTheWorkerDoes(t *testing.T) {
	zone := convergetest.ReadManifests(t, "testdata/kinds.json").Get(t, "zone", 2)
	boom := func(context.Context, *converge.Task) (*converge.Result, error) { panic("boom") }
	_, err := convergetest.Run(t, boom, convergetest.NewTask(t, zone, "compose", nil))
	if err == nil || err.Error() != "panic: boom" || converge.IsTerminal(err) {
		t.Errorf("first attempt: %v (terminal %v); want the transient panic: boom", err, converge.IsTerminal(err))
	}
	_, err = convergetest.Run(t, boom, convergetest.NewTask(t, zone, "compose", nil, convergetest.WithAttempt(converge.PanicRetries+1)))
	if err == nil || !converge.IsTerminal(err) {
		t.Errorf("last attempt: %v; want a terminal failure", err)
	}
}

// blocker is a handler that runs until released or cancelled, counting
// how many run at once.
type blocker struct {
	release            chan struct{}
	running, most, saw atomic.Int32
	cancelled          chan string
}

func newBlocker() *blocker {
	return &blocker{release: make(chan struct{}), cancelled: make(chan string, 16)}
}

func (b *blocker) handle(ctx context.Context, t *converge.Task) (*converge.Result, error) {
	n := b.running.Add(1)
	defer b.running.Add(-1)
	b.saw.Add(1)
	for m := b.most.Load(); n > m && !b.most.CompareAndSwap(m, n); m = b.most.Load() {
	}
	select {
	case <-b.release:
		return &converge.Result{Status: map[string]string{"name": t.Name}}, nil
	case <-ctx.Done():
		b.cancelled <- t.Name
		return nil, ctx.Err()
	}
}

// TestServerDispatchesWithinCapacity: the server sees the subscription,
// never has more tasks on the worker than its capacity, and records and
// acknowledges every result.
func TestServerDispatchesWithinCapacity(t *testing.T) {
	zone := convergetest.ReadManifests(t, "testdata/kinds.json").Get(t, "zone", 2)
	logs := &lockedBuffer{}
	srv := convergetest.NewServer(t)
	b := newBlocker()
	w := convergetest.NewWorker(t, srv,
		converge.WithCapacity(2), converge.WithName("w1"), converge.WithLogger(slog.New(slog.NewTextHandler(logs, nil))))
	w.Handle("zone", 2, "compose", b.handle)
	stop := convergetest.RunWorker(t, w)

	sub := srv.Subscription(t.Context())
	if sub.GetWorkerName() != "w1" || sub.GetCapacity() != 2 || len(sub.GetReactions()) != 1 || sub.GetReactions()[0].GetKind() != "zone" {
		t.Fatalf("subscription = %v", sub)
	}
	var tasks []*converge.Task
	for i := range 5 {
		tasks = append(tasks, convergetest.NewTask(t, zone, "compose", nil, convergetest.WithName(fmt.Sprintf("z%d", i))))
	}
	srv.Send(tasks...)
	srv.Eventually(t.Context(), "two tasks running", func() bool { return b.running.Load() == 2 })
	close(b.release)
	seen := map[string]bool{}
	for range tasks {
		r := srv.Result(t.Context())
		if r.Err != nil || string(r.Outcome.Status) != fmt.Sprintf(`{"name":%q}`, r.Task.Name) {
			t.Fatalf("report %+v (%v); want the task's status", r.Outcome, r.Err)
		}
		seen[r.Task.Name] = true
	}
	if len(seen) != 5 || b.most.Load() != 2 || len(srv.Reports()) != 5 {
		t.Errorf("%d tasks reported, at most %d at once, %d reports; want 5, 2, 5", len(seen), b.most.Load(), len(srv.Reports()))
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	srv.Drained(t.Context())
	if strings.Contains(logs.String(), "not acknowledged") {
		t.Errorf("the worker ended with results unacknowledged:\n%s", logs)
	}
}

// TestServerTakesBackWhatADrainGivesBack: a worker stopped while a task
// runs past the drain timeout gives it back; a second worker gets it, and
// the task the server held back (capacity 1) too.
func TestServerTakesBackWhatADrainGivesBack(t *testing.T) {
	zone := convergetest.ReadManifests(t, "testdata/kinds.json").Get(t, "zone", 2)
	srv := convergetest.NewServer(t)
	b := newBlocker()
	w := convergetest.NewWorker(t, srv, converge.WithCapacity(1), converge.WithDrainTimeout(50*time.Millisecond))
	w.Handle("zone", 2, "compose", b.handle)
	stop := convergetest.RunWorker(t, w)
	running := convergetest.NewTask(t, zone, "compose", nil, convergetest.WithName("running"))
	waiting := convergetest.NewTask(t, zone, "compose", nil, convergetest.WithName("waiting"))
	srv.Send(running, waiting)
	srv.Eventually(t.Context(), "one task running", func() bool { return b.running.Load() == 1 })
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if srv.Released(running) != 1 || srv.Released(waiting) != 0 || len(srv.Reports()) != 0 {
		t.Fatalf("released %d and %d times, %d reports; want the running one given back once, and no report",
			srv.Released(running), srv.Released(waiting), len(srv.Reports()))
	}
	second := convergetest.NewWorker(t, srv)
	second.Handle("zone", 2, "compose", func(_ context.Context, t *converge.Task) (*converge.Result, error) {
		return &converge.Result{Status: map[string]string{"name": t.Name}}, nil
	})
	convergetest.RunWorker(t, second)
	for _, task := range []*converge.Task{running, waiting} {
		if r := srv.ResultFor(t.Context(), task); r.Err != nil {
			t.Fatalf("%s: %v", task.Name, r.Err)
		}
	}
}

// TestServerCancelsAndSurvivesReconnects: Cancel stops a running task and
// drops its result; after CloseStreams the worker reconnects, the server
// adopts the task it resumed, and its result arrives on the new stream.
func TestServerCancelsAndSurvivesReconnects(t *testing.T) {
	zone := convergetest.ReadManifests(t, "testdata/kinds.json").Get(t, "zone", 2)
	srv := convergetest.NewServer(t)
	b := newBlocker()
	w := convergetest.NewWorker(t, srv)
	w.Handle("zone", 2, "compose", b.handle)
	convergetest.RunWorker(t, w)

	doomed := convergetest.NewTask(t, zone, "compose", nil, convergetest.WithName("doomed"))
	kept := convergetest.NewTask(t, zone, "compose", nil, convergetest.WithName("kept"))
	srv.Send(doomed, kept)
	srv.Eventually(t.Context(), "both running", func() bool { return b.running.Load() == 2 })
	if !srv.Cancel(doomed) {
		t.Fatal("Cancel found no task")
	}
	select {
	case name := <-b.cancelled:
		if name != "doomed" {
			t.Fatalf("cancelled %s", name)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the cancelled handler's context was not cancelled")
	}
	first := srv.Subscription(t.Context())
	srv.CloseStreams()
	second := srv.Subscription(t.Context())
	if second == first || len(second.GetResumed()) != 1 {
		t.Fatalf("resumed %v; want the kept task", second.GetResumed())
	}
	close(b.release)
	r := srv.Result(t.Context())
	if r.Task != kept || r.Err != nil || b.saw.Load() != 2 {
		t.Fatalf("report for %s (%v) after %d runs; want kept's success, each task run once", r.Task.Name, r.Err, b.saw.Load())
	}
	if srv.Cancel(kept) {
		t.Error("Cancel found a task that has its result")
	}
}

// TestServerPushesConfigsAndSeesReadiness: a NeedsConfig reaction is not
// ready until the server pushes its kind's default config.
func TestServerPushesConfigsAndSeesReadiness(t *testing.T) {
	srv := convergetest.NewServer(t)
	w := convergetest.NewWorker(t, srv)
	w.Handle("zone", 2, "compose", func(context.Context, *converge.Task) (*converge.Result, error) { return nil, nil }, converge.NeedsConfig())
	convergetest.RunWorker(t, w)
	srv.Subscription(t.Context())
	srv.Eventually(t.Context(), "the reaction reported not ready", func() bool {
		ready, reason := srv.Readiness("zone", 2, "compose")
		return !ready && reason == converge.NoConfigReason
	})
	srv.SetConfig("zone", 2, `{"region":"eu"}`)
	srv.Eventually(t.Context(), "the reaction ready", func() bool {
		ready, _ := srv.Readiness("zone", 2, "compose")
		return ready && string(w.DefaultConfig("zone", 2)) == `{"region":"eu"}`
	})
}

// recorder is a test whose failures are recorded, not reported.
type recorder struct {
	testing.TB
	mu     sync.Mutex
	errors []string
}

func (r *recorder) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}

// TestServerFailsTheTestForInvalidMessages: a message the real server
// would refuse fails the test at its end, naming the rule.
func TestServerFailsTheTestForInvalidMessages(t *testing.T) {
	rec := &recorder{TB: t}
	t.Run("worker", func(t *testing.T) {
		rec.TB = t
		srv := convergetest.NewServer(rec)
		tr := &http.Transport{Protocols: new(http.Protocols)}
		tr.Protocols.SetUnencryptedHTTP2(true)
		client := convergev1connect.NewWorkerServiceClient(&http.Client{Transport: tr}, srv.URL())
		st, err := client.Connect(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if err := st.Send(&convergev1.WorkerMessage{Msg: &convergev1.WorkerMessage_Subscribe{Subscribe: &convergev1.Subscribe{Capacity: 0}}}); err != nil {
			t.Fatal(err)
		}
		if _, err := st.Receive(); err != nil {
			t.Fatal(err)
		}
		_ = st.CloseRequest()
		_ = st.CloseResponse()
	})
	if len(rec.errors) == 0 || !strings.Contains(strings.Join(rec.errors, "\n"), "capacity") {
		t.Errorf("errors = %q; want the invalid subscription named", rec.errors)
	}
}

// lockedBuffer is a log sink safe for concurrent writes.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestServerSendsAgainWhatAStreamLeft: a task dispatched on a stream that
// ended without the worker resuming it goes to the next worker with a new
// lease.
func TestServerSendsAgainWhatAStreamLeft(t *testing.T) {
	zone := convergetest.ReadManifests(t, "testdata/kinds.json").Get(t, "zone", 2)
	srv := convergetest.NewServer(t)
	task := convergetest.NewTask(t, zone, "compose", nil)
	srv.Send(task)

	tr := &http.Transport{Protocols: new(http.Protocols)}
	tr.Protocols.SetUnencryptedHTTP2(true)
	st, err := convergev1connect.NewWorkerServiceClient(&http.Client{Transport: tr}, srv.URL()).Connect(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Send(&convergev1.WorkerMessage{Msg: &convergev1.WorkerMessage_Subscribe{Subscribe: &convergev1.Subscribe{
		Capacity: 1, Reactions: []*convergev1.ReactionRef{{Kind: "zone", KindVersion: 2, Reaction: "compose"}}}}}); err != nil {
		t.Fatal(err)
	}
	var lease *convergev1.Lease
	for lease == nil {
		m, err := st.Receive()
		if err != nil {
			t.Fatal(err)
		}
		if ts := m.GetTasks().GetTasks(); len(ts) > 0 {
			lease = ts[0].GetLease()
		}
	}
	_ = st.CloseRequest()
	_ = st.CloseResponse()

	w := convergetest.NewWorker(t, srv)
	w.Handle("zone", 2, "compose", func(context.Context, *converge.Task) (*converge.Result, error) { return nil, nil })
	convergetest.RunWorker(t, w)
	r := srv.ResultFor(t.Context(), task)
	if r.Err != nil || r.Result.GetLease().GetTaskId() != lease.GetTaskId() || r.Result.GetLease().GetEpoch() != lease.GetEpoch()+1 {
		t.Fatalf("result %v (%v) for lease %v; want a success under the next lease", r.Result.GetLease(), r.Err, lease)
	}
}
