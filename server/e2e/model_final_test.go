//go:build unix

package e2e

import (
	"fmt"
	"strings"
	"time"

	"github.com/convergehq/converge/sdk-go/client"
	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
)

// Bounds of the final phase. Quiescence needs a lease (3 s) for the work
// of a crashed server or worker, plus backoffs of at most 0.5 s; healing
// needs a few reconciles in dependency order.
const (
	quiesceTimeout = 10 * time.Second
	healTimeout    = 25 * time.Second
	finalPoll      = 200 * time.Millisecond
)

// finish is the end of every case: quiescence, then heal, then the checks
// that read the whole history. Quiescence and heal fail with one message:
// which of the two catches a stuck resource depends on timing, and rapid
// must see the same failure on every run of a case to shrink it.
func (w *world) finish(t tb) {
	t.Helper()
	if w.replica != nil {
		w.replica.heal(t)
	}
	found, report := w.quiesce(t)
	if len(found) == 0 {
		w.checkExplain(t)
		found, report = w.heal(t)
	}
	if len(found) > 0 {
		for c, lines := range found {
			w.logBoth(t, "INVARIANT BROKEN: %s:\n  %s", c, strings.Join(lines, "\n  "))
		}
		w.logBoth(t, "%s", report)
		t.Fatalf("invariant broken: the engine did not settle as the model predicts")
	}
	w.checkSettledStatus(t)
	w.checkTeardownOrder(t)
	w.checkOps(t)
	w.checkRecords(t)
	w.checkHistory(t)
	w.checkProblems(t)
}

// quiesce waits until every resource is explained: settled in a phase the
// model accepts, or waiting for a reason the model confirms. A resource
// left unexplained is a kind starved, a wake-up lost, or a phase wrong.
func (w *world) quiesce(t tb) (map[string][]string, string) {
	t.Helper()
	deadline := time.Now().Add(quiesceTimeout)
	for {
		all := w.listAll(t)
		bad := map[string][]string{}
		for k, r := range all {
			if ok, why := w.explained(r, all); !ok {
				bad["resources unexplained at quiescence"] = append(bad["resources unexplained at quiescence"], fmt.Sprintf("%s (%s): %s", k, why, explainFull(r)))
			}
		}
		if len(bad) == 0 {
			return nil, ""
		}
		if time.Now().After(deadline) {
			return bad, w.report(all)
		}
		time.Sleep(finalPoll)
	}
}

func (w *world) report(all map[string]*convergev1.Resource) string {
	return fmt.Sprintf("actions:\n  %s\nstate:\n%shandler runs:\n%sserver log tail:\n%s",
		strings.Join(w.ran, "\n  "), w.describeAll(all), w.rec.summary(60), w.srv.tail(30))
}

// explained says whether r's state is one the model accepts now, and why.
func (w *world) explained(r *convergev1.Resource, all map[string]*convergev1.Resource) (bool, string) {
	m := w.res[resKey(r.GetKind(), r.GetName())]
	if m == nil {
		return false, "the model knows no such resource"
	}
	if m.murky {
		return true, "a quarantined orphan"
	}
	k := w.kinds[m.kind]
	switch r.GetPhase() {
	case client.PhaseReady:
		return !m.deleted, "Ready"
	case client.PhaseQuarantined:
		return m.quarantined, "quarantined"
	case client.PhaseFailed:
		if r.GetFailure().GetTerminal() {
			return k.mayFail, "its handler was told to fail"
		}
		return w.anyChild(m, all, func(c *convergev1.Resource) bool { return c.GetPhase() == client.PhaseFailed }), "a child Failed"
	case client.PhaseOrphaned:
		return m.orphan, "its composite no longer emits it"
	case client.PhaseDeleting:
		return w.deletingExplained(m, r, all)
	case client.PhaseReconciling:
		return w.reconcilingExplained(m, r, all)
	}
	return false, "the model never makes a resource " + r.GetPhase()
}

// waitReason is the resource's own reason for not running, if any.
func (w *world) waitReason(m *mres, r *convergev1.Resource) (bool, string) {
	if !w.fleet.serves(m.kind, int(r.GetKindVersion())) {
		for _, c := range r.GetConditions() {
			if c.GetType() == "WorkerAvailable" && c.GetStatus() == "False" {
				return true, "no worker serves its kind, and it says so"
			}
		}
	}
	if f := r.GetFailure(); f != nil && !f.GetTerminal() && f.GetRetryAt() != nil && w.fleet.behaviourOf(m.kind).mode != behOK {
		return true, "its handler fails transiently and it waits for a retry"
	}
	return false, ""
}

func (w *world) reconcilingExplained(m *mres, r *convergev1.Resource, all map[string]*convergev1.Resource) (bool, string) {
	if ok, why := w.waitReason(m, r); ok {
		return true, why
	}
	if r.GetWaiting() != "" && m.owner != "" && m.index > 0 {
		dep := all[resKey(m.kind, childName(w.res[m.owner].name, m.index-1))]
		if dep == nil || dep.GetPhase() != client.PhaseReady {
			return true, "it waits for a dependency that is not Ready"
		}
		return false, "it waits for a dependency that is Ready: " + r.GetWaiting()
	}
	if m.comp != nil && r.GetSyncedGeneration() >= r.GetGeneration() {
		if w.anyChild(m, all, func(c *convergev1.Resource) bool {
			ok, _ := w.explained(c, all)
			return c.GetPhase() != client.PhaseReady && ok
		}) {
			return true, "a child is not Ready, for a reason"
		}
		if !w.fleet.serves(m.comp.ChildKind, 1) {
			return true, "its children's kind has no worker"
		}
	}
	return false, "Reconciling with nothing the model knows of holding it"
}

func (w *world) deletingExplained(m *mres, r *convergev1.Resource, all map[string]*convergev1.Resource) (bool, string) {
	if m.quarantined {
		return true, "quarantined: its teardown waits"
	}
	if !m.deleted && !m.orphan && !m.reclaimed && !(m.owner != "" && w.res[m.owner].handDeleted) {
		return false, "Deleting, but nothing deleted it"
	}
	if w.anyChild(m, all, func(*convergev1.Resource) bool { return true }) {
		return true, "its children are still being torn down"
	}
	if m.owner != "" {
		next := all[resKey(m.kind, childName(w.res[m.owner].name, m.index+1))]
		if next != nil && next.GetDeletionRequestedAt() != nil {
			return true, "its dependent is still being torn down"
		}
	}
	if ok, why := w.waitReason(m, r); ok && w.kinds[m.kind].def.finalizer {
		return true, why
	}
	return false, "Deleting with nothing the model knows of holding it"
}

func (w *world) anyChild(m *mres, all map[string]*convergev1.Resource, ok func(*convergev1.Resource) bool) bool {
	for _, c := range all {
		if c.GetOwner().GetName() == m.name && c.GetOwner().GetKind() == m.kind && ok(c) {
			return true
		}
	}
	return false
}
