package convergetest

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/convergehq/converge/sdk-go/converge"
	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
	"github.com/convergehq/converge/sdk-go/gen/converge/v1/convergev1connect"
)

// Server is an in-process Converge server for testing a whole worker
// without a database: it speaks the worker protocol over a real HTTP/2
// stream. It dispatches the tasks a test sends, never more at once than
// the worker's capacity, records and acknowledges the worker's results,
// and checks every message the worker sends against the protocol's rules,
// failing the test at its end for any the real server would refuse. It
// does not retry failed tasks or apply results: a test sends what it
// wants run.
//
// One worker at a time gets tasks: the one that subscribed last. When a
// stream ends, the tasks it was running are adopted by the worker's next
// stream if it resumes them, and sent again under a new lease if not. Methods that wait take a context and fail the test
// (t.Fatalf, so call them from the test's goroutine) when the context
// ends or the server's wait bound ([WithWait]) passes first.
type Server struct {
	t         testing.TB
	wait      time.Duration
	heartbeat time.Duration
	http      *httptest.Server

	mu       sync.Mutex
	changed  chan struct{} // closed and replaced on every change
	sessions []*session
	live     *session // the stream that gets tasks; nil when none
	nextID   int64
	byID     map[int64]*dispatch
	byTask   map[*converge.Task][]*dispatch
	queue    []*dispatch // waiting for the worker's capacity
	reports  []*Report
	configs  []*convergev1.KindConfig
	revision int64
	messages []*convergev1.WorkerMessage
	problems []string
	drained  bool
	stopping bool // the test is over: refuse new streams
}

// Report is a task's result as the server received it.
type Report struct {
	// Task is the task the test sent, TaskID its handle on the wire.
	Task   *converge.Task
	TaskID int64
	// Outcome is a success's content, Err a failure as reported: its
	// message is the one sent, and converge.IsTerminal tells whether it is
	// terminal. Exactly one of them is set.
	Outcome *converge.Outcome
	Err     error
	// Result is the message as received; Chunks are the composition parts
	// sent before it.
	Result *convergev1.TaskResult
	Chunks []*convergev1.ComposeChunk
	// Events are the task events the worker sent under the lease before
	// the result, oldest first, as the real server would record them.
	Events []converge.Event

	consumed bool
}

// dispatch is one Send of a task.
type dispatch struct {
	id        int64
	epoch     int64 // 0 until first dispatched; a new lease each time
	task      *converge.Task
	on        *session // the stream running it; nil while queued
	done      bool     // reported or cancelled
	cancelled bool
	released  int // times the worker gave it back (a drain)
	chunks    []*convergev1.ComposeChunk
	events    []converge.Event
}

// ServerOption configures a [Server].
type ServerOption func(*Server)

// WithWait bounds every wait of the server's methods; default 30 s.
func WithWait(d time.Duration) ServerOption { return func(s *Server) { s.wait = d } }

// WithHeartbeat sets the heartbeat interval the server asks for; default
// one second.
func WithHeartbeat(d time.Duration) ServerOption { return func(s *Server) { s.heartbeat = d } }

// NewServer starts a server for the test; it stops when the test ends.
func NewServer(t testing.TB, opts ...ServerOption) *Server {
	t.Helper()
	s := &Server{
		t:         t,
		wait:      30 * time.Second,
		heartbeat: time.Second,
		changed:   make(chan struct{}),
		byID:      make(map[int64]*dispatch),
		byTask:    make(map[*converge.Task][]*dispatch),
	}
	for _, o := range opts {
		o(s)
	}
	mux := http.NewServeMux()
	mux.Handle(convergev1connect.NewWorkerServiceHandler(s))
	s.http = httptest.NewUnstartedServer(mux)
	s.http.Config.Protocols = new(http.Protocols)
	s.http.Config.Protocols.SetHTTP1(true)
	s.http.Config.Protocols.SetUnencryptedHTTP2(true)
	s.http.Start()
	t.Cleanup(s.stop)
	return s
}

// URL is the server's address, for [converge.NewWorker].
func (s *Server) URL() string { return s.http.URL }

// stop ends the streams and the server, and reports the messages the real
// server would have refused.
func (s *Server) stop() {
	s.mu.Lock()
	s.stopping = true
	s.mu.Unlock()
	s.CloseStreams()
	s.http.CloseClientConnections()
	s.http.Close()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range s.problems {
		s.t.Errorf("convergetest: %s", p)
	}
	s.problems = nil
}

