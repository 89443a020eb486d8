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
	// NameContains keeps resources whose name contains it.
	NameContains string
	// After continues a listing after this key.
	After   *ResourceKey
	Limit   int
	Summary bool
	// Visible limits the listing to what the caller may read; nil: all.
	Visible *Visible
}

// ListResources returns up to f.Limit resources in (namespace, kind, name)
// order, and whether more follow.
func (s *Store) ListResources(ctx context.Context, f ListFilter) ([]Resource, bool, error) {
	var args []any
	arg := func(v any) string {
		args = append(args, v)
		return fmt.Sprintf("$%d", len(args))
	}
	where, err := f.conditions(arg)
	if err != nil {
		return nil, false, err
	}
	if f.After != nil {
		where = append(where, "(r.namespace, r.kind, r.name) > ("+arg(f.After.Namespace)+", "+
			arg(f.After.Kind)+", "+arg(f.After.Name)+")")
	}
	q := `SELECT ` + resourceColumns(f.Summary) + ` FROM resources r ` + resourceJoins
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	q += " ORDER BY r.namespace, r.kind, r.name LIMIT " + arg(f.Limit+1)
	rows, err := s.db(ctx).Query(ctx, q, args...)
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

// conditions are the WHERE terms of f's filters (not its keyset
// position), with their values passed through arg.
func (f ListFilter) conditions(arg func(any) string) ([]string, error) {
	var where []string
	if c := visibleClause(f.Visible, "r.namespace", "r.kind", arg); c != "" {
		where = append(where, c)
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
		where = append(where, "converge_phase(r) = ANY("+arg(f.Phases)+"::text[])")
	}
	if f.NameContains != "" {
		where = append(where, "strpos(r.name, "+arg(f.NameContains)+") > 0")
	}
	for _, t := range f.Selector {
		cond, err := labelCondition(t, arg)
		if err != nil {
			return nil, err
		}
		where = append(where, cond)
	}
	return where, nil
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

// DeleteResource requests deletion of a resource: it, everything it owns
// and everything that depends on it are marked Deleting, and teardown
// runs dependents first, children before their composite. A resource with
// nothing under or after it and no teardown to run goes at once. It
// returns the resource as it stands after the call and whether it is
// gone.
func (s *Store) DeleteResource(ctx context.Context, actor string, key ResourceKey, policy TeardownPolicy) (Resource, bool, error) {
	var out Resource
	var gone bool
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		gone = false
		var r lockedRow
		var id int64
		err := tx.QueryRow(ctx, `SELECT id, `+lockedColumns+`
			FROM resources r WHERE namespace = $1 AND kind = $2 AND name = $3 FOR NO KEY UPDATE`,
			key.Namespace, key.Kind, key.Name).Scan(append([]any{&id}, r.dest()...)...)
		if errors.Is(err, pgx.ErrNoRows) {
			return notFoundf("resource %s/%s/%s not found", key.Namespace, key.Kind, key.Name)
		}
		if err != nil {
			return err
		}
		// Read with the row locked, in a statement of its own: a compose
		// that held the lock first has committed its children by now, and
		// this statement's snapshot sees them.
		var hasDependents bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM resources c WHERE c.owner_id = $1)
			OR EXISTS (SELECT 1 FROM edges e WHERE e.dependency_id = $1)`, id).Scan(&hasDependents); err != nil {
			return err
		}
		action := policy.Action(r.deletionPolicy, r.observed)
		if !r.deleting && !hasDependents && action != TeardownReaction {
			gone = true
			reason := "deleted; the kind has no teardown reaction"
			switch action {
			case TeardownRetain:
				reason = "forgotten without teardown: deletion policy retain"
			case TeardownObserved:
				reason = "forgotten without teardown: management policy observe; the external object stays"
			}
			batch := &pgx.Batch{}
			batch.Queue(`DELETE FROM resources WHERE id = $1`, id)
			batch.Queue(`WITH `+dropTasks(`WHERE t.resource_id = $1`, "the resource was deleted"), id)
			ev := newEventBatch()
			ev.add(id, key.Namespace, key.Kind, key.Name, r.generation, "Normal", "Deleted", reason, actor)
			ev.queue(batch)
			return tx.SendBatch(ctx, batch).Close()
		}
		if !r.deleting {
			if _, err := markForDeletion(ctx, tx, []int64{id}, actor, "deletion requested"); err != nil {
				return err
			}
		}
		out, err = scanResource(tx.QueryRow(ctx, `SELECT `+resourceColumns(false)+`
			FROM resources r `+resourceJoins+` WHERE r.id = $1`, id))
		return err
	})
	return out, gone, err
}
