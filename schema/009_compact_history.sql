-- 009_compact_history.sql - a decision's history in about a tenth of the bytes (README, Storage), with
-- nothing lost that audit, GET /v1/jobs/{job}/decisions, GET /v1/decisions/{id}, retries and
-- replay against history read. Before it, every decision row repeated the effective options
-- (config_json, ~3.8 KB), the whole response (decision_json, ~2-4 KB, repeating the vertex and
-- event rows) and the request as sent; each vertex row its figures with their names. Now:
--   decision_configs    the effective options once per distinct set (config_hash + text);
--                       decisions.config_id points at them. Retention deletes a set with the
--                       last decision that used it.
--   decisions.input     the request, packed (server/store/pack.h): the JSON text without its
--                       whitespace, the request's frequent names one byte each.
--   decisions.message   the decision's message, or when it ends with messages of its
--                       vertices joined by "; " (as the core writes a scaling's), what comes
--                       before them, and message_parts the bitmask of those vertices' ord.
--   decisions.response  only the response members no row holds (e.g. {"warnings":[]});
--                       the response is rebuilt from the decision row, its vertex rows and
--                       its events (server/store/read.c), member for member as it was sent.
--   vertex_decisions    flags (1 excluded, 2 outside_bounds) and figures: the evaluated
--                       figures as a JSON array of their values in a fixed order (pack.h),
--                       each value's text kept; without a rowid (the key is the primary key).
-- A row converted from an older form keeps its old text where the compact form would not
-- give it back exactly: decisions.decision_json (the response; the C step after this SQL
-- clears it where the rebuild is exact) and vertex_decisions.evaluated_json (NULL when the
-- figures array holds it). The audit views keep their names, columns and answers.
-- gov_pack_input and gov_pack_figures are SQL functions of the server's connection (sqlite.c).

CREATE TABLE decision_configs (
    id          INTEGER PRIMARY KEY,
    hash        TEXT NOT NULL,
    config_json TEXT NOT NULL
);
CREATE INDEX decision_configs_hash ON decision_configs (hash);

INSERT INTO decision_configs (hash, config_json)
SELECT config_hash, config_json FROM decisions GROUP BY config_hash, config_json ORDER BY min(id);

CREATE TABLE decisions_009 (
    id              INTEGER PRIMARY KEY,
    job             TEXT NOT NULL,
    at              INTEGER NOT NULL,
    action          TEXT NOT NULL,
    reason          TEXT NOT NULL,
    execute         INTEGER NOT NULL,
    message         TEXT,
    message_parts   INTEGER,
    input           BLOB NOT NULL,
    config_id       INTEGER NOT NULL REFERENCES decision_configs (id),
    response        TEXT,
    policy_revision TEXT NOT NULL,
    created_at      INTEGER NOT NULL,
    decision_json   TEXT
);

INSERT INTO decisions_009 (id, job, at, action, reason, execute, message, input, config_id,
                           response, policy_revision, created_at, decision_json)
SELECT d.id, d.job, d.at, d.action, d.reason, d.execute, d.message, gov_pack_input(d.input_json),
       (SELECT c.id FROM decision_configs c
         WHERE c.hash = d.config_hash AND c.config_json = d.config_json),
       nullif(json_remove(d.decision_json, '$.job', '$.at', '$.action', '$.execute', '$.reason',
                          '$.message', '$.parallelism', '$.vertices', '$.events',
                          '$.policy_revision', '$.config_hash'), '{}'),
       d.policy_revision, d.created_at, d.decision_json
FROM decisions d;

CREATE TABLE vertex_decisions_009 (
    decision_id    INTEGER NOT NULL REFERENCES decisions (id),
    ord            INTEGER NOT NULL,
    vertex         TEXT NOT NULL,
    current        INTEGER NOT NULL,
    raw_target     INTEGER NOT NULL,
    target         INTEGER NOT NULL,
    reason         TEXT NOT NULL,
    constraints    TEXT NOT NULL,
    message        TEXT,
    flags          INTEGER,
    figures        TEXT,
    evaluated_json TEXT,
    PRIMARY KEY (decision_id, ord)
) WITHOUT ROWID;

INSERT INTO vertex_decisions_009 (decision_id, ord, vertex, current, raw_target, target, reason,
                                  constraints, message, flags, figures, evaluated_json)
SELECT v.decision_id, v.ord, v.vertex, v.current, v.raw_target, v.target, v.reason,
       v.constraints, v.message,
       (SELECT CASE json_extract(d.decision_json, '$.vertices[' || v.ord || '].excluded',
                                 '$.vertices[' || v.ord || '].outside_bounds')
                    WHEN '[false,false]' THEN 0 WHEN '[true,false]' THEN 1
                    WHEN '[false,true]' THEN 2 WHEN '[true,true]' THEN 3 END
          FROM decisions d WHERE d.id = v.decision_id),
       gov_pack_figures(v.evaluated_json),
       NULL
FROM vertex_decisions v;
UPDATE vertex_decisions_009 AS n SET evaluated_json =
    (SELECT v.evaluated_json FROM vertex_decisions v
      WHERE v.decision_id = n.decision_id AND v.ord = n.ord)
WHERE n.figures IS NULL;

DROP VIEW IF EXISTS audit_decisions;
DROP VIEW IF EXISTS audit_vertex_decisions;
DROP VIEW IF EXISTS audit_scalings;
DROP VIEW IF EXISTS audit_plugin_calls;
DROP VIEW IF EXISTS audit_decision_options;
DROP TABLE vertex_decisions;
DROP TABLE decisions;
ALTER TABLE decisions_009 RENAME TO decisions;
ALTER TABLE vertex_decisions_009 RENAME TO vertex_decisions;
CREATE INDEX decisions_job_at ON decisions (job, at, id);
CREATE INDEX decisions_config ON decisions (config_id);
-- audit_scalings looks for a job's next executed scaling after each one: only those rows.
CREATE INDEX decisions_scalings ON decisions (job, id) WHERE execute = 1 AND action <> 'NO_CHANGE';

-- The views of 003 and 007, over the new tables: the same names, columns and answers.

CREATE VIEW audit_decisions AS
SELECT d.id AS id,
       d.job AS job,
       d.at AS at,
       strftime('%Y-%m-%dT%H:%M:%fZ', d.at / 1000.0, 'unixepoch') AS at_utc,
       d.action AS action,
       d.reason AS reason,
       d.execute AS execute,
       CASE WHEN d.message_parts IS NULL THEN d.message
            ELSE d.message || coalesce((SELECT group_concat(v.message, '; ')
                                          FROM vertex_decisions v
                                         WHERE v.decision_id = d.id
                                           AND (d.message_parts >> v.ord) & 1), '') END AS message,
       d.policy_revision AS policy_revision,
       (SELECT c.hash FROM decision_configs c WHERE c.id = d.config_id) AS config_hash,
       d.created_at AS created_at,
       CASE WHEN d.decision_json IS NOT NULL THEN json_extract(d.decision_json, '$.parallelism')
            ELSE (SELECT json_group_object(v.vertex, v.target) FROM vertex_decisions v
                   WHERE v.decision_id = d.id) END AS parallelism
FROM decisions d;

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
       CASE WHEN v.evaluated_json IS NOT NULL THEN json_extract(v.evaluated_json, '$.load')
            ELSE nullif(v.figures -> '$[0]', 'false') ->> '$' END AS load,
       CASE WHEN v.evaluated_json IS NOT NULL THEN json_extract(v.evaluated_json, '$.true_processing_rate')
            ELSE nullif(v.figures -> '$[1]', 'false') ->> '$' END AS true_processing_rate,
       CASE WHEN v.evaluated_json IS NOT NULL THEN json_extract(v.evaluated_json, '$.target_data_rate')
            ELSE nullif(v.figures -> '$[2]', 'false') ->> '$' END AS target_data_rate,
       CASE WHEN v.evaluated_json IS NOT NULL THEN json_extract(v.evaluated_json, '$.catch_up_data_rate')
            ELSE nullif(v.figures -> '$[3]', 'false') ->> '$' END AS catch_up_data_rate,
       CASE WHEN v.evaluated_json IS NOT NULL THEN json_extract(v.evaluated_json, '$.lag')
            ELSE nullif(v.figures -> '$[4]', 'false') ->> '$' END AS lag,
       CASE WHEN v.evaluated_json IS NOT NULL THEN json_extract(v.evaluated_json, '$.scale_up_rate_threshold')
            ELSE nullif(v.figures -> '$[5]', 'false') ->> '$' END AS scale_up_rate_threshold,
       CASE WHEN v.evaluated_json IS NOT NULL THEN json_extract(v.evaluated_json, '$.scale_down_rate_threshold')
            ELSE nullif(v.figures -> '$[6]', 'false') ->> '$' END AS scale_down_rate_threshold,
       CASE WHEN v.evaluated_json IS NOT NULL THEN json_extract(v.evaluated_json, '$.expected_processing_rate')
            ELSE nullif(v.figures -> '$[7]', 'false') ->> '$' END AS expected_processing_rate,
       CASE WHEN v.evaluated_json IS NOT NULL THEN json_extract(v.evaluated_json, '$.busy_max_avg_ratio')
            ELSE nullif(v.figures -> '$[11]', 'false') ->> '$' END AS busy_max_avg_ratio,
       CASE WHEN v.evaluated_json IS NOT NULL THEN json_extract(v.evaluated_json, '$.hot_key_share')
            ELSE nullif(v.figures -> '$[12]', 'false') ->> '$' END AS hot_key_share,
       CASE WHEN v.evaluated_json IS NOT NULL THEN json_extract(v.evaluated_json, '$.key_rate_bound')
            ELSE nullif(v.figures -> '$[13]', 'false') ->> '$' END AS key_rate_bound,
       CASE WHEN v.evaluated_json IS NOT NULL THEN json_extract(v.evaluated_json, '$.salting_fanout')
            ELSE nullif(v.figures -> '$[14]', 'false') ->> '$' END AS salting_fanout,
       coalesce(v.evaluated_json,
                '{' || substr(coalesce(',"load":' || nullif(v.figures -> '$[0]', 'false'), '')
                 || coalesce(',"true_processing_rate":' || nullif(v.figures -> '$[1]', 'false'), '')
                 || coalesce(',"target_data_rate":' || nullif(v.figures -> '$[2]', 'false'), '')
                 || coalesce(',"catch_up_data_rate":' || nullif(v.figures -> '$[3]', 'false'), '')
                 || coalesce(',"lag":' || nullif(v.figures -> '$[4]', 'false'), '')
                 || coalesce(',"scale_up_rate_threshold":' || nullif(v.figures -> '$[5]', 'false'), '')
                 || coalesce(',"scale_down_rate_threshold":' || nullif(v.figures -> '$[6]', 'false'), '')
                 || coalesce(',"expected_processing_rate":' || nullif(v.figures -> '$[7]', 'false'), '')
                 || coalesce(',"parallelism":' || nullif(v.figures -> '$[8]', 'false'), '')
                 || coalesce(',"max_parallelism":' || nullif(v.figures -> '$[9]', 'false'), '')
                 || coalesce(',"num_source_partitions":' || nullif(v.figures -> '$[10]', 'false'), '')
                 || coalesce(',"busy_max_avg_ratio":' || nullif(v.figures -> '$[11]', 'false'), '')
                 || coalesce(',"hot_key_share":' || nullif(v.figures -> '$[12]', 'false'), '')
                 || coalesce(',"key_rate_bound":' || nullif(v.figures -> '$[13]', 'false'), '')
                 || coalesce(',"salting_fanout":' || nullif(v.figures -> '$[14]', 'false'), ''), 2) || '}') AS evaluated_json
FROM vertex_decisions v
JOIN decisions d ON d.id = v.decision_id;

CREATE VIEW audit_scalings AS
SELECT d.id AS decision_id,
       d.job AS job,
       d.at AS at,
       strftime('%Y-%m-%dT%H:%M:%fZ', d.at / 1000.0, 'unixepoch') AS at_utc,
       d.action AS action,
       d.reason AS reason,
       (SELECT a.message FROM audit_decisions a WHERE a.id = d.id) AS message,
       (SELECT group_concat(v.vertex || ' ' || v.current || '->' || v.target, ', ')
          FROM vertex_decisions v
         WHERE v.decision_id = d.id AND v.target <> v.current) AS changes,
       (SELECT sum(v.current) FROM vertex_decisions v WHERE v.decision_id = d.id)
           AS subtasks_before,
       (SELECT sum(v.target) FROM vertex_decisions v WHERE v.decision_id = d.id)
           AS subtasks_after,
       d.policy_revision AS policy_revision,
       (SELECT c.hash FROM decision_configs c WHERE c.id = d.config_id) AS config_hash,
       (SELECT e.reason = 'ScalingApplied'
          FROM events e
         WHERE e.job = d.job AND e.reason IN ('ScalingApplied', 'ScalingNotApplied')
           AND e.decision_id > d.id
           AND e.decision_id <= coalesce((SELECT min(n.id) FROM decisions n
                                           WHERE n.job = d.job AND n.id > d.id
                                             AND n.execute = 1 AND n.action <> 'NO_CHANGE'),
                                         e.decision_id)
         ORDER BY e.decision_id LIMIT 1) AS applied,
       (SELECT e.decision_id
          FROM events e
         WHERE e.job = d.job AND e.reason IN ('ScalingApplied', 'ScalingNotApplied')
           AND e.decision_id > d.id
           AND e.decision_id <= coalesce((SELECT min(n.id) FROM decisions n
                                           WHERE n.job = d.job AND n.id > d.id
                                             AND n.execute = 1 AND n.action <> 'NO_CHANGE'),
                                         e.decision_id)
         ORDER BY e.decision_id LIMIT 1) AS applied_decision_id
FROM decisions d
WHERE d.execute = 1 AND d.action <> 'NO_CHANGE';

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

CREATE VIEW audit_decision_options AS
SELECT d.id AS decision_id,
       d.job AS job,
       o.key AS key,
       o.value AS value
FROM decisions d
JOIN decision_configs c ON c.id = d.config_id, json_each(c.config_json) o;
