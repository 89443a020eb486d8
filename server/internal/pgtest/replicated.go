package pgtest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/convergehq/converge/server/internal/devpg"
)

// Replicated is a primary cluster of a test's own with a hot standby
// streaming from it, and one migrated database on both.
type Replicated struct {
	Primary, Standby *devpg.Cluster
	// Name is the database's name on both clusters.
	Name string
	// PrimaryURL and StandbyURL connect to the database on each.
	PrimaryURL, StandbyURL string
}

// NewReplicated starts a primary and a hot standby of it (devpg.StartStandby:
// pg_basebackup -R, so standby.signal and primary_conninfo), migrates a
// database on the primary, and returns once the standby has replayed it.
// Both stop when the test ends. It skips or fails like New when the server
// binaries are missing.
func NewReplicated(t testing.TB) *Replicated {
	t.Helper()
	primary := NewCluster(t, devpg.Options{InMemory: true, Settings: map[string]string{"max_connections": "200"}})
	standby, err := devpg.StartStandby(context.Background(), primary, devpg.Options{InMemory: true,
		Settings: map[string]string{"max_connections": "200"}})
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	t.Cleanup(func() {
		if err := standby.Stop(); err != nil {
			t.Errorf("pgtest: %v", err)
		}
	})
	r := &Replicated{Primary: primary, Standby: standby}
	r.Name, r.PrimaryURL = migratedDB(t, primary)
	r.StandbyURL = standby.URL(r.Name)
	if err := r.WaitReplayed(context.Background(), time.Minute); err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	return r
}

// WaitReplayed waits until the standby has replayed everything the
// primary has written so far, polling, for at most timeout. It takes the
// primary's insert position, not its write position: with
// synchronous_commit off (the throwaway profile) a commit returns before
// its WAL is written.
func (r *Replicated) WaitReplayed(ctx context.Context, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var target string
	if err := queryOnce(ctx, r.Primary.URL("postgres"), `SELECT pg_current_wal_insert_lsn()::text`, &target); err != nil {
		return fmt.Errorf("primary WAL position: %w", err)
	}
	var lastErr error
	for {
		var caught bool
		lastErr = queryOnce(ctx, r.Standby.URL("postgres"),
			`SELECT coalesce(pg_last_wal_replay_lsn() >= '`+target+`'::pg_lsn, false)`, &caught)
		if lastErr == nil && caught {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("standby has not replayed to %s (last error %v): %w", target, lastErr, ctx.Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
}

func queryOnce(ctx context.Context, url, sql string, dst any) error {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	return conn.QueryRow(ctx, sql).Scan(dst)
}
