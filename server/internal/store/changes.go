package store

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// Cursor is a position in the change feed: the feed continues with rows
// ordered after (XID, Seq).
type Cursor struct {
	XID uint64
	Seq int64
}

// String encodes the cursor as an opaque token.
func (c Cursor) String() string {
	return base64.RawURLEncoding.EncodeToString([]byte(fmt.Sprintf("c1.%d.%d", c.XID, c.Seq)))
}

// ParseCursor decodes a token made by Cursor.String.
func ParseCursor(token string) (Cursor, error) {
	raw, err := base64.RawURLEncoding.DecodeString(token)
	if err != nil {
		return Cursor{}, fmt.Errorf("cursor %q is not a cursor this server issued", token)
	}
	parts := strings.Split(string(raw), ".")
	if len(parts) != 3 || parts[0] != "c1" {
		return Cursor{}, fmt.Errorf("cursor %q is not a cursor this server issued", token)
	}
	xid, err1 := strconv.ParseUint(parts[1], 10, 64)
	seq, err2 := strconv.ParseInt(parts[2], 10, 64)
	if err1 != nil || err2 != nil {
		return Cursor{}, fmt.Errorf("cursor %q is not a cursor this server issued", token)
	}
	return Cursor{XID: xid, Seq: seq}, nil
}

// Change is one row of the change feed.
type Change struct {
	Cursor
	ResourceID       int64
	Type             string
	Namespace        string
	Kind             string
	KindVersion      int32
	Name             string
	Phase            string
	PreviousPhase    *string
	Generation       int64
	SyncedGeneration int64
	ResourceVersion  int64
	Message          *string
	At               time.Time
}

// ChangeFilter narrows a change read; empty fields match anything.
type ChangeFilter struct {
	Namespace, Kind, Name string
	// Visible limits the changes to what the caller may read; nil: all.
	Visible *Visible
}

// CurrentCursor returns a cursor from which a reader sees every change
// not yet visible now. Changes already visible may be delivered again;
// readers deduplicate by resource version.
func (s *Store) CurrentCursor(ctx context.Context) (Cursor, error) {
	var xmin uint64
	err := s.db(ctx).QueryRow(ctx, `SELECT pg_snapshot_xmin(pg_current_snapshot())::text::bigint`).Scan(&xmin)
	if err != nil {
		return Cursor{}, err
	}
	return Cursor{XID: xmin - 1, Seq: math.MaxInt64}, nil
}

// ReadChanges returns up to limit changes after c, only from transactions
// older than every transaction still running, so no row can later appear
// before a returned position. It also returns the cursor to continue
// from: past the last row, or past everything final when the page is not
// full.
func (s *Store) ReadChanges(ctx context.Context, c Cursor, f ChangeFilter, limit int) ([]Change, Cursor, error) {
	return readChanges(ctx, s.db(ctx), c, f, limit)
}

// readChanges is ReadChanges on q, which may be a transaction.
func readChanges(ctx context.Context, q querier, c Cursor, f ChangeFilter, limit int) ([]Change, Cursor, error) {
	args := []any{strconv.FormatUint(c.XID, 10), c.Seq, f.Namespace, f.Kind, f.Name, limit}
	visible := ""
	if v := visibleClause(f.Visible, "namespace", "kind", func(v any) string {
		args = append(args, v)
		return fmt.Sprintf("$%d", len(args))
	}); v != "" {
		visible = " AND " + v
	}
	rows, err := q.Query(ctx, `
		WITH h AS (SELECT pg_snapshot_xmin(pg_current_snapshot()) AS xmin)
		SELECT h.xmin::text::bigint, ch.xid::text::bigint, ch.seq, ch.resource_id, ch.type, ch.namespace,
		       ch.kind, ch.kind_version, ch.name, ch.phase, ch.previous_phase, ch.generation,
		       ch.synced_generation, ch.resource_version, ch.message, ch.at
		FROM h LEFT JOIN LATERAL (
		    SELECT * FROM changes
		    WHERE (xid, seq) > ($1::text::xid8, $2) AND xid < h.xmin
		      AND ($3 = '' OR namespace = $3) AND ($4 = '' OR kind = $4) AND ($5 = '' OR name = $5)`+visible+`
		    ORDER BY xid, seq
		    LIMIT $6) ch ON true`, args...)
	if err != nil {
		return nil, c, err
	}
	defer rows.Close()
	var out []Change
	var horizon int64
	for rows.Next() {
		var ch Change
		var xid, seq, resourceID, generation, synced, rv *int64
		var typ, ns, kind, name, phase *string
		var version *int32
		var at *time.Time
		if err := rows.Scan(&horizon, &xid, &seq, &resourceID, &typ, &ns, &kind, &version, &name, &phase,
			&ch.PreviousPhase, &generation, &synced, &rv, &ch.Message, &at); err != nil {
			return nil, c, err
		}
		if xid == nil {
			continue // the LEFT JOIN row of an empty page
		}
		ch.XID, ch.Seq, ch.ResourceID = uint64(*xid), *seq, *resourceID
		ch.Type, ch.Namespace, ch.Kind, ch.KindVersion, ch.Name, ch.Phase = *typ, *ns, *kind, *version, *name, *phase
		ch.Generation, ch.SyncedGeneration, ch.ResourceVersion, ch.At = *generation, *synced, *rv, *at
		out = append(out, ch)
	}
	if err := rows.Err(); err != nil {
		return nil, c, err
	}
	next := c
	if len(out) > 0 {
		next = out[len(out)-1].Cursor
	}
	if len(out) < limit && horizon > 0 {
		final := Cursor{XID: uint64(horizon) - 1, Seq: math.MaxInt64}
		if final.after(next) {
			next = final
		}
	}
	return out, next, nil
}

