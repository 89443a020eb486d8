//go:build unix

package e2e

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/jackc/pgx/v5/pgxpool"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
	"github.com/convergehq/converge/sdk-go/gen/converge/v1/convergev1connect"
	"github.com/convergehq/converge/server/internal/pgtest"
)

// killedComposeChildren is how many children the composites of the kill
// tests have: several parts' worth (the SDK sends 1,000 per message).
const killedComposeChildren = 2500

// TestWorkerKilledMidCompose SIGKILLs a worker while it composes (it
// sleeps before answering): no child appears; once its lease runs out, a
// second worker composes again and all the children appear at once.
func TestWorkerKilledMidCompose(t *testing.T) {
	begin(t)
	db := pgtest.New(t)
	srv := startServer(t, db.URL, fast)
	applySpecKinds(t, srv.api)
	const root = "asleep"
	first := startSpecWorker(t, srv, "specworker -compose-delay", "-compose-delay", "1m")
	applyComposite(t, srv.api, kindStack, root, compositeDoc{Bulk: &bulkDoc{Kind: kindInert, Count: killedComposeChildren}})

	waitOutput(t, first, "composing "+kindStack+"/"+root, composeTimeout)
	if c := childCount(t, db.Pool, kindStack, root); c != 0 {
		t.Fatalf("%d children exist while the composer has not answered", c)
	}
	first.kill(t)
	startSpecWorker(t, srv, "specworker #2")
	checkWholeComposition(t, srv, db.Pool, root)
}

// TestWorkerKilledMidChunks has a worker send the first parts of a
// chunked composition and die (its connection closed, as a crash would):
// nothing of the parts is applied; once the lease runs out, a worker
// composes again and all the children appear at once.
func TestWorkerKilledMidChunks(t *testing.T) {
	begin(t)
	db := pgtest.New(t)
	srv := startServer(t, db.URL, fast)
	applySpecKinds(t, srv.api)
	const root = "chunked"
	applyComposite(t, srv.api, kindStack, root, compositeDoc{Bulk: &bulkDoc{Kind: kindInert, Count: killedComposeChildren}})

	w := dialComposer(t, srv)
	task := w.task(t)
	if task.GetKind() != kindStack || task.GetResource().GetName() != root {
		t.Fatalf("the raw composer got task %v; want the compose of %s/%s", task, kindStack, root)
	}
	for i := range 2 {
		part := &convergev1.Composition{}
		for j := range 1000 {
			part.Children = append(part.Children, &convergev1.Child{Kind: kindInert, KindVersion: 1,
				Name: fmt.Sprintf("%s-bulk-%d", root, i*1000+j), Spec: []byte("{}")})
		}
		w.send(t, &convergev1.WorkerMessage{Msg: &convergev1.WorkerMessage_ComposeChunk{ComposeChunk: &convergev1.ComposeChunk{
			Lease: task.GetLease(), Index: int32(i), Part: part}}})
	}
	w.sync(t, task.GetLease())
	w.crash()
	if c := childCount(t, db.Pool, kindStack, root); c != 0 {
		t.Fatalf("%d children exist after the composer died mid-answer", c)
	}
	startSpecWorker(t, srv, "specworker")
	checkWholeComposition(t, srv, db.Pool, root)
}

