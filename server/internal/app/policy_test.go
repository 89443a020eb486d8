package app_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/fieldmaskpb"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
	"github.com/convergehq/converge/sdk-go/gen/converge/v1/convergev1connect"
	"github.com/convergehq/converge/server/internal/app"
	"github.com/convergehq/converge/server/internal/broker"
	"github.com/convergehq/converge/server/internal/pgtest"
	"github.com/convergehq/converge/server/internal/store"
	"github.com/convergehq/converge/server/internal/testkit"
)

func setPolicy(t *testing.T, ctl convergev1connect.ControlServiceClient, kind string, p *convergev1.KindPolicy, fields ...string) *convergev1.KindManifest {
	t.Helper()
	resp, err := ctl.UpdateKindPolicy(context.Background(), &convergev1.UpdateKindPolicyRequest{
		Kind: kind, KindVersion: 1, Policy: p, UpdateMask: &fieldmaskpb.FieldMask{Paths: fields}})
	if err != nil {
		t.Fatalf("UpdateKindPolicy %s %v: %v", kind, fields, err)
	}
	return resp.GetManifest()
}

func TestUpdateKindPolicyIsLiveAndKeepsTheRevision(t *testing.T) {
	_, ctl, _ := server(t)
	applyGreeting(t, ctl)
	before := mustGetKind(t, ctl)
	m := setPolicy(t, ctl, "greeting", &convergev1.KindPolicy{MaxInflight: 7, TaskDeadlineSeconds: 99}, "max_inflight")
	if m.GetPolicy().GetMaxInflight() != 7 || m.GetPolicy().GetTaskDeadlineSeconds() != 0 {
		t.Errorf("policy = %v; want only max_inflight changed (the mask names it alone)", m.GetPolicy())
	}
	if m.GetRevision() != before.GetRevision() {
		t.Errorf("revision %d → %d; a policy edit must not change the manifest revision", before.GetRevision(), m.GetRevision())
	}
	_, err := ctl.UpdateKindPolicy(context.Background(), &convergev1.UpdateKindPolicyRequest{
		Kind: "greeting", KindVersion: 1, Policy: &convergev1.KindPolicy{}, UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{"max_inflights"}}})
	if code(err) != connect.CodeInvalidArgument || !strings.Contains(err.Error(), `"max_inflights" is not a policy field`) {
		t.Errorf("unknown mask path: %v; want InvalidArgument naming it", err)
	}
	_, err = ctl.UpdateKindPolicy(context.Background(), &convergev1.UpdateKindPolicyRequest{
		Kind: "nope", KindVersion: 1, Policy: &convergev1.KindPolicy{}})
	if code(err) != connect.CodeNotFound {
		t.Errorf("missing kind: %v; want NotFound", err)
	}
}

