package store

import (
	"context"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"

	"github.com/convergehq/converge/server/internal/trigger"
)

// Management policy: a resource is managed in full or only observed. The
// rule that combines a resource's own policy with its kind version's is
// converge_observed (functions.sql), and the queue asks it for the
// trigger of every reconcile it queues (converge_reconcile_trigger); this
// file only moves work over when a policy changes.

// reconcileTriggers are the triggers of a resource's own reconcile work
// that a policy change replaces.
var reconcileTriggers = []string{trigger.SpecChange, trigger.Resync, trigger.Observe}

// requeueReconcile replaces the queued reconcile work of the resources ids
// (ascending) with one task each at its current generation, under the
// trigger its management policy gives it now, unless something holds it.
// A task already running is left to finish, and its result counts,
// unless running is set (a policy change): then its result, about the old
// policy, must not count, yet the handler is still running, so the task
// keeps its claim (and with it its max_inflight slot and the resource's
// one reconcile in flight) and is moved to the new trigger at generation
// 0, which no lease carries: its result is superseded and the task runs
// again under the new policy (releaseSupersededSQL). Resyncs start over
// from the next result.
func requeueReconcile(ctx context.Context, tx pgx.Tx, ids []int64, running bool) error {
	batch := &pgx.Batch{}
	batch.Queue(`DELETE FROM tasks WHERE resource_id = ANY($1) AND trigger = ANY($2) AND key = ''
		AND claimed_by IS NULL`, ids, reconcileTriggers)
	if running {
		batch.Queue(`UPDATE resources SET resync_at = NULL WHERE id = ANY($1) AND resync_at IS NOT NULL`, ids)
		batch.Queue(`
			UPDATE tasks t SET trigger = converge_reconcile_trigger(r, 'specChange'), generation = 0
			FROM resources r
			WHERE r.id = ANY($1) AND t.resource_id = r.id AND t.trigger = ANY($2) AND t.key = ''
			  AND t.claimed_by IS NOT NULL AND NOT `+otherReconcileTask, ids, reconcileTriggers)
	}
	batch.Queue(`
		INSERT INTO tasks (resource_id, trigger, kind, kind_version, shard, generation)
		SELECT r.id, converge_reconcile_trigger(r, 'specChange'), r.kind, r.kind_version, r.shard, r.generation
		FROM resources r WHERE r.id = ANY($1) AND converge_hold(r) IS NULL
		  AND NOT ($2 AND EXISTS (SELECT 1 FROM tasks q WHERE q.resource_id = r.id AND q.key = ''
		                          AND q.trigger = ANY($3) AND q.claimed_by IS NOT NULL))
		ORDER BY r.id
		ON CONFLICT (resource_id, trigger, key) DO NOTHING`, ids, running, reconcileTriggers)
	return tx.SendBatch(ctx, batch).Close()
}

// policyName is how events name a management policy ("" is inherited).
func policyName(own, effective string) string {
	if own == "" {
		return effective + " (the kind's)"
	}
	return own
}

// SetManagementPolicy sets a resource's own management policy (full,
// observe, or "" for its kind version's), records a
// ManagementPolicyChanged event naming actor, reason and both policies,
// and runs its reconcile again under the new policy. changed is false
// when the resource already had that policy: nothing is recorded.
// observeReaction says whether the resource's kind version has an observe
// reaction; without one it may not be observed.
func (s *Store) SetManagementPolicy(ctx context.Context, actor string, key ResourceKey, policy, reason string, observeReaction func(kind string, version int32) bool) (r Resource, changed bool, err error) {
	err = s.inTx(ctx, func(tx pgx.Tx) error {
		changed = false
		row, err := lockForAction(ctx, tx, key)
		if err != nil {
			return err
		}
		var own, was string
		if err := tx.QueryRow(ctx, `SELECT r.management_policy, CASE WHEN converge_observed(r) THEN 'observe' ELSE 'full' END
			FROM resources r WHERE r.id = $1`, row.id).Scan(&own, &was); err != nil {
			return err
		}
		if own == policy {
			r, err = readResource(ctx, tx, row.id)
			return err
		}
		var is string
		if err := tx.QueryRow(ctx, `UPDATE resources r SET management_policy = $2, resource_version = r.resource_version + 1,
			updated_at = now() WHERE r.id = $1
			RETURNING CASE WHEN converge_observed(r) THEN 'observe' ELSE 'full' END`, row.id, policy).Scan(&is); err != nil {
			return err
		}
		if is == trigger.PolicyObserve && !observeReaction(row.kind, row.kindVersion) {
			return conflictf("management_policy: %s v%d has no observe reaction, so %s cannot be observed (rule M26)", row.kind, row.kindVersion, row)
		}
		changed = true
		msg := withReason(fmt.Sprintf("management policy %s -> %s", policyName(own, was), policyName(policy, is)), reason)
		if err := insertEvent(ctx, tx, row, "Normal", "ManagementPolicyChanged", msg, actor); err != nil {
			return err
		}
		if was != is {
			if err := requeueReconcile(ctx, tx, []int64{row.id}, true); err != nil {
				return err
			}
		}
		r, err = readResource(ctx, tx, row.id)
		return err
	})
	return r, changed, err
}

// policyChange is an apply's change of a resource's own management
// policy: from and to its own, and what it was and is managed by.
type policyChange struct {
	id, generation          int64
	at                      ApplyInput
	fromOwn, toOwn          string
	wasObserved, isObserved bool
}

func effective(observed bool) string {
	if observed {
		return trigger.PolicyObserve
	}
	return trigger.PolicyFull
}

// repolicyEvents records the ManagementPolicyChanged events of an apply's
// policy changes and returns the resources (ascending) whose effective
// policy moved, whose work requeueReconcile moves over.
func repolicyEvents(ev *eventBatch, changes []policyChange, actor string) []int64 {
	var moved []int64
	for _, c := range changes {
		was, is := effective(c.wasObserved), effective(c.isObserved)
		ev.add(c.id, c.at.Namespace, c.at.Kind, c.at.Name, c.generation, "Normal", "ManagementPolicyChanged",
			fmt.Sprintf("management policy %s -> %s", policyName(c.fromOwn, was), policyName(c.toOwn, is)), actor)
		if was != is {
			moved = append(moved, c.id)
		}
	}
	slices.Sort(moved)
	return moved
}

// repolicyKind moves the work of the resources that follow a kind
// version's management policy (their own is "") when it changes from was
// to is, and records a ManagementPolicyChanged event on each, naming actor.
func repolicyKind(ctx context.Context, tx pgx.Tx, kind string, version int32, was, is, actor string) error {
	if was == "" {
		was = trigger.PolicyFull
	}
	if is == "" {
		is = trigger.PolicyFull
	}
	if was == is {
		return nil
	}
	rows, err := tx.Query(ctx, `SELECT id FROM resources WHERE kind = $1 AND kind_version = $2 AND management_policy = ''
		ORDER BY id FOR NO KEY UPDATE`, kind, version)
	if err != nil {
		return err
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil || len(ids) == 0 {
		return err
	}
	msg := fmt.Sprintf("management policy %s -> %s: kind %s v%d changed its policy", was, is, kind, version)
	if _, err := tx.Exec(ctx, `
		INSERT INTO events (resource_id, namespace, kind, name, generation, type, reason, message, actor)
		SELECT id, namespace, kind, name, generation, 'Normal', 'ManagementPolicyChanged', $2, $3
		FROM resources WHERE id = ANY($1)`, ids, msg, actor); err != nil {
		return err
	}
	return requeueReconcile(ctx, tx, ids, true)
}
