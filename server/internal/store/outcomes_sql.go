package store

import (
	"strconv"

	"github.com/convergehq/converge/server/internal/limits"
)

// The statements ApplyOutcomes runs, in this order, in one transaction
// (each only when the locked rows say it can match). Each matches only
// the tasks of its trigger class, and only through the fence, so every
// outcome is applied by exactly one of them at most. Those that embed the
// default transient cap (a number) are variables, built once.

// outcomeInput is the fenced input of every outcome statement.
const outcomeInput = `o AS (SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::bigint[]) AS o(task_id, epoch, generation))`

// fence matches a task row t to an outcome o whose lease is current.
const fence = `t.id = o.task_id AND t.epoch = o.epoch AND t.generation = o.generation`

// supersededLease matches a task row t to an outcome o whose lease is
// current but whose resource has moved on to another generation.
const supersededLease = `t.id = o.task_id AND t.epoch = o.epoch AND t.generation <> o.generation`

// Trigger classes.
const (
	isReconcile = `t.trigger IN ('specChange', 'childrenSettled', 'resync', 'observe')`
	isTeardown  = `t.trigger = 'deleteRequested'`
	isOperation = `t.trigger LIKE 'operation:%'`
	isDelivery  = `t.trigger = 'reactor'`
)

// lockOutcomeTasksSQL locks the outcomes' task rows (after their
// resources: see the lock order in store.go) and says which trigger
// classes have a current lease among them and whether any lease is
// superseded, so that ApplyOutcomes sends only the statements that can
// match a row.
const lockOutcomeTasksSQL = `
	WITH ` + outcomeInput + `, locked AS (
	    SELECT CASE WHEN ` + isReconcile + ` THEN 'reconcile' WHEN ` + isTeardown + ` THEN 'teardown'
	                WHEN ` + isOperation + ` THEN 'operation' WHEN ` + isDelivery + ` THEN 'delivery' END AS class,
	           ` + fence + ` AS current, ` + supersededLease + ` AS superseded
	    FROM o JOIN tasks t ON t.id = o.task_id
	    ORDER BY t.id FOR UPDATE OF t
	)
	SELECT DISTINCT class, current, superseded FROM locked`

// transientCap is the kind k's cap on consecutive transient failures: its
// max_transient_attempts, or the server default for 0 (-1: no cap).
var transientCap = `(CASE WHEN k.max_transient_attempts = 0 THEN ` +
	strconv.Itoa(limits.DefaultMaxTransientAttempts) + ` ELSE k.max_transient_attempts END)`

// escalates is true when one more failure reaches the kind's cap on
// transient failures (the poison-pill rule).
var escalates = `(k.max_transient_attempts >= 0 AND t.attempts + 1 >= ` + transientCap + `)`

// capReached is the note a failure that reached the cap carries.
var capReached = `' (gave up after ' || (t.attempts + 1) || ' consecutive transient failures: ' ||
	CASE WHEN k.max_transient_attempts = 0
	     THEN 'the server''s default cap of ' || ` + transientCap + ` || ' was reached; the kind''s max_transient_attempts changes it)'
	     ELSE 'the kind''s max_transient_attempts of ' || k.max_transient_attempts || ' was reached)' END`

// ReasonAttemptsExhausted is the reason a failure that reached the cap
// of transient attempts records when the worker gave none.
const ReasonAttemptsExhausted = "AttemptsExhausted"

// attemptsExhausted is ReasonAttemptsExhausted as an SQL literal.
const attemptsExhausted = `'` + ReasonAttemptsExhausted + `'`

// nextResync is when a resource settled now is re-observed: about
// resync_ms from now, spread by ±10% so resources applied together do
// not come due together.
const nextResync = `CASE WHEN done.resync_ms > 0
	    THEN now() + done.resync_ms * (0.9 + random() * 0.2) * interval '1 millisecond' END`

