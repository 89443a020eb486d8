package app_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"connectrpc.com/connect"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
	"github.com/convergehq/converge/sdk-go/gen/converge/v1/convergev1connect"
	"github.com/convergehq/converge/server/internal/testkit"
)

func applyCloudKind(t *testing.T, ctl convergev1connect.ControlServiceClient) {
	t.Helper()
	_, err := ctl.ApplyKind(context.Background(), &convergev1.ApplyKindRequest{Manifest: &convergev1.KindManifest{
		Kind: "cloud", KindVersion: 1, SpecSchema: mustStruct(t, map[string]any{"type": "object"}),
		ConfigSchema: mustStruct(t, map[string]any{"type": "object", "required": []any{"region"},
			"properties": map[string]any{"region": map[string]any{"type": "string"}, "tier": map[string]any{"type": "string"}}}),
		Reactions: []*convergev1.Reaction{
			{Name: "reconcile", Trigger: "specChange", Emits: []string{"status"}},
			{Name: "restart", Trigger: "operation", Verb: "restart", Emits: []string{"operationOutput"}},
		},
		Operations: []*convergev1.OperationDecl{{Verb: "restart", InputSchema: mustStruct(t, map[string]any{
			"type": "object", "properties": map[string]any{"force": map[string]any{"type": "boolean"}}})}},
	}})
	if err != nil {
		t.Fatal(err)
	}
}

var cloudReactions = []*convergev1.ReactionRef{
	{Kind: "cloud", KindVersion: 1, Reaction: "reconcile"},
	{Kind: "cloud", KindVersion: 1, Reaction: "restart"},
}

func applyConfig(t *testing.T, ctl convergev1connect.ControlServiceClient, name string, config map[string]any) {
	t.Helper()
	if _, err := ctl.ApplyProviderConfig(context.Background(), &convergev1.ApplyProviderConfigRequest{Config: &convergev1.ProviderConfig{
		Kind: "cloud", KindVersion: 1, Name: name, Config: mustStruct(t, config)}}); err != nil {
		t.Fatalf("provider config %s: %v", name, err)
	}
}

func ready(w *rawWorker, reaction string, ok bool, reason string) {
	w.Send(&convergev1.WorkerMessage{Msg: &convergev1.WorkerMessage_Readiness{Readiness: &convergev1.Readiness{
		Reactions: []*convergev1.ReactionReadiness{{
			Reaction: &convergev1.ReactionRef{Kind: "cloud", KindVersion: 1, Reaction: reaction}, Ready: ok, Reason: reason}},
	}}})
}

// waitNotReady waits until the cluster shows a worker not ready for
// reaction, saying why: the readiness message travels apart from later
// applies, and until the broker has taken it in, it may still claim
// tasks for the worker.
func waitNotReady(t *testing.T, ctl convergev1connect.ControlServiceClient, reaction, why string) {
	t.Helper()
	testkit.Eventually(t, "the cluster to show the worker not ready", func() bool {
		res, err := ctl.GetCluster(context.Background(), &convergev1.GetClusterRequest{})
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range res.GetMembers() {
			for _, s := range m.GetServed() {
				if s.GetReaction() == reaction && s.GetNotReady() == why {
					return true
				}
			}
		}
		return false
	})
}

