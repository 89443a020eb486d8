package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// Policy is a kind version's operational policy.
type Policy struct {
	MaxInflight           int32
	TaskDeadlineSeconds   int32
	ResyncIntervalSeconds int32
	ResyncRecomposes      bool
	OrphanGraceSeconds    int32
	MaxTransientAttempts  int32
	Retired               bool
	// DeletionPolicy is "", "delete" or "retain".
	DeletionPolicy string
	// ManagementPolicy is "", "full" or "observe".
	ManagementPolicy string
}

// Kind is a stored kind version.
type Kind struct {
	Kind    string
	Version int32
	// Manifest is the canonical JSON of the manifest (without policy and
	// output-only fields).
	Manifest  []byte
	Policy    Policy
	Revision  int64
	CreatedAt time.Time
	UpdatedAt time.Time
	// ResyncEvery is, on writes, the effective resync interval of the kind
	// as written (the caller derives it from the compiled manifest): when
	// it changes, the kind's resources are rescheduled.
	ResyncEvery time.Duration
	// ObserveEvery is, on writes, how often the kind's observed resources
	// are re-observed (0: never, or no observe reaction).
	ObserveEvery time.Duration
	// Actor is, on writes, who makes the change: the events of resources
	// it moves to another management policy name it.
	Actor string
}

const kindColumns = `kind, kind_version, manifest, max_inflight, task_deadline_seconds,
	resync_interval_seconds, resync_recomposes, orphan_grace_seconds, max_transient_attempts,
	retired, deletion_policy, revision, created_at, updated_at, management_policy`

func scanKind(row pgx.Row) (Kind, error) {
	var k Kind
	p := &k.Policy
	err := row.Scan(&k.Kind, &k.Version, &k.Manifest, &p.MaxInflight, &p.TaskDeadlineSeconds,
		&p.ResyncIntervalSeconds, &p.ResyncRecomposes, &p.OrphanGraceSeconds, &p.MaxTransientAttempts,
		&p.Retired, &p.DeletionPolicy, &k.Revision, &k.CreatedAt, &k.UpdatedAt, &p.ManagementPolicy)
	return k, err
}

// ApplyKind creates or updates a kind version. The result is "created",
// "configured" or "unchanged". check, when set, vets an update against the
// stored version under the row lock (the stability gate); its error is
// returned as is. The revision is bumped only when the manifest changes:
// a policy change alone does not change the contract with workers.
func (s *Store) ApplyKind(ctx context.Context, k Kind, check func(prev Kind) error) (Kind, string, error) {
	var out Kind
	var result string
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		prev, err := scanKind(tx.QueryRow(ctx,
			`SELECT `+kindColumns+` FROM kinds WHERE kind = $1 AND kind_version = $2 FOR UPDATE`,
			k.Kind, k.Version))
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			result = "created"
			out, err = scanKind(tx.QueryRow(ctx, `
				INSERT INTO kinds (kind, kind_version, manifest, max_inflight, task_deadline_seconds,
				    resync_interval_seconds, resync_recomposes, orphan_grace_seconds,
				    max_transient_attempts, retired, deletion_policy, management_policy)
				VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)
				RETURNING `+kindColumns,
				k.Kind, k.Version, k.Manifest, k.Policy.MaxInflight, k.Policy.TaskDeadlineSeconds,
				k.Policy.ResyncIntervalSeconds, k.Policy.ResyncRecomposes, k.Policy.OrphanGraceSeconds,
				k.Policy.MaxTransientAttempts, k.Policy.Retired, k.Policy.DeletionPolicy, k.Policy.ManagementPolicy))
			return err
		case err != nil:
			return err
		}
		if check != nil {
			if err := check(prev); err != nil {
				return err
			}
		}
		result = "configured"
		out, err = scanKind(tx.QueryRow(ctx, `
			UPDATE kinds SET manifest = $3, max_inflight = $4, task_deadline_seconds = $5,
			    resync_interval_seconds = $6, resync_recomposes = $7, orphan_grace_seconds = $8,
			    max_transient_attempts = $9, retired = $10, deletion_policy = $11, management_policy = $12,
			    revision = revision + CASE WHEN manifest <> $3::jsonb THEN 1 ELSE 0 END, updated_at = now()
			WHERE kind = $1 AND kind_version = $2
			  AND (manifest <> $3::jsonb OR max_inflight <> $4 OR task_deadline_seconds <> $5
			       OR resync_interval_seconds <> $6 OR resync_recomposes <> $7
			       OR orphan_grace_seconds <> $8 OR max_transient_attempts <> $9 OR retired <> $10
			       OR deletion_policy <> $11 OR management_policy <> $12)
			RETURNING `+kindColumns,
			k.Kind, k.Version, k.Manifest, k.Policy.MaxInflight, k.Policy.TaskDeadlineSeconds,
			k.Policy.ResyncIntervalSeconds, k.Policy.ResyncRecomposes, k.Policy.OrphanGraceSeconds,
			k.Policy.MaxTransientAttempts, k.Policy.Retired, k.Policy.DeletionPolicy, k.Policy.ManagementPolicy))
		if errors.Is(err, pgx.ErrNoRows) {
			result, out = "unchanged", prev
			return nil
		}
		if err != nil {
			return err
		}
		if err := repolicyKind(ctx, tx, k.Kind, k.Version, prev.Policy.ManagementPolicy, out.Policy.ManagementPolicy, k.Actor); err != nil {
			return err
		}
		return rescheduleIfResyncChanged(ctx, tx, prev, out, k.ResyncEvery, k.ObserveEvery)
	})
	return out, result, err
}

