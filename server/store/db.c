/*
 * db.c - all SQLite (see db.h). Statements are prepared once per connection and kept in a
 * small cache keyed by the SQL text's address (every SQL string here is a static literal),
 * reset after each use on every path.
 */
#include <inttypes.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "base/jarena.h"
#include "core/core.h"
#include "store/db.h"
#include "base/log.h"
#include "store/pack.h"
#include "store/pg.h"
#include "store/statejson.h"
#include "base/xmem.h"

#define DB_CACHE 48
/* Effective-option sets the writer knows to be in decision_configs (db_write_apply). */
#define DB_CONFIGS 16
/* How long a write waits for another connection's lock before it fails with SQLITE_BUSY. */
#define DB_BUSY_MS 5000

struct db {
    sqlite3 *h;
    struct pg *pg; /* a PostgreSQL store (db_is_pg): every function hands over to pg.c */
    struct {
        const char *sql;
        sqlite3_stmt *st;
    } cache[DB_CACHE];
    int n_cache;
    int err_code; /* extended result code of the last failure (db_last_errcode) */
    /* decision_configs rows this connection read or wrote, committed or in the open
     * transaction (forgotten at a rollback and when retention deletes one) */
    struct {
        char hash[17];
        char *text;
        int64_t id;
    } configs[DB_CONFIGS];
    int n_configs, next_config;
    /* The write-ahead log (db_wal_limit): its frames after the last commit, the page size. */
    int wal_frames, page_size;
};

/* Fault injection (tests only): set by a test's thread, read by the writer's. */
static atomic_int fail_writes;
static atomic_int fail_code = SQLITE_CONSTRAINT;

/* The kind of I/O error behind SQLite's bare "disk I/O error", for the log and the 503. */
static const char *ioerr_what(int code)
{
    switch (code) {
    case SQLITE_IOERR_READ:
    case SQLITE_IOERR_SHORT_READ:
        return "a read failed";
    case SQLITE_IOERR_WRITE:
        return "a write failed (read-only or immutable file?)";
    case SQLITE_IOERR_FSYNC:
    case SQLITE_IOERR_DIR_FSYNC:
        return "fsync failed";
    case SQLITE_IOERR_TRUNCATE:
        return "truncate failed";
    case SQLITE_IOERR_SHMOPEN:
    case SQLITE_IOERR_SHMSIZE:
    case SQLITE_IOERR_SHMMAP:
        return "the -shm file cannot be grown or mapped";
    default:
        return NULL;
    }
}

/*
 * Records the connection's failure and returns its text, new: SQLite's message, and for a
 * failure of the file system what failed and the OS error when SQLite kept it, since "disk
 * I/O error" alone does not tell an operator what to fix.
 */
static char *failure(struct db *db, const char *what, const char *msg)
{
    int code = sqlite3_extended_errcode(db->h), sys = 0;
    const char *io = (code & 0xff) == SQLITE_IOERR ? ioerr_what(code) : NULL;
    db->err_code = code;
    if ((code & 0xff) == SQLITE_IOERR || (code & 0xff) == SQLITE_FULL ||
        (code & 0xff) == SQLITE_CANTOPEN)
        sys = sqlite3_system_errno(db->h);
    return xasprintf("%s%s%s%s%s%s%s%s", what ? what : "", what ? ": " : "", msg, io ? ": " : "",
                     io ? io : "", sys ? " (" : "", sys ? strerror(sys) : "", sys ? ")" : "");
}

static char *dberr(struct db *db, const char *what)
{
    return failure(db, what, sqlite3_errmsg(db->h));
}

/* The cached statement for sql (a static literal), prepared on first use. NULL + *errp. */
static sqlite3_stmt *stmt(struct db *db, const char *sql, char **errp)
{
    for (int i = 0; i < db->n_cache; i++)
        if (db->cache[i].sql == sql)
            return db->cache[i].st;
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v3(db->h, sql, -1, SQLITE_PREPARE_PERSISTENT, &st, NULL) != SQLITE_OK) {
        *errp = dberr(db, "prepare");
        return NULL;
    }
    if (db->n_cache < DB_CACHE) {
        db->cache[db->n_cache].sql = sql;
        db->cache[db->n_cache].st = st;
        db->n_cache++;
    } else {
        /* Cannot happen with the fixed set of statements below; keep it usable anyway. */
        log_msg(LOG_WARN, "db", "statement cache full", NULL);
    }
    return st;
}

static int exec(struct db *db, const char *sql, char **errp)
{
    char *m = NULL;
    if (sqlite3_exec(db->h, sql, NULL, NULL, &m) != SQLITE_OK) {
        *errp = failure(db, NULL, m ? m : sqlite3_errmsg(db->h));
        sqlite3_free(m);
        return -1;
    }
    return 0;
}

int db_user_version(struct db *db)
{
    if (db->pg)
        return pg_user_version(db->pg);
    sqlite3_stmt *st = NULL;
    int v = -1;
    if (sqlite3_prepare_v2(db->h, "PRAGMA user_version", -1, &st, NULL) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW)
        v = sqlite3_column_int(st, 0);
    sqlite3_finalize(st);
    return v;
}

static int convert_states(struct db *db, char **errp);
static int clear_rebuilt(struct db *db, char **errp);

/* The steps of migrations that SQL cannot do, each run in its migration's transaction before
 * the migration's SQL, or after it. */
static const struct {
    int version;
    bool after;
    int (*run)(struct db *db, char **errp);
} c_steps[] = {
    {8, false, convert_states},
    {9, true, clear_rebuilt},
};

static int run_c_step(struct db *db, int version, bool after, char **errp)
{
    for (size_t i = 0; i < sizeof c_steps / sizeof c_steps[0]; i++)
        if (c_steps[i].version == version && c_steps[i].after == after)
            return c_steps[i].run(db, errp);
    return 0;
}

/* SQL gov_pack_input(text): the packed form of a request (pack.h), for migration 009. */
static void sql_pack_input(sqlite3_context *cx, int argc, sqlite3_value **argv)
{
    (void)argc;
    const char *t = (const char *)sqlite3_value_text(argv[0]);
    unsigned char *b;
    size_t n;
    if (!t) {
        sqlite3_result_null(cx);
        return;
    }
    pack_input(t, (size_t)sqlite3_value_bytes(argv[0]), &b, &n);
    sqlite3_result_blob(cx, b, (int)n, free);
}

/* SQL gov_pack_figures(text): the figures array of an evaluated object, NULL when the array
 * would not give the text back exactly (pack.h), for migration 009. */
static void sql_pack_figures(sqlite3_context *cx, int argc, sqlite3_value **argv)
{
    (void)argc;
    char *f = pack_figures((const char *)sqlite3_value_text(argv[0]));
    if (f)
        sqlite3_result_text(cx, f, -1, free);
    else
        sqlite3_result_null(cx);
}

/* Applies every migration newer than user_version, each in its own transaction. */
static int migrate(struct db *db, char **errp)
{
    int have = db_user_version(db);
    if (have < 0) {
        *errp = dberr(db, "user_version");
        return -1;
    }
    for (int i = 0; i < db_n_migrations; i++) {
        const struct db_migration *m = &db_migrations[i];
        if (m->version <= have)
            continue;
        char *e = NULL;
        char ver[64];
        snprintf(ver, sizeof ver, "PRAGMA user_version = %d", m->version);
        if (exec(db, "BEGIN IMMEDIATE", &e) < 0 || run_c_step(db, m->version, false, &e) < 0 ||
            exec(db, m->sql, &e) < 0 || run_c_step(db, m->version, true, &e) < 0 ||
            exec(db, ver, &e) < 0 || exec(db, "COMMIT", &e) < 0) {
            *errp = xasprintf("migration %s: %s", m->name, e);
            free(e);
            sqlite3_exec(db->h, "ROLLBACK", NULL, NULL, NULL);
            return -1;
        }
        log_msg(LOG_INFO, "db", "migrated", "migration=%s version=%d", m->name, m->version);
    }
    return 0;
}

bool db_pg(const struct db *db)
{
    return db && db->pg;
}

bool db_is_pg(const char *db)
{
    return db && (strncmp(db, "postgresql://", 13) == 0 || strncmp(db, "postgres://", 11) == 0);
}

/* new: a struct db on the PostgreSQL store at url. NULL + *errp. */
static struct db *open_pg(const char *url, bool read_only, char **errp)
{
    struct pg *pg = pg_open(url, read_only, errp);
    if (!pg)
        return NULL;
    struct db *db = xcalloc(1, sizeof *db);
    db->pg = pg;
    return db;
}

struct db *db_open(const char *path, const char *synchronous, char **errp)
{
    if (db_is_pg(path))
        return open_pg(path, false, errp);
    struct db *db = xcalloc(1, sizeof *db);
    char *e = NULL;
    char sql[64];
    if (sqlite3_open_v2(path, &db->h, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL) !=
        SQLITE_OK) {
        *errp = xasprintf("%s: %s", path, db->h ? sqlite3_errmsg(db->h) : "cannot open");
        goto fail;
    }
    sqlite3_busy_timeout(db->h, DB_BUSY_MS);
    if (strcmp(synchronous, "FULL") && strcmp(synchronous, "NORMAL") &&
        strcmp(synchronous, "OFF") && strcmp(synchronous, "EXTRA")) {
        *errp =
            xasprintf("synchronous: \"%s\" is not one of FULL, NORMAL, OFF, EXTRA", synchronous);
        goto fail;
    }
    snprintf(sql, sizeof sql, "PRAGMA synchronous = %s", synchronous);
    sqlite3_create_function(db->h, "gov_pack_input", 1, SQLITE_UTF8 | SQLITE_DETERMINISTIC, NULL,
                            sql_pack_input, NULL, NULL);
    sqlite3_create_function(db->h, "gov_pack_figures", 1, SQLITE_UTF8 | SQLITE_DETERMINISTIC, NULL,
                            sql_pack_figures, NULL, NULL);
    if (exec(db, "PRAGMA journal_mode = WAL", &e) < 0 || exec(db, sql, &e) < 0 ||
        migrate(db, &e) < 0) {
        *errp = xasprintf("%s: %s", path, e);
        free(e);
        goto fail;
    }
    return db;
fail:
    db_close(db);
    return NULL;
}

