/*
 * sql_pg.c - one read-only PostgreSQL connection (see sql_pg.h): the refused functions, the
 * transaction around each statement, parameters, the rows fetched one at a time and rendered
 * through sql_json, and the mapping of SQLSTATEs to the engine's statuses.
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <libpq-fe.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "store/sql_json.h"
#include "store/sql_pg.h"
#include "base/xmem.h"

/* Type OIDs of the built-in types rendered otherwise than as text (pg_type.dat). */
#define OID_BOOL    16
#define OID_BYTEA   17
#define OID_INT8    20
#define OID_INT2    21
#define OID_INT4    23
#define OID_OID     26
#define OID_FLOAT4  700
#define OID_FLOAT8  701
#define OID_NUMERIC 1700

struct sql_pg {
    struct sql_conn_limits lim;
    char *conninfo;
    PGconn *pg;
};

/*
 * Refused wherever they appear in the statement's text (case folded, double quotes dropped):
 * what would take the role back in the middle of a statement (set_config('role', ...)), run
 * SQL given as text (which could call that), hold a lock past the query, or spell any of them
 * in escapes. A refusal of a harmless text that merely contains one of these is the price of
 * not parsing SQL here.
 */
static const char *const denied[] = {
    "set_config",
    "query_to_xml",
    "cursor_to_xml",
    "table_to_xml",
    "schema_to_xml",
    "database_to_xml",
    "ts_stat",
    "ts_rewrite",
    "dblink",
    "advisory",
    "u&",
};

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* The first refused name in sql, or NULL. */
static const char *denied_name(const char *sql)
{
    size_t n = strlen(sql);
    char *low = xmalloc(n + 1);
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (sql[i] != '"')
            low[k++] = (char)tolower((unsigned char)sql[i]);
    low[k] = '\0';
    const char *hit = NULL;
    for (size_t i = 0; i < sizeof denied / sizeof denied[0] && !hit; i++)
        if (strstr(low, denied[i]))
            hit = denied[i];
    free(low);
    return hit;
}

/* libpq's message of the connection, on one line, without the trailing newline. */
static void conn_message(PGconn *pg, char *buf, size_t size)
{
    snprintf(buf, size, "%s", pg ? PQerrorMessage(pg) : "out of memory");
    for (char *p = buf; *p; p++)
        if (*p == '\n' || *p == '\r')
            *p = ' ';
    size_t n = strlen(buf);
    while (n > 0 && buf[n - 1] == ' ')
        buf[--n] = '\0';
}

/* Runs a command that returns nothing; 0, or -1 with *err (new, the error body), *status. */
static int exec_command(struct sql_pg *c, const char *cmd, char **err, int *status);

void sql_pg_close(struct sql_pg *c)
{
    if (!c)
        return;
    PQfinish(c->pg);
    free(c->conninfo);
    free(c);
}

/* (Re)connects. 0, or -1 with msg set. */
static int connect_pg(struct sql_pg *c, char *msg, size_t size)
{
    if (c->pg && PQstatus(c->pg) == CONNECTION_OK)
        return 0;
    PQfinish(c->pg);
    c->pg = PQconnectdb(c->conninfo);
    if (!c->pg || PQstatus(c->pg) != CONNECTION_OK) {
        conn_message(c->pg, msg, size);
        return -1;
    }
    /* text arrives as UTF-8 whatever the database's locale; JSON needs it */
    if (PQsetClientEncoding(c->pg, "UTF8") != 0) {
        conn_message(c->pg, msg, size);
        return -1;
    }
    return 0;
}

struct sql_pg *sql_pg_open(const char *conninfo, const struct sql_conn_limits *lim, char **errp)
{
    struct sql_pg *c = xcalloc(1, sizeof *c);
    char msg[512];
    c->lim = *lim;
    c->conninfo = xstrdup(conninfo);
    if (connect_pg(c, msg, sizeof msg) < 0) {
        *errp = xasprintf("sql: cannot connect to PostgreSQL: %s", msg);
        goto fail;
    }
    char *err = NULL;
    int status = 0;
    if (exec_command(c, "BEGIN READ ONLY; SET LOCAL ROLE " SQL_PG_ROLE "; ROLLBACK", &err,
                     &status) < 0) {
        free(err);
        *errp = xasprintf("sql: PostgreSQL: cannot take the role " SQL_PG_ROLE
                          " (created by the migration; see docs/replicas.md): %s",
                          PQerrorMessage(c->pg));
        for (char *p = *errp; *p; p++)
            if (*p == '\n')
                *p = ' ';
        goto fail;
    }
    return c;
fail:
    sql_pg_close(c);
    return NULL;
}

/* ---- errors --------------------------------------------------------------------------- */

