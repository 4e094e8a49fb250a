/*
 * sql.c - the read-only SQL engine (see sql.h): a pool of read-only connections guarded by
 * an authorizer, the one-statement / read-only / time / row checks, the SQL-to-JSON
 * rendering, and the worker threads of sql_submit.
 */
#include <math.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "sql.h"
#include "xmem.h"

#define DEF_TIMEOUT_MS  2000
#define DEF_MAX_ROWS    10000
#define DEF_MAX_BYTES   (8 * 1024 * 1024)
#define DEF_MAX_SQL_LEN 100000
#define DEF_WORKERS     2
#define DEF_MAX_QUEUE   64
/* VM instructions between two looks at the clock: about a few microseconds of work. */
#define PROGRESS_OPS 1000
/* A rough per-cell cost added to the byte count, so a million tiny cells count too. */
#define CELL_OVERHEAD 8

/* One read-only connection and what its callbacks need. Used by one thread at a time. */
struct conn {
    struct sql_engine *e;
    sqlite3 *db;
    int64_t deadline_ns; /* monotonic; the progress handler stops the VM past it */
    bool timed_out;      /* set by the progress handler when the deadline struck */
    char denied[160];    /* the first authorizer refusal of the current query, or "" */
    struct conn *next;   /* in the idle list */
};

/* One queued sql_submit. */
struct job {
    char *sql;
    json_t *params; /* an independent deep copy, or NULL */
    sql_done_cb done;
    void *ud;
    struct job *next;
};

struct sql_engine {
    char *path;
    struct sql_limits lim;
    atomic_bool stopping;

    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct conn *idle; /* connections not in use */
    int n_idle;
    struct job *head, *tail;
    int n_queued;

