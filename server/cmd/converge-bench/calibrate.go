package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/convergehq/converge/server/internal/devpg"
)

// Tier 0 (perf-anchors §5.2): the physical ceilings of this box, measured
// on the same cluster in the same run, so every later figure can be given
// as a ratio to them. The kernels are plain SQL run by pgbench; none of
// them involves Converge.

// fsyncResult is pg_test_fsync's fdatasync figure for one 8 kB write.
type fsyncResult struct {
	usPerOp float64
	opsSec  float64
	line    string // the line as printed, or why there is none
}

func (f fsyncResult) String() string { return f.line }

// kernel is one pgbench script at one client count.
type kernel struct {
	key       string // how ratios refer to it
	name      string
	clients   int
	rowsPerTx int // rows each transaction writes or claims
	script    string
	setup     []string // statements run before the kernel
}

// kernelResult is what a kernel achieved.
type kernelResult struct {
	kernel
	tps float64
}

// ceilings are the run's Tier-0 results.
type ceilings struct {
	fsync   fsyncResult
	kernels []kernelResult
	length  time.Duration
}

// tps returns the transactions per second of the kernel with key, or 0
// when calibration did not run it.
func (c *ceilings) tps(key string) float64 {
	if c == nil {
		return 0
	}
	for _, k := range c.kernels {
		if k.key == key {
			return k.tps
		}
	}
	return 0
}

const (
	kernelInsert32 = "insert-c32"
	kernelTx32     = "tx-c32"
	kernelNotify32 = "notify-c32"
)

// The queue the claim kernels take from is kept at this length: each
// transaction deletes what it claimed and enqueues as many new rows, so a
// kernel can run for any duration without draining it.
const claimQueueRows = 100_000

const calibrateTables = `
DROP TABLE IF EXISTS k_rows, k_queue;
CREATE TABLE k_rows (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, v integer NOT NULL, at timestamptz NOT NULL DEFAULT now());
CREATE TABLE k_queue (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, v integer NOT NULL);
`

// refillQueue resets the claim kernels' queue; one statement each, since
// VACUUM cannot run in the implicit transaction of a multi-statement
// string.
var refillQueue = []string{
	`TRUNCATE k_queue`,
	fmt.Sprintf(`INSERT INTO k_queue (v) SELECT g FROM generate_series(1, %d) g`, claimQueueRows),
	`VACUUM ANALYZE k_queue`,
}

func calibrationKernels() []kernel {
	insert := "INSERT INTO k_rows (v) VALUES (1);\n"
	tx := "BEGIN;\n" + insert + "COMMIT;\n"
	claim := func(k int) string {
		return fmt.Sprintf(`\set k %d
WITH c AS (SELECT id FROM k_queue ORDER BY id LIMIT :k FOR UPDATE SKIP LOCKED),
     d AS (DELETE FROM k_queue q USING c WHERE q.id = c.id RETURNING q.v)
INSERT INTO k_queue (v) SELECT v FROM d;
`, k)
	}
	return []kernel{
		{key: "insert-c1", name: "single-row INSERT, autocommit", clients: 1, rowsPerTx: 1, script: insert},
		{key: "insert-c8", name: "single-row INSERT, autocommit", clients: 8, rowsPerTx: 1, script: insert},
		{key: kernelInsert32, name: "single-row INSERT, autocommit", clients: 32, rowsPerTx: 1, script: insert},
		{key: "batch100-c8", name: "100-row INSERT per transaction", clients: 8, rowsPerTx: 100,
			script: "INSERT INTO k_rows (v) SELECT g FROM generate_series(1, 100) g;\n"},
		{key: kernelTx32, name: "BEGIN; INSERT; COMMIT", clients: 32, rowsPerTx: 1, script: tx},
		{key: kernelNotify32, name: "BEGIN; INSERT; pg_notify; COMMIT", clients: 32, rowsPerTx: 1,
			script: "BEGIN;\n" + insert + "SELECT pg_notify('k_bench', 'x');\nCOMMIT;\n"},
		{key: "claim1-c8", name: "SKIP LOCKED claim + complete, k=1", clients: 8, rowsPerTx: 1, script: claim(1), setup: refillQueue},
		{key: "claim100-c8", name: "SKIP LOCKED claim + complete, k=100", clients: 8, rowsPerTx: 100, script: claim(100), setup: refillQueue},
	}
}

