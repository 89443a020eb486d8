package main

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"runtime"
	"time"

	"google.golang.org/protobuf/types/known/fieldmaskpb"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
	"github.com/convergehq/converge/server/internal/devpg"
)

// W6, interference: what a steady stream of background resyncs does to
// foreground work. N Ready leaves are resynced at -w6-rate per second
// (the interval is N ÷ rate, spread over the leaves when the policy is
// set), and a depth-10 chain is submitted every chainEvery, first with
// the resyncs off (quiet) and then on (busy), for -window each.

// chainEvery is how often W6 submits a foreground chain.
const chainEvery = 5 * time.Second

type interferenceResult struct {
	quiet, busy  []time.Duration // chain of 10: submit → root Ready
	resyncs      float64         // resyncs applied per second, busy window
	boxCPU       float64         // PostgreSQL, server and worker CPU, share of the machine's cores, busy window
	quietBoxCPU  float64         // the same, quiet window
	interval     time.Duration   // the resync interval set
	resourcesAll int
}

func runInterference(ctx context.Context, o options, cluster *devpg.Cluster, run int) (interferenceResult, error) {
	res := interferenceResult{resourcesAll: o.resources}
	st, err := startCompositeStack(ctx, o, cluster, fmt.Sprintf("interference_%d", run))
	if err != nil {
		return res, err
	}
	defer st.close()
	logf("W6: applying %d leaves", o.resources)
	if err := submit(ctx, st.client, o); err != nil {
		return res, err
	}
	if err := waitReady(ctx, st.pool, o.resources+1, 30*time.Minute); err != nil {
		return res, err
	}
	dataDir := filepath.Join(cluster.Dir(), "data")

	logf("W6: quiet, a chain every %s for %s", chainEvery, o.window)
	if res.quiet, res.quietBoxCPU, _, err = chainsFor(ctx, o, st, dataDir, "quiet"); err != nil {
		return res, err
	}
	rate := max(o.w6Rate, 1)
	res.interval = max(time.Duration(float64(o.resources)/rate*float64(time.Second)), time.Second).Round(time.Second)
	if _, err := st.client.UpdateKindPolicy(ctx, &convergev1.UpdateKindPolicyRequest{Kind: benchKind, KindVersion: 1,
		Policy:     &convergev1.KindPolicy{ResyncIntervalSeconds: int32(res.interval / time.Second)},
		UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{"resync_interval_seconds"}}}); err != nil {
		return res, fmt.Errorf("turning resync on: %w", err)
	}
	logf("W6: busy, resync every %s (%.0f/s), a chain every %s for %s", res.interval, rate, chainEvery, o.window)
	if res.busy, res.boxCPU, res.resyncs, err = chainsFor(ctx, o, st, dataDir, "busy"); err != nil {
		return res, err
	}
	return res, nil
}

// chainsFor submits a depth-10 chain every chainEvery for o.window and
// returns their submit → root Ready times, the box CPU share of the
// system under test and the resyncs applied per second meanwhile.
func chainsFor(ctx context.Context, o options, st *stack, dataDir, label string) ([]time.Duration, float64, float64, error) {
	reconciles := func() (int64, error) {
		var n int64
		err := st.pool.QueryRow(ctx, `SELECT coalesce(sum(reconciles), 0)::bigint FROM resources WHERE kind = $1`, benchKind).Scan(&n)
		return n, err
	}
	cpu := func() float64 {
		return postgresCPU(dataDir) + cpuSeconds(st.server.pid(), true) + cpuSeconds(st.worker.pid(), true)
	}
	rec0, err := reconciles()
	if err != nil {
		return nil, 0, 0, err
	}
	cpu0, start := cpu(), time.Now()
	var times []time.Duration
	tick := time.NewTicker(chainEvery)
	defer tick.Stop()
	for i := 0; time.Since(start) < o.window; i++ {
		ready, _, err := measureChain(ctx, st, fmt.Sprintf("w6-%s-%d", label, i), 10)
		if err != nil {
			return nil, 0, 0, fmt.Errorf("W6 %s chain %d: %w", label, i, err)
		}
		times = append(times, ready)
		select {
		case <-ctx.Done():
			return nil, 0, 0, ctx.Err()
		case <-tick.C:
		}
	}
	secs := time.Since(start).Seconds()
	rec1, err := reconciles()
	if err != nil {
		return nil, 0, 0, err
	}
	box := (cpu() - cpu0) / secs / float64(runtime.NumCPU())
	return times, box, float64(rec1-rec0) / secs, nil
}

// degradation is how much slower the busy chains' p99 is than the quiet
// ones', as a fraction (0.25 = 25% slower).
func (r interferenceResult) degradation() float64 {
	q := percentile(r.quiet, 0.99)
	if q <= 0 {
		return 0
	}
	return float64(percentile(r.busy, 0.99))/float64(q) - 1
}

func reportInterference(w io.Writer, o options, settings map[string]string, runs []interferenceResult) {
	if len(runs) == 0 {
		return
	}
	p := func(format string, args ...any) { fmt.Fprintf(w, format+"\n", args...) }
	p("### W6: chains of 10 under background resync, %s", time.Now().UTC().Format("2006-01-02"))
	p("")
	p("- Machine: %s", machine())
	p("- PostgreSQL: %s; %s", profileName(o.durable), settingList(settings))
	p("- %d Ready `%s` leaves resynced every %s (%.0f resyncs/s aimed); a depth-10 `%s` chain submitted every %s for %s without resync, then %s with it",
		runs[0].resourcesAll, benchKind, runs[0].interval, o.w6Rate, chainKind, chainEvery, o.window, o.window)
	p("- Runs: %d; each on a fresh database; median (min – max); CPU is PostgreSQL + converge + the worker over the machine's %d cores", len(runs), runtime.NumCPU())
	p("")
	p("| Figure | Median | Range |")
	p("|---|---|---|")
	row := func(name string, f func(interferenceResult) float64, unit string, digits int) {
		medianRow(w, name, column(runs, f), unit, digits)
	}
	row("Chain p50, quiet", func(r interferenceResult) float64 { return ms(percentile(r.quiet, 0.5)) }, "ms", 0)
	row("Chain p99, quiet", func(r interferenceResult) float64 { return ms(percentile(r.quiet, 0.99)) }, "ms", 0)
	row("Chain p50, under resync", func(r interferenceResult) float64 { return ms(percentile(r.busy, 0.5)) }, "ms", 0)
	row("Chain p99, under resync", func(r interferenceResult) float64 { return ms(percentile(r.busy, 0.99)) }, "ms", 0)
	row("p99 degradation", func(r interferenceResult) float64 { return 100 * r.degradation() }, "%", 0)
	row("Resyncs applied", func(r interferenceResult) float64 { return r.resyncs }, "/s", 0)
	row("CPU, quiet", func(r interferenceResult) float64 { return 100 * r.quietBoxCPU }, "%", 1)
	row("CPU, under resync", func(r interferenceResult) float64 { return 100 * r.boxCPU }, "%", 1)
	p("")
}
