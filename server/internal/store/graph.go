package store

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
)

// InternalTask is a claimed rollup, gate or teardown. Its Generation counts
// wake-ups: it finishes only if no wake-up came in since the claim.
type InternalTask struct {
	Lease
	Trigger    string
	ResourceID int64
	Kind       string
	Version    int32
	// TraceParent is the W3C traceparent of the change that woke the
	// task ('' when it was not traced).
	TraceParent string
}

// ClaimInternal claims up to n internal tasks, oldest first.
func (s *Store) ClaimInternal(ctx context.Context, member string, lease time.Duration, n int) ([]InternalTask, error) {
	rows, err := s.relaxedDB(ctx).Query(ctx, `
		WITH picked AS (
		    SELECT id FROM tasks
		    WHERE claimed_by IS NULL AND trigger IN ('rollup', 'gate', 'teardown') AND not_before <= now()
		    ORDER BY not_before LIMIT $3
		    FOR UPDATE SKIP LOCKED
		)
		UPDATE tasks t SET claimed_by = $1, claimed_at = now(), epoch = t.epoch + 1 + floor(random() * 1e12)::bigint,
		    lease_expires_at = now() + $2 * interval '1 millisecond'
		FROM picked WHERE t.id = picked.id
		RETURNING t.id, t.epoch, t.generation, t.trigger, t.resource_id, t.kind, t.kind_version, coalesce(t.traceparent, '')`,
		member, lease.Milliseconds(), n)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (InternalTask, error) {
		var t InternalTask
		err := row.Scan(&t.TaskID, &t.Epoch, &t.Generation, &t.Trigger, &t.ResourceID, &t.Kind, &t.Version, &t.TraceParent)
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
	err := tx.QueryRow(ctx, `SELECT `+lockedColumns+` FROM resources r WHERE id = $1 FOR NO KEY UPDATE`, id).Scan(dest...)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	return err == nil, err
}

const lockedColumns = `namespace, kind, kind_version, name, generation, synced_generation,
	deletion_requested_at IS NOT NULL, deletion_policy, subtree, quarantined, converge_observed(r)`

type lockedRow struct {
	namespace, kind, name string
	version               int32
	generation, synced    int64
	deleting              bool
	deletionPolicy        string
	subtree               string
	quarantined           bool
	observed              bool
}

func (r *lockedRow) dest() []any {
	return []any{&r.namespace, &r.kind, &r.version, &r.name, &r.generation, &r.synced, &r.deleting, &r.deletionPolicy, &r.subtree, &r.quarantined, &r.observed}
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
// rollup state (which the phase function reads). Settled children of a
// composite whose kind projects them (settles: a childrenSettled reaction)
// are "settling", not "ready", until that reaction has run: a reader
// waiting for Ready (apply --wait) must find the projected status there.
// The tasks_settled trigger makes it "ready" when that task goes.
func (c RollupCounts) subtree(settles bool) string {
	switch {
	case c.Failed > 0:
		return "failed"
	case c.Degraded > 0:
		return "degraded"
	case c.Reconciling > 0 || c.Deleting > 0:
		return "pending"
	case settles:
		return "settling"
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
		// The counts are kept as the children change (the rows the
		// triggers wrote since the last rollup are folded in here), so a
		// rollup reads what changed, not every child.
		err = tx.QueryRow(ctx, `
			SELECT coalesce(sum(n) FILTER (WHERE phase NOT IN ('Orphaned', 'Quarantined')), 0),
			       coalesce(sum(n) FILTER (WHERE phase = 'Ready'), 0),
			       coalesce(sum(n) FILTER (WHERE phase = 'Reconciling'), 0),
			       coalesce(sum(n) FILTER (WHERE phase = 'Degraded'), 0),
			       coalesce(sum(n) FILTER (WHERE phase = 'Failed'), 0),
			       coalesce(sum(n) FILTER (WHERE phase = 'Deleting'), 0),
			       coalesce(sum(n) FILTER (WHERE phase IN ('Orphaned', 'Quarantined')), 0)
			FROM converge_child_counts_fold($1)`, t.ResourceID).Scan(
			&c.Total, &c.Ready, &c.Reconciling, &c.Degraded, &c.Failed, &c.Deleting, &c.Excluded)
		if err != nil {
			return err
		}
		counts, _ := json.Marshal(c)
		sub := c.subtree(settledReaction && !r.deleting)
		// Counts unchanged and already settled is not a change: settling
		// again would re-run childrenSettled for nothing.
		tag, err := tx.Exec(ctx, `UPDATE resources SET subtree = $2, rollup = $3, resource_version = resource_version + 1,
			updated_at = now() WHERE id = $1 AND (rollup IS DISTINCT FROM $3::jsonb
			    OR (subtree <> $2 AND NOT (subtree = 'ready' AND $2 = 'settling')))`,
			t.ResourceID, sub, counts)
		if err != nil {
			return err
		}
		// A childrenSettled task already running projects the children as
		// they were: queued again, it takes a new epoch, so that answer is
		// fenced off and cannot end the hold; the new one projects these.
		// It is new work, so it takes a new id too, which its dedup token
		// carries: the run in flight may complete its side effects, and
		// the next run must not look like a redelivery of it.
		if settledReaction && sub != "pending" && tag.RowsAffected() > 0 && !r.deleting {
			if _, err := tx.Exec(ctx, `
				INSERT INTO tasks (resource_id, trigger, kind, kind_version, shard, generation)
				SELECT id, 'childrenSettled', kind, kind_version, shard, generation FROM resources WHERE id = $1
				ON CONFLICT (resource_id, trigger, key) DO UPDATE SET id = DEFAULT, generation = EXCLUDED.generation, not_before = now(),
				    epoch = tasks.epoch + 1, claimed_by = NULL, lease_expires_at = NULL`,
				t.ResourceID); err != nil {
				return err
			}
		}
		return finishInternal(ctx, tx, t)
	})
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
