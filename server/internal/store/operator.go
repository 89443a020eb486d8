package store

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/convergehq/converge/server/internal/trigger"
	"github.com/jackc/pgx/v5"
)

// Operator actions: quarantine, unquarantine and forced reconcile.
// Each locks the resource row first, changes it, and records an event with
// the actor and the operator's reason in the same transaction.

// QuarantineMessage is the message of an operation cancelled because its
// resource was quarantined before the operation ran.
const QuarantineMessage = "cancelled: the resource was quarantined"

// quarantinedTriggers are the triggers of work a quarantine drops while it
// waits for a worker: everything that would act on the resource, but not
// the server's own rollup, gate and teardown bookkeeping.
var quarantinedTriggers = []string{trigger.SpecChange, trigger.Resync, trigger.ChildrenSettled, trigger.Observe}

// actionRow is what an operator action reads of the resource it locks.
type actionRow struct {
	id                    int64
	namespace, kind, name string
	generation            int64
	phase                 string
	// hold is converge_hold's verdict: what holds the resource back from
	// reconcile work ("" when nothing does).
	hold           string
	quarantined    bool
	orphaned       bool
	waiting        *string
	failed         bool // any failure recorded, transient or terminal
	failureMessage *string
	kindVersion    int32
}

func (r actionRow) String() string { return r.namespace + "/" + r.kind + "/" + r.name }

// lockForAction locks a resource row by identity (FOR NO KEY UPDATE) and
// reads what the actions decide on.
func lockForAction(ctx context.Context, tx pgx.Tx, key ResourceKey) (actionRow, error) {
	var r actionRow
	err := tx.QueryRow(ctx, `
		SELECT r.id, r.namespace, r.kind, r.name, r.generation, converge_phase(r), coalesce(converge_hold(r), ''),
		       r.quarantined, r.orphaned_until IS NOT NULL, r.waiting,
		       r.failure_message IS NOT NULL OR r.failure_terminal OR r.failure_attempts > 0,
		       r.failure_message, r.kind_version
		FROM resources r WHERE r.namespace = $1 AND r.kind = $2 AND r.name = $3
		FOR NO KEY UPDATE`, key.Namespace, key.Kind, key.Name).Scan(
		&r.id, &r.namespace, &r.kind, &r.name, &r.generation, &r.phase, &r.hold,
		&r.quarantined, &r.orphaned, &r.waiting, &r.failed, &r.failureMessage, &r.kindVersion)
	if errors.Is(err, pgx.ErrNoRows) {
		return r, notFoundf("resource %s/%s/%s not found", key.Namespace, key.Kind, key.Name)
	}
	return r, err
}

// readResource reads one resource by id, as the API shows it.
func readResource(ctx context.Context, tx pgx.Tx, id int64) (Resource, error) {
	return scanResource(tx.QueryRow(ctx, `SELECT `+resourceColumns(false)+`
		FROM resources r `+resourceJoins+` WHERE r.id = $1`, id))
}

// withReason appends the operator's reason to an event message.
func withReason(msg, reason string) string {
	if reason == "" {
		return msg
	}
	return msg + ": " + reason
}

// QuarantineResource freezes a resource: no work runs for it, and its
// ancestors stop counting or waiting for it. Work queued for it that has
// not started is dropped (an operation among it fails with
// QuarantineMessage); a task already running is left to finish. An
// orphan may be quarantined: the quarantine replaces its grace period.
// Quarantining a quarantined resource changes nothing and records
// nothing; changed reports whether this call quarantined it.
//
// A resource whose teardown keeps failing may be quarantined too:
// its queued teardown is dropped, and the teardown of its owner and of
// what it depends on goes on without it. It stays, Deleting, until it is
// removed with its owner or unquarantined (which resumes its teardown).
func (s *Store) QuarantineResource(ctx context.Context, actor string, key ResourceKey, reason string) (r Resource, changed bool, err error) {
	err = s.inTx(ctx, func(tx pgx.Tx) error {
		changed = false
		row, err := lockForAction(ctx, tx, key)
		if err != nil {
			return err
		}
		if !row.quarantined {
			changed = true
			if err := quarantine(ctx, tx, row, actor, reason); err != nil {
				return err
			}
		}
		r, err = readResource(ctx, tx, row.id)
		return err
	})
	return r, changed, err
}

