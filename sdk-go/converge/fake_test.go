package converge

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"buf.build/go/protovalidate"
	"connectrpc.com/connect"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
	"github.com/convergehq/converge/sdk-go/gen/converge/v1/convergev1connect"
)

// waitFor bounds every wait in these tests; a test that needs longer has a bug.
const waitFor = 10 * time.Second

// testHeartbeat is the heartbeat interval the fake asks for.
const testHeartbeat = 20 * time.Millisecond

// fakeServer is an in-process WorkerService that tests script: each stream
// the worker opens is handed to the test as a fakeSession.
type fakeServer struct {
	url      string
	sessions chan *fakeSession

	mu       sync.Mutex
	refuse   int      // refuse the next n streams with Unavailable
	invalid  []string // worker messages the real server would refuse
	oversize []string // worker messages beyond the server's size limit
}

func newFakeServer(t *testing.T) *fakeServer {
	t.Helper()
	f := &fakeServer{sessions: make(chan *fakeSession, 16)}
	// Registered first, so it runs last: after the worker and the server
	// have stopped and every message has been checked.
	t.Cleanup(func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		for _, v := range f.invalid {
			t.Errorf("the worker sent a message the server would refuse: %s", v)
		}
		for _, v := range f.oversize {
			t.Errorf("the worker sent a message beyond the server's size limit: %s", v)
		}
	})
	mux := http.NewServeMux()
	mux.Handle(convergev1connect.NewWorkerServiceHandler(f))
	srv := httptest.NewUnstartedServer(mux)
	srv.Config.Protocols = new(http.Protocols)
	srv.Config.Protocols.SetHTTP1(true)
	srv.Config.Protocols.SetUnencryptedHTTP2(true)
	srv.Start()
	t.Cleanup(srv.Close)
	f.url = srv.URL
	return f
}

func (f *fakeServer) refuseNext(n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.refuse = n
}

