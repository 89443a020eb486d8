-- The core schema: kinds, resources, the task queue, the change feed,
-- events and cluster members.
--
-- Lock order, for every transaction that writes more than one of these
-- tables: resources rows first (ascending id), then tasks rows. Claiming,
-- heartbeats and the reaper touch tasks only and never wait on resources.

-- +goose Up

-- The one definition of a resource's phase, in precedence order.
-- frozen_until: infinity = quarantined, finite = orphaned.
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

-- 256 logical shards. A composite's rows all live on its root's shard.
CREATE FUNCTION converge_shard(root_id bigint) RETURNS smallint
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT (hashint8(root_id) & 255)::smallint
$$;

-- Conditions a worker reports replace the previous set; a condition whose
-- status did not change keeps its last transition time.
CREATE FUNCTION converge_merge_conditions(old jsonb, new jsonb, at timestamptz) RETURNS jsonb
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

CREATE TABLE kinds (
    kind                    text        NOT NULL,
    kind_version            integer     NOT NULL CHECK (kind_version BETWEEN 1 AND 32767),
    -- The manifest as applied, minus policy and output-only fields.
    manifest                jsonb       NOT NULL,
    max_inflight            integer     NOT NULL DEFAULT 0,
    task_deadline_seconds   integer     NOT NULL DEFAULT 0,
    resync_interval_seconds integer     NOT NULL DEFAULT 0,
    resync_recomposes       boolean     NOT NULL DEFAULT false,
    orphan_grace_seconds    integer     NOT NULL DEFAULT 0,
    max_transient_attempts  integer     NOT NULL DEFAULT 0,
    retired                 boolean     NOT NULL DEFAULT false,
    revision                bigint      NOT NULL DEFAULT 1,
    created_at              timestamptz NOT NULL DEFAULT now(),
    updated_at              timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (kind, kind_version)
);

CREATE TABLE resources (
    id                    bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    namespace             text        NOT NULL,
    kind                  text        NOT NULL,
    kind_version          integer     NOT NULL,
    name                  text        NOT NULL,
    labels                jsonb       NOT NULL DEFAULT '{}',
    spec                  jsonb       NOT NULL DEFAULT '{}',
    status                jsonb       NOT NULL DEFAULT '{}',
    conditions            jsonb       NOT NULL DEFAULT '[]',
    -- Composition: NULL owner and root for a root resource.
    owner_id              bigint,
    root_id               bigint,
    shard                 smallint    GENERATED ALWAYS AS (converge_shard(coalesce(root_id, id))) STORED,
    generation            bigint      NOT NULL DEFAULT 1,
    synced_generation     bigint      NOT NULL DEFAULT 0,
    health_ok             boolean     NOT NULL DEFAULT true,
    failure_generation    bigint      NOT NULL DEFAULT 0,
    failure_terminal      boolean     NOT NULL DEFAULT false,
    failure_attempts      integer     NOT NULL DEFAULT 0,
    failure_message       text,
    frozen_until          timestamptz,
    deletion_requested_at timestamptz,
    resource_version      bigint      NOT NULL DEFAULT 1,
    reconciles            bigint      NOT NULL DEFAULT 0,
    created_at            timestamptz NOT NULL DEFAULT now(),
    updated_at            timestamptz NOT NULL DEFAULT now(),
    phase                 text        GENERATED ALWAYS AS (converge_phase(
                              deletion_requested_at IS NOT NULL, frozen_until, failure_terminal,
                              failure_generation, generation, synced_generation, health_ok)) STORED
) WITH (fillfactor = 50);
-- fillfactor 50 leaves room on each page for a new version of every row,
-- so status updates (which touch no indexed column) stay HOT and skip
-- index maintenance.
-- No foreign key to kinds: a per-row check costs every insert. Writers
-- lock the kinds rows they use FOR KEY SHARE once per statement, and
-- deleting a kind locks it FOR UPDATE and checks for resources.

CREATE UNIQUE INDEX resources_identity ON resources (namespace, kind, name);
CREATE INDEX resources_labels ON resources USING gin (labels jsonb_path_ops);

