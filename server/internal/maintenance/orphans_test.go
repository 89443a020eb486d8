package maintenance

import (
	"testing"
	"time"

	"github.com/convergehq/converge/server/internal/store"
	"github.com/convergehq/converge/server/internal/testkit"
	"github.com/convergehq/converge/server/internal/trigger"
)

// compose applies a composition with children of kind part (v1, revision
// partRev) as the answer to the composite's claimed task.
func (e *env) compose(task store.Claimed, partRev int64, grace time.Duration, children ...string) {
	e.t.Helper()
	c := store.Composition{Outcome: store.Outcome{Lease: task.Lease, Actor: "test", Status: []byte(`{}`)}, OrphanGrace: grace}
	for _, name := range children {
		c.Children = append(c.Children, store.ChildSpec{Kind: "part", Version: 1, Name: name,
			Labels: []byte(`{}`), Spec: []byte(`{}`), KindRevision: partRev})
	}
	res, err := e.st.ApplyComposition(e.ctx, c)
	if err != nil || res.Refused != nil || !res.Applied {
		e.t.Fatalf("composition %v: %+v, %v", children, res, err)
	}
}

// TestOrphanExpirer: a child its composite stopped emitting is deleted
// once its grace ends, with a task wake-up for its teardown; a child the
// composite still emits is left alone.
func TestOrphanExpirer(t *testing.T) {
	e := newEnv(t)
	stackRev, partRev := e.kind("stack"), e.kind("part")
	e.apply("stack", stackRev, "s", `{"n":1}`)
	e.compose(e.claim("stack", trigger.SpecChange, "m1", time.Minute), partRev, 0, "kept", "dropped")
	e.apply("stack", stackRev, "s", `{"n":2}`)
	e.compose(e.claim("stack", trigger.SpecChange, "m1", time.Minute), partRev, 200*time.Millisecond, "kept")
	if r := e.get("part", "dropped"); r.Phase != "Orphaned" || r.OrphanedUntil == nil {
		t.Fatalf("dropped child = phase %s, orphaned until %v; want Orphaned with a grace deadline", r.Phase, r.OrphanedUntil)
	}
	e.drainWake()
	e.run(NewOrphanExpirer(tick, e.st, e.bus, quiet))

	testkit.Eventually(t, "the orphan to be marked for deletion", func() bool { return e.get("part", "dropped").DeletionRequestedAt != nil })
	e.wokeUp("marking an orphan for deletion")
	if ev := e.lastEvent("part", "dropped"); ev.Reason != "DeletionRequested" || ev.Message != "its orphan grace period ended" {
		t.Fatalf("last event = %+v; want DeletionRequested for the ended grace", ev)
	}
	if r := e.get("part", "kept"); r.DeletionRequestedAt != nil {
		t.Fatal("a child still emitted was marked for deletion")
	}
}
