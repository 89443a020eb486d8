package maintenance

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/convergehq/converge/server/internal/testkit"
	"github.com/convergehq/converge/server/internal/trigger"
)

// testClaimReaper is a claim reaper with a liveness window short enough
// to wait out in a test.
func testClaimReaper(e *env, confirm time.Duration) *ClaimReaper {
	r := NewClaimReaper(tick, time.Minute, e.st, e.bus, quiet)
	r.lapse.LiveWithin = 300 * time.Millisecond
	r.confirm = confirm
	return r
}

// TestClaimReaper: the tasks of a claimer that stopped heartbeating go
// back to the queue well before their lease ends, with a ClaimerGone
// event naming it and a task wake-up; a live claimer keeps its tasks.
func TestClaimReaper(t *testing.T) {
	e := newEnv(t)
	e.apply("leaf", e.rev, "dead", `{}`)
	e.apply("leaf", e.rev, "live", `{}`)
	e.heartbeat("m-dead", "m-live")
	e.claim("leaf", trigger.SpecChange, "m-dead", time.Minute)
	e.claim("leaf", trigger.SpecChange, "m-live", time.Minute)
	e.drainWake()
	e.run(testClaimReaper(e, 3*tick))

	testkit.Eventually(t, "m-dead's task to be released", func() bool {
		e.heartbeat("m-live")
		return !e.get("leaf", "dead").Task.Claimed
	})
	e.wokeUp("requeueing a gone claimer's task")
	if ev := e.lastEvent("leaf", "dead"); ev.Reason != "ClaimerGone" || !strings.Contains(ev.Message, "m-dead") {
		t.Fatalf("last event = %+v; want ClaimerGone naming m-dead", ev)
	}
	if !e.get("leaf", "live").Task.Claimed {
		t.Fatal("a live member's task was released")
	}
}

// TestClaimReaperConfirms: a claimer is released only once passes confirm
// apart saw it lapsed, and a failed pass forgets what earlier ones saw.
func TestClaimReaperConfirms(t *testing.T) {
	e := newEnv(t)
	e.apply("leaf", e.rev, "dead", `{}`)
	e.heartbeat("m-dead")
	e.claim("leaf", trigger.SpecChange, "m-dead", time.Minute)
	r := testClaimReaper(e, time.Minute)
	claimed := func() bool { return e.get("leaf", "dead").Task.Claimed }
	testkit.Eventually(t, "m-dead's claim to lapse", func() bool {
		got, err := e.st.LapsedClaimers(e.ctx, r.lapse)
		return err == nil && len(got) == 1
	})

	r.reap(e.ctx)
	if _, seen := r.seen["m-dead"]; !seen || !claimed() {
		t.Fatalf("first sighting: seen %v, claimed %v; want seen and still claimed", r.seen, claimed())
	}
	r.reap(e.ctx)
	if !claimed() {
		t.Fatal("released on a second pass within confirm")
	}
	// A failing pass (the database unreachable: here, a cancelled
	// context) forgets the sighting, however old.
	r.seen["m-dead"] = time.Now().Add(-time.Hour)
	cancelled, cancel := context.WithCancel(e.ctx)
	cancel()
	r.reap(cancelled)
	if len(r.seen) != 0 {
		t.Fatalf("after a failed pass seen = %v; want nothing", r.seen)
	}
	r.reap(e.ctx)
	if !claimed() {
		t.Fatal("released on the first pass after a failure")
	}
	// Seen long enough ago: released.
	r.seen["m-dead"] = time.Now().Add(-time.Hour)
	r.reap(e.ctx)
	if claimed() {
		t.Fatal("not released although seen lapsed for longer than confirm")
	}
	if len(r.seen) != 1 {
		t.Fatalf("seen = %v; the released claimer stays until a pass no longer finds it", r.seen)
	}
	r.reap(e.ctx)
	if len(r.seen) != 0 {
		t.Fatalf("seen = %v after a pass found no lapsed claim; want nothing", r.seen)
	}
}

// TestClaimReaperIdleWithShortLease: with a lease no longer than the
// liveness window, a claim expires before it could lapse, and the reaper
// leaves it to the lease reaper.
func TestClaimReaperIdleWithShortLease(t *testing.T) {
	e := newEnv(t)
	e.apply("leaf", e.rev, "dead", `{}`)
	// Expired at once, and the claimer has no row: lapsed by the store's
	// rule within 100 ms, and the lease reaper's to requeue.
	e.claim("leaf", trigger.SpecChange, "m-dead", time.Millisecond)
	r := NewClaimReaper(tick, 200*time.Millisecond, e.st, e.bus, quiet)
	r.lapse.LiveWithin = 300 * time.Millisecond
	r.confirm = 0
	ctx, cancel := context.WithTimeout(e.ctx, time.Second)
	defer cancel()
	r.Run(ctx) // returns when ctx ends, having looked for nothing
	if !e.get("leaf", "dead").Task.Claimed {
		t.Fatal("the claim reaper ran with a lease shorter than the liveness window")
	}
}
