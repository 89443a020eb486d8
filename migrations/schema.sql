-- The schema as migrate leaves it: generated from a migrated database by
-- `go test ./server/internal/migrate -run TestSchemaSnapshot -update`. Do not edit.

CREATE TABLE change_retention (
    one boolean NOT NULL DEFAULT true,
    pruned_before xid8 NOT NULL
);
ALTER TABLE change_retention ADD CONSTRAINT change_retention_one_check CHECK (one);
ALTER TABLE change_retention ADD CONSTRAINT change_retention_pkey PRIMARY KEY (one);

CREATE TABLE changes (
    seq bigint NOT NULL GENERATED ALWAYS AS IDENTITY,
    xid xid8 NOT NULL DEFAULT pg_current_xact_id(),
    resource_id bigint NOT NULL,
    type text NOT NULL,
    namespace text NOT NULL,
    kind text NOT NULL,
    kind_version integer NOT NULL,
    name text NOT NULL,
    phase text NOT NULL,
    previous_phase text,
    generation bigint NOT NULL,
    synced_generation bigint NOT NULL,
    resource_version bigint NOT NULL,
    message text,
    at timestamp with time zone NOT NULL DEFAULT clock_timestamp()
) WITH (autovacuum_vacuum_scale_factor=0.02);
ALTER TABLE changes ADD CONSTRAINT changes_pkey PRIMARY KEY (xid, seq);

CREATE TABLE child_count_deltas (
    owner_id bigint NOT NULL,
    phase text NOT NULL,
    n bigint NOT NULL
);
CREATE INDEX child_count_deltas_owner ON public.child_count_deltas USING btree (owner_id);

CREATE TABLE child_counts (
    owner_id bigint NOT NULL,
    phase text NOT NULL,
    n bigint NOT NULL
);
ALTER TABLE child_counts ADD CONSTRAINT child_counts_pkey PRIMARY KEY (owner_id, phase);

CREATE TABLE cluster_settings (
    name text NOT NULL,
    value text NOT NULL,
    set_by text NOT NULL,
    set_at timestamp with time zone NOT NULL DEFAULT now()
);
ALTER TABLE cluster_settings ADD CONSTRAINT cluster_settings_name CHECK ((name = 'log_level'::text));
ALTER TABLE cluster_settings ADD CONSTRAINT cluster_settings_pkey PRIMARY KEY (name);

CREATE TABLE config_requeues (
    id bigint NOT NULL GENERATED ALWAYS AS IDENTITY,
    kind text NOT NULL,
    kind_version integer NOT NULL,
    names text[] NOT NULL,
    what text NOT NULL,
    after_id bigint NOT NULL DEFAULT 0,
    upto_id bigint NOT NULL,
    queued bigint NOT NULL DEFAULT 0,
    created_at timestamp with time zone NOT NULL DEFAULT now()
);
ALTER TABLE config_requeues ADD CONSTRAINT config_requeues_pkey PRIMARY KEY (id);

CREATE TABLE converge_functions (
    one boolean NOT NULL DEFAULT true,
    checksum text NOT NULL,
    applied_at timestamp with time zone NOT NULL DEFAULT now()
);
ALTER TABLE converge_functions ADD CONSTRAINT converge_functions_one_check CHECK (one);
ALTER TABLE converge_functions ADD CONSTRAINT converge_functions_pkey PRIMARY KEY (one);

CREATE TABLE edges (
    dependent_id bigint NOT NULL,
    dependency_id bigint NOT NULL,
    owner_id bigint NOT NULL,
    flows jsonb NOT NULL DEFAULT '[]'::jsonb
);
ALTER TABLE edges ADD CONSTRAINT edges_pkey PRIMARY KEY (dependent_id, dependency_id);
CREATE INDEX edges_dependency ON public.edges USING btree (dependency_id);
CREATE INDEX edges_owner ON public.edges USING btree (owner_id);

CREATE TABLE events (
    id bigint NOT NULL GENERATED ALWAYS AS IDENTITY,
    resource_id bigint,
    namespace text NOT NULL,
    kind text NOT NULL,
    name text NOT NULL,
    generation bigint NOT NULL,
    type text NOT NULL,
    reason text NOT NULL,
    message text NOT NULL,
    actor text NOT NULL,
    at timestamp with time zone NOT NULL DEFAULT clock_timestamp()
);
ALTER TABLE events ADD CONSTRAINT events_pkey PRIMARY KEY (id);
CREATE INDEX events_resource ON public.events USING btree (namespace, kind, name, id);

CREATE TABLE feed_cursors (
    name text NOT NULL,
    xid xid8 NOT NULL,
    seq bigint NOT NULL
);
ALTER TABLE feed_cursors ADD CONSTRAINT feed_cursors_pkey PRIMARY KEY (name);

CREATE TABLE kinds (
    kind text NOT NULL,
    kind_version integer NOT NULL,
    manifest jsonb NOT NULL,
    max_inflight integer NOT NULL DEFAULT 0,
    task_deadline_seconds integer NOT NULL DEFAULT 0,
    resync_interval_seconds integer NOT NULL DEFAULT 0,
    resync_recomposes boolean NOT NULL DEFAULT false,
    orphan_grace_seconds integer NOT NULL DEFAULT 0,
    max_transient_attempts integer NOT NULL DEFAULT 0,
    retired boolean NOT NULL DEFAULT false,
    deletion_policy text NOT NULL DEFAULT ''::text,
    revision bigint NOT NULL DEFAULT 1,
    created_at timestamp with time zone NOT NULL DEFAULT now(),
    updated_at timestamp with time zone NOT NULL DEFAULT now(),
    management_policy text NOT NULL DEFAULT ''::text
);
ALTER TABLE kinds ADD CONSTRAINT kinds_deletion_policy_check CHECK ((deletion_policy = ANY (ARRAY[''::text, 'delete'::text, 'retain'::text])));
ALTER TABLE kinds ADD CONSTRAINT kinds_kind_version_check CHECK (((kind_version >= 1) AND (kind_version <= 32767)));
ALTER TABLE kinds ADD CONSTRAINT kinds_management_policy CHECK ((management_policy = ANY (ARRAY[''::text, 'full'::text, 'observe'::text])));
ALTER TABLE kinds ADD CONSTRAINT kinds_pkey PRIMARY KEY (kind, kind_version);

