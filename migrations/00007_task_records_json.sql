-- A task record's input and result are kept as json, not jsonb: they are
-- only ever read whole, never queried into, and json costs PostgreSQL a
-- syntax check where jsonb builds and sorts a tree; ANALYZE only measures
-- a json column's width (on jsonb it sorted every sampled document).
-- Records are appended in bulk and only ever deleted by the prune, so the
-- table is vacuumed for its deletes, not for the inserts.

-- +goose Up
ALTER TABLE task_records ALTER COLUMN input TYPE json, ALTER COLUMN result TYPE json;
ALTER TABLE task_records SET (autovacuum_vacuum_insert_threshold = -1);

-- +goose Down
ALTER TABLE task_records RESET (autovacuum_vacuum_insert_threshold);
ALTER TABLE task_records ALTER COLUMN input TYPE jsonb, ALTER COLUMN result TYPE jsonb;
