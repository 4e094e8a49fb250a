/*
 * sqlite.c - the store's SQLite backend (store_sqlite, see backend.h): a connection in WAL
 * mode with a busy timeout, its statements prepared once and kept in a small cache keyed by
 * their struct db_sql's address, reset after each use on every path; SQLite's result codes
 * and what they mean for the store; the write-ahead log's bound (journal_size_limit, a hook
 * that counts its frames, the TRUNCATE checkpoint); the SQL functions migrations 009 and 012
 * call.
 */
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "base/xmem.h"
#include "store/backend.h"
#include "store/pack.h"

#define LITE_CACHE 64
/* How long a write waits for another connection's lock before it fails with SQLITE_BUSY. */
#define LITE_BUSY_MS 5000

struct lite {
    sqlite3 *h;
    struct {
        const struct db_sql *s;
        sqlite3_stmt *st;
    } cache[LITE_CACHE];
    int n_cache;
    int err_code; /* extended result code of the last failure (errcode) */
    /* The write-ahead log (lite_wal_limit): its frames after the last commit, the page size. */
    int wal_frames, page_size;
};

/* ---------------------------------------------------------------- errors -- */

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
static char *failure(struct lite *l, const char *what, const char *msg)
{
    int code = sqlite3_extended_errcode(l->h), sys = 0;
    const char *io = (code & 0xff) == SQLITE_IOERR ? ioerr_what(code) : NULL;
    l->err_code = code;
    if ((code & 0xff) == SQLITE_IOERR || (code & 0xff) == SQLITE_FULL ||
        (code & 0xff) == SQLITE_CANTOPEN)
        sys = sqlite3_system_errno(l->h);
    return xasprintf("%s%s%s%s%s%s%s%s", what ? what : "", what ? ": " : "", msg, io ? ": " : "",
                     io ? io : "", sys ? " (" : "", sys ? strerror(sys) : "", sys ? ")" : "");
}

static char *dberr(struct lite *l, const char *what)
{
    return failure(l, what, sqlite3_errmsg(l->h));
}

static int lite_errcode(const void *c)
{
    return ((const struct lite *)c)->err_code;
}

static enum db_fault lite_fault_of(int code)
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

static const char *lite_errstr(int code)
{
    return sqlite3_errstr(code);
}

/* ------------------------------------------------------------ statements -- */

/* The statement of s: cached, prepared on first use (DB_SQL_ONCE: a new one). NULL + *errp. */
static sqlite3_stmt *stmt(struct lite *l, const struct db_sql *s, char **errp)
{
    bool once = s->flags & DB_SQL_ONCE;
    for (int i = 0; i < l->n_cache && !once; i++)
        if (l->cache[i].s == s)
            return l->cache[i].st;
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v3(l->h, s->sql, -1, once ? 0 : SQLITE_PREPARE_PERSISTENT, &st, NULL) !=
        SQLITE_OK) {
        *errp = dberr(l, s->what);
        return NULL;
    }
    if (once)
        return st;
    if (l->n_cache < LITE_CACHE) {
        l->cache[l->n_cache].s = s;
        l->cache[l->n_cache].st = st;
        l->n_cache++;
    } else {
        /* Cannot happen with the fixed set of statements of db.c; keep it usable anyway. */
        log_msg(LOG_WARN, "db", "statement cache full", NULL);
    }
    return st;
}

/* Binds p (parameters beyond the statement's last placeholder are not its own); copied
 * unless the caller's values outlast the statement's use (a write: stepped to its end here). */
static void bind(sqlite3_stmt *st, const struct db_param *p, int n, bool copy)
{
    int max = sqlite3_bind_parameter_count(st);
    for (int i = 0; i < n && i < max; i++) {
        switch (p[i].type) {
        case DB_PINT:
            sqlite3_bind_int64(st, i + 1, p[i].i);
            break;
        case DB_PTEXT:
            sqlite3_bind_text(st, i + 1, p[i].p, -1, copy ? SQLITE_TRANSIENT : SQLITE_STATIC);
            break;
        case DB_PBLOB:
            sqlite3_bind_blob(st, i + 1, p[i].p, (int)p[i].n, SQLITE_STATIC);
            break;
        case DB_PNULL:
            sqlite3_bind_null(st, i + 1);
            break;
        }
    }
}

