package store

import (
	"cmp"
	"context"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
)

// Want asks for up to N tasks of one (kind, version, trigger).
type Want struct {
	Kind    string
	Version int32
	Trigger string
	// N is how many tasks of this trigger the workers ready for it can
	// take now.
	N int
	// KindN is how many tasks of any trigger of the kind version the
	// workers serving it can take now: the wants of one kind version
	// together take no more than that (nor than the kind's free in-flight
	// slots), oldest first, so no trigger's request crowds out another's
	// work. Zero means N.
	KindN int
	// MaxInflight is this replica's view of the kind version's cap on tasks
	// in flight across every replica (0: no cap). The cap itself is read
	// from the kinds table as the claim runs; a nonzero view makes the claim
	// serialise with other replicas' claims of the kind version.
	MaxInflight int32
	// Shards [ShardLo, ShardHi) is this replica's tile of the 256 shards for
	// the kind version: its tasks are claimed first, and other shards' only
	// for what is left, so replicas rarely contend for the same rows yet an
	// idle replica still helps a busy one. Both zero: every shard.
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
	// RejectedStatus is the last status the kind's status_schema refused,
	// if any: what the handler reported it made, for it to find again.
	RejectedStatus []byte
	// TraceParent is the W3C traceparent of the change that queued the
	// task ('' when it was not traced).
	TraceParent string
	// ImportID names the existing object the resource adopts ('' = none).
	ImportID string
	// Owned: the resource has an owner, so it may have edges (only a
	// composite's children depend on each other).
	Owned bool
}

// claimSQL takes ready tasks for the wants and leases them. Each want
// proposes up to N of its claimable tasks, this replica's tile first,
// oldest first; then each kind version takes, from all of its wants'
// proposals together and in that same order, as many as its limit: the
// workers' slots for it (KindN), and for a capped kind its free in-flight
// slots (converge_free_slots, the cap as stored now, so a live policy edit
// holds at once; callers serialise capped claims, see Claim). A trigger
// with nothing queued takes nothing, so it cannot starve the others.
// Operation tasks move their operation to running. A task at generation 0
// (its last run was superseded by a policy change, see requeueReconcile)
// runs at its resource's generation.
const claimSQL = `
	WITH want AS (
	    SELECT w.*, least(max(w.kind_n) OVER k, coalesce(converge_free_slots(w.kind, w.kind_version), max(w.kind_n) OVER k)) AS lim
	    FROM unnest($1::text[], $2::int[], $3::text[], $4::int[], $5::int[], $8::smallint[], $9::smallint[])
	         AS w(kind, kind_version, trigger, n, kind_n, lo, hi)
	    WINDOW k AS (PARTITION BY w.kind, w.kind_version)
	), own AS (
	    SELECT w.kind, w.kind_version, w.trigger, w.lim, p.id, p.resource_id, p.not_before, 0 AS away
	    FROM want w CROSS JOIN LATERAL (
	        SELECT t.id, t.resource_id, t.not_before FROM tasks t
	        WHERE t.kind = w.kind AND t.kind_version = w.kind_version AND t.trigger = w.trigger
	          AND converge_claimable(t) AND t.shard >= w.lo AND t.shard < w.hi
	        ORDER BY t.not_before
	        LIMIT greatest(least(w.n, w.lim), 0)
	        FOR UPDATE SKIP LOCKED) p
	), rest AS (
	    SELECT w.kind, w.kind_version, w.trigger, w.lim, p.id, p.resource_id, p.not_before, 1 AS away
	    FROM want w CROSS JOIN LATERAL (
	        SELECT t.id, t.resource_id, t.not_before FROM tasks t
	        WHERE t.kind = w.kind AND t.kind_version = w.kind_version AND t.trigger = w.trigger
	          AND converge_claimable(t) AND (t.shard < w.lo OR t.shard >= w.hi)
	        ORDER BY t.not_before
	        LIMIT greatest(least(w.n, w.lim) - (SELECT count(*) FROM own o
	                                 WHERE o.kind = w.kind AND o.kind_version = w.kind_version AND o.trigger = w.trigger)::int, 0)
	        FOR UPDATE SKIP LOCKED) p
	), proposed AS (
	    SELECT c.id, c.resource_id, c.lim,
	           row_number() OVER (PARTITION BY c.kind, c.kind_version ORDER BY c.away, c.not_before, c.id) AS rank
	    FROM (SELECT * FROM own UNION ALL SELECT * FROM rest) c
	), picked AS (
	    SELECT id, resource_id FROM proposed WHERE rank <= lim
	), claimed AS (
	    UPDATE tasks t SET claimed_by = $6::text, claimed_at = now(), epoch = t.epoch + 1 + floor(random() * 1e12)::bigint,
	        lease_expires_at = now() + $7::bigint * interval '1 millisecond',
	        generation = CASE WHEN t.generation = 0 THEN r.generation ELSE t.generation END
	    FROM picked LEFT JOIN resources r ON r.id = picked.resource_id
	    WHERE t.id = picked.id
	    RETURNING t.id, t.epoch, t.kind, t.kind_version, t.trigger, t.key, t.payload, t.generation, t.attempts + 1 AS attempt,
	        t.resource_id, r.id IS NOT NULL AS present, r.namespace, r.name, r.labels, r.spec, r.status,
	        r.provider_config, r.rollup, r.rejected_status, t.traceparent, r.import_id,
	        r.owner_id IS NOT NULL AS owned
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
		got, err := claim(ctx, s.relaxedDB(ctx), member, lease, free)
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

type batcher interface {
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
}

func claim(ctx context.Context, q batcher, member string, lease time.Duration, wants []Want) ([]Claimed, error) {
	kinds := make([]string, len(wants))
	versions := make([]int32, len(wants))
	triggers := make([]string, len(wants))
	limits, kindLimits := make([]int32, len(wants)), make([]int32, len(wants))
	los, his := make([]int16, len(wants)), make([]int16, len(wants))
	for i, w := range wants {
		kinds[i], versions[i], triggers[i], limits[i] = w.Kind, w.Version, w.Trigger, int32(w.N)
		kindLimits[i] = int32(max(w.KindN, w.N))
		los[i], his[i] = w.ShardLo, w.ShardHi
		if w.ShardLo == 0 && w.ShardHi == 0 {
			his[i] = Shards
		}
	}
	var out []Claimed
	batch := &pgx.Batch{}
	batch.Queue(pinPlansSQL)
	batch.Queue(claimSQL, kinds, versions, triggers, limits, kindLimits, member, lease.Milliseconds(), los, his).Query(func(rows pgx.Rows) error {
		var err error
		out, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (Claimed, error) {
			var c Claimed
			var ns, name, pc, tp, imp *string
			err := row.Scan(&c.TaskID, &c.Epoch, &c.Kind, &c.Version, &c.Trigger, &c.Key, &c.Payload, &c.Generation,
				&c.Attempt, &c.ResourceID, &c.Exists, &ns, &name, &c.Labels, &c.Spec, &c.Status, &pc, &c.Rollup,
				&c.RejectedStatus, &tp, &imp, &c.Owned)
			if imp != nil {
				c.ImportID = *imp
			}
			if tp != nil {
				c.TraceParent = *tp
			}
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