-- The work queue: one row per (resource, trigger) that needs a worker.
-- No foreign key to resources: its check would lock the resource row on
-- every insert. Deleting a resource deletes its tasks in the same
-- statement (store: the only two places that delete resources).
-- A row is claimed by setting claimed_by and bumping epoch; a result is
-- applied only if it carries the current (id, epoch, generation).
CREATE TABLE tasks (
    id               bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    resource_id      bigint      NOT NULL,
    trigger          text        NOT NULL,
    kind             text        NOT NULL,
    kind_version     integer     NOT NULL,
    shard            smallint    NOT NULL,
    generation       bigint      NOT NULL,
    epoch            bigint      NOT NULL DEFAULT 0,
    attempts         integer     NOT NULL DEFAULT 0,
    not_before       timestamptz NOT NULL DEFAULT now(),
    claimed_by       text,
    claimed_at       timestamptz,
    lease_expires_at timestamptz,
    created_at       timestamptz NOT NULL DEFAULT now(),
    UNIQUE (resource_id, trigger)
) WITH (fillfactor = 70,
        autovacuum_vacuum_scale_factor = 0,
        autovacuum_vacuum_threshold = 1000,
        autovacuum_vacuum_cost_delay = 0,
        autovacuum_analyze_scale_factor = 0.05);

CREATE INDEX tasks_claimable ON tasks (kind, kind_version, trigger, not_before)
    WHERE claimed_by IS NULL;
CREATE INDEX tasks_leased ON tasks (lease_expires_at)
    WHERE claimed_by IS NOT NULL;

-- The change feed behind Watch. Rows are read in (xid, seq) order up to
-- the oldest running transaction, so a reader never skips a row that
-- commits late.
CREATE TABLE changes (
    seq               bigint      GENERATED ALWAYS AS IDENTITY,
    xid               xid8        NOT NULL DEFAULT pg_current_xact_id(),
    resource_id       bigint      NOT NULL,
    type              text        NOT NULL,
    namespace         text        NOT NULL,
    kind              text        NOT NULL,
    kind_version      integer     NOT NULL,
    name              text        NOT NULL,
    phase             text        NOT NULL,
    previous_phase    text,
    generation        bigint      NOT NULL,
    synced_generation bigint      NOT NULL,
    resource_version  bigint      NOT NULL,
    message           text,
    at                timestamptz NOT NULL DEFAULT clock_timestamp(),
    PRIMARY KEY (xid, seq)
) WITH (autovacuum_vacuum_scale_factor = 0.02);


-- Changes of transactions older than pruned_before are gone: a Watch
-- cursor before it cannot resume.
CREATE TABLE change_retention (
    one           boolean PRIMARY KEY DEFAULT true CHECK (one),
    pruned_before xid8    NOT NULL
);

-- +goose StatementBegin
-- The function's plans are cached per session, the first time with the
-- transition tables at whatever size they had then (often empty, from an
-- INSERT ... ON CONFLICT). With nested loops off, a later 1,000-row update
-- cannot be stuck with a quadratic join.
CREATE FUNCTION converge_record_changes() RETURNS trigger
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

CREATE TRIGGER resources_changes_insert AFTER INSERT ON resources
    REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION converge_record_changes();
CREATE TRIGGER resources_changes_update AFTER UPDATE ON resources
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION converge_record_changes();
CREATE TRIGGER resources_changes_delete AFTER DELETE ON resources
    REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION converge_record_changes();

-- Events: what happened to a resource and who did it. They outlive the
-- resource, so there is no foreign key.
CREATE TABLE events (
    id          bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    resource_id bigint      NOT NULL,
    namespace   text        NOT NULL,
    kind        text        NOT NULL,
    name        text        NOT NULL,
    generation  bigint      NOT NULL,
    type        text        NOT NULL,
    reason      text        NOT NULL,
    message     text        NOT NULL,
    actor       text        NOT NULL,
    at          timestamptz NOT NULL DEFAULT clock_timestamp()
);

CREATE INDEX events_resource ON events (namespace, kind, name, id);

-- Server replicas. Brokers advertise what their connected workers serve,
-- so every replica can tell a parked kind from a busy one.
CREATE TABLE members (
    id           text        PRIMARY KEY,
    roles        text[]      NOT NULL,
    hostname     text        NOT NULL,
    pid          integer     NOT NULL,
    version      text        NOT NULL,
    started_at   timestamptz NOT NULL DEFAULT now(),
    heartbeat_at timestamptz NOT NULL DEFAULT now(),
    served       jsonb       NOT NULL DEFAULT '[]'
) WITH (fillfactor = 50);

-- +goose Down
DROP TABLE members;
DROP TABLE events;
DROP TRIGGER resources_changes_delete ON resources;
DROP TRIGGER resources_changes_update ON resources;
DROP TRIGGER resources_changes_insert ON resources;
DROP FUNCTION converge_record_changes();
DROP TABLE change_retention;
DROP TABLE changes;
DROP TABLE tasks;
DROP TABLE resources;
DROP TABLE kinds;
DROP FUNCTION converge_merge_conditions(jsonb, jsonb, timestamptz);
DROP FUNCTION converge_shard(bigint);
DROP FUNCTION converge_phase(boolean, timestamptz, boolean, bigint, bigint, bigint, boolean);