// Send queues tasks for the worker; they are dispatched, each with a new
// lease, as soon as a worker is subscribed and has capacity. A task may be
// sent again, e.g. with the next attempt: each Send is a separate run.
func (s *Server) Send(tasks ...*converge.Task) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, t := range tasks {
		if t == nil {
			s.t.Errorf("convergetest: Send(nil)")
			continue
		}
		s.nextID++
		d := &dispatch{id: s.nextID, task: t}
		s.byID[d.id] = d
		s.byTask[t] = append(s.byTask[t], d)
		s.queue = append(s.queue, d)
	}
	s.dispatchLocked()
	s.changedLocked()
}

// Result waits for the next result the worker sent that no Result or
// ResultFor has returned yet, in the order received.
func (s *Server) Result(ctx context.Context) *Report {
	s.t.Helper()
	return s.take(ctx, "a result", func(*Report) bool { return true })
}

// ResultFor waits for the result of the earliest Send of task that no
// Result or ResultFor has returned yet.
func (s *Server) ResultFor(ctx context.Context, task *converge.Task) *Report {
	s.t.Helper()
	return s.take(ctx, fmt.Sprintf("the result of %s %s/%s reaction %s", task.Kind, task.Namespace, task.Name, task.Reaction),
		func(r *Report) bool { return r.Task == task })
}

func (s *Server) take(ctx context.Context, what string, match func(*Report) bool) *Report {
	s.t.Helper()
	var got *Report
	s.await(ctx, what, func() bool {
		for _, r := range s.reports {
			if !r.consumed && match(r) {
				r.consumed, got = true, r
				return true
			}
		}
		return false
	})
	return got
}

// Reports returns every result received so far, in order.
func (s *Server) Reports() []*Report {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*Report(nil), s.reports...)
}

// Cancel cancels the latest Send of task that has no result yet: a queued
// one is dropped, a running one cancelled on the worker (its handler's
// context is cancelled and its result dropped). It reports whether there
// was one.
func (s *Server) Cancel(task *converge.Task) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	ds := s.byTask[task]
	for i := len(ds) - 1; i >= 0; i-- {
		d := ds[i]
		if d.done {
			continue
		}
		d.done, d.cancelled = true, true
		if d.on == nil {
			s.unqueueLocked(d)
		} else {
			d.on.running--
			d.on.push(&convergev1.ServerMessage{Msg: &convergev1.ServerMessage_Cancel{Cancel: &convergev1.Cancel{
				Lease: d.lease(), Reason: "cancelled by the test"}}})
		}
		s.dispatchLocked()
		s.changedLocked()
		return true
	}
	return false
}

