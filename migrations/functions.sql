-- Every function and trigger of the schema, as it is now. migrate applies
-- this file after the versioned migrations whenever its checksum differs
-- from the one the database records, in one transaction; every statement
-- here is idempotent. A reader finds each function's current body here
-- and nowhere else.

-- The scheduling vocabulary. Each rule is written once, here; the store's
-- statements and the API call these functions, and PostgreSQL inlines
-- them into the statements that use them (they are single SQL
-- expressions), so they cost what the expression costs.

-- converge_synced: the resource has observed its current generation.
CREATE OR REPLACE FUNCTION converge_synced(r resources) RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT r.synced_generation >= r.generation
$$;

-- converge_blocks_dependents: the dependency gate holds a resource's
-- dependents while it is being deleted or has not observed its current
-- generation.
CREATE OR REPLACE FUNCTION converge_blocks_dependents(r resources) RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT r.deletion_requested_at IS NOT NULL OR NOT converge_synced(r)
$$;

-- converge_goes_first lists what must be gone before the teardown of a
-- deleting resource may start: its children and its deleting dependents,
-- except quarantined ones (a quarantine freezes their teardown, so they
-- no longer hold anyone up).
CREATE OR REPLACE FUNCTION converge_goes_first(id bigint) RETURNS SETOF bigint
LANGUAGE sql STABLE PARALLEL SAFE AS $$
  SELECT c.id FROM resources c WHERE c.owner_id = $1 AND NOT c.quarantined
  UNION ALL
  SELECT d.id FROM edges e JOIN resources d ON d.id = e.dependent_id
  WHERE e.dependency_id = $1 AND d.deletion_requested_at IS NOT NULL AND NOT d.quarantined
$$;

-- converge_hold says what holds a resource back from reconcile work, in
-- precedence order, or NULL when nothing does:
--   deleting     teardown has started; only teardown work runs
--   quarantined  an operator froze it
--   failed       a terminal failure pins the current generation
--   orphaned     its composite stopped emitting it; it waits out its grace
--   waiting      the dependency gate holds it (waiting says why)
CREATE OR REPLACE FUNCTION converge_hold(r resources) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT CASE
    WHEN r.deletion_requested_at IS NOT NULL THEN 'deleting'
    WHEN r.quarantined THEN 'quarantined'
    WHEN r.failure_terminal AND r.failure_generation = r.generation THEN 'failed'
    WHEN r.orphaned_until IS NOT NULL THEN 'orphaned'
    WHEN r.waiting IS NOT NULL THEN 'waiting'
  END
$$;

-- converge_phase is the one definition of a resource's phase. The holds
-- come first, in their order; then a generation the resource has not
-- observed makes it Reconciling, whatever its children did before (the
-- phase is about the current generation, at every level of a composite);
-- then the rollup of its children and its own health.
CREATE OR REPLACE FUNCTION converge_phase(r resources) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT CASE converge_hold(r)
    WHEN 'deleting' THEN 'Deleting'
    WHEN 'quarantined' THEN 'Quarantined'
    WHEN 'failed' THEN 'Failed'
    WHEN 'orphaned' THEN 'Orphaned'
    ELSE CASE
      WHEN NOT converge_synced(r) THEN 'Reconciling'
      WHEN r.subtree = 'failed' THEN 'Failed'
      WHEN NOT r.health_ok OR r.subtree = 'degraded' THEN 'Degraded'
      WHEN r.subtree IN ('none', 'ready') THEN 'Ready'
      ELSE 'Reconciling'
    END
  END
$$;

-- converge_observed: the resource is only ever observed, never created,
-- updated or deleted: its own management policy says so, or it has none
-- and its kind version's (kind_policy) does. This is the one place the
-- policy is decided; converge_reconcile_trigger turns it into the work
-- queued. A statement over many rows passes kind_policy from one join with
-- kinds rather than a lookup per row.
CREATE OR REPLACE FUNCTION converge_observed(r resources, kind_policy text) RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT coalesce(nullif(r.management_policy, ''), nullif(kind_policy, ''), 'full') = 'observe'
$$;

