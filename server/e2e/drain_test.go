//go:build unix

package e2e

import (
	"context"
	"regexp"
	"strconv"
	"strings"
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

// TestDrainTimeoutHandsTasksBack SIGTERMs a worker whose handlers outlast
// its drain timeout: at the timeout it gives its tasks back, and a second
// worker runs them at once, far sooner than the 30 s lease would allow,
// without the stopped attempt counting as a failure.
func TestDrainTimeoutHandsTasksBack(t *testing.T) {
	begin(t)
	const n = 3
	timing := fast
	timing.lease, timing.heartbeat = 30*time.Second, time.Second
	db := pgtest.New(t)
	srv := startServer(t, db.URL, timing)
	applyKind(t, srv.api, leafKind(t, "greeting"))
	applyResources(t, srv.api, "greeting", "h", n)
	slow := startLeaf(t, srv, "slow", "-delay", "1h", "-drain-timeout", "500ms", "-capacity", strconv.Itoa(n))
	waitDispatched(t, db.Pool, n, 200*time.Millisecond)
	quick := startLeaf(t, srv, "quick", "-capacity", strconv.Itoa(n))
	waitLogged(t, quick, "worker subscribed")

	start := time.Now()
	slow.signal(t, syscall.SIGTERM)
	if code := slow.wait(t, drainTimeout); code != 0 {
		t.Fatalf("the slow worker exited with code %d after SIGTERM, want 0", code)
	}
	for {
		ready := listResources(t, srv.api, "greeting", client.PhaseReady)
		if len(ready) == n {
			break
		}
		// 5 s is far under the 30 s lease the tasks would otherwise wait for.
		if time.Since(start) > 5*time.Second {
			all := listResources(t, srv.api, "greeting")
			t.Fatalf("%s after SIGTERM, %d of %d resources are Ready; phases: %s; not ready: %s\nslow worker:\n%s",
				time.Since(start), len(ready), n, phaseCounts(all), describeSome(all, notReady), slow.output())
		}
		time.Sleep(50 * time.Millisecond)
	}
	for _, r := range listResources(t, srv.api, "greeting") {
		if r.GetReconciles() != 1 || r.GetFailure() != nil {
			t.Errorf("%s: reconciles %d, failure %v; want one reconcile and no failure", r.GetName(), r.GetReconciles(), r.GetFailure())
		}
	}
	for _, reason := range []string{"TransientFailure", "LeaseExpired"} {
		if evs := eventsWithReason(t, srv.api, "greeting", reason); len(evs) != 0 {
			t.Errorf("%d %s events; handing tasks back is neither a failure nor an expiry", len(evs), reason)
		}
	}
	if !strings.Contains(slow.output(), "giving the running tasks back") {
		t.Errorf("the slow worker did not log handing its tasks back:\n%s", slow.output())
	}
}

// waitLogged waits until p has printed want.
func waitLogged(t *testing.T, p *proc, want string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(p.output(), want) {
		if time.Now().After(deadline) {
			t.Fatalf("%s did not print %q within 30s:\n%s", p.name, want, p.output())
		}
		time.Sleep(20 * time.Millisecond)
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