/* The error body and status of a failed result (res may be NULL: the connection failed). */
static char *pg_error(struct sql_pg *c, const PGresult *res, int *status)
{
    const char *state = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
    const char *prim = res ? PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY) : NULL;
    char msg[512];
    if (prim)
        snprintf(msg, sizeof msg, "%s", prim);
    else
        conn_message(c->pg, msg, sizeof msg);
    if (!state || PQstatus(c->pg) != CONNECTION_OK || strncmp(state, "08", 2) == 0 ||
        strcmp(state, "57P01") == 0 || strcmp(state, "57P02") == 0 || strcmp(state, "57P03") == 0) {
        /* the server is gone, shutting down or failing over: reconnect next time */
        *status = 503;
        return sql_json_error_text("UNAVAILABLE", NULL, "the database is unreachable: %s", msg);
    }
    if (strcmp(state, "57014") == 0) { /* query_canceled: our statement_timeout */
        *status = 400;
        return sql_json_error_text("DEADLINE_EXCEEDED", "sql",
                                   "query exceeded the %lld ms time limit",
                                   (long long)c->lim.timeout_ms);
    }
    if (strcmp(state, "40001") == 0 || strcmp(state, "40P01") == 0 ||
        strncmp(state, "55P03", 5) == 0) {
        /* serialization failure (a hot standby's recovery conflict), deadlock, lock timeout */
        *status = 503;
        return sql_json_error_text("UNAVAILABLE", NULL, "the database is busy: %s", msg);
    }
    if (strcmp(state, "25006") == 0) { /* read_only_sql_transaction */
        *status = 400;
        return sql_json_error_text("INVALID_ARGUMENT", "sql", "statement is not read-only: %s",
                                   msg);
    }
    if (strcmp(state, "42501") == 0) { /* insufficient_privilege */
        *status = 400;
        return sql_json_error_text("INVALID_ARGUMENT", "sql",
                                   "not authorized: %s (queries may read the audit views only)",
                                   msg);
    }
    if (strcmp(state, "42601") == 0 && strstr(msg, "multiple commands")) {
        *status = 400;
        return sql_json_error_text("INVALID_ARGUMENT", "sql", "only one statement is allowed");
    }
    if (strncmp(state, "53", 2) == 0 || strncmp(state, "54", 2) == 0) {
        *status = 400;
        return sql_json_error_text("RESOURCE_EXHAUSTED", "sql", "%s", msg);
    }
    if (strncmp(state, "XX", 2) == 0 || strncmp(state, "58", 2) == 0) {
        *status = 500;
        return sql_json_error_text("INTERNAL", NULL, "database error: %s", msg);
    }
    /* syntax errors, unknown names, bad values: PostgreSQL says why */
    *status = 400;
    return sql_json_error_text("INVALID_ARGUMENT", "sql", "%s", msg);
}

static int exec_command(struct sql_pg *c, const char *cmd, char **err, int *status)
{
    PGresult *res = PQexec(c->pg, cmd);
    ExecStatusType st = res ? PQresultStatus(res) : PGRES_FATAL_ERROR;
    int rc = 0;
    if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) {
        *err = pg_error(c, res, status);
        rc = -1;
    }
    PQclear(res);
    return rc;
}

/* ---- parameters ----------------------------------------------------------------------- */

/* The text of each parameter: *vals (new, params_free) holds want strings, NULL for a SQL
 * NULL. 0, or -1 with *err (new). */
static int params_text(json_t *params, int want, char ***vals, char **err)
{
    if (sql_json_params_check(params, want, err) < 0)
        return -1;
    *vals = xcalloc((size_t)want + 1, sizeof **vals);
    for (int i = 0; i < want; i++) {
        json_t *v = json_array_get(params, (size_t)i);
        char *text = NULL;
        switch (json_typeof(v)) {
        case JSON_INTEGER:
            text = xasprintf("%" JSON_INTEGER_FORMAT, json_integer_value(v));
            break;
        case JSON_REAL:
            text = xasprintf("%.17g", json_real_value(v));
            break;
        case JSON_STRING:
            if (memchr(json_string_value(v), '\0', json_string_length(v))) {
                char field[32];
                snprintf(field, sizeof field, "params[%d]", i);
                *err = sql_json_error_text("INVALID_ARGUMENT", field,
                                           "a string parameter cannot hold a NUL character");
                return -1;
            }
            text = xstrdup(json_string_value(v));
            break;
        case JSON_TRUE:
        case JSON_FALSE:
            text = xstrdup(json_is_true(v) ? "1" : "0");
            break;
        default: /* null: objects and arrays were refused */
            break;
        }
        (*vals)[i] = text;
    }
    return 0;
}

static void params_free(char **vals, int n)
{
    if (!vals)
        return;
    for (int i = 0; i < n; i++)
        free(vals[i]);
    free(vals);
}

