package store

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Resource is a resource row as the API reads it.
type Resource struct {
	ID                int64
	Namespace         string
	Kind              string
	KindVersion       int32
	Name              string
	Labels            []byte
	Spec              []byte
	Status            []byte
	Conditions        []byte
	OwnerID           *int64
	RootID            *int64
	Generation        int64
	SyncedGeneration  int64
	HealthOK          bool
	FailureGeneration int64
	FailureTerminal   bool
	FailureAttempts   int32
	FailureMessage    *string
	// FailureReason is the failure's machine-readable cause, if any.
	FailureReason       *string
	Quarantined         bool
	OrphanedUntil       *time.Time // an orphan's grace deadline
	DeletionRequestedAt *time.Time
	ResourceVersion     int64
	Reconciles          int64
	CreatedAt           time.Time
	UpdatedAt           time.Time
	Phase               string
	Waiting             *string
	DeletionPolicy      string
	// ManagementPolicy is the resource's own ("", "full" or "observe");
	// Observed says what it is managed by now (converge_observed).
	ManagementPolicy string
	Observed         bool
	// ImportID names the existing object it adopts ("" = none).
	ImportID string
	// ProviderConfig names the provider config on top of the default
	// ("" = the default alone).
	ProviderConfig string
	// Rollup holds the children's phase counts, for a composite.
	Rollup []byte
	// Owner and Root name the composite above, for a child.
	Owner, Root *Ref
	// Task is the resource's pending work, if any: its reconcile task
	// first, else its oldest other task.
	Task *PendingTask
	// Wait names what the resource's reconcile waits for (a Hold* or Wait*
	// name), "" when nothing is pending: the scheduler's own reading.
	Wait string
	// RejectedStatus is the last status its status_schema refused, if any.
	RejectedStatus []byte
}

// PendingTask describes queued or running work for a resource.
type PendingTask struct {
	Trigger   string
	Claimed   bool
	NotBefore time.Time
	Attempts  int32
}

// resourceColumns lists the columns scanResource reads. summary leaves out
// spec and status.
func resourceColumns(summary bool) string {
	body := "r.spec, r.status"
	if summary {
		body = "'{}'::jsonb, '{}'::jsonb"
	}
	return `r.id, r.namespace, r.kind, r.kind_version, r.name, r.labels, ` + body + `, r.conditions,
		r.owner_id, r.root_id, r.generation, r.synced_generation, r.health_ok, r.failure_generation,
		r.failure_terminal, r.failure_attempts, r.failure_message, r.quarantined, r.orphaned_until,
		r.deletion_requested_at, r.resource_version, r.reconciles, r.created_at, r.updated_at, converge_phase(r),
		r.waiting, r.deletion_policy, r.provider_config, r.rollup,
		o.namespace, o.kind, o.name, rt.namespace, rt.kind, rt.name,
		(t.task).trigger, (t.task).claimed_by IS NOT NULL, (t.task).not_before, (t.task).attempts,
		coalesce(converge_waits_for(r, t.task), ''), r.rejected_status, r.failure_reason,
		r.management_policy, converge_observed(r), r.import_id`
}

// resourceJoins attaches, to each resource row r, its owner o, its root
// rt, and as t.task its pending worker task: its reconcile (specChange, or
// observe)
// task first, else its oldest other one. Reactor deliveries about it are
// its reactor's work, and rollups, gates and teardowns the server's.
const resourceJoins = `LEFT JOIN resources o ON o.id = r.owner_id
	LEFT JOIN resources rt ON rt.id = r.root_id AND r.root_id IS DISTINCT FROM r.owner_id
	LEFT JOIN LATERAL (
	SELECT tk AS task FROM tasks tk
	WHERE tk.resource_id = r.id AND tk.trigger NOT IN ('rollup', 'gate', 'teardown', 'reactor')
	ORDER BY tk.trigger NOT IN ('specChange', 'observe'), tk.id LIMIT 1) t ON true`