-- converge_kind_policy: the management policy of r's kind version, looked
-- up for one row.
CREATE OR REPLACE FUNCTION converge_kind_policy(r resources) RETURNS text
LANGUAGE sql STABLE PARALLEL SAFE AS $$
  SELECT k.management_policy FROM kinds k WHERE k.kind = r.kind AND k.kind_version = r.kind_version
$$;

CREATE OR REPLACE FUNCTION converge_observed(r resources) RETURNS boolean
LANGUAGE sql STABLE PARALLEL SAFE AS $$
  SELECT converge_observed(r, converge_kind_policy(r))
$$;

-- converge_reconcile_trigger: the trigger a resource's reconcile work
-- runs under: observe for an observed resource, else managed (specChange
-- for a reconcile, resync for a re-observation).
CREATE OR REPLACE FUNCTION converge_reconcile_trigger(r resources, kind_policy text, managed text) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT CASE WHEN converge_observed(r, kind_policy) THEN 'observe' ELSE managed END
$$;

CREATE OR REPLACE FUNCTION converge_reconcile_trigger(r resources, managed text) RETURNS text
LANGUAGE sql STABLE PARALLEL SAFE AS $$
  SELECT converge_reconcile_trigger(r, converge_kind_policy(r), managed)
$$;

-- converge_due: reconcile work (specChange, or observe) is due: a generation is not
-- observed yet and nothing holds the resource.
CREATE OR REPLACE FUNCTION converge_due(r resources) RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT NOT converge_synced(r) AND converge_hold(r) IS NULL
$$;

-- converge_observable: the resource may be re-observed (resync, recompose):
-- its generation is observed and nothing holds it.
CREATE OR REPLACE FUNCTION converge_observable(r resources) RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT converge_synced(r) AND converge_hold(r) IS NULL
$$;

-- converge_claimable: a queued task a worker may be handed now.
CREATE OR REPLACE FUNCTION converge_claimable(t tasks) RETURNS boolean
LANGUAGE sql STABLE PARALLEL SAFE AS $$
  SELECT t.claimed_by IS NULL AND t.not_before <= now()
$$;

-- converge_free_slots: how many more tasks of a kind version may be in
-- flight across every replica (its max_inflight minus its claimed tasks),
-- or NULL when the kind version has no cap.
CREATE OR REPLACE FUNCTION converge_free_slots(of_kind text, of_version integer) RETURNS integer
LANGUAGE sql STABLE PARALLEL SAFE AS $$
  SELECT k.max_inflight - (SELECT count(*) FROM tasks c
                           WHERE c.claimed_by IS NOT NULL AND c.kind = k.kind
                             AND c.kind_version = k.kind_version)::int
  FROM kinds k
  WHERE k.kind = of_kind AND k.kind_version = of_version AND k.max_inflight > 0
$$;

-- converge_waits_for names what a resource's pending work waits for, as
-- the scheduler sees it: its hold (a deleting resource's only while no
-- teardown task is queued: it waits for what must go first); else, for
-- its queued task t, 'running' (claimed), 'backoff' (not before a retry
-- time), 'capped' (its kind's max_inflight is reached) or 'worker' (ready
-- for any worker that serves it); 'unqueued' when a generation is due but
-- no task is queued; NULL when nothing is pending. t is the resource's
-- reconcile task, else its other pending task (a teardown), if any.
CREATE OR REPLACE FUNCTION converge_waits_for(r resources, t tasks) RETURNS text
LANGUAGE sql STABLE PARALLEL SAFE AS $$
  SELECT CASE
    WHEN converge_hold(r) IS NOT NULL AND (converge_hold(r) <> 'deleting' OR t.id IS NULL) THEN converge_hold(r)
    WHEN t.id IS NULL THEN CASE WHEN converge_due(r) THEN 'unqueued' END
    WHEN t.claimed_by IS NOT NULL THEN 'running'
    WHEN t.not_before > now() THEN 'backoff'
    WHEN converge_free_slots(t.kind, t.kind_version) <= 0 THEN 'capped'
    ELSE 'worker'
  END
