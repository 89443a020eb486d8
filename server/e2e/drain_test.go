//go:build unix

package e2e

import (
	"context"
	"regexp"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/convergehq/converge/sdk-go/client"
	"github.com/convergehq/converge/server/internal/pgtest"
)

// TestWorkerDrain SIGTERMs the leaf worker while it runs tasks: it finishes
// them, their results are applied before it exits 0, and nothing waits for
// a lease to run out (the lease is far longer than the test allows).
func TestWorkerDrain(t *testing.T) {
	begin(t)
	const n = 8
	timing := fast
	timing.lease, timing.heartbeat = 30*time.Second, time.Second
	db := pgtest.New(t)
	srv := startServer(t, db.URL, timing)
	applyKind(t, srv.api, leafKind(t, "greeting"))
	applyResources(t, srv.api, "greeting", "d", n)
	leaf := startLeaf(t, srv, "leaf", "-delay", "2s", "-capacity", strconv.Itoa(n))

	waitDispatched(t, db.Pool, n, 200*time.Millisecond)
	if ready := listResources(t, srv.api, "greeting", client.PhaseReady); len(ready) > 0 {
		t.Fatalf("%d resources were Ready before SIGTERM; the worker's -delay is too short for this machine", len(ready))
	}
	start := time.Now()
	leaf.signal(t, syscall.SIGTERM)
	if code := leaf.wait(t, drainTimeout); code != 0 {
		t.Fatalf("leaf exited with code %d after SIGTERM, want 0", code)
	}
	if took := time.Since(start); took > timing.lease/3 {
		t.Errorf("the drain took %s; with its tasks finishing it should take about the task's 2s, far under the %s lease", took, timing.lease)
	}

	// The worker waited for its results to be applied before exiting.
	all := listResources(t, srv.api, "greeting")
	if ready := len(listResources(t, srv.api, "greeting", client.PhaseReady)); ready != n {
		t.Fatalf("when the drained worker exited, %d of %d resources were Ready; phases: %s; not ready: %s",
			ready, n, phaseCounts(all), describeSome(all, notReady))
	}
	checkAppliedOnce(t, all)
	m := regexp.MustCompile(`worker draining\b.*\brunning=(\d+)`).FindStringSubmatch(leaf.output())
	if m == nil || m[1] != strconv.Itoa(n) {
		t.Errorf("the worker's drain log line reports running tasks %v, want running=%d", m, n)
	}
	if expired := eventsWithReason(t, srv.api, "greeting", "LeaseExpired"); len(expired) != 0 {
		t.Errorf("%d leases expired; a drained worker's tasks must not need lease expiry", len(expired))
	}
}

// waitDispatched waits until n tasks have been claimed for at least age,
// which is ample time for the server to have sent them to the worker. It
// reads the task queue directly: the API shows no running tasks.
func waitDispatched(t *testing.T, pool *pgxpool.Pool, n int, age time.Duration) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
		var claimed int
		err := pool.QueryRow(ctx, `SELECT count(*) FROM tasks
			WHERE claimed_by IS NOT NULL AND claimed_at <= now() - $1 * interval '1 millisecond'`,
			age.Milliseconds()).Scan(&claimed)
		cancel()
		if err != nil {
			t.Fatalf("counting claimed tasks: %v", err)
		}
		if claimed >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 30s, %d tasks have been claimed for %s, want %d", claimed, age, n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
