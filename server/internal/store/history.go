package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// Sources of a spec revision: what wrote the spec.
const (
	SourceApply    = "apply"
	SourceCompose  = "compose"
	SourceFlow     = "flow"
	SourceRollback = "rollback"
	// SourceRollout marks a rollout's moves between kind versions.
	SourceRollout = "rollout"
)

// DefaultHistoryKeep is how many revisions per resource are kept when the
// session setting converge.history_keep is not set.
const DefaultHistoryKeep = 50

// HistoryKeepSetting is the session setting (a PostgreSQL run-time
// parameter) that tells the change trigger how many revisions to keep.
const HistoryKeepSetting = "converge.history_keep"

// recordAsSQL tells the change trigger, for the rest of the transaction,
// where the spec revisions it records come from and who made them.
const recordAsSQL = `SELECT set_config('converge.source', $1, true), set_config('converge.actor', $2, true)`

// historyKeepSQL is the number of revisions the trigger keeps in this
// session; its fallback is DefaultHistoryKeep, as in the trigger.
const historyKeepSQL = `coalesce(nullif(current_setting('` + HistoryKeepSetting + `', true), '')::int, 50)`

// recordAs must run in every transaction that changes a resource's spec,
// before the change.
func recordAs(ctx context.Context, tx pgx.Tx, source, actor string) error {
	_, err := tx.Exec(ctx, recordAsSQL, source, actor)
	return err
}

// Revision is one recorded spec of a resource.
type Revision struct {
	Generation  int64
	KindVersion int32
	Spec        []byte
	Source      string
	Actor       string
	At          time.Time
}

// HistoryPage is one page of a resource's revisions.
type HistoryPage struct {
	// Revisions, newest first.
	Revisions []Revision
	// Keep is how many revisions per resource are kept.
	Keep int32
	// More reports whether older revisions follow.
	More bool
}

// ResourceHistory returns up to limit of a resource's kept revisions,
// newest first, starting below generation before (0: from the newest).
// A revision is kept while it is among the last Keep generations; reads
// apply the same rule as the trigger, so a lowered setting shows at once.
func (s *Store) ResourceHistory(ctx context.Context, key ResourceKey, before int64, limit int) (HistoryPage, error) {
	rows, err := s.db(ctx).Query(ctx, `
		SELECT k.keep, v.generation, v.kind_version, v.spec, v.source, v.actor, v.at
		FROM resources r
		CROSS JOIN (SELECT `+historyKeepSQL+` AS keep) k
		LEFT JOIN LATERAL (
		    SELECT s.* FROM converge_revisions(r, k.keep) s
		    WHERE $4 = 0 OR s.generation < $4
		    ORDER BY s.generation DESC LIMIT $5) v ON true
		WHERE r.namespace = $1 AND r.kind = $2 AND r.name = $3`,
		key.Namespace, key.Kind, key.Name, before, limit+1)
	if err != nil {
		return HistoryPage{}, err
	}
	defer rows.Close()
	var page HistoryPage
	found := false
	for rows.Next() {
		found = true
		var gen *int64
		var v Revision
		var kv *int32
		var src, act *string
		var at *time.Time
		if err := rows.Scan(&page.Keep, &gen, &kv, &v.Spec, &src, &act, &at); err != nil {
			return HistoryPage{}, err
		}
		if gen == nil {
			continue
		}
		v.Generation, v.KindVersion, v.Source, v.Actor, v.At = *gen, *kv, *src, *act, *at
		page.Revisions = append(page.Revisions, v)
	}
	if err := rows.Err(); err != nil {
		return HistoryPage{}, err
	}
	if !found {
		return HistoryPage{}, notFoundf("resource %s/%s/%s not found", key.Namespace, key.Kind, key.Name)
	}
	if len(page.Revisions) > limit {
		page.Revisions, page.More = page.Revisions[:limit], true
	}
	return page, nil
}

// Rollback asks for a resource's spec of an earlier generation again.
type Rollback struct {
	Key        ResourceKey
	Generation int64
	Actor      string
	Reason     string
	// Check validates the revision's spec against its kind version and
	// returns the kind revision it validated against. Its error is
	// returned as is.
	Check func(version int32, spec []byte) (kindRevision int64, err error)
}

// rollbackTarget is what RollbackResource reads before it writes.
type rollbackTarget struct {
	id, generation         int64
	kindVersion, toVersion int32
	providerConfig         string
	owner                  *string
	deleting               bool
	spec                   []byte
	keep                   int32
}

// RollbackResource applies the spec (and kind version) of an earlier
// generation again as a new generation, schedules its reconcile and
// records a RolledBack event. If that spec and version are the current
// ones, nothing changes and changed is false. A kind that changed since
// Check validated returns ErrStaleKind.
func (s *Store) RollbackResource(ctx context.Context, rb Rollback) (changed bool, err error) {
	err = s.inTx(ctx, func(tx pgx.Tx) error {
		changed = false
		t, err := lockRollbackTarget(ctx, tx, rb)
		if err != nil {
			return err
		}
		if err := checkRollbackKind(ctx, tx, rb, t); err != nil {
			return err
		}
		if err := recordAs(ctx, tx, SourceRollback, rb.Actor); err != nil {
			return err
		}
		var gen int64
		err = tx.QueryRow(ctx, `
			UPDATE resources r SET spec = $2, kind_version = $3, generation = r.generation + 1,
			    resource_version = r.resource_version + 1, updated_at = now()
			WHERE r.id = $1 AND (r.spec <> $2::jsonb OR r.kind_version <> $3)
			RETURNING r.generation`, t.id, t.spec, t.toVersion).Scan(&gen)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		changed = true
		msg := fmt.Sprintf("rolled back to the spec of generation %d (%s v%d): generation %d",
			rb.Generation, rb.Key.Kind, t.toVersion, gen)
		if rb.Reason != "" {
			msg += "; reason: " + rb.Reason
		}
		ev := newEventBatch()
		ev.add(t.id, rb.Key.Namespace, rb.Key.Kind, rb.Key.Name, gen, "Normal", "RolledBack", msg, rb.Actor)
		batch := &pgx.Batch{}
		batch.Queue(scheduleReconcileSQL, []int64{t.id})
		ev.queue(batch)
		return tx.SendBatch(ctx, batch).Close()
	})
	return changed, err
}