/* ---- rendering ------------------------------------------------------------------------ */

/* Decodes bytea's hex output ("\x0a1b...") into a new buffer; NULL when it is not hex. */
static unsigned char *bytea_decode(const char *s, size_t len, size_t *n)
{
    if (len < 2 || s[0] != '\\' || s[1] != 'x' || (len - 2) % 2)
        return NULL;
    size_t m = (len - 2) / 2;
    unsigned char *b = xmalloc(m + 1);
    for (size_t i = 0; i < m; i++) {
        unsigned v = 0;
        for (int k = 0; k < 2; k++) {
            char ch = s[2 + 2 * i + (size_t)k];
            v <<= 4;
            if (ch >= '0' && ch <= '9')
                v |= (unsigned)(ch - '0');
            else if (ch >= 'a' && ch <= 'f')
                v |= (unsigned)(ch - 'a' + 10);
            else if (ch >= 'A' && ch <= 'F')
                v |= (unsigned)(ch - 'A' + 10);
            else {
                free(b);
                return NULL;
            }
        }
        b[i] = (unsigned char)v;
    }
    *n = m;
    return b;
}

/* A number's text as a JSON integer when it is one that fits, else a real. */
static void number_cell(struct sql_json_cell *cell, const char *s, bool may_be_int)
{
    cell->kind = SQL_JSON_NUMBER;
    if (may_be_int && !strpbrk(s, ".eEnNiI")) {
        char *end = NULL;
        errno = 0;
        long long v = strtoll(s, &end, 10);
        if (!errno && end && !*end) {
            cell->numlen = (size_t)snprintf(cell->num, sizeof cell->num, "%lld", v);
            return;
        }
    }
    cell->numlen = sql_json_real_text(cell->num, sizeof cell->num, strtod(s, NULL));
}

/* The cells of row 0 of res; a bytea's bytes go into scratch[i] (new, freed by the caller). */
static void row_cells(const PGresult *res, int ncol, struct sql_json_cell *cells,
                      unsigned char **scratch)
{
    for (int i = 0; i < ncol; i++) {
        struct sql_json_cell *cell = &cells[i];
        memset(cell, 0, sizeof *cell);
        cell->kind = SQL_JSON_NULL;
        if (PQgetisnull(res, 0, i))
            continue;
        const char *s = PQgetvalue(res, 0, i);
        size_t len = (size_t)PQgetlength(res, 0, i);
        switch (PQftype(res, i)) {
        case OID_BOOL:
            cell->kind = SQL_JSON_NUMBER;
            cell->numlen = (size_t)snprintf(cell->num, sizeof cell->num, "%d", s[0] == 't');
            break;
        case OID_INT2:
        case OID_INT4:
        case OID_INT8:
        case OID_OID:
        case OID_NUMERIC:
            number_cell(cell, s, true);
            break;
        case OID_FLOAT4:
        case OID_FLOAT8:
            number_cell(cell, s, false);
            break;
        case OID_BYTEA:
            /* not hex (bytea_output = escape): shown as text */
            scratch[i] = bytea_decode(s, len, &cell->n);
            cell->kind = scratch[i] ? SQL_JSON_BLOB : SQL_JSON_TEXT;
            cell->p = scratch[i] ? scratch[i] : (const unsigned char *)s;
            cell->n = scratch[i] ? cell->n : len;
            break;
        default:
            cell->kind = SQL_JSON_TEXT;
            cell->p = (const unsigned char *)s;
            cell->n = len;
        }
    }
}

/* Stops a query whose rows are no longer wanted, and reads what is left of it. */
static void cancel_rest(struct sql_pg *c)
{
    PGcancel *cancel = PQgetCancel(c->pg);
    char buf[256];
    if (cancel) {
        PQcancel(cancel, buf, sizeof buf);
        PQfreeCancel(cancel);
    }
    PGresult *r;
    while ((r = PQgetResult(c->pg)))
        PQclear(r);
}

/* ---- one query ------------------------------------------------------------------------ */

