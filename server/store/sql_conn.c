/*
 * sql_conn.c - one locked-down read-only connection (see sql_conn.h): the authorizer, the
 * one-statement / read-only / time checks, parameter binding, and the rendering of a
 * result straight into JSON text under the value, row and body limits.
 */
#include <inttypes.h>
#include <math.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "store/sql_conn.h"
#include "store/sql_json.h"
#include "base/xmem.h"

/* VM instructions between two looks at the clock: about a few microseconds of work. */
#define PROGRESS_OPS 1000

/* Arguments of one printf() call at most (SQLITE_LIMIT_FUNCTION_ARG below). */
#define MAX_FUNCTION_ARGS 100

struct sql_conn {
    struct sql_conn_limits lim;
    sqlite3 *db;
    /* A private in-memory connection that runs SQLite's own printf() for ours (printf_cb), and
     * its statements by number of arguments: "x" || format, and the format alone. */
    sqlite3 *aux;
    sqlite3_stmt *aux_x[MAX_FUNCTION_ARGS + 1], *aux_plain[MAX_FUNCTION_ARGS + 1];
    int64_t deadline_ns; /* monotonic; the progress handler stops the VM past it */
    bool timed_out;      /* set by the progress handler when the deadline struck */
    char denied[160];    /* the first authorizer refusal of the current query, or "" */
};

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
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
    struct sql_conn *c = ud;
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

/* Stops the VM past the deadline (returns non-zero). */
static int progress_cb(void *ud)
{
    struct sql_conn *c = ud;
    if (now_ns() >= c->deadline_ns) {
        c->timed_out = true;
        return 1;
    }
    return 0;
}

/* ---- printf() and format() -------------------------------------------------------------- */

/* The statement on the private connection that calls SQLite's printf with argc arguments, the
 * format prefixed with "x" (prefixed) or as given. NULL when it cannot be prepared. */
static sqlite3_stmt *aux_stmt(struct sql_conn *c, int argc, bool prefixed)
{
    sqlite3_stmt **slot = prefixed ? &c->aux_x[argc] : &c->aux_plain[argc];
    if (*slot)
        return *slot;
    char sql[16 + 6 * MAX_FUNCTION_ARGS + 32];
    int n = snprintf(sql, sizeof sql, "SELECT printf(%s?1", prefixed ? "'x' || " : "");
    for (int i = 2; i <= argc; i++)
        n += snprintf(sql + n, sizeof sql - (size_t)n, ", ?%d", i);
    snprintf(sql + n, sizeof sql - (size_t)n, ")");
    if (sqlite3_prepare_v3(c->aux, sql, -1, SQLITE_PREPARE_PERSISTENT, slot, NULL) != SQLITE_OK)
        *slot = NULL;
    return *slot;
}

/* Steps st (argv bound to it) and hands its one value to ctx without its first `skip` bytes:
 * 0 when handed over (*len: its length then), 1 when it is NULL (nothing handed over), -1 when
 * the statement failed (ctx has the error). */
static int aux_result(sqlite3_context *ctx, sqlite3_stmt *st, int argc, sqlite3_value **argv,
                      int skip, int *len)
{
    int ret = 0;
    for (int i = 0; i < argc; i++)
        sqlite3_bind_value(st, i + 1, argv[i]);
    int rc = sqlite3_step(st);
    if (rc == SQLITE_TOOBIG) {
        sqlite3_result_error_toobig(ctx); /* some widths fail so rather than answer NULL */
        ret = -1;
    } else if (rc == SQLITE_NOMEM) {
        sqlite3_result_error_nomem(ctx);
        ret = -1;
    } else if (rc != SQLITE_ROW) {
        sqlite3_result_error(ctx, sqlite3_errmsg(sqlite3_db_handle(st)), -1);
        ret = -1;
    } else if (sqlite3_column_type(st, 0) == SQLITE_NULL) {
        ret = 1;
    } else {
        const unsigned char *t = sqlite3_column_text(st, 0);
        int n = sqlite3_column_bytes(st, 0);
        if (!t || n < skip) {
            sqlite3_result_error_nomem(ctx);
            ret = -1;
        } else {
            *len = n - skip;
            sqlite3_result_text(ctx, (const char *)t + skip, n - skip, SQLITE_TRANSIENT);
        }
    }
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
    return ret;
}

