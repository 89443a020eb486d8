package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// The steps a rollout driver takes, each inside the Atomic transaction of
// one step: TakeRolloutStep locks the rollout's row and renews the
// driver's lease, so a second driver waits for the step to commit and then
// finds the lease held (or the step taken) and does nothing.

// RolloutStep is what a driver needs to take a rollout's next step.
type RolloutStep struct {
	Rollout
	// Wave is the first wave still pending or moving, 0 when none is.
	Wave      int32
	WaveState string
	// Due: a pending wave's soak is over.
	Due bool
	// Waves is the number of waves.
	Waves int32
}

// RunnableRollouts lists the running rollouts driver may drive now: no
// other driver holds a live lease on them.
func (s *Store) RunnableRollouts(ctx context.Context, driver string) ([]int64, error) {
	rows, err := s.db(ctx).Query(ctx, `SELECT id FROM rollouts WHERE state = 'running'
		AND (lease_owner IS NULL OR lease_owner = $1 OR lease_until < now()) ORDER BY id`, driver)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[int64])
}

// TakeRolloutStep locks a running rollout for driver and extends its lease
// by lease; ok is false when it is not running or another driver's lease
// is live.
func (s *Store) TakeRolloutStep(ctx context.Context, id int64, driver string, lease time.Duration) (RolloutStep, bool, error) {
	db := s.db(ctx)
	var st RolloutStep
	r, err := scanRollout(db.QueryRow(ctx, `
		UPDATE rollouts SET lease_owner = $2, lease_until = now() + make_interval(secs => $3)
		WHERE id = $1 AND state = 'running' AND (lease_owner IS NULL OR lease_owner = $2 OR lease_until < now())
		RETURNING `+rolloutColumns, id, driver, lease.Seconds()))
	if errors.Is(err, pgx.ErrNoRows) {
		return st, false, nil
	}
	if err != nil {
		return st, false, err
	}
	st.Rollout = r
	err = db.QueryRow(ctx, `
		SELECT coalesce(min(wave) FILTER (WHERE state IN ('pending', 'moving')), 0), count(*) FROM rollout_waves WHERE rollout_id = $1`,
		id).Scan(&st.Wave, &st.Waves)
	if err != nil || st.Wave == 0 {
		return st, true, err
	}
	err = db.QueryRow(ctx, `SELECT state, coalesce(not_before <= now(), false) FROM rollout_waves WHERE rollout_id = $1 AND wave = $2`,
		id, st.Wave).Scan(&st.WaveState, &st.Due)
	return st, true, err
}

// RolloutMember is a member about to move, with its resource as it is
// now (Gone when it no longer exists).
type RolloutMember struct {
	ResourceID                     int64
	Namespace, Kind, Name          string
	Gone, Deleting                 bool
	KindVersion                    int32
	Generation, Reconciles         int64
	Spec, Labels                   []byte
	ProviderConfig, DeletionPolicy string
}

// LockWaveMembers returns a wave's pending members with their resources,
// locked in id order so nothing changes their specs between the read and
// the move.
func (s *Store) LockWaveMembers(ctx context.Context, id int64, wave int32) ([]RolloutMember, error) {
	db := s.db(ctx)
	rows, err := db.Query(ctx, `SELECT resource_id, namespace, name FROM rollout_members
		WHERE rollout_id = $1 AND wave = $2 AND state = 'pending' ORDER BY position`, id, wave)
	if err != nil {
		return nil, err
	}
	members, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (RolloutMember, error) {
		var m RolloutMember
		return m, row.Scan(&m.ResourceID, &m.Namespace, &m.Name)
	})
	if err != nil || len(members) == 0 {
		return members, err
	}
	ids := make([]int64, len(members))
	for i, m := range members {
		ids[i] = m.ResourceID
	}
	rows, err = db.Query(ctx, `SELECT id, kind, kind_version, generation, reconciles, spec, labels, provider_config, deletion_policy,
		deletion_requested_at IS NOT NULL FROM resources WHERE id = ANY($1) ORDER BY id FOR UPDATE`, ids)
	if err != nil {
		return nil, err
	}
	found := map[int64]RolloutMember{}
	_, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (struct{}, error) {
		var m RolloutMember
		err := row.Scan(&m.ResourceID, &m.Kind, &m.KindVersion, &m.Generation, &m.Reconciles, &m.Spec, &m.Labels,
			&m.ProviderConfig, &m.DeletionPolicy, &m.Deleting)
		found[m.ResourceID] = m
		return struct{}{}, err
	})
	if err != nil {
		return nil, err
	}
	for i, m := range members {
		r, ok := found[m.ResourceID]
		if !ok {
			members[i].Gone = true
			continue
		}
		r.Namespace, r.Name = m.Namespace, m.Name
		members[i] = r
	}
	return members, nil
}

