package converge

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"buf.build/go/protovalidate"
	"connectrpc.com/connect"
	"google.golang.org/protobuf/proto"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
)

const (
	// Heartbeat interval when the server does not set one, and the floor
	// that keeps a bogus tiny interval from flooding the stream.
	defaultHeartbeat = 5 * time.Second
	minHeartbeat     = 10 * time.Millisecond
	// sendBatch messages (results and composition chunks) are sent at
	// most per wake-up of the sender, so heartbeats interleave with a large
	// backlog of results.
	sendBatch = 256
)

var errStreamClosed = errors.New("server closed the stream")

type stream = connect.BidiStreamForClientSimple[convergev1.WorkerMessage, convergev1.ServerMessage]

// runSession holds one stream from dial to break: subscribe, then receive
// tasks on this goroutine while a sender goroutine sends results,
// heartbeats and Drain. It reports whether the stream got as far as being
// subscribed, and why it ended. When closeSend is closed the sender closes
// the send side and the session ends when the server ends the stream.
func (w *Worker) runSession(ctx context.Context, closeSend <-chan struct{}) (subscribed bool, err error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	st, err := w.client.Connect(ctx)
	if err != nil {
		return false, err
	}
	defer func() { _ = st.CloseResponse() }()

	timeout := time.AfterFunc(w.waits.subscribed, cancel)
	first, err := w.subscribeOn(st)
	if !timeout.Stop() && err != nil {
		err = fmt.Errorf("no subscribed reply within %s: %w", w.waits.subscribed, err)
	}
	if err != nil {
		return false, err
	}
	reply := first.GetSubscribed()
	if reply == nil {
		return false, fmt.Errorf("protocol error: first server message is %T, want subscribed", first.GetMsg())
	}
	w.log.Info("converge: worker subscribed", "session", reply.GetSessionId(), "member", reply.GetMemberId(),
		"adopted", len(reply.GetAdopted()), "lost", len(reply.GetLost()))
	for _, warning := range reply.GetWarnings() {
		w.log.Warn("converge: server warning: "+warning, "session", reply.GetSessionId())
	}
	w.ledger.beginSession(reply.GetLost())
	defer w.ledger.endSession()

	sent := make(chan error, 1)
	go func() { sent <- w.sendLoop(ctx, cancel, st, heartbeatInterval(reply), closeSend) }()
	err = w.receiveLoop(st)
	cancel()
	if serr := <-sent; serr != nil {
		err = serr
	}
	return true, err
}

// subscribeOn sends Subscribe, resuming what the worker still holds, and
// returns the server's first message.
func (w *Worker) subscribeOn(st *stream) (*convergev1.ServerMessage, error) {
	sub := w.subscribe(w.ledger.resumable())
	if err := st.Send(&convergev1.WorkerMessage{Msg: &convergev1.WorkerMessage_Subscribe{Subscribe: sub}}); err != nil {
		return nil, sendError(st, err)
	}
	first, err := st.Receive()
	if err != nil {
		return nil, receiveError(err)
	}
	return first, nil
}

// receiveLoop handles server messages until the stream ends.
func (w *Worker) receiveLoop(st *stream) error {
	// The first Configs on a stream is the whole set: a default config
	// removed while the worker was away is removed here too.
	completeConfigs := true
	for {
		msg, err := st.Receive()
		if err != nil {
			return receiveError(err)
		}
		switch m := msg.GetMsg().(type) {
		case *convergev1.ServerMessage_Tasks:
			for _, t := range m.Tasks.GetTasks() {
				w.onTask(t)
			}
		case *convergev1.ServerMessage_Cancel:
			if w.ledger.abandon(keyOf(m.Cancel.GetLease())) {
				w.log.Debug("converge: task cancelled by server", "task_id", m.Cancel.GetLease().GetTaskId(),
					"reason", m.Cancel.GetReason())
			}
		case *convergev1.ServerMessage_Acks:
			for _, a := range m.Acks.GetAcks() {
				w.onAck(a)
			}
		case *convergev1.ServerMessage_Configs:
			w.onConfigs(m.Configs, completeConfigs)
			completeConfigs = false
		case *convergev1.ServerMessage_Subscribed:
			w.log.Warn("converge: ignoring a repeated subscribed message")
		default:
			w.log.Debug("converge: ignoring an unknown server message", "type", fmt.Sprintf("%T", m))
		}
	}
}

func (w *Worker) onTask(t *convergev1.Task) {
	if lease := t.GetLease(); lease == nil {
		w.log.Warn("converge: ignoring a task without a lease", "kind", t.GetKind())
		return
	} else if err := protovalidate.Validate(lease); err != nil {
		w.log.Warn("converge: ignoring a task with an invalid lease", "kind", t.GetKind(), "error", err)
		return
	}
	starts, err := w.ledger.accept(t, w.handler(t))
	if err != nil {
		level := slog.LevelDebug
		if errors.Is(err, errQueueFull) {
			level = slog.LevelWarn
		}
		w.log.Log(context.Background(), level, "converge: task not accepted: "+err.Error(),
			"kind", t.GetKind(), "name", t.GetResource().GetName(), "task_id", t.GetLease().GetTaskId())
	}
	w.launch(starts)
}

func (w *Worker) onAck(a *convergev1.ResultAck) {
	if !a.GetApplied() {
		w.log.Info("converge: server discarded a result", "task_id", a.GetLease().GetTaskId(),
			"epoch", a.GetLease().GetEpoch(), "reason", a.GetReason())
	}
	w.launch(w.ledger.ack(keyOf(a.GetLease())))
}

