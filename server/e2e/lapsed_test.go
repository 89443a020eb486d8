//go:build unix

package e2e

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/convergehq/converge/server/internal/pgtest"
	"github.com/jackc/pgx/v5"
)

// production keeps the default lease, which is longer than the liveness
// window of a member, so a dead replica's claims lapse before they expire.
var production = timings{lease: 30 * time.Second, heartbeat: 5 * time.Second, poll: 200 * time.Millisecond,
	retryBase: 100 * time.Millisecond, retryMax: time.Second}

// TestKilledServerClaimsLapse SIGKILLs a lone server together with its
// worker while tasks are in flight, under the default 30 s lease, and
// starts both again: nobody resumes the dead server's claims, and the
// restarted server requeues them once the dead member's heartbeat and
// renewals are 10 s old (ClaimerGone), well before the leases would
// expire; every result is applied exactly once.
func TestKilledServerClaimsLapse(t *testing.T) {
	begin(t)
	dbURL := pgtest.New(t).URL
	srv := startServer(t, dbURL, production)
	applyKind(t, srv.api, leafKind(t, "greeting"))
	applyResources(t, srv.api, "greeting", "r", loadSize)
	leaf := startLeaf(t, srv, "leaf", "-delay", loadDelay, "-capacity", strconv.Itoa(loadCapacity))
	l := &load{srv: srv, leaf: leaf}
	l.midway(t)
	l.leaf.kill(t)
	srv.kill()
	killed := time.Now()
	held := claimedTasks(t, dbURL)
	srv.start()
	l.leaf = startLeaf(t, srv, "leaf #2", "-delay", loadDelay, "-capacity", strconv.Itoa(loadCapacity))
	l.finish(t)

	gone := eventsWithReason(t, srv.api, "greeting", "ClaimerGone")
	if held == 0 || len(gone) != held {
		t.Fatalf("%d ClaimerGone events, want %d (>0): one per task the killed server held", len(gone), held)
	}
	last := gone[0].GetTime().AsTime()
	for _, e := range gone {
		if !strings.Contains(e.GetMessage(), "is gone") {
			t.Errorf("ClaimerGone event says %q", e.GetMessage())
		}
		if at := e.GetTime().AsTime(); at.After(last) {
			last = at
		}
	}
	if after := last.Sub(killed); after >= production.lease {
		t.Fatalf("the dead server's claims were requeued %s after the kill; want well within the %s lease", after, production.lease)
	}
	if expired := eventsWithReason(t, srv.api, "greeting", "LeaseExpired"); len(expired) > 0 {
		t.Errorf("%d LeaseExpired events: the dead server's claims should have lapsed before their leases ran out", len(expired))
	}
	t.Logf("the killed server's %d tasks were requeued within %s of the kill (lease %s)", len(gone),
		last.Sub(killed).Round(time.Millisecond), production.lease)
}

// claimedTasks counts the tasks that hold a claim. A server frees a
// worker's slot when its result arrives and drops the claim once the
// result is applied, so a killed server may hold more claims than its
// workers' capacity.
func claimedTasks(t *testing.T, dbURL string) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatalf("connecting to count claims: %v", err)
	}
	defer conn.Close(context.Background())
	var n int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM tasks WHERE claimed_by IS NOT NULL`).Scan(&n); err != nil {
		t.Fatalf("counting claims: %v", err)
	}
	return n
}
