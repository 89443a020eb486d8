package store

import (
	"context"
	"encoding/json"
	"reflect"

	"github.com/jackc/pgx/v5"
)

// replaceEdges swaps the composite's edges for the new set and returns
// the dependents whose incoming edges changed.
func replaceEdges(ctx context.Context, tx pgx.Tx, parentID int64, edges []EdgeSpec, ids map[[2]string]int64, refs map[Ref]int64) ([]int64, error) {
	type pair struct{ dependent, dependency int64 }
	next := map[pair][]byte{}
	var dependents, dependencies []int64
	var flows [][]byte
	for _, e := range edges {
		dep, ok := ids[[2]string{e.Dependent.Kind, e.Dependent.Name}]
		if !ok {
			continue // a child being deleted: it has no edges any more
		}
		target, ok := ids[[2]string{e.Dependency.Kind, e.Dependency.Name}]
		if !ok {
			target, ok = refs[e.Dependency]
		}
		if !ok {
			continue
		}
		next[pair{dep, target}] = e.Flows
		dependents, dependencies, flows = append(dependents, dep), append(dependencies, target), append(flows, e.Flows)
	}
	rows, err := tx.Query(ctx, `DELETE FROM edges WHERE owner_id = $1 RETURNING dependent_id, dependency_id, flows`, parentID)
	if err != nil {
		return nil, err
	}
	changed := map[int64]bool{}
	seen := map[pair]bool{}
	var released []int64
	for rows.Next() {
		var p pair
		var old []byte
		if err := rows.Scan(&p.dependent, &p.dependency, &old); err != nil {
			rows.Close()
			return nil, err
		}
		seen[p] = true
		f, kept := next[p]
		if !kept || !sameJSON(f, old) {
			changed[p.dependent] = true
		}
		if !kept {
			released = append(released, p.dependency)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	// A deleting dependency whose teardown waited for this dependent no
	// longer waits for it: its teardown looks again.
	if len(released) > 0 {
		if _, err := tx.Exec(ctx, `
			SELECT converge_wake(array_agg(r.id ORDER BY r.id), 'teardown') FROM resources r
			WHERE r.id = ANY($1::bigint[]) AND r.deletion_requested_at IS NOT NULL
			HAVING count(*) > 0`, released); err != nil {
			return nil, err
		}
	}
	for p := range next {
		if !seen[p] {
			changed[p.dependent] = true
		}
	}
	if len(dependents) > 0 {
		if _, err := tx.Exec(ctx, `
			INSERT INTO edges (dependent_id, dependency_id, owner_id, flows)
			SELECT n.dependent_id, n.dependency_id, $1, n.flows
			FROM unnest($2::bigint[], $3::bigint[], $4::jsonb[]) AS n(dependent_id, dependency_id, flows)
			ORDER BY n.dependent_id, n.dependency_id
			ON CONFLICT (dependent_id, dependency_id) DO UPDATE SET flows = EXCLUDED.flows, owner_id = EXCLUDED.owner_id`,
			parentID, dependents, dependencies, flows); err != nil {
			return nil, err
		}
	}
	out := make([]int64, 0, len(changed))
	for id := range changed {
		out = append(out, id)
	}
	return out, nil
}

// sameJSON compares two JSON documents by value.
func sameJSON(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}
