-- Where a job-config change (or a DELETE of the job) falls among the decisions: the highest
-- decisions.id committed before it. Server-clock milliseconds cannot order a DELETE against a
-- decision of the same millisecond; replay against history needs the exact order.
ALTER TABLE config_changes ADD COLUMN after_decision INTEGER;
