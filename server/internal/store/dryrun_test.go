package store_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/convergehq/converge/server/internal/store"
)

// TestDryRunDeleteTeardownOrder deletes a composite in a dry run: its
// teardown runs dependents before their dependencies and every child
// before the composite, and after the dry run nothing is deleting.
func TestDryRunDeleteTeardownOrder(t *testing.T) {
	s, ctx := newStore(t)
	stackRev := applyKind(t, s, "stack", store.Policy{})
	partRev := applyKind(t, s, "part", store.Policy{})
	histApply(t, s, "alice", "stack", 1, stackRev, "s", `{}`)
	composeWith(t, s, partRev, []string{"s-a", "s-b", "s-c", "s-d"}, []store.EdgeSpec{
		{Dependent: store.Ref{Namespace: "default", Kind: "part", Name: "s-b"}, Dependency: store.Ref{Namespace: "default", Kind: "part", Name: "s-a"}, Flows: []byte(`[]`)},
		{Dependent: store.Ref{Namespace: "default", Kind: "part", Name: "s-c"}, Dependency: store.Ref{Namespace: "default", Kind: "part", Name: "s-b"}, Flows: []byte(`[]`)},
	})

	dctx, end, err := s.BeginDryRun(ctx)
	if err != nil {
		t.Fatal(err)
	}
	root := store.ResourceKey{Namespace: "default", Kind: "stack", Name: "s"}
	if _, gone, err := s.DeleteResource(dctx, "alice", root, store.TeardownPolicy{Reaction: true}); err != nil || gone {
		t.Fatalf("delete in the dry run: gone %v, %v", gone, err)
	}
	steps, err := s.TeardownOrder(dctx, root)
	end()
	if err != nil {
		t.Fatal(err)
	}
	wave := map[string]int{}
	for _, st := range steps {
		wave[st.Name] = st.Wave
	}
	want := map[string]int{"s-c": 1, "s-d": 1, "s-b": 2, "s-a": 3, "s": 4}
	if len(wave) != len(want) {
		t.Fatalf("teardown %v, want %v", wave, want)
	}
	for name, w := range want {
		if wave[name] != w {
			t.Errorf("%s tears down in wave %d, want %d (all: %v)", name, wave[name], w, wave)
		}
	}
	for i := 1; i < len(steps); i++ {
		if steps[i].Wave < steps[i-1].Wave {
			t.Errorf("steps out of wave order: %v", steps)
		}
	}
	if r := getKind(t, s, "stack", "s"); r.Phase == "Deleting" {
		t.Fatalf("after the dry run the composite is %s", r.Phase)
	}
	if steps, err := s.TeardownOrder(ctx, root); err != nil || len(steps) != 0 {
		t.Fatalf("after the dry run the teardown set is %v, %v", steps, err)
	}
}

// TestAbandonSubtree abandons a composite: refused while it owns children
// unless the subtree goes with it; then it and every child are gone, their
// tasks with them, each with an Abandoned event.
func TestAbandonSubtree(t *testing.T) {
	s, ctx := newStore(t)
	stackRev := applyKind(t, s, "stack", store.Policy{})
	partRev := applyKind(t, s, "part", store.Policy{})
	histApply(t, s, "alice", "stack", 1, stackRev, "s", `{}`)
	composeAs(t, s, partRev, "s-a", "s-b")
	root := store.ResourceKey{Namespace: "default", Kind: "stack", Name: "s"}
	if _, err := s.AbandonResource(ctx, "admin", root, false, "why"); !errors.Is(err, store.ErrConflict) ||
		!strings.Contains(err.Error(), "owns 2 resource(s)") {
		t.Fatalf("abandon of a composite without subtree: %v", err)
	}
	gone, err := s.AbandonResource(ctx, "admin", root, true, "region closed")
	if err != nil || len(gone) != 3 {
		t.Fatalf("abandon with subtree: %v, %v", gone, err)
	}
	for _, name := range []string{"s-a", "s-b"} {
		if _, err := s.GetResource(ctx, "default", "part", name); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("part/%s after its composite was abandoned: %v", name, err)
		}
	}
	evs, err := s.ListEvents(ctx, store.EventFilter{Namespace: "default", Kind: "part", Name: "s-a", Limit: 10})
	if err != nil || len(evs) == 0 || evs[0].Reason != "Abandoned" || !strings.Contains(evs[0].Message, "region closed") {
		t.Fatalf("events of an abandoned child: %+v, %v", evs, err)
	}
	assertNoTasks(t, s)
}
