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

	// Failure fields.
	Failed   bool
	Terminal bool
	Message  string
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
// Failures: a transient failure is retried with backoff; it escalates to
// terminal after the kind's max_transient_attempts; a terminal failure
// pins Failed for the generation. Teardown (deleteRequested) failures are
// always retried, since a resource cannot be left half-deleted.
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
	batch := &pgx.Batch{}
	batch.Queue(`SELECT r.id FROM resources r
		WHERE r.id IN (SELECT resource_id FROM tasks WHERE id = ANY($1::bigint[]))
		ORDER BY r.id FOR NO KEY UPDATE`, all.ids)
	batch.Queue(`SELECT id FROM tasks WHERE id = ANY($1::bigint[]) ORDER BY id FOR UPDATE`, all.ids)
	if len(ok.ids) > 0 {
		batch.Queue(applySuccessSQL, ok.ids, ok.epochs, ok.generations, ok.statuses, ok.unhealthy,
			ok.conditions).Query(collect(applied))
		batch.Queue(applyDeletedSQL, ok.ids, ok.epochs, ok.generations, ok.actors).Query(collect(applied))
	}
	if len(failed.ids) > 0 {
		batch.Queue(applyTerminalSQL, failed.ids, failed.epochs, failed.generations, failed.messages,
			failed.actors, failed.terminal).Query(collect(applied))
		batch.Queue(applyTransientSQL, failed.ids, failed.epochs, failed.generations, failed.messages,
			failed.actors, backoff.Base.Milliseconds(), backoff.Max.Milliseconds()).Query(func(rows pgx.Rows) error {
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
	batch.Queue(releaseSupersededSQL, all.ids, all.epochs, all.generations).Query(collect(superseded))
	if err := s.sendBatch(ctx, batch); err != nil {
		return nil, err
	}
	res := make([]OutcomeResult, len(outs))
	for i, o := range outs {
		res[i] = OutcomeResult{Applied: applied[o.TaskID], Superseded: superseded[o.TaskID], RetryAt: retryAt[o.TaskID]}
	}
	return res, nil
}

// sendBatch runs a batch as one implicit transaction (one round trip),
// retrying it whole on deadlock or serialization failure.
func (s *Store) sendBatch(ctx context.Context, batch *pgx.Batch) error {
	var err error
	for attempt := 0; attempt < 4; attempt++ {
		err = s.pool.SendBatch(ctx, batch).Close()
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

type outcomeColumns struct {
	ids, epochs, generations []int64
	statuses, conditions     [][]byte
	unhealthy, terminal      []bool
	messages, actors         []string
}

func (c *outcomeColumns) add(o Outcome) {
	c.ids = append(c.ids, o.TaskID)
	c.epochs = append(c.epochs, o.Epoch)
	c.generations = append(c.generations, o.Generation)
	c.statuses = append(c.statuses, o.Status)
	c.conditions = append(c.conditions, o.Conditions)
	c.unhealthy = append(c.unhealthy, o.Unhealthy)
	c.terminal = append(c.terminal, o.Terminal)
	c.messages = append(c.messages, truncate(o.Message, maxFailureMessage))
	c.actors = append(c.actors, o.Actor)
}

// maxFailureMessage bounds a stored failure message.
const maxFailureMessage = 8192

// outcomeInput is the fenced input of every outcome statement.
const outcomeInput = `o AS (SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::bigint[]) AS o(task_id, epoch, generation))`

// fence matches a task row t to an outcome o whose lease is current.
const fence = `t.id = o.task_id AND t.epoch = o.epoch AND t.generation = o.generation`

// escalates is true when one more failure exhausts the kind's
// max_transient_attempts (the poison-pill rule).
const escalates = `(k.max_transient_attempts > 0 AND t.attempts + 1 >= k.max_transient_attempts)`

const applySuccessSQL = `
	WITH o AS (
	    SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::bigint[], $4::jsonb[], $5::bool[], $6::jsonb[])
	        AS o(task_id, epoch, generation, status, unhealthy, conditions)
	), done AS (
	    DELETE FROM tasks t USING o
	    WHERE ` + fence + ` AND t.trigger <> 'deleteRequested'
	    RETURNING t.id AS task_id, t.resource_id, o.generation, o.status, o.unhealthy, o.conditions
	), upd AS (
	    -- old is the row as it was before this statement (same snapshot).
	    UPDATE resources r SET
	        status = coalesce(done.status, r.status),
	        synced_generation = done.generation,
	        health_ok = NOT done.unhealthy,
	        conditions = CASE WHEN done.conditions IS NULL THEN r.conditions
	                          ELSE converge_merge_conditions(r.conditions, done.conditions, now()) END,
	        failure_generation = 0, failure_terminal = false, failure_attempts = 0, failure_message = NULL,
	        resource_version = r.resource_version + 1,
	        reconciles = r.reconciles + 1,
	        updated_at = now()
	    FROM done, resources old
	    WHERE r.id = done.resource_id AND old.id = done.resource_id
	    RETURNING done.task_id, r.id, r.namespace, r.kind, r.name, r.generation, r.health_ok,
	        old.failure_attempts AS prev_attempts, old.health_ok AS prev_health
	), ev AS (
	    INSERT INTO events (resource_id, namespace, kind, name, generation, type, reason, message, actor)
	    SELECT upd.id, upd.namespace, upd.kind, upd.name, upd.generation, e.type, e.reason, e.message, 'system'
	    FROM upd CROSS JOIN LATERAL (VALUES
	        (upd.prev_attempts > 0, 'Normal', 'Recovered',
	         'reconciled after ' || upd.prev_attempts || ' failed attempt(s)'),
	        (upd.prev_health AND NOT upd.health_ok, 'Warning', 'Unhealthy', 'the worker reported the resource unhealthy'),
	        (NOT upd.prev_health AND upd.health_ok, 'Normal', 'Healthy', 'the worker reported the resource healthy again')
	    ) AS e(happened, type, reason, message)
	    WHERE e.happened
	)
	SELECT task_id FROM upd`

const applyDeletedSQL = `
	WITH o AS (
	    SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::bigint[], $4::text[]) AS o(task_id, epoch, generation, actor)
	), done AS (
	    DELETE FROM tasks t USING o
	    WHERE ` + fence + ` AND t.trigger = 'deleteRequested'
	    RETURNING t.id AS task_id, t.resource_id, o.actor
	), gone AS (
	    DELETE FROM resources r USING done WHERE r.id = done.resource_id
	    RETURNING done.task_id, done.actor, r.id, r.namespace, r.kind, r.name, r.generation
	), other_tasks AS (
	    DELETE FROM tasks t USING gone WHERE t.resource_id = gone.id
	), ev AS (
	    INSERT INTO events (resource_id, namespace, kind, name, generation, type, reason, message, actor)
	    SELECT id, namespace, kind, name, generation, 'Normal', 'Deleted', 'teardown finished; resource removed', actor
	    FROM gone
	)
	SELECT task_id FROM gone`

const applyTerminalSQL = `
	WITH o AS (
	    SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::bigint[], $4::text[], $5::text[], $6::bool[])
	        AS o(task_id, epoch, generation, message, actor, terminal)
	), t AS (
	    DELETE FROM tasks t USING o, kinds k
	    WHERE ` + fence + ` AND k.kind = t.kind AND k.kind_version = t.kind_version
	      AND t.trigger <> 'deleteRequested' AND (o.terminal OR ` + escalates + `)
	    RETURNING t.id, t.resource_id, t.generation, t.attempts + 1 AS attempts, t.trigger, o.actor,
	        CASE WHEN o.terminal THEN o.message
	             ELSE o.message || ' (gave up after ' || (t.attempts + 1) || ' attempts)' END AS message
	), upd AS (
	    UPDATE resources r SET
	        failure_generation = t.generation, failure_terminal = true, failure_attempts = t.attempts,
	        failure_message = t.message, resource_version = r.resource_version + 1, updated_at = now()
	    FROM t WHERE r.id = t.resource_id
	    RETURNING r.id, r.namespace, r.kind, r.name, r.generation, t.trigger, t.message, t.actor
	), ev AS (
	    INSERT INTO events (resource_id, namespace, kind, name, generation, type, reason, message, actor)
	    SELECT id, namespace, kind, name, generation, 'Warning', 'Failed',
	           trigger || ' failed terminally: ' || message, actor
	    FROM upd
	)
	SELECT id FROM t`

// applyTransientSQL runs after applyTerminalSQL in the same transaction,
// so the rows that statement deleted are no longer there to match.
const applyTransientSQL = `
	WITH o AS (
	    SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::bigint[], $4::text[], $5::text[])
	        AS o(task_id, epoch, generation, message, actor)
	), t AS (
	    UPDATE tasks t SET
	        claimed_by = NULL, lease_expires_at = NULL, attempts = t.attempts + 1,
	        not_before = now() + least($7::float8, $6::float8 * power(2, least(t.attempts, 30)))
	                             * (0.5 + random() / 2) * interval '1 millisecond'
	    FROM o WHERE ` + fence + `
	    RETURNING t.id, t.resource_id, t.attempts, t.not_before, t.trigger, o.message, o.actor
	), upd AS (
	    UPDATE resources r SET
	        failure_generation = r.generation, failure_terminal = false, failure_attempts = t.attempts,
	        failure_message = t.message, resource_version = r.resource_version + 1, updated_at = now()
	    FROM t WHERE r.id = t.resource_id
	    RETURNING r.id, r.namespace, r.kind, r.name, r.generation, t.trigger, t.attempts, t.message, t.actor
	), ev AS (
	    INSERT INTO events (resource_id, namespace, kind, name, generation, type, reason, message, actor)
	    SELECT id, namespace, kind, name, generation, 'Warning', 'TransientFailure',
	           trigger || ' attempt ' || attempts || ' failed: ' || message, actor
	    FROM upd
	)
	SELECT id, not_before FROM t`

// releaseSupersededSQL handles leases that are current but whose
// resource moved to a newer generation: a specChange task runs again at
// the new generation; any other task (a childrenSettled or teardown from
// before the change) is dropped, since what changed queues it afresh.
const releaseSupersededSQL = `
	WITH ` + outcomeInput + `, dropped AS (
	    DELETE FROM tasks t USING o
	    WHERE t.id = o.task_id AND t.epoch = o.epoch AND t.generation <> o.generation AND t.trigger <> 'specChange'
	    RETURNING t.id
	), released AS (
	    UPDATE tasks t SET claimed_by = NULL, lease_expires_at = NULL, not_before = now()
	    FROM o WHERE t.id = o.task_id AND t.epoch = o.epoch AND t.generation <> o.generation AND t.trigger = 'specChange'
	    RETURNING t.id
	)
	SELECT id FROM dropped UNION ALL SELECT id FROM released`