    pthread_t *threads;
    int n_threads;
};

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* new: the error body {"error": {"code", "message", "field"}}; field NULL omits it. */
static json_t *error_body(const char *code, const char *field, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static json_t *error_body(const char *code, const char *field, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    json_t *err = json_object();
    json_object_set_new(err, "code", json_string(code));
    /* msg may hold bytes of the user's SQL cut at any point: json_string needs UTF-8. */
    json_t *m = json_string(msg);
    json_object_set_new(err, "message", m ? m : json_string("(message is not valid UTF-8)"));
    if (field)
        json_object_set_new(err, "field", json_string(field));
    json_t *body = json_object();
    json_object_set_new(body, "error", err);
    return body;
}

/* ---- the authorizer ---------------------------------------------------------------- */

/* PRAGMAs that only read, whatever their argument (which names a table or an index). */
static const char *const pragma_any_arg[] = {
    "table_info",  "table_xinfo",      "table_list",      "index_list",     "index_info",
    "index_xinfo", "foreign_key_list", "database_list",   "collation_list", "function_list",
    "module_list", "pragma_list",      "compile_options",
};

/* PRAGMAs that read when given no argument and would set something with one. */
static const char *const pragma_no_arg[] = {
    "user_version", "schema_version", "application_id", "data_version", "page_count",
    "page_size",    "freelist_count", "encoding",       "journal_mode", "foreign_keys",
};

/*
 * Functions refused even though SQLite provides them: load_extension loads code;
 * fts3_tokenizer with two arguments installs a tokenizer from a raw pointer (this build
 * has ENABLE_FTS3_TOKENIZER); readfile, writefile and edit touch files or run programs
 * (the shell's, refused in case a future build registers them).
 */
static const char *const func_denied[] = {
    "load_extension", "fts3_tokenizer", "readfile", "writefile", "edit",
};

static bool in_list(const char *name, const char *const *list, size_t n)
{
    if (!name)
        return false;
    for (size_t i = 0; i < n; i++)
        if (strcasecmp(name, list[i]) == 0)
            return true;
    return false;
}

#define IN_LIST(name, list) in_list((name), (list), sizeof(list) / sizeof((list)[0]))

static const char *action_name(int code)
{
    switch (code) {
    case SQLITE_CREATE_INDEX:
        return "CREATE INDEX";
    case SQLITE_CREATE_TABLE:
        return "CREATE TABLE";
    case SQLITE_CREATE_TEMP_INDEX:
        return "CREATE TEMP INDEX";
    case SQLITE_CREATE_TEMP_TABLE:
        return "CREATE TEMP TABLE";
    case SQLITE_CREATE_TEMP_TRIGGER:
        return "CREATE TEMP TRIGGER";
    case SQLITE_CREATE_TEMP_VIEW:
        return "CREATE TEMP VIEW";
    case SQLITE_CREATE_TRIGGER:
        return "CREATE TRIGGER";
    case SQLITE_CREATE_VIEW:
        return "CREATE VIEW";
    case SQLITE_DELETE:
        return "DELETE";
    case SQLITE_DROP_INDEX:
        return "DROP INDEX";
    case SQLITE_DROP_TABLE:
        return "DROP TABLE";
    case SQLITE_DROP_TEMP_INDEX:
        return "DROP TEMP INDEX";
    case SQLITE_DROP_TEMP_TABLE:
        return "DROP TEMP TABLE";
    case SQLITE_DROP_TEMP_TRIGGER:
        return "DROP TEMP TRIGGER";
    case SQLITE_DROP_TEMP_VIEW:
        return "DROP TEMP VIEW";
    case SQLITE_DROP_TRIGGER:
        return "DROP TRIGGER";
    case SQLITE_DROP_VIEW:
        return "DROP VIEW";
    case SQLITE_INSERT:
        return "INSERT";
    case SQLITE_PRAGMA:
        return "PRAGMA";
    case SQLITE_TRANSACTION:
        return "TRANSACTION";
    case SQLITE_UPDATE:
        return "UPDATE";
    case SQLITE_ATTACH:
        return "ATTACH";
    case SQLITE_DETACH:
        return "DETACH";
    case SQLITE_ALTER_TABLE:
        return "ALTER TABLE";
    case SQLITE_REINDEX:
        return "REINDEX";
    case SQLITE_ANALYZE:
        return "ANALYZE";
    case SQLITE_CREATE_VTABLE:
        return "CREATE VIRTUAL TABLE";
    case SQLITE_DROP_VTABLE:
        return "DROP VIRTUAL TABLE";
    case SQLITE_FUNCTION:
        return "function";
    case SQLITE_SAVEPOINT:
        return "SAVEPOINT";
    case SQLITE_COPY:
        return "COPY";
    default:
        return "this operation";
    }
}

/*
 * Allows reads only. The first refusal is kept in c->denied so the error says what was
 * refused (SQLite's own message is just "not authorized"). Invoked at prepare time, and at
 * step time for the statement a pragma_*() table-valued function prepares internally.
 */
static int authorize_cb(void *ud, int action, const char *a1, const char *a2, const char *db,
                        const char *trigger)
{
    struct conn *c = ud;
    (void)trigger;
    switch (action) {
    case SQLITE_READ:
    case SQLITE_SELECT:
    case SQLITE_RECURSIVE:
        return SQLITE_OK;
    case SQLITE_UPDATE:
        /*
         * SQLite 3.40 authorizes a phantom "UPDATE sqlite_master" (type, name, tbl_name,
         * rootpage, sql) when a table-valued function (json_each, pragma_table_info) is first
         * connected: sqlite3_declare_vtab parses a CREATE TABLE whose discarded code would
         * record it. Nothing runs. A real UPDATE of the schema table cannot reach here: SQLite
         * refuses it at prepare time ("may not be modified") unless writable_schema is on,
         * which the PRAGMA rule and defensive mode forbid. Every other UPDATE is refused.
         */
        if (a1 && strcmp(a1, "sqlite_master") == 0 && db && strcmp(db, "main") == 0)
            return SQLITE_OK;
        goto deny;
    case SQLITE_FUNCTION:
        /* a1 is NULL, a2 the function's name */
        if (!IN_LIST(a2, func_denied))
            return SQLITE_OK;
        if (!c->denied[0])
            snprintf(c->denied, sizeof c->denied, "not authorized: function %s()", a2);
        return SQLITE_DENY;
    case SQLITE_PRAGMA:
        /* a1 is the pragma's name, a2 its argument or NULL */
        if (IN_LIST(a1, pragma_any_arg) || (!a2 && IN_LIST(a1, pragma_no_arg)))
            return SQLITE_OK;
        if (!c->denied[0]) {
            if (a2)
                snprintf(c->denied, sizeof c->denied, "not authorized: PRAGMA %.40s = %.40s",
                         a1 ? a1 : "?", a2);
            else
                snprintf(c->denied, sizeof c->denied, "not authorized: PRAGMA %.40s",
                         a1 ? a1 : "?");
        }
        return SQLITE_DENY;
    default:
    deny:
        if (!c->denied[0] && (action == SQLITE_INSERT || action == SQLITE_DELETE) && a1 &&
            (strcmp(a1, "sqlite_master") == 0 || strcmp(a1, "sqlite_temp_master") == 0)) {
            /* CREATE and DROP ask for the INSERT into (DELETE from) the schema table first,
             * and stop at its refusal */
            snprintf(c->denied, sizeof c->denied, "not authorized: %s %sobject",
                     action == SQLITE_INSERT ? "CREATE" : "DROP",
                     strcmp(a1, "sqlite_temp_master") == 0 ? "TEMP " : "");
        }
        if (!c->denied[0]) {
            /* a1 names the table, index, view, trigger or file for most actions */
            if (a1 && action != SQLITE_TRANSACTION && action != SQLITE_SAVEPOINT)
                snprintf(c->denied, sizeof c->denied, "not authorized: %s (%.64s)",
                         action_name(action), a1);
            else
                snprintf(c->denied, sizeof c->denied, "not authorized: %s", action_name(action));
        }
        return SQLITE_DENY;
    }
}

/* Stops the VM past the deadline or when the engine is stopping (returns non-zero). */
static int progress_cb(void *ud)
{
    struct conn *c = ud;
    if (atomic_load(&c->e->stopping))
        return 1;
    if (now_ns() >= c->deadline_ns) {
        c->timed_out = true;
        return 1;
    }
    return 0;
}

/* ---- connections -------------------------------------------------------------------- */

static void conn_close(struct conn *c)
{
    if (!c)
        return;
    sqlite3_close_v2(c->db);
    free(c);
}

/* New: a read-only, locked-down connection; NULL with *errp on failure. */
static struct conn *conn_open(struct sql_engine *e, char **errp)
{
    struct conn *c = xmalloc(sizeof *c);
    memset(c, 0, sizeof *c);
    c->e = e;
    char *zerr = NULL;
    int rc = sqlite3_open_v2(e->path, &c->db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, NULL);
    if (rc != SQLITE_OK) {
        *errp = xasprintf("sql: cannot open %s: %s", e->path,
                          c->db ? sqlite3_errmsg(c->db) : sqlite3_errstr(rc));
        goto fail;
    }
    sqlite3_db_config(c->db, SQLITE_DBCONFIG_ENABLE_LOAD_EXTENSION, 0, NULL);
    sqlite3_db_config(c->db, SQLITE_DBCONFIG_DEFENSIVE, 1, NULL);
    /* The schema stays trusted: it is governor's own (this engine cannot change it), and
     * SQLite 3.40 would refuse json_extract() inside the audit views otherwise. */
    sqlite3_db_config(c->db, SQLITE_DBCONFIG_ENABLE_TRIGGER, 0, NULL);

    sqlite3_limit(c->db, SQLITE_LIMIT_ATTACHED, 0);
    sqlite3_limit(c->db, SQLITE_LIMIT_SQL_LENGTH, e->lim.max_sql_len);
    /* One string or blob: large enough for any stored document, small enough that
     * zeroblob(1e9) or a runaway replace() fails instead of eating memory. */
    sqlite3_limit(c->db, SQLITE_LIMIT_LENGTH, 16 * 1024 * 1024);
    sqlite3_limit(c->db, SQLITE_LIMIT_EXPR_DEPTH, 200);
    sqlite3_limit(c->db, SQLITE_LIMIT_COMPOUND_SELECT, 100);
    sqlite3_limit(c->db, SQLITE_LIMIT_VARIABLE_NUMBER, 1000);
    sqlite3_limit(c->db, SQLITE_LIMIT_FUNCTION_ARG, 100);
    sqlite3_limit(c->db, SQLITE_LIMIT_LIKE_PATTERN_LENGTH, 10000);
    sqlite3_limit(c->db, SQLITE_LIMIT_WORKER_THREADS, 0);
    sqlite3_limit(c->db, SQLITE_LIMIT_TRIGGER_DEPTH, 1);

    /* Wait for a lock no longer than a query may run (readers rarely wait in WAL mode:
     * only while the writer recovers or checkpoints with TRUNCATE). */
    sqlite3_busy_timeout(c->db, (int)(e->lim.timeout_ms > 60000 ? 60000 : e->lim.timeout_ms));

    rc = sqlite3_exec(c->db, "PRAGMA query_only=1", NULL, NULL, &zerr);
    if (rc != SQLITE_OK) {
        *errp = xasprintf("sql: %s: PRAGMA query_only: %s", e->path, zerr ? zerr : "?");
        goto fail;
    }
    /* Reading the schema proves the file is a database (open_v2 does not look). */
    rc = sqlite3_exec(c->db, "SELECT count(*) FROM sqlite_schema", NULL, NULL, &zerr);
    if (rc != SQLITE_OK) {
        *errp = xasprintf("sql: %s: %s", e->path, zerr ? zerr : sqlite3_errstr(rc));
        goto fail;
    }
    sqlite3_set_authorizer(c->db, authorize_cb, c);
    sqlite3_progress_handler(c->db, PROGRESS_OPS, progress_cb, c);
    return c;
fail:
    sqlite3_free(zerr);
    conn_close(c);
    return NULL;
}

/* A connection for one query: an idle one, or a new one. NULL with *errp on failure. */
static struct conn *conn_get(struct sql_engine *e, char **errp)
{
    pthread_mutex_lock(&e->mu);
    struct conn *c = e->idle;
    if (c) {
        e->idle = c->next;
        e->n_idle--;
    }
    pthread_mutex_unlock(&e->mu);
    if (!c)
        c = conn_open(e, errp);
    return c;
}

/* Returns c to the idle list; closes it if enough are idle already. */
static void conn_put(struct sql_engine *e, struct conn *c)
{
    pthread_mutex_lock(&e->mu);
    if (e->n_idle < e->lim.workers + 1) {
        c->next = e->idle;
        e->idle = c;
        e->n_idle++;
        c = NULL;
    }
    pthread_mutex_unlock(&e->mu);
    conn_close(c);
}

/* ---- rendering ------------------------------------------------------------------------ */

/* Length of the valid UTF-8 sequence at s (n bytes left), or 0 (the same rules as
 * jansson: no overlong forms, no surrogates, nothing above U+10FFFF). */
static size_t utf8_seq(const unsigned char *s, size_t n)
{
    unsigned char b = s[0];
    size_t len;
    uint32_t cp;
    if (b < 0x80)
        return 1;
    if (b < 0xC2)
        return 0;
    if (b < 0xE0) {
        len = 2;
        cp = b & 0x1F;
    } else if (b < 0xF0) {
        len = 3;
        cp = b & 0x0F;
    } else if (b < 0xF5) {
        len = 4;
        cp = b & 0x07;
    } else {
        return 0;
    }
    if (len > n)
        return 0;
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xC0) != 0x80)
            return 0;
        cp = (cp << 6) | (s[i] & 0x3F);
    }
    if ((len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) || cp > 0x10FFFF ||
        (cp >= 0xD800 && cp <= 0xDFFF))
        return 0;
    return len;
}

