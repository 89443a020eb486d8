package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/convergehq/converge/sdk-go/client"
	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
	"github.com/convergehq/converge/server/internal/devpg"
)

const benchKind = "bench.leaf"

// idleGap separates the idle samples: ten a second at most, well inside
// the default NOTIFY budget's share of each of two replicas (25/s).
const idleGap = 100 * time.Millisecond

type w1Result struct {
	n                int
	wall             time.Duration // first submit → last Ready
	rate             float64       // n / wall
	steadyRate       float64       // Ready rate between the 10th and 90th percentile Ready times
	submitRate       float64       // resources accepted by the API per second
	loadP50, loadP99 time.Duration // submit → Ready under load
	idleP50, idleP99 time.Duration // submit → Ready, one at a time
	commits          float64       // transactions committed per reconcile
	notifies         int64         // notifications sent during the load (see notifyCount)
	statements       float64       // statements per reconcile
	walBytes         float64       // WAL bytes per reconcile
	cpuConverge      float64       // CPU seconds during the load
	cpuWorker        float64
	cpuPostgres      float64
	rssConverge      float64 // peak MiB
	rssWorker        float64
	cost             dbCost      // rows written, WAL records and syncs per reconcile
	dead             deadTuples  // at the end of the load
	waits            waitSamples // over the load
	top              []statement // by database time, over the load
}

type snapshot struct {
	commits              int64
	walBytes             int64
	converge, worker, pg float64
}

func runW1(ctx context.Context, o options, cluster *devpg.Cluster, db string) (w1Result, error) {
	var res w1Result
	workerArgs := []string{"-kinds", benchKind + ":1:reconcile", "-capacity", strconv.Itoa(o.capacity)}
	if o.secretPayload {
		workerArgs = append(workerArgs, "-status", secretStatus)
	}
	st, err := startStack(ctx, o, cluster, db, o.workerBin, workerArgs...)
	if err != nil {
		return res, err
	}
	defer st.close()
	pool, server, worker, c := st.pool, st.server, st.worker, st.client
	if _, err := c.ApplyKind(ctx, &convergev1.ApplyKindRequest{Manifest: w1Manifest(o)}); err != nil {
		return res, fmt.Errorf("applying the bench kind: %w", err)
	}
	// One leaf end to end warms every path and proves the worker is in.
	if err := applyAndWaitSpec(ctx, c, "warmup", leafSpecOf(o, 0)); err != nil {
		return res, fmt.Errorf("warm-up leaf: %w (worker log: %s)", err, worker.tail())
	}

	if o.split {
		// The replicas heartbeat every 2 s; let them see each other.
		time.Sleep(4 * time.Second)
	}
	before, err := takeSnapshot(ctx, db, cluster, st)
	if err != nil {
		return res, err
	}
	countersBefore, err := readDBCounters(ctx, pool, db)
	if err != nil {
		return res, err
	}
	// The sampler starts before the reset so that the statement keeping
	// its own statements out of pg_stat_statements is not counted either.
	sampler, err := startWaitSampler(ctx, pool)
	if err != nil {
		return res, err
	}
	defer sampler.finish()
	if _, err := pool.Exec(ctx, `SELECT pg_stat_statements_reset()`); err != nil {
		return res, err
	}
	if o.profile != "" {
		go captureProfile(o.profile, db)
	}
	submitStart := time.Now()
	if err := submit(ctx, c, o); err != nil {
		return res, err
	}
	res.submitRate = float64(o.resources) / time.Since(submitStart).Seconds()
	if err := waitReady(ctx, pool, o.resources+1, 30*time.Minute); err != nil {
		return res, err
	}
	if err := waitRecordsWritten(ctx, pool); err != nil {
		return res, err
	}
	after, err := takeSnapshot(ctx, db, cluster, st)
	if err != nil {
		return res, err
	}
	if res.waits, err = sampler.finish(); err != nil {
		return res, err
	}
	select {
	case <-ctx.Done():
		return res, ctx.Err()
	case <-time.After(statsFlushWait):
	}
	countersAfter, err := readDBCounters(ctx, pool, db)
	if err != nil {
		return res, err
	}
	res.cost = costPerReconcile(countersBefore, countersAfter, o.resources)
	if res.dead, err = readDeadTuples(ctx, pool); err != nil {
		return res, err
	}
	// Read before this program's own queries of the figures below.
	if res.top, err = topStatements(ctx, pool, db, topStatementRows); err != nil {
		return res, err
	}
	res.n = o.resources
	if err := loadFigures(ctx, pool, &res); err != nil {
		return res, err
	}
	n := float64(o.resources)
	res.commits = float64(after.commits-before.commits) / n
	res.walBytes = float64(after.walBytes-before.walBytes) / n
	res.cpuConverge, res.cpuWorker, res.cpuPostgres = after.converge-before.converge, after.worker-before.worker, after.pg-before.pg
	if res.notifies, err = notifyCount(ctx, pool); err != nil {
		return res, err
	}
	var calls int64
	if err := pool.QueryRow(ctx, `SELECT coalesce(sum(calls), 0)::bigint FROM pg_stat_statements s
		JOIN pg_database d ON d.oid = s.dbid WHERE d.datname = $1`, db).Scan(&calls); err != nil {
		return res, err
	}
	res.statements = float64(calls) / n
	if o.top > 0 {
		printTop(ctx, pool, o.top)
	}

	// Idle latency: one leaf at a time, each after the previous is Ready
	// and a pause, so each finds the system idle: no queue, and (with
	// -split) the replicas' NOTIFY budget unspent, as a leaf applied to a
	// quiet cluster would.
	for i := 0; i < o.idle; i++ {
		if err := applyAndWaitSpec(ctx, c, fmt.Sprintf("idle-%04d", i), leafSpecOf(o, i)); err != nil {
			return res, err
		}
		time.Sleep(idleGap)
	}
	if err := pool.QueryRow(ctx, latencySQL(`name LIKE 'idle-%'`)).Scan(new(float64), new(float64),
		&res.idleP50, &res.idleP99, new(float64), new(float64)); err != nil {
		return res, err
	}
	res.rssConverge, res.rssWorker = peakRSS(server.pid()), peakRSS(worker.pid())
	return res, nil
}

