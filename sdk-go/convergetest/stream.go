package convergetest

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"buf.build/go/protovalidate"
	"connectrpc.com/connect"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/convergehq/converge/sdk-go/converge"
	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
	"github.com/convergehq/converge/sdk-go/internal/wire"
)

// maxWorkerMessageBytes is the server's limit on one worker message.
const maxWorkerMessageBytes = 4 << 20

type reactionKey struct {
	kind     string
	version  int32
	reaction string
}

type bidi = connect.BidiStream[convergev1.WorkerMessage, convergev1.ServerMessage]

// session is one worker stream. Its fields after sub are guarded by the
// server's mu; the outbox has its own lock.
type session struct {
	n       int
	sub     *convergev1.Subscribe
	stream  *bidi
	end     chan struct{}
	endOnce sync.Once

	running   int // tasks dispatched on it without a result
	draining  bool
	closed    bool
	readiness map[reactionKey]*convergev1.ReactionReadiness

	outMu   sync.Mutex
	out     []*convergev1.ServerMessage
	outWake chan struct{} // capacity 1
	outStop bool
}

// push queues a message for the stream's sender, keeping their order.
func (ss *session) push(m *convergev1.ServerMessage) {
	ss.outMu.Lock()
	defer ss.outMu.Unlock()
	if ss.outStop {
		return
	}
	ss.out = append(ss.out, m)
	select {
	case ss.outWake <- struct{}{}:
	default:
	}
}

// sendLoop is the stream's only sender, until stopSending.
func (ss *session) sendLoop() error {
	for {
		ss.outMu.Lock()
		msgs, stop := ss.out, ss.outStop
		ss.out = nil
		ss.outMu.Unlock()
		if stop {
			return nil
		}
		for _, m := range msgs {
			if err := ss.stream.Send(m); err != nil {
				return err
			}
		}
		<-ss.outWake
	}
}

func (ss *session) stopSending() {
	ss.outMu.Lock()
	defer ss.outMu.Unlock()
	ss.outStop = true
	select {
	case ss.outWake <- struct{}{}:
	default:
	}
}

func (ss *session) close() { ss.endOnce.Do(func() { close(ss.end) }) }

// Connect implements the WorkerService: one call per worker stream.
func (s *Server) Connect(ctx context.Context, st *bidi) error {
	first, err := st.Receive()
	if err != nil {
		return err
	}
	s.check(first)
	sub := first.GetSubscribe()
	if sub == nil {
		return connect.NewError(connect.CodeInvalidArgument, fmt.Errorf("convergetest: the first message is %T, want subscribe", first.GetMsg()))
	}
	ss := &session{sub: sub, stream: st, end: make(chan struct{}), outWake: make(chan struct{}, 1),
		readiness: make(map[reactionKey]*convergev1.ReactionReadiness)}
	if !s.subscribe(ss) {
		return connect.NewError(connect.CodeUnavailable, errors.New("convergetest: the test is over"))
	}

	sent := make(chan error, 1)
	go func() { sent <- ss.sendLoop() }()
	received := make(chan struct{})
	go func() {
		defer close(received)
		for {
			m, err := st.Receive()
			if err != nil {
				return // the worker closed its side, or the stream broke
			}
			s.check(m)
			s.onMessage(ss, m)
		}
	}()
	var ret error
	senderDone := false
	select {
	case <-ss.end:
		ret = connect.NewError(connect.CodeUnavailable, errors.New("convergetest: stream closed by the test"))
	case <-received:
	case <-ctx.Done():
		ret = ctx.Err()
	case ret = <-sent:
		senderDone = true
	}
	// Sends must not overlap connect ending the stream once this returns.
	ss.stopSending()
	if !senderDone {
		if err := <-sent; ret == nil {
			ret = err
		}
	}
	s.mu.Lock()
	s.endLocked(ss)
	s.mu.Unlock()
	return ret
}

// endLocked retires an ended stream: the tasks it was running go back to
// the front of the queue, to be adopted by the worker's next stream if it
// resumes them, and dispatched again otherwise.
func (s *Server) endLocked(ss *session) {
	ss.closed = true
	if s.live == ss {
		s.live = nil
	}
	var again []*dispatch
	for id := int64(1); id <= s.nextID; id++ {
		if d := s.byID[id]; d.on == ss && !d.done {
			d.on = nil
			again = append(again, d)
		}
	}
	ss.running = 0
	s.queue = append(again, s.queue...)
	s.dispatchLocked()
	s.changedLocked()
}

