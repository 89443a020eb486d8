package store

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"
)

// Node is a resource as trees and graphs show it.
type Node struct {
	ID          int64
	OwnerID     *int64
	Ref         Ref
	KindVersion int32
	Phase       string
	Message     string
	Rollup      []byte
	// Children counts all children (shown or not), for trees.
	Children int
}

// notReady is the phase filter of culprits and of "not Ready first", on a
// resource row named by alias.
func notReady(alias string) string {
	return `converge_phase(` + alias + `) NOT IN ('Ready', 'Orphaned', 'Quarantined')`
}

const nodeColumns = `r.id, r.owner_id, r.namespace, r.kind, r.name, r.kind_version, converge_phase(r),
	coalesce(r.failure_message, r.waiting, ''), r.rollup`

func scanNode(row pgx.Row, extra ...any) (Node, error) {
	var n Node
	err := row.Scan(append([]any{&n.ID, &n.OwnerID, &n.Ref.Namespace, &n.Ref.Kind, &n.Ref.Name, &n.KindVersion,
		&n.Phase, &n.Message, &n.Rollup}, extra...)...)
	return n, err
}

// Culprit is a descendant that keeps a composite from being Ready, with
// the composites between them.
type Culprit struct {
	Node
	Path []Ref
}

// Culprits returns the deepest descendants of a composite that are not
// Ready (Orphaned and Quarantined ones do not count), failed ones first,
// at most limit.
func (s *Store) Culprits(ctx context.Context, rootID int64, limit int) ([]Culprit, error) {
	rows, err := s.db(ctx).Query(ctx, `
		WITH RECURSIVE walk(id, path, depth) AS (
		    SELECT $1::bigint, ARRAY[]::bigint[], 0
		  UNION ALL
		    SELECT c.id, w.path || c.id, w.depth + 1 FROM walk w
		    JOIN resources c ON c.owner_id = w.id
		    WHERE `+notReady("c")+` AND w.depth < 32
		)
		SELECT `+nodeColumns+`, w.path
		FROM walk w JOIN resources r ON r.id = w.id
		WHERE w.depth > 0
		  AND NOT EXISTS (SELECT 1 FROM resources c WHERE c.owner_id = w.id AND `+notReady("c")+`)
		ORDER BY (converge_phase(r) = 'Failed') DESC, (converge_phase(r) = 'Degraded') DESC, w.depth DESC, r.id
		LIMIT $2`, rootID, limit)
	if err != nil {
		return nil, err
	}
	var out []Culprit
	var paths [][]int64
	for rows.Next() {
		var path []int64
		n, err := scanNode(rows, &path)
		if err != nil {
			rows.Close()
			return nil, err
		}
		out = append(out, Culprit{Node: n})
		paths = append(paths, path)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	// Name the composites along each path (all but the culprit itself).
	var ids []int64
	for _, p := range paths {
		if len(p) > 1 {
			ids = append(ids, p[:len(p)-1]...)
		}
	}
	names := map[int64]Ref{}
	if len(ids) > 0 {
		rows, err := s.db(ctx).Query(ctx, `SELECT id, namespace, kind, name FROM resources WHERE id = ANY($1::bigint[])`, ids)
		if err != nil {
			return nil, err
		}
		for rows.Next() {
			var id int64
			var r Ref
			if err := rows.Scan(&id, &r.Namespace, &r.Kind, &r.Name); err != nil {
				rows.Close()
				return nil, err
			}
			names[id] = r
		}
		rows.Close()
	}
	for i, p := range paths {
		for _, id := range p[:max(len(p)-1, 0)] {
			out[i].Path = append(out[i].Path, names[id])
		}
	}
	return out, nil
}

// NodeByKey returns one resource as a node.
func (s *Store) NodeByKey(ctx context.Context, k ResourceKey) (Node, error) {
	var children int
	n, err := scanNode(s.db(ctx).QueryRow(ctx, `SELECT `+nodeColumns+`,
		(SELECT count(*) FROM resources c WHERE c.owner_id = r.id)
		FROM resources r WHERE r.namespace = $1 AND r.kind = $2 AND r.name = $3`, k.Namespace, k.Kind, k.Name), &children)
	if errors.Is(err, pgx.ErrNoRows) {
		return n, notFoundf("resource %s/%s/%s not found", k.Namespace, k.Kind, k.Name)
	}
	n.Children = children
	return n, err
}

// ChildrenOf returns up to perParent children of each parent, not Ready
// ones first, each with its own child count.
func (s *Store) ChildrenOf(ctx context.Context, parents []int64, perParent int) ([]Node, error) {
	rows, err := s.db(ctx).Query(ctx, `
		SELECT `+nodeColumns+`, (SELECT count(*) FROM resources c WHERE c.owner_id = r.id)
		FROM (
		    SELECT c.id, row_number() OVER (PARTITION BY c.owner_id ORDER BY (`+notReady("c")+`) DESC, c.kind, c.name) AS rank
		    FROM resources c WHERE c.owner_id = ANY($1::bigint[])
		) ranked JOIN resources r ON r.id = ranked.id
		WHERE ranked.rank <= $2
		ORDER BY r.owner_id, ranked.rank`, parents, perParent)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (Node, error) {
		var n Node
		var children int
		n, err := scanNode(row, &children)
		n.Children = children
		return n, err
	})
}

// GraphEdge is an edge among a composite's children, or to a reference.
type GraphEdge struct {
	Dependent, Dependency int64
	Flows                 []byte
	Satisfied             bool
}

// Graph returns up to limit children of a composite and the edges the
// composite declared, with the outside resources they reach.
func (s *Store) Graph(ctx context.Context, compositeID int64, limit int) (nodes []Node, edges []GraphEdge, more int, err error) {
	nodes, err = s.ChildrenOf(ctx, []int64{compositeID}, limit)
	if err != nil {
		return nil, nil, 0, err
	}
	var total int
	if err := s.db(ctx).QueryRow(ctx, `SELECT count(*) FROM resources WHERE owner_id = $1`, compositeID).Scan(&total); err != nil {
		return nil, nil, 0, err
	}
	rows, err := s.db(ctx).Query(ctx, `
		SELECT e.dependent_id, e.dependency_id, e.flows, converge_synced(d)
		FROM edges e JOIN resources d ON d.id = e.dependency_id
		WHERE e.owner_id = $1 ORDER BY e.dependent_id, e.dependency_id`, compositeID)
	if err != nil {
		return nil, nil, 0, err
	}
	edges, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (GraphEdge, error) {
		var e GraphEdge
		err := row.Scan(&e.Dependent, &e.Dependency, &e.Flows, &e.Satisfied)
		return e, err
	})
	if err != nil {
		return nil, nil, 0, err
	}
	// Outside resources the edges reach, so every edge has both ends.
	shown := map[int64]bool{compositeID: true}
	for _, n := range nodes {
		shown[n.ID] = true
	}
	var outside []int64
	for _, e := range edges {
		if !shown[e.Dependency] {
			outside = append(outside, e.Dependency)
			shown[e.Dependency] = true
		}
	}
	if len(outside) > 0 {
		rows, err := s.db(ctx).Query(ctx, `SELECT `+nodeColumns+`, 0 FROM resources r WHERE r.id = ANY($1::bigint[])`, outside)
		if err != nil {
			return nil, nil, 0, err
		}
		ext, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (Node, error) { return scanNode(row, new(int)) })
		if err != nil {
			return nil, nil, 0, err
		}
		nodes = append(nodes, ext...)
	}
	return nodes, edges, max(total-limit, 0), nil
}
