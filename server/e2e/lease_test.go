//go:build unix

package e2e

import (
	"context"
	"net/http"
	"testing"
	"time"

	"connectrpc.com/connect"

	"github.com/convergehq/converge/sdk-go/client"
	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
	"github.com/convergehq/converge/sdk-go/gen/converge/v1/convergev1connect"
	"github.com/convergehq/converge/server/internal/pgtest"
)

// TestResultForALeaseNotHeld has a worker report results for leases it
// does not hold: one that was never issued, and one another worker holds.
// Neither may be applied, and the holder's own result still is.
//
// The server's lease is long so the holder need not heartbeat.
func TestResultForALeaseNotHeld(t *testing.T) {
	begin(t)
	timing := fast
	timing.lease, timing.heartbeat = time.Minute, 5*time.Second
	srv := startServer(t, pgtest.New(t).URL, timing)
	applyKind(t, srv.api, leafKind(t, "greeting"))
	applyResources(t, srv.api, "greeting", "held", 2)

	holder := dialWorker(t, srv, "holder", 2)
	tasks := map[string]*convergev1.Task{}
	for range 2 {
		task := holder.task(t)
		tasks[task.GetResource().GetName()] = task
	}
	other := dialWorker(t, srv, "other", 1)

	cases := []struct {
		name     string
		resource string
		what     string // the lease, for failure messages
		lease    func(held *convergev1.Lease) *convergev1.Lease
	}{
		{"never issued", "held-0001", "a lease the server never issued", func(held *convergev1.Lease) *convergev1.Lease {
			return &convergev1.Lease{TaskId: held.GetTaskId() + 1_000_000, Epoch: held.GetEpoch(), Generation: held.GetGeneration()}
		}},
		{"held by another worker", "held-0002", `the lease worker "holder" holds`, func(held *convergev1.Lease) *convergev1.Lease { return held }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			task := tasks[tc.resource]
			if task == nil {
				t.Fatalf("the holder got no task for %s (tasks: %v)", tc.resource, tasks)
			}
			before := getResource(t, srv.api, "greeting", tc.resource)
			forged := tc.lease(task.GetLease())
			other.succeed(t, forged, `{"message":"from a worker without the lease"}`)
			a := other.ack(t)
			after := getResource(t, srv.api, "greeting", tc.resource)
			if after.GetResourceVersion() != before.GetResourceVersion() || after.GetReconciles() != 0 ||
				after.GetPhase() != client.PhaseReconciling || len(after.GetStatus().GetFields()) != 0 {
				t.Fatalf("worker \"other\" sent a result for %s (%v) and the server applied it (ack: %v): "+
					"the resource went from %s (resource_version %d) to %s (resource_version %d, status %v). "+
					"A result must come from the stream that holds its lease (R-5), else any worker can report for any task",
					tc.what, forged, a, describe(before), before.GetResourceVersion(),
					describe(after), after.GetResourceVersion(), after.GetStatus())
			}
			if a.GetApplied() || a.GetReason() == "" {
				t.Errorf("ack of a result for a lease the worker does not hold = %v, want applied=false with a reason", a)
			}

			// The holder's own result is applied, once.
			holder.succeed(t, task.GetLease(), `{"message":"from the holder"}`)
			if a := holder.ack(t); !a.GetApplied() {
				t.Fatalf("ack of the holder's result = %v, want applied", a)
			}
			r := getResource(t, srv.api, "greeting", tc.resource)
			if r.GetPhase() != client.PhaseReady || r.GetReconciles() != 1 ||
				r.GetStatus().GetFields()["message"].GetStringValue() != "from the holder" {
				t.Errorf("after the holder's result: %s, status %v; want Ready, reconciles 1, the holder's message", describe(r), r.GetStatus())
			}
		})
	}
}