func benchManifest() *convergev1.KindManifest {
	spec, _ := structpb.NewStruct(map[string]any{"type": "object", "properties": map[string]any{"i": map[string]any{"type": "integer"}}})
	status, _ := structpb.NewStruct(map[string]any{"type": "object", "properties": map[string]any{"ok": map[string]any{"type": "boolean"}}})
	return &convergev1.KindManifest{
		Kind: benchKind, KindVersion: 1, Description: "The benchmark's no-op leaf.", Owner: "bench",
		SpecSchema: spec, StatusSchema: status,
		Reactions: []*convergev1.Reaction{{Name: "reconcile", Trigger: "specChange", Emits: []string{"status"}}},
	}
}

// submit applies the leaves in batches, several calls in flight.
func submit(ctx context.Context, c *client.Client, o options) error {
	return submitRange(ctx, c, o, 0, o.resources)
}

// submitRange applies leaves from (inclusive) to to (exclusive), named
// leaf-%07d by their index, in batches of o.batch with o.concurrency
// calls in flight.
func submitRange(ctx context.Context, c *client.Client, o options, from, to int) error {
	batches := make(chan int)
	errs := make(chan error, o.concurrency)
	var wg sync.WaitGroup
	for w := 0; w < o.concurrency; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for start := range batches {
				req := &convergev1.ApplyResourcesRequest{}
				for i := start; i < min(start+o.batch, to); i++ {
					spec, _ := structpb.NewStruct(leafSpecOf(o, i))
					req.Resources = append(req.Resources, &convergev1.ApplyResourceRequest{
						Kind: benchKind, KindVersion: 1, Name: fmt.Sprintf("leaf-%07d", i), Spec: spec,
					})
				}
				if _, err := c.ApplyResources(ctx, req); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	var err error
feed:
	for start := from; start < to; start += o.batch {
		select {
		case batches <- start:
		case err = <-errs:
			break feed
		}
	}
	close(batches)
	wg.Wait()
	if err == nil {
		select {
		case err = <-errs:
		default:
		}
	}
	return err
}

func applyAndWait(ctx context.Context, c *client.Client, name string) error {
	return applyAndWaitSpec(ctx, c, name, map[string]any{"i": 0})
}

// applyAndWaitSpec applies one leaf with spec and waits until it is Ready.
func applyAndWaitSpec(ctx context.Context, c *client.Client, name string, doc map[string]any) error {
	spec, _ := structpb.NewStruct(doc)
	if _, err := c.ApplyResource(ctx, &convergev1.ApplyResourceRequest{Kind: benchKind, KindVersion: 1, Name: name, Spec: spec}); err != nil {
		return err
	}
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	_, err := c.WaitFor(wctx, "default", benchKind, name, client.IsReady)
	return err
}

// waitReady waits until want leaves are Ready. It polls whether any task of
// the bench kind is left (an index probe) and counts Ready leaves (a scan)
// only when none is, so watching costs the system under test next to
// nothing; the figures come from database timestamps, not from when this
// noticed.
func waitReady(ctx context.Context, pool *pgxpool.Pool, want int, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	n := 0
	for {
		var busy bool
		if err := pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM tasks WHERE kind = $1)`, benchKind).Scan(&busy); err != nil {
			return err
		}
		if !busy {
			if err := pool.QueryRow(ctx, `SELECT count(*) FROM resources r WHERE r.kind = $1 AND converge_phase(r) = 'Ready'`, benchKind).Scan(&n); err != nil {
				return err
			}
			if n >= want {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("only %d of %d leaves Ready after %s", n, want, limit)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// latencySQL computes, over the leaves matching where, the first submit
// and last Ready times (epoch seconds), submit→Ready p50 and p99, and the
// 10th and 90th percentile Ready times, all from database timestamps.
func latencySQL(where string) string {
	return `
		WITH per AS (
		    SELECT resource_id,
		           min(at) FILTER (WHERE type = 'created') AS created,
		           min(at) FILTER (WHERE phase = 'Ready') AS ready
		    FROM changes WHERE kind = '` + benchKind + `' AND ` + where + `
		    GROUP BY resource_id
		)
		SELECT extract(epoch FROM min(created))::float8, extract(epoch FROM max(ready))::float8,
		       percentile_cont(0.5) WITHIN GROUP (ORDER BY ready - created),
		       percentile_cont(0.99) WITHIN GROUP (ORDER BY ready - created),
		       extract(epoch FROM percentile_disc(0.1) WITHIN GROUP (ORDER BY ready))::float8,
		       extract(epoch FROM percentile_disc(0.9) WITHIN GROUP (ORDER BY ready))::float8
		FROM per`
}

func loadFigures(ctx context.Context, pool *pgxpool.Pool, res *w1Result) error {
	var first, last, p10, p90 float64
	if err := pool.QueryRow(ctx, latencySQL(`name LIKE 'leaf-%'`)).Scan(&first, &last,
		&res.loadP50, &res.loadP99, &p10, &p90); err != nil {
		return err
	}
	res.wall = time.Duration((last - first) * float64(time.Second))
	res.rate = float64(res.n) / (last - first)
	if p90 > p10 {
		res.steadyRate = 0.8 * float64(res.n) / (p90 - p10)
	}
	return nil
}

// takeSnapshot reads the database's counters and the CPU of every
// converge replica and every worker of st.
func takeSnapshot(ctx context.Context, db string, cluster *devpg.Cluster, st *stack) (snapshot, error) {
	var s snapshot
	// WAL bytes from the insert position, which moves with every record,
	// where pg_stat_wal's count is published lazily.
	err := st.pool.QueryRow(ctx, `SELECT xact_commit, pg_wal_lsn_diff(pg_current_wal_insert_lsn(), '0/0')::bigint
		FROM pg_stat_database WHERE datname = $1`, db).Scan(&s.commits, &s.walBytes)
	s.converge = cpuSeconds(st.server.pid(), true)
	for _, b := range st.brokers {
		if b != st.server {
			s.converge += cpuSeconds(b.pid(), true)
		}
	}
	for _, w := range st.workers {
		s.worker += cpuSeconds(w.pid(), true)
	}
	s.pg = postgresCPU(filepath.Join(cluster.Dir(), "data"))
	return s, err
}

// printTop prints the statements that took the most database time during
// the load, to see where PostgreSQL's CPU goes.
func printTop(ctx context.Context, pool *pgxpool.Pool, n int) {
	rows, err := pool.Query(ctx, `SELECT calls, total_exec_time, total_plan_time, rows, left(regexp_replace(query, '\s+', ' ', 'g'), 100)
		FROM pg_stat_statements ORDER BY total_exec_time + total_plan_time DESC LIMIT $1`, n)
	if err != nil {
		logf("pg_stat_statements: %v", err)
		return
	}
	defer rows.Close()
	var upd, hot int64
	if pool.QueryRow(ctx, `SELECT n_tup_upd, n_tup_hot_upd FROM pg_stat_user_tables WHERE relname = 'resources'`).Scan(&upd, &hot) == nil {
		fmt.Fprintf(os.Stderr, "resources updates: %d, of which HOT: %d\n", upd, hot)
	}
	fmt.Fprintf(os.Stderr, "%8s %10s %9s %9s  %s\n", "calls", "exec ms", "plan ms", "rows", "statement")
	for rows.Next() {
		var calls, nrows int64
		var exec, plan float64
		var q string
		if rows.Scan(&calls, &exec, &plan, &nrows, &q) == nil {
			fmt.Fprintf(os.Stderr, "%8d %10.0f %9.0f %9d  %s\n", calls, exec, plan, nrows, q)
		}
	}
}

// profileWhile starts captureProfile when -pprof is set and returns what
// waits for it: a workload shorter than the profile keeps its server up
// until the profile is written.
func profileWhile(o options, db string) (wait func()) {
	if o.profile == "" {
		return func() {}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		captureProfile(o.profile, db)
	}()
	return func() { <-done }
}

// captureProfile saves a 10 s CPU profile of the server during the load.
func captureProfile(addr, db string) {
	resp, err := http.Get("http://" + addr + "/debug/pprof/profile?seconds=10")
	if err != nil {
		logf("profile: %v", err)
		return
	}
	defer resp.Body.Close()
	path := filepath.Join(os.TempDir(), "converge-"+db+".pprof")
	f, err := os.Create(path)
	if err != nil {
		logf("profile: %v", err)
		return
	}
	defer f.Close()
	if _, err := io.Copy(f, resp.Body); err == nil {
		logf("CPU profile of converge: %s", path)
	}
}

// notifyCount is how many notifications the statements pg_stat_statements
// has seen since its reset sent: a pg_notify statement sends one per row
// it returns (the server wakes several channels in one statement), a
// NOTIFY statement one per call. The benchmark's own statements, which
// name pg_stat_statements, are left out.
func notifyCount(ctx context.Context, pool *pgxpool.Pool) (int64, error) {
	var n int64
	err := pool.QueryRow(ctx, `SELECT coalesce(sum(CASE WHEN query ILIKE '%pg_notify%' THEN rows ELSE calls END), 0)::bigint
		FROM pg_stat_statements
		WHERE (query ILIKE '%pg_notify%' OR query ~* '^\s*NOTIFY\s') AND query NOT ILIKE '%pg_stat_statements%'`).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("counting notifications in pg_stat_statements: %w", err)
	}
	return n, nil
}

// waitRecordsWritten waits until the server's task records stop growing,
// so the cost figures include the records of the load's tasks: the
// recorder writes them behind the results, up to a buffer behind.
func waitRecordsWritten(ctx context.Context, pool *pgxpool.Pool) error {
	last := int64(-1)
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); {
		var n int64
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM task_records`).Scan(&n); err != nil {
			return fmt.Errorf("counting task records: %w", err)
		}
		if n == last {
			return nil
		}
		last = n
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	return fmt.Errorf("task records still growing 30 s after the last resource was Ready")
}
