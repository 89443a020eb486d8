package store

import (
	"context"
	"fmt"
	"time"

	"github.com/convergehq/converge/server/internal/trigger"
	"github.com/jackc/pgx/v5"
)

// Lapse says when a claim outlives its claimer: the member that holds it
// has not heartbeated within LiveWithin (or has no row at all), and the
// claim was last renewed more than LiveWithin ago. A claim is renewed to
// Lease from the renewal, so "renewed more than LiveWithin ago" reads
// lease_expires_at < now() + (Lease - LiveWithin). The second half lets a
// worker whose replica shut down cleanly (and deleted its row) resume its
// leases on another replica: the resume renews them.
type Lapse struct {
	// Lease is the brokers' lease window.
	Lease time.Duration
	// LiveWithin is how recent a member's heartbeat must be for it to count
	// as alive.
	LiveWithin time.Duration
}

// lapsedClaim is the one predicate for a lapsed claim of task t, with the
// lease window in $1 and the liveness window in $2 (milliseconds).
const lapsedClaim = `t.claimed_by IS NOT NULL
	AND t.lease_expires_at < now() + ($1::bigint - $2::bigint) * interval '1 millisecond'
	AND NOT EXISTS (SELECT 1 FROM members m
	                WHERE m.id = t.claimed_by AND m.heartbeat_at > now() - $2::bigint * interval '1 millisecond')`

// LapsedClaimers returns the members holding claims that lapsed, in id
// order.
func (s *Store) LapsedClaimers(ctx context.Context, l Lapse) ([]string, error) {
	rows, err := s.db(ctx).Query(ctx, `SELECT DISTINCT t.claimed_by FROM tasks t WHERE `+lapsedClaim+` ORDER BY 1`,
		l.Lease.Milliseconds(), l.LiveWithin.Milliseconds())
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}

// ReleaseLapsedClaims returns to the queue up to limit tasks whose claims,
// held by one of claimers, lapsed (checked again as it runs, so a claimer
// that came back keeps its claims), records a ClaimerGone event for each,
// and reports how many it released. Rows locked by another transaction are
// skipped until the next call.
func (s *Store) ReleaseLapsedClaims(ctx context.Context, claimers []string, l Lapse, limit int) (int, error) {
	if len(claimers) == 0 {
		return 0, nil
	}
	var n int
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `
			WITH lapsed AS (
			    SELECT t.id, t.resource_id, t.claimed_by FROM tasks t
			    WHERE t.claimed_by = ANY($3::text[]) AND `+lapsedClaim+`
			    ORDER BY t.id LIMIT $4
			    FOR UPDATE OF t SKIP LOCKED
			)
			UPDATE tasks t SET claimed_by = NULL, lease_expires_at = NULL
			FROM lapsed LEFT JOIN resources r ON r.id = lapsed.resource_id
			WHERE t.id = lapsed.id
			RETURNING r.id, r.namespace, r.kind, r.name, t.generation, t.trigger, lapsed.claimed_by`,
			l.Lease.Milliseconds(), l.LiveWithin.Milliseconds(), claimers, limit)
		if err != nil {
			return err
		}
		ev := newEventBatch()
		n = 0
		for rows.Next() {
			var id *int64
			var ns, kind, name *string
			var gen int64
			var trig, claimer string
			if err := rows.Scan(&id, &ns, &kind, &name, &gen, &trig, &claimer); err != nil {
				rows.Close()
				return err
			}
			n++
			// A reactor delivery's resource is only the one it reports on.
			if id != nil && trig != trigger.Reactor {
				ev.add(*id, *ns, *kind, *name, gen, "Warning", "ClaimerGone",
					fmt.Sprintf("%s task's claimer %s is gone (no heartbeat for %s); it will run again", trig, claimer, l.LiveWithin),
					"system")
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		batch := &pgx.Batch{}
		ev.queue(batch)
		if batch.Len() == 0 {
			return nil
		}
		return tx.SendBatch(ctx, batch).Close()
	})
	return n, err
}
