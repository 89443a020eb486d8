// Package readroute decides which database serves each read-only API
// request when the server has a streaming replica (serve
// --read-database-url): the replica when it is reachable, in recovery,
// within the staleness bound and replayed past the caller's last write;
// the primary otherwise. It is the one place that rule lives: the API's
// interceptor (Interceptor) routes the read procedures (ReadProcedures)
// and hands writes their read-your-writes token, and Watch routes each
// page of its feed through a Stream.
//
// The replica's position is sampled in the background (Run): its replay
// position beside a ring of the primary's WAL positions gives how far
// behind it is in time, which bounds staleness (MaxLag) and is the lag
// metric. A read that fails on the replica because it is unreachable, or
// because recovery cancelled it, is run again on the primary; the replica
// then takes reads again once a sample finds it back.
package readroute

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"connectrpc.com/connect"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/convergehq/converge/server/internal/store"
)

// Defaults of Config's bounds.
const (
	// DefaultMaxLag: a replica further behind than this serves no reads.
	DefaultMaxLag = 2 * time.Second
	// DefaultWait: a read carrying a token waits this long for the
	// replica to replay that far before going to the primary.
	DefaultWait = time.Second
	// MinMaxLag is the smallest staleness bound: the lag is known to
	// within the sample interval, no finer.
	MinMaxLag = 4 * sampleInterval
)

// Config configures a Router.
type Config struct {
	// Primary is the database every write goes to.
	Primary *pgxpool.Pool
	// Replica is a hot standby streaming from Primary; nil routes every
	// read to Primary.
	Replica *pgxpool.Pool
	// MaxLag bounds how stale a replica read may be (0: DefaultMaxLag).
	MaxLag time.Duration
	// Wait bounds how long a read waits for the replica to reach its
	// token (0: DefaultWait).
	Wait time.Duration
	Log  *slog.Logger
}

// Where a read ran, and why there.
type source int

const (
	sourceReplica source = iota
	sourcePrimary
	numSources
)

type reason int

const (
	// On the replica:
	reasonFresh    reason = iota // caught up with the read's token at once
	reasonCaughtUp               // caught up within Wait
	// On the primary:
	reasonNoReplica // no replica configured (not counted)
	reasonDown      // the replica is unreachable or not a standby
	reasonLag       // the replica is behind by more than MaxLag
	reasonBehind    // the replica did not reach the token within Wait
	reasonFailed    // the read failed on the replica and ran again here
	numReasons
)

var reasonNames = [numReasons]string{"fresh", "caught_up", "no_replica", "down", "lag", "behind", "failed"}

// Router routes reads; a nil *Router sends every read to the primary.
type Router struct {
	cfg  Config
	kick chan struct{}

	mu sync.Mutex
	// up: the last sample reached the replica and found it in recovery.
	up      bool
	downWhy string
	// replayed is the replica's replay position at the last sample.
	replayed uint64
	// covered: the replica holds every write the primary committed
	// before this instant.
	covered time.Time
	// lag and lagBytes are how far behind the last sample found it.
	lag      time.Duration
	lagBytes uint64
	// changed is closed, and replaced, whenever a sample lands.
	changed chan struct{}
	// ring holds the primary's recent WAL positions, oldest first.
	ring []point

	// pmu serialises queries of the primary's position: callers that
	// arrive while one runs take the next, one query for all of them.
	pmu  sync.Mutex
	pAt  time.Time
	pLSN uint64

	counts [numSources][numReasons]atomic.Int64
}

// point is the primary's WAL insert position at an instant.
type point struct {
	at  time.Time
	lsn uint64
}