$$;

-- Conditions a worker reports replace the previous set; a condition whose
-- status did not change keeps its last transition time.
CREATE OR REPLACE FUNCTION converge_merge_conditions(old jsonb, new jsonb, at timestamptz) RETURNS jsonb
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT CASE WHEN new = '[]'::jsonb THEN '[]'::jsonb ELSE (
    SELECT coalesce(jsonb_agg(n.c || jsonb_build_object('last_transition_time',
             CASE WHEN o.c IS NOT NULL AND o.c->>'status' = n.c->>'status'
                  THEN o.c->'last_transition_time' ELSE to_jsonb(at) END) ORDER BY n.ord), '[]'::jsonb)
    FROM jsonb_array_elements(new) WITH ORDINALITY AS n(c, ord)
    LEFT JOIN LATERAL (SELECT x AS c FROM jsonb_array_elements(old) AS x
                       WHERE x->>'type' = n.c->>'type' LIMIT 1) AS o ON true)
  END
$$;

-- converge_wake queues the server's own work (rollup, gate, teardown) for
-- the given resources, or marks queued work as woken again: a claimed
-- internal task finishes only if no wake-up came in meanwhile. The latest
-- traced waker's traceparent is the one its trace links to.
CREATE OR REPLACE FUNCTION converge_wake(ids bigint[], trig text) RETURNS void
LANGUAGE sql AS $$
  INSERT INTO tasks (resource_id, trigger, kind, kind_version, shard, generation)
  SELECT r.id, trig, r.kind, r.kind_version, r.shard, 1
  FROM resources r WHERE r.id = ANY(ids)
  ORDER BY r.id
  ON CONFLICT (resource_id, trigger, key) DO UPDATE
      SET generation = tasks.generation + 1, not_before = least(tasks.not_before, now()),
          traceparent = coalesce(EXCLUDED.traceparent, tasks.traceparent)
$$;

-- converge_child_deltas records what one statement did to composites'
-- children (owner, phase and net change, from the statement's transition
-- tables) and wakes those composites' rollups. It is the one place
-- child counts are kept (see 00015_child_counts.sql); owners that are
-- gone (a child kept by its deletion policy outlives its composite) are
-- skipped.
CREATE OR REPLACE FUNCTION converge_child_deltas(owners bigint[], phases text[], ns bigint[]) RETURNS void
LANGUAGE sql AS $$
  WITH x AS (SELECT * FROM unnest(owners, phases, ns) AS x(owner_id, phase, n)),
  kept AS (
    INSERT INTO child_count_deltas (owner_id, phase, n)
    SELECT x.owner_id, x.phase, sum(x.n) FROM x
    WHERE EXISTS (SELECT 1 FROM resources p WHERE p.id = x.owner_id)
    GROUP BY x.owner_id, x.phase HAVING sum(x.n) <> 0
  )
  SELECT converge_wake(array_agg(DISTINCT x.owner_id), 'rollup') FROM x
$$;

-- converge_child_counts_fold folds a composite's pending deltas into its
-- counts and returns them (phases with no child left are not returned).
-- The caller holds the composite's row lock, so two folds of one
-- composite do not interleave; deltas committed while it runs stay for
-- the next fold, which the statement that wrote them has woken.
CREATE OR REPLACE FUNCTION converge_child_counts_fold(owner bigint) RETURNS TABLE (phase text, n bigint)
LANGUAGE sql AS $$
  WITH d AS (DELETE FROM child_count_deltas WHERE owner_id = owner RETURNING child_count_deltas.phase, child_count_deltas.n)
  INSERT INTO child_counts (owner_id, phase, n)
  SELECT owner, d.phase, sum(d.n) FROM d GROUP BY d.phase
  ON CONFLICT ON CONSTRAINT child_counts_pkey DO UPDATE SET n = child_counts.n + EXCLUDED.n;
  SELECT c.phase, c.n FROM child_counts c WHERE c.owner_id = owner AND c.n <> 0;