/* Done with st: reset for its next use, or finalized when it was prepared for this one. */
static void release(const struct db_sql *s, sqlite3_stmt *st)
{
    if (s->flags & DB_SQL_ONCE) {
        sqlite3_finalize(st);
        return;
    }
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
}

static int lite_send(void *c, const struct db_sql *s, const struct db_param *p, int n, int64_t *out,
                     char **errp)
{
    struct lite *l = c;
    sqlite3_stmt *st = stmt(l, s, errp);
    int rows = 0, rc;
    if (!st)
        return -1;
    bind(st, p, n, false);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW)
        if (rows++ == 0 && out)
            *out = sqlite3_column_int64(st, 0);
    if (rc == SQLITE_DONE && sqlite3_column_count(st) == 0)
        rows = sqlite3_changes(l->h);
    if (rc == SQLITE_DONE && rows > 0 && out && (s->flags & DB_SQL_NEW_ID))
        *out = sqlite3_last_insert_rowid(l->h);
    release(s, st);
    if (rc != SQLITE_DONE) {
        *errp = dberr(l, s->what);
        return -1;
    }
    return rows;
}

static int lite_flush(void *c, char **errp)
{
    (void)c;
    (void)errp;
    return 0;
}

/* ---------------------------------------------------------------- cursor -- */

static int lite_query(void *c, const struct db_sql *s, const struct db_param *p, int n,
                      struct db_cur *cur, char **errp)
{
    struct lite *l = c;
    memset(cur, 0, sizeof *cur);
    cur->be = &store_sqlite;
    cur->conn = c;
    cur->s = s;
    if (!(cur->h = stmt(l, s, errp)))
        return -1;
    bind(cur->h, p, n, true);
    return 0;
}

static bool lite_next(struct db_cur *cur)
{
    return (cur->rc = sqlite3_step(cur->h)) == SQLITE_ROW;
}

static int lite_done(struct db_cur *cur, char **errp)
{
    if (cur->rc == SQLITE_DONE)
        return 0;
    *errp = dberr(cur->conn, cur->s->what);
    return -1;
}

static void lite_end(struct db_cur *cur)
{
    if (cur->h)
        release(cur->s, cur->h);
    cur->h = NULL;
}

static int lite_ncols(const struct db_cur *cur)
{
    return sqlite3_column_count(cur->h);
}

static const char *lite_colname(const struct db_cur *cur, int i)
{
    return sqlite3_column_name(cur->h, i);
}

static enum db_kind lite_kind(const struct db_cur *cur, int i)
{
    switch (sqlite3_column_type(cur->h, i)) {
    case SQLITE_INTEGER:
        return DB_KINT;
    case SQLITE_FLOAT:
        return DB_KREAL;
    case SQLITE_TEXT:
        return DB_KTEXT;
    case SQLITE_BLOB:
        return DB_KBLOB;
    default:
        return DB_KNULL;
    }
}

static int64_t lite_i64(const struct db_cur *cur, int i)
{
    return sqlite3_column_int64(cur->h, i);
}

static double lite_f64(const struct db_cur *cur, int i)
{
    return sqlite3_column_type(cur->h, i) == SQLITE_NULL ? NAN : sqlite3_column_double(cur->h, i);
}

static const char *lite_text(const struct db_cur *cur, int i)
{
    return (const char *)sqlite3_column_text(cur->h, i);
}

static const void *lite_blob(struct db_cur *cur, int i, size_t *n)
{
    const void *b = sqlite3_column_blob(cur->h, i);
    *n = (size_t)sqlite3_column_bytes(cur->h, i);
    return b;
}

/* ----------------------------------------------------------- transactions -- */

static int exec(struct lite *l, const char *sql, char **errp)
{
    char *m = NULL;
    if (sqlite3_exec(l->h, sql, NULL, NULL, &m) != SQLITE_OK) {
        *errp = failure(l, NULL, m ? m : sqlite3_errmsg(l->h));
        sqlite3_free(m);
        return -1;
    }
    return 0;
}

