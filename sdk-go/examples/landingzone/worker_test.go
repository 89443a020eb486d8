package main

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"buf.build/go/protovalidate"
	"connectrpc.com/connect"
	"google.golang.org/protobuf/proto"

	"github.com/convergehq/converge/sdk-go/converge"
	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
	"github.com/convergehq/converge/sdk-go/gen/converge/v1/convergev1connect"
)

// broker is a minimal WorkerService: it hands the worker the given tasks,
// acknowledges every result and passes on what the worker sends, after
// checking each message as the server would.
type broker struct {
	tasks []*convergev1.Task
	subs  chan *convergev1.Subscribe
	msgs  chan *convergev1.WorkerMessage
	bad   chan error
}

func (b *broker) Connect(ctx context.Context, st *connect.BidiStream[convergev1.WorkerMessage, convergev1.ServerMessage]) error {
	first, err := st.Receive()
	if err != nil {
		return err
	}
	b.subs <- first.GetSubscribe()
	if err := st.Send(&convergev1.ServerMessage{Msg: &convergev1.ServerMessage_Subscribed{Subscribed: &convergev1.Subscribed{
		SessionId: "s", MemberId: "m", HeartbeatIntervalMs: 1000, LeaseSeconds: 30,
	}}}); err != nil {
		return err
	}
	if err := st.Send(&convergev1.ServerMessage{Msg: &convergev1.ServerMessage_Tasks{Tasks: &convergev1.Tasks{Tasks: b.tasks}}}); err != nil {
		return err
	}
	for {
		m, err := st.Receive()
		if err != nil {
			return nil // the worker closed the stream
		}
		if err := protovalidate.Validate(m); err != nil {
			b.bad <- err
		}
		if size := proto.Size(m); size >= 1<<20 {
			b.bad <- errors.New("a message of more than 1 MiB")
		}
		var acks []*convergev1.ResultAck
		for _, r := range m.GetResults().GetResults() {
			acks = append(acks, &convergev1.ResultAck{Lease: r.GetLease(), Applied: true})
		}
		if len(acks) > 0 {
			if err := st.Send(&convergev1.ServerMessage{Msg: &convergev1.ServerMessage_Acks{Acks: &convergev1.Acks{Acks: acks}}}); err != nil {
				return err
			}
		}
		select {
		case b.msgs <- m:
		case <-ctx.Done():
			return nil
		}
	}
}

func task(id int64, kind, reaction, name, spec string) *convergev1.Task {
	return &convergev1.Task{
		Lease: &convergev1.Lease{TaskId: id, Epoch: 1, Generation: 1}, Kind: kind, KindVersion: kindVersion,
		Reaction: reaction, Trigger: "specChange", Attempt: 1, DedupToken: name,
		Resource: &convergev1.TaskResource{Namespace: "default", Name: name, Uid: name, Generation: 1, Spec: []byte(spec)},
	}
}

// The worker, as main runs it, composes a zone of 1,000 accounts over a
// real stream: 3,000 children and 2,000 edges in parts, every message
// valid; and a VPC whose flow has not arrived fails terminally.
func TestWorkerServesTheLandingZone(t *testing.T) {
	b := &broker{
		tasks: []*convergev1.Task{
			task(1, kindZone, "compose", "big", `{"prefix":"big","accounts":1000}`),
			task(2, kindVPC, "reconcile", "big-vpc-0", `{"cidr":"10.0.0.0/16","account_id":""}`),
		},
		subs: make(chan *convergev1.Subscribe, 1),
		msgs: make(chan *convergev1.WorkerMessage, 1024),
		bad:  make(chan error, 1024),
	}
	mux := http.NewServeMux()
	mux.Handle(convergev1connect.NewWorkerServiceHandler(b))
	srv := httptest.NewUnstartedServer(mux)
	srv.Config.Protocols = new(http.Protocols)
	srv.Config.Protocols.SetUnencryptedHTTP2(true)
	srv.Start()
	defer srv.Close()

	w, err := converge.NewWorker(srv.URL, converge.WithLogger(slog.New(slog.DiscardHandler)), converge.WithCapacity(defaultCapacity))
	if err != nil {
		t.Fatal(err)
	}
	(&handlers{}).register(w)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	defer func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Error("the worker did not stop")
		}
	}()

	timeout := time.After(30 * time.Second)
	select {
	case sub := <-b.subs:
		if len(sub.GetReactions()) != 4 {
			t.Errorf("the worker subscribed to %v; want the 4 reactions", sub.GetReactions())
		}
	case <-timeout:
		t.Fatal("the worker did not subscribe")
	}

	var chunks []*convergev1.ComposeChunk
	results := map[int64]*convergev1.TaskResult{}
	for len(results) < 2 {
		select {
		case m := <-b.msgs:
			if c := m.GetComposeChunk(); c != nil {
				chunks = append(chunks, c)
			}
			for _, r := range m.GetResults().GetResults() {
				results[r.GetLease().GetTaskId()] = r
			}
		case err := <-b.bad:
			t.Fatalf("the worker sent a message the server would refuse: %v", err)
		case <-timeout:
			t.Fatalf("got %d results; want 2", len(results))
		}
	}

	composed := results[1].GetSuccess()
	if composed == nil {
		t.Fatalf("compose result = %v; want success", results[1])
	}
	children, edges := len(composed.GetComposition().GetChildren()), len(composed.GetComposition().GetEdges())
	for i, c := range chunks {
		if int(c.GetIndex()) != i {
			t.Fatalf("chunk %d has index %d", i, c.GetIndex())
		}
		children += len(c.GetPart().GetChildren())
		edges += len(c.GetPart().GetEdges())
	}
	if int(composed.GetComposeChunks()) != len(chunks) || len(chunks) < 2 {
		t.Errorf("compose_chunks = %d after %d chunks; want them equal, and 3,000 children to need chunks", composed.GetComposeChunks(), len(chunks))
	}
	if children != 3000 || edges != 2000 {
		t.Errorf("the parts hold %d children and %d edges; want 3000 and 2000", children, edges)
	}
	if string(composed.GetStatus()) != `{"accounts":1000}` {
		t.Errorf("compose status = %s", composed.GetStatus())
	}

	failed := results[2].GetError()
	if failed == nil || !failed.GetTerminal() || failed.GetMessage() != errNoAccountID.Error() {
		t.Errorf("vpc result = %v; want the terminal %q", results[2], errNoAccountID)
	}
}
