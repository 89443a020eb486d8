package store

import (
	"context"
	"fmt"
	"sort"

	"github.com/jackc/pgx/v5"
)

// lockChildren locks the composite's current children in id order.
func lockChildren(ctx context.Context, tx pgx.Tx, parentID int64) (map[[2]string]existingChild, error) {
	rows, err := tx.Query(ctx, `
		SELECT r.id, r.kind, r.name, r.orphaned_until IS NOT NULL,
		       r.deletion_requested_at IS NOT NULL, r.desired_spec IS NOT NULL
		FROM resources r WHERE r.owner_id = $1 ORDER BY r.id FOR NO KEY UPDATE`, parentID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[[2]string]existingChild{}
	for rows.Next() {
		var e existingChild
		if err := rows.Scan(&e.id, &e.kind, &e.name, &e.orphaned, &e.deleting, &e.gated); err != nil {
			return nil, err
		}
		out[[2]string{e.kind, e.name}] = e
	}
	return out, rows.Err()
}

// applyChildren writes the child set and the edges.
func applyChildren(ctx context.Context, tx pgx.Tx, c Composition, parentID, rootID int64, namespace string,
	existing map[[2]string]existingChild, refs map[Ref]int64, res *ComposeResult) error {
	// Which children have dependencies: the gate schedules those.
	gated := map[[2]string]bool{}
	for _, e := range c.Edges {
		gated[[2]string{e.Dependent.Kind, e.Dependent.Name}] = true
	}
	var ins, upd childColumns
	desired := map[[2]string]bool{}
	for _, ch := range c.Children {
		k := [2]string{ch.Kind, ch.Name}
		desired[k] = true
		if old, ok := existing[k]; ok {
			if old.deleting {
				continue // recreated by a later compose once it is gone
			}
			upd.add(old.id, ch, gated[k])
			if old.orphaned {
				res.Readopted++
			}
			continue
		}
		ins.add(0, ch, gated[k])
	}
	ids := map[[2]string]int64{}
	for k, e := range existing {
		ids[k] = e.id
	}
	var schedule, gate []int64
	if len(ins.kinds) > 0 {
		rows, err := tx.Query(ctx, createChildrenSQL,
			namespace, parentID, rootID, ins.kinds, ins.versions, ins.names, ins.labels, ins.specs, ins.gated)
		if err != nil {
			return err
		}
		for rows.Next() {
			var id int64
			var kind, name string
			var isGated bool
			if err := rows.Scan(&id, &kind, &name, &isGated); err != nil {
				rows.Close()
				return err
			}
			ids[[2]string{kind, name}] = id
			res.Created++
			if len(res.CreatedNames) < maxNamedInEvent {
				res.CreatedNames = append(res.CreatedNames, kind+"/"+name)
			}
			if isGated {
				gate = append(gate, id)
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
	}
	if len(upd.ids) > 0 {
		// Only rows that change are written; a re-emitted child with the
		// same spec costs nothing (no generation bump, no churn). A gated
		// child keeps its spec until the gate writes the flowed values in;
		// when what it is asked for changes, its terminal failure no longer
		// pins it: it failed on what it was asked for before.
		rows, err := tx.Query(ctx, `
			UPDATE resources r SET
			    kind_version = u.kind_version,
			    labels = u.labels,
			    spec = CASE WHEN u.gated THEN r.spec ELSE u.spec END,
			    desired_spec = CASE WHEN u.gated THEN u.spec END,
			    generation = r.generation + CASE WHEN NOT u.gated
			        AND (r.spec <> u.spec OR r.kind_version <> u.kind_version) THEN 1 ELSE 0 END,
			    waiting = CASE WHEN NOT u.gated THEN NULL
			        WHEN coalesce(r.desired_spec, r.spec) <> u.spec OR r.waiting IS NOT NULL OR r.desired_spec IS NULL
			        THEN coalesce(r.waiting, '`+waitingForDependencies+`') END,
			    failure_terminal = r.failure_terminal AND NOT (u.gated AND coalesce(r.desired_spec, r.spec) <> u.spec),
			    orphaned_until = NULL,
			    resource_version = r.resource_version + 1,
			    updated_at = now()
			FROM unnest($1::bigint[], $2::int[], $3::jsonb[], $4::jsonb[], $5::bool[])
			    AS u(id, kind_version, labels, spec, gated)
			WHERE r.id = u.id
			  AND (r.kind_version <> u.kind_version OR r.labels <> u.labels
			       OR coalesce(r.desired_spec, r.spec) <> u.spec
			       OR (r.desired_spec IS NOT NULL) <> u.gated
			       OR r.orphaned_until IS NOT NULL)
			RETURNING r.id, u.gated, NOT converge_synced(r)`,
			upd.ids, upd.versions, upd.labels, upd.specs, upd.gated)
		if err != nil {
			return err
		}
		for rows.Next() {
			var id int64
			var isGated, pending bool
			if err := rows.Scan(&id, &isGated, &pending); err != nil {
				rows.Close()
				return err
			}
			res.Updated++
			switch {
			case isGated:
				gate = append(gate, id)
			case pending:
				schedule = append(schedule, id)
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
	}
	// Prune what the composer no longer wants.
	var orphan, doomed []int64
	for k, e := range existing {
		if desired[k] || e.deleting || e.orphaned {
			continue
		}
		if c.OrphanGrace > 0 {
			orphan = append(orphan, e.id)
		} else {
			doomed = append(doomed, e.id)
		}
	}
	if len(orphan) > 0 {
		tag, err := tx.Exec(ctx, `UPDATE resources SET orphaned_until = now() + $2 * interval '1 millisecond',
			resource_version = resource_version + 1, updated_at = now()
			WHERE id = ANY($1::bigint[]) AND orphaned_until IS NULL AND NOT quarantined`, orphan, c.OrphanGrace.Milliseconds())
		if err != nil {
			return err
		}
		res.Orphaned = int(tag.RowsAffected())
	}
	if len(doomed) > 0 {
		n, err := markForDeletion(ctx, tx, doomed, "composite:"+fmt.Sprint(parentID), "its composite no longer emits it")
		if err != nil {
			return err
		}
		res.Deleted = n
	}
	// Replace the composite's edges, and wake the gate of every dependent
	// whose incoming edges changed.
	changed, err := replaceEdges(ctx, tx, parentID, c.Edges, ids, refs)
	if err != nil {
		return err
	}
	res.regated = len(changed)
	gate = append(gate, changed...)
	if len(schedule) > 0 {
		sort.Slice(schedule, func(i, j int) bool { return schedule[i] < schedule[j] })
		if _, err := tx.Exec(ctx, scheduleReconcileSQL, schedule); err != nil {
			return err
		}
	}
	if len(gate) > 0 {
		if _, err := tx.Exec(ctx, `SELECT converge_wake($1::bigint[], 'gate')`, dedupe(gate)); err != nil {
			return err
		}
	}
	return nil
}

// createChildrenSQL inserts a composite's new children and queues the
// reconciles of those without dependencies, in one statement; the gate
// schedules the others.
var createChildrenSQL = `
	WITH ins AS (
	    INSERT INTO resources AS r (namespace, kind, kind_version, name, labels, spec, desired_spec, owner_id, root_id, waiting)
	    SELECT $1, c.kind, c.kind_version, c.name, c.labels, c.spec,
	           CASE WHEN c.gated THEN c.spec END, $2, $3,
	           CASE WHEN c.gated THEN '` + waitingForDependencies + `' END
	    FROM unnest($4::text[], $5::int[], $6::text[], $7::jsonb[], $8::jsonb[], $9::bool[])
	        AS c(kind, kind_version, name, labels, spec, gated)
	    ORDER BY c.kind, c.name
	    RETURNING r.*
	), queued AS (` + queueReconcile(`ins r`, `r.waiting IS NULL`) + `)
	SELECT r.id, r.kind, r.name, r.waiting IS NOT NULL FROM ins r`

type childColumns struct {
	ids           []int64
	kinds, names  []string
	versions      []int32
	labels, specs [][]byte
	gated         []bool
}

func (c *childColumns) add(id int64, ch ChildSpec, gated bool) {
	c.ids = append(c.ids, id)
	c.kinds = append(c.kinds, ch.Kind)
	c.names = append(c.names, ch.Name)
	c.versions = append(c.versions, ch.Version)
	c.labels = append(c.labels, ch.Labels)
	c.specs = append(c.specs, ch.Spec)
	c.gated = append(c.gated, gated)
}

func dedupe(ids []int64) []int64 {
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	out := ids[:0]
	for i, id := range ids {
		if i == 0 || id != ids[i-1] {
			out = append(out, id)
		}
	}
	return out
}
