-- 001_init.sql - the first schema of governor's store (README, Storage).
-- Times are epoch milliseconds; JSON columns hold jansson-rendered text.

-- One row per job the server knows: its stored config layer (PUT /v1/jobs/{job}/config)
-- and the autoscaler state the next decision starts from.
CREATE TABLE jobs (
    job         TEXT PRIMARY KEY,
    created_at  INTEGER NOT NULL,
    config_json TEXT NOT NULL DEFAULT '{}',
    state_json  TEXT,
    last_at     INTEGER
);

-- Every decision, with everything needed to explain or replay it.
CREATE TABLE decisions (
    id              INTEGER PRIMARY KEY,
    job             TEXT NOT NULL,
    at              INTEGER NOT NULL,
    action          TEXT NOT NULL,
    reason          TEXT NOT NULL,
    execute         INTEGER NOT NULL,
    message         TEXT,
    input_json      TEXT NOT NULL,
    config_json     TEXT NOT NULL,
    decision_json   TEXT NOT NULL,
    policy_revision TEXT NOT NULL,
    config_hash     TEXT NOT NULL,
    created_at      INTEGER NOT NULL
);
CREATE INDEX decisions_job_at ON decisions (job, at, id);

-- One row per vertex of a decision, in topological order (ord).
CREATE TABLE vertex_decisions (
    decision_id    INTEGER NOT NULL REFERENCES decisions (id),
    ord            INTEGER NOT NULL,
    vertex         TEXT NOT NULL,
    current        INTEGER NOT NULL,
    raw_target     INTEGER NOT NULL,
    target         INTEGER NOT NULL,
    reason         TEXT NOT NULL,
    constraints    TEXT NOT NULL,
    message        TEXT,
    evaluated_json TEXT NOT NULL,
    PRIMARY KEY (decision_id, ord)
);

-- Events (core/README.md, Events) raised by decisions; `suppressed` ones were deduplicated.
CREATE TABLE events (
    id          INTEGER PRIMARY KEY,
    job         TEXT NOT NULL,
    decision_id INTEGER REFERENCES decisions (id),
    at          INTEGER NOT NULL,
    type        TEXT NOT NULL,
    reason      TEXT NOT NULL,
    message     TEXT,
    count       INTEGER NOT NULL DEFAULT 1,
    suppressed  INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX events_job_at ON events (job, at, id);

-- Reserved for the plugin host: one row per hook call of a decision.
CREATE TABLE plugin_calls (
    decision_id INTEGER NOT NULL REFERENCES decisions (id),
    plugin      TEXT NOT NULL,
    hook        TEXT NOT NULL,
    outcome     TEXT NOT NULL,
    duration_us INTEGER NOT NULL,
    error       TEXT
);

-- Reserved for the plugin host: each revision of the policies directory and its files.
CREATE TABLE policy_revisions (
    revision   TEXT PRIMARY KEY,
    loaded_at  INTEGER NOT NULL,
    files_json TEXT NOT NULL
);

-- Every change of a job's stored config layer (PUT, DELETE), newest last.
CREATE TABLE config_changes (
    id          INTEGER PRIMARY KEY,
    job         TEXT NOT NULL,
    at          INTEGER NOT NULL,
    config_json TEXT
);
