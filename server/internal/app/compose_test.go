package app_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
	"github.com/convergehq/converge/sdk-go/gen/converge/v1/convergev1connect"
	"github.com/convergehq/converge/server/internal/testkit"
)

// applyStackKinds registers a composite kind "stack" (composer
// "compose") and a leaf kind "part" whose spec may carry "upstream".
func applyStackKinds(t *testing.T, ctl convergev1connect.ControlServiceClient, grace int32) {
	t.Helper()
	ctx := context.Background()
	for _, m := range []*convergev1.KindManifest{
		{Kind: "stack", KindVersion: 1,
			SpecSchema: mustStruct(t, map[string]any{"type": "object"}),
			Reactions:  []*convergev1.Reaction{{Name: "compose", Trigger: "specChange", Emits: []string{"children", "edges", "status"}}},
			Policy:     &convergev1.KindPolicy{OrphanGraceSeconds: grace}},
		{Kind: "part", KindVersion: 1,
			SpecSchema: mustStruct(t, map[string]any{"type": "object", "properties": map[string]any{
				"upstream": map[string]any{"type": "string"}, "n": map[string]any{"type": "integer"}}}),
			Reactions: []*convergev1.Reaction{{Name: "reconcile", Trigger: "specChange", Emits: []string{"status"}}}},
	} {
		if _, err := ctl.ApplyKind(ctx, &convergev1.ApplyKindRequest{Manifest: m}); err != nil {
			t.Fatal(err)
		}
	}
}

func stackWorker(t *testing.T, wrk convergev1connect.WorkerServiceClient) *rawWorker {
	t.Helper()
	w, _ := connectWorkerServing(t, wrk, 16, []*convergev1.ReactionRef{
		{Kind: "stack", KindVersion: 1, Reaction: "compose"},
		{Kind: "part", KindVersion: 1, Reaction: "reconcile"},
	})
	return w
}

func child(name string, spec string) *convergev1.Child {
	return &convergev1.Child{Kind: "part", KindVersion: 1, Name: name, Spec: []byte(spec)}
}

func edge(dependent, dependency string, flows ...*convergev1.Flow) *convergev1.Edge {
	return &convergev1.Edge{
		Dependent:  &convergev1.ResourceRef{Kind: "part", Name: dependent},
		Dependency: &convergev1.ResourceRef{Kind: "part", Name: dependency},
		Flows:      flows,
	}
}

func get(t *testing.T, ctl convergev1connect.ControlServiceClient, kind, name string) *convergev1.Resource {
	t.Helper()
	r, err := ctl.GetResource(context.Background(), &convergev1.GetResourceRequest{Kind: kind, Name: name})
	if err != nil {
		t.Fatalf("get %s/%s: %v", kind, name, err)
	}
	return r.GetResource()
}

