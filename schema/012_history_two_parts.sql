-- 012_history_two_parts.sql - a decision's history in two parts: what was decided
-- as rows, and the samples it was decided from in compressed chunks per job. Nothing that an
-- audit view, GET /v1/jobs/{job}/decisions, GET /v1/decisions/{id}, a retry, replay, the
-- timeline or advice reads is lost; the views keep their names, columns and answers.
--
--   decision_outcomes  what a decision decided, once per distinct outcome: action, reason,
--                      message (and message_parts, as in 009), the response's other members,
--                      the policy revision, its effective options (config_id), and its vertices
--                      and events' texts (below) as JSON arrays, each vertex an array:
--                        [vertex, current, raw_target, target, reason, constraints (text),
--                         message, flags, figures (009's array, or null), evaluated_json (text,
--                         only when figures is null)]
--                      hash: a 64-bit hash of those columns (store/pack.h, pack_hash), for the
--                      lookup of an outcome decided before; a steady job decides the same
--                      outcome sample after sample, and jobs of the same shape share them.
--   decisions          one row a decision: job, at, execute, its outcome, created_at, its
--                      plugin calls (calls: [[plugin_names.id, ...], [duration_us, ...]], and a
--                      third array of each call's error or null when any has one; NULL: no
--                      call), input (the packed request, 009: only where the samples' chunks do
--                      not hold the sample, e.g. a batch sample, a rebalance request, a request
--                      with its own config, and every decision stored before this migration),
--                      decision_json (as in 009).
--   events             a decision's event points at its outcome's events (decision_outcomes.
--                      events: [[type, reason, message], ...], ord its place there) and keeps
--                      count and suppressed; an event of no decision (a policy reload) keeps its
--                      type, reason and message itself. `applied` marks ScalingApplied (1) and
--                      ScalingNotApplied (0) for audit_scalings.
--   plugin_names       each distinct (plugin, hook, outcome) of a plugin call; never deleted.
--   sample_chunks      a job's samples, chunk by chunk in the samples' codec
--                      (server/core/codec.h; a row holds each sample's job metrics and every
--                      vertex's, the chunk's layout its running_since, vertex ids, parallelisms,
--                      partitions, groups and inputs), first_id the decision of its first sample;
--                      the sample of a decision is the row of its `at` in the job's chunk with the
--                      highest first_id up to the decision's id. The chunk a job is filling is
--                      in jobs.samples (jobs.samples_first_id), written with the job's state.
-- gov_hash is an SQL function of the server's connection (sqlite.c): pack_hash of its
-- arguments, so that outcomes and texts converted here are found again by new decisions.

CREATE TABLE decision_outcomes (
    id              INTEGER PRIMARY KEY,
    hash            INTEGER NOT NULL,
    action          TEXT NOT NULL,
    reason          TEXT NOT NULL,
    message         TEXT,
    message_parts   INTEGER,
    response        TEXT,
    policy_revision TEXT NOT NULL,
    config_id       INTEGER NOT NULL,
    vertices        TEXT NOT NULL,
    events          TEXT
);

CREATE TEMP TABLE outcome_012 AS
SELECT d.id AS id, d.action AS action, d.reason AS reason, d.message AS message,
       d.message_parts AS message_parts, d.response AS response,
       d.policy_revision AS policy_revision, d.config_id AS config_id,
       coalesce((SELECT json_group_array(json(x.v))
                   FROM (SELECT json_array(v.vertex, v.current, v.raw_target, v.target, v.reason,
                                           v.constraints, v.message, v.flags, json(v.figures),
                                           v.evaluated_json) AS v
                           FROM vertex_decisions v WHERE v.decision_id = d.id ORDER BY v.ord) x),
                '[]') AS vertices,
       (SELECT json_group_array(json(x.e))
          FROM (SELECT json_array(e.type, e.reason, e.message) AS e
                  FROM events e WHERE e.decision_id = d.id ORDER BY e.id) x
        HAVING count(*) > 0) AS events
FROM decisions d;
ALTER TABLE temp.outcome_012 ADD COLUMN hash INTEGER;
UPDATE temp.outcome_012 SET hash = gov_hash(action, reason, message, message_parts, response,
                                            policy_revision,
                                            (SELECT c.hash FROM decision_configs c
                                              WHERE c.id = config_id), vertices, events);

