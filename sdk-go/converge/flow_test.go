package converge

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
)

// gates lets a test hold each task's handler until it releases it; tasks
// are told apart by their dedup token, which tests set to the task id.
type gates struct {
	mu      sync.Mutex
	open    map[string]chan struct{}
	started map[string]int // handler starts per token
	changed chan struct{}  // closed and replaced on every start
}

func newGates() *gates {
	return &gates{open: make(map[string]chan struct{}), started: make(map[string]int), changed: make(chan struct{})}
}

func (g *gates) gate(token string) chan struct{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	ch := g.open[token]
	if ch == nil {
		ch = make(chan struct{})
		g.open[token] = ch
	}
	return ch
}

func (g *gates) release(id int64) { close(g.gate(strconv.FormatInt(id, 10))) }

// handler blocks until the task's gate is released or its context ends.
func (g *gates) handler(ctx context.Context, t *Task) (*Result, error) {
	g.mu.Lock()
	g.started[t.DedupToken]++
	close(g.changed)
	g.changed = make(chan struct{})
	g.mu.Unlock()
	select {
	case <-g.gate(t.DedupToken):
		return &Result{Status: map[string]any{"task": t.DedupToken}}, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// starts reports how often the handler of task id started.
func (g *gates) starts(id int64) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.started[strconv.FormatInt(id, 10)]
}

// waitStarted waits for the handler of task id to start.
func (g *gates) waitStarted(t *testing.T, id int64) {
	t.Helper()
	deadline := timeAfterWait()
	for {
		g.mu.Lock()
		n, ch := g.started[strconv.FormatInt(id, 10)], g.changed
		g.mu.Unlock()
		if n > 0 {
			return
		}
		select {
		case <-ch:
		case <-deadline:
			t.Fatalf("handler of task %d did not start", id)
		}
	}
}

// gatedTask is a task whose dedup token is its id, for gates.
func gatedTask(id int64) *convergev1.Task {
	task := greetingTask(id, `{}`)
	task.DedupToken = strconv.FormatInt(id, 10)
	return task
}

func ids(leases []*convergev1.Lease) []int64 {
	out := make([]int64, 0, len(leases))
	for _, l := range leases {
		out = append(out, l.GetTaskId())
	}
	slices.Sort(out)
	return out
}

func sorted(v []int64) []int64 {
	v = slices.Clone(v)
	slices.Sort(v)
	return v
}

func TestCapacityBoundsRunningHandlers(t *testing.T) {
	f := newFakeServer(t)
	w := newTestWorker(f, WithCapacity(3))
	var running, peak atomic.Int64
	release := make(chan struct{})
	w.Handle("greeting", 1, "reconcile", func(ctx context.Context, _ *Task) (*Result, error) {
		n := running.Add(1)
		defer running.Add(-1)
		for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
		}
		<-release
		return nil, nil
	})
	w.run(t)
	s := f.accept(t)
	s.subscribed(t, nil, nil)

	// More tasks than capacity, as a misbehaving server might send.
	const tasks = 10
	for i := int64(1); i <= tasks; i++ {
		s.task(t, greetingTask(i, `{}`))
	}
	eventually(t, "3 handlers run and 7 tasks wait", func() bool {
		st := w.ledger.state()
		return running.Load() == 3 && len(st.running) == 3 && len(st.waiting) == 7
	})
	// Waiting tasks are held for the server too, so they are attested.
	s.next(t, "a heartbeat attesting all 10 tasks", func(m *convergev1.WorkerMessage) bool {
		return m.GetHeartbeat() != nil && len(m.GetHeartbeat().GetInFlight()) == tasks
	})

	close(release)
	seen := map[int64]bool{}
	for range tasks {
		r := s.result(t)
		if r.GetSuccess() == nil || seen[r.GetLease().GetTaskId()] {
			t.Fatalf("unexpected result %v", r)
		}
		seen[r.GetLease().GetTaskId()] = true
		s.ack(t, r.GetLease())
	}
	if p := peak.Load(); p != 3 {
		t.Fatalf("at most %d handlers ran at once; want exactly the capacity, 3", p)
	}
}

func TestHeartbeatsAttestExactlyRunningTasks(t *testing.T) {
	f := newFakeServer(t)
	w := newTestWorker(f)
	g := newGates()
	w.Handle("greeting", 1, "reconcile", g.handler)
	w.run(t)
	s := f.accept(t)
	s.subscribed(t, nil, nil)

	s.task(t, gatedTask(1))
	s.task(t, gatedTask(2))
	s.next(t, "a heartbeat attesting tasks 1 and 2", func(m *convergev1.WorkerMessage) bool {
		return m.GetHeartbeat() != nil && slices.Equal(ids(m.GetHeartbeat().GetInFlight()), []int64{1, 2})
	})

	g.release(1)
	if r := s.result(t); r.GetLease().GetTaskId() != 1 {
		t.Fatalf("result = %v; want task 1's", r)
	}
	// Every heartbeat sent after task 1's result attests task 2 only.
	for range 3 {
		if got := ids(s.heartbeat(t).GetInFlight()); !slices.Equal(got, []int64{2}) {
			t.Fatalf("heartbeat after task 1 finished attests %v; want [2]", got)
		}
	}
	g.release(2)
	if r := s.result(t); r.GetLease().GetTaskId() != 2 {
		t.Fatalf("result = %v; want task 2's", r)
	}
	if got := s.heartbeat(t).GetInFlight(); len(got) != 0 {
		t.Fatalf("heartbeat after all tasks finished attests %v", ids(got))
	}
}

