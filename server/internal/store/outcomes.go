package store

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
)

// Outcome is a worker's answer to one task, ready to apply. It names its
// task only by lease, so any replica can apply any worker's result.
type Outcome struct {
	Lease
	// Actor is recorded on the events the outcome causes.
	Actor string

	// Success fields. Status nil leaves the status as it was; Conditions
	// nil leaves the conditions as they were.
	Status     []byte
	Unhealthy  bool
	Conditions []byte
	// ResyncAfter is the kind's resync interval: a settled resource is
	// re-observed after about that long (0: never).
	ResyncAfter time.Duration
	// Output is an operation's output (a JSON object), for operation tasks.
	Output []byte

	// Failure fields.
	Failed   bool
	Terminal bool
	Message  string
	// Reason is the failure's machine-readable cause ("" for none).
	Reason string
	// RetryAfter, for a transient failure, replaces the backoff before the
	// next attempt (0: the backoff).
	RetryAfter time.Duration
	// RejectedStatus is a status the kind's status_schema refused: kept on
	// the resource (not as its status) for the tasks that follow.
	RejectedStatus []byte
}

// OutcomeResult says what happened to one outcome.
type OutcomeResult struct {
	Applied bool
	// Superseded: the lease was current but the resource moved on to a
	// newer generation; the task was put back to run again.
	Superseded bool
	// RetryAt is when a transient failure will be retried.
	RetryAt time.Time
}

// Backoff shapes retries of transient failures: the delay before attempt
// n+1 is min(Max, Base·2^(n-1)), of which a random half is kept (jitter).
type Backoff struct {
	Base time.Duration
	Max  time.Duration
}

// ApplyOutcomes applies a batch of outcomes in one transaction, each only
// if its lease is still current: the task row still has the same id,
// epoch and generation. Applying deletes or reschedules the task row, so
// a redelivered result never applies twice.
//
// What an outcome changes depends on its task's trigger: reconcile work
// (specChange, childrenSettled, resync) sets the resource's status and
// failure; deleteRequested removes the resource; an operation sets its
// operation's state and output; a reactor delivery is simply done.
//
// Failures: a transient failure is retried after its RetryAfter, else with
// backoff; it escalates to terminal after the kind's max_transient_attempts
// (0: limits.DefaultMaxTransientAttempts, -1: never); a terminal failure
// pins Failed for the generation (or fails the operation). Teardown
// (deleteRequested) failures are always retried, since a resource cannot
// be left half-deleted.
func (s *Store) ApplyOutcomes(ctx context.Context, outs []Outcome, backoff Backoff) ([]OutcomeResult, error) {
	var ok, failed, all outcomeColumns
	for _, o := range outs {
		all.add(o)
		if o.Failed {
			failed.add(o)
		} else {
			ok.add(o)
		}
	}
	applied := map[int64]bool{}
	superseded := map[int64]bool{}
	retryAt := map[int64]time.Time{}
	collect := func(into map[int64]bool) func(pgx.Rows) error {
		return func(rows pgx.Rows) error {
			for rows.Next() {
				var id int64
				if err := rows.Scan(&id); err != nil {
					return err
				}
				into[id] = true
			}
			return rows.Err()
		}
	}
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		clear(applied)
		clear(superseded)
		clear(retryAt)
		m, err := lockOutcomes(ctx, tx, &all)
		if err != nil {
			return err
		}
		batch := &pgx.Batch{}
		if len(ok.ids) > 0 {
			for _, st := range []struct {
				class string
				sql   string
				args  []any
			}{
				{"reconcile", applySuccessSQL, []any{ok.ids, ok.epochs, ok.generations, ok.statuses, ok.unhealthy, ok.conditions, ok.resyncMs}},
				{"teardown", applyDeletedSQL, []any{ok.ids, ok.epochs, ok.generations, ok.actors}},
				{"operation", applyOperationSQL, []any{ok.ids, ok.epochs, ok.generations, ok.outputs, ok.actors}},
				{"delivery", applyDeliveredSQL, []any{ok.ids, ok.epochs, ok.generations}},
			} {
				if m.current[st.class] {
					batch.Queue(st.sql, st.args...).Query(collect(applied))
				}
			}
		}
		if len(failed.ids) > 0 && len(m.current) > 0 {
			batch.Queue(applyTerminalSQL, failed.ids, failed.epochs, failed.generations, failed.messages,
				failed.actors, failed.terminal, failed.rejected, failed.reasons).Query(collect(applied))
			batch.Queue(applyTransientSQL, failed.ids, failed.epochs, failed.generations, failed.messages,
				failed.actors, failed.reasons, failed.retryMs,
				backoff.Base.Milliseconds(), backoff.Max.Milliseconds()).Query(func(rows pgx.Rows) error {
				for rows.Next() {
					var id int64
					var at time.Time
					if err := rows.Scan(&id, &at); err != nil {
						return err
					}
					applied[id], retryAt[id] = true, at
				}
				return rows.Err()
			})
		}
		if m.superseded {
			batch.Queue(releaseSupersededSQL, all.ids, all.epochs, all.generations).Query(collect(superseded))
		}
		if batch.Len() == 0 {
			return nil
		}
		return tx.SendBatch(ctx, batch).Close()
	})
	if err != nil {
		return nil, err
	}
	res := make([]OutcomeResult, len(outs))
	for i, o := range outs {
		res[i] = OutcomeResult{Applied: applied[o.TaskID], Superseded: superseded[o.TaskID], RetryAt: retryAt[o.TaskID]}
	}
	return res, nil
}

