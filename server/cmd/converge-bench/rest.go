package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
	"github.com/convergehq/converge/server/internal/devpg"
)

// W5, at rest (perf-anchors §5.3): N Ready leaves built through the API
// in batches, then the system left alone. What they cost: converge's
// memory as N grows, database bytes per resource, PostgreSQL's CPU while
// idle, and the latency of reads at N.

type rssPoint struct {
	resources        int
	converge, worker float64 // resident MiB
}

type tableSize struct {
	name  string
	bytes int64
}

type restResult struct {
	n         int
	buildRate float64 // resources Ready per second while building
	rss       []rssPoint
	rssIdle   rssPoint // after the idle window
	slope     float64  // converge MiB per 100k resources, least squares over rss
	idle      idleCost
	resources int64
	dbBytes   int64 // every table of ours with its indexes and TOAST
	payload   int64 // spec and status JSON (see payloadSQL)
	tables    []tableSize
	list, get []time.Duration // API round trips at N
}

// payloadSQL sums the stored size of the JSON the user and the workers
// supply: a resource's spec, status and composed desired spec, and the
// spec revisions kept for history. Everything else in the database is
// Converge's own bookkeeping, which the ≤ 2 KB target is about.
const payloadSQL = `
SELECT (SELECT coalesce(sum(pg_column_size(spec) + pg_column_size(status) + coalesce(pg_column_size(desired_spec), 0)), 0)::bigint FROM resources)
     + (SELECT coalesce(sum(pg_column_size(spec)), 0)::bigint FROM spec_revisions),
       (SELECT count(*) FROM resources)`

func runRest(ctx context.Context, o options, cluster *devpg.Cluster, run int) (restResult, error) {
	res := restResult{n: o.restResources}
	st, err := startStack(ctx, o, cluster, fmt.Sprintf("rest_%d", run), o.workerBin,
		"-kinds", benchKind+":1:reconcile", "-capacity", strconv.Itoa(o.capacity))
	if err != nil {
		return res, err
	}
	defer st.close()
	if _, err := st.client.ApplyKind(ctx, &convergev1.ApplyKindRequest{Manifest: benchManifest()}); err != nil {
		return res, fmt.Errorf("applying the bench kind: %w", err)
	}
	if err := applyAndWait(ctx, st.client, "warmup"); err != nil {
		return res, fmt.Errorf("warm-up leaf: %w (worker log: %s)", err, st.worker.tail())
	}
	sample := func(n int) rssPoint {
		return rssPoint{resources: n, converge: currentRSS(st.server.pid()), worker: currentRSS(st.worker.pid())}
	}
	res.rss = append(res.rss, sample(0))
	start, from := time.Now(), 0
	for _, mark := range []int{o.restResources / 10, o.restResources / 2, o.restResources} {
		if mark <= from {
			continue
		}
		if err := submitRange(ctx, st.client, o, from, mark); err != nil {
			return res, fmt.Errorf("W5 applying leaves %d to %d: %w", from, mark, err)
		}
		if err := waitReady(ctx, st.pool, mark+1, 2*time.Hour); err != nil {
			return res, fmt.Errorf("W5: %w", err)
		}
		res.rss = append(res.rss, sample(mark))
		logf("rest: %d Ready, converge RSS %.0f MiB", mark, res.rss[len(res.rss)-1].converge)
		from = mark
	}
	res.buildRate = float64(o.restResources) / time.Since(start).Seconds()
	res.slope = rssSlope(res.rss)

	logf("rest: idle for %s", o.restIdle)
	idleOpts := o
	idleOpts.window = o.restIdle
	if res.idle, err = measureIdle(ctx, idleOpts, st, cluster, false); err != nil {
		return res, fmt.Errorf("W5 idle window: %w", err)
	}
	res.rssIdle = sample(o.restResources)
	if err := restSizes(ctx, st.pool, &res); err != nil {
		return res, err
	}
	return res, restLatency(ctx, o, st, &res)
}

// restSizes reads the size of every table of ours and the payload in it.
func restSizes(ctx context.Context, pool *pgxpool.Pool, res *restResult) error {
	rows, err := pool.Query(ctx, `SELECT c.relname, pg_total_relation_size(c.oid) FROM pg_class c
		JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'p') ORDER BY 2 DESC, 1`)
	if err != nil {
		return fmt.Errorf("W5 table sizes: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var t tableSize
		if err := rows.Scan(&t.name, &t.bytes); err != nil {
			return fmt.Errorf("W5 table sizes: %w", err)
		}
		res.tables = append(res.tables, t)
		res.dbBytes += t.bytes
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("W5 table sizes: %w", err)
	}
	if err := pool.QueryRow(ctx, payloadSQL).Scan(&res.payload, &res.resources); err != nil {
		return fmt.Errorf("W5 payload size: %w", err)
	}
	return nil
}

// restLatency times, through the API, o.idle first pages of a filtered
// ListResources (the bench kind, phase Ready, 100 a page) and as many
// GetResource calls of random leaves, one at a time.
func restLatency(ctx context.Context, o options, st *stack, res *restResult) error {
	list := &convergev1.ListResourcesRequest{Namespace: "default", Kind: benchKind, Phases: []string{"Ready"}, PageSize: 100}
	for i := 0; i < o.idle; i++ {
		t := time.Now()
		resp, err := st.client.ListResources(ctx, list)
		if err != nil {
			return fmt.Errorf("W5 ListResources kind=%s phases=Ready: %w", benchKind, err)
		}
		res.list = append(res.list, time.Since(t))
		if len(resp.GetResources()) == 0 {
			return fmt.Errorf("W5 ListResources kind=%s phases=Ready: empty page at %d resources", benchKind, res.n)
		}
		name := fmt.Sprintf("leaf-%07d", rand.IntN(max(res.n, 1)))
		t = time.Now()
		if _, err := st.client.GetResource(ctx, &convergev1.GetResourceRequest{Namespace: "default", Kind: benchKind, Name: name}); err != nil {
			return fmt.Errorf("W5 GetResource %s/%s: %w", benchKind, name, err)
		}
		res.get = append(res.get, time.Since(t))
	}
	return nil
}

// rssSlope is the least-squares slope of converge's RSS in MiB per 100k
// resources.
func rssSlope(ps []rssPoint) float64 {
	if len(ps) < 2 {
		return 0
	}
	var sx, sy, sxx, sxy float64
	for _, p := range ps {
		x := float64(p.resources) / 100_000
		sx, sy, sxx, sxy = sx+x, sy+p.converge, sxx+x*x, sxy+x*p.converge
	}
	n := float64(len(ps))
	den := n*sxx - sx*sx
	if den == 0 {
		return 0
	}
	return (n*sxy - sx*sy) / den
}

// currentRSS returns the resident set of pid now, in MiB.
func currentRSS(pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
			return kb / 1024
		}
	}
	return 0
}