/*
 * printf() and format() of the query connection. SQLite's own answers NULL when its result
 * would be longer than SQLITE_LIMIT_LENGTH (it keeps the error in its string builder and
 * returns what the builder holds), where every other function fails with SQLITE_TOOBIG; so a
 * query asking for a huge width got null instead of the 400 of sql-max-value. This one runs
 * SQLite's printf itself, on the private connection (the same code, so the same output for
 * every format), with the format prefixed by one byte: the prefixed result is never empty, so
 * NULL can only mean that the builder failed, which is answered SQLITE_TOOBIG; otherwise the
 * result is the prefixed one without its first byte, which sqlite3_result_text refuses past the
 * query connection's limit. The private connection's limit is two bytes above the value limit
 * (the prefix, and the terminating NUL some of the builder's paths count), so that a result of
 * exactly the value limit passes, as any other function's does. SQLite's printf also answers
 * NULL when nothing at all was written (a format of ""): a result that comes back empty is
 * asked again without the prefix, which is then exactly SQLite's answer (NULL or '').
 */
static void printf_cb(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
    struct sql_conn *c = sqlite3_user_data(ctx);
    sqlite3_stmt *st;
    int len = 0, rc;
    if (argc < 1 || sqlite3_value_type(argv[0]) == SQLITE_NULL)
        return; /* NULL, as SQLite's printf() */
    if (argc > MAX_FUNCTION_ARGS || !(st = aux_stmt(c, argc, true))) {
        sqlite3_result_error(ctx, "printf: cannot run", -1);
        return;
    }
    rc = aux_result(ctx, st, argc, argv, 1, &len);
    if (rc > 0) {
        sqlite3_result_error_toobig(ctx);
        return;
    }
    if (rc < 0 || len > 0)
        return;
    if (!(st = aux_stmt(c, argc, false))) {
        sqlite3_result_error(ctx, "printf: cannot run", -1);
        return;
    }
    if (aux_result(ctx, st, argc, argv, 0, &len) > 0)
        sqlite3_result_null(ctx);
}

/* ---- the connection ------------------------------------------------------------------ */

void sql_conn_close(struct sql_conn *c)
{
    if (!c)
        return;
    sqlite3_close_v2(c->db);
    for (int i = 0; i <= MAX_FUNCTION_ARGS; i++) {
        sqlite3_finalize(c->aux_x[i]);
        sqlite3_finalize(c->aux_plain[i]);
    }
    sqlite3_close_v2(c->aux);
    free(c);
}

struct sql_conn *sql_conn_open(const char *path, const struct sql_conn_limits *lim, char **errp)
{
    struct sql_conn *c = xcalloc(1, sizeof *c);
    char *zerr = NULL;
    c->lim = *lim;
    int rc = sqlite3_open_v2(path, &c->db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, NULL);
    if (rc != SQLITE_OK) {
        *errp = xasprintf("sql: cannot open %s: %s", path,
                          c->db ? sqlite3_errmsg(c->db) : sqlite3_errstr(rc));
        goto fail;
    }
    sqlite3_db_config(c->db, SQLITE_DBCONFIG_ENABLE_LOAD_EXTENSION, 0, NULL);
    sqlite3_db_config(c->db, SQLITE_DBCONFIG_DEFENSIVE, 1, NULL);
    /* The schema stays trusted: it is governor's own (this engine cannot change it), and
     * SQLite 3.40 would refuse json_extract() inside the audit views otherwise. */
    sqlite3_db_config(c->db, SQLITE_DBCONFIG_ENABLE_TRIGGER, 0, NULL);

    sqlite3_limit(c->db, SQLITE_LIMIT_ATTACHED, 0);
    sqlite3_limit(c->db, SQLITE_LIMIT_SQL_LENGTH, lim->max_sql_len);
    /* One string or blob (and one record of a sorter or a temporary table): what a value
     * may be in the result. zeroblob(1e9), a huge printf width or a runaway replace() fail
     * with "string or blob too big" instead of building it. */
    sqlite3_limit(c->db, SQLITE_LIMIT_LENGTH,
                  lim->max_value > INT32_MAX ? INT32_MAX : (int)lim->max_value);
    sqlite3_limit(c->db, SQLITE_LIMIT_EXPR_DEPTH, 200);
    sqlite3_limit(c->db, SQLITE_LIMIT_COMPOUND_SELECT, 100);
    sqlite3_limit(c->db, SQLITE_LIMIT_VARIABLE_NUMBER, 1000);
    sqlite3_limit(c->db, SQLITE_LIMIT_FUNCTION_ARG, MAX_FUNCTION_ARGS);
    sqlite3_limit(c->db, SQLITE_LIMIT_LIKE_PATTERN_LENGTH, 10000);
    sqlite3_limit(c->db, SQLITE_LIMIT_WORKER_THREADS, 0);
    sqlite3_limit(c->db, SQLITE_LIMIT_TRIGGER_DEPTH, 1);

    /* Wait for a lock no longer than a query may run (readers rarely wait in WAL mode:
     * only while the writer recovers or checkpoints with TRUNCATE). */
    sqlite3_busy_timeout(c->db, (int)(lim->timeout_ms > 60000 ? 60000 : lim->timeout_ms));

