package store

import (
	"context"
	"time"

	"github.com/convergehq/converge/server/internal/trigger"
	"github.com/jackc/pgx/v5"
)

// Renewal is a lease and when it should now expire.
type Renewal struct {
	Lease
	Until time.Time
}

// ExtendLeases renews leases still held by their epoch, each until its
// given time, and (re)assigns them to member. It returns the leases it
// renewed. A task the queue has taken back (released, its claim gone) is
// not claimed again by a renewal. Rows locked by another transaction are
// skipped this round.
func (s *Store) ExtendLeases(ctx context.Context, member string, renewals []Renewal) ([]Lease, error) {
	if len(renewals) == 0 {
		return nil, nil
	}
	ids, epochs, until := make([]int64, len(renewals)), make([]int64, len(renewals)), make([]time.Time, len(renewals))
	for i, r := range renewals {
		ids[i], epochs[i], until[i] = r.TaskID, r.Epoch, r.Until
	}
	rows, err := s.relaxedDB(ctx).Query(ctx, `
		WITH l AS (
		    SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::timestamptz[]) AS l(id, epoch, until)
		), held AS (
		    SELECT t.id, l.until FROM tasks t
		    JOIN l ON t.id = l.id AND t.epoch = l.epoch
		    WHERE t.claimed_by IS NOT NULL
		    ORDER BY t.id
		    FOR UPDATE OF t SKIP LOCKED
		)
		UPDATE tasks t SET claimed_by = $4, lease_expires_at = held.until
		FROM held WHERE t.id = held.id
		RETURNING t.id, t.epoch, t.generation`, ids, epochs, until, member)
	if err != nil {
		return nil, err
	}
	return collectLeases(rows)
}

// LeaseInfo describes a task held under a lease.
type LeaseInfo struct {
	Lease
	Kind       string
	Version    int32
	Trigger    string
	ResourceID int64
}

// AdoptLeases takes over leases a worker names when it resumes after a
// reconnect, possibly on another replica. Unlike ExtendLeases it waits
// for locked rows, so the answer (adopted or lost) is definite. A lease
// is adopted if its task still has that epoch; the generation returned is
// the task's current one.
func (s *Store) AdoptLeases(ctx context.Context, member string, lease time.Duration, leases []Lease) ([]LeaseInfo, error) {
	if len(leases) == 0 {
		return nil, nil
	}
	ids, epochs := splitLeases(leases)
	rows, err := s.db(ctx).Query(ctx, `
		WITH held AS (
		    SELECT t.id FROM tasks t
		    JOIN unnest($1::bigint[], $2::bigint[]) AS l(id, epoch) ON t.id = l.id AND t.epoch = l.epoch
		    ORDER BY t.id
		    FOR UPDATE OF t
		)
		UPDATE tasks t SET claimed_by = $3, lease_expires_at = now() + $4 * interval '1 millisecond'
		FROM held WHERE t.id = held.id
		RETURNING t.id, t.epoch, t.generation, t.kind, t.kind_version, t.trigger, t.resource_id`,
		ids, epochs, member, lease.Milliseconds())
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (LeaseInfo, error) {
		var l LeaseInfo
		err := row.Scan(&l.TaskID, &l.Epoch, &l.Generation, &l.Kind, &l.Version, &l.Trigger, &l.ResourceID)
		return l, err
	})
}

// ReleaseLeases gives tasks back to the queue at once, e.g. tasks claimed
// for a worker that disconnected before they were sent.
func (s *Store) ReleaseLeases(ctx context.Context, leases []Lease) error {
	if len(leases) == 0 {
		return nil
	}
	ids, epochs := splitLeases(leases)
	_, err := s.db(ctx).Exec(ctx, `
		WITH held AS (
		    SELECT t.id FROM tasks t
		    JOIN unnest($1::bigint[], $2::bigint[]) AS l(id, epoch) ON t.id = l.id AND t.epoch = l.epoch
		    WHERE t.claimed_by IS NOT NULL
		    ORDER BY t.id
		    FOR UPDATE OF t
		)
		UPDATE tasks t SET claimed_by = NULL, lease_expires_at = NULL
		FROM held WHERE t.id = held.id`, ids, epochs)
	return err
}

// ReleaseExpired returns tasks whose lease ran out to the queue and
// records an event for each. It reports how many it released.
func (s *Store) ReleaseExpired(ctx context.Context, limit int) (int, error) {
	var n int
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `
			WITH expired AS (
			    SELECT id, resource_id FROM tasks
			    WHERE claimed_by IS NOT NULL AND lease_expires_at < now()
			    ORDER BY id LIMIT $1
			    FOR UPDATE SKIP LOCKED
			)
			UPDATE tasks t SET claimed_by = NULL, lease_expires_at = NULL
			FROM expired LEFT JOIN resources r ON r.id = expired.resource_id
			WHERE t.id = expired.id
			RETURNING r.id, r.namespace, r.kind, r.name, t.generation, t.trigger`, limit)
		if err != nil {
			return err
		}
		ev := newEventBatch()
		n = 0
		for rows.Next() {
			var id *int64
			var ns, kind, name *string
			var gen int64
			var trig string
			if err := rows.Scan(&id, &ns, &kind, &name, &gen, &trig); err != nil {
				rows.Close()
				return err
			}
			n++
			// A reactor delivery's resource is only the one it reports on.
			if id != nil && trig != trigger.Reactor {
				ev.add(*id, *ns, *kind, *name, gen, "Warning", "LeaseExpired",
					trig+" task lease expired without a result; it will run again", "system")
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

func splitLeases(leases []Lease) ([]int64, []int64) {
	ids, epochs := make([]int64, len(leases)), make([]int64, len(leases))
	for i, l := range leases {
		ids[i], epochs[i] = l.TaskID, l.Epoch
	}
	return ids, epochs
}

func collectLeases(rows pgx.Rows) ([]Lease, error) {
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (Lease, error) {
		var l Lease
		err := row.Scan(&l.TaskID, &l.Epoch, &l.Generation)
		return l, err
	})
}
