/*
 * db.h - the store (prefix db_), on SQLite or, for a --db that is a PostgreSQL URL
 * (db_is_pg), on PostgreSQL, with the same rows and the same JSON on both; what differs is
 * said at each function where it does. Opening a database (SQLite: in WAL mode), its
 * migrations (SQLite: schema/NNN_name.sql, embedded into the binary at build time by
 * schema/schema.cmake and tracked with PRAGMA user_version; PostgreSQL: schema/pg/), the rows
 * one write unit (a decision, a job config change, a job deletion) puts in a transaction, and
 * the reads of the HTTP API (history, one decision, events, job rows at start). A SQLite
 * migration may have a step in C besides its SQL, run in the same transaction, for what SQL
 * cannot do: 008 rewrites job states stored in older forms in today's binary one; 009 (the
 * compact history) checks that each converted decision's rows give its response back.
 * A decision's history is in two parts (schema/012_history_two_parts.sql): what it decided, as
 * rows (its outcome once per distinct one, decision_outcomes; its effective options once per
 * distinct set, decision_configs; its events' texts once, event_texts; its plugin calls'
 * names once, plugin_names), its response rebuilt from them when read; and the sample it was
 * decided from in the job's chunks of samples (the samples' codec, core/codec.h), or, where
 * those do not hold it, the request packed (store/pack.h).
 *
 * The files: db.c (the connection, the writes) and read.c (the reads) write all of it once
 * above a table of functions per backend (backend.h: sqlite.c, pg.c), each statement's SQL
 * once; migrate.c opens a store and holds SQLite's migrations. A new column: its migration on
 * each backend (schema/NNN_name.sql, schema/pg/NNN_name.sql), its statement and its unit's
 * parameter in db.c, its reads in read.c (a member of the response: a line of the rebuild's
 * table); neither backend changes. One struct db is one connection and is used by one thread only:
 * the loop owns one (reads), the writer thread owns another (writes). May call: the backends,
 * jansson, log, pack; the core's state codec and statejson (migration 008 only).
 */
#ifndef GOVERNOR_DB_H
#define GOVERNOR_DB_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

/* One migration, generated from schema/NNN_name.sql (version = NNN). */
struct db_migration {
    int version;
    const char *name;
    const char *sql;
};
extern const struct db_migration db_migrations[];
extern const int db_n_migrations;

struct db;

/*
 * Whether db (a --db value) names a PostgreSQL store: a libpq URL, starting with
 * "postgresql://" or "postgres://". Anything else is a SQLite path. NULL is false.
 */
bool db_is_pg(const char *db);

/*
 * new: opens (creating it if needed) the database at path, sets WAL, the given
 * `synchronous` mode ("FULL", "NORMAL", "OFF", "EXTRA"), a busy timeout, and applies every
 * migration newer than PRAGMA user_version, each in its own transaction. NULL with *errp
 * (new) naming the path or the failing migration.
 * A PostgreSQL URL (db_is_pg) connects to it instead (store/pg.c) and applies
 * schema/pg/NNN_name.sql under an advisory lock; `synchronous` is SQLite's only.
 */
struct db *db_open(const char *path, const char *synchronous, char **errp);
/*
 * Opens the database at path read-only, without migrations, for a reader of history in
 * another process (replay --db): the reads below answer on the schema of 012 and later, and
 * db_history_each on older ones too. NULL with *errp (new).
 */
struct db *db_open_read(const char *path, char **errp);
/* A read transaction: the reads inside it see one snapshot. -1 + *errp; end never fails. */
int db_read_begin(struct db *db, char **errp);
void db_read_end(struct db *db);
/* Finalizes the cached statements and closes the connection. NULL is fine. */
void db_close(struct db *db);
/* The schema version after migrations (PRAGMA user_version). */
int db_user_version(struct db *db);

