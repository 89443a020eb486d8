package converge

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
	"github.com/convergehq/converge/sdk-go/gen/converge/v1/convergev1connect"
)

func TestReconnectResumesTasksAndResendsResults(t *testing.T) {
	f := newFakeServer(t)
	w := newTestWorker(f)
	g := newGates()
	lostStopped := make(chan error, 1)
	w.Handle("greeting", 1, "reconcile", func(ctx context.Context, task *Task) (*Result, error) {
		res, err := g.handler(ctx, task)
		if task.DedupToken == "3" {
			lostStopped <- ctx.Err()
		}
		return res, err
	})
	w.run(t)

	s1 := f.accept(t)
	s1.subscribed(t, nil, nil)
	for id := int64(1); id <= 3; id++ {
		s1.task(t, gatedTask(id))
		g.waitStarted(t, id)
	}
	g.release(2)
	if r := s1.result(t); r.GetLease().GetTaskId() != 2 {
		t.Fatalf("result = %v; want task 2's", r)
	}
	// Task 2's result is never acknowledged on this stream.
	s1.close()

	s2 := f.accept(t)
	if got := ids(s2.sub.GetResumed()); !slices.Equal(got, []int64{1, 2, 3}) {
		t.Fatalf("resumed = %v; want running tasks 1 and 3 and unacknowledged task 2", got)
	}
	// Task 1 adopted, task 3 lost, task 2 in neither list (kept).
	s2.subscribed(t, []*convergev1.Lease{lease(1)}, []*convergev1.Lease{lease(3)})

	select {
	case err := <-lostStopped:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("lost task's context error = %v; want context.Canceled", err)
		}
	case <-timeAfterWait():
		t.Fatal("lost task's handler was not cancelled")
	}
	if r := s2.result(t); r.GetLease().GetTaskId() != 2 || string(r.GetSuccess().GetStatus()) != `{"task":"2"}` {
		t.Fatalf("first result on the new stream = %v; want task 2's, re-sent", r)
	}
	s2.ack(t, lease(2))
	if got := ids(s2.heartbeat(t).GetInFlight()); !slices.Equal(got, []int64{1}) {
		t.Fatalf("heartbeat on the new stream attests %v; want [1]", got)
	}
	eventually(t, "the lost task is forgotten", func() bool { return !slices.Contains(w.ledger.state().running, 3) })

	g.release(1)
	if r := s2.result(t); r.GetLease().GetTaskId() != 1 {
		t.Fatalf("result = %v; want task 1's", r)
	}
	for _, m := range s2.sent() {
		if resultOf(m).GetLease().GetTaskId() == 3 {
			t.Fatalf("lost task 3 reported a result: %v", m)
		}
	}
}

func TestReconnectRetriesRefusedStreams(t *testing.T) {
	f := newFakeServer(t)
	f.refuseNext(3)
	w := newTestWorker(f)
	w.Handle("greeting", 1, "reconcile", nop)
	w.run(t)
	s := f.accept(t)
	s.subscribed(t, nil, nil)
	s.task(t, greetingTask(1, `{}`))
	if r := s.result(t); r.GetSuccess() == nil {
		t.Fatalf("result = %v; want success", r)
	}
}

func TestDrainFinishesRunningTasks(t *testing.T) {
	f := newFakeServer(t)
	w := newTestWorker(f, WithDrainTimeout(waitFor))
	g := newGates()
	w.Handle("greeting", 1, "reconcile", g.handler)
	w.run(t)
	s := f.accept(t)
	s.subscribed(t, nil, nil)
	s.task(t, gatedTask(1))
	g.waitStarted(t, 1)

	w.cancel()
	s.next(t, "Drain", func(m *convergev1.WorkerMessage) bool { return m.GetDrain() != nil })
	s.task(t, gatedTask(2)) // arrives during the drain: must not start
	eventually(t, "the drain refuses task 2", func() bool {
		st := w.ledger.state()
		return len(st.waiting) == 0 && slices.Equal(st.running, []int64{1})
	})

	g.release(1)
	if r := s.result(t); r.GetLease().GetTaskId() != 1 || r.GetSuccess() == nil {
		t.Fatalf("result = %v; want task 1's success", r)
	}
	s.ack(t, lease(1))
	if err := w.wait(); err != nil {
		t.Fatalf("Run = %v; want nil after a drain", err)
	}
	select {
	case <-s.clientDone:
		if !s.clientEOF {
			t.Error("worker did not close its send side cleanly")
		}
	case <-timeAfterWait():
		t.Fatal("worker did not close the stream")
	}
	if n := g.starts(2); n != 0 {
		t.Fatalf("task 2 started %d times during the drain", n)
	}
	for _, m := range s.sent() {
		if resultOf(m).GetLease().GetTaskId() == 2 {
			t.Fatalf("task 2, refused during the drain, reported a result: %v", m)
		}
	}
}

