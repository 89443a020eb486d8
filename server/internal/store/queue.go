package store

import (
	"strings"
)

// queueReconcile is the statement that queues reconcile work for the
// rows r of from (a FROM item yielding resource rows) that match filter
// and whose reconcile is due (converge_due, functions.sql: the one home of
// that rule), under the trigger their management policy gives it
// (converge_reconcile_trigger: specChange, or observe). The kind versions'
// policies come from one join: a lookup per row would cost more than the
// insert of a large batch's tasks.
func queueReconcile(from, filter string) string {
	return `
	INSERT INTO tasks (resource_id, trigger, kind, kind_version, shard, generation)
	SELECT r.id, converge_reconcile_trigger(r, kp.management_policy, 'specChange'), r.kind, r.kind_version, r.shard, r.generation
	FROM ` + from + ` LEFT JOIN kinds kp ON kp.kind = r.kind AND kp.kind_version = r.kind_version
	WHERE ` + filter + ` AND converge_due(r)
	ORDER BY r.id`
}

// otherReconcileTask holds when resource r has a task other than t under
// the trigger a spec change gives r now (converge_reconcile_trigger):
// moving t to that trigger would collide with it, and the work is queued
// already.
const otherReconcileTask = `EXISTS (SELECT 1 FROM tasks q WHERE q.resource_id = r.id AND q.key = '' AND q.id <> t.id
	                  AND q.trigger = converge_reconcile_trigger(r, 'specChange'))`

// scheduleReconcileSQL queues specChange work for the eligible resources
// among $1 (ascending ids). A queued or running task for an older
// generation is re-pointed to the new one: a running handler keeps its
// lease, its stale result is discarded, and the task runs again.
//
// The resources' other reconcile work (childrenSettled, resync) moves to
// the new generation too, so a handler still running for the old one
// holds a superseded lease: its answer, about a spec that is gone, is
// dropped (releaseSupersededSQL) instead of winding the synced
// generation back or bringing back children the new spec dropped.
//
// A resync still running is the resource's one reconcile in flight: it
// becomes the reconcile task for the new generation in place (keeping its
// claim, so nothing else of the resource starts beside its handler), and
// runs again when its superseded result comes back.
var scheduleReconcileSQL = `
	WITH running_resync AS (
	    SELECT t.id, t.resource_id FROM tasks t JOIN resources r ON r.id = t.resource_id
	    WHERE r.id = ANY($1::bigint[]) AND t.trigger = 'resync' AND t.claimed_by IS NOT NULL
	      AND t.generation <> r.generation AND NOT ` + otherReconcileTask + `
	), moved AS (
	    UPDATE tasks t SET generation = r.generation,
	        trigger = CASE WHEN t.id IN (SELECT id FROM running_resync)
	                       THEN converge_reconcile_trigger(r, 'specChange') ELSE t.trigger END,
	        kind_version = CASE WHEN t.id IN (SELECT id FROM running_resync) THEN r.kind_version ELSE t.kind_version END
	    FROM resources r
	    WHERE r.id = ANY($1::bigint[]) AND t.resource_id = r.id
	      AND t.trigger IN ('childrenSettled', 'resync') AND t.generation <> r.generation
	)` + queueReconcile(`resources r`, `r.id = ANY($1::bigint[]) AND r.id NOT IN (SELECT resource_id FROM running_resync)`) + `
	ON CONFLICT (resource_id, trigger, key) DO UPDATE SET
	    generation = EXCLUDED.generation,
	    kind_version = EXCLUDED.kind_version,
	    attempts = 0,
	    not_before = now(),
	    traceparent = EXCLUDED.traceparent
	WHERE tasks.generation <> EXCLUDED.generation OR tasks.kind_version <> EXCLUDED.kind_version`

// dropTasks is the tail of a statement that drops a resource's queued
// work (the tasks matching from, e.g. "WHERE t.resource_id = $1"): its
// pending operations fail with message, and reactor deliveries about the
// resource stay, since they belong to their reactor.
func dropTasks(from, message string) string {
	return `dropped AS (
	    DELETE FROM tasks t ` + from + ` AND t.trigger <> 'reactor'
	    RETURNING t.trigger, t.key)
	UPDATE operations SET state = 'failed', message = '` + strings.ReplaceAll(message, "'", "''") + `', finished_at = now()
	WHERE id IN (SELECT key FROM dropped WHERE trigger LIKE 'operation:%')`
}
