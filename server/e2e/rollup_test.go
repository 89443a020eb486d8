//go:build unix

package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/convergehq/converge/sdk-go/client"
	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
	"github.com/convergehq/converge/server/internal/pgtest"
)

// rollupLag bounds how long after a child's phase changes its composite's
// phase may follow: the rollup is queued in the child's transaction.
const rollupLag = time.Second

// TestHealthDemotesAndRepromotes has a child report unhealthy: its
// composite turns Degraded within rollupLag of the child (database times
// on the change feed) and names it; the child healthy again, the composite
// is Ready again as promptly.
func TestHealthDemotesAndRepromotes(t *testing.T) {
	begin(t)
	srv := startServer(t, pgtest.New(t).URL, fast)
	applySpecKinds(t, srv.api)
	startSpecWorker(t, srv, "specworker")
	const root, sick, well = "health", "health-a", "health-b"
	doc := func(unhealthy bool) compositeDoc {
		return compositeDoc{Children: []childDoc{
			{Kind: kindPart, Name: sick, Spec: map[string]any{"unhealthy": unhealthy}},
			{Kind: kindPart, Name: well},
		}}
	}
	applyComposite(t, srv.api, kindStack, root, doc(false))
	waitPhase(t, srv.api, kindStack, root, client.PhaseReady)
	changes := watchChanges(t, srv.api)

	applyComposite(t, srv.api, kindStack, root, doc(true))
	child, _ := changes.await(t, 0, "of part/"+sick+" to Degraded", composeTimeout, phaseOf(kindPart, sick, client.PhaseDegraded))
	parent, at := changes.await(t, 0, "of stack/"+root+" to Degraded", composeTimeout, phaseOf(kindStack, root, client.PhaseDegraded))
	checkFollows(t, "Degraded", child, parent)
	r := getResource(t, srv.api, kindStack, root)
	culprits := r.GetRollup().GetCulprits()
	if r.GetPhase() != client.PhaseDegraded || len(culprits) != 1 || culprits[0].GetResource().GetName() != sick ||
		culprits[0].GetPhase() != client.PhaseDegraded {
		t.Errorf("the demoted composite: %s; want Degraded naming part/%s, Degraded, as its culprit", explain(r), sick)
	}
	if c := condition(r, "ChildrenReady"); c == nil || c.GetStatus() != "False" || c.GetReason() != "ChildDegraded" ||
		!strings.Contains(c.GetMessage(), "part/"+sick+" is Degraded") {
		t.Errorf("the demoted composite's ChildrenReady condition: %v; want False, ChildDegraded, naming part/%s", c, sick)
	}

	applyComposite(t, srv.api, kindStack, root, doc(false))
	child, _ = changes.await(t, at, "of part/"+sick+" to Ready", composeTimeout, phaseOf(kindPart, sick, client.PhaseReady))
	parent, _ = changes.await(t, at, "of stack/"+root+" to Ready", composeTimeout, phaseOf(kindStack, root, client.PhaseReady))
	checkFollows(t, "Ready", child, parent)
	if r := getResource(t, srv.api, kindStack, root); r.GetPhase() != client.PhaseReady || len(r.GetRollup().GetCulprits()) != 0 {
		t.Errorf("the re-promoted composite: %s; want Ready with no culprits", explain(r))
	}
}

// checkFollows checks that the composite's change into phase came after
// the child's, by at most rollupLag.
func checkFollows(t *testing.T, phase string, child, parent *convergev1.Change) {
	t.Helper()
	lag := parent.GetTime().AsTime().Sub(child.GetTime().AsTime())
	t.Logf("the composite turned %s %s after its child", phase, lag)
	if lag < 0 || lag > rollupLag {
		t.Errorf("%s/%s turned %s at %s, %s after its child %s/%s did at %s; want within %s",
			parent.GetKind(), parent.GetName(), phase, stamp(parent.GetTime().AsTime()), lag,
			child.GetKind(), child.GetName(), stamp(child.GetTime().AsTime()), rollupLag)
	}
}

