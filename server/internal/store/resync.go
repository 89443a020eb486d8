package store

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
)

// Drift detection. A kind that opts in gives each of its settled
// resources a resync_at; the partial index resources_resync holds only
// those, so kinds that do not opt in cost nothing: no row, no scan.

// QueueResyncs queues a resync task for up to limit resources whose
// resync is due, and clears their resync_at (the result sets the next
// one). A resource that is not settled, or already has reconcile work
// queued, is skipped: the reconcile that settles it schedules its next
// resync. It returns how many resources were due.
func (s *Store) QueueResyncs(ctx context.Context, limit int) (int, error) {
	var n int
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		return tx.QueryRow(ctx, `
			WITH due AS (
			    SELECT id FROM resources WHERE resync_at <= now()
			    ORDER BY resync_at LIMIT $1
			    FOR NO KEY UPDATE SKIP LOCKED
			), cleared AS (
			    UPDATE resources r SET resync_at = NULL FROM due WHERE r.id = due.id
			    RETURNING r.*
			), queued AS (
			    INSERT INTO tasks (resource_id, trigger, kind, kind_version, shard, generation)
			    SELECT r.id, converge_reconcile_trigger(r, 'resync'), r.kind, r.kind_version, r.shard, r.generation
			    FROM cleared r
			    WHERE converge_observable(r)
			      AND NOT EXISTS (SELECT 1 FROM tasks t WHERE t.resource_id = r.id AND t.trigger IN ('specChange', 'observe'))
			    ORDER BY r.id
			    ON CONFLICT (resource_id, trigger, key) DO NOTHING
			)
			SELECT count(*) FROM cleared`, limit).Scan(&n)
	})
	return n, err
}

// scheduleResyncs gives every settled resource of a kind version its next
// resync, spread over one interval so they do not all come due at once
// (interval for managed resources, observe for observed ones), or clears
// it where the interval is 0. It runs when the kind's resync policy
// changes: the one time such a change touches every resource of the kind.
func scheduleResyncs(ctx context.Context, tx pgx.Tx, kind string, version int32, interval, observe time.Duration) error {
	_, err := tx.Exec(ctx, `UPDATE resources r
		SET resync_at = CASE WHEN e.every > 0 AND converge_observable(r)
		                     THEN now() + random() * e.every * interval '1 millisecond' END
		FROM (SELECT r2.id, CASE WHEN converge_observed(r2) THEN $4::bigint ELSE $3::bigint END AS every
		      FROM resources r2 WHERE r2.kind = $1 AND r2.kind_version = $2) e
		WHERE r.id = e.id AND (e.every > 0 AND converge_observable(r) OR r.resync_at IS NOT NULL)`,
		kind, version, interval.Milliseconds(), observe.Milliseconds())
	return err
}
