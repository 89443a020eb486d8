package store

import (
	"cmp"
	"context"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// Triggers of queued work. They match the manifest's reaction triggers.
const (
	TriggerSpecChange      = "specChange"
	TriggerDeleteRequested = "deleteRequested"
	TriggerResync          = "resync"
	TriggerReactor         = "reactor"
	// TriggerOperationPrefix starts an operation task's trigger, followed
	// by the verb: each verb is claimed for the worker serving it.
	TriggerOperationPrefix = "operation:"
)

// reconcileEligible is the one scheduling predicate for specChange work:
// the resource has an unobserved generation and nothing holds it back
// (waiting is set while the gate holds a dependent for its dependencies).
const reconcileEligible = `r.generation > r.synced_generation
	AND r.deletion_requested_at IS NULL
	AND r.frozen_until IS NULL
	AND r.waiting IS NULL
	AND NOT (r.failure_terminal AND r.failure_generation = r.generation)`

// queueReconcile is the statement that queues specChange work for the
// eligible resources among the rows r of from (a FROM item yielding
// resource rows) that match filter.
func queueReconcile(from, filter string) string {
	return `
	INSERT INTO tasks (resource_id, trigger, kind, kind_version, shard, generation)
	SELECT r.id, 'specChange', r.kind, r.kind_version, r.shard, r.generation
	FROM ` + from + `
	WHERE ` + filter + ` AND ` + reconcileEligible + `
	ORDER BY r.id`
}

// scheduleReconcileSQL queues specChange work for the eligible resources
// among $1 (ascending ids). A queued or running task for an older
// generation is re-pointed to the new one: a running handler keeps its
// lease, its stale result is discarded, and the task runs again.
var scheduleReconcileSQL = queueReconcile(`resources r`, `r.id = ANY($1::bigint[])`) + `
	ON CONFLICT (resource_id, trigger, key) DO UPDATE SET
	    generation = EXCLUDED.generation,
	    kind_version = EXCLUDED.kind_version,
	    attempts = 0,
	    not_before = now()
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

// Want asks for up to N tasks of one (kind, version, trigger).
type Want struct {
	Kind    string
	Version int32
	Trigger string
	N       int
	// MaxInflight is this replica's view of the kind version's cap on tasks
	// in flight across every replica (0: no cap). The cap itself is read
	// from the kinds table as the claim runs; a nonzero view makes the claim
	// serialise with other replicas' claims of the kind version.
	MaxInflight int32
	// Shards [ShardLo, ShardHi) is this replica's tile of the 256 shards for
	// the kind version: its tasks are claimed first, and other shards' only
	// for what is left of N, so replicas rarely contend for the same rows
	// yet an idle replica still helps a busy one. Both zero: every shard.
	ShardLo, ShardHi int16
}

// Shards is the number of logical shards tasks are spread over.
const Shards = 256

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
	// Key names an operation or a reactor delivery ('' otherwise).
	Key string
	// Payload is what an operation or a delivery carries (JSON).
	Payload []byte
	// Attempt is 1 for the first attempt at this generation.
	Attempt    int32
	ResourceID int64
	// Exists is false when the resource is gone (a reactor delivery for a
	// deleted resource); the resource fields are then empty.
	Exists         bool
	Namespace      string
	Name           string
	Labels         []byte
	Spec           []byte
	Status         []byte
	ProviderConfig string
	// Rollup holds the children's counts, for childrenSettled tasks.
	Rollup []byte
}

// claimSQL takes ready tasks for each want, oldest first, and leases them.
// A want of a capped kind version takes no more than its free in-flight
// slots (the cap as stored now, so a live policy edit holds at once);
// callers serialise capped claims (see Claim). Operation tasks
// move their operation to running.
const claimSQL = `
	WITH wanted AS (
	    SELECT w.*, coalesce(k.max_inflight, 0) AS cap
	    FROM unnest($1::text[], $2::int[], $3::text[], $4::int[], $7::smallint[], $8::smallint[])
	         AS w(kind, kind_version, trigger, n, lo, hi)
	    LEFT JOIN kinds k ON k.kind = w.kind AND k.kind_version = w.kind_version
	), capped AS (
	    SELECT w.*, CASE WHEN w.cap > 0 THEN w.cap - (
	        SELECT count(*) FROM tasks c
	        WHERE c.claimed_by IS NOT NULL AND c.kind = w.kind AND c.kind_version = w.kind_version)::int END AS free
	    FROM wanted w
	), want AS (
	    -- A capped kind version's free slots go to its triggers in turn.
	    SELECT w.*, CASE WHEN w.free IS NULL THEN w.n
	        ELSE least(w.n, w.free - coalesce(sum(w.n) OVER (PARTITION BY w.kind, w.kind_version ORDER BY w.trigger
	                                      ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0)::int) END AS take
	    FROM capped w
	), own AS (
	    -- This replica's tile first ...
	    SELECT w.kind, w.kind_version, w.trigger, p.id, p.resource_id FROM want w CROSS JOIN LATERAL (
	        SELECT t.id, t.resource_id FROM tasks t
	        WHERE t.kind = w.kind AND t.kind_version = w.kind_version AND t.trigger = w.trigger
	          AND t.claimed_by IS NULL AND t.not_before <= now()
	          AND t.shard >= w.lo AND t.shard < w.hi
	        ORDER BY t.not_before
	        LIMIT greatest(w.take, 0)
	        FOR UPDATE SKIP LOCKED) p
	), rest AS (
	    -- ... then the other tiles, for what is left.
	    SELECT p.id, p.resource_id FROM want w CROSS JOIN LATERAL (
	        SELECT t.id, t.resource_id FROM tasks t
	        WHERE t.kind = w.kind AND t.kind_version = w.kind_version AND t.trigger = w.trigger
	          AND t.claimed_by IS NULL AND t.not_before <= now()
	          AND (t.shard < w.lo OR t.shard >= w.hi)
	        ORDER BY t.not_before
	        LIMIT greatest(w.take - (SELECT count(*) FROM own o
	                                 WHERE o.kind = w.kind AND o.kind_version = w.kind_version AND o.trigger = w.trigger)::int, 0)
	        FOR UPDATE SKIP LOCKED) p
	), picked AS (
	    SELECT id, resource_id FROM own UNION ALL SELECT id, resource_id FROM rest
	), claimed AS (
	    UPDATE tasks t SET claimed_by = $5::text, claimed_at = now(), epoch = t.epoch + 1 + floor(random() * 1e12)::bigint,
	        lease_expires_at = now() + $6::bigint * interval '1 millisecond'
	    FROM picked LEFT JOIN resources r ON r.id = picked.resource_id
	    WHERE t.id = picked.id
	    RETURNING t.id, t.epoch, t.kind, t.kind_version, t.trigger, t.key, t.payload, t.generation, t.attempts + 1 AS attempt,
	        t.resource_id, r.id IS NOT NULL AS present, r.namespace, r.name, r.labels, r.spec, r.status,
	        r.provider_config, r.rollup
	), running AS (
	    UPDATE operations o SET state = 'running', attempts = o.attempts + 1
	    FROM claimed c WHERE c.trigger LIKE 'operation:%' AND o.id = c.key
	)
	SELECT * FROM claimed`

// Claim takes ready tasks for each want, oldest first, and leases them to
// member until now+lease. Locked rows are skipped, never waited on. Wants
// of capped kinds are claimed in a transaction that first takes each
// capped kind version's advisory lock, so that replicas counting its
// tasks in flight see each other's claims and the cap holds.
func (s *Store) Claim(ctx context.Context, member string, lease time.Duration, wants []Want) ([]Claimed, error) {
	if len(wants) == 0 {
		return nil, nil
	}
	var free, capped []Want
	for _, w := range wants {
		if w.MaxInflight > 0 {
			capped = append(capped, w)
		} else {
			free = append(free, w)
		}
	}
	var out []Claimed
	if len(free) > 0 {
		got, err := claim(ctx, s.relaxed, member, lease, free)
		if err != nil {
			return nil, err
		}
		out = got
	}
	if len(capped) == 0 {
		return out, nil
	}
	slices.SortFunc(capped, func(a, b Want) int {
		return cmp.Or(cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Version, b.Version))
	})
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		for i, w := range capped {
			if i > 0 && w.Kind == capped[i-1].Kind && w.Version == capped[i-1].Version {
				continue
			}
			if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended($1, $2))`,
				w.Kind, int64(w.Version)); err != nil {
				return err
			}
		}
		got, err := claim(ctx, tx, member, lease, capped)
		out = append(out, got...)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

