//go:build unix

package e2e

import (
	"context"
	"fmt"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/convergehq/converge/sdk-go/client"
	"github.com/convergehq/converge/server/internal/pgtest"
)

// The replicas test: replicaCount control and replicaCount broker
// processes, one leaf worker per broker, replicaSize resources. The
// workers run replicaCapacity tasks of replicaDelay each at once, so the
// work takes several seconds and every broker holds leases when one is
// killed.
const (
	replicaCount    = 3
	replicaSize     = 600
	replicaDelay    = "200ms"
	replicaCapacity = 8
	// takeoverTimeout bounds how long after the kill the killed broker's
	// tasks may stay leased to it or wait unclaimed: the lease window plus
	// the lease reaper's and the claim loop's periods, with room to spare.
	takeoverTimeout = 30 * time.Second
)

// startReplica runs `converge serve --role role` against dbURL on a free
// port and returns once it is ready. Only the first replica migrates.
func startReplica(t *testing.T, dbURL, role string, n int, migrate bool) *server {
	t.Helper()
	s := &server{t: t, dbURL: dbURL, timing: fast, addr: freeAddr(t), starts: 1}
	s.url = "http://" + s.addr
	s.api = client.New(s.url)
	tm := s.timing
	s.proc = startProc(t, fmt.Sprintf("converge %s #%d", role, n), bin.converge, "serve",
		"--role", role, "--migrate="+strconv.FormatBool(migrate),
		"--database-url", s.dbURL, "--listen", s.addr,
		"--lease", tm.lease.String(), "--heartbeat", tm.heartbeat.String(), "--poll", tm.poll.String(),
		"--retry-base", tm.retryBase.String(), "--retry-max", tm.retryMax.String())
	s.waitReady()
	return s
}

// replicaSet is replicaCount control and replicaCount broker replicas on
// one database, with replicaSize greeting resources and one leaf worker
// per broker.
type replicaSet struct {
	db       *pgtest.DB
	controls []*server
	brokers  []*server
	leaves   []*proc
	front    *front // nil when each leaf dials its own broker
	// routedAtKill is routedToSurvivors of the victim while it was frozen,
	// before any of its workers could reconnect.
	routedAtKill int
}

// startReplicas starts the set. With viaFront every leaf dials a TCP front
// over the brokers; without, leaf i dials broker i.
func startReplicas(t *testing.T, viaFront bool) *replicaSet {
	t.Helper()
	rs := &replicaSet{db: pgtest.New(t)}
	for i := range replicaCount {
		rs.controls = append(rs.controls, startReplica(t, rs.db.URL, "control", i+1, i == 0))
	}
	var addrs []string
	for i := range replicaCount {
		b := startReplica(t, rs.db.URL, "broker", i+1, false)
		rs.brokers, addrs = append(rs.brokers, b), append(addrs, b.addr)
	}
	if viaFront {
		rs.front = startFront(t, addrs)
	}
	api := rs.controls[0].api
	applyKind(t, api, leafKind(t, "greeting"))
	applyResources(t, api, "greeting", "r", replicaSize)
	for i, b := range rs.brokers {
		url := b.url
		if viaFront {
			url = rs.front.url
		}
		rs.leaves = append(rs.leaves, startProc(t, fmt.Sprintf("leaf #%d", i+1), bin.leaf, "-server", url,
			"-delay", replicaDelay, "-capacity", strconv.Itoa(replicaCapacity)))
	}
	return rs
}

// kill waits until the work is under way, then SIGKILLs control #1 (the
// API replica the test used so far) and the broker holding the most
// leases, and with killWorker the leaf dialing that broker. It returns the
// broker's index, its member ID, the database's clock just after the
// kills and the tasks the broker held.
func (rs *replicaSet) kill(t *testing.T, killWorker bool) (int, string, time.Time, []int64) {
	t.Helper()
	got := waitReadyCount(t, rs.controls[1].api, "greeting", replicaSize/5, convergeTimeout)
	if got >= replicaSize {
		t.Fatalf("all %d resources were Ready before the kill; slow the workers down (-delay) so tasks are in flight", got)
	}
	victim, member := leaseHolder(t, rs.db.Pool, rs.brokers)
	// Frozen first, so that what it holds is read before anyone can take
	// it over: a worker whose broker dies reconnects and hands its leases
	// to another broker within milliseconds.
	rs.brokers[victim].proc.signal(t, syscall.SIGSTOP)
	_, held := leasesOf(t, rs.db.Pool, member)
	if rs.front != nil {
		rs.routedAtKill = rs.routedToSurvivors(victim)
	}
	rs.controls[0].kill()
	rs.brokers[victim].kill()
	if killWorker {
		rs.leaves[victim].kill(t)
	}
	killedAt, _ := leasesOf(t, rs.db.Pool, member)
	t.Logf("killed control #1 and broker #%d (member %s, worker killed too: %t) holding %d leases, with %d of %d resources Ready",
		victim+1, member, killWorker, len(held), got, replicaSize)
	if len(held) == 0 {
		t.Fatalf("the killed broker %s held no leases after the kill; the test needs it to hold some to measure a takeover", member)
	}
	return victim, member, killedAt, held
}

