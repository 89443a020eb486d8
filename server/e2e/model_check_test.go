//go:build unix

package e2e

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"pgregory.net/rapid"

	"github.com/convergehq/converge/sdk-go/client"
	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
)

// The invariants checked after every action. Each failure is reported
// with a message that names only the invariant (rapid compares messages
// while shrinking, and the details differ from run to run); the details
// go to the log just before it.

// checkStep is the state machine's "" action.
func (w *world) checkStep(t *rapid.T) {
	if w.steps >= modelSteps {
		return // past the cap nothing changes; the last check stands
	}
	all := w.listAll(t)
	w.checkPhases(t, all)
	w.checkProblems(t)
	w.checkChildCounts(t)
}

// checkChildCounts checks that the child counts the triggers keep for
// each composite (what its rollup reads) agree with a recount of its
// children. They are written in the transaction of each child's change,
// so they agree at every snapshot, not only once the system is calm.
func (w *world) checkChildCounts(t tb) {
	t.Helper()
	rows, err := w.db.Query(context.Background(), `
		SELECT d.owner_id, coalesce(o.kind || '/' || o.name, '?'), d.phase, d.kept, d.counted
		FROM converge_child_counts_drift() d LEFT JOIN resources o ON o.id = d.owner_id ORDER BY 1, 3`)
	if err != nil {
		t.Fatalf("reading the child counts' drift: %v", err)
	}
	var drift []string
	for rows.Next() {
		var id, kept, counted int64
		var owner, phase string
		if err := rows.Scan(&id, &owner, &phase, &kept, &counted); err != nil {
			t.Fatalf("reading the child counts' drift: %v", err)
		}
		drift = append(drift, fmt.Sprintf("%s (id %d): %s kept %d, counted %d", owner, id, phase, kept, counted))
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("reading the child counts' drift: %v", err)
	}
	if len(drift) > 0 {
		w.failClasses(t, map[string][]string{"a composite's kept child counts differ from a recount": drift},
			"actions so far:\n  "+strings.Join(w.ran, "\n  "))
	}
}

// failClasses reports the broken invariants, smallest class first, and
// fails with that class.
func (w *world) failClasses(t tb, found map[string][]string, context string) {
	t.Helper()
	if len(found) == 0 {
		return
	}
	classes := make([]string, 0, len(found))
	for c := range found {
		classes = append(classes, c)
	}
	sort.Strings(classes)
	for _, c := range classes {
		w.logBoth(t, "INVARIANT BROKEN: %s:\n  %s", c, strings.Join(found[c], "\n  "))
	}
	w.logBoth(t, "%s", context)
	t.Fatalf("invariant broken: %s", classes[0])
}

// checkPhases checks that every resource's phase agrees with its counters
// and with what the model asked for.
func (w *world) checkPhases(t tb, all map[string]*convergev1.Resource) {
	t.Helper()
	found := map[string][]string{}
	for k, r := range all {
		if class := phaseHonesty(r); class != "" {
			found[class] = append(found[class], k+": "+explainFull(r))
		}
		m := w.res[k]
		if m == nil || m.murky || m.deleted {
			continue
		}
		switch q := r.GetPhase() == client.PhaseQuarantined; {
		case m.quarantined && !q && r.GetDeletionRequestedAt() == nil:
			found["a quarantined resource is not Quarantined"] = append(found["a quarantined resource is not Quarantined"], k+": "+explainFull(r))
		case !m.quarantined && q:
			found["Quarantined without a quarantine"] = append(found["Quarantined without a quarantine"], k+": "+explainFull(r))
		}
	}
	if len(found) > 0 {
		w.failClasses(t, found, "actions so far:\n  "+strings.Join(w.ran, "\n  ")+"\nstate:\n"+w.describeAll(all))
	}
}

// phaseHonesty names what is wrong with r's phase given its counters, or
// returns "". The rule: a phase is honest about generations.
func phaseHonesty(r *convergev1.Resource) string {
	gen, synced := r.GetGeneration(), r.GetSyncedGeneration()
	f := r.GetFailure()
	ownTerminal := f.GetTerminal() && f.GetGeneration() == gen
	switch r.GetPhase() {
	case client.PhaseReady, client.PhaseDegraded:
		if synced < gen {
			return r.GetPhase() + " while its generation is ahead of its synced generation"
		}
		if ownTerminal {
			return r.GetPhase() + " with a terminal failure at its current generation"
		}
	case client.PhaseFailed:
		switch {
		case ownTerminal:
		case synced < gen:
			return "Failed while its generation is ahead of its synced generation, with no terminal failure of its own at it"
		case r.GetRollup().GetFailed() == 0 && !hasFailedCulprit(r):
			return "Failed with neither a terminal failure at its generation nor a failed descendant"
		}
	}
	return ""
}

func hasFailedCulprit(r *convergev1.Resource) bool {
	for _, c := range r.GetRollup().GetCulprits() {
		if c.GetPhase() == client.PhaseFailed {
			return true
		}
	}
	return false
}

// checkProblems fails on what the workers' instrumentation saw.
func (w *world) checkProblems(t tb) {
	t.Helper()
	found := map[string][]string{}
	for _, p := range w.rec.takeProblems() {
		found[p.class] = append(found[p.class], p.detail)
	}
	if len(found) > 0 {
		w.failClasses(t, found, "actions so far:\n  "+strings.Join(w.ran, "\n  ")+"\nhandler runs:\n"+w.rec.summary(80))
	}
}

// checkSettledStatus checks that a Ready composite whose kind has a
// childrenSettled reaction shows that reaction's status: Ready is
// reached only through it, however often the composer ran again.
func (w *world) checkSettledStatus(t tb) {
	t.Helper()
	found := map[string][]string{}
	for k, r := range w.listAll(t) {
		mk := w.kinds[r.GetKind()]
		if mk == nil || !mk.def.settles || r.GetPhase() != client.PhaseReady || r.GetDeletionRequestedAt() != nil {
			continue
		}
		if !r.GetStatus().GetFields()["settled"].GetBoolValue() {
			found["a Ready composite without its childrenSettled status"] = append(found["a Ready composite without its childrenSettled status"],
				fmt.Sprintf("%s: %s", k, explainFull(r)))
		}
	}
	if len(found) > 0 {
		w.failClasses(t, found, "actions so far:\n  "+strings.Join(w.ran, "\n  "))
	}
}

// checkTeardownOrder checks the order recorded at each delete:
// the teardown that must come first finished before the other started.
func (w *world) checkTeardownOrder(t tb) {
	t.Helper()
	firstStart, okEnd := map[string]invocation{}, map[string]invocation{}
	for _, inv := range w.rec.invocations() {
		if inv.reaction != "teardown" {
			continue
		}
		if _, ok := firstStart[inv.uid]; !ok {
			firstStart[inv.uid] = inv
		}
		if _, ok := okEnd[inv.uid]; !ok && inv.outcome == "ok" {
			okEnd[inv.uid] = inv
		}
	}
	found := map[string][]string{}
	for _, d := range w.doomed {
		if w.unordered[d.first] {
			continue
		}
		then, ran := firstStart[d.then]
		if !ran {
			continue
		}
		first, done := okEnd[d.first]
		_, firstRan := firstStart[d.first]
		if firstRan && (!done || then.start.Before(first.end)) {
			found["teardown out of order"] = append(found["teardown out of order"], fmt.Sprintf("%s: first %s, then %s", d.what, &first, &then))
		}
	}
	w.failClasses(t, found, "actions:\n  "+strings.Join(w.ran, "\n  ")+"\nhandler runs:\n"+w.rec.summary(80))
}
