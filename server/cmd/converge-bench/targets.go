package main

import (
	"fmt"
	"io"
	"math"
	"time"
)

// target is one goal of the protocol (issue 10 where it names one, else
// perf-anchors §5.5) and the run's median figure for it.
type target struct {
	workload, figure string
	value            float64
	unit             string
	goal             float64
	atMost           bool // the figure must be ≤ goal; otherwise ≥
}

func (t target) met() bool {
	if t.atMost {
		return t.value <= t.goal
	}
	return t.value >= t.goal
}

// verdict says met, or missed by how much.
func (t target) verdict() string {
	if t.met() {
		return "met"
	}
	miss := math.Abs(t.value - t.goal)
	rel := ""
	if t.goal != 0 {
		rel = fmt.Sprintf(", %.0f%%", 100*miss/math.Abs(t.goal))
	}
	return fmt.Sprintf("**missed** by %s%s", num(miss, t.unit), rel)
}

func num(x float64, unit string) string {
	digits := 0
	switch {
	case math.Abs(x) < 1:
		digits = 3
	case math.Abs(x) < 10:
		digits = 2
	}
	s := fmt.Sprintf("%.*f", digits, x)
	if unit != "" {
		s += " " + unit
	}
	return s
}

// targets lists every goal the run has a figure for. Each goal is
// written here once.
func targets(r *results) []target {
	var ts []target
	add := func(workload, figure string, value float64, unit string, atMost bool, goal float64) {
		ts = append(ts, target{workload: workload, figure: figure, value: value, unit: unit, goal: goal, atMost: atMost})
	}
	med := func(xs []float64) float64 { m, _, _ := median(xs); return m }
	if len(r.w1) > 0 {
		col := func(f func(w1Result) float64) float64 {
			xs := make([]float64, len(r.w1))
			for i, x := range r.w1 {
				xs[i] = f(x)
			}
			return med(xs)
		}
		rate := col(func(x w1Result) float64 { return x.rate })
		add("W1", "reconciles/s (floor)", rate, "/s", false, 2000)
		add("W1", "reconciles/s (target)", rate, "/s", false, 4000)
		add("W1", "commits per reconcile", col(func(x w1Result) float64 { return x.commits }), "", true, 1.0)
		add("W1", "idle submit → Ready p50", col(func(x w1Result) float64 { return ms(x.idleP50) }), "ms", true, 10)
		add("W1", "idle submit → Ready p99", col(func(x w1Result) float64 { return ms(x.idleP99) }), "ms", true, 200)
		add("W1", "submit → Ready p99 under full load", col(func(x w1Result) float64 { return ms(x.loadP99) }), "ms", true, 2000)
		add("W1", "pg_notify per second at full load", col(notifyRate), "/s", true, 50)
		if river := riverMedian(r.rivers); river > 0 {
			add("W1", "ratio to River (same run)", rate/river, "×", false, 0.5)
		}
		if river := riverContinuousMedian(r.rivers); river > 0 {
			add("W1", "ratio to River, continuous mode (same run)", rate/river, "×", false, 0.5)
		}
	}
	if len(r.comps) > 0 {
		var ready1k, rollup1k, ready10k, chain, hops []time.Duration
		for _, c := range r.comps {
			ready1k = append(ready1k, c.fanoutReady[1000]...)
			rollup1k = append(rollup1k, c.fanoutRollup[1000]...)
			ready10k = append(ready10k, c.fanoutReady[10000]...)
			chain = append(chain, c.chainReady...)
			hops = append(hops, c.chainHops...)
		}
		add("W2", "1 → 1,000 root Ready p99", ms(percentile(ready1k, 0.99)), "ms", true, 2000)
		add("W2", "1 → 10,000 root Ready p99", ms(percentile(ready10k, 0.99)), "ms", true, 5000)
		add("W2", "rollup p50", ms(percentile(rollup1k, 0.5)), "ms", true, 100)
		add("W2", "rollup p99", ms(percentile(rollup1k, 0.99)), "ms", true, 100)
		if len(r.w1) > 0 {
			// Same-run ratio: the machine's load moves both alike.
			zone := med(column(r.comps, func(c compositeResult) float64 { return c.zoneRate }))
			add("W4", "resources/s ÷ W1 leaves/s (same run)", zone/med(column(r.w1, func(x w1Result) float64 { return x.rate })), "×", false, 0.8)
		}
		add("W3", "chain of 10 root Ready p50", ms(percentile(chain, 0.5)), "ms", true, 200)
		add("W3", "per hop p50", ms(percentile(hops, 0.5)), "ms", true, 30)
		add("W3", "per hop p99", ms(percentile(hops, 0.99)), "ms", true, 150)
	}
	if len(r.wide) > 0 {
		ready := column(r.wide, func(x fanoutWideResult) float64 { return ms(x.ready) })
		_, _, worst := median(ready)
		add("W2", "1 → 100,000 root Ready (slowest run)", worst, "ms", true, 10000)
	}
	if len(r.resyncs) > 0 {
		xs := make([]float64, len(r.resyncs))
		for i, x := range r.resyncs {
			xs[i] = 100 * x.settled.pgCPU
		}
		add("Resync", "idle PostgreSQL CPU with resources that do not opt in", med(xs), "%", true, 5)
	}
	if len(r.inters) > 0 {
		deg := make([]float64, len(r.inters))
		cpu := make([]float64, len(r.inters))
		for i, x := range r.inters {
			deg[i], cpu[i] = 100*x.degradation(), 100*x.boxCPU
		}
		add("W6", "chain p99 degradation under resync", med(deg), "%", true, 25)
		add("W6", "machine CPU under resync", med(cpu), "%", true, 30)
	}
	if len(r.rests) > 0 {
		col := func(f func(restResult) float64) float64 {
			xs := make([]float64, len(r.rests))
			for i, x := range r.rests {
				xs[i] = f(x)
			}
			return med(xs)
		}
		add("W5", "converge RSS, highest sample", col(peakRest), "MiB", true, 300)
		add("W5", "converge RSS slope", col(func(x restResult) float64 { return x.slope }), "MiB per 100k", true, 50)
		add("W5", "database bytes per resource, payload excluded", col(func(x restResult) float64 { return perResource(x, x.dbBytes-x.payload) }), "B", true, 2048)
		add("W5", "idle PostgreSQL CPU", col(func(x restResult) float64 { return 100 * x.idle.pgCPU }), "%", true, 5)
	}
	if xs := defined(r.drains, drainResult.ratio); len(xs) > 0 {
		add("W7", "last ÷ first decile", med(xs), "", false, 0.8)
	}
	if xs := defined(r.held, drainResult.ratio); len(xs) > 0 {
		add("W7", "last ÷ first decile, xid held", med(xs), "", false, 0.5)
	}
	if len(r.held) > 0 {
		var rec []float64
		for _, d := range r.held {
			if d.recovered {
				rec = append(rec, d.recovery.Seconds())
			}
		}
		if len(rec) > 0 {
			add("W7", "recovery after release", med(rec), "s", true, 60)
		}
	}
	return ts
}