func scanResource(row pgx.Row) (Resource, error) {
	var r Resource
	var trigger *string
	var claimed *bool
	var notBefore *time.Time
	var attempts *int32
	var ons, okind, oname, rns, rkind, rname *string
	err := row.Scan(&r.ID, &r.Namespace, &r.Kind, &r.KindVersion, &r.Name, &r.Labels, &r.Spec,
		&r.Status, &r.Conditions, &r.OwnerID, &r.RootID, &r.Generation, &r.SyncedGeneration,
		&r.HealthOK, &r.FailureGeneration, &r.FailureTerminal, &r.FailureAttempts, &r.FailureMessage,
		&r.Quarantined, &r.OrphanedUntil, &r.DeletionRequestedAt, &r.ResourceVersion, &r.Reconciles, &r.CreatedAt,
		&r.UpdatedAt, &r.Phase, &r.Waiting, &r.DeletionPolicy, &r.ProviderConfig, &r.Rollup,
		&ons, &okind, &oname, &rns, &rkind, &rname, &trigger, &claimed, &notBefore, &attempts,
		&r.Wait, &r.RejectedStatus, &r.FailureReason, &r.ManagementPolicy, &r.Observed, &r.ImportID)
	if err != nil {
		return r, err
	}
	if okind != nil {
		r.Owner = &Ref{Namespace: *ons, Kind: *okind, Name: *oname}
	}
	if rkind != nil {
		r.Root = &Ref{Namespace: *rns, Kind: *rkind, Name: *rname}
	}
	if trigger != nil {
		r.Task = &PendingTask{Trigger: *trigger, Claimed: *claimed, NotBefore: *notBefore, Attempts: *attempts}
	}
	return r, nil
}

// ApplyInput is one resource to create or update.
type ApplyInput struct {
	Namespace   string
	Kind        string
	KindVersion int32
	Name        string
	Labels      []byte // JSON object
	Spec        []byte // JSON object, already validated
	// DeletionPolicy is "", "delete" or "retain".
	DeletionPolicy string
	// ProviderConfig names a provider config of the kind version on top
	// of its default ("" = the default alone).
	ProviderConfig string
	// ManagementPolicy is "full" or "observe"; "" leaves an existing
	// resource's as it is (a new one follows its kind's): an apply that
	// does not mention it never moves a resource between observed and
	// managed (SetManagementPolicy returns one to its kind's).
	ManagementPolicy string
	// ImportID names an existing object to adopt; "" leaves an existing
	// resource's as it is (a new one adopts nothing).
	ImportID string
	// KindRevision is the kind revision Spec was validated against; the
	// apply fails with ErrStaleKind if the kind changed since.
	KindRevision int64
}

// ApplyResult reports what ApplyResources did with one input.
type ApplyResult struct {
	ID         int64
	Generation int64
	// "created", "configured" (spec, version or provider config changed:
	// generation bumped), "relabeled" or
	// "unchanged".
	Result string
	// labelsChanged: the labels or the deletion policy changed (a
	// relabeled result may be a management policy change alone, which
	// records an event of its own).
	labelsChanged bool
}

type resourceKey struct{ namespace, kind, name string }

type existingRow struct {
	id          int64
	kindVersion int32
	generation  int64
	deleting    bool
	owner       *string
}

// ApplyResources creates or updates resources in one transaction: all or
// none. It schedules reconciles for new and changed specs and records an
// event per change with actor. The second result reports whether any work
// was scheduled.
func (s *Store) ApplyResources(ctx context.Context, actor string, in []ApplyInput) ([]ApplyResult, bool, error) {
	return s.ApplyResourcesFrom(ctx, SourceApply, actor, in)
}