/* new: a JSON string of the n bytes at s, each invalid UTF-8 byte replaced by U+FFFD. */
static json_t *text_json(const unsigned char *s, size_t n)
{
    size_t i = 0;
    while (i < n) {
        size_t k = utf8_seq(s + i, n - i);
        if (!k)
            break;
        i += k;
    }
    if (i == n)
        return json_stringn((const char *)s, n);
    char *out = xmalloc(n * 3 + 1); /* each bad byte becomes 3 bytes */
    size_t o = 0;
    for (i = 0; i < n;) {
        size_t k = utf8_seq(s + i, n - i);
        if (k) {
            memcpy(out + o, s + i, k);
            o += k;
            i += k;
        } else {
            memcpy(out + o, "\xEF\xBF\xBD", 3);
            o += 3;
            i++;
        }
    }
    json_t *j = json_stringn(out, o);
    free(out);
    return j;
}

/* new: standard base64 (RFC 4648, with padding) of n bytes. */
static json_t *blob_json(const unsigned char *s, size_t n)
{
    static const char tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    size_t outlen = (n + 2) / 3 * 4;
    char *out = xmalloc(outlen + 1);
    size_t o = 0, i = 0;
    for (; i + 2 < n; i += 3) {
        uint32_t v = (uint32_t)s[i] << 16 | (uint32_t)s[i + 1] << 8 | s[i + 2];
        out[o++] = tab[v >> 18];
        out[o++] = tab[(v >> 12) & 63];
        out[o++] = tab[(v >> 6) & 63];
        out[o++] = tab[v & 63];
    }
    if (i < n) {
        uint32_t v = (uint32_t)s[i] << 16 | (i + 1 < n ? (uint32_t)s[i + 1] << 8 : 0);
        out[o++] = tab[v >> 18];
        out[o++] = tab[(v >> 12) & 63];
        out[o++] = i + 1 < n ? tab[(v >> 6) & 63] : '=';
        out[o++] = '=';
    }
    json_t *j = json_stringn(out, o);
    free(out);
    return j;
}

