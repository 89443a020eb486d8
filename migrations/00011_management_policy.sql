-- Management policy and import. A resource is managed in full (the
-- engine creates, updates and deletes its external object) or only
-- observed; management_policy is the resource's own choice ('' = its kind
-- version's), and kinds.management_policy the kind version's ('' =
-- full). converge_observed (functions.sql) is the one rule combining them.
-- import_id names an existing object the resource adopts instead of
-- creating one ('' = none). Observed resources' reconcile work runs under
-- the trigger 'observe'.

-- +goose Up
ALTER TABLE resources
    ADD COLUMN management_policy text NOT NULL DEFAULT ''
        CONSTRAINT resources_management_policy CHECK (management_policy IN ('', 'full', 'observe')),
    ADD COLUMN import_id text NOT NULL DEFAULT ''
        CONSTRAINT resources_import_id CHECK (length(import_id) <= 1024);
ALTER TABLE kinds
    ADD COLUMN management_policy text NOT NULL DEFAULT ''
        CONSTRAINT kinds_management_policy CHECK (management_policy IN ('', 'full', 'observe'));
ALTER TABLE tasks DROP CONSTRAINT tasks_trigger;
ALTER TABLE tasks ADD CONSTRAINT tasks_trigger CHECK (
    trigger IN ('specChange', 'resync', 'childrenSettled', 'deleteRequested', 'reactor',
                'rollup', 'gate', 'teardown', 'observe')
    OR (trigger LIKE 'operation:%' AND length(trigger) > 10));

-- +goose Down
DELETE FROM tasks WHERE trigger = 'observe';
ALTER TABLE tasks DROP CONSTRAINT tasks_trigger;
ALTER TABLE tasks ADD CONSTRAINT tasks_trigger CHECK (
    trigger IN ('specChange', 'resync', 'childrenSettled', 'deleteRequested', 'reactor',
                'rollup', 'gate', 'teardown')
    OR (trigger LIKE 'operation:%' AND length(trigger) > 10));
ALTER TABLE kinds DROP COLUMN management_policy;
ALTER TABLE resources DROP COLUMN import_id, DROP COLUMN management_policy;
