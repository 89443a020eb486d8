package store

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
)

// Triggers of queued work. They match the manifest's reaction triggers.
const (
	TriggerSpecChange      = "specChange"
	TriggerDeleteRequested = "deleteRequested"
)

// reconcileEligible is the one scheduling predicate for specChange work:
// the resource has an unobserved generation and nothing holds it back
// (waiting is set while the gate holds a dependent for its dependencies).
const reconcileEligible = `r.generation > r.synced_generation
	AND r.deletion_requested_at IS NULL
	AND r.frozen_until IS NULL
	AND r.waiting IS NULL
	AND NOT (r.failure_terminal AND r.failure_generation = r.generation)`

// scheduleReconcileSQL queues specChange work for the eligible resources
// among $1 (ascending ids). A queued or running task for an older
// generation is re-pointed to the new one: a running handler keeps its
// lease, its stale result is discarded, and the task runs again.
const scheduleReconcileSQL = `
	INSERT INTO tasks (resource_id, trigger, kind, kind_version, shard, generation)
	SELECT r.id, 'specChange', r.kind, r.kind_version, r.shard, r.generation
	FROM resources r
	WHERE r.id = ANY($1::bigint[]) AND ` + reconcileEligible + `
	ORDER BY r.id
	ON CONFLICT (resource_id, trigger, key) DO UPDATE SET
	    generation = EXCLUDED.generation,
	    kind_version = EXCLUDED.kind_version,
	    attempts = 0,
	    not_before = now()
	WHERE tasks.generation <> EXCLUDED.generation OR tasks.kind_version <> EXCLUDED.kind_version`

// Want asks for up to N tasks of one (kind, version, trigger).
type Want struct {
	Kind    string
	Version int32
	Trigger string
	N       int
}

// Lease names one claim of one task at one generation.
type Lease struct {
	TaskID     int64
	Epoch      int64
	Generation int64
}

// Claimed is a task handed to this broker, with what a worker needs.
type Claimed struct {
	Lease
	Kind    string
	Version int32
	Trigger string
	// Attempt is 1 for the first attempt at this generation.
	Attempt    int32
	ResourceID int64
	Namespace  string
	Name       string
	Labels     []byte
	Spec       []byte
	Status     []byte
	// Rollup holds the children's counts, for childrenSettled tasks.
	Rollup []byte
}

// Claim takes ready tasks for each want, oldest first, and leases them to
// member until now+lease. Locked rows are skipped, never waited on.
func (s *Store) Claim(ctx context.Context, member string, lease time.Duration, wants []Want) ([]Claimed, error) {
	if len(wants) == 0 {
		return nil, nil
	}
	kinds := make([]string, len(wants))
	versions := make([]int32, len(wants))
	triggers := make([]string, len(wants))
	limits := make([]int32, len(wants))
	for i, w := range wants {
		kinds[i], versions[i], triggers[i], limits[i] = w.Kind, w.Version, w.Trigger, int32(w.N)
	}
	rows, err := s.relaxed.Query(ctx, `
		WITH want AS (
		    SELECT * FROM unnest($1::text[], $2::int[], $3::text[], $4::int[]) AS w(kind, kind_version, trigger, n)
		), picked AS (
		    SELECT p.id FROM want w CROSS JOIN LATERAL (
		        SELECT t.id FROM tasks t
		        WHERE t.kind = w.kind AND t.kind_version = w.kind_version AND t.trigger = w.trigger
		          AND t.claimed_by IS NULL AND t.not_before <= now()
		        ORDER BY t.not_before
		        LIMIT w.n
		        FOR UPDATE SKIP LOCKED) p
		)
		UPDATE tasks t SET claimed_by = $5, claimed_at = now(), epoch = t.epoch + 1 + floor(random() * 1e12)::bigint,
		    lease_expires_at = now() + $6 * interval '1 millisecond'
		FROM picked, resources r
		WHERE t.id = picked.id AND r.id = t.resource_id
		RETURNING t.id, t.epoch, t.kind, t.kind_version, t.trigger, t.generation, t.attempts + 1,
		    r.id, r.namespace, r.name, r.labels, r.spec, r.status, r.rollup`,
		kinds, versions, triggers, limits, member, lease.Milliseconds())
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (Claimed, error) {
		var c Claimed
		err := row.Scan(&c.TaskID, &c.Epoch, &c.Kind, &c.Version, &c.Trigger, &c.Generation, &c.Attempt,
			&c.ResourceID, &c.Namespace, &c.Name, &c.Labels, &c.Spec, &c.Status, &c.Rollup)
		return c, err
	})
}

// Renewal is a lease and when it should now expire.
type Renewal struct {
	Lease
	Until time.Time
}

// ExtendLeases renews leases still held by their epoch, each until its
// given time, and (re)assigns them to member. It returns the leases it
// renewed. Rows locked by another transaction are skipped this round.
func (s *Store) ExtendLeases(ctx context.Context, member string, renewals []Renewal) ([]Lease, error) {
	if len(renewals) == 0 {
		return nil, nil
	}
	ids, epochs, until := make([]int64, len(renewals)), make([]int64, len(renewals)), make([]time.Time, len(renewals))
	for i, r := range renewals {
		ids[i], epochs[i], until[i] = r.TaskID, r.Epoch, r.Until
	}
	rows, err := s.relaxed.Query(ctx, `
		WITH l AS (
		    SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::timestamptz[]) AS l(id, epoch, until)
		), held AS (
		    SELECT t.id, l.until FROM tasks t
		    JOIN l ON t.id = l.id AND t.epoch = l.epoch
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
	rows, err := s.pool.Query(ctx, `
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
	_, err := s.pool.Exec(ctx, `
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
			    SELECT id FROM tasks
			    WHERE claimed_by IS NOT NULL AND lease_expires_at < now()
			    ORDER BY id LIMIT $1
			    FOR UPDATE SKIP LOCKED
			)
			UPDATE tasks t SET claimed_by = NULL, lease_expires_at = NULL
			FROM expired, resources r
			WHERE t.id = expired.id AND r.id = t.resource_id
			RETURNING r.id, r.namespace, r.kind, r.name, t.generation, t.trigger`, limit)
		if err != nil {
			return err
		}
		ev := newEventBatch()
		for rows.Next() {
			var id, gen int64
			var ns, kind, name, trigger string
			if err := rows.Scan(&id, &ns, &kind, &name, &gen, &trigger); err != nil {
				rows.Close()
				return err
			}
			ev.add(id, ns, kind, name, gen, "Warning", "LeaseExpired",
				trigger+" task lease expired without a result; it will run again", "system")
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		n = len(ev.ids)
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
