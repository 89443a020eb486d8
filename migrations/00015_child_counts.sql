-- A composite's children counted by phase, kept as the children change
-- instead of recounted on every rollup: a rollup of a composite of
-- 100,000 children reads the changes since its last run, not every child.
--
-- child_count_deltas is written by the resources' statement triggers (one
-- row per owner and phase a statement moved, see converge_child_deltas in
-- functions.sql) and only ever inserted there, so result batches touching
-- children of one composite never wait on each other. The rollup, holding
-- its composite's row lock, folds them into child_counts
-- (converge_child_counts_fold). Neither table has a foreign key: checking
-- one would share-lock the composite's row on every child's write and
-- queue those writes behind the rollup. A composite's rows go with it in
-- the delete trigger; converge_child_counts_repair recounts everything
-- and converge_child_counts_drift lists what disagrees with a recount.

-- +goose Up
CREATE TABLE child_counts (
    owner_id bigint NOT NULL,
    phase text NOT NULL,
    n bigint NOT NULL,
    PRIMARY KEY (owner_id, phase)
);

CREATE TABLE child_count_deltas (
    owner_id bigint NOT NULL,
    phase text NOT NULL,
    n bigint NOT NULL
);
CREATE INDEX child_count_deltas_owner ON child_count_deltas (owner_id);

-- +goose Down
-- The change triggers of functions.sql write these tables, and the
-- functions.sql of the version migrated back to does not know them: the
-- triggers go with the tables (the down migrations before this one write
-- resources, and must not run the triggers of a later schema), and
-- forgetting the applied functions.sql makes the next up apply its own.
DROP TRIGGER IF EXISTS resources_changes_insert ON resources;
DROP TRIGGER IF EXISTS resources_changes_update ON resources;
DROP TRIGGER IF EXISTS resources_changes_delete ON resources;
DELETE FROM converge_functions;
DROP FUNCTION IF EXISTS converge_child_deltas(bigint[], text[], bigint[]), converge_child_counts_fold(bigint),
    converge_child_recount(), converge_child_counts_repair(), converge_child_counts_drift();
DROP TABLE child_count_deltas;
DROP TABLE child_counts;