// finish waits for every resource to be Ready through a surviving control
// replica, checks each was applied once, and that the survivors and the
// workers not killed still run.
func (rs *replicaSet) finish(t *testing.T, victim int, workerKilled bool) {
	t.Helper()
	api := rs.controls[1].api
	all := waitAllReady(t, api, "greeting", replicaSize, convergeTimeout)
	checkAppliedOnce(t, all)
	t.Logf("%d LeaseExpired events", len(eventsWithReason(t, api, "greeting", "LeaseExpired")))
	for i, l := range rs.leaves {
		if l.exited() && (i != victim || !workerKilled) {
			t.Errorf("%s exited; workers must ride out a broker's death", l.name)
		}
	}
	for i, s := range rs.brokers {
		if s.proc.exited() && i != victim {
			t.Errorf("%s exited; the surviving replicas must keep running", s.proc.name)
		}
	}
	for _, s := range rs.controls[1:] {
		if s.proc.exited() {
			t.Errorf("%s exited; the surviving replicas must keep running", s.proc.name)
		}
	}
}

// TestReplicasKilledWorkersReconnect runs three control and three broker
// replicas on one database under load and SIGKILLs one of each: the
// killed broker's workers reconnect to a live broker, which adopts their
// leases (the worker's resume); every resource converges, each applied
// once. It logs the takeover time.
//
// The workers dial a TCP front over the brokers (a Service, in
// Kubernetes): the SDK takes one URL and redials it, so the worker whose
// broker died reaches a live one through the front without a restart.
func TestReplicasKilledWorkersReconnect(t *testing.T) {
	begin(t)
	rs := startReplicas(t, true)
	victim, member, killedAt, held := rs.kill(t, false)
	routedBefore := rs.routedAtKill

	to := waitTakeover(t, rs.db.Pool, member, held, killedAt)
	t.Logf("takeover: %s from kill to another broker holding a task the killed broker held; re-claim after lease expiry: %s (lease %s)",
		to.first.Round(time.Millisecond), to.reclaimed.Round(time.Millisecond), fast.lease)
	if to.reclaimed != 0 && to.reclaimed < fast.lease/2 {
		t.Errorf("a task whose lease the killed broker held was claimed anew %s after the kill, before its %s lease could run out", to.reclaimed, fast.lease)
	}
	rs.finish(t, victim, false)
	if after := rs.routedToSurvivors(victim); after <= routedBefore {
		t.Errorf("no connection reached a live broker after the kill (%d before, %d after): the killed broker's worker did not reconnect elsewhere",
			routedBefore, after)
	}
}

// TestReplicasKilledWithTheirWorkers is the node failure: a broker and
// the worker dialing it are SIGKILLed together (with control #1), so no
// worker resumes the broker's leases. They run out after the lease window
// and other brokers claim the tasks anew; every resource converges, each
// applied once. It logs that takeover time, from the claims' timestamps.
func TestReplicasKilledWithTheirWorkers(t *testing.T) {
	begin(t)
	rs := startReplicas(t, false)
	victim, member, killedAt, held := rs.kill(t, true)

	to := waitTakeover(t, rs.db.Pool, member, held, killedAt)
	t.Logf("takeover: %s from kill to the first claim by another broker of a task the killed broker held (lease %s)",
		to.reclaimed.Round(time.Millisecond), fast.lease)
	if to.reclaimed == 0 {
		t.Errorf("no task the killed broker held was claimed anew, yet none is left leased to it; its worker died with it, so nothing could adopt its leases")
	} else if to.reclaimed < fast.lease/2 {
		t.Errorf("a task whose lease the killed broker held was claimed anew %s after the kill, before its %s lease could run out", to.reclaimed, fast.lease)
	}
	rs.finish(t, victim, true)
}

// routedToSurvivors counts the connections the front handed to brokers
// other than victim.
func (rs *replicaSet) routedToSurvivors(victim int) int {
	n := 0
	for i, b := range rs.brokers {
		if i != victim {
			n += rs.front.routedTo(b.addr)
		}
	}
	return n
}

