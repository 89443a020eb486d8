package main

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"google.golang.org/protobuf/types/known/structpb"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
	"github.com/convergehq/converge/server/internal/devpg"
)

// The fairness workload: kind A (bench.leaf with a fixed handler
// time) has a large backlog; single resources of kind B (bench.probe, a
// no-op) are applied one after another while it drains, on one worker
// serving both. Every instant comes from the database (a resource's
// created and Ready changes) or from the task itself (bench worker
// statuses, see stamped): when its claim was delivered, when its handler
// ran.

// fairnessResult holds one run's figures.
type fairnessResult struct {
	idle  []probeTimes // B before the backlog is applied
	loads []probeTimes // B under the backlog
	// backlogMin is the fewest A tasks queued when a B was applied.
	backlogMin int
	// aRate is A resources Ready per second while the probes ran.
	aRate float64
	// rounds are the intervals between consecutive claim deliveries while
	// the probes ran; perRound is tasks per claim delivery.
	rounds   []time.Duration
	perRound float64
	// aPath is an A task's path after its claim, less its handler time:
	// push to the worker, result back, applied.
	aPath []time.Duration
	// claimExec is the claim statement's mean execution time.
	claimExec  time.Duration
	claimCalls int64
	load       string // load average before and after the run
}

// probeTimes splits one B's submit → Ready.
type probeTimes struct {
	total    time.Duration
	wait     time.Duration // submit → its claim delivered
	dispatch time.Duration // claim delivered → handler started
	handler  time.Duration
	result   time.Duration // handler returned → Ready
}

func runFairness(ctx context.Context, o options, cluster *devpg.Cluster, run int) (fairnessResult, error) {
	var res fairnessResult
	loadBefore := loadAvg()
	self, err := os.Executable()
	if err != nil {
		return res, err
	}
	// The workload is B behind a deliberate backlog of A: admission, which
	// bounds a kind's queue to what it drains quickly, is off for it.
	o.serveFlags = "--max-backlog 0 " + o.serveFlags
	st, err := startStack(ctx, o, cluster, fmt.Sprintf("fairness_%d", run), self, "worker",
		"-capacity", strconv.Itoa(o.fairCapacity), "-leaf-delay", o.fairDelay.String(), "-stamp")
	if err != nil {
		return res, err
	}
	defer st.close()
	for _, m := range []*convergev1.KindManifest{benchManifest(), probeManifest()} {
		if _, err := st.client.ApplyKind(ctx, &convergev1.ApplyKindRequest{Manifest: m}); err != nil {
			return res, fmt.Errorf("applying %s: %w", m.GetKind(), err)
		}
	}
	if err := applyAndWait(ctx, st.client, "warmup"); err != nil {
		return res, fmt.Errorf("warm-up leaf: %w (worker log: %s)", err, st.worker.tail())
	}
	for i := 0; i < o.probes; i++ {
		if err := probe(ctx, st, fmt.Sprintf("idle-%03d", i)); err != nil {
			return res, err
		}
	}
	if res.idle, err = probeFigures(ctx, st.pool, "idle-%"); err != nil {
		return res, err
	}

	logf("fairness: applying %d of kind A (%s, %s handler)", o.resources, benchKind, o.fairDelay)
	if err := submit(ctx, st.client, o); err != nil {
		return res, err
	}
	if err := probeBacklog(ctx, o, st, &res); err != nil {
		return res, err
	}
	res.load = loadBefore + " → " + loadAvg()
	return res, nil
}

