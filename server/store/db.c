/*
 * db.c - the store above its backends (see db.h, backend.h): the connection and its
 * transactions, each write statement's SQL, written once; the rows of each kind of write unit
 * (a decision's: its outcome with its events' texts, its options and its plugin calls' names
 * each stored once and found again, its sample's chunk with the job's state) and the one
 * transaction of a group; fault injection; retention's deletes; the write-ahead log's bound, where
 * the backend's log is the store's own (SQLite's). The reads are read.c's. Which backend runs a
 * statement, and in which dialect, is the struct store_backend's business: nothing here tests for
 * one.
 */
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "base/xmem.h"
#include "store/pack.h"
#include "store/query.h"

/* Units sent between two flushes of a pipeline: bounds what the server answers before its
 * answers are read. */
#define DB_PIPE_UNITS 32
/* Rows of each kind a write transaction remembers having stored. */
#define DB_TX_ROWS 8

/* A row stored once and found again (an option set, an outcome): its key
 * (every column that makes it that row, joined) and hash, and its id when it is known (0 in a
 * pipeline: the statement that uses it looks it up). */
struct tx_row {
    uint64_t hash;
    char *key;
    int64_t id;
    int64_t seq; /* which entry: a number of the connection's, never reused */
};
struct tx_rows {
    struct tx_row v[DB_TX_ROWS];
    int n;
};

struct db {
    const struct store_backend *be;
    void *c;      /* the backend's connection */
    int err_code; /* an injected failure's code (0: the backend's own, errcode) */
    bool pipe;    /* a pipelining transaction is open: results come at flush and commit */
    /* the rows the open write transaction found or added: its later decisions of the same
     * options or outcome (a group's units mostly share them) neither add nor look for
     * theirs; forgotten when the transaction ends, so that nothing another connection deletes
     * is assumed */
    struct tx_rows configs, outcomes;
    int64_t row_seq; /* the last tx_row.seq given */
    /* plugin_names rows (never deleted): kept for the connection's life once the transaction
     * that found or added them committed */
    struct db_name {
        char *key; /* plugin \x1f hook \x1f outcome */
        int64_t id;
        bool committed;
    } * names;
    int n_names, cap_names;
};

static void rows_forget(struct tx_rows *r)
{
    for (int i = 0; i < r->n; i++)
        free(r->v[i].key);
    r->n = 0;
}

/* The id of the row of key (hash h) the transaction stored: 1 with *id (0: not known yet, in
 * a pipeline), or 0 when it stored none. */
static int rows_find(const struct tx_rows *r, uint64_t h, const char *key, int64_t *id,
                     int64_t *seq)
{
    for (int i = 0; i < r->n; i++)
        if (r->v[i].hash == h && strcmp(r->v[i].key, key) == 0) {
            *id = r->v[i].id;
            *seq = r->v[i].seq;
            return 1;
        }
    return 0;
}

static void rows_add(struct tx_rows *r, uint64_t h, const char *key, int64_t id, int64_t seq)
{
    if (r->n == DB_TX_ROWS) { /* the oldest goes */
        free(r->v[0].key);
        memmove(&r->v[0], &r->v[1], (DB_TX_ROWS - 1) * sizeof r->v[0]);
        r->n--;
    }
    r->v[r->n++] = (struct tx_row){h, xstrdup(key), id, seq};
}

/* Forgets the rows the transaction stored; committed: its plugin names are kept. */
static void tx_end(struct db *db, bool committed)
{
    rows_forget(&db->configs);
    rows_forget(&db->outcomes);
    int k = 0;
    for (int i = 0; i < db->n_names; i++) {
        if (committed)
            db->names[i].committed = true;
        if (db->names[i].committed)
            db->names[k++] = db->names[i];
        else
            free(db->names[i].key);
    }
    db->n_names = k;
}

/* Fault injection (tests only): set by a test's thread, read by the writer's. */
static atomic_int fail_writes;
static atomic_int fail_code = DB_SQLITE_CONSTRAINT;

/* ------------------------------------------------------------ connection -- */

bool db_is_pg(const char *db)
{
    return db && (strncmp(db, "postgresql://", 13) == 0 || strncmp(db, "postgres://", 11) == 0);
}

struct db *db_wrap(const struct store_backend *be, void *conn)
{
    struct db *db = xcalloc(1, sizeof *db);
    db->be = be;
    db->c = conn;
    return db;
}

void db_close(struct db *db)
{
    if (!db)
        return;
    tx_end(db, false);
    for (int i = 0; i < db->n_names; i++)
        free(db->names[i].key);
    free(db->names);
    db->be->close(db->c);
    free(db);
}

int db_user_version(struct db *db)
{
    return db->be->version(db->c);
}

bool db_precompact(struct db *db)
{
    return db->be->compact_since > 0 && db_user_version(db) < db->be->compact_since;
}

bool db_pre012(struct db *db)
{
    return db->be->outcomes_since > 0 && db_user_version(db) < db->be->outcomes_since;
}

int db_script(struct db *db, const char *sql, char **errp)
{
    return db->be->script(db->c, sql, errp);
}

int db_exec(struct db *db, const struct db_sql *s, const struct db_param *p, int n, int64_t *out,
            char **errp)
{
    return db->be->send(db->c, s, p, n, out, errp);
}

int db_query(struct db *db, const struct db_sql *s, const struct db_param *p, int n,
             struct db_cur *c, char **errp)
{
    int rc = db->be->query(db->c, s, p, n, c, errp);
    c->be = db->be;
    return rc;
}

static int begin(struct db *db, enum db_tx tx, char **errp)
{
    tx_end(db, false);
    db->err_code = 0;
    db->pipe = tx == DB_TX_PIPE && db->be->pipelines;
    return db->be->begin(db->c, tx, errp);
}

int db_begin(struct db *db, char **errp)
{
    return begin(db, DB_TX_WRITE, errp);
}

int db_commit(struct db *db, char **errp)
{
    db->pipe = false;
    int rc = db->be->commit(db->c, errp);
    tx_end(db, rc == 0);
    return rc;
}

