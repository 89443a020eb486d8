package app_test

import (
	"context"
	"strings"
	"testing"
	"time"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
	"github.com/convergehq/converge/sdk-go/gen/converge/v1/convergev1connect"
	"github.com/convergehq/converge/server/internal/app"
	"github.com/convergehq/converge/server/internal/store"
	"github.com/convergehq/converge/server/internal/testkit"
)

func explain(t *testing.T, ctl convergev1connect.ControlServiceClient, kind, name string) *convergev1.ExplainResourceResponse {
	t.Helper()
	resp, err := ctl.ExplainResource(context.Background(), &convergev1.ExplainResourceRequest{Kind: kind, Name: name})
	if err != nil {
		t.Fatalf("explain %s/%s: %v", kind, name, err)
	}
	return resp
}

// explainsAs waits until explain names exactly one cause, on resource
// name, with reason (and a message holding says, if given); it returns
// that cause.
func explainsAs(t *testing.T, ctl convergev1connect.ControlServiceClient, kind, name, causeName, reason string, says ...string) *convergev1.Cause {
	t.Helper()
	var last *convergev1.ExplainResourceResponse
	var got *convergev1.Cause
	testkit.Eventually(t, kind+"/"+name+" explained by "+reason+" on "+causeName, func() bool {
		last = explain(t, ctl, kind, name)
		cs := last.GetCauses()
		if len(cs) == 1 && cs[0].GetResource().GetName() == causeName && cs[0].GetReason() == reason &&
			(len(says) == 0 || strings.Contains(cs[0].GetMessage(), says[0])) {
			got = cs[0]
			return true
		}
		return false
	})
	if got == nil {
		t.Fatalf("explain %s/%s = %v", kind, name, last)
	}
	return got
}

// TestExplainNamesALeafsOwnCause: explain on a leaf names the scheduler's
// reason for each way it can be held (no worker, running, the kind's cap,
// a retry backoff, a terminal failure, quarantine) with its evidence and
// what would unblock it; a Ready resource has no cause.
func TestExplainNamesALeafsOwnCause(t *testing.T) {
	base, _, ctl := serverWith(t, func(c *app.Config) { c.Broker.Backoff = store.Backoff{Base: time.Minute, Max: time.Minute} })
	wrk := convergev1connect.NewWorkerServiceClient(testkit.H2C(), base)
	applyGreeting(t, ctl)
	setPolicy(t, ctl, "greeting", &convergev1.KindPolicy{MaxInflight: 1}, "max_inflight")

	applyResource(t, ctl, "a", map[string]any{"name": "A"})
	c := explainsAs(t, ctl, "greeting", "a", "a", "NoWorker")
	if !strings.Contains(c.GetUnblock(), "start a worker that serves kind greeting v1") || len(c.GetPath()) != 0 {
		t.Errorf("no worker: %v", c)
	}

	w, _ := connectWorker(t, wrk, 2)
	first := w.Task()
	applyResource(t, ctl, "b", map[string]any{"name": "B"})
	explainsAs(t, ctl, "greeting", "a", "a", "Reconciling")
	c = explainsAs(t, ctl, "greeting", "b", "b", "CapReached")
	if !strings.Contains(c.GetUnblock(), "conctl kind policy greeting/1 --set max_inflight=") {
		t.Errorf("cap: %v", c)
	}

	// A transient failure waits out its backoff (a minute here); the slot
	// it freed goes to b.
	w.Send(&convergev1.WorkerMessage{Msg: &convergev1.WorkerMessage_Results{Results: &convergev1.Results{Results: []*convergev1.TaskResult{{
		Lease: first.GetLease(), Outcome: &convergev1.TaskResult_Error{Error: &convergev1.TaskError{Message: "the API is slow"}}}}}}})
	w.Ack()
	c = explainsAs(t, ctl, "greeting", "a", "a", "ReconcileError")
	if !strings.Contains(c.GetMessage(), "the API is slow") || c.GetUntil() == nil || time.Until(c.GetUntil().AsTime()) < 30*time.Second {
		t.Errorf("backoff: %v; want the failure and a retry time about a minute ahead", c)
	}
	second := w.Task()
	w.Send(&convergev1.WorkerMessage{Msg: &convergev1.WorkerMessage_Results{Results: &convergev1.Results{Results: []*convergev1.TaskResult{{
		Lease: second.GetLease(), Outcome: &convergev1.TaskResult_Error{Error: &convergev1.TaskError{Message: "no such region", Terminal: true}}}}}}})
	w.Ack()
	c = explainsAs(t, ctl, "greeting", "b", "b", "TerminalError")
	if !strings.Contains(c.GetMessage(), "no such region") || !strings.Contains(c.GetUnblock(), "apply it again") {
		t.Errorf("terminal: %v", c)
	}

	if _, err := ctl.QuarantineResource(context.Background(), &convergev1.QuarantineResourceRequest{Kind: "greeting", Name: "b", Reason: "investigating"}); err != nil {
		t.Fatal(err)
	}
	c = explainsAs(t, ctl, "greeting", "b", "b", "Quarantined")
	if !strings.Contains(c.GetUnblock(), "conctl unquarantine greeting/b") {
		t.Errorf("quarantine: %v", c)
	}

	applyResource(t, ctl, "ok", map[string]any{"name": "OK"})
	done := w.Task()
	w.Result(done.GetLease(), `{"message":"hi"}`)
	w.Ack()
	testkit.Eventually(t, "ok Ready with nothing to explain", func() bool {
		e := explain(t, ctl, "greeting", "ok")
		return e.GetPhase() == "Ready" && len(e.GetCauses()) == 0
	})
}

