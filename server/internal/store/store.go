// Package store holds every SQL statement Converge runs. The rest of the
// server reads as Go; each query has one home here.
//
// Lock order, for every transaction that writes several rows: resources
// rows before tasks rows, and within a table ascending id. Background
// writers that touch only tasks (claim, lease heartbeat, reaper) skip rows
// that are locked instead of waiting. With that order no two writers can
// wait on each other in a cycle, so deadlocks are designed out rather than
// retried.
package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Store runs Converge's queries against one PostgreSQL database.
//
// Statements whose loss in a database crash is harmless — claims and
// lease renewals, which are fenced by random epochs and redone after a
// crash — run on the relaxed pool, whose sessions commit without waiting
// for the WAL flush. Everything acknowledged to a client or a worker runs
// on the durable pool.
type Store struct {
	pool    *pgxpool.Pool
	relaxed *pgxpool.Pool
}

// New returns a Store over a durable pool and a relaxed pool (which may
// be the same pool).
func New(pool, relaxed *pgxpool.Pool) *Store { return &Store{pool: pool, relaxed: relaxed} }

// Pool returns the underlying pool (for health checks and tests).
func (s *Store) Pool() *pgxpool.Pool { return s.pool }

// Errors callers branch on. Wrapped errors carry the details.
var (
	ErrNotFound = errors.New("not found")
	// ErrConflict: the request contradicts the current state (a kind in
	// use, a resource being deleted, a retired kind version).
	ErrConflict = errors.New("conflict")
	// ErrStaleKind: a kind changed between validation and commit; the
	// caller refreshes its kind cache and retries.
	ErrStaleKind = errors.New("kind changed concurrently")
)

// inTx runs fn in a transaction, retrying a few times on serialization
// failures and deadlocks, which PostgreSQL may still report under
// unusual interleavings (and which a restart makes transient).
func (s *Store) inTx(ctx context.Context, fn func(pgx.Tx) error) error {
	var err error
	for attempt := 0; attempt < 4; attempt++ {
		err = pgx.BeginFunc(ctx, s.db(ctx), func(tx pgx.Tx) error {
			if err := joinTrace(ctx, tx); err != nil {
				return err
			}
			return fn(tx)
		})
		if !retryable(err) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(time.Duration(attempt+1) * 10 * time.Millisecond):
		}
	}
	return err
}

func retryable(err error) bool {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch pgErr.Code {
		case "40001", "40P01": // serialization_failure, deadlock_detected
			return true
		}
	}
	return false
}

// IsUnavailable reports whether err means the database could not be
// reached or dropped the connection, as opposed to a rejected statement.
func IsUnavailable(err error) bool {
	if err == nil {
		return false
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		// Class 08: connection exception; 57P: operator intervention
		// (admin shutdown, crash shutdown, cannot connect now).
		return len(pgErr.Code) == 5 && (pgErr.Code[:2] == "08" || pgErr.Code[:3] == "57P")
	}
	return !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded)
}

func conflictf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrConflict, fmt.Sprintf(format, args...))
}

func notFoundf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrNotFound, fmt.Sprintf(format, args...))
}
