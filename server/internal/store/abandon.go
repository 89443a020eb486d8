package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// AbandonResource removes a resource from Converge without running any
// teardown, and with subtree everything it owns, transitively: the way
// out of a teardown that can never succeed. Their external objects, if
// any, stay where they are; the result lists the resources removed, each
// with an Abandoned event naming actor and reason. A resource that owns
// children is refused without subtree, so nothing is left without its
// owner. A live composite that still wants an abandoned child composes
// it again, as it would any child that went.
func (s *Store) AbandonResource(ctx context.Context, actor string, key ResourceKey, subtree bool, reason string) ([]ResourceState, error) {
	var out []ResourceState
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		out = nil
		var id int64
		err := tx.QueryRow(ctx, `SELECT id FROM resources WHERE namespace = $1 AND kind = $2 AND name = $3 FOR NO KEY UPDATE`,
			key.Namespace, key.Kind, key.Name).Scan(&id)
		if errors.Is(err, pgx.ErrNoRows) {
			return notFoundf("resource %s/%s/%s not found", key.Namespace, key.Kind, key.Name)
		}
		if err != nil {
			return err
		}
		// Lock the subtree top-down in id order (children are newer than
		// their owner), as every writer of several resources does.
		rows, err := tx.Query(ctx, `
			WITH RECURSIVE `+subtreeCTE(`$1::bigint`)+`
			SELECT `+stateColumns+`
			FROM resources r JOIN sub ON sub.id = r.id ORDER BY r.id FOR NO KEY UPDATE OF r`, id)
		if err != nil {
			return err
		}
		for rows.Next() {
			var st ResourceState
			if err := rows.Scan(st.dest()...); err != nil {
				rows.Close()
				return err
			}
			out = append(out, st)
		}
		if err := rows.Err(); err != nil {
			return err
		}
		if len(out) > 1 && !subtree {
			return conflictf("resource %s/%s/%s owns %d resource(s); abandon them with it (subtree) or delete them first",
				key.Namespace, key.Kind, key.Name, len(out)-1)
		}
		ids := make([]int64, len(out))
		ev := newEventBatch()
		for i, st := range out {
			ids[i] = st.ID
			msg := fmt.Sprintf("abandoned without teardown: %s; whatever it created outside Converge may remain", reason)
			if st.ID != id {
				msg = fmt.Sprintf("abandoned without teardown with %s/%s: %s; whatever it created outside Converge may remain",
					key.Kind, key.Name, reason)
			}
			ev.add(st.ID, st.Namespace, st.Kind, st.Name, st.Generation, "Warning", "Abandoned", msg, actor)
		}
		batch := &pgx.Batch{}
		batch.Queue(`WITH `+dropTasks(`WHERE t.resource_id = ANY($1::bigint[])`, "the resource was abandoned"), ids)
		batch.Queue(`DELETE FROM resources WHERE id = ANY($1::bigint[])`, ids)
		ev.queue(batch)
		return tx.SendBatch(ctx, batch).Close()
	})
	return out, err
}
