package main

import (
	"fmt"
	"io"
	"math"
	"strings"
	"time"
)

// reportCalibration prints Tier 0 as Markdown.
func reportCalibration(w io.Writer, o options, settings map[string]string, c *ceilings) {
	p := func(format string, args ...any) { fmt.Fprintf(w, format+"\n", args...) }
	p("### Tier 0: this machine's ceilings, %s", time.Now().UTC().Format("2006-01-02"))
	p("")
	p("- PostgreSQL: %s; %s", profileName(o.durable), settingList(settings))
	p("- pg_test_fsync -s %d, one 8 kB write: %s%s", o.fsyncSecs, c.fsync, fsyncNoise(o, c.fsync))
	p("- pgbench kernels on the same cluster, %s each, `-M prepared`, threads = min(clients, cores); each after a CHECKPOINT; the claim kernels keep a queue of %d rows (each transaction deletes what it claimed and enqueues as many)",
		c.length, claimQueueRows)
	p("")
	p("| Kernel | Clients | Transactions/s | Rows/s |")
	p("|---|---|---|---|")
	for _, k := range c.kernels {
		p("| %s | %d | %.0f | %.0f |", k.name, k.clients, k.tps, k.tps*float64(k.rowsPerTx))
	}
	if tx, n := c.tps(kernelTx32), c.tps(kernelNotify32); n > 0 {
		p("")
		p("NOTIFY penalty at c=32 (transactions/s without ÷ with pg_notify): **%.2f×**", tx/n)
	}
	p("")
}

// fsyncNoise flags a calibration more than twice as slow as -fsync-ref.
func fsyncNoise(o options, f fsyncResult) string {
	if o.fsyncRef <= 0 || f.usPerOp == 0 {
		return ""
	}
	if f.usPerOp > 2*o.fsyncRef {
		return fmt.Sprintf(" — **noisy: %.1f× the reference %.0f µs/op; re-run on a quieter machine**", f.usPerOp/o.fsyncRef, o.fsyncRef)
	}
	return fmt.Sprintf(" (%.2f× the reference %.0f µs/op)", f.usPerOp/o.fsyncRef, o.fsyncRef)
}

// reportRest prints W5 as Markdown.
func reportRest(w io.Writer, o options, settings map[string]string, runs []restResult) {
	p := func(format string, args ...any) { fmt.Fprintf(w, format+"\n", args...) }
	row := func(name string, f func(restResult) float64, unit string, digits int) {
		medianRow(w, name, column(runs, f), unit, digits)
	}
	p("### W5: %d resources at rest, %s", o.restResources, time.Now().UTC().Format("2006-01-02"))
	p("")
	p("- Machine: %s", machine())
	p("- PostgreSQL: %s; %s", profileName(o.durable), settingList(settings))
	p("- Build: %d `%s` leaves through ApplyResources (batches of %d, %d calls in flight), one no-op Go SDK worker (capacity %d), `converge serve --role all`; RSS read from /proc (VmRSS) once 10%%, 50%% and 100%% are Ready",
		o.restResources, benchKind, o.batch, o.concurrency, o.capacity)
	p("- Idle: %s after `VACUUM (ANALYZE)` and `CHECKPOINT`; sizes are `pg_total_relation_size` of every table (indexes and TOAST included) after it; payload is the stored size of spec, status and desired spec, and of the spec revisions kept", o.restIdle)
	p("- The RSS slope is a least-squares fit over the samples, the one at 0 included; at small N it is mostly the server's warm-up")
	p("- Reads: %d ListResources first pages (kind, phase Ready, 100 a page) and %d GetResource of random leaves, one at a time, timed at the client", o.idle, o.idle)
	p("- Runs: %d; each on a fresh database; median (min – max)", len(runs))
	p("")
	p("| Figure | Median | Range |")
	p("|---|---|---|")
	row("Build rate (resources Ready per second)", func(r restResult) float64 { return r.buildRate }, "/s", 0)
	for i := range runs[0].rss {
		row(fmt.Sprintf("converge RSS at %d resources", runs[0].rss[i].resources), func(r restResult) float64 { return rssAt(r, i).converge }, "MiB", 0)
	}
	row(fmt.Sprintf("converge RSS after %s idle", o.restIdle), func(r restResult) float64 { return r.rssIdle.converge }, "MiB", 0)
	row("worker RSS after the idle window", func(r restResult) float64 { return r.rssIdle.worker }, "MiB", 0)
	row("converge RSS slope (least squares)", func(r restResult) float64 { return r.slope }, "MiB per 100k", 1)
	row("Database bytes per resource", func(r restResult) float64 { return perResource(r, r.dbBytes) }, "B", 0)
	row("Database bytes per resource, payload excluded", func(r restResult) float64 { return perResource(r, r.dbBytes-r.payload) }, "B", 0)
	row("Payload bytes per resource", func(r restResult) float64 { return perResource(r, r.payload) }, "B", 0)
	row("PostgreSQL CPU while idle (% of one core)", func(r restResult) float64 { return 100 * r.idle.pgCPU }, "%", 2)
	row("converge CPU while idle (% of one core)", func(r restResult) float64 { return 100 * r.idle.convergeCPU }, "%", 2)
	row("Statements per minute while idle", func(r restResult) float64 { return r.idle.statements }, "", 0)
	row("ListResources page p50", func(r restResult) float64 { return ms(percentile(r.list, 0.5)) }, "ms", 1)
	row("ListResources page p99", func(r restResult) float64 { return ms(percentile(r.list, 0.99)) }, "ms", 1)
	row("GetResource p50", func(r restResult) float64 { return ms(percentile(r.get, 0.5)) }, "ms", 1)
	row("GetResource p99", func(r restResult) float64 { return ms(percentile(r.get, 0.99)) }, "ms", 1)
	p("")
	last := runs[len(runs)-1]
	var parts []string
	for _, t := range last.tables {
		if t.bytes > 0 {
			parts = append(parts, fmt.Sprintf("%s %.0f B", t.name, perResource(last, t.bytes)))
		}
	}
	p("Bytes per resource by table (last run): %s.", strings.Join(parts, ", "))
	p("")
}

