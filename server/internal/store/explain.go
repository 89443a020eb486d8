package store

import (
	"context"

	"github.com/jackc/pgx/v5"
)

// Blockers are the resources another resource's progress waits on, by
// the scheduler's own rules.
type Blockers struct {
	// Dependencies its gate waits for: being deleted, or not synced.
	Dependencies []Resource
	// Children that keep a composite from Ready (the culprits' phases).
	Children []Resource
	// For a resource being deleted: the children and the dependents being
	// deleted, which its teardown waits for.
	Dependents []Resource
}

// BlockersOf reads what r waits on, up to limit resources of each sort.
func (s *Store) BlockersOf(ctx context.Context, r Resource, limit int) (Blockers, error) {
	var b Blockers
	var err error
	collect := func(dst *[]Resource, where string) {
		if err != nil {
			return
		}
		var rows pgx.Rows
		rows, err = s.db(ctx).Query(ctx, `SELECT `+resourceColumns(false)+` FROM resources r `+resourceJoins+`
			WHERE `+where+` ORDER BY converge_phase(r) <> 'Failed', r.kind, r.name LIMIT $2`, r.ID, limit)
		if err != nil {
			return
		}
		*dst, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (Resource, error) { return scanResource(row) })
	}
	collect(&b.Dependencies, `r.id IN (SELECT e.dependency_id FROM edges e WHERE e.dependent_id = $1)
		AND converge_blocks_dependents(r)`)
	collect(&b.Children, `r.owner_id = $1 AND `+notReady("r"))
	if r.DeletionRequestedAt != nil {
		collect(&b.Dependents, `(r.owner_id = $1 OR r.id IN (SELECT e.dependent_id FROM edges e WHERE e.dependency_id = $1))
			AND r.deletion_requested_at IS NOT NULL`)
	}
	return b, err
}
