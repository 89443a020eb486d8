-- Rollouts: the resources of a kind moving from one version to another
-- in waves. A rollout's rows are its whole state, so any replica can drive
-- it after another stops: the driver takes the rollout's row lock for each
-- step and holds a lease (lease_owner, lease_until) between steps, so one
-- replica drives a rollout at a time and a step is never taken twice.
-- Lock order: a rollout's row before the resources it moves.

-- +goose Up
CREATE TABLE rollouts (
    id                    bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    kind                  text        NOT NULL,
    from_version          integer     NOT NULL,
    to_version            integer     NOT NULL,
    namespace             text        NOT NULL DEFAULT '',
    state                 text        NOT NULL DEFAULT 'running'
        CHECK (state IN ('running', 'paused', 'completed', 'failed', 'aborted', 'rolled_back')),
    reason                text        NOT NULL DEFAULT '',
    soak_seconds          integer     NOT NULL,
    max_failures          integer     NOT NULL,
    max_failure_percent   integer     NOT NULL,
    ready_timeout_seconds integer     NOT NULL,
    actor                 text        NOT NULL,
    lease_owner           text,
    lease_until           timestamptz,
    created_at            timestamptz NOT NULL DEFAULT now(),
    updated_at            timestamptz NOT NULL DEFAULT now(),
    finished_at           timestamptz,
    -- move: resources move from from_version to to_version; recompose:
    -- the resources of to_version (= from_version) reconcile again.
    mode                  text        NOT NULL DEFAULT 'move' CHECK (mode IN ('move', 'recompose')),
    CHECK (from_version < to_version OR (mode = 'recompose' AND from_version = to_version))
);
-- One rollout of a kind moves at a time: two would fight over its resources.
CREATE UNIQUE INDEX rollouts_active ON rollouts (kind) WHERE state IN ('running', 'paused', 'failed');
CREATE INDEX rollouts_running ON rollouts (id) WHERE state = 'running';

CREATE TABLE rollout_waves (
    rollout_id  bigint      NOT NULL REFERENCES rollouts ON DELETE CASCADE,
    wave        integer     NOT NULL CHECK (wave >= 1),
    selector    text        NOT NULL,
    state       text        NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'moving', 'done', 'failed')),
    not_before  timestamptz,
    started_at  timestamptz,
    deadline    timestamptz,
    finished_at timestamptz,
    PRIMARY KEY (rollout_id, wave)
);

-- A member is one resource the rollout moves (or recomposes). old_spec is
-- the spec it had before the move, for a rollback; the resource itself may
-- go away during the rollout, so it is not a foreign key.
CREATE TABLE rollout_members (
    rollout_id       bigint  NOT NULL REFERENCES rollouts ON DELETE CASCADE,
    resource_id      bigint  NOT NULL,
    position         integer NOT NULL,
    namespace        text    NOT NULL,
    name             text    NOT NULL,
    wave             integer NOT NULL DEFAULT 0,
    state            text    NOT NULL DEFAULT 'pending'
        CHECK (state IN ('pending', 'moving', 'ready', 'failed', 'skipped', 'rolled_back')),
    old_spec         jsonb,
    moved_generation bigint,
    -- A recompose member is done once it reconciled after its wave began.
    moved_reconciles bigint,
    reason           text    NOT NULL DEFAULT '',
    PRIMARY KEY (rollout_id, resource_id)
);
CREATE INDEX rollout_members_wave ON rollout_members (rollout_id, wave, state);

-- +goose Down
DROP TABLE rollout_members;
DROP TABLE rollout_waves;
DROP TABLE rollouts;