CREATE TABLE members (
    id text NOT NULL,
    roles text[] NOT NULL,
    hostname text NOT NULL,
    pid integer NOT NULL,
    version text NOT NULL,
    started_at timestamp with time zone NOT NULL DEFAULT now(),
    heartbeat_at timestamp with time zone NOT NULL DEFAULT now(),
    served jsonb NOT NULL DEFAULT '[]'::jsonb
) WITH (fillfactor=50);
ALTER TABLE members ADD CONSTRAINT members_pkey PRIMARY KEY (id);

CREATE TABLE operations (
    id text NOT NULL,
    resource_id bigint NOT NULL,
    namespace text NOT NULL,
    kind text NOT NULL,
    name text NOT NULL,
    verb text NOT NULL,
    input jsonb NOT NULL DEFAULT '{}'::jsonb,
    state text NOT NULL DEFAULT 'pending'::text,
    output jsonb,
    message text,
    actor text NOT NULL,
    reason text NOT NULL DEFAULT ''::text,
    attempts integer NOT NULL DEFAULT 0,
    requested_at timestamp with time zone NOT NULL DEFAULT now(),
    finished_at timestamp with time zone
);
ALTER TABLE operations ADD CONSTRAINT operations_pkey PRIMARY KEY (id);
ALTER TABLE operations ADD CONSTRAINT operations_state_check CHECK ((state = ANY (ARRAY['pending'::text, 'running'::text, 'succeeded'::text, 'failed'::text])));
CREATE INDEX operations_resource ON public.operations USING btree (resource_id, requested_at DESC);

CREATE UNLOGGED TABLE plans (
    id text NOT NULL,
    created_at timestamp with time zone NOT NULL DEFAULT now(),
    expires_at timestamp with time zone NOT NULL,
    fence jsonb NOT NULL
);
ALTER TABLE plans ADD CONSTRAINT plans_pkey PRIMARY KEY (id);

CREATE UNLOGGED TABLE previews (
    id bigint NOT NULL GENERATED ALWAYS AS IDENTITY,
    kind text NOT NULL,
    kind_version integer NOT NULL,
    reaction text NOT NULL,
    task bytea NOT NULL,
    created_at timestamp with time zone NOT NULL DEFAULT now(),
    expires_at timestamp with time zone NOT NULL,
    claimed_by text,
    worker text,
    result bytea,
    error text,
    done boolean NOT NULL DEFAULT false
);
ALTER TABLE previews ADD CONSTRAINT previews_pkey PRIMARY KEY (id);
CREATE INDEX previews_open ON public.previews USING btree (kind, kind_version, reaction) WHERE (claimed_by IS NULL);

CREATE TABLE provider_configs (
    kind text NOT NULL,
    kind_version integer NOT NULL,
    name text NOT NULL,
    config jsonb NOT NULL DEFAULT '{}'::jsonb,
    description text NOT NULL DEFAULT ''::text,
    revision bigint NOT NULL DEFAULT 1,
    created_at timestamp with time zone NOT NULL DEFAULT now(),
    updated_at timestamp with time zone NOT NULL DEFAULT now()
);
ALTER TABLE provider_configs ADD CONSTRAINT provider_configs_pkey PRIMARY KEY (kind, kind_version, name);

CREATE TABLE reactor_bindings (
    name text NOT NULL,
    watch_kind text NOT NULL,
    watch_kind_version integer NOT NULL DEFAULT 0,
    transitions text[] NOT NULL,
    label_selector text NOT NULL DEFAULT ''::text,
    reactor_kind text NOT NULL,
    reactor_kind_version integer NOT NULL,
    disabled boolean NOT NULL DEFAULT false,
    revision bigint NOT NULL DEFAULT 1,
    created_at timestamp with time zone NOT NULL DEFAULT now(),
    updated_at timestamp with time zone NOT NULL DEFAULT now()
);
ALTER TABLE reactor_bindings ADD CONSTRAINT reactor_bindings_pkey PRIMARY KEY (name);