// TestExplainFollowsChildrenAndDependencies: a composite whose child
// failed and whose other child waits on it (through a flow) is explained
// by the failed child alone, reached through the composite.
func TestExplainFollowsChildrenAndDependencies(t *testing.T) {
	_, ctl, wrk := server(t)
	applyStackKinds(t, ctl, 0)
	if _, err := ctl.ApplyResource(context.Background(), &convergev1.ApplyResourceRequest{Kind: "stack", KindVersion: 1, Name: "s"}); err != nil {
		t.Fatal(err)
	}
	w := stackWorker(t, wrk)
	compose := w.Task()
	w.Compose(compose.GetLease(), &convergev1.Composition{
		Children: []*convergev1.Child{child("s-a", `{}`), child("s-b", `{}`), child("s-c", `{}`)},
		Edges:    []*convergev1.Edge{edge("s-b", "s-a", &convergev1.Flow{Source: &convergev1.Flow_From{From: "/id"}, To: "/upstream"})},
	})
	w.Ack()
	got := map[string]*convergev1.Task{}
	for len(got) < 2 {
		tk := w.Task()
		got[tk.GetResource().GetName()] = tk
	}
	w.Result(got["s-c"].GetLease(), `{}`)
	w.Send(&convergev1.WorkerMessage{Msg: &convergev1.WorkerMessage_Results{Results: &convergev1.Results{Results: []*convergev1.TaskResult{{
		Lease: got["s-a"].GetLease(), Outcome: &convergev1.TaskResult_Error{Error: &convergev1.TaskError{Message: "quota exceeded", Terminal: true}}}}}}})

	// Through the composite: the failed child, and nothing else (its
	// dependent waits on the same child).
	c := explainsAs(t, ctl, "stack", "s", "s-a", "TerminalError")
	if len(c.GetPath()) != 1 || c.GetPath()[0].GetName() != "s" || strings.Join(c.GetVia(), ",") != "child" ||
		!strings.Contains(c.GetMessage(), "quota exceeded") {
		t.Errorf("cause through the composite: %v", c)
	}
	// From the dependent: through its dependency.
	c = explainsAs(t, ctl, "part", "s-b", "s-a", "TerminalError")
	if len(c.GetPath()) != 1 || c.GetPath()[0].GetName() != "s-b" || strings.Join(c.GetVia(), ",") != "dependency" {
		t.Errorf("cause through the dependency: %v", c)
	}
}

// TestExplainWorkersNotReady: work whose only worker reports itself not
// ready is explained by the worker's own reason.
func TestExplainWorkersNotReady(t *testing.T) {
	_, ctl, wrk := server(t)
	ctx := context.Background()
	applyCloudKind(t, ctl)
	w, _ := connectWorkerServing(t, wrk, 4, cloudReactions)
	w.NextConfig()
	ready(w, "reconcile", false, "no credentials for the cloud yet")
	waitNotReady(t, ctl, "reconcile", "no credentials for the cloud yet")
	if _, err := ctl.ApplyResource(ctx, &convergev1.ApplyResourceRequest{Kind: "cloud", KindVersion: 1, Name: "a",
		Spec: mustStruct(t, map[string]any{})}); err != nil {
		t.Fatal(err)
	}
	c := explainsAs(t, ctl, "cloud", "a", "a", "NotReady")
	if !strings.Contains(c.GetMessage(), "no credentials for the cloud yet") {
		t.Errorf("not ready: %v", c)
	}
}

