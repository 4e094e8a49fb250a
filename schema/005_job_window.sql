-- A job's metric window, one row per sample (server/statebin.c's sample form), numbered in
-- the order the samples were taken: a decision appends its sample and drops those that left
-- the window, instead of rewriting the whole window with the job's state (jobs.state_bin now
-- holds the rest of the state).
CREATE TABLE job_window (
    job    TEXT NOT NULL,
    seq    INTEGER NOT NULL,
    sample BLOB NOT NULL,
    PRIMARY KEY (job, seq)
) WITHOUT ROWID;