CREATE TABLE resources (
    id bigint NOT NULL GENERATED ALWAYS AS IDENTITY,
    namespace text NOT NULL,
    kind text NOT NULL,
    kind_version integer NOT NULL,
    name text NOT NULL,
    labels jsonb NOT NULL DEFAULT '{}'::jsonb,
    spec jsonb NOT NULL DEFAULT '{}'::jsonb,
    status jsonb NOT NULL DEFAULT '{}'::jsonb,
    conditions jsonb NOT NULL DEFAULT '[]'::jsonb,
    owner_id bigint,
    root_id bigint,
    shard smallint GENERATED ALWAYS AS (((hashint8(COALESCE(root_id, id)) & 255))::smallint) STORED,
    generation bigint NOT NULL DEFAULT 1,
    synced_generation bigint NOT NULL DEFAULT 0,
    health_ok boolean NOT NULL DEFAULT true,
    failure_generation bigint NOT NULL DEFAULT 0,
    failure_terminal boolean NOT NULL DEFAULT false,
    failure_attempts integer NOT NULL DEFAULT 0,
    failure_message text,
    quarantined boolean NOT NULL DEFAULT false,
    orphaned_until timestamp with time zone,
    deletion_requested_at timestamp with time zone,
    resource_version bigint NOT NULL DEFAULT 1,
    reconciles bigint NOT NULL DEFAULT 0,
    created_at timestamp with time zone NOT NULL DEFAULT now(),
    updated_at timestamp with time zone NOT NULL DEFAULT now(),
    desired_spec jsonb,
    subtree text NOT NULL DEFAULT 'none'::text,
    rollup jsonb,
    waiting text,
    deletion_policy text NOT NULL DEFAULT ''::text,
    provider_config text NOT NULL DEFAULT ''::text,
    resync_at timestamp with time zone,
    rejected_status jsonb,
    failure_reason text,
    management_policy text NOT NULL DEFAULT ''::text,
    import_id text NOT NULL DEFAULT ''::text,
    spec_source text NOT NULL DEFAULT COALESCE(NULLIF(current_setting('converge.source'::text, true), ''::text), 'apply'::text),
    spec_actor text NOT NULL DEFAULT COALESCE(NULLIF(current_setting('converge.actor'::text, true), ''::text), 'system'::text),
    spec_at timestamp with time zone NOT NULL DEFAULT clock_timestamp(),
    created_event bigint
) WITH (fillfactor=50);
ALTER TABLE resources ADD CONSTRAINT resources_deletion_policy_check CHECK ((deletion_policy = ANY (ARRAY[''::text, 'delete'::text, 'retain'::text])));
ALTER TABLE resources ADD CONSTRAINT resources_import_id CHECK ((length(import_id) <= 1024));
ALTER TABLE resources ADD CONSTRAINT resources_management_policy CHECK ((management_policy = ANY (ARRAY[''::text, 'full'::text, 'observe'::text])));
ALTER TABLE resources ADD CONSTRAINT resources_pkey PRIMARY KEY (id);
ALTER TABLE resources ADD CONSTRAINT resources_subtree_check CHECK ((subtree = ANY (ARRAY['none'::text, 'ready'::text, 'settling'::text, 'pending'::text, 'degraded'::text, 'failed'::text])));
CREATE INDEX resources_created_event ON public.resources USING btree (created_event) WHERE (created_event IS NOT NULL);
CREATE UNIQUE INDEX resources_identity ON public.resources USING btree (namespace, kind, name);
CREATE INDEX resources_labels ON public.resources USING gin (labels jsonb_path_ops);
CREATE INDEX resources_orphaned ON public.resources USING btree (orphaned_until) WHERE (orphaned_until IS NOT NULL);
CREATE INDEX resources_owner ON public.resources USING btree (owner_id) WHERE (owner_id IS NOT NULL);
CREATE INDEX resources_provider_config ON public.resources USING btree (kind, kind_version, provider_config) WHERE (provider_config <> ''::text);
CREATE INDEX resources_resync ON public.resources USING btree (resync_at) WHERE (resync_at IS NOT NULL);
CREATE TRIGGER resources_changes_delete AFTER DELETE ON public.resources REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION converge_on_delete();
CREATE TRIGGER resources_changes_insert AFTER INSERT ON public.resources REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION converge_on_insert();
CREATE TRIGGER resources_changes_update AFTER UPDATE ON public.resources REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION converge_on_update();
CREATE TRIGGER resources_spec_stamp BEFORE UPDATE OF generation ON public.resources FOR EACH ROW WHEN ((new.generation <> old.generation)) EXECUTE FUNCTION converge_stamp_spec();

CREATE TABLE rollout_members (
    rollout_id bigint NOT NULL,
    resource_id bigint NOT NULL,
    "position" integer NOT NULL,
    namespace text NOT NULL,
    name text NOT NULL,
    wave integer NOT NULL DEFAULT 0,
    state text NOT NULL DEFAULT 'pending'::text,
    old_spec jsonb,
    moved_generation bigint,
    moved_reconciles bigint,
    reason text NOT NULL DEFAULT ''::text
);
ALTER TABLE rollout_members ADD CONSTRAINT rollout_members_pkey PRIMARY KEY (rollout_id, resource_id);
ALTER TABLE rollout_members ADD CONSTRAINT rollout_members_rollout_id_fkey FOREIGN KEY (rollout_id) REFERENCES rollouts(id) ON DELETE CASCADE;
ALTER TABLE rollout_members ADD CONSTRAINT rollout_members_state_check CHECK ((state = ANY (ARRAY['pending'::text, 'moving'::text, 'ready'::text, 'failed'::text, 'skipped'::text, 'rolled_back'::text])));
CREATE INDEX rollout_members_wave ON public.rollout_members USING btree (rollout_id, wave, state);

CREATE TABLE rollout_waves (
    rollout_id bigint NOT NULL,
    wave integer NOT NULL,
    selector text NOT NULL,
    state text NOT NULL DEFAULT 'pending'::text,
    not_before timestamp with time zone,
    started_at timestamp with time zone,
    deadline timestamp with time zone,
    finished_at timestamp with time zone
);
ALTER TABLE rollout_waves ADD CONSTRAINT rollout_waves_pkey PRIMARY KEY (rollout_id, wave);
ALTER TABLE rollout_waves ADD CONSTRAINT rollout_waves_rollout_id_fkey FOREIGN KEY (rollout_id) REFERENCES rollouts(id) ON DELETE CASCADE;
ALTER TABLE rollout_waves ADD CONSTRAINT rollout_waves_state_check CHECK ((state = ANY (ARRAY['pending'::text, 'moving'::text, 'done'::text, 'failed'::text])));
ALTER TABLE rollout_waves ADD CONSTRAINT rollout_waves_wave_check CHECK ((wave >= 1));

