/*
 * Unit tests for sql.c, the read-only engine behind POST /v1/sql.
 * Each test works on a temporary database seeded here through a read-write connection in
 * WAL mode, as the server's writer leaves it; the engine opens it read-only. Every refused
 * statement must answer 400 with a message saying why and leave the database unchanged,
 * which is checked by comparing a dump of the schema, the header pragmas and every row
 * before and after.
 */
#include <errno.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "test.h"

#include "store/sql.h"

static char g_dir[64];
static char g_db[128];

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void cleanup(void)
{
    char p[160];
    const char *suffix[] = {"", "-wal", "-shm", "-journal"};
    for (size_t i = 0; i < sizeof suffix / sizeof suffix[0]; i++) {
        snprintf(p, sizeof p, "%s%s", g_db, suffix[i]);
        unlink(p);
    }
    snprintf(p, sizeof p, "%s/notadb", g_dir);
    unlink(p);
    rmdir(g_dir);
}

static sqlite3 *rw_open(void)
{
    sqlite3 *db = NULL;
    if (sqlite3_open_v2(g_db, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL) != SQLITE_OK) {
        fprintf(stderr, "open %s: %s\n", g_db, sqlite3_errmsg(db));
        abort();
    }
    sqlite3_busy_timeout(db, 5000);
    return db;
}

static void rw_exec(sqlite3 *db, const char *sql)
{
    char *err = NULL;
    if (sqlite3_exec(db, sql, NULL, NULL, &err) != SQLITE_OK) {
        fprintf(stderr, "exec %s: %s\n", sql, err);
        abort();
    }
}

/* Creates the database once per process: tables t and u, a view, an index, WAL mode. */
static const char *db_path(void)
{
    if (g_db[0])
        return g_db;
    snprintf(g_dir, sizeof g_dir, "/tmp/govsql.XXXXXX");
    if (!mkdtemp(g_dir))
        abort();
    snprintf(g_db, sizeof g_db, "%s/gov.db", g_dir);
    atexit(cleanup);
    sqlite3 *db = rw_open();
    rw_exec(db, "PRAGMA journal_mode=WAL;"
                "CREATE TABLE t(id INTEGER PRIMARY KEY, name TEXT, score REAL, data BLOB);"
                "CREATE TABLE u(k TEXT PRIMARY KEY, v INTEGER) WITHOUT ROWID;"
                "CREATE INDEX t_name ON t(name);"
                "CREATE VIEW v AS SELECT t.id, t.name, u.v FROM t JOIN u ON u.k = t.name;"
                "INSERT INTO t VALUES (1, 'alpha', 0.5, X'000102FF'),"
                "                     (2, 'beta', NULL, NULL),"
                "                     (3, NULL, -2.25, X'');"
                "INSERT INTO u VALUES ('alpha', 10), ('beta', 20);"
                /* the kind of view the audit schema has: JSON, dates, a table-valued
                 * function, which must work on the locked-down connection */
                "CREATE TABLE d(id INTEGER PRIMARY KEY, at INTEGER, doc TEXT);"
                "INSERT INTO d VALUES (7, 1764410400000,"
                "  '{\"action\":\"SCALE_UP\",\"vertices\":[{\"id\":\"a\",\"p\":4},"
                "{\"id\":\"b\",\"p\":2}]}');"
                "CREATE VIEW dv AS SELECT d.id, strftime('%Y-%m-%dT%H:%M:%SZ', d.at / 1000,"
                "  'unixepoch') AS at, json_extract(d.doc, '$.action') AS action,"
                "  json_extract(v.value, '$.id') AS vertex, json_extract(v.value, '$.p') AS p"
                "  FROM d, json_each(d.doc, '$.vertices') AS v;");
    sqlite3_close(db);
    return g_db;
}

/* new: the whole database as text: header pragmas, the schema, every row of every table
 * (quote() keeps types apart: 1 vs '1' vs 1.0 vs X'01'). */
static char *dump(void)
{
    sqlite3 *db = rw_open();
    sqlite3_str *s = sqlite3_str_new(db);
    sqlite3_stmt *st = NULL, *rows = NULL;
    const char *head = "SELECT (SELECT user_version FROM pragma_user_version),"
                       " (SELECT application_id FROM pragma_application_id),"
                       " (SELECT journal_mode FROM pragma_journal_mode),"
                       " type, name, tbl_name, sql FROM sqlite_schema ORDER BY name";
    sqlite3_prepare_v2(db, head, -1, &st, NULL);
    while (sqlite3_step(st) == SQLITE_ROW) {
        for (int i = 0; i < 7; i++)
            sqlite3_str_appendf(s, "%s|", (const char *)sqlite3_column_text(st, i));
        sqlite3_str_appendchar(s, 1, '\n');
        if (strcmp((const char *)sqlite3_column_text(st, 3), "table") != 0)
            continue;
        char *q = sqlite3_mprintf("SELECT * FROM \"%w\" ORDER BY 1", sqlite3_column_text(st, 4));
        sqlite3_prepare_v2(db, q, -1, &rows, NULL);
        sqlite3_free(q);
        while (sqlite3_step(rows) == SQLITE_ROW) {
            for (int i = 0; i < sqlite3_column_count(rows); i++) {
                sqlite3_stmt *qs = NULL;
                sqlite3_prepare_v2(db, "SELECT quote(?)", -1, &qs, NULL);
                sqlite3_bind_value(qs, 1, sqlite3_column_value(rows, i));
                sqlite3_step(qs);
                sqlite3_str_appendf(s, "%s,", (const char *)sqlite3_column_text(qs, 0));
                sqlite3_finalize(qs);
            }
            sqlite3_str_appendchar(s, 1, '\n');
        }
        sqlite3_finalize(rows);
    }
    sqlite3_finalize(st);
    char *text = sqlite3_str_finish(s);
    char *out = strdup(text ? text : "");
    sqlite3_free(text);
    sqlite3_close(db);
    return out;
}

static struct sql_engine *engine(int64_t timeout_ms, int max_rows)
{
    struct sql_limits lim = {.timeout_ms = timeout_ms, .max_rows = max_rows};
    char *err = NULL;
    struct sql_engine *e = sql_engine_new(db_path(), &lim, &err);
    if (!e) {
        fprintf(stderr, "sql_engine_new: %s\n", err);
        abort();
    }
    return e;
}

