-- A resource's current spec revision and its Created event are read from
-- the resource row instead of being stored beside it at create time (see
-- converge_revision and converge_created_event in functions.sql): a
-- create writes one row, not three.
--
-- spec_source, spec_actor and spec_at say what wrote the current spec,
-- who and when; spec_revisions holds only the superseded revisions (the
-- change trigger stores a revision when its generation is left behind).
-- created_event is the events id reserved, at create, for the Created
-- event of an applied resource, so it keeps its place among the stored
-- events; while it is set the event is not stored, and the trigger that
-- stores it (on the first new generation, or on delete) clears it.
-- The defaults restate converge_stamp_spec's reading of the session
-- settings recordAs sets (store/history.go), for inserted rows.

-- +goose Up
ALTER TABLE resources
    ADD COLUMN spec_source text,
    ADD COLUMN spec_actor text,
    ADD COLUMN spec_at timestamp with time zone,
    ADD COLUMN created_event bigint;

UPDATE resources r SET spec_source = s.source, spec_actor = s.actor, spec_at = s.at
FROM spec_revisions s WHERE s.resource_id = r.id AND s.generation = r.generation;
-- A row whose current revision was trimmed (history_keep 0) has no record
-- of who wrote it.
UPDATE resources SET spec_source = 'apply', spec_actor = 'system', spec_at = updated_at
WHERE spec_source IS NULL;
DELETE FROM spec_revisions s USING resources r WHERE s.resource_id = r.id AND s.generation = r.generation;

ALTER TABLE resources
    ALTER COLUMN spec_source SET DEFAULT coalesce(nullif(current_setting('converge.source', true), ''), 'apply'),
    ALTER COLUMN spec_source SET NOT NULL,
    ALTER COLUMN spec_actor SET DEFAULT coalesce(nullif(current_setting('converge.actor', true), ''), 'system'),
    ALTER COLUMN spec_actor SET NOT NULL,
    ALTER COLUMN spec_at SET DEFAULT clock_timestamp(),
    ALTER COLUMN spec_at SET NOT NULL;

-- Events are listed newest first across resources: the derived Created
-- events are read in the same order through this index.
CREATE INDEX resources_created_event ON resources (created_event) WHERE created_event IS NOT NULL;

-- +goose Down
-- What functions.sql adds for these columns goes with them: the
-- functions.sql of the version migrated back to does not know it.
-- Forgetting the applied functions.sql makes the next up apply it again.
DROP TRIGGER IF EXISTS resources_spec_stamp ON resources;
DELETE FROM converge_functions;
DROP FUNCTION IF EXISTS converge_stamp_spec(), converge_revision(resources), converge_created_event(resources),
    converge_revisions(resources, integer);
INSERT INTO spec_revisions (resource_id, generation, kind_version, spec, source, actor, at)
SELECT id, generation, kind_version, spec, spec_source, spec_actor, spec_at FROM resources
ON CONFLICT (resource_id, generation) DO NOTHING;
INSERT INTO events (id, resource_id, namespace, kind, name, generation, type, reason, message, actor, at)
OVERRIDING SYSTEM VALUE
SELECT created_event, id, namespace, kind, name, 1, 'Normal', 'Created',
       'created at ' || kind || ' v' || kind_version, spec_actor, spec_at
FROM resources WHERE created_event IS NOT NULL;
DROP INDEX resources_created_event;
ALTER TABLE resources
    DROP COLUMN spec_source,
    DROP COLUMN spec_actor,
    DROP COLUMN spec_at,
    DROP COLUMN created_event;
