// Command converge-bench measures Converge on this machine and prints the
// figures docs/benchmarks.md records.
//
// W1: N independent leaves applied through the public API in batches, one
// no-op Go SDK worker, durable commits. It reports reconciles/s, submit to
// Ready latency under load and on an idle system, commits and pg_notify
// calls per reconcile, and CPU per process; and, on the same PostgreSQL in
// the same run, River's own benchmark as the queue-throughput baseline.
//
// Fairness: a backlog of N resources of one kind and single resources of
// another applied while it drains, on one worker serving both: the single
// resource's submit to Ready against a bound of claim rounds.
//
// Resync: PostgreSQL CPU, statements and commits per minute of an idle
// system holding N resources of a kind that does not opt into resync,
// against the empty system and the same resources resynced.
//
// Every figure is read from the database (timestamps the database
// stamped), not from client-side polling.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/convergehq/converge/server/internal/devpg"
)

type options struct {
	runs         int
	resources    int
	batch        int
	concurrency  int
	capacity     int
	idle         int
	river        bool
	riverJobs    int
	durable      bool
	convergeBin  string
	workerBin    string
	keep         bool
	pgSettings   string
	top          int
	profile      string
	split        bool
	brokers      int
	workload     string
	fanoutReps   int
	chainReps    int
	probes       int
	fairCapacity int
	fairDelay    time.Duration
	window       time.Duration
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == "worker" {
		if err := runBenchWorker(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, "converge-bench worker:", err)
			os.Exit(1)
		}
		return
	}
	var o options
	flag.IntVar(&o.runs, "runs", 3, "repetitions (the report gives the median, min and max)")
	flag.IntVar(&o.resources, "resources", 100_000, "leaves per W1 run; also the fairness backlog and the resync population")
	flag.IntVar(&o.batch, "batch", 1000, "resources per ApplyResources call")
	flag.IntVar(&o.concurrency, "concurrency", 4, "ApplyResources calls in flight")
	flag.IntVar(&o.capacity, "capacity", 256, "the no-op worker's capacity")
	flag.IntVar(&o.idle, "idle-samples", 200, "single leaves applied one at a time on the idle system, per run")
	flag.BoolVar(&o.river, "river", true, "also run River's benchmark on the same PostgreSQL (built from the Go module proxy)")
	flag.IntVar(&o.riverJobs, "river-jobs", 200_000, "jobs per River burn-down run")
	flag.BoolVar(&o.durable, "durable", true, "synchronous_commit=on and fsync=on (the durable profile)")
	flag.StringVar(&o.convergeBin, "converge-bin", "", "converge binary (default: built from this tree)")
	flag.StringVar(&o.workerBin, "worker-bin", "", "no-op worker binary (default: built from sdk-go/examples/noop)")
	flag.BoolVar(&o.keep, "keep", false, "keep the PostgreSQL data directory")
	flag.StringVar(&o.pgSettings, "pg", "", "extra PostgreSQL settings, comma-separated key=value")
	flag.StringVar(&o.profile, "pprof", "", "serve converge's pprof on this address and save a 10 s CPU profile of the load")
	flag.BoolVar(&o.split, "split", false, "run the API and the broker as two replicas (wake-ups cross by NOTIFY) instead of one --role all process")
	flag.IntVar(&o.brokers, "brokers", 1, "with -split: broker replicas, each with its own no-op worker dialing it (w1 only)")
	flag.StringVar(&o.workload, "workload", "all", "w1 (leaves), composites (W2 fan-out, W3 chain, W4 landing zone), fairness, resync or all")
	flag.IntVar(&o.fanoutReps, "fanout-reps", 10, "W2 1→1,000 composites per run (1→10,000: a third as many)")
	flag.IntVar(&o.chainReps, "chain-reps", 20, "W3 depth-10 chains per run")
	flag.IntVar(&o.probes, "probes", 50, "fairness: kind B resources applied one at a time per run, under the backlog (and as many before it)")
	flag.IntVar(&o.fairCapacity, "fair-capacity", 16, "fairness: the worker's capacity")
	flag.DurationVar(&o.fairDelay, "fair-delay", 2*time.Millisecond, "fairness: kind A's handler time")
	flag.DurationVar(&o.window, "window", time.Minute, "resync: length of each measurement window")
	flag.IntVar(&o.top, "top", 0, "print the N statements with the most database time in each run (to stderr)")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o); err != nil {
		fmt.Fprintln(os.Stderr, "converge-bench:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, o options) error {
	if o.brokers < 1 {
		return fmt.Errorf("-brokers %d: must be at least 1", o.brokers)
	}
	if o.brokers > 1 && (!o.split || o.workload != "w1") {
		return fmt.Errorf("-brokers %d: needs -split and -workload w1 (the other workloads measure one worker)", o.brokers)
	}
	tmp, err := os.MkdirTemp("", "converge-bench-*")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	if o.convergeBin == "" {
		o.convergeBin = filepath.Join(tmp, "converge")
		if err := goBuild(ctx, o.convergeBin, "./server/cmd/converge"); err != nil {
			return err
		}
	}
	if o.workerBin == "" {
		o.workerBin = filepath.Join(tmp, "noop")
		if err := goBuild(ctx, o.workerBin, "./sdk-go/examples/noop"); err != nil {
			return err
		}
	}
	if !slices.Contains([]string{"w1", "composites", "fairness", "resync", "all"}, o.workload) {
		return fmt.Errorf("-workload %q: use w1, composites, fairness, resync or all", o.workload)
	}
	does := func(w string) bool { return o.workload == w || o.workload == "all" }
	doW1, doComposites, doFairness, doResync := does("w1"), does("composites"), does("fairness"), does("resync")
	var zoneBin string
	if doComposites {
		zoneBin = filepath.Join(tmp, "landingzone")
		if err := goBuild(ctx, zoneBin, "./sdk-go/examples/landingzone"); err != nil {
			return err
		}
	}
	var riverBin string
	if o.river && doW1 {
		if riverBin, err = buildRiver(ctx, tmp); err != nil {
			return fmt.Errorf("building River for the baseline (use -river=false to skip it): %w", err)
		}
	}

	settings := pgProfile(o)
	logf("starting PostgreSQL (%s profile)", profileName(o.durable))
	cluster, err := devpg.Start(ctx, devpg.Options{Durable: o.durable, Settings: settings, Keep: o.keep})
	if err != nil {
		return err
	}
	defer cluster.Stop()
	fsync := calibrateFsync(ctx)

	var w1 []w1Result
	var rivers []riverResult
	var comps []compositeResult
	var fairs []fairnessResult
	var resyncs []resyncResult
	for r := 1; r <= o.runs && doComposites; r++ {
		logf("run %d/%d: W2 fan-out, W3 chains", r, o.runs)
		cr, err := runComposites(ctx, o, cluster, r)
		if err != nil {
			return fmt.Errorf("run %d: %w", r, err)
		}
		logf("run %d/%d: W4 landing zone", r, o.runs)
		if err := runZone(ctx, o, cluster, r, zoneBin, &cr); err != nil {
			return fmt.Errorf("run %d: W4: %w", r, err)
		}
		comps = append(comps, cr)
		logf("run %d/%d: 1→1,000 Ready in %s, chain of 10 in %s, landing zone in %s", r, o.runs,
			percentile(cr.fanoutReady[1000], 0.5), percentile(cr.chainReady, 0.5), cr.zoneReady)
	}
	for r := 1; r <= o.runs && doW1; r++ {
		logf("run %d/%d: W1 with %d leaves", r, o.runs, o.resources)
		res, err := runW1(ctx, o, cluster, fmt.Sprintf("bench_%d", r))
		if err != nil {
			return fmt.Errorf("run %d: %w", r, err)
		}
		w1 = append(w1, res)
		logf("run %d/%d: %.0f reconciles/s, idle p50 %.1f ms", r, o.runs, res.rate, ms(res.idleP50))
		if riverBin != "" {
			logf("run %d/%d: River bench, %d jobs", r, o.runs, o.riverJobs)
			rr, err := runRiver(ctx, riverBin, cluster, fmt.Sprintf("river_%d", r), o.riverJobs, o.keep)
			if err != nil {
				return fmt.Errorf("run %d: River: %w", r, err)
			}
			rivers = append(rivers, rr)
			logf("run %d/%d: River %.0f jobs/s", r, o.runs, rr.rate)
		}
	}
	for r := 1; r <= o.runs && doFairness; r++ {
		logf("run %d/%d: fairness, a backlog of %d", r, o.runs, o.resources)
		fr, err := runFairness(ctx, o, cluster, r)
		if err != nil {
			return fmt.Errorf("run %d: fairness: %w", r, err)
		}
		fairs = append(fairs, fr)
		logf("run %d/%d: B under the backlog p50 %.1f ms, p99 %.1f ms; claim round p50 %.2f ms", r, o.runs,
			ms(percentile(probeTotals(fr), 0.5)), ms(percentile(probeTotals(fr), 0.99)), ms(percentile(fr.rounds, 0.5)))
	}
	for r := 1; r <= o.runs && doResync; r++ {
		logf("run %d/%d: resync cost, %d resources", r, o.runs, o.resources)
		rr, err := runResync(ctx, o, cluster, r)
		if err != nil {
			return fmt.Errorf("run %d: resync: %w", r, err)
		}
		resyncs = append(resyncs, rr)
		logf("run %d/%d: PostgreSQL CPU %.2f%% empty, %.2f%% with %d, %.1f%% resyncing %.0f/s", r, o.runs,
			100*rr.empty.pgCPU, 100*rr.settled.pgCPU, o.resources, 100*rr.resyncing.pgCPU, rr.resyncing.resyncs)
	}
	if doW1 {
		report(os.Stdout, o, settings, fsync, w1, rivers)
	}
	if doComposites {
		reportComposites(os.Stdout, o, settings, comps)
	}
	if doFairness {
		reportFairness(os.Stdout, o, settings, fairs)
	}
	if doResync {
		reportResync(os.Stdout, o, settings, resyncs)
	}
	return nil
}

// pgProfile is the PostgreSQL configuration of the benchmark protocol.
func pgProfile(o options) map[string]string {
	s := map[string]string{
		"shared_buffers":           "2GB",
		"effective_cache_size":     "8GB",
		"max_wal_size":             "8GB",
		"checkpoint_timeout":       "15min",
		"wal_buffers":              "64MB",
		"max_connections":          "200",
		"track_io_timing":          "on",
		"shared_preload_libraries": "pg_stat_statements",
	}
	for _, kv := range strings.Split(o.pgSettings, ",") {
		if k, v, ok := strings.Cut(strings.TrimSpace(kv), "="); ok {
			s[k] = v
		}
	}
	return s
}

func profileName(durable bool) string {
	if durable {
		return "durable: fsync=on, synchronous_commit=on"
	}
	return "fast: fsync=off, synchronous_commit=off"
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s  %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// median returns the median, min and max of xs.
func median(xs []float64) (med, lo, hi float64) {
	if len(xs) == 0 {
		return 0, 0, 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	n := len(s)
	med = s[n/2]
	if n%2 == 0 {
		med = (s[n/2-1] + s[n/2]) / 2
	}
	return med, s[0], s[n-1]
}

func machine() string {
	model := "unknown CPU"
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(line, "model name") {
				if _, v, ok := strings.Cut(line, ":"); ok {
					model = strings.TrimSpace(v)
				}
				break
			}
		}
	}
	mem := ""
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		var kb int64
		fmt.Sscanf(strings.SplitN(string(b), "\n", 2)[0], "MemTotal: %d kB", &kb)
		mem = fmt.Sprintf(", %.0f GiB RAM", float64(kb)/1024/1024)
	}
	return fmt.Sprintf("%d × %s%s, %s/%s, %s", runtime.NumCPU(), model, mem, runtime.GOOS, runtime.GOARCH, runtime.Version())
}