/* new: the answer of sql_run parsed (NULL when it is not JSON: a test failure). */
static json_t *run(struct sql_engine *e, const char *sql, json_t *params, int *status)
{
    char *body = NULL;
    sql_run(e, sql, params, &body, status);
    json_t *r = json_loads(body, 0, NULL);
    if (!r)
        fprintf(stderr, "  not JSON: %s\n", body);
    free(body);
    return r;
}

static const char *err_field(json_t *r, const char *key)
{
    return json_string_value(json_object_get(json_object_get(r, "error"), key));
}

/* Runs sql; asserts the status, the error code, that the message contains msg, and that the
 * field is "sql" (statement refusals always name it). Needs `e` in scope. */
#define ASSERT_REFUSED(sql, status_, code, msg)                                                    \
    do {                                                                                           \
        json_t *r__ = NULL;                                                                        \
        int st__ = 0;                                                                              \
        r__ = run(e, (sql), NULL, &st__);                                                          \
        int rc__ = st__ == 200 ? 0 : -1;                                                           \
        char *dump__ = json_dumps(r__, JSON_COMPACT);                                              \
        if (rc__ != -1 || st__ != (status_) || !err_field(r__, "code") ||                          \
            strcmp(err_field(r__, "code"), (code)) != 0 || !err_field(r__, "message") ||           \
            !strstr(err_field(r__, "message"), (msg)) || !err_field(r__, "field") ||               \
            strcmp(err_field(r__, "field"), "sql") != 0) {                                         \
            fprintf(stderr, "  %s -> %d %s\n", (sql), st__, dump__);                               \
            free(dump__);                                                                          \
            json_decref(r__);                                                                      \
            TEST__FAIL("refusal of \"%s\" as %d %s \"%s\"", (sql), (status_), (code), (msg));      \
        }                                                                                          \
        free(dump__);                                                                              \
        json_decref(r__);                                                                          \
    } while (0)

/* Runs sql expecting 200; leaves the result in `res` (caller decrefs). */
#define RUN_OK(res, sql, params)                                                                   \
    do {                                                                                           \
        int st__ = 0;                                                                              \
        res = NULL;                                                                                \
        res = run(e, (sql), (params), &st__);                                                      \
        if (st__ != 200) {                                                                         \
            char *d__ = json_dumps(res, JSON_COMPACT);                                             \
            fprintf(stderr, "  %s -> %d %s\n", (sql), st__, d__);                                  \
            free(d__);                                                                             \
            json_decref(res);                                                                      \
            TEST__FAIL("\"%s\" failed", (sql));                                                    \
        }                                                                                          \
    } while (0)

#define CELL(res, r, c) json_array_get(json_array_get(json_object_get(res, "rows"), (r)), (c))

/* ---- what a user reads ---------------------------------------------------------------- */

static void test_types_kept(void)
{
    struct sql_engine *e = engine(0, 0);
    json_t *res;
    RUN_OK(res, "SELECT id, name, score, data FROM t ORDER BY id", NULL);
    json_t *cols = json_object_get(res, "columns");
    ASSERT_EQ(json_array_size(cols), 4);
    ASSERT_STR(json_string_value(json_array_get(cols, 0)), "id");
    ASSERT_STR(json_string_value(json_array_get(cols, 3)), "data");
    ASSERT_EQ(json_array_size(json_object_get(res, "rows")), 3);
    ASSERT(json_is_false(json_object_get(res, "truncated")));
    /* INTEGER stays a JSON integer, not 1.0 */
    ASSERT(json_is_integer(CELL(res, 0, 0)));
    ASSERT_EQ(json_integer_value(CELL(res, 0, 0)), 1);
    ASSERT_STR(json_string_value(CELL(res, 0, 1)), "alpha");
    ASSERT(json_is_real(CELL(res, 0, 2)));
    ASSERT_DEQ(json_real_value(CELL(res, 0, 2)), 0.5);
    /* X'000102FF': 00 01 02 -> 000000 000000 000100 000010 = "AAEC";
     * FF -> 111111 11(0000) = "/w" + "==" */
    ASSERT_STR(json_string_value(CELL(res, 0, 3)), "AAEC/w==");
    ASSERT(json_is_null(CELL(res, 1, 2))); /* NULL is null */
    ASSERT(json_is_null(CELL(res, 1, 3)));
    ASSERT(json_is_null(CELL(res, 2, 1)));
    ASSERT_DEQ(json_real_value(CELL(res, 2, 2)), -2.25);
    ASSERT_STR(json_string_value(CELL(res, 2, 3)), ""); /* an empty blob is "" */
    json_decref(res);

    /* the extremes of INTEGER stay exact; 1e999 is +inf in SQLite and has no JSON form;
     * invalid UTF-8 bytes become U+FFFD; 2 and 1-byte tails of base64 pad with = */
    RUN_OK(res,
           "SELECT 9223372036854775807, -9223372036854775808, 1e999, 2.0,"
           " CAST(X'61FF62' AS TEXT), X'4D61', X'4D', 'h\xC3\xA9'",
           NULL);
    ASSERT(json_is_integer(CELL(res, 0, 0)));
    ASSERT(json_integer_value(CELL(res, 0, 0)) == INT64_MAX);
    ASSERT(json_integer_value(CELL(res, 0, 1)) == INT64_MIN);
    ASSERT(json_is_null(CELL(res, 0, 2)));
    ASSERT(json_is_real(CELL(res, 0, 3))); /* REAL 2.0 stays a real */
    ASSERT_STR(json_string_value(CELL(res, 0, 4)), "a\xEF\xBF\xBD"
                                                   "b");
    /* "Ma" = 01001101 01100001 -> 010011 010110 000100 (00) = T W E = */
    ASSERT_STR(json_string_value(CELL(res, 0, 5)), "TWE=");
    /* "M" = 01001101 -> 010011 01(0000) = T Q = = */
    ASSERT_STR(json_string_value(CELL(res, 0, 6)), "TQ==");
    ASSERT_STR(json_string_value(CELL(res, 0, 7)), "h\xC3\xA9");
    json_decref(res);

    /* views, joins, aggregates and the read-only pragmas work */
    RUN_OK(res, "SELECT name, v FROM v ORDER BY id", NULL);
    ASSERT_EQ(json_array_size(json_object_get(res, "rows")), 2);
    ASSERT_EQ(json_integer_value(CELL(res, 1, 1)), 20);
    json_decref(res);
    RUN_OK(res, "PRAGMA table_info(t)", NULL);
    ASSERT_EQ(json_array_size(json_object_get(res, "rows")), 4); /* id, name, score, data */
    json_decref(res);
    RUN_OK(res, "SELECT name FROM pragma_table_info('u') ORDER BY cid", NULL);
    ASSERT_STR(json_string_value(CELL(res, 1, 0)), "v");
    json_decref(res);
    RUN_OK(res, "PRAGMA user_version", NULL);
    ASSERT_EQ(json_integer_value(CELL(res, 0, 0)), 0);
    json_decref(res);
    /* 1764410400000 ms = 1764410400 s = 20422 days (1764374400 s, 2025-11-29) + 36000 s
     * (10:00:00); vertices in array order */
    RUN_OK(res, "SELECT id, at, action, vertex, p FROM dv ORDER BY vertex", NULL);
    ASSERT_EQ(json_array_size(json_object_get(res, "rows")), 2);
    ASSERT_STR(json_string_value(CELL(res, 0, 1)), "2025-11-29T10:00:00Z");
    ASSERT_STR(json_string_value(CELL(res, 0, 2)), "SCALE_UP");
    ASSERT_STR(json_string_value(CELL(res, 1, 3)), "b");
    ASSERT_EQ(json_integer_value(CELL(res, 1, 4)), 2);
    json_decref(res);
    RUN_OK(res, "EXPLAIN QUERY PLAN SELECT * FROM t WHERE name = 'x'", NULL);
    json_decref(res);
    /* one statement followed by semicolons and comments is still one statement */
    RUN_OK(res, "SELECT 1; ;  -- done\n /* really */", NULL);
    json_decref(res);
    /* a SELECT with no rows has its columns and an empty row list */
    RUN_OK(res, "SELECT id AS x, name AS y FROM t WHERE 0", NULL);
    ASSERT_EQ(json_array_size(json_object_get(res, "columns")), 2);
    ASSERT_STR(json_string_value(json_array_get(json_object_get(res, "columns"), 1)), "y");
    ASSERT_EQ(json_array_size(json_object_get(res, "rows")), 0);
    json_decref(res);
    sql_engine_free(e);
}