struct db *db_open_read(const char *path, char **errp)
{
    if (db_is_pg(path))
        return open_pg(path, true, errp);
    struct db *db = xcalloc(1, sizeof *db);
    if (sqlite3_open_v2(path, &db->h, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
        *errp = xasprintf("%s: %s", path, db->h ? sqlite3_errmsg(db->h) : "cannot open");
        db_close(db);
        return NULL;
    }
    sqlite3_busy_timeout(db->h, DB_BUSY_MS);
    sqlite3_exec(db->h, "PRAGMA query_only = 1", NULL, NULL, NULL);
    return db;
}

int db_read_begin(struct db *db, char **errp)
{
    if (db->pg)
        return pg_read_begin(db->pg, errp);
    return exec(db, "BEGIN", errp);
}

void db_read_end(struct db *db)
{
    if (db->pg) {
        pg_read_end(db->pg);
        return;
    }
    sqlite3_exec(db->h, "COMMIT", NULL, NULL, NULL);
}

/* ------------------------------------------------------------------- WAL -- */

/* What SQLite's own wal_autocheckpoint does after a commit, at its default of 1000 pages. */
#define DB_AUTOCHECKPOINT 1000

/*
 * The write-ahead log hook (db_wal_limit): after each commit, the log's frames, and SQLite's
 * automatic checkpoint, which a hook of our own replaces: a PASSIVE one past 1000 frames, as
 * sqlite3_wal_autocheckpoint does (it copies what no reader needs, and waits for nobody).
 */
static int wal_hook(void *ud, sqlite3 *h, const char *name, int frames)
{
    struct db *db = ud;
    db->wal_frames = frames;
    if (frames >= DB_AUTOCHECKPOINT)
        sqlite3_wal_checkpoint_v2(h, name, SQLITE_CHECKPOINT_PASSIVE, NULL, NULL);
    return SQLITE_OK;
}

int db_wal_limit(struct db *db, int64_t bytes, char **errp)
{
    char sql[64];
    if (db->pg)
        return 0;
    snprintf(sql, sizeof sql, "PRAGMA journal_size_limit = %lld", (long long)bytes);
    if (exec(db, sql, errp) < 0)
        return -1;
    sqlite3_stmt *st = NULL;
    db->page_size = 4096;
    if (sqlite3_prepare_v2(db->h, "PRAGMA page_size", -1, &st, NULL) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW)
        db->page_size = sqlite3_column_int(st, 0);
    sqlite3_finalize(st);
    sqlite3_wal_hook(db->h, wal_hook, db);
    return 0;
}

int64_t db_wal_bytes(const struct db *db)
{
    /* the header, then each frame: its header and a page */
    return db->pg || !db->wal_frames ? 0 : 32 + (int64_t)db->wal_frames * (24 + db->page_size);
}

int db_wal_truncate(struct db *db, int busy_ms, char **errp)
{
    int log = 0, done = 0;
    if (db->pg)
        return 0;
    sqlite3_busy_timeout(db->h, busy_ms);
    int rc = sqlite3_wal_checkpoint_v2(db->h, NULL, SQLITE_CHECKPOINT_TRUNCATE, &log, &done);
    sqlite3_busy_timeout(db->h, DB_BUSY_MS);
    if (rc == SQLITE_OK) {
        db->wal_frames = 0;
        return 0;
    }
    if ((rc & 0xff) == SQLITE_BUSY || (rc & 0xff) == SQLITE_LOCKED)
        return 1;
    *errp = dberr(db, "checkpoint");
    return -1;
}

/* Forgets the decision_configs rows the connection knew. */
static void configs_forget(struct db *db)
{
    for (int i = 0; i < db->n_configs; i++) {
        free(db->configs[i].text);
        db->configs[i].text = NULL;
    }
    db->n_configs = db->next_config = 0;
}

void db_close(struct db *db)
{
    if (!db)
        return;
    configs_forget(db);
    for (int i = 0; i < db->n_cache; i++)
        sqlite3_finalize(db->cache[i].st);
    sqlite3_close(db->h);
    pg_close(db->pg);
    free(db);
}

/* ---------------------------------------------------------------- writes -- */

struct db_write *db_write_new(enum db_write_kind kind, const char *job)
{
    struct db_write *w = xcalloc(1, sizeof *w);
    w->kind = kind;
    w->job = xstrdup(job);
    w->last_at = INT64_MIN;
    w->expect_version = -1;
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

int db_begin(struct db *db, char **errp)
{
    db->err_code = 0;
    if (db->pg)
        return pg_begin(db->pg, errp);
    return exec(db, "BEGIN IMMEDIATE", errp);
}

int db_commit(struct db *db, char **errp)
{
    if (db->pg)
        return pg_commit(db->pg, errp);
    return exec(db, "COMMIT", errp);
}

void db_rollback(struct db *db)
{
    if (db->pg) {
        pg_rollback(db->pg);
        return;
    }
    configs_forget(db); /* rows inserted in the transaction are gone */
    if (!sqlite3_get_autocommit(db->h))
        sqlite3_exec(db->h, "ROLLBACK", NULL, NULL, NULL);
}

void db_fail_next_writes(int n)
{
    db_fail_next_writes_code(n, SQLITE_CONSTRAINT);
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
    *errp = xasprintf("injected write failure: %s", sqlite3_errstr(db->err_code));
    return 1;
}

int db_last_errcode(const struct db *db)
{
    if (db->pg && !db->err_code) /* err_code: an injected failure */
        return pg_last_errcode(db->pg);
    return db->err_code;
}

enum db_fault db_fault_of(int code)
{
    if (code & DB_ERR_OWN)
        return (enum db_fault)(code & 0xff);
    switch (code & 0xff) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
    case SQLITE_NOMEM:
    case SQLITE_READONLY:
    case SQLITE_IOERR:
    case SQLITE_CORRUPT:
    case SQLITE_FULL:
    case SQLITE_CANTOPEN:
    case SQLITE_PROTOCOL:
    case SQLITE_NOTADB:
    case SQLITE_PERM:
        return DB_FAULT_STORAGE;
    default:
        return DB_FAULT_UNIT;
    }
}

static const char SQL_PROBE[] = "INSERT OR REPLACE INTO store_probe (id, at) VALUES (1, ?1)";

int db_probe(struct db *db, int64_t now, int busy_ms, char **errp)
{
    sqlite3_stmt *st;
    int rc = -1;
    if (db->pg)
        return injected(db, errp) ? -1 : pg_probe(db->pg, now, busy_ms, errp);
    sqlite3_busy_timeout(db->h, busy_ms);
    if (injected(db, errp))
        goto out;
    if (db_begin(db, errp) < 0 || !(st = stmt(db, SQL_PROBE, errp)))
        goto out;
    sqlite3_bind_int64(st, 1, now);
    int step = sqlite3_step(st);
    sqlite3_reset(st);
    if (step != SQLITE_DONE) {
        *errp = dberr(db, "probe");
        goto out;
    }
    rc = db_commit(db, errp);
out:
    if (rc < 0)
        db_rollback(db);
    sqlite3_busy_timeout(db->h, DB_BUSY_MS);
    return rc;
}

static void bind_text(sqlite3_stmt *st, int i, const char *s)
{
    if (s)
        sqlite3_bind_text(st, i, s, -1, SQLITE_TRANSIENT);
    else
        sqlite3_bind_null(st, i);
}

/* Steps a write statement to completion and resets it. -1 + *errp. */
static int run(struct db *db, sqlite3_stmt *st, const char *what, char **errp)
{
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
    if (rc != SQLITE_DONE) {
        *errp = dberr(db, what);
        return -1;
    }
    return 0;
}

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
 * Steps a fenced write of the jobs row (its statement RETURNING the new version) and resets
 * it: 0 with w->new_version, 1 when no row was written (fenced), -1 + *errp.
 */
static int run_fenced(struct db *db, sqlite3_stmt *st, struct db_write *w, const char *what,
                      char **errp)
{
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        w->new_version = sqlite3_column_int64(st, 0);
        rc = sqlite3_step(st);
    } else if (rc == SQLITE_DONE) {
        sqlite3_reset(st);
        sqlite3_clear_bindings(st);
        return fenced(w);
    }
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
    if (rc != SQLITE_DONE) {
        *errp = dberr(db, what);
        return -1;
    }
    return 0;
}

/*
 * The jobs row of a unit, fenced by its version and generation (db_write.expect_version,
 * expect_generation; ?5 and ?6 for the state, ?4 and ?5 for the config): a row known to the
 * unit (expect > 0) is updated only where both are still those; a job new to the unit (expect
 * 0) is inserted with the unit's generation, or updated where its version is still 0 (a row
 * from before migration 010), taking the unit's generation; expect -1 writes whatever is there
 * (a row it inserts takes the unit's generation). Each adds 1 to the version and returns it:
 * no row returned is a fence that did not hold.
 */
static const char SQL_JOB_STATE_SET[] =
    "UPDATE jobs SET state_bin = ?3, last_at = ?4, version = version + 1 "
    "WHERE job = ?1 AND version = ?5 AND generation = ?6 RETURNING version";
static const char SQL_JOB_STATE_NEW[] =
    "INSERT INTO jobs (job, created_at, state_bin, last_at, version, generation) "
    "VALUES (?1, ?2, ?3, ?4, 1, ?6) "
    "ON CONFLICT (job) DO UPDATE SET state_bin = excluded.state_bin, last_at = excluded.last_at, "
    "version = jobs.version + 1, "
    "generation = CASE WHEN ?5 < 0 THEN jobs.generation ELSE excluded.generation END "
    "WHERE ?5 < 0 OR jobs.version = ?5 RETURNING version";
static const char SQL_JOB_CONFIG_SET[] =
    "UPDATE jobs SET config_json = ?3, version = version + 1 "
    "WHERE job = ?1 AND version = ?4 AND generation = ?5 RETURNING version";
