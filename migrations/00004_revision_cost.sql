-- Spec revisions are recorded only for the rows whose generation moved,
-- found once per statement: a status update (nearly every update) skips
-- the revision statements, and trimming old revisions reads the rows it
-- trims through the primary key instead of joining the whole table.

-- +goose Up
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION converge_record_changes() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
  respecced bigint[];
BEGIN
  IF TG_OP = 'INSERT' THEN
    EXECUTE $q$
      INSERT INTO changes (resource_id, type, namespace, kind, kind_version, name, phase,
                           previous_phase, generation, synced_generation, resource_version, message)
      SELECT n.id, 'created', n.namespace, n.kind, n.kind_version, n.name, n.phase,
             NULL, n.generation, n.synced_generation, n.resource_version, n.failure_message
      FROM new_rows n $q$;
    EXECUTE $q$
      SELECT converge_wake(array_agg(DISTINCT n.owner_id), 'rollup')
      FROM new_rows n WHERE n.owner_id IS NOT NULL
      HAVING count(*) > 0 $q$;
    EXECUTE $q$
      INSERT INTO spec_revisions (resource_id, generation, kind_version, spec, source, actor)
      SELECT n.id, n.generation, n.kind_version, n.spec,
             coalesce(nullif(current_setting('converge.source', true), ''), 'apply'),
             coalesce(nullif(current_setting('converge.actor', true), ''), 'system')
      FROM new_rows n
      ON CONFLICT (resource_id, generation) DO NOTHING $q$;
  ELSIF TG_OP = 'UPDATE' THEN
    EXECUTE $q$
      INSERT INTO changes (resource_id, type, namespace, kind, kind_version, name, phase,
                           previous_phase, generation, synced_generation, resource_version, message)
      SELECT n.id, 'updated', n.namespace, n.kind, n.kind_version, n.name, n.phase,
             o.phase, n.generation, n.synced_generation, n.resource_version, n.failure_message
      FROM new_rows n JOIN old_rows o ON o.id = n.id
      WHERE n.phase <> o.phase
         OR n.generation <> o.generation
         OR n.synced_generation <> o.synced_generation
         OR n.kind_version <> o.kind_version
         OR n.failure_message IS DISTINCT FROM o.failure_message
         OR n.waiting IS DISTINCT FROM o.waiting $q$;
    EXECUTE $q$
      SELECT converge_wake(array_agg(DISTINCT n.owner_id), 'rollup')
      FROM new_rows n JOIN old_rows o ON o.id = n.id
      WHERE n.owner_id IS NOT NULL AND (n.phase <> o.phase OR n.frozen_until IS DISTINCT FROM o.frozen_until)
      HAVING count(*) > 0 $q$;
    EXECUTE $q$
      SELECT converge_wake(array_agg(DISTINCT e.dependent_id), 'gate')
      FROM new_rows n JOIN old_rows o ON o.id = n.id
      JOIN edges e ON e.dependency_id = n.id
      WHERE (n.synced_generation >= n.generation
             AND (n.synced_generation <> o.synced_generation OR n.status IS DISTINCT FROM o.status))
         OR n.phase <> o.phase
      HAVING count(*) > 0 $q$;
    EXECUTE $q$
      SELECT array_agg(n.id) FROM new_rows n JOIN old_rows o ON o.id = n.id
      WHERE n.generation <> o.generation $q$ INTO respecced;
    IF respecced IS NOT NULL THEN
      EXECUTE $q$
        INSERT INTO spec_revisions (resource_id, generation, kind_version, spec, source, actor)
        SELECT r.id, r.generation, r.kind_version, r.spec,
               coalesce(nullif(current_setting('converge.source', true), ''), 'apply'),
               coalesce(nullif(current_setting('converge.actor', true), ''), 'system')
        FROM resources r WHERE r.id = ANY($1)
        ON CONFLICT (resource_id, generation) DO UPDATE SET spec = EXCLUDED.spec, kind_version = EXCLUDED.kind_version $q$
        USING respecced;
      EXECUTE $q$
        DELETE FROM spec_revisions s
        WHERE s.resource_id = ANY($1)
          AND s.generation <= (SELECT r.generation FROM resources r WHERE r.id = s.resource_id)
              - coalesce(nullif(current_setting('converge.history_keep', true), '')::int, 50) $q$
        USING respecced;
    END IF;
  ELSE
    EXECUTE $q$
      INSERT INTO changes (resource_id, type, namespace, kind, kind_version, name, phase,
                           previous_phase, generation, synced_generation, resource_version, message)
      SELECT o.id, 'deleted', o.namespace, o.kind, o.kind_version, o.name, o.phase,
             o.phase, o.generation, o.synced_generation, o.resource_version + 1, NULL
      FROM old_rows o $q$;
    EXECUTE $q$
      SELECT converge_wake(array_agg(DISTINCT x.id), 'teardown')
      FROM (SELECT o.owner_id AS id FROM old_rows o WHERE o.owner_id IS NOT NULL
            UNION SELECT e.dependency_id FROM old_rows o JOIN edges e ON e.dependent_id = o.id) x
      JOIN resources r ON r.id = x.id AND r.deletion_requested_at IS NOT NULL
      HAVING count(*) > 0 $q$;
    EXECUTE $q$
      SELECT converge_wake(array_agg(DISTINCT o.owner_id), 'rollup')
      FROM old_rows o WHERE o.owner_id IS NOT NULL
      HAVING count(*) > 0 $q$;
    EXECUTE $q$
      SELECT converge_recompose(array_agg(DISTINCT o.owner_id))
      FROM old_rows o JOIN resources p ON p.id = o.owner_id AND p.deletion_requested_at IS NULL
      HAVING count(*) > 0 $q$;
    EXECUTE $q$
      DELETE FROM edges e USING old_rows o WHERE e.dependent_id = o.id $q$;
    EXECUTE $q$
      DELETE FROM edges e USING old_rows o WHERE e.dependency_id = o.id $q$;
    EXECUTE $q$
      DELETE FROM spec_revisions s USING old_rows o WHERE s.resource_id = o.id $q$;
  END IF;
  RETURN NULL;
