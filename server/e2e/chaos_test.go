//go:build unix

package e2e

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// The chaos run's timeline: the load warms up for chaosWarmup (its rate
// after the first chaosBaselineSkip is the run's baseline, reported; each
// fault's recovery is measured against the rate in the chaosPreFault
// before it, so a drifting rate does not skew it), then a fault comes
// every chaosGap plus up to chaosJitter for the configured duration, and
// the load runs on for the last fault's recovery budget before it stops
// and every resource must converge within chaosConvergeTimeout.
const (
	chaosWarmup       = 7 * time.Second
	chaosBaselineSkip = 2 * time.Second
	// chaosPreFault is the window before a fault whose completion rate
	// the fault's recovery is measured against.
	chaosPreFault = 4 * time.Second
	chaosGap      = 10 * time.Second
	chaosJitter   = 2 * time.Second
	// chaosRecoveryBudget is issue 10's bound: throughput back to ≥ 95%
	// within the lease plus five seconds of the fault.
	chaosRecoveryBudget  = 5 * time.Second
	chaosConvergeTimeout = 60 * time.Second
)

// TestChaos runs 2 control and 2 broker replicas and 3 workers over one
// PostgreSQL under a steady load of creates and spec updates, and injects
// faults drawn from a seed: kill -9 of a control, a broker or a worker,
// and a PostgreSQL restart (fast or immediate), each followed by bringing
// the victim back. Then it checks the invariants: no acknowledged write
// lost; no generation applied twice, and a handler run twice only if its
// first run overlapped a fault; every resource converges; throughput back
// within lease + 5 s of each fault (to 95% of the pre-fault rate with
// CONVERGE_CHAOS_STRICT=1, else to 50%, with the 95% figure reported).
// docs/chaos.md describes it.
//
// CONVERGE_CHAOS_SEED replays a run's fault schedule;
// CONVERGE_CHAOS_DURATION sets how long faults are injected.
func TestChaos(t *testing.T) {
	beginAlone(t)
	cfg, err := chaosConfigFromEnv()
	if err != nil {
		t.Fatal(err)
	}
	runChaos(t, cfg, false)
}

// runChaos runs the chaos timeline and its checks, with a read replica
// under the control replicas when withStandby (TestChaosReplica).
func runChaos(t *testing.T, cfg chaosConfig, withStandby bool) {
	top := topology{controls: chaosControls, brokers: chaosBrokers, workers: chaosWorkers, standby: withStandby}
	plan := planFaults(cfg.seed, cfg.duration, chaosGap, chaosJitter, top)
	t.Logf("chaos seed %d (from %s; replay with %s=%d %s=%s); %d faults planned: %s",
		cfg.seed, cfg.seedSource, chaosSeedEnv, cfg.seed, chaosDurationEnv, cfg.duration, len(plan), renderPlan(plan))

	c := startChaosCluster(t, withStandby)
	gen := newLoadGen(c.apis(), cfg.seed)
	var readers *replicaReaders
	if withStandby {
		readers = startReplicaReaders(t, c, gen)
	}
	ctx, cancel := context.WithCancel(context.Background())
	loadDone := make(chan struct{})
	go func() {
		defer close(loadDone)
		gen.run(ctx)
	}()
	var stopOnce sync.Once
	stopLoad := func() { stopOnce.Do(func() { cancel(); <-loadDone }) }
	t.Cleanup(stopLoad)

	pool, err := pgxpool.New(context.Background(), c.dbURL)
	if err != nil {
		t.Fatalf("opening a pool on the chaos database: %v", err)
	}
	t.Cleanup(pool.Close)

	loadStart := time.Now()
	phaseStart := loadStart.Add(chaosWarmup)
	waitUntil(phaseStart)
	var faults []faultRecord
	for _, f := range plan {
		due := phaseStart.Add(f.at)
		if late := time.Since(due); late > 100*time.Millisecond {
			t.Logf("fault %s starts %s late: the previous victim took that long to come back", f, late.Round(time.Millisecond))
		}
		waitUntil(due)
		rec := c.inject(f)
		t.Logf("fault %s: victim back after %s", f, rec.end.Sub(rec.start).Round(time.Millisecond))
		faults = append(faults, rec)
	}
	lease := fast.lease
	if n := len(faults); n > 0 {
		waitUntil(faults[n-1].start.Add(lease + chaosRecoveryBudget + recoveryWindow))
	}
	loadStop := time.Now()
	stopLoad()

	r := chaosResults{cfg: cfg, faults: faults, convergence: -1}
	if at, ok := waitConverged(t, pool, loadStop); ok {
		r.convergence = at.Sub(loadStop)
	}
	c.checkAlive()
	testEnd := time.Now()

	r.check(t, c, gen, pool, loadStart, phaseStart, loadStop, testEnd)
	summary := r.summary()
	if readers != nil {
		summary += readers.check(t, c, pool)
	}
	t.Log(summary)
}

// beginAlone starts a test that must have the machine to itself: it
// skips in -short mode like begin, but does not mark the test parallel,
// so it runs before the parallel tests resume. The chaos test measures
// throughput on two cores, and the other tests' bursts would both skew
// its figures and slow down their own timing-sensitive checks.
func beginAlone(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("chaos test skipped in -short mode: it runs the server, workers and PostgreSQL for about a minute")
	}
	recordSources()
}

// waitUntil returns at the wall-clock instant at, or at once if it has
// passed: the fault schedule is a timeline, not a condition to poll.
func waitUntil(at time.Time) {
	if d := time.Until(at); d > 0 {
		timer := time.NewTimer(d)
		defer timer.Stop()
		<-timer.C
	}
}

// waitConverged polls the database until every chaos resource is Ready at
// its latest generation, and returns when that was seen. If that takes
// over chaosConvergeTimeout it fails the test and returns false, and the
// other invariants are still checked.
func waitConverged(t *testing.T, pool *pgxpool.Pool, from time.Time) (time.Time, bool) {
	t.Helper()
	deadline := from.Add(chaosConvergeTimeout)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
		var total, ready int
		var stuck []string
		err := pool.QueryRow(ctx, `SELECT count(*),
			count(*) FILTER (WHERE phase = 'Ready' AND synced_generation = generation),
			coalesce((array_agg(name || ' ' || phase || ' generation ' || generation || ' synced ' || synced_generation ORDER BY name)
			    FILTER (WHERE phase <> 'Ready' OR synced_generation <> generation))[1:5], '{}')
			FROM (SELECT r.*, converge_phase(r) AS phase FROM resources r WHERE r.kind = $1) r`, chaosKind).Scan(&total, &ready, &stuck)
		cancel()
		if err == nil && total > 0 && ready == total {
			return time.Now(), true
		}
		if time.Now().After(deadline) {
			t.Errorf("invariant 3 (every resource converges): %s after the load stopped, %d of %d %s resources are Ready at their latest generation (last error: %v); some that are not: %s",
				chaosConvergeTimeout, ready, total, chaosKind, err, strings.Join(stuck, "; "))
			return time.Time{}, false
		}
		time.Sleep(pollInterval)
	}
}
