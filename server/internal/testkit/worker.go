package testkit

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"connectrpc.com/connect"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
	"github.com/convergehq/converge/sdk-go/gen/converge/v1/convergev1connect"
)

// Subscription is what a Worker subscribes with.
type Subscription struct {
	// Name is the worker's name (default "raw").
	Name      string
	Capacity  int32
	Reactions []*convergev1.ReactionRef
	// Resumed are leases the worker says it still runs, from an earlier
	// stream.
	Resumed []*convergev1.Lease
	// Heartbeat, if set, attests the running tasks this often until the
	// test ends; a worker without it never heartbeats.
	Heartbeat time.Duration
}

// Worker speaks the worker protocol by hand over one stream. Its reads
// (Task, Ack, NextConfig) are for the test's goroutine; Receive is for a
// reader of its own.
type Worker struct {
	t      testing.TB
	stream *connect.BidiStreamForClientSimple[convergev1.WorkerMessage, convergev1.ServerMessage]
	// end ends the stream, when the test ends or a read waited too long.
	end context.CancelFunc

	mu      sync.Mutex
	running map[int64]*convergev1.Lease
	// tasks, acks and configs arrived in a batch but were not asked for yet.
	tasks   []*convergev1.Task
	acks    []*convergev1.ResultAck
	configs []*convergev1.KindConfig
}

// Subscribe opens a stream on client and subscribes; it returns the
// worker and the server's answer. The stream ends with the test.
func Subscribe(t testing.TB, client convergev1connect.WorkerServiceClient, sub Subscription) (*Worker, *convergev1.Subscribed) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	stream, err := client.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	w := &Worker{t: t, stream: stream, end: cancel, running: map[int64]*convergev1.Lease{}}
	for _, l := range sub.Resumed {
		w.running[l.GetTaskId()] = l
	}
	name := sub.Name
	if name == "" {
		name = "raw"
	}
	w.Send(&convergev1.WorkerMessage{Msg: &convergev1.WorkerMessage_Subscribe{Subscribe: &convergev1.Subscribe{
		WorkerName: name, Capacity: sub.Capacity, Resumed: sub.Resumed, Reactions: sub.Reactions,
	}}})
	m := w.Recv()
	if m.GetSubscribed() == nil {
		t.Fatalf("first server message = %v, want subscribed", m)
	}
	if sub.Heartbeat > 0 {
		go w.heartbeat(ctx, sub.Heartbeat)
	}
	return w, m.GetSubscribed()
}

// heartbeat attests the running tasks every interval until ctx ends or
// the stream breaks.
func (w *Worker) heartbeat(ctx context.Context, every time.Duration) {
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		w.mu.Lock()
		in := make([]*convergev1.Lease, 0, len(w.running))
		for _, l := range w.running {
			in = append(in, l)
		}
		err := w.stream.Send(&convergev1.WorkerMessage{Msg: &convergev1.WorkerMessage_Heartbeat{Heartbeat: &convergev1.Heartbeat{InFlight: in}}})
		w.mu.Unlock()
		if err != nil {
			return
		}
	}
}

// Send sends m; a result in it ends the attestation of its task.
func (w *Worker) Send(m *convergev1.WorkerMessage) {
	w.t.Helper()
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, r := range m.GetResults().GetResults() {
		delete(w.running, r.GetLease().GetTaskId())
	}
	if err := w.stream.Send(m); err != nil {
		w.t.Fatal(err)
	}
}

// RecvDeadline bounds how long Recv waits for a message. It is longer
// than Deadline: a read may wait out a lease or a backoff first.
const RecvDeadline = 30 * time.Second

// Recv reads the next server message, failing the test if the stream
// ends or nothing comes within RecvDeadline (which ends the stream).
func (w *Worker) Recv() *convergev1.ServerMessage {
	w.t.Helper()
	var late atomic.Bool
	timer := time.AfterFunc(RecvDeadline, func() { late.Store(true); w.end() })
	defer timer.Stop()
	m, err := w.stream.Receive()
	if late.Load() {
		w.t.Fatalf("no server message within %s", RecvDeadline)
	}
	if err != nil {
		w.t.Fatal(err)
	}
	return m
}

// Receive reads the next server message as it comes, for a reader in a
// goroutine of its own; it records the tasks in it as running.
func (w *Worker) Receive() (*convergev1.ServerMessage, error) {
	m, err := w.stream.Receive()
	if err == nil {
		w.mu.Lock()
		for _, t := range m.GetTasks().GetTasks() {
			w.running[t.GetLease().GetTaskId()] = t.GetLease()
		}
		w.mu.Unlock()
	}
	return m, err
}

// fill reads one server message into the queues.
func (w *Worker) fill() {
	w.t.Helper()
	m := w.Recv()
	w.tasks = append(w.tasks, m.GetTasks().GetTasks()...)
	w.acks = append(w.acks, m.GetAcks().GetAcks()...)
	w.configs = append(w.configs, m.GetConfigs().GetConfigs()...)
}

// Task returns the next task sent to the worker, waiting for one; the
// worker attests it until it sends its result.
func (w *Worker) Task() *convergev1.Task {
	w.t.Helper()
	for len(w.tasks) == 0 {
		w.fill()
	}
	t := w.tasks[0]
	w.tasks = w.tasks[1:]
	w.mu.Lock()
	w.running[t.GetLease().GetTaskId()] = t.GetLease()
	w.mu.Unlock()
	return t
}

// Ack returns the next result acknowledgement, waiting for one.
func (w *Worker) Ack() *convergev1.ResultAck {
	w.t.Helper()
	for len(w.acks) == 0 {
		w.fill()
	}
	a := w.acks[0]
	w.acks = w.acks[1:]
	return a
}

// NextConfig returns the next pushed provider config, waiting for one.
func (w *Worker) NextConfig() *convergev1.KindConfig {
	w.t.Helper()
	for len(w.configs) == 0 {
		w.fill()
	}
	c := w.configs[0]
	w.configs = w.configs[1:]
	return c
}

// Result reports success for lease with status (JSON).
func (w *Worker) Result(l *convergev1.Lease, status string) {
	w.t.Helper()
	w.Succeed(l, &convergev1.Success{Status: []byte(status)})
}

// Succeed reports a success.
func (w *Worker) Succeed(l *convergev1.Lease, ok *convergev1.Success) {
	w.t.Helper()
	w.Send(&convergev1.WorkerMessage{Msg: &convergev1.WorkerMessage_Results{Results: &convergev1.Results{
		Results: []*convergev1.TaskResult{{Lease: l, Outcome: &convergev1.TaskResult_Success{Success: ok}}},
	}}})
}

// Compose reports a composer's answer, with an empty status.
func (w *Worker) Compose(l *convergev1.Lease, c *convergev1.Composition) {
	w.t.Helper()
	w.Succeed(l, &convergev1.Success{Status: []byte(`{}`), Composition: c})
}

// Close ends the stream from the worker's side.
func (w *Worker) Close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	_ = w.stream.CloseRequest()
	_ = w.stream.CloseResponse()
}

// Event reports an event of the running task under lease l.
func (w *Worker) Event(l *convergev1.Lease, typ, reason, message string) {
	w.t.Helper()
	w.Send(&convergev1.WorkerMessage{Msg: &convergev1.WorkerMessage_TaskEvent{TaskEvent: &convergev1.TaskEvent{
		Lease: l, Type: typ, Reason: reason, Message: message,
	}}})
}
