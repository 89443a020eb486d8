-- Kind lifecycle and operator actions: provider configs, spec history,
-- resync, operations, reactor deliveries. Operations and reactor
-- deliveries are tasks too (one queue, one lease and fencing scheme):
-- a task is now identified by (resource, trigger, key), key naming the
-- operation or delivery ('' for everything else).

-- +goose Up

ALTER TABLE tasks ADD COLUMN key text NOT NULL DEFAULT '';
-- What an operation or delivery task carries besides its resource.
ALTER TABLE tasks ADD COLUMN payload jsonb;
ALTER TABLE tasks DROP CONSTRAINT tasks_resource_id_trigger_key;
ALTER TABLE tasks ADD CONSTRAINT tasks_identity UNIQUE (resource_id, trigger, key);

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION converge_wake(ids bigint[], trig text) RETURNS void
LANGUAGE sql AS $$
  INSERT INTO tasks (resource_id, trigger, kind, kind_version, shard, generation)
  SELECT r.id, trig, r.kind, r.kind_version, r.shard, 1
  FROM resources r WHERE r.id = ANY(ids)
  ORDER BY r.id
  ON CONFLICT (resource_id, trigger, key) DO UPDATE
      SET generation = tasks.generation + 1, not_before = least(tasks.not_before, now())
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION converge_recompose(ids bigint[]) RETURNS void
LANGUAGE sql AS $$
  INSERT INTO tasks (resource_id, trigger, kind, kind_version, shard, generation)
  SELECT r.id, 'specChange', r.kind, r.kind_version, r.shard, r.generation
  FROM resources r
  WHERE r.id = ANY(ids) AND r.deletion_requested_at IS NULL AND r.frozen_until IS NULL
  ORDER BY r.id
  ON CONFLICT (resource_id, trigger, key) DO NOTHING
$$;
-- +goose StatementEnd

-- Provider configs: per kind version, a "default" and named overrides a
-- resource may reference.
CREATE TABLE provider_configs (
    kind         text        NOT NULL,
    kind_version integer     NOT NULL,
    name         text        NOT NULL,
    config       jsonb       NOT NULL DEFAULT '{}',
    description  text        NOT NULL DEFAULT '',
    revision     bigint      NOT NULL DEFAULT 1,
    created_at   timestamptz NOT NULL DEFAULT now(),
    updated_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (kind, kind_version, name)
);

ALTER TABLE resources
    -- The named provider config on top of the default ('' = default only).
    ADD COLUMN provider_config text NOT NULL DEFAULT '',
    -- When a kind that opts into resync re-observes this resource next.
    -- NULL for every resource of a kind that does not: such kinds cost
    -- nothing, the index below holds none of their rows.
    ADD COLUMN resync_at timestamptz;
CREATE INDEX resources_resync ON resources (resync_at) WHERE resync_at IS NOT NULL;
-- The sweeper looks for orphans past their grace every second: this holds
-- only orphans and quarantined resources, so the look costs nothing when
-- there are none.
CREATE INDEX resources_frozen ON resources (frozen_until) WHERE frozen_until IS NOT NULL;
CREATE INDEX resources_provider_config ON resources (kind, kind_version, provider_config)
    WHERE provider_config <> '';

-- Every spec revision of every resource, the last few per resource (the
-- session setting converge.history_keep, 50 by default), with where it
-- came from (converge.source: apply, compose, flow, rollback) and who
-- (converge.actor).
CREATE TABLE spec_revisions (
    resource_id  bigint      NOT NULL,
    generation   bigint      NOT NULL,
    kind_version integer     NOT NULL,
    spec         jsonb       NOT NULL,
    source       text        NOT NULL,
    actor        text        NOT NULL,
    at           timestamptz NOT NULL DEFAULT clock_timestamp(),
    PRIMARY KEY (resource_id, generation)
);

-- Operation verbs invoked on resources.
CREATE TABLE operations (
    id           text        PRIMARY KEY,
    resource_id  bigint      NOT NULL,
    namespace    text        NOT NULL,
    kind         text        NOT NULL,
    name         text        NOT NULL,
    verb         text        NOT NULL,
    input        jsonb       NOT NULL DEFAULT '{}',
    state        text        NOT NULL DEFAULT 'pending'
        CHECK (state IN ('pending', 'running', 'succeeded', 'failed')),
    output       jsonb,
    message      text,
    actor        text        NOT NULL,
    reason       text        NOT NULL DEFAULT '',
    attempts     integer     NOT NULL DEFAULT 0,
    requested_at timestamptz NOT NULL DEFAULT now(),
    finished_at  timestamptz
);
CREATE INDEX operations_resource ON operations (resource_id, requested_at DESC);

