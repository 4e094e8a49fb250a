-- 003_job_generation.sql - a job's incarnation in the fence, as schema/011_job_generation.sql:
-- each creation of a job's row draws a generation, kept by every later write, and a write is
-- made only where both the version and the generation are still those it was computed from,
-- so that a process holding a deleted job cannot write over the job created again under the
-- same name. Rows from before this migration are generation 0.
ALTER TABLE jobs ADD COLUMN generation BIGINT NOT NULL DEFAULT 0;
