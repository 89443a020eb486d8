package app

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/convergehq/converge/server/internal/store"
)

// openPool opens a pool; relaxed sessions commit without waiting for the
// WAL flush (see store.Store). Every session tells the change trigger how
// many spec revisions to keep.
//
// Statements are planned for their arguments (plan_cache_mode
// force_custom_plan): the queue and the resources grow from nothing to
// 100,000 rows well before autovacuum analyzes them, and a plan cached
// while they were nearly empty scans them whole, tens of milliseconds a
// statement; results then queue behind it for seconds. Index probes are
// costed as the cached pages they are (random_page_cost 1.1): at the
// default of 4 the planner prefers a scan of the whole table to 1,000
// probes by key, which takes three times as long. JIT compilation is off:
// Converge's statements touch few rows, and compiling one costs more
// than running it many times over (the claim, whose generic plan is costed
// above jit_above_cost for subplans that never run, took 80 ms with it
// and under 3 ms without). All three stay the operator's to override in
// the database URL.
func openPool(ctx context.Context, url string, size int32, historyKeep int, relaxed bool) (*pgxpool.Pool, error) {
	pc, err := poolConfig(url, size, historyKeep)
	if err != nil {
		return nil, fmt.Errorf("--database-url: %w", err)
	}
	if relaxed {
		pc.ConnConfig.RuntimeParams["synchronous_commit"] = "off"
	}
	pool, err := pgxpool.NewWithConfig(ctx, pc)
	if err != nil {
		return nil, fmt.Errorf("connecting to the database: %w", err)
	}
	pingCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := pool.Ping(pingCtx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("connecting to the database: %w", err)
	}
	return pool, nil
}

// ReplicaApplicationName names the replica pool's sessions, so the
// standby's pg_stat_activity shows which reads Converge serves there.
const ReplicaApplicationName = "converge-read"

// openReplicaPool opens the read replica's pool without waiting for it:
// a replica that is down at start, like one that goes down later, only
// sends reads to the primary until it answers (readroute samples it).
// Connecting is bounded, so a replica that does not answer at all costs
// a read that tries it at most that long before it falls back.
func openReplicaPool(url string, size int32, historyKeep int) (*pgxpool.Pool, error) {
	pc, err := poolConfig(url, size, historyKeep)
	if err != nil {
		return nil, fmt.Errorf("--read-database-url: %w", err)
	}
	pc.ConnConfig.RuntimeParams["application_name"] = ReplicaApplicationName
	if pc.ConnConfig.ConnectTimeout == 0 {
		pc.ConnConfig.ConnectTimeout = 2 * time.Second
	}
	pool, err := pgxpool.NewWithConfig(context.Background(), pc)
	if err != nil {
		return nil, fmt.Errorf("--read-database-url: %w", err)
	}
	return pool, nil
}

// poolConfig is the configuration every pool shares.
func poolConfig(url string, size int32, historyKeep int) (*pgxpool.Config, error) {
	pc, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, err
	}
	pc.MaxConns = size
	pc.MaxConnLifetime = 30 * time.Minute
	pc.HealthCheckPeriod = 5 * time.Second
	pc.ConnConfig.RuntimeParams["application_name"] = "converge"
	pc.ConnConfig.RuntimeParams[store.HistoryKeepSetting] = strconv.Itoa(historyKeep)
	for k, v := range map[string]string{"plan_cache_mode": "force_custom_plan", "random_page_cost": "1.1", "jit": "off"} {
		if _, set := pc.ConnConfig.RuntimeParams[k]; !set {
			pc.ConnConfig.RuntimeParams[k] = v
		}
	}
	return pc, nil
}
