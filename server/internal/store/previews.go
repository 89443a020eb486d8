package store

import (
	"context"
	"time"
)

// A preview is a composer task run for a plan: the plan call writes it,
// a broker with a worker serving the reaction claims it and writes the
// worker's answer back, and the plan call reads the answer and deletes it.
// It lives in its own table (migrations/00010_plans.sql), never in tasks,
// so no claim, result apply, event or resource write can ever see it.
// Every statement here runs on the pool, outside any dry run: the plan
// call and the broker are different transactions, often different
// processes.

// FirstPreviewID is where preview ids start (the previews table's identity
// starts there, in migrations/00010_plans.sql): beyond any task id, so a
// preview's lease never names a real task and a real task's message is
// told from a preview's by its id alone.
const FirstPreviewID int64 = 1 << 62

// Reaction names one reaction of one kind version.
type Reaction struct {
	Kind     string
	Version  int32
	Reaction string
}

// PreviewRequest is a preview task to hand to a worker.
type PreviewRequest struct {
	Reaction
	// Task is the encoded converge.v1.Task; its lease's task id is set
	// by the broker from the row id (SubmitPreviews returns them).
	Task    []byte
	Expires time.Time
}

// Preview is a claimed preview: the row id (the lease's task id) and the
// task to send.
type Preview struct {
	ID int64
	Reaction
	Task []byte
}

// PreviewAnswer is what came back for a preview.
type PreviewAnswer struct {
	ID     int64
	Worker string
	// Result is the encoded converge.v1.TaskResult (its composition
	// whole, chunks joined); empty when Error says why there is none.
	Result []byte
	Error  string
}

// SubmitPreviews writes preview requests and returns their ids in order.
// Rows of plans that ended without cleaning up (a crashed replica) go
// once they are a minute past their expiry.
func (s *Store) SubmitPreviews(ctx context.Context, reqs []PreviewRequest) ([]int64, error) {
	if _, err := s.pool.Exec(ctx, `DELETE FROM previews WHERE expires_at < now() - interval '1 minute'`); err != nil {
		return nil, err
	}
	kinds, versions, reactions := make([]string, len(reqs)), make([]int32, len(reqs)), make([]string, len(reqs))
	tasks, expires := make([][]byte, len(reqs)), make([]time.Time, len(reqs))
	for i, r := range reqs {
		kinds[i], versions[i], reactions[i], tasks[i], expires[i] = r.Kind, r.Version, r.Reaction.Reaction, r.Task, r.Expires
	}
	rows, err := s.pool.Query(ctx, `
		INSERT INTO previews (kind, kind_version, reaction, task, expires_at)
		SELECT k, v, r, t, e FROM unnest($1::text[], $2::int[], $3::text[], $4::bytea[], $5::timestamptz[]) WITH ORDINALITY AS p(k, v, r, t, e, n)
		ORDER BY n
		RETURNING id`, kinds, versions, reactions, tasks, expires)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	ids := make([]int64, 0, len(reqs))
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	return ids, rows.Err()
}

// ClaimPreviews claims up to max unexpired, unclaimed previews of the
// reactions this broker's workers serve, oldest first.
func (s *Store) ClaimPreviews(ctx context.Context, member string, served []Reaction, max int) ([]Preview, error) {
	if len(served) == 0 || max <= 0 {
		return nil, nil
	}
	kinds, versions, reactions := make([]string, len(served)), make([]int32, len(served)), make([]string, len(served))
	for i, r := range served {
		kinds[i], versions[i], reactions[i] = r.Kind, r.Version, r.Reaction
	}
	rows, err := s.pool.Query(ctx, `
		UPDATE previews p SET claimed_by = $1
		WHERE p.id IN (
		    SELECT q.id FROM previews q
		    JOIN unnest($2::text[], $3::int[], $4::text[]) AS w(kind, kind_version, reaction)
		      ON q.kind = w.kind AND q.kind_version = w.kind_version AND q.reaction = w.reaction
		    WHERE q.claimed_by IS NULL AND q.expires_at > now()
		    ORDER BY q.id LIMIT $5 FOR UPDATE OF q SKIP LOCKED)
		RETURNING p.id, p.kind, p.kind_version, p.reaction, p.task`, member, kinds, versions, reactions, max)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Preview
	for rows.Next() {
		var p Preview
		if err := rows.Scan(&p.ID, &p.Kind, &p.Version, &p.Reaction.Reaction, &p.Task); err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, rows.Err()
}

// UnclaimPreviews gives previews back unanswered (the worker left), so
// another broker can take them.
func (s *Store) UnclaimPreviews(ctx context.Context, ids []int64) error {
	_, err := s.pool.Exec(ctx, `UPDATE previews SET claimed_by = NULL WHERE id = ANY($1::bigint[]) AND NOT done`, ids)
	return err
}

// AnswerPreview records a worker's answer, or why there is none.
func (s *Store) AnswerPreview(ctx context.Context, a PreviewAnswer) error {
	_, err := s.pool.Exec(ctx, `UPDATE previews SET worker = $2, result = $3, error = nullif($4, ''), done = true WHERE id = $1`,
		a.ID, a.Worker, a.Result, a.Error)
	return err
}

// PreviewAnswers returns the answered previews among ids.
func (s *Store) PreviewAnswers(ctx context.Context, ids []int64) ([]PreviewAnswer, error) {
	rows, err := s.pool.Query(ctx, `SELECT id, coalesce(worker, ''), coalesce(result, ''::bytea), coalesce(error, '')
		FROM previews WHERE id = ANY($1::bigint[]) AND done`, ids)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []PreviewAnswer
	for rows.Next() {
		var a PreviewAnswer
		if err := rows.Scan(&a.ID, &a.Worker, &a.Result, &a.Error); err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, rows.Err()
}

// DeletePreviews removes a plan's previews, answered or not.
func (s *Store) DeletePreviews(ctx context.Context, ids []int64) error {
	_, err := s.pool.Exec(ctx, `DELETE FROM previews WHERE id = ANY($1::bigint[])`, ids)
	return err
}