// TestFlowWaitsForMissingStatusField has a flow whose source field the
// dependency's status lacks: the dependent waits, saying which field, and
// never runs; once the dependency reports the field, the dependent runs
// with the value in its spec.
func TestFlowWaitsForMissingStatusField(t *testing.T) {
	begin(t)
	srv := startServer(t, pgtest.New(t).URL, fast)
	applySpecKinds(t, srv.api)
	startSpecWorker(t, srv, "specworker")
	const root, src, dst, id = "flow", "flow-src", "flow-dst", "src-42"
	doc := func(srcSpec map[string]any) compositeDoc {
		return compositeDoc{
			Children: []childDoc{{Kind: kindPart, Name: src, Spec: srcSpec}, {Kind: kindPart, Name: dst}},
			Edges: []edgeDoc{{Dependent: kindPart + "/" + dst, Dependency: kindPart + "/" + src,
				Flows: []flowDoc{{From: "/id", To: "/upstream"}}}},
		}
	}
	applyComposite(t, srv.api, kindStack, root, doc(map[string]any{"omit_id": true}))
	waitPhase(t, srv.api, kindPart, src, client.PhaseReady)
	r := waitResource(t, srv.api, kindPart, dst, "waiting for the missing /id", composeTimeout, func(r *convergev1.Resource) bool {
		return r != nil && strings.Contains(r.GetWaiting(), "/id")
	})
	if r.GetPhase() != client.PhaseReconciling || r.GetReconciles() != 0 || !strings.Contains(r.GetWaiting(), kindPart+"/"+src) {
		t.Errorf("the dependent of a missing field: %s; want Reconciling, never run, waiting naming part/%s", explain(r), src)
	}
	if c := condition(r, "DependenciesReady"); c == nil || c.GetStatus() != "False" || !strings.Contains(c.GetMessage(), "/id") {
		t.Errorf("the dependent's DependenciesReady condition: %v; want False naming /id", c)
	}
	if top := getResource(t, srv.api, kindStack, root); top.GetPhase() == client.PhaseReady {
		t.Errorf("the composite is Ready while a child waits: %s", explain(top))
	}

	applyComposite(t, srv.api, kindStack, root, doc(map[string]any{"id": id}))
	r = waitPhase(t, srv.api, kindPart, dst, client.PhaseReady)
	if stringField(r.GetSpec(), "upstream") != id || stringField(r.GetStatus(), "upstream") != id || r.GetWaiting() != "" {
		t.Errorf("the dependent once the field arrived: %s, spec %v, status %v; want spec.upstream and status.upstream %q, not waiting",
			explain(r), r.GetSpec(), r.GetStatus(), id)
	}
	if c := condition(r, "DependenciesReady"); c != nil && c.GetStatus() == "False" {
		t.Errorf("the running dependent still has %v", c)
	}
	waitPhase(t, srv.api, kindStack, root, client.PhaseReady)
}

// settledOf reads the rollup a summary's childrenSettled reaction wrote
// into its status; ok is false when there is none.
func settledOf(r *convergev1.Resource) (counts map[string]int, ok bool) {
	s := r.GetStatus().GetFields()["settled"].GetStructValue()
	if s == nil {
		return nil, false
	}
	counts = map[string]int{}
	for k, v := range s.GetFields() {
		counts[k] = int(v.GetNumberValue())
	}
	return counts, true
}

// TestChildrenSettledReaction has a composite kind with a childrenSettled
// reaction: once the children settle, the reaction runs with the rollup's
// counts and the status it returns is on the composite; when a child
// fails, it runs again and counts the failure.
func TestChildrenSettledReaction(t *testing.T) {
	begin(t)
	srv := startServer(t, pgtest.New(t).URL, fast)
	applySpecKinds(t, srv.api)
	records := recordFile(t)
	startSpecWorker(t, srv, "specworker", "-record", records)
	const root, a, b, msg = "sum", "sum-a", "sum-b", "disk full"
	doc := func(fail string) compositeDoc {
		spec := map[string]any{}
		if fail != "" {
			spec["fail"] = fail
		}
		return compositeDoc{Children: []childDoc{{Kind: kindPart, Name: a}, {Kind: kindPart, Name: b, Spec: spec}}}
	}
	applyComposite(t, srv.api, kindSummary, root, doc(""))
	// The first time it reads Ready, the reaction's status is there: an
	// apply --wait returning on Ready finds it.
	r := waitResource(t, srv.api, kindSummary, root, "Ready", composeTimeout,
		func(r *convergev1.Resource) bool { return r.GetPhase() == client.PhaseReady })
	if s, ok := settledOf(r); !ok || s["total"] != 2 || s["ready"] != 2 {
		t.Fatalf("the composite turned Ready without the settled rollup of 2 ready children in its status: %v", r.GetStatus())
	}
	if n := r.GetStatus().GetFields()["children"].GetNumberValue(); n != 2 {
		t.Errorf("the composite's status %v lost the composer's children count", r.GetStatus())
	}
	checkSettledRecords(t, records, root)

	applyComposite(t, srv.api, kindSummary, root, doc(msg))
	r = waitResource(t, srv.api, kindSummary, root, "Failed with a settled rollup counting the failed child", composeTimeout,
		func(r *convergev1.Resource) bool {
			s, ok := settledOf(r)
			return ok && r.GetPhase() == client.PhaseFailed && s["total"] == 2 && s["ready"] == 1 && s["failed"] == 1
		})
	if c := r.GetRollup().GetCulprits(); len(c) != 1 || c[0].GetResource().GetName() != b || c[0].GetMessage() != msg {
		t.Errorf("the composite with a failed child: %s; want part/%s named with %q", explain(r), b, msg)
	}
	checkSettledRecords(t, records, root)
}

// checkSettledRecords checks that every childrenSettled task the worker
// ran was given settled children: none still reconciling.
func checkSettledRecords(t *testing.T, records, name string) {
	t.Helper()
	all := readRecords(t, records)
	settled := recordsOf(all, "settled", kindSummary, name)
	if len(settled) == 0 {
		t.Fatalf("the worker ran no childrenSettled task for summary/%s; records: %s", name, renderRecords(all))
	}
	for _, s := range settled {
		if s.Rollup == nil || s.Rollup.Total == 0 || s.Rollup.Reconciling != 0 {
			t.Errorf("a childrenSettled task ran with children still reconciling (or no rollup): %s", s)
		}
	}
}
