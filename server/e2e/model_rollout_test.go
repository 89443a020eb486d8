//go:build unix

package e2e

import (
	"time"

	"pgregory.net/rapid"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
)

// rolloutWait bounds how long the model waits for a rollout to end: its
// waves at most, each its moves and a Ready timeout of one second.
const rolloutWait = 30 * time.Second

// rolloutVersion rolls a leaf kind's v1 roots out to v2 (given to it
// first if it has none; v2 has no conversion, so specs move unchanged) in
// random waves, lets it end by itself (completed, or
// stopped by failures of faulty handlers), aborts it if it stopped, and
// moves the model's roots that the server says are at v2 now: each is a
// re-apply at v2, and the invariants then hold them to it.
func (w *world) rolloutVersion(t *rapid.T) {
	w.rec.nudge() // its moves may run a resource before its retry time, as any re-apply
	hasV1Roots := func(k *mkind) bool {
		return !k.def.composite && len(w.resWhere(func(m *mres) bool {
			return m.kind == k.def.name && m.owner == "" && !m.deleted && m.version == 1
		})) > 0
	}
	k := w.kinds[pick(t, w.kindsWhere(hasV1Roots), "leaf kind with v1 roots")]
	if len(k.def.versions) == 1 {
		w.addV2(t, k, "rolloutVersion: first")
	}
	roots := w.resWhere(func(m *mres) bool { return m.kind == k.def.name && m.owner == "" && !m.deleted && m.version == 1 })
	req := &convergev1.StartRolloutRequest{Kind: k.def.name, ToVersion: 2, ReadyTimeoutSeconds: 1,
		WaveCount: int32(rapid.IntRange(1, 3).Draw(t, "waves")), MaxFailures: int32(rapid.IntRange(0, 2).Draw(t, "max failures"))}
	w.note(t, "rolloutVersion %s to v2 in %d waves, max failures %d", k.def.name, req.WaveCount, req.MaxFailures)
	id := mustCall(t, "start rollout of "+k.def.name, w.api.StartRollout, req).GetRollout().GetId()
	deadline := time.Now().Add(rolloutWait)
	var r *convergev1.Rollout
	for {
		r = mustCall(t, "get rollout", w.api.GetRollout, &convergev1.GetRolloutRequest{RolloutId: id}).GetRollout()
		if r.GetState() != "running" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("rollout %d still running after %s: %v", id, rolloutWait, r)
		}
		time.Sleep(100 * time.Millisecond)
	}
	w.note(t, "  rollout %d %s: %d ready, %d failed of %d", id, r.GetState(), r.GetCounts().GetReady(), r.GetCounts().GetFailed(), r.GetCounts().GetTotal())
	if r.GetState() == "failed" {
		mustCall(t, "abort rollout", w.api.AbortRollout, &convergev1.AbortRolloutRequest{RolloutId: id, Reason: "model"})
	}
	for _, key := range roots {
		m := w.res[key]
		got := mustCall(t, "get "+m.key(), w.api.GetResource, &convergev1.GetResourceRequest{Kind: m.kind, Name: m.name}).GetResource()
		if got.GetKindVersion() == 2 {
			m.version = 2
			w.note(t, "  %s moved to v2", m.key())
		}
	}
}