void db_rollback(struct db *db)
{
    tx_end(db, false);
    db->pipe = false;
    db->be->rollback(db->c);
}

int db_read_begin(struct db *db, char **errp)
{
    return db->be->begin(db->c, DB_TX_READ, errp);
}

void db_read_end(struct db *db)
{
    char *e = NULL;
    db->be->commit(db->c, &e);
    free(e);
}

/* ------------------------------------------------------------------- WAL -- */

int db_wal_limit(struct db *db, int64_t bytes, char **errp)
{
    return db->be->wal_limit ? db->be->wal_limit(db->c, bytes, errp) : 0;
}

int64_t db_wal_bytes(const struct db *db)
{
    return db->be->wal_bytes ? db->be->wal_bytes(db->c) : 0;
}

int db_wal_truncate(struct db *db, int busy_ms, char **errp)
{
    return db->be->wal_truncate ? db->be->wal_truncate(db->c, busy_ms, errp) : 0;
}

/* --------------------------------------------------------------- faults -- */

void db_fail_next_writes(int n)
{
    db_fail_next_writes_code(n, DB_SQLITE_CONSTRAINT);
}

void db_fail_next_writes_code(int n, int code)
{
    atomic_store(&fail_code, code);
    atomic_store(&fail_writes, n);
}

/* An injected failure is due: takes it, with its code and message. */
static int injected(struct db *db, char **errp)
{
    int n = atomic_load(&fail_writes);
    while (n > 0 && !atomic_compare_exchange_weak(&fail_writes, &n, n - 1))
        ;
    if (n <= 0)
        return 0;
    db->err_code = atomic_load(&fail_code);
    *errp = xasprintf("injected write failure: %s", store_sqlite.errstr(db->err_code));
    return 1;
}

int db_last_errcode(const struct db *db)
{
    return db->err_code ? db->err_code : db->be->errcode(db->c);
}

enum db_fault db_fault_of(int code)
{
    /* The codes are SQLite's (those fault injection takes too) or this module's own. */
    return store_sqlite.fault_of(code);
}

static const struct db_sql SQL_PROBE = {"INSERT INTO store_probe (id, at) VALUES (1, ?1) "
                                        "ON CONFLICT (id) DO UPDATE SET at = excluded.at",
                                        NULL, "probe", 0};

int db_probe(struct db *db, int64_t now, int busy_ms, char **errp)
{
    int rc = -1;
    if (injected(db, errp))
        return -1;
    db->be->lock_wait(db->c, busy_ms);
    if (db_begin(db, errp) == 0 && db_exec(db, &SQL_PROBE, DB_ARGS(DB_INT(now)), NULL, errp) >= 0)
        rc = db_commit(db, errp);
    if (rc < 0)
        db_rollback(db);
    db->be->lock_wait(db->c, -1);
    return rc;
}

/* ---------------------------------------------------------------- writes -- */

struct db_write *db_write_new(enum db_write_kind kind, const char *job)
{
    struct db_write *w = xcalloc(1, sizeof *w);
    w->kind = kind;
    w->job = xstrdup(job);
    w->last_at = INT64_MIN;
    w->expect_version = -1;
    w->sample_cutoff = INT64_MIN;
    return w;
}

void db_write_free(struct db_write *w)
{
    if (!w)
        return;
    for (int i = 0; i < w->n_v; i++) {
        struct db_vrow *v = &w->v[i];
        free(v->vertex);
        free(v->reason);
        free(v->constraints);
        free(v->message);
        free(v->evaluated_json);
    }
    free(w->v);
    for (int i = 0; i < w->n_e; i++) {
        free(w->e[i].type);
        free(w->e[i].reason);
        free(w->e[i].message);
    }
    free(w->e);
    for (int i = 0; i < w->n_p; i++) {
        free(w->p[i].plugin);
        free(w->p[i].hook);
        free(w->p[i].outcome);
        free(w->p[i].error);
    }
    free(w->p);
    free(w->revision);
    free(w->files_json);
    free(w->job);
    free(w->job_config_json);
    free(w->state_bin);
    free(w->samples);
    free(w->samples_closed);
    for (int i = 0; i < w->n_ws; i++)
        free(w->ws[i].blob);
    free(w->ws);
    free(w->action);
    free(w->reason);
    free(w->message);
    free(w->input_json);
    free(w->config_json);
    free(w->decision_json);
    free(w->response_json);
    free(w->policy_revision);
    free(w->config_hash);
    free(w->error);
    free(w);
}

/*
 * The jobs row of a unit, fenced by its version and generation (db_write.expect_version,
 * expect_generation; ?5 and ?6 for the state, ?4 and ?5 for the config): each statement in
 * three forms, [0] expect -1 writes whatever is there (a row it inserts takes the unit's
 * generation); [1] a job new to the unit (expect 0) is inserted with the unit's generation,
 * or updated where its version is still 0 (a row from before migration 010), taking the
 * unit's generation; [2] a row known to the unit (expect > 0) is updated only where its
 * version and generation are still those. Each adds 1 to the version and returns it: no row
 * returned is a fence that did not hold (on PostgreSQL an error, backend.h DB_SQL_FENCED).
 */
#define JOB_STATE_UPSERT                                                                           \
    "INSERT INTO jobs (job, created_at, state_bin, last_at, version, generation, samples) "        \
    "VALUES (?1, ?2, ?3, ?4, 1, ?6, ?7) ON CONFLICT (job) DO UPDATE SET state_bin = "              \
    "excluded.state_bin, last_at = excluded.last_at, version = jobs.version + 1, "                 \
    "samples = coalesce(excluded.samples, jobs.samples)"
static const struct db_sql SQL_JOB_STATE[3] = {
    {JOB_STATE_UPSERT " RETURNING version", NULL, "update job state", 0},
    {JOB_STATE_UPSERT ", generation = excluded.generation WHERE jobs.version = ?5 "
                      "RETURNING version",
     NULL, "update job state", DB_SQL_FENCED},
    {"UPDATE jobs SET state_bin = ?3, last_at = ?4, version = version + 1, "
     "samples = coalesce(?7, samples) "
     "WHERE job = ?1 AND version = ?5 AND generation = ?6 RETURNING version",
     NULL, "update job state", DB_SQL_FENCED}};