/* new: column i of the current row; adds its approximate size to *bytes. */
static json_t *cell_json(sqlite3_stmt *st, int i, int64_t *bytes)
{
    *bytes += CELL_OVERHEAD;
    switch (sqlite3_column_type(st, i)) {
    case SQLITE_INTEGER:
        return json_integer((json_int_t)sqlite3_column_int64(st, i));
    case SQLITE_FLOAT: {
        double d = sqlite3_column_double(st, i);
        return isfinite(d) ? json_real(d) : json_null();
    }
    case SQLITE_TEXT: {
        const unsigned char *s = sqlite3_column_text(st, i);
        size_t n = (size_t)sqlite3_column_bytes(st, i);
        *bytes += (int64_t)n;
        return s ? text_json(s, n) : json_null();
    }
    case SQLITE_BLOB: {
        const unsigned char *s = sqlite3_column_blob(st, i);
        size_t n = (size_t)sqlite3_column_bytes(st, i);
        *bytes += (int64_t)(n + 2) / 3 * 4;
        return blob_json(s, n);
    }
    default:
        return json_null();
    }
}

/* ---- one query ------------------------------------------------------------------------ */

/* The text after a statement holds nothing but whitespace, comments and semicolons. */
static bool only_trivia(const char *p)
{
    for (;;) {
        if (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r' || *p == '\f' || *p == '\v' ||
            *p == ';') {
            p++;
        } else if (p[0] == '-' && p[1] == '-') {
            while (*p && *p != '\n')
                p++;
        } else if (p[0] == '/' && p[1] == '*') {
            p += 2;
            while (*p && !(p[0] == '*' && p[1] == '/'))
                p++;
            if (*p)
                p += 2; /* an unterminated comment runs to the end, as SQLite reads it */
        } else {
            return *p == '\0';
        }
    }
}