static void test_params(void)
{
    struct sql_engine *e = engine(0, 0);
    json_t *res;
    json_t *p = json_pack("[i, f, s, n, b, b]", 42, 2.5, "h\xC3\xA9llo", 1, 0);
    RUN_OK(res,
           "SELECT ?1, typeof(?1), ?2, typeof(?2), ?3, typeof(?3), ?4, typeof(?4),"
           " ?5, typeof(?5), ?6",
           p);
    json_decref(p);
    ASSERT(json_is_integer(CELL(res, 0, 0)));
    ASSERT_EQ(json_integer_value(CELL(res, 0, 0)), 42);
    ASSERT_STR(json_string_value(CELL(res, 0, 1)), "integer");
    ASSERT_DEQ(json_real_value(CELL(res, 0, 2)), 2.5);
    ASSERT_STR(json_string_value(CELL(res, 0, 3)), "real");
    ASSERT_STR(json_string_value(CELL(res, 0, 4)), "h\xC3\xA9llo");
    ASSERT_STR(json_string_value(CELL(res, 0, 5)), "text");
    ASSERT(json_is_null(CELL(res, 0, 6)));
    ASSERT_STR(json_string_value(CELL(res, 0, 7)), "null");
    /* true binds as integer 1, false as 0 */
    ASSERT_EQ(json_integer_value(CELL(res, 0, 8)), 1);
    ASSERT_STR(json_string_value(CELL(res, 0, 9)), "integer");
    ASSERT_EQ(json_integer_value(CELL(res, 0, 10)), 0);
    json_decref(res);

    /* a parameter is a value, never SQL: the quote in it is just a character */
    p = json_pack("[s]", "alpha' OR '1'='1");
    RUN_OK(res, "SELECT id FROM t WHERE name = ?", p);
    ASSERT_EQ(json_array_size(json_object_get(res, "rows")), 0);
    json_decref(res);
    json_decref(p);
    p = json_pack("[i]", 2);
    RUN_OK(res, "SELECT name FROM t WHERE id = :id", p);
    ASSERT_STR(json_string_value(CELL(res, 0, 0)), "beta");
    json_decref(res);
    json_decref(p);
    /* JSON null for params means none */
    json_t *jnull = json_null();
    RUN_OK(res, "SELECT 1", jnull);
    json_decref(res);

    struct {
        const char *sql;
        json_t *params;
        const char *field, *msg;
    } bad[] = {
        {"SELECT ?, ?", json_pack("[i, {}]", 1), "params[1]", "not an object"},
        {"SELECT ?, ?, ?", json_pack("[i, i, []]", 1, 2), "params[2]", "not an array"},
        {"SELECT ?, ?", json_pack("[i]", 1), "params", "2 parameters but 1 value was given"},
        {"SELECT 1", json_pack("[i]", 1), "params", "0 parameters but 1 value was given"},
        {"SELECT ?", NULL, "params", "1 parameter but 0 values were given"},
        {"SELECT ?", json_pack("{s:i}", "a", 1), "params", "params must be an array"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int st = 0;
        res = NULL;
        res = run(e, bad[i].sql, bad[i].params, &st);
        ASSERT_EQ(st, 400);
        ASSERT_STR(err_field(res, "code"), "INVALID_ARGUMENT");
        ASSERT_STR(err_field(res, "field"), bad[i].field);
        ASSERT_CONTAINS(err_field(res, "message"), bad[i].msg);
        json_decref(res);
        json_decref(bad[i].params);
    }
    sql_engine_free(e);
}

/* ---- what is refused ------------------------------------------------------------------ */

static void test_refusals_change_nothing(void)
{
    struct sql_engine *e = engine(0, 0);
    char *before = dump();
    char vac[160], att[160];
    snprintf(vac, sizeof vac, "VACUUM INTO '%s/copy.db'", g_dir);
    snprintf(att, sizeof att, "ATTACH '%s/other.db' AS o", g_dir);

    ASSERT_REFUSED("INSERT INTO t(id, name) VALUES (9, 'x')", 400, "INVALID_ARGUMENT",
                   "not authorized: INSERT");
    ASSERT_REFUSED("UPDATE t SET name = 'x'", 400, "INVALID_ARGUMENT", "not authorized: UPDATE");
    ASSERT_REFUSED("DELETE FROM t", 400, "INVALID_ARGUMENT", "not authorized: DELETE");
    /* the schema table: SQLite itself refuses it before the authorizer is asked */
    ASSERT_REFUSED("UPDATE sqlite_master SET sql = 'x'", 400, "INVALID_ARGUMENT",
                   "may not be modified");
    ASSERT_REFUSED("UPDATE sqlite_schema SET sql = 'x'", 400, "INVALID_ARGUMENT",
                   "may not be modified");
    ASSERT_REFUSED("DELETE FROM sqlite_master", 400, "INVALID_ARGUMENT", "may not be modified");
    ASSERT_REFUSED("REPLACE INTO u VALUES ('alpha', 1)", 400, "INVALID_ARGUMENT",
                   "not authorized: INSERT");
    /* writing CTEs */
    ASSERT_REFUSED("WITH x(a) AS (SELECT 9) INSERT INTO t(id) SELECT a FROM x", 400,
                   "INVALID_ARGUMENT", "not authorized: INSERT");
    ASSERT_REFUSED("WITH x(a) AS (SELECT 1) DELETE FROM t WHERE id IN (SELECT a FROM x)", 400,
                   "INVALID_ARGUMENT", "not authorized: DELETE");
    ASSERT_REFUSED("WITH x(a) AS (SELECT 1) UPDATE t SET score = 0 WHERE id IN x", 400,
                   "INVALID_ARGUMENT", "not authorized: UPDATE");
    ASSERT_REFUSED(att, 400, "INVALID_ARGUMENT", "not authorized: ATTACH");
    ASSERT_REFUSED("DETACH temp", 400, "INVALID_ARGUMENT", "not authorized: DETACH");
    /* writing pragmas, as statements and as table-valued functions */
    ASSERT_REFUSED("PRAGMA user_version = 5", 400, "INVALID_ARGUMENT",
                   "not authorized: PRAGMA user_version = 5");
    ASSERT_REFUSED("PRAGMA journal_mode = DELETE", 400, "INVALID_ARGUMENT",
                   "not authorized: PRAGMA journal_mode");
    ASSERT_REFUSED("PRAGMA query_only = 0", 400, "INVALID_ARGUMENT",
                   "not authorized: PRAGMA query_only");
    ASSERT_REFUSED("PRAGMA writable_schema = 1", 400, "INVALID_ARGUMENT",
                   "not authorized: PRAGMA writable_schema");
    ASSERT_REFUSED("PRAGMA wal_checkpoint(TRUNCATE)", 400, "INVALID_ARGUMENT",
                   "not authorized: PRAGMA wal_checkpoint");
    ASSERT_REFUSED("PRAGMA integrity_check", 400, "INVALID_ARGUMENT",
                   "not authorized: PRAGMA integrity_check");
    /* the pragma_*() functions take no value to set, and run their pragma through the
     * authorizer too */
    ASSERT_REFUSED("SELECT * FROM pragma_user_version(5)", 400, "INVALID_ARGUMENT",
                   "too many arguments");
    ASSERT_REFUSED("SELECT * FROM pragma_integrity_check", 400, "INVALID_ARGUMENT",
                   "not authorized: PRAGMA integrity_check");
    /* functions that load code or reach outside */
    ASSERT_REFUSED("SELECT load_extension('x')", 400, "INVALID_ARGUMENT",
                   "not authorized: function load_extension()");
    ASSERT_REFUSED("SELECT fts3_tokenizer('simple')", 400, "INVALID_ARGUMENT",
                   "not authorized: function fts3_tokenizer()");
    /* more than one statement, even when the first is harmless */
    ASSERT_REFUSED("SELECT 1; SELECT 2", 400, "INVALID_ARGUMENT", "only one statement is allowed");
    ASSERT_REFUSED("SELECT 1; DELETE FROM t", 400, "INVALID_ARGUMENT",
                   "only one statement is allowed");
    ASSERT_REFUSED("SELECT 1 /* c */ ; -- c\n DELETE FROM t", 400, "INVALID_ARGUMENT",
                   "only one statement is allowed");
    /* no statement at all */
    ASSERT_REFUSED("", 400, "INVALID_ARGUMENT", "no statement");
    ASSERT_REFUSED("  -- nothing\n ;", 400, "INVALID_ARGUMENT", "no statement");
    /* VACUUM has no authorizer code: sqlite3_stmt_readonly is what stops it */
    ASSERT_REFUSED(vac, 400, "INVALID_ARGUMENT", "statement is not read-only");
    ASSERT_REFUSED("VACUUM", 400, "INVALID_ARGUMENT", "statement is not read-only");
    /* temporary objects live in the connection, but are writes all the same */
    ASSERT_REFUSED("CREATE TEMP TABLE x(a)", 400, "INVALID_ARGUMENT",
                   "not authorized: CREATE TEMP object");
    ASSERT_REFUSED("CREATE TEMP VIEW w AS SELECT 1", 400, "INVALID_ARGUMENT",
                   "not authorized: CREATE TEMP object");
    ASSERT_REFUSED("CREATE TEMP TRIGGER tr AFTER INSERT ON t BEGIN SELECT 1; END", 400,
                   "INVALID_ARGUMENT", "not authorized: CREATE TEMP TRIGGER");
    ASSERT_REFUSED("CREATE TABLE x(a)", 400, "INVALID_ARGUMENT", "not authorized: CREATE object");
    ASSERT_REFUSED("CREATE INDEX i2 ON t(score)", 400, "INVALID_ARGUMENT",
                   "not authorized: CREATE object");
    ASSERT_REFUSED("DROP TABLE t", 400, "INVALID_ARGUMENT", "not authorized: DROP object");
    ASSERT_REFUSED("DROP VIEW v", 400, "INVALID_ARGUMENT", "not authorized: DROP object");
    ASSERT_REFUSED("ALTER TABLE t ADD COLUMN z", 400, "INVALID_ARGUMENT",
                   "not authorized: ALTER TABLE");
    /* transactions would let a later request hold a read snapshot (or a lock) forever */
    ASSERT_REFUSED("BEGIN", 400, "INVALID_ARGUMENT", "not authorized: TRANSACTION");
    ASSERT_REFUSED("SAVEPOINT a", 400, "INVALID_ARGUMENT", "not authorized: SAVEPOINT");
    /* ANALYZE asks first to create sqlite_stat1, which is what gets refused here */
    ASSERT_REFUSED("ANALYZE", 400, "INVALID_ARGUMENT", "not authorized: CREATE object");
    ASSERT_REFUSED("REINDEX", 400, "INVALID_ARGUMENT", "not authorized: REINDEX");
    /* SQLite's own message for a syntax error or an unknown table */
    ASSERT_REFUSED("EXPLAIN DELETE FROM t", 400, "INVALID_ARGUMENT", "not authorized: DELETE");
    ASSERT_REFUSED("SELEC 1", 400, "INVALID_ARGUMENT", "syntax error");
    ASSERT_REFUSED("SELECT * FROM nowhere", 400, "INVALID_ARGUMENT", "no such table: nowhere");

    char *after = dump();
    ASSERT_STR(after, before);
    free(before);
    free(after);

    /* VACUUM INTO wrote no file, ATTACH created none */
    char path[160];
    struct stat sb;
    snprintf(path, sizeof path, "%s/copy.db", g_dir);
    ASSERT(stat(path, &sb) == -1 && errno == ENOENT);
    snprintf(path, sizeof path, "%s/other.db", g_dir);
    ASSERT(stat(path, &sb) == -1 && errno == ENOENT);

    /* no temporary object exists on the engine's connection either (the engine reuses its
     * one idle connection for sequential synchronous runs) */
    json_t *res;
    RUN_OK(res, "SELECT count(*) FROM sqlite_temp_schema", NULL);
    ASSERT_EQ(json_integer_value(CELL(res, 0, 0)), 0);
    json_decref(res);
    /* and the engine still answers */
    RUN_OK(res, "SELECT count(*) FROM t", NULL);
    ASSERT_EQ(json_integer_value(CELL(res, 0, 0)), 3);
    json_decref(res);
    sql_engine_free(e);
}

/* ---- limits --------------------------------------------------------------------------- */

static const char *const endless_count =
    "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c";
static const char *const endless_rows =
    "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT x FROM c";

static void test_time_limit(void)
{
    struct sql_engine *e = engine(200, 0);
    double t0 = now_ms();
    ASSERT_REFUSED(endless_count, 400, "DEADLINE_EXCEEDED", "query exceeded the 200 ms time limit");
    double took = now_ms() - t0;
    /* stopped at the limit: not before it, and not long after (generous for a loaded box) */
    ASSERT(took >= 190);
    ASSERT(took < 1500);
    /* the connection is fine afterwards */
    json_t *res;
    RUN_OK(res, "SELECT 1", NULL);
    json_decref(res);
    sql_engine_free(e);

    /* the default is 2 s, named in the message */
    e = engine(0, 0);
    t0 = now_ms();
    ASSERT_REFUSED(endless_count, 400, "DEADLINE_EXCEEDED",
                   "query exceeded the 2000 ms time limit");
    took = now_ms() - t0;
    ASSERT(took >= 1990 && took < 4000);
    sql_engine_free(e);
}

static void test_row_limit(void)
{
    struct sql_engine *e = engine(0, 100);
    json_t *res;
    RUN_OK(res, endless_rows, NULL);
    /* the first 100 rows, x = 1..100, then truncated */
    ASSERT_EQ(json_array_size(json_object_get(res, "rows")), 100);
    ASSERT_EQ(json_integer_value(CELL(res, 0, 0)), 1);
    ASSERT_EQ(json_integer_value(CELL(res, 99, 0)), 100);
    ASSERT(json_is_true(json_object_get(res, "truncated")));
    json_decref(res);
    /* exactly the limit is not truncated */
    RUN_OK(res,
           "SELECT x FROM (WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c"
           " WHERE x < 100) SELECT x FROM c)",
           NULL);
    ASSERT_EQ(json_array_size(json_object_get(res, "rows")), 100);
    ASSERT(json_is_false(json_object_get(res, "truncated")));
    json_decref(res);
    sql_engine_free(e);

    /* default: 10000 rows */
    e = engine(0, 0);
    RUN_OK(res, endless_rows, NULL);
    ASSERT_EQ(json_array_size(json_object_get(res, "rows")), 10000);
    ASSERT_EQ(json_integer_value(CELL(res, 9999, 0)), 10000);
    ASSERT(json_is_true(json_object_get(res, "truncated")));
    json_decref(res);
    sql_engine_free(e);
}

static void test_size_limits(void)
{
    /* a body of 1000 bytes: the JSON text is counted exactly. The header
     * {"columns":["hex(zeroblob(50))"],"rows":[ is 41 bytes, the first row ["<100 chars>"]
     * 104 and each later one 105 with its comma; a row is added only if the 22 bytes of
     * `],"truncated":false}` and the newline still fit after it: 41 + 104 + 7 * 105 = 880,
     * and a ninth row would need 880 + 105 + 22 = 1007. So 8 rows, a body of 900 bytes. */
    struct sql_limits lim = {.max_bytes = 1000};
    char *err = NULL;
    struct sql_engine *e = sql_engine_new(db_path(), &lim, &err);
    ASSERT(e);
    const char *rows100 = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c)"
                          " SELECT hex(zeroblob(50)) FROM c";
    char *body = NULL;
    int st = 0;
    sql_run(e, rows100, NULL, &body, &st);
    ASSERT_EQ(st, 200);
    ASSERT_EQ(strlen(body), 900);
    json_t *res = json_loads(body, 0, NULL);
    free(body);
    ASSERT(res);
    ASSERT_EQ(json_array_size(json_object_get(res, "rows")), 8);
    ASSERT_EQ(strlen(json_string_value(CELL(res, 7, 0))), 100);
    ASSERT(json_is_true(json_object_get(res, "truncated")));
    json_decref(res);

    /* the first row alone above the body's limit: refused, saying which limit ("[" + 602 +
     * "," + 602 + "]") */
    ASSERT_REFUSED("SELECT hex(zeroblob(300)), hex(zeroblob(300))", 400, "RESOURCE_EXHAUSTED",
                   "row 1 is 1207 bytes as JSON, above the result limit of 1000 bytes "
                   "(sql-max-bytes)");

    /* a string or blob may not exceed 4 MiB by default: zeroblob(1e9) fails instead of
     * allocating; printf of a huge width fails the same way (SQLite's own printf answers NULL,
     * which a query would have taken for a value) */
    ASSERT_REFUSED("SELECT length(zeroblob(1000000000))", 400, "RESOURCE_EXHAUSTED",
                   "would exceed 4194304 bytes, the limit of one value (sql-max-value)");
    ASSERT_REFUSED("SELECT printf('%.*c', 5000000, 'x') IS NULL", 400, "RESOURCE_EXHAUSTED",
                   "would exceed 4194304 bytes, the limit of one value (sql-max-value)");
    RUN_OK(res, "SELECT length(printf('%.*c', 4194304, 'x')), printf('') IS NULL", NULL);
    ASSERT_EQ(json_integer_value(CELL(res, 0, 0)), 4194304);
    ASSERT_EQ(json_integer_value(CELL(res, 0, 1)), 1);
    json_decref(res);

    /* the SQL text itself: 100000 bytes by default */
    size_t n = 100001;
    char *big = malloc(n + 1);
    memset(big, ' ', n);
    memcpy(big, "SELECT 1", 8);
    big[n] = '\0';
    ASSERT_REFUSED(big, 400, "INVALID_ARGUMENT", "sql is 100001 bytes, longer than the 100000");
    big[n - 1] = '\0'; /* exactly 100000 is fine */
    RUN_OK(res, big, NULL);
    json_decref(res);
    free(big);

    /* no SQL at all (the handler passes NULL when "sql" is not a string) */
    res = run(e, NULL, NULL, &st);
    ASSERT_EQ(st, 400);
    ASSERT_STR(err_field(res, "message"), "sql must be a string");
    ASSERT_STR(err_field(res, "field"), "sql");
    json_decref(res);
    sql_engine_free(e);
}