CREATE TABLE rollouts (
    id bigint NOT NULL GENERATED ALWAYS AS IDENTITY,
    kind text NOT NULL,
    from_version integer NOT NULL,
    to_version integer NOT NULL,
    namespace text NOT NULL DEFAULT ''::text,
    state text NOT NULL DEFAULT 'running'::text,
    reason text NOT NULL DEFAULT ''::text,
    soak_seconds integer NOT NULL,
    max_failures integer NOT NULL,
    max_failure_percent integer NOT NULL,
    ready_timeout_seconds integer NOT NULL,
    actor text NOT NULL,
    lease_owner text,
    lease_until timestamp with time zone,
    created_at timestamp with time zone NOT NULL DEFAULT now(),
    updated_at timestamp with time zone NOT NULL DEFAULT now(),
    finished_at timestamp with time zone,
    mode text NOT NULL DEFAULT 'move'::text
);
ALTER TABLE rollouts ADD CONSTRAINT rollouts_check CHECK (((from_version < to_version) OR ((mode = 'recompose'::text) AND (from_version = to_version))));
ALTER TABLE rollouts ADD CONSTRAINT rollouts_mode_check CHECK ((mode = ANY (ARRAY['move'::text, 'recompose'::text])));
ALTER TABLE rollouts ADD CONSTRAINT rollouts_pkey PRIMARY KEY (id);
ALTER TABLE rollouts ADD CONSTRAINT rollouts_state_check CHECK ((state = ANY (ARRAY['running'::text, 'paused'::text, 'completed'::text, 'failed'::text, 'aborted'::text, 'rolled_back'::text])));
CREATE UNIQUE INDEX rollouts_active ON public.rollouts USING btree (kind) WHERE (state = ANY (ARRAY['running'::text, 'paused'::text, 'failed'::text]));
CREATE INDEX rollouts_running ON public.rollouts USING btree (id) WHERE (state = 'running'::text);

CREATE TABLE secret_keys (
    id text NOT NULL,
    kek_id text NOT NULL,
    wrapped bytea NOT NULL,
    created_at timestamp with time zone NOT NULL DEFAULT now()
);
ALTER TABLE secret_keys ADD CONSTRAINT secret_keys_kek_id_key UNIQUE (kek_id);
ALTER TABLE secret_keys ADD CONSTRAINT secret_keys_pkey PRIMARY KEY (id);

CREATE TABLE spec_revisions (
    resource_id bigint NOT NULL,
    generation bigint NOT NULL,
    kind_version integer NOT NULL,
    spec jsonb NOT NULL,
    source text NOT NULL,
    actor text NOT NULL,
    at timestamp with time zone NOT NULL DEFAULT clock_timestamp()
);
ALTER TABLE spec_revisions ADD CONSTRAINT spec_revisions_pkey PRIMARY KEY (resource_id, generation);

CREATE UNLOGGED TABLE task_records (
    id bigint NOT NULL GENERATED ALWAYS AS IDENTITY,
    resource_id bigint NOT NULL,
    task_id bigint NOT NULL,
    trigger text NOT NULL,
    generation bigint NOT NULL,
    attempt integer NOT NULL,
    worker text NOT NULL,
    session text NOT NULL,
    claimed_at timestamp with time zone NOT NULL,
    dispatched_at timestamp with time zone,
    ended_at timestamp with time zone NOT NULL,
    outcome text NOT NULL,
    discard_reason text NOT NULL,
    failed boolean NOT NULL,
    terminal boolean NOT NULL,
    error_reason text NOT NULL,
    error text NOT NULL,
    children integer NOT NULL,
    truncated boolean NOT NULL,
    input bytea NOT NULL,
    result bytea NOT NULL
) WITH (autovacuum_vacuum_insert_threshold=-1);
ALTER TABLE task_records ADD CONSTRAINT task_records_pkey PRIMARY KEY (id);
CREATE INDEX task_records_resource ON public.task_records USING btree (resource_id, id DESC);