// probeBacklog applies B resources one at a time while A's backlog is
// large, and reads the figures of that window.
func probeBacklog(ctx context.Context, o options, st *stack, res *fairnessResult) error {
	if _, err := st.pool.Exec(ctx, `SELECT pg_stat_statements_reset()`); err != nil {
		return err
	}
	from := time.Now()
	for i := 0; i < o.probes; i++ {
		// Counting stops at the floor, to keep the check cheap.
		var queued int
		if err := st.pool.QueryRow(ctx, `SELECT count(*) FROM (SELECT 1 FROM tasks WHERE kind = $1 LIMIT $2) q`,
			benchKind, o.resources/10).Scan(&queued); err != nil {
			return err
		}
		if queued < o.resources/10 {
			logf("fairness: the backlog is below %d; stopping after %d probes", o.resources/10, i)
			break
		}
		if err := probe(ctx, st, fmt.Sprintf("load-%03d", i)); err != nil {
			return err
		}
		// Apart, so each probe meets the backlog on its own.
		time.Sleep(20 * time.Millisecond)
	}
	to := time.Now()
	if o.top > 0 {
		printTop(ctx, st.pool, o.top)
	}
	var err error
	if res.loads, err = probeFigures(ctx, st.pool, "load-%"); err != nil {
		return err
	}
	if len(res.loads) == 0 {
		return fmt.Errorf("no probe ran under the backlog: it drained below %d before the first (use more -resources)", o.resources/10)
	}
	// The backlog was smallest when the last probe was applied.
	var readyBefore int
	if err := st.pool.QueryRow(ctx, `SELECT count(DISTINCT resource_id) FROM changes
		WHERE kind = $1 AND name LIKE 'leaf-%' AND phase = 'Ready'
		  AND at <= (SELECT min(at) FROM changes WHERE kind = $2 AND name = $3)`,
		benchKind, probeKind, fmt.Sprintf("load-%03d", len(res.loads)-1)).Scan(&readyBefore); err != nil {
		return err
	}
	res.backlogMin = o.resources - readyBefore
	if err := backlogFigures(ctx, st.pool, from, to, res); err != nil {
		return err
	}
	var execMs float64
	if err := st.pool.QueryRow(ctx, `SELECT coalesce(sum(calls), 0)::bigint, coalesce(sum(total_exec_time) / nullif(sum(calls), 0), 0)
		FROM pg_stat_statements WHERE query LIKE '%claimed_by = $_::text, claimed_at = now()%'`).Scan(&res.claimCalls, &execMs); err != nil {
		return err
	}
	res.claimExec = time.Duration(execMs * float64(time.Millisecond))
	if res.claimCalls == 0 {
		logf("fairness: no claim statement found in pg_stat_statements; the claim execution figure is missing")
	}
	return nil
}

func probeManifest() *convergev1.KindManifest {
	obj := func(props map[string]any) *structpb.Struct {
		s, _ := structpb.NewStruct(map[string]any{"type": "object", "properties": props})
		return s
	}
	integer := map[string]any{"type": "integer"}
	return &convergev1.KindManifest{
		Kind: probeKind, KindVersion: 1, Description: "The fairness workload's kind B: a no-op that reports when it ran.", Owner: "bench",
		SpecSchema: obj(map[string]any{}), StatusSchema: obj(map[string]any{"d": integer, "s": integer, "e": integer}),
		Reactions: []*convergev1.Reaction{{Name: "reconcile", Trigger: "specChange", Emits: []string{"status"}}},
	}
}

// probe applies one B and waits until it is Ready.
func probe(ctx context.Context, st *stack, name string) error {
	spec, _ := structpb.NewStruct(map[string]any{})
	if _, err := st.client.ApplyResource(ctx, &convergev1.ApplyResourceRequest{Kind: probeKind, KindVersion: 1, Name: name, Spec: spec}); err != nil {
		return fmt.Errorf("applying %s/%s: %w", probeKind, name, err)
	}
	deadline := time.Now().Add(time.Minute)
	for {
		// By its full identity, so that polling is one index probe and
		// does not load the database it measures.
		var phase, msg string
		err := st.pool.QueryRow(ctx, `SELECT converge_phase(r), coalesce(r.failure_message, '') FROM resources r
			WHERE namespace = 'default' AND kind = $1 AND name = $2`, probeKind, name).Scan(&phase, &msg)
		switch {
		case err != nil:
			return fmt.Errorf("%s/%s: %w", probeKind, name, err)
		case phase == "Ready":
			return nil
		case phase == "Failed":
			return fmt.Errorf("%s/%s failed: %s", probeKind, name, msg)
		case time.Now().After(deadline):
			return fmt.Errorf("%s/%s not Ready after a minute (phase %s; worker log: %s)", probeKind, name, phase, st.worker.tail())
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(2 * time.Millisecond):
		}
	}
}

