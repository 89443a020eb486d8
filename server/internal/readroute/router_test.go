package readroute

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/convergehq/converge/server/internal/store"
)

func TestReplicaFailed(t *testing.T) {
	for _, c := range []struct {
		name        string
		err         error
		retry, down bool
	}{
		{"none", nil, false, false},
		{"conflict with recovery", &pgconn.PgError{Code: "40001"}, true, false},
		{"admin shutdown", fmt.Errorf("list: %w", &pgconn.PgError{Code: "57P01"}), true, true},
		{"connection failure", &pgconn.PgError{Code: "08006"}, true, true},
		{"unavailable, wrapped by the API", connect.NewError(connect.CodeUnavailable, errors.New("database unavailable: dial tcp: refused")), true, true},
		{"not found", connect.NewError(connect.CodeNotFound, errors.New("greeting/a not found")), false, false},
		{"a statement the request got wrong", &pgconn.PgError{Code: "22P02"}, false, false},
		{"store not found", fmt.Errorf("%w: x", store.ErrNotFound), false, false},
		{"canceled", context.Canceled, false, false},
	} {
		retry, down := replicaFailed(c.err)
		if retry != c.retry || down != c.down {
			t.Errorf("%s: replicaFailed = %v, %v; want %v, %v", c.name, retry, down, c.retry, c.down)
		}
	}
}

// The replica is as stale as the newest primary position it has
// replayed past; behind every position kept, its staleness is unknown
// and counts as beyond any bound.
func TestReplayedToCoverage(t *testing.T) {
	r := New(Config{MaxLag: time.Second, Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	t0 := time.Now()
	r.ring = []point{{t0.Add(-300 * time.Millisecond), 100}, {t0.Add(-200 * time.Millisecond), 200}, {t0.Add(-100 * time.Millisecond), 300}}

	r.replayedTo(250, t0)
	if !r.up || !r.covered.Equal(t0.Add(-200*time.Millisecond)) || r.lag != 200*time.Millisecond || r.lagBytes != 50 {
		t.Errorf("replayed 250: up %v covered %v lag %s bytes %d; want covered at the 200 sample, lag 200ms, 50 bytes",
			r.up, t0.Sub(r.covered), r.lag, r.lagBytes)
	}
	r.replayedTo(300, t0)
	if r.lag != 0 || r.lagBytes != 0 || !r.covered.Equal(t0.Add(-100*time.Millisecond)) {
		t.Errorf("caught up: lag %s bytes %d covered %v", r.lag, r.lagBytes, t0.Sub(r.covered))
	}
	r.replayedTo(50, t0)
	if !r.covered.IsZero() {
		t.Errorf("behind every sample: covered %v; want unknown", r.covered)
	}
	if ok, why := r.pick(context.Background(), 0); ok || why != reasonLag {
		t.Errorf("pick with unknown staleness = %v, %s; want the primary for lag", ok, reasonNames[why])
	}
	r.setDown("test")
	if ok, why := r.pick(context.Background(), 0); ok || why != reasonDown {
		t.Errorf("pick while down = %v, %s; want the primary, down", ok, reasonNames[why])
	}
}

// Old positions go, but the newest of those older than the bound stays,
// so a lagging replica's age remains known.
func TestTrimRing(t *testing.T) {
	r := New(Config{MaxLag: time.Second})
	now := time.Now()
	for i := 10; i >= 0; i-- {
		r.ring = append(r.ring, point{now.Add(-time.Duration(i) * 500 * time.Millisecond), uint64(100 - i)})
	}
	r.trimRing(now)
	if len(r.ring) == 0 || now.Sub(r.ring[0].at) < 2*time.Second || now.Sub(r.ring[0].at) > 2500*time.Millisecond {
		t.Fatalf("after trimming the oldest kept is %s old; want the newest beyond MaxLag+1s (2-2.5s)", now.Sub(r.ring[0].at))
	}
}