static const char SQL_JOB_CONFIG_NEW[] =
    "INSERT INTO jobs (job, created_at, config_json, version, generation) "
    "VALUES (?1, ?2, ?3, 1, ?5) "
    "ON CONFLICT (job) DO UPDATE SET config_json = excluded.config_json, "
    "version = jobs.version + 1, "
    "generation = CASE WHEN ?4 < 0 THEN jobs.generation ELSE excluded.generation END "
    "WHERE ?4 < 0 OR jobs.version = ?4 RETURNING version";
static const char SQL_JOB_DELETE[] = "DELETE FROM jobs WHERE job = ?1 AND "
                                     "(?2 < 0 OR (version = ?2 AND generation = ?3))";
static const char SQL_CONFIG_CHANGE[] =
    "INSERT INTO config_changes (job, at, config_json, after_decision) "
    "VALUES (?1, ?2, ?3, (SELECT max(id) FROM decisions))";
static const char SQL_DECISION[] =
    "INSERT INTO decisions (job, at, action, reason, execute, message, input, config_id, "
    "response, policy_revision, created_at, message_parts, decision_json) "
    "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)";
static const char SQL_VERTEX[] =
    "INSERT INTO vertex_decisions (decision_id, ord, vertex, current, raw_target, target, "
    "reason, constraints, message, flags, figures, evaluated_json) "
    "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)";
static const char SQL_CONFIG_FIND[] =
    "SELECT id, config_json FROM decision_configs WHERE hash = ?1 ORDER BY id";
static const char SQL_CONFIG_ADD[] =
    "INSERT INTO decision_configs (hash, config_json) VALUES (?1, ?2)";
static const char SQL_EVENT[] =
    "INSERT INTO events (job, decision_id, at, type, reason, message, count, suppressed) "
    "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)";

static const char SQL_WINDOW_DROP[] = "DELETE FROM job_window WHERE job = ?1 AND seq < ?2";
static const char SQL_WINDOW_ADD[] =
    "INSERT OR REPLACE INTO job_window (job, seq, sample) VALUES (?1, ?2, ?3)";
static const char SQL_WINDOW_FORGET[] = "DELETE FROM job_window WHERE job = ?1";
static const char SQL_WINDOW_READ[] =
    "SELECT seq, sample FROM job_window WHERE job = ?1 AND seq >= ?2 ORDER BY seq";

/* The window rows of a decision: drop what left the window, add the new samples. */
static int apply_window(struct db *db, struct db_write *w, char **errp)
{
    sqlite3_stmt *st = stmt(db, SQL_WINDOW_DROP, errp);
    if (!st)
        return -1;
    bind_text(st, 1, w->job);
    sqlite3_bind_int64(st, 2, w->window_seq0);
    if (run(db, st, "drop window samples", errp) < 0)
        return -1;
    for (int i = 0; i < w->n_ws; i++) {
        if (!(st = stmt(db, SQL_WINDOW_ADD, errp)))
            return -1;
        bind_text(st, 1, w->job);
        sqlite3_bind_int64(st, 2, w->ws[i].seq);
        sqlite3_bind_blob(st, 3, w->ws[i].blob, (int)w->ws[i].len, SQLITE_STATIC);
        if (run(db, st, "add a window sample", errp) < 0)
            return -1;
    }
    return 0;
}

int db_window_each(struct db *db, const char *job, int64_t from_seq,
                   int (*fn)(void *ud, int64_t seq, const void *blob, size_t len), void *ud,
                   char **errp)
{
    if (db->pg)
        return pg_window_each(db->pg, job, from_seq, fn, ud, errp);
    sqlite3_stmt *st = stmt(db, SQL_WINDOW_READ, errp);
    int rc = 0, step;
    if (!st)
        return -1;
    bind_text(st, 1, job);
    sqlite3_bind_int64(st, 2, from_seq);
    while ((step = sqlite3_step(st)) == SQLITE_ROW) {
        rc = fn(ud, sqlite3_column_int64(st, 0), sqlite3_column_blob(st, 1),
                (size_t)sqlite3_column_bytes(st, 1));
        if (rc)
            break;
    }
    if (!rc && step != SQLITE_DONE) {
        *errp = dberr(db, "read window samples");
        rc = -1;
    }
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
    return rc;
}

/* ------------------------------------------------------------ migration 008 -- */

/*
 * Migration 008's step: every job state still stored in an older form is rewritten in
 * today's (the state without its window in jobs.state_bin, one job_window row per sample),
 * before the migration's SQL drops jobs.state_json. The older forms are JSON in
 * jobs.state_json (rows written before migration 002; statejson.h) and a whole-state blob in
 * jobs.state_bin (written before migration 005), whose samples a decision would otherwise not
 * store again, so that the second start after it lost the window. A JSON state that does not
 * read is dropped with an error in the log and the job starts empty, as loading such a row
 * always did; a blob that does not decode is left for the load to refuse, as before.
 */
static const char SQL_STATE_JOBS[] =
    "SELECT job FROM jobs WHERE state_json IS NOT NULL OR state_bin IS NOT NULL";
static const char SQL_STATE_ROW[] = "SELECT state_json, state_bin FROM jobs WHERE job = ?1";
static const char SQL_STATE_SET[] =
    "UPDATE jobs SET state_bin = ?2, state_json = NULL WHERE job = ?1";

/* The state st of job, stored in today's form; st NULL stores none. */
static int store_state(struct db *db, sqlite3_stmt *set, const char *job, struct core_state *st,
                       char **errp)
{
    struct db_write w = {.job = (char *)job};
    int rc = -1;
    if (st) {
        core_state_encode_meta(st, &w.state_bin, &w.state_bin_len);
        w.window_seq0 = core_state_seq0(st);
        w.n_ws = (int)(core_state_seq_end(st) - w.window_seq0);
        w.ws = xcalloc((size_t)w.n_ws, sizeof *w.ws);
        for (int i = 0; i < w.n_ws; i++) {
            w.ws[i].seq = w.window_seq0 + i;
            core_state_encode_sample(st, w.ws[i].seq, &w.ws[i].blob, &w.ws[i].len);
        }
    }
    sqlite3_stmt *forget = stmt(db, SQL_WINDOW_FORGET, errp);
    if (!forget)
        goto out;
    bind_text(forget, 1, job);
    if (run(db, forget, "forget window samples", errp) < 0 || apply_window(db, &w, errp) < 0)
        goto out;
    bind_text(set, 1, job);
    if (w.state_bin)
        sqlite3_bind_blob(set, 2, w.state_bin, (int)w.state_bin_len, SQLITE_STATIC);
    rc = run(db, set, "store a converted state", errp);
out:
    for (int i = 0; i < w.n_ws; i++)
        free(w.ws[i].blob);
    free(w.ws);
    free(w.state_bin);
    return rc;
}

/* Converts the state of one job if it is in an older form; *converted, *dropped count. */
static int convert_state(struct db *db, sqlite3_stmt *row, sqlite3_stmt *set, const char *job,
                         struct core_state *st, int *converted, int *dropped, char **errp)
{
    char msg[256], q1[160], q2[300];
    bool meta = false;
    int rc = 0;
    bind_text(row, 1, job);
    if (sqlite3_step(row) != SQLITE_ROW) {
        *errp = dberr(db, "read a job's state");
        rc = -1;
        goto out;
    }
    const void *bin = sqlite3_column_blob(row, 1);
    if (bin) {
        if (core_state_decode(bin, (size_t)sqlite3_column_bytes(row, 1), st, &meta, msg,
                              sizeof msg) < 0 ||
            meta)
            goto out; /* today's form, or one the load refuses as it always did */
        rc = store_state(db, set, job, st, errp);
        ++*converted;
    } else if (statejson_read((const char *)sqlite3_column_text(row, 0), st, msg, sizeof msg) ==
               0) {
        rc = store_state(db, set, job, st, errp);
        ++*converted;
    } else {
        log_msg(LOG_ERROR, "db", "stored state unreadable, starting empty", "job=%s error=%s",
                log_quote(q1, sizeof q1, job), log_quote(q2, sizeof q2, msg));
        rc = store_state(db, set, job, NULL, errp);
        ++*dropped;
    }
out:
    sqlite3_reset(row);
    sqlite3_clear_bindings(row);
    return rc;
}

