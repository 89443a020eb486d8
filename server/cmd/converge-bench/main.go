// Command converge-bench measures Converge on this machine and prints the
// figures docs/benchmarks.md records.
//
// W1: N independent leaves applied through the public API in batches, one
// no-op Go SDK worker, durable commits. It reports reconciles/s, submit to
// Ready latency under load and on an idle system, commits and pg_notify
// calls per reconcile, and CPU per process; rows written, WAL records and
// WAL syncs per reconcile, dead tuples left in tasks and resources, a
// histogram of what PostgreSQL's active backends wait on, and the
// statements that took the most database time; and, on the same
// PostgreSQL in the same run, River's own benchmark as the
// queue-throughput baseline, burn-down and continuous.
//
// Fairness: a backlog of N resources of one kind and single resources of
// another applied while it drains, on one worker serving both: the single
// resource's submit to Ready against a bound of claim rounds.
//
// Resync: PostgreSQL CPU, statements and commits per minute of an idle
// system holding N resources of a kind that does not opt into resync,
// against the empty system and the same resources resynced.
//
// Tier 0 (calibrate): pg_test_fsync and pgbench kernels on the same
// cluster, the ceilings every other figure is also given as a ratio to.
//
// W5 (rest): N Ready resources left idle: converge's memory as N grows,
// database bytes per resource, idle PostgreSQL CPU, read latency at N.
//
// W7 (drain): a backlog applied with no worker, then drained: completions
// per decile, optionally with an xid held idle in transaction.
//
// -report writes the whole run, with the targets met or missed, as
// Markdown for docs/bench-report.md.
//
// Every figure is read from the database (timestamps the database
// stamped), not from client-side polling, except the API read latencies
// of W5, which are round trips.
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
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
	serveFlags   string
	traceSample  float64
	split        bool
	brokers      int
	workload     string
	fanoutReps   int
	chainReps    int
	probes       int
	fairCapacity int
	fairDelay    time.Duration
	window       time.Duration

	calibrateTime time.Duration
	riverDuration time.Duration
	fsyncSecs     int
	fsyncRef      float64
	restResources int
	restIdle      time.Duration
	drainXmin     time.Duration
	// rolloutResources is the population the rollout workload moves.
	rolloutResources int
	w6Rate           float64
	report           string
	// Reads: the population, the clients and each figure's window.
	readResources int
	readClients   int
	readWindow    time.Duration
	// secretPayload gives W1's leaves a spec password and a status token,
	// and secretFields marks them secret (set per run by the secrets
	// workload).
	secretPayload, secretFields bool
}