static int lite_script(void *c, const char *sql, char **errp)
{
    return exec(c, sql, errp);
}

static int lite_begin(void *c, enum db_tx tx, char **errp)
{
    struct lite *l = c;
    if (tx == DB_TX_READ)
        return exec(l, "BEGIN", errp);
    l->err_code = 0;
    return exec(l, "BEGIN IMMEDIATE", errp);
}

static int lite_commit(void *c, char **errp)
{
    return exec(c, "COMMIT", errp);
}

static void lite_rollback(void *c)
{
    struct lite *l = c;
    if (!sqlite3_get_autocommit(l->h))
        sqlite3_exec(l->h, "ROLLBACK", NULL, NULL, NULL);
}

static void lite_lock_wait(void *c, int ms)
{
    sqlite3_busy_timeout(((struct lite *)c)->h, ms < 0 ? LITE_BUSY_MS : ms);
}

/* One writer at a time holds the file: whoever writes runs the maintenance. */
static int lite_leader(void *c, char **errp)
{
    (void)c;
    (void)errp;
    return 1;
}

static int lite_version(void *c)
{
    struct lite *l = c;
    sqlite3_stmt *st = NULL;
    int v = -1;
    if (sqlite3_prepare_v2(l->h, "PRAGMA user_version", -1, &st, NULL) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW)
        v = sqlite3_column_int(st, 0);
    sqlite3_finalize(st);
    return v;
}

/* ------------------------------------------------------------------- WAL -- */

/* What SQLite's own wal_autocheckpoint does after a commit, at its default of 1000 pages. */
#define LITE_AUTOCHECKPOINT 1000

/*
 * The write-ahead log hook (lite_wal_limit): after each commit, the log's frames, and SQLite's
 * automatic checkpoint, which a hook of our own replaces: a PASSIVE one past 1000 frames, as
 * sqlite3_wal_autocheckpoint does (it copies what no reader needs, and waits for nobody).
 */
static int wal_hook(void *ud, sqlite3 *h, const char *name, int frames)
{
    struct lite *l = ud;
    l->wal_frames = frames;
    if (frames >= LITE_AUTOCHECKPOINT)
        sqlite3_wal_checkpoint_v2(h, name, SQLITE_CHECKPOINT_PASSIVE, NULL, NULL);
    return SQLITE_OK;
}

static int lite_wal_limit(void *c, int64_t bytes, char **errp)
{
    struct lite *l = c;
    char sql[64];
    snprintf(sql, sizeof sql, "PRAGMA journal_size_limit = %lld", (long long)bytes);
    if (exec(l, sql, errp) < 0)
        return -1;
    sqlite3_stmt *st = NULL;
    l->page_size = 4096;
    if (sqlite3_prepare_v2(l->h, "PRAGMA page_size", -1, &st, NULL) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW)
        l->page_size = sqlite3_column_int(st, 0);
    sqlite3_finalize(st);
    sqlite3_wal_hook(l->h, wal_hook, l);
    return 0;
}

static int64_t lite_wal_bytes(const void *c)
{
    const struct lite *l = c;
    /* the header, then each frame: its header and a page */
    return l->wal_frames ? 32 + (int64_t)l->wal_frames * (24 + l->page_size) : 0;
}

static int lite_wal_truncate(void *c, int busy_ms, char **errp)
{
    struct lite *l = c;
    int log = 0, done = 0;
    sqlite3_busy_timeout(l->h, busy_ms);
    int rc = sqlite3_wal_checkpoint_v2(l->h, NULL, SQLITE_CHECKPOINT_TRUNCATE, &log, &done);
    sqlite3_busy_timeout(l->h, LITE_BUSY_MS);
    if (rc == SQLITE_OK) {
        l->wal_frames = 0;
        return 0;
    }
    if ((rc & 0xff) == SQLITE_BUSY || (rc & 0xff) == SQLITE_LOCKED)
        return 1;
    *errp = dberr(l, "checkpoint");
    return -1;
}

/* ------------------------------------------------------------------- open -- */

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