CREATE TABLE tasks (
    id bigint NOT NULL GENERATED ALWAYS AS IDENTITY,
    resource_id bigint NOT NULL,
    trigger text NOT NULL,
    key text NOT NULL DEFAULT ''::text,
    kind text NOT NULL,
    kind_version integer NOT NULL,
    shard smallint NOT NULL,
    generation bigint NOT NULL,
    epoch bigint NOT NULL DEFAULT 0,
    attempts integer NOT NULL DEFAULT 0,
    not_before timestamp with time zone NOT NULL DEFAULT now(),
    claimed_by text,
    claimed_at timestamp with time zone,
    lease_expires_at timestamp with time zone,
    created_at timestamp with time zone NOT NULL DEFAULT now(),
    payload jsonb,
    traceparent text DEFAULT NULLIF(current_setting('converge.traceparent'::text, true), ''::text)
) WITH (autovacuum_analyze_scale_factor=0.05, autovacuum_vacuum_cost_delay=0, autovacuum_vacuum_scale_factor=0, autovacuum_vacuum_threshold=1000, fillfactor=70);
ALTER TABLE tasks ADD CONSTRAINT tasks_identity UNIQUE (resource_id, trigger, key);
ALTER TABLE tasks ADD CONSTRAINT tasks_pkey PRIMARY KEY (id);
ALTER TABLE tasks ADD CONSTRAINT tasks_trigger CHECK (((trigger = ANY (ARRAY['specChange'::text, 'resync'::text, 'childrenSettled'::text, 'deleteRequested'::text, 'reactor'::text, 'rollup'::text, 'gate'::text, 'teardown'::text, 'observe'::text])) OR ((trigger ~~ 'operation:%'::text) AND (length(trigger) > 10))));
CREATE INDEX tasks_claimable ON public.tasks USING btree (kind, kind_version, trigger, not_before) WHERE (claimed_by IS NULL);
CREATE INDEX tasks_internal ON public.tasks USING btree (not_before) WHERE ((claimed_by IS NULL) AND (trigger = ANY (ARRAY['rollup'::text, 'gate'::text, 'teardown'::text])));
CREATE INDEX tasks_leased ON public.tasks USING btree (lease_expires_at) WHERE (claimed_by IS NOT NULL);
CREATE TRIGGER tasks_settled AFTER DELETE ON public.tasks FOR EACH ROW WHEN ((old.trigger = 'childrenSettled'::text)) EXECUTE FUNCTION converge_on_settled();

CREATE OR REPLACE FUNCTION public.converge_blocks_dependents(r resources)
 RETURNS boolean
 LANGUAGE sql
 IMMUTABLE PARALLEL SAFE
AS $function$
  SELECT r.deletion_requested_at IS NOT NULL OR NOT converge_synced(r)
$function$;

CREATE OR REPLACE FUNCTION public.converge_child_counts_drift()
 RETURNS TABLE(owner_id bigint, phase text, kept bigint, counted bigint)
 LANGUAGE sql
 STABLE
AS $function$
  WITH kept AS (
    SELECT k.owner_id, k.phase, sum(k.n) AS n
    FROM (SELECT c.owner_id, c.phase, c.n FROM child_counts c
          UNION ALL SELECT d.owner_id, d.phase, d.n FROM child_count_deltas d) k
    WHERE EXISTS (SELECT 1 FROM resources p WHERE p.id = k.owner_id)
    GROUP BY 1, 2
  )
  SELECT coalesce(k.owner_id, c.owner_id), coalesce(k.phase, c.phase), coalesce(k.n, 0), coalesce(c.n, 0)
  FROM kept k FULL JOIN converge_child_recount() c ON c.owner_id = k.owner_id AND c.phase = k.phase
  WHERE coalesce(k.n, 0) <> coalesce(c.n, 0)
$function$;

CREATE OR REPLACE FUNCTION public.converge_child_counts_fold(owner bigint)
 RETURNS TABLE(phase text, n bigint)
 LANGUAGE sql
AS $function$
  WITH d AS (DELETE FROM child_count_deltas WHERE owner_id = owner RETURNING child_count_deltas.phase, child_count_deltas.n)
  INSERT INTO child_counts (owner_id, phase, n)
  SELECT owner, d.phase, sum(d.n) FROM d GROUP BY d.phase
  ON CONFLICT ON CONSTRAINT child_counts_pkey DO UPDATE SET n = child_counts.n + EXCLUDED.n;
  SELECT c.phase, c.n FROM child_counts c WHERE c.owner_id = owner AND c.n <> 0;
$function$;

CREATE OR REPLACE FUNCTION public.converge_child_counts_repair()
 RETURNS void
 LANGUAGE sql
AS $function$
  LOCK TABLE resources IN SHARE ROW EXCLUSIVE MODE;
  DELETE FROM child_count_deltas;
  DELETE FROM child_counts;
  INSERT INTO child_counts (owner_id, phase, n) SELECT * FROM converge_child_recount();
$function$;

CREATE OR REPLACE FUNCTION public.converge_child_deltas(owners bigint[], phases text[], ns bigint[])
 RETURNS void
 LANGUAGE sql
AS $function$
  WITH x AS (SELECT * FROM unnest(owners, phases, ns) AS x(owner_id, phase, n)),
  kept AS (
    INSERT INTO child_count_deltas (owner_id, phase, n)
    SELECT x.owner_id, x.phase, sum(x.n) FROM x
    WHERE EXISTS (SELECT 1 FROM resources p WHERE p.id = x.owner_id)
    GROUP BY x.owner_id, x.phase HAVING sum(x.n) <> 0
  )
  SELECT converge_wake(array_agg(DISTINCT x.owner_id), 'rollup') FROM x
$function$;

CREATE OR REPLACE FUNCTION public.converge_child_recount()
 RETURNS TABLE(owner_id bigint, phase text, n bigint)
 LANGUAGE sql
 STABLE
AS $function$
  SELECT r.owner_id, converge_phase(r), count(*) FROM resources r
  WHERE EXISTS (SELECT 1 FROM resources p WHERE p.id = r.owner_id)
  GROUP BY 1, 2
$function$;

CREATE OR REPLACE FUNCTION public.converge_claimable(t tasks)
 RETURNS boolean
 LANGUAGE sql
 STABLE PARALLEL SAFE
AS $function$
  SELECT t.claimed_by IS NULL AND t.not_before <= now()
$function$;

CREATE OR REPLACE FUNCTION public.converge_created_event(r resources)
 RETURNS events
 LANGUAGE sql
 STABLE PARALLEL SAFE
AS $function$
  SELECT ROW(r.created_event, r.id, r.namespace, r.kind, r.name, r.generation, 'Normal', 'Created',
             'created at ' || r.kind || ' v' || r.kind_version, r.spec_actor, r.spec_at)::events
