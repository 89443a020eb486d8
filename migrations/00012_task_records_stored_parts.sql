-- A task record's input and result become bytea: they hold the parts of
-- what a task was sent and returned in the forms the server already has
-- (see server/internal/taskrec/format.go), and the JSON documents are
-- assembled when a record is read. Copying bytea in binary costs
-- PostgreSQL a copy of the bytes, where json parsed every document to
-- check it. Records written before keep their JSON documents as the
-- bytes of their text, which readers recognise by their leading brace.

-- +goose Up
ALTER TABLE task_records
    ALTER COLUMN input TYPE bytea USING convert_to(input::text, 'UTF8'),
    ALTER COLUMN result TYPE bytea USING convert_to(result::text, 'UTF8');

-- +goose Down
-- Records in parts have no JSON form in SQL: they go.
DELETE FROM task_records WHERE substr(input, 1, 1) <> '\x7b'::bytea OR substr(result, 1, 1) <> '\x7b'::bytea;
ALTER TABLE task_records
    ALTER COLUMN input TYPE json USING convert_from(input, 'UTF8')::json,
    ALTER COLUMN result TYPE json USING convert_from(result, 'UTF8')::json;
