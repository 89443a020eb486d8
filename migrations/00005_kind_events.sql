-- Writes to a kind's definition (its manifest, policy, provider configs
-- and reactor bindings) are events too, naming who made them: they belong
-- to no resource, so their resource_id is NULL, their namespace '' and their
-- name the kind version ("v1").

-- +goose Up
ALTER TABLE events ALTER COLUMN resource_id DROP NOT NULL;

-- +goose Down
DELETE FROM events WHERE resource_id IS NULL;
ALTER TABLE events ALTER COLUMN resource_id SET NOT NULL;
