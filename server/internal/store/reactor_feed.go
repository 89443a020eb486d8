package store

import (
	"context"
	"errors"
	"math"
	"strconv"

	"github.com/convergehq/converge/server/internal/trigger"
	"github.com/jackc/pgx/v5"
)

// reactorFeed names the reactor emitter's row in feed_cursors.
const reactorFeed = "reactor"

// WatchedChange is a change of the feed with the labels its resource has
// when the emitter reads it.
type WatchedChange struct {
	Change
	// Exists is false once the resource is gone; Labels is then nil.
	Exists bool
	Labels []byte
}

// Delivery is one reactor task to queue: a binding's reactor kind is told
// about one transition of one resource. Key is the dedup token; the
// same key for the same resource is queued at most once.
type Delivery struct {
	ResourceID         int64
	Key                string
	ReactorKind        string
	ReactorKindVersion int32
	// Payload is the JSON object the reactor's task carries.
	Payload []byte
	// WithStatus sets the payload's watched_status to the resource's
	// status as it is when the delivery is queued (null if it is gone).
	// The status is copied inside the database: a batch of deliveries
	// never holds up to a thousand statuses in memory.
	WithStatus bool
}

// Matcher turns one batch of changes into deliveries. It may run more
// than once for the same batch (a transaction retried), so it must not
// have side effects.
type Matcher func(bindings []ReactorBinding, changes []WatchedChange) ([]Delivery, error)

// EmitResult reports one emitter round.
type EmitResult struct {
	// Skipped: another replica is emitting right now, or the cursor does
	// not exist yet (see StartReactorFeed).
	Skipped bool
	// Changes read and deliveries newly queued.
	Changes, Queued int
	// More: the batch was full, more changes are probably waiting.
	More bool
	// Overtaken: the feed had been pruned past the cursor; the changes
	// from Lost.XID on up to the pruning horizon were never read.
	Overtaken bool
	Lost      Cursor
}

// StartReactorFeed creates the emitter's cursor at the current end of the
// feed if there is none: a new emitter does not replay history.
func (s *Store) StartReactorFeed(ctx context.Context) error {
	_, err := s.db(ctx).Exec(ctx, `INSERT INTO feed_cursors (name, xid, seq)
		SELECT $1, (pg_snapshot_xmin(pg_current_snapshot())::text::bigint - 1)::text::xid8, $2
		ON CONFLICT (name) DO NOTHING`, reactorFeed, int64(math.MaxInt64))
	return err
}

// ReactorFeedPending reports whether committed changes wait past the
// emitter's cursor. It reads only, so an idle emitter costs one cheap
// query per poll and writes nothing.
func (s *Store) ReactorFeedPending(ctx context.Context) (bool, error) {
	// The first change after the cursor is readable only if its
	// transaction is older than every running one; later ones have larger
	// xids. One index probe.
	var pending bool
	err := s.db(ctx).QueryRow(ctx, `
		SELECT coalesce((
		    SELECT c.xid < pg_snapshot_xmin(pg_current_snapshot())
		    FROM feed_cursors f CROSS JOIN LATERAL (
		        SELECT xid FROM changes c WHERE (c.xid, c.seq) > (f.xid, f.seq) ORDER BY c.xid, c.seq LIMIT 1) c
		    WHERE f.name = $1), false)`, reactorFeed).Scan(&pending)
	return pending, err
}

// ReactorCursor returns the emitter's cursor.
func (s *Store) ReactorCursor(ctx context.Context) (Cursor, error) {
	var c Cursor
	var xid int64
	err := s.db(ctx).QueryRow(ctx, `SELECT xid::text::bigint, seq FROM feed_cursors WHERE name = $1`, reactorFeed).Scan(&xid, &c.Seq)
	if errors.Is(err, pgx.ErrNoRows) {
		return c, notFoundf("the reactor emitter has no cursor yet")
	}
	c.XID = uint64(xid)
	return c, err
}