/* The limits hold inside a row (README, Audit with SQL). A value and a row are measured before they
 * are built, so a row of huge values is refused at once instead of growing the process. */
static void test_limits_inside_a_row(void)
{
    struct sql_limits lim = {.max_value = 1000, .max_bytes = 5000};
    char *err = NULL;
    struct sql_engine *e = sql_engine_new(db_path(), &lim, &err);
    ASSERT(e);
    json_t *res;
    /* what SQLite builds: SQLITE_LIMIT_LENGTH is the value limit */
    ASSERT_REFUSED("SELECT zeroblob(1001)", 400, "RESOURCE_EXHAUSTED",
                   "would exceed 1000 bytes, the limit of one value (sql-max-value)");
    ASSERT_REFUSED("SELECT length(replace(printf('%.*c', 900, 'x'), 'x', 'yy'))", 400,
                   "RESOURCE_EXHAUSTED", "the limit of one value");
    /* what a value becomes as JSON: 1000 bytes of blob are 1336 of base64, 1338 with the quotes;
     * 200 control characters are 1202 bytes of \u0001 escapes */
    ASSERT_REFUSED("SELECT 1 AS a, zeroblob(1000) AS b", 400, "RESOURCE_EXHAUSTED",
                   "row 1, column 2 (b): the value is 1338 bytes as JSON, above the limit of "
                   "one value of 1000 bytes (sql-max-value)");
    ASSERT_REFUSED("SELECT printf('%.*c', 200, char(1)) AS ctl", 400, "RESOURCE_EXHAUSTED",
                   "column 1 (ctl): the value is 1202 bytes as JSON");
    /* under the value limit each, above the body's together (ten of 700 bytes) */
    ASSERT_REFUSED("SELECT hex(zeroblob(349)) a, hex(zeroblob(349)) b, hex(zeroblob(349)) c,"
                   " hex(zeroblob(349)) d, hex(zeroblob(349)) e, hex(zeroblob(349)) f,"
                   " hex(zeroblob(349)) g, hex(zeroblob(349)) h, hex(zeroblob(349)) i,"
                   " hex(zeroblob(349)) j",
                   400, "RESOURCE_EXHAUSTED",
                   "row 1 is 7011 bytes as JSON, above the result limit");
    /* a later row that does not fit ends the result, which stays within the limit */
    RUN_OK(res,
           "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 20)"
           " SELECT x, hex(zeroblob(100 + x * 10)) FROM c",
           NULL);
    ASSERT(json_is_true(json_object_get(res, "truncated")));
    size_t nrows = json_array_size(json_object_get(res, "rows"));
    ASSERT(nrows > 3 && nrows < 20);
    char *text = json_dumps(res, JSON_COMPACT);
    ASSERT(strlen(text) < 5000);
    free(text);
    json_decref(res);
    /* and the engine answers the next query */
    RUN_OK(res, "SELECT 1", NULL);
    json_decref(res);
    sql_engine_free(e);
}