END
$$;
-- +goose StatementEnd

-- +goose Down
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION converge_record_changes() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    EXECUTE $q$
      INSERT INTO changes (resource_id, type, namespace, kind, kind_version, name, phase,
                           previous_phase, generation, synced_generation, resource_version, message)
      SELECT n.id, 'created', n.namespace, n.kind, n.kind_version, n.name, n.phase,
             NULL, n.generation, n.synced_generation, n.resource_version, n.failure_message
      FROM new_rows n $q$;
    EXECUTE $q$
      SELECT converge_wake(array_agg(DISTINCT n.owner_id), 'rollup')
      FROM new_rows n WHERE n.owner_id IS NOT NULL
      HAVING count(*) > 0 $q$;
    EXECUTE $q$
      INSERT INTO spec_revisions (resource_id, generation, kind_version, spec, source, actor)
      SELECT n.id, n.generation, n.kind_version, n.spec,
             coalesce(nullif(current_setting('converge.source', true), ''), 'apply'),
             coalesce(nullif(current_setting('converge.actor', true), ''), 'system')
      FROM new_rows n
      ON CONFLICT (resource_id, generation) DO NOTHING $q$;
  ELSIF TG_OP = 'UPDATE' THEN
    EXECUTE $q$
      INSERT INTO changes (resource_id, type, namespace, kind, kind_version, name, phase,
                           previous_phase, generation, synced_generation, resource_version, message)
      SELECT n.id, 'updated', n.namespace, n.kind, n.kind_version, n.name, n.phase,
             o.phase, n.generation, n.synced_generation, n.resource_version, n.failure_message
      FROM new_rows n JOIN old_rows o ON o.id = n.id
      WHERE n.phase <> o.phase
         OR n.generation <> o.generation
         OR n.synced_generation <> o.synced_generation
         OR n.kind_version <> o.kind_version
         OR n.failure_message IS DISTINCT FROM o.failure_message
         OR n.waiting IS DISTINCT FROM o.waiting $q$;
    EXECUTE $q$
      SELECT converge_wake(array_agg(DISTINCT n.owner_id), 'rollup')
      FROM new_rows n JOIN old_rows o ON o.id = n.id
      WHERE n.owner_id IS NOT NULL AND (n.phase <> o.phase OR n.frozen_until IS DISTINCT FROM o.frozen_until)
      HAVING count(*) > 0 $q$;
    EXECUTE $q$
      SELECT converge_wake(array_agg(DISTINCT e.dependent_id), 'gate')
      FROM new_rows n JOIN old_rows o ON o.id = n.id
      JOIN edges e ON e.dependency_id = n.id
      WHERE (n.synced_generation >= n.generation
             AND (n.synced_generation <> o.synced_generation OR n.status IS DISTINCT FROM o.status))
         OR n.phase <> o.phase
      HAVING count(*) > 0 $q$;
    EXECUTE $q$
      INSERT INTO spec_revisions (resource_id, generation, kind_version, spec, source, actor)
      SELECT n.id, n.generation, n.kind_version, n.spec,
             coalesce(nullif(current_setting('converge.source', true), ''), 'apply'),
             coalesce(nullif(current_setting('converge.actor', true), ''), 'system')
      FROM new_rows n JOIN old_rows o ON o.id = n.id
      WHERE n.generation <> o.generation
      ON CONFLICT (resource_id, generation) DO UPDATE SET spec = EXCLUDED.spec, kind_version = EXCLUDED.kind_version $q$;
    EXECUTE $q$
      DELETE FROM spec_revisions s USING new_rows n JOIN old_rows o ON o.id = n.id
      WHERE n.generation <> o.generation AND s.resource_id = n.id
        AND s.generation <= n.generation
            - coalesce(nullif(current_setting('converge.history_keep', true), '')::int, 50) $q$;
  ELSE
    EXECUTE $q$
      INSERT INTO changes (resource_id, type, namespace, kind, kind_version, name, phase,
                           previous_phase, generation, synced_generation, resource_version, message)
      SELECT o.id, 'deleted', o.namespace, o.kind, o.kind_version, o.name, o.phase,
             o.phase, o.generation, o.synced_generation, o.resource_version + 1, NULL
      FROM old_rows o $q$;
    EXECUTE $q$
      SELECT converge_wake(array_agg(DISTINCT x.id), 'teardown')
      FROM (SELECT o.owner_id AS id FROM old_rows o WHERE o.owner_id IS NOT NULL
            UNION SELECT e.dependency_id FROM old_rows o JOIN edges e ON e.dependent_id = o.id) x
      JOIN resources r ON r.id = x.id AND r.deletion_requested_at IS NOT NULL
      HAVING count(*) > 0 $q$;
    EXECUTE $q$
      SELECT converge_wake(array_agg(DISTINCT o.owner_id), 'rollup')
      FROM old_rows o WHERE o.owner_id IS NOT NULL
      HAVING count(*) > 0 $q$;
    EXECUTE $q$
      SELECT converge_recompose(array_agg(DISTINCT o.owner_id))
      FROM old_rows o JOIN resources p ON p.id = o.owner_id AND p.deletion_requested_at IS NULL
      HAVING count(*) > 0 $q$;
    EXECUTE $q$
      DELETE FROM edges e USING old_rows o WHERE e.dependent_id = o.id $q$;
    EXECUTE $q$
      DELETE FROM edges e USING old_rows o WHERE e.dependency_id = o.id $q$;
    EXECUTE $q$
      DELETE FROM spec_revisions s USING old_rows o WHERE s.resource_id = o.id $q$;
  END IF;
  RETURN NULL;
END
$$;
-- +goose StatementEnd
