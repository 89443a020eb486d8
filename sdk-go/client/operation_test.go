package client_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/convergehq/converge/sdk-go/client"
	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
)

func operation(id, state string) *convergev1.Operation {
	return &convergev1.Operation{
		Id: id, Verb: "rotate", State: state,
		Resource: &convergev1.ResourceRef{Namespace: "default", Kind: "greeting", Name: "hello"},
	}
}

func TestWaitForOperationPollsUntilFinished(t *testing.T) {
	f, url := newFake(t)
	f.setOperation(operation("op-1", client.OperationPending))
	c := client.New(url)

	type result struct {
		op  *convergev1.Operation
		err error
	}
	done := make(chan result, 1)
	go func() {
		op, err := c.WaitForOperation(testContext(t), "op-1", client.WithPollInterval(20*time.Millisecond))
		done <- result{op, err}
	}()
	if got := f.waitGet(t); got != "operation op-1" {
		t.Fatalf("first read = %q, want operation op-1", got)
	}
	f.setOperation(operation("op-1", client.OperationRunning))
	f.waitGet(t)
	f.waitGet(t) // still running: it keeps polling
	out, _ := structpb.NewStruct(map[string]any{"rotated": true})
	finished := operation("op-1", client.OperationSucceeded)
	finished.Output = out
	f.setOperation(finished)

	select {
	case r := <-done:
		if r.err != nil {
			t.Fatalf("WaitForOperation: %v", r.err)
		}
		if r.op.GetState() != client.OperationSucceeded || r.op.GetOutput().AsMap()["rotated"] != true {
			t.Fatalf("operation = %v, want succeeded with its output", r.op)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("WaitForOperation did not return after the operation succeeded")
	}
}

func TestWaitForOperationFailedIsNotAnError(t *testing.T) {
	f, url := newFake(t)
	failed := operation("op-2", client.OperationFailed)
	failed.Message = "input.keys: must be at least 1"
	f.setOperation(failed)
	op, err := client.New(url).WaitForOperation(testContext(t), "op-2")
	if err != nil {
		t.Fatalf("WaitForOperation: %v", err)
	}
	if op.GetState() != client.OperationFailed || op.GetMessage() != failed.Message {
		t.Fatalf("operation = %v, want the failed one", op)
	}
}

func TestWaitForOperationUnknown(t *testing.T) {
	_, url := newFake(t)
	_, err := client.New(url).WaitForOperation(testContext(t), "nope")
	if connect.CodeOf(err) != connect.CodeNotFound {
		t.Fatalf("err = %v, want not_found", err)
	}
	_, err = client.New(url).WaitForOperation(testContext(t), "")
	if connect.CodeOf(err) != connect.CodeInvalidArgument {
		t.Fatalf("err = %v, want invalid_argument for an empty id", err)
	}
}

func TestWaitForOperationEndedReturnsLastSeen(t *testing.T) {
	f, url := newFake(t)
	f.setOperation(operation("op-3", client.OperationRunning))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	type result struct {
		op  *convergev1.Operation
		err error
	}
	done := make(chan result, 1)
	go func() {
		op, err := client.New(url).WaitForOperation(ctx, "op-3", client.WithPollInterval(20*time.Millisecond))
		done <- result{op, err}
	}()
	f.waitGet(t)
	f.waitGet(t) // the second read starts after the first one was seen
	cancel()
	select {
	case r := <-done:
		if !errors.Is(r.err, context.Canceled) {
			t.Fatalf("err = %v, want one wrapping context.Canceled", r.err)
		}
		if r.op.GetState() != client.OperationRunning {
			t.Fatalf("last seen = %v, want the running operation", r.op)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("WaitForOperation did not return when its context ended")
	}
}

func TestOperationFinished(t *testing.T) {
	for state, want := range map[string]bool{
		client.OperationPending: false, client.OperationRunning: false,
		client.OperationSucceeded: true, client.OperationFailed: true, "": false,
	} {
		if got := client.OperationFinished(&convergev1.Operation{State: state}); got != want {
			t.Errorf("OperationFinished(%q) = %v, want %v", state, got, want)
		}
	}
	if client.OperationFinished(nil) {
		t.Error("a nil operation has not finished")
	}
}

// A forced reconcile of a Ready resource changes no phase, so nothing
// arrives on the Watch stream: only polling sees it.
func TestWaitForPollsWhenNoChangeArrives(t *testing.T) {
	f, url := newFake(t)
	before := resource("hello", client.PhaseReady)
	before.Reconciles = 1
	f.put(before)
	c := client.New(url)

	errc := make(chan error, 1)
	go func() {
		_, err := c.WaitFor(testContext(t), "", "greeting", "hello", func(r *convergev1.Resource) bool {
			return r.GetReconciles() > 1
		}, client.WithPollInterval(50*time.Millisecond))
		errc <- err
	}()
	f.waitRegistered(t)
	f.waitGet(t) // the first read saw one reconcile
	after := resource("hello", client.PhaseReady)
	after.Reconciles = 2
	f.quietly(after)
	select {
	case err := <-errc:
		if err != nil {
			t.Fatalf("WaitFor: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("WaitFor did not poll the resource")
	}
}