    rc = sqlite3_exec(c->db, "PRAGMA query_only=1", NULL, NULL, &zerr);
    if (rc != SQLITE_OK) {
        *errp = xasprintf("sql: %s: PRAGMA query_only: %s", path, zerr ? zerr : "?");
        goto fail;
    }
    /* Reading the schema proves the file is a database (open_v2 does not look). */
    rc = sqlite3_exec(c->db, "SELECT count(*) FROM sqlite_schema", NULL, NULL, &zerr);
    if (rc != SQLITE_OK) {
        *errp = xasprintf("sql: %s: %s", path, zerr ? zerr : sqlite3_errstr(rc));
        goto fail;
    }
    /* printf() and format() that fail past the value limit instead of answering NULL
     * (printf_cb), over SQLite's own on a private connection. */
    rc = sqlite3_open_v2(":memory:", &c->aux, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL);
    if (rc != SQLITE_OK) {
        *errp = xasprintf("sql: cannot open an in-memory connection: %s", sqlite3_errstr(rc));
        goto fail;
    }
    sqlite3_limit(c->aux, SQLITE_LIMIT_LENGTH,
                  lim->max_value >= INT32_MAX - 2 ? INT32_MAX : (int)lim->max_value + 2);
    sqlite3_limit(c->aux, SQLITE_LIMIT_FUNCTION_ARG, MAX_FUNCTION_ARGS);
    static const char *const printfs[] = {"printf", "format"};
    for (size_t i = 0; i < sizeof printfs / sizeof printfs[0]; i++)
        if (sqlite3_create_function(c->db, printfs[i], -1,
                                    SQLITE_UTF8 | SQLITE_DETERMINISTIC | SQLITE_INNOCUOUS, c,
                                    printf_cb, NULL, NULL) != SQLITE_OK) {
            *errp = xasprintf("sql: cannot register %s(): %s", printfs[i], sqlite3_errmsg(c->db));
            goto fail;
        }
    sqlite3_set_authorizer(c->db, authorize_cb, c);
    sqlite3_progress_handler(c->db, PROGRESS_OPS, progress_cb, c);
    return c;
fail:
    sqlite3_free(zerr);
    sql_conn_close(c);
    return NULL;
}

/* ---- rendering ------------------------------------------------------------------------ */