func rssAt(r restResult, i int) rssPoint {
	if i < len(r.rss) {
		return r.rss[i]
	}
	return rssPoint{}
}

func perResource(r restResult, bytes int64) float64 {
	if r.resources == 0 {
		return 0
	}
	return float64(bytes) / float64(r.resources)
}

// reportDrain prints W7 as Markdown: the plain drain and, when it ran,
// the drain with an xid held.
func reportDrain(w io.Writer, o options, settings map[string]string, plain, held []drainResult) {
	p := func(format string, args ...any) { fmt.Fprintf(w, format+"\n", args...) }
	p("### W7: a backlog of %d leaves drained, %s", o.resources, time.Now().UTC().Format("2006-01-02"))
	p("")
	p("- Machine: %s", machine())
	p("- PostgreSQL: %s; %s", profileName(o.durable), settingList(settings))
	p("- Backlog: %d `%s` leaves through ApplyResources with no worker connected; then one no-op Go SDK worker (capacity %d) started; completions are each leaf's first Ready change, stamped by the database, split into ten equal counts",
		o.resources, benchKind, o.capacity)
	if len(held) > 0 {
		p("- Variant: a session runs `BEGIN; SELECT txid_current();` and stays idle in transaction for the first %s of the drain; recovery is from its release until the completions in one second reach 90%% of the first decile's rate", o.drainXmin)
	}
	p("- Runs: %d; each on a fresh database; median (min – max)", len(plain))
	p("")
	cols := []string{"Figure", "Drain"}
	if len(held) > 0 {
		cols = append(cols, fmt.Sprintf("xid held %s", o.drainXmin))
	}
	p("| %s |", strings.Join(cols, " | "))
	p("|%s", strings.Repeat("---|", len(cols)))
	row := func(name string, f func(drainResult) float64, unit string, digits int) {
		cells := []string{name}
		for _, runs := range [][]drainResult{plain, held} {
			if len(runs) == 0 {
				continue
			}
			xs := defined(runs, f)
			if len(xs) == 0 {
				cells = append(cells, "n/a")
				continue
			}
			cells = append(cells, spread(xs, unit, digits))
		}
		p("| %s |", strings.Join(cells, " | "))
	}
	row("Completions/s, whole drain", func(r drainResult) float64 { return r.rate }, "/s", 0)
	for i := 0; i < 10; i++ {
		row(fmt.Sprintf("Completions/s, decile %d", i+1), func(r drainResult) float64 { return decile(r, i) }, "/s", 0)
	}
	row("Last decile ÷ first decile", func(r drainResult) float64 { return r.ratio() }, "", 2)
	row("converge RSS with the backlog queued", func(r drainResult) float64 { return r.rssQueued }, "MiB", 0)
	row("Dead tuples in tasks when drained", func(r drainResult) float64 { return float64(r.deadTasks) }, "", 0)
	if len(held) > 0 {
		released, recovered := 0, 0
		var recov []float64
		for _, r := range held {
			if r.released {
				released++
			}
			if r.recovered {
				recovered++
				recov = append(recov, r.recovery.Seconds())
			}
		}
		p("")
		line := fmt.Sprintf("The xid was released before the drain ended in %d of %d runs", released, len(held))
		if recovered > 0 {
			med, lo, hi := median(recov)
			line += fmt.Sprintf("; the rate recovered in %d of them, %.1f s (%.1f – %.1f) after the release", recovered, med, lo, hi)
		} else if released > 0 {
			line += "; the rate did not recover within the drain (or less than a second of it was left)"
		} else {
			line += "; use a longer backlog or a shorter -drain-xmin to see the recovery"
		}
		p("%s.", line)
	}
	p("")
}

func decile(r drainResult, i int) float64 {
	if i < len(r.deciles) {
		return r.deciles[i]
	}
	return math.NaN()
}

// defined is f of every run that has the figure (not NaN).
func defined(runs []drainResult, f func(drainResult) float64) []float64 {
	var xs []float64
	for _, r := range runs {
		if x := f(r); !math.IsNaN(x) {
			xs = append(xs, x)
		}
	}
	return xs
}
