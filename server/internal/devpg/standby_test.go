package devpg

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// A standby streams the primary's writes, refuses writes of its own, and
// catches up on what the primary wrote while it was killed.
func TestStandbyStreamsAndRecovers(t *testing.T) {
	t.Parallel()
	primary := start(t, Options{InMemory: true})
	standby, err := StartStandby(t.Context(), primary, Options{InMemory: true})
	if err != nil {
		t.Fatalf("StartStandby: %v", err)
	}
	t.Cleanup(func() {
		if err := standby.Stop(); err != nil {
			t.Errorf("Stop standby: %v", err)
		}
	})
	p := connect(t, primary.URL("postgres"))
	if _, err := p.Exec(t.Context(), `CREATE TABLE t (v int); INSERT INTO t VALUES (1)`); err != nil {
		t.Fatal(err)
	}
	s := connect(t, standby.URL("postgres"))
	var recovering bool
	if err := s.QueryRow(t.Context(), `SELECT pg_is_in_recovery()`).Scan(&recovering); err != nil || !recovering {
		t.Fatalf("pg_is_in_recovery on the standby = %v, %v; want true", recovering, err)
	}
	waitRows(t, standby, 1)
	if _, err := s.Exec(t.Context(), `INSERT INTO t VALUES (2)`); err == nil {
		t.Fatal("the standby accepted a write")
	}

	if err := standby.Kill(); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Exec(t.Context(), `INSERT INTO t VALUES (3)`); err != nil {
		t.Fatal(err)
	}
	if err := standby.Restart(t.Context()); err != nil {
		t.Fatalf("Restart standby: %v", err)
	}
	waitRows(t, standby, 2)
}

// waitRows polls the standby until table t holds n rows.
func waitRows(t *testing.T, standby *Cluster, n int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	var got int
	var err error
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		conn, cerr := pgx.Connect(ctx, standby.URL("postgres"))
		if err = cerr; err == nil {
			err = conn.QueryRow(ctx, `SELECT count(*) FROM t`).Scan(&got)
			_ = conn.Close(ctx)
		}
		cancel()
		if err == nil && got == n {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("standby holds %d rows of t (last error %v); want %d", got, err, n)
}
