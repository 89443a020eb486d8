package taskrec

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
	"github.com/convergehq/converge/server/internal/pgtest"
	"github.com/convergehq/converge/server/internal/store"
)

// BenchmarkWrite builds and copies in W1-sized records (of resources
// without an owner, so the writer reads no flows), a batch of 2000 at a time, against a real PostgreSQL, and reports per record the
// writer's CPU time (this process's) and the CPU time of the PostgreSQL cluster's processes
// (from /proc: robust where the wall clock of a shared machine is not).
func BenchmarkWrite(b *testing.B) {
	db := pgtest.New(b)
	st := store.New(db.Pool, db.Pool)
	ctx := b.Context()
	var dataDir string
	if err := db.Pool.QueryRow(ctx, `SELECT current_setting('data_directory')`).Scan(&dataDir); err != nil {
		b.Fatal(err)
	}
	p := pendingOf(`{"i": 12345}`)
	p.input.Status = []byte(`{"ok": true, "at": "2026-12-02T06:00:00.123456Z"}`)
	p.returned = &convergev1.TaskResult{Outcome: &convergev1.TaskResult_Success{Success: &convergev1.Success{
		Status: []byte(`{"ok":true,"at":"2026-12-02T06:00:01.123456Z"}`)}}}
	p.out, p.worker, p.session = store.Outcome{}, "bench-worker", "0123456789abcdef"
	p.claimedAt, p.dispatchedAt, p.endedAt = time.Now(), time.Now(), time.Now()
	var e encoder
	recs := make([]store.TaskRecord, 0, 2000)
	ids := make([]int64, cap(recs))
	n := 0
	pgBefore, selfBefore := clusterCPU(b, dataDir), selfCPU()
	for b.Loop() {
		e.reset()
		recs = recs[:0]
		for i := range ids {
			ids[i] = int64(n + i + 1)
		}
		for _, id := range ids {
			p.claimed.resourceID = id
			recs = append(recs, e.build(p, nil, DefaultMaxBytes))
		}
		if err := st.WriteTaskRecords(ctx, recs); err != nil {
			b.Fatal(err)
		}
		n += len(recs)
	}
	b.ReportMetric((selfCPU()-selfBefore).Seconds()*1e6/float64(n), "writer-cpu-µs/record")
	b.ReportMetric((clusterCPU(b, dataDir)-pgBefore).Seconds()*1e6/float64(n), "pg-µs/record")
}

func selfCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// clusterCPU is the CPU time so far of the postmaster of dataDir, its
// children and its exited children, from clock ticks of 10 ms (Linux's
// USER_HZ).
func clusterCPU(b *testing.B, dataDir string) time.Duration {
	b.Helper()
	pidFile, err := os.ReadFile(filepath.Join(dataDir, "postmaster.pid"))
	if err != nil {
		b.Skipf("PostgreSQL's CPU is read from /proc on this machine: %v", err)
	}
	pm := strings.SplitN(string(pidFile), "\n", 2)[0]
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	var ticks int64
	for _, path := range stats {
		raw, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		// pid (comm) state ppid ... utime stime: fields after the comm.
		s := string(raw)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(f) < 15 || (filepath.Base(filepath.Dir(path)) != pm && f[1] != pm) {
			continue
		}
		last := 12 // utime and stime
		if f[1] != pm {
			last = 14 // the postmaster's also counts its exited children's
		}
		for _, field := range f[11 : last+1] {
			v, _ := strconv.ParseInt(field, 10, 64)
			ticks += v
		}
	}
	return time.Duration(ticks) * 10 * time.Millisecond
}
