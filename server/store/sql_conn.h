/*
 * sql_conn.h - one locked-down read-only SQLite connection that runs one user-supplied
 * statement and renders its result as JSON text (prefix sql_conn_). It is what a query
 * process of the SQL engine (sql.h) runs; it holds no threads and no processes, so it can
 * also be tested in place.
 *
 * The body is {"columns": [...], "rows": [[...]], "truncated": false} followed by a newline,
 * keeping SQL types (INTEGER a JSON integer, REAL a real or null when not finite, TEXT a
 * string with invalid UTF-8 replaced by U+FFFD, NULL null, BLOB a base64 string), written
 * by sql_json.h (and so exactly as jansson's compact form with 15 significant digits).
 *
 * Safety is layered, each layer enough on its own for the common cases:
 *   1. the connection is opened SQLITE_OPEN_READONLY, with PRAGMA query_only=1, load
 *      extension off, defensive mode on, and sqlite3_limit caps (no ATTACH slots, SQL
 *      length, string/blob length = the value limit, expression depth, variables);
 *   2. an authorizer allows only reads (SQLITE_READ, SQLITE_SELECT, SQLITE_RECURSIVE,
 *      functions but for a deny list such as load_extension, fts3_tokenizer, readfile,
 *      writefile, edit) and a short list of read-only PRAGMAs; everything else (INSERT,
 *      UPDATE, DELETE, CREATE/DROP incl. TEMP, ALTER, ATTACH, DETACH, BEGIN, SAVEPOINT,
 *      ANALYZE, REINDEX, any other PRAGMA) is refused at prepare time;
 *   3. exactly one statement: the text after the first statement may only be whitespace,
 *      comments and semicolons, and an empty statement is refused;
 *   4. sqlite3_stmt_readonly must be true (this is what stops VACUUM, which has no
 *      authorizer code);
 *   5. limits: a wall-clock deadline (a progress handler between VM steps, and a check
 *      between rendered rows), a row limit, and byte limits checked BEFORE anything is
 *      built: one value (SQLITE_LIMIT_LENGTH for what SQLite builds, and the value's JSON
 *      text), one row and the whole body (the body's limit; a row that does not fit after
 *      the first one ends the result with "truncated": true). A single SQL function call
 *      can still overrun the deadline inside SQLite: the engine's query process is what
 *      bounds that (see sql.h).
 *
 * Status codes (the HTTP status the caller should send; the body is the text either way):
 *   200  the result; "truncated" is true when the row or the body limit stopped it early
 *        (the rows returned are the first ones).
 *   400  {"error": {"code", "message", "field"}}: INVALID_ARGUMENT (refused or failed; field
 *        "sql", "params" or "params[2]"), DEADLINE_EXCEEDED ("query exceeded the 2000 ms
 *        time limit"), RESOURCE_EXHAUSTED (a value, a row or the memory above its limit;
 *        the message names the limit and its option).
 *   500  INTERNAL: I/O error, corrupt database.
 *   503  UNAVAILABLE: the database stayed locked past the time limit.
 *
 * May call: SQLite, sql_json (the text), jansson (params). Knows nothing of HTTP, processes or
 * the schema.
 */
#ifndef GOVERNOR_SQL_CONN_H
#define GOVERNOR_SQL_CONN_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

/* What one connection enforces; every field must be set (sql.c fills the defaults). */
struct sql_conn_limits {
    int64_t timeout_ms; /* wall-clock time of one run, from its start */
    int max_rows;       /* rows rendered before "truncated": true */
    int64_t max_bytes;  /* the whole body, and so one row */
    int64_t max_value;  /* one string or blob built by SQLite, and one value's JSON text */
    int max_sql_len;    /* bytes of SQL text */
    int64_t max_memory; /* SQLite's heap in the query process, for the message only */
};

struct sql_conn; /* opaque */

/*
 * New: a read-only, locked-down connection to the database file path (borrowed; never
 * created, URI names not interpreted). Reads the schema once, so that a missing or
 * unreadable file or one that is not a database is reported here. NULL with *errp (new,
 * caller frees) on failure.
 */
struct sql_conn *sql_conn_open(const char *path, const struct sql_conn_limits *lim, char **errp);

/* Closes c. NULL is a no-op. */
void sql_conn_close(struct sql_conn *c);

/*
 * Runs one statement. sql (borrowed, NUL-terminated) is the statement, or NULL (refused as
 * "sql must be a string"); params (borrowed, may be NULL or JSON null for none) is an
 * array whose i-th element is bound to parameter i+1 (?, ?NNN, :name, @name, $name
 * numbered as SQLite numbers them): an integer, a real, a string, null, or a boolean (bound
 * as 1 / 0); objects and arrays are refused, and the array's length must equal
 * sqlite3_bind_parameter_count. Always sets *body (new, free() it) to the JSON text
 * described above, ending with a newline, and *len to its length. Returns the status.
 */
int sql_conn_run(struct sql_conn *c, const char *sql, json_t *params, char **body, size_t *len);

#endif