$function$;

CREATE OR REPLACE FUNCTION public.converge_due(r resources)
 RETURNS boolean
 LANGUAGE sql
 IMMUTABLE PARALLEL SAFE
AS $function$
  SELECT NOT converge_synced(r) AND converge_hold(r) IS NULL
$function$;

CREATE OR REPLACE FUNCTION public.converge_free_slots(of_kind text, of_version integer)
 RETURNS integer
 LANGUAGE sql
 STABLE PARALLEL SAFE
AS $function$
  SELECT k.max_inflight - (SELECT count(*) FROM tasks c
                           WHERE c.claimed_by IS NOT NULL AND c.kind = k.kind
                             AND c.kind_version = k.kind_version)::int
  FROM kinds k
  WHERE k.kind = of_kind AND k.kind_version = of_version AND k.max_inflight > 0
$function$;

CREATE OR REPLACE FUNCTION public.converge_goes_first(id bigint)
 RETURNS SETOF bigint
 LANGUAGE sql
 STABLE PARALLEL SAFE
AS $function$
  SELECT c.id FROM resources c WHERE c.owner_id = $1 AND NOT c.quarantined
  UNION ALL
  SELECT d.id FROM edges e JOIN resources d ON d.id = e.dependent_id
  WHERE e.dependency_id = $1 AND d.deletion_requested_at IS NOT NULL AND NOT d.quarantined
$function$;

CREATE OR REPLACE FUNCTION public.converge_hold(r resources)
 RETURNS text
 LANGUAGE sql
 IMMUTABLE PARALLEL SAFE
AS $function$
  SELECT CASE
    WHEN r.deletion_requested_at IS NOT NULL THEN 'deleting'
    WHEN r.quarantined THEN 'quarantined'
    WHEN r.failure_terminal AND r.failure_generation = r.generation THEN 'failed'
    WHEN r.orphaned_until IS NOT NULL THEN 'orphaned'
    WHEN r.waiting IS NOT NULL THEN 'waiting'
  END
$function$;

CREATE OR REPLACE FUNCTION public.converge_kind_policy(r resources)
 RETURNS text
 LANGUAGE sql
 STABLE PARALLEL SAFE
AS $function$
  SELECT k.management_policy FROM kinds k WHERE k.kind = r.kind AND k.kind_version = r.kind_version
$function$;

CREATE OR REPLACE FUNCTION public.converge_merge_conditions(old jsonb, new jsonb, at timestamp with time zone)
 RETURNS jsonb
 LANGUAGE sql
 IMMUTABLE PARALLEL SAFE
AS $function$
  SELECT CASE WHEN new = '[]'::jsonb THEN '[]'::jsonb ELSE (
    SELECT coalesce(jsonb_agg(n.c || jsonb_build_object('last_transition_time',
             CASE WHEN o.c IS NOT NULL AND o.c->>'status' = n.c->>'status'
                  THEN o.c->'last_transition_time' ELSE to_jsonb(at) END) ORDER BY n.ord), '[]'::jsonb)
    FROM jsonb_array_elements(new) WITH ORDINALITY AS n(c, ord)
    LEFT JOIN LATERAL (SELECT x AS c FROM jsonb_array_elements(old) AS x
                       WHERE x->>'type' = n.c->>'type' LIMIT 1) AS o ON true)
  END
$function$;

CREATE OR REPLACE FUNCTION public.converge_observable(r resources)
 RETURNS boolean
 LANGUAGE sql
 IMMUTABLE PARALLEL SAFE
AS $function$
  SELECT converge_synced(r) AND converge_hold(r) IS NULL
$function$;

CREATE OR REPLACE FUNCTION public.converge_observed(r resources)
 RETURNS boolean
 LANGUAGE sql
 STABLE PARALLEL SAFE
AS $function$
  SELECT converge_observed(r, converge_kind_policy(r))
$function$;

CREATE OR REPLACE FUNCTION public.converge_observed(r resources, kind_policy text)
 RETURNS boolean
 LANGUAGE sql
 IMMUTABLE PARALLEL SAFE
AS $function$
  SELECT coalesce(nullif(r.management_policy, ''), nullif(kind_policy, ''), 'full') = 'observe'
$function$;

CREATE OR REPLACE FUNCTION public.converge_on_delete()
 RETURNS trigger
 LANGUAGE plpgsql
 SET enable_hashjoin TO 'on'
 SET enable_mergejoin TO 'on'
 SET enable_material TO 'on'
 SET enable_seqscan TO 'on'
AS $function$
BEGIN
  EXECUTE $q$
    INSERT INTO changes (resource_id, type, namespace, kind, kind_version, name, phase,
                         previous_phase, generation, synced_generation, resource_version, message)
    SELECT o.id, 'deleted', o.namespace, o.kind, o.kind_version, o.name, converge_phase(o),
           converge_phase(o), o.generation, o.synced_generation, o.resource_version + 1, NULL
    FROM old_rows o $q$;
  EXECUTE $q$
    SELECT converge_wake(array_agg(DISTINCT x.id), 'teardown')
    FROM (SELECT o.owner_id AS id FROM old_rows o WHERE o.owner_id IS NOT NULL
          UNION SELECT e.dependency_id FROM old_rows o JOIN edges e ON e.dependent_id = o.id) x
    JOIN resources r ON r.id = x.id AND r.deletion_requested_at IS NOT NULL
    HAVING count(*) > 0 $q$;
  EXECUTE $q$
    SELECT converge_child_deltas(array_agg(x.owner_id), array_agg(x.phase), array_agg(x.n))
    FROM (SELECT o.owner_id, converge_phase(o) AS phase, -count(*) AS n
          FROM old_rows o WHERE o.owner_id IS NOT NULL GROUP BY 1, 2) x
    HAVING count(*) > 0 $q$;
  EXECUTE $q$
    WITH counts AS (DELETE FROM child_counts c USING old_rows o WHERE c.owner_id = o.id)
    DELETE FROM child_count_deltas d USING old_rows o WHERE d.owner_id = o.id $q$;
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
  EXECUTE $q$
    INSERT INTO events OVERRIDING SYSTEM VALUE
    SELECT (converge_created_event(o)).* FROM old_rows o WHERE o.created_event IS NOT NULL $q$;
  EXECUTE $q$
    DELETE FROM task_records t USING old_rows o WHERE t.resource_id = o.id $q$;
  RETURN NULL;