func quarantine(ctx context.Context, tx pgx.Tx, row actionRow, actor, reason string) error {
	if _, err := tx.Exec(ctx, `UPDATE resources SET quarantined = true, orphaned_until = NULL,
		resource_version = resource_version + 1, updated_at = now() WHERE id = $1`, row.id); err != nil {
		return err
	}
	var dropped []string
	var cancelled int
	err := tx.QueryRow(ctx, `
		WITH dropped AS (
		    DELETE FROM tasks
		    WHERE resource_id = $1 AND claimed_by IS NULL
		      AND (trigger = ANY($2::text[]) OR starts_with(trigger, $3)
		           OR ($5 AND trigger IN ('deleteRequested', 'teardown')))
		    RETURNING trigger, key
		), cancelled AS (
		    UPDATE operations o SET state = 'failed', message = $4, finished_at = now()
		    FROM dropped d
		    WHERE starts_with(d.trigger, $3) AND o.id = d.key AND o.state IN ('pending', 'running')
		    RETURNING o.id
		)
		SELECT coalesce((SELECT array_agg(trigger ORDER BY trigger) FROM dropped), '{}'),
		       (SELECT count(*) FROM cancelled)`,
		row.id, quarantinedTriggers, trigger.OperationPrefix, QuarantineMessage, row.hold == HoldDeleting).Scan(&dropped, &cancelled)
	if err != nil {
		return err
	}
	if row.hold == HoldDeleting {
		if _, err := tx.Exec(ctx, `
			SELECT converge_wake(array_agg(DISTINCT x.id), 'teardown')
			FROM (SELECT owner_id AS id FROM resources WHERE id = $1 AND owner_id IS NOT NULL
			      UNION SELECT dependency_id FROM edges WHERE dependent_id = $1) x
			JOIN resources r ON r.id = x.id AND r.deletion_requested_at IS NOT NULL
			HAVING count(*) > 0`, row.id); err != nil {
			return err
		}
	}
	msg := withReason("quarantined", reason)
	if row.orphaned {
		msg += "; the quarantine replaces its orphan grace period"
	}
	if row.hold == HoldDeleting {
		msg += "; its teardown stops, and its owner's and dependencies' teardown go on without it"
	}
	if len(dropped) > 0 {
		msg += fmt.Sprintf("; dropped %d queued task(s): %s", len(dropped), strings.Join(dropped, ", "))
	}
	if cancelled > 0 {
		msg += fmt.Sprintf("; %d operation(s) %s", cancelled, QuarantineMessage)
	}
	return insertEvent(ctx, tx, row, "Warning", "Quarantined", msg, actor)
}

// insertEvent records one event about a locked resource.
func insertEvent(ctx context.Context, tx pgx.Tx, row actionRow, typ, reason, msg, actor string) error {
	ev := newEventBatch()
	ev.add(row.id, row.namespace, row.kind, row.name, row.generation, typ, reason, msg, actor)
	batch := &pgx.Batch{}
	ev.queue(batch)
	return tx.SendBatch(ctx, batch).Close()
}