// checkWholeComposition waits for the composite's children to appear and
// checks every read saw none or all of them, and that the composite was
// composed once, after the lease of the killed composer ran out.
func checkWholeComposition(t *testing.T, srv *server, pool *pgxpool.Pool, root string) {
	t.Helper()
	const n = killedComposeChildren
	deadline := time.Now().Add(composeTimeout)
	reads := 0
	for {
		c := childCount(t, pool, kindStack, root)
		reads++
		if c != 0 && c != n {
			t.Fatalf("read %d saw %d of the %d children: a partial composition is visible", reads, c, n)
		}
		if c == n {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %s, no child of %s/%s exists: %s", composeTimeout, kindStack, root, explain(getResource(t, srv.api, kindStack, root)))
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("%d reads saw no child, then all %d", reads-1, n)

	r := getResource(t, srv.api, kindStack, root)
	if r.GetSyncedGeneration() != r.GetGeneration() || r.GetStatus().GetFields()["children"].GetNumberValue() != n {
		t.Errorf("the composite after the second compose: %s, status %v; want synced with status.children %d", explain(r), r.GetStatus(), n)
	}
	// The killed composer's lease ran out; that is why the compose ran again.
	lastEvent(t, srv.api, kindStack, root, "LeaseExpired")
	composed := 0
	for _, e := range eventsOf(t, srv.api, kindStack, root) {
		if e.GetReason() == "Composed" {
			composed++
		}
	}
	if composed != 1 {
		t.Errorf("%s/%s was composed %d times; want once, by the second worker", kindStack, root, composed)
	}
}

// rawComposer speaks the worker protocol for the stack kind's compose
// reaction over connections it can cut, to die mid-answer as a crashed
// worker would.
type rawComposer struct {
	stream *connect.BidiStreamForClientSimple[convergev1.WorkerMessage, convergev1.ServerMessage]
	mu     sync.Mutex
	conns  []net.Conn
	cancel context.CancelFunc
}

// dialComposer opens a worker stream serving stack v1 "compose" and
// waits for the server's Subscribed.
func dialComposer(t *testing.T, s *server) *rawComposer {
	t.Helper()
	w := &rawComposer{}
	var protocols http.Protocols
	protocols.SetUnencryptedHTTP2(true)
	dialer := &net.Dialer{}
	transport := &http.Transport{Protocols: &protocols, DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dialer.DialContext(ctx, network, addr)
		if err == nil {
			w.mu.Lock()
			w.conns = append(w.conns, c)
			w.mu.Unlock()
		}
		return c, err
	}}
	ctx, cancel := context.WithTimeout(context.Background(), composeTimeout)
	w.cancel = cancel
	t.Cleanup(w.crash)
	stream, err := convergev1connect.NewWorkerServiceClient(&http.Client{Transport: transport}, s.url).Connect(ctx)
	if err != nil {
		t.Fatalf("raw composer: connect: %v", err)
	}
	w.stream = stream
	w.send(t, &convergev1.WorkerMessage{Msg: &convergev1.WorkerMessage_Subscribe{Subscribe: &convergev1.Subscribe{
		WorkerName: "raw-composer", Capacity: 1,
		Reactions: []*convergev1.ReactionRef{{Kind: kindStack, KindVersion: 1, Reaction: "compose"}},
	}}})
	m, err := stream.Receive()
	if err != nil || m.GetSubscribed() == nil {
		t.Fatalf("raw composer: want Subscribed first, got %v (error %v)", m, err)
	}
	return w
}

// task waits for the next task; the stream's deadline bounds the wait.
func (w *rawComposer) task(t *testing.T) *convergev1.Task {
	t.Helper()
	for {
		m, err := w.stream.Receive()
		if err != nil {
			t.Fatalf("raw composer: waiting for a task: %v", err)
		}
		if tasks := m.GetTasks().GetTasks(); len(tasks) > 0 {
			return tasks[0]
		}
	}
}

// sync returns once the server has read everything sent so far: it sends
// a result for a lease the server never issued, and waits for its refusal
// (the server reads a stream's messages in order).
func (w *rawComposer) sync(t *testing.T, held *convergev1.Lease) {
	t.Helper()
	bogus := &convergev1.Lease{TaskId: held.GetTaskId() + 1_000_000, Epoch: 1, Generation: held.GetGeneration()}
	w.send(t, &convergev1.WorkerMessage{Msg: &convergev1.WorkerMessage_Results{Results: &convergev1.Results{
		Results: []*convergev1.TaskResult{{Lease: bogus, Outcome: &convergev1.TaskResult_Success{Success: &convergev1.Success{}}}},
	}}})
	for {
		m, err := w.stream.Receive()
		if err != nil {
			t.Fatalf("raw composer: waiting for the refusal of a result for lease %v: %v", bogus, err)
		}
		for _, a := range m.GetAcks().GetAcks() {
			if a.GetLease().GetTaskId() == bogus.GetTaskId() {
				if a.GetApplied() {
					t.Fatalf("the server applied a result for a lease it never issued: %v", a)
				}
				return
			}
		}
	}
}

func (w *rawComposer) send(t *testing.T, m *convergev1.WorkerMessage) {
	t.Helper()
	if err := w.stream.Send(m); err != nil {
		t.Fatalf("raw composer: send: %v", err)
	}
}

// crash closes the composer's connections under it, as the kernel does
// for a killed process.
func (w *rawComposer) crash() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, c := range w.conns {
		_ = c.Close()
	}
	w.conns = nil
	w.cancel()
}
