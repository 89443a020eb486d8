package broker_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"connectrpc.com/connect"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
	"github.com/convergehq/converge/server/internal/testkit"
)

// subscribeErr subscribes with reactions and returns the error the server
// ends the stream with, failing the test if it subscribes instead.
func subscribeErr(t *testing.T, e *env, reactions ...*convergev1.ReactionRef) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	stream, err := e.broker("b1").Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := stream.Send(&convergev1.WorkerMessage{Msg: &convergev1.WorkerMessage_Subscribe{Subscribe: &convergev1.Subscribe{
		WorkerName: "typo", Capacity: 1, Reactions: reactions}}}); err != nil {
		t.Fatal(err)
	}
	m, err := stream.Receive()
	if err == nil {
		t.Fatalf("the server answered %v; want the subscription refused", m)
	}
	return err
}

// A reaction the applied kind version does not declare is refused at
// subscribe, naming the kind version, the unknown reactions and the
// declared ones; a kind not applied yet is only a warning.
func TestSubscribingToAnUndeclaredReactionIsRefused(t *testing.T) {
	e := newEnv(t)
	err := subscribeErr(t, e,
		&convergev1.ReactionRef{Kind: "greeting", KindVersion: 1, Reaction: "reconcile"},
		&convergev1.ReactionRef{Kind: "greeting", KindVersion: 1, Reaction: "reconcle"},
		&convergev1.ReactionRef{Kind: "greeting", KindVersion: 1, Reaction: "delete"},
		&convergev1.ReactionRef{Kind: "later", KindVersion: 1, Reaction: "reconcile"})
	var cerr *connect.Error
	if !errors.As(err, &cerr) || cerr.Code() != connect.CodeFailedPrecondition {
		t.Fatalf("err = %v; want FailedPrecondition", err)
	}
	if want := `kind greeting v1 has no reactions "delete", "reconcle"; it declares: reconcile`; cerr.Message() != want {
		t.Fatalf("message = %q, want %q", cerr.Message(), want)
	}

	_, sub := testkit.Subscribe(t, e.broker("b2"), testkit.Subscription{Capacity: 1, Reactions: []*convergev1.ReactionRef{
		{Kind: "greeting", KindVersion: 1, Reaction: "reconcile"}, {Kind: "later", KindVersion: 1, Reaction: "reconcile"}}})
	if w := sub.GetWarnings(); len(w) != 1 || w[0] != "kind later v1 is not registered yet; its tasks will flow once its manifest is applied" {
		t.Fatalf("warnings = %q; want one for the kind not applied yet", w)
	}
}

// A kind applied after the broker last loaded its registry is seen before
// a subscription to it is judged: the refusal is not a stale view's.
func TestSubscriptionIsJudgedOnAFreshRegistry(t *testing.T) {
	e := newEnv(t)
	client := e.broker("b1")
	testkit.ApplyKind(t, e.st, &convergev1.KindManifest{
		Kind: "greeting", KindVersion: 1, SpecSchema: testkit.Object(t), StatusSchema: testkit.Object(t),
		Reactions: []*convergev1.Reaction{
			{Name: "reconcile", Trigger: "specChange", Emits: []string{"status"}},
			{Name: "delete", Trigger: "deleteRequested", Emits: []string{"finalizer"}},
		},
		Finalizer: "greeting.example/teardown",
	})
	_, sub := testkit.Subscribe(t, client, testkit.Subscription{Capacity: 1, Reactions: []*convergev1.ReactionRef{
		{Kind: "greeting", KindVersion: 1, Reaction: "delete"}}})
	if len(sub.GetWarnings()) != 0 {
		t.Fatalf("warnings = %q", sub.GetWarnings())
	}
}

// A task the worker releases is claimable again at once, by another
// worker, as the same attempt: giving it back is not a failure.
func TestReleasedTaskIsRedispatchedAtOnceWithoutAnAttempt(t *testing.T) {
	e := newEnv(t)
	e.apply("hello", `{"name":"world"}`)
	client := e.broker("b1")
	first, _ := e.worker(client, 1)
	task := first.Task()
	if task.GetAttempt() != 1 {
		t.Fatalf("first attempt = %d", task.GetAttempt())
	}
	second, _ := e.worker(client, 1)
	first.Send(&convergev1.WorkerMessage{Msg: &convergev1.WorkerMessage_Drain{Drain: &convergev1.Drain{}}})
	start := time.Now()
	first.Send(&convergev1.WorkerMessage{Msg: &convergev1.WorkerMessage_Release{Release: &convergev1.Release{
		Leases: []*convergev1.Lease{task.GetLease()}}}})
	again := second.Task()
	// The lease is 5 s; the release makes the task claimable at once.
	if took := time.Since(start); took > 2*time.Second {
		t.Fatalf("the released task reached the other worker after %s", took)
	}
	if again.GetLease().GetTaskId() != task.GetLease().GetTaskId() || again.GetLease().GetEpoch() == task.GetLease().GetEpoch() ||
		again.GetAttempt() != 1 {
		t.Fatalf("redispatched task = %v; want the same task, a new epoch, attempt 1", again)
	}
	if r := e.get("hello"); r.FailureMessage != nil || r.FailureAttempts != 0 {
		t.Fatalf("the release was counted as a failure: %+v", r)
	}
	// The old lease is gone: a late result for it is refused.
	first.Result(task.GetLease(), `{"message":"late"}`)
	if a := first.Ack(); a.GetApplied() {
		t.Fatalf("a result for a released lease was applied: %v", a)
	}
	second.Result(again.GetLease(), `{"message":"hello"}`)
	if a := second.Ack(); !a.GetApplied() {
		t.Fatalf("the new claim's result: %v", a)
	}
}
