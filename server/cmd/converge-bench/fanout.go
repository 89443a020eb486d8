package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/convergehq/converge/server/internal/devpg"
)

// fanoutWideChildren is the fanout100k workload's fan-out: the most
// children one composite may have (limits.MaxChildren).
const fanoutWideChildren = 100_000

// fanoutWideResult is one run of fanout100k.
type fanoutWideResult struct {
	fanoutTimes
}

// rate is the resources Ready per second of the run, the root included.
func (r fanoutWideResult) rate() float64 {
	if r.ready <= 0 {
		return 0
	}
	return float64(fanoutWideChildren+1) / r.ready.Seconds()
}

// runFanoutWide is fanout100k: one bench.fanout of 100,000 no-op leaves
// on a fresh database, with -pprof and -top covering it.
func runFanoutWide(ctx context.Context, o options, cluster *devpg.Cluster, run int) (fanoutWideResult, error) {
	db := fmt.Sprintf("fanout100k_%d", run)
	st, err := startCompositeStack(ctx, o, cluster, db)
	if err != nil {
		return fanoutWideResult{}, err
	}
	defer st.close()
	if _, err := st.pool.Exec(ctx, `SELECT pg_stat_statements_reset()`); err != nil {
		return fanoutWideResult{}, err
	}
	defer profileWhile(o, db)()
	t, err := measureFanout(ctx, st, "fan-100k", fanoutWideChildren, 10*time.Minute)
	if err != nil {
		return fanoutWideResult{}, fmt.Errorf("%w (worker log: %s)", err, st.worker.tail())
	}
	if o.top > 0 {
		printTop(ctx, st.pool, o.top)
	}
	return fanoutWideResult{t}, nil
}

// reportFanoutWide prints fanout100k as Markdown.
func reportFanoutWide(w io.Writer, o options, settings map[string]string, runs []fanoutWideResult) {
	p := func(format string, args ...any) { fmt.Fprintf(w, format+"\n", args...) }
	p("### 1 → 100,000: one composite of %d leaves, %s", fanoutWideChildren, time.Now().UTC().Format("2006-01-02"))
	p("")
	compositeSetup(w, o, settings, len(runs))
	p("")
	p("| Figure | Median | Range |")
	p("|---|---|---|")
	medianRow(w, "root submit → first child Ready (compose, queueing, first claim)", column(runs, func(r fanoutWideResult) float64 { return r.firstChild.Seconds() }), "s", 2)
	medianRow(w, "root submit → root Ready", column(runs, func(r fanoutWideResult) float64 { return r.ready.Seconds() }), "s", 2)
	medianRow(w, "rollup: last child Ready → root Ready", column(runs, func(r fanoutWideResult) float64 { return ms(r.rollup) }), "ms", 0)
	medianRow(w, "resources Ready per second (100,001 ÷ root Ready)", column(runs, fanoutWideResult.rate), "/s", 0)
	p("")
}

// reportAgainstLeaves prints the composites' rates as ratios to W1's
// leaves/s of the same run (run i of each), when both ran: the machine is
// shared, so only a same-run ratio compares them.
func reportAgainstLeaves(w io.Writer, r *results) {
	if len(r.w1) == 0 || (len(r.comps) == 0 && len(r.wide) == 0) {
		return
	}
	p := func(format string, args ...any) { fmt.Fprintf(w, format+"\n", args...) }
	p("### Composites against leaves (same invocation, run i against W1 run i)")
	p("")
	p("| Run | W1 leaves/s | W4 resources/s | W4 ÷ W1 | 1 → 100,000 resources/s | ÷ W1 |")
	p("|---|---|---|---|---|---|")
	for i, leaves := range r.w1 {
		zone, wide := "–", "–"
		zoneRatio, wideRatio := "–", "–"
		if i < len(r.comps) {
			zone = fmt.Sprintf("%.0f", r.comps[i].zoneRate)
			zoneRatio = fmt.Sprintf("%.2f×", r.comps[i].zoneRate/leaves.rate)
		}
		if i < len(r.wide) {
			wide = fmt.Sprintf("%.0f", r.wide[i].rate())
			wideRatio = fmt.Sprintf("%.2f×", r.wide[i].rate()/leaves.rate)
		}
		p("| %d | %.0f | %s | %s | %s | %s |", i+1, leaves.rate, zone, zoneRatio, wide, wideRatio)
	}
	p("")
}