#define JOB_CONFIG_UPSERT                                                                          \
    "INSERT INTO jobs (job, created_at, config_json, version, generation) "                        \
    "VALUES (?1, ?2, ?3, 1, ?5) ON CONFLICT (job) DO UPDATE SET config_json = "                    \
    "excluded.config_json, version = jobs.version + 1"
static const struct db_sql SQL_JOB_CONFIG[3] = {
    {JOB_CONFIG_UPSERT " RETURNING version", NULL, "update job config", 0},
    {JOB_CONFIG_UPSERT ", generation = excluded.generation WHERE jobs.version = ?4 "
                       "RETURNING version",
     NULL, "update job config", DB_SQL_FENCED},
    {"UPDATE jobs SET config_json = ?3, version = version + 1 "
     "WHERE job = ?1 AND version = ?4 AND generation = ?5 RETURNING version",
     NULL, "update job config", DB_SQL_FENCED}};
/* [0] unchecked, [1] checked (?2 >= 0, ?3 the generation): no row deleted is a fence that did
 * not hold. On PostgreSQL the check raises, but not for version 0 where there is no row (the
 * EXISTS sees the row as it was before the statement); its row says it held. */
#define JOB_DELETE_FENCED "DELETE FROM jobs WHERE job = ?1 AND version = ?2 AND generation = ?3"
static const struct db_sql SQL_JOB_DELETE[2] = {
    {"DELETE FROM jobs WHERE job = ?1", NULL, "delete job", 0},
    {JOB_DELETE_FENCED,
     "WITH d AS (" JOB_DELETE_FENCED " RETURNING 1) SELECT 1 "
     "UNION ALL SELECT governor_fenced(?1) WHERE NOT EXISTS (SELECT 1 FROM d) "
     "AND (?2 > 0 OR EXISTS (SELECT 1 FROM jobs WHERE job = ?1))",
     "delete job", 0}};
/* The chunk of samples a job was filling, kept in sample_chunks before its row goes (?2 < 0:
 * unchecked; else where the delete's fence holds; ?4 the server clock). */
static const struct db_sql SQL_SAMPLES_KEEP = {
    "INSERT INTO sample_chunks (job, first_id, created_at, chunk) "
    "SELECT job, samples_first_id, ?4, samples FROM jobs WHERE job = ?1 AND samples IS NOT NULL "
    "AND samples_first_id IS NOT NULL AND (?2 < 0 OR (version = ?2 AND generation = ?3))",
    NULL, "keep a job's samples", 0};
static const struct db_sql SQL_CONFIG_CHANGE = {
    "INSERT INTO config_changes (job, at, config_json, after_decision) "
    "VALUES (?1, ?2, ?3, (SELECT max(id) FROM decisions))",
    NULL, "insert config_changes", 0};
/*
 * Rows stored once and found again (db.h): a new row unless one of the same columns is there (a
 * hash alone could stand for two, written by two versions of the code); the statements that
 * use them take the first, by its id when the transaction knows it (SQLite always; a pipeline
 * does not), else by a lookup of the same columns.
 *
 * The effective options: ?1 their hash, ?2 their text.
 */
#define CONFIG_MATCH(h, t) "hash = " h " AND config_json = " t
#define CONFIG_ID(id, h, t)                                                                        \
    "coalesce(CAST(" id " AS BIGINT), (SELECT id FROM decision_configs WHERE " CONFIG_MATCH(       \
        h, t) " ORDER BY id LIMIT 1))"
static const struct db_sql SQL_CONFIG_ADD = {
    "INSERT INTO decision_configs (hash, config_json) SELECT ?1, ?2 WHERE NOT EXISTS "
    "(SELECT 1 FROM decision_configs WHERE " CONFIG_MATCH("?1", "?2") ")",
    NULL, "insert decision_configs", DB_SQL_NEW_ID};
static const struct db_sql SQL_CONFIG_FIRST = {
    "SELECT id FROM decision_configs WHERE " CONFIG_MATCH("?1", "?2") " ORDER BY id LIMIT 1", NULL,
    "read decision_configs", 0};
/* An outcome: ?1 hash, ?2 action, ?3 reason, ?4 message, ?5 message_parts, ?6 response,
 * ?7 policy_revision, ?8 config id (NULL: look it up by ?9 hash, ?10 text), ?11 vertices,
 * ?12 events. */
#define SAME(col, v) "(" col " = " v " OR (" col " IS NULL AND " v " IS NULL))"
#define OUTCOME_MATCH(h, a, r, m, mp, re, rev, cid, v, ev)                                         \
    "hash = " h " AND action = " a " AND reason = " r " AND " SAME("message", m) " AND " SAME(     \
        "message_parts", "CAST(" mp " AS BIGINT)") " AND " SAME("response",                        \
                                                                re) " AND policy_revision = " rev  \
                                                                    " AND config_id = " cid        \
                                                                    " AND vertices = " v           \
                                                                    " AND " SAME("events", ev)
#define OUTCOME_ARGS                                                                               \
    OUTCOME_MATCH("?1", "?2", "?3", "?4", "?5", "?6", "?7", CONFIG_ID("?8", "?9", "?10"), "?11",   \
                  "?12")
static const struct db_sql SQL_OUTCOME_ADD = {
    "INSERT INTO decision_outcomes (hash, action, reason, message, message_parts, response, "
    "policy_revision, config_id, vertices, events) SELECT ?1, ?2, ?3, ?4, CAST(?5 AS BIGINT), ?6, "
    "?7, " CONFIG_ID("?8", "?9", "?10") ", ?11, ?12 WHERE NOT EXISTS (SELECT 1 FROM "
                                        "decision_outcomes WHERE " OUTCOME_ARGS ")",
    NULL, "insert decision_outcomes", DB_SQL_NEW_ID};
static const struct db_sql SQL_OUTCOME_FIRST = {
    "SELECT id FROM decision_outcomes WHERE " OUTCOME_ARGS " ORDER BY id LIMIT 1", NULL,
    "read decision_outcomes", 0};