func TestCompositionFlowsAndRollup(t *testing.T) {
	_, ctl, wrk := server(t)
	applyStackKinds(t, ctl, 0)
	if _, err := ctl.ApplyResource(context.Background(), &convergev1.ApplyResourceRequest{Kind: "stack", KindVersion: 1, Name: "s"}); err != nil {
		t.Fatal(err)
	}
	w := stackWorker(t, wrk)
	compose := w.Task()
	if compose.GetKind() != "stack" {
		t.Fatalf("first task = %v", compose)
	}
	w.Compose(compose.GetLease(), &convergev1.Composition{
		Children: []*convergev1.Child{child("s-a", `{}`), child("s-b", `{"n": 1}`), child("s-c", `{}`)},
		Edges: []*convergev1.Edge{edge("s-b", "s-a",
			&convergev1.Flow{Source: &convergev1.Flow_From{From: "/id"}, To: "/upstream"})},
	})
	if a := w.Ack(); !a.GetApplied() {
		t.Fatalf("compose ack = %v", a)
	}
	// s-b waits for s-a; s-a and s-c run.
	testkit.Eventually(t, "s-b waiting", func() bool { return strings.Contains(get(t, ctl, "part", "s-b").GetWaiting(), "s-a") })
	// The rollup is computed by the graph executor after the compose
	// commits, so it is waited for; the phase must never be Ready meanwhile.
	testkit.Eventually(t, "the rollup to count 3 children", func() bool {
		s := get(t, ctl, "stack", "s")
		if s.GetPhase() != "Reconciling" {
			t.Fatalf("composite while children run = %v", s)
		}
		return s.GetRollup().GetTotal() == 3
	})
	if b := get(t, ctl, "part", "s-b"); b.GetOwner().GetName() != "s" {
		t.Fatalf("s-b owner = %v", b.GetOwner())
	}
	got := map[string]*convergev1.Task{}
	for len(got) < 2 {
		tk := w.Task()
		got[tk.GetResource().GetName()] = tk
	}
	if got["s-a"] == nil || got["s-c"] == nil {
		t.Fatalf("first wave = %v", got)
	}
	w.Result(got["s-c"].GetLease(), `{}`)
	w.Result(got["s-a"].GetLease(), `{"id":"a-123"}`)
	// The gate opens: s-b runs with the flowed value in its spec.
	b := w.Task()
	if b.GetResource().GetName() != "s-b" || !strings.Contains(string(b.GetResource().GetSpec()), `"a-123"`) {
		t.Fatalf("s-b task = %v, spec %s", b, b.GetResource().GetSpec())
	}
	w.Result(b.GetLease(), `{}`)
	testkit.Eventually(t, "the composite Ready", func() bool { return get(t, ctl, "stack", "s").GetPhase() == "Ready" })

	// A child failing terminally makes the composite Failed and names it.
	applyResource := func(spec map[string]any) {
		if _, err := ctl.ApplyResource(context.Background(), &convergev1.ApplyResourceRequest{Kind: "stack", KindVersion: 1, Name: "s",
			Spec: mustStruct(t, spec)}); err != nil {
			t.Fatal(err)
		}
	}
	applyResource(map[string]any{"v": 2})
	compose = w.Task()
	w.Compose(compose.GetLease(), &convergev1.Composition{
		Children: []*convergev1.Child{child("s-a", `{}`), child("s-b", `{"n": 2}`), child("s-c", `{}`)},
		Edges: []*convergev1.Edge{edge("s-b", "s-a",
			&convergev1.Flow{Source: &convergev1.Flow_From{From: "/id"}, To: "/upstream"})},
	})
	b = w.Task()
	if b.GetResource().GetName() != "s-b" || b.GetResource().GetGeneration() != 3 {
		t.Fatalf("changed child task = %v", b.GetResource())
	}
	w.Send(&convergev1.WorkerMessage{Msg: &convergev1.WorkerMessage_Results{Results: &convergev1.Results{Results: []*convergev1.TaskResult{{
		Lease: b.GetLease(), Outcome: &convergev1.TaskResult_Error{Error: &convergev1.TaskError{Message: "quota exceeded", Terminal: true}}}}}}})
	testkit.Eventually(t, "the composite Failed", func() bool { return get(t, ctl, "stack", "s").GetPhase() == "Failed" })
	s := get(t, ctl, "stack", "s")
	culprits := s.GetRollup().GetCulprits()
	if len(culprits) != 1 || culprits[0].GetResource().GetName() != "s-b" || culprits[0].GetMessage() != "quota exceeded" {
		t.Fatalf("culprits = %v", culprits)
	}
	if !hasConditionMessage(s, "ChildrenReady", "part/s-b is Failed: quota exceeded") {
		t.Fatalf("conditions = %v", s.GetConditions())
	}
}

func hasConditionMessage(r *convergev1.Resource, typ, substr string) bool {
	for _, c := range r.GetConditions() {
		if c.GetType() == typ && strings.Contains(c.GetMessage(), substr) {
			return true
		}
	}
	return false
}