// TestExplainFlowsAndOrphans: a dependent whose dependency is Ready but
// lacks the value that flows from it is explained by its own wait, naming
// the value; a child its composite no longer emits is explained as an
// orphan with its grace deadline.
func TestExplainFlowsAndOrphans(t *testing.T) {
	_, ctl, wrk := server(t)
	applyStackKinds(t, ctl, 600)
	if _, err := ctl.ApplyResource(context.Background(), &convergev1.ApplyResourceRequest{Kind: "stack", KindVersion: 1, Name: "s"}); err != nil {
		t.Fatal(err)
	}
	w := stackWorker(t, wrk)
	compose := w.Task()
	w.Compose(compose.GetLease(), &convergev1.Composition{
		Children: []*convergev1.Child{child("s-a", `{}`), child("s-b", `{}`)},
		Edges:    []*convergev1.Edge{edge("s-b", "s-a", &convergev1.Flow{Source: &convergev1.Flow_From{From: "/id"}, To: "/upstream"})},
	})
	w.Ack()
	a := w.Task()
	w.Result(a.GetLease(), `{}`) // Ready, but without the id s-b needs
	w.Ack()
	c := explainsAs(t, ctl, "stack", "s", "s-b", "Waiting", "/id")
	if strings.Join(c.GetVia(), ",") != "child" {
		t.Errorf("waiting for a value: %v", c)
	}

	if _, err := ctl.ApplyResource(context.Background(), &convergev1.ApplyResourceRequest{Kind: "stack", KindVersion: 1, Name: "s",
		Spec: mustStruct(t, map[string]any{"v": 2})}); err != nil {
		t.Fatal(err)
	}
	compose = w.Task()
	w.Compose(compose.GetLease(), &convergev1.Composition{Children: []*convergev1.Child{child("s-b", `{}`)}})
	w.Ack()
	c = explainsAs(t, ctl, "part", "s-a", "s-a", "Orphaned")
	if c.GetUntil() == nil || time.Until(c.GetUntil().AsTime()) < 5*time.Minute {
		t.Errorf("orphan: %v; want its grace deadline about 10 minutes ahead", c)
	}
}

// TestExplainDeletionWaitingOnDependents: a composite being deleted is
// explained by the teardown its children wait on, followed from the
// composite through the dependency that waits for its dependent.
func TestExplainDeletionWaitingOnDependents(t *testing.T) {
	_, ctl, wrk := server(t)
	ctx := context.Background()
	for _, m := range []*convergev1.KindManifest{
		{Kind: "stack", KindVersion: 1, SpecSchema: mustStruct(t, map[string]any{"type": "object"}),
			Reactions: []*convergev1.Reaction{{Name: "compose", Trigger: "specChange", Emits: []string{"children", "edges", "status"}}}},
		{Kind: "vol", KindVersion: 1, SpecSchema: mustStruct(t, map[string]any{"type": "object"}), Finalizer: "example.com/vol",
			Reactions: []*convergev1.Reaction{
				{Name: "reconcile", Trigger: "specChange", Emits: []string{"status"}},
				{Name: "teardown", Trigger: "deleteRequested", Emits: []string{"finalizer"}}}},
	} {
		if _, err := ctl.ApplyKind(ctx, &convergev1.ApplyKindRequest{Manifest: m}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := ctl.ApplyResource(ctx, &convergev1.ApplyResourceRequest{Kind: "stack", KindVersion: 1, Name: "s"}); err != nil {
		t.Fatal(err)
	}
	w, _ := connectWorkerServing(t, wrk, 8, []*convergev1.ReactionRef{
		{Kind: "stack", KindVersion: 1, Reaction: "compose"},
		{Kind: "vol", KindVersion: 1, Reaction: "reconcile"}, {Kind: "vol", KindVersion: 1, Reaction: "teardown"}})
	compose := w.Task()
	vol := func(name string) *convergev1.ResourceRef { return &convergev1.ResourceRef{Kind: "vol", Name: name} }
	w.Compose(compose.GetLease(), &convergev1.Composition{
		Children: []*convergev1.Child{{Kind: "vol", KindVersion: 1, Name: "s-a"}, {Kind: "vol", KindVersion: 1, Name: "s-b"}},
		Edges:    []*convergev1.Edge{{Dependent: vol("s-b"), Dependency: vol("s-a")}},
	})
	w.Ack()
	for range 2 {
		tk := w.Task()
		w.Result(tk.GetLease(), `{}`)
		w.Ack()
	}
	testkit.Eventually(t, "s Ready", func() bool { return get(t, ctl, "stack", "s").GetPhase() == "Ready" })
	if _, err := ctl.DeleteResource(ctx, &convergev1.DeleteResourceRequest{Kind: "stack", Name: "s"}); err != nil {
		t.Fatal(err)
	}
	teardown := w.Task() // s-b's, the dependent's, first; held unanswered
	if teardown.GetResource().GetName() != "s-b" {
		t.Fatalf("first teardown = %v", teardown.GetResource())
	}
	c := explainsAs(t, ctl, "stack", "s", "s-b", "TearingDown")
	if strings.Join(c.GetVia(), ",") != "dependent,dependent" || len(c.GetPath()) != 2 || c.GetPath()[1].GetName() != "s-a" {
		t.Errorf("deletion: %v; want s -dependent-> s-a -dependent-> s-b", c)
	}
}