// subscribe answers a new stream's Subscribe: it adopts the resumed leases
// that are still current, wherever their tasks are, names the rest lost,
// and makes the stream the live one. It reports false, doing nothing,
// once the server is stopping.
func (s *Server) subscribe(ss *session) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopping {
		return false
	}
	s.sessions = append(s.sessions, ss)
	ss.n = len(s.sessions)
	reply := &convergev1.Subscribed{
		SessionId:           fmt.Sprintf("convergetest-%d", ss.n),
		MemberId:            "convergetest",
		HeartbeatIntervalMs: int32(s.heartbeat.Milliseconds()),
		LeaseSeconds:        30,
	}
	for _, l := range ss.sub.GetResumed() {
		d := s.byID[l.GetTaskId()]
		if d == nil || d.done || d.epoch != l.GetEpoch() {
			reply.Lost = append(reply.Lost, l)
			continue
		}
		if d.on == nil {
			s.unqueueLocked(d) // its stream ended before this one came
		} else {
			d.on.running-- // its stream has not noticed its end yet
		}
		d.on = ss
		ss.running++
		reply.Adopted = append(reply.Adopted, l)
	}
	ss.push(&convergev1.ServerMessage{Msg: &convergev1.ServerMessage_Subscribed{Subscribed: reply}})
	ss.push(&convergev1.ServerMessage{Msg: &convergev1.ServerMessage_Configs{Configs: &convergev1.Configs{
		Configs: append([]*convergev1.KindConfig(nil), s.configs...)}}})
	s.live = ss
	s.dispatchLocked()
	s.changedLocked()
	return true
}

// check records a worker message the real server would refuse.
func (s *Server) check(m *convergev1.WorkerMessage) {
	verr := protovalidate.Validate(m)
	size := proto.Size(m)
	if verr == nil && size <= maxWorkerMessageBytes {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if verr != nil {
		s.problemLocked("%T: %v", m.GetMsg(), verr)
	}
	if size > maxWorkerMessageBytes {
		s.problemLocked("%T of %d bytes, over the limit of %d", m.GetMsg(), size, maxWorkerMessageBytes)
	}
}

func (s *Server) onMessage(ss *session, m *convergev1.WorkerMessage) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.messages = append(s.messages, m)
	switch msg := m.GetMsg().(type) {
	case *convergev1.WorkerMessage_Drain:
		ss.draining, s.drained = true, true
	case *convergev1.WorkerMessage_Readiness:
		for _, r := range msg.Readiness.GetReactions() {
			ref := r.GetReaction()
			ss.readiness[reactionKey{ref.GetKind(), ref.GetKindVersion(), ref.GetReaction()}] = r
		}
	case *convergev1.WorkerMessage_ComposeChunk:
		s.onChunkLocked(msg.ComposeChunk)
	case *convergev1.WorkerMessage_Release:
		s.onReleaseLocked(ss, msg.Release.GetLeases())
	case *convergev1.WorkerMessage_TaskEvent:
		s.onEventLocked(ss, msg.TaskEvent)
	case *convergev1.WorkerMessage_Results:
		var acks []*convergev1.ResultAck
		for _, r := range msg.Results.GetResults() {
			acks = append(acks, s.onResultLocked(r))
		}
		ss.push(&convergev1.ServerMessage{Msg: &convergev1.ServerMessage_Acks{Acks: &convergev1.Acks{Acks: acks}}})
		s.dispatchLocked()
	}
	s.changedLocked()
}

// current returns the task a lease is for, if the lease is its current one.
func (s *Server) current(l *convergev1.Lease) *dispatch {
	d := s.byID[l.GetTaskId()]
	if d == nil || d.epoch != l.GetEpoch() {
		return nil
	}
	return d
}

func (s *Server) onChunkLocked(c *convergev1.ComposeChunk) {
	d := s.current(c.GetLease())
	if d == nil || d.done {
		return // stale: the real server drops it too
	}
	if c.GetIndex() == 0 {
		d.chunks = nil // the worker sends a report again in whole
	}
	if int(c.GetIndex()) != len(d.chunks) {
		s.problemLocked("compose chunk %d of task %d after %d chunks", c.GetIndex(), d.id, len(d.chunks))
	}
	d.chunks = append(d.chunks, c)
}

// onEventLocked keeps a task event with its task while the lease is the
// stream's current one, as the real server records it (without its cap:
// a test asserts what the handler sent). A preview's is a problem: the
// worker never sends one.
func (s *Server) onEventLocked(ss *session, e *convergev1.TaskEvent) {
	d := s.current(e.GetLease())
	if d == nil || d.done || d.on != ss {
		return // stale: the real server drops it too
	}
	if d.task.Preview() {
		s.problemLocked("task %d is a preview, but its handler's event %s was sent", d.id, e.GetReason())
		return
	}
	d.events = append(d.events, converge.Event{Type: converge.EventType(e.GetType()), Reason: e.GetReason(), Message: e.GetMessage()})
}

