package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/convergehq/converge/server/internal/labels"
	"github.com/jackc/pgx/v5"
)

// ResourceKey is a resource's identity, and the keyset position of lists.
type ResourceKey struct {
	Namespace, Kind, Name string
}

// ListFilter selects resources; zero fields match anything.
type ListFilter struct {
	Namespace   string
	Kind        string
	KindVersion int32
	Phases      []string
	Selector    labels.Selector
	// After continues a listing after this key.
	After   *ResourceKey
	Limit   int
	Summary bool
}

// ListResources returns up to f.Limit resources in (namespace, kind, name)
// order, and whether more follow.
func (s *Store) ListResources(ctx context.Context, f ListFilter) ([]Resource, bool, error) {
	var where []string
	var args []any
	arg := func(v any) string {
		args = append(args, v)
		return fmt.Sprintf("$%d", len(args))
	}
	if f.Namespace != "" {
		where = append(where, "r.namespace = "+arg(f.Namespace))
	}
	if f.Kind != "" {
		where = append(where, "r.kind = "+arg(f.Kind))
	}
	if f.KindVersion != 0 {
		where = append(where, "r.kind_version = "+arg(f.KindVersion))
	}
	if len(f.Phases) > 0 {
		where = append(where, "r.phase = ANY("+arg(f.Phases)+"::text[])")
	}
	for _, t := range f.Selector {
		cond, err := labelCondition(t, arg)
		if err != nil {
			return nil, false, err
		}
		where = append(where, cond)
	}
	if f.After != nil {
		where = append(where, "(r.namespace, r.kind, r.name) > ("+arg(f.After.Namespace)+", "+
			arg(f.After.Kind)+", "+arg(f.After.Name)+")")
	}
	q := `SELECT ` + resourceColumns(f.Summary) + ` FROM resources r ` + pendingTaskJoin
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	q += " ORDER BY r.namespace, r.kind, r.name LIMIT " + arg(f.Limit+1)
	rows, err := s.pool.Query(ctx, q, args...)
	if err != nil {
		return nil, false, err
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (Resource, error) { return scanResource(row) })
	if err != nil {
		return nil, false, err
	}
	more := len(out) > f.Limit
	if more {
		out = out[:f.Limit]
	}
	return out, more, nil
}

func labelCondition(t labels.Term, arg func(any) string) (string, error) {
	pair := func(v string) (string, error) {
		b, err := json.Marshal(map[string]string{t.Key: v})
		return string(b), err
	}
	switch t.Op {
	case labels.Equals, labels.NotEquals:
		obj, err := pair(t.Values[0])
		if err != nil {
			return "", err
		}
		cond := "r.labels @> " + arg(obj) + "::jsonb"
		if t.Op == labels.NotEquals {
			cond = "NOT (" + cond + ")"
		}
		return cond, nil
	case labels.Exists:
		return "r.labels ? " + arg(t.Key), nil
	case labels.NotExists:
		return "NOT (r.labels ? " + arg(t.Key) + ")", nil
	case labels.In:
		return "(r.labels ->> " + arg(t.Key) + ") = ANY(" + arg(t.Values) + "::text[])", nil
	case labels.NotIn:
		return "NOT coalesce((r.labels ->> " + arg(t.Key) + ") = ANY(" + arg(t.Values) + "::text[]), false)", nil
	}
	return "", fmt.Errorf("unknown label operator %d", t.Op)
}

// DeleteResource deletes a resource. With teardown, the resource is marked
// (phase Deleting) and a deleteRequested task runs its finalizer reaction;
// the row goes once that succeeds. Without, the row goes now. It returns
// the resource as it stands after the call and whether it is gone.
func (s *Store) DeleteResource(ctx context.Context, actor string, key ResourceKey, teardown bool) (Resource, bool, error) {
	var out Resource
	var gone bool
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		var id, gen int64
		var deleting bool
		err := tx.QueryRow(ctx, `SELECT id, generation, deletion_requested_at IS NOT NULL FROM resources
			WHERE namespace = $1 AND kind = $2 AND name = $3 FOR NO KEY UPDATE`,
			key.Namespace, key.Kind, key.Name).Scan(&id, &gen, &deleting)
		if errors.Is(err, pgx.ErrNoRows) {
			return notFoundf("resource %s/%s/%s not found", key.Namespace, key.Kind, key.Name)
		}
		if err != nil {
			return err
		}
		ev := newEventBatch()
		batch := &pgx.Batch{}
		switch {
		case !teardown:
			gone = true
			batch.Queue(`DELETE FROM resources WHERE id = $1`, id)
			batch.Queue(`DELETE FROM tasks WHERE resource_id = $1`, id)
			ev.add(id, key.Namespace, key.Kind, key.Name, gen, "Normal", "Deleted", "deleted; the kind has no teardown", actor)
		case !deleting:
			batch.Queue(`UPDATE resources SET deletion_requested_at = now(), resource_version = resource_version + 1,
				failure_generation = 0, failure_terminal = false, failure_attempts = 0, failure_message = NULL,
				updated_at = now() WHERE id = $1`, id)
			batch.Queue(`DELETE FROM tasks WHERE resource_id = $1 AND trigger <> $2`, id, TriggerDeleteRequested)
			batch.Queue(`INSERT INTO tasks (resource_id, trigger, kind, kind_version, shard, generation)
				SELECT id, $2, kind, kind_version, shard, generation FROM resources WHERE id = $1
				ON CONFLICT (resource_id, trigger) DO NOTHING`, id, TriggerDeleteRequested)
			ev.add(id, key.Namespace, key.Kind, key.Name, gen, "Normal", "DeletionRequested",
				"deletion requested; teardown is queued", actor)
		}
		ev.queue(batch)
		if err := tx.SendBatch(ctx, batch).Close(); err != nil {
			return err
		}
		if gone {
			return nil
		}
		out, err = scanResource(tx.QueryRow(ctx, `SELECT `+resourceColumns(false)+`
			FROM resources r `+pendingTaskJoin+` WHERE r.id = $1`, id))
		return err
	})
	return out, gone, err
}