/* ?8: the outcome's id, else found by ?9 to ?20 (SQL_OUTCOME_ADD's ?1 to ?12). */
static const struct db_sql SQL_DECISION = {
    "INSERT INTO decisions (job, at, execute, created_at, calls, input, decision_json, "
    "outcome_id) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, coalesce(CAST(?8 AS BIGINT), "
    "(SELECT id FROM decision_outcomes WHERE " OUTCOME_MATCH(
        "?9", "?10", "?11", "?12", "?13", "?14", "?15", CONFIG_ID("?16", "?17", "?18"), "?19",
        "?20") " ORDER BY id LIMIT 1)))",
    NULL, "insert decision", DB_SQL_NEW_ID};
/* A plugin call's names: ?1 plugin, ?2 hook, ?3 outcome. */
#define NAME_MATCH "plugin = ?1 AND hook = ?2 AND outcome = ?3"
static const struct db_sql SQL_NAME_ADD = {
    "INSERT INTO plugin_names (plugin, hook, outcome) SELECT ?1, ?2, ?3 WHERE NOT EXISTS "
    "(SELECT 1 FROM plugin_names WHERE " NAME_MATCH ")",
    NULL, "insert plugin_names", DB_SQL_NEW_ID};
static const struct db_sql SQL_NAME_FIRST = {"SELECT id FROM plugin_names WHERE " NAME_MATCH
                                             " ORDER BY id LIMIT 1",
                                             NULL, "read plugin_names", 0};
/* The chunk of samples a decision closed (?1 its job, ?2 the server clock, ?3 the chunk), whose
 * first decision is the job's samples_first_id; and the one it opened, whose first decision is
 * the one just inserted (?1). */
static const struct db_sql SQL_SAMPLES_CLOSED = {
    "INSERT INTO sample_chunks (job, first_id, created_at, chunk) SELECT ?1, samples_first_id, "
    "?2, ?3 FROM jobs WHERE job = ?1 AND samples_first_id IS NOT NULL",
    NULL, "insert sample_chunks", 0};
static const struct db_sql SQL_SAMPLES_OPENED = {
    "UPDATE jobs SET samples_first_id = ?1 WHERE job = ?2", NULL, "update job samples", DB_SQL_ID1};
/* An event: of the decision just inserted (?1), its place in its outcome's events (?4), which
 * hold its texts; or of none, with its texts (?8 to ?10). */
#define EVENT_INSERT(decision_id)                                                                  \
    "INSERT INTO events (decision_id, job, at, ord, count, suppressed, applied, type, reason, "    \
    "message) VALUES (" decision_id ", ?2, ?3, CAST(?4 AS BIGINT), ?5, ?6, CAST(?7 AS BIGINT), "   \
    "?8, ?9, ?10)"
static const struct db_sql SQL_EVENT = {EVENT_INSERT("?1"), NULL, "insert event", DB_SQL_ID1};
static const struct db_sql SQL_EVENT_LOOSE = {EVENT_INSERT("NULL"), NULL, "insert event", 0};
static const struct db_sql SQL_REVISION = {
    "INSERT INTO policy_revisions (revision, loaded_at, files_json) VALUES (?1, ?2, ?3) "
    "ON CONFLICT (revision) DO NOTHING",
    NULL, "insert policy revision", 0};
static const struct db_sql SQL_WINDOW_DROP = {"DELETE FROM job_window WHERE job = ?1 AND seq < ?2",
                                              NULL, "drop window samples", 0};
static const struct db_sql SQL_WINDOW_ADD = {
    "INSERT INTO job_window (job, seq, sample) VALUES (?1, ?2, ?3) "
    "ON CONFLICT (job, seq) DO UPDATE SET sample = excluded.sample",
    NULL, "add a window sample", 0};
static const struct db_sql SQL_WINDOW_FORGET = {"DELETE FROM job_window WHERE job = ?1", NULL,
                                                "delete job window", 0};

/* w's fence did not hold: nothing of it is written (the caller returns before its rows). */
static int fenced(struct db_write *w)
{
    w->fault = DB_FAULT_FENCED;
    free(w->error);
    w->error = xasprintf("job \"%s\": its stored version is no longer %lld: another process "
                         "wrote the job first",
                         w->job, (long long)w->expect_version);
    return 1;
}

/*
 * The jobs row of w by its fence's form of the statement (forms[3], see above), with its n
 * parameters p: 0 with w->new_version (in a pipeline, once it is read), 1 when the fence did
 * not hold (nothing written), -1 + *errp.
 */
static int job_row(struct db *db, struct db_write *w, const struct db_sql *forms,
                   const struct db_param *p, int n, char **errp)
{
    int form = w->expect_version < 0 ? 0 : w->expect_version == 0 ? 1 : 2;
    int rows = db_exec(db, &forms[form], p, n, &w->new_version, errp);
    if (rows < 0)
        return -1;
    return rows == 0 && form > 0 && !db->pipe ? fenced(w) : 0;
}

int db_window_write(struct db *db, const char *job, int64_t seq0, const struct db_wsample *ws,
                    int n, char **errp)
{
    if (db_exec(db, &SQL_WINDOW_DROP, DB_ARGS(DB_TEXT(job), DB_INT(seq0)), NULL, errp) < 0)
        return -1;
    for (int i = 0; i < n; i++)
        if (db_exec(db, &SQL_WINDOW_ADD,
                    DB_ARGS(DB_TEXT(job), DB_INT(ws[i].seq), DB_BLOB(ws[i].blob, ws[i].len)), NULL,
                    errp) < 0)
            return -1;
    return 0;
}

/*
 * The id of a row stored once (rows: the transaction's of its kind, key: what tells it from
 * the others, h: a hash of that), found or added unless the transaction did already: add (its
 * parameters p, n) inserts it unless it is there, first (the same parameters) finds it. *id is
 * 0 when it is not known yet (a pipeline's results come later; the statement that uses it looks
 * it up); *seq names the transaction's entry for it. -1 + *errp.
 */