// UpdateKindPolicy replaces a kind version's policy, leaving its manifest
// and revision alone, if the stored revision is still revision (the
// caller validated the policy against that manifest).
func (s *Store) UpdateKindPolicy(ctx context.Context, actor, kind string, version int32, revision int64, p Policy, resyncEvery, observeEvery time.Duration) (Kind, error) {
	var out Kind
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		prev, err := scanKind(tx.QueryRow(ctx,
			`SELECT `+kindColumns+` FROM kinds WHERE kind = $1 AND kind_version = $2 FOR UPDATE`, kind, version))
		if errors.Is(err, pgx.ErrNoRows) {
			return notFoundf("kind %s v%d is not registered", kind, version)
		}
		if err != nil {
			return err
		}
		if prev.Revision != revision {
			return conflictf("kind %s v%d changed while the policy was being updated (revision %d, now %d); retry", kind, version, revision, prev.Revision)
		}
		if prev.Policy == p {
			out = prev
			return nil
		}
		out, err = scanKind(tx.QueryRow(ctx, `
			UPDATE kinds SET max_inflight = $3, task_deadline_seconds = $4, resync_interval_seconds = $5,
			    resync_recomposes = $6, orphan_grace_seconds = $7, max_transient_attempts = $8, retired = $9,
			    deletion_policy = $10, management_policy = $11, updated_at = now()
			WHERE kind = $1 AND kind_version = $2
			RETURNING `+kindColumns,
			kind, version, p.MaxInflight, p.TaskDeadlineSeconds, p.ResyncIntervalSeconds, p.ResyncRecomposes,
			p.OrphanGraceSeconds, p.MaxTransientAttempts, p.Retired, p.DeletionPolicy, p.ManagementPolicy))
		if err != nil {
			return err
		}
		if err := repolicyKind(ctx, tx, kind, version, prev.Policy.ManagementPolicy, out.Policy.ManagementPolicy, actor); err != nil {
			return err
		}
		return rescheduleIfResyncChanged(ctx, tx, prev, out, resyncEvery, observeEvery)
	})
	return out, err
}

// rescheduleIfResyncChanged reschedules a kind version's resources when
// what decides its resync changed (the interval, recomposing, or the
// reactions in the manifest) and resync is or was on.
func rescheduleIfResyncChanged(ctx context.Context, tx pgx.Tx, prev, next Kind, every, observeEvery time.Duration) error {
	was, is := prev.Policy.ResyncIntervalSeconds, next.Policy.ResyncIntervalSeconds
	if was == 0 && is == 0 {
		return nil
	}
	if was == is && prev.Policy.ResyncRecomposes == next.Policy.ResyncRecomposes && prev.Revision == next.Revision {
		return nil
	}
	return scheduleResyncs(ctx, tx, next.Kind, next.Version, every, observeEvery)
}

