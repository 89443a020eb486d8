package store

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"

	"github.com/convergehq/converge/server/internal/trigger"
)

// RecordTaskEvent records an event a running task reports on its
// resource, at the generation the task was given, if the task still holds
// lease (its epoch, claimed). It reports whether it recorded the event: a
// lease the queue has moved on from, or a task with no resource of its own
// (a reactor delivery), records nothing.
func (s *Store) RecordTaskEvent(ctx context.Context, l Lease, typ, reason, message, actor string) (bool, error) {
	recorded := false
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		var id int64
		var ns, kind, name string
		err := tx.QueryRow(ctx, `
			SELECT r.id, r.namespace, r.kind, r.name FROM tasks t
			JOIN resources r ON r.id = t.resource_id
			WHERE t.id = $1 AND t.epoch = $2 AND t.claimed_by IS NOT NULL AND t.trigger <> $3`,
			l.TaskID, l.Epoch, trigger.Reactor).Scan(&id, &ns, &kind, &name)
		if errors.Is(err, pgx.ErrNoRows) {
			recorded = false
			return nil
		}
		if err != nil {
			return err
		}
		ev := newEventBatch()
		ev.add(id, ns, kind, name, l.Generation, typ, reason, message, actor)
		batch := &pgx.Batch{}
		ev.queue(batch)
		recorded = true
		return tx.SendBatch(ctx, batch).Close()
	})
	return recorded, err
}