/* The cells of the current row (pointers into st: valid until the next step). */
static void row_cells(sqlite3_stmt *st, int ncol, struct sql_json_cell *cells)
{
    for (int i = 0; i < ncol; i++) {
        struct sql_json_cell *c = &cells[i];
        c->kind = SQL_JSON_NULL;
        switch (sqlite3_column_type(st, i)) {
        case SQLITE_INTEGER:
            c->kind = SQL_JSON_NUMBER;
            c->numlen = (size_t)snprintf(c->num, sizeof c->num, "%" PRId64,
                                         (int64_t)sqlite3_column_int64(st, i));
            break;
        case SQLITE_FLOAT:
            c->kind = SQL_JSON_NUMBER;
            c->numlen = sql_json_real_text(c->num, sizeof c->num, sqlite3_column_double(st, i));
            break;
        case SQLITE_TEXT:
            c->p = sqlite3_column_text(st, i);
            c->n = (size_t)sqlite3_column_bytes(st, i);
            c->kind = c->p ? SQL_JSON_TEXT : SQL_JSON_NULL;
            break;
        case SQLITE_BLOB:
            c->p = sqlite3_column_blob(st, i);
            c->n = (size_t)sqlite3_column_bytes(st, i);
            c->kind = SQL_JSON_BLOB;
            break;
        default:
            break;
        }
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
static int bind_params(sqlite3_stmt *st, json_t *params, char **err)
{
    int want = sqlite3_bind_parameter_count(st);
    if (sql_json_params_check(params, want, err) < 0)
        return -1;
    for (int i = 0; i < want; i++) {
        json_t *v = json_array_get(params, (size_t)i);
        int idx = i + 1, rc;
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
        default: /* null: objects and arrays were refused */
            rc = sqlite3_bind_null(st, idx);
            break;
        }
        if (rc != SQLITE_OK) {
            char field[32];
            snprintf(field, sizeof field, "params[%d]", i);
            *err = sql_json_error_text("INVALID_ARGUMENT", field, "cannot bind: %s",
                                       sqlite3_errstr(rc));
            return -1;
        }
    }
    return 0;
}
/* The error text and status of a failed prepare or step (rc is the primary code). */
static char *sqlite_error(struct sql_conn *c, int rc, int *status)
{
    if (c->denied[0]) {
        *status = 400;
        return sql_json_error_text("INVALID_ARGUMENT", "sql", "%s", c->denied);
    }
    switch (rc) {
    case SQLITE_INTERRUPT:
        *status = 400;
        return sql_json_error_text("DEADLINE_EXCEEDED", "sql",
                                   "query exceeded the %lld ms time limit",
                                   (long long)c->lim.timeout_ms);
    case SQLITE_TOOBIG:
        *status = 400;
        return sql_json_error_text("RESOURCE_EXHAUSTED", "sql",
                                   "a string or blob would exceed %lld bytes, the limit of one "
                                   "value (sql-max-value)",
                                   (long long)c->lim.max_value);
    case SQLITE_NOMEM:
        *status = 400;
        return sql_json_error_text("RESOURCE_EXHAUSTED", "sql",
                                   "the query needs more than the %lld MiB of memory a query may "
                                   "use",
                                   (long long)(c->lim.max_memory >> 20));
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
        *status = 503;
        return sql_json_error_text("UNAVAILABLE", NULL, "the database is busy: %s",
                                   sqlite3_errmsg(c->db));
    case SQLITE_IOERR:
    case SQLITE_CORRUPT:
    case SQLITE_CANTOPEN:
    case SQLITE_NOTADB:
    case SQLITE_FULL:
    case SQLITE_PROTOCOL:
    case SQLITE_INTERNAL:
        *status = 500;
        return sql_json_error_text("INTERNAL", NULL, "database error: %s", sqlite3_errmsg(c->db));
    case SQLITE_READONLY:
        *status = 400;
        return sql_json_error_text("INVALID_ARGUMENT", "sql", "statement is not read-only: %s",
                                   sqlite3_errmsg(c->db));
    default:
        /* syntax errors, no such table, function errors: SQLite says why */
        *status = 400;
        return sql_json_error_text("INVALID_ARGUMENT", "sql", "%s", sqlite3_errmsg(c->db));
    }
}

int sql_conn_run(struct sql_conn *c, const char *sql, json_t *params, char **body, size_t *len)
{
    sqlite3_stmt *st = NULL;
    struct text o = {0};
    const char **names = NULL;
    struct sql_json_cell *cells = NULL;
    char *err = NULL;
    const char *tail = NULL;
    int status = 500, rc;

    c->denied[0] = '\0';
    c->timed_out = false;
    c->deadline_ns = now_ns() + c->lim.timeout_ms * 1000000;

    if (sql_json_sql_check(sql, c->lim.max_sql_len, &err) < 0) {
        status = 400;
        goto out;
    }
    rc = sqlite3_prepare_v2(c->db, sql, (int)strlen(sql), &st, &tail);
    if (rc != SQLITE_OK) {
        err = sqlite_error(c, rc & 0xFF, &status);
        goto out;
    }
    if (!st) {
        status = 400;
        err = sql_json_error_text("INVALID_ARGUMENT", "sql", "sql holds no statement");
        goto out;
    }
    if (tail && !only_trivia(tail)) {
        status = 400;
        err = sql_json_error_text("INVALID_ARGUMENT", "sql", "only one statement is allowed");
        goto out;
    }
    if (!sqlite3_stmt_readonly(st)) {
        status = 400;
        err = sql_json_error_text("INVALID_ARGUMENT", "sql", "statement is not read-only");
        goto out;
    }
    if (bind_params(st, params, &err) != 0) {
        status = 400;
        goto out;
    }

    int ncol = sqlite3_column_count(st);
    names = xcalloc((size_t)ncol + 1, sizeof *names);
    cells = xcalloc((size_t)ncol + 1, sizeof *cells);
    for (int i = 0; i < ncol; i++)
        names[i] = sqlite3_column_name(st, i);
    if (sql_json_head(&o, names, ncol, c->lim.max_bytes, &err) != 0) {
        status = 400;
        goto out;
    }
    bool truncated = false;
    int nrows = 0;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (nrows >= c->lim.max_rows) {
            truncated = true;
            break;
        }
        row_cells(st, ncol, cells);
        int k = sql_json_row_put(&o, cells, names, ncol, nrows, c->lim.max_value, c->lim.max_bytes,
                                 &err);
        if (k < 0) {
            status = 400;
            goto out;
        }
        if (k > 0) {
            truncated = true;
            break;
        }
        nrows++;
        /* rendering takes time too: a result of many large rows stops at the deadline */
        if (now_ns() >= c->deadline_ns) {
            c->timed_out = true;
            rc = SQLITE_INTERRUPT;
            break;
        }
    }
    if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
        err = sqlite_error(c, rc & 0xFF, &status);
        goto out;
    }
    sql_json_tail(&o, truncated);
    status = 200;
out:
    sqlite3_finalize(st);
    free(names);
    free(cells);
    sql_json_body(&o, err, body, len);
    return status;
}
