package main

import (
	"fmt"
	"io"
	"strings"
	"time"
)

// reportFairness prints the fairness runs as Markdown: per-run
// percentiles, then the median and range across runs.
func reportFairness(w io.Writer, o options, settings map[string]string, runs []fairnessResult) {
	p := func(format string, args ...any) { fmt.Fprintf(w, format+"\n", args...) }
	row := func(name string, f func(fairnessResult) float64, unit string, digits int) {
		medianRow(w, name, column(runs, f), unit, digits)
	}
	pct := func(ds func(fairnessResult) []time.Duration, q float64) func(fairnessResult) float64 {
		return func(r fairnessResult) float64 { return ms(percentile(ds(r), q)) }
	}
	part := func(f func(probeTimes) time.Duration) func(fairnessResult) []time.Duration {
		return func(r fairnessResult) []time.Duration { return probePart(r.loads, f) }
	}
	total := probeTotals
	wait := part(func(t probeTimes) time.Duration { return t.wait })
	dispatch := part(func(t probeTimes) time.Duration { return t.dispatch })
	handler := part(func(t probeTimes) time.Duration { return t.handler })
	result := part(func(t probeTimes) time.Duration { return t.result })
	after := part(func(t probeTimes) time.Duration { return t.dispatch + t.result })
	rounds := func(r fairnessResult) []time.Duration { return r.rounds }
	aPath := func(r fairnessResult) []time.Duration { return r.aPath }
	idle := func(r fairnessResult) []time.Duration {
		return probePart(r.idle, func(t probeTimes) time.Duration { return t.total })
	}
	idleWait := func(r fairnessResult) []time.Duration {
		return probePart(r.idle, func(t probeTimes) time.Duration { return t.wait })
	}
	// Once its apply commits, B may wait for the claim round in progress
	// and is taken by the next one; then it pays its handler and the path
	// every task takes after its claim (push, result, apply), which A's
	// tasks measure under the same load. Its apply, up to the moment the
	// broker could have claimed it at once, is what the idle probes
	// measure from submit to claim.
	bound := func(q float64) func(fairnessResult) float64 {
		return func(r fairnessResult) float64 {
			return ms(percentile(idleWait(r), q)) + 2*ms(percentile(r.rounds, q)) + ms(percentile(handler(r), q)) + ms(percentile(r.aPath, q))
		}
	}

	p("### Fairness: one resource of kind B behind %d of kind A, %s", o.resources, time.Now().UTC().Format("2006-01-02"))
	p("")
	p("- Machine: %s", machine())
	p("- PostgreSQL: %s; %s", profileName(o.durable), settingList(settings))
	p("- Load: kind A (`%s`, handler %s) %d resources through ApplyResources (batches of %d, %d calls in flight); kind B (`%s`, no-op handler); one Go SDK worker serving both, capacity %d; `converge serve --role all`; all on this machine",
		benchKind, o.fairDelay, o.resources, o.batch, o.concurrency, probeKind, o.fairCapacity)
	p("- Probes: up to %d B resources per run, applied one at a time (each after the previous is Ready, 20 ms apart) once A's backlog is applied and draining, while at least %d A tasks are queued; the same number before the backlog for the idle figures", o.probes, o.resources/10)
	p("- Runs: %d; each on a fresh database; per-run percentiles, median (min – max) across runs; 1-min load average per run: %s", len(runs), runLoads(runs))
	p("")
	p("| Figure | Median | Range |")
	p("|---|---|---|")
	row("B submit → Ready p50 under the backlog", pct(total, 0.5), "ms", 1)
	row("B submit → Ready p99 under the backlog", pct(total, 0.99), "ms", 1)
	row("Bound p50: idle submit → claim + 2 claim rounds + B's handler + A's path after claim", bound(0.5), "ms", 1)
	row("Bound p99: the same at p99", bound(0.99), "ms", 1)
	row("B submit → its claim delivered p50", pct(wait, 0.5), "ms", 1)
	row("B submit → its claim delivered p99", pct(wait, 0.99), "ms", 1)
	row("B submit → its claim delivered p50, idle", pct(idleWait, 0.5), "ms", 1)
	row("B submit → its claim delivered p99, idle", pct(idleWait, 0.99), "ms", 1)
	row("B claim delivered → handler started p99", pct(dispatch, 0.99), "ms", 2)
	row("B handler p99", pct(handler, 0.99), "ms", 2)
	row("B handler returned → Ready p99", pct(result, 0.99), "ms", 1)
	row("B path after claim, handler excluded, p50", pct(after, 0.5), "ms", 1)
	row("B path after claim, handler excluded, p99", pct(after, 0.99), "ms", 1)
	row("Claim round (interval between claim deliveries) p50", pct(rounds, 0.5), "ms", 2)
	row("Claim round p99", pct(rounds, 0.99), "ms", 2)
	row("Claim statement mean execution (pg_stat_statements)", func(r fairnessResult) float64 { return ms(r.claimExec) }, "ms", 2)
	row("Tasks per claim round", func(r fairnessResult) float64 { return r.perRound }, "", 1)
	row("A path after claim, handler excluded, p50", pct(aPath, 0.5), "ms", 1)
	row("A path after claim, handler excluded, p99", pct(aPath, 0.99), "ms", 1)
	row("A Ready/s while the probes ran", func(r fairnessResult) float64 { return r.aRate }, "/s", 0)
	row("A tasks queued when a B was applied (fewest)", func(r fairnessResult) float64 { return float64(r.backlogMin) }, "", 0)
	row("B probes under the backlog", func(r fairnessResult) float64 { return float64(len(r.loads)) }, "", 0)
	row("B submit → Ready p50, idle (before the backlog)", pct(idle, 0.5), "ms", 1)
	row("B submit → Ready p99, idle", pct(idle, 0.99), "ms", 1)
	p("")
}

