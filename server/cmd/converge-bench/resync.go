package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"google.golang.org/protobuf/types/known/fieldmaskpb"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
	"github.com/convergehq/converge/server/internal/devpg"
)

// The resync workload: what resources of a kind that does not opt
// into resync cost an idle system. Three windows on one stack: the empty
// system (the kind applied, a worker serving it, no resources), the same
// system holding N Ready resources, and then, for contrast, the same
// resources with resync turned on over the API.

// resyncInterval is the interval turned on for the contrast window.
const resyncInterval = 60 * time.Second

// idleCost is what one measurement window cost.
type idleCost struct {
	pgCPU       float64 // PostgreSQL CPU seconds per second of window
	convergeCPU float64 // the server's
	statements  float64 // statements executed per minute (pg_stat_statements)
	commits     float64 // transactions committed per minute
	resyncs     float64 // resyncs applied per second
}

type resyncResult struct {
	empty, settled, resyncing idleCost
	load                      string // load average before and after the run
}

func runResync(ctx context.Context, o options, cluster *devpg.Cluster, run int) (resyncResult, error) {
	var res resyncResult
	loadBefore := loadAvg()
	st, err := startStack(ctx, o, cluster, fmt.Sprintf("resync_%d", run), o.workerBin,
		"-kinds", benchKind+":1:reconcile", "-capacity", strconv.Itoa(o.capacity))
	if err != nil {
		return res, err
	}
	defer st.close()
	c := st.client
	if _, err := c.ApplyKind(ctx, &convergev1.ApplyKindRequest{Manifest: benchManifest()}); err != nil {
		return res, fmt.Errorf("applying the bench kind: %w", err)
	}
	// A leaf end to end proves the worker is in; it is deleted so the
	// baseline holds no resource at all.
	if err := applyAndWait(ctx, c, "warmup"); err != nil {
		return res, fmt.Errorf("warm-up leaf: %w (worker log: %s)", err, st.worker.tail())
	}
	if _, err := c.DeleteResource(ctx, &convergev1.DeleteResourceRequest{Kind: benchKind, Name: "warmup"}); err != nil {
		return res, fmt.Errorf("deleting the warm-up leaf: %w", err)
	}
	if err := waitCount(ctx, st, 0); err != nil {
		return res, err
	}

	logf("resync: the empty system, %s", o.window)
	if res.empty, err = measureIdle(ctx, o, st, cluster, false); err != nil {
		return res, err
	}
	logf("resync: applying %d leaves", o.resources)
	if err := submit(ctx, c, o); err != nil {
		return res, err
	}
	if err := waitReady(ctx, st.pool, o.resources, 30*time.Minute); err != nil {
		return res, err
	}
	logf("resync: %d Ready leaves that do not opt in, %s", o.resources, o.window)
	if res.settled, err = measureIdle(ctx, o, st, cluster, false); err != nil {
		return res, err
	}
	if _, err := c.UpdateKindPolicy(ctx, &convergev1.UpdateKindPolicyRequest{Kind: benchKind, KindVersion: 1,
		Policy:     &convergev1.KindPolicy{ResyncIntervalSeconds: int32(resyncInterval / time.Second)},
		UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{"resync_interval_seconds"}}}); err != nil {
		return res, fmt.Errorf("turning resync on: %w", err)
	}
	logf("resync: the same leaves resynced every %s, %s", resyncInterval, o.window)
	if res.resyncing, err = measureIdle(ctx, o, st, cluster, true); err != nil {
		return res, err
	}
	res.load = loadBefore + " → " + loadAvg()
	return res, nil
}

// statsSettle outlasts the delay with which an idle PostgreSQL 15 backend
// reports its statistics (10 s), so counters of the phase before a window
// do not land in it.
const statsSettle = 12 * time.Second

