package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/convergehq/converge/server/internal/labels"
)

// Rollout states. A running rollout is driven; paused and failed ones
// wait for a resume, an abort or a rollback; the others are over.
const (
	RolloutRunning    = "running"
	RolloutPaused     = "paused"
	RolloutCompleted  = "completed"
	RolloutFailed     = "failed"
	RolloutAborted    = "aborted"
	RolloutRolledBack = "rolled_back"
)

// RolloutWaveInput is one wave as asked for: Count resources, Percent of
// all of them, or those Selector matches (SelectorText as written).
type RolloutWaveInput struct {
	Count, Percent int32
	Selector       labels.Selector
	SelectorText   string
}

// RolloutInput is a rollout to start.
type RolloutInput struct {
	Kind      string
	From, To  int32
	Namespace string
	// Waves in order, or WaveCount equal waves.
	Waves                                  []RolloutWaveInput
	WaveCount                              int32
	SoakSeconds, MaxFailures               int32
	MaxFailurePercent, ReadyTimeoutSeconds int32
	Reason                                 string
	// Mode is RolloutMove or RolloutRecompose (From = To).
	Mode string
}

// Rollout modes.
const (
	RolloutMove      = "move"
	RolloutRecompose = "recompose"
)

// Rollout is a rollout as the API shows it.
type Rollout struct {
	ID                                     int64
	Kind                                   string
	From, To                               int32
	Namespace, State, Reason, Actor, Mode  string
	SoakSeconds, MaxFailures               int32
	MaxFailurePercent, ReadyTimeoutSeconds int32
	CreatedAt, UpdatedAt                   time.Time
	FinishedAt                             *time.Time
	Waves                                  []RolloutWave
	Counts                                 RolloutCounts
	Failures                               []RolloutFailure
}

// CurrentWave is the first wave still pending or moving, 0 when none is.
func (r Rollout) CurrentWave() int32 {
	for _, w := range r.Waves {
		if w.State == "pending" || w.State == "moving" {
			return w.Wave
		}
	}
	return 0
}

// RolloutWave is one wave with its members' counts.
type RolloutWave struct {
	Wave                                       int32
	Selector, State                            string
	Counts                                     RolloutCounts
	NotBefore, StartedAt, FinishedAt, Deadline *time.Time
}

// RolloutCounts counts members by state.
type RolloutCounts struct {
	Total, Pending, Moving, Ready, Failed, Skipped, RolledBack int32
}

func (c *RolloutCounts) add(o RolloutCounts) {
	c.Total += o.Total
	c.Pending += o.Pending
	c.Moving += o.Moving
	c.Ready += o.Ready
	c.Failed += o.Failed
	c.Skipped += o.Skipped
	c.RolledBack += o.RolledBack
}

// RolloutFailure is a failed member and why.
type RolloutFailure struct {
	Wave            int32
	Namespace, Name string
	Reason          string
}

// maxRolloutFailures bounds the failures GetRollout lists.
const maxRolloutFailures = 100

