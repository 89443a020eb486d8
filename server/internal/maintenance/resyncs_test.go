package maintenance

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/convergehq/converge/server/internal/store"
	"github.com/convergehq/converge/server/internal/testkit"
	"github.com/convergehq/converge/server/internal/trigger"
)

// TestResyncQueuer: while no kind resyncs, nothing is queued even when a
// resync is due; once one does, the due resync is queued as a resync task
// with a task wake-up.
func TestResyncQueuer(t *testing.T) {
	e := newEnv(t)
	e.apply("leaf", e.rev, "a", `{}`)
	task := e.claim("leaf", trigger.SpecChange, "m1", time.Minute)
	res, err := e.st.ApplyOutcomes(e.ctx, []store.Outcome{{Lease: task.Lease, Actor: "test", Status: []byte(`{}`),
		ResyncAfter: time.Millisecond}}, store.Backoff{Base: time.Second, Max: time.Second})
	if err != nil || !res[0].Applied {
		t.Fatalf("applying the result: %+v, %v", res, err)
	}
	var resyncing atomic.Bool
	var asked atomic.Int64
	e.run(NewResyncQueuer(tick, func() bool { asked.Add(1); return resyncing.Load() }, e.st, e.bus, quiet))

	// Passes that find no kind resyncing queue nothing.
	testkit.Eventually(t, "three passes", func() bool { return asked.Load() >= 3 })
	if r := e.get("leaf", "a"); r.Task != nil {
		t.Fatalf("a resync was queued while no kind resyncs: %+v", r.Task)
	}
	e.drainWake()
	resyncing.Store(true)
	testkit.Eventually(t, "the resync to be queued", func() bool {
		r := e.get("leaf", "a")
		return r.Task != nil && r.Task.Trigger == trigger.Resync
	})
	e.wokeUp("queueing a resync")
}