// applySuccessSQL applies reconcile results. Every reconcile task follows
// its resource's generation (scheduleReconcileSQL), so the fence alone
// keeps an answer about an older spec out.
const applySuccessSQL = `
	WITH o AS (
	    SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::bigint[], $4::jsonb[], $5::bool[], $6::jsonb[], $7::bigint[])
	        AS o(task_id, epoch, generation, status, unhealthy, conditions, resync_ms)
	), done AS (
	    DELETE FROM tasks t USING o
	    WHERE ` + fence + ` AND ` + isReconcile + `
	    RETURNING t.id AS task_id, t.resource_id, t.trigger, o.generation, o.status, o.unhealthy, o.conditions, o.resync_ms
	), upd AS (
	    -- old is the row as it was before this statement (same snapshot).
	    UPDATE resources r SET
	        status = coalesce(done.status, r.status),
	        synced_generation = done.generation,
	        health_ok = NOT done.unhealthy,
	        conditions = CASE WHEN done.conditions IS NULL THEN r.conditions
	                          ELSE converge_merge_conditions(r.conditions, done.conditions, now()) END,
	        failure_generation = 0, failure_terminal = false, failure_attempts = 0, failure_message = NULL,
	        failure_reason = NULL,
	        rejected_status = CASE WHEN done.status IS NULL THEN r.rejected_status END,
	        resync_at = ` + nextResync + `,
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

// applyDeletedSQL removes resources whose teardown finished, with their
// remaining work; operations still pending or running on them fail.
// Reactor deliveries about them stay: they report on the resource, they
// do not belong to it.
const applyDeletedSQL = `
	WITH o AS (
	    SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::bigint[], $4::text[]) AS o(task_id, epoch, generation, actor)
	), done AS (
	    DELETE FROM tasks t USING o
	    WHERE ` + fence + ` AND ` + isTeardown + `
	    RETURNING t.id AS task_id, t.resource_id, o.actor
	), gone AS (
	    DELETE FROM resources r USING done WHERE r.id = done.resource_id
	    RETURNING done.task_id, done.actor, r.id, r.namespace, r.kind, r.name, r.generation
	), other_tasks AS (
	    DELETE FROM tasks t USING gone WHERE t.resource_id = gone.id AND NOT ` + isDelivery + `
	    RETURNING t.trigger, t.key
	), ops AS (
	    UPDATE operations SET state = 'failed', message = 'the resource was deleted', finished_at = now()
	    WHERE id IN (SELECT key FROM other_tasks WHERE trigger LIKE 'operation:%')
	), ev AS (
	    INSERT INTO events (resource_id, namespace, kind, name, generation, type, reason, message, actor)
	    SELECT id, namespace, kind, name, generation, 'Normal', 'Deleted', 'teardown finished; resource removed', actor
	    FROM gone
	)
	SELECT task_id FROM gone`

// applyOperationSQL records finished operations.
const applyOperationSQL = `
	WITH o AS (
	    SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::bigint[], $4::jsonb[], $5::text[])
	        AS o(task_id, epoch, generation, output, actor)
	), done AS (
	    DELETE FROM tasks t USING o
	    WHERE ` + fence + ` AND ` + isOperation + `
	    RETURNING t.id AS task_id, t.key, o.output, o.actor
	), op AS (
	    UPDATE operations p SET state = 'succeeded', output = coalesce(done.output, '{}'), message = NULL,
	        finished_at = now()
	    FROM done WHERE p.id = done.key
	    RETURNING p.id, p.resource_id, p.verb, done.actor
	), ev AS (
	    INSERT INTO events (resource_id, namespace, kind, name, generation, type, reason, message, actor)
	    SELECT r.id, r.namespace, r.kind, r.name, r.generation, 'Normal', 'OperationSucceeded',
	           'operation ' || op.verb || ' ' || op.id || ' succeeded', op.actor
	    FROM op JOIN resources r ON r.id = op.resource_id
	)
	SELECT task_id FROM done`

// applyDeliveredSQL finishes reactor deliveries.
const applyDeliveredSQL = `
	WITH ` + outcomeInput + `
	DELETE FROM tasks t USING o
	WHERE ` + fence + ` AND ` + isDelivery + `
	RETURNING t.id`

// applyTerminalSQL applies terminal failures, and transient ones that
// exhaust max_transient_attempts, of every trigger but deleteRequested. A
// status the kind's status_schema refused is kept as the resource's
// rejected status.
var applyTerminalSQL = `
	WITH o AS (
	    SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::bigint[], $4::text[], $5::text[], $6::bool[], $7::jsonb[], $8::text[])
	        AS o(task_id, epoch, generation, message, actor, terminal, rejected, reason)
	), t AS (
	    DELETE FROM tasks t USING o, kinds k
	    WHERE ` + fence + ` AND k.kind = t.kind AND k.kind_version = t.kind_version
	      AND t.trigger <> 'deleteRequested' AND (o.terminal OR ` + escalates + `)
	    RETURNING t.id, t.resource_id, t.generation, t.attempts + 1 AS attempts, t.trigger, t.key, t.kind,
	        t.kind_version, o.actor, o.rejected,
	        CASE WHEN o.terminal THEN o.message ELSE o.message || ` + capReached + ` END AS message,
	        coalesce(nullif(o.reason, ''), CASE WHEN NOT o.terminal THEN ` + attemptsExhausted + ` END) AS reason
	), upd AS (
	    UPDATE resources r SET
	        failure_generation = t.generation, failure_terminal = true, failure_attempts = t.attempts,
	        failure_message = t.message, failure_reason = t.reason, rejected_status = coalesce(t.rejected, r.rejected_status),
	        resync_at = NULL, resource_version = r.resource_version + 1, updated_at = now()
	    FROM t WHERE r.id = t.resource_id AND ` + isReconcile + `
	    RETURNING r.id, r.namespace, r.kind, r.name, r.generation, t.trigger, t.message, t.actor
	), op AS (
	    UPDATE operations p SET state = 'failed', message = t.message, finished_at = now()
	    FROM t WHERE p.id = t.key AND t.trigger LIKE 'operation:%'
	    RETURNING p.id, p.resource_id, p.verb, t.message, t.actor
	), ev AS (
	    INSERT INTO events (resource_id, namespace, kind, name, generation, type, reason, message, actor)
	    SELECT id, namespace, kind, name, generation, 'Warning', 'Failed',
	           trigger || ' failed terminally: ' || message, actor
	    FROM upd
	    UNION ALL
	    SELECT r.id, r.namespace, r.kind, r.name, r.generation, 'Warning', 'OperationFailed',
	           'operation ' || op.verb || ' ' || op.id || ' failed: ' || op.message, op.actor
	    FROM op JOIN resources r ON r.id = op.resource_id
	    UNION ALL
	    SELECT r.id, r.namespace, r.kind, r.name, r.generation, 'Warning', 'ReactorFailed',
	           'reactor ' || t.kind || ' v' || t.kind_version || ' gave up on delivery ' || t.key || ': ' || t.message, t.actor
	    FROM t JOIN resources r ON r.id = t.resource_id WHERE t.trigger = 'reactor'
	)
	SELECT id FROM t`

// applyTransientSQL runs after applyTerminalSQL in the same transaction,
// so the rows that statement deleted are no longer there to match. The
// task runs again after the worker's retry-after, else after a jittered
// exponential backoff (this is the one place either is computed); the
// resource (for reconcile and teardown work) or the operation records the
// failure meanwhile.
const applyTransientSQL = `
	WITH o AS (
	    SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::bigint[], $4::text[], $5::text[], $6::text[], $7::bigint[])
	        AS o(task_id, epoch, generation, message, actor, reason, retry_ms)
	), t AS (
	    UPDATE tasks t SET
	        claimed_by = NULL, lease_expires_at = NULL, attempts = t.attempts + 1,
	        not_before = now() + CASE WHEN o.retry_ms > 0 THEN o.retry_ms
	                                  ELSE least($9::float8, $8::float8 * power(2, least(t.attempts, 30)))
	                                       * (0.5 + random() / 2) END * interval '1 millisecond'
	    FROM o WHERE ` + fence + `
	    RETURNING t.id, t.resource_id, t.attempts, t.not_before, t.trigger, t.key, o.message, o.actor, o.reason
	), upd AS (
	    UPDATE resources r SET
	        failure_generation = r.generation, failure_terminal = false, failure_attempts = t.attempts,
	        failure_message = t.message, failure_reason = nullif(t.reason, ''), resource_version = r.resource_version + 1, updated_at = now()
	    FROM t WHERE r.id = t.resource_id
	      AND (` + isReconcile + ` OR ` + isTeardown + `)
	    RETURNING r.id, r.namespace, r.kind, r.name, r.generation, t.trigger, t.attempts, t.message, t.actor
	), op AS (
	    UPDATE operations p SET state = 'pending',
	        message = 'attempt ' || t.attempts || ' failed: ' || t.message || '; retrying'
	    FROM t WHERE p.id = t.key AND t.trigger LIKE 'operation:%'
	), ev AS (
	    INSERT INTO events (resource_id, namespace, kind, name, generation, type, reason, message, actor)
	    SELECT id, namespace, kind, name, generation, 'Warning', 'TransientFailure',
	           trigger || ' attempt ' || attempts || ' failed: ' || message, actor
	    FROM upd
	)
	SELECT id, not_before FROM t`

// releaseSupersededSQL handles leases that are current but whose
// resource moved to a newer generation, or whose management policy
// changed (requeueReconcile): a specChange (or observe) task runs again; any other task (a childrenSettled or teardown from
// before the change) is dropped, since what changed queues it afresh.
const releaseSupersededSQL = `
	WITH ` + outcomeInput + `, dropped AS (
	    DELETE FROM tasks t USING o
	    WHERE ` + supersededLease + ` AND t.trigger NOT IN ('specChange', 'observe')
	    RETURNING t.id
	), released AS (
	    UPDATE tasks t SET claimed_by = NULL, lease_expires_at = NULL, not_before = now()
	    FROM o WHERE ` + supersededLease + ` AND t.trigger IN ('specChange', 'observe')
	    RETURNING t.id
	)
	SELECT id FROM dropped UNION ALL SELECT id FROM released`
