/*
 * migrate.c - opening the store (db_open, db_open_read: the backend a --db value names), and
 * SQLite's migrations: schema/NNN_name.sql, embedded into the binary by schema/schema.cmake,
 * each applied in its own transaction and tracked with PRAGMA user_version, with the steps in
 * C that some of them take besides their SQL (PostgreSQL's migrations are SQL only: pg.c
 * applies them when it connects). The C steps read and write through db.c like any other
 * code of the store, which is why this file sits above it.
 */
#include <stdio.h>
#include <string.h>

#include "base/jarena.h"
#include "base/log.h"
#include "base/xmem.h"
#include "core/core.h"
#include "store/query.h"
#include "store/statejson.h"

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
static const struct db_sql SQL_STATE_JOBS = {
    "SELECT job FROM jobs WHERE state_json IS NOT NULL OR state_bin IS NOT NULL", NULL, "read jobs",
    0};
static const struct db_sql SQL_STATE_ROW = {"SELECT state_json, state_bin FROM jobs WHERE job = ?1",
                                            NULL, "read a job's state", 0};
static const struct db_sql SQL_STATE_SET = {
    "UPDATE jobs SET state_bin = ?2, state_json = NULL WHERE job = ?1", NULL,
    "store a converted state", 0};

/* The state st of job, stored in today's form; st NULL stores none. */
static int store_state(struct db *db, const char *job, struct core_state *st, char **errp)
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
    /* every stored sample goes, the state's are written again */
    if (db_window_write(db, job, INT64_MAX, w.ws, w.n_ws, errp) == 0 &&
        db_exec(db, &SQL_STATE_SET, DB_ARGS(DB_TEXT(job), DB_BLOB(w.state_bin, w.state_bin_len)),
                NULL, errp) >= 0)
        rc = 0;
    for (int i = 0; i < w.n_ws; i++)
        free(w.ws[i].blob);
    free(w.ws);
    free(w.state_bin);
    return rc;
}

/* Converts the state of one job if it is in an older form; *converted, *dropped count. */
static int convert_state(struct db *db, const char *job, struct core_state *st, int *converted,
                         int *dropped, char **errp)
{
    char msg[256], q1[160], q2[300];
    bool meta = false;
    struct db_cur c;
    size_t n;
    int rc = db_query(db, &SQL_STATE_ROW, DB_ARGS(DB_TEXT(job)), &c, errp);
    if (rc == 0 && !db_next(&c)) {
        if (db_done(&c, errp) == 0)
            *errp = xasprintf("read a job's state: no row");
        rc = -1;
    }
    if (rc < 0)
        goto out;
    const void *bin = db_blob(&c, 1, &n);
    if (bin) {
        if (core_state_decode(bin, n, st, &meta, msg, sizeof msg) < 0 || meta)
            goto out; /* today's form, or one the load refuses as it always did */
        rc = store_state(db, job, st, errp);
        ++*converted;
    } else if (statejson_read(db_text(&c, 0), st, msg, sizeof msg) == 0) {
        rc = store_state(db, job, st, errp);
        ++*converted;
    } else {
        log_msg(LOG_ERROR, "db", "stored state unreadable, starting empty", "job=%s error=%s",
                log_quote(q1, sizeof q1, job), log_quote(q2, sizeof q2, msg));
        rc = store_state(db, job, NULL, errp);
        ++*dropped;
    }
out:
    db_end(&c);
    return rc;
}

static int convert_states(struct db *db, char **errp)
{
    struct core_state *st = core_state_new();
    struct db_cur c;
    char **names = NULL;
    int n = 0, cap = 0, converted = 0, dropped = 0;
    /* The names first: the rows are then rewritten outside this scan of the table. */
    int rc = db_query(db, &SQL_STATE_JOBS, NULL, 0, &c, errp);
    while (rc == 0 && db_next(&c)) {
        if (n == cap) {
            cap = cap ? 2 * cap : 16;
            names = xrealloc(names, (size_t)cap * sizeof *names);
        }
        names[n++] = xstrdup(db_text(&c, 0));
    }
    rc = db_finish(&c, rc, errp);
    for (int i = 0; i < n && rc == 0; i++)
        rc = convert_state(db, names[i], st, &converted, &dropped, errp);
    if (rc == 0 && (converted || dropped))
        log_msg(LOG_INFO, "db", "job states in an older form converted", "converted=%d dropped=%d",
                converted, dropped);
    for (int i = 0; i < n; i++)
        free(names[i]);
    free(names);
    core_state_free(st);
    return rc;
}

/* ------------------------------------------------------------ migration 009 -- */

/*
 * Migration 009's step after its SQL: the response of each converted decision is rebuilt
 * from its new rows, and decisions.decision_json is cleared where the rebuild gives it back
 * exactly: the same text (what a retry's reply repeats), the same value at 17 digits (what
 * GET and replay read), and the same parallelism in the audit view. Elsewhere it stays.
 */
