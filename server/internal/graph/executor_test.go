package graph_test

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/convergehq/converge/server/internal/store"
	"github.com/convergehq/converge/server/internal/testkit"
	"github.com/convergehq/converge/server/internal/trigger"
)

// TestRollup: the executor counts a composite's children by phase as they
// change, holds the composite Reconciling while any child is, and queues
// the composite's childrenSettled reaction once they have all settled.
func TestRollup(t *testing.T) {
	e := newEnv(t)
	e.composite([]store.ChildSpec{e.child("a", `{}`), e.child("b", `{}`)})
	testkit.Eventually(t, "the rollup to count two children reconciling", func() bool {
		c := e.rollup()
		return c.Total == 2 && c.Reconciling == 2
	})
	if p := e.get("stack", "s").Phase; p != "Reconciling" {
		t.Fatalf("composite with children reconciling is %s", p)
	}
	a := e.claim("part", trigger.SpecChange)
	e.succeed(a, `{}`)
	testkit.Eventually(t, "the rollup to count one ready", func() bool {
		c := e.rollup()
		return c.Ready == 1 && c.Reconciling == 1
	})
	if got := e.claimable("stack", trigger.ChildrenSettled); len(got) != 0 {
		t.Fatalf("childrenSettled queued while a child still reconciles: %v", got)
	}
	e.succeed(e.claim("part", trigger.SpecChange), `{}`)
	testkit.Eventually(t, "the rollup to count both ready", func() bool { return e.rollup().Ready == 2 })
	settled := e.claim("stack", trigger.ChildrenSettled)
	if settled.Name != "s" || !strings.Contains(string(settled.Rollup), `"ready": 2`) {
		t.Fatalf("childrenSettled task = %+v (rollup %s); want s with both children ready", settled.Lease, settled.Rollup)
	}
	e.succeed(settled, `{}`)
	if p := e.get("stack", "s").Phase; p != "Ready" {
		t.Fatalf("composite after its children settled and it summarized is %s", p)
	}
}

// TestGateOpensWithTheFlowedValue: a dependent waits, saying for whom,
// until its dependency is synced; then the gate writes the value that
// flows along the edge into its spec and schedules it.
func TestGateOpensWithTheFlowedValue(t *testing.T) {
	e := newEnv(t)
	e.composite([]store.ChildSpec{e.child("db", `{}`), e.child("app", `{"n": 1}`)},
		edge("app", "db", `[{"from":"/address","to":"/upstream"}]`))
	testkit.Eventually(t, "app to wait for db", func() bool {
		w := e.get("part", "app").Waiting
		return w != nil && strings.Contains(*w, "part/db")
	})
	if got := e.claimable("part", trigger.SpecChange); !slices.Equal(got, []string{"db"}) {
		t.Fatalf("claimable part work = %v; want db alone while app waits", got)
	}
	e.succeed(e.claim("part", trigger.SpecChange), `{"address":"db.internal:5432"}`)
	app := e.claim("part", trigger.SpecChange)
	if app.Name != "app" {
		t.Fatalf("next part task is for %s, want app", app.Name)
	}
	var spec map[string]any
	if err := json.Unmarshal(app.Spec, &spec); err != nil {
		t.Fatal(err)
	}
	if spec["upstream"] != "db.internal:5432" || spec["n"] != float64(1) {
		t.Fatalf("app's spec = %s; want the desired spec with upstream flowed in", app.Spec)
	}
	if r := e.get("part", "app"); r.Waiting != nil || r.Generation != app.Generation {
		t.Fatalf("app: waiting %v, generation %d (task at %d)", r.Waiting, r.Generation, app.Generation)
	}
}

// TestGateHoldsASpecTheFlowBreaks: a flowed value that makes the spec
// fail its kind's schema keeps the dependent waiting, saying why.
func TestGateHoldsASpecTheFlowBreaks(t *testing.T) {
	e := newEnv(t)
	e.composite([]store.ChildSpec{e.child("db", `{}`), e.child("app", `{}`)},
		edge("app", "db", `[{"from":"/address","to":"/n"}]`))
	e.succeed(e.claim("part", trigger.SpecChange), `{"address":"not a number"}`)
	testkit.Eventually(t, "app to wait for a spec that fits its schema", func() bool {
		w := e.get("part", "app").Waiting
		return w != nil && strings.Contains(*w, "does not match the spec_schema of part v1")
	})
	if got := e.claimable("part", trigger.SpecChange); len(got) != 0 {
		t.Fatalf("claimable part work = %v; want none while app's spec is broken", got)
	}
}

// TestTeardownOrder: deleting a composite tears down the dependent child
// first, then its dependency, then the composite; each teardown reaction
// is queued only once nothing that must go first is left.
func TestTeardownOrder(t *testing.T) {
	e := newEnv(t)
	e.composite([]store.ChildSpec{e.child("db", `{}`), e.child("app", `{}`)}, edge("app", "db", `[]`))
	e.succeed(e.claim("part", trigger.SpecChange), `{}`)
	e.succeed(e.claim("part", trigger.SpecChange), `{}`)
	if _, gone, err := e.st.DeleteResource(e.ctx, "test", store.ResourceKey{Namespace: "default", Kind: "stack", Name: "s"},
		store.TeardownPolicy{}); err != nil || gone {
		t.Fatalf("delete: gone %v, %v; want the composite Deleting", gone, err)
	}
	for _, want := range []string{"app", "db"} {
		task := e.claim("part", trigger.DeleteRequested)
		if task.Name != want {
			t.Fatalf("teardown of %s came first; want %s", task.Name, want)
		}
		if got := e.claimable("part", trigger.DeleteRequested); len(got) != 0 {
			t.Fatalf("while %s tears down, teardowns of %v are queued too", want, got)
		}
		if _, err := e.st.GetResource(e.ctx, "default", "stack", "s"); err != nil {
			t.Fatalf("the composite went before its child %s: %v", want, err)
		}
		e.succeed(task, `{}`)
	}
	testkit.Eventually(t, "the composite to go once its children have", func() bool {
		_, err := e.st.GetResource(e.ctx, "default", "stack", "s")
		return errors.Is(err, store.ErrNotFound)
	})
}

// TestTeardownDoesNotWaitForALiveDependent: a dependent that came to
// depend on a resource after its deletion began (here: the deletion is
// marked by hand, without the dependent) does not hold the teardown up;
// its gate holds it instead, saying the dependency is being deleted.
func TestTeardownDoesNotWaitForALiveDependent(t *testing.T) {
	e := newEnv(t)
	e.composite([]store.ChildSpec{e.child("db", `{}`), e.child("app", `{}`)}, edge("app", "db", `[]`))
	e.succeed(e.claim("part", trigger.SpecChange), `{}`)
	e.succeed(e.claim("part", trigger.SpecChange), `{}`)
	if _, err := e.st.Pool().Exec(e.ctx, `UPDATE resources SET deletion_requested_at = now() WHERE name = 'db'`); err != nil {
		t.Fatal(err)
	}
	if _, err := e.st.Pool().Exec(e.ctx, `SELECT converge_wake(array_agg(id), 'teardown') FROM resources WHERE name = 'db'`); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, "db's teardown", func() bool {
		return slices.Contains(e.claimable("part", trigger.DeleteRequested), "db")
	})
	testkit.Eventually(t, "app's gate to hold it", func() bool {
		w := e.get("part", "app").Waiting
		return w != nil && strings.Contains(*w, "part/db: it is being deleted")
	})
}