// workloads are the names -workload takes, in the order they run; "all"
// is every one but rest (a million resources is not cheap), reads (it
// starts a standby of the cluster) and secrets (pairs of W1).
var workloads = []string{"calibrate", "composites", "fanout100k", "w1", "fairness", "resync", "interference", "rest", "drain", "rollout", "reads", "secrets"}

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
	flag.DurationVar(&o.riverDuration, "river-duration", 30*time.Second, "length of each River continuous-mode run (river bench --duration: inserts while it works, like W1), after each burn-down; 0 skips it")
	flag.BoolVar(&o.durable, "durable", true, "synchronous_commit=on and fsync=on (the durable profile)")
	flag.StringVar(&o.convergeBin, "converge-bin", "", "converge binary (default: built from this tree)")
	flag.StringVar(&o.workerBin, "worker-bin", "", "no-op worker binary (default: built from sdk-go/examples/noop)")
	flag.BoolVar(&o.keep, "keep", false, "keep the PostgreSQL data directory")
	flag.StringVar(&o.pgSettings, "pg", "", "extra PostgreSQL settings, comma-separated key=value")
	flag.StringVar(&o.serveFlags, "serve-flags", "", "extra flags for every converge serve, space-separated (e.g. \"--task-records 0\" to measure with task records off)")
	flag.Float64Var(&o.traceSample, "trace-sample", 0, "turn converge's tracing on, sampling this ratio of traces (0.01, 1), exported to a discarding OTLP/HTTP sink in this program (0: tracing off)")
	flag.StringVar(&o.profile, "pprof", "", "serve converge's pprof on this address and save a 10 s CPU profile of the load")
	flag.BoolVar(&o.split, "split", false, "run the API and the broker as two replicas (wake-ups cross by NOTIFY) instead of one --role all process")
	flag.IntVar(&o.brokers, "brokers", 1, "with -split: broker replicas, each with its own no-op worker dialing it (w1 only)")
	flag.StringVar(&o.workload, "workload", "all", "comma-separated: calibrate (Tier 0), w1 (leaves), composites (W2 fan-out, W3 chain, W4 landing zone), fanout100k (one composite of 100,000 leaves), fairness, resync, interference (W6), rest (W5), drain (W7), rollout (a version rollout), reads (get and list with and without a hot standby), secrets (pairs of W1 without and with secret fields), or all (every one but rest, reads and secrets)")
	flag.IntVar(&o.fanoutReps, "fanout-reps", 10, "W2 1→1,000 composites per run (1→10,000: a third as many)")
	flag.IntVar(&o.chainReps, "chain-reps", 20, "W3 depth-10 chains per run")
	flag.IntVar(&o.probes, "probes", 50, "fairness: kind B resources applied one at a time per run, under the backlog (and as many before it)")
	flag.IntVar(&o.fairCapacity, "fair-capacity", 16, "fairness: the worker's capacity")
	flag.DurationVar(&o.fairDelay, "fair-delay", 2*time.Millisecond, "fairness: kind A's handler time")
	flag.DurationVar(&o.window, "window", time.Minute, "resync and interference: length of each measurement window")
	flag.IntVar(&o.top, "top", 0, "print the N statements with the most database time in each run (to stderr; the W1 report always lists the median run's top 10); planning time shows with -pg pg_stat_statements.track_planning=on")
	flag.DurationVar(&o.calibrateTime, "calibrate-time", 10*time.Second, "calibrate: length of each pgbench kernel")
	flag.IntVar(&o.fsyncSecs, "fsync-secs", 3, "seconds per pg_test_fsync test (-s)")
	flag.Float64Var(&o.fsyncRef, "fsync-ref", 0, "the last recorded fdatasync µs/op; a run more than twice as slow is flagged noisy")
	flag.IntVar(&o.restResources, "rest-resources", 1_000_000, "rest: Ready resources built and left idle (W5)")
	flag.DurationVar(&o.restIdle, "rest-idle", 2*time.Minute, "rest: how long the system is left idle")
	flag.Float64Var(&o.w6Rate, "w6-rate", 167, "interference (W6): resyncs per second in the background (the interval is -resources ÷ this)")
	flag.DurationVar(&o.drainXmin, "drain-xmin", 0, "drain: also run each drain with an xid held idle in transaction for this long from the worker's start (0: no such variant)")
	flag.IntVar(&o.rolloutResources, "rollout-resources", 1000, "rollout: resources the rollout moves from v1 to v2")
	flag.IntVar(&o.readResources, "read-resources", 10_000, "reads: Ready leaves read")
	flag.IntVar(&o.readClients, "read-clients", 16, "reads: clients calling at once")
	flag.DurationVar(&o.readWindow, "read-window", 10*time.Second, "reads: how long each of get and list is measured, per server")
	flag.StringVar(&o.report, "report", "", "also write the whole run as Markdown to this file (by convention docs/bench-report.md)")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o); err != nil {
		fmt.Fprintln(os.Stderr, "converge-bench:", err)
		os.Exit(1)
	}
}

// results holds every workload's runs.
type results struct {
	cal      *ceilings
	fsync    fsyncResult
	w1       []w1Result
	rivers   []riverResult
	comps    []compositeResult
	wide     []fanoutWideResult // fanout100k
	fairs    []fairnessResult
	resyncs  []resyncResult
	rests    []restResult
	inters   []interferenceResult
	drains   []drainResult
	held     []drainResult // drains with an xid held
	rollouts []rolloutResult
	reads    []readsResult
	secrets  []secretPair
	selected map[string]bool
}

// selectWorkloads parses -workload.
func selectWorkloads(spec string) (map[string]bool, error) {
	sel := map[string]bool{}
	for _, w := range strings.Split(spec, ",") {
		w = strings.TrimSpace(w)
		switch {
		case w == "all":
			for _, name := range workloads {
				sel[name] = name != "rest" && name != "reads" && name != "secrets"
			}
		case slices.Contains(workloads, w):
			sel[w] = true
		default:
			return nil, fmt.Errorf("-workload %q: unknown workload %q; use %s or all, comma-separated", spec, w, strings.Join(workloads, ", "))
		}
	}
	return sel, nil
}