// lockRollbackTarget locks the resource and reads the revision to roll
// back to, refusing what cannot be rolled back.
func lockRollbackTarget(ctx context.Context, tx pgx.Tx, rb Rollback) (rollbackTarget, error) {
	var t rollbackTarget
	k := rb.Key
	err := tx.QueryRow(ctx, `
		SELECT r.id, r.generation, r.kind_version, r.provider_config, r.deletion_requested_at IS NOT NULL,
		       o.kind || '/' || o.name, `+historyKeepSQL+`
		FROM resources r LEFT JOIN resources o ON o.id = r.owner_id
		WHERE r.namespace = $1 AND r.kind = $2 AND r.name = $3
		FOR NO KEY UPDATE OF r`, k.Namespace, k.Kind, k.Name).Scan(
		&t.id, &t.generation, &t.kindVersion, &t.providerConfig, &t.deleting, &t.owner, &t.keep)
	if errors.Is(err, pgx.ErrNoRows) {
		return t, notFoundf("resource %s/%s/%s not found", k.Namespace, k.Kind, k.Name)
	}
	if err != nil {
		return t, err
	}
	who := fmt.Sprintf("%s/%s/%s", k.Namespace, k.Kind, k.Name)
	if t.owner != nil {
		return t, conflictf("%s is owned by composite %s: its spec comes from its composer; roll back the composite", who, *t.owner)
	}
	if t.deleting {
		return t, conflictf("%s is being deleted; a rollback cannot stop a teardown under way", who)
	}
	var oldest *int64
	var toVersion *int32
	err = tx.QueryRow(ctx, `
		WITH kept AS (SELECT s.* FROM resources r, converge_revisions(r, $3::int) s WHERE r.id = $1)
		SELECT min(k.generation),
		       (SELECT v.kind_version FROM kept v WHERE v.generation = $2),
		       (SELECT v.spec FROM kept v WHERE v.generation = $2)
		FROM kept k`,
		t.id, rb.Generation, t.keep).Scan(&oldest, &toVersion, &t.spec)
	if err != nil {
		return t, err
	}
	if oldest == nil || toVersion == nil || rb.Generation < *oldest || rb.Generation > t.generation {
		return t, notFoundf("generation %d of %s: %s", rb.Generation, who, keptRange(rb.Generation, t.generation, oldest, t.keep))
	}
	t.toVersion = *toVersion
	return t, nil
}

// keptRange explains why a generation is not among the kept revisions.
func keptRange(want, current int64, oldest *int64, keep int32) string {
	switch {
	case want > current:
		return fmt.Sprintf("never existed; the current generation is %d", current)
	case oldest == nil:
		return fmt.Sprintf("no revision is kept (the current generation is %d)", current)
	default:
		return fmt.Sprintf("aged out: the oldest kept generation is %d (the last %d are kept)", *oldest, keep)
	}
}

// checkRollbackKind checks the revision's kind version: it still exists,
// it is not a retired version the resource would move to, the named
// provider config exists there, and the spec is valid there.
func checkRollbackKind(ctx context.Context, tx pgx.Tx, rb Rollback, t rollbackTarget) error {
	k := rb.Key
	var revision int64
	var retired bool
	// FOR KEY SHARE keeps the kind version from being deleted until commit.
	err := tx.QueryRow(ctx, `SELECT revision, retired FROM kinds WHERE kind = $1 AND kind_version = $2 FOR KEY SHARE`,
		k.Kind, t.toVersion).Scan(&revision, &retired)
	if errors.Is(err, pgx.ErrNoRows) {
		return conflictf("generation %d of %s/%s/%s was at kind %s v%d, which is no longer registered",
			rb.Generation, k.Namespace, k.Kind, k.Name, k.Kind, t.toVersion)
	}
	if err != nil {
		return err
	}
	if retired && t.toVersion != t.kindVersion {
		return conflictf("generation %d of %s/%s/%s was at kind %s v%d, which is retired: it accepts no resources moving to it",
			rb.Generation, k.Namespace, k.Kind, k.Name, k.Kind, t.toVersion)
	}
	if t.providerConfig != "" && t.toVersion != t.kindVersion {
		if err := lockProviderConfig(ctx, tx, k.Kind, t.toVersion, t.providerConfig, "provider_config"); err != nil {
			return err
		}
	}
	validated, err := rb.Check(t.toVersion, t.spec)
	if err != nil {
		return err
	}
	if validated != revision {
		return fmt.Errorf("%w: %s v%d", ErrStaleKind, k.Kind, t.toVersion)
	}
	return nil
}
