-- 006_store_probe.sql - one row that the writer rewrites while the store refuses writes (disk
-- full, read-only, locked by another process): a commit here is how it learns that writes work
-- again, without a client's decision at stake. Nothing else reads it.
CREATE TABLE store_probe (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    at INTEGER NOT NULL
);
