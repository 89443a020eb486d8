package broker

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"connectrpc.com/connect"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
	"github.com/convergehq/converge/server/internal/store"
)

// session is one worker stream.
type session struct {
	id       string
	name     string
	actor    string
	serves   map[reactionKey]bool
	capacity int
	// identity is the worker's verified identity (a SPIFFE ID or a bearer
	// token's), if it has one.
	identity string
	// permit, if set, says whether the worker's identity may serve a
	// reaction's kind now (see Broker.authorize).
	permit func(reactionKey) bool

	// Guarded by Broker.mu.
	// notReady holds the reactions the worker reported not ready, with why.
	notReady map[reactionKey]string
	// configs is the default-config revision last sent per kind version.
	configs  map[kindKey]int64
	inflight int
	draining bool
	closed   bool
	// heard is when the worker last sent anything; a worker silent for a
	// whole lease gets no new tasks.
	heard time.Time

	outMu  sync.Mutex
	out    []*convergev1.ServerMessage
	outSig chan struct{}
}

// ready reports whether the worker serves rk and has not reported it not
// ready. Callers hold Broker.mu.
func (s *session) ready(rk reactionKey) bool {
	if !s.serves[rk] || (s.permit != nil && !s.permit(rk)) {
		return false
	}
	_, not := s.notReady[rk]
	return !not
}

// send queues a message for the stream's writer; it never blocks.
func (s *session) send(m *convergev1.ServerMessage) {
	s.outMu.Lock()
	s.out = append(s.out, m)
	s.outMu.Unlock()
	select {
	case s.outSig <- struct{}{}:
	default:
	}
}

func (s *session) take() []*convergev1.ServerMessage {
	s.outMu.Lock()
	defer s.outMu.Unlock()
	out := s.out
	s.out = nil
	return out
}

// Connect implements WorkerService.Connect.
func (b *Broker) Connect(ctx context.Context, stream *connect.BidiStream[convergev1.WorkerMessage, convergev1.ServerMessage]) error {
	id, checked, err := b.workerIdentity(ctx, stream.RequestHeader())
	if err != nil {
		return err
	}
	first, err := stream.Receive()
	if err != nil {
		return err
	}
	sub := first.GetSubscribe()
	if sub == nil {
		return connect.NewError(connect.CodeInvalidArgument, errors.New("the first message on a worker stream must be subscribe"))
	}
	s := &session{
		id:       newID(),
		name:     sub.GetWorkerName(),
		serves:   map[reactionKey]bool{},
		notReady: map[reactionKey]string{},
		configs:  map[kindKey]int64{},
		capacity: int(sub.GetCapacity()),
		outSig:   make(chan struct{}, 1),
		heard:    time.Now(),
	}
	s.actor = "worker:" + s.name
	if s.name == "" {
		s.actor = "worker:" + stream.Peer().Addr
	}
	for _, r := range sub.GetReactions() {
		s.serves[reactionKey{r.GetKind(), r.GetKindVersion(), r.GetReaction()}] = true
	}
	if err := b.authorize(s, id, checked); err != nil {
		return err
	}
	warnings, err := b.checkSubscription(ctx, s)
	if err != nil {
		return err
	}

	adopted, lost, err := b.adopt(ctx, s, sub.GetResumed())
	if err != nil {
		return connect.NewError(connect.CodeUnavailable, fmt.Errorf("resuming leases: %w", err))
	}
	b.mu.Lock()
	b.sessions[s] = struct{}{}
	b.mu.Unlock()
	if err := stream.Send(&convergev1.ServerMessage{Msg: &convergev1.ServerMessage_Subscribed{Subscribed: &convergev1.Subscribed{
		SessionId:           s.id,
		MemberId:            b.cfg.MemberID,
		HeartbeatIntervalMs: int32(b.cfg.HeartbeatInterval.Milliseconds()),
		LeaseSeconds:        int32(b.cfg.Lease.Seconds()),
		Adopted:             adopted,
		Lost:                lost,
		Warnings:            warnings,
	}}}); err != nil {
		b.dropSession(s)
		return err
	}
	b.pushConfigs(s)
	b.mu.Lock()
	b.drainPending(s)
	b.mu.Unlock()
	b.notifyServed()
	b.log.Info("worker connected", "session", s.id, "worker", s.name, "capacity", s.capacity,
		"reactions", len(s.serves), "resumed", len(adopted), "lost", len(lost))

	writerCtx, stopWriter := context.WithCancel(ctx)
	writerDone := make(chan error, 1)
	go func() { writerDone <- b.write(writerCtx, s, stream) }()
	b.wakeClaimer()

	readDone := make(chan error, 1)
	go func() { readDone <- b.read(s, stream) }()
	select {
	case err = <-readDone:
	case <-b.stopping:
		// Returning ends the stream; the worker reconnects elsewhere or
		// after a restart, and resumes.
		err = errStreamEnd
	}
	stopWriter()
	<-writerDone
	b.dropSession(s)
	b.log.Info("worker disconnected", "session", s.id, "worker", s.name, "err", err)
	if errors.Is(err, errStreamEnd) {
		return nil
	}
	return err
}