/*
 * The write-ahead log of the writer's connection (SQLite; each is a no-op on PostgreSQL, whose
 * log is not ours). A checkpoint copies the log's pages into the database and may start the
 * log over only when no reader still reads from it: readers whose snapshots overlap without a
 * gap let it grow without end (SQLite's wal.html, "checkpoint starvation").
 *
 * db_wal_limit: journal_size_limit = bytes (the file is cut back to it when the log starts
 * over), and a hook that counts the log's frames after each commit and runs SQLite's automatic
 * PASSIVE checkpoint past 1000 pages, as by default. -1 + *errp.
 * db_wal_bytes: the log's size after the last commit of this connection (0: empty or unknown).
 * db_wal_truncate: a TRUNCATE checkpoint: takes the write lock (writers wait), copies every
 * page, waits at most busy_ms for the readers still on older snapshots, then empties the file.
 * 0 done, 1 when readers (or another writer) still held it after busy_ms (some pages may have
 * been copied; try again later), -1 + *errp.
 */
int db_wal_limit(struct db *db, int64_t bytes, char **errp);
int64_t db_wal_bytes(const struct db *db);
int db_wal_truncate(struct db *db, int busy_ms, char **errp);

/* ---------------------------------------------------------------- writes -- */

/*
 * DB_W_RETENTION: one batch of audit-retention deletes (retention.h). DB_W_REPEAT writes
 * nothing: a retry of a job's sample whose decision may still be waiting for its commit
 * queues one, so that it completes after every unit queued before it.
 */
enum db_write_kind {
    DB_W_DECISION,
    DB_W_JOB_CONFIG,
    DB_W_JOB_DELETE,
    DB_W_POLICY,
    DB_W_RETENTION,
    DB_W_REPEAT
};

/* The error of a unit not written because an earlier unit of its job failed (DB_FAULT_STALE). */
#define DB_STALE_MSG "an earlier write of this job failed"

/* Why a write unit stored nothing (db_write.fault). */
enum db_fault {
    DB_FAULT_NONE,
    /* The store cannot be written now (disk full, read-only, locked by another process, an
     * I/O error, a corrupt file): the client may retry later (503). */
    DB_FAULT_STORAGE,
    /* The store refused this unit's rows (a constraint, a value too big): a bug (500). */
    DB_FAULT_UNIT,
    /* Not attempted: an earlier unit of the same job failed, and this one was computed from
     * the in-memory state that failure made stale (503, retry). */
    DB_FAULT_STALE,
    /* The job's stored version is not the one the unit was computed from (expect_version):
     * another process wrote the job first. The unit stored nothing; the other units of its
     * group commit. The job is reloaded from the store before its next decision (503
     * "conflict", retry). */
    DB_FAULT_FENCED
};

/* The codes of db_last_errcode that are this module's, not SQLite's (whose extended codes are
 * below 2^16): DB_ERR_OWN | the enum db_fault they stand for (the PostgreSQL store's
 * failures, a fenced unit). */
#define DB_ERR_OWN    0x1000000
#define DB_ERR_FENCED (DB_ERR_OWN | DB_FAULT_FENCED)

/* One vertex_decisions row (strings owned by the row). evaluated_json: the figures as
 * jsn_evaluated_text prints them (stored as a figures array, store/pack.h). */
struct db_vrow {
    char *vertex, *reason, *constraints, *message, *evaluated_json;
    int current, raw_target, target;
    bool excluded, outside_bounds;
};

/* One events row. */
struct db_erow {
    char *type, *reason, *message;
    int count;
    bool suppressed;
};

/* One job_window row: sample number seq of the job's window (blob owned by the row). */
struct db_wsample {
    int64_t seq;
    unsigned char *blob;
    size_t len;
};

/* One plugin_calls row (strings owned by the row; error may be NULL). */
struct db_prow {
    char *plugin, *hook, *outcome, *error;
    int64_t duration_us;
};

/*
 * One write unit: every row it carries is written in the same transaction (the group
 * commit of the writer puts many units in one). All strings are owned by the unit and
 * released by db_write_free. The fields after `decision_id` belong to the writer.
 */
