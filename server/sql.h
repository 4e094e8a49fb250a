/*
 * sql.h - the read-only SQL engine behind POST /v1/sql (DESIGN 3.2; prefix sql_): runs one
 * user-supplied statement against the governor database and renders the result as JSON,
 * {"columns": [...], "rows": [[...]], "truncated": false}, keeping SQL types (INTEGER a
 * JSON integer, REAL a real or null when not finite, TEXT a string with invalid UTF-8
 * replaced by U+FFFD, NULL null, BLOB a base64 string).
 *
 * Safety is layered, each layer enough on its own for the common cases:
 *   1. the connections are opened SQLITE_OPEN_READONLY, with PRAGMA query_only=1, load
 *      extension off, defensive mode on, and sqlite3_limit caps (no ATTACH slots, SQL
 *      length, string/blob length of 16 MiB, expression depth, variables);
 *   2. an authorizer allows only reads (SQLITE_READ, SQLITE_SELECT, SQLITE_RECURSIVE,
 *      functions but for a deny list such as load_extension, fts3_tokenizer, readfile,
 *      writefile, edit) and a short list of read-only PRAGMAs; everything else (INSERT,
 *      UPDATE, DELETE, CREATE/DROP incl. TEMP, ALTER, ATTACH, DETACH, BEGIN, SAVEPOINT,
 *      ANALYZE, REINDEX, any other PRAGMA) is refused at prepare time;
 *   3. exactly one statement: the text after the first statement may only be whitespace,
 *      comments and semicolons, and an empty statement is refused;
 *   4. sqlite3_stmt_readonly must be true (this is what stops VACUUM, which has no
 *      authorizer code);
 *   5. a wall-clock limit (a progress handler against a monotonic deadline), a row limit and
 *      a result-size limit.
 *
 * Status codes (the HTTP status the caller should send; the body is *result either way):
 *   200  success: the result object; "truncated" is true when the row limit or the size
 *        limit stopped it early (the rows returned are the first ones).
 *   400  the request is refused or the statement failed: {"error": {"code":
 *        "INVALID_ARGUMENT", "message": why, "field": "sql" | "params" | "params[2]"}}.
 *        The time limit is a 400 too, with code "DEADLINE_EXCEEDED" and the message "query
 *        exceeded the 2000 ms time limit": the client asked for too much work, retrying the
 *        same query will not help (a 408 would tell it to retry, a 504 would blame us).
 *   500  code "INTERNAL": out of memory, I/O error, corrupt database.
 *   503  code "UNAVAILABLE": the database stayed locked past the time limit, or the engine
 *        is shutting down.
 *
 * Threads: the engine owns a pool of read-only connections (one per running query, reused)
 * and `workers` threads that run queries submitted with sql_submit. sql_run may be called
 * from any thread, concurrently with the workers (but not with sql_engine_free). Readers never
 * block the server's writer (the database is in WAL mode) and the writer never blocks them.
 *
 * May call: SQLite, jansson, pthreads. Knows nothing of HTTP or of the schema.
 */
#ifndef GOVERNOR_SQL_H
#define GOVERNOR_SQL_H

#include <jansson.h>
#include <stdint.h>

/* Limits of one engine; a field left 0 takes the default in brackets. */
struct sql_limits {
    int64_t timeout_ms; /* wall-clock time per query, from the start of its run [2000] */
    int max_rows;       /* rows returned before "truncated": true [10000] */
    int64_t max_bytes;  /* approximate result size before "truncated": true [8 MiB] */
    int max_sql_len;    /* bytes of SQL text [100000] */
    int workers;        /* threads running sql_submit's queries [2] */
    int max_queue;      /* queries waiting for a worker before sql_submit refuses [64] */
};

struct sql_engine; /* opaque */

/*
 * New: an engine over the database file db_path (borrowed; opened read-only, never
 * created, URI names not interpreted). lim may be NULL for all defaults. Opens one
 * connection up front so a missing or unreadable file is reported here, and starts the
 * worker threads. Returns NULL with *errp (new, caller frees) on failure.
 */
struct sql_engine *sql_engine_new(const char *db_path, const struct sql_limits *lim, char **errp);

/*
 * Stops the engine: running queries are interrupted, queued ones are completed with status
 * 503, the workers are joined and the connections closed. Every done callback has returned
 * when it returns; none is called afterwards. Must not be called from a done callback.
 * NULL is a no-op.
 */
void sql_engine_free(struct sql_engine *e);

/*
 * Runs one statement synchronously on the calling thread. sql (borrowed) is the statement;
 * params (borrowed, may be NULL or JSON null for none) is an array whose i-th element is
 * bound to parameter i+1 (?, ?NNN, :name, @name, $name numbered as SQLite numbers them): an
 * integer, a real, a string, null, or a boolean (bound as 1 / 0); objects and arrays are
 * refused, and the array's length must equal sqlite3_bind_parameter_count.
 * Always sets *result (new, caller releases): the result object when *status is 200, else
 * the error body described above. Returns 0 when *status is 200, -1 otherwise.
 */
int sql_run(struct sql_engine *e, const char *sql, json_t *params, json_t **result, int *status);

/*
 * Callback of sql_submit. Called exactly once per accepted query, ON A WORKER THREAD (not
 * the caller's, not the event loop): it must only hand the result over (e.g. queue it and
 * event_active() an event of the loop) and must not call sql_engine_free. status and result
 * are those of sql_run; result is new, the callback owns it (json_decref when done).
 */
typedef void (*sql_done_cb)(void *ud, int status, json_t *result);

/*
 * Queues one statement for a worker thread and returns at once. sql and params are
 * borrowed (copied before return, so the caller may free them right away). done(ud, ...)
 * is called once, later, on a worker thread. The time limit counts from the start of the
 * run, not from the submission. Returns 0 when queued, or -1 when refused (the queue
 * holds max_queue queries already, or the engine is stopping): done is then never called
 * and the caller should answer 503.
 */
int sql_submit(struct sql_engine *e, const char *sql, json_t *params, sql_done_cb done, void *ud);

#endif