// sendLoop is the stream's only sender. It sends the reactions that are
// not ready and a heartbeat at once, then a heartbeat every interval,
// readiness changes, Drain once the worker drains, and results as they
// complete, and the leases the worker gives back. A send failure cancels
// the session.
func (w *Worker) sendLoop(ctx context.Context, cancel context.CancelFunc, st *stream, every time.Duration, closeSend <-chan struct{}) error {
	send := func(m *convergev1.WorkerMessage) error {
		err := st.Send(m)
		if err == nil || errors.Is(err, io.EOF) {
			// On EOF the server ended the stream; Receive reports why.
			return err
		}
		cancel()
		return fmt.Errorf("send: %w", err)
	}
	heartbeat := func() error {
		return send(&convergev1.WorkerMessage{Msg: &convergev1.WorkerMessage_Heartbeat{
			Heartbeat: &convergev1.Heartbeat{InFlight: w.ledger.attested()},
		}})
	}
	// The server's view of readiness is per stream: a new stream starts
	// with every reaction ready, so what is not is reported again.
	var told streamReadiness
	reportReadiness := func() error {
		if r := w.readiness.changes(&told); r != nil {
			return send(&convergev1.WorkerMessage{Msg: &convergev1.WorkerMessage_Readiness{Readiness: r}})
		}
		return nil
	}
	tick := time.NewTicker(every)
	defer tick.Stop()
	err := reportReadiness()
	if err == nil {
		err = heartbeat()
	}
	drainSent := false
	for err == nil {
		if err = reportReadiness(); err != nil {
			break
		}
		if !drainSent && w.ledger.isDraining() {
			drainSent = true
			if err = send(&convergev1.WorkerMessage{Msg: &convergev1.WorkerMessage_Drain{Drain: &convergev1.Drain{}}}); err != nil {
				break
			}
		}
		if leases := w.ledger.takeReleases(); len(leases) > 0 {
			if err = send(&convergev1.WorkerMessage{Msg: &convergev1.WorkerMessage_Release{
				Release: &convergev1.Release{Leases: leases},
			}}); err != nil {
				break
			}
		}
		reps, more := w.ledger.takeUnsent(sendBatch)
		if err = sendEvents(send, w.ledger.takeEvents()); err != nil {
			break
		}
		if err = sendReports(send, reps); err != nil {
			break
		}
		if more {
			w.ledger.poke()
		}
		select {
		case <-ctx.Done():
			return nil
		case <-closeSend:
			_ = st.CloseRequest()
			return nil
		case <-w.ledger.kick:
		case <-w.readiness.kick:
		case <-tick.C:
			err = heartbeat()
		}
	}
	if errors.Is(err, io.EOF) {
		return nil
	}
	return err
}

// sendEvents sends task events, one message each. An event whose send
// fails is not sent again: events are best effort, and a new stream may
// find the task's lease gone.
func sendEvents(send func(*convergev1.WorkerMessage) error, evs []*convergev1.TaskEvent) error {
	for _, e := range evs {
		if err := send(&convergev1.WorkerMessage{Msg: &convergev1.WorkerMessage_TaskEvent{TaskEvent: e}}); err != nil {
			return err
		}
	}
	return nil
}

// sendReports sends finished tasks' reports: each composition's chunks, in
// order, then the results in batches. A result follows its own chunks on
// the stream; other tasks' messages may come in between.
func sendReports(send func(*convergev1.WorkerMessage) error, reps []*report) error {
	msgs := make([]*convergev1.TaskResult, 0, len(reps))
	for _, r := range reps {
		for _, c := range r.chunks {
			if err := send(&convergev1.WorkerMessage{Msg: &convergev1.WorkerMessage_ComposeChunk{ComposeChunk: c}}); err != nil {
				return err
			}
		}
		msgs = append(msgs, r.result)
	}
	for len(msgs) > 0 {
		n := resultsThatFit(msgs)
		if err := send(&convergev1.WorkerMessage{Msg: &convergev1.WorkerMessage_Results{
			Results: &convergev1.Results{Results: msgs[:n]},
		}}); err != nil {
			return err
		}
		msgs = msgs[n:]
	}
	return nil
}

// maxResultBytes bounds the results sent in one message, well under the
// server's message limit.
const maxResultBytes = 1 << 20

// resultsThatFit returns how many of msgs, from the first, go in one
// message: at least one, and no more than maxResultBytes after that.
func resultsThatFit(msgs []*convergev1.TaskResult) int {
	size := 0
	for i, m := range msgs {
		size += proto.Size(m)
		if i > 0 && size > maxResultBytes {
			return i
		}
	}
	return len(msgs)
}

// heartbeatInterval is the server's interval, or a third of its lease, or a
// default; never below minHeartbeat.
func heartbeatInterval(s *convergev1.Subscribed) time.Duration {
	d := time.Duration(s.GetHeartbeatIntervalMs()) * time.Millisecond
	if d <= 0 {
		d = defaultHeartbeat
		if lease := s.GetLeaseSeconds(); lease > 0 {
			d = time.Duration(lease) * time.Second / 3
		}
	}
	return max(d, minHeartbeat)
}

// sendError explains a failed Send: when the server ended the stream, the
// reason is in Receive.
func sendError(st *stream, err error) error {
	if !errors.Is(err, io.EOF) {
		return err
	}
	_, rerr := st.Receive()
	if rerr == nil {
		return err
	}
	return receiveError(rerr)
}

func receiveError(err error) error {
	if errors.Is(err, io.EOF) {
		return errStreamClosed
	}
	return err
}