struct db_write {
    enum db_write_kind kind;
    char *job;
    int64_t at;  /* DECISION: the sample's at; otherwise the server clock */
    int64_t now; /* server clock: created_at */
    /* DB_W_JOB_CONFIG: the job's new stored layer (a JSON object as text) */
    char *job_config_json;
    /* DB_W_DECISION */
    unsigned char *state_bin; /* the job's state after the decision, without its window's
                                 samples (core_state_encode_meta) */
    size_t state_bin_len;
    int64_t window_seq0; /* window samples below this number are dropped */
    int n_ws;
    struct db_wsample *ws; /* the window's new samples */
    int64_t last_at;
    char *action, *reason, *message;
    bool execute;
    /* The job's chunk of samples being filled, as a blob (core_codec_blob), after this
     * decision's sample was appended: stored whole in jobs.samples. NULL: the sample is not in
     * the chunks (the request is stored packed, input_json) and jobs.samples stays as it is.
     * samples_new: this decision's sample opened the chunk (the decision is its first_id);
     * samples_closed: the chunk it closed (a blob, NULL: none), moved to sample_chunks. */
    unsigned char *samples, *samples_closed;
    size_t samples_len, samples_closed_len;
    bool samples_new;
    /* input_json: the request as sent (stored packed unless samples holds it); config_json:
     * the effective options
     * (stored once per distinct text and hash, decision_configs); decision_json: the response
     * as sent, not stored: the store rebuilds it from the decision's rows and response_json,
     * the response's members that no row holds (a JSON object; NULL: none) */
    char *input_json, *config_json, *decision_json, *response_json, *policy_revision, *config_hash;
    /* The response is stored whole (decision_json) because its rows do not give it back: a
     * batch decision, a rebalance advice. */
    bool keep_response;
    int n_v, n_e, n_p;
    struct db_vrow *v;
    struct db_erow *e; /* also DB_W_POLICY: a reload's event (job "", no decision) */
    struct db_prow *p;
    /* DB_W_POLICY: a revision that became active (revision NULL: a failed reload, only the
     * event is written) */
    char *revision, *files_json;
    int64_t loaded_at;
    /* DB_W_RETENTION: delete at most `batch` of the oldest decisions (with their events, and
     * the outcomes, option sets and event texts no decision left uses) and config changes whose
     * server-clock time is < cutoff, and the chunks of samples closed before sample_cutoff
     * (INT64_MIN: none) or before cutoff */
    int64_t cutoff, sample_cutoff;
    int batch;
    /* out (RETENTION): rows deleted from decisions + config_changes; more: a full batch was
     * deleted, so older rows may remain */
    int64_t deleted;
    bool more;
    /* out: the new decisions.id (DECISION), set by db_write_apply */
    int64_t decision_id;
    /* The fence (DECISION, JOB_CONFIG, JOB_DELETE): the jobs.version the unit was computed
     * from (0: the job had no row, the unit inserts it), or -1 (db_write_new's default): write
     * whatever version is stored. A row whose version differs (or a row inserted meanwhile, or
     * deleted) stores nothing of the unit: fault DB_FAULT_FENCED. */
    int64_t expect_version;
    /* ... and its generation (jobs.generation, the job's incarnation: drawn when the row is
     * created, kept by every later write): with expect_version >= 0 a row of another
     * generation does not hold the fence either, so a unit computed from a job deleted since
     * cannot land on the job created again under its name. A unit that creates the row gives
     * it this generation. */
    int64_t expect_generation;
    /* out: the row's version after the unit (DECISION, JOB_CONFIG; 0 after a deletion) */
    int64_t new_version;
    /* writer bookkeeping */
    struct db_write *next;
    int ok;
    enum db_fault fault; /* when !ok: why */
    char *error;         /* when !ok: what failed (new, for the reply and the log) */
    void (*done_cb)(struct db_write *w, void *ud);
    void *ud;
};