END
$function$;

CREATE OR REPLACE FUNCTION public.converge_on_insert()
 RETURNS trigger
 LANGUAGE plpgsql
 SET enable_hashjoin TO 'on'
 SET enable_mergejoin TO 'on'
 SET enable_material TO 'on'
 SET enable_seqscan TO 'on'
AS $function$
BEGIN
  EXECUTE $q$
    INSERT INTO changes (resource_id, type, namespace, kind, kind_version, name, phase,
                         previous_phase, generation, synced_generation, resource_version, message)
    SELECT n.id, 'created', n.namespace, n.kind, n.kind_version, n.name, converge_phase(n),
           NULL, n.generation, n.synced_generation, n.resource_version, n.failure_message
    FROM new_rows n $q$;
  EXECUTE $q$
    SELECT converge_child_deltas(array_agg(x.owner_id), array_agg(x.phase), array_agg(x.n))
    FROM (SELECT n.owner_id, converge_phase(n) AS phase, count(*) AS n
          FROM new_rows n WHERE n.owner_id IS NOT NULL GROUP BY 1, 2) x
    HAVING count(*) > 0 $q$;
  RETURN NULL;
END
$function$;

CREATE OR REPLACE FUNCTION public.converge_on_settled()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
BEGIN
  UPDATE resources SET subtree = 'ready', resource_version = resource_version + 1, updated_at = now()
  WHERE id = OLD.resource_id AND subtree = 'settling';
  RETURN NULL;
END
$function$;

CREATE OR REPLACE FUNCTION public.converge_on_update()
 RETURNS trigger
 LANGUAGE plpgsql
 SET enable_hashjoin TO 'on'
 SET enable_mergejoin TO 'on'
 SET enable_material TO 'on'
 SET enable_seqscan TO 'on'
AS $function$
DECLARE
  respecced bigint[];
BEGIN
  EXECUTE $q$
    INSERT INTO changes (resource_id, type, namespace, kind, kind_version, name, phase,
                         previous_phase, generation, synced_generation, resource_version, message)
    SELECT n.id, 'updated', n.namespace, n.kind, n.kind_version, n.name, converge_phase(n),
           converge_phase(o), n.generation, n.synced_generation, n.resource_version, n.failure_message
    FROM new_rows n JOIN old_rows o ON o.id = n.id
    WHERE converge_phase(n) <> converge_phase(o)
       OR n.generation <> o.generation
       OR n.synced_generation <> o.synced_generation
       OR n.kind_version <> o.kind_version
       OR n.failure_message IS DISTINCT FROM o.failure_message
       OR n.waiting IS DISTINCT FROM o.waiting $q$;
  EXECUTE $q$
    SELECT converge_child_deltas(array_agg(x.owner_id), array_agg(x.phase), array_agg(x.n))
    FROM (SELECT m.owner_id, m.phase, sum(m.delta) AS n
          FROM new_rows n JOIN old_rows o ON o.id = n.id
          CROSS JOIN LATERAL (VALUES (o.owner_id, converge_phase(o), -1), (n.owner_id, converge_phase(n), 1)) m(owner_id, phase, delta)
          WHERE coalesce(n.owner_id, o.owner_id) IS NOT NULL AND m.owner_id IS NOT NULL
            AND (converge_phase(n) <> converge_phase(o) OR n.owner_id IS DISTINCT FROM o.owner_id)
          GROUP BY 1, 2) x
    HAVING count(*) > 0 $q$;
  EXECUTE $q$
    SELECT converge_wake(array_agg(DISTINCT e.dependent_id), 'gate')
    FROM new_rows n JOIN old_rows o ON o.id = n.id
    JOIN edges e ON e.dependency_id = n.id
    WHERE (converge_synced(n)
           AND (n.synced_generation <> o.synced_generation OR n.status IS DISTINCT FROM o.status))
       OR converge_phase(n) <> converge_phase(o)
    HAVING count(*) > 0 $q$;
  EXECUTE $q$
    SELECT array_agg(n.id) FROM new_rows n JOIN old_rows o ON o.id = n.id
    WHERE n.generation <> o.generation $q$ INTO respecced;
  IF respecced IS NOT NULL THEN
    EXECUTE $q$
      INSERT INTO spec_revisions
      SELECT (converge_revision(o)).* FROM old_rows o JOIN new_rows n ON n.id = o.id
      WHERE n.generation <> o.generation
      ON CONFLICT (resource_id, generation) DO UPDATE SET spec = EXCLUDED.spec, kind_version = EXCLUDED.kind_version,
          source = EXCLUDED.source, actor = EXCLUDED.actor, at = EXCLUDED.at $q$;
    EXECUTE $q$
      INSERT INTO events OVERRIDING SYSTEM VALUE
      SELECT (converge_created_event(o)).* FROM old_rows o JOIN new_rows n ON n.id = o.id
      WHERE n.generation <> o.generation AND o.created_event IS NOT NULL $q$;
    EXECUTE $q$
      DELETE FROM spec_revisions s
      WHERE s.resource_id = ANY($1)
        AND s.generation <= (SELECT r.generation FROM resources r WHERE r.id = s.resource_id)
            - coalesce(nullif(current_setting('converge.history_keep', true), '')::int, 50) $q$
      USING respecced;
  END IF;
  RETURN NULL;
