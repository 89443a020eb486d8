-- task_records becomes UNLOGGED: records are evidence for debugging, not
-- state the engine needs, and writing them to the WAL was most of what a
-- record cost PostgreSQL. The price: a PostgreSQL crash (not a clean
-- shutdown) empties the table, and physical standbys do not have it.

-- +goose Up
ALTER TABLE task_records SET UNLOGGED;

-- +goose Down
ALTER TABLE task_records SET LOGGED;