func TestUpdateKindPolicyChecksTheManifestRules(t *testing.T) {
	_, ctl, _ := server(t)
	_, err := ctl.ApplyKind(context.Background(), &convergev1.ApplyKindRequest{Manifest: &convergev1.KindManifest{
		Kind: "probe", KindVersion: 1, SpecSchema: mustStruct(t, map[string]any{"type": "object"}),
		Reactions: []*convergev1.Reaction{
			{Name: "reconcile", Trigger: "specChange", Emits: []string{"status"}},
			{Name: "observe", Trigger: "resync", Emits: []string{"status"}},
		},
		Policy: &convergev1.KindPolicy{ResyncIntervalSeconds: 60},
	}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = ctl.UpdateKindPolicy(context.Background(), &convergev1.UpdateKindPolicyRequest{
		Kind: "probe", KindVersion: 1, Policy: &convergev1.KindPolicy{}, UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{"resync_interval_seconds"}}})
	if code(err) != connect.CodeInvalidArgument || !strings.Contains(err.Error(), "resync needs policy.resync_interval_seconds") {
		t.Errorf("turning resync off under a resync reaction: %v; want InvalidArgument naming the rule", err)
	}
}

// TestResyncReobservesAndDemotesTheRoot enables resync live on a leaf kind
// under a composite: settled children are re-observed with no generation
// bump, and an unhealthy report demotes the child and its root at once.
func TestResyncReobservesAndDemotesTheRoot(t *testing.T) {
	_, ctl, wrk := server(t)
	ctx := context.Background()
	applyStackKinds(t, ctl, 0)
	w := stackWorker(t, wrk)
	if _, err := ctl.ApplyResource(ctx, &convergev1.ApplyResourceRequest{Kind: "stack", KindVersion: 1, Name: "s",
		Spec: mustStruct(t, map[string]any{})}); err != nil {
		t.Fatal(err)
	}
	task := w.Task()
	w.Compose(task.GetLease(), &convergev1.Composition{Children: []*convergev1.Child{child("a", `{}`)}})
	task = w.Task()
	if task.GetTrigger() != "specChange" || task.GetResource().GetName() != "a" {
		t.Fatalf("task = %s %s; want the child's specChange", task.GetTrigger(), task.GetResource().GetName())
	}
	w.Result(task.GetLease(), `{}`)
	testkit.Eventually(t, "stack Ready", func() bool { return get(t, ctl, "stack", "s").GetPhase() == "Ready" })

	setPolicy(t, ctl, "part", &convergev1.KindPolicy{ResyncIntervalSeconds: 1}, "resync_interval_seconds")
	gen := get(t, ctl, "part", "a").GetGeneration()
	task = w.Task()
	if task.GetTrigger() != "resync" || task.GetReaction() != "reconcile" || task.GetResource().GetGeneration() != gen {
		t.Fatalf("task = %s/%s at generation %d; want a resync run by the specChange reaction at %d",
			task.GetTrigger(), task.GetReaction(), task.GetResource().GetGeneration(), gen)
	}
	w.Send(&convergev1.WorkerMessage{Msg: &convergev1.WorkerMessage_Results{Results: &convergev1.Results{
		Results: []*convergev1.TaskResult{{Lease: task.GetLease(), Outcome: &convergev1.TaskResult_Success{
			Success: &convergev1.Success{Status: []byte(`{"drift":true}`), Unhealthy: true}}}}}}})
	testkit.Eventually(t, "child and root Degraded", func() bool {
		return get(t, ctl, "part", "a").GetPhase() == "Degraded" && get(t, ctl, "stack", "s").GetPhase() == "Degraded"
	})
	if a := get(t, ctl, "part", "a"); a.GetGeneration() != gen {
		t.Errorf("generation %d after a resync; want %d (a resync never bumps it)", a.GetGeneration(), gen)
	}
	// The next resync finds it healthy again.
	task = w.Task()
	if task.GetTrigger() != "resync" {
		t.Fatalf("task = %s; want the next resync", task.GetTrigger())
	}
	w.Result(task.GetLease(), `{}`)
	testkit.Eventually(t, "root Ready again", func() bool { return get(t, ctl, "stack", "s").GetPhase() == "Ready" })
}

// held is a task and the worker running it.
type held struct {
	w    *rawWorker
	task *convergev1.Task
}

// taskStream reads raw workers' tasks in the background.
func taskStream(ws ...*rawWorker) <-chan held {
	out := make(chan held, 1024)
	for _, w := range ws {
		go func() {
			for {
				m, err := w.Receive()
				if err != nil {
					return
				}
				for _, t := range m.GetTasks().GetTasks() {
					out <- held{w, t}
				}
			}
		}()
	}
	return out
}

// TestMaxInflightHoldsAcrossReplicas runs two replicas over one database,
// each with a worker of capacity 5, and a kind capped at 2 in flight. The
// lease is long so that a task held through the 2 s watch is never handed
// out again because a loaded machine renewed its lease late.
func TestMaxInflightHoldsAcrossReplicas(t *testing.T) {
	db := pgtest.New(t)
	start := func() (convergev1connect.ControlServiceClient, convergev1connect.WorkerServiceClient) {
		a, err := app.Start(context.Background(), app.Config{
			DatabaseURL: db.URL, Listen: "127.0.0.1:0", Role: app.RoleAll,
			Broker: broker.Config{Lease: 20 * time.Second, HeartbeatInterval: 200 * time.Millisecond,
				PollInterval: 100 * time.Millisecond, Backoff: store.Backoff{Base: 50 * time.Millisecond, Max: 200 * time.Millisecond}},
			Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = a.Stop() })
		base := "http://" + a.Addr().String()
		return convergev1connect.NewControlServiceClient(http.DefaultClient, base), convergev1connect.NewWorkerServiceClient(testkit.H2C(), base)
	}
	ctl, wrk1 := start()
	_, wrk2 := start()
	applyGreeting(t, ctl)
	setPolicy(t, ctl, "greeting", &convergev1.KindPolicy{MaxInflight: 2}, "max_inflight")
	w1, _ := connectWorker(t, wrk1, 5)
	w2, _ := connectWorker(t, wrk2, 5)
	tasks := taskStream(w1, w2)
	for i := range 6 {
		applyResource(t, ctl, fmt.Sprintf("g%d", i), map[string]any{"name": "x"})
	}
	next := func() held {
		t.Helper()
		return testkit.Receive(t, tasks, "a task")
	}
	running := []held{next(), next()}
	// Twenty claim rounds on each replica (polls every 100 ms) hand out no
	// third task while two are in flight.
	select {
	case h := <-tasks:
		t.Fatalf("a third task (%s) was handed out while 2 were in flight under max_inflight 2", h.task.GetResource().GetName())
	case <-time.After(2 * time.Second):
	}
	// Finishing one frees exactly one slot: all six get done, two at a time.
	for done := 1; done <= 6; done++ {
		h := running[0]
		running = running[1:]
		h.w.Result(h.task.GetLease(), `{"message":"ok"}`)
		if done+len(running) < 6 {
			running = append(running, next())
		}
		if len(running) > 2 {
			t.Fatalf("%d tasks in flight under max_inflight 2", len(running))
		}
	}
	for i := range 6 {
		waitPhase(t, ctl, fmt.Sprintf("g%d", i), "Ready")
	}
}

// TestStabilityGate re-applies an existing kind version: additive changes
// are accepted, breaking ones refused with 409 naming every path and why.
func TestStabilityGate(t *testing.T) {
	_, ctl, _ := server(t)
	ctx := context.Background()
	base := func() map[string]any {
		return map[string]any{"type": "object", "required": []any{"name"}, "properties": map[string]any{
			"name": map[string]any{"type": "string"},
			"size": map[string]any{"type": "integer", "maximum": 10},
			"tier": map[string]any{"type": "string", "enum": []any{"a", "b"}},
		}}
	}
	apply := func(spec map[string]any) (*convergev1.ApplyKindResponse, error) {
		return ctl.ApplyKind(ctx, &convergev1.ApplyKindRequest{Manifest: &convergev1.KindManifest{
			Kind: "db", KindVersion: 1, SpecSchema: mustStruct(t, spec),
			Reactions: []*convergev1.Reaction{{Name: "reconcile", Trigger: "specChange", Emits: []string{"status"}}},
		}})
	}
	if _, err := apply(base()); err != nil {
		t.Fatal(err)
	}
	additive := base()
	additive["properties"].(map[string]any)["zone"] = map[string]any{"type": "string"}
	additive["properties"].(map[string]any)["size"] = map[string]any{"type": "integer", "maximum": 100}
	if resp, err := apply(additive); err != nil || resp.GetResult() != "configured" {
		t.Fatalf("additive change: %v, %v; want configured", resp.GetResult(), err)
	}
	breaking := base()
	props := breaking["properties"].(map[string]any)
	props["size"] = map[string]any{"type": "string"}
	props["tier"] = map[string]any{"type": "string", "enum": []any{"a"}}
	props["name"] = map[string]any{"type": "string", "pattern": "^[a-z]+$"}
	breaking["required"] = []any{"name", "zone"}
	props["zone"] = map[string]any{"type": "string"}
	_, err := apply(breaking)
	if code(err) != connect.CodeAlreadyExists {
		t.Fatalf("breaking change: %v; want AlreadyExists (409)", err)
	}
	for _, want := range []string{"spec_schema /size: retyped", "spec_schema /tier: enum-restricted",
		"spec_schema /name: pattern-added", "spec_schema /zone: newly-required"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("refusal does not name %q:\n%v", want, err)
		}
	}
	// The refused apply left the stored version as it was.
	got, err := ctl.GetKind(ctx, &convergev1.GetKindRequest{Kind: "db", KindVersion: 1})
	if err != nil {
		t.Fatal(err)
	}
	size := got.GetManifest().GetSpecSchema().GetFields()["properties"].GetStructValue().GetFields()["size"]
	if typ := size.GetStructValue().GetFields()["type"].GetStringValue(); typ != "integer" {
		t.Errorf("after the refusal, size is %q; want the stored integer", typ)
	}
}
