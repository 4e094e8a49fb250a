-- 011_job_generation.sql - a job's incarnation in the fence (README, Storage). A deleted job that is
-- created again started over at version 1, so a process still holding the job as it was
-- before the deletion, at the same version, passed the fence and wrote its state over the new
-- job's. Each creation of a job's row now draws a generation (a random 63-bit number, chosen by
-- the process that creates it, kept by every later write), and a write is made only where both
-- the version and the generation are still those it was computed from. Rows from before this
-- migration are generation 0.
ALTER TABLE jobs ADD COLUMN generation INTEGER NOT NULL DEFAULT 0;
