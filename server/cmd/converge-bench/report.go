package main

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"time"
)

// report prints the run as Markdown, ready for docs/benchmarks.md.
func report(w io.Writer, o options, settings map[string]string, fsync fsyncResult, runs []w1Result, rivers []riverResult, cal *ceilings) {
	p := func(format string, args ...any) { fmt.Fprintf(w, format+"\n", args...) }
	col := func(f func(w1Result) float64) []float64 { return column(runs, f) }
	row := func(name string, xs []float64, unit string, digits int) { medianRow(w, name, xs, unit, digits) }
	dur := func(f func(w1Result) time.Duration) []float64 {
		return col(func(r w1Result) float64 { return ms(f(r)) })
	}

	p("### W1: %d independent leaves, %s", o.resources, time.Now().UTC().Format("2006-01-02"))
	p("")
	p("- Machine: %s", machine())
	p("- PostgreSQL: %s; %s", profileName(o.durable), settingList(settings))
	p("- fsync calibration (pg_test_fsync): %s", fsync)
	topology := "one `converge serve --role all`"
	workers := fmt.Sprintf("one no-op Go SDK worker, capacity %d", o.capacity)
	if o.split {
		topology = fmt.Sprintf("%d replicas, one `--role control` (API) and %d `--role broker` (worker endpoint)", 1+o.brokers, o.brokers)
		if o.brokers > 1 {
			workers = fmt.Sprintf("%d no-op Go SDK workers, one dialing each broker, capacity %d each", o.brokers, o.capacity)
		}
	}
	p("- Load: %d leaves through ApplyResources, batches of %d, %d calls in flight; %s; %s; all on this machine",
		o.resources, o.batch, o.concurrency, workers, topology)
	if o.split {
		p("- Brokers: %d (CPU figures sum every replica and every worker; peak RSS is the control replica's and the first worker's)", o.brokers)
	}
	p("- Runs: %d; each on a fresh database; median (min – max)", len(runs))
	p("")
	p("| Figure | Median | Range |")
	p("|---|---|---|")
	row("Reconciles/s (first submit → last Ready)", col(func(r w1Result) float64 { return r.rate }), "/s", 0)
	row("Reconciles/s, steady (10th → 90th percentile Ready)", col(func(r w1Result) float64 { return r.steadyRate }), "/s", 0)
	row("API ingest (ApplyResources)", col(func(r w1Result) float64 { return r.submitRate }), "/s", 0)
	row("Submit → Ready p50 under load", dur(func(r w1Result) time.Duration { return r.loadP50 }), "ms", 0)
	row("Submit → Ready p99 under load", dur(func(r w1Result) time.Duration { return r.loadP99 }), "ms", 0)
	row(fmt.Sprintf("Idle single leaf submit → Ready p50 (%d samples/run)", o.idle), dur(func(r w1Result) time.Duration { return r.idleP50 }), "ms", 1)
	row("Idle single leaf submit → Ready p99", dur(func(r w1Result) time.Duration { return r.idleP99 }), "ms", 1)
	row("Commits per reconcile", col(func(r w1Result) float64 { return r.commits }), "", 3)
	row("pg_notify calls per reconcile", col(func(r w1Result) float64 { return float64(r.notifies) / float64(r.n) }), "", 4)
	row("pg_notify calls per second of load", col(notifyRate), "/s", 1)
	row("Statements per reconcile", col(func(r w1Result) float64 { return r.statements }), "", 2)
	row("WAL bytes per reconcile", col(func(r w1Result) float64 { return r.walBytes }), "B", 0)
	row("CPU s: converge", col(func(r w1Result) float64 { return r.cpuConverge }), "s", 2)
	row("CPU s: worker", col(func(r w1Result) float64 { return r.cpuWorker }), "s", 2)
	row("CPU s: PostgreSQL", col(func(r w1Result) float64 { return r.cpuPostgres }), "s", 2)
	row("Peak RSS: converge", col(func(r w1Result) float64 { return r.rssConverge }), "MiB", 0)
	row("Peak RSS: worker", col(func(r w1Result) float64 { return r.rssWorker }), "MiB", 0)
	reportCapture(w, runs)
	if len(rivers) > 0 {
		rates := column(rivers, func(r riverResult) float64 { return r.rate })
		row(fmt.Sprintf("River %s `river bench -n %d` (same PostgreSQL, same run)", riverVersion, o.riverJobs), rates, "jobs/s", 0)
		continuous := column(rivers, func(r riverResult) float64 { return r.continuous })
		if o.riverDuration > 0 {
			row(fmt.Sprintf("River %s `river bench --duration %s` (inserts while it works, like W1; same PostgreSQL, same run)", riverVersion, o.riverDuration), continuous, "jobs/s", 0)
		}
		ours, _, _ := median(col(func(r w1Result) float64 { return r.rate }))
		theirs, _, _ := median(rates)
		p("")
		p("Ratio to River burn-down (median reconciles/s ÷ median River `-n` jobs/s; the headline ratio): **%.2f×**", ours/theirs)
		if c, _, _ := median(continuous); c > 0 {
			p("")
			p("Ratio to River continuous mode (median reconciles/s ÷ median River `--duration` jobs/s; the like-for-like comparison, as River inserts while it works as W1 does): **%.2f×**", ours/c)
		}
	}
	if c32 := cal.tps(kernelInsert32); c32 > 0 {
		ours, _, _ := median(col(func(r w1Result) float64 { return r.rate }))
		p("")
		p("Ratio to the c=32 single-row INSERT ceiling (Tier 0, %.0f tx/s): **%.2f×**", c32, ours/c32)
	}
	reportWriteSet(w, runs)
	reportTopStatements(w, runs)
	p("")
}