INSERT INTO decision_outcomes (hash, action, reason, message, message_parts, response,
                               policy_revision, config_id, vertices, events)
SELECT hash, action, reason, message, message_parts, response, policy_revision, config_id,
       vertices, events
FROM temp.outcome_012
GROUP BY hash, action, reason, message, message_parts, response, policy_revision, config_id,
         vertices, events
ORDER BY min(id);
CREATE INDEX decision_outcomes_hash ON decision_outcomes (hash);
CREATE INDEX decision_outcomes_config ON decision_outcomes (config_id);

CREATE TABLE plugin_names (
    id      INTEGER PRIMARY KEY,
    plugin  TEXT NOT NULL,
    hook    TEXT NOT NULL,
    outcome TEXT NOT NULL
);
INSERT INTO plugin_names (plugin, hook, outcome)
SELECT plugin, hook, outcome FROM plugin_calls GROUP BY plugin, hook, outcome ORDER BY min(rowid);

CREATE TABLE decisions_012 (
    id            INTEGER PRIMARY KEY,
    job           TEXT NOT NULL,
    at            INTEGER NOT NULL,
    execute       INTEGER NOT NULL,
    outcome_id    INTEGER NOT NULL,
    created_at    INTEGER NOT NULL,
    calls         TEXT,
    input         BLOB,
    decision_json TEXT
);

INSERT INTO decisions_012 (id, job, at, execute, outcome_id, created_at, calls, input,
                           decision_json)
SELECT d.id, d.job, d.at, d.execute,
       (SELECT o.id FROM decision_outcomes o
         WHERE o.hash = m.hash AND o.action = m.action AND o.reason = m.reason
           AND o.message IS m.message AND o.message_parts IS m.message_parts
           AND o.response IS m.response AND o.policy_revision = m.policy_revision
           AND o.config_id = m.config_id AND o.vertices = m.vertices
           AND o.events IS m.events
         ORDER BY o.id LIMIT 1),
       d.created_at,
       (SELECT CASE WHEN count(x.error) > 0
                    THEN json_array(json_group_array(x.name), json_group_array(x.duration_us),
                                    json_group_array(x.error))
                    ELSE json_array(json_group_array(x.name), json_group_array(x.duration_us)) END
          FROM (SELECT n.id AS name, p.duration_us AS duration_us, p.error AS error
                  FROM plugin_calls p
                  JOIN plugin_names n ON n.plugin = p.plugin AND n.hook = p.hook
                                     AND n.outcome = p.outcome
                 WHERE p.decision_id = d.id ORDER BY p.rowid) x
        HAVING count(*) > 0),
       d.input, d.decision_json
FROM decisions d
JOIN temp.outcome_012 m ON m.id = d.id;

CREATE TABLE events_012 (
    id          INTEGER PRIMARY KEY,
    job         TEXT NOT NULL,
    decision_id INTEGER,
    at          INTEGER NOT NULL,
    ord         INTEGER,
    count       INTEGER NOT NULL DEFAULT 1,
    suppressed  INTEGER NOT NULL DEFAULT 0,
    applied     INTEGER,
    type        TEXT,
    reason      TEXT,
    message     TEXT
);
INSERT INTO events_012 (id, job, decision_id, at, ord, count, suppressed, applied, type, reason,
                        message)
SELECT e.id, e.job, e.decision_id, e.at,
       CASE WHEN e.decision_id IS NOT NULL
            THEN (SELECT count(*) FROM events p
                   WHERE p.decision_id = e.decision_id AND p.id < e.id) END,
       e.count, e.suppressed,
       CASE e.reason WHEN 'ScalingApplied' THEN 1 WHEN 'ScalingNotApplied' THEN 0 END,
       CASE WHEN e.decision_id IS NULL THEN e.type END,
       CASE WHEN e.decision_id IS NULL THEN e.reason END,
       CASE WHEN e.decision_id IS NULL THEN e.message END
FROM events e;

