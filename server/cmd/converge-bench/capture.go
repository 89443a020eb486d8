package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5/pgxpool"
)

// W1's per-run capture of perf-anchors §5.1 and §5.4, over the load
// window: rows written and WAL records and syncs per reconcile, the dead
// tuples the load left, and the statements that took the most time. The
// wait-event histogram is in waits.go.

// dbCounters are cumulative counters read at each end of the load window.
// The tuple counts are the bench database's; the WAL counts the
// cluster's, as the WAL is (nothing else runs during the load).
type dbCounters struct {
	inserted, updated, deleted int64
	walRecords, walSyncs       int64
	tables                     map[string]tableWrites
}

// tableWrites are one table's pg_stat_user_tables tuple counters.
type tableWrites struct{ ins, upd, hot, del int64 }

// statsFlushWait is how long after the load the end counters are read.
// Backends publish their tuple and WAL counters lazily, an idle one up to
// PostgreSQL's idle flush interval (10 s) after its last transaction, so
// counters read at once miss the last batches by a run-dependent amount.
const statsFlushWait = 11 * time.Second

func readDBCounters(ctx context.Context, pool *pgxpool.Pool, db string) (dbCounters, error) {
	var c dbCounters
	err := pool.QueryRow(ctx, `SELECT d.tup_inserted, d.tup_updated, d.tup_deleted, w.wal_records, w.wal_sync
		FROM pg_stat_database d, pg_stat_wal w WHERE d.datname = $1`, db).
		Scan(&c.inserted, &c.updated, &c.deleted, &c.walRecords, &c.walSyncs)
	if err != nil {
		return c, fmt.Errorf("reading pg_stat_database and pg_stat_wal of %s: %w", db, err)
	}
	rows, err := pool.Query(ctx, `SELECT relname, n_tup_ins, n_tup_upd, n_tup_hot_upd, n_tup_del
		FROM pg_stat_user_tables WHERE schemaname = current_schema()`)
	if err != nil {
		return c, fmt.Errorf("reading pg_stat_user_tables: %w", err)
	}
	defer rows.Close()
	c.tables = map[string]tableWrites{}
	for rows.Next() {
		var name string
		var t tableWrites
		if err := rows.Scan(&name, &t.ins, &t.upd, &t.hot, &t.del); err != nil {
			return c, fmt.Errorf("reading pg_stat_user_tables: %w", err)
		}
		c.tables[name] = t
	}
	return c, rows.Err()
}

// dbCost is the change of dbCounters over the load, per reconcile.
type dbCost struct {
	inserted, updated, deleted float64
	walRecords, walSyncs       float64
	tables                     []tableCost // the tables written, by name
}

// tableCost is one table's writes per reconcile.
type tableCost struct {
	name               string
	ins, upd, hot, del float64
}

func costPerReconcile(before, after dbCounters, reconciles int) dbCost {
	n := float64(max(reconciles, 1))
	per := func(b, a int64) float64 { return float64(a-b) / n }
	c := dbCost{
		inserted:   per(before.inserted, after.inserted),
		updated:    per(before.updated, after.updated),
		deleted:    per(before.deleted, after.deleted),
		walRecords: per(before.walRecords, after.walRecords),
		walSyncs:   per(before.walSyncs, after.walSyncs),
	}
	for name, a := range after.tables {
		b := before.tables[name]
		t := tableCost{name: name, ins: per(b.ins, a.ins), upd: per(b.upd, a.upd), hot: per(b.hot, a.hot), del: per(b.del, a.del)}
		if t.ins+t.upd+t.del >= 0.005 { // what the table prints as nonzero
			c.tables = append(c.tables, t)
		}
	}
	slices.SortFunc(c.tables, func(x, y tableCost) int { return strings.Compare(x.name, y.name) })
	return c
}

// deadTuples is n_dead_tup of the queue and the resources tables.
type deadTuples struct{ tasks, resources int64 }

func readDeadTuples(ctx context.Context, pool *pgxpool.Pool) (deadTuples, error) {
	var d deadTuples
	err := pool.QueryRow(ctx, `SELECT
		coalesce(sum(n_dead_tup) FILTER (WHERE relname = 'tasks'), 0)::bigint,
		coalesce(sum(n_dead_tup) FILTER (WHERE relname = 'resources'), 0)::bigint
		FROM pg_stat_user_tables WHERE schemaname = current_schema() AND relname IN ('tasks', 'resources')`).Scan(&d.tasks, &d.resources)
	if err != nil {
		return d, fmt.Errorf("reading n_dead_tup of tasks and resources: %w", err)
	}
	return d, nil
}

// statement is one row of pg_stat_statements.
type statement struct {
	calls      int64
	exec, plan float64 // ms
	rows       int64
	query      string
}

// topStatementRows is how many statements the report lists.
const topStatementRows = 10