// UnquarantineResource lets a quarantined resource run again. If it has a
// generation it has not observed, its reconcile is queued (unless the
// gate or a terminal failure holds it, as for any other resource); if it
// is being deleted, its teardown resumes. queued reports whether work was
// queued.
func (s *Store) UnquarantineResource(ctx context.Context, actor string, key ResourceKey, reason string) (r Resource, queued bool, err error) {
	err = s.inTx(ctx, func(tx pgx.Tx) error {
		queued = false
		row, err := lockForAction(ctx, tx, key)
		if err != nil {
			return err
		}
		if !row.quarantined {
			return conflictf("%s is not quarantined (phase %s)", row, row.phase)
		}
		if _, err := tx.Exec(ctx, `UPDATE resources SET quarantined = false,
			resource_version = resource_version + 1, updated_at = now() WHERE id = $1`, row.id); err != nil {
			return err
		}
		msg := withReason("unquarantined", reason)
		if row.hold == HoldDeleting {
			if _, err := tx.Exec(ctx, `SELECT converge_wake(ARRAY[$1::bigint], 'teardown')`, row.id); err != nil {
				return err
			}
			queued = true
			msg += "; its teardown resumes"
		} else {
			tag, err := tx.Exec(ctx, scheduleReconcileSQL, []int64{row.id})
			if err != nil {
				return err
			}
			if queued = tag.RowsAffected() > 0; queued {
				msg += fmt.Sprintf("; generation %d queued for reconcile", row.generation)
			} else if queued, err = recomposeComposite(ctx, tx, row.id); err != nil {
				return err
			} else if queued {
				msg += fmt.Sprintf("; its composer runs again at generation %d", row.generation)
			}
		}
		if err := insertEvent(ctx, tx, row, "Normal", "Unquarantined", msg, actor); err != nil {
			return err
		}
		r, err = readResource(ctx, tx, row.id)
		return err
	})
	return r, queued, err
}

// recomposeComposite queues the composer of a composite (a resource that
// has composed: its subtree is set) at its generation: while it was
// quarantined its children may have gone, and the recompose their going
// asks for was not queued for a held composite.
func recomposeComposite(ctx context.Context, tx pgx.Tx, id int64) (bool, error) {
	tag, err := tx.Exec(ctx, `SELECT converge_recompose(ARRAY[id]) FROM resources WHERE id = $1 AND subtree <> 'none'`, id)
	if err != nil || tag.RowsAffected() == 0 {
		return false, err
	}
	var queued bool
	err = tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM tasks WHERE resource_id = $1 AND trigger IN ('specChange', 'observe'))`, id).Scan(&queued)
	return queued, err
}

// ReconcileResource forces a reconcile at the resource's current
// generation, even when it is synced or failed terminally: it clears any
// recorded failure and queues its specChange task to run now with a fresh
// attempt count. A task already running keeps its claim; its result
// counts for this request. Refused for a quarantined, orphaned or deleting
// resource, and for one the dependency gate holds.
func (s *Store) ReconcileResource(ctx context.Context, actor string, key ResourceKey, reason string) (Resource, error) {
	var r Resource
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		row, err := lockForAction(ctx, tx, key)
		if err != nil {
			return err
		}
		// A forced reconcile lifts the hold of a terminal failure (that is
		// what it is for) but no other.
		switch row.hold {
		case HoldDeleting:
			return conflictf("%s is being deleted; only its teardown runs now", row)
		case HoldQuarantined:
			return conflictf("%s is quarantined: unquarantine it first", row)
		case HoldOrphaned:
			return conflictf("%s is orphaned: its composite no longer emits it; it is torn down when its grace ends", row)
		case HoldWaiting:
			return conflictf("%s is held by its dependency gate: %s; it reconciles once that clears", row, *row.waiting)
		}
		msg := withReason(fmt.Sprintf("reconcile forced at generation %d", row.generation), reason)
		if row.failed {
			if _, err := tx.Exec(ctx, `UPDATE resources SET failure_generation = 0, failure_terminal = false,
				failure_attempts = 0, failure_message = NULL, failure_reason = NULL, resource_version = resource_version + 1,
				updated_at = now() WHERE id = $1`, row.id); err != nil {
				return err
			}
			if row.failureMessage != nil {
				what := "failure"
				if row.hold == HoldFailed {
					what = "terminal failure"
				}
				msg += fmt.Sprintf("; cleared the %s: %s", what, *row.failureMessage)
			}
		}
		// A queued task is replaced, not re-armed: the forced run is a new
		// piece of work, with a new task id and so a new dedup token. A
		// running one is left as it is: it is the forced run, its result
		// counts, and its attempt count stands, so a retry after it is the
		// next attempt, never one already run under the same token.
		if err := requeueReconcile(ctx, tx, []int64{row.id}, false); err != nil {
			return err
		}
		if err := insertEvent(ctx, tx, row, "Normal", "ReconcileRequested", msg, actor); err != nil {
			return err
		}
		r, err = readResource(ctx, tx, row.id)
		return err
	})
	return r, err
}