// releaseOf returns the leases a recorded message gives back, or nil.
func releaseOf(m *convergev1.WorkerMessage) []int64 {
	var ids []int64
	for _, l := range m.GetRelease().GetLeases() {
		ids = append(ids, l.GetTaskId())
	}
	return ids
}

// TestDrainReleasesUnfinishedTasks: draining gives back at once the tasks
// the worker has not started (waiting for a slot, or arriving during the
// drain), and at the drain timeout the ones still running, whose handlers
// are cancelled and whose results are dropped: the server hands them to
// another worker without waiting for their leases.
func TestDrainReleasesUnfinishedTasks(t *testing.T) {
	f := newFakeServer(t)
	w := newTestWorker(f, WithCapacity(1), WithDrainTimeout(200*time.Millisecond))
	g := newGates()
	w.Handle("greeting", 1, "reconcile", g.handler)
	w.run(t)
	s := f.accept(t)
	s.subscribed(t, nil, nil)
	s.task(t, gatedTask(1))
	g.waitStarted(t, 1)
	s.task(t, gatedTask(2)) // waits for the one slot
	eventually(t, "task 2 to wait", func() bool { return len(w.ledger.state().waiting) == 1 })

	w.cancel()
	s.next(t, "Drain", func(m *convergev1.WorkerMessage) bool { return m.GetDrain() != nil })
	if ids := releaseOf(s.next(t, "a release", func(m *convergev1.WorkerMessage) bool { return m.GetRelease() != nil })); !slices.Equal(ids, []int64{2}) {
		t.Fatalf("first release = %v; want the waiting task 2, at once", ids)
	}
	s.task(t, gatedTask(3)) // sent before the server saw the Drain
	if ids := releaseOf(s.next(t, "a release", func(m *convergev1.WorkerMessage) bool { return m.GetRelease() != nil })); !slices.Equal(ids, []int64{3}) {
		t.Fatalf("second release = %v; want task 3, refused by the drain", ids)
	}
	if ids := releaseOf(s.next(t, "a release", func(m *convergev1.WorkerMessage) bool { return m.GetRelease() != nil })); !slices.Equal(ids, []int64{1}) {
		t.Fatalf("third release = %v; want the running task 1 at the drain timeout", ids)
	}
	if err := w.wait(); err != nil {
		t.Fatalf("Run = %v; want nil", err)
	}
	for _, m := range s.sent() {
		if r := resultOf(m); r != nil {
			t.Fatalf("a released task reported a result: %v", r)
		}
	}
	if g.starts(2) != 0 || g.starts(3) != 0 {
		t.Fatalf("released tasks started: task 2 %d times, task 3 %d times", g.starts(2), g.starts(3))
	}
}

func TestDrainWithoutServerReturns(t *testing.T) {
	f := newFakeServer(t)
	f.refuseNext(1 << 30)
	w := newTestWorker(f)
	w.Handle("greeting", 1, "reconcile", nop)
	w.run(t)
	eventually(t, "the worker retries", func() bool {
		f.mu.Lock()
		defer f.mu.Unlock()
		return f.refuse < 1<<30-2
	})
	w.cancel()
	if err := w.wait(); err != nil {
		t.Fatalf("Run = %v; want nil", err)
	}
}

// countingTransport counts the requests of a custom HTTP client.
type countingTransport struct {
	next http.RoundTripper
	n    atomic.Int64
}

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return c.next.RoundTrip(r)
}

func TestWithHTTPClientIsUsed(t *testing.T) {
	f := newFakeServer(t)
	ct := &countingTransport{next: newHTTPClient().Transport}
	w := newTestWorker(f, WithHTTPClient(&http.Client{Transport: ct}))
	w.Handle("greeting", 1, "reconcile", nop)
	w.run(t)
	s := f.accept(t)
	s.subscribed(t, nil, nil)
	if ct.n.Load() == 0 {
		t.Fatal("the worker did not dial through the configured client")
	}
}

func TestDefaultClientSpeaksHTTP2OverTLS(t *testing.T) {
	f := &fakeServer{sessions: make(chan *fakeSession, 1)}
	mux := http.NewServeMux()
	mux.Handle(convergev1connect.NewWorkerServiceHandler(f))
	srv := httptest.NewUnstartedServer(mux)
	srv.EnableHTTP2 = true
	srv.StartTLS()
	t.Cleanup(srv.Close)
	f.url = srv.URL

	client := newHTTPClient()
	// Trust the test server's certificate; everything else is the default.
	client.Transport.(*http.Transport).TLSClientConfig = srv.Client().Transport.(*http.Transport).TLSClientConfig
	w := newTestWorker(f, WithHTTPClient(client))
	w.Handle("greeting", 1, "reconcile", nop)
	w.run(t)
	s := f.accept(t)
	s.subscribed(t, nil, nil)
	s.task(t, greetingTask(1, `{}`))
	if r := s.result(t); r.GetSuccess() == nil {
		t.Fatalf("result = %v; want success", r)
	}
}
