-- A composite whose kind has a childrenSettled reaction is "settling"
-- between its children settling and that reaction's result: it is not
-- Ready until its status holds what the reaction projects.

-- +goose Up
ALTER TABLE resources DROP CONSTRAINT resources_subtree_check,
    ADD CONSTRAINT resources_subtree_check
        CHECK (subtree IN ('none', 'ready', 'settling', 'pending', 'degraded', 'failed'));

-- +goose Down
UPDATE resources SET subtree = 'ready' WHERE subtree = 'settling';
ALTER TABLE resources DROP CONSTRAINT resources_subtree_check,
    ADD CONSTRAINT resources_subtree_check
        CHECK (subtree IN ('none', 'ready', 'pending', 'degraded', 'failed'));