// leaseHolder waits until a broker holds leases and returns its index and
// member ID (replicas register their pid in members).
func leaseHolder(t *testing.T, pool *pgxpool.Pool, brokers []*server) (int, string) {
	t.Helper()
	byPID := map[int]int{}
	for i, b := range brokers {
		byPID[b.proc.cmd.Process.Pid] = i
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
		var member string
		var pid int
		err := pool.QueryRow(ctx, `SELECT m.id, m.pid FROM tasks t JOIN members m ON m.id = t.claimed_by
			GROUP BY m.id, m.pid ORDER BY count(*) DESC LIMIT 1`).Scan(&member, &pid)
		cancel()
		if i, ok := byPID[pid]; err == nil && ok {
			return i, member
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 30s no broker of this test holds a lease (last: member %q pid %d, %v)", member, pid, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// leasesOf returns the database's clock and the tasks member holds.
func leasesOf(t *testing.T, pool *pgxpool.Pool, member string) (time.Time, []int64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	var at time.Time
	var ids []int64
	err := pool.QueryRow(ctx, `SELECT clock_timestamp(),
		coalesce(array_agg(id) FILTER (WHERE claimed_by = $1), '{}') FROM tasks`, member).Scan(&at, &ids)
	if err != nil {
		t.Fatalf("reading the leases of member %s: %v", member, err)
	}
	return at, ids
}

// takeover is how the dead broker's leases passed to other brokers, in
// database time from the kill.
type takeover struct {
	// first is when another broker first held or finished a task the dead
	// one held: the worker's resume adopts its leases on the broker it
	// reconnects to. Observed by polling, so late by up to a poll.
	first time.Duration
	// reclaimed is when another broker first claimed anew a task whose
	// lease ran out (stamped claimed_at); zero if every lease was adopted.
	reclaimed time.Duration
}

// waitTakeover polls until no task is leased to the dead member or waits
// in the queue for a new claim, and returns how the leases were taken
// over. It polls faster than a task runs, so a claim cannot come and go
// unseen.
func waitTakeover(t *testing.T, pool *pgxpool.Pool, dead string, held []int64, killedAt time.Time) takeover {
	t.Helper()
	var to takeover
	deadline := time.Now().Add(takeoverTimeout)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
		var now time.Time
		var reclaimed *time.Time
		var present, left, queued, moved int
		err := pool.QueryRow(ctx, `SELECT clock_timestamp(), count(*),
			count(*) FILTER (WHERE claimed_by = $1),
			count(*) FILTER (WHERE claimed_by IS NULL),
			count(*) FILTER (WHERE claimed_by <> $1),
			min(claimed_at) FILTER (WHERE claimed_by <> $1 AND claimed_at > $3)
			FROM tasks WHERE id = ANY($2)`, dead, held, killedAt).Scan(&now, &present, &left, &queued, &moved, &reclaimed)
		cancel()
		if err != nil {
			t.Fatalf("reading the dead broker's tasks: %v", err)
		}
		if to.first == 0 && (moved > 0 || present < len(held)) {
			to.first = now.Sub(killedAt)
		}
		if to.reclaimed == 0 && reclaimed != nil {
			to.reclaimed = reclaimed.Sub(killedAt)
		}
		if left == 0 && queued == 0 {
			return to
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s after killing broker %s, of the %d tasks it held %d are still leased to it and %d wait in the queue",
				takeoverTimeout, dead, len(held), left, queued)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestBrokerDrainsOnSIGTERM stops the busiest of three brokers with
// SIGTERM under load: it exits 0, its member row is gone, so the others
// re-tile its shards at once, its workers carry their tasks to a live
// broker, and every resource converges, each applied once.
func TestBrokerDrainsOnSIGTERM(t *testing.T) {
	begin(t)
	rs := startReplicas(t, true)
	got := waitReadyCount(t, rs.controls[1].api, "greeting", replicaSize/5, convergeTimeout)
	if got >= replicaSize {
		t.Fatalf("all %d resources were Ready before the SIGTERM; slow the workers down (-delay) so tasks are in flight", got)
	}
	victim, member := leaseHolder(t, rs.db.Pool, rs.brokers)
	p := rs.brokers[victim].proc
	p.signal(t, syscall.SIGTERM)
	if code := p.wait(t, 30*time.Second); code != 0 {
		t.Fatalf("broker #%d exited with code %d after SIGTERM, want 0\n%s", victim+1, code, p.output())
	}
	var rows int
	if err := rs.db.Pool.QueryRow(context.Background(), `SELECT count(*) FROM members WHERE id = $1`, member).Scan(&rows); err != nil {
		t.Fatal(err)
	}
	if rows != 0 {
		t.Errorf("broker #%d (member %s) exited but left its member row: the others would tile shards for it until it expires", victim+1, member)
	}
	all := waitAllReady(t, rs.controls[1].api, "greeting", replicaSize, convergeTimeout)
	checkAppliedOnce(t, all)
	for i, l := range rs.leaves {
		if l.exited() {
			t.Errorf("leaf #%d exited; workers must ride out a broker's drain", i+1)
		}
	}
}