// TestProviderConfigsReachWorkersAndReadinessParks: a worker not ready for
// want of a default config gets no tasks and the resource says why; the
// default, once applied, is pushed to it; tasks carry the effective
// config (the default under a named one).
func TestProviderConfigsReachWorkersAndReadinessParks(t *testing.T) {
	_, ctl, wrk := server(t)
	ctx := context.Background()
	applyCloudKind(t, ctl)
	w, _ := connectWorkerServing(t, wrk, 4, cloudReactions)
	if c := w.NextConfig(); c.GetKind() != "cloud" || len(c.GetConfig()) != 0 || c.GetRevision() != 0 {
		t.Fatalf("first pushed config = %v; want cloud v1 with none yet", c)
	}
	ready(w, "reconcile", false, "no default provider config yet")
	waitNotReady(t, ctl, "reconcile", "no default provider config yet")
	if _, err := ctl.ApplyResource(ctx, &convergev1.ApplyResourceRequest{Kind: "cloud", KindVersion: 1, Name: "a",
		Spec: mustStruct(t, map[string]any{})}); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, "the resource to say its workers are not ready", func() bool {
		return hasConditionMessage(get(t, ctl, "cloud", "a"), "WorkerAvailable", "workers not ready: no default provider config yet (kind cloud v1")
	})

	applyConfig(t, ctl, "default", map[string]any{"region": "eu-west-1", "tier": "small"})
	if c := w.NextConfig(); string(c.GetConfig()) == "" || c.GetRevision() != 1 {
		t.Fatalf("pushed config = %v; want the default at revision 1", c)
	}
	ready(w, "reconcile", true, "")
	task := w.Task()
	var cfg map[string]any
	if err := json.Unmarshal(task.GetConfig(), &cfg); err != nil || cfg["region"] != "eu-west-1" {
		t.Fatalf("task config = %s, %v; want the default", task.GetConfig(), err)
	}
	w.Result(task.GetLease(), `{}`)
	testkit.Eventually(t, "a Ready", func() bool { return get(t, ctl, "cloud", "a").GetPhase() == "Ready" })

	// A named config overrides the default's keys; it must be valid merged.
	applyConfig(t, ctl, "us", map[string]any{"region": "us-east-1"})
	if _, err := ctl.ApplyResource(ctx, &convergev1.ApplyResourceRequest{Kind: "cloud", KindVersion: 1, Name: "b",
		Spec: mustStruct(t, map[string]any{}), ProviderConfig: "us"}); err != nil {
		t.Fatal(err)
	}
	// a may run once more first: the default's arrival requeues the kind's
	// resources, and that can land after a's first reconcile.
	for task = w.Task(); task.GetResource().GetName() != "b"; task = w.Task() {
		w.Result(task.GetLease(), `{}`)
	}
	if err := json.Unmarshal(task.GetConfig(), &cfg); err != nil || cfg["region"] != "us-east-1" || cfg["tier"] != "small" {
		t.Fatalf("task config = %s; want region from us over the default's tier", task.GetConfig())
	}
	w.Result(task.GetLease(), `{}`)
	_, err := ctl.ApplyProviderConfig(ctx, &convergev1.ApplyProviderConfigRequest{Config: &convergev1.ProviderConfig{
		Kind: "cloud", KindVersion: 1, Name: "default", Config: mustStruct(t, map[string]any{"region": 5})}})
	if code(err) != connect.CodeInvalidArgument || !strings.Contains(err.Error(), "region") {
		t.Errorf("a config violating config_schema: %v; want InvalidArgument naming region", err)
	}
	// An edit of the default is pushed live.
	applyConfig(t, ctl, "default", map[string]any{"region": "eu-central-1"})
	if c := w.NextConfig(); !strings.Contains(string(c.GetConfig()), "eu-central-1") || c.GetRevision() != 2 {
		t.Fatalf("pushed config after the edit = %s rev %d", c.GetConfig(), c.GetRevision())
	}
}