// MemberOutcome is what became of one member's move.
type MemberOutcome struct {
	ResourceID int64
	// State is moving (moved; now waiting for Ready), failed or skipped.
	State  string
	Reason string
	// OldSpec and MovedGeneration are set for a moved member, and
	// MovedReconciles (its reconciles before) for a recomposed one.
	OldSpec                          []byte
	MovedGeneration, MovedReconciles int64
}

// StartWave records the outcome of a wave's moves and starts waiting for
// its moved members to become Ready, until the rollout's ready timeout.
func (s *Store) StartWave(ctx context.Context, st RolloutStep, outcomes []MemberOutcome, actor string) error {
	db := s.db(ctx)
	n := len(outcomes)
	ids, states, reasons := make([]int64, n), make([]string, n), make([]string, n)
	olds, gens, recs := make([]*string, n), make([]*int64, n), make([]*int64, n)
	var moved, failed, skipped int
	for i, o := range outcomes {
		ids[i], states[i], reasons[i] = o.ResourceID, o.State, truncate(o.Reason, maxEventMessage)
		if o.OldSpec != nil {
			spec := string(o.OldSpec)
			olds[i] = &spec
		}
		if o.State == "moving" {
			gen, rec := o.MovedGeneration, o.MovedReconciles
			gens[i], recs[i] = &gen, &rec
		}
		switch o.State {
		case "moving":
			moved++
		case "failed":
			failed++
		default:
			skipped++
		}
	}
	_, err := db.Exec(ctx, `
		UPDATE rollout_members m SET state = u.state, reason = u.reason, old_spec = u.old_spec, moved_generation = u.gen,
		       moved_reconciles = u.rec
		FROM unnest($2::bigint[], $3::text[], $4::text[], $5::jsonb[], $6::bigint[], $7::bigint[]) AS u(id, state, reason, old_spec, gen, rec)
		WHERE m.rollout_id = $1 AND m.resource_id = u.id`, st.ID, ids, states, reasons, olds, gens, recs)
	if err != nil {
		return err
	}
	_, err = db.Exec(ctx, `UPDATE rollout_waves SET state = 'moving', started_at = now(),
		deadline = now() + make_interval(secs => $3) WHERE rollout_id = $1 AND wave = $2`, st.ID, st.Wave, st.ReadyTimeoutSeconds)
	if err != nil {
		return err
	}
	if _, err := db.Exec(ctx, `UPDATE rollouts SET updated_at = now() WHERE id = $1`, st.ID); err != nil {
		return err
	}
	what := fmt.Sprintf("%d moved to v%d, %d failed to move", moved, st.To, failed)
	if st.Mode == RolloutRecompose {
		what = fmt.Sprintf("%d recomposing, %d refused", moved, failed)
	}
	return s.RecordKindEvent(ctx, st.Kind, st.To, "RolloutWaveStarted", fmt.Sprintf(
		"rollout %d: wave %d of %d started: %s, %d skipped", st.ID, st.Wave, st.Waves, what, skipped), actor)
}