// onReleaseLocked takes back the tasks a draining worker gives back, as
// the real server does: they are queued again at once, at the front, for
// another stream (the draining one takes no more).
func (s *Server) onReleaseLocked(ss *session, leases []*convergev1.Lease) {
	var again []*dispatch
	for _, l := range leases {
		d := s.current(l)
		if d == nil || d.done || d.on != ss {
			continue // stale, as the real server ignores it
		}
		d.on = nil
		d.released++
		ss.running--
		again = append(again, d)
	}
	s.queue = append(again, s.queue...)
	s.dispatchLocked()
}

// Released reports how many times the worker gave task back (a drain that
// found it waiting or still running at its timeout).
func (s *Server) Released(task *converge.Task) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, d := range s.byID {
		if d.task == task {
			return d.released
		}
	}
	return 0
}

func (s *Server) onResultLocked(r *convergev1.TaskResult) *convergev1.ResultAck {
	d := s.current(r.GetLease())
	switch {
	case d == nil:
		return &convergev1.ResultAck{Lease: r.GetLease(), Reason: "stale lease"}
	case d.cancelled:
		return &convergev1.ResultAck{Lease: r.GetLease(), Reason: "cancelled"}
	case d.done:
		return &convergev1.ResultAck{Lease: r.GetLease(), Applied: true} // sent again after a reconnect
	}
	if n := int(r.GetSuccess().GetComposeChunks()); n != len(d.chunks) {
		s.problemLocked("the result of task %d counts %d compose chunks; %d came before it", d.id, n, len(d.chunks))
	}
	out, err := wire.DecodeResult(r, d.chunks)
	rep := &Report{Task: d.task, TaskID: d.id, Err: err, Result: r, Chunks: d.chunks, Events: d.events}
	if err == nil {
		rep.Outcome = out.(*converge.Outcome)
	}
	s.reports = append(s.reports, rep)
	d.done = true
	d.on.running--
	return &convergev1.ResultAck{Lease: r.GetLease(), Applied: true}
}

// wireTask is the message dispatching d.
func wireTask(d *dispatch) *convergev1.Task {
	t := d.task
	m := &convergev1.Task{
		Lease:       d.lease(),
		Kind:        t.Kind,
		KindVersion: int32(t.KindVersion),
		Reaction:    t.Reaction,
		Trigger:     t.Trigger,
		Attempt:     int32(t.Attempt),
		DedupToken:  t.DedupToken,
		Config:      t.Config,
		Preview:     t.Preview(),
	}
	if !t.Deadline.IsZero() {
		m.Deadline = timestamppb.New(t.Deadline)
	}
	if t.Reactor == nil {
		m.Resource = &convergev1.TaskResource{Namespace: t.Namespace, Name: t.Name, Uid: t.UID, Generation: t.Generation,
			Labels: t.Labels, Spec: t.Spec, Status: t.Status, RejectedStatus: t.RejectedStatus, ImportId: t.ImportID}
	} else {
		e := t.Reactor
		m.Reactor = &convergev1.ReactorTask{Binding: e.Binding, Transition: e.Transition, Watched: refMessage(e.Watched),
			WatchedKindVersion: int32(e.WatchedKindVersion), WatchedGeneration: e.WatchedGeneration,
			WatchedPhase: e.WatchedPhase, WatchedStatus: e.WatchedStatus}
	}
	if o := t.Operation; o != nil {
		m.Operation = &convergev1.OperationTask{Id: o.ID, Verb: o.Verb, Input: o.Input}
	}
	if r := t.Rollup; r != nil {
		m.Rollup = &convergev1.Rollup{Total: int32(r.Total), Ready: int32(r.Ready), Reconciling: int32(r.Reconciling),
			Degraded: int32(r.Degraded), Failed: int32(r.Failed), Deleting: int32(r.Deleting), Excluded: int32(r.Excluded)}
		for _, c := range r.Culprits {
			pc := &convergev1.Culprit{Resource: refMessage(c.Resource), Phase: c.Phase, Message: c.Message}
			for _, p := range c.Path {
				pc.Path = append(pc.Path, refMessage(p))
			}
			m.Rollup.Culprits = append(m.Rollup.Culprits, pc)
		}
	}
	return m
}

func refMessage(r converge.Ref) *convergev1.ResourceRef {
	return &convergev1.ResourceRef{Namespace: r.Namespace, Kind: r.Kind, Name: r.Name}
}