// reportResync prints the resync runs as Markdown.
func reportResync(w io.Writer, o options, settings map[string]string, runs []resyncResult) {
	p := func(format string, args ...any) { fmt.Fprintf(w, format+"\n", args...) }
	row := func(name string, f func(idleCost) float64, unit string, digits int) {
		cells := []string{name}
		for _, window := range []func(resyncResult) idleCost{
			func(r resyncResult) idleCost { return r.empty },
			func(r resyncResult) idleCost { return r.settled },
			func(r resyncResult) idleCost { return r.resyncing },
		} {
			cells = append(cells, spread(column(runs, func(r resyncResult) float64 { return f(window(r)) }), unit, digits))
		}
		p("| %s |", strings.Join(cells, " | "))
	}
	p("### Resync cost: %d resources that do not opt in, %s", o.resources, time.Now().UTC().Format("2006-01-02"))
	p("")
	p("- Machine: %s", machine())
	p("- PostgreSQL: %s; %s", profileName(o.durable), settingList(settings))
	p("- Setup: `converge serve --role all`, one no-op Go SDK worker serving `%s` (capacity %d), the system otherwise idle; each window is %s, after `VACUUM (ANALYZE)` and `CHECKPOINT`; three windows in a row on one database: no resources, %d Ready resources of a kind without resync, then the same kind with `resync_interval_seconds=%d` set over the API (UpdateKindPolicy)",
		benchKind, o.capacity, o.window, o.resources, int(resyncInterval/time.Second))
	p("- PostgreSQL CPU is every process of the cluster (/proc); statements are top-level statements in pg_stat_statements; commits are pg_stat_database xact_commit; the benchmark's own snapshot statements are left out")
	p("- Runs: %d; each on a fresh database; median (min – max); 1-min load average per run: %s", len(runs), resyncLoads(runs))
	p("")
	p("| Figure | Empty system | %d Ready, no resync | %d Ready, resync every %ds |", o.resources, o.resources, int(resyncInterval/time.Second))
	p("|---|---|---|---|")
	row("PostgreSQL CPU (% of one core)", func(c idleCost) float64 { return 100 * c.pgCPU }, "%", 2)
	row("converge CPU (% of one core)", func(c idleCost) float64 { return 100 * c.convergeCPU }, "%", 2)
	row("Statements per minute", func(c idleCost) float64 { return c.statements }, "", 0)
	row("Commits per minute", func(c idleCost) float64 { return c.commits }, "", 0)
	row("Resyncs per second", func(c idleCost) float64 { return c.resyncs }, "/s", 0)
	p("")
}

func runLoads(runs []fairnessResult) string {
	out := make([]string, len(runs))
	for i, r := range runs {
		out[i] = r.load
	}
	return strings.Join(out, "; ")
}

func resyncLoads(runs []resyncResult) string {
	out := make([]string, len(runs))
	for i, r := range runs {
		out[i] = r.load
	}
	return strings.Join(out, "; ")
}
