//go:build unix

package e2e

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/convergehq/converge/sdk-go/client"
	"github.com/convergehq/converge/server/internal/devpg"
	"github.com/convergehq/converge/server/internal/pgtest"
)

// The chaos topology and the workers' shape. Each worker runs up to
// chaosCapacity tasks of chaosDelay, so at the load's rate several tasks
// are in flight at any moment and the workers have room to spare.
const (
	chaosControls = 2
	chaosBrokers  = 2
	chaosWorkers  = 3
	chaosCapacity = 8
	chaosDelay    = 200 * time.Millisecond
	chaosKind     = "chaos"
	// pgRestartTimeout bounds one PostgreSQL restart.
	pgRestartTimeout = time.Minute
)

// replica is a `converge serve --role role` process that a fault may
// kill and start again on the same port.
type replica struct {
	srv  *server
	role string
	n    int // 1-based, for names
	// extra are more flags, as the read replica's.
	extra []string
}

// startChaosReplica starts a replica on a free port and waits for it.
func startChaosReplica(t *testing.T, dbURL, role string, n int, extra ...string) *replica {
	t.Helper()
	s := &server{t: t, dbURL: dbURL, timing: fast, addr: freeAddr(t)}
	s.url = "http://" + s.addr
	s.api = client.New(s.url)
	r := &replica{srv: s, role: role, n: n, extra: extra}
	r.start()
	return r
}

// start (re)starts the process with its role and waits until it is ready.
// The database is migrated before any replica starts.
func (r *replica) start() {
	s := r.srv
	s.t.Helper()
	s.starts++
	tm := s.timing
	args := append([]string{"serve",
		"--role", r.role, "--migrate=false", "--database-url", s.dbURL, "--listen", s.addr,
		"--lease", tm.lease.String(), "--heartbeat", tm.heartbeat.String(), "--poll", tm.poll.String(),
		"--retry-base", tm.retryBase.String(), "--retry-max", tm.retryMax.String()}, r.extra...)
	s.proc = startProc(s.t, fmt.Sprintf("converge %s #%d (start %d)", r.role, r.n, s.starts), bin.converge, args...)
	s.waitReady()
}

// chaosWorker is one worker slot: a chaosworker process, restarted after
// each kill with a record file of its own.
type chaosWorker struct {
	n    int // 1-based
	url  string
	dir  string
	proc *proc
	// lives are the worker's processes so far, the current one last.
	lives []workerLife
}

// workerLife is one process of a worker slot.
type workerLife struct {
	record string
	// killed is when the process was SIGKILLed; zero while it runs.
	killed time.Time
}

func (w *chaosWorker) start(t *testing.T) {
	t.Helper()
	life := workerLife{record: filepath.Join(w.dir, fmt.Sprintf("worker-%d-%d.jsonl", w.n, len(w.lives)+1))}
	w.proc = startProc(t, fmt.Sprintf("chaosworker #%d (start %d)", w.n, len(w.lives)+1), chaosWorkerBin(t),
		"-server", w.url, "-record", life.record, "-kind", chaosKind,
		"-capacity", strconv.Itoa(chaosCapacity), "-delay", chaosDelay.String())
	w.lives = append(w.lives, life)
}

func (w *chaosWorker) kill(t *testing.T) {
	t.Helper()
	w.proc.kill(t)
	w.lives[len(w.lives)-1].killed = time.Now()
}

// chaosCluster is the system under test: a PostgreSQL cluster of its own
// (so it can be restarted), control and broker replicas, a TCP front
// over the brokers for the workers, and the workers.
type chaosCluster struct {
	t     *testing.T
	pg    *devpg.Cluster
	dbURL string
	// standby is the read replica the control replicas read through, in
	// TestChaosReplica; nil otherwise.
	standby  *devpg.Cluster
	controls []*replica
	brokers  []*replica
	workers  []*chaosWorker
}

// startChaosCluster starts everything and applies the chaos kind.
// synchronous_commit is on: an immediate restart (SIGKILL) of PostgreSQL
// must not lose a commit the server acknowledged, and with it off a
// commit may still sit in shared memory when the server dies. fsync can
// stay off: the kernel keeps what was written across a process kill.
func startChaosCluster(t *testing.T, withStandby bool) *chaosCluster {
	t.Helper()
	c := &chaosCluster{t: t}
	c.pg = pgtest.NewCluster(t, devpg.Options{InMemory: true,
		Settings: map[string]string{"synchronous_commit": "on", "max_connections": "200"}})
	c.dbURL = pgtest.MigratedDB(t, c.pg)
	var readArgs []string
	if withStandby {
		readArgs = c.startStandby()
	}
	var addrs []string
	for i := range chaosControls {
		var extra []string
		if withStandby {
			// Its own metrics address, kept across restarts, to count
			// the reads the replica served.
			extra = append(slices.Clone(readArgs), "--metrics-listen", freeAddr(t))
		}
		c.controls = append(c.controls, startChaosReplica(t, c.dbURL, "control", i+1, extra...))
	}
	for i := range chaosBrokers {
		b := startChaosReplica(t, c.dbURL, "broker", i+1)
		c.brokers, addrs = append(c.brokers, b), append(addrs, b.srv.addr)
	}
	fr := startFront(t, addrs)
	applyKind(t, c.controls[0].srv.api, leafKind(t, chaosKind))
	dir := t.TempDir()
	for i := range chaosWorkers {
		w := &chaosWorker{n: i + 1, url: fr.url, dir: dir}
		w.start(t)
		c.workers = append(c.workers, w)
	}
	return c
}

