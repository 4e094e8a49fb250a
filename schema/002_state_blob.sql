-- The job's autoscaler state moves to a binary blob (server/statebin.c): printing every
-- double of the metric window as JSON cost more than the decision itself. state_json is
-- still read when state_bin is NULL (rows written before this migration).
ALTER TABLE jobs ADD COLUMN state_bin BLOB;