$$;

-- converge_child_recount counts the children of every live composite by
-- phase, reading every child: what the kept counts must equal.
CREATE OR REPLACE FUNCTION converge_child_recount() RETURNS TABLE (owner_id bigint, phase text, n bigint)
LANGUAGE sql STABLE AS $$
  SELECT r.owner_id, converge_phase(r), count(*) FROM resources r
  WHERE EXISTS (SELECT 1 FROM resources p WHERE p.id = r.owner_id)
  GROUP BY 1, 2
$$;

-- converge_child_counts_repair recounts every composite's children,
-- writers held off meanwhile. Applying this file runs it, since a changed
-- converge_phase changes what every count means.
CREATE OR REPLACE FUNCTION converge_child_counts_repair() RETURNS void
LANGUAGE sql AS $$
  LOCK TABLE resources IN SHARE ROW EXCLUSIVE MODE;
  DELETE FROM child_count_deltas;
  DELETE FROM child_counts;
  INSERT INTO child_counts (owner_id, phase, n) SELECT * FROM converge_child_recount();
$$;

-- converge_child_counts_drift lists where the kept counts (folded and
-- pending) of a live composite differ from a recount of its children:
-- nothing, unless a write bypassed the triggers.
CREATE OR REPLACE FUNCTION converge_child_counts_drift()
RETURNS TABLE (owner_id bigint, phase text, kept bigint, counted bigint)
LANGUAGE sql STABLE AS $$
  WITH kept AS (
    SELECT k.owner_id, k.phase, sum(k.n) AS n
    FROM (SELECT c.owner_id, c.phase, c.n FROM child_counts c
          UNION ALL SELECT d.owner_id, d.phase, d.n FROM child_count_deltas d) k
    WHERE EXISTS (SELECT 1 FROM resources p WHERE p.id = k.owner_id)
    GROUP BY 1, 2
  )
  SELECT coalesce(k.owner_id, c.owner_id), coalesce(k.phase, c.phase), coalesce(k.n, 0), coalesce(c.n, 0)
  FROM kept k FULL JOIN converge_child_recount() c ON c.owner_id = k.owner_id AND c.phase = k.phase
  WHERE coalesce(k.n, 0) <> coalesce(c.n, 0)
$$;

-- converge_recompose runs the composers of the given composites again at
-- their current generation (a child they still want was deleted).
CREATE OR REPLACE FUNCTION converge_recompose(ids bigint[]) RETURNS void
LANGUAGE sql AS $$
  INSERT INTO tasks (resource_id, trigger, kind, kind_version, shard, generation)
  SELECT r.id, converge_reconcile_trigger(r, 'specChange'), r.kind, r.kind_version, r.shard, r.generation
  FROM resources r
  WHERE r.id = ANY(ids) AND converge_hold(r) IS NULL
  ORDER BY r.id
  ON CONFLICT (resource_id, trigger, key) DO NOTHING
$$;

-- A resource's spec history: spec_revisions holds the revisions whose
-- generation was left behind, and the current one is read from the
-- resource row (converge_revision), which says who wrote its spec
-- (converge_stamp_spec; the column defaults for inserted rows). An
-- applied resource's Created event is read from its row too
-- (converge_created_event) under the events id reserved at create,
-- until the row leaves generation 1 or goes, when the change trigger
-- stores it: a create writes the resource row alone.

CREATE OR REPLACE FUNCTION converge_revision(r resources) RETURNS spec_revisions
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT ROW(r.id, r.generation, r.kind_version, r.spec, r.spec_source, r.spec_actor, r.spec_at)::spec_revisions
$$;