// TestOperationsRunOnWorkers: an invoked verb reaches the worker serving
// it, with its input; the output lands on the operation; a terminal
// failure fails it.
func TestOperationsRunOnWorkers(t *testing.T) {
	_, ctl, wrk := server(t)
	ctx := context.Background()
	applyCloudKind(t, ctl)
	w, _ := connectWorkerServing(t, wrk, 4, cloudReactions)
	if _, err := ctl.ApplyResource(ctx, &convergev1.ApplyResourceRequest{Kind: "cloud", KindVersion: 1, Name: "a",
		Spec: mustStruct(t, map[string]any{})}); err != nil {
		t.Fatal(err)
	}
	task := w.Task()
	w.Result(task.GetLease(), `{}`)
	testkit.Eventually(t, "a Ready", func() bool { return get(t, ctl, "cloud", "a").GetPhase() == "Ready" })

	invoke := func(input map[string]any) *convergev1.Operation {
		resp, err := ctl.InvokeOperation(ctx, &convergev1.InvokeOperationRequest{Kind: "cloud", Name: "a", Verb: "restart",
			Input: mustStruct(t, input), Reason: "test"})
		if err != nil {
			t.Fatal(err)
		}
		return resp.GetOperation()
	}
	op := invoke(map[string]any{"force": true})
	task = w.Task()
	if task.GetTrigger() != "operation" || task.GetReaction() != "restart" || task.GetOperation().GetId() != op.GetId() ||
		!jsonHas(task.GetOperation().GetInput(), "force", true) || task.GetResource().GetName() != "a" {
		t.Fatalf("operation task = %v", task)
	}
	w.Send(&convergev1.WorkerMessage{Msg: &convergev1.WorkerMessage_Results{Results: &convergev1.Results{
		Results: []*convergev1.TaskResult{{Lease: task.GetLease(), Outcome: &convergev1.TaskResult_Success{
			Success: &convergev1.Success{OperationOutput: []byte(`{"restarted":1}`)}}}}}}})
	var got *convergev1.Operation
	testkit.Eventually(t, "the operation to succeed", func() bool {
		resp, err := ctl.GetOperation(ctx, &convergev1.GetOperationRequest{Id: op.GetId()})
		if err != nil {
			t.Fatal(err)
		}
		got = resp.GetOperation()
		return got.GetState() == "succeeded"
	})
	if got.GetOutput().GetFields()["restarted"].GetNumberValue() != 1 || got.GetAttempts() != 1 || got.GetFinishedAt() == nil {
		t.Errorf("succeeded operation = %v", got)
	}
	if r := get(t, ctl, "cloud", "a"); r.GetPhase() != "Ready" || r.GetGeneration() != 1 {
		t.Errorf("an operation changed the resource: %s gen %d", r.GetPhase(), r.GetGeneration())
	}

	op = invoke(map[string]any{})
	task = w.Task()
	w.Send(&convergev1.WorkerMessage{Msg: &convergev1.WorkerMessage_Results{Results: &convergev1.Results{
		Results: []*convergev1.TaskResult{{Lease: task.GetLease(), Outcome: &convergev1.TaskResult_Error{
			Error: &convergev1.TaskError{Message: "the database refused", Terminal: true}}}}}}})
	testkit.Eventually(t, "the operation to fail", func() bool {
		resp, err := ctl.GetOperation(ctx, &convergev1.GetOperationRequest{Id: op.GetId()})
		if err != nil {
			t.Fatal(err)
		}
		got = resp.GetOperation()
		return got.GetState() == "failed"
	})
	if got.GetMessage() != "the database refused" {
		t.Errorf("failed operation message = %q", got.GetMessage())
	}
	if r := get(t, ctl, "cloud", "a"); r.GetPhase() != "Ready" {
		t.Errorf("a failed operation changed the resource's phase to %s", r.GetPhase())
	}
	// Deleting the resource fails operations still queued on it.
	op = invoke(map[string]any{})
	w.Close()
	if _, err := ctl.DeleteResource(ctx, &convergev1.DeleteResourceRequest{Kind: "cloud", Name: "a"}); err != nil {
		t.Fatal(err)
	}
	failed := testkit.Poll(t, "the operation on a deleted resource to fail", func() *convergev1.Operation {
		resp, err := ctl.GetOperation(ctx, &convergev1.GetOperationRequest{Id: op.GetId()})
		if err != nil {
			t.Fatal(err)
		}
		return resp.GetOperation()
	}, func(o *convergev1.Operation) bool { return o.GetState() == "failed" })
	if !strings.Contains(failed.GetMessage(), "deleted") {
		t.Errorf("message = %q", failed.GetMessage())
	}
}

func jsonHas(raw []byte, key string, want any) bool {
	var m map[string]any
	return json.Unmarshal(raw, &m) == nil && m[key] == want
}