// SettleWave marks the moved members of the current wave that are Ready
// at their moved generation, or failed (Failed, or not Ready by the
// wave's deadline), and returns the wave's counts.
func (s *Store) SettleWave(ctx context.Context, st RolloutStep) (RolloutCounts, error) {
	db := s.db(ctx)
	_, err := db.Exec(ctx, `
		WITH s AS (
			SELECT m.resource_id,
			       CASE WHEN r.id IS NULL OR r.kind_version <> ro.to_version THEN 'skipped'
			            WHEN converge_phase(r) = 'Ready' AND r.synced_generation >= m.moved_generation
			                 AND (ro.mode = 'move' OR r.reconciles > m.moved_reconciles) THEN 'ready'
			            WHEN converge_phase(r) = 'Failed' OR w.deadline < now() THEN 'failed' END AS next,
			       CASE WHEN r.id IS NULL THEN 'deleted during the rollout'
			            WHEN r.kind_version <> ro.to_version THEN format('moved to v%s outside the rollout', r.kind_version)
			            WHEN converge_phase(r) = 'Failed' THEN format('%s/%s/%s failed at v%s: %s', m.namespace, ro.kind, m.name,
			                 ro.to_version, coalesce(r.failure_message, 'no message'))
			            ELSE format('%s/%s/%s was not Ready %s s after its %s (it is %s)', m.namespace, ro.kind, m.name,
			                 ro.ready_timeout_seconds, CASE ro.mode WHEN 'move' THEN 'move' ELSE 'forced reconcile' END,
			                 converge_phase(r)) END AS why
			FROM rollout_members m
			JOIN rollouts ro ON ro.id = m.rollout_id
			JOIN rollout_waves w ON w.rollout_id = m.rollout_id AND w.wave = m.wave
			LEFT JOIN resources r ON r.id = m.resource_id
			WHERE m.rollout_id = $1 AND m.wave = $2 AND m.state = 'moving')
		UPDATE rollout_members m SET state = s.next, reason = CASE WHEN s.next = 'ready' THEN '' ELSE s.why END
		FROM s WHERE m.rollout_id = $1 AND m.resource_id = s.resource_id AND s.next IS NOT NULL`, st.ID, st.Wave)
	if err != nil {
		return RolloutCounts{}, err
	}
	var c RolloutCounts
	err = db.QueryRow(ctx, `
		SELECT count(*), count(*) FILTER (WHERE state = 'pending'), count(*) FILTER (WHERE state = 'moving'),
		       count(*) FILTER (WHERE state = 'ready'), count(*) FILTER (WHERE state = 'failed'),
		       count(*) FILTER (WHERE state = 'skipped'), count(*) FILTER (WHERE state = 'rolled_back')
		FROM rollout_members WHERE rollout_id = $1 AND wave = $2`, st.ID, st.Wave).
		Scan(&c.Total, &c.Pending, &c.Moving, &c.Ready, &c.Failed, &c.Skipped, &c.RolledBack)
	return c, err
}

// FinishWave ends the current wave: done, or failed with the rollout
// stopped for reason. A done wave starts the next one's soak, or completes
// the rollout after the last wave.
func (s *Store) FinishWave(ctx context.Context, st RolloutStep, c RolloutCounts, stop string, actor string) error {
	db := s.db(ctx)
	state := "done"
	if stop != "" {
		state = "failed"
	}
	if _, err := db.Exec(ctx, `UPDATE rollout_waves SET state = $3, finished_at = now() WHERE rollout_id = $1 AND wave = $2`,
		st.ID, st.Wave, state); err != nil {
		return err
	}
	done := fmt.Sprintf("rollout %d: wave %d of %d done: %d ready, %d failed, %d skipped of %d",
		st.ID, st.Wave, st.Waves, c.Ready, c.Failed, c.Skipped, c.Total)
	if err := s.RecordKindEvent(ctx, st.Kind, st.To, "RolloutWaveDone", done, actor); err != nil {
		return err
	}
	var err error
	switch {
	case stop != "":
		_, err = db.Exec(ctx, `UPDATE rollouts SET state = 'failed', reason = $2, updated_at = now(),
			lease_owner = NULL, lease_until = NULL WHERE id = $1`, st.ID, stop)
		if err == nil {
			err = s.RecordKindEvent(ctx, st.Kind, st.To, "RolloutStopped", fmt.Sprintf("rollout %d stopped: %s", st.ID, stop), actor)
		}
	case st.Wave < st.Waves:
		_, err = db.Exec(ctx, `UPDATE rollout_waves SET not_before = now() + make_interval(secs => $3)
			WHERE rollout_id = $1 AND wave = $2`, st.ID, st.Wave+1, st.SoakSeconds)
		if err == nil {
			_, err = db.Exec(ctx, `UPDATE rollouts SET updated_at = now() WHERE id = $1`, st.ID)
		}
	default:
		err = s.CompleteRollout(ctx, st, actor)
	}
	return err
}