func TestCompositionRefusals(t *testing.T) {
	_, ctl, wrk := server(t)
	applyStackKinds(t, ctl, 0)
	w := stackWorker(t, wrk)
	for i, tc := range []struct {
		comp *convergev1.Composition
		want string
	}{
		{&convergev1.Composition{Children: []*convergev1.Child{child("x-a", `{}`), child("x-b", `{}`)},
			Edges: []*convergev1.Edge{edge("x-a", "x-b"), edge("x-b", "x-a")}}, "cycle: part/x-a -> part/x-b -> part/x-a"},
		{&convergev1.Composition{Children: []*convergev1.Child{child("x-a", `{}`)},
			Edges: []*convergev1.Edge{edge("x-a", "x-ghost")}}, "neither a child of this composition nor a declared reference"},
		{&convergev1.Composition{Children: []*convergev1.Child{child("x-a", `{}`), child("x-b", `{}`)},
			Edges: []*convergev1.Edge{{Dependent: &convergev1.ResourceRef{Namespace: "team-b", Kind: "part", Name: "x-a"},
				Dependency: &convergev1.ResourceRef{Kind: "part", Name: "x-b"}}}},
			"the dependent names namespace team-b, but it must be a child of this composition, and children live in its namespace default"},
		{&convergev1.Composition{Children: []*convergev1.Child{child("x-a", `{}`), child("x-b", `{}`)},
			Edges: []*convergev1.Edge{{Dependent: &convergev1.ResourceRef{Kind: "part", Name: "x-a"},
				Dependency: &convergev1.ResourceRef{Namespace: "team-b", Kind: "part", Name: "x-b"}}}},
			"neither a child of this composition nor a declared reference"},
		{&convergev1.Composition{Children: []*convergev1.Child{{Kind: "nope", KindVersion: 1, Name: "x-n"}}},
			"kind nope v1 is not registered"},
		{&convergev1.Composition{Children: []*convergev1.Child{child("x-a", `{"n": "three"}`)}}, "/n"},
	} {
		name := "x" + string(rune('0'+i))
		if _, err := ctl.ApplyResource(context.Background(), &convergev1.ApplyResourceRequest{Kind: "stack", KindVersion: 1, Name: name}); err != nil {
			t.Fatal(err)
		}
		task := w.Task()
		w.Compose(task.GetLease(), tc.comp)
		testkit.Eventually(t, name+" Failed", func() bool { return get(t, ctl, "stack", name).GetPhase() == "Failed" })
		if msg := get(t, ctl, "stack", name).GetFailure().GetMessage(); !strings.Contains(msg, tc.want) {
			t.Fatalf("%s: failure %q, want it to contain %q", name, msg, tc.want)
		}
		list, err := ctl.ListResources(context.Background(), &convergev1.ListResourcesRequest{Kind: "part"})
		if err != nil || len(list.GetResources()) != 0 {
			t.Fatalf("%s: a refused composition left %d children", name, len(list.GetResources()))
		}
	}
}

func TestOrderedDeletion(t *testing.T) {
	_, ctl, wrk := server(t)
	applyStackKinds(t, ctl, 0)
	if _, err := ctl.ApplyResource(context.Background(), &convergev1.ApplyResourceRequest{Kind: "stack", KindVersion: 1, Name: "d"}); err != nil {
		t.Fatal(err)
	}
	w := stackWorker(t, wrk)
	task := w.Task()
	w.Compose(task.GetLease(), &convergev1.Composition{
		Children: []*convergev1.Child{child("d-a", `{}`), child("d-b", `{}`)},
		Edges:    []*convergev1.Edge{edge("d-b", "d-a")},
	})
	a := w.Task()
	w.Result(a.GetLease(), `{}`)
	b := w.Task()
	w.Result(b.GetLease(), `{}`)
	testkit.Eventually(t, "d Ready", func() bool { return get(t, ctl, "stack", "d").GetPhase() == "Ready" })
	if _, err := ctl.DeleteResource(context.Background(), &convergev1.DeleteResourceRequest{Kind: "stack", Name: "d"}); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, "d gone", func() bool {
		_, err := ctl.GetResource(context.Background(), &convergev1.GetResourceRequest{Kind: "stack", Name: "d"})
		return err != nil
	})
	events, err := ctl.ListEvents(context.Background(), &convergev1.ListEventsRequest{PageSize: 100})
	if err != nil {
		t.Fatal(err)
	}
	// Newest first: d-a (the dependency) after d-b (its dependent), the
	// composite last.
	var order []string
	for i := len(events.GetEvents()) - 1; i >= 0; i-- {
		if e := events.GetEvents()[i]; e.GetReason() == "Deleted" {
			order = append(order, e.GetName())
		}
	}
	if strings.Join(order, ",") != "d-b,d-a,d" {
		raw, _ := json.Marshal(order)
		t.Fatalf("deletion order = %s", raw)
	}
}

