package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// printZoneWaves prints, per kind of the landing zone's children, when the
// first and the last of them became Ready and the median time from its
// creation (or from the moment its gate opened, for a dependent) to Ready,
// all from the root's submit: whether the three waves overlap or wait on
// each other, and which one is slow.
func printZoneWaves(ctx context.Context, pool *pgxpool.Pool, root time.Time, kind, name string) {
	rows, err := pool.Query(ctx, `
		WITH kids AS (
		    SELECT r.id, r.kind FROM resources r JOIN resources p ON p.id = r.owner_id
		    WHERE p.kind = $1 AND p.name = $2
		), t AS (
		    SELECT k.kind, min(c.at) FILTER (WHERE c.type = 'created') AS created,
		           min(c.at) FILTER (WHERE c.generation > 1) AS opened,
		           min(c.at) FILTER (WHERE c.phase = 'Ready') AS ready
		    FROM kids k JOIN changes c ON c.resource_id = k.id GROUP BY k.id, k.kind
		)
		SELECT kind, count(*), min(created), min(ready), max(ready),
		       percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM ready - created)),
		       percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM ready - coalesce(opened, created)))
		FROM t GROUP BY kind ORDER BY min(ready)`, kind, name)
	if err != nil {
		fmt.Fprintf(os.Stderr, "zone waves: %v\n", err)
		return
	}
	defer rows.Close()
	var lag [3]float64
	if err := pool.QueryRow(ctx, `
		WITH kids AS (
		    SELECT r.id FROM resources r JOIN resources p ON p.id = r.owner_id WHERE p.kind = $1 AND p.name = $2
		), ready AS (
		    SELECT c.resource_id AS id, min(c.at) AS at FROM changes c JOIN kids k ON k.id = c.resource_id
		    WHERE c.phase = 'Ready' GROUP BY c.resource_id
		), opened AS (
		    SELECT c.resource_id AS id, min(c.at) AS at FROM changes c JOIN kids k ON k.id = c.resource_id
		    WHERE c.generation > 1 GROUP BY c.resource_id
		), l AS (
		    SELECT extract(epoch FROM o.at - r.at) AS s FROM edges e JOIN ready r ON r.id = e.dependency_id
		    JOIN opened o ON o.id = e.dependent_id
		)
		SELECT coalesce(percentile_cont(0.5) WITHIN GROUP (ORDER BY s), 0),
		       coalesce(percentile_cont(0.99) WITHIN GROUP (ORDER BY s), 0), coalesce(max(s), 0) FROM l`,
		kind, name).Scan(&lag[0], &lag[1], &lag[2]); err != nil {
		fmt.Fprintf(os.Stderr, "zone waves: %v\n", err)
	}
	fmt.Fprintf(os.Stderr, "dependency Ready → dependent's spec flowed: p50 %s, p99 %s, max %s\n", secs(lag[0]), secs(lag[1]), secs(lag[2]))
	fmt.Fprintf(os.Stderr, "%-10s %6s %12s %12s %12s %16s %16s\n", "kind", "n", "created", "first Ready", "last Ready", "created→Ready", "opened→Ready")
	for rows.Next() {
		var k string
		var n int
		var created, first, last time.Time
		var p50, open50 float64
		if err := rows.Scan(&k, &n, &created, &first, &last, &p50, &open50); err != nil {
			fmt.Fprintf(os.Stderr, "zone waves: %v\n", err)
			return
		}
		fmt.Fprintf(os.Stderr, "%-10s %6d %12s %12s %12s %16s %16s\n", k, n, created.Sub(root).Round(time.Millisecond), first.Sub(root).Round(time.Millisecond),
			last.Sub(root).Round(time.Millisecond), secs(p50), secs(open50))
	}
}

// printZoneStages prints, per kind of the zone (the root included), the
// median time of each stage of its last reconcile, from the task record
// (the broker's clock) and the change feed: queued (created, or its spec
// flowed) to claimed, claimed to dispatched to a worker, and dispatched to
// the answer applied.
func printZoneStages(ctx context.Context, pool *pgxpool.Pool, kind, name string) {
	rows, err := pool.Query(ctx, `
		WITH zone AS (
		    SELECT r.id, r.kind FROM resources r JOIN resources p ON p.id = r.owner_id WHERE p.kind = $1 AND p.name = $2
		    UNION ALL SELECT r.id, r.kind FROM resources r WHERE r.kind = $1 AND r.name = $2
		), queued AS (
		    SELECT c.resource_id AS id, coalesce(min(c.at) FILTER (WHERE c.generation > 1),
		                    min(c.at) FILTER (WHERE c.type = 'created')) AS at
		    FROM changes c JOIN zone z ON z.id = c.resource_id GROUP BY c.resource_id
		), rec AS (
		    SELECT DISTINCT ON (t.resource_id) t.* FROM task_records t JOIN zone z ON z.id = t.resource_id
		    WHERE t.trigger = 'specChange' ORDER BY t.resource_id, t.id DESC
		)
		SELECT z.kind,
		       percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM t.claimed_at - q.at)),
		       percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM t.dispatched_at - t.claimed_at)),
		       percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM t.ended_at - t.dispatched_at))
		FROM zone z JOIN queued q ON q.id = z.id JOIN rec t ON t.resource_id = z.id
		GROUP BY z.kind ORDER BY min(t.ended_at)`, kind, name)
	if err != nil {
		fmt.Fprintf(os.Stderr, "zone stages: %v\n", err)
		return
	}
	defer rows.Close()
	fmt.Fprintf(os.Stderr, "%-12s %14s %14s %16s\n", "kind (p50)", "queued→claim", "claim→dispatch", "dispatch→applied")
	for rows.Next() {
		var k string
		var a, b, c float64
		if err := rows.Scan(&k, &a, &b, &c); err != nil {
			fmt.Fprintf(os.Stderr, "zone stages: %v\n", err)
			return
		}
		fmt.Fprintf(os.Stderr, "%-12s %14s %14s %16s\n", k, secs(a), secs(b), secs(c))
	}
}

func secs(s float64) string {
	return time.Duration(s * float64(time.Second)).Round(time.Millisecond).String()
}