// outcomeMatches says which outcome statements can match a locked task.
type outcomeMatches struct {
	// current holds the trigger classes with at least one current lease.
	current map[string]bool
	// superseded: some lease is current but its generation is not.
	superseded bool
}

// lockOutcomes locks the outcomes' resources and then their tasks, in the
// store's lock order, and reports which statements can match.
func lockOutcomes(ctx context.Context, tx pgx.Tx, all *outcomeColumns) (outcomeMatches, error) {
	m := outcomeMatches{current: map[string]bool{}}
	batch := &pgx.Batch{}
	batch.Queue(pinPlansSQL)
	batch.Queue(`SELECT r.id FROM resources r
		WHERE r.id IN (SELECT resource_id FROM tasks WHERE id = ANY($1::bigint[]))
		ORDER BY r.id FOR NO KEY UPDATE`, all.ids)
	batch.Queue(lockOutcomeTasksSQL, all.ids, all.epochs, all.generations).Query(func(rows pgx.Rows) error {
		for rows.Next() {
			var class *string
			var current, superseded bool
			if err := rows.Scan(&class, &current, &superseded); err != nil {
				return err
			}
			if current && class != nil {
				m.current[*class] = true
			}
			m.superseded = m.superseded || superseded
		}
		return rows.Err()
	})
	return m, tx.SendBatch(ctx, batch).Close()
}

type outcomeColumns struct {
	ids, epochs, generations []int64
	resyncMs, retryMs        []int64
	statuses, conditions     [][]byte
	outputs, rejected        [][]byte
	unhealthy, terminal      []bool
	messages, actors         []string
	reasons                  []string
}

func (c *outcomeColumns) add(o Outcome) {
	c.ids = append(c.ids, o.TaskID)
	c.epochs = append(c.epochs, o.Epoch)
	c.generations = append(c.generations, o.Generation)
	c.statuses = append(c.statuses, o.Status)
	c.conditions = append(c.conditions, o.Conditions)
	c.resyncMs = append(c.resyncMs, o.ResyncAfter.Milliseconds())
	c.retryMs = append(c.retryMs, retryMs(o.RetryAfter))
	c.outputs = append(c.outputs, o.Output)
	c.rejected = append(c.rejected, o.RejectedStatus)
	c.unhealthy = append(c.unhealthy, o.Unhealthy)
	c.terminal = append(c.terminal, o.Terminal)
	c.messages = append(c.messages, truncate(o.Message, maxFailureMessage))
	c.actors = append(c.actors, o.Actor)
	c.reasons = append(c.reasons, o.Reason)
}

// retryMs is a retry-after in whole milliseconds, at least 1 when set, so
// a sub-millisecond one still replaces the backoff.
func retryMs(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	return max(d.Milliseconds(), 1)
}

// maxFailureMessage bounds a stored failure message.
const maxFailureMessage = 8192