static int stored_once(struct db *db, struct tx_rows *rows, uint64_t h, const char *key,
                       const struct db_sql *add, const struct db_sql *first,
                       const struct db_param *p, int n, int64_t *id, int64_t *seq, char **errp)
{
    if (rows_find(rows, h, key, id, seq))
        return 0;
    *id = 0;
    int added = db_exec(db, add, p, n, id, errp);
    if (added < 0)
        return -1;
    if (added == 0 && !db->pipe) { /* stored already: which one */
        struct db_cur c;
        int rc = db_query(db, first, p, n, &c, errp);
        if (rc == 0 && db_next(&c))
            *id = db_int(&c, 0);
        else if (db_finish(&c, rc, errp) < 0)
            return -1;
        db_end(&c);
    }
    *seq = ++db->row_seq;
    rows_add(rows, h, key, *id, *seq);
    return 0;
}

/* key (new): the texts joined by \x1f, NULL as \x1e; *h their hash (pack_hash_text). */
static char *row_key(const char *const *t, int n, uint64_t *h)
{
    struct text k = {0};
    *h = PACK_HASH_INIT;
    for (int i = 0; i < n; i++) {
        *h = pack_hash_text(*h, t[i]);
        if (i)
            text_add(&k, "\x1f", 1);
        pack_text_str(&k, t[i] ? t[i] : "\x1e");
    }
    if (!k.p)
        k.p = xstrdup("");
    return k.p;
}

/* The events rows of w: of its decision (the one just inserted: their texts are its
 * outcome's), or of none (with their texts). */
static int insert_events(struct db *db, struct db_write *w, bool of_decision, char **errp)
{
    for (int i = 0; i < w->n_e; i++) {
        const struct db_erow *e = &w->e[i];
        const char *reason = e->reason ? e->reason : "";
        struct db_param applied = DB_NULL;
        if (strcmp(reason, "ScalingApplied") == 0 || strcmp(reason, "ScalingNotApplied") == 0)
            applied = DB_INT(reason[7] == 'A');
        if (db_exec(db, of_decision ? &SQL_EVENT : &SQL_EVENT_LOOSE,
                    DB_ARGS(DB_INT(w->decision_id), DB_TEXT(w->job), DB_INT(w->at),
                            of_decision ? DB_INT(i) : DB_NULL, DB_INT(e->count),
                            DB_INT(e->suppressed), applied,
                            DB_TEXT(of_decision ? NULL
                                    : e->type   ? e->type
                                                : ""),
                            DB_TEXT(of_decision ? NULL : reason),
                            DB_TEXT(of_decision ? NULL : e->message)),
                    NULL, errp) < 0)
            return -1;
    }
    return 0;
}

/* new: w's events' texts as decision_outcomes.events, [[type, reason, message], ...]; NULL when
 * it has none. */
static char *events_text(const struct db_write *w)
{
    struct text t = {0};
    for (int i = 0; i < w->n_e; i++) {
        pack_text_str(&t, i ? ",[" : "[[");
        text_json_str(&t, w->e[i].type ? w->e[i].type : "");
        text_add(&t, ",", 1);
        text_json_str(&t, w->e[i].reason ? w->e[i].reason : "");
        text_add(&t, ",", 1);
        text_json_str(&t, w->e[i].message);
        text_add(&t, "]", 1);
    }
    if (t.p)
        text_add(&t, "]", 1);
    return t.p;
}

static int apply_policy(struct db *db, struct db_write *w, char **errp)
{
    if (w->revision && db_exec(db, &SQL_REVISION,
                               DB_ARGS(DB_TEXT(w->revision), DB_INT(w->loaded_at),
                                       DB_TEXT(w->files_json ? w->files_json : "{}")),
                               NULL, errp) < 0)
        return -1;
    return insert_events(db, w, false, errp);
}

/*
 * The vertices whose messages the decision's message ends with, joined by "; " in their order
 * (how the core writes a scaling's message): their bitmask (0: none), and in *head_len the
 * length of what comes before them. The decision's message is stored as that head.
 */
static int64_t message_parts(const struct db_write *w, size_t *head_len)
{
    const char *m = w->message;
    size_t pos = m ? strlen(m) : 0;
    int64_t parts = 0;
    for (int i = (w->n_v < 62 ? w->n_v : 62) - 1; i >= 0 && m; i--) {
        const char *vm = w->v[i].message;
        size_t n = vm ? strlen(vm) : 0, sep = parts ? 2 : 0;
        if (n == 0 || n + sep > pos || memcmp(m + pos - n - sep, vm, n) != 0 ||
            (sep && memcmp(m + pos - sep, "; ", 2) != 0))
            continue;
        parts |= (int64_t)1 << i;
        pos -= n + sep;
    }
    *head_len = pos;
    return parts;
}

/*
 * The plugin_names id of (plugin, hook, outcome): known to the connection, or found or added
 * now (not in a pipeline: db_write_group finds them before it opens one). -1 + *errp.
 */
static int name_id(struct db *db, const struct db_prow *p, int64_t *id, char **errp)
{
    const char *t[3] = {p->plugin ? p->plugin : "", p->hook ? p->hook : "",
                        p->outcome ? p->outcome : ""};
    uint64_t h;
    char *key = row_key(t, 3, &h);
    for (int i = 0; i < db->n_names; i++)
        if (strcmp(db->names[i].key, key) == 0) {
            *id = db->names[i].id;
            free(key);
            return 0;
        }
    if (db->pipe) {
        *errp = xasprintf("plugin name \"%s\" not known before the pipeline", t[0]);
        free(key);
        return -1;
    }
    struct db_cur c;
    int rc =
        db_exec(db, &SQL_NAME_ADD, DB_ARGS(DB_TEXT(t[0]), DB_TEXT(t[1]), DB_TEXT(t[2])), id, errp);
    if (rc == 0) { /* stored already: which one */
        rc = db_query(db, &SQL_NAME_FIRST, DB_ARGS(DB_TEXT(t[0]), DB_TEXT(t[1]), DB_TEXT(t[2])), &c,
                      errp);
        bool found = rc == 0 && db_next(&c);
        if (found)
            *id = db_int(&c, 0);
        else if ((rc = db_finish(&c, rc, errp)) == 0) {
            *errp = xstrdup("read plugin_names: no row");
            rc = -1;
        }
        db_end(&c);
    }
    if (rc < 0) {
        free(key);
        return -1;
    }
    if (db->n_names == db->cap_names) {
        db->cap_names = db->cap_names ? 2 * db->cap_names : 16;
        db->names = xrealloc(db->names, (size_t)db->cap_names * sizeof *db->names);
    }
    db->names[db->n_names++] = (struct db_name){key, *id, false};
    return 0;
}