// CompleteRollout ends a rollout with no wave left to take: after its last
// wave, or when it is resumed after its last wave stopped it.
func (s *Store) CompleteRollout(ctx context.Context, st RolloutStep, actor string) error {
	if _, err := s.db(ctx).Exec(ctx, `UPDATE rollouts SET state = 'completed', updated_at = now(), finished_at = now(),
		lease_owner = NULL, lease_until = NULL WHERE id = $1`, st.ID); err != nil {
		return err
	}
	return s.RecordKindEvent(ctx, st.Kind, st.To, "RolloutCompleted", fmt.Sprintf("rollout %d completed", st.ID), actor)
}

// RollbackMember is a moved member to move back: its old spec, with its
// resource as it is now.
type RollbackMember struct {
	RolloutMember
	OldSpec []byte
}

// LockRollbackMembers locks a rollout that may be rolled back (not
// completed long ago: any state but rolled_back) and returns its moved
// members whose resources are still at the new version, locked in id
// order.
func (s *Store) LockRollbackMembers(ctx context.Context, id int64) (Rollout, []RollbackMember, error) {
	r, err := s.lockRollout(ctx, id)
	if err != nil {
		return r, nil, err
	}
	if r.State == RolloutRolledBack {
		return r, nil, conflictf("rollout %d is already rolled back", id)
	}
	if r.Mode == RolloutRecompose {
		return r, nil, conflictf("rollout %d recomposes; it moved no spec to roll back: abort it to stop it", id)
	}
	rows, err := s.db(ctx).Query(ctx, `
		SELECT r.id, r.namespace, r.kind, r.name, r.kind_version, r.generation, r.spec, r.labels, r.provider_config,
		       r.deletion_policy, r.deletion_requested_at IS NOT NULL, m.old_spec
		FROM rollout_members m JOIN resources r ON r.id = m.resource_id
		WHERE m.rollout_id = $1 AND m.old_spec IS NOT NULL AND m.state <> 'rolled_back' AND r.kind_version = $2
		ORDER BY r.id FOR UPDATE OF r`, id, r.To)
	if err != nil {
		return r, nil, err
	}
	ms, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (RollbackMember, error) {
		var m RollbackMember
		err := row.Scan(&m.ResourceID, &m.Namespace, &m.Kind, &m.Name, &m.KindVersion, &m.Generation, &m.Spec, &m.Labels,
			&m.ProviderConfig, &m.DeletionPolicy, &m.Deleting, &m.OldSpec)
		return m, err
	})
	return r, ms, err
}

// FinishRollback records which members moved back (the others keep
// their state, with reason), and ends the rollout as rolled_back.
func (s *Store) FinishRollback(ctx context.Context, r Rollout, back []int64, refused map[int64]string, reason, actor string) error {
	db := s.db(ctx)
	if _, err := db.Exec(ctx, `UPDATE rollout_members SET state = 'rolled_back', reason = ''
		WHERE rollout_id = $1 AND resource_id = ANY($2)`, r.ID, back); err != nil {
		return err
	}
	for id, why := range refused {
		if _, err := db.Exec(ctx, `UPDATE rollout_members SET reason = $3 WHERE rollout_id = $1 AND resource_id = $2`,
			r.ID, id, truncate("not rolled back: "+why, maxEventMessage)); err != nil {
			return err
		}
	}
	if _, err := db.Exec(ctx, `UPDATE rollouts SET state = 'rolled_back', reason = $2, updated_at = now(), finished_at = now(),
		lease_owner = NULL, lease_until = NULL WHERE id = $1`, r.ID, reason); err != nil {
		return err
	}
	msg := fmt.Sprintf("rollout %d rolled back: %d resource(s) back at v%d with their old specs", r.ID, len(back), r.From)
	if len(refused) > 0 {
		msg += fmt.Sprintf(", %d refused", len(refused))
	}
	if reason != "" {
		msg += ": " + reason
	}
	return s.RecordKindEvent(ctx, r.Kind, r.To, "RolloutRolledBack", msg, actor)
}