DROP TABLE temp.outcome_012;
DROP VIEW IF EXISTS audit_decisions;
DROP VIEW IF EXISTS audit_vertex_decisions;
DROP VIEW IF EXISTS audit_scalings;
DROP VIEW IF EXISTS audit_events;
DROP VIEW IF EXISTS audit_plugin_calls;
DROP VIEW IF EXISTS audit_decision_options;
DROP TABLE plugin_calls;
DROP TABLE vertex_decisions;
DROP TABLE events;
DROP TABLE decisions;
ALTER TABLE decisions_012 RENAME TO decisions;
ALTER TABLE events_012 RENAME TO events;
CREATE INDEX decisions_job_at ON decisions (job, at, id);
CREATE INDEX decisions_outcome ON decisions (outcome_id);
-- The executed scalings (execute = 1 is only ever set on a decision that changes something).
CREATE INDEX decisions_scalings ON decisions (job, id) WHERE execute = 1;
CREATE INDEX events_job_at ON events (job, at, id);
CREATE INDEX events_decision ON events (decision_id);
CREATE INDEX events_applied ON events (job, decision_id) WHERE applied IS NOT NULL;

CREATE TABLE sample_chunks (
    job        TEXT NOT NULL,
    first_id   INTEGER NOT NULL,
    created_at INTEGER NOT NULL,
    chunk      BLOB NOT NULL,
    PRIMARY KEY (job, first_id)
) WITHOUT ROWID;
CREATE INDEX sample_chunks_created ON sample_chunks (created_at);
ALTER TABLE jobs ADD COLUMN samples BLOB;
ALTER TABLE jobs ADD COLUMN samples_first_id INTEGER;

-- The views of 003, 007 and 009 over the new tables: the same names, columns and answers.

CREATE VIEW audit_decisions AS
SELECT d.id AS id,
       d.job AS job,
       d.at AS at,
       strftime('%Y-%m-%dT%H:%M:%fZ', d.at / 1000.0, 'unixepoch') AS at_utc,
       o.action AS action,
       o.reason AS reason,
       d.execute AS execute,
       CASE WHEN o.message_parts IS NULL THEN o.message
            ELSE o.message || coalesce((SELECT group_concat(v.value ->> 6, '; ')
                                          FROM json_each(o.vertices) v
                                         WHERE (o.message_parts >> v.key) & 1), '') END AS message,
       o.policy_revision AS policy_revision,
       (SELECT c.hash FROM decision_configs c WHERE c.id = o.config_id) AS config_hash,
       d.created_at AS created_at,
       CASE WHEN d.decision_json IS NOT NULL THEN json_extract(d.decision_json, '$.parallelism')
            ELSE (SELECT json_group_object(v.value ->> 0, v.value ->> 3)
                    FROM json_each(o.vertices) v) END AS parallelism
FROM decisions d
JOIN decision_outcomes o ON o.id = d.outcome_id;