/* new: an empty unit of the given kind for job (copied). Aborts on out-of-memory. */
struct db_write *db_write_new(enum db_write_kind kind, const char *job);
void db_write_free(struct db_write *w);

/*
 * Calls fn for each stored window sample of job numbered >= from_seq, in order; a non-zero
 * return stops with that value. -1 with *errp (new) on a database error.
 */
int db_window_each(struct db *db, const char *job, int64_t from_seq,
                   int (*fn)(void *ud, int64_t seq, const void *blob, size_t len), void *ud,
                   char **errp);

/* BEGIN IMMEDIATE / COMMIT / ROLLBACK. -1 with *errp (new). Rollback never fails loudly. */
int db_begin(struct db *db, char **errp);
int db_commit(struct db *db, char **errp);
void db_rollback(struct db *db);
/*
 * Writes every row of w (inside the caller's transaction); sets w->decision_id and
 * w->new_version. A unit whose fence does not hold writes nothing and returns 0 with w->fault
 * DB_FAULT_FENCED and w->error (new): the transaction goes on. -1 + *errp.
 */
int db_write_apply(struct db *db, struct db_write *w, char **errp);
/*
 * One transaction of n units: each unit's rows (db_write_apply), committed, or rolled back on
 * a failure. A unit whose fence does not hold stores nothing (DB_FAULT_FENCED) and the later
 * units of its job are not written (DB_FAULT_STALE, DB_STALE_MSG); the others commit. On
 * PostgreSQL the group is one pipeline, its results read after (a group with a retention unit:
 * statement by statement), and a fence that does not hold fails the whole group instead (-1,
 * db_last_errcode of class DB_FAULT_FENCED). -1 + *errp.
 */
int db_write_group(struct db *db, struct db_write **ws, int n, char **errp);
/*
 * Fault injection for tests: the next n calls of db_write_apply (and db_probe) fail as if
 * SQLite had returned code (db_fail_next_writes: a unit fault, SQLITE_CONSTRAINT).
 */
void db_fail_next_writes(int n);
void db_fail_next_writes_code(int n, int code);

/*
 * The extended SQLite result code of the connection's last failed call of this module (0:
 * none yet), and the class of a code: DB_FAULT_STORAGE for the store's condition (full,
 * read-only, busy or locked, I/O, out of memory, corrupt, cannot open), DB_FAULT_UNIT for
 * anything a unit's own rows cause.
 */
int db_last_errcode(const struct db *db);
enum db_fault db_fault_of(int code);

/*
 * Whether the store can be written: commits one row of the store_probe table with a busy
 * timeout of busy_ms (the connection's own timeout is restored after). 0, or -1 + *errp.
 */
int db_probe(struct db *db, int64_t now, int busy_ms, char **errp);

/* ----------------------------------------------------------------- reads -- */

/* A jobs row as db_jobs_each hands it over (everything borrowed for the call). */
struct db_job_row {
    const char *job;
    int64_t created_at;
    const char *config_json;
    const void *state_bin; /* NULL: no state */
    size_t state_bin_len;
    int64_t last_at;             /* INT64_MIN when NULL */
    int64_t version, generation; /* the row's fence */
    const void *samples;         /* the job's chunk of samples being filled (NULL: none) */
    size_t samples_len;
};

/*
 * Calls fn for the rows of the jobs table (job = NULL: the `limit` most recently sampled, by
 * last_at or else created_at, newest first) or for the one job named (one read by the primary
 * key). Returns the number of rows, or -1 with *errp (fn returning non-zero stops with -1 too).
 */
int db_jobs_each(struct db *db, const char *job, int limit,
                 int (*fn)(void *ud, const struct db_job_row *row), void *ud, char **errp);

/*
 * new in *out: {"jobs": [{"job", "created_at", "last_at" (null: no sample), "config" (the
 * stored layer, an object)}, ...]}: every row of the jobs table in job order (byte order, on
 * both stores), without reading their states. -1 + *errp.
 */
