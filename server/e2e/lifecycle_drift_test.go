//go:build unix

package e2e

import (
	"testing"
	"time"

	"github.com/convergehq/converge/sdk-go/client"
	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
)

// probeKinds are a leaf (probe) and a composite of them (rack), neither
// resyncing yet.
const probeKinds = `type: manifest
kind: probe
kind_version: 1
owner: e2e
spec_schema:
  type: object
  properties:
    fail: {type: string}
    report: {type: object}
reactions:
  - {name: reconcile, trigger: specChange, emits: [status]}
---
type: manifest
kind: rack
kind_version: 1
owner: e2e
spec_schema:
  type: object
  properties:
    children: {type: array}
reactions:
  - {name: compose, trigger: specChange, emits: [children, status]}
`

// driftBound is how soon a drifted resource, and its root, must be
// Degraded: one resync interval (1 s) plus one tick of the resync queuer
// (1 s), plus a second for the task to run on a busy machine (about 2 s in
// all is usual).
const driftBound = 3 * time.Second

// TestDrift turns resync on for a kind live (no restart), then has the
// world drift under a resource: the next resync reports it unhealthy,
// and it and its root are Degraded within driftBound with no new
// generation; once the drift is gone both are Ready again.
func TestDrift(t *testing.T) {
	begin(t)
	l := startLifecycle(t)
	l.mustApply(probeKinds, "kind probe/v1 created", "kind rack/v1 created")
	l.mustApply("type: resource\nkind: rack\nkind_version: 1\nname: r1\nspec: {children: [{kind: probe, name: p1, spec: {}}]}\n")
	l.waitPhase("rack", "r1", client.PhaseReady)
	l.waitSynced("probe", "p1", 1)

	l.mustCtl("kind", "policy", "probe/v1", "--set", "resync_interval_seconds=1")
	first := l.waitRecord("a resync of probe/p1 once resync is enabled", func(r lcRecord) bool {
		return r.Event == "task" && r.Name == "p1" && r.Trigger == "resync"
	})
	if first.Generation != 1 || first.Reaction != "reconcile" {
		t.Errorf("the first resync: %s; want the reconcile reaction at generation 1", first)
	}

	l.setDrift("probe", "p1", true)
	drifted := time.Now()
	p1 := waitResource(t, l.srv.api, "probe", "p1", client.PhaseDegraded, 10*time.Second, func(r *convergev1.Resource) bool {
		return r != nil && r.GetPhase() == client.PhaseDegraded
	})
	r1 := waitResource(t, l.srv.api, "rack", "r1", client.PhaseDegraded, 10*time.Second, func(r *convergev1.Resource) bool {
		return r != nil && r.GetPhase() == client.PhaseDegraded
	})
	if took := time.Since(drifted); took > driftBound {
		t.Errorf("probe/p1 and its root were Degraded %s after it drifted; want within %s", took.Round(time.Millisecond), driftBound)
	}
	if p1.GetGeneration() != 1 || p1.GetHealthy() {
		t.Errorf("the drifted probe: %s healthy=%v; want generation 1 (a resync changes no spec), unhealthy", describe(p1), p1.GetHealthy())
	}
	if r1.GetGeneration() != 1 || !hasCulprit(r1, "probe", "p1") {
		t.Errorf("the drifted probe's root: %s; want generation 1, naming probe/p1 as its culprit", explain(r1))
	}

	l.setDrift("probe", "p1", false)
	l.waitPhase("probe", "p1", client.PhaseReady)
	if r1 := l.waitPhase("rack", "r1", client.PhaseReady); r1.GetGeneration() != 1 {
		t.Errorf("the root after the drift was repaired: %s; want generation 1", describe(r1))
	}
	if p1 := l.get("probe/p1"); p1.GetGeneration() != 1 || p1.GetSyncedGeneration() != 1 {
		t.Errorf("probe/p1 after the drift was repaired: %s; want generation 1, synced 1", describe(p1))
	}
	for _, r := range l.tasks("probe", "p1", "") {
		if r.Generation != 1 {
			t.Errorf("the worker ran %s; every task of probe/p1 should be at generation 1", r)
		}
	}
}

// hasCulprit reports whether a composite names kind/name as a culprit.
func hasCulprit(r *convergev1.Resource, kind, name string) bool {
	for _, c := range r.GetRollup().GetCulprits() {
		if c.GetResource().GetKind() == kind && c.GetResource().GetName() == name {
			return true
		}
	}
	return false
}
