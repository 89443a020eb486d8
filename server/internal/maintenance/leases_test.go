package maintenance

import (
	"strings"
	"testing"
	"time"

	"github.com/convergehq/converge/server/internal/testkit"
	"github.com/convergehq/converge/server/internal/trigger"
)

// TestLeaseReaper: a task whose lease ran out goes back to the queue with a
// LeaseExpired event and a task wake-up; a task whose lease runs on stays
// with its claimer.
func TestLeaseReaper(t *testing.T) {
	e := newEnv(t)
	e.apply("leaf", e.rev, "expired", `{}`)
	e.apply("leaf", e.rev, "held", `{}`)
	short := e.claim("leaf", trigger.SpecChange, "m1", time.Millisecond)
	e.claim("leaf", trigger.SpecChange, "m1", time.Minute)
	e.drainWake()
	e.run(NewLeaseReaper(tick, e.st, e.bus, quiet))

	testkit.Eventually(t, "the expired lease to be released", func() bool { return !e.get("leaf", "expired").Task.Claimed })
	e.wokeUp("requeueing an expired lease")
	if ev := e.lastEvent("leaf", "expired"); ev.Reason != "LeaseExpired" || !strings.Contains(ev.Message, "lease expired") {
		t.Fatalf("last event = %+v; want LeaseExpired", ev)
	}
	if again := e.claim("leaf", trigger.SpecChange, "m2", time.Minute); again.TaskID != short.TaskID || again.Epoch == short.Epoch {
		t.Fatalf("reclaimed %+v; want task %d under a new epoch", again.Lease, short.TaskID)
	}
	if !e.get("leaf", "held").Task.Claimed {
		t.Fatal("a task whose lease runs on was released")
	}
}
