//go:build unix

package e2e

import (
	"connectrpc.com/connect"
	"google.golang.org/protobuf/proto"
	"pgregory.net/rapid"

	"github.com/convergehq/converge/sdk-go/client"
	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
)

// dryRun sends one of the model's writes to a root as a dry run: a spec
// change, a quarantine or a delete. The model does not change, and the
// resource must not either: same generation, not quarantined or deleting
// if it was not. The final check then shows nothing of it ran later.
func (w *world) dryRun(t *rapid.T) {
	m := w.res[pick(t, w.resWhere(func(m *mres) bool {
		return m.owner == "" && !m.deleted && !m.quarantined && !m.murky
	}), "root")]
	before, err := call(t, "get "+m.key(), w.api.GetResource, &convergev1.GetResourceRequest{Kind: m.kind, Name: m.name})
	if err != nil {
		t.Fatalf("%v", err)
	}
	write := rapid.SampledFrom([]string{"updateSpec", "quarantine", "delete"}).Draw(t, "dry run of")
	w.note(t, "dryRun %s %s", write, m.key())
	var report *convergev1.DryRunReport
	switch write {
	case "updateSpec":
		var spec any = leafSpec{Counter: m.counter + 1, Password: modelPassword(m.name, m.counter+1)}
		if m.comp != nil {
			c := *m.comp
			c.Counter = m.counter + 1
			spec = c
		}
		res := mustCall(t, "dry-run apply "+m.key(), w.api.ApplyResource, &convergev1.ApplyResourceRequest{
			Kind: m.kind, KindVersion: int32(m.version), Name: m.name, Spec: mustStructOf(spec), DryRun: true})
		report = res.GetDryRun()
		if !report.GetResources()[0].GetGenerationBumps() {
			t.Fatalf("the dry run of a spec change to %s does not bump its generation: %v", m.key(), report)
		}
	case "quarantine":
		res := mustCall(t, "dry-run quarantine "+m.key(), w.api.QuarantineResource, &convergev1.QuarantineResourceRequest{
			Kind: m.kind, Name: m.name, Reason: "model", DryRun: true})
		report = res.GetDryRun()
		if res.GetResource().GetPhase() != client.PhaseQuarantined {
			t.Fatalf("the dry run of a quarantine answers %s not quarantined", m.key())
		}
	case "delete":
		res := mustCall(t, "dry-run delete "+m.key(), w.api.DeleteResource, &convergev1.DeleteResourceRequest{
			Kind: m.kind, Name: m.name, DryRun: true})
		report = res.GetDryRun()
		if len(report.GetTeardown()) == 0 {
			t.Fatalf("the dry run of deleting %s lists no teardown: %v", m.key(), report)
		}
	}
	if report == nil || len(report.GetResources()) != 1 {
		t.Fatalf("the dry run of %s on %s has no report of it: %v", write, m.key(), report)
	}
	after, err := call(t, "get "+m.key(), w.api.GetResource, &convergev1.GetResourceRequest{Kind: m.kind, Name: m.name})
	if err != nil {
		t.Fatalf("after a dry run of %s: %v", write, err)
	}
	b, a := before.GetResource(), after.GetResource()
	if a.GetGeneration() != b.GetGeneration() || (a.GetPhase() == client.PhaseQuarantined) != (b.GetPhase() == client.PhaseQuarantined) ||
		(a.GetDeletionRequestedAt() == nil) != (b.GetDeletionRequestedAt() == nil) ||
		!proto.Equal(a.GetSpec(), b.GetSpec()) {
		t.Fatalf("a dry run of %s changed %s: before %s, after %s", write, m.key(), explainFull(b), explainFull(a))
	}
}

// plan plans a new child count for a composite root (PlanChange): the
// model does not change and the resource must not either; when its
// composer answered the preview, the plan wants exactly the children the
// model's composer makes of that spec. The model's workers record no
// preview (model_worker_test.go), so the final checks also show that no
// preview ran as real work.
func (w *world) plan(t *rapid.T) {
	m := w.res[pick(t, w.resWhere(func(m *mres) bool {
		return m.owner == "" && m.comp != nil && !m.deleted && !m.quarantined && !m.murky
	}), "composite root")]
	before, err := call(t, "get "+m.key(), w.api.GetResource, &convergev1.GetResourceRequest{Kind: m.kind, Name: m.name})
	if err != nil {
		t.Fatalf("%v", err)
	}
	c := *m.comp
	c.Counter, c.N = m.counter+1, rapid.IntRange(0, maxChildren).Draw(t, "planned children")
	w.note(t, "plan %s with %d children", m.key(), c.N)
	res := mustCall(t, "plan "+m.key(), w.api.PlanChange, &convergev1.PlanChangeRequest{PreviewTimeoutSeconds: 5,
		Resources: []*convergev1.ApplyResourceRequest{{Kind: m.kind, KindVersion: int32(m.version), Name: m.name, Spec: mustStructOf(c)}}})
	if len(res.GetComposites()) != 1 {
		t.Fatalf("the plan of %s has %d composites, want 1", m.key(), len(res.GetComposites()))
	}
	if cp := res.GetComposites()[0]; cp.GetNotPreviewed() == "" && !c.Poison {
		wanted := 0
		for _, ch := range cp.GetChildren() {
			if a := ch.GetAction(); a != "prune" && a != "orphan" {
				wanted++
			}
		}
		if wanted != c.N {
			t.Fatalf("the plan of %s with %d children wants %d: %v", m.key(), c.N, wanted, cp.GetChildren())
		}
	}
	after, err := call(t, "get "+m.key(), w.api.GetResource, &convergev1.GetResourceRequest{Kind: m.kind, Name: m.name})
	if err != nil {
		t.Fatalf("after a plan: %v", err)
	}
	if b, a := before.GetResource(), after.GetResource(); a.GetGeneration() != b.GetGeneration() || !proto.Equal(a.GetSpec(), b.GetSpec()) {
		t.Fatalf("a plan changed %s: before %s, after %s", m.key(), explainFull(b), explainFull(a))
	}
}

// abandon removes a root and everything it owns without teardown: the
// answer names the root, the resources are gone at once, and the model
// takes them as deleted (no teardown of theirs is expected, so none is
// ordered).
func (w *world) abandon(t *rapid.T) {
	m := w.res[pick(t, w.resWhere(func(m *mres) bool { return m.owner == "" && !m.deleted }), "root")]
	w.note(t, "abandon %s", m.key())
	res := mustCall(t, "abandon "+m.key(), w.api.DeleteResource, &convergev1.DeleteResourceRequest{
		Kind: m.kind, Name: m.name, Abandon: true, Subtree: true, Reason: "model"})
	named := false
	for _, r := range res.GetAbandoned() {
		named = named || (r.GetKind() == m.kind && r.GetName() == m.name)
	}
	if !named {
		t.Fatalf("abandoning %s answered %v, without it", m.key(), res.GetAbandoned())
	}
	if _, err := call(t, "get "+m.key(), w.api.GetResource, &convergev1.GetResourceRequest{Kind: m.kind, Name: m.name}); connect.CodeOf(err) != connect.CodeNotFound {
		t.Fatalf("%s after it was abandoned: %v", m.key(), err)
	}
	w.markDeleted(m)
}