// Connect implements convergev1connect.WorkerServiceHandler.
func (f *fakeServer) Connect(ctx context.Context, st *connect.BidiStream[convergev1.WorkerMessage, convergev1.ServerMessage]) error {
	f.mu.Lock()
	refused := f.refuse > 0
	if refused {
		f.refuse--
	}
	f.mu.Unlock()
	if refused {
		return connect.NewError(connect.CodeUnavailable, errors.New("fake: refusing this stream"))
	}
	first, err := st.Receive()
	if err != nil {
		return err
	}
	f.check(first)
	s := &fakeSession{
		server:     f,
		sub:        first.GetSubscribe(),
		header:     st.RequestHeader().Clone(),
		stream:     st,
		end:        make(chan struct{}),
		clientDone: make(chan struct{}),
		notify:     make(chan struct{}),
	}
	go s.receive()
	// Sends by the test must not overlap connect writing the end of the
	// stream once this handler returns.
	defer func() {
		s.sendMu.Lock()
		s.ended = true
		s.sendMu.Unlock()
	}()
	f.sessions <- s
	select {
	case <-s.end:
		return connect.NewError(connect.CodeUnavailable, errors.New("fake: stream ended by test"))
	case <-s.clientDone:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// maxWorkerMessageBytes is the server's limit on one worker message.
const maxWorkerMessageBytes = 4 << 20

// check records a worker message the real server would refuse: one that
// breaks the protocol's validation rules or its size limit.
func (f *fakeServer) check(m *convergev1.WorkerMessage) {
	verr := protovalidate.Validate(m)
	size := proto.Size(m)
	if verr == nil && size <= maxWorkerMessageBytes {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if verr != nil {
		f.invalid = append(f.invalid, fmt.Sprintf("%T: %v", m.GetMsg(), verr))
	}
	if size > maxWorkerMessageBytes {
		f.oversize = append(f.oversize, fmt.Sprintf("%T of %d bytes", m.GetMsg(), size))
	}
}

// accept returns the next stream the worker opened.
func (f *fakeServer) accept(t *testing.T) *fakeSession {
	t.Helper()
	select {
	case s := <-f.sessions:
		return s
	case <-time.After(waitFor):
		t.Fatal("worker did not open a stream")
		return nil
	}
}

// fakeSession is one worker stream as the fake server sees it.
type fakeSession struct {
	server     *fakeServer
	sub        *convergev1.Subscribe
	header     http.Header // the stream's request headers
	stream     *connect.BidiStream[convergev1.WorkerMessage, convergev1.ServerMessage]
	sendMu     sync.Mutex
	ended      bool // the handler returned; guarded by sendMu
	end        chan struct{}
	endOnce    sync.Once
	clientDone chan struct{} // closed when the worker closed its send side or the stream broke
	clientEOF  bool          // the worker closed its send side cleanly; read after clientDone

	mu       sync.Mutex
	msgs     []*convergev1.WorkerMessage // everything after Subscribe, in order, a result per message
	received []*convergev1.WorkerMessage // everything after Subscribe, as received
	read     int                         // msgs consumed by next
	notify   chan struct{}               // closed and replaced on every new message
}

func (s *fakeSession) receive() {
	defer close(s.clientDone)
	for {
		m, err := s.stream.Receive()
		if err != nil {
			s.clientEOF = errors.Is(err, io.EOF)
			return
		}
		s.server.check(m)
		s.mu.Lock()
		s.received = append(s.received, m)
		// A batch of results is recorded as one message per result, so
		// tests see results one at a time however the worker batched them.
		if rs := m.GetResults(); rs != nil {
			for _, r := range rs.GetResults() {
				s.msgs = append(s.msgs, &convergev1.WorkerMessage{Msg: &convergev1.WorkerMessage_Results{
					Results: &convergev1.Results{Results: []*convergev1.TaskResult{r}}}})
			}
		} else {
			s.msgs = append(s.msgs, m)
		}
		close(s.notify)
		s.notify = make(chan struct{})
		s.mu.Unlock()
	}
}

func (s *fakeSession) send(t *testing.T, m *convergev1.ServerMessage) {
	t.Helper()
	s.sendMu.Lock()
	defer s.sendMu.Unlock()
	if s.ended {
		t.Logf("fake: stream ended; not sending %T", m.GetMsg())
		return
	}
	if err := s.stream.Send(m); err != nil {
		t.Errorf("fake: send %T: %v", m.GetMsg(), err)
	}
}

// close ends the stream from the server side.
func (s *fakeSession) close() { s.endOnce.Do(func() { close(s.end) }) }

func (s *fakeSession) subscribed(t *testing.T, adopted, lost []*convergev1.Lease, warnings ...string) {
	t.Helper()
	s.send(t, &convergev1.ServerMessage{Msg: &convergev1.ServerMessage_Subscribed{Subscribed: &convergev1.Subscribed{
		SessionId:           "session",
		MemberId:            "member",
		HeartbeatIntervalMs: int32(testHeartbeat / time.Millisecond),
		LeaseSeconds:        30,
		Adopted:             adopted,
		Lost:                lost,
		Warnings:            warnings,
	}}})
}

func (s *fakeSession) task(t *testing.T, task *convergev1.Task) {
	t.Helper()
	s.send(t, &convergev1.ServerMessage{Msg: &convergev1.ServerMessage_Tasks{Tasks: &convergev1.Tasks{Tasks: []*convergev1.Task{task}}}})
}

func (s *fakeSession) cancel(t *testing.T, l *convergev1.Lease) {
	t.Helper()
	s.send(t, &convergev1.ServerMessage{Msg: &convergev1.ServerMessage_Cancel{Cancel: &convergev1.Cancel{Lease: l, Reason: "test"}}})
}

func (s *fakeSession) ack(t *testing.T, l *convergev1.Lease) {
	t.Helper()
	s.send(t, &convergev1.ServerMessage{Msg: &convergev1.ServerMessage_Acks{Acks: &convergev1.Acks{Acks: []*convergev1.ResultAck{{Lease: l, Applied: true}}}}})
}

// next returns the next message the worker sent that satisfies keep,
// consuming the ones before it.
func (s *fakeSession) next(t *testing.T, what string, keep func(*convergev1.WorkerMessage) bool) *convergev1.WorkerMessage {
	t.Helper()
	return s.nextWithin(t, waitFor, what, keep)
}

// nextWithin is next with a wait of d, for tests whose worker has a lot to
// compute first.
func (s *fakeSession) nextWithin(t *testing.T, d time.Duration, what string, keep func(*convergev1.WorkerMessage) bool) *convergev1.WorkerMessage {
	t.Helper()
	deadline := time.After(d)
	for {
		s.mu.Lock()
		for s.read < len(s.msgs) {
			m := s.msgs[s.read]
			s.read++
			if keep(m) {
				s.mu.Unlock()
				return m
			}
		}
		ch := s.notify
		s.mu.Unlock()
		select {
		case <-ch:
		case <-s.clientDone:
			s.mu.Lock()
			more := s.read < len(s.msgs)
			s.mu.Unlock()
			if !more {
				t.Fatalf("stream ended while waiting for %s", what)
			}
		case <-deadline:
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// result returns the next result, skipping heartbeats and Drain.
func (s *fakeSession) result(t *testing.T) *convergev1.TaskResult {
	t.Helper()
	return resultOf(s.next(t, "a result", func(m *convergev1.WorkerMessage) bool { return resultOf(m) != nil }))
}

// resultOf returns the result a recorded message carries, or nil.
func resultOf(m *convergev1.WorkerMessage) *convergev1.TaskResult {
	if rs := m.GetResults().GetResults(); len(rs) > 0 {
		return rs[0]
	}
	return nil
}

// heartbeat returns the next heartbeat, skipping everything else.
func (s *fakeSession) heartbeat(t *testing.T) *convergev1.Heartbeat {
	t.Helper()
	return s.next(t, "a heartbeat", func(m *convergev1.WorkerMessage) bool { return m.GetHeartbeat() != nil }).GetHeartbeat()
}

// raw returns every message the worker sent so far, as it sent them:
// results in their batches.
func (s *fakeSession) raw() []*convergev1.WorkerMessage {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*convergev1.WorkerMessage(nil), s.received...)
}

// sent returns every message the worker sent so far.
func (s *fakeSession) sent() []*convergev1.WorkerMessage {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*convergev1.WorkerMessage(nil), s.msgs...)
}

// lease builds a lease; tests use the task id as the handle on a task.
func lease(id int64) *convergev1.Lease { return &convergev1.Lease{TaskId: id, Epoch: 1} }

// greetingTask is a task for kind greeting v1, reaction reconcile.
func greetingTask(id int64, spec string) *convergev1.Task {
	return &convergev1.Task{
		Lease:       lease(id),
		Kind:        "greeting",
		KindVersion: 1,
		Reaction:    "reconcile",
		Trigger:     "specChange",
		Resource: &convergev1.TaskResource{
			Namespace:  "default",
			Name:       "hello",
			Uid:        "uid-1",
			Generation: 3,
			Labels:     map[string]string{"team": "a"},
			Spec:       []byte(spec),
			Status:     []byte(`{"message":"old"}`),
		},
		Deadline:   timestamppb.New(time.Now().Add(time.Hour)),
		Attempt:    2,
		DedupToken: "dedup",
	}
}

// testWorker is a worker under test, running against a fake server.
type testWorker struct {
	*Worker
	cancel context.CancelFunc
	done   chan error
}

// newTestWorker returns a worker for the fake with short waits; register
// handlers, then call run.
func newTestWorker(f *fakeServer, opts ...Option) *testWorker {
	opts = append([]Option{
		WithLogger(slog.New(slog.DiscardHandler)),
		WithReconnectBackoff(time.Millisecond, 20*time.Millisecond),
		WithName("test-worker"),
		// Tests leave handlers blocked; the drain at cleanup cancels them.
		WithDrainTimeout(100 * time.Millisecond),
	}, opts...)
	w, err := NewWorker(f.url, opts...)
	if err != nil {
		panic(err) // a test gave an invalid option
	}
	w.waits = waits{
		drainGrace:  time.Second,
		drainAcks:   200 * time.Millisecond,
		closeStream: 200 * time.Millisecond,
		subscribed:  waitFor,
	}
	return &testWorker{Worker: w}
}

// run starts Run; the test's cleanup stops it and checks it returned nil.
func (tw *testWorker) run(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	tw.cancel = cancel
	tw.done = make(chan error, 1)
	go func() { tw.done <- tw.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := tw.wait(); err != nil {
			t.Errorf("Run: %v", err)
		}
	})
}

// wait returns Run's result, failing if it takes too long.
func (tw *testWorker) wait() error {
	select {
	case err := <-tw.done:
		tw.done <- err // later waits see it too
		return err
	case <-time.After(waitFor):
		return errors.New("Run did not return")
	}
}

// eventually polls cond until it holds or the wait runs out.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitFor)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// state is a snapshot of the ledger for assertions.
type state struct {
	running, waiting, results []int64
}

func (l *ledger) state() state {
	l.mu.Lock()
	defer l.mu.Unlock()
	var s state
	for k := range l.running {
		s.running = append(s.running, k.taskID)
	}
	for k := range l.waiting {
		s.waiting = append(s.waiting, k.taskID)
	}
	for k := range l.results {
		s.results = append(s.results, k.taskID)
	}
	return s
}

// timestamppbNow is a timestamp d from now.
func timestamppbNow(d time.Duration) *timestamppb.Timestamp {
	return timestamppb.New(time.Now().Add(d))
}

func timeAfterWait() <-chan time.Time { return time.After(waitFor) }

// configs sends default provider configs.
func (s *fakeSession) configs(t *testing.T, cfgs ...*convergev1.KindConfig) {
	t.Helper()
	s.send(t, &convergev1.ServerMessage{Msg: &convergev1.ServerMessage_Configs{Configs: &convergev1.Configs{Configs: cfgs}}})
}

// kindConfig is a default config entry; an empty config means none.
func kindConfig(kind string, version int32, config string) *convergev1.KindConfig {
	return &convergev1.KindConfig{Kind: kind, KindVersion: version, Config: []byte(config), Revision: 1}
}

// readiness returns the next Readiness the worker sent, rendered as
// "kind/version/reaction=ready(reason)" entries in the order sent.
func (s *fakeSession) readiness(t *testing.T) []string {
	t.Helper()
	m := s.next(t, "a readiness report", func(m *convergev1.WorkerMessage) bool { return m.GetReadiness() != nil })
	return renderReadiness(m.GetReadiness())
}

func renderReadiness(r *convergev1.Readiness) []string {
	var out []string
	for _, rr := range r.GetReactions() {
		ref := rr.GetReaction()
		out = append(out, fmt.Sprintf("%s/%d/%s=%t(%s)", ref.GetKind(), ref.GetKindVersion(), ref.GetReaction(), rr.GetReady(), rr.GetReason()))
	}
	return out
}