func (c Cursor) after(o Cursor) bool {
	return c.XID > o.XID || (c.XID == o.XID && c.Seq > o.Seq)
}

// ErrCursorExpired: the changes after a cursor were pruned.
var ErrCursorExpired = errors.New("the cursor is older than the change feed's retention; list again and watch from the listing's watch_cursor")

// CheckCursor fails with ErrCursorExpired if changes after c were pruned.
func (s *Store) CheckCursor(ctx context.Context, c Cursor) error {
	var before int64
	err := s.db(ctx).QueryRow(ctx, `SELECT pruned_before::text::bigint FROM change_retention`).Scan(&before)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil
	}
	if err != nil {
		return err
	}
	if c.XID+1 < uint64(before) {
		return ErrCursorExpired
	}
	return nil
}

// ReactorHold bounds how long the change feed keeps changes the reactor
// emitter has not read: past it they go anyway, so a stuck emitter
// cannot grow the feed without end (the emitter warns when it finds its
// cursor overtaken).
const ReactorHold = 24 * time.Hour

// PruneChanges deletes changes made by transactions older than xid, at
// most limit rows per call, records the new horizon, and reports how
// many rows it deleted. While any reactor binding exists it keeps the
// changes the reactor emitter has not read yet, unless they are older
// than ReactorHold; with no binding it moves the emitter's cursor along,
// as nothing wants those changes.
func (s *Store) PruneChanges(ctx context.Context, beforeXID uint64, limit int) (int64, error) {
	var n int64
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		var hold *int64
		err := tx.QueryRow(ctx, `SELECT xid::text::bigint FROM feed_cursors
			WHERE name = $1 AND EXISTS (SELECT 1 FROM reactor_bindings)`, reactorFeed).Scan(&hold)
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		var top *int64
		err = tx.QueryRow(ctx, `
			WITH gone AS (
			    DELETE FROM changes WHERE (xid, seq) IN (
			        SELECT xid, seq FROM changes
			        WHERE xid < $1::text::xid8
			          AND ($3::bigint IS NULL OR xid < $3::bigint::text::xid8
			               OR at < now() - $4 * interval '1 millisecond')
			        ORDER BY xid, seq LIMIT $2)
			    RETURNING xid::text::bigint AS xid)
			SELECT count(*), max(xid) FROM gone`,
			strconv.FormatUint(beforeXID, 10), limit, hold, ReactorHold.Milliseconds()).Scan(&n, &top)
		if err != nil {
			return err
		}
		horizon := beforeXID
		if hold != nil {
			// Only what is really gone counts as pruned, or the emitter
			// would think it lost changes that are still there.
			horizon = min(beforeXID, uint64(*hold))
			if top != nil && uint64(*top)+1 > horizon {
				horizon = uint64(*top) + 1
			}
		}
		if horizon == 0 {
			return nil
		}
		x := strconv.FormatUint(horizon, 10)
		if _, err := tx.Exec(ctx, `INSERT INTO change_retention (pruned_before) VALUES ($1::text::xid8)
			ON CONFLICT (one) DO UPDATE SET pruned_before = greatest(change_retention.pruned_before, EXCLUDED.pruned_before)`, x); err != nil {
			return err
		}
		if hold != nil {
			return nil
		}
		_, err = tx.Exec(ctx, `UPDATE feed_cursors SET xid = ($2::bigint - 1)::text::xid8, seq = $3
			WHERE name IN (SELECT name FROM feed_cursors WHERE name = $1 FOR UPDATE SKIP LOCKED)
			  AND xid < ($2::bigint - 1)::text::xid8
			  AND NOT EXISTS (SELECT 1 FROM reactor_bindings)`, reactorFeed, int64(horizon), int64(math.MaxInt64))
		return err
	})
	return n, err
}

// CurrentXID returns the database's next transaction id; retention
// samples it to know which transactions are older than a given time.
func (s *Store) CurrentXID(ctx context.Context) (uint64, error) {
	var xid int64
	err := s.db(ctx).QueryRow(ctx, `SELECT pg_snapshot_xmax(pg_current_snapshot())::text::bigint`).Scan(&xid)
	return uint64(xid), err
}
