package store

import (
	"context"
	"fmt"
)

// QueueDepth is the number of unclaimed tasks of one kind and trigger.
type QueueDepth struct {
	Kind    string
	Trigger string
	Tasks   int64
}

// QueueDepths counts unclaimed tasks (ready, or waiting for a retry) by
// kind and trigger, summed over kind versions. It groups by the leading
// columns of the tasks_claimable partial index, so it can be answered by
// one ordered pass over the queued entries of that index, touching no
// leased work.
func (s *Store) QueueDepths(ctx context.Context) ([]QueueDepth, error) {
	rows, err := s.relaxedDB(ctx).Query(ctx, `
		SELECT kind, trigger, count(*)
		FROM tasks
		WHERE claimed_by IS NULL
		GROUP BY kind, kind_version, trigger`)
	if err != nil {
		return nil, fmt.Errorf("reading the queue depth: %w", err)
	}
	defer rows.Close()
	var out []QueueDepth
	for rows.Next() {
		var d QueueDepth
		if err := rows.Scan(&d.Kind, &d.Trigger, &d.Tasks); err != nil {
			return nil, fmt.Errorf("reading the queue depth: %w", err)
		}
		out = append(out, d)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("reading the queue depth: %w", err)
	}
	return out, nil
}

// Backlog counts a kind's reconcile work waiting for a worker (every
// version, not yet claimed), up to limit: admission only asks whether the bound is
// passed, so the count stops there and stays an index range scan however
// deep the queue is.
func (s *Store) Backlog(ctx context.Context, kind string, limit int64) (int64, error) {
	var n int64
	err := s.relaxedDB(ctx).QueryRow(ctx, `
		SELECT count(*) FROM (
		    SELECT 1 FROM tasks t
		    WHERE t.kind = $1 AND t.claimed_by IS NULL AND `+isReconcile+`
		    LIMIT $2) q`, kind, limit).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("reading the backlog of kind %s: %w", kind, err)
	}
	return n, nil
}
