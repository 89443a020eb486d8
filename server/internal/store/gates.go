package store

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// GateInput is what the gate sees of a dependent and its dependencies.
type GateInput struct {
	ID       int64
	Kind     string
	Version  int32
	Name     string
	Spec     []byte // the desired spec, before flows
	Current  []byte // the spec as it stands
	Deps     []GateDep
	Deleting bool
}

// GateDep is one dependency of a dependent.
type GateDep struct {
	Ref   Ref
	Phase string
	// Blocks: the dependency holds its dependents (converge_blocks_dependents);
	// Deleting says whether because it is being deleted.
	Blocks   bool
	Deleting bool
	Status   []byte
	Spec     []byte
	Flows    []byte // JSON array of {"from"|"expr", "to"}
}

// GateDecision is the gate's verdict: open with a new effective spec, or
// waiting with a reason.
type GateDecision struct {
	// Waiting, when set, holds the dependent with this reason.
	Waiting string
	// Spec is the effective spec (desired plus flow values) when open.
	Spec []byte
}

// Gates checks dependents' dependencies and value flows, all in one
// transaction: decide runs with the dependents locked. A dependent whose
// gate opens takes the flowed values into its spec (a change bumps its
// generation) and is scheduled. It returns how many were scheduled.
func (s *Store) Gates(ctx context.Context, ts []InternalTask, decide func(GateInput) GateDecision) (scheduled int, err error) {
	ids := make([]int64, len(ts))
	for i, t := range ts {
		ids[i] = t.ResourceID
	}
	err = s.inTx(ctx, func(tx pgx.Tx) error {
		scheduled = 0
		rows, err := tx.Query(ctx, `SELECT id, kind, kind_version, name, coalesce(desired_spec, spec), spec, waiting
			FROM resources WHERE id = ANY($1::bigint[]) AND deletion_requested_at IS NULL
			ORDER BY id FOR NO KEY UPDATE`, ids)
		if err != nil {
			return err
		}
		inputs := map[int64]*GateInput{}
		waiting := map[int64]*string{}
		var order []int64
		for rows.Next() {
			in := &GateInput{}
			var w *string
			if err := rows.Scan(&in.ID, &in.Kind, &in.Version, &in.Name, &in.Spec, &in.Current, &w); err != nil {
				rows.Close()
				return err
			}
			inputs[in.ID], waiting[in.ID] = in, w
			order = append(order, in.ID)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		rows, err = tx.Query(ctx, `
			SELECT e.dependent_id, d.namespace, d.kind, d.name, converge_phase(d), converge_blocks_dependents(d),
			       d.deletion_requested_at IS NOT NULL, d.status, d.spec, e.flows
			FROM edges e JOIN resources d ON d.id = e.dependency_id
			WHERE e.dependent_id = ANY($1::bigint[]) ORDER BY e.dependent_id, d.id`, order)
		if err != nil {
			return err
		}
		for rows.Next() {
			var id int64
			var d GateDep
			if err := rows.Scan(&id, &d.Ref.Namespace, &d.Ref.Kind, &d.Ref.Name, &d.Phase, &d.Blocks, &d.Deleting, &d.Status, &d.Spec, &d.Flows); err != nil {
				rows.Close()
				return err
			}
			inputs[id].Deps = append(inputs[id].Deps, d)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		var waitIDs, openIDs []int64
		var waitWhy []string
		var specs [][]byte
		for _, id := range order {
			dec := decide(*inputs[id])
			if dec.Waiting != "" {
				if w := waiting[id]; w == nil || *w != dec.Waiting {
					waitIDs, waitWhy = append(waitIDs, id), append(waitWhy, truncate(dec.Waiting, maxFailureMessage))
				}
				continue
			}
			openIDs, specs = append(openIDs, id), append(specs, dec.Spec)
		}
		batch := &pgx.Batch{}
		if len(waitIDs) > 0 {
			batch.Queue(`UPDATE resources r SET waiting = w.why, resource_version = r.resource_version + 1, updated_at = now()
				FROM unnest($1::bigint[], $2::text[]) AS w(id, why) WHERE r.id = w.id`, waitIDs, waitWhy)
		}
		if len(openIDs) > 0 {
			batch.Queue(recordAsSQL, SourceFlow, "system")
			batch.Queue(`
				UPDATE resources r SET
				    generation = r.generation + CASE WHEN r.spec <> o.spec THEN 1 ELSE 0 END,
				    spec = o.spec, waiting = NULL,
				    resource_version = r.resource_version + 1, updated_at = now()
				FROM unnest($1::bigint[], $2::jsonb[]) AS o(id, spec)
				WHERE r.id = o.id AND (r.spec <> o.spec OR r.waiting IS NOT NULL)`, openIDs, specs)
			batch.Queue(scheduleReconcileSQL, openIDs).Exec(func(tag pgconn.CommandTag) error {
				scheduled = int(tag.RowsAffected())
				return nil
			})
		}
		if batch.Len() > 0 {
			if err := tx.SendBatch(ctx, batch).Close(); err != nil {
				return err
			}
		}
		return finishInternalAll(ctx, tx, ts)
	})
	return scheduled, err
}