-- Reactor bindings, and how far the reactor emitter has read the change feed.
CREATE TABLE reactor_bindings (
    name                 text        PRIMARY KEY,
    watch_kind           text        NOT NULL,
    watch_kind_version   integer     NOT NULL DEFAULT 0,
    transitions          text[]      NOT NULL,
    label_selector       text        NOT NULL DEFAULT '',
    reactor_kind         text        NOT NULL,
    reactor_kind_version integer     NOT NULL,
    disabled             boolean     NOT NULL DEFAULT false,
    revision             bigint      NOT NULL DEFAULT 1,
    created_at           timestamptz NOT NULL DEFAULT now(),
    updated_at           timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE feed_cursors (
    name text   PRIMARY KEY,
    xid  xid8   NOT NULL,
    seq  bigint NOT NULL
);

-- The change-feed trigger also records spec revisions: the transition
-- tables are visible only inside the trigger function, so the revision
-- statements run there.
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
    EXECUTE $q$
      INSERT INTO spec_revisions (resource_id, generation, kind_version, spec, source, actor)
      SELECT n.id, n.generation, n.kind_version, n.spec,
             coalesce(nullif(current_setting('converge.source', true), ''), 'apply'),
             coalesce(nullif(current_setting('converge.actor', true), ''), 'system')
      FROM new_rows n
      ON CONFLICT (resource_id, generation) DO NOTHING $q$;
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
    EXECUTE $q$
      INSERT INTO spec_revisions (resource_id, generation, kind_version, spec, source, actor)
      SELECT n.id, n.generation, n.kind_version, n.spec,
             coalesce(nullif(current_setting('converge.source', true), ''), 'apply'),
             coalesce(nullif(current_setting('converge.actor', true), ''), 'system')
      FROM new_rows n JOIN old_rows o ON o.id = n.id
      WHERE n.generation <> o.generation
      ON CONFLICT (resource_id, generation) DO UPDATE SET spec = EXCLUDED.spec, kind_version = EXCLUDED.kind_version $q$;
    EXECUTE $q$
      DELETE FROM spec_revisions s USING new_rows n JOIN old_rows o ON o.id = n.id
      WHERE n.generation <> o.generation AND s.resource_id = n.id
        AND s.generation <= n.generation
            - coalesce(nullif(current_setting('converge.history_keep', true), '')::int, 50) $q$;
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
  END IF;
  RETURN NULL;
END
$$;
-- +goose StatementEnd

-- +goose Down
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
DROP TABLE feed_cursors;
DROP TABLE reactor_bindings;
DROP TABLE operations;
DROP TABLE spec_revisions;
DROP INDEX resources_provider_config;
DROP INDEX resources_frozen;
DROP INDEX resources_resync;
ALTER TABLE resources DROP COLUMN resync_at, DROP COLUMN provider_config;
DROP TABLE provider_configs;
DELETE FROM tasks WHERE key <> '';
ALTER TABLE tasks DROP CONSTRAINT tasks_identity;
ALTER TABLE tasks ADD CONSTRAINT tasks_resource_id_trigger_key UNIQUE (resource_id, trigger);
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION converge_recompose(ids bigint[]) RETURNS void
LANGUAGE sql AS $$
  INSERT INTO tasks (resource_id, trigger, kind, kind_version, shard, generation)
  SELECT r.id, 'specChange', r.kind, r.kind_version, r.shard, r.generation
  FROM resources r
  WHERE r.id = ANY(ids) AND r.deletion_requested_at IS NULL AND r.frozen_until IS NULL
  ORDER BY r.id
  ON CONFLICT (resource_id, trigger) DO NOTHING
$$;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION converge_wake(ids bigint[], trig text) RETURNS void
LANGUAGE sql AS $$
  INSERT INTO tasks (resource_id, trigger, kind, kind_version, shard, generation)
  SELECT r.id, trig, r.kind, r.kind_version, r.shard, 1
  FROM resources r WHERE r.id = ANY(ids)
  ORDER BY r.id
  ON CONFLICT (resource_id, trigger) DO UPDATE
      SET generation = tasks.generation + 1, not_before = least(tasks.not_before, now())
$$;
-- +goose StatementEnd
ALTER TABLE tasks DROP COLUMN payload, DROP COLUMN key;