CREATE VIEW audit_vertex_decisions AS
SELECT d.id AS decision_id,
       d.job AS job,
       d.at AS at,
       strftime('%Y-%m-%dT%H:%M:%fZ', d.at / 1000.0, 'unixepoch') AS at_utc,
       v.key AS ord,
       v.value ->> 0 AS vertex,
       v.value ->> 1 AS current,
       v.value ->> 2 AS raw_target,
       v.value ->> 3 AS target,
       v.value ->> 4 AS reason,
       v.value ->> 5 AS constraints,
       v.value ->> 6 AS message,
       CASE WHEN v.value ->> 9 IS NOT NULL THEN json_extract(v.value ->> 9, '$.load')
            ELSE nullif(v.value -> '$[8][0]', 'false') ->> '$' END AS load,
       CASE WHEN v.value ->> 9 IS NOT NULL THEN json_extract(v.value ->> 9, '$.true_processing_rate')
            ELSE nullif(v.value -> '$[8][1]', 'false') ->> '$' END AS true_processing_rate,
       CASE WHEN v.value ->> 9 IS NOT NULL THEN json_extract(v.value ->> 9, '$.target_data_rate')
            ELSE nullif(v.value -> '$[8][2]', 'false') ->> '$' END AS target_data_rate,
       CASE WHEN v.value ->> 9 IS NOT NULL THEN json_extract(v.value ->> 9, '$.catch_up_data_rate')
            ELSE nullif(v.value -> '$[8][3]', 'false') ->> '$' END AS catch_up_data_rate,
       CASE WHEN v.value ->> 9 IS NOT NULL THEN json_extract(v.value ->> 9, '$.lag')
            ELSE nullif(v.value -> '$[8][4]', 'false') ->> '$' END AS lag,
       CASE WHEN v.value ->> 9 IS NOT NULL THEN json_extract(v.value ->> 9, '$.scale_up_rate_threshold')
            ELSE nullif(v.value -> '$[8][5]', 'false') ->> '$' END AS scale_up_rate_threshold,
       CASE WHEN v.value ->> 9 IS NOT NULL THEN json_extract(v.value ->> 9, '$.scale_down_rate_threshold')
            ELSE nullif(v.value -> '$[8][6]', 'false') ->> '$' END AS scale_down_rate_threshold,
       CASE WHEN v.value ->> 9 IS NOT NULL THEN json_extract(v.value ->> 9, '$.expected_processing_rate')
            ELSE nullif(v.value -> '$[8][7]', 'false') ->> '$' END AS expected_processing_rate,
       CASE WHEN v.value ->> 9 IS NOT NULL THEN json_extract(v.value ->> 9, '$.busy_max_avg_ratio')
            ELSE nullif(v.value -> '$[8][11]', 'false') ->> '$' END AS busy_max_avg_ratio,
       CASE WHEN v.value ->> 9 IS NOT NULL THEN json_extract(v.value ->> 9, '$.hot_key_share')
            ELSE nullif(v.value -> '$[8][12]', 'false') ->> '$' END AS hot_key_share,
       CASE WHEN v.value ->> 9 IS NOT NULL THEN json_extract(v.value ->> 9, '$.key_rate_bound')
            ELSE nullif(v.value -> '$[8][13]', 'false') ->> '$' END AS key_rate_bound,
       CASE WHEN v.value ->> 9 IS NOT NULL THEN json_extract(v.value ->> 9, '$.salting_fanout')
            ELSE nullif(v.value -> '$[8][14]', 'false') ->> '$' END AS salting_fanout,
       coalesce(v.value ->> 9,
                '{' || substr(coalesce(',"load":' || nullif(v.value -> '$[8][0]', 'false'), '')
                 || coalesce(',"true_processing_rate":' || nullif(v.value -> '$[8][1]', 'false'), '')
                 || coalesce(',"target_data_rate":' || nullif(v.value -> '$[8][2]', 'false'), '')
                 || coalesce(',"catch_up_data_rate":' || nullif(v.value -> '$[8][3]', 'false'), '')
                 || coalesce(',"lag":' || nullif(v.value -> '$[8][4]', 'false'), '')
                 || coalesce(',"scale_up_rate_threshold":' || nullif(v.value -> '$[8][5]', 'false'), '')
                 || coalesce(',"scale_down_rate_threshold":' || nullif(v.value -> '$[8][6]', 'false'), '')
                 || coalesce(',"expected_processing_rate":' || nullif(v.value -> '$[8][7]', 'false'), '')
                 || coalesce(',"parallelism":' || nullif(v.value -> '$[8][8]', 'false'), '')
                 || coalesce(',"max_parallelism":' || nullif(v.value -> '$[8][9]', 'false'), '')
                 || coalesce(',"num_source_partitions":' || nullif(v.value -> '$[8][10]', 'false'), '')
                 || coalesce(',"busy_max_avg_ratio":' || nullif(v.value -> '$[8][11]', 'false'), '')
                 || coalesce(',"hot_key_share":' || nullif(v.value -> '$[8][12]', 'false'), '')
                 || coalesce(',"key_rate_bound":' || nullif(v.value -> '$[8][13]', 'false'), '')
                 || coalesce(',"salting_fanout":' || nullif(v.value -> '$[8][14]', 'false'), ''), 2) || '}') AS evaluated_json
FROM decisions d
JOIN decision_outcomes o ON o.id = d.outcome_id, json_each(o.vertices) v;

