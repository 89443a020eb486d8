-- The hot statements of the reconcile path run with their plans pinned to
-- index lookups joined by nested loops (store: pinPlansSQL). The change
-- trigger joins transition tables, which have no index: it plans its
-- statements as the planner sees fit whatever the calling transaction set.

-- +goose Up
ALTER FUNCTION converge_record_changes()
    SET enable_hashjoin = on
    SET enable_mergejoin = on
    SET enable_material = on
    SET enable_seqscan = on;

-- +goose Down
ALTER FUNCTION converge_record_changes()
    RESET enable_hashjoin
    RESET enable_mergejoin
    RESET enable_material
    RESET enable_seqscan;
