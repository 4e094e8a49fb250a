-- 010_job_version.sql - fencing between governor processes that share one store (README, Running several replicas on PostgreSQL).
-- A job's row carries a version: every write of the row (a decision, a config change, a
-- deletion) is made only where the version is still the one the in-memory job was computed
-- from, and adds 1 to it. A process whose write finds another version stored nothing (another
-- process moved the job first): it reloads the job and the client retries (503 "conflict").
-- Rows from before this migration start at 0.
ALTER TABLE jobs ADD COLUMN version INTEGER NOT NULL DEFAULT 0;