// apis returns a client per control replica.
func (c *chaosCluster) apis() []*client.Client {
	out := make([]*client.Client, len(c.controls))
	for i, r := range c.controls {
		out[i] = r.srv.api
	}
	return out
}

// faultRecord is a fault as it happened, in wall-clock time.
type faultRecord struct {
	plannedFault
	// start is when the victim was killed; end when it was back (its
	// replacement ready, or PostgreSQL accepting connections again).
	start, end time.Time
	// before is the completion rate in the chaosPreFault before start.
	before float64
	// recovery is from start until completions ran at ≥ 95% of the
	// baseline again; negative if they never did.
	recovery time.Duration
	// resumed is the same for resumeShare of the rate.
	resumed time.Duration
	// dip is the lowest completion rate over a window after the fault, as
	// a share of the baseline.
	dip float64
	// timeline is the completions per second around the fault.
	timeline string
	// reruns counts the handler runs this fault excused; redispatch is
	// the longest from the fault to such a rerun's start.
	reruns     int
	redispatch time.Duration
}

// inject carries out f and brings the victim back.
func (c *chaosCluster) inject(f plannedFault) faultRecord {
	t := c.t
	t.Helper()
	rec := faultRecord{plannedFault: f, start: time.Now()}
	switch f.kind {
	case faultKillControl:
		c.controls[f.victim].srv.kill()
		c.controls[f.victim].start()
	case faultKillBroker:
		c.brokers[f.victim].srv.kill()
		c.brokers[f.victim].start()
	case faultKillWorker:
		c.workers[f.victim].kill(t)
		c.workers[f.victim].start(t)
	case faultPGFast, faultPGImmediate:
		ctx, cancel := context.WithTimeout(context.Background(), pgRestartTimeout)
		defer cancel()
		if f.kind == faultPGImmediate {
			if err := c.pg.Kill(); err != nil {
				t.Fatalf("fault %s: killing PostgreSQL: %v", f, err)
			}
		}
		if err := c.pg.Restart(ctx); err != nil {
			t.Fatalf("fault %s: restarting PostgreSQL: %v", f, err)
		}
	case faultPGTerminate:
		ctx, cancel := context.WithTimeout(context.Background(), pgRestartTimeout)
		defer cancel()
		if err := terminateSessions(ctx, c.dbURL); err != nil {
			t.Fatalf("fault %s: %v", f, err)
		}
	case faultStandbyFast, faultStandbyKill:
		c.faultStandby(f)
	default:
		t.Fatalf("fault %s: unknown kind %q", f, f.kind)
	}
	rec.end = time.Now()
	return rec
}

// checkAlive fails the test for every current process that exited: each
// must ride out the faults that were not aimed at it.
func (c *chaosCluster) checkAlive() {
	t := c.t
	t.Helper()
	for _, r := range append(append([]*replica{}, c.controls...), c.brokers...) {
		if r.srv.proc.exited() {
			t.Errorf("%s exited; a replica must ride out the faults not aimed at it", r.srv.proc.name)
		}
	}
	for _, w := range c.workers {
		if w.proc.exited() {
			t.Errorf("%s exited; a worker must ride out the faults not aimed at it", w.proc.name)
		}
	}
}

// chaosWorkerBinary is the chaos worker, built once on first use. It is
// built here rather than by TestMain so that the chaos suite stays in its
// own files.
var chaosWorkerBinary struct {
	once sync.Once
	path string
	err  error
}

func chaosWorkerBin(t *testing.T) string {
	t.Helper()
	b := &chaosWorkerBinary
	b.once.Do(func() {
		goTool, err := goCommand()
		if err != nil {
			b.err = err
			return
		}
		path := filepath.Join(filepath.Dir(bin.converge), "chaosworker")
		build := exec.Command(goTool, "build", "-o", path, "./server/e2e/testdata/chaosworker")
		build.Dir = bin.root
		if out, err := build.CombinedOutput(); err != nil {
			b.err = fmt.Errorf("go build ./server/e2e/testdata/chaosworker: %w\n%s", err, out)
			return
		}
		b.path = path
	})
	if b.err != nil {
		t.Fatal(b.err)
	}
	// Its own source is not among the binaries' sources TestMain lists.
	repoFile(t, "server/e2e/testdata/chaosworker/main.go")
	return b.path
}

// terminateSessions ends every session the replicas hold on the database
// (they name themselves "converge"), as an operator or a failover proxy
// might, and waits until none is left.
func terminateSessions(ctx context.Context, dbURL string) error {
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		return fmt.Errorf("connecting to terminate the replicas' sessions: %w", err)
	}
	defer conn.Close(context.Background())
	var n int
	if err := conn.QueryRow(ctx, `SELECT count(*) FILTER (WHERE pg_terminate_backend(pid, 5000))
		FROM pg_stat_activity WHERE application_name = 'converge' AND datname = current_database()`).Scan(&n); err != nil {
		return fmt.Errorf("terminating the replicas' sessions: %w", err)
	}
	if n == 0 {
		return errors.New("terminating the replicas' sessions: there were none")
	}
	return nil
}