func TestCancelStopsHandlerAndDropsItsResult(t *testing.T) {
	f := newFakeServer(t)
	w := newTestWorker(f, WithCapacity(1))
	g := newGates()
	stopped := make(chan error, 1)
	w.Handle("greeting", 1, "reconcile", func(ctx context.Context, task *Task) (*Result, error) {
		res, err := g.handler(ctx, task)
		if task.DedupToken == "1" {
			stopped <- ctx.Err()
		}
		return res, err
	})
	w.run(t)
	s := f.accept(t)
	s.subscribed(t, nil, nil)

	s.task(t, gatedTask(1)) // runs
	g.waitStarted(t, 1)
	s.task(t, gatedTask(2)) // waits: capacity is 1
	eventually(t, "task 2 waits", func() bool { return slices.Equal(w.ledger.state().waiting, []int64{2}) })

	s.cancel(t, lease(2)) // a waiting task is dropped and never started
	s.cancel(t, lease(1)) // a running task's context is cancelled
	select {
	case err := <-stopped:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled handler's context error = %v; want context.Canceled", err)
		}
	case <-timeAfterWait():
		t.Fatal("cancelled handler's context was not cancelled")
	}
	eventually(t, "the worker holds nothing", func() bool {
		st := w.ledger.state()
		return len(st.running)+len(st.waiting)+len(st.results) == 0
	})

	s.task(t, gatedTask(3))
	g.waitStarted(t, 3)
	g.release(3)
	// Results go out in completion order, so a result for task 1 or 2 would
	// come before task 3's.
	if r := s.result(t); r.GetLease().GetTaskId() != 3 {
		t.Fatalf("first result is %v; want task 3's (cancelled tasks report nothing)", r)
	}
	if n := g.starts(2); n != 0 {
		t.Fatalf("handler of cancelled waiting task 2 started %d times", n)
	}
}

func TestFullResultBufferStopsStartingTasks(t *testing.T) {
	f := newFakeServer(t)
	w := newTestWorker(f, WithCapacity(2))
	w.ledger.maxUnacked = 1
	g := newGates()
	w.Handle("greeting", 1, "reconcile", g.handler)
	w.run(t)
	s := f.accept(t)
	s.subscribed(t, nil, nil)

	s.task(t, gatedTask(1))
	g.release(1)
	first := s.result(t) // not acknowledged yet: the buffer is full
	s.task(t, gatedTask(2))
	eventually(t, "task 2 waits for room in the result buffer", func() bool {
		st := w.ledger.state()
		return slices.Equal(st.waiting, []int64{2}) && len(st.running) == 0
	})
	s.ack(t, first.GetLease())
	g.waitStarted(t, 1)
	g.waitStarted(t, 2)
	g.release(2)
	if r := s.result(t); r.GetLease().GetTaskId() != 2 {
		t.Fatalf("result = %v; want task 2's", r)
	}
}

func TestDuplicateTaskRunsOnce(t *testing.T) {
	f := newFakeServer(t)
	w := newTestWorker(f)
	g := newGates()
	w.Handle("greeting", 1, "reconcile", g.handler)
	w.run(t)
	s := f.accept(t)
	s.subscribed(t, nil, nil)

	s.task(t, gatedTask(1))
	s.task(t, gatedTask(1))
	s.task(t, gatedTask(2)) // a marker: once it runs, both copies of 1 were handled
	g.waitStarted(t, 1)
	g.waitStarted(t, 2)
	if st := w.ledger.state(); !slices.Equal(sorted(st.running), []int64{1, 2}) {
		t.Fatalf("running = %v; want [1 2]", st.running)
	}
	if n := g.starts(1); n != 1 {
		t.Fatalf("handler of task 1 started %d times; want once", n)
	}
}

func TestTaskWithInvalidLeaseIsIgnored(t *testing.T) {
	f := newFakeServer(t)
	w := newTestWorker(f)
	g := newGates()
	w.Handle("greeting", 1, "reconcile", g.handler)
	w.run(t)
	s := f.accept(t)
	s.subscribed(t, nil, nil)

	bad := gatedTask(1)
	bad.Lease.Epoch = 0
	s.task(t, bad)
	noLease := gatedTask(2)
	noLease.Lease = nil
	s.task(t, noLease)
	s.task(t, gatedTask(3))
	g.waitStarted(t, 3)
	g.release(3)
	if r := s.result(t); r.GetLease().GetTaskId() != 3 {
		t.Fatalf("first result = %v; want task 3's (invalid tasks are ignored)", r)
	}
	if g.starts(1)+g.starts(2) != 0 {
		t.Fatal("a task with an invalid lease ran")
	}
}