/* The text written is jansson's compact form with 15 digits, byte for byte (the server
 * used to write the result with jansson; clients see the same bytes). */
static void test_text_as_jansson_writes_it(void)
{
    struct sql_engine *e = engine(0, 0);
    const char *q = "SELECT 0.1, 1e300, -2.5e-7, 123456789012345678.0, 2.0, 1e15, 1e16, -0.0,"
                    " 1.5e-300, 9223372036854775807, -9223372036854775808, 'a\"b\\c/d',"
                    " char(1, 8, 9, 10, 12, 13, 31, 127, 233, 8232), x'00ff10', NULL";
    char *body = NULL;
    int st = 0;
    sql_run(e, q, NULL, &body, &st);
    ASSERT_EQ(st, 200);
    json_t *res = json_loads(body, 0, NULL);
    ASSERT(res);
    char *again = json_dumps(res, JSON_COMPACT | JSON_REAL_PRECISION(15));
    size_t n = strlen(body);
    ASSERT(n > 0 && body[n - 1] == '\n');
    body[n - 1] = '\0';
    ASSERT_STR(body, again);
    ASSERT_CONTAINS(body, "[0.1,1e300,-2.5e-7,1.23456789012346e17,2.0,1e15,1e16,-0.0,1.5e-300,");
    ASSERT_CONTAINS(body, "\"\\u0001\\b\\t\\n\\f\\r\\u001F\x7F\xC3\xA9\xE2\x80\xA8\"");
    free(again);
    free(body);
    json_decref(res);
    sql_engine_free(e);
}