// CreateRollout records a rollout and its members, the top-level
// resources of the kind at From (in Namespace, if set), split into waves
// in (namespace, name) order; resources no wave takes form a last wave.
// It refuses a kind with a rollout not over yet and a rollout with
// nothing to move.
func (s *Store) CreateRollout(ctx context.Context, in RolloutInput, actor string) (int64, error) {
	var id int64
	err := s.Atomic(ctx, func(ctx context.Context) error {
		db := s.db(ctx)
		err := db.QueryRow(ctx, `
			INSERT INTO rollouts (kind, from_version, to_version, namespace, reason, soak_seconds, max_failures,
			                      max_failure_percent, ready_timeout_seconds, actor, mode)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, coalesce(nullif($11, ''), 'move')) RETURNING id`,
			in.Kind, in.From, in.To, in.Namespace, in.Reason, in.SoakSeconds, in.MaxFailures,
			in.MaxFailurePercent, in.ReadyTimeoutSeconds, actor, in.Mode).Scan(&id)
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && pgErr.ConstraintName == "rollouts_active" {
			var other int64
			var state string
			_ = s.pool.QueryRow(ctx, `SELECT id, state FROM rollouts WHERE kind = $1 AND state IN ('running', 'paused', 'failed')`,
				in.Kind).Scan(&other, &state)
			return conflictf("kind %s has rollout %d, which is %s; resume, abort or roll it back before starting another", in.Kind, other, state)
		}
		if err != nil {
			return err
		}
		tag, err := db.Exec(ctx, `
			INSERT INTO rollout_members (rollout_id, resource_id, position, namespace, name)
			SELECT $1, r.id, row_number() OVER (ORDER BY r.namespace, r.name), r.namespace, r.name
			FROM resources r
			WHERE r.kind = $2 AND r.kind_version = $3 AND ($4 = '' OR r.namespace = $4)
			  AND r.owner_id IS NULL AND r.deletion_requested_at IS NULL`, id, in.Kind, in.From, in.Namespace)
		if err != nil {
			return err
		}
		total := int32(tag.RowsAffected())
		if total == 0 {
			where := ""
			if in.Namespace != "" {
				where = " in namespace " + in.Namespace
			}
			return conflictf("kind %s v%d has no top-level resources%s to move", in.Kind, in.From, where)
		}
		waves, err := s.assignWaves(ctx, id, in, total)
		if err != nil {
			return err
		}
		_, err = db.Exec(ctx, `UPDATE rollout_waves SET not_before = now() WHERE rollout_id = $1 AND wave = 1`, id)
		if err != nil {
			return err
		}
		msg := fmt.Sprintf("rollout %d started: %d resource(s) from v%d to v%d in %d wave(s)", id, total, in.From, in.To, waves)
		if in.Mode == RolloutRecompose {
			msg = fmt.Sprintf("rollout %d started: %d resource(s) of v%d recomposed in %d wave(s)", id, total, in.To, waves)
		}
		if in.Reason != "" {
			msg += ": " + in.Reason
		}
		return s.RecordKindEvent(ctx, in.Kind, in.To, "RolloutStarted", msg, actor)
	})
	return id, err
}

// assignWaves gives every member of rollout id its wave and returns the
// number of waves.
func (s *Store) assignWaves(ctx context.Context, id int64, in RolloutInput, total int32) (int32, error) {
	db := s.db(ctx)
	waves := in.Waves
	if in.WaveCount > 0 {
		k := min(in.WaveCount, total)
		waves = make([]RolloutWaveInput, k)
		for i := range waves {
			waves[i].Count = total / k
			if int32(i) < total%k {
				waves[i].Count++
			}
		}
	}
	take := func(wave, n int32) error {
		_, err := db.Exec(ctx, `
			UPDATE rollout_members SET wave = $2 WHERE rollout_id = $1 AND resource_id IN (
				SELECT resource_id FROM rollout_members WHERE rollout_id = $1 AND wave = 0 ORDER BY position LIMIT $3)`,
			id, wave, n)
		return err
	}
	var n int32
	for i, w := range waves {
		n = int32(i + 1)
		selector := fmt.Sprint(w.Count)
		var err error
		switch {
		case w.Percent > 0:
			selector = fmt.Sprintf("%d%%", w.Percent)
			err = take(n, (total*w.Percent+99)/100)
		case len(w.Selector) > 0:
			selector = w.SelectorText
			args := []any{id, n}
			arg := func(v any) string { args = append(args, v); return fmt.Sprintf("$%d", len(args)) }
			cond := ""
			for _, t := range w.Selector {
				c, cerr := labelCondition(t, arg)
				if cerr != nil {
					return 0, cerr
				}
				cond += " AND " + c
			}
			_, err = db.Exec(ctx, `UPDATE rollout_members m SET wave = $2 FROM resources r
				WHERE m.rollout_id = $1 AND m.wave = 0 AND r.id = m.resource_id`+cond, args...)
		default:
			err = take(n, w.Count)
		}
		if err != nil {
			return 0, err
		}
		if _, err := db.Exec(ctx, `INSERT INTO rollout_waves (rollout_id, wave, selector) VALUES ($1, $2, $3)`,
			id, n, selector); err != nil {
			return 0, err
		}
	}
	tag, err := db.Exec(ctx, `UPDATE rollout_members SET wave = $2 WHERE rollout_id = $1 AND wave = 0`, id, n+1)
	if err != nil {
		return 0, err
	}
	if tag.RowsAffected() > 0 {
		n++
		if _, err := db.Exec(ctx, `INSERT INTO rollout_waves (rollout_id, wave, selector) VALUES ($1, $2, 'rest')`, id, n); err != nil {
			return 0, err
		}
	}
	return n, nil
}

