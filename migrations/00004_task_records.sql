-- task_records keeps, per resource, what its last tasks were sent and
-- returned and what became of the result: the evidence for debugging one
-- reconcile. Written in batches by each broker's recorder, off the result
-- path; bounded per resource by the recorder's pruning (last N), and per
-- record by its byte budget (input and result are cut to fit it). No
-- foreign key: a record may arrive for a resource deleted a moment ago,
-- and the insert skips those instead of failing its batch.
--
-- outcome is 'applied', 'discarded' (the fence refused the result:
-- discard_reason says why) or 'lost' (no result came: the lease expired).
-- input and result are JSON documents (see package taskrec).

-- +goose Up
CREATE TABLE task_records (
    id             bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    resource_id    bigint      NOT NULL,
    task_id        bigint      NOT NULL,
    trigger        text        NOT NULL,
    generation     bigint      NOT NULL,
    attempt        integer     NOT NULL,
    worker         text        NOT NULL,
    session        text        NOT NULL,
    claimed_at     timestamptz NOT NULL,
    dispatched_at  timestamptz,
    ended_at       timestamptz NOT NULL,
    outcome        text        NOT NULL,
    discard_reason text        NOT NULL,
    failed         boolean     NOT NULL,
    terminal       boolean     NOT NULL,
    error_reason   text        NOT NULL,
    error          text        NOT NULL,
    children       integer     NOT NULL,
    truncated      boolean     NOT NULL,
    input          jsonb       NOT NULL,
    result         jsonb       NOT NULL
);
CREATE INDEX task_records_resource ON task_records (resource_id, id DESC);

-- +goose Down
DROP TABLE task_records;
