//go:build unix

package e2e

import (
	"fmt"
	"time"

	"pgregory.net/rapid"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
)

// The model's actions on versions, workers and the server.

// moveVersion applies v2 of a leaf kind and moves one of its roots there
// in place, with a spec change so the move is a real generation.
func (w *world) moveVersion(t *rapid.T) {
	w.rec.nudge() // it may run a resource before its retry time
	k := w.kinds[pick(t, w.kindsWhere(func(k *mkind) bool { return !k.def.composite && len(k.def.versions) == 1 }), "leaf kind")]
	def := w.addV2(t, k, "moveVersion")
	roots := w.resWhere(func(m *mres) bool { return m.kind == def.name && m.owner == "" && !m.deleted && m.version == 1 })
	if len(roots) == 0 {
		return
	}
	m := w.res[rapid.SampledFrom(roots).Draw(t, "resource")]
	gen := w.generationOf(t, m)
	m.version = 2
	m.counter++
	w.note(t, "  re-apply %s at v2 counter=%d", m.key(), m.counter)
	if !w.applyRoot(t, m) {
		m.version, m.counter = 1, m.counter-1
		w.checkUnchanged(t, m, gen > 0, gen)
	}
}

// addV2 gives leaf kind k a version 2 with a random policy, and its
// worker (if it runs) one that serves v2 too.
func (w *world) addV2(t *rapid.T, k *mkind, action string) kindDef {
	p := drawPolicy(t, false)
	w.note(t, "%s %s to v2 policy={%v}", action, k.def.name, p)
	w.rec.setCap(kindVer{k.def.name, 2}, int(p.GetMaxInflight()))
	def := k.def
	def.versions = []int{1, 2}
	mustCall(t, "apply kind "+def.name+" v2", w.api.ApplyKind, &convergev1.ApplyKindRequest{Manifest: modelManifest(def, 2, p, k.config)})
	k.def, k.policy[2] = def, p
	w.noteFailing(k)
	if c := w.fleet.capacityOf(def.name); c > 0 {
		// A worker serves what it registered when it started: give the
		// kind one that serves v2 as well.
		w.fleet.stop(t, def.name, true)
		w.fleet.start(def, c)
	}
	return def
}

func drawBehaviour(t *rapid.T) behaviour {
	switch mode := rapid.SampledFrom([]string{behOK, behOK, behFailFirst, behFailAlways, behTerminal, behSlow}).Draw(t, "behaviour"); mode {
	case behFailFirst, behFailAlways:
		b := behaviour{mode: mode}
		if mode == behFailFirst {
			b.k = rapid.IntRange(1, 3).Draw(t, "fail_k")
		}
		if rapid.Bool().Draw(t, "with_reason") {
			b.reason = "ModelBusy"
			b.retryAfter = time.Duration(rapid.IntRange(0, 4).Draw(t, "retry_after_100ms")) * 100 * time.Millisecond
		}
		return b
	case behSlow:
		return behaviour{mode: mode, slow: time.Duration(rapid.IntRange(100, slowHandlerMs).Draw(t, "slow_ms")) * time.Millisecond}
	default:
		return behaviour{mode: mode}
	}
}

func (w *world) setBehaviour(t *rapid.T) {
	k := w.kinds[pick(t, w.kindNames, "kind")]
	b := drawBehaviour(t)
	w.note(t, "setBehaviour %s %s", k.def.name, b)
	w.fleet.setBehaviour(k.def.name, b)
	w.noteFailing(k)
}

func (w *world) restartWorker(t *rapid.T) {
	k := w.kinds[pick(t, w.kindsWhere(func(k *mkind) bool { return w.fleet.serving(k.def.name) }), "served kind")]
	graceful := rapid.Bool().Draw(t, "graceful")
	c := rapid.IntRange(1, maxCapacity).Draw(t, "capacity")
	w.note(t, "restartWorker %s graceful=%v capacity %d -> %d", k.def.name, graceful, w.fleet.capacityOf(k.def.name), c)
	w.fleet.stop(t, k.def.name, graceful)
	w.fleet.start(k.def, c)
}

func (w *world) stopServing(t *rapid.T) {
	k := w.kinds[pick(t, w.kindsWhere(func(k *mkind) bool { return w.fleet.serving(k.def.name) }), "served kind")]
	graceful := rapid.Bool().Draw(t, "graceful")
	w.note(t, "stopServing %s graceful=%v", k.def.name, graceful)
	w.fleet.stop(t, k.def.name, graceful)
}

func (w *world) startServing(t *rapid.T) {
	k := w.kinds[pick(t, w.kindsWhere(func(k *mkind) bool { return !w.fleet.serving(k.def.name) }), "unserved kind")]
	c := rapid.IntRange(1, maxCapacity).Draw(t, "capacity")
	w.note(t, "startServing %s capacity %d", k.def.name, c)
	w.fleet.start(k.def, c)
}

// restartServer kills the server with SIGKILL and starts it again on the
// same database and port; the workers reconnect by themselves.
func (w *world) restartServer(t *rapid.T) {
	if w.restarts >= maxRestarts {
		t.Skip("enough server restarts")
	}
	w.restarts++
	w.note(t, "restartServer (kill -9)")
	w.rec.fault()
	w.srv.kill(t)
	w.srv.start(t)
}

// recordDoomed notes, before m is deleted, the teardown order its
// deletion must keep: children before their composite, dependents
// before their dependencies. Only resources whose kinds have a teardown
// leave records to compare.
func (w *world) recordDoomed(t *rapid.T, m *mres) {
	if m.comp == nil {
		return
	}
	all := w.listAll(t)
	root := all[m.key()]
	if root == nil {
		return
	}
	var prev *convergev1.Resource
	for i := range m.comp.N {
		c := all[resKey(m.comp.ChildKind, childName(m.name, i))]
		if c == nil || c.GetOwner().GetName() != m.name {
			prev = nil
			continue
		}
		w.doomed = append(w.doomed, doomedPair{c.GetUid(), root.GetUid(), fmt.Sprintf("child %s before its composite %s", c.GetName(), m.key())})
		// A dependency already deleting (an earlier delete took it, not c)
		// may have its teardown under way: a dependent marked later cannot
		// stop that, and the engine promises the order only among the
		// resources deleted together.
		if prev != nil && (prev.GetDeletionRequestedAt() == nil || c.GetDeletionRequestedAt() != nil) {
			w.doomed = append(w.doomed, doomedPair{c.GetUid(), prev.GetUid(), fmt.Sprintf("dependent %s before its dependency %s", c.GetName(), prev.GetName())})
		}
		prev = c
	}
}
