package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// InternalTask is a claimed rollup, gate or teardown. Its Generation counts
// wake-ups: it finishes only if no wake-up came in since the claim.
type InternalTask struct {
	Lease
	Trigger    string
	ResourceID int64
	Kind       string
	Version    int32
}

// ClaimInternal claims up to n internal tasks, oldest first.
func (s *Store) ClaimInternal(ctx context.Context, member string, lease time.Duration, n int) ([]InternalTask, error) {
	rows, err := s.relaxed.Query(ctx, `
		WITH picked AS (
		    SELECT id FROM tasks
		    WHERE claimed_by IS NULL AND trigger IN ('rollup', 'gate', 'teardown') AND not_before <= now()
		    ORDER BY not_before LIMIT $3
		    FOR UPDATE SKIP LOCKED
		)
		UPDATE tasks t SET claimed_by = $1, claimed_at = now(), epoch = t.epoch + 1 + floor(random() * 1e12)::bigint,
		    lease_expires_at = now() + $2 * interval '1 millisecond'
		FROM picked WHERE t.id = picked.id
		RETURNING t.id, t.epoch, t.generation, t.trigger, t.resource_id, t.kind, t.kind_version`,
		member, lease.Milliseconds(), n)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (InternalTask, error) {
		var t InternalTask
		err := row.Scan(&t.TaskID, &t.Epoch, &t.Generation, &t.Trigger, &t.ResourceID, &t.Kind, &t.Version)
		return t, err
	})
}

// finishInternal removes a done internal task, unless it was woken again
// while it ran: then it goes back to run once more.
func finishInternal(ctx context.Context, tx pgx.Tx, t InternalTask) error {
	tag, err := tx.Exec(ctx, `DELETE FROM tasks WHERE id = $1 AND epoch = $2 AND generation = $3`, t.TaskID, t.Epoch, t.Generation)
	if err != nil || tag.RowsAffected() == 1 {
		return err
	}
	_, err = tx.Exec(ctx, `UPDATE tasks SET claimed_by = NULL, lease_expires_at = NULL, not_before = now()
		WHERE id = $1 AND epoch = $2`, t.TaskID, t.Epoch)
	return err
}

// lockResource locks a resource row for an internal task and reports
// whether it still exists.
func lockResource(ctx context.Context, tx pgx.Tx, id int64, dest ...any) (bool, error) {
	err := tx.QueryRow(ctx, `SELECT `+lockedColumns+` FROM resources WHERE id = $1 FOR NO KEY UPDATE`, id).Scan(dest...)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	return err == nil, err
}

const lockedColumns = `namespace, kind, kind_version, name, generation, synced_generation,
	deletion_requested_at IS NOT NULL, deletion_policy, subtree`

type lockedRow struct {
	namespace, kind, name string
	version               int32
	generation, synced    int64
	deleting              bool
	deletionPolicy        string
	subtree               string
}

func (r *lockedRow) dest() []any {
	return []any{&r.namespace, &r.kind, &r.version, &r.name, &r.generation, &r.synced, &r.deleting, &r.deletionPolicy, &r.subtree}
}

// RollupCounts are a composite's children by phase.
type RollupCounts struct {
	Total       int `json:"total"`
	Ready       int `json:"ready"`
	Reconciling int `json:"reconciling"`
	Degraded    int `json:"degraded"`
	Failed      int `json:"failed"`
	Deleting    int `json:"deleting"`
	Excluded    int `json:"excluded"`
}

// subtree is the one rule turning child counts into the composite's
// rollup state (which the phase function reads).
func (c RollupCounts) subtree() string {
	switch {
	case c.Failed > 0:
		return "failed"
	case c.Degraded > 0:
		return "degraded"
	case c.Reconciling > 0 || c.Deleting > 0:
		return "pending"
	}
	return "ready"
}