// SetConfig sets the default provider config of version version of kind,
// as JSON text or a value encoding/json encodes to an object (nil for
// none), and pushes it to the worker, as an operator's edit would be.
func (s *Server) SetConfig(kind string, version int, config any) {
	s.t.Helper()
	raw, err := object("config", config, false)
	if err != nil {
		s.t.Fatalf("convergetest: SetConfig(%q, %d): %v", kind, version, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.revision++
	kc := &convergev1.KindConfig{Kind: kind, KindVersion: int32(version), Config: raw, Revision: s.revision}
	kept := s.configs[:0]
	for _, c := range s.configs {
		if c.GetKind() != kind || c.GetKindVersion() != int32(version) {
			kept = append(kept, c)
		}
	}
	s.configs = append(kept, kc)
	for _, ss := range s.sessions {
		if !ss.closed {
			ss.push(&convergev1.ServerMessage{Msg: &convergev1.ServerMessage_Configs{Configs: &convergev1.Configs{
				Configs: []*convergev1.KindConfig{kc}}}})
		}
	}
}

// Subscription waits for a worker to be subscribed and returns what it
// subscribed with: its name, reactions, capacity and resumed leases.
func (s *Server) Subscription(ctx context.Context) *convergev1.Subscribe {
	s.t.Helper()
	var sub *convergev1.Subscribe
	s.await(ctx, "a subscribed worker", func() bool {
		if s.live != nil {
			sub = s.live.sub
		}
		return sub != nil
	})
	return sub
}

// Readiness returns what the subscribed worker last said of a reaction's
// readiness: ready, unless it reported it not ready (with a reason).
func (s *Server) Readiness(kind string, version int, reaction string) (ready bool, reason string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.live == nil {
		return true, ""
	}
	r, ok := s.live.readiness[reactionKey{kind, int32(version), reaction}]
	if !ok {
		return true, ""
	}
	return r.GetReady(), r.GetReason()
}

// Drained waits for the worker to tell the server it is draining, as it
// does once its Run's context is done.
func (s *Server) Drained(ctx context.Context) {
	s.t.Helper()
	s.await(ctx, "the worker to drain", func() bool { return s.drained })
}

// Eventually waits until cond holds, checking it whenever the server sees
// something happen and every few milliseconds. cond may call the server's
// methods that do not wait.
func (s *Server) Eventually(ctx context.Context, what string, cond func() bool) {
	s.t.Helper()
	s.awaitUnlocked(ctx, what, cond)
}

// CloseStreams ends every open stream from the server's side, as a server
// restart would; the worker reconnects, and [Server.Subscription] waits
// for its new subscription.
func (s *Server) CloseStreams() {
	s.mu.Lock()
	sessions := append([]*session(nil), s.sessions...)
	s.live = nil
	s.changedLocked()
	s.mu.Unlock()
	for _, ss := range sessions {
		ss.close()
	}
}

// Messages returns every message the worker sent so far, in order.
func (s *Server) Messages() []*convergev1.WorkerMessage {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*convergev1.WorkerMessage(nil), s.messages...)
}

// await waits until cond, called with s.mu held, holds.
func (s *Server) await(ctx context.Context, what string, cond func() bool) {
	s.t.Helper()
	s.awaitUnlocked(ctx, what, func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return cond()
	})
}

// pollEvery is how often a wait checks its condition besides whenever the
// server sees something, for conditions on state outside the server.
const pollEvery = 5 * time.Millisecond

func (s *Server) awaitUnlocked(ctx context.Context, what string, cond func() bool) {
	s.t.Helper()
	timer := time.NewTimer(s.wait)
	defer timer.Stop()
	poll := time.NewTicker(pollEvery)
	defer poll.Stop()
	for {
		s.mu.Lock()
		ch := s.changed
		s.mu.Unlock()
		if cond() {
			return
		}
		select {
		case <-ch:
		case <-poll.C:
		case <-ctx.Done():
			s.t.Fatalf("convergetest: gave up waiting for %s: %v%s", what, ctx.Err(), s.problemSummary())
		case <-timer.C:
			s.t.Fatalf("convergetest: timed out after %s waiting for %s%s", s.wait, what, s.problemSummary())
		}
	}
}

func (s *Server) problemSummary() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.problems) == 0 {
		return ""
	}
	return "; the worker sent messages the server would refuse: " + strings.Join(s.problems, "; ")
}

func (s *Server) changedLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
}

func (s *Server) problemLocked(format string, args ...any) {
	s.problems = append(s.problems, fmt.Sprintf(format, args...))
}

func (s *Server) unqueueLocked(d *dispatch) {
	for i, q := range s.queue {
		if q == d {
			s.queue = append(s.queue[:i], s.queue[i+1:]...)
			return
		}
	}
}

// maxTaskBatch bounds the tasks sent in one message.
const maxTaskBatch = 100

// dispatchLocked sends queued tasks to the live stream while the worker
// has capacity.
func (s *Server) dispatchLocked() {
	ss := s.live
	if ss == nil || ss.draining {
		return
	}
	var batch []*convergev1.Task
	flush := func() {
		if len(batch) > 0 {
			ss.push(&convergev1.ServerMessage{Msg: &convergev1.ServerMessage_Tasks{Tasks: &convergev1.Tasks{Tasks: batch}}})
			batch = nil
		}
	}
	for len(s.queue) > 0 && ss.running < int(ss.sub.GetCapacity()) {
		d := s.queue[0]
		s.queue = s.queue[1:]
		d.epoch++
		d.on, d.chunks, d.events = ss, nil, nil
		ss.running++
		batch = append(batch, wireTask(d))
		if len(batch) == maxTaskBatch {
			flush()
		}
	}
	flush()
}

func (d *dispatch) lease() *convergev1.Lease {
	return &convergev1.Lease{TaskId: d.id, Epoch: d.epoch, Generation: max(d.task.Generation, 0)}
}