// ApplyResourcesFrom is ApplyResources with the history revisions it
// records marked as coming from source (SourceApply, SourceRollout).
func (s *Store) ApplyResourcesFrom(ctx context.Context, source, actor string, in []ApplyInput) ([]ApplyResult, bool, error) {
	keys := make([]resourceKey, len(in))
	index := make(map[resourceKey]int, len(in))
	for i, a := range in {
		k := resourceKey{a.Namespace, a.Kind, a.Name}
		if j, dup := index[k]; dup {
			return nil, false, conflictf("resources[%d] and resources[%d] both name %s/%s/%s", j, i, a.Namespace, a.Kind, a.Name)
		}
		keys[i], index[k] = k, i
	}
	// Insert in key order so concurrent batches take unique-index locks in
	// the same order.
	order := make([]int, len(in))
	for i := range order {
		order[i] = i
	}
	sort.Slice(order, func(a, b int) bool {
		ka, kb := keys[order[a]], keys[order[b]]
		if ka.namespace != kb.namespace {
			return ka.namespace < kb.namespace
		}
		if ka.kind != kb.kind {
			return ka.kind < kb.kind
		}
		return ka.name < kb.name
	})

	var results []ApplyResult
	var scheduled bool
	err := s.retryCreateRace(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, pinPlansSQL); err != nil {
			return err
		}
		existing, err := lockExisting(ctx, tx, keys)
		if err != nil {
			return err
		}
		if err := checkKinds(ctx, tx, in, existing); err != nil {
			return err
		}
		if err := lockProviderConfigs(ctx, tx, in); err != nil {
			return err
		}
		if err := recordAs(ctx, tx, source, actor); err != nil {
			return err
		}
		results = make([]ApplyResult, len(in))
		scheduled = false
		var creates, updates []int
		for _, i := range order {
			if _, had := existing[keys[i]]; had {
				updates = append(updates, i)
			} else {
				creates = append(creates, i)
			}
		}
		batch := &pgx.Batch{}
		if len(creates) > 0 {
			queueCreates(batch, in, creates, index, results, &scheduled)
		}
		var repolicied []policyChange
		if len(updates) > 0 {
			queueUpdates(batch, in, updates, existing, keys, results, &repolicied)
		}
		if err := tx.SendBatch(ctx, batch).Close(); err != nil {
			return err
		}
		// What the updates changed decides their follow-up work.
		var schedule []int64
		ev := newEventBatch()
		for _, i := range updates {
			a, r := in[i], results[i]
			switch r.Result {
			case "configured":
				schedule = append(schedule, r.ID)
				ev.add(r.ID, a.Namespace, a.Kind, a.Name, r.Generation, "Normal", "SpecChanged",
					fmt.Sprintf("spec changed: generation %d", r.Generation), actor)
			case "relabeled":
				if !r.labelsChanged {
					continue
				}
				ev.add(r.ID, a.Namespace, a.Kind, a.Name, r.Generation, "Normal", "Relabeled", "labels changed", actor)
			}
		}
		batch = &pgx.Batch{}
		if len(schedule) > 0 {
			sort.Slice(schedule, func(a, b int) bool { return schedule[a] < schedule[b] })
			batch.Queue(scheduleReconcileSQL, schedule).Exec(func(tag pgconn.CommandTag) error {
				scheduled = scheduled || tag.RowsAffected() > 0
				return nil
			})
		}
		moved := repolicyEvents(ev, repolicied, actor)
		ev.queue(batch)
		if batch.Len() > 0 {
			if err := tx.SendBatch(ctx, batch).Close(); err != nil {
				return err
			}
		}
		if len(moved) > 0 {
			scheduled = true
			return requeueReconcile(ctx, tx, moved, true)
		}
		return nil
	})
	if err != nil {
		return nil, false, err
	}
	return results, scheduled, nil
}

// createResourcesSQL inserts new resources and queues their reconciles,
// in one statement. Each reserves the events id of its Created event,
// which is read from the row (converge_created_event) rather than stored.
var createResourcesSQL = `
	WITH ins AS (
	    INSERT INTO resources AS r (namespace, kind, kind_version, name, labels, spec, deletion_policy, provider_config,
	                                management_policy, import_id, created_event)
	    SELECT u.*, nextval(pg_get_serial_sequence('events', 'id'))
	    FROM unnest($1::text[], $2::text[], $3::int[], $4::text[], $5::jsonb[], $6::jsonb[], $7::text[], $8::text[],
	                $9::text[], $10::text[]) AS u
	    RETURNING r.*
	), sched AS (` + queueReconcile(`ins r`, `true`) + `
	    RETURNING 1
	)
	SELECT r.id, r.namespace, r.kind, r.name, r.generation, (SELECT count(*) FROM sched) FROM ins r`

// queueCreates queues the insert of in[creates] (in key order), which
// fills their results; index maps each input's identity to its position.
func queueCreates(batch *pgx.Batch, in []ApplyInput, creates []int, index map[resourceKey]int, results []ApplyResult, scheduled *bool) {
	n := len(creates)
	ns, kinds, names := make([]string, n), make([]string, n), make([]string, n)
	versions := make([]int32, n)
	labels, specs := make([][]byte, n), make([][]byte, n)
	policies, configs := make([]string, n), make([]string, n)
	managed, imports := make([]string, n), make([]string, n)
	for j, i := range creates {
		a := in[i]
		ns[j], kinds[j], names[j], versions[j] = a.Namespace, a.Kind, a.Name, a.KindVersion
		labels[j], specs[j], policies[j], configs[j] = a.Labels, a.Spec, a.DeletionPolicy, a.ProviderConfig
		managed[j], imports[j] = a.ManagementPolicy, a.ImportID
	}
	batch.Queue(createResourcesSQL, ns, kinds, versions, names, labels, specs, policies, configs, managed, imports).Query(func(rows pgx.Rows) error {
		for rows.Next() {
			var id, gen, queued int64
			var k resourceKey
			if err := rows.Scan(&id, &k.namespace, &k.kind, &k.name, &gen, &queued); err != nil {
				return err
			}
			results[index[k]] = ApplyResult{ID: id, Generation: gen, Result: "created"}
			*scheduled = *scheduled || queued > 0
		}
		return rows.Err()
	})
}

