//go:build unix

package e2e

import (
	"fmt"
	"time"

	"github.com/convergehq/converge/sdk-go/client"
	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
)

// heal gives every kind a healthy worker, lifts every quarantine (so a
// dependent of a quarantined dependency can settle too) and forces a
// reconcile of what Failed; then everything must reach the state the
// model predicts: live resources Ready at their version, the deleted and
// the orphaned gone.
func (w *world) heal(t tb) (map[string][]string, string) {
	t.Helper()
	for _, n := range w.kindNames {
		k := w.kinds[n]
		w.fleet.setBehaviour(n, behaviour{mode: behOK})
		if !w.fleet.serves(n, k.latest()) {
			c := max(w.fleet.capacityOf(n), 4)
			w.fleet.stop(t, n, true)
			w.fleet.start(k.def, c)
		}
	}
	for _, key := range w.resKeys {
		if m := w.res[key]; m.quarantined {
			_, _ = call(t, "unquarantine "+key, w.api.UnquarantineResource, &convergev1.UnquarantineResourceRequest{Kind: m.kind, Name: m.name, Reason: "model heal"})
			m.quarantined = false
		}
	}
	forced := map[string]time.Time{}
	deadline := time.Now().Add(healTimeout)
	for {
		all := w.listAll(t)
		for key, r := range all {
			if r.GetPhase() == client.PhaseFailed && time.Since(forced[key]) > 3*time.Second {
				forced[key] = time.Now()
				_, _ = call(t, "reconcile "+key, w.api.ReconcileResource, &convergev1.ReconcileResourceRequest{Kind: r.GetKind(), Name: r.GetName(), Reason: "model heal"})
			}
		}
		bad := w.unhealed(all)
		if len(bad) == 0 {
			return nil, ""
		}
		if time.Now().After(deadline) {
			return map[string][]string{"not healed: the state differs from the model's prediction": bad}, w.report(all)
		}
		time.Sleep(finalPoll)
	}
}

// unhealed lists how the server differs from the model's prediction.
func (w *world) unhealed(all map[string]*convergev1.Resource) []string {
	var bad []string
	for key, r := range all {
		if w.res[key] == nil {
			bad = append(bad, fmt.Sprintf("%s exists, but the model knows no such resource: %s", key, explainFull(r)))
		}
	}
	for _, key := range w.resKeys {
		m, r := w.res[key], all[key]
		switch {
		case m.murky:
		case w.live(m) && r == nil:
			bad = append(bad, key+" should exist and be Ready, but does not exist")
		case w.live(m) && (r.GetPhase() != client.PhaseReady || r.GetSyncedGeneration() < r.GetGeneration()):
			bad = append(bad, key+" should be Ready: "+explainFull(r))
		case w.live(m) && m.owner == "" && int(r.GetKindVersion()) != m.version:
			bad = append(bad, fmt.Sprintf("%s should be at v%d: %s", key, m.version, explainFull(r)))
		case !w.live(m) && r != nil:
			bad = append(bad, key+" should be gone: "+explainFull(r))
		}
	}
	return bad
}

// checkOps checks that every operation invoked on a resource that is
// still live has finished, succeeded or failed: none is lost.
func (w *world) checkOps(t tb) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for _, key := range w.resKeys {
		m := w.res[key]
		if !w.live(m) {
			continue
		}
		for _, id := range m.ops {
			for {
				op := mustCall(t, "get operation "+id, w.api.GetOperation, &convergev1.GetOperationRequest{Id: id}).GetOperation()
				if s := op.GetState(); s == "succeeded" || s == "failed" {
					break
				}
				if time.Now().After(deadline) {
					t.Logf("operation %s on %s is still %s after heal: %v\n%s", id, key, op.GetState(), op, w.report(w.listAll(t)))
					t.Fatalf("invariant broken: an operation never finished")
				}
				time.Sleep(finalPoll)
			}
		}
	}
}
