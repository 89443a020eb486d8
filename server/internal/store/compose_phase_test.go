package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/convergehq/converge/server/internal/store"
	"github.com/convergehq/converge/server/internal/trigger"
)

// composeAs claims the stack's specChange task and answers it with one
// part child per name.
func composeAs(t *testing.T, s *store.Store, partRev int64, names ...string) store.ComposeResult {
	t.Helper()
	return composeWith(t, s, partRev, names, nil)
}

// composeWith is composeAs with edges between the children.
func composeWith(t *testing.T, s *store.Store, partRev int64, names []string, edges []store.EdgeSpec) store.ComposeResult {
	t.Helper()
	return compose(t, s, partRev, names, edges, false)
}

// compose answers the stack's specChange task with the named parts;
// settles says the stack's kind has a childrenSettled reaction.
func compose(t *testing.T, s *store.Store, partRev int64, names []string, edges []store.EdgeSpec, settles bool) store.ComposeResult {
	t.Helper()
	ctx := context.Background()
	got, err := s.Claim(ctx, "m1", time.Minute, []store.Want{{Kind: "stack", Version: 1, Trigger: trigger.SpecChange, N: 1}})
	if err != nil || len(got) != 1 {
		t.Fatalf("claim the composite: %v, %v", got, err)
	}
	children := make([]store.ChildSpec, len(names))
	for i, n := range names {
		children[i] = store.ChildSpec{Kind: "part", Version: 1, Name: n, Labels: []byte(`{}`), Spec: []byte(`{}`), KindRevision: partRev}
	}
	res, err := s.ApplyComposition(ctx, store.Composition{
		Outcome:  store.Outcome{Lease: got[0].Lease, Actor: "worker:w1", Status: []byte(`{}`)},
		Children: children,
		Edges:    edges,
		Settles:  settles,
	})
	if err != nil || !res.Applied || res.Refused != nil {
		t.Fatalf("compose %v = %+v, %v", names, res, err)
	}
	return res
}

// settleParts succeeds every queued part task, then runs the rollups.
func settleParts(t *testing.T, s *store.Store) {
	t.Helper()
	settleKind(t, s, "part")
	runRollups(t, s)
}

// runRollups runs the queued rollup tasks until none is left.
func runRollups(t *testing.T, s *store.Store) {
	t.Helper()
	runRollupsOf(t, s, false)
}

// runRollupsOf is runRollups for composites whose kind has (settled) or
// has not a childrenSettled reaction.
func runRollupsOf(t *testing.T, s *store.Store, settled bool) {
	t.Helper()
	ctx := context.Background()
	for range 10 {
		tasks, err := s.ClaimInternal(ctx, "m1", time.Minute, 100)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, tk := range tasks {
			if tk.Trigger == trigger.Rollup {
				n++
				if err := s.Rollup(ctx, tk, settled); err != nil {
					t.Fatal(err)
				}
			}
		}
		if n == 0 {
			return
		}
	}
	t.Fatal("rollups kept coming")
}

// TestRecomposeKeepsPhase: a composite's composer that runs again at the
// generation it has observed (a child went, a forced reconcile) and asks
// for the children it has does not make the composite Reconciling: a
// reader that saw it Ready at that generation (apply --wait) must not
// then see it Reconciling. A compose that changes a child does.
func TestRecomposeKeepsPhase(t *testing.T) {
	s, ctx := newStore(t)
	stackRev := applyKind(t, s, "stack", store.Policy{})
	partRev := applyKind(t, s, "part", store.Policy{})
	histApply(t, s, "alice", "stack", 1, stackRev, "s", `{}`)

	composeAs(t, s, partRev, "s-a", "s-b")
	if p := getKind(t, s, "stack", "s").Phase; p != "Reconciling" {
		t.Fatalf("the composite with new children is %s, want Reconciling", p)
	}
	settleParts(t, s)
	if p := getKind(t, s, "stack", "s").Phase; p != "Ready" {
		t.Fatalf("the composite with ready children is %s, want Ready", p)
	}

	// The composer runs again at the same generation and asks for the
	// same children.
	if _, err := s.ReconcileResource(ctx, "alice", histKey("stack", "s"), "test"); err != nil {
		t.Fatal(err)
	}
	if res := composeAs(t, s, partRev, "s-a", "s-b"); res.Created+res.Updated+res.Deleted != 0 {
		t.Fatalf("the unchanged recompose changed children: %+v", res)
	}
	if p := getKind(t, s, "stack", "s").Phase; p != "Ready" {
		t.Fatalf("after a recompose that changed nothing the composite is %s, want Ready", p)
	}

	// A recompose that adds a child: the composite waits for it.
	if _, err := s.ReconcileResource(ctx, "alice", histKey("stack", "s"), "test"); err != nil {
		t.Fatal(err)
	}
	composeAs(t, s, partRev, "s-a", "s-b", "s-c")
	if p := getKind(t, s, "stack", "s").Phase; p != "Reconciling" {
		t.Fatalf("after a recompose that added a child the composite is %s, want Reconciling", p)
	}
	settleParts(t, s)
	if p := getKind(t, s, "stack", "s").Phase; p != "Ready" {
		t.Fatalf("once the new child is ready the composite is %s, want Ready", p)
	}
}