/* new in *out: w's plugin calls as decisions.calls, [[name id, ...], [duration_us, ...]] and,
 * when any call has one, [error or null, ...]; NULL when it has none. -1 + *errp. */
static int calls_text(struct db *db, const struct db_write *w, char **out, char **errp)
{
    struct text t = {0};
    bool errors = false;
    *out = NULL;
    if (w->n_p == 0)
        return 0;
    for (int i = 0; i < w->n_p; i++) {
        int64_t id;
        if (name_id(db, &w->p[i], &id, errp) < 0) {
            free(t.p);
            return -1;
        }
        pack_text_str(&t, i ? "," : "[[");
        pack_text_int(&t, id);
        errors |= w->p[i].error != NULL;
    }
    for (int i = 0; i < w->n_p; i++) {
        pack_text_str(&t, i ? "," : "],[");
        pack_text_int(&t, w->p[i].duration_us);
    }
    for (int i = 0; errors && i < w->n_p; i++) {
        pack_text_str(&t, i ? "," : "],[");
        text_json_str(&t, w->p[i].error);
    }
    pack_text_str(&t, "]]");
    *out = t.p;
    return 0;
}

/* The decision row, its outcome's, options' and calls' rows, and its id (w->decision_id; in a
 * pipeline, later). */
static int insert_decision(struct db *db, struct db_write *w, char **errp)
{
    const char *hash = w->config_hash ? w->config_hash : "";
    const char *cfg = w->config_json ? w->config_json : "{}";
    unsigned char *input = NULL;
    size_t input_len = 0, head;
    char *msg = NULL, *calls = NULL, *vertices = NULL, *events = NULL, *okey = NULL;
    int64_t parts = message_parts(w, &head), cid, oid, cseq, oseq;
    int rc = -1;
    /* An option set is told from another by its text; its hash only sorts them (the text is
     * some 4 KB: hashed whole for every decision it would cost more than its row). */
    if (stored_once(db, &db->configs, pack_hash_text(PACK_HASH_INIT, hash), cfg, &SQL_CONFIG_ADD,
                    &SQL_CONFIG_FIRST, DB_ARGS(DB_TEXT(hash), DB_TEXT(cfg)), &cid, &cseq,
                    errp) < 0 ||
        calls_text(db, w, &calls, errp) < 0)
        goto out;
    if (parts) {
        msg = xmalloc(head + 1);
        memcpy(msg, w->message, head);
        msg[head] = '\0';
    }
    const char *message = parts ? msg : w->message;
    char pbuf[24];
    snprintf(pbuf, sizeof pbuf, "%lld", (long long)parts);
    vertices = pack_vertices(w->v, w->n_v);
    events = events_text(w);
    /* A unit without its action, reason or revision is refused by the store (NOT NULL). */
    const char *ot[9] = {
        w->action, w->reason, message, parts ? pbuf : NULL, w->response_json, w->policy_revision,
        hash,      vertices,  events};
    /* the hash as migration 012's gov_hash computes it; the key the same columns and the
     * transaction's entry of the option set (its text) */
    uint64_t oh;
    char *k9 = row_key(ot, 9, &oh);
    okey = xasprintf("%s\x1f%lld", k9, (long long)cseq);
    free(k9);
    int64_t hs = pack_hash_sql(oh);
    struct db_param mp = parts ? DB_INT(parts) : DB_NULL, cp = cid ? DB_INT(cid) : DB_NULL;
    if (stored_once(db, &db->outcomes, oh, okey, &SQL_OUTCOME_ADD, &SQL_OUTCOME_FIRST,
                    DB_ARGS(DB_INT(hs), DB_TEXT(ot[0]), DB_TEXT(ot[1]), DB_TEXT(message), mp,
                            DB_TEXT(w->response_json), DB_TEXT(ot[5]), cp, DB_TEXT(hash),
                            DB_TEXT(cfg), DB_TEXT(vertices), DB_TEXT(events)),
                    &oid, &oseq, errp) < 0)
        goto out;
    if (!w->samples) {
        const char *in = w->input_json ? w->input_json : "";
        pack_input(in, strlen(in), &input, &input_len);
    }
    /* With the outcome's id known, its columns are not sent again. */
    bool known = oid != 0;
    rc = db_exec(db, &SQL_DECISION,
                 DB_ARGS(DB_TEXT(w->job), DB_INT(w->at), DB_INT(w->execute), DB_INT(w->now),
                         DB_TEXT(calls), input ? DB_BLOB(input, input_len) : DB_NULL,
                         DB_TEXT(w->keep_response ? w->decision_json : NULL),
                         known ? DB_INT(oid) : DB_NULL, known ? DB_NULL : DB_INT(hs),
                         DB_TEXT(known ? NULL : ot[0]), DB_TEXT(known ? NULL : ot[1]),
                         DB_TEXT(known ? NULL : message), known ? DB_NULL : mp,
                         DB_TEXT(known ? NULL : w->response_json), DB_TEXT(known ? NULL : ot[5]),
                         known ? DB_NULL : cp, DB_TEXT(known ? NULL : hash),
                         DB_TEXT(known ? NULL : cfg), DB_TEXT(known ? NULL : vertices),
                         DB_TEXT(known ? NULL : events)),
                 &w->decision_id, errp) < 0
             ? -1
             : 0;
out:
    free(input);
    free(msg);
    free(calls);
    free(vertices);
    free(events);
    free(okey);
    return rc;
}

/* The chunks of samples of w's decision: the one it closed kept, the one it opened begun at
 * this decision (the chunk itself is in the jobs row). */
