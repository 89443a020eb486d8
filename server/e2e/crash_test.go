//go:build unix

package e2e

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/convergehq/converge/server/internal/devpg"
	"github.com/convergehq/converge/server/internal/pgtest"
)

// The crash tests disrupt a server working through loadSize resources with
// a leaf worker that takes loadDelay per task, loadCapacity at a time: the
// work takes a few seconds, with loadCapacity tasks in flight at any moment.
const (
	loadSize     = 500
	loadDelay    = "200ms"
	loadCapacity = 50
	// convergeTimeout bounds how long the work may take to finish after a
	// disruption.
	convergeTimeout = 90 * time.Second
)

// load is a server with loadSize greeting resources and a leaf worker
// serving them.
type load struct {
	srv  *server
	leaf *proc
}

func startLoad(t *testing.T, dbURL string) *load {
	t.Helper()
	srv := startServer(t, dbURL, fast)
	applyKind(t, srv.api, leafKind(t, "greeting"))
	applyResources(t, srv.api, "greeting", "r", loadSize)
	leaf := startLeaf(t, srv, "leaf", "-delay", loadDelay, "-capacity", strconv.Itoa(loadCapacity))
	return &load{srv: srv, leaf: leaf}
}

// midway waits until some but not all resources are Ready, so tasks are in
// flight.
func (l *load) midway(t *testing.T) {
	t.Helper()
	got := waitReadyCount(t, l.srv.api, "greeting", loadSize/5, convergeTimeout)
	if got >= loadSize {
		t.Fatalf("all %d resources were Ready before the disruption; slow the worker down (-delay) so tasks are in flight", got)
	}
	t.Logf("disrupting with %d of %d resources Ready", got, loadSize)
}

// finish waits for every resource to be Ready and checks each was applied
// exactly once.
func (l *load) finish(t *testing.T) {
	t.Helper()
	all := waitAllReady(t, l.srv.api, "greeting", loadSize, convergeTimeout)
	checkAppliedOnce(t, all)
	if l.leaf.exited() {
		t.Errorf("the leaf worker exited during the test; it must ride out the disruption")
	}
}

// TestServerKilledWithTasksInFlight SIGKILLs the server while the worker
// runs tasks and starts it again on the same database and port: the worker
// reconnects and resumes, and every result is applied exactly once.
func TestServerKilledWithTasksInFlight(t *testing.T) {
	begin(t)
	l := startLoad(t, pgtest.New(t).URL)
	l.midway(t)
	l.srv.kill()
	l.srv.start()
	l.finish(t)
}

// TestDatabaseRestartedUnderLoad restarts PostgreSQL while tasks flow: the
// server reconnects and carries on, and every result is applied exactly
// once.
func TestDatabaseRestartedUnderLoad(t *testing.T) {
	begin(t)
	cluster := pgtest.NewCluster(t, devpg.Options{InMemory: true})
	l := startLoad(t, pgtest.MigratedDB(t, cluster))
	l.midway(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := cluster.Restart(ctx); err != nil {
		t.Fatalf("restarting PostgreSQL: %v", err)
	}
	l.finish(t)
	if l.srv.proc.exited() {
		t.Fatalf("the server exited when PostgreSQL restarted; it must reconnect")
	}
	if ok, why := l.srv.ready(); !ok {
		t.Errorf("after PostgreSQL restarted, /readyz answers %s", why)
	}
}

// TestWorkerKilledWithTasksInFlight SIGKILLs the worker while it runs
// tasks: after the lease window its tasks go to a second worker, and every
// result is applied exactly once.
func TestWorkerKilledWithTasksInFlight(t *testing.T) {
	begin(t)
	l := startLoad(t, pgtest.New(t).URL)
	l.midway(t)
	l.leaf.kill(t)
	killed := time.Now()
	l.leaf = startLeaf(t, l.srv, "leaf #2", "-delay", loadDelay, "-capacity", strconv.Itoa(loadCapacity))
	l.finish(t)
	// The killed worker held up to loadCapacity leases; each ran out once,
	// within a lease of the kill. The second worker claims them only then,
	// so a lease of its own that ran out (a machine too loaded to renew it)
	// shows up later; exactly-once above covers those, they are only logged.
	var first time.Time
	var held, later int
	for _, e := range eventsWithReason(t, l.srv.api, "greeting", "LeaseExpired") {
		at := e.GetTime().AsTime()
		if at.Sub(killed) >= 2*fast.lease {
			later++
			continue
		}
		held++
		if first.IsZero() || at.Before(first) {
			first = at
		}
	}
	if held < 1 || held > loadCapacity {
		t.Fatalf("%d LeaseExpired events within %s of the kill (and %d later), want between 1 and %d: one per task the killed worker held",
			held, 2*fast.lease, later, loadCapacity)
	}
	t.Logf("the killed worker's %d tasks were requeued %s after the kill (lease %s); %d leases ran out later",
		held, first.Sub(killed).Round(time.Millisecond), fast.lease, later)
}