// queueUpdates queues the update of the existing (locked) resources
// in[updates], which fills their results: configured when the spec, the
// version, the provider config or the import changed (a new generation),
// relabeled when only labels, the deletion policy or the management
// policy did, unchanged otherwise. A management policy change is added to
// repolicied.
func queueUpdates(batch *pgx.Batch, in []ApplyInput, updates []int, existing map[resourceKey]existingRow, keys []resourceKey, results []ApplyResult, repolicied *[]policyChange) {
	n := len(updates)
	ids := make([]int64, n)
	versions := make([]int32, n)
	labels, specs := make([][]byte, n), make([][]byte, n)
	policies, configs := make([]string, n), make([]string, n)
	managed, imports := make([]string, n), make([]string, n)
	byID := make(map[int64]int, n)
	for j, i := range updates {
		a, prev := in[i], existing[keys[i]]
		ids[j], versions[j], labels[j], specs[j] = prev.id, a.KindVersion, a.Labels, a.Spec
		policies[j], configs[j] = a.DeletionPolicy, a.ProviderConfig
		managed[j], imports[j] = a.ManagementPolicy, a.ImportID
		byID[prev.id] = i
		results[i] = ApplyResult{ID: prev.id, Generation: prev.generation, Result: "unchanged"}
	}
	batch.Queue(`
		UPDATE resources r SET
		    kind_version = u.kind_version,
		    labels = u.labels,
		    spec = u.spec,
		    deletion_policy = u.deletion_policy,
		    provider_config = u.provider_config,
		    management_policy = coalesce(nullif(u.management_policy, ''), r.management_policy),
		    import_id = coalesce(nullif(u.import_id, ''), r.import_id),
		    generation = r.generation + CASE WHEN r.spec <> u.spec
		        OR r.kind_version <> u.kind_version
		        OR r.provider_config <> u.provider_config
		        OR r.import_id <> coalesce(nullif(u.import_id, ''), r.import_id) THEN 1 ELSE 0 END,
		    resource_version = r.resource_version + 1,
		    updated_at = now()
		FROM unnest($1::bigint[], $2::int[], $3::jsonb[], $4::jsonb[], $5::text[], $6::text[], $7::text[], $8::text[])
		     AS u(id, kind_version, labels, spec, deletion_policy, provider_config, management_policy, import_id),
		     resources old
		WHERE r.id = u.id AND old.id = u.id
		  AND (r.spec <> u.spec OR r.labels <> u.labels
		   OR r.kind_version <> u.kind_version OR r.deletion_policy <> u.deletion_policy
		   OR r.provider_config <> u.provider_config
		   OR r.management_policy <> coalesce(nullif(u.management_policy, ''), r.management_policy)
		   OR r.import_id <> coalesce(nullif(u.import_id, ''), r.import_id))
		RETURNING r.id, r.generation, old.management_policy, r.management_policy,
		    converge_observed(old), converge_observed(r),
		    old.labels <> r.labels OR old.deletion_policy <> r.deletion_policy`,
		ids, versions, labels, specs, policies, configs, managed, imports).Query(func(rows pgx.Rows) error {
		for rows.Next() {
			var id, gen int64
			var pc policyChange
			var relabeled bool
			if err := rows.Scan(&id, &gen, &pc.fromOwn, &pc.toOwn, &pc.wasObserved, &pc.isObserved, &relabeled); err != nil {
				return err
			}
			if pc.fromOwn != pc.toOwn {
				pc.id, pc.generation, pc.at = id, gen, in[byID[id]]
				*repolicied = append(*repolicied, pc)
			}
			i := byID[id]
			result := "relabeled"
			if gen != results[i].Generation {
				result = "configured"
			}
			results[i] = ApplyResult{ID: id, Generation: gen, Result: result, labelsChanged: relabeled}
		}
		return rows.Err()
	})
}

// retryCreateRace runs fn in a transaction (see inTx), again when it
// loses a race to create a resource: a concurrent apply inserted the same
// identity after this one looked, so the next attempt finds and updates it.
func (s *Store) retryCreateRace(ctx context.Context, fn func(pgx.Tx) error) error {
	var err error
	for attempt := 0; attempt < 4; attempt++ {
		err = s.inTx(ctx, fn)
		var pgErr *pgconn.PgError
		if !errors.As(err, &pgErr) || pgErr.Code != "23505" || pgErr.ConstraintName != "resources_identity" {
			return err
		}
	}
	return err
}