// RolloutTransition is an operator's change of a rollout's state.
type RolloutTransition struct {
	// From lists the states the rollout may be in; To is the new one.
	From []string
	To   string
	// Verb names the action in a refusal ("paused"); Event is the event
	// reason recorded.
	Verb, Event string
}

// The operator transitions.
var (
	PauseRollout  = RolloutTransition{From: []string{RolloutRunning}, To: RolloutPaused, Verb: "paused", Event: "RolloutPaused"}
	ResumeRollout = RolloutTransition{From: []string{RolloutPaused, RolloutFailed}, To: RolloutRunning, Verb: "resumed", Event: "RolloutResumed"}
	AbortRollout  = RolloutTransition{From: []string{RolloutRunning, RolloutPaused, RolloutFailed}, To: RolloutAborted, Verb: "aborted", Event: "RolloutAborted"}
)

// TransitionRollout moves a rollout to t.To if it is in one of t.From, and
// records the event with actor and reason. A resumed rollout's next wave
// may start at once.
func (s *Store) TransitionRollout(ctx context.Context, id int64, t RolloutTransition, reason, actor string) error {
	return s.Atomic(ctx, func(ctx context.Context) error {
		cur, err := s.lockRollout(ctx, id)
		if err != nil {
			return err
		}
		if !contains(t.From, cur.State) {
			return conflictf("rollout %d is %s; only a rollout that is %s can be %s", id, cur.State, orList(t.From), t.Verb)
		}
		_, err = s.db(ctx).Exec(ctx, `
			UPDATE rollouts SET state = $2, reason = $3, updated_at = now(), lease_owner = NULL, lease_until = NULL,
			       finished_at = CASE WHEN $2 IN ('aborted', 'rolled_back', 'completed') THEN now() END
			WHERE id = $1`, id, t.To, reason)
		if err != nil {
			return err
		}
		if t.To == RolloutRunning {
			_, err = s.db(ctx).Exec(ctx, `UPDATE rollout_waves SET not_before = now() WHERE rollout_id = $1 AND wave = (
				SELECT min(wave) FROM rollout_waves WHERE rollout_id = $1 AND state = 'pending') AND (not_before IS NULL OR not_before > now())`, id)
			if err != nil {
				return err
			}
		}
		msg := fmt.Sprintf("rollout %d %s", id, t.Verb)
		if reason != "" {
			msg += ": " + reason
		}
		return s.RecordKindEvent(ctx, cur.Kind, cur.To, t.Event, msg, actor)
	})
}

// lockRollout reads a rollout's row under its lock.
func (s *Store) lockRollout(ctx context.Context, id int64) (Rollout, error) {
	r, err := scanRollout(s.db(ctx).QueryRow(ctx, `SELECT `+rolloutColumns+` FROM rollouts WHERE id = $1 FOR UPDATE`, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return r, notFoundf("rollout %d does not exist", id)
	}
	return r, err
}

func contains(xs []string, x string) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

func orList(xs []string) string {
	out := ""
	for i, x := range xs {
		switch {
		case i == 0:
		case i == len(xs)-1:
			out += " or "
		default:
			out += ", "
		}
		out += x
	}
	return out
}