static int samples_rows(struct db *db, struct db_write *w, char **errp)
{
    if (w->samples_closed && db_exec(db, &SQL_SAMPLES_CLOSED,
                                     DB_ARGS(DB_TEXT(w->job), DB_INT(w->now),
                                             DB_BLOB(w->samples_closed, w->samples_closed_len)),
                                     NULL, errp) < 0)
        return -1;
    if (w->samples && w->samples_new &&
        db_exec(db, &SQL_SAMPLES_OPENED, DB_ARGS(DB_INT(w->decision_id), DB_TEXT(w->job)), NULL,
                errp) < 0)
        return -1;
    return 0;
}

/* A decision's rows; its jobs row first, so that a fence that does not hold writes none. */
static int apply_decision(struct db *db, struct db_write *w, char **errp)
{
    int rc =
        job_row(db, w, SQL_JOB_STATE,
                DB_ARGS(DB_TEXT(w->job), DB_INT(w->now), DB_BLOB(w->state_bin, w->state_bin_len),
                        w->last_at == INT64_MIN ? DB_NULL : DB_INT(w->last_at),
                        DB_INT(w->expect_version), DB_INT(w->expect_generation),
                        w->samples ? DB_BLOB(w->samples, w->samples_len) : DB_NULL),
                errp);
    if (rc != 0)
        return rc < 0 ? -1 : 0;
    if (insert_decision(db, w, errp) < 0 || insert_events(db, w, true, errp) < 0 ||
        samples_rows(db, w, errp) < 0)
        return -1;
    return db_window_write(db, w->job, w->window_seq0, w->ws, w->n_ws, errp);
}

/* A job's config change (layer: its new stored layer) or deletion (layer NULL). */
static int apply_config(struct db *db, struct db_write *w, const char *layer, char **errp)
{
    if (w->kind == DB_W_JOB_CONFIG) {
        int rc = job_row(db, w, SQL_JOB_CONFIG,
                         DB_ARGS(DB_TEXT(w->job), DB_INT(w->now), DB_TEXT(layer),
                                 DB_INT(w->expect_version), DB_INT(w->expect_generation)),
                         errp);
        if (rc != 0)
            return rc < 0 ? -1 : 0;
    } else {
        bool check = w->expect_version >= 0;
        if (db_exec(db, &SQL_SAMPLES_KEEP,
                    DB_ARGS(DB_TEXT(w->job), DB_INT(check ? w->expect_version : -1),
                            DB_INT(w->expect_generation), DB_INT(w->now)),
                    NULL, errp) < 0)
            return -1;
        int rows = db_exec(
            db, &SQL_JOB_DELETE[check],
            DB_ARGS(DB_TEXT(w->job), DB_INT(w->expect_version), DB_INT(w->expect_generation)), NULL,
            errp);
        if (rows < 0)
            return -1;
        if (check && rows == 0 && !db->pipe) {
            fenced(w);
            return 0;
        }
        w->new_version = 0;
        if (db_exec(db, &SQL_WINDOW_FORGET, DB_ARGS(DB_TEXT(w->job)), NULL, errp) < 0)
            return -1;
    }
    return db_exec(db, &SQL_CONFIG_CHANGE, DB_ARGS(DB_TEXT(w->job), DB_INT(w->now), DB_TEXT(layer)),
                   NULL, errp) < 0
               ? -1
               : 0;
}

/*
 * Retention: ids grow with commit order and created_at is the server clock at the request,
 * so the old rows are a prefix of the table by id. A batch takes the first `batch` rows by
 * id and deletes the leading run of those older than the cutoff: a few hundred index reads,
 * never a scan of the table (a clock step back only delays a deletion). What only the deleted
 * decisions used goes with them: their outcomes and the option sets only those outcomes used
 * (each found through an index on its users).
 */
#define RET(name, sql) static const struct db_sql name = {sql, NULL, "retention", 0}
RET(SQL_RET_DECISIONS, "SELECT id, created_at FROM decisions ORDER BY id LIMIT ?1");
RET(SQL_RET_EVENTS, "DELETE FROM events WHERE decision_id <= ?1");
RET(SQL_RET_EVENTS_LOOSE, "DELETE FROM events WHERE decision_id IS NULL AND at < ?1");
/* The option sets that only the outcomes of the decisions up to ?1 use (decisions_outcome and
 * decision_outcomes_config keep it to one probe an outcome), before those outcomes go. */
RET(SQL_RET_CONFIGS,
    "DELETE FROM decision_configs WHERE id IN (SELECT o.config_id FROM decision_outcomes o "
    "WHERE o.id IN (SELECT outcome_id FROM decisions WHERE id <= ?1)) AND NOT EXISTS "
    "(SELECT 1 FROM decision_outcomes o JOIN decisions n ON n.outcome_id = o.id "
    "WHERE o.config_id = decision_configs.id AND n.id > ?1)");
RET(SQL_RET_OUTCOMES,
    "DELETE FROM decision_outcomes WHERE id IN (SELECT outcome_id FROM decisions WHERE id <= ?1) "
    "AND NOT EXISTS (SELECT 1 FROM decisions n WHERE n.outcome_id = decision_outcomes.id "
    "AND n.id > ?1)");
RET(SQL_RET_DECISION, "DELETE FROM decisions WHERE id <= ?1");
RET(SQL_RET_CHANGES, "SELECT id, at FROM config_changes ORDER BY id LIMIT ?1");
RET(SQL_RET_CHANGE, "DELETE FROM config_changes WHERE id <= ?1");
/* At most ?2 chunks of samples closed before the samples' cutoff ?1 (sample_chunks_created). */
RET(SQL_RET_SAMPLES, "DELETE FROM sample_chunks WHERE (job, first_id) IN (SELECT job, first_id "
                     "FROM sample_chunks WHERE created_at < ?1 ORDER BY created_at LIMIT ?2)");

/* The last id of the leading run of rows (id, time) with time < cutoff; *n their count. */
static int old_prefix(struct db *db, const struct db_sql *s, struct db_write *w, int64_t *last,
                      int *n, char **errp)
{
    struct db_cur c;
    bool more = false;
    *last = INT64_MIN;
    *n = 0;
    int rc = db_query(db, s, DB_ARGS(DB_INT(w->batch)), &c, errp);
    while (rc == 0 && (more = db_next(&c)) && db_int(&c, 1) < w->cutoff) {
        *last = db_int(&c, 0);
        (*n)++;
    }
    if (rc == 0 && !more)
        rc = db_done(&c, errp);
    db_end(&c);
    return rc;
}