/* One SQL function call (README, Audit with SQL) that runs for minutes inside SQLite (the progress
 * handler is not called within it) is stopped at the time limit all the same: its query process is
 * killed. instr() of a 1 MB haystack and a 0.5 MB needle that match up to the needle's last
 * byte at every position compares about 2.5e11 bytes. */
static const char *const slow_instr =
    "SELECT instr(printf('%.*c', 1000000, 'a'), printf('%.*c', 500000, 'a') || 'b')";

static void test_deadline_inside_a_function(void)
{
    struct sql_engine *e = engine(300, 0);
    double t0 = now_ms();
    ASSERT_REFUSED(slow_instr, 400, "DEADLINE_EXCEEDED", "query exceeded the 300 ms time limit");
    double took = now_ms() - t0;
    /* killed at the limit plus the grace, not minutes later (generous for a loaded box) */
    ASSERT(took >= 290);
    ASSERT(took < 300 + SQL_GRACE_MS + 2500);
    /* a new process answers the next query */
    json_t *res;
    RUN_OK(res, "SELECT count(*) FROM t", NULL);
    ASSERT_EQ(json_integer_value(CELL(res, 0, 0)), 3);
    json_decref(res);
    sql_engine_free(e);
}

/* ---- threads -------------------------------------------------------------------------- */