// runCalibrate runs pg_test_fsync and the pgbench kernels, each for
// o.calibrateTime, on a fresh database of cluster.
func runCalibrate(ctx context.Context, o options, cluster *devpg.Cluster, fsync fsyncResult) (*ceilings, error) {
	res := &ceilings{fsync: fsync, length: o.calibrateTime}
	bin, err := pgBinary("pgbench")
	if err != nil {
		return nil, err
	}
	db := "calibrate"
	if err := freshDatabase(ctx, cluster, db, o.keep); err != nil {
		return nil, err
	}
	conn, err := pgx.Connect(ctx, cluster.URL(db))
	if err != nil {
		return nil, fmt.Errorf("calibration database: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, calibrateTables); err != nil {
		return nil, fmt.Errorf("calibration tables: %w", err)
	}
	dir, err := os.MkdirTemp("", "converge-calibrate-*")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	for _, k := range calibrationKernels() {
		for _, q := range k.setup {
			if _, err := conn.Exec(ctx, q); err != nil {
				return nil, fmt.Errorf("kernel %s: setup %q: %w", k.key, q, err)
			}
		}
		// Each kernel starts with the WAL of the one before written out.
		if _, err := conn.Exec(ctx, "CHECKPOINT"); err != nil {
			return nil, fmt.Errorf("kernel %s: CHECKPOINT: %w", k.key, err)
		}
		tps, err := pgbench(ctx, bin, dir, cluster.URL(db), k, o.calibrateTime)
		if err != nil {
			return nil, err
		}
		logf("calibrate: %s, c=%d: %.0f tx/s", k.name, k.clients, tps)
		res.kernels = append(res.kernels, kernelResult{kernel: k, tps: tps})
	}
	return res, nil
}

var pgbenchTPS = regexp.MustCompile(`tps = ([0-9.]+) \(without initial connection time\)`)

// pgbench runs one kernel and returns its transactions per second.
func pgbench(ctx context.Context, bin, dir, url string, k kernel, length time.Duration) (float64, error) {
	script := filepath.Join(dir, k.key+".sql")
	if err := os.WriteFile(script, []byte(k.script), 0o644); err != nil {
		return 0, err
	}
	secs := max(int(length.Round(time.Second)/time.Second), 1)
	args := []string{"-n", "-M", "prepared", "-c", strconv.Itoa(k.clients), "-j", strconv.Itoa(min(k.clients, runtime.NumCPU())),
		"-T", strconv.Itoa(secs), "-f", script, url}
	out, err := exec.CommandContext(ctx, bin, args...).CombinedOutput()
	if err != nil {
		return 0, fmt.Errorf("kernel %s: pgbench %s: %w\n%s", k.key, strings.Join(args, " "), err, tailOf(out))
	}
	m := pgbenchTPS.FindSubmatch(out)
	if m == nil {
		return 0, fmt.Errorf("kernel %s: no \"tps = … (without initial connection time)\" line in pgbench's output:\n%s", k.key, tailOf(out))
	}
	return strconv.ParseFloat(string(m[1]), 64)
}

// pgBinary finds a PostgreSQL client program next to the server binaries
// devpg uses: CONVERGE_PG_BIN, else the newest /usr/lib/postgresql/*/bin.
func pgBinary(name string) (string, error) {
	if dir := os.Getenv("CONVERGE_PG_BIN"); dir != "" {
		p := filepath.Join(dir, name)
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("%s: not in CONVERGE_PG_BIN=%s", name, dir)
		}
		return p, nil
	}
	bins := newestPG(name)
	if len(bins) == 0 {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
		return "", fmt.Errorf("%s: not found in /usr/lib/postgresql/*/bin or PATH (set CONVERGE_PG_BIN)", name)
	}
	return bins[0], nil
}

// newestPG lists name in /usr/lib/postgresql/*/bin, newest version first.
func newestPG(name string) []string {
	bins, _ := filepath.Glob("/usr/lib/postgresql/*/bin/" + name)
	version := func(p string) int {
		v, _ := strconv.Atoi(strings.SplitN(filepath.Base(filepath.Dir(filepath.Dir(p))), ".", 2)[0])
		return v
	}
	for i := 1; i < len(bins); i++ {
		for j := i; j > 0 && version(bins[j]) > version(bins[j-1]); j-- {
			bins[j], bins[j-1] = bins[j-1], bins[j]
		}
	}
	return bins
}

var fsyncLine = regexp.MustCompile(`^\s*fdatasync\s+([0-9.]+) ops/sec\s+([0-9.]+) usecs/op`)

// calibrateFsync runs pg_test_fsync for secs seconds per test and returns
// fdatasync for one 8 kB write, the first fdatasync line it prints.
func calibrateFsync(ctx context.Context, secs int) fsyncResult {
	bin, err := pgBinary("pg_test_fsync")
	if err != nil {
		return fsyncResult{line: err.Error()}
	}
	dir, err := os.MkdirTemp("", "fsync-*")
	if err != nil {
		return fsyncResult{line: err.Error()}
	}
	defer os.RemoveAll(dir)
	out, err := exec.CommandContext(ctx, bin, "-s", strconv.Itoa(secs), "-f", filepath.Join(dir, "f")).CombinedOutput()
	if err != nil {
		return fsyncResult{line: "pg_test_fsync failed: " + err.Error()}
	}
	return parseFsync(string(out))
}

func parseFsync(out string) fsyncResult {
	for _, line := range strings.Split(out, "\n") {
		if m := fsyncLine.FindStringSubmatch(line); m != nil {
			ops, _ := strconv.ParseFloat(m[1], 64)
			us, _ := strconv.ParseFloat(m[2], 64)
			return fsyncResult{usPerOp: us, opsSec: ops, line: strings.Join(strings.Fields(line), " ")}
		}
	}
	return fsyncResult{line: "no fdatasync line in pg_test_fsync output"}
}