// Rollup recomputes a composite's rollup from its children. When the
// composite's kind has a childrenSettled reaction and the children have
// settled, it queues that reaction.
func (s *Store) Rollup(ctx context.Context, t InternalTask, settledReaction bool) error {
	return s.inTx(ctx, func(tx pgx.Tx) error {
		var r lockedRow
		ok, err := lockResource(ctx, tx, t.ResourceID, r.dest()...)
		if err != nil || !ok {
			if err == nil {
				err = finishInternal(ctx, tx, t)
			}
			return err
		}
		var c RollupCounts
		err = tx.QueryRow(ctx, `
			SELECT count(*) FILTER (WHERE phase NOT IN ('Orphaned', 'Quarantined')),
			       count(*) FILTER (WHERE phase = 'Ready'),
			       count(*) FILTER (WHERE phase = 'Reconciling'),
			       count(*) FILTER (WHERE phase = 'Degraded'),
			       count(*) FILTER (WHERE phase = 'Failed'),
			       count(*) FILTER (WHERE phase = 'Deleting'),
			       count(*) FILTER (WHERE phase IN ('Orphaned', 'Quarantined'))
			FROM (SELECT converge_phase(r) AS phase FROM resources r WHERE r.owner_id = $1) c`, t.ResourceID).Scan(
			&c.Total, &c.Ready, &c.Reconciling, &c.Degraded, &c.Failed, &c.Deleting, &c.Excluded)
		if err != nil {
			return err
		}
		counts, _ := json.Marshal(c)
		sub := c.subtree()
		tag, err := tx.Exec(ctx, `UPDATE resources SET subtree = $2, rollup = $3, resource_version = resource_version + 1,
			updated_at = now() WHERE id = $1 AND (subtree <> $2 OR rollup IS DISTINCT FROM $3::jsonb)`,
			t.ResourceID, sub, counts)
		if err != nil {
			return err
		}
		if settledReaction && sub != "pending" && tag.RowsAffected() > 0 && !r.deleting {
			if _, err := tx.Exec(ctx, `
				INSERT INTO tasks (resource_id, trigger, kind, kind_version, shard, generation)
				SELECT id, 'childrenSettled', kind, kind_version, shard, generation FROM resources WHERE id = $1
				ON CONFLICT (resource_id, trigger, key) DO UPDATE SET generation = EXCLUDED.generation, not_before = now()`,
				t.ResourceID); err != nil {
				return err
			}
		}
		return finishInternal(ctx, tx, t)
	})
}

// GateInput is what the gate sees of a dependent and its dependencies.
type GateInput struct {
	ID       int64
	Kind     string
	Version  int32
	Name     string
	Spec     []byte // the desired spec, before flows
	Current  []byte // the spec as it stands
	Deps     []GateDep
	Deleting bool
}

// GateDep is one dependency of a dependent.
type GateDep struct {
	Ref      Ref
	Phase    string
	Synced   bool
	Deleting bool
	Status   []byte
	Spec     []byte
	Flows    []byte // JSON array of {"from"|"expr", "to"}
}

// GateDecision is the gate's verdict: open with a new effective spec, or
// waiting with a reason.
type GateDecision struct {
	// Waiting, when set, holds the dependent with this reason.
	Waiting string
	// Spec is the effective spec (desired plus flow values) when open.
	Spec []byte
}