// probeFigures splits the submit → Ready of the B resources named like
// pattern, from their changes and their stamped status.
func probeFigures(ctx context.Context, pool *pgxpool.Pool, pattern string) ([]probeTimes, error) {
	rows, err := pool.Query(ctx, `
		WITH per AS (
		    SELECT resource_id,
		           extract(epoch FROM min(at) FILTER (WHERE type = 'created')) * 1e6 AS created,
		           extract(epoch FROM min(at) FILTER (WHERE phase = 'Ready')) * 1e6 AS ready
		    FROM changes WHERE kind = $1 AND name LIKE $2
		    GROUP BY resource_id
		)
		SELECT per.created, per.ready, (r.status->>'d')::float8, (r.status->>'s')::float8, (r.status->>'e')::float8
		FROM per JOIN resources r ON r.id = per.resource_id
		ORDER BY r.name`, probeKind, pattern)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []probeTimes
	for rows.Next() {
		var created, ready, d, s, e float64
		if err := rows.Scan(&created, &ready, &d, &s, &e); err != nil {
			return nil, err
		}
		out = append(out, probeTimes{total: us(ready - created), wait: us(d - created), dispatch: us(s - d),
			handler: us(e - s), result: us(ready - e)})
	}
	return out, rows.Err()
}

// backlogFigures reads, for the window [from, to] in which the probes ran,
// A's throughput, the claim deliveries (every task of one claim carries
// the same delivery instant) and A's path after its claim.
func backlogFigures(ctx context.Context, pool *pgxpool.Pool, from, to time.Time, res *fairnessResult) error {
	rows, err := pool.Query(ctx, `
		SELECT r.kind, (r.status->>'d')::float8, (r.status->>'s')::float8, (r.status->>'e')::float8,
		       extract(epoch FROM min(c.at)) * 1e6
		FROM changes c JOIN resources r ON r.id = c.resource_id
		WHERE c.kind IN ($1, $2) AND c.phase = 'Ready' AND r.status ? 'd'
		GROUP BY r.id
		HAVING min(c.at) BETWEEN $3 AND $4`, benchKind, probeKind, from, to)
	if err != nil {
		return err
	}
	defer rows.Close()
	deliveries := map[float64]int{}
	var aReady int
	for rows.Next() {
		var kind string
		var d, s, e, ready float64
		if err := rows.Scan(&kind, &d, &s, &e, &ready); err != nil {
			return err
		}
		deliveries[d]++
		if kind == benchKind {
			aReady++
			res.aPath = append(res.aPath, us((s-d)+(ready-e)))
		}
	}
	if err := rows.Err(); err != nil {
		return err
	}
	res.aRate = float64(aReady) / to.Sub(from).Seconds()
	var ds []float64
	for d := range deliveries {
		if d >= float64(from.UnixMicro()) && d <= float64(to.UnixMicro()) {
			ds = append(ds, d)
		}
	}
	slices.Sort(ds)
	for i := 1; i < len(ds); i++ {
		res.rounds = append(res.rounds, us(ds[i]-ds[i-1]))
	}
	if len(ds) > 0 {
		n := 0
		for _, d := range ds {
			n += deliveries[d]
		}
		res.perRound = float64(n) / float64(len(ds))
	}
	return nil
}

func us(x float64) time.Duration { return time.Duration(x * float64(time.Microsecond)) }

// loadAvg is the machine's 1-minute load average, to flag a run that
// shared the machine with other work.
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	var one string
	fmt.Sscan(string(b), &one)
	return one
}

// probeTotals is the submit → Ready of the probes under the backlog.
func probeTotals(r fairnessResult) []time.Duration {
	return probePart(r.loads, func(t probeTimes) time.Duration { return t.total })
}

func probePart(ps []probeTimes, f func(probeTimes) time.Duration) []time.Duration {
	out := make([]time.Duration, len(ps))
	for i, p := range ps {
		out[i] = f(p)
	}
	return out
}