func settingList(s map[string]string) string {
	keys := make([]string, 0, len(s))
	for k := range s {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + s[k]
	}
	return strings.Join(parts, ", ")
}

// reportComposites prints W2, W3 and W4 as Markdown.
func reportComposites(w io.Writer, o options, settings map[string]string, runs []compositeResult) {
	p := func(format string, args ...any) { fmt.Fprintf(w, format+"\n", args...) }
	var ready1k, rollup1k, ready10k, rollup10k, chain, hops []time.Duration
	var zones []float64
	var zoneTimes []float64
	for _, r := range runs {
		ready1k = append(ready1k, r.fanoutReady[1000]...)
		rollup1k = append(rollup1k, r.fanoutRollup[1000]...)
		ready10k = append(ready10k, r.fanoutReady[10000]...)
		rollup10k = append(rollup10k, r.fanoutRollup[10000]...)
		chain = append(chain, r.chainReady...)
		hops = append(hops, r.chainHops...)
		zones = append(zones, r.zoneRate)
		zoneTimes = append(zoneTimes, r.zoneReady.Seconds())
	}
	d := func(x time.Duration) string { return fmt.Sprintf("%.0f ms", ms(x)) }
	p("### W2–W4: composites, %s", time.Now().UTC().Format("2006-01-02"))
	p("")
	compositeSetup(w, o, settings, len(runs))
	p("")
	// The targets are in the Targets table (targets.go), written once.
	p("| Workload | Figure | p50 | p99 (max) | Samples |")
	p("|---|---|---|---|---|")
	p("| W2 1 → 1,000 leaves | root submit → root Ready | %s | %s | %d |", d(percentile(ready1k, 0.5)), d(percentile(ready1k, 0.99)), len(ready1k))
	p("| W2 1 → 1,000 leaves | rollup: last child Ready → root Ready | %s | %s | %d |", d(percentile(rollup1k, 0.5)), d(percentile(rollup1k, 0.99)), len(rollup1k))
	p("| W2 1 → 10,000 leaves | root submit → root Ready | %s | %s | %d |", d(percentile(ready10k, 0.5)), d(percentile(ready10k, 0.99)), len(ready10k))
	p("| W2 1 → 10,000 leaves | rollup: last child Ready → root Ready | %s | %s | %d |", d(percentile(rollup10k, 0.5)), d(percentile(rollup10k, 0.99)), len(rollup10k))
	p("| W3 chain of 10, one flow per hop | root submit → root Ready | %s | %s | %d |", d(percentile(chain, 0.5)), d(percentile(chain, 0.99)), len(chain))
	p("| W3 chain of 10 | per hop: link Ready → next link Ready | %s | %s | %d |", d(percentile(hops, 0.5)), d(percentile(hops, 0.99)), len(hops))
	zt, ztLo, ztHi := median(zoneTimes)
	zr, zrLo, zrHi := median(zones)
	p("| W4 landing zone 1 → 1,000 → 1 → 1 (3,001) | root submit → root Ready | %.1f s | %.1f – %.1f s (range) | %d |", zt, ztLo, ztHi, len(zoneTimes))
	p("| W4 landing zone | resources Ready per second | %.0f /s | %.0f – %.0f (range) | %d |", zr, zrLo, zrHi, len(zones))
	p("")
}

// compositeSetup prints the setup lines every composite workload's report
// shares: the machine, PostgreSQL's settings, the processes and the runs.
func compositeSetup(w io.Writer, o options, settings map[string]string, runs int) {
	fmt.Fprintf(w, "- Machine: %s\n", machine())
	fmt.Fprintf(w, "- PostgreSQL: %s; %s\n", profileName(o.durable), settingList(settings))
	fmt.Fprintf(w, "- One `converge serve --role all`; one Go SDK worker (capacity %d) serving every kind; %d runs on fresh databases; times from database timestamps\n", o.capacity, runs)
}
