package store

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// TeardownPolicy says how a kind is torn down.
type TeardownPolicy struct {
	// Reaction: the kind has a deleteRequested reaction to run.
	Reaction bool
	// Retain: the kind's deletion policy is retain.
	Retain bool
}

// Teardown actions, as Action names them.
const (
	TeardownReaction = "reaction" // the kind's deleteRequested reaction runs
	TeardownRemove   = "remove"   // no teardown reaction: removed at once
	TeardownRetain   = "retain"   // deletion policy retain: forgotten
	TeardownObserved = "observed" // management policy observe: forgotten
)

// Action says how a resource of this kind whose own deletion policy is
// resourcePolicy ("" = the kind's) is torn down; observed says whether its
// management policy is observe (converge_observed): its external object
// is someone else's, so it is forgotten, never torn down.
func (p TeardownPolicy) Action(resourcePolicy string, observed bool) string {
	if observed {
		return TeardownObserved
	}
	if resourcePolicy == "retain" || (resourcePolicy == "" && p.Retain) {
		return TeardownRetain
	}
	if p.Reaction {
		return TeardownReaction
	}
	return TeardownRemove
}

// Teardown moves a deleting resource on once nothing that must go first
// is left: no child and no dependent (quarantined ones do not count).
// Then it either queues the kind's teardown reaction, or removes the
// resource at once (no teardown reaction, or deletion policy retain).
func (s *Store) Teardown(ctx context.Context, t InternalTask, policy func(kind string, version int32) TeardownPolicy) (queued bool, err error) {
	err = s.inTx(ctx, func(tx pgx.Tx) error {
		queued = false
		var r lockedRow
		ok, err := lockResource(ctx, tx, t.ResourceID, r.dest()...)
		if err != nil {
			return err
		}
		// A quarantined resource is frozen, its teardown too: it stays
		// Deleting until it is unquarantined (which wakes this again) or
		// removed with its owner.
		if !ok || !r.deleting || r.quarantined {
			return finishInternal(ctx, tx, t)
		}
		// What goes first: its children, and its dependents that are
		// deleted with it. A dependent that came to depend on it after its
		// deletion began (a composer declaring the edge again) is held by
		// its gate until it is back, so it does not hold the teardown up.
		var blocked bool
		err = tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM converge_goes_first($1))`, t.ResourceID).Scan(&blocked)
		if err != nil {
			return err
		}
		if blocked {
			return finishInternal(ctx, tx, t)
		}
		action := policy(r.kind, r.version).Action(r.deletionPolicy, r.observed)
		if action == TeardownReaction {
			tag, err := tx.Exec(ctx, `
				INSERT INTO tasks (resource_id, trigger, kind, kind_version, shard, generation)
				SELECT id, 'deleteRequested', kind, kind_version, shard, generation FROM resources WHERE id = $1
				ON CONFLICT (resource_id, trigger, key) DO NOTHING`, t.ResourceID)
			if err != nil {
				return err
			}
			queued = tag.RowsAffected() > 0
			return finishInternal(ctx, tx, t)
		}
		reason := "removed: the kind has no teardown reaction"
		switch action {
		case TeardownRetain:
			reason = "forgotten without teardown: deletion policy retain"
		case TeardownObserved:
			reason = "forgotten without teardown: management policy observe; the external object stays"
		}
		if err := finishInternal(ctx, tx, t); err != nil {
			return err
		}
		return removeSubtree(ctx, tx, t.ResourceID, r, reason)
	})
	return queued, err
}

// subtreeCTE is the recursive query sub(id): the resource root (an SQL
// expression) and everything it owns, transitively.
func subtreeCTE(root string) string {
	return `sub(id) AS (
	    SELECT ` + root + ` UNION SELECT c.id FROM resources c JOIN sub s ON c.owner_id = s.id
	)`
}

// doomedCTE is the recursive query doomed(id): what a deletion of the
// resources seeds selects takes with it, everything they own and
// everything that depends on them, transitively.
func doomedCTE(seeds string) string {
	return `doomed(id) AS (
	    ` + seeds + `
	  UNION
	    SELECT x.id FROM doomed d CROSS JOIN LATERAL (
	        SELECT r.id FROM resources r WHERE r.owner_id = d.id
	        UNION ALL
	        SELECT e.dependent_id FROM edges e WHERE e.dependency_id = d.id) x
	)`
}

// removeSubtree deletes a resource and whatever is left under it (only
// quarantined descendants can be), their tasks with them, and records it.
func removeSubtree(ctx context.Context, tx pgx.Tx, id int64, r lockedRow, reason string) error {
	batch := &pgx.Batch{}
	batch.Queue(`
		WITH RECURSIVE `+subtreeCTE(`$1::bigint`)+`, gone AS (
		    DELETE FROM resources WHERE id IN (SELECT id FROM sub) RETURNING id
		), `+dropTasks(`USING gone WHERE t.resource_id = gone.id`, "the resource was deleted"), id)
	ev := newEventBatch()
	ev.add(id, r.namespace, r.kind, r.name, r.generation, "Normal", "Deleted", reason, "system")
	ev.queue(batch)
	return tx.SendBatch(ctx, batch).Close()
}

// markForDeletion marks resources, everything they own and everything
// that depends on them (transitively) as deleting, drops their pending
// work, and wakes their teardown. It returns how many it marked.
//
// The walk repeats until it finds nothing new: a composer that held a
// descendant's lock while this one waited for it has committed children
// this statement's snapshot does not see, and the next walk, with a new
// snapshot, finds them (later composes of a deleting composite are
// dropped).
func markForDeletion(ctx context.Context, tx pgx.Tx, roots []int64, actor, reason string) (int, error) {
	total := 0
	for {
		n, err := markOnce(ctx, tx, roots, actor, reason)
		if err != nil || n == 0 {
			return total, err
		}
		total += n
	}
}

func markOnce(ctx context.Context, tx pgx.Tx, roots []int64, actor, reason string) (int, error) {
	rows, err := tx.Query(ctx, `
		WITH RECURSIVE `+doomedCTE(`SELECT unnest($1::bigint[])`)+`
		SELECT r.id FROM resources r JOIN doomed d ON d.id = r.id
		WHERE r.deletion_requested_at IS NULL
		ORDER BY r.id FOR NO KEY UPDATE OF r`, roots)
	if err != nil {
		return 0, err
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil || len(ids) == 0 {
		return 0, err
	}
	batch := &pgx.Batch{}
	batch.Queue(`UPDATE resources SET deletion_requested_at = now(), waiting = NULL,
		failure_generation = 0, failure_terminal = false, failure_attempts = 0, failure_message = NULL,
		failure_reason = NULL, resource_version = resource_version + 1, updated_at = now()
		WHERE id = ANY($1::bigint[]) AND deletion_requested_at IS NULL`, ids)
	batch.Queue(`WITH `+dropTasks(`WHERE t.resource_id = ANY($1::bigint[]) AND t.claimed_by IS NULL
		AND t.trigger NOT IN ('deleteRequested', 'teardown')`, "the resource is being deleted"), ids)
	batch.Queue(`SELECT converge_wake($1::bigint[], 'teardown')`, ids)
	batch.Queue(`
		INSERT INTO events (resource_id, namespace, kind, name, generation, type, reason, message, actor)
		SELECT r.id, r.namespace, r.kind, r.name, r.generation, 'Normal', 'DeletionRequested',
		       CASE WHEN r.id = ANY($2::bigint[]) THEN $3 ELSE 'deleted with ' || $4 END, $5
		FROM resources r WHERE r.id = ANY($1::bigint[])`,
		ids, roots, reason, describeRoots(ctx, tx, roots), actor)
	if err := tx.SendBatch(ctx, batch).Close(); err != nil {
		return 0, err
	}
	return len(ids), nil
}

// describeRoots names the resources a deletion started from, for events.
func describeRoots(ctx context.Context, tx pgx.Tx, roots []int64) string {
	var name string
	if err := tx.QueryRow(ctx, `SELECT kind || '/' || name FROM resources WHERE id = $1`, roots[0]).Scan(&name); err != nil {
		return "its owner or dependency"
	}
	if len(roots) > 1 {
		return fmt.Sprintf("%s and %d others", name, len(roots)-1)
	}
	return name
}

// ExpireOrphans deletes children whose orphan grace ran out (their
// composite stopped emitting them and did not take them back), through
// the usual teardown. It reports how many it marked.
func (s *Store) ExpireOrphans(ctx context.Context, limit int) (int, error) {
	var n int
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `SELECT id FROM resources
			WHERE orphaned_until < now() AND deletion_requested_at IS NULL
			ORDER BY orphaned_until LIMIT $1`, limit)
		if err != nil {
			return err
		}
		ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
		if err != nil || len(ids) == 0 {
			return err
		}
		n, err = markForDeletion(ctx, tx, ids, "system", "its orphan grace period ended")
		return err
	})
	return n, err
}