-- converge_revisions lists a resource's kept revisions (the last keep
-- generations), the stored ones and the current one.
CREATE OR REPLACE FUNCTION converge_revisions(r resources, keep integer) RETURNS SETOF spec_revisions
LANGUAGE sql STABLE PARALLEL SAFE AS $$
  SELECT s.* FROM spec_revisions s
  WHERE s.resource_id = r.id AND s.generation > r.generation - keep AND s.generation < r.generation
  UNION ALL
  SELECT (converge_revision(r)).* WHERE keep > 0
$$;

-- converge_created_event is the Created event of a resource whose
-- created_event is set (it is still at generation 1). It is STABLE, as
-- text || integer is, so that PostgreSQL inlines it.
CREATE OR REPLACE FUNCTION converge_created_event(r resources) RETURNS events
LANGUAGE sql STABLE PARALLEL SAFE AS $$
  SELECT ROW(r.created_event, r.id, r.namespace, r.kind, r.name, r.generation, 'Normal', 'Created',
             'created at ' || r.kind || ' v' || r.kind_version, r.spec_actor, r.spec_at)::events
$$;

-- converge_stamp_spec records who wrote a new generation's spec, from the
-- settings recordAs sets (store/history.go), and stops deriving the
-- Created event: the change trigger stores it from the old row.
CREATE OR REPLACE FUNCTION converge_stamp_spec() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  NEW.spec_source := coalesce(nullif(current_setting('converge.source', true), ''), 'apply');
  NEW.spec_actor := coalesce(nullif(current_setting('converge.actor', true), ''), 'system');
  NEW.spec_at := clock_timestamp();
  NEW.created_event := NULL;
  RETURN NEW;
END
$$;

-- The change triggers record the change feed and wake, in the same
-- transaction as the change: the owners of resources whose phase changed
-- (rollup), the direct dependents of resources that synced, changed
-- status or changed phase (gate: what they say they wait for stays true),
-- and deleting owners and dependencies of resources that are gone
-- (teardown). They also keep the spec history. EXECUTE plans each
-- statement with the transition tables' real sizes (a plan cached for
-- empty tables would join them quadratically), and the SET clauses undo
-- the reconcile path's pinned plans (store/pinned.go), which suit index
-- lookups, not joins of transition tables that have no index.

CREATE OR REPLACE FUNCTION converge_on_insert() RETURNS trigger
LANGUAGE plpgsql
SET enable_hashjoin = on SET enable_mergejoin = on SET enable_material = on SET enable_seqscan = on
AS $$
BEGIN
  EXECUTE $q$
    INSERT INTO changes (resource_id, type, namespace, kind, kind_version, name, phase,
                         previous_phase, generation, synced_generation, resource_version, message)
    SELECT n.id, 'created', n.namespace, n.kind, n.kind_version, n.name, converge_phase(n),
           NULL, n.generation, n.synced_generation, n.resource_version, n.failure_message
    FROM new_rows n $q$;
  EXECUTE $q$
    SELECT converge_child_deltas(array_agg(x.owner_id), array_agg(x.phase), array_agg(x.n))
    FROM (SELECT n.owner_id, converge_phase(n) AS phase, count(*) AS n
          FROM new_rows n WHERE n.owner_id IS NOT NULL GROUP BY 1, 2) x
    HAVING count(*) > 0 $q$;
  RETURN NULL;
END
$$;

-- Spec revisions are recorded only for the rows whose generation moved,
-- found once per statement: a status update (nearly every update) skips
-- the revision statements, and trimming old revisions reads the rows it
-- trims through the primary key instead of joining the whole table.
CREATE OR REPLACE FUNCTION converge_on_update() RETURNS trigger
LANGUAGE plpgsql
SET enable_hashjoin = on SET enable_mergejoin = on SET enable_material = on SET enable_seqscan = on
AS $$
DECLARE
  respecced bigint[];
