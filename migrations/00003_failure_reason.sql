-- failure_reason is the machine-readable cause of the failure recorded in
-- failure_message: the worker's TaskError.reason (the protocol bounds its
-- syntax), or AttemptsExhausted when transient failures without one
-- reached the kind's cap. NULL: none given.

-- +goose Up
ALTER TABLE resources ADD COLUMN failure_reason text;

-- +goose Down
ALTER TABLE resources DROP COLUMN failure_reason;