static int convert_states(struct db *db, char **errp)
{
    sqlite3_stmt *jobs = NULL, *row = NULL, *set = NULL;
    struct core_state *st = core_state_new();
    char **names = NULL;
    int n = 0, cap = 0, converted = 0, dropped = 0, rc = -1, step;
    if (sqlite3_prepare_v2(db->h, SQL_STATE_JOBS, -1, &jobs, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(db->h, SQL_STATE_ROW, -1, &row, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(db->h, SQL_STATE_SET, -1, &set, NULL) != SQLITE_OK) {
        *errp = dberr(db, "prepare");
        goto out;
    }
    /* The names first: the rows are then rewritten outside this scan of the table. */
    while ((step = sqlite3_step(jobs)) == SQLITE_ROW) {
        if (n == cap) {
            cap = cap ? 2 * cap : 16;
            names = xrealloc(names, (size_t)cap * sizeof *names);
        }
        names[n++] = xstrdup((const char *)sqlite3_column_text(jobs, 0));
    }
    if (step != SQLITE_DONE) {
        *errp = dberr(db, "read jobs");
        goto out;
    }
    for (int i = 0; i < n; i++)
        if (convert_state(db, row, set, names[i], st, &converted, &dropped, errp) < 0)
            goto out;
    if (converted || dropped)
        log_msg(LOG_INFO, "db", "job states in an older form converted", "converted=%d dropped=%d",
                converted, dropped);
    rc = 0;
out:
    for (int i = 0; i < n; i++)
        free(names[i]);
    free(names);
    core_state_free(st);
    sqlite3_finalize(set);
    sqlite3_finalize(row);
    sqlite3_finalize(jobs);
    return rc;
}

static const char SQL_PLUGIN_CALL[] =
    "INSERT INTO plugin_calls (decision_id, plugin, hook, outcome, duration_us, error) "
    "VALUES (?1, ?2, ?3, ?4, ?5, ?6)";
static const char SQL_REVISION[] =
    "INSERT OR IGNORE INTO policy_revisions (revision, loaded_at, files_json) VALUES (?1, ?2, ?3)";

/* The events rows of w, for its decision (decision_id 0: none). */
static int insert_events(struct db *db, struct db_write *w, int64_t decision_id, char **errp)
{
    for (int i = 0; i < w->n_e; i++) {
        const struct db_erow *e = &w->e[i];
        sqlite3_stmt *st = stmt(db, SQL_EVENT, errp);
        if (!st)
            return -1;
        bind_text(st, 1, w->job);
        if (decision_id)
            sqlite3_bind_int64(st, 2, decision_id);
        else
            sqlite3_bind_null(st, 2);
        sqlite3_bind_int64(st, 3, w->at);
        bind_text(st, 4, e->type);
        bind_text(st, 5, e->reason);
        bind_text(st, 6, e->message);
        sqlite3_bind_int(st, 7, e->count);
        sqlite3_bind_int(st, 8, e->suppressed);
        if (run(db, st, "insert event", errp) < 0)
            return -1;
    }
    return 0;
}

static int apply_policy(struct db *db, struct db_write *w, char **errp)
{
    if (w->revision) {
        sqlite3_stmt *st = stmt(db, SQL_REVISION, errp);
        if (!st)
            return -1;
        bind_text(st, 1, w->revision);
        sqlite3_bind_int64(st, 2, w->loaded_at);
        bind_text(st, 3, w->files_json ? w->files_json : "{}");
        if (run(db, st, "insert policy revision", errp) < 0)
            return -1;
    }
    return insert_events(db, w, 0, errp);
}

static void configs_add(struct db *db, const char *hash, const char *text, int64_t id)
{
    int i = db->n_configs < DB_CONFIGS ? db->n_configs++ : db->next_config++ % DB_CONFIGS;
    free(db->configs[i].text);
    snprintf(db->configs[i].hash, sizeof db->configs[i].hash, "%s", hash);
    db->configs[i].text = xstrdup(text);
    db->configs[i].id = id;
}

/*
 * The decision_configs row of the effective options text with their hash: the one stored
 * (the same hash and the same text: a hash alone could stand for two texts, written by two
 * versions of the options table), or a new one.
 */
static int config_id(struct db *db, const char *hash, const char *text, int64_t *id, char **errp)
{
    for (int i = 0; i < db->n_configs; i++)
        if (strcmp(db->configs[i].hash, hash) == 0 && strcmp(db->configs[i].text, text) == 0) {
            *id = db->configs[i].id;
            return 0;
        }
    sqlite3_stmt *st = stmt(db, SQL_CONFIG_FIND, errp);
    int rc;
    if (!st)
        return -1;
    bind_text(st, 1, hash);
    *id = 0;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW)
        if (strcmp((const char *)sqlite3_column_text(st, 1), text) == 0) {
            *id = sqlite3_column_int64(st, 0);
            break;
        }
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
        *errp = dberr(db, "read decision_configs");
        return -1;
    }
    if (!*id) {
        if (!(st = stmt(db, SQL_CONFIG_ADD, errp)))
            return -1;
        bind_text(st, 1, hash);
        bind_text(st, 2, text);
        if (run(db, st, "insert decision_configs", errp) < 0)
            return -1;
        *id = sqlite3_last_insert_rowid(db->h);
    }
    configs_add(db, hash, text, *id);
    return 0;
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

/* The jobs row of a decision (its state and last sample), fenced: 0, 1 when the fence did
 * not hold (nothing written), -1 + *errp. */
static int apply_job_state(struct db *db, struct db_write *w, char **errp)
{
    sqlite3_stmt *st =
        stmt(db, w->expect_version > 0 ? SQL_JOB_STATE_SET : SQL_JOB_STATE_NEW, errp);
    if (!st)
        return -1;
    bind_text(st, 1, w->job);
    sqlite3_bind_int64(st, 2, w->now);
    if (w->state_bin)
        sqlite3_bind_blob(st, 3, w->state_bin, (int)w->state_bin_len, SQLITE_STATIC);
    else
        sqlite3_bind_null(st, 3);
    if (w->last_at == INT64_MIN)
        sqlite3_bind_null(st, 4);
    else
        sqlite3_bind_int64(st, 4, w->last_at);
    sqlite3_bind_int64(st, 5, w->expect_version);
    sqlite3_bind_int64(st, 6, w->expect_generation);
    return run_fenced(db, st, w, "update job state", errp);
}

/* A decision's rows; its jobs row first, so that a fence that does not hold writes none. */
static int apply_decision(struct db *db, struct db_write *w, char **errp)
{
    sqlite3_stmt *st;
    int64_t cid;
    unsigned char *input;
    size_t input_len;
    int rc = apply_job_state(db, w, errp);
    if (rc != 0)
        return rc < 0 ? -1 : 0;
    if (config_id(db, w->config_hash ? w->config_hash : "", w->config_json ? w->config_json : "{}",
                  &cid, errp) < 0)
        return -1;
    if (!(st = stmt(db, SQL_DECISION, errp)))
        return -1;
    const char *in = w->input_json ? w->input_json : "";
    pack_input(in, strlen(in), &input, &input_len);
    bind_text(st, 1, w->job);
    sqlite3_bind_int64(st, 2, w->at);
    bind_text(st, 3, w->action);
    bind_text(st, 4, w->reason);
    sqlite3_bind_int(st, 5, w->execute);
    size_t head;
    int64_t parts = message_parts(w, &head);
    if (parts) {
        sqlite3_bind_text(st, 6, w->message, (int)head, SQLITE_TRANSIENT);
        sqlite3_bind_int64(st, 12, parts);
    } else {
        bind_text(st, 6, w->message);
    }
    sqlite3_bind_blob(st, 7, input, (int)input_len, SQLITE_STATIC);
    sqlite3_bind_int64(st, 8, cid);
    bind_text(st, 9, w->response_json);
    bind_text(st, 10, w->policy_revision);
    sqlite3_bind_int64(st, 11, w->now);
    bind_text(st, 13, w->keep_response ? w->decision_json : NULL);
    rc = run(db, st, "insert decision", errp);
    free(input);
    if (rc < 0)
        return -1;
    w->decision_id = sqlite3_last_insert_rowid(db->h);

    if (!(st = stmt(db, SQL_VERTEX, errp)))
        return -1;
    for (int i = 0; i < w->n_v; i++) {
        const struct db_vrow *v = &w->v[i];
        char *figures = pack_figures(v->evaluated_json);
        sqlite3_bind_int64(st, 1, w->decision_id);
        sqlite3_bind_int(st, 2, i);
        bind_text(st, 3, v->vertex);
        sqlite3_bind_int(st, 4, v->current);
        sqlite3_bind_int(st, 5, v->raw_target);
        sqlite3_bind_int(st, 6, v->target);
        bind_text(st, 7, v->reason);
        bind_text(st, 8, v->constraints);
        bind_text(st, 9, v->message);
        sqlite3_bind_int(st, 10, (v->excluded ? 1 : 0) | (v->outside_bounds ? 2 : 0));
        bind_text(st, 11, figures);
        /* the text itself only when the array cannot give it back exactly */
        bind_text(st, 12, figures ? NULL : v->evaluated_json ? v->evaluated_json : "{}");
        free(figures);
        if (run(db, st, "insert vertex_decisions", errp) < 0)
            return -1;
    }
    if (insert_events(db, w, w->decision_id, errp) < 0)
        return -1;
    for (int i = 0; i < w->n_p; i++) {
        const struct db_prow *p = &w->p[i];
        if (!(st = stmt(db, SQL_PLUGIN_CALL, errp)))
            return -1;
        sqlite3_bind_int64(st, 1, w->decision_id);
        bind_text(st, 2, p->plugin);
        bind_text(st, 3, p->hook);
        bind_text(st, 4, p->outcome);
        sqlite3_bind_int64(st, 5, p->duration_us);
        bind_text(st, 6, p->error);
        if (run(db, st, "insert plugin call", errp) < 0)
            return -1;
    }
    return apply_window(db, w, errp);
}

static int apply_config(struct db *db, struct db_write *w, const char *layer, char **errp)
{
    sqlite3_stmt *st;
    if (w->kind == DB_W_JOB_CONFIG) {
        if (!(st = stmt(db, w->expect_version > 0 ? SQL_JOB_CONFIG_SET : SQL_JOB_CONFIG_NEW, errp)))
            return -1;
        bind_text(st, 1, w->job);
        sqlite3_bind_int64(st, 2, w->now);
        bind_text(st, 3, layer);
        sqlite3_bind_int64(st, 4, w->expect_version);
        sqlite3_bind_int64(st, 5, w->expect_generation);
        int rc = run_fenced(db, st, w, "update job config", errp);
        if (rc != 0)
            return rc < 0 ? -1 : 0;
    } else {
        if (!(st = stmt(db, SQL_JOB_DELETE, errp)))
            return -1;
        bind_text(st, 1, w->job);
        sqlite3_bind_int64(st, 2, w->expect_version);
        sqlite3_bind_int64(st, 3, w->expect_generation);
        if (run(db, st, "delete job", errp) < 0)
            return -1;
        if (w->expect_version >= 0 && sqlite3_changes(db->h) == 0) {
            fenced(w);
            return 0;
        }
        w->new_version = 0;
        if (!(st = stmt(db, SQL_WINDOW_FORGET, errp)))
            return -1;
        bind_text(st, 1, w->job);
        if (run(db, st, "delete job window", errp) < 0)
            return -1;
    }
    if (!(st = stmt(db, SQL_CONFIG_CHANGE, errp)))
        return -1;
    bind_text(st, 1, w->job);
    sqlite3_bind_int64(st, 2, w->now);
    bind_text(st, 3, layer);
    return run(db, st, "insert config_changes", errp);
}

/*
 * Retention: ids grow with commit order and created_at is the server clock at the request,
 * so the old rows are a prefix of the table by id. A batch takes the first `batch` rows by
 * id and deletes the leading run of those older than the cutoff: a few hundred index reads,
 * never a scan of the table (a clock step back only delays a deletion).
 */
static const char SQL_RET_DECISIONS[] = "SELECT id, created_at FROM decisions ORDER BY id LIMIT ?1";
static const char SQL_RET_VERTEX[] = "DELETE FROM vertex_decisions WHERE decision_id <= ?1";
static const char SQL_RET_EVENTS[] = "DELETE FROM events WHERE decision_id <= ?1";
static const char SQL_RET_EVENTS_LOOSE[] =
    "DELETE FROM events WHERE decision_id IS NULL AND at < ?1";
static const char SQL_RET_PLUGIN[] = "DELETE FROM plugin_calls WHERE decision_id <= ?1";
/* The option sets that only the decisions up to ?1 use (decisions_config keeps it to the
 * batch's rows and one index probe per set). */
static const char SQL_RET_CONFIGS[] =
    "DELETE FROM decision_configs WHERE id IN (SELECT config_id FROM decisions WHERE id <= ?1) "
    "AND NOT EXISTS (SELECT 1 FROM decisions n WHERE n.config_id = decision_configs.id "
    "AND n.id > ?1)";
static const char SQL_RET_DECISION[] = "DELETE FROM decisions WHERE id <= ?1";
static const char SQL_RET_CHANGES[] = "SELECT id, at FROM config_changes ORDER BY id LIMIT ?1";
static const char SQL_RET_CHANGE[] = "DELETE FROM config_changes WHERE id <= ?1";

/* The last id of the leading run of rows (id, time) with time < cutoff; *n their count. */
static int old_prefix(struct db *db, const char *sql, struct db_write *w, int64_t *last, int *n,
                      char **errp)
{
    sqlite3_stmt *st = stmt(db, sql, errp);
    int rc;
    *last = INT64_MIN;
    *n = 0;
    if (!st)
        return -1;
    sqlite3_bind_int(st, 1, w->batch);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (sqlite3_column_int64(st, 1) >= w->cutoff)
            break;
        *last = sqlite3_column_int64(st, 0);
        (*n)++;
    }
    int bad = rc != SQLITE_ROW && rc != SQLITE_DONE;
    sqlite3_reset(st);
    if (bad) {
        *errp = dberr(db, "retention");
        return -1;
    }
    return 0;
}