/* Binds params to st. 0, or -1 with *err (new) the error body. */
static int bind_params(sqlite3_stmt *st, json_t *params, json_t **err)
{
    int want = sqlite3_bind_parameter_count(st);
    size_t have = 0;
    if (params && !json_is_null(params)) {
        if (!json_is_array(params)) {
            *err = error_body("INVALID_ARGUMENT", "params", "params must be an array");
            return -1;
        }
        have = json_array_size(params);
    }
    if (have != (size_t)want) {
        *err = error_body("INVALID_ARGUMENT", "params",
                          "the statement has %d parameter%s but %zu value%s given", want,
                          want == 1 ? "" : "s", have, have == 1 ? " was" : "s were");
        return -1;
    }
    for (size_t i = 0; i < have; i++) {
        json_t *v = json_array_get(params, i);
        int idx = (int)i + 1, rc;
        switch (json_typeof(v)) {
        case JSON_INTEGER:
            rc = sqlite3_bind_int64(st, idx, (sqlite3_int64)json_integer_value(v));
            break;
        case JSON_REAL:
            rc = sqlite3_bind_double(st, idx, json_real_value(v));
            break;
        case JSON_STRING:
            rc = sqlite3_bind_text64(st, idx, json_string_value(v), json_string_length(v),
                                     SQLITE_TRANSIENT, SQLITE_UTF8);
            break;
        case JSON_TRUE:
            rc = sqlite3_bind_int(st, idx, 1);
            break;
        case JSON_FALSE:
            rc = sqlite3_bind_int(st, idx, 0);
            break;
        case JSON_NULL:
            rc = sqlite3_bind_null(st, idx);
            break;
        default: {
            char field[32];
            snprintf(field, sizeof field, "params[%zu]", i);
            *err = error_body("INVALID_ARGUMENT", field,
                              "a parameter must be a number, a string, a boolean or null, "
                              "not an %s",
                              json_is_object(v) ? "object" : "array");
            return -1;
        }
        }
        if (rc != SQLITE_OK) {
            char field[32];
            snprintf(field, sizeof field, "params[%zu]", i);
            *err = error_body("INVALID_ARGUMENT", field, "cannot bind: %s", sqlite3_errstr(rc));
            return -1;
        }
    }
    return 0;
}