// Gates checks dependents' dependencies and value flows, all in one
// transaction: decide runs with the dependents locked. A dependent whose
// gate opens takes the flowed values into its spec (a change bumps its
// generation) and is scheduled. It returns how many were scheduled.
func (s *Store) Gates(ctx context.Context, ts []InternalTask, decide func(GateInput) GateDecision) (scheduled int, err error) {
	ids := make([]int64, len(ts))
	for i, t := range ts {
		ids[i] = t.ResourceID
	}
	err = s.inTx(ctx, func(tx pgx.Tx) error {
		scheduled = 0
		rows, err := tx.Query(ctx, `SELECT id, kind, kind_version, name, coalesce(desired_spec, spec), spec, waiting
			FROM resources WHERE id = ANY($1::bigint[]) AND deletion_requested_at IS NULL
			ORDER BY id FOR NO KEY UPDATE`, ids)
		if err != nil {
			return err
		}
		inputs := map[int64]*GateInput{}
		waiting := map[int64]*string{}
		var order []int64
		for rows.Next() {
			in := &GateInput{}
			var w *string
			if err := rows.Scan(&in.ID, &in.Kind, &in.Version, &in.Name, &in.Spec, &in.Current, &w); err != nil {
				rows.Close()
				return err
			}
			inputs[in.ID], waiting[in.ID] = in, w
			order = append(order, in.ID)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		rows, err = tx.Query(ctx, `
			SELECT e.dependent_id, d.namespace, d.kind, d.name, converge_phase(d), converge_synced(d),
			       d.deletion_requested_at IS NOT NULL, d.status, d.spec, e.flows
			FROM edges e JOIN resources d ON d.id = e.dependency_id
			WHERE e.dependent_id = ANY($1::bigint[]) ORDER BY e.dependent_id, d.id`, order)
		if err != nil {
			return err
		}
		for rows.Next() {
			var id int64
			var d GateDep
			if err := rows.Scan(&id, &d.Ref.Namespace, &d.Ref.Kind, &d.Ref.Name, &d.Phase, &d.Synced, &d.Deleting, &d.Status, &d.Spec, &d.Flows); err != nil {
				rows.Close()
				return err
			}
			inputs[id].Deps = append(inputs[id].Deps, d)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		var waitIDs, openIDs []int64
		var waitWhy []string
		var specs [][]byte
		for _, id := range order {
			dec := decide(*inputs[id])
			if dec.Waiting != "" {
				if w := waiting[id]; w == nil || *w != dec.Waiting {
					waitIDs, waitWhy = append(waitIDs, id), append(waitWhy, truncate(dec.Waiting, maxFailureMessage))
				}
				continue
			}
			openIDs, specs = append(openIDs, id), append(specs, dec.Spec)
		}
		batch := &pgx.Batch{}
		if len(waitIDs) > 0 {
			batch.Queue(`UPDATE resources r SET waiting = w.why, resource_version = r.resource_version + 1, updated_at = now()
				FROM unnest($1::bigint[], $2::text[]) AS w(id, why) WHERE r.id = w.id`, waitIDs, waitWhy)
		}
		if len(openIDs) > 0 {
			batch.Queue(recordAsSQL, SourceFlow, "system")
			batch.Queue(`
				UPDATE resources r SET
				    generation = r.generation + CASE WHEN r.spec <> o.spec THEN 1 ELSE 0 END,
				    spec = o.spec, waiting = NULL,
				    resource_version = r.resource_version + 1, updated_at = now()
				FROM unnest($1::bigint[], $2::jsonb[]) AS o(id, spec)
				WHERE r.id = o.id AND (r.spec <> o.spec OR r.waiting IS NOT NULL)`, openIDs, specs)
			batch.Queue(scheduleReconcileSQL, openIDs).Exec(func(tag pgconn.CommandTag) error {
				scheduled = int(tag.RowsAffected())
				return nil
			})
		}
		if batch.Len() > 0 {
			if err := tx.SendBatch(ctx, batch).Close(); err != nil {
				return err
			}
		}
		return finishInternalAll(ctx, tx, ts)
	})
	return scheduled, err
}

// finishInternalAll is finishInternal for a batch.
func finishInternalAll(ctx context.Context, tx pgx.Tx, ts []InternalTask) error {
	ids, epochs := splitLeases(leasesOf(ts))
	gens := make([]int64, len(ts))
	for i, t := range ts {
		gens[i] = t.Generation
	}
	_, err := tx.Exec(ctx, `
		WITH o AS (SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::bigint[]) AS o(id, epoch, generation)),
		done AS (
		    DELETE FROM tasks t USING o WHERE t.id = o.id AND t.epoch = o.epoch AND t.generation = o.generation
		    RETURNING t.id
		)
		UPDATE tasks t SET claimed_by = NULL, lease_expires_at = NULL, not_before = now()
		FROM o WHERE t.id = o.id AND t.epoch = o.epoch AND t.id NOT IN (SELECT id FROM done)`, ids, epochs, gens)
	return err
}

func leasesOf(ts []InternalTask) []Lease {
	out := make([]Lease, len(ts))
	for i, t := range ts {
		out[i] = t.Lease
	}
	return out
}

// TeardownPolicy says how a kind is torn down.
type TeardownPolicy struct {
	// Reaction: the kind has a deleteRequested reaction to run.
	Reaction bool
	// Retain: the kind's deletion policy is retain.
	Retain bool
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
		if !ok || !r.deleting {
			return finishInternal(ctx, tx, t)
		}
		// What goes first: its children, and its dependents that are
		// deleted with it. A dependent that came to depend on it after its
		// deletion began (a composer declaring the edge again) is held by
		// its gate until it is back, so it does not hold the teardown up.
		var blocked bool
		err = tx.QueryRow(ctx, `
			SELECT EXISTS (SELECT 1 FROM resources c WHERE c.owner_id = $1 AND NOT c.quarantined)
			    OR EXISTS (SELECT 1 FROM edges e JOIN resources d ON d.id = e.dependent_id
			               WHERE e.dependency_id = $1 AND d.deletion_requested_at IS NOT NULL AND NOT d.quarantined)`,
			t.ResourceID).Scan(&blocked)
		if err != nil {
			return err
		}
		if blocked {
			return finishInternal(ctx, tx, t)
		}
		p := policy(r.kind, r.version)
		retain := r.deletionPolicy == "retain" || (r.deletionPolicy == "" && p.Retain)
		if p.Reaction && !retain {
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
		if retain {
			reason = "forgotten without teardown: deletion policy retain"
		}
		if err := finishInternal(ctx, tx, t); err != nil {
			return err
		}
		return removeSubtree(ctx, tx, t.ResourceID, r, reason)
	})
	return queued, err
}

// removeSubtree deletes a resource and whatever is left under it (only
// quarantined descendants can be), their tasks with them, and records it.
func removeSubtree(ctx context.Context, tx pgx.Tx, id int64, r lockedRow, reason string) error {
	batch := &pgx.Batch{}
	batch.Queue(`
		WITH RECURSIVE sub(id) AS (
		    SELECT $1::bigint UNION SELECT c.id FROM resources c JOIN sub s ON c.owner_id = s.id
		), gone AS (
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
		WITH RECURSIVE doomed(id) AS (
		    SELECT unnest($1::bigint[])
		  UNION
		    SELECT x.id FROM doomed d CROSS JOIN LATERAL (
		        SELECT r.id FROM resources r WHERE r.owner_id = d.id
		        UNION ALL
		        SELECT e.dependent_id FROM edges e WHERE e.dependency_id = d.id) x
		)
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
		resource_version = resource_version + 1, updated_at = now()
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