static int delete_upto(struct db *db, const char *sql, int64_t id, char **errp)
{
    sqlite3_stmt *st = stmt(db, sql, errp);
    if (!st)
        return -1;
    sqlite3_bind_int64(st, 1, id);
    return run(db, st, "retention delete", errp);
}

static int apply_retention(struct db *db, struct db_write *w, char **errp)
{
    int64_t last;
    int n, m;
    w->deleted = 0;
    w->more = false;
    if (w->batch <= 0)
        w->batch = 500;
    if (old_prefix(db, SQL_RET_DECISIONS, w, &last, &n, errp) < 0)
        return -1;
    if (n > 0) {
        if (delete_upto(db, SQL_RET_VERTEX, last, errp) < 0 ||
            delete_upto(db, SQL_RET_EVENTS, last, errp) < 0 ||
            delete_upto(db, SQL_RET_PLUGIN, last, errp) < 0 ||
            delete_upto(db, SQL_RET_CONFIGS, last, errp) < 0)
            return -1;
        if (sqlite3_changes(db->h) > 0)
            configs_forget(db);
        if (delete_upto(db, SQL_RET_DECISION, last, errp) < 0)
            return -1;
    }
    if (delete_upto(db, SQL_RET_EVENTS_LOOSE, w->cutoff, errp) < 0)
        return -1;
    if (old_prefix(db, SQL_RET_CHANGES, w, &last, &m, errp) < 0)
        return -1;
    if (m > 0 && delete_upto(db, SQL_RET_CHANGE, last, errp) < 0)
        return -1;
    w->deleted = n + m;
    w->more = n == w->batch || m == w->batch;
    return 0;
}

int db_write_apply(struct db *db, struct db_write *w, char **errp)
{
    w->fault = DB_FAULT_NONE;
    if (injected(db, errp))
        return -1;
    if (db->pg)
        return pg_write_apply(db->pg, w, errp);
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

int db_write_group(struct db *db, struct db_write **ws, int n, char **errp)
{
    if (db->pg) {
        db->err_code = 0;
        for (int i = 0; i < n; i++)
            if (injected(db, errp))
                return -1;
        return pg_write_group(db->pg, ws, n, errp);
    }
    if (db_begin(db, errp) < 0)
        goto fail;
    for (int i = 0; i < n; i++)
        if (db_write_apply(db, ws[i], errp) < 0)
            goto fail;
    if (db_commit(db, errp) < 0)
        goto fail;
    return 0;
fail:
    db_rollback(db);
    return -1;
}

/* ----------------------------------------------------------------- reads -- */

static const char SQL_JOBS_ALL[] =
    "SELECT job, created_at, config_json, last_at, state_bin, version, generation FROM jobs "
    "ORDER BY coalesce(last_at, created_at) DESC, job LIMIT ?1";
static const char SQL_JOBS_ONE[] = "SELECT job, created_at, config_json, last_at, state_bin, "
                                   "version, generation FROM jobs WHERE job = ?1";

int db_jobs_each(struct db *db, const char *job, int limit,
                 int (*fn)(void *ud, const char *job, int64_t created_at, const char *config_json,
                           const void *state_bin, size_t state_bin_len, int64_t last_at,
                           int64_t version, int64_t generation),
                 void *ud, char **errp)
{
    if (db->pg)
        return pg_jobs_each(db->pg, job, limit, fn, ud, errp);
    sqlite3_stmt *st = stmt(db, job ? SQL_JOBS_ONE : SQL_JOBS_ALL, errp);
    int n = 0, rc;
    if (!st)
        return -1;
    if (job)
        bind_text(st, 1, job);
    else
        sqlite3_bind_int(st, 1, limit);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        int64_t last =
            sqlite3_column_type(st, 3) == SQLITE_NULL ? INT64_MIN : sqlite3_column_int64(st, 3);
        if (fn(ud, (const char *)sqlite3_column_text(st, 0), sqlite3_column_int64(st, 1),
               (const char *)sqlite3_column_text(st, 2), sqlite3_column_blob(st, 4),
               (size_t)sqlite3_column_bytes(st, 4), last, sqlite3_column_int64(st, 5),
               sqlite3_column_int64(st, 6)) != 0) {
            *errp =
                xasprintf("job \"%s\": bad stored row", (const char *)sqlite3_column_text(st, 0));
            n = -1;
            goto out;
        }
        n++;
    }
    if (rc != SQLITE_DONE) {
        *errp = dberr(db, "read jobs");
        n = -1;
    }
out:
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
    return n;
}

/* new: column i parsed as JSON, or null when it is NULL or does not parse. */
static json_t *col_json(sqlite3_stmt *st, int i)
{
    const char *s = (const char *)sqlite3_column_text(st, i);
    json_t *j = s ? json_loads(s, JSON_DECODE_ANY, NULL) : NULL;
    return j ? j : json_null();
}

static json_t *col_text(sqlite3_stmt *st, int i)
{
    const char *s = (const char *)sqlite3_column_text(st, i);
    return s ? json_string(s) : json_null();
}

/* The end of a list read: resets st, and on success wraps arr as {key: arr} in *out (arr is
 * stolen either way). -1 with *errp (new) when the step loop stopped on an error. */
static int finish_list(struct db *db, sqlite3_stmt *st, int rc, json_t *arr, const char *key,
                       json_t **out, char **errp)
{
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
    if (rc != SQLITE_DONE) {
        *errp = xasprintf("read %s: %s", key, sqlite3_errmsg(db->h));
        json_decref(arr);
        return -1;
    }
    *out = json_pack("{s:o}", key, arr);
    return 0;
}

static const char SQL_JOBS_LIST[] =
    "SELECT job, created_at, last_at, config_json FROM jobs ORDER BY job";

int db_jobs_list(struct db *db, json_t **out, char **errp)
{
    if (db->pg)
        return pg_jobs_list(db->pg, out, errp);
    sqlite3_stmt *st = stmt(db, SQL_JOBS_LIST, errp);
    json_t *arr = json_array();
    int rc;
    *out = NULL;
    if (!st) {
        json_decref(arr);
        return -1;
    }
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        json_t *config = col_json(st, 3);
        if (!json_is_object(config)) {
            json_decref(config);
            config = json_object();
        }
        json_array_append_new(
            arr, json_pack("{s:o,s:I,s:o,s:o}", "job",
                           pack_str_json((const char *)sqlite3_column_text(st, 0)), "created_at",
                           (json_int_t)sqlite3_column_int64(st, 1), "last_at",
                           sqlite3_column_type(st, 2) == SQLITE_NULL
                               ? json_null()
                               : json_integer(sqlite3_column_int64(st, 2)),
                           "config", config));
    }
    return finish_list(db, st, rc, arr, "jobs", out, errp);
}

/*
 * The response of a decision, rebuilt from its rows (migration 009): the decision row, its
 * vertex rows in order, its events, and `response` (the members no row holds), member for
 * member in the order json_render_decision writes them. A row converted from an older form
 * whose rows do not give its response back exactly kept it in decisions.decision_json.
 */
#define DEC_COLS                                                                                   \
    "d.id, d.job, d.at, d.action, d.reason, d.execute, d.message, d.response, "                    \
    "d.policy_revision, c.hash, d.decision_json, d.message_parts"
/* The columns of DEC_COLS, in their order. */
enum {
    DC_ID,
    DC_JOB,
    DC_AT,
    DC_ACTION,
    DC_REASON,
    DC_EXECUTE,
    DC_MESSAGE,
    DC_RESPONSE,
    DC_REVISION,
    DC_HASH,
    DC_DECISION_JSON,
    DC_PARTS,
    DC__N
};

