-- 007_applied_scalings.sql - audit_scalings tells decided from applied. A scaling the client
-- was told to apply (execute = 1) is seen applied, or not, by the next sample of the job that
-- runs: that decision carries a ScalingApplied event (every vertex the scaling changed runs at
-- its new parallelism) or a ScalingNotApplied warning (core/README.md, Cycle). The view's
-- columns stay as they were (003_audit_views.sql); two are added at the end:
--   applied              1 applied, 0 not applied, NULL not known yet (no running sample
--                        since, or the job's state was cleared before one came)
--   applied_decision_id  the decision whose sample showed it
-- An outcome belongs to the last scaling before it: the events looked at lie after the
-- scaling and no later than the job's next executed scaling, which resolves the previous one
-- first thing in its cycle.

CREATE INDEX IF NOT EXISTS events_job_reason ON events (job, reason, decision_id);

DROP VIEW IF EXISTS audit_scalings;

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
       d.config_hash AS config_hash,
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