func notifyRate(r w1Result) float64 {
	if r.wall <= 0 {
		return 0
	}
	return float64(r.notifies) / r.wall.Seconds()
}

func riverMedian(rivers []riverResult) float64 {
	xs := make([]float64, len(rivers))
	for i, r := range rivers {
		xs[i] = r.rate
	}
	m, _, _ := median(xs)
	return m
}

// riverContinuousMedian is the median of River's continuous-mode rates;
// 0 when they were not run.
func riverContinuousMedian(rivers []riverResult) float64 {
	m, _, _ := median(column(rivers, func(r riverResult) float64 { return r.continuous }))
	return m
}

func peakRest(r restResult) float64 {
	peak := r.rssIdle.converge
	for _, p := range r.rss {
		peak = max(peak, p.converge)
	}
	return peak
}

// reportTargets prints every target with its verdict. The targets are set
// for the durable profile; a fast run is marked as such.
func reportTargets(w io.Writer, ts []target, durable bool) {
	if len(ts) == 0 {
		return
	}
	p := func(format string, args ...any) { fmt.Fprintf(w, format+"\n", args...) }
	profile := "durable profile"
	if !durable {
		profile = "fast profile: the targets are the durable profile's, so this is for comparison only"
	}
	p("### Targets (%s, this machine; medians of the runs above)", profile)
	p("")
	p("| Workload | Figure | Median | Target | Verdict |")
	p("|---|---|---|---|---|")
	for _, t := range ts {
		op := "≥"
		if t.atMost {
			op = "≤"
		}
		p("| %s | %s | %s | %s %s | %s |", t.workload, t.figure, num(t.value, t.unit), op, num(t.goal, t.unit), t.verdict())
	}
	p("")
}