static const char SQL_RESPONSE_VERTICES[] =
    "SELECT vertex, current, target, raw_target, reason, constraints, flags, message, figures, "
    "evaluated_json FROM vertex_decisions WHERE decision_id = ?1 ORDER BY ord";
static const char SQL_DECISION_EVENTS[] =
    "SELECT type, reason, message, count, suppressed FROM events WHERE decision_id = ?1 "
    "ORDER BY id";

/* new: a vertex row's evaluated figures as an object (columns fig: figures, fig + 1:
 * evaluated_json). */
static json_t *col_evaluated(sqlite3_stmt *st, int fig)
{
    const char *f = (const char *)sqlite3_column_text(st, fig);
    if (!f)
        return col_json(st, fig + 1);
    char *text = pack_figures_text(f);
    json_t *j = text ? json_loads(text, 0, NULL) : NULL;
    free(text);
    return j ? j : json_null();
}

/* new: one vertex of the response from a row of SQL_RESPONSE_VERTICES, its members in the
 * order of the core's table (core_vfields). */
static json_t *response_vertex(sqlite3_stmt *st)
{
    json_t *o = json_object();
    bool flags = sqlite3_column_type(st, 6) != SQLITE_NULL;
    int bits = sqlite3_column_int(st, 6);
    for (int i = 0; i < core_n_vfields; i++) {
        const char *name = core_vfields[i].name;
        json_t *x = NULL;
        if (strcmp(name, "id") == 0)
            x = pack_str_json((const char *)sqlite3_column_text(st, 0));
        else if (strcmp(name, "current") == 0)
            x = json_integer(sqlite3_column_int64(st, 1));
        else if (strcmp(name, "target") == 0)
            x = json_integer(sqlite3_column_int64(st, 2));
        else if (strcmp(name, "raw_target") == 0)
            x = json_integer(sqlite3_column_int64(st, 3));
        else if (strcmp(name, "reason") == 0)
            x = col_text(st, 4);
        else if (strcmp(name, "constraints") == 0)
            x = col_json(st, 5);
        else if (strcmp(name, "excluded") == 0)
            x = flags ? json_boolean(bits & 1) : NULL;
        else if (strcmp(name, "outside_bounds") == 0)
            x = flags ? json_boolean(bits & 2) : NULL;
        else if (strcmp(name, "message") == 0)
            x = sqlite3_column_type(st, 7) == SQLITE_NULL
                    ? NULL
                    : pack_str_json((const char *)sqlite3_column_text(st, 7));
        else if (strcmp(name, "evaluated") == 0)
            x = col_evaluated(st, 8);
        if (x)
            json_object_set_new(o, name, x);
    }
    return o;
}

/* Whether a member of `response` comes before policy_revision (json_render_decision). */
static bool before_revision(const char *key)
{
    return strcmp(key, "config_changes") == 0 || strcmp(key, "config_removals") == 0;
}

/* new in *out: the response of the decision at row (columns DEC_COLS from `col`) rebuilt from
 * its rows, without its decision_id. -1 + *errp. */
static int response_rebuild(struct db *db, sqlite3_stmt *row, int col, json_t **out, char **errp)
{
    int64_t id = sqlite3_column_int64(row, col + DC_ID);
    json_t *o = NULL, *extra = NULL, *par, *vs, *evs, *v;
    sqlite3_stmt *st;
    const char *key;
    int rc;
    *out = NULL;
    o = json_object();
    json_object_set_new(o, "job",
                        pack_str_json((const char *)sqlite3_column_text(row, col + DC_JOB)));
    json_object_set_new(o, "at", json_integer(sqlite3_column_int64(row, col + DC_AT)));
    json_object_set_new(o, "action", col_text(row, col + DC_ACTION));
    json_object_set_new(o, "execute", json_boolean(sqlite3_column_int(row, col + DC_EXECUTE)));
    json_object_set_new(o, "reason", col_text(row, col + DC_REASON));
    const char *msg = (const char *)sqlite3_column_text(row, col + DC_MESSAGE);
    json_object_set_new(o, "message", pack_str_json(msg ? msg : ""));
    json_object_set_new(o, "parallelism", par = json_object());
    json_object_set_new(o, "vertices", vs = json_array());
    json_object_set_new(o, "events", evs = json_array());
    if (!(st = stmt(db, SQL_RESPONSE_VERTICES, errp)))
        goto fail;
    sqlite3_bind_int64(st, 1, id);
    /* The decision's message ends with the messages of the vertices of message_parts. */
    int64_t parts = sqlite3_column_int64(row, col + DC_PARTS);
    char *full = NULL;
    size_t len = 0;
    for (int ord = 0; (rc = sqlite3_step(st)) == SQLITE_ROW; ord++) {
        v = response_vertex(st);
        json_object_set(par, json_string_value(json_object_get(v, "id")),
                        json_object_get(v, "target"));
        json_array_append_new(vs, v);
        const char *vm = (const char *)sqlite3_column_text(st, 7);
        if (ord >= 62 || !((parts >> ord) & 1) || !vm)
            continue;
        size_t n = strlen(vm);
        if (!full) {
            len = strlen(msg ? msg : "");
            full = xmalloc(len + n + 1);
            memcpy(full, msg ? msg : "", len);
        } else {
            full = xrealloc(full, len + 2 + n + 1);
            memcpy(full + len, "; ", 2);
            len += 2;
        }
        memcpy(full + len, vm, n);
        full[len += n] = '\0';
    }
    if (full)
        json_object_set_new(o, "message", pack_str_json(full));
    free(full);
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
    if (rc != SQLITE_DONE) {
        *errp = dberr(db, "read vertex_decisions");
        goto fail;
    }
    if (!(st = stmt(db, SQL_DECISION_EVENTS, errp)))
        goto fail;
    sqlite3_bind_int64(st, 1, id);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        const char *m = (const char *)sqlite3_column_text(st, 2);
        json_t *e = json_object();
        json_object_set_new(e, "type", pack_str_json((const char *)sqlite3_column_text(st, 0)));
        json_object_set_new(e, "reason", pack_str_json((const char *)sqlite3_column_text(st, 1)));
        json_object_set_new(e, "message", pack_str_json(m ? m : ""));
        json_object_set_new(e, "count", json_integer(sqlite3_column_int64(st, 3)));
        json_object_set_new(e, "suppressed", json_boolean(sqlite3_column_int(st, 4)));
        json_array_append_new(evs, e);
    }
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
    if (rc != SQLITE_DONE) {
        *errp = dberr(db, "read events");
        goto fail;
    }
    extra = col_json(row, col + DC_RESPONSE);
    json_object_foreach(extra, key, v)
    {
        if (before_revision(key))
            json_object_set(o, key, v);
    }
    json_object_set_new(o, "policy_revision", col_text(row, col + DC_REVISION));
    json_object_set_new(o, "config_hash", col_text(row, col + DC_HASH));
    json_object_foreach(extra, key, v)
    {
        if (!before_revision(key))
            json_object_set(o, key, v);
    }
    json_decref(extra);
    *out = o;
    return 0;
fail:
    json_decref(o);
    return -1;
}

/* new in *out: the response of the decision at row (columns DEC_COLS from `col`): the text kept
 * from before 009, or the rebuild. -1 + *errp. */
static int response_of(struct db *db, sqlite3_stmt *row, int col, json_t **out, char **errp)
{
    if (sqlite3_column_type(row, col + DC_DECISION_JSON) != SQLITE_NULL) {
        *out = col_json(row, col + DC_DECISION_JSON);
        return 0;
    }
    return response_rebuild(db, row, col, out, errp);
}

/* new: the response's text as the reply sent it (jarena_dump's form). */
static char *response_text(const json_t *o)
{
    return jarena_dump(o);
}

static const char SQL_DECISIONS[] =
    "SELECT " DEC_COLS ", (SELECT coalesce(max(ord) + 1, 0) FROM vertex_decisions v "
    "WHERE v.decision_id = d.id) FROM decisions d LEFT JOIN decision_configs c ON c.id = "
    "d.config_id "
    "WHERE d.job = ?1 AND d.at >= ?2 AND (d.at < ?3 OR (d.at = ?3 AND d.id < ?5)) "
    "ORDER BY d.at DESC, d.id DESC LIMIT ?4";

int db_response_rows(const json_t *response)
{
    size_t n = json_array_size(json_object_get(response, "vertices")) +
               json_array_size(json_object_get(response, "splits")) +
               json_array_size(json_object_get(response, "unsplittable"));
    return n < 1 ? 1 : n > INT_MAX ? INT_MAX : (int)n;
}

int db_decisions_list(struct db *db, const char *job, struct db_page *page, json_t **out,
                      char **errp)
{
    if (db->pg)
        return pg_decisions_list(db->pg, job, page, out, errp);
    sqlite3_stmt *st = stmt(db, SQL_DECISIONS, errp);
    json_t *arr = json_array();
    int rc;
    int64_t rows = 0;
    *out = NULL;
    page->more = false;
    if (!st) {
        json_decref(arr);
        return -1;
    }
    bind_text(st, 1, job);
    sqlite3_bind_int64(st, 2, page->since);
    sqlite3_bind_int64(st, 3, page->until);
    sqlite3_bind_int(st, 4, page->limit);
    sqlite3_bind_int64(st, 5, page->before);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        json_t *d;
        /* A decision's vertex rows are counted before it is rebuilt (the last column, an
         * index seek): past the first, one that would take the page past its budget is left
         * for the next page. */
        int64_t will = sqlite3_column_int64(st, DC__N);
        if (rows > 0 && (rows >= page->max_rows || rows + will > page->max_rows)) {
            page->more = true;
            rc = SQLITE_DONE;
            break;
        }
        if (response_of(db, st, 0, &d, errp) < 0) {
            sqlite3_reset(st);
            sqlite3_clear_bindings(st);
            json_decref(arr);
            return -1;
        }
        rows += db_response_rows(d);
        page->next_at = sqlite3_column_int64(st, DC_AT);
        page->next_id = sqlite3_column_int64(st, DC_ID);
        if (json_is_object(d)) {
            /* decision_id first, as in the decide response */
            json_t *o = json_pack("{s:I}", "decision_id", (json_int_t)sqlite3_column_int64(st, 0));
            json_object_update(o, d);
            json_decref(d);
            d = o;
        }
        json_array_append_new(arr, d);
    }
    return finish_list(db, st, rc, arr, "decisions", out, errp);
}