// New returns a Router; with no replica it routes everything to the
// primary and Run does nothing.
func New(cfg Config) *Router {
	if cfg.MaxLag <= 0 {
		cfg.MaxLag = DefaultMaxLag
	}
	if cfg.Wait <= 0 {
		cfg.Wait = DefaultWait
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	return &Router{cfg: cfg, kick: make(chan struct{}, 1), changed: make(chan struct{}), downWhy: "not sampled yet"}
}

// Replica is the replica's pool, or nil.
func (r *Router) Replica() *pgxpool.Pool {
	if r == nil {
		return nil
	}
	return r.cfg.Replica
}

// Do runs read on the database that should serve it: read must see every
// write the primary had made up to position need (0: none in particular).
// A read the replica fails for want of the replica runs again on the
// primary, so a replica that dies costs latency, not errors. Errors of
// read are expected to be store errors or connect errors wrapping them.
func (r *Router) Do(ctx context.Context, need uint64, read func(context.Context) error) error {
	_, err := r.do(ctx, need, read)
	return err
}

// do is Do, also reporting whether the primary served the read.
func (r *Router) do(ctx context.Context, need uint64, read func(context.Context) error) (onPrimary bool, err error) {
	if r == nil || r.cfg.Replica == nil {
		return true, read(ctx)
	}
	replica, why := r.pick(ctx, need)
	if !replica {
		r.counts[sourcePrimary][why].Add(1)
		return true, read(ctx)
	}
	err = read(store.ReadingFrom(ctx, r.cfg.Replica))
	retry, down := replicaFailed(err)
	if !retry || ctx.Err() != nil {
		r.counts[sourceReplica][why].Add(1)
		return false, err
	}
	if down {
		r.setDown("a read failed: " + err.Error())
	}
	r.counts[sourcePrimary][reasonFailed].Add(1)
	return true, read(ctx)
}

// pick decides where a read that needs position need runs: the replica
// when it is up, within MaxLag and (within Wait) past need.
func (r *Router) pick(ctx context.Context, need uint64) (replica bool, why reason) {
	var deadline time.Time
	for {
		r.mu.Lock()
		up, replayed, covered, changed := r.up, r.replayed, r.covered, r.changed
		r.mu.Unlock()
		switch {
		case !up:
			return false, reasonDown
		case time.Since(covered) > r.cfg.MaxLag:
			return false, reasonLag
		case replayed >= need && deadline.IsZero():
			return true, reasonFresh
		case replayed >= need:
			return true, reasonCaughtUp
		}
		if deadline.IsZero() {
			deadline = time.Now().Add(r.cfg.Wait)
		}
		left := time.Until(deadline)
		if left <= 0 {
			return false, reasonBehind
		}
		select {
		case r.kick <- struct{}{}:
		default:
		}
		t := time.NewTimer(left)
		select {
		case <-changed:
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return false, reasonBehind
		}
		t.Stop()
	}
}

// WAL page header sizes (PostgreSQL's SizeOfXLogShortPHD and
// SizeOfXLogLongPHD, the latter on a segment's first page).
const (
	shortPageHeader = 24
	longPageHeader  = 40
)

// recordEnd turns an insert position into the end of the last record
// inserted before it, which is as far as a standby can replay. They differ
// when the insert position is at the start of a page: it then points past
// the page's header, where no record ends, and a standby that has replayed
// everything would never seem to reach it.
func recordEnd(insert, block, segment uint64) uint64 {
	if block == 0 || segment == 0 {
		return insert
	}
	off := insert % block
	firstPage := insert%segment < block
	if (firstPage && off == longPageHeader) || (!firstPage && off == shortPageHeader) {
		return insert - off
	}
	return insert
}

// replicaFailed reports whether err means the replica, not the request,
// failed the read (retry it on the primary), and whether the replica is
// unreachable (down) rather than having cancelled one statement.
func replicaFailed(err error) (retry, down bool) {
	if err == nil {
		return false, false
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch {
		case pgErr.Code == "40001":
			// Recovery cancelled the statement: it conflicted with WAL
			// replay (a vacuum on the primary removed rows it still saw).
			return true, false
		case len(pgErr.Code) == 5 && (pgErr.Code[:2] == "08" || pgErr.Code[:3] == "57P"):
			return true, true
		}
		return false, false
	}
	if ce := new(connect.Error); errors.As(err, &ce) {
		down := ce.Code() == connect.CodeUnavailable
		return down, down
	}
	down = store.IsUnavailable(err) && !errors.Is(err, store.ErrNotFound) && !errors.Is(err, store.ErrConflict)
	return down, down
}

func (r *Router) setDown(why string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.up {
		r.cfg.Log.Warn("read replica unavailable: reads go to the primary until it is back", "reason", why)
	}
	r.up, r.downWhy = false, why
}

// PrimaryAfter returns the primary's WAL insert position as of an instant
// no earlier than t: every write committed before t is at or before it.
// The insert position, not the write position, because a commit made with
// synchronous_commit off returns before its WAL is written.
func (r *Router) PrimaryAfter(ctx context.Context, t time.Time) (uint64, error) {
	r.pmu.Lock()
	defer r.pmu.Unlock()
	if !r.pAt.IsZero() && !r.pAt.Before(t) {
		return r.pLSN, nil
	}
	start := time.Now()
	var insert, block, segment int64
	if err := r.cfg.Primary.QueryRow(ctx, `SELECT (pg_current_wal_insert_lsn() - '0/0'::pg_lsn)::bigint,
		current_setting('wal_block_size')::bigint, pg_size_bytes(current_setting('wal_segment_size'))`).
		Scan(&insert, &block, &segment); err != nil {
		return 0, err
	}
	lsn := recordEnd(uint64(insert), uint64(block), uint64(segment))
	r.pAt, r.pLSN = start, lsn
	r.mu.Lock()
	if n := len(r.ring); n == 0 || start.Sub(r.ring[n-1].at) >= ringSpacing {
		r.ring = append(r.ring, point{at: start, lsn: lsn})
	}
	r.mu.Unlock()
	return r.pLSN, nil
}