int db_jobs_list(struct db *db, json_t **out, char **errp);
/*
 * One page of a job's decisions, newest first (by at, then id): at in [since, until], and
 * at `until` only ids below `before` (INT64_MAX: all), at most `limit` decisions and at most
 * `max_rows` rows in all (db_response_rows; a decision's vertex rows are counted before it is
 * read), but always the first decision: the work of a page is bounded by its rows, not by
 * decisions x vertices. When it stops early with decisions left, `more` is set and next_at /
 * next_id name its last decision: the next page is until = next_at, before = next_id.
 */
struct db_page {
    int64_t since, until, before;
    int limit, max_rows;
    bool more;
    int64_t next_at, next_id;
};

/* The rows a stored response costs a page: its vertices, or a rebalance advice's splits and
 * unsplittable items; at least 1. */
int db_response_rows(const json_t *response);

/*
 * new in *out: {"decisions": [...]} of job as page asks (page->more and next_* set); each the
 * stored response object with its decision_id. -1 + *errp.
 */
int db_decisions_list(struct db *db, const char *job, struct db_page *page, json_t **out,
                      char **errp);
/*
 * new in *out: the newest decision of job with execute true (the client was told to apply
 * it), as db_decisions_list gives one (decision_id first); *out = NULL when there is none.
 * One read of the partial index decisions_scalings. -1 + *errp.
 */
int db_decision_executed(struct db *db, const char *job, json_t **out, char **errp);
/*
 * new in *out: the whole record of decision id (the response object, plus input, config,
 * raw targets, events, plugin calls, created_at); *out = NULL when there is none. -1 + *errp.
 */
int db_decision_get(struct db *db, int64_t id, json_t **out, char **errp);
/*
 * The newest decision of job whose sample's at is `at`: 1 with *id, *input_json and
 * *decision_json (the response's text as it was sent, without its decision_id), both new; 0
 * when there is none; -1 + *errp. *input_json is the request as sent but for its whitespace,
 * or, when the job's chunks of samples hold it (*from_samples set), the sample as the server
 * read it (pack_sample_text: the same sample, not the same text); "" when neither is kept.
 */
int db_decision_find(struct db *db, const char *job, int64_t at, int64_t *id, char **input_json,
                     bool *from_samples, char **decision_json, char **errp);
/*
 * Calls fn for each stored decision of job with at <= to and an id up to max_id (INT64_MAX:
 * all; db_history_last_id read with the deletions gives one snapshot's history), in id order:
 * the request's text (as sent, but for its whitespace; or the sample rebuilt from the job's
 * chunks of samples, pack_sample_text; "" when the sample is no longer kept: sample
 * retention), the effective options' text (config_json) and the response as sent (borrowed).
 * fn returning non-zero stops with that value. -1 + *errp.
 * The decisions are read in pages of DB_HISTORY_PAGE, each in a read transaction of its own,
 * and fn is called outside them: a replay that takes minutes never holds a snapshot longer
 * than one page's read, which would keep the write-ahead log from being checkpointed (see
 * db_wal_limit). So the caller must not be inside a read transaction.
 */
#define DB_HISTORY_PAGE 128
int db_history_each(struct db *db, const char *job, int64_t to, int64_t max_id,
                    int (*fn)(void *ud, int64_t id, int64_t at, const char *input,
                              const char *config, json_t *decision),
                    void *ud, char **errp);
/* The highest id of job's decisions into *id (0: none). -1 + *errp. */
int db_history_last_id(struct db *db, const char *job, int64_t *id, char **errp);
/*
 * new in *ids (*n of them, ascending): the decisions.id after which each DELETE of job
 * happened (rows from before migration 004 have none: the last decision created at or
 * before it, by the server clock). -1 + *errp.
 */
int db_job_deletions(struct db *db, const char *job, int64_t **ids, int *n, char **errp);
/* new in *out: {"events": [...]} of job, newest first, at most limit. -1 + *errp. */
int db_events_list(struct db *db, const char *job, int limit, json_t **out, char **errp);

#endif
