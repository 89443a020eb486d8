package store

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"
)

const rolloutColumns = `id, kind, from_version, to_version, namespace, state, reason, actor, soak_seconds, max_failures,
	max_failure_percent, ready_timeout_seconds, created_at, updated_at, finished_at, mode`

func scanRollout(row pgx.Row) (Rollout, error) {
	var r Rollout
	err := row.Scan(&r.ID, &r.Kind, &r.From, &r.To, &r.Namespace, &r.State, &r.Reason, &r.Actor, &r.SoakSeconds,
		&r.MaxFailures, &r.MaxFailurePercent, &r.ReadyTimeoutSeconds, &r.CreatedAt, &r.UpdatedAt, &r.FinishedAt, &r.Mode)
	return r, err
}

// GetRollout reads a rollout with its waves and, with failures, its failed
// members (the first maxRolloutFailures, by wave).
func (s *Store) GetRollout(ctx context.Context, id int64, failures bool) (Rollout, error) {
	r, err := scanRollout(s.db(ctx).QueryRow(ctx, `SELECT `+rolloutColumns+` FROM rollouts WHERE id = $1`, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return r, notFoundf("rollout %d does not exist", id)
	}
	if err != nil {
		return r, err
	}
	if err := s.rolloutWaves(ctx, &r); err != nil {
		return r, err
	}
	if !failures {
		return r, nil
	}
	rows, err := s.db(ctx).Query(ctx, `
		SELECT wave, namespace, name, reason FROM rollout_members
		WHERE rollout_id = $1 AND state = 'failed' ORDER BY wave, position LIMIT $2`, id, maxRolloutFailures)
	if err != nil {
		return r, err
	}
	r.Failures, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (RolloutFailure, error) {
		var f RolloutFailure
		return f, row.Scan(&f.Wave, &f.Namespace, &f.Name, &f.Reason)
	})
	return r, err
}

func (s *Store) rolloutWaves(ctx context.Context, r *Rollout) error {
	rows, err := s.db(ctx).Query(ctx, `
		SELECT w.wave, w.selector, w.state, w.not_before, w.started_at, w.finished_at, w.deadline,
		       count(m.resource_id),
		       count(*) FILTER (WHERE m.state = 'pending'), count(*) FILTER (WHERE m.state = 'moving'),
		       count(*) FILTER (WHERE m.state = 'ready'), count(*) FILTER (WHERE m.state = 'failed'),
		       count(*) FILTER (WHERE m.state = 'skipped'), count(*) FILTER (WHERE m.state = 'rolled_back')
		FROM rollout_waves w
		LEFT JOIN rollout_members m ON m.rollout_id = w.rollout_id AND m.wave = w.wave
		WHERE w.rollout_id = $1 GROUP BY w.rollout_id, w.wave ORDER BY w.wave`, r.ID)
	if err != nil {
		return err
	}
	r.Waves, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (RolloutWave, error) {
		var w RolloutWave
		c := &w.Counts
		err := row.Scan(&w.Wave, &w.Selector, &w.State, &w.NotBefore, &w.StartedAt, &w.FinishedAt, &w.Deadline,
			&c.Total, &c.Pending, &c.Moving, &c.Ready, &c.Failed, &c.Skipped, &c.RolledBack)
		return w, err
	})
	r.Counts = RolloutCounts{}
	for _, w := range r.Waves {
		r.Counts.add(w.Counts)
	}
	return err
}

// ListRollouts returns rollouts newest first, of one kind if kind is set,
// with their waves.
func (s *Store) ListRollouts(ctx context.Context, kind string, limit int) ([]Rollout, error) {
	if limit <= 0 {
		limit = 100
	}
	rows, err := s.db(ctx).Query(ctx, `SELECT `+rolloutColumns+` FROM rollouts
		WHERE $1 = '' OR kind = $1 ORDER BY id DESC LIMIT $2`, kind, limit)
	if err != nil {
		return nil, err
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (Rollout, error) { return scanRollout(row) })
	if err != nil {
		return nil, err
	}
	for i := range out {
		if err := s.rolloutWaves(ctx, &out[i]); err != nil {
			return nil, err
		}
	}
	return out, nil
}
