-- 003_audit_views.sql - the public audit schema (README, Audit views): views with stable names and
-- columns over the tables of 001, documented in the README ("Audit with SQL"). Query them
-- with POST /v1/sql or the sqlite3 shell. New columns may be added at the end of a view;
-- none is renamed or removed. Times: `at` columns are epoch milliseconds, `*_utc` columns
-- the same instant as ISO 8601 text in UTC (2025-11-29T10:00:00.000Z).

-- Audit retention deletes by decision id; these keep those deletes (and the views' joins)
-- off full scans.
CREATE INDEX IF NOT EXISTS events_decision ON events (decision_id);
CREATE INDEX IF NOT EXISTS plugin_calls_decision ON plugin_calls (decision_id);

-- One row per decision.
CREATE VIEW audit_decisions AS
SELECT d.id AS id,
       d.job AS job,
       d.at AS at,
       strftime('%Y-%m-%dT%H:%M:%fZ', d.at / 1000.0, 'unixepoch') AS at_utc,
       d.action AS action,
       d.reason AS reason,
       d.execute AS execute,
       d.message AS message,
       d.policy_revision AS policy_revision,
       d.config_hash AS config_hash,
       d.created_at AS created_at,
       json_extract(d.decision_json, '$.parallelism') AS parallelism
FROM decisions d;

-- One row per vertex of each decision (every vertex, changed or not), with the evaluated
-- figures the decision was made from (NULL when undefined or infinite).
CREATE VIEW audit_vertex_decisions AS
SELECT v.decision_id AS decision_id,
       d.job AS job,
       d.at AS at,
       strftime('%Y-%m-%dT%H:%M:%fZ', d.at / 1000.0, 'unixepoch') AS at_utc,
       v.ord AS ord,
       v.vertex AS vertex,
       v.current AS current,
       v.raw_target AS raw_target,
       v.target AS target,
       v.reason AS reason,
       v.constraints AS constraints,
       v.message AS message,
       json_extract(v.evaluated_json, '$.load') AS load,
       json_extract(v.evaluated_json, '$.true_processing_rate') AS true_processing_rate,
       json_extract(v.evaluated_json, '$.target_data_rate') AS target_data_rate,
       json_extract(v.evaluated_json, '$.catch_up_data_rate') AS catch_up_data_rate,
       json_extract(v.evaluated_json, '$.lag') AS lag,
       json_extract(v.evaluated_json, '$.scale_up_rate_threshold') AS scale_up_rate_threshold,
       json_extract(v.evaluated_json, '$.scale_down_rate_threshold') AS scale_down_rate_threshold,
       json_extract(v.evaluated_json, '$.expected_processing_rate') AS expected_processing_rate,
       json_extract(v.evaluated_json, '$.busy_max_avg_ratio') AS busy_max_avg_ratio,
       json_extract(v.evaluated_json, '$.hot_key_share') AS hot_key_share,
       json_extract(v.evaluated_json, '$.key_rate_bound') AS key_rate_bound,
       json_extract(v.evaluated_json, '$.salting_fanout') AS salting_fanout,
       v.evaluated_json AS evaluated_json
FROM vertex_decisions v
JOIN decisions d ON d.id = v.decision_id;

-- Executed scalings only: decisions the client was told to apply (execute = 1) that change
-- something (action is not NO_CHANGE), with each changed vertex's move.
CREATE VIEW audit_scalings AS
SELECT d.id AS decision_id,
       d.job AS job,
       d.at AS at,
       strftime('%Y-%m-%dT%H:%M:%fZ', d.at / 1000.0, 'unixepoch') AS at_utc,
       d.action AS action,
       d.reason AS reason,
       d.message AS message,
       (SELECT group_concat(v.vertex || ' ' || v.current || '->' || v.target, ', ')
          FROM vertex_decisions v
         WHERE v.decision_id = d.id AND v.target <> v.current) AS changes,
       (SELECT sum(v.current) FROM vertex_decisions v WHERE v.decision_id = d.id)
           AS subtasks_before,
       (SELECT sum(v.target) FROM vertex_decisions v WHERE v.decision_id = d.id)
           AS subtasks_after,
       d.policy_revision AS policy_revision,
       d.config_hash AS config_hash
FROM decisions d
WHERE d.execute = 1 AND d.action <> 'NO_CHANGE';

-- Events (core/README.md, Events) raised by decisions; suppressed = 1: a repeat that was deduplicated.
CREATE VIEW audit_events AS
SELECT e.id AS id,
       e.job AS job,
       e.decision_id AS decision_id,
       e.at AS at,
       strftime('%Y-%m-%dT%H:%M:%fZ', e.at / 1000.0, 'unixepoch') AS at_utc,
       e.type AS type,
       e.reason AS reason,
       e.message AS message,
       e.count AS count,
       e.suppressed AS suppressed
FROM events e;

-- One row per plugin hook call of a decision (written by the plugin host).
CREATE VIEW audit_plugin_calls AS
SELECT p.decision_id AS decision_id,
       d.job AS job,
       d.at AS at,
       strftime('%Y-%m-%dT%H:%M:%fZ', d.at / 1000.0, 'unixepoch') AS at_utc,
       p.plugin AS plugin,
       p.hook AS hook,
       p.outcome AS outcome,
       p.duration_us AS duration_us,
       p.error AS error,
       d.policy_revision AS policy_revision
FROM plugin_calls p
JOIN decisions d ON d.id = p.decision_id;

-- Each revision of the policies directory (the hash stamped on decisions) and its files.
CREATE VIEW audit_policy_revisions AS
SELECT r.revision AS revision,
       r.loaded_at AS loaded_at,
       strftime('%Y-%m-%dT%H:%M:%fZ', r.loaded_at / 1000.0, 'unixepoch') AS loaded_utc,
       r.files_json AS files_json
FROM policy_revisions r;

-- Every change of a job's stored config layer: PUT /v1/jobs/{job}/config (the new layer)
-- and DELETE /v1/jobs/{job} (config_json NULL). `at` is the server clock.
CREATE VIEW audit_config_changes AS
SELECT c.id AS id,
       c.job AS job,
       c.at AS at,
       strftime('%Y-%m-%dT%H:%M:%fZ', c.at / 1000.0, 'unixepoch') AS at_utc,
       CASE WHEN c.config_json IS NULL THEN 'DELETE' ELSE 'PUT' END AS change,
       c.config_json AS config_json
FROM config_changes c;

-- The effective options of each decision, one row per option (built-in < server < job <
-- request, as resolved for that decision).
CREATE VIEW audit_decision_options AS
SELECT d.id AS decision_id,
       d.job AS job,
       o.key AS key,
       o.value AS value
FROM decisions d, json_each(d.config_json) o;