// lockExisting locks the rows that already exist for keys, in id order,
// and returns what the apply needs to know about them.
func lockExisting(ctx context.Context, tx pgx.Tx, keys []resourceKey) (map[resourceKey]existingRow, error) {
	ns, kinds, names := make([]string, len(keys)), make([]string, len(keys)), make([]string, len(keys))
	for i, k := range keys {
		ns[i], kinds[i], names[i] = k.namespace, k.kind, k.name
	}
	rows, err := tx.Query(ctx, `
		SELECT r.id, r.namespace, r.kind, r.name, r.kind_version, r.generation,
		       r.deletion_requested_at IS NOT NULL, o.kind || '/' || o.name
		FROM resources r LEFT JOIN resources o ON o.id = r.owner_id
		JOIN unnest($1::text[], $2::text[], $3::text[]) AS i(namespace, kind, name)
		  ON r.namespace = i.namespace AND r.kind = i.kind AND r.name = i.name
		ORDER BY r.id
		FOR NO KEY UPDATE OF r`, ns, kinds, names)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := make(map[resourceKey]existingRow)
	for rows.Next() {
		var k resourceKey
		var e existingRow
		if err := rows.Scan(&e.id, &k.namespace, &k.kind, &k.name, &e.kindVersion, &e.generation, &e.deleting, &e.owner); err != nil {
			return nil, err
		}
		out[k] = e
	}
	return out, rows.Err()
}

// checkKinds refuses the batch if a kind changed since its specs were
// validated, if a resource is being deleted, or if a new resource (or a
// version move) targets a retired kind version.
func checkKinds(ctx context.Context, tx pgx.Tx, in []ApplyInput, existing map[resourceKey]existingRow) error {
	type kv struct {
		kind    string
		version int32
	}
	type state struct {
		revision int64
		retired  bool
	}
	want := map[kv]bool{}
	var kinds []string
	var versions []int32
	for _, a := range in {
		k := kv{a.Kind, a.KindVersion}
		if !want[k] {
			want[k] = true
			kinds, versions = append(kinds, a.Kind), append(versions, a.KindVersion)
		}
	}
	// FOR KEY SHARE keeps the kinds from being deleted until this
	// transaction commits (see DeleteKind).
	rows, err := tx.Query(ctx, `
		SELECT k.kind, k.kind_version, k.revision, k.retired FROM kinds k
		JOIN unnest($1::text[], $2::int[]) AS i(kind, kind_version)
		  ON k.kind = i.kind AND k.kind_version = i.kind_version
		FOR KEY SHARE OF k`, kinds, versions)
	if err != nil {
		return err
	}
	got := map[kv]state{}
	for rows.Next() {
		var k kv
		var st state
		if err := rows.Scan(&k.kind, &k.version, &st.revision, &st.retired); err != nil {
			rows.Close()
			return err
		}
		got[k] = st
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	for i, a := range in {
		st, ok := got[kv{a.Kind, a.KindVersion}]
		if !ok || st.revision != a.KindRevision {
			return fmt.Errorf("%w: %s v%d", ErrStaleKind, a.Kind, a.KindVersion)
		}
		prev, had := existing[resourceKey{a.Namespace, a.Kind, a.Name}]
		if had && prev.deleting {
			return conflictf("resources[%d]: %s/%s/%s is being deleted; apply it again once it is gone", i, a.Namespace, a.Kind, a.Name)
		}
		if had && prev.owner != nil {
			return conflictf("resources[%d]: %s/%s/%s belongs to composite %s, whose composer manages it; change the composite instead",
				i, a.Namespace, a.Kind, a.Name, *prev.owner)
		}
		if st.retired && (!had || prev.kindVersion != a.KindVersion) {
			return conflictf("resources[%d]: kind %s v%d is retired: it accepts no new resources; use a newer version", i, a.Kind, a.KindVersion)
		}
	}
	return nil
}

// GetResource reads one resource by identity.
func (s *Store) GetResource(ctx context.Context, namespace, kind, name string) (Resource, error) {
	r, err := scanResource(s.db(ctx).QueryRow(ctx, `SELECT `+resourceColumns(false)+`
		FROM resources r `+resourceJoins+`
		WHERE r.namespace = $1 AND r.kind = $2 AND r.name = $3`, namespace, kind, name))
	if errors.Is(err, pgx.ErrNoRows) {
		return r, notFoundf("resource %s/%s/%s not found", namespace, kind, name)
	}
	return r, err
}