int sql_pg_run(struct sql_pg *c, const char *sql, json_t *params, char **body, size_t *len)
{
    struct text o = {0};
    char *err = NULL, **vals = NULL, msg[512];
    const char **names = NULL;
    struct sql_json_cell *cells = NULL;
    unsigned char **scratch = NULL;
    PGresult *desc = NULL, *res = NULL;
    int status = 500, nparams = 0, ncol = 0;
    bool in_tx = false;
    int64_t deadline = now_ns() + c->lim.timeout_ms * 1000000;

    if (sql_json_sql_check(sql, c->lim.max_sql_len, &err) < 0) {
        status = 400;
        goto out;
    }
    const char *hit = denied_name(sql);
    if (hit) {
        status = 400;
        err = sql_json_error_text("INVALID_ARGUMENT", "sql",
                                  "not authorized: %s (what changes the role, runs SQL text or "
                                  "takes a lock is refused)",
                                  hit);
        goto out;
    }
    if (connect_pg(c, msg, sizeof msg) < 0) {
        status = 503;
        err = sql_json_error_text("UNAVAILABLE", NULL, "the database is unreachable: %s", msg);
        goto out;
    }
    char setup[160];
    snprintf(setup, sizeof setup,
             "BEGIN READ ONLY; SET LOCAL statement_timeout = %lld; SET LOCAL ROLE " SQL_PG_ROLE,
             (long long)(c->lim.timeout_ms > 0 ? c->lim.timeout_ms : 1));
    in_tx = true;
    if (exec_command(c, setup, &err, &status) < 0)
        goto out;

    /* prepared first: two statements are refused here, and what returns no rows is refused
     * before it runs */
    res = PQprepare(c->pg, "", sql, 0, NULL);
    if (!res || PQresultStatus(res) != PGRES_COMMAND_OK) {
        err = pg_error(c, res, &status);
        goto out;
    }
    PQclear(res);
    res = NULL;
    desc = PQdescribePrepared(c->pg, "");
    if (!desc || PQresultStatus(desc) != PGRES_COMMAND_OK) {
        err = pg_error(c, desc, &status);
        goto out;
    }
    ncol = PQnfields(desc);
    nparams = PQnparams(desc);
    if (ncol == 0) {
        status = 400;
        err = sql_json_error_text("INVALID_ARGUMENT", "sql",
                                  "only a query that returns rows is allowed (SELECT, VALUES, "
                                  "WITH ... SELECT)");
        goto out;
    }
    if (params_text(params, nparams, &vals, &err) < 0) {
        status = 400;
        goto out;
    }
    names = xcalloc((size_t)ncol, sizeof *names);
    cells = xcalloc((size_t)ncol, sizeof *cells);
    scratch = xcalloc((size_t)ncol, sizeof *scratch);
    for (int i = 0; i < ncol; i++)
        names[i] = PQfname(desc, i);
    if (sql_json_head(&o, names, ncol, c->lim.max_bytes, &err) != 0) {
        status = 400;
        goto out;
    }
    if (!PQsendQueryPrepared(c->pg, "", nparams, (const char *const *)vals, NULL, NULL, 0) ||
        !PQsetSingleRowMode(c->pg)) {
        err = pg_error(c, NULL, &status);
        goto out;
    }
    bool truncated = false;
    int nrows = 0;
    while ((res = PQgetResult(c->pg))) {
        ExecStatusType st = PQresultStatus(res);
        if (st == PGRES_SINGLE_TUPLE) {
            int k = 1; /* past the row limit: truncated */
            if (nrows < c->lim.max_rows) {
                row_cells(res, ncol, cells, scratch);
                k = sql_json_row_put(&o, cells, names, ncol, nrows, c->lim.max_value,
                                     c->lim.max_bytes, &err);
                for (int i = 0; i < ncol; i++) {
                    free(scratch[i]);
                    scratch[i] = NULL;
                }
            }
            PQclear(res);
            res = NULL;
            if (k == 0) {
                nrows++;
                if (now_ns() < deadline)
                    continue;
                /* rendering takes time too: a result of many large rows stops here */
                err = sql_json_error_text("DEADLINE_EXCEEDED", "sql",
                                          "query exceeded the %lld ms time limit",
                                          (long long)c->lim.timeout_ms);
            }
            cancel_rest(c);
            if (err) {
                status = 400;
                goto out;
            }
            truncated = true;
            break;
        }
        if (st != PGRES_TUPLES_OK) {
            err = pg_error(c, res, &status);
            PQclear(res);
            res = NULL;
            /* the rest of the results, if any, belong to this query */
            PGresult *r;
            while ((r = PQgetResult(c->pg)))
                PQclear(r);
            goto out;
        }
        PQclear(res);
        res = NULL;
    }
    sql_json_tail(&o, truncated);
    status = 200;
out:
    PQclear(res);
    PQclear(desc);
    if (in_tx && c->pg && PQstatus(c->pg) == CONNECTION_OK) {
        /* a ROLLBACK that fails leaves the connection in doubt: open a new one next time */
        PGresult *r = PQexec(c->pg, "ROLLBACK");
        if (!r || PQresultStatus(r) != PGRES_COMMAND_OK) {
            PQfinish(c->pg);
            c->pg = NULL;
        }
        PQclear(r);
    }
    params_free(vals, nparams);
    if (scratch)
        for (int i = 0; i < ncol; i++)
            free(scratch[i]);
    free(scratch);
    free(names);
    free(cells);
    sql_json_body(&o, err, body, len);
    return status;
}