// TestCELFlows: a CEL flow computes a dependent's spec value from its
// dependency's status; one whose source field is missing holds the
// dependent, which says which field it waits for.
func TestCELFlows(t *testing.T) {
	_, ctl, wrk := server(t)
	applyStackKinds(t, ctl, 0)
	w := stackWorker(t, wrk)
	if _, err := ctl.ApplyResource(context.Background(), &convergev1.ApplyResourceRequest{Kind: "stack", KindVersion: 1, Name: "c",
		Spec: mustStruct(t, map[string]any{})}); err != nil {
		t.Fatal(err)
	}
	compose := w.Task()
	w.Compose(compose.GetLease(), &convergev1.Composition{
		Children: []*convergev1.Child{child("db", `{}`), child("app", `{}`), child("late", `{}`)},
		Edges: []*convergev1.Edge{
			edge("app", "db", &convergev1.Flow{Source: &convergev1.Flow_Expr{Expr: `status.host + ":" + string(status.port + 1)`}, To: "/upstream"},
				&convergev1.Flow{Source: &convergev1.Flow_Expr{Expr: `size(status.replicas)`}, To: "/n"}),
			edge("late", "db", &convergev1.Flow{Source: &convergev1.Flow_Expr{Expr: `status.endpoint.url`}, To: "/upstream"}),
		},
	})
	db := w.Task()
	if db.GetResource().GetName() != "db" {
		t.Fatalf("first task = %s; want db (the others wait for it)", db.GetResource().GetName())
	}
	w.Result(db.GetLease(), `{"host":"db.internal","port":5431,"replicas":["r1","r2","r3"]}`)
	app := w.Task()
	var spec map[string]any
	if err := json.Unmarshal(app.GetResource().GetSpec(), &spec); err != nil || app.GetResource().GetName() != "app" ||
		spec["upstream"] != "db.internal:5432" || spec["n"] != float64(3) {
		t.Fatalf("app task %s with spec %s; want upstream db.internal:5432 and n 3", app.GetResource().GetName(), app.GetResource().GetSpec())
	}
	w.Result(app.GetLease(), `{}`)
	testkit.Eventually(t, "late to wait naming the missing field", func() bool {
		return strings.Contains(get(t, ctl, "part", "late").GetWaiting(), "endpoint")
	})
	if s := get(t, ctl, "stack", "c"); s.GetPhase() == "Ready" {
		t.Fatalf("the composite is Ready while late waits")
	}
}