struct waiter {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int calls;
    int status;
    json_t *result;
    double at_ms;
    pthread_t thread;
};

#define WAITER_INIT                                                                                \
    {                                                                                              \
        PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0, NULL, 0, 0                      \
    }

static void done_cb(void *ud, int status, char *body)
{
    struct waiter *w = ud;
    json_t *result = json_loads(body, 0, NULL);
    free(body);
    pthread_mutex_lock(&w->mu);
    w->calls++;
    w->status = status;
    w->result = result;
    w->at_ms = now_ms();
    w->thread = pthread_self();
    pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&w->mu);
}

static void wait_for(struct waiter *w)
{
    pthread_mutex_lock(&w->mu);
    while (w->calls == 0)
        pthread_cond_wait(&w->cv, &w->mu);
    pthread_mutex_unlock(&w->mu);
}

static void test_async_slow_does_not_delay_quick(void)
{
    struct sql_engine *e = engine(2000, 0);
    struct waiter slow = WAITER_INIT, quick = WAITER_INIT;
    double t0 = now_ms();
    ASSERT_EQ(sql_submit(e, endless_count, NULL, done_cb, &slow), 0);
    /* let the slow one start on a worker first */
    usleep(50 * 1000);
    json_t *p = json_pack("[s]", "beta");
    ASSERT_EQ(sql_submit(e, "SELECT id FROM t WHERE name = ?", p, done_cb, &quick), 0);
    json_decref(p); /* the engine copied it */
    wait_for(&quick);
    ASSERT_EQ(quick.status, 200);
    ASSERT_EQ(json_integer_value(CELL(quick.result, 0, 0)), 2);
    /* the quick query did not wait for the 2 s one: it was answered while the slow one still
     * ran (a bound in ms would depend on the machine's load) */
    wait_for(&slow);
    ASSERT(quick.at_ms < slow.at_ms);
    ASSERT(!pthread_equal(quick.thread, pthread_self())); /* called on a worker */
    ASSERT_EQ(slow.status, 400);
    ASSERT_STR(err_field(slow.result, "code"), "DEADLINE_EXCEEDED");
    ASSERT(slow.at_ms - t0 >= 1990);
    ASSERT_EQ(slow.calls, 1);
    ASSERT_EQ(quick.calls, 1);
    json_decref(quick.result);
    json_decref(slow.result);
    sql_engine_free(e);
}

static void test_free_completes_queued(void)
{
    /* one worker busy with a 2 s query and three waiting: freeing the engine interrupts the
     * first and completes the others with 503, promptly, each callback exactly once */
    struct sql_limits lim = {.timeout_ms = 2000, .workers = 1};
    char *err = NULL;
    struct sql_engine *e = sql_engine_new(db_path(), &lim, &err);
    ASSERT(e);
    struct waiter w[4] = {WAITER_INIT, WAITER_INIT, WAITER_INIT, WAITER_INIT};
    ASSERT_EQ(sql_submit(e, endless_count, NULL, done_cb, &w[0]), 0);
    for (int i = 1; i < 4; i++)
        ASSERT_EQ(sql_submit(e, "SELECT 1", NULL, done_cb, &w[i]), 0);
    usleep(50 * 1000);
    double t0 = now_ms();
    sql_engine_free(e);
    ASSERT(now_ms() - t0 < 1000);
    for (int i = 0; i < 4; i++) {
        ASSERT_EQ(w[i].calls, 1);
        json_decref(w[i].result);
    }
    ASSERT_EQ(w[0].status, 503);
    ASSERT_EQ(w[3].status, 503);
}