END
$function$;

CREATE OR REPLACE FUNCTION public.converge_phase(r resources)
 RETURNS text
 LANGUAGE sql
 IMMUTABLE PARALLEL SAFE
AS $function$
  SELECT CASE converge_hold(r)
    WHEN 'deleting' THEN 'Deleting'
    WHEN 'quarantined' THEN 'Quarantined'
    WHEN 'failed' THEN 'Failed'
    WHEN 'orphaned' THEN 'Orphaned'
    ELSE CASE
      WHEN NOT converge_synced(r) THEN 'Reconciling'
      WHEN r.subtree = 'failed' THEN 'Failed'
      WHEN NOT r.health_ok OR r.subtree = 'degraded' THEN 'Degraded'
      WHEN r.subtree IN ('none', 'ready') THEN 'Ready'
      ELSE 'Reconciling'
    END
  END
$function$;

CREATE OR REPLACE FUNCTION public.converge_recompose(ids bigint[])
 RETURNS void
 LANGUAGE sql
AS $function$
  INSERT INTO tasks (resource_id, trigger, kind, kind_version, shard, generation)
  SELECT r.id, converge_reconcile_trigger(r, 'specChange'), r.kind, r.kind_version, r.shard, r.generation
  FROM resources r
  WHERE r.id = ANY(ids) AND converge_hold(r) IS NULL
  ORDER BY r.id
  ON CONFLICT (resource_id, trigger, key) DO NOTHING
$function$;

CREATE OR REPLACE FUNCTION public.converge_reconcile_trigger(r resources, managed text)
 RETURNS text
 LANGUAGE sql
 STABLE PARALLEL SAFE
AS $function$
  SELECT converge_reconcile_trigger(r, converge_kind_policy(r), managed)
$function$;

CREATE OR REPLACE FUNCTION public.converge_reconcile_trigger(r resources, kind_policy text, managed text)
 RETURNS text
 LANGUAGE sql
 IMMUTABLE PARALLEL SAFE
AS $function$
  SELECT CASE WHEN converge_observed(r, kind_policy) THEN 'observe' ELSE managed END
$function$;

CREATE OR REPLACE FUNCTION public.converge_revision(r resources)
 RETURNS spec_revisions
 LANGUAGE sql
 IMMUTABLE PARALLEL SAFE
AS $function$
  SELECT ROW(r.id, r.generation, r.kind_version, r.spec, r.spec_source, r.spec_actor, r.spec_at)::spec_revisions
$function$;

CREATE OR REPLACE FUNCTION public.converge_revisions(r resources, keep integer)
 RETURNS SETOF spec_revisions
 LANGUAGE sql
 STABLE PARALLEL SAFE
AS $function$
  SELECT s.* FROM spec_revisions s
  WHERE s.resource_id = r.id AND s.generation > r.generation - keep AND s.generation < r.generation
  UNION ALL
  SELECT (converge_revision(r)).* WHERE keep > 0
$function$;

CREATE OR REPLACE FUNCTION public.converge_stamp_spec()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
BEGIN
  NEW.spec_source := coalesce(nullif(current_setting('converge.source', true), ''), 'apply');
  NEW.spec_actor := coalesce(nullif(current_setting('converge.actor', true), ''), 'system');
  NEW.spec_at := clock_timestamp();
  NEW.created_event := NULL;
  RETURN NEW;
END
$function$;

CREATE OR REPLACE FUNCTION public.converge_synced(r resources)
 RETURNS boolean
 LANGUAGE sql
 IMMUTABLE PARALLEL SAFE
AS $function$
  SELECT r.synced_generation >= r.generation
$function$;

CREATE OR REPLACE FUNCTION public.converge_waits_for(r resources, t tasks)
 RETURNS text
 LANGUAGE sql
 STABLE PARALLEL SAFE
AS $function$
  SELECT CASE
    WHEN converge_hold(r) IS NOT NULL AND (converge_hold(r) <> 'deleting' OR t.id IS NULL) THEN converge_hold(r)
    WHEN t.id IS NULL THEN CASE WHEN converge_due(r) THEN 'unqueued' END
    WHEN t.claimed_by IS NOT NULL THEN 'running'
    WHEN t.not_before > now() THEN 'backoff'
    WHEN converge_free_slots(t.kind, t.kind_version) <= 0 THEN 'capped'
    ELSE 'worker'
  END
$function$;

CREATE OR REPLACE FUNCTION public.converge_wake(ids bigint[], trig text)
 RETURNS void
 LANGUAGE sql
AS $function$
  INSERT INTO tasks (resource_id, trigger, kind, kind_version, shard, generation)
  SELECT r.id, trig, r.kind, r.kind_version, r.shard, 1
  FROM resources r WHERE r.id = ANY(ids)
  ORDER BY r.id
  ON CONFLICT (resource_id, trigger, key) DO UPDATE
      SET generation = tasks.generation + 1, not_before = least(tasks.not_before, now()),
          traceparent = coalesce(EXCLUDED.traceparent, tasks.traceparent)
$function$;