// TestStaleRecomposeIsDropped: a resync's composition answers for the
// generation it observed; when the spec moves on while it composes, the
// new generation's compose waits for it (a resource has one reconcile in
// flight), its answer is refused, and the children the new generation's
// composer gave up stay given up.
func TestStaleRecomposeIsDropped(t *testing.T) {
	_, ctl, wrk := server(t)
	ctx := context.Background()
	for _, m := range []*convergev1.KindManifest{
		{Kind: "stack", KindVersion: 1, SpecSchema: mustStruct(t, map[string]any{"type": "object"}),
			Reactions: []*convergev1.Reaction{{Name: "compose", Trigger: "specChange", Emits: []string{"children", "edges", "status"}}},
			Policy:    &convergev1.KindPolicy{ResyncIntervalSeconds: 1, ResyncRecomposes: true}},
		{Kind: "part", KindVersion: 1, SpecSchema: mustStruct(t, map[string]any{"type": "object"}),
			Reactions: []*convergev1.Reaction{{Name: "reconcile", Trigger: "specChange", Emits: []string{"status"}}}},
	} {
		if _, err := ctl.ApplyKind(ctx, &convergev1.ApplyKindRequest{Manifest: m}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := ctl.ApplyResource(ctx, &convergev1.ApplyResourceRequest{Kind: "stack", KindVersion: 1, Name: "s"}); err != nil {
		t.Fatal(err)
	}
	w := stackWorker(t, wrk)
	composeOneChild(w)
	// The resync's recompose arrives and is held while the spec changes.
	resync := nextTask(w, "stack", "resync")
	if _, err := ctl.ApplyResource(ctx, &convergev1.ApplyResourceRequest{Kind: "stack", KindVersion: 1, Name: "s",
		Spec: mustStruct(t, map[string]any{"v": 2})}); err != nil {
		t.Fatal(err)
	}
	w.Compose(resync.GetLease(), &convergev1.Composition{Children: []*convergev1.Child{
		child("s-a", `{}`), child("s-b", `{}`)}})
	if ack := w.Ack(); ack.GetApplied() {
		t.Fatalf("the stale recompose was applied: %v", ack)
	}
	gen2 := nextTask(w, "stack", "specChange")
	if gen2.GetLease().GetGeneration() != 2 {
		t.Fatalf("the compose after the resync is at generation %d; want 2", gen2.GetLease().GetGeneration())
	}
	w.Compose(gen2.GetLease(), &convergev1.Composition{})
	w.Ack()
	testkit.Eventually(t, "s-a gone after the new generation dropped it", func() bool {
		_, err := ctl.GetResource(ctx, &convergev1.GetResourceRequest{Kind: "part", Name: "s-a"})
		return err != nil
	})
	if _, err := ctl.GetResource(ctx, &convergev1.GetResourceRequest{Kind: "part", Name: "s-b"}); err == nil {
		t.Fatal("the stale recompose created s-b")
	}
}

// A childrenSettled answer held while the spec moves on answers for the
// generation it saw: it is dropped, as a stale resync is, and neither
// winds the synced generation back nor writes its status.
func TestStaleChildrenSettledIsDropped(t *testing.T) {
	_, ctl, wrk := server(t)
	ctx := context.Background()
	for _, m := range []*convergev1.KindManifest{
		{Kind: "stack", KindVersion: 1, SpecSchema: mustStruct(t, map[string]any{"type": "object"}),
			Reactions: []*convergev1.Reaction{
				{Name: "compose", Trigger: "specChange", Emits: []string{"children", "edges", "status"}},
				{Name: "settled", Trigger: "childrenSettled", Emits: []string{"status"}},
			}},
		{Kind: "part", KindVersion: 1, SpecSchema: mustStruct(t, map[string]any{"type": "object"}),
			Reactions: []*convergev1.Reaction{{Name: "reconcile", Trigger: "specChange", Emits: []string{"status"}}}},
	} {
		if _, err := ctl.ApplyKind(ctx, &convergev1.ApplyKindRequest{Manifest: m}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := ctl.ApplyResource(ctx, &convergev1.ApplyResourceRequest{Kind: "stack", KindVersion: 1, Name: "s"}); err != nil {
		t.Fatal(err)
	}
	w, _ := connectWorkerServing(t, wrk, 16, []*convergev1.ReactionRef{
		{Kind: "stack", KindVersion: 1, Reaction: "compose"},
		{Kind: "stack", KindVersion: 1, Reaction: "settled"},
		{Kind: "part", KindVersion: 1, Reaction: "reconcile"},
	})
	composeOneChild(w)
	settled := nextTask(w, "stack", "childrenSettled")
	if _, err := ctl.ApplyResource(ctx, &convergev1.ApplyResourceRequest{Kind: "stack", KindVersion: 1, Name: "s",
		Spec: mustStruct(t, map[string]any{"v": 2})}); err != nil {
		t.Fatal(err)
	}
	gen2 := nextTask(w, "stack", "specChange")
	w.Succeed(gen2.GetLease(), &convergev1.Success{Status: []byte(`{"gen":2}`), Composition: &convergev1.Composition{}})
	w.Ack()
	w.Result(settled.GetLease(), `{"gen":1}`)
	if ack := w.Ack(); ack.GetApplied() {
		t.Fatalf("the stale childrenSettled answer was applied: %v", ack)
	}
	r := get(t, ctl, "stack", "s")
	if r.GetSyncedGeneration() != 2 || r.GetStatus().GetFields()["gen"].GetNumberValue() != 2 {
		t.Fatalf("after the stale answer: synced generation %d, status %v; want 2 and gen 2", r.GetSyncedGeneration(), r.GetStatus())
	}
}

// composeOneChild answers stack s's first compose with child s-a, and
// reconciles s-a.
func composeOneChild(w *rawWorker) {
	first := w.Task()
	w.Compose(first.GetLease(), &convergev1.Composition{Children: []*convergev1.Child{child("s-a", `{}`)}})
	w.Ack()
	a := w.Task()
	w.Result(a.GetLease(), `{}`)
	w.Ack()
}

// nextTask skips tasks until one of kind for trigger arrives, and holds it.
func nextTask(w *rawWorker, kind, trigger string) *convergev1.Task {
	for {
		if tk := w.Task(); tk.GetKind() == kind && tk.GetTrigger() == trigger {
			return tk
		}
	}
}
