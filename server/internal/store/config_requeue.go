package store

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"
)

// A provider config edit changes what its resources' next tasks get, so
// the resources whose effective config changed are reconciled again at
// their generation: not all at once (a default shared by a million
// resources would flood the queue), but a batch at a time by
// RequeueForConfigs, from a durable cursor per change.

// affectedConfigs returns the config names whose resources' effective
// config differs between the configs of a kind version before and after
// a write (” standing for resources on the default alone), sorted. Only
// a config on both sides can have resources: none may name a config
// before it exists, and one in use cannot be deleted.
func affectedConfigs(before, after map[string]ProviderConfig) ([]string, error) {
	names := map[string]bool{"": true}
	for n := range before {
		if _, ok := after[n]; ok {
			names[n] = true
		}
	}
	var out []string
	for n := range names {
		a, err := effectiveOf(before, n)
		if err != nil {
			return nil, err
		}
		b, err := effectiveOf(after, n)
		if err != nil {
			return nil, err
		}
		if !sameJSON(a, b) {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out, nil
}

// effectiveOf is the effective config of resources naming name (” or
// DefaultConfig: the default alone) among configs.
func effectiveOf(configs map[string]ProviderConfig, name string) ([]byte, error) {
	def := configs[DefaultConfig].Config
	if name == "" || name == DefaultConfig {
		return MergeConfig(def, nil)
	}
	named, ok := configs[name]
	if !ok {
		return MergeConfig(def, nil)
	}
	return MergeConfig(def, named.Config)
}

// requeueAfterWrite records that the resources whose effective config
// differs between before and after must be reconciled again, naming what
// changed.
func requeueAfterWrite(ctx context.Context, tx pgx.Tx, kind string, version int32, before, after map[string]ProviderConfig, what string) error {
	names, err := affectedConfigs(before, after)
	if err != nil {
		return err
	}
	return recordRequeue(ctx, tx, kind, version, names, what)
}

// recordRequeue records that the resources on names must be reconciled
// again after what changed.
func recordRequeue(ctx context.Context, tx pgx.Tx, kind string, version int32, names []string, what string) error {
	if len(names) == 0 {
		return nil
	}
	if slices.Contains(names, "") && !slices.Contains(names, DefaultConfig) {
		names = append(names, DefaultConfig) // a resource may name the default explicitly
	}
	_, err := tx.Exec(ctx, `INSERT INTO config_requeues (kind, kind_version, names, what, upto_id)
		VALUES ($1, $2, $3, $4, coalesce((SELECT max(id) FROM resources), 0))`, kind, version, names, what)
	return err
}

// requeueBatchSQL queues, for the oldest pending config change, a
// reconcile task (specChange, or observe) at the current generation for up to $1 of its next
// resources that may be re-observed now (converge_observable: synced, and
// nothing holds them; a resource with work queued gets the new config when
// that work is claimed), records a ConfigChanged event for each, and moves
// the change's cursor; a change with no resources left is removed. It
// returns the change and how many it queued and looked at.
const requeueBatchSQL = `
	WITH c AS (
	    SELECT * FROM config_requeues ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED
	), batch AS (
	    SELECT r.id FROM resources r, c
	    WHERE r.kind = c.kind AND r.kind_version = c.kind_version AND r.provider_config = ANY(c.names)
	      AND r.id > c.after_id AND r.id <= c.upto_id
	    ORDER BY r.id LIMIT $1
	    FOR NO KEY UPDATE OF r
	), queued AS (
	    INSERT INTO tasks (resource_id, trigger, kind, kind_version, shard, generation)
	    SELECT r.id, converge_reconcile_trigger(r, 'specChange'), r.kind, r.kind_version, r.shard, r.generation
	    FROM resources r JOIN batch b ON b.id = r.id
	    WHERE converge_observable(r)
	    ORDER BY r.id
	    ON CONFLICT (resource_id, trigger, key) DO NOTHING
	    RETURNING resource_id
	), ev AS (
	    INSERT INTO events (resource_id, namespace, kind, name, generation, type, reason, message, actor)
	    SELECT r.id, r.namespace, r.kind, r.name, r.generation, 'Normal', 'ConfigChanged',
	           c.what || ' changed its effective provider config; reconciling generation ' || r.generation, 'system'
	    FROM queued q JOIN resources r ON r.id = q.resource_id, c
	), moved AS (
	    UPDATE config_requeues SET after_id = coalesce((SELECT max(id) FROM batch), after_id),
	        queued = queued + (SELECT count(*) FROM queued)
	    WHERE id = (SELECT id FROM c)
	    RETURNING id, kind, kind_version, what, queued
	)
	SELECT m.id, m.kind, m.kind_version, m.what, m.queued, (SELECT count(*) FROM queued), (SELECT count(*) FROM batch)
	FROM moved m`

// ConfigRequeue reports one batch of RequeueForConfigs.
type ConfigRequeue struct {
	Kind    string
	Version int32
	// What names the config change.
	What string
	// Queued is how many resources this batch queued; Total how many the
	// change has queued so far.
	Queued, Total int64
	// Done: the change has no resources left.
	Done bool
}

// RequeueForConfigs works through the oldest pending provider config
// change by up to limit resources (see requeueBatchSQL), recording a kind
// event once the change is done. It reports false when there is none.
func (s *Store) RequeueForConfigs(ctx context.Context, limit int) (ConfigRequeue, bool, error) {
	var out ConfigRequeue
	var found bool
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		var id, looked int64
		err := tx.QueryRow(ctx, requeueBatchSQL, limit).Scan(&id, &out.Kind, &out.Version, &out.What, &out.Total, &out.Queued, &looked)
		if errors.Is(err, pgx.ErrNoRows) {
			found = false
			return nil
		}
		if err != nil {
			return err
		}
		found = true
		out.Done = looked < int64(limit)
		if !out.Done {
			return nil
		}
		if _, err := tx.Exec(ctx, `DELETE FROM config_requeues WHERE id = $1`, id); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `
			INSERT INTO events (resource_id, namespace, kind, name, generation, type, reason, message, actor)
			VALUES (NULL, '', $1, $2, 0, 'Normal', 'ConfigRequeued', $3, 'system')`,
			out.Kind, fmt.Sprintf("v%d", out.Version),
			fmt.Sprintf("%s: reconciled %d resource(s) again whose effective provider config changed", out.What, out.Total))
		return err
	})
	return out, found, err
}

// PendingConfigRequeues reports whether a provider config change still has
// resources to re-queue.
func (s *Store) PendingConfigRequeues(ctx context.Context) (bool, error) {
	var pending bool
	err := s.db(ctx).QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM config_requeues)`).Scan(&pending)
	return pending, err
}
