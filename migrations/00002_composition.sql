-- Composition: composites own children; edges make dependents wait for
-- their dependencies and carry value flows; a composite's phase includes
-- its children's (the rollup).

-- +goose Up

ALTER TABLE resources
    -- What the composer (or the user) asked for, when value flows rewrite
    -- parts of spec; NULL when spec is exactly what was asked for.
    ADD COLUMN desired_spec    jsonb,
    -- The rollup of the direct children: none (not a composite), ready,
    -- pending, degraded or failed. Set by the built-in rollup.
    ADD COLUMN subtree         text  NOT NULL DEFAULT 'none'
        CHECK (subtree IN ('none', 'ready', 'pending', 'degraded', 'failed')),
    -- The children's phase counts behind subtree.
    ADD COLUMN rollup          jsonb,
    -- Why the resource is not scheduled: it waits for dependencies or for a
    -- value flow. NULL: nothing holds it.
    ADD COLUMN waiting         text,
    -- '' (the kind's policy), 'delete' or 'retain'.
    ADD COLUMN deletion_policy text  NOT NULL DEFAULT ''
        CHECK (deletion_policy IN ('', 'delete', 'retain'));

-- The one definition of a phase, now with the rollup: a composite is
-- Ready only when every live child is, Degraded when a child is, Failed
-- when a child failed terminally, and Reconciling while children are.
CREATE FUNCTION converge_phase(
    deleting boolean, frozen_until timestamptz, failure_terminal boolean,
    failure_generation bigint, generation bigint, synced_generation bigint,
    health_ok boolean, subtree text) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT CASE
    WHEN deleting THEN 'Deleting'
    WHEN frozen_until = 'infinity' THEN 'Quarantined'
    WHEN (failure_terminal AND failure_generation = generation) OR subtree = 'failed' THEN 'Failed'
    WHEN frozen_until IS NOT NULL THEN 'Orphaned'
    WHEN synced_generation >= generation AND (NOT health_ok OR subtree = 'degraded') THEN 'Degraded'
    WHEN synced_generation >= generation AND subtree IN ('none', 'ready') THEN 'Ready'
    ELSE 'Reconciling'
  END
$$;

ALTER TABLE resources DROP COLUMN phase;
ALTER TABLE resources ADD COLUMN phase text GENERATED ALWAYS AS (converge_phase(
    deletion_requested_at IS NOT NULL, frozen_until, failure_terminal,
    failure_generation, generation, synced_generation, health_ok, subtree)) STORED;
DROP FUNCTION converge_phase(boolean, timestamptz, boolean, bigint, bigint, bigint, boolean);

CREATE INDEX resources_owner ON resources (owner_id) WHERE owner_id IS NOT NULL;

-- The kind's deletion policy: '' or 'delete' runs teardown, 'retain'
-- forgets resources without it.
ALTER TABLE kinds ADD COLUMN deletion_policy text NOT NULL DEFAULT ''
    CHECK (deletion_policy IN ('', 'delete', 'retain'));

-- dependent waits for dependency; flows copy values from the dependency
-- into the dependent's spec. owner_id is the composite that declared the
-- edge: each compose replaces its composite's edges.
CREATE TABLE edges (
    dependent_id  bigint NOT NULL,
    dependency_id bigint NOT NULL,
    owner_id      bigint NOT NULL,
    flows         jsonb  NOT NULL DEFAULT '[]',
    PRIMARY KEY (dependent_id, dependency_id)
);
CREATE INDEX edges_dependency ON edges (dependency_id);
CREATE INDEX edges_owner ON edges (owner_id);

-- Work the server does itself: rollups, dependency gates and teardown
-- ordering. generation counts wake-ups: a claim finishes only if no wake-up
-- came in meanwhile.
CREATE INDEX tasks_internal ON tasks (not_before)
    WHERE claimed_by IS NULL AND trigger IN ('rollup', 'gate', 'teardown');

-- converge_wake queues internal work for the given resources, or marks
-- queued work as woken again.
-- +goose StatementBegin
CREATE FUNCTION converge_wake(ids bigint[], trig text) RETURNS void
LANGUAGE sql AS $$
  INSERT INTO tasks (resource_id, trigger, kind, kind_version, shard, generation)
  SELECT r.id, trig, r.kind, r.kind_version, r.shard, 1
  FROM resources r WHERE r.id = ANY(ids)
  ORDER BY r.id
  ON CONFLICT (resource_id, trigger) DO UPDATE
      SET generation = tasks.generation + 1, not_before = least(tasks.not_before, now())
$$;
-- +goose StatementEnd

-- converge_recompose runs the composers of the given composites again at
-- their current generation (a child they still want was deleted).
-- +goose StatementBegin
CREATE FUNCTION converge_recompose(ids bigint[]) RETURNS void
LANGUAGE sql AS $$
  INSERT INTO tasks (resource_id, trigger, kind, kind_version, shard, generation)
  SELECT r.id, 'specChange', r.kind, r.kind_version, r.shard, r.generation
  FROM resources r
  WHERE r.id = ANY(ids) AND r.deletion_requested_at IS NULL AND r.frozen_until IS NULL
  ORDER BY r.id
  ON CONFLICT (resource_id, trigger) DO NOTHING
$$;
-- +goose StatementEnd

-- The statement triggers record the change feed and wake, in the same
-- transaction: the owners of resources whose phase changed (rollup), the
-- direct dependents of resources that synced or whose status changed
-- (gate), and deleting owners and dependencies of resources that are gone
-- (teardown). A dependency's phase change wakes its dependents' gates too,
-- so what they say they wait for stays true. EXECUTE plans each statement with the transition tables'
-- real sizes; a plan cached for empty tables would join them quadratically.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION converge_record_changes() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    EXECUTE $q$
      INSERT INTO changes (resource_id, type, namespace, kind, kind_version, name, phase,
                           previous_phase, generation, synced_generation, resource_version, message)
      SELECT n.id, 'created', n.namespace, n.kind, n.kind_version, n.name, n.phase,
             NULL, n.generation, n.synced_generation, n.resource_version, n.failure_message
      FROM new_rows n $q$;
    EXECUTE $q$
      SELECT converge_wake(array_agg(DISTINCT n.owner_id), 'rollup')
      FROM new_rows n WHERE n.owner_id IS NOT NULL
      HAVING count(*) > 0 $q$;
  ELSIF TG_OP = 'UPDATE' THEN
    EXECUTE $q$
      INSERT INTO changes (resource_id, type, namespace, kind, kind_version, name, phase,
                           previous_phase, generation, synced_generation, resource_version, message)
      SELECT n.id, 'updated', n.namespace, n.kind, n.kind_version, n.name, n.phase,
             o.phase, n.generation, n.synced_generation, n.resource_version, n.failure_message
      FROM new_rows n JOIN old_rows o ON o.id = n.id
      WHERE n.phase <> o.phase
         OR n.generation <> o.generation
         OR n.synced_generation <> o.synced_generation
         OR n.kind_version <> o.kind_version
         OR n.failure_message IS DISTINCT FROM o.failure_message
         OR n.waiting IS DISTINCT FROM o.waiting $q$;
    EXECUTE $q$
      SELECT converge_wake(array_agg(DISTINCT n.owner_id), 'rollup')
      FROM new_rows n JOIN old_rows o ON o.id = n.id
      WHERE n.owner_id IS NOT NULL AND (n.phase <> o.phase OR n.frozen_until IS DISTINCT FROM o.frozen_until)
      HAVING count(*) > 0 $q$;
    EXECUTE $q$
      SELECT converge_wake(array_agg(DISTINCT e.dependent_id), 'gate')
      FROM new_rows n JOIN old_rows o ON o.id = n.id
      JOIN edges e ON e.dependency_id = n.id
      WHERE (n.synced_generation >= n.generation
             AND (n.synced_generation <> o.synced_generation OR n.status IS DISTINCT FROM o.status))
         OR n.phase <> o.phase
      HAVING count(*) > 0 $q$;
  ELSE
    EXECUTE $q$
      INSERT INTO changes (resource_id, type, namespace, kind, kind_version, name, phase,
                           previous_phase, generation, synced_generation, resource_version, message)
      SELECT o.id, 'deleted', o.namespace, o.kind, o.kind_version, o.name, o.phase,
             o.phase, o.generation, o.synced_generation, o.resource_version + 1, NULL
      FROM old_rows o $q$;
    EXECUTE $q$
      SELECT converge_wake(array_agg(DISTINCT x.id), 'teardown')
      FROM (SELECT o.owner_id AS id FROM old_rows o WHERE o.owner_id IS NOT NULL
            UNION SELECT e.dependency_id FROM old_rows o JOIN edges e ON e.dependent_id = o.id) x
      JOIN resources r ON r.id = x.id AND r.deletion_requested_at IS NOT NULL
      HAVING count(*) > 0 $q$;
    EXECUTE $q$
      SELECT converge_wake(array_agg(DISTINCT o.owner_id), 'rollup')
      FROM old_rows o WHERE o.owner_id IS NOT NULL
      HAVING count(*) > 0 $q$;
    -- A live composite whose child is gone composes again: if it still
    -- wants the child, the child comes back.
    EXECUTE $q$
      SELECT converge_recompose(array_agg(DISTINCT o.owner_id))
      FROM old_rows o JOIN resources p ON p.id = o.owner_id AND p.deletion_requested_at IS NULL
      HAVING count(*) > 0 $q$;
    EXECUTE $q$
      DELETE FROM edges e USING old_rows o WHERE e.dependent_id = o.id $q$;
    EXECUTE $q$
      DELETE FROM edges e USING old_rows o WHERE e.dependency_id = o.id $q$;
  END IF;
  RETURN NULL;
END
$$;
-- +goose StatementEnd

-- +goose Down
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION converge_record_changes() RETURNS trigger
LANGUAGE plpgsql SET enable_nestloop = off AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    INSERT INTO changes (resource_id, type, namespace, kind, kind_version, name, phase,
                         previous_phase, generation, synced_generation, resource_version, message)
    SELECT n.id, 'created', n.namespace, n.kind, n.kind_version, n.name, n.phase,
           NULL, n.generation, n.synced_generation, n.resource_version, n.failure_message
    FROM new_rows n;
  ELSIF TG_OP = 'UPDATE' THEN
    INSERT INTO changes (resource_id, type, namespace, kind, kind_version, name, phase,
                         previous_phase, generation, synced_generation, resource_version, message)
    SELECT n.id, 'updated', n.namespace, n.kind, n.kind_version, n.name, n.phase,
           o.phase, n.generation, n.synced_generation, n.resource_version, n.failure_message
    FROM new_rows n JOIN old_rows o ON o.id = n.id
    WHERE n.phase <> o.phase
       OR n.generation <> o.generation
       OR n.synced_generation <> o.synced_generation
       OR n.kind_version <> o.kind_version
       OR n.failure_message IS DISTINCT FROM o.failure_message;
  ELSE
    INSERT INTO changes (resource_id, type, namespace, kind, kind_version, name, phase,
                         previous_phase, generation, synced_generation, resource_version, message)
    SELECT o.id, 'deleted', o.namespace, o.kind, o.kind_version, o.name, o.phase,
           o.phase, o.generation, o.synced_generation, o.resource_version + 1, NULL
    FROM old_rows o;
  END IF;
  RETURN NULL;
END
$$;
-- +goose StatementEnd
DROP FUNCTION converge_recompose(bigint[]);
DROP FUNCTION converge_wake(bigint[], text);
DROP INDEX tasks_internal;
DELETE FROM tasks WHERE trigger IN ('rollup', 'gate', 'teardown');
DROP TABLE edges;
DROP INDEX resources_owner;
ALTER TABLE kinds DROP COLUMN deletion_policy;
-- +goose StatementBegin
CREATE FUNCTION converge_phase(
    deleting boolean, frozen_until timestamptz, failure_terminal boolean,
    failure_generation bigint, generation bigint, synced_generation bigint,
    health_ok boolean) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT CASE
    WHEN deleting THEN 'Deleting'
    WHEN frozen_until = 'infinity' THEN 'Quarantined'
    WHEN failure_terminal AND failure_generation = generation THEN 'Failed'
    WHEN frozen_until IS NOT NULL THEN 'Orphaned'
    WHEN synced_generation >= generation AND NOT health_ok THEN 'Degraded'
    WHEN synced_generation >= generation THEN 'Ready'
    ELSE 'Reconciling'
  END
$$;
-- +goose StatementEnd
ALTER TABLE resources DROP COLUMN phase;
ALTER TABLE resources ADD COLUMN phase text GENERATED ALWAYS AS (converge_phase(
    deletion_requested_at IS NOT NULL, frozen_until, failure_terminal,
    failure_generation, generation, synced_generation, health_ok)) STORED;
DROP FUNCTION converge_phase(boolean, timestamptz, boolean, bigint, bigint, bigint, boolean, text);
ALTER TABLE resources
    DROP COLUMN deletion_policy,
    DROP COLUMN waiting,
    DROP COLUMN rollup,
    DROP COLUMN subtree,
    DROP COLUMN desired_spec;
