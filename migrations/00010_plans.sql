-- Plans (PlanChange) and the preview tasks they send to workers.
--
-- previews carries a preview task from the replica serving the plan call to
-- a broker replica that has a worker for the composer reaction, and the
-- worker's answer back: a row is written by the plan call (committed, so
-- any replica sees it), claimed by one broker, answered, and deleted by the
-- plan call. It is never a task: the tasks table, the resources and the
-- events never see it, so nothing a preview answers can be applied. Its ids
-- start at 2^62 so that a preview's lease never names the id of a real
-- task. Both tables are UNLOGGED: they hold nothing that outlives a plan by
-- more than its fence window, and a crash that empties them only makes a
-- plan run again.
--
-- plans keeps what a plan's apply is fenced on (see store/plans.go).

-- +goose Up
CREATE UNLOGGED TABLE previews (
    id bigint GENERATED ALWAYS AS IDENTITY (START WITH 4611686018427387904) PRIMARY KEY,
    kind text NOT NULL,
    kind_version integer NOT NULL,
    reaction text NOT NULL,
    task bytea NOT NULL,
    created_at timestamp with time zone NOT NULL DEFAULT now(),
    expires_at timestamp with time zone NOT NULL,
    claimed_by text,
    worker text,
    result bytea,
    error text,
    done boolean NOT NULL DEFAULT false
);
CREATE INDEX previews_open ON previews (kind, kind_version, reaction) WHERE claimed_by IS NULL;

CREATE UNLOGGED TABLE plans (
    id text PRIMARY KEY,
    created_at timestamp with time zone NOT NULL DEFAULT now(),
    expires_at timestamp with time zone NOT NULL,
    fence jsonb NOT NULL
);

-- +goose Down
DROP TABLE plans;
DROP TABLE previews;