CREATE VIEW audit_scalings AS
SELECT d.id AS decision_id,
       d.job AS job,
       d.at AS at,
       strftime('%Y-%m-%dT%H:%M:%fZ', d.at / 1000.0, 'unixepoch') AS at_utc,
       o.action AS action,
       o.reason AS reason,
       (SELECT a.message FROM audit_decisions a WHERE a.id = d.id) AS message,
       (SELECT group_concat((v.value ->> 0) || ' ' || (v.value ->> 1) || '->' || (v.value ->> 3), ', ')
          FROM json_each(o.vertices) v
         WHERE v.value ->> 3 <> v.value ->> 1) AS changes,
       (SELECT sum(v.value ->> 1) FROM json_each(o.vertices) v) AS subtasks_before,
       (SELECT sum(v.value ->> 3) FROM json_each(o.vertices) v) AS subtasks_after,
       o.policy_revision AS policy_revision,
       (SELECT c.hash FROM decision_configs c WHERE c.id = o.config_id) AS config_hash,
       (SELECT e.applied
          FROM events e
         WHERE e.job = d.job AND e.applied IS NOT NULL AND e.decision_id > d.id
           AND e.decision_id <= coalesce((SELECT min(n.id) FROM decisions n
                                           JOIN decision_outcomes no ON no.id = n.outcome_id
                                           WHERE n.job = d.job AND n.id > d.id
                                             AND n.execute = 1 AND no.action <> 'NO_CHANGE'),
                                         e.decision_id)
         ORDER BY e.decision_id LIMIT 1) AS applied,
       (SELECT e.decision_id
          FROM events e
         WHERE e.job = d.job AND e.applied IS NOT NULL AND e.decision_id > d.id
           AND e.decision_id <= coalesce((SELECT min(n.id) FROM decisions n
                                           JOIN decision_outcomes no ON no.id = n.outcome_id
                                           WHERE n.job = d.job AND n.id > d.id
                                             AND n.execute = 1 AND no.action <> 'NO_CHANGE'),
                                         e.decision_id)
         ORDER BY e.decision_id LIMIT 1) AS applied_decision_id
FROM decisions d
JOIN decision_outcomes o ON o.id = d.outcome_id
WHERE d.execute = 1 AND o.action <> 'NO_CHANGE';

CREATE VIEW audit_events AS
SELECT e.id AS id,
       e.job AS job,
       e.decision_id AS decision_id,
       e.at AS at,
       strftime('%Y-%m-%dT%H:%M:%fZ', e.at / 1000.0, 'unixepoch') AS at_utc,
       CASE WHEN e.ord IS NULL THEN e.type ELSE o.events -> e.ord ->> 0 END AS type,
       CASE WHEN e.ord IS NULL THEN e.reason ELSE o.events -> e.ord ->> 1 END AS reason,
       CASE WHEN e.ord IS NULL THEN e.message ELSE o.events -> e.ord ->> 2 END AS message,
       e.count AS count,
       e.suppressed AS suppressed
FROM events e
LEFT JOIN decisions d ON d.id = e.decision_id
LEFT JOIN decision_outcomes o ON o.id = d.outcome_id;

CREATE VIEW audit_plugin_calls AS
SELECT d.id AS decision_id,
       d.job AS job,
       d.at AS at,
       strftime('%Y-%m-%dT%H:%M:%fZ', d.at / 1000.0, 'unixepoch') AS at_utc,
       n.plugin AS plugin,
       n.hook AS hook,
       n.outcome AS outcome,
       d.calls -> 1 ->> p.key AS duration_us,
       d.calls -> 2 ->> p.key AS error,
       o.policy_revision AS policy_revision
FROM decisions d
JOIN decision_outcomes o ON o.id = d.outcome_id, json_each(d.calls, '$[0]') p
JOIN plugin_names n ON n.id = p.value;

CREATE VIEW audit_decision_options AS
SELECT d.id AS decision_id,
       d.job AS job,
       s.key AS key,
       s.value AS value
FROM decisions d
JOIN decision_outcomes o ON o.id = d.outcome_id
JOIN decision_configs c ON c.id = o.config_id, json_each(c.config_json) s;