var errStreamEnd = errors.New("stream ended")

// read handles the worker's messages until the stream ends.
func (b *Broker) read(s *session, stream *connect.BidiStream[convergev1.WorkerMessage, convergev1.ServerMessage]) error {
	for {
		m, err := stream.Receive()
		if err != nil {
			if isEOF(err) {
				return errStreamEnd
			}
			return err
		}
		b.mu.Lock()
		s.heard = time.Now()
		b.mu.Unlock()
		switch msg := m.GetMsg().(type) {
		case *convergev1.WorkerMessage_Results:
			for _, r := range msg.Results.GetResults() {
				b.onResult(s, r)
			}
		case *convergev1.WorkerMessage_ComposeChunk:
			b.onChunk(s, msg.ComposeChunk)
		case *convergev1.WorkerMessage_Heartbeat:
			b.onHeartbeat(s, msg.Heartbeat)
		case *convergev1.WorkerMessage_Readiness:
			b.onReadiness(s, msg.Readiness)
		case *convergev1.WorkerMessage_Release:
			b.onRelease(s, msg.Release)
		case *convergev1.WorkerMessage_TaskEvent:
			b.onTaskEvent(s, msg.TaskEvent)
		case *convergev1.WorkerMessage_Drain:
			b.mu.Lock()
			s.draining = true
			b.mu.Unlock()
			b.notifyServed()
			b.releaseStranded(context.Background())
		case *convergev1.WorkerMessage_Subscribe:
			return connect.NewError(connect.CodeInvalidArgument, errors.New("subscribe may only be the first message on a stream"))
		}
	}
}

// write sends queued messages until ctx ends. Task messages still queued
// when the stream dies were never delivered; their leases go back.
func (b *Broker) write(ctx context.Context, s *session, stream *connect.BidiStream[convergev1.WorkerMessage, convergev1.ServerMessage]) error {
	for {
		select {
		case <-ctx.Done():
			b.returnUnsent(s, s.take())
			return nil
		case <-s.outSig:
		}
		msgs := coalesce(s.take())
		for i, m := range msgs {
			if err := stream.Send(m); err != nil {
				b.returnUnsent(s, msgs[i:])
				return err
			}
		}
	}
}

// returnUnsent releases the leases of task messages that never left.
func (b *Broker) returnUnsent(s *session, msgs []*convergev1.ServerMessage) {
	var give []store.Lease
	b.mu.Lock()
	for _, m := range msgs {
		for _, t := range m.GetTasks().GetTasks() {
			if l := b.leases[t.GetLease().GetTaskId()]; l != nil && l.session == s && !l.done {
				delete(b.leases, l.TaskID)
				s.inflight--
				give = append(give, l.Lease)
			}
		}
	}
	b.mu.Unlock()
	if len(give) > 0 {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := b.store.ReleaseLeases(ctx, give); err != nil {
			b.log.Warn("could not release undelivered tasks; they run again after the lease window", "err", err)
		}
	}
}