static int delete_upto(struct db *db, const struct db_sql *s, int64_t id, char **errp)
{
    return db_exec(db, s, DB_ARGS(DB_INT(id)), NULL, errp) < 0 ? -1 : 0;
}

static int apply_retention(struct db *db, struct db_write *w, char **errp)
{
    int64_t last;
    int n, m;
    w->deleted = 0;
    w->more = false;
    if (w->batch <= 0)
        w->batch = 500;
    int leader = db->be->leader(db->c, errp);
    if (leader <= 0)
        return leader;
    if (old_prefix(db, &SQL_RET_DECISIONS, w, &last, &n, errp) < 0)
        return -1;
    if (n > 0 && (delete_upto(db, &SQL_RET_EVENTS, last, errp) < 0 ||
                  delete_upto(db, &SQL_RET_CONFIGS, last, errp) < 0 ||
                  delete_upto(db, &SQL_RET_OUTCOMES, last, errp) < 0 ||
                  delete_upto(db, &SQL_RET_DECISION, last, errp) < 0))
        return -1;
    if (delete_upto(db, &SQL_RET_EVENTS_LOOSE, w->cutoff, errp) < 0 ||
        old_prefix(db, &SQL_RET_CHANGES, w, &last, &m, errp) < 0)
        return -1;
    if (m > 0 && delete_upto(db, &SQL_RET_CHANGE, last, errp) < 0)
        return -1;
    /* Samples go at their own cutoff, and with the decisions at theirs. */
    int64_t sc = w->sample_cutoff > w->cutoff ? w->sample_cutoff : w->cutoff;
    int k = 0;
    if (sc != INT64_MIN &&
        (k = db_exec(db, &SQL_RET_SAMPLES, DB_ARGS(DB_INT(sc), DB_INT(w->batch)), NULL, errp)) < 0)
        return -1;
    w->deleted = n + m + k;
    w->more = n == w->batch || m == w->batch || k == w->batch;
    return 0;
}

int db_write_apply(struct db *db, struct db_write *w, char **errp)
{
    w->fault = DB_FAULT_NONE;
    if (injected(db, errp))
        return -1;
    switch (w->kind) {
    case DB_W_DECISION:
        return apply_decision(db, w, errp);
    case DB_W_JOB_CONFIG:
        return apply_config(db, w, w->job_config_json ? w->job_config_json : "{}", errp);
    case DB_W_JOB_DELETE:
        return apply_config(db, w, NULL, errp);
    case DB_W_POLICY:
        return apply_policy(db, w, errp);
    case DB_W_RETENTION:
        return apply_retention(db, w, errp);
    case DB_W_REPEAT:
        return 0;
    }
    *errp = xasprintf("unknown write kind %d", (int)w->kind);
    return -1;
}

/* Whether a unit of ws[i]'s job before it in the group stored nothing (a fence that did not
 * hold): ws[i] was computed from that unit's state. */
static bool after_fenced(struct db_write **ws, int i)
{
    if (!ws[i]->job[0])
        return false;
    for (int k = 0; k < i; k++)
        if (ws[k]->fault != DB_FAULT_NONE && strcmp(ws[k]->job, ws[i]->job) == 0)
            return true;
    return false;
}

/* The plugin_names of ws's calls that the connection does not know yet, found or added in a
 * transaction of their own before a pipeline (whose statements cannot wait for an id): rare,
 * the names a server's plugins have are few. -1 + *errp. */
static int names_before(struct db *db, struct db_write **ws, int n, char **errp)
{
    bool unknown = false;
    for (int i = 0; i < n && !unknown; i++)
        for (int k = 0; k < ws[i]->n_p && !unknown; k++) {
            const struct db_prow *p = &ws[i]->p[k];
            char key[512];
            snprintf(key, sizeof key, "%s\x1f%s\x1f%s", p->plugin ? p->plugin : "",
                     p->hook ? p->hook : "", p->outcome ? p->outcome : "");
            unknown = true;
            for (int j = 0; j < db->n_names && unknown; j++)
                unknown = strcmp(db->names[j].key, key) != 0;
        }
    if (!unknown)
        return 0;
    int64_t id;
    if (begin(db, DB_TX_WRITE, errp) < 0)
        goto fail;
    for (int i = 0; i < n; i++)
        for (int k = 0; k < ws[i]->n_p; k++)
            if (name_id(db, &ws[i]->p[k], &id, errp) < 0)
                goto fail;
    if (db_commit(db, errp) < 0)
        goto fail;
    return 0;
fail:
    db_rollback(db);
    return -1;
}

int db_write_group(struct db *db, struct db_write **ws, int n, char **errp)
{
    enum db_tx tx = DB_TX_PIPE;
    int fenced_units = 0;
    for (int i = 0; i < n; i++)
        if (ws[i]->kind == DB_W_RETENTION)
            tx = DB_TX_WRITE; /* its deletes depend on its reads */
    if (tx == DB_TX_PIPE && db->be->pipelines && names_before(db, ws, n, errp) < 0)
        return -1;
    if (begin(db, tx, errp) < 0)
        goto fail;
    for (int i = 0; i < n; i++) {
        if (fenced_units && after_fenced(ws, i)) {
            ws[i]->fault = DB_FAULT_STALE;
            free(ws[i]->error);
            ws[i]->error = xstrdup(DB_STALE_MSG);
            continue;
        }
        if (db_write_apply(db, ws[i], errp) < 0)
            goto fail;
        if (ws[i]->fault != DB_FAULT_NONE)
            fenced_units++;
        if (db->pipe && (i + 1) % DB_PIPE_UNITS == 0 && i + 1 < n && db->be->flush(db->c, errp) < 0)
            goto fail;
    }
    if (db_commit(db, errp) == 0)
        return 0;
fail:
    db_rollback(db);
    return -1;
}
