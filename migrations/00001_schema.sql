-- The schema: kinds, resources and their graph, the task queue, the change
-- feed, events, history, operations, reactors and cluster members.
--
-- Tables, columns, constraints and indexes live in versioned migrations;
-- every function and trigger lives in functions.sql, which migrate applies
-- after the migrations whenever it changed, so each function's current
-- body has one home. schema.sql is a snapshot of the whole live schema,
-- checked by a test.
--
-- Lock order, for every transaction that writes more than one of these
-- tables: resources rows first (ascending id), then tasks rows. Claiming,
-- heartbeats and the reaper touch tasks only and never wait on resources.

-- +goose Up

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
    -- '' or 'delete' runs teardown, 'retain' forgets resources without it.
    deletion_policy         text        NOT NULL DEFAULT ''
        CHECK (deletion_policy IN ('', 'delete', 'retain')),
    revision                bigint      NOT NULL DEFAULT 1,
    created_at              timestamptz NOT NULL DEFAULT now(),
    updated_at              timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (kind, kind_version)
);

-- A resource's scheduling state is named by its columns, never encoded:
-- deletion_requested_at (being deleted), quarantined (an operator froze
-- it), failure_* (a terminal failure pins the generation it failed at),
-- orphaned_until (its composite stopped emitting it; torn down then) and
-- waiting (the dependency gate holds it, and why). converge_hold and
-- converge_phase (functions.sql) are the one reading of them.
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
    -- 256 logical shards; a composite's rows all live on its root's shard,
    -- so the table can be distributed by root without cross-shard writes.
    shard                 smallint    GENERATED ALWAYS AS ((hashint8(coalesce(root_id, id)) & 255)::smallint) STORED,
    generation            bigint      NOT NULL DEFAULT 1,
    synced_generation     bigint      NOT NULL DEFAULT 0,
    health_ok             boolean     NOT NULL DEFAULT true,
    failure_generation    bigint      NOT NULL DEFAULT 0,
    failure_terminal      boolean     NOT NULL DEFAULT false,
    failure_attempts      integer     NOT NULL DEFAULT 0,
    failure_message       text,
    quarantined           boolean     NOT NULL DEFAULT false,
    orphaned_until        timestamptz,
    deletion_requested_at timestamptz,
    resource_version      bigint      NOT NULL DEFAULT 1,
    reconciles            bigint      NOT NULL DEFAULT 0,
    created_at            timestamptz NOT NULL DEFAULT now(),
    updated_at            timestamptz NOT NULL DEFAULT now(),
    -- What the composer (or the user) asked for, when value flows rewrite
    -- parts of spec; NULL when spec is exactly what was asked for.
    desired_spec          jsonb,
    -- The rollup of the direct children: none (not a composite), ready,
    -- pending, degraded or failed. Set by the built-in rollup.
    subtree               text        NOT NULL DEFAULT 'none'
        CHECK (subtree IN ('none', 'ready', 'pending', 'degraded', 'failed')),
    -- The children's phase counts behind subtree.
    rollup                jsonb,
    -- Why the dependency gate holds the resource; NULL: nothing holds it.
    waiting               text,
    -- '' (the kind's policy), 'delete' or 'retain'.
    deletion_policy       text        NOT NULL DEFAULT ''
        CHECK (deletion_policy IN ('', 'delete', 'retain')),
    -- The named provider config on top of the default ('' = default only).
    provider_config       text        NOT NULL DEFAULT '',
    -- When a kind that opts into resync re-observes this resource next.
    -- NULL for every resource of a kind that does not: such kinds cost
    -- nothing, the index below holds none of their rows.
    resync_at             timestamptz,
    -- A status the worker reported that its kind's status_schema refused:
    -- kept, not served as the status, and handed to later tasks (teardown
    -- above all) so what the handler created is not lost.
    rejected_status       jsonb
) WITH (fillfactor = 50);
-- fillfactor 50 leaves room on each page for a new version of every row,
-- so status updates (which touch no indexed column) stay HOT and skip
-- index maintenance.
-- No foreign key to kinds: a per-row check costs every insert. Writers
-- lock the kinds rows they use FOR KEY SHARE once per statement, and
-- deleting a kind locks it FOR UPDATE and checks for resources.