type batcher interface {
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
}

func claim(ctx context.Context, q batcher, member string, lease time.Duration, wants []Want) ([]Claimed, error) {
	kinds := make([]string, len(wants))
	versions := make([]int32, len(wants))
	triggers := make([]string, len(wants))
	limits := make([]int32, len(wants))
	los, his := make([]int16, len(wants)), make([]int16, len(wants))
	for i, w := range wants {
		kinds[i], versions[i], triggers[i], limits[i] = w.Kind, w.Version, w.Trigger, int32(w.N)
		los[i], his[i] = w.ShardLo, w.ShardHi
		if w.ShardLo == 0 && w.ShardHi == 0 {
			his[i] = Shards
		}
	}
	var out []Claimed
	batch := &pgx.Batch{}
	batch.Queue(pinPlansSQL)
	batch.Queue(claimSQL, kinds, versions, triggers, limits, member, lease.Milliseconds(), los, his).Query(func(rows pgx.Rows) error {
		var err error
		out, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (Claimed, error) {
			var c Claimed
			var ns, name, pc *string
			err := row.Scan(&c.TaskID, &c.Epoch, &c.Kind, &c.Version, &c.Trigger, &c.Key, &c.Payload, &c.Generation,
				&c.Attempt, &c.ResourceID, &c.Exists, &ns, &name, &c.Labels, &c.Spec, &c.Status, &pc, &c.Rollup)
			if ns != nil {
				c.Namespace = *ns
			}
			if name != nil {
				c.Name = *name
			}
			if pc != nil {
				c.ProviderConfig = *pc
			}
			return c, err
		})
		return err
	})
	if err := q.SendBatch(ctx, batch).Close(); err != nil {
		return nil, err
	}
	return out, nil
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
			var trigger string
			if err := rows.Scan(&id, &ns, &kind, &name, &gen, &trigger); err != nil {
				rows.Close()
				return err
			}
			n++
			// A reactor delivery's resource is only the one it reports on.
			if id != nil && trigger != TriggerReactor {
				ev.add(*id, *ns, *kind, *name, gen, "Warning", "LeaseExpired",
					trigger+" task lease expired without a result; it will run again", "system")
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