/* The error body and status of a failed prepare or step (rc is the primary code). */
static json_t *sqlite_error(struct conn *c, int rc, int *status)
{
    struct sql_engine *e = c->e;
    if (c->denied[0]) {
        *status = 400;
        return error_body("INVALID_ARGUMENT", "sql", "%s", c->denied);
    }
    switch (rc) {
    case SQLITE_INTERRUPT:
        if (c->timed_out) {
            *status = 400;
            return error_body("DEADLINE_EXCEEDED", "sql", "query exceeded the %lld ms time limit",
                              (long long)e->lim.timeout_ms);
        }
        *status = 503;
        return error_body("UNAVAILABLE", NULL, "the server is shutting down");
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
        *status = 503;
        return error_body("UNAVAILABLE", NULL, "the database is busy: %s", sqlite3_errmsg(c->db));
    case SQLITE_NOMEM:
    case SQLITE_IOERR:
    case SQLITE_CORRUPT:
    case SQLITE_CANTOPEN:
    case SQLITE_NOTADB:
    case SQLITE_FULL:
    case SQLITE_PROTOCOL:
    case SQLITE_INTERNAL:
        *status = 500;
        return error_body("INTERNAL", NULL, "database error: %s", sqlite3_errmsg(c->db));
    case SQLITE_READONLY:
        *status = 400;
        return error_body("INVALID_ARGUMENT", "sql", "statement is not read-only: %s",
                          sqlite3_errmsg(c->db));
    default:
        /* syntax errors, no such table, too big, function errors: SQLite says why */
        *status = 400;
        return error_body("INVALID_ARGUMENT", "sql", "%s", sqlite3_errmsg(c->db));
    }
}