CREATE UNIQUE INDEX resources_identity ON resources (namespace, kind, name);
CREATE INDEX resources_labels ON resources USING gin (labels jsonb_path_ops);
CREATE INDEX resources_owner ON resources (owner_id) WHERE owner_id IS NOT NULL;
CREATE INDEX resources_resync ON resources (resync_at) WHERE resync_at IS NOT NULL;
-- The orphan expirer looks for orphans past their grace every second: this
-- holds only orphans, so the look costs nothing when there are none.
CREATE INDEX resources_orphaned ON resources (orphaned_until) WHERE orphaned_until IS NOT NULL;
CREATE INDEX resources_provider_config ON resources (kind, kind_version, provider_config)
    WHERE provider_config <> '';

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

-- The work queue: one row per (resource, trigger, key) that needs running.
-- key names an operation or a reactor delivery ('' for everything else).
-- Worker triggers are the manifest's reaction triggers, an operation's is
-- 'operation:<verb>'; rollup, gate and teardown are the server's own work
-- (their generation counts wake-ups). The trigger list is package
-- trigger's; a store test checks this constraint against it.
-- No foreign key to resources: its check would lock the resource row on
-- every insert. Deleting a resource deletes its tasks in the same
-- statement.
-- A row is claimed by setting claimed_by and bumping epoch; a result is
-- applied only if it carries the current (id, epoch, generation).
CREATE TABLE tasks (
    id               bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    resource_id      bigint      NOT NULL,
    trigger          text        NOT NULL CONSTRAINT tasks_trigger CHECK (
        trigger IN ('specChange', 'resync', 'childrenSettled', 'deleteRequested', 'reactor',
                    'rollup', 'gate', 'teardown')
        OR (trigger LIKE 'operation:%' AND length(trigger) > 10)),
    key              text        NOT NULL DEFAULT '',
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
    -- What an operation or delivery task carries besides its resource.
    payload          jsonb,
    CONSTRAINT tasks_identity UNIQUE (resource_id, trigger, key)
) WITH (fillfactor = 70,
        autovacuum_vacuum_scale_factor = 0,
        autovacuum_vacuum_threshold = 1000,
        autovacuum_vacuum_cost_delay = 0,
        autovacuum_analyze_scale_factor = 0.05);

CREATE INDEX tasks_claimable ON tasks (kind, kind_version, trigger, not_before)
    WHERE claimed_by IS NULL;
CREATE INDEX tasks_leased ON tasks (lease_expires_at)
    WHERE claimed_by IS NOT NULL;
CREATE INDEX tasks_internal ON tasks (not_before)
    WHERE claimed_by IS NULL AND trigger IN ('rollup', 'gate', 'teardown');

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

-- Events: what happened and who did it. They outlive the resource, so
-- there is no foreign key. Writes to a kind's definition (its manifest,
-- policy, provider configs and reactor bindings) are events too: they
-- belong to no resource, so their resource_id is NULL, their namespace ''
-- and their name the kind version ("v1").
CREATE TABLE events (
    id          bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    resource_id bigint,
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

-- Provider config changes whose resources are being re-queued, a batch
-- at a time: the resources of the kind version whose provider_config is
-- one of names ('' for the default alone) and whose id is above after_id
-- and at most upto_id (resources created since got the new config from
-- the start) are still to go.
CREATE TABLE config_requeues (
    id           bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    kind         text        NOT NULL,
    kind_version integer     NOT NULL,
    names        text[]      NOT NULL,
    -- What changed, for events: e.g. provider config "default" revision 3.
    what         text        NOT NULL,
    after_id     bigint      NOT NULL DEFAULT 0,
    upto_id      bigint      NOT NULL,
    queued       bigint      NOT NULL DEFAULT 0,
    created_at   timestamptz NOT NULL DEFAULT now()
);

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

-- Which functions.sql the database holds (its SHA-256), so migrate
-- applies it only when it changed.
CREATE TABLE converge_functions (
    one        boolean     PRIMARY KEY DEFAULT true CHECK (one),
    checksum   text        NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT now()
);

-- +goose Down
-- migrate drops functions.sql's functions and triggers first.
DROP TABLE converge_functions;
DROP TABLE feed_cursors;
DROP TABLE reactor_bindings;
DROP TABLE operations;
DROP TABLE spec_revisions;
DROP TABLE config_requeues;
DROP TABLE provider_configs;
DROP TABLE members;
DROP TABLE events;
DROP TABLE change_retention;
DROP TABLE changes;
DROP TABLE tasks;
DROP TABLE edges;
DROP TABLE resources;
DROP TABLE kinds;