BEGIN
  EXECUTE $q$
    INSERT INTO changes (resource_id, type, namespace, kind, kind_version, name, phase,
                         previous_phase, generation, synced_generation, resource_version, message)
    SELECT n.id, 'updated', n.namespace, n.kind, n.kind_version, n.name, converge_phase(n),
           converge_phase(o), n.generation, n.synced_generation, n.resource_version, n.failure_message
    FROM new_rows n JOIN old_rows o ON o.id = n.id
    WHERE converge_phase(n) <> converge_phase(o)
       OR n.generation <> o.generation
       OR n.synced_generation <> o.synced_generation
       OR n.kind_version <> o.kind_version
       OR n.failure_message IS DISTINCT FROM o.failure_message
       OR n.waiting IS DISTINCT FROM o.waiting $q$;
  EXECUTE $q$
    SELECT converge_child_deltas(array_agg(x.owner_id), array_agg(x.phase), array_agg(x.n))
    FROM (SELECT m.owner_id, m.phase, sum(m.delta) AS n
          FROM new_rows n JOIN old_rows o ON o.id = n.id
          CROSS JOIN LATERAL (VALUES (o.owner_id, converge_phase(o), -1), (n.owner_id, converge_phase(n), 1)) m(owner_id, phase, delta)
          WHERE coalesce(n.owner_id, o.owner_id) IS NOT NULL AND m.owner_id IS NOT NULL
            AND (converge_phase(n) <> converge_phase(o) OR n.owner_id IS DISTINCT FROM o.owner_id)
          GROUP BY 1, 2) x
    HAVING count(*) > 0 $q$;
  EXECUTE $q$
    SELECT converge_wake(array_agg(DISTINCT e.dependent_id), 'gate')
    FROM new_rows n JOIN old_rows o ON o.id = n.id
    JOIN edges e ON e.dependency_id = n.id
    WHERE (converge_synced(n)
           AND (n.synced_generation <> o.synced_generation OR n.status IS DISTINCT FROM o.status))
       OR converge_phase(n) <> converge_phase(o)
    HAVING count(*) > 0 $q$;
  EXECUTE $q$
    SELECT array_agg(n.id) FROM new_rows n JOIN old_rows o ON o.id = n.id
    WHERE n.generation <> o.generation $q$ INTO respecced;
  IF respecced IS NOT NULL THEN
    EXECUTE $q$
      INSERT INTO spec_revisions
      SELECT (converge_revision(o)).* FROM old_rows o JOIN new_rows n ON n.id = o.id
      WHERE n.generation <> o.generation
      ON CONFLICT (resource_id, generation) DO UPDATE SET spec = EXCLUDED.spec, kind_version = EXCLUDED.kind_version,
          source = EXCLUDED.source, actor = EXCLUDED.actor, at = EXCLUDED.at $q$;
    EXECUTE $q$
      INSERT INTO events OVERRIDING SYSTEM VALUE
      SELECT (converge_created_event(o)).* FROM old_rows o JOIN new_rows n ON n.id = o.id
      WHERE n.generation <> o.generation AND o.created_event IS NOT NULL $q$;
    EXECUTE $q$
      DELETE FROM spec_revisions s
      WHERE s.resource_id = ANY($1)
        AND s.generation <= (SELECT r.generation FROM resources r WHERE r.id = s.resource_id)
            - coalesce(nullif(current_setting('converge.history_keep', true), '')::int, 50) $q$
      USING respecced;
  END IF;
  RETURN NULL;
END
$$;