// adopt takes over the leases a resuming worker names.
func (b *Broker) adopt(ctx context.Context, s *session, resumed []*convergev1.Lease) (adopted, lost []*convergev1.Lease, err error) {
	if len(resumed) == 0 {
		return nil, nil, nil
	}
	want := make([]store.Lease, len(resumed))
	for i, l := range resumed {
		want[i] = store.Lease{TaskID: l.GetTaskId(), Epoch: l.GetEpoch(), Generation: l.GetGeneration()}
	}
	infos, err := b.store.AdoptLeases(ctx, b.cfg.MemberID, b.cfg.Lease, want)
	if err != nil {
		return nil, nil, err
	}
	given := map[int64]int64{}
	for _, l := range resumed {
		given[l.GetTaskId()] = l.GetGeneration()
	}
	held := map[int64]bool{}
	now := time.Now()
	b.mu.Lock()
	for _, info := range infos {
		held[info.TaskID] = true
		l := b.leases[info.TaskID]
		if l == nil || l.Epoch != info.Epoch {
			e := b.kinds.Get(info.Kind, info.Version)
			l = &lease{key: triggerKey{info.Kind, info.Version, info.Trigger}, deadline: now.Add(time.Hour)}
			if e != nil {
				l.revision = e.Revision
				l.deadline = now.Add(e.TaskDeadline())
				if r, ok := e.Reaction(info.Trigger); ok {
					l.reaction = r.Name
				}
			}
			b.leases[info.TaskID] = l
		} else if l.session != nil && !l.session.closed && !l.done {
			l.session.inflight--
		}
		// The generation is the one the worker was given: if the task was
		// re-pointed since, the worker's result is for the older one.
		l.Lease = store.Lease{TaskID: info.TaskID, Epoch: info.Epoch, Generation: given[info.TaskID]}
		l.session, l.attested, l.task = s, now, nil
		if !l.done {
			s.inflight++
		}
	}
	b.mu.Unlock()
	for _, l := range resumed {
		if held[l.GetTaskId()] {
			adopted = append(adopted, l)
		} else {
			lost = append(lost, l)
		}
	}
	return adopted, lost, nil
}

func (b *Broker) dropSession(s *session) {
	b.mu.Lock()
	s.closed = true
	delete(b.sessions, s)
	b.mu.Unlock()
	b.unclaimPreviews(s)
	b.notifyServed()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	b.releaseStranded(ctx)
}

func (b *Broker) onHeartbeat(s *session, h *convergev1.Heartbeat) {
	now := time.Now()
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, pl := range h.GetInFlight() {
		if l := b.leases[pl.GetTaskId()]; l != nil && l.Epoch == pl.GetEpoch() && l.session == s {
			l.attested = now
		}
	}
}

// Batching bounds: one message carries at most this many tasks or acks,
// and tasks whose specs and statuses add up to about maxBatchBytes.
const (
	maxBatchItems = 1000
	maxBatchBytes = 1 << 20
)

// coalesce merges runs of task messages, and runs of ack messages, into
// batches: one stream message (and usually one write) instead of many.
func coalesce(msgs []*convergev1.ServerMessage) []*convergev1.ServerMessage {
	var out []*convergev1.ServerMessage
	bytes := 0
	for _, m := range msgs {
		if n := len(out); n > 0 {
			last := out[n-1]
			if t, lt := m.GetTasks(), last.GetTasks(); t != nil && lt != nil && len(lt.Tasks) < maxBatchItems && bytes < maxBatchBytes {
				lt.Tasks = append(lt.Tasks, t.Tasks...)
				bytes += taskBytes(t)
				continue
			}
			if a, la := m.GetAcks(), last.GetAcks(); a != nil && la != nil && len(la.Acks) < maxBatchItems {
				la.Acks = append(la.Acks, a.Acks...)
				continue
			}
		}
		out = append(out, m)
		bytes = taskBytes(m.GetTasks())
	}
	return out
}

func taskBytes(t *convergev1.Tasks) int {
	n := 0
	for _, task := range t.GetTasks() {
		n += 256 + len(task.GetResource().GetSpec()) + len(task.GetResource().GetStatus())
	}
	return n
}

func isEOF(err error) bool { return errors.Is(err, io.EOF) }

func newID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