/* Runs sql on c; the result or error body in *result, the status as return value. */
static int run_on(struct conn *c, const char *sql, json_t *params, json_t **result)
{
    struct sql_engine *e = c->e;
    sqlite3_stmt *st = NULL;
    json_t *out = NULL, *rows = NULL;
    const char *tail = NULL;
    int status = 500, rc;

    c->denied[0] = '\0';
    c->timed_out = false;
    c->deadline_ns = now_ns() + e->lim.timeout_ms * 1000000;

    size_t len = strlen(sql);
    if (len > (size_t)e->lim.max_sql_len) {
        status = 400;
        out = error_body("INVALID_ARGUMENT", "sql", "sql is %zu bytes, longer than the %d allowed",
                         len, e->lim.max_sql_len);
        goto out;
    }
    rc = sqlite3_prepare_v2(c->db, sql, (int)len, &st, &tail);
    if (rc != SQLITE_OK) {
        out = sqlite_error(c, rc & 0xFF, &status);
        goto out;
    }
    if (!st) {
        status = 400;
        out = error_body("INVALID_ARGUMENT", "sql", "sql holds no statement");
        goto out;
    }
    if (tail && !only_trivia(tail)) {
        status = 400;
        out = error_body("INVALID_ARGUMENT", "sql", "only one statement is allowed");
        goto out;
    }
    if (!sqlite3_stmt_readonly(st)) {
        status = 400;
        out = error_body("INVALID_ARGUMENT", "sql", "statement is not read-only");
        goto out;
    }
    if (bind_params(st, params, &out) != 0) {
        status = 400;
        goto out;
    }

    int ncol = sqlite3_column_count(st);
    json_t *cols = json_array();
    for (int i = 0; i < ncol; i++) {
        const char *name = sqlite3_column_name(st, i);
        json_array_append_new(cols, name ? text_json((const unsigned char *)name, strlen(name))
                                         : json_null());
    }
    rows = json_array();
    bool truncated = false;
    int64_t bytes = 0;
    int nrows = 0;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (nrows >= e->lim.max_rows || bytes >= e->lim.max_bytes) {
            truncated = true;
            break;
        }
        json_t *row = json_array();
        for (int i = 0; i < ncol; i++)
            json_array_append_new(row, cell_json(st, i, &bytes));
        json_array_append_new(rows, row);
        nrows++;
    }
    if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
        json_decref(cols);
        out = sqlite_error(c, rc & 0xFF, &status);
        goto out;
    }
    out = json_object();
    json_object_set_new(out, "columns", cols);
    json_object_set_new(out, "rows", rows);
    json_object_set_new(out, "truncated", json_boolean(truncated));
    rows = NULL;
    status = 200;
out:
    json_decref(rows);
    sqlite3_finalize(st);
    *result = out;
    return status;
}

int sql_run(struct sql_engine *e, const char *sql, json_t *params, json_t **result, int *status)
{
    char *err = NULL;
    struct conn *c = NULL;
    if (!sql) {
        *status = 400;
        *result = error_body("INVALID_ARGUMENT", "sql", "sql must be a string");
        goto out;
    }
    if (atomic_load(&e->stopping)) {
        *status = 503;
        *result = error_body("UNAVAILABLE", NULL, "the server is shutting down");
        goto out;
    }
    c = conn_get(e, &err);
    if (!c) {
        *status = 500;
        *result = error_body("INTERNAL", NULL, "%s", err);
        goto out;
    }
    *status = run_on(c, sql, params, result);
    conn_put(e, c);
out:
    free(err);
    return *status == 200 ? 0 : -1;
}

/* ---- workers -------------------------------------------------------------------------- */

static void job_free(struct job *j)
{
    free(j->sql);
    json_decref(j->params);
    free(j);
}