/* SQL gov_hash(...): pack_hash of its arguments' texts (NULL as NULL), for migration 012. */
static void sql_hash(sqlite3_context *cx, int argc, sqlite3_value **argv)
{
    uint64_t h = PACK_HASH_INIT;
    for (int i = 0; i < argc; i++)
        h = pack_hash_text(h, sqlite3_value_type(argv[i]) == SQLITE_NULL
                                  ? NULL
                                  : (const char *)sqlite3_value_text(argv[i]));
    sqlite3_result_int64(cx, pack_hash_sql(h));
}

static void lite_close(void *c)
{
    struct lite *l = c;
    if (!l)
        return;
    for (int i = 0; i < l->n_cache; i++)
        sqlite3_finalize(l->cache[i].st);
    sqlite3_close(l->h);
    free(l);
}

/*
 * The file at path: read-only (query_only), or read-write, created when missing, in WAL mode
 * with the given `synchronous`, and the SQL functions of migration 009. The migrations are
 * migrate.c's.
 */
static void *lite_open(const char *path, bool read_only, const char *synchronous, char **errp)
{
    struct lite *l = xcalloc(1, sizeof *l);
    char *e = NULL;
    char sql[64];
    int flags = read_only ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE;
    if (sqlite3_open_v2(path, &l->h, flags, NULL) != SQLITE_OK) {
        *errp = xasprintf("%s: %s", path, l->h ? sqlite3_errmsg(l->h) : "cannot open");
        goto fail;
    }
    sqlite3_busy_timeout(l->h, LITE_BUSY_MS);
    if (read_only) {
        sqlite3_exec(l->h, "PRAGMA query_only = 1", NULL, NULL, NULL);
        return l;
    }
    if (strcmp(synchronous, "FULL") && strcmp(synchronous, "NORMAL") &&
        strcmp(synchronous, "OFF") && strcmp(synchronous, "EXTRA")) {
        *errp =
            xasprintf("synchronous: \"%s\" is not one of FULL, NORMAL, OFF, EXTRA", synchronous);
        goto fail;
    }
    snprintf(sql, sizeof sql, "PRAGMA synchronous = %s", synchronous);
    sqlite3_create_function(l->h, "gov_pack_input", 1, SQLITE_UTF8 | SQLITE_DETERMINISTIC, NULL,
                            sql_pack_input, NULL, NULL);
    sqlite3_create_function(l->h, "gov_pack_figures", 1, SQLITE_UTF8 | SQLITE_DETERMINISTIC, NULL,
                            sql_pack_figures, NULL, NULL);
    sqlite3_create_function(l->h, "gov_hash", -1, SQLITE_UTF8 | SQLITE_DETERMINISTIC, NULL,
                            sql_hash, NULL, NULL);
    if (exec(l, "PRAGMA journal_mode = WAL", &e) < 0 || exec(l, sql, &e) < 0) {
        *errp = xasprintf("%s: %s", path, e);
        free(e);
        goto fail;
    }
    return l;
fail:
    lite_close(l);
    return NULL;
}

const struct store_backend store_sqlite = {
    .name = "sqlite",
    .pipelines = false,
    .compact_since = 9,
    .outcomes_since = 12,
    .open = lite_open,
    .close = lite_close,
    .version = lite_version,
    .script = lite_script,
    .begin = lite_begin,
    .commit = lite_commit,
    .rollback = lite_rollback,
    .send = lite_send,
    .flush = lite_flush,
    .query = lite_query,
    .next = lite_next,
    .done = lite_done,
    .end = lite_end,
    .ncols = lite_ncols,
    .colname = lite_colname,
    .kind = lite_kind,
    .i64 = lite_i64,
    .f64 = lite_f64,
    .text = lite_text,
    .blob = lite_blob,
    .errcode = lite_errcode,
    .fault_of = lite_fault_of,
    .errstr = lite_errstr,
    .lock_wait = lite_lock_wait,
    .leader = lite_leader,
    .wal_limit = lite_wal_limit,
    .wal_bytes = lite_wal_bytes,
    .wal_truncate = lite_wal_truncate,
};
