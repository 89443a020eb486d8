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
}

// CurrentCursor returns a cursor from which a reader sees every change
// not yet visible now. Changes already visible may be delivered again;
// readers deduplicate by resource version.
func (s *Store) CurrentCursor(ctx context.Context) (Cursor, error) {
	var xmin uint64
	err := s.pool.QueryRow(ctx, `SELECT pg_snapshot_xmin(pg_current_snapshot())::text::bigint`).Scan(&xmin)
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
	rows, err := s.pool.Query(ctx, `
		WITH h AS (SELECT pg_snapshot_xmin(pg_current_snapshot()) AS xmin)
		SELECT h.xmin::text::bigint, ch.xid::text::bigint, ch.seq, ch.resource_id, ch.type, ch.namespace,
		       ch.kind, ch.kind_version, ch.name, ch.phase, ch.previous_phase, ch.generation,
		       ch.synced_generation, ch.resource_version, ch.message, ch.at
		FROM h LEFT JOIN LATERAL (
		    SELECT * FROM changes
		    WHERE (xid, seq) > ($1::text::xid8, $2) AND xid < h.xmin
		      AND ($3 = '' OR namespace = $3) AND ($4 = '' OR kind = $4) AND ($5 = '' OR name = $5)
		    ORDER BY xid, seq
		    LIMIT $6) ch ON true`, strconv.FormatUint(c.XID, 10), c.Seq, f.Namespace, f.Kind, f.Name, limit)
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
	err := s.pool.QueryRow(ctx, `SELECT pruned_before::text::bigint FROM change_retention`).Scan(&before)
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

// PruneChanges deletes changes made by transactions older than xid, at
// most limit rows per call, records the new horizon, and reports how
// many rows it deleted.
func (s *Store) PruneChanges(ctx context.Context, beforeXID uint64, limit int) (int64, error) {
	x := strconv.FormatUint(beforeXID, 10)
	var n int64
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `
			DELETE FROM changes WHERE (xid, seq) IN (
			    SELECT xid, seq FROM changes WHERE xid < $1::text::xid8 ORDER BY xid, seq LIMIT $2)`, x, limit)
		if err != nil {
			return err
		}
		n = tag.RowsAffected()
		_, err = tx.Exec(ctx, `INSERT INTO change_retention (pruned_before) VALUES ($1::text::xid8)
			ON CONFLICT (one) DO UPDATE SET pruned_before = greatest(change_retention.pruned_before, EXCLUDED.pruned_before)`, x)
		return err
	})
	return n, err
}

// CurrentXID returns the database's next transaction id; retention
// samples it to know which transactions are older than a given time.
func (s *Store) CurrentXID(ctx context.Context) (uint64, error) {
	var xid int64
	err := s.pool.QueryRow(ctx, `SELECT pg_snapshot_xmax(pg_current_snapshot())::text::bigint`).Scan(&xid)
	return uint64(xid), err
}