static void *worker_main(void *arg)
{
    struct sql_engine *e = arg;
    for (;;) {
        pthread_mutex_lock(&e->mu);
        while (!e->head && !atomic_load(&e->stopping))
            pthread_cond_wait(&e->cv, &e->mu);
        struct job *j = e->head;
        if (j) {
            e->head = j->next;
            if (!e->head)
                e->tail = NULL;
            e->n_queued--;
        }
        pthread_mutex_unlock(&e->mu);
        if (!j)
            return NULL; /* stopping and nothing left */
        json_t *result = NULL;
        int status;
        sql_run(e, j->sql, j->params, &result, &status); /* 503 once stopping */
        j->done(j->ud, status, result);
        job_free(j);
    }
}

int sql_submit(struct sql_engine *e, const char *sql, json_t *params, sql_done_cb done, void *ud)
{
    struct job *j = xmalloc(sizeof *j);
    j->sql = sql ? xstrdup(sql) : NULL;
    j->params = params ? json_deep_copy(params) : NULL;
    j->done = done;
    j->ud = ud;
    j->next = NULL;
    pthread_mutex_lock(&e->mu);
    if (atomic_load(&e->stopping) || e->n_queued >= e->lim.max_queue) {
        pthread_mutex_unlock(&e->mu);
        job_free(j);
        return -1;
    }
    if (e->tail)
        e->tail->next = j;
    else
        e->head = j;
    e->tail = j;
    e->n_queued++;
    pthread_cond_signal(&e->cv);
    pthread_mutex_unlock(&e->mu);
    return 0;
}

/* ---- the engine ----------------------------------------------------------------------- */

struct sql_engine *sql_engine_new(const char *db_path, const struct sql_limits *lim, char **errp)
{
    struct sql_engine *e = xmalloc(sizeof *e);
    memset(e, 0, sizeof *e);
    if (lim)
        e->lim = *lim;
    if (e->lim.timeout_ms <= 0)
        e->lim.timeout_ms = DEF_TIMEOUT_MS;
    if (e->lim.max_rows <= 0)
        e->lim.max_rows = DEF_MAX_ROWS;
    if (e->lim.max_bytes <= 0)
        e->lim.max_bytes = DEF_MAX_BYTES;
    if (e->lim.max_sql_len <= 0)
        e->lim.max_sql_len = DEF_MAX_SQL_LEN;
    if (e->lim.workers <= 0)
        e->lim.workers = DEF_WORKERS;
    if (e->lim.max_queue <= 0)
        e->lim.max_queue = DEF_MAX_QUEUE;
    e->path = xstrdup(db_path);
    atomic_init(&e->stopping, false);
    pthread_mutex_init(&e->mu, NULL);
    pthread_cond_init(&e->cv, NULL);

    struct conn *c = conn_open(e, errp);
    if (!c)
        goto fail;
    conn_put(e, c);

    e->threads = xmalloc(sizeof *e->threads * (size_t)e->lim.workers);
    for (int i = 0; i < e->lim.workers; i++) {
        int rc = pthread_create(&e->threads[i], NULL, worker_main, e);
        if (rc != 0) {
            *errp = xasprintf("sql: cannot start a worker thread: %s", strerror(rc));
            goto fail;
        }
        e->n_threads++;
    }
    return e;
fail:
    sql_engine_free(e);
    return NULL;
}

void sql_engine_free(struct sql_engine *e)
{
    if (!e)
        return;
    pthread_mutex_lock(&e->mu);
    atomic_store(&e->stopping, true);
    pthread_cond_broadcast(&e->cv);
    pthread_mutex_unlock(&e->mu);
    for (int i = 0; i < e->n_threads; i++)
        pthread_join(e->threads[i], NULL);
    /* Workers drain the queue before they exit; with no worker (a failed start) nothing
     * was ever queued. */
    while (e->idle) {
        struct conn *c = e->idle;
        e->idle = c->next;
        conn_close(c);
    }
    pthread_cond_destroy(&e->cv);
    pthread_mutex_destroy(&e->mu);
    free(e->threads);
    free(e->path);
    free(e);
}
