//go:build unix

package e2e

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
	"pgregory.net/rapid"

	"github.com/convergehq/converge/server/internal/pgtest"
)

// mreplica is a case's read replica: a hot standby the server reads
// through (--read-database-url), which the replicaFault action kills,
// restarts, pauses and resumes. Every invariant must hold whatever it
// does: reads fall back to the primary, and the model's client, which
// sends back its read-your-writes tokens, never reads older than it wrote
// or read.
type mreplica struct {
	r            *pgtest.Replicated
	down, paused bool
}

// replicaArgs are the server flags of a case with a replica: a bound of
// one second, so a paused standby stops serving reads well within the
// final phase's deadlines.
func (m *mreplica) args() []string {
	return []string{"--read-database-url", m.r.StandbyURL, "--read-max-lag", "1s", "--read-wait", "500ms"}
}

func (w *world) replicaFault(t *rapid.T) {
	m := w.replica
	if m == nil {
		t.Skip("this case has no read replica")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	switch {
	case m.down:
		w.note(t, "replica: restart the killed standby")
		if err := m.r.Standby.Restart(ctx); err != nil {
			t.Fatalf("restart the standby: %v", err)
		}
		m.down, m.paused = false, false // a restarted standby replays again
	case rapid.Bool().Draw(t, "kill"):
		w.note(t, "replica: kill -9 the standby")
		if err := m.r.Standby.Kill(); err != nil {
			t.Fatalf("kill the standby: %v", err)
		}
		m.down = true
	case m.paused:
		w.note(t, "replica: resume replay")
		m.exec(t, ctx, `SELECT pg_wal_replay_resume()`)
		m.paused = false
	default:
		w.note(t, "replica: pause replay")
		m.exec(t, ctx, `SELECT pg_wal_replay_pause()`)
		m.paused = true
	}
}

// heal brings the standby back and replaying, so the final phase also
// reads through a replica that has recovered.
func (m *mreplica) heal(t tb) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if m.down {
		if err := m.r.Standby.Restart(ctx); err != nil {
			t.Fatalf("restart the standby: %v", err)
		}
		m.down, m.paused = false, false
	}
	if m.paused {
		m.exec(t, ctx, `SELECT pg_wal_replay_resume()`)
		m.paused = false
	}
}

func (m *mreplica) exec(t tb, ctx context.Context, sql string) {
	t.Helper()
	conn, err := pgx.Connect(ctx, m.r.StandbyURL)
	if err != nil {
		t.Fatalf("connect to the standby: %v", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, sql); err != nil {
		t.Fatalf("%s on the standby: %v", sql, err)
	}
}
