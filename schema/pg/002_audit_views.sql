-- 002_audit_views.sql - the public audit schema on PostgreSQL: the views of the SQLite schema
-- (schema/003_audit_views.sql, audit_scalings as amended by 007, over the tables of 009) with
-- the same names, columns and values, over the tables of 001_tables.sql, and the read-only
-- role POST /v1/sql runs its queries as.
--
-- Values as SQLite gives them: `*_utc` text 'YYYY-MM-DDTHH:MM:SS.sssZ'; flags and comparisons
-- 0 / 1 (BIGINT, not boolean); sums BIGINT; the evaluated figures NUMERIC holding the number's
-- text as stored (POST /v1/sql renders one without a point or an exponent as an integer, any
-- other as a real, as SQLite's json_extract types them); `parallelism` and `evaluated_json`
-- compact JSON text with the keys in the same order; the rows of aggregates in `ord` order.

-- '2025-11-29T10:00:00.000Z' of epoch milliseconds, as strftime('%Y-%m-%dT%H:%M:%fZ') writes
-- it (integer arithmetic: no rounding of a float, no dependence on the session's time zone).
CREATE FUNCTION gov_utc(ms BIGINT) RETURNS TEXT
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN to_char(TIMESTAMP '1970-01-01 00:00:00' + ms * INTERVAL '1 millisecond',
               'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"');

-- Figure i (0-based, schema 009's order) of a vertex: from evaluated_json by name when the
-- row kept it, else from the figures array; NULL when absent, null, or not a number.
CREATE FUNCTION gov_figure(figures TEXT, evaluated_json TEXT, i INT, name TEXT) RETURNS NUMERIC
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN CASE WHEN evaluated_json IS NOT NULL
            THEN CASE WHEN json_typeof(evaluated_json::json -> name) = 'number'
                      THEN (evaluated_json::json ->> name)::numeric END
            ELSE CASE WHEN json_typeof(figures::json -> i) = 'number'
                      THEN (figures::json ->> i)::numeric END END;

-- The evaluated object of a figures array: each present element (not false) by name, its
-- text as stored, in the array's order.
CREATE FUNCTION gov_figures_json(figures TEXT) RETURNS TEXT
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN (SELECT '{' || coalesce(string_agg(to_json(n.name)::text || ':' || (figures::json -> (n.i - 1)::int)::text,
                                          ',' ORDER BY n.i), '') || '}'
          FROM unnest(ARRAY['load', 'true_processing_rate', 'target_data_rate',
                            'catch_up_data_rate', 'lag', 'scale_up_rate_threshold',
                            'scale_down_rate_threshold', 'expected_processing_rate',
                            'parallelism', 'max_parallelism', 'num_source_partitions',
                            'busy_max_avg_ratio', 'hot_key_share', 'key_rate_bound',
                            'salting_fanout']) WITH ORDINALITY AS n(name, i)
         WHERE (figures::json -> (n.i - 1)::int) IS NOT NULL
           AND (figures::json -> (n.i - 1)::int)::text <> 'false');

-- One row per decision.
CREATE VIEW audit_decisions AS
SELECT d.id AS id,
       d.job AS job,
       d.at AS at,
       gov_utc(d.at) AS at_utc,
       d.action AS action,
       d.reason AS reason,
       d.execute AS execute,
       CASE WHEN d.message_parts IS NULL THEN d.message
            ELSE d.message || coalesce((SELECT string_agg(v.message, '; ' ORDER BY v.ord)
                                          FROM vertex_decisions v
                                         WHERE v.decision_id = d.id
                                           AND (d.message_parts >> v.ord::int) & 1 = 1), '') END AS message,
       d.policy_revision AS policy_revision,
       (SELECT c.hash FROM decision_configs c WHERE c.id = d.config_id) AS config_hash,
       d.created_at AS created_at,
       CASE WHEN d.decision_json IS NOT NULL THEN (d.decision_json::json -> 'parallelism')::text
            ELSE (SELECT '{' || coalesce(string_agg(to_json(v.vertex)::text || ':' || v.target, ','
                                                    ORDER BY v.ord), '') || '}'
                    FROM vertex_decisions v WHERE v.decision_id = d.id) END AS parallelism
FROM decisions d;

-- One row per vertex of each decision (every vertex, changed or not), with the evaluated
-- figures the decision was made from (NULL when undefined or infinite).
CREATE VIEW audit_vertex_decisions AS
SELECT v.decision_id AS decision_id,
       d.job AS job,
       d.at AS at,
       gov_utc(d.at) AS at_utc,
       v.ord AS ord,
       v.vertex AS vertex,
       v.current AS current,
       v.raw_target AS raw_target,
       v.target AS target,
       v.reason AS reason,
       v.constraints AS constraints,
       v.message AS message,
       gov_figure(v.figures, v.evaluated_json, 0, 'load') AS load,
       gov_figure(v.figures, v.evaluated_json, 1, 'true_processing_rate') AS true_processing_rate,
       gov_figure(v.figures, v.evaluated_json, 2, 'target_data_rate') AS target_data_rate,
       gov_figure(v.figures, v.evaluated_json, 3, 'catch_up_data_rate') AS catch_up_data_rate,
       gov_figure(v.figures, v.evaluated_json, 4, 'lag') AS lag,
       gov_figure(v.figures, v.evaluated_json, 5, 'scale_up_rate_threshold') AS scale_up_rate_threshold,
       gov_figure(v.figures, v.evaluated_json, 6, 'scale_down_rate_threshold') AS scale_down_rate_threshold,
       gov_figure(v.figures, v.evaluated_json, 7, 'expected_processing_rate') AS expected_processing_rate,
       gov_figure(v.figures, v.evaluated_json, 11, 'busy_max_avg_ratio') AS busy_max_avg_ratio,
       gov_figure(v.figures, v.evaluated_json, 12, 'hot_key_share') AS hot_key_share,
       gov_figure(v.figures, v.evaluated_json, 13, 'key_rate_bound') AS key_rate_bound,
       gov_figure(v.figures, v.evaluated_json, 14, 'salting_fanout') AS salting_fanout,
       coalesce(v.evaluated_json, gov_figures_json(v.figures)) AS evaluated_json
FROM vertex_decisions v
JOIN decisions d ON d.id = v.decision_id;

-- Executed scalings: decided (execute = 1, action not NO_CHANGE), applied or not (007).
CREATE VIEW audit_scalings AS
SELECT d.id AS decision_id,
       d.job AS job,
       d.at AS at,
       gov_utc(d.at) AS at_utc,
       d.action AS action,
       d.reason AS reason,
       (SELECT a.message FROM audit_decisions a WHERE a.id = d.id) AS message,
       (SELECT string_agg(v.vertex || ' ' || v.current || '->' || v.target, ', ' ORDER BY v.ord)
          FROM vertex_decisions v
         WHERE v.decision_id = d.id AND v.target <> v.current) AS changes,
       (SELECT sum(v.current)::bigint FROM vertex_decisions v WHERE v.decision_id = d.id)
           AS subtasks_before,
       (SELECT sum(v.target)::bigint FROM vertex_decisions v WHERE v.decision_id = d.id)
           AS subtasks_after,
       d.policy_revision AS policy_revision,
       (SELECT c.hash FROM decision_configs c WHERE c.id = d.config_id) AS config_hash,
       (ap.reason = 'ScalingApplied')::int::bigint AS applied,
       ap.decision_id AS applied_decision_id
FROM decisions d
-- the outcome of the scaling: the first ScalingApplied / ScalingNotApplied after it and no
-- later than the job's next executed scaling (007)
LEFT JOIN LATERAL (
    SELECT e.reason, e.decision_id
      FROM events e
     WHERE e.job = d.job AND e.reason IN ('ScalingApplied', 'ScalingNotApplied')
       AND e.decision_id > d.id
       AND e.decision_id <= coalesce((SELECT min(n.id) FROM decisions n
                                       WHERE n.job = d.job AND n.id > d.id
                                         AND n.execute = 1 AND n.action <> 'NO_CHANGE'),
                                     e.decision_id)
     ORDER BY e.decision_id LIMIT 1) ap ON true
WHERE d.execute = 1 AND d.action <> 'NO_CHANGE';

-- Events raised by decisions; suppressed = 1: a repeat that was deduplicated.
CREATE VIEW audit_events AS
SELECT e.id AS id,
       e.job AS job,
       e.decision_id AS decision_id,
       e.at AS at,
       gov_utc(e.at) AS at_utc,
       e.type AS type,
       e.reason AS reason,
       e.message AS message,
       e.count AS count,
       e.suppressed AS suppressed
FROM events e;

-- One row per plugin hook call of a decision.
CREATE VIEW audit_plugin_calls AS
SELECT p.decision_id AS decision_id,
       d.job AS job,
       d.at AS at,
       gov_utc(d.at) AS at_utc,
       p.plugin AS plugin,
       p.hook AS hook,
       p.outcome AS outcome,
       p.duration_us AS duration_us,
       p.error AS error,
       d.policy_revision AS policy_revision
FROM plugin_calls p
JOIN decisions d ON d.id = p.decision_id;

-- Each revision of the policies directory and its files.
CREATE VIEW audit_policy_revisions AS
SELECT r.revision AS revision,
       r.loaded_at AS loaded_at,
       gov_utc(r.loaded_at) AS loaded_utc,
       r.files_json AS files_json
FROM policy_revisions r;

-- Every change of a job's stored config layer (PUT; DELETE: config_json NULL).
CREATE VIEW audit_config_changes AS
SELECT c.id AS id,
       c.job AS job,
       c.at AS at,
       gov_utc(c.at) AS at_utc,
       CASE WHEN c.config_json IS NULL THEN 'DELETE' ELSE 'PUT' END AS change,
       c.config_json AS config_json
FROM config_changes c;

-- The effective options of each decision, one row per option in the stored order (json, not
-- jsonb, keeps it). Every value is stored as a string, so `value` is text as on SQLite.
CREATE VIEW audit_decision_options AS
SELECT d.id AS decision_id,
       d.job AS job,
       o.key AS key,
       o.value AS value
FROM decisions d
JOIN decision_configs c ON c.id = d.config_id
CROSS JOIN LATERAL json_each_text(c.config_json::json) AS o(key, value);

-- The role POST /v1/sql runs each query as (SET LOCAL ROLE governor_audit): it reads the
-- audit views and nothing else. Creating it needs CREATEROLE; without it, an administrator
-- creates it beforehand (README, "Running several replicas on PostgreSQL"):
--     CREATE ROLE governor_audit NOLOGIN; GRANT governor_audit TO <governor's user>;
DO $$
DECLARE
    fix TEXT := format('as a database administrator, once: CREATE ROLE governor_audit NOLOGIN; '
                       'GRANT governor_audit TO %I;', current_user);
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'governor_audit') THEN
        BEGIN
            CREATE ROLE governor_audit NOLOGIN;
        EXCEPTION WHEN insufficient_privilege THEN
            RAISE EXCEPTION 'the role governor_audit (POST /v1/sql runs as it) is missing and '
                            'the user % may not create it (no CREATEROLE)', current_user
                USING HINT = fix;
        END;
    END IF;
    IF NOT pg_has_role(current_user, 'governor_audit', 'MEMBER') THEN
        BEGIN
            EXECUTE format('GRANT governor_audit TO %I', current_user);
        EXCEPTION WHEN insufficient_privilege THEN
            RAISE EXCEPTION 'the user % is not a member of the role governor_audit (POST /v1/sql '
                            'runs as it) and may not grant it to itself', current_user
                USING HINT = fix;
        END;
    END IF;
    IF NOT has_schema_privilege('governor_audit', current_schema(), 'USAGE') THEN
        EXECUTE format('GRANT USAGE ON SCHEMA %I TO governor_audit', current_schema());
    END IF;
END
$$;
GRANT SELECT ON audit_decisions, audit_vertex_decisions, audit_scalings, audit_events,
                audit_plugin_calls, audit_policy_revisions, audit_config_changes,
                audit_decision_options TO governor_audit;
