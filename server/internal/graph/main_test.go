package graph_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"testing"
	"time"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
	"github.com/convergehq/converge/server/internal/graph"
	"github.com/convergehq/converge/server/internal/kinds"
	"github.com/convergehq/converge/server/internal/notify"
	"github.com/convergehq/converge/server/internal/pgtest"
	"github.com/convergehq/converge/server/internal/service"
	"github.com/convergehq/converge/server/internal/store"
	"github.com/convergehq/converge/server/internal/testkit"
	"github.com/convergehq/converge/server/internal/trigger"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

var fast = store.Backoff{Base: 10 * time.Millisecond, Max: 50 * time.Millisecond}

// env is a database with a composite kind stack (composer "compose", and
// "summarize" once its children settle) and a leaf kind part (spec with
// a string "upstream" and an integer "n"; a teardown reaction), and a
// running graph executor over them.
type env struct {
	t       *testing.T
	ctx     context.Context
	st      *store.Store
	partRev int64
}

func newEnv(t *testing.T) *env {
	t.Helper()
	db := pgtest.New(t)
	e := &env{t: t, ctx: context.Background(), st: store.New(db.Pool, db.Pool)}
	testkit.ApplyKind(t, e.st, &convergev1.KindManifest{Kind: "stack", KindVersion: 1, SpecSchema: testkit.Object(t),
		Reactions: []*convergev1.Reaction{
			{Name: "compose", Trigger: "specChange", Emits: []string{"children", "edges", "status"}},
			{Name: "summarize", Trigger: "childrenSettled", Emits: []string{"status"}},
		}})
	e.partRev = testkit.ApplyKind(t, e.st, &convergev1.KindManifest{Kind: "part", KindVersion: 1, Finalizer: "test/teardown",
		SpecSchema: testkit.Schema(t, map[string]any{"type": "object", "properties": map[string]any{
			"upstream": map[string]any{"type": "string"}, "n": map[string]any{"type": "integer"}}}),
		Reactions: []*convergev1.Reaction{
			{Name: "reconcile", Trigger: "specChange", Emits: []string{"status"}},
			{Name: "teardown", Trigger: "deleteRequested", Emits: []string{"finalizer"}},
		}}).Revision
	bus := notify.New(db.Pool, "test", 1000, quiet)
	reg := kinds.New(e.st, bus, quiet)
	if err := reg.Refresh(e.ctx); err != nil {
		t.Fatal(err)
	}
	x := graph.New(graph.Config{MemberID: "test", Lease: time.Minute, PollInterval: 20 * time.Millisecond}, e.st, reg, bus, quiet)
	g := service.Start(context.Background(), quiet, x)
	t.Cleanup(g.Stop)
	return e
}

// child is a part child with spec.
func (e *env) child(name, spec string) store.ChildSpec {
	return store.ChildSpec{Kind: "part", Version: 1, Name: name, Labels: []byte(`{}`), Spec: []byte(spec), KindRevision: e.partRev}
}

// edge makes dependent depend on dependency, with flows (JSON).
func edge(dependent, dependency, flows string) store.EdgeSpec {
	return store.EdgeSpec{Dependent: store.Ref{Kind: "part", Name: dependent}, Dependency: store.Ref{Kind: "part", Name: dependency},
		Flows: []byte(flows)}
}

// composite creates stack s and applies its composer's answer.
func (e *env) composite(children []store.ChildSpec, edges ...store.EdgeSpec) {
	e.t.Helper()
	stackRev := e.kindRevision("stack")
	if _, _, err := e.st.ApplyResources(e.ctx, "test", []store.ApplyInput{{Namespace: "default", Kind: "stack", KindVersion: 1,
		Name: "s", Labels: []byte(`{}`), Spec: []byte(`{}`), KindRevision: stackRev}}); err != nil {
		e.t.Fatal(err)
	}
	task := e.claim("stack", trigger.SpecChange)
	res, err := e.st.ApplyComposition(e.ctx, store.Composition{
		Outcome: store.Outcome{Lease: task.Lease, Actor: "test", Status: []byte(`{}`)}, Children: children, Edges: edges})
	if err != nil || res.Refused != nil || !res.Applied {
		e.t.Fatalf("composition: %+v, %v", res, err)
	}
}

func (e *env) kindRevision(kind string) int64 {
	e.t.Helper()
	k, err := e.st.GetKind(e.ctx, kind, 1)
	if err != nil {
		e.t.Fatal(err)
	}
	return k.Revision
}

// claim waits for a task of kind and trigger and claims it.
func (e *env) claim(kind, trigger string) store.Claimed {
	e.t.Helper()
	var got []store.Claimed
	testkit.Eventually(e.t, "a "+kind+" "+trigger+" task", func() bool {
		var err error
		got, err = e.st.Claim(e.ctx, "worker", time.Minute, []store.Want{{Kind: kind, Version: 1, Trigger: trigger, N: 1}})
		if err != nil {
			e.t.Fatal(err)
		}
		return len(got) == 1
	})
	return got[0]
}

// claimable lists the resources with a task of kind and trigger ready to
// claim, without claiming them.
func (e *env) claimable(kind, trigger string) []string {
	e.t.Helper()
	got, err := e.st.Claim(e.ctx, "peek", time.Minute, []store.Want{{Kind: kind, Version: 1, Trigger: trigger, N: 100}})
	if err != nil {
		e.t.Fatal(err)
	}
	var names []string
	leases := make([]store.Lease, len(got))
	for i, c := range got {
		names, leases[i] = append(names, c.Name), c.Lease
	}
	if err := e.st.ReleaseLeases(e.ctx, leases); err != nil {
		e.t.Fatal(err)
	}
	return names
}

// succeed applies a success with status for a claimed task.
func (e *env) succeed(c store.Claimed, status string) {
	e.t.Helper()
	res, err := e.st.ApplyOutcomes(e.ctx, []store.Outcome{{Lease: c.Lease, Actor: "test", Status: []byte(status)}}, fast)
	if err != nil || !res[0].Applied {
		e.t.Fatalf("result for %s: %+v, %v", c.Name, res, err)
	}
}

func (e *env) get(kind, name string) store.Resource {
	e.t.Helper()
	r, err := e.st.GetResource(e.ctx, "default", kind, name)
	if err != nil {
		e.t.Fatalf("get %s/%s: %v", kind, name, err)
	}
	return r
}

func (e *env) rollup() store.RollupCounts {
	e.t.Helper()
	var c store.RollupCounts
	if raw := e.get("stack", "s").Rollup; len(raw) > 0 {
		if err := json.Unmarshal(raw, &c); err != nil {
			e.t.Fatal(err)
		}
	}
	return c
}