/* The partial index decisions_scalings holds exactly these rows (execute = 1 implies a change). */
static const char SQL_DECISION_EXECUTED[] =
    "SELECT " DEC_COLS " FROM decisions d LEFT JOIN decision_configs c ON c.id = d.config_id "
    "WHERE d.job = ?1 AND d.execute = 1 AND d.action <> 'NO_CHANGE' ORDER BY d.id DESC LIMIT 1";

int db_decision_executed(struct db *db, const char *job, json_t **out, char **errp)
{
    if (db->pg)
        return pg_decision_executed(db->pg, job, out, errp);
    sqlite3_stmt *st = stmt(db, SQL_DECISION_EXECUTED, errp);
    int rc;
    *out = NULL;
    if (!st)
        return -1;
    bind_text(st, 1, job);
    rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        json_t *d;
        if (response_of(db, st, 0, &d, errp) < 0) {
            sqlite3_reset(st);
            sqlite3_clear_bindings(st);
            return -1;
        }
        *out = json_pack("{s:I}", "decision_id", (json_int_t)sqlite3_column_int64(st, 0));
        if (json_is_object(d))
            json_object_update(*out, d);
        json_decref(d);
        rc = SQLITE_DONE;
    }
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
    if (rc != SQLITE_DONE) {
        json_decref(*out);
        *out = NULL;
        *errp = xasprintf("read decisions: %s", sqlite3_errmsg(db->h));
        return -1;
    }
    return 0;
}

/* The record's own columns follow DEC_COLS. */
static const char SQL_DECISION_ONE[] =
    "SELECT " DEC_COLS ", d.input, c.config_json, d.created_at FROM decisions d "
    "LEFT JOIN decision_configs c ON c.id = d.config_id WHERE d.id = ?1";
static const char SQL_DECISION_VERTICES[] =
    "SELECT vertex AS id, current, raw_target, target, reason, constraints, message, figures, "
    "evaluated_json FROM vertex_decisions WHERE decision_id = ?1 ORDER BY ord";
static const char SQL_DECISION_PLUGINS[] =
    "SELECT plugin, hook, outcome, duration_us, error FROM plugin_calls WHERE decision_id = ?1";

/* new: column i (a packed request) parsed as JSON, or null. */
static json_t *col_input(sqlite3_stmt *st, int i)
{
    char *text = pack_input_text(sqlite3_column_blob(st, i), (size_t)sqlite3_column_bytes(st, i));
    json_t *j = text ? json_loads(text, JSON_DECODE_ANY, NULL) : NULL;
    free(text);
    return j ? j : json_null();
}

/* Appends to arr one object per row of the statement (bound, stepped, reset here). */
static int rows(struct db *db, const char *sql, int64_t id, json_t *arr, char **errp)
{
    sqlite3_stmt *st = stmt(db, sql, errp);
    int rc;
    if (!st)
        return -1;
    sqlite3_bind_int64(st, 1, id);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        json_t *o = json_object();
        for (int c = 0; c < sqlite3_column_count(st); c++) {
            const char *name = sqlite3_column_name(st, c);
            json_t *v;
            if (strcmp(name, "figures") == 0) {
                name = "evaluated";
                v = col_evaluated(st, c++); /* and evaluated_json */
            } else if (strcmp(name, "constraints") == 0) {
                v = col_json(st, c);
            } else if (strcmp(name, "suppressed") == 0) {
                v = json_boolean(sqlite3_column_int(st, c));
            } else if (sqlite3_column_type(st, c) == SQLITE_INTEGER) {
                v = json_integer(sqlite3_column_int64(st, c));
            } else {
                v = col_text(st, c);
            }
            json_object_set_new(o, name, v);
        }
        json_array_append_new(arr, o);
    }
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
    if (rc != SQLITE_DONE) {
        *errp = dberr(db, "read decision");
        return -1;
    }
    return 0;
}

int db_decision_get(struct db *db, int64_t id, json_t **out, char **errp)
{
    if (db->pg)
        return pg_decision_get(db->pg, id, out, errp);
    sqlite3_stmt *st = stmt(db, SQL_DECISION_ONE, errp);
    json_t *rec = NULL, *vs = NULL, *evs = NULL, *pcs = NULL;
    int rc, ret = -1;
    *out = NULL;
    if (!st)
        return -1;
    sqlite3_bind_int64(st, 1, id);
    rc = sqlite3_step(st);
    if (rc == SQLITE_DONE) {
        ret = 0; /* not found */
        goto out;
    }
    if (rc != SQLITE_ROW) {
        *errp = dberr(db, "read decision");
        goto out;
    }
    if (response_of(db, st, 0, &rec, errp) < 0)
        goto out;
    if (!json_is_object(rec)) {
        json_decref(rec);
        rec = json_object();
    }
    json_object_set_new(rec, "decision_id", json_integer(sqlite3_column_int64(st, DC_ID)));
    json_object_set_new(rec, "job", col_text(st, DC_JOB));
    json_object_set_new(rec, "at", json_integer(sqlite3_column_int64(st, DC_AT)));
    json_object_set_new(rec, "input", col_input(st, DC__N));
    json_object_set_new(rec, "config", col_json(st, DC__N + 1));
    json_object_set_new(rec, "policy_revision", col_text(st, DC_REVISION));
    json_object_set_new(rec, "config_hash", col_text(st, DC_HASH));
    json_object_set_new(rec, "created_at", json_integer(sqlite3_column_int64(st, DC__N + 2)));
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
    st = NULL;
    vs = json_array();
    evs = json_array();
    pcs = json_array();
    if (rows(db, SQL_DECISION_VERTICES, id, vs, errp) < 0 ||
        rows(db, SQL_DECISION_EVENTS, id, evs, errp) < 0 ||
        rows(db, SQL_DECISION_PLUGINS, id, pcs, errp) < 0)
        goto out;
    /* The stored rows are the full record: they carry raw targets the response lacks. */
    json_object_set(rec, "vertices", vs);
    json_object_set(rec, "events", evs);
    json_object_set(rec, "plugin_calls", pcs);
    *out = rec;
    rec = NULL;
    ret = 0;
out:
    if (st) {
        sqlite3_reset(st);
        sqlite3_clear_bindings(st);
    }
    json_decref(pcs);
    json_decref(evs);
    json_decref(vs);
    json_decref(rec);
    return ret;
}

static const char SQL_DECISION_AT[] =
    "SELECT " DEC_COLS ", d.input FROM decisions d "
    "LEFT JOIN decision_configs c ON c.id = d.config_id WHERE d.job = ?1 AND d.at = ?2 "
    "ORDER BY d.id DESC LIMIT 1";

int db_decision_find(struct db *db, const char *job, int64_t at, int64_t *id, char **input_json,
                     char **decision_json, char **errp)
{
    if (db->pg)
        return pg_decision_find(db->pg, job, at, id, input_json, decision_json, errp);
    sqlite3_stmt *st = stmt(db, SQL_DECISION_AT, errp);
    int rc, found = 0;
    *input_json = *decision_json = NULL;
    if (!st)
        return -1;
    bind_text(st, 1, job);
    sqlite3_bind_int64(st, 2, at);
    rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        const char *dj = (const char *)sqlite3_column_text(st, DC_DECISION_JSON);
        char *in = pack_input_text(sqlite3_column_blob(st, DC__N),
                                   (size_t)sqlite3_column_bytes(st, DC__N));
        json_t *d = NULL;
        *id = sqlite3_column_int64(st, DC_ID);
        *input_json = in ? in : xstrdup("");
        if (dj) {
            *decision_json = xstrdup(dj); /* the stored text as it was sent */
            found = 1;
        } else if (response_of(db, st, 0, &d, errp) == 0) {
            *decision_json = response_text(d);
            json_decref(d);
            found = 1;
        } else {
            free(*input_json);
            *input_json = NULL;
            found = -1;
        }
    } else if (rc != SQLITE_DONE) {
        *errp = dberr(db, "read decision");
        found = -1;
    }
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
    return found;
}

/* ------------------------------------------------------------ history reads -- */

static const char SQL_HISTORY[] =
    "SELECT " DEC_COLS ", d.input, c.config_json FROM decisions d "
    "LEFT JOIN decision_configs c ON c.id = d.config_id WHERE d.job = ?1 AND d.at <= ?2 "
    "AND d.id > ?3 AND d.id <= ?4 ORDER BY d.id LIMIT ?5";
/* Before migration 009: the same, from the columns of then. */
static const char SQL_HISTORY_008[] =
    "SELECT id, at, input_json, config_json, decision_json FROM decisions "
    "WHERE job = ?1 AND at <= ?2 AND id > ?3 AND id <= ?4 ORDER BY id LIMIT ?5";
static const char SQL_HISTORY_LAST[] = "SELECT coalesce(max(id), 0) FROM decisions WHERE job = ?1";

int db_history_last_id(struct db *db, const char *job, int64_t *id, char **errp)
{
    if (db->pg)
        return pg_history_last_id(db->pg, job, id, errp);
    sqlite3_stmt *st = NULL;
    int rc = -1;
    *id = 0;
    if (sqlite3_prepare_v2(db->h, SQL_HISTORY_LAST, -1, &st, NULL) == SQLITE_OK) {
        bind_text(st, 1, job);
        if (sqlite3_step(st) == SQLITE_ROW) {
            *id = sqlite3_column_int64(st, 0);
            rc = 0;
        }
    }
    if (rc < 0)
        *errp = dberr(db, "read decisions");
    sqlite3_finalize(st);
    return rc;
}