// topStatements reads the n statements of database db with the most
// execution plus planning time since pg_stat_statements was reset.
func topStatements(ctx context.Context, pool *pgxpool.Pool, db string, n int) ([]statement, error) {
	rows, err := pool.Query(ctx, `SELECT s.calls, s.total_exec_time, s.total_plan_time, s.rows, s.query
		FROM pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid WHERE d.datname = $1
		ORDER BY s.total_exec_time + s.total_plan_time DESC LIMIT $2`, db, n)
	if err != nil {
		return nil, fmt.Errorf("reading the top statements from pg_stat_statements: %w", err)
	}
	defer rows.Close()
	var out []statement
	for rows.Next() {
		var s statement
		if err := rows.Scan(&s.calls, &s.exec, &s.plan, &s.rows, &s.query); err != nil {
			return nil, fmt.Errorf("reading the top statements from pg_stat_statements: %w", err)
		}
		out = append(out, s)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("reading the top statements from pg_stat_statements: %w", err)
	}
	return out, nil
}

// statementCell is a statement as a Markdown table cell: whitespace
// collapsed, the first 90 characters, in a code span (identifiers hold
// underscores) with pipes escaped, which tables need even in code spans.
func statementCell(q string) string {
	q = strings.Join(strings.Fields(q), " ")
	if utf8.RuneCountInString(q) > 90 {
		q = string([]rune(q)[:90]) + "…"
	}
	q = strings.ReplaceAll(q, "`", "'")
	q = strings.ReplaceAll(q, "|", `\|`)
	return "`" + q + "`"
}

// medianRun is the index of the run with the median reconciles/s (of an
// even count, the slower of the middle two); -1 with no runs.
func medianRun(runs []w1Result) int {
	if len(runs) == 0 {
		return -1
	}
	idx := make([]int, len(runs))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int {
		switch {
		case runs[a].rate < runs[b].rate:
			return -1
		case runs[a].rate > runs[b].rate:
			return 1
		}
		return 0
	})
	return idx[(len(idx)-1)/2]
}

// reportCapture prints the capture's rows into the W1 table.
func reportCapture(w io.Writer, runs []w1Result) {
	col := func(f func(w1Result) float64) []float64 { return column(runs, f) }
	medianRow(w, "Rows inserted per reconcile (pg_stat_database tup_inserted)", col(func(r w1Result) float64 { return r.cost.inserted }), "", 2)
	medianRow(w, "Rows updated per reconcile (tup_updated)", col(func(r w1Result) float64 { return r.cost.updated }), "", 2)
	medianRow(w, "Rows deleted per reconcile (tup_deleted)", col(func(r w1Result) float64 { return r.cost.deleted }), "", 2)
	medianRow(w, "WAL records per reconcile (pg_stat_wal)", col(func(r w1Result) float64 { return r.cost.walRecords }), "", 2)
	medianRow(w, "WAL syncs per reconcile (pg_stat_wal wal_sync)", col(func(r w1Result) float64 { return r.cost.walSyncs }), "", 4)
	medianRow(w, "Dead tuples in tasks at the end of the load", col(func(r w1Result) float64 { return float64(r.dead.tasks) }), "", 0)
	medianRow(w, "Dead tuples in resources at the end of the load", col(func(r w1Result) float64 { return float64(r.dead.resources) }), "", 0)
	waits := make([]waitSamples, len(runs))
	for i, r := range runs {
		waits[i] = r.waits
	}
	reportWaits(w, waits)
}

// reportWriteSet prints the median run's rows written per reconcile, by
// table (pg_stat_user_tables, read after statsFlushWait).
func reportWriteSet(w io.Writer, runs []w1Result) {
	i := medianRun(runs)
	if i < 0 || len(runs[i].cost.tables) == 0 {
		return
	}
	p := func(format string, args ...any) { fmt.Fprintf(w, format+"\n", args...) }
	p("")
	p("Rows written per reconcile by table, median run (run %d, pg_stat_user_tables):", i+1)
	p("")
	p("| Table | Inserted | Updated | of which HOT | Deleted |")
	p("|---|---:|---:|---:|---:|")
	var sum tableCost
	for _, t := range runs[i].cost.tables {
		p("| %s | %.2f | %.2f | %.2f | %.2f |", t.name, t.ins, t.upd, t.hot, t.del)
		sum.ins, sum.upd, sum.hot, sum.del = sum.ins+t.ins, sum.upd+t.upd, sum.hot+t.hot, sum.del+t.del
	}
	p("| **all** | **%.2f** | **%.2f** | %.2f | %.2f |", sum.ins, sum.upd, sum.hot, sum.del)
}

// reportTopStatements prints the median run's top statements as a table.
func reportTopStatements(w io.Writer, runs []w1Result) {
	i := medianRun(runs)
	if i < 0 || len(runs[i].top) == 0 {
		return
	}
	p := func(format string, args ...any) { fmt.Fprintf(w, format+"\n", args...) }
	p("")
	p("Top %d statements by database time (execution + planning) during the load of the median run (run %d, pg_stat_statements):", len(runs[i].top), i+1)
	p("")
	p("| Calls | Exec ms | Plan ms | Rows | Statement |")
	p("|---:|---:|---:|---:|---|")
	for _, s := range runs[i].top {
		p("| %d | %.0f | %.0f | %d | %s |", s.calls, s.exec, s.plan, s.rows, statementCell(s.query))
	}
}