func run(ctx context.Context, o options) error {
	sel, err := selectWorkloads(o.workload)
	if err != nil {
		return err
	}
	if o.brokers < 1 {
		return fmt.Errorf("-brokers %d: must be at least 1", o.brokers)
	}
	if o.traceSample != 0 {
		sink, err := startTraceSink(o.traceSample)
		if err != nil {
			return err
		}
		defer sink.close()
	}
	if o.brokers > 1 && (!o.split || o.workload != "w1") {
		return fmt.Errorf("-brokers %d: needs -split and -workload w1 (the other workloads measure one worker)", o.brokers)
	}
	if sel["rest"] && o.restResources < 10 {
		return fmt.Errorf("-rest-resources %d: must be at least 10", o.restResources)
	}
	if sel["drain"] && o.resources < 20 {
		return fmt.Errorf("-resources %d: the drain needs at least 20 to split into deciles", o.resources)
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
	var zoneBin string
	if sel["composites"] {
		zoneBin = filepath.Join(tmp, "landingzone")
		if err := goBuild(ctx, zoneBin, "./sdk-go/examples/landingzone"); err != nil {
			return err
		}
	}
	var riverBin string
	if o.river && sel["w1"] {
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
	info := collectRunInfo(ctx, cluster)
	r := &results{selected: sel}
	r.fsync = calibrateFsync(ctx, o.fsyncSecs)
	logf("pg_test_fsync: %s", r.fsync)
	if sel["calibrate"] {
		if r.cal, err = runCalibrate(ctx, o, cluster, r.fsync); err != nil {
			return fmt.Errorf("calibrate: %w", err)
		}
	}
	if err := runWorkloads(ctx, o, cluster, riverBin, zoneBin, r); err != nil {
		return err
	}
	var body bytes.Buffer
	out := io.MultiWriter(os.Stdout, &body)
	printResults(out, o, settings, r)
	ts := targets(r)
	reportTargets(os.Stdout, ts, o.durable)
	if o.report != "" {
		if err := writeReport(o.report, o, settings, info, body.Bytes(), ts); err != nil {
			return err
		}
		logf("report written to %s", o.report)
	}
	return nil
}

// printResults prints every selected workload's tables as Markdown.
func printResults(w io.Writer, o options, settings map[string]string, r *results) {
	if r.cal != nil {
		reportCalibration(w, o, settings, r.cal)
	}
	if r.selected["w1"] {
		report(w, o, settings, r.fsync, r.w1, r.rivers, r.cal)
	}
	if r.selected["composites"] {
		reportComposites(w, o, settings, r.comps)
	}
	if r.selected["fanout100k"] {
		reportFanoutWide(w, o, settings, r.wide)
	}
	reportAgainstLeaves(w, r)
	if r.selected["fairness"] {
		reportFairness(w, o, settings, r.fairs)
	}
	if r.selected["resync"] {
		reportResync(w, o, settings, r.resyncs)
	}
	if r.selected["interference"] {
		reportInterference(w, o, settings, r.inters)
	}
	if r.selected["rest"] {
		reportRest(w, o, settings, r.rests)
	}
	if r.selected["drain"] {
		reportDrain(w, o, settings, r.drains, r.held)
	}
	if r.selected["rollout"] {
		reportRollout(w, o, settings, r.rollouts)
	}
	if r.selected["reads"] {
		reportReads(w, o, r.reads)
	}
	if r.selected["secrets"] {
		reportSecrets(w, o, r.secrets)
	}
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
		// Planning time shows in the top statements; with a handful of
		// backends the tracking costs nothing measurable.
		"pg_stat_statements.track_planning": "on",
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

// column is f of every run.
func column[R any](runs []R, f func(R) float64) []float64 {
	xs := make([]float64, len(runs))
	for i, r := range runs {
		xs[i] = f(r)
	}
	return xs
}

// spread is the median of xs with its range: "m unit (lo – hi)".
func spread(xs []float64, unit string, digits int) string {
	med, lo, hi := median(xs)
	d := fmt.Sprintf("%%.%df", digits)
	return fmt.Sprintf(d+" %s ("+d+" – "+d+")", med, unit, lo, hi)
}

// medianRow prints a row of a Figure | Median | Range table.
func medianRow(w io.Writer, name string, xs []float64, unit string, digits int) {
	med, lo, hi := median(xs)
	d := fmt.Sprintf("%%.%df", digits)
	fmt.Fprintf(w, "| %s | "+d+" %s | "+d+" – "+d+" |\n", name, med, unit, lo, hi)
}

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
