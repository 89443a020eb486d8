package store

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
)

// Task record outcomes.
const (
	RecordApplied   = "applied"
	RecordDiscarded = "discarded"
	RecordLost      = "lost"
)

// TaskRecord is what one task was sent and returned, and what became of
// the result (see migrations/00004_task_records.sql).
type TaskRecord struct {
	ID         int64
	ResourceID int64
	// Ref is filled by reads.
	Ref           Ref
	TaskID        int64
	Trigger       string
	Generation    int64
	Attempt       int32
	Worker        string
	Session       string
	ClaimedAt     time.Time
	DispatchedAt  time.Time // zero: never sent to a worker
	EndedAt       time.Time
	Outcome       string
	DiscardReason string
	Failed        bool
	Terminal      bool
	ErrorReason   string
	Error         string
	Children      int32
	Truncated     bool
	// Input and Result are the stored documents (taskrec.Document reads
	// them); reads of a list leave them nil.
	Input, Result []byte
}

// TaskRecordPage is a page of a resource's records, newest first.
type TaskRecordPage struct {
	Records []TaskRecord
	More    bool
}

// EdgeFlows returns, per dependent among ids, the flows of its edges
// (each a JSON array of {"from"|"expr", "to"}).
func (s *Store) EdgeFlows(ctx context.Context, ids []int64) (map[int64][][]byte, error) {
	rows, err := s.relaxedDB(ctx).Query(ctx, `SELECT dependent_id, flows FROM edges
		WHERE dependent_id = ANY($1::bigint[]) AND flows IS NOT NULL AND flows <> '[]'::jsonb`, ids)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[int64][][]byte{}
	for rows.Next() {
		var id int64
		var f []byte
		if err := rows.Scan(&id, &f); err != nil {
			return nil, err
		}
		out[id] = append(out[id], f)
	}
	return out, rows.Err()
}

// PruneTaskRecords keeps only the newest keep records of each resource
// of ids, and removes all records of those of ids that no longer exist.
// Pruning by each resource's keep-th newest id reads at most keep+1 index
// entries per resource.
func (s *Store) PruneTaskRecords(ctx context.Context, ids []int64, keep int) error {
	if len(ids) == 0 {
		return nil
	}
	_, err := s.relaxedDB(ctx).Exec(ctx, `
		DELETE FROM task_records t USING (
		    SELECT u.id, EXISTS (SELECT 1 FROM resources r WHERE r.id = u.id) AS live,
		           (SELECT k.id FROM task_records k WHERE k.resource_id = u.id
		            ORDER BY k.id DESC OFFSET $2 - 1 LIMIT 1) AS oldest
		    FROM unnest($1::bigint[]) AS u(id)) c
		WHERE t.resource_id = c.id AND (NOT c.live OR t.id < c.oldest)`, ids, keep)
	return err
}

const taskRecordColumns = `t.id, t.resource_id, r.namespace, r.kind, r.name, t.task_id, t.trigger, t.generation,
	t.attempt, t.worker, t.session, t.claimed_at, t.dispatched_at, t.ended_at, t.outcome, t.discard_reason,
	t.failed, t.terminal, t.error_reason, t.error, t.children, t.truncated`

func scanTaskRecord(row pgx.Row, whole bool) (TaskRecord, error) {
	var r TaskRecord
	var dispatched pgtype.Timestamptz
	dst := []any{&r.ID, &r.ResourceID, &r.Ref.Namespace, &r.Ref.Kind, &r.Ref.Name, &r.TaskID, &r.Trigger,
		&r.Generation, &r.Attempt, &r.Worker, &r.Session, &r.ClaimedAt, &dispatched, &r.EndedAt, &r.Outcome,
		&r.DiscardReason, &r.Failed, &r.Terminal, &r.ErrorReason, &r.Error, &r.Children, &r.Truncated}
	if whole {
		dst = append(dst, &r.Input, &r.Result)
	}
	if err := row.Scan(dst...); err != nil {
		return TaskRecord{}, err
	}
	if dispatched.Valid {
		r.DispatchedAt = dispatched.Time
	}
	return r, nil
}

// ListTaskRecords returns up to limit of a resource's records, newest
// first, with ids below before (0: from the newest), without their input
// and result.
func (s *Store) ListTaskRecords(ctx context.Context, key ResourceKey, before int64, limit int) (TaskRecordPage, error) {
	var id int64
	err := s.db(ctx).QueryRow(ctx, `SELECT id FROM resources WHERE namespace = $1 AND kind = $2 AND name = $3`,
		key.Namespace, key.Kind, key.Name).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		return TaskRecordPage{}, notFoundf("resource %s/%s/%s not found", key.Namespace, key.Kind, key.Name)
	}
	if err != nil {
		return TaskRecordPage{}, err
	}
	rows, err := s.db(ctx).Query(ctx, `SELECT `+taskRecordColumns+`
		FROM task_records t JOIN resources r ON r.id = t.resource_id
		WHERE t.resource_id = $1 AND ($2 = 0 OR t.id < $2)
		ORDER BY t.id DESC LIMIT $3`, id, before, limit+1)
	if err != nil {
		return TaskRecordPage{}, err
	}
	defer rows.Close()
	var page TaskRecordPage
	for rows.Next() {
		r, err := scanTaskRecord(rows, false)
		if err != nil {
			return TaskRecordPage{}, err
		}
		page.Records = append(page.Records, r)
	}
	if err := rows.Err(); err != nil {
		return TaskRecordPage{}, err
	}
	if len(page.Records) > limit {
		page.Records, page.More = page.Records[:limit], true
	}
	return page, nil
}

// GetTaskRecord returns one record whole.
func (s *Store) GetTaskRecord(ctx context.Context, id int64) (TaskRecord, error) {
	r, err := scanTaskRecord(s.db(ctx).QueryRow(ctx, `SELECT `+taskRecordColumns+`, t.input, t.result
		FROM task_records t JOIN resources r ON r.id = t.resource_id WHERE t.id = $1`, id), true)
	if errors.Is(err, pgx.ErrNoRows) {
		return TaskRecord{}, notFoundf("task record %d not found (records are kept for the last tasks of each resource only)", id)
	}
	return r, err
}