// rawWorker speaks the worker protocol with the generated client, to do
// what the SDK never would. A reader goroutine sorts what the server sends.
type rawWorker struct {
	stream     *connect.BidiStreamForClientSimple[convergev1.WorkerMessage, convergev1.ServerMessage]
	subscribed chan *convergev1.Subscribed
	tasks      chan *convergev1.Task
	acks       chan *convergev1.ResultAck
	ended      chan error // receives why the stream ended
}

// rawTimeout bounds waiting for one message from the server.
const rawTimeout = 10 * time.Second

// dialWorker opens a worker stream that serves greeting v1 "reconcile" and
// waits for the server's Subscribed.
func dialWorker(t *testing.T, s *server, name string, capacity int32) *rawWorker {
	t.Helper()
	var protocols http.Protocols
	protocols.SetUnencryptedHTTP2(true)
	httpClient := &http.Client{Transport: &http.Transport{Protocols: &protocols}}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	stream, err := convergev1connect.NewWorkerServiceClient(httpClient, s.url).Connect(ctx)
	if err != nil {
		t.Fatalf("worker %s: connect: %v", name, err)
	}
	w := &rawWorker{stream: stream, subscribed: make(chan *convergev1.Subscribed, 1),
		tasks: make(chan *convergev1.Task, 64), acks: make(chan *convergev1.ResultAck, 64), ended: make(chan error, 1)}
	go w.read(ctx)
	w.send(t, &convergev1.WorkerMessage{Msg: &convergev1.WorkerMessage_Subscribe{Subscribe: &convergev1.Subscribe{
		WorkerName: name, Capacity: capacity,
		Reactions: []*convergev1.ReactionRef{{Kind: "greeting", KindVersion: 1, Reaction: "reconcile"}},
	}}})
	receive(t, w, w.subscribed, "subscribed")
	return w
}

// read sorts server messages into the worker's channels until the stream
// ends or ctx is done.
func (w *rawWorker) read(ctx context.Context) {
	for {
		m, err := w.stream.Receive()
		if err != nil {
			w.ended <- err
			return
		}
		if sub := m.GetSubscribed(); sub != nil && !deliver(ctx, w.subscribed, sub) {
			return
		}
		for _, task := range m.GetTasks().GetTasks() {
			if !deliver(ctx, w.tasks, task) {
				return
			}
		}
		for _, a := range m.GetAcks().GetAcks() {
			if !deliver(ctx, w.acks, a) {
				return
			}
		}
	}
}

func deliver[T any](ctx context.Context, ch chan<- T, v T) bool {
	select {
	case ch <- v:
		return true
	case <-ctx.Done():
		return false
	}
}

// receive returns the next value from ch; what names it for a failure.
func receive[T any](t *testing.T, w *rawWorker, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case err := <-w.ended:
		t.Fatalf("worker stream ended while waiting for %s: %v", what, err)
	case <-time.After(rawTimeout):
		t.Fatalf("no %s from the server within %s", what, rawTimeout)
	}
	var zero T
	return zero
}

func (w *rawWorker) send(t *testing.T, m *convergev1.WorkerMessage) {
	t.Helper()
	if err := w.stream.Send(m); err != nil {
		t.Fatalf("worker stream: send: %v", err)
	}
}

func (w *rawWorker) task(t *testing.T) *convergev1.Task {
	t.Helper()
	return receive(t, w, w.tasks, "task")
}

func (w *rawWorker) ack(t *testing.T) *convergev1.ResultAck {
	t.Helper()
	return receive(t, w, w.acks, "ack")
}

func (w *rawWorker) succeed(t *testing.T, l *convergev1.Lease, status string) {
	t.Helper()
	w.send(t, &convergev1.WorkerMessage{Msg: &convergev1.WorkerMessage_Results{Results: &convergev1.Results{
		Results: []*convergev1.TaskResult{{
			Lease: l, Outcome: &convergev1.TaskResult_Success{Success: &convergev1.Success{Status: []byte(status)}},
		}},
	}}})
}