/* One page of db_history_each: at most limit decisions with after_id < id <= max_id. */
static int history_page(struct db *db, const char *job, int64_t to, int64_t after_id,
                        int64_t max_id, int limit,
                        int (*fn)(void *ud, int64_t id, int64_t at, const char *input,
                                  const char *config, json_t *decision),
                        void *ud, char **errp)
{
    bool old = db_user_version(db) < 9;
    sqlite3_stmt *st = NULL;
    int rc = 0, step;
    /* Prepared here: the reader's connection may be on either schema. */
    if (sqlite3_prepare_v2(db->h, old ? SQL_HISTORY_008 : SQL_HISTORY, -1, &st, NULL) !=
        SQLITE_OK) {
        *errp = dberr(db, "read decisions");
        return -1;
    }
    bind_text(st, 1, job);
    sqlite3_bind_int64(st, 2, to);
    sqlite3_bind_int64(st, 3, after_id);
    sqlite3_bind_int64(st, 4, max_id);
    sqlite3_bind_int(st, 5, limit);
    while ((step = sqlite3_step(st)) == SQLITE_ROW) {
        int64_t id = sqlite3_column_int64(st, old ? 0 : DC_ID);
        int64_t at = sqlite3_column_int64(st, old ? 1 : DC_AT);
        char *input = NULL;
        const char *config;
        json_t *dec = NULL;
        if (old) {
            const char *in = (const char *)sqlite3_column_text(st, 2);
            input = xstrdup(in ? in : "");
            config = (const char *)sqlite3_column_text(st, 3);
            dec = col_json(st, 4);
        } else {
            input = pack_input_text(sqlite3_column_blob(st, DC__N),
                                    (size_t)sqlite3_column_bytes(st, DC__N));
            config = (const char *)sqlite3_column_text(st, DC__N + 1);
            if (response_of(db, st, 0, &dec, errp) < 0) {
                free(input);
                rc = -1;
                break;
            }
        }
        rc = fn(ud, id, at, input ? input : "", config ? config : "{}", dec);
        free(input);
        json_decref(dec);
        if (rc)
            break;
    }
    if (!rc && step != SQLITE_DONE) {
        *errp = dberr(db, "read decisions");
        rc = -1;
    }
    sqlite3_finalize(st);
    return rc;
}

/* A page of decisions held between its read transaction and the caller's callbacks. */
struct hpage {
    struct hrow {
        int64_t id, at;
        char *input, *config;
        json_t *dec;
    } v[DB_HISTORY_PAGE];
    int n;
};

static int hpage_add(void *ud, int64_t id, int64_t at, const char *input, const char *config,
                     json_t *dec)
{
    struct hpage *pg = ud;
    struct hrow *r = &pg->v[pg->n++];
    r->id = id;
    r->at = at;
    r->input = xstrdup(input);
    r->config = xstrdup(config);
    r->dec = json_incref(dec);
    return 0;
}

static void hpage_clear(struct hpage *pg)
{
    for (int i = 0; i < pg->n; i++) {
        free(pg->v[i].input);
        free(pg->v[i].config);
        json_decref(pg->v[i].dec);
    }
    pg->n = 0;
}

int db_history_each(struct db *db, const char *job, int64_t to, int64_t max_id,
                    int (*fn)(void *ud, int64_t id, int64_t at, const char *input,
                              const char *config, json_t *decision),
                    void *ud, char **errp)
{
    struct hpage *pg = xcalloc(1, sizeof *pg);
    int64_t after = 0;
    int rc = 0;
    for (;;) {
        if (db_read_begin(db, errp) < 0) {
            rc = -1;
            break;
        }
        rc = db->pg
                 ? pg_history_page(db->pg, job, to, after, max_id, DB_HISTORY_PAGE, hpage_add, pg,
                                   errp)
                 : history_page(db, job, to, after, max_id, DB_HISTORY_PAGE, hpage_add, pg, errp);
        db_read_end(db);
        for (int i = 0; i < pg->n && rc == 0; i++) {
            struct hrow *r = &pg->v[i];
            rc = fn(ud, r->id, r->at, r->input, r->config, r->dec);
        }
        int n = pg->n;
        if (n > 0)
            after = pg->v[n - 1].id;
        hpage_clear(pg);
        if (rc || n < DB_HISTORY_PAGE)
            break;
    }
    free(pg);
    return rc;
}

static const char SQL_DELETIONS[] =
    "SELECT coalesce(after_decision, (SELECT max(id) FROM decisions d WHERE d.created_at <= c.at), "
    "0) AS after FROM config_changes c WHERE job = ?1 AND config_json IS NULL ORDER BY after";

int db_job_deletions(struct db *db, const char *job, int64_t **ids, int *n, char **errp)
{
    if (db->pg)
        return pg_job_deletions(db->pg, job, ids, n, errp);
    sqlite3_stmt *st = NULL;
    int step;
    *ids = NULL;
    *n = 0;
    if (sqlite3_prepare_v2(db->h, SQL_DELETIONS, -1, &st, NULL) != SQLITE_OK) {
        *errp = dberr(db, "read config_changes");
        return -1;
    }
    bind_text(st, 1, job);
    while ((step = sqlite3_step(st)) == SQLITE_ROW) {
        *ids = xrealloc(*ids, (size_t)(*n + 1) * sizeof **ids);
        (*ids)[(*n)++] = sqlite3_column_int64(st, 0);
    }
    sqlite3_finalize(st);
    if (step != SQLITE_DONE) {
        *errp = dberr(db, "read config_changes");
        free(*ids);
        *ids = NULL;
        *n = 0;
        return -1;
    }
    return 0;
}

/* ------------------------------------------------------------ migration 009 -- */

/*
 * Migration 009's step after its SQL: the response of each converted decision is rebuilt
 * from its new rows, and decisions.decision_json is cleared where the rebuild gives it back
 * exactly: the same text (what a retry's reply repeats), the same value at 17 digits (what
 * GET and replay read), and the same parallelism in the audit view. Elsewhere it stays.
 */
static const char SQL_REBUILT_ROWS[] =
    "SELECT " DEC_COLS ", json_extract(d.decision_json, '$.parallelism') IS "
    "(SELECT json_group_object(v.vertex, v.target) FROM vertex_decisions v "
    "WHERE v.decision_id = d.id) FROM decisions d "
    "LEFT JOIN decision_configs c ON c.id = d.config_id WHERE d.decision_json IS NOT NULL";
static const char SQL_REBUILT_CLEAR[] = "UPDATE decisions SET decision_json = NULL WHERE id = ?1";

static int clear_rebuilt(struct db *db, char **errp)
{
    sqlite3_stmt *rows_st = NULL, *clear = NULL;
    int64_t *ids = NULL;
    int n = 0, cap = 0, kept = 0, rc = -1, step;
    if (sqlite3_prepare_v2(db->h, SQL_REBUILT_ROWS, -1, &rows_st, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(db->h, SQL_REBUILT_CLEAR, -1, &clear, NULL) != SQLITE_OK) {
        *errp = dberr(db, "prepare");
        goto out;
    }
    while ((step = sqlite3_step(rows_st)) == SQLITE_ROW) {
        const char *old = (const char *)sqlite3_column_text(rows_st, DC_DECISION_JSON);
        json_t *was = col_json(rows_st, DC_DECISION_JSON), *now = NULL;
        bool same = false;
        /* the rebuild, as if decision_json were NULL */
        if (sqlite3_column_int(rows_st, DC__N) && json_is_object(was)) {
            char *e = NULL;
            if (response_rebuild(db, rows_st, 0, &now, &e) < 0) {
                *errp = e;
                json_decref(was);
                goto out;
            }
            char *t15 = response_text(now);
            char *a17 = json_dumps(was, JSON_COMPACT | JSON_REAL_PRECISION(17));
            char *b17 = json_dumps(now, JSON_COMPACT | JSON_REAL_PRECISION(17));
            same = strcmp(t15, old) == 0 && a17 && b17 && strcmp(a17, b17) == 0;
            free(t15);
            free(a17);
            free(b17);
        }
        json_decref(was);
        json_decref(now);
        if (!same) {
            kept++;
            continue;
        }
        if (n == cap) {
            cap = cap ? 2 * cap : 1024;
            ids = xrealloc(ids, (size_t)cap * sizeof *ids);
        }
        ids[n++] = sqlite3_column_int64(rows_st, DC_ID);
    }
    if (step != SQLITE_DONE) {
        *errp = dberr(db, "read decisions");
        goto out;
    }
    for (int i = 0; i < n; i++) {
        sqlite3_bind_int64(clear, 1, ids[i]);
        if (run(db, clear, "clear decision_json", errp) < 0)
            goto out;
    }
    if (n || kept)
        log_msg(LOG_INFO, "db", "decisions converted to the compact form",
                "rebuilt=%d kept_as_text=%d", n, kept);
    rc = 0;
out:
    free(ids);
    sqlite3_finalize(clear);
    sqlite3_finalize(rows_st);
    return rc;
}

static const char SQL_EVENTS[] =
    "SELECT id, decision_id, at, type, reason, message, count, suppressed FROM events "
    "WHERE job = ?1 ORDER BY at DESC, id DESC LIMIT ?2";

int db_events_list(struct db *db, const char *job, int limit, json_t **out, char **errp)
{
    if (db->pg)
        return pg_events_list(db->pg, job, limit, out, errp);
    sqlite3_stmt *st = stmt(db, SQL_EVENTS, errp);
    json_t *arr = json_array();
    int rc;
    *out = NULL;
    if (!st) {
        json_decref(arr);
        return -1;
    }
    bind_text(st, 1, job);
    sqlite3_bind_int(st, 2, limit);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        json_t *o = json_pack("{s:I,s:I,s:I,s:o,s:o,s:o,s:i,s:b}", "id",
                              (json_int_t)sqlite3_column_int64(st, 0), "decision_id",
                              (json_int_t)sqlite3_column_int64(st, 1), "at",
                              (json_int_t)sqlite3_column_int64(st, 2), "type", col_text(st, 3),
                              "reason", col_text(st, 4), "message", col_text(st, 5), "count",
                              sqlite3_column_int(st, 6), "suppressed", sqlite3_column_int(st, 7));
        json_array_append_new(arr, o);
    }
    return finish_list(db, st, rc, arr, "events", out, errp);
}