-- A live composite whose child is gone composes again: if it still wants
-- the child, the child comes back.
CREATE OR REPLACE FUNCTION converge_on_delete() RETURNS trigger
LANGUAGE plpgsql
SET enable_hashjoin = on SET enable_mergejoin = on SET enable_material = on SET enable_seqscan = on
AS $$
BEGIN
  EXECUTE $q$
    INSERT INTO changes (resource_id, type, namespace, kind, kind_version, name, phase,
                         previous_phase, generation, synced_generation, resource_version, message)
    SELECT o.id, 'deleted', o.namespace, o.kind, o.kind_version, o.name, converge_phase(o),
           converge_phase(o), o.generation, o.synced_generation, o.resource_version + 1, NULL
    FROM old_rows o $q$;
  EXECUTE $q$
    SELECT converge_wake(array_agg(DISTINCT x.id), 'teardown')
    FROM (SELECT o.owner_id AS id FROM old_rows o WHERE o.owner_id IS NOT NULL
          UNION SELECT e.dependency_id FROM old_rows o JOIN edges e ON e.dependent_id = o.id) x
    JOIN resources r ON r.id = x.id AND r.deletion_requested_at IS NOT NULL
    HAVING count(*) > 0 $q$;
  EXECUTE $q$
    SELECT converge_child_deltas(array_agg(x.owner_id), array_agg(x.phase), array_agg(x.n))
    FROM (SELECT o.owner_id, converge_phase(o) AS phase, -count(*) AS n
          FROM old_rows o WHERE o.owner_id IS NOT NULL GROUP BY 1, 2) x
    HAVING count(*) > 0 $q$;
  EXECUTE $q$
    WITH counts AS (DELETE FROM child_counts c USING old_rows o WHERE c.owner_id = o.id)
    DELETE FROM child_count_deltas d USING old_rows o WHERE d.owner_id = o.id $q$;
  EXECUTE $q$
    SELECT converge_recompose(array_agg(DISTINCT o.owner_id))
    FROM old_rows o JOIN resources p ON p.id = o.owner_id AND p.deletion_requested_at IS NULL
    HAVING count(*) > 0 $q$;
  EXECUTE $q$
    DELETE FROM edges e USING old_rows o WHERE e.dependent_id = o.id $q$;
  EXECUTE $q$
    DELETE FROM edges e USING old_rows o WHERE e.dependency_id = o.id $q$;
  EXECUTE $q$
    DELETE FROM spec_revisions s USING old_rows o WHERE s.resource_id = o.id $q$;
  EXECUTE $q$
    INSERT INTO events OVERRIDING SYSTEM VALUE
    SELECT (converge_created_event(o)).* FROM old_rows o WHERE o.created_event IS NOT NULL $q$;
  EXECUTE $q$
    DELETE FROM task_records t USING old_rows o WHERE t.resource_id = o.id $q$;
  RETURN NULL;
END
$$;

CREATE OR REPLACE TRIGGER resources_spec_stamp BEFORE UPDATE OF generation ON resources
    FOR EACH ROW WHEN (NEW.generation <> OLD.generation)
    EXECUTE FUNCTION converge_stamp_spec();
CREATE OR REPLACE TRIGGER resources_changes_insert AFTER INSERT ON resources
    REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION converge_on_insert();
CREATE OR REPLACE TRIGGER resources_changes_update AFTER UPDATE ON resources
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION converge_on_update();
CREATE OR REPLACE TRIGGER resources_changes_delete AFTER DELETE ON resources
    REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION converge_on_delete();

-- A settling composite (converge_phase: Reconciling) becomes ready when
-- its childrenSettled task goes, whichever way it goes: its result was
-- applied, it failed for good, or it was dropped (quarantine, a kind
-- that lost the reaction, deletion). Every path that removes the task
-- removes the hold with it, so none can leave a composite Reconciling
-- for ever. A composite whose children moved on meanwhile is no longer
-- settling, and this changes nothing.
CREATE OR REPLACE FUNCTION converge_on_settled() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  UPDATE resources SET subtree = 'ready', resource_version = resource_version + 1, updated_at = now()
  WHERE id = OLD.resource_id AND subtree = 'settling';
  RETURN NULL;
END
$$;

CREATE OR REPLACE TRIGGER tasks_settled AFTER DELETE ON tasks
    FOR EACH ROW WHEN (OLD.trigger = 'childrenSettled')
    EXECUTE FUNCTION converge_on_settled();

-- Counts kept by the triggers above start from a recount of every child.
SELECT converge_child_counts_repair();