static const struct db_sql SQL_REBUILT_ROWS = {
    "SELECT " DB_DEC_COLS_011 ", json_extract(d.decision_json, '$.parallelism') IS "
    "(SELECT json_group_object(v.vertex, v.target) FROM vertex_decisions v "
    "WHERE v.decision_id = d.id)" DB_DEC_FROM_011 "WHERE d.decision_json IS NOT NULL",
    NULL, "read decisions", DB_SQL_ONCE};
static const struct db_sql SQL_REBUILT_CLEAR = {
    "UPDATE decisions SET decision_json = NULL WHERE id = ?1", NULL, "clear decision_json", 0};

/* Whether the decision at c (SQL_REBUILT_ROWS) gives its stored response back exactly. */
static int rebuilds_exactly(struct db *db, struct db_cur *c, bool *same, char **errp)
{
    const char *old = db_text(c, DC_DECISION_JSON);
    json_t *was = old ? json_loads(old, JSON_DECODE_ANY, NULL) : NULL, *now = NULL;
    *same = false;
    if (db_int(c, DC__N) && json_is_object(was)) {
        if (db_response_rebuild(db, c, 0, true, &now, errp) < 0) {
            json_decref(was);
            return -1;
        }
        char *t15 = jarena_dump(now);
        char *a17 = json_dumps(was, JSON_COMPACT | JSON_REAL_PRECISION(17));
        char *b17 = json_dumps(now, JSON_COMPACT | JSON_REAL_PRECISION(17));
        *same = strcmp(t15, old) == 0 && a17 && b17 && strcmp(a17, b17) == 0;
        free(t15);
        free(a17);
        free(b17);
    }
    json_decref(was);
    json_decref(now);
    return 0;
}

static int clear_rebuilt(struct db *db, char **errp)
{
    struct db_cur c;
    int64_t *ids = NULL;
    int n = 0, cap = 0, kept = 0;
    bool same;
    int rc = db_query(db, &SQL_REBUILT_ROWS, NULL, 0, &c, errp);
    while (rc == 0 && db_next(&c) && (rc = rebuilds_exactly(db, &c, &same, errp)) == 0) {
        if (!same) {
            kept++;
            continue;
        }
        if (n == cap) {
            cap = cap ? 2 * cap : 1024;
            ids = xrealloc(ids, (size_t)cap * sizeof *ids);
        }
        ids[n++] = db_int(&c, DC_ID);
    }
    rc = db_finish(&c, rc, errp);
    for (int i = 0; i < n && rc == 0; i++)
        if (db_exec(db, &SQL_REBUILT_CLEAR, DB_ARGS(DB_INT(ids[i])), NULL, errp) < 0)
            rc = -1;
    if (rc == 0 && (n || kept))
        log_msg(LOG_INFO, "db", "decisions converted to the compact form",
                "rebuilt=%d kept_as_text=%d", n, kept);
    free(ids);
    return rc;
}

/* --------------------------------------------------------------- migrate -- */

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

/* Applies every migration newer than user_version, each in its own transaction. */
static int migrate(struct db *db, char **errp)
{
    int have = db_user_version(db);
    if (have < 0) {
        *errp = xstrdup("user_version: cannot be read");
        return -1;
    }
    for (int i = 0; i < db_n_migrations; i++) {
        const struct db_migration *m = &db_migrations[i];
        if (m->version <= have)
            continue;
        char *e = NULL;
        char ver[64];
        snprintf(ver, sizeof ver, "PRAGMA user_version = %d", m->version);
        if (db_begin(db, &e) < 0 || run_c_step(db, m->version, false, &e) < 0 ||
            db_script(db, m->sql, &e) < 0 || run_c_step(db, m->version, true, &e) < 0 ||
            db_script(db, ver, &e) < 0 || db_commit(db, &e) < 0) {
            *errp = xasprintf("migration %s: %s", m->name, e);
            free(e);
            db_rollback(db);
            return -1;
        }
        log_msg(LOG_INFO, "db", "migrated", "migration=%s version=%d", m->name, m->version);
    }
    return 0;
}

/* ------------------------------------------------------------------- open -- */

/* The backend of a --db value: a PostgreSQL URL (db_is_pg), else a SQLite file. */
static const struct store_backend *backend_of(const char *path)
{
    return db_is_pg(path) ? &store_pg : &store_sqlite;
}

struct db *db_open(const char *path, const char *synchronous, char **errp)
{
    const struct store_backend *be = backend_of(path);
    void *conn = be->open(path, false, synchronous, errp);
    struct db *db = conn ? db_wrap(be, conn) : NULL;
    char *e = NULL;
    if (db && be == &store_sqlite && migrate(db, &e) < 0) {
        *errp = xasprintf("%s: %s", path, e);
        free(e);
        db_close(db);
        return NULL;
    }
    return db;
}

struct db *db_open_read(const char *path, char **errp)
{
    const struct store_backend *be = backend_of(path);
    void *conn = be->open(path, true, NULL, errp);
    return conn ? db_wrap(be, conn) : NULL;
}