// EmitReactorDeliveries runs one emitter round in one transaction: it
// locks the cursor (skipping if another replica holds it), reads up to
// limit changes after it, lets match turn them into deliveries against
// every binding, queues those, and advances the cursor. Queueing and the
// cursor commit together, so a crash neither loses nor repeats a round.
func (s *Store) EmitReactorDeliveries(ctx context.Context, limit int, match Matcher) (EmitResult, error) {
	var res EmitResult
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		res = EmitResult{}
		var cur Cursor
		var xid int64
		var pruned *int64
		err := tx.QueryRow(ctx, `SELECT f.xid::text::bigint, f.seq,
			    (SELECT pruned_before::text::bigint FROM change_retention)
			FROM feed_cursors f WHERE f.name = $1 FOR UPDATE SKIP LOCKED`, reactorFeed).Scan(&xid, &cur.Seq, &pruned)
		if errors.Is(err, pgx.ErrNoRows) {
			res.Skipped = true
			return nil
		}
		if err != nil {
			return err
		}
		cur.XID = uint64(xid)
		start := cur
		if pruned != nil && cur.XID+1 < uint64(*pruned) {
			res.Overtaken, res.Lost = true, cur
			cur = Cursor{XID: uint64(*pruned) - 1, Seq: math.MaxInt64}
		}
		bindings, err := listBindings(ctx, tx, "")
		if err != nil {
			return err
		}
		changes, next, err := readChanges(ctx, tx, cur, ChangeFilter{}, limit)
		if err != nil {
			return err
		}
		res.Changes, res.More = len(changes), len(changes) == limit
		if changes = watchedOnly(bindings, changes); len(changes) > 0 {
			watched, err := watch(ctx, tx, changes)
			if err != nil {
				return err
			}
			deliveries, err := match(bindings, watched)
			if err != nil {
				return err
			}
			if res.Queued, err = queueDeliveries(ctx, tx, deliveries); err != nil {
				return err
			}
		}
		if next == start {
			return nil
		}
		_, err = tx.Exec(ctx, `UPDATE feed_cursors SET xid = $2::text::xid8, seq = $3 WHERE name = $1`,
			reactorFeed, strconv.FormatUint(next.XID, 10), next.Seq)
		return err
	})
	return res, err
}

// watchedOnly drops the changes of kinds no enabled binding watches, so
// their resources are never loaded.
func watchedOnly(bindings []ReactorBinding, changes []Change) []Change {
	kinds := map[string]bool{}
	for _, b := range bindings {
		if !b.Disabled {
			kinds[b.WatchKind] = true
		}
	}
	out := changes[:0:0]
	for _, c := range changes {
		if kinds[c.Kind] {
			out = append(out, c)
		}
	}
	return out
}

// watch attaches each change's resource's current labels.
func watch(ctx context.Context, q querier, changes []Change) ([]WatchedChange, error) {
	ids := make([]int64, 0, len(changes))
	for _, c := range changes {
		ids = append(ids, c.ResourceID)
	}
	rows, err := q.Query(ctx, `SELECT id, labels FROM resources WHERE id = ANY($1::bigint[])`, ids)
	if err != nil {
		return nil, err
	}
	labels := map[int64][]byte{}
	for rows.Next() {
		var id int64
		var l []byte
		if err := rows.Scan(&id, &l); err != nil {
			rows.Close()
			return nil, err
		}
		labels[id] = l
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	out := make([]WatchedChange, len(changes))
	for i, c := range changes {
		out[i].Change = c
		if l, ok := labels[c.ResourceID]; ok {
			out[i].Exists, out[i].Labels = true, l
		}
	}
	return out, nil
}

// queueDeliveries inserts reactor tasks, skipping those already queued,
// and reports how many it inserted.
func queueDeliveries(ctx context.Context, tx pgx.Tx, ds []Delivery) (int, error) {
	if len(ds) == 0 {
		return 0, nil
	}
	ids := make([]int64, len(ds))
	keys := make([]string, len(ds))
	kinds := make([]string, len(ds))
	versions := make([]int32, len(ds))
	payloads := make([]string, len(ds))
	withStatus := make([]bool, len(ds))
	for i, d := range ds {
		ids[i], keys[i], kinds[i], versions[i] = d.ResourceID, d.Key, d.ReactorKind, d.ReactorKindVersion
		payloads[i], withStatus[i] = string(d.Payload), d.WithStatus
	}
	tag, err := tx.Exec(ctx, `
		INSERT INTO tasks (resource_id, trigger, key, kind, kind_version, shard, generation, payload)
		SELECT d.id, $7, d.key, d.kind, d.kind_version, 0, 1,
		       CASE WHEN d.with_status THEN d.payload::jsonb || jsonb_build_object('watched_status', r.status)
		            ELSE d.payload::jsonb END
		FROM unnest($1::bigint[], $2::text[], $3::text[], $4::int[], $5::text[], $6::bool[])
		     AS d(id, key, kind, kind_version, payload, with_status)
		LEFT JOIN resources r ON r.id = d.id AND d.with_status
		ORDER BY d.id, d.key
		ON CONFLICT (resource_id, trigger, key) DO NOTHING`, ids, keys, kinds, versions, payloads, withStatus, trigger.Reactor)
	if err != nil {
		return 0, err
	}
	return int(tag.RowsAffected()), nil
}