static void test_queue_limit(void)
{
    struct sql_limits lim = {.timeout_ms = 10000, .workers = 1, .max_queue = 1};
    char *err = NULL;
    struct sql_engine *e = sql_engine_new(db_path(), &lim, &err);
    ASSERT(e);
    struct waiter w[3] = {WAITER_INIT, WAITER_INIT, WAITER_INIT};
    ASSERT_EQ(sql_submit(e, endless_count, NULL, done_cb, &w[0]), 0);
    /* once the worker took it the queue is empty again (how soon depends on the machine's
     * load: try for up to 5 s; the worker then stays busy for the 10 s limit) */
    int rc = -1;
    for (int i = 0; i < 500 && rc != 0; i++) {
        rc = sql_submit(e, "SELECT 1", NULL, done_cb, &w[1]);
        if (rc != 0)
            usleep(10 * 1000);
    }
    ASSERT_EQ(rc, 0);
    ASSERT_EQ(sql_submit(e, "SELECT 1", NULL, done_cb, &w[2]), -1); /* full: caller says 503 */
    sql_engine_free(e);
    ASSERT_EQ(w[2].calls, 0);
    for (int i = 0; i < 2; i++)
        json_decref(w[i].result);
}

/* ---- the writer and the readers ------------------------------------------------------- */

static void test_writer_does_not_block_reader(void)
{
    struct sql_engine *e = engine(2000, 0);
    sqlite3 *w = rw_open();
    json_t *res;
    /* the writer holds the write lock with an uncommitted insert */
    rw_exec(w, "BEGIN IMMEDIATE; INSERT INTO u VALUES ('gamma', 30)");
    double t0 = now_ms();
    RUN_OK(res, "SELECT count(*) FROM u", NULL);
    ASSERT(now_ms() - t0 < 500);
    ASSERT_EQ(json_integer_value(CELL(res, 0, 0)), 2); /* the last committed state */
    json_decref(res);
    rw_exec(w, "COMMIT");
    RUN_OK(res, "SELECT count(*) FROM u", NULL);
    ASSERT_EQ(json_integer_value(CELL(res, 0, 0)), 3);
    json_decref(res);

    /* and a long reader does not block the writer: commit while a 2 s query runs */
    struct waiter slow = WAITER_INIT;
    ASSERT_EQ(sql_submit(e, endless_count, NULL, done_cb, &slow), 0);
    usleep(100 * 1000);
    sqlite3_busy_timeout(w, 0); /* fail at once rather than wait, if it were blocked */
    t0 = now_ms();
    ASSERT_EQ(sqlite3_exec(w, "DELETE FROM u WHERE k = 'gamma'", NULL, NULL, NULL), SQLITE_OK);
    ASSERT(now_ms() - t0 < 500);
    wait_for(&slow);
    ASSERT_EQ(slow.status, 400);
    json_decref(slow.result);
    sqlite3_close(w);
    sql_engine_free(e);
}

static void test_open_errors(void)
{
    char *err = NULL;
    char path[160];
    db_path();
    snprintf(path, sizeof path, "%s/missing.db", g_dir);
    ASSERT(sql_engine_new(path, NULL, &err) == NULL);
    ASSERT_CONTAINS(err, "missing.db");
    free(err);
    err = NULL;
    /* read-only open never creates the file */
    struct stat sb;
    ASSERT(stat(path, &sb) == -1 && errno == ENOENT);

    snprintf(path, sizeof path, "%s/notadb", g_dir);
    FILE *f = fopen(path, "w");
    ASSERT(f);
    fputs("this is not a database, but it is long enough to have a header of sorts........"
          "................................................................................",
          f);
    fclose(f);
    ASSERT(sql_engine_new(path, NULL, &err) == NULL);
    ASSERT_CONTAINS(err, "not a database");
    free(err);
}

/* SIGTERM: sql_engine_stop kills a query stuck inside one function call at once, and the
 * queued ones answer 503 without running. */
static void test_stop_inside_a_function(void)
{
    struct sql_limits lim = {.timeout_ms = 60000, .workers = 1};
    char *err = NULL;
    struct sql_engine *e = sql_engine_new(db_path(), &lim, &err);
    ASSERT(e);
    struct waiter w[2] = {WAITER_INIT, WAITER_INIT};
    ASSERT_EQ(sql_submit(e, slow_instr, NULL, done_cb, &w[0]), 0);
    ASSERT_EQ(sql_submit(e, "SELECT 1", NULL, done_cb, &w[1]), 0);
    usleep(300 * 1000); /* well inside instr() by now */
    double t0 = now_ms();
    sql_engine_stop(e);
    wait_for(&w[0]);
    wait_for(&w[1]);
    ASSERT(now_ms() - t0 < 2000);
    ASSERT_EQ(w[0].status, 503);
    ASSERT_STR(err_field(w[0].result, "code"), "UNAVAILABLE");
    ASSERT_EQ(w[1].status, 503);
    /* refused from now on */
    ASSERT_EQ(sql_submit(e, "SELECT 1", NULL, done_cb, &w[1]), -1);
    sql_engine_free(e);
    ASSERT_EQ(w[0].calls, 1);
    ASSERT_EQ(w[1].calls, 1);
    for (int i = 0; i < 2; i++)
        json_decref(w[i].result);
}

int main(int argc, char **argv)
{
    /* the engine starts its query processes from this very executable */
    if (argc > 1 && strcmp(argv[1], SQL_CHILD_COMMAND) == 0)
        return sql_child_main(argc, argv);
    static const struct test_case tests[] = {
        TEST_ENTRY(test_types_kept),
        TEST_ENTRY(test_params),
        TEST_ENTRY(test_refusals_change_nothing),
        TEST_ENTRY(test_time_limit),
        TEST_ENTRY(test_row_limit),
        TEST_ENTRY(test_size_limits),
        TEST_ENTRY(test_limits_inside_a_row),
        TEST_ENTRY(test_text_as_jansson_writes_it),
        TEST_ENTRY(test_deadline_inside_a_function),
        TEST_ENTRY(test_stop_inside_a_function),
        TEST_ENTRY(test_async_slow_does_not_delay_quick),
        TEST_ENTRY(test_free_completes_queued),
        TEST_ENTRY(test_queue_limit),
        TEST_ENTRY(test_writer_does_not_block_reader),
        TEST_ENTRY(test_open_errors),
    };
    return test_run(tests, (int)(sizeof tests / sizeof tests[0]));
}
