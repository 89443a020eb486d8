-- traceparent is the W3C trace context of the change that queued the task
-- (an API call, a result apply, a gate), so the task's claim, dispatch and
-- handler join that change's trace. It defaults to the transaction's
-- converge.traceparent setting, which the store sets only when tracing is
-- on: every statement that queues work, in Go or in a trigger function,
-- fills it without naming it. NULL: not traced.

-- +goose Up
ALTER TABLE tasks ADD COLUMN traceparent text DEFAULT nullif(current_setting('converge.traceparent', true), '');

-- +goose Down
ALTER TABLE tasks DROP COLUMN traceparent;