// measureIdle lets statistics settle, vacuums and checkpoints the
// database, so the window does not pay for what came before it, and then
// measures one window of the system left alone. With resyncs it also
// counts the reconciles applied.
func measureIdle(ctx context.Context, o options, st *stack, cluster *devpg.Cluster, resyncs bool) (idleCost, error) {
	var cost idleCost
	select {
	case <-ctx.Done():
		return cost, ctx.Err()
	case <-time.After(statsSettle):
	}
	for _, q := range []string{`VACUUM (ANALYZE)`, `CHECKPOINT`} {
		if _, err := st.pool.Exec(ctx, q); err != nil {
			return cost, fmt.Errorf("%s: %w", q, err)
		}
	}
	// One statement per snapshot, which leaves itself out of the count
	// (its text names pg_stat_statements).
	snap := func() (commits, calls, reconciles int64, err error) {
		err = st.pool.QueryRow(ctx, `
			SELECT (SELECT xact_commit FROM pg_stat_database WHERE datname = $1),
			       (SELECT coalesce(sum(calls), 0)::bigint FROM pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid
			        WHERE d.datname = $1 AND s.query NOT LIKE '%pg_stat_statements%'),
			       CASE WHEN $3 THEN (SELECT coalesce(sum(reconciles), 0)::bigint FROM resources WHERE kind = $2) ELSE 0 END`,
			st.db, benchKind, resyncs).Scan(&commits, &calls, &reconciles)
		return commits, calls, reconciles, err
	}
	dataDir := filepath.Join(cluster.Dir(), "data")
	if o.top > 0 {
		if _, err := st.pool.Exec(ctx, `SELECT pg_stat_statements_reset()`); err != nil {
			return cost, err
		}
	}
	commits0, calls0, rec0, err := snap()
	if err != nil {
		return cost, err
	}
	pg0, cv0 := postgresCPU(dataDir), cpuSeconds(st.server.pid(), true)
	start := time.Now()
	select {
	case <-ctx.Done():
		return cost, ctx.Err()
	case <-time.After(o.window):
	}
	commits1, calls1, rec1, err := snap()
	if err != nil {
		return cost, err
	}
	secs := time.Since(start).Seconds()
	if o.top > 0 {
		printTop(ctx, st.pool, o.top)
		printMaintenance(ctx, st)
	}
	cost.pgCPU = (postgresCPU(dataDir) - pg0) / secs
	cost.convergeCPU = (cpuSeconds(st.server.pid(), true) - cv0) / secs
	// The first snapshot's own transaction is the benchmark's, not the
	// system's.
	cost.commits = float64(commits1-commits0-1) / secs * 60
	cost.statements = float64(calls1-calls0) / secs * 60
	cost.resyncs = float64(rec1-rec0) / secs
	return cost, nil
}

// waitCount waits until the bench kind has n resources.
func waitCount(ctx context.Context, st *stack, n int) error {
	deadline := time.Now().Add(time.Minute)
	for {
		var have int
		if err := st.pool.QueryRow(ctx, `SELECT count(*) FROM resources WHERE kind = $1`, benchKind).Scan(&have); err != nil {
			return err
		}
		if have == n {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d %s resources after a minute; want %d", have, benchKind, n)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// printMaintenance prints what autovacuum has done per table so far, to
// tell its work apart from the system's in an idle window.
func printMaintenance(ctx context.Context, st *stack) {
	rows, err := st.pool.Query(ctx, `SELECT relname, autovacuum_count, autoanalyze_count, n_dead_tup, n_mod_since_analyze
		FROM pg_stat_user_tables WHERE autovacuum_count + autoanalyze_count > 0 OR n_dead_tup > 0 ORDER BY relname`)
	if err != nil {
		logf("pg_stat_user_tables: %v", err)
		return
	}
	defer rows.Close()
	for rows.Next() {
		var name string
		var vac, an, dead, mod int64
		if rows.Scan(&name, &vac, &an, &dead, &mod) == nil {
			fmt.Fprintf(os.Stderr, "%-20s autovacuum %d, autoanalyze %d, dead tuples %d, modified since analyze %d\n", name, vac, an, dead, mod)
		}
	}
}
