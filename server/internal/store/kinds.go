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
}

const kindColumns = `kind, kind_version, manifest, max_inflight, task_deadline_seconds,
	resync_interval_seconds, resync_recomposes, orphan_grace_seconds, max_transient_attempts,
	retired, deletion_policy, revision, created_at, updated_at`

func scanKind(row pgx.Row) (Kind, error) {
	var k Kind
	p := &k.Policy
	err := row.Scan(&k.Kind, &k.Version, &k.Manifest, &p.MaxInflight, &p.TaskDeadlineSeconds,
		&p.ResyncIntervalSeconds, &p.ResyncRecomposes, &p.OrphanGraceSeconds, &p.MaxTransientAttempts,
		&p.Retired, &p.DeletionPolicy, &k.Revision, &k.CreatedAt, &k.UpdatedAt)
	return k, err
}

// ApplyKind creates or updates a kind version. The result is "created",
// "configured" (revision bumped) or "unchanged".
func (s *Store) ApplyKind(ctx context.Context, k Kind) (Kind, string, error) {
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
				    max_transient_attempts, retired, deletion_policy)
				VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
				RETURNING `+kindColumns,
				k.Kind, k.Version, k.Manifest, k.Policy.MaxInflight, k.Policy.TaskDeadlineSeconds,
				k.Policy.ResyncIntervalSeconds, k.Policy.ResyncRecomposes, k.Policy.OrphanGraceSeconds,
				k.Policy.MaxTransientAttempts, k.Policy.Retired, k.Policy.DeletionPolicy))
			return err
		case err != nil:
			return err
		}
		result = "configured"
		out, err = scanKind(tx.QueryRow(ctx, `
			UPDATE kinds SET manifest = $3, max_inflight = $4, task_deadline_seconds = $5,
			    resync_interval_seconds = $6, resync_recomposes = $7, orphan_grace_seconds = $8,
			    max_transient_attempts = $9, retired = $10, deletion_policy = $11,
			    revision = revision + 1, updated_at = now()
			WHERE kind = $1 AND kind_version = $2
			  AND (manifest <> $3::jsonb OR max_inflight <> $4 OR task_deadline_seconds <> $5
			       OR resync_interval_seconds <> $6 OR resync_recomposes <> $7
			       OR orphan_grace_seconds <> $8 OR max_transient_attempts <> $9 OR retired <> $10
			       OR deletion_policy <> $11)
			RETURNING `+kindColumns,
			k.Kind, k.Version, k.Manifest, k.Policy.MaxInflight, k.Policy.TaskDeadlineSeconds,
			k.Policy.ResyncIntervalSeconds, k.Policy.ResyncRecomposes, k.Policy.OrphanGraceSeconds,
			k.Policy.MaxTransientAttempts, k.Policy.Retired, k.Policy.DeletionPolicy))
		if errors.Is(err, pgx.ErrNoRows) {
			result, out = "unchanged", prev
			return nil
		}
		return err
	})
	return out, result, err
}

// GetKind returns one kind version.
func (s *Store) GetKind(ctx context.Context, kind string, version int32) (Kind, error) {
	k, err := scanKind(s.pool.QueryRow(ctx,
		`SELECT `+kindColumns+` FROM kinds WHERE kind = $1 AND kind_version = $2`, kind, version))
	if errors.Is(err, pgx.ErrNoRows) {
		return k, notFoundf("kind %s v%d is not registered", kind, version)
	}
	return k, err
}

// ListKinds returns every kind version, or every version of one kind.
func (s *Store) ListKinds(ctx context.Context, kind string) ([]Kind, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+kindColumns+` FROM kinds
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
// it. Locking the kind FOR UPDATE waits out applies in flight (they hold
// it FOR KEY SHARE), so the check sees every resource they create.
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
		_, err = tx.Exec(ctx, `DELETE FROM kinds WHERE kind = $1 AND kind_version = $2`, kind, version)
		return err
	})
}

// KindsFingerprint changes whenever any kind is created, updated or
// deleted. Caches compare it to decide whether to reload.
func (s *Store) KindsFingerprint(ctx context.Context) (string, error) {
	var n, sum int64
	var latest *time.Time
	err := s.pool.QueryRow(ctx,
		`SELECT count(*), coalesce(sum(revision), 0), max(updated_at) FROM kinds`).Scan(&n, &sum, &latest)
	if err != nil {
		return "", err
	}
	ts := int64(0)
	if latest != nil {
		ts = latest.UnixNano()
	}
	return fmt.Sprintf("%d/%d/%d", n, sum, ts), nil
}