// GetKind returns one kind version.
func (s *Store) GetKind(ctx context.Context, kind string, version int32) (Kind, error) {
	k, err := scanKind(s.db(ctx).QueryRow(ctx,
		`SELECT `+kindColumns+` FROM kinds WHERE kind = $1 AND kind_version = $2`, kind, version))
	if errors.Is(err, pgx.ErrNoRows) {
		return k, notFoundf("kind %s v%d is not registered", kind, version)
	}
	return k, err
}

// ListKinds returns every kind version, or every version of one kind.
func (s *Store) ListKinds(ctx context.Context, kind string) ([]Kind, error) {
	rows, err := s.db(ctx).Query(ctx, `SELECT `+kindColumns+` FROM kinds
		WHERE $1 = '' OR kind = $1 ORDER BY kind, kind_version`, kind)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Kind
	for rows.Next() {
		k, err := scanKind(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, k)
	}
	return out, rows.Err()
}

// DeleteKind removes a kind version. It is refused while resources use
// it or reactor bindings name it as their reactor. Locking the kind FOR
// UPDATE waits out applies in flight (they hold it FOR KEY SHARE), so the
// checks see every resource and binding they create. Its provider
// configs are deleted with it.
func (s *Store) DeleteKind(ctx context.Context, kind string, version int32) error {
	return s.inTx(ctx, func(tx pgx.Tx) error {
		var one int
		err := tx.QueryRow(ctx, `SELECT 1 FROM kinds WHERE kind = $1 AND kind_version = $2 FOR UPDATE`,
			kind, version).Scan(&one)
		if errors.Is(err, pgx.ErrNoRows) {
			return notFoundf("kind %s v%d is not registered", kind, version)
		}
		if err != nil {
			return err
		}
		var n int64
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM resources WHERE kind = $1 AND kind_version = $2`,
			kind, version).Scan(&n); err != nil {
			return err
		}
		if n > 0 {
			return conflictf("kind %s v%d is used by %d resource(s); delete them or move them to another version first", kind, version, n)
		}
		bindings, err := bindingsUsing(ctx, tx, kind, version)
		if err != nil {
			return err
		}
		if len(bindings) > 0 {
			return conflictf("kind %s v%d is the reactor of reactor binding(s) %s; delete them or point them at another version first",
				kind, version, quoteList(bindings))
		}
		// Its provider configs go with it: they were validated against
		// this version's config_schema, which a re-registered version
		// need not share.
		if _, err := tx.Exec(ctx, `DELETE FROM provider_configs WHERE kind = $1 AND kind_version = $2`, kind, version); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `DELETE FROM kinds WHERE kind = $1 AND kind_version = $2`, kind, version)
		return err
	})
}

// KindsFingerprint changes whenever any kind or provider config is
// created, updated or deleted. Caches compare it to decide whether to
// reload.
func (s *Store) KindsFingerprint(ctx context.Context) (string, error) {
	var n, sum, cn, csum int64
	var latest, clatest *time.Time
	err := s.db(ctx).QueryRow(ctx, `
		SELECT (SELECT count(*) FROM kinds), (SELECT coalesce(sum(revision), 0) FROM kinds),
		       (SELECT max(updated_at) FROM kinds),
		       (SELECT count(*) FROM provider_configs), (SELECT coalesce(sum(revision), 0) FROM provider_configs),
		       (SELECT max(updated_at) FROM provider_configs)`).Scan(&n, &sum, &latest, &cn, &csum, &clatest)
	if err != nil {
		return "", err
	}
	nanos := func(t *time.Time) int64 {
		if t == nil {
			return 0
		}
		return t.UnixNano()
	}
	return fmt.Sprintf("%d/%d/%d/%d/%d/%d", n, sum, nanos(latest), cn, csum, nanos(clatest)), nil
}
