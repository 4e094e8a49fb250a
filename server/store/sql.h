/*
 * sql.h - the read-only SQL engine behind POST /v1/sql (prefix sql_): runs one
 * user-supplied statement against the governor database and answers the JSON text of the
 * result, {"columns": [...], "rows": [[...]], "truncated": false}, or of an error. What a
 * statement may do, how the result is written and the statuses are those of sql_conn.h.
 *
 * Each query runs in a query process: a copy of this executable started with
 * SQL_CHILD_COMMAND (posix_spawn of /proc/self/exe; main() hands it to sql_child_main),
 * which opens its own sql_conn (SQLite) or sql_pg (PostgreSQL: db_path is a postgresql:// or
 * postgres:// URL, handed over on the pipe, never on the command line) and answers one query
 * after the other over a pipe. A worker thread of the engine sends it the query and waits
 * for the answer until the deadline (the time limit plus SQL_GRACE_MS); a process that has
 * not answered by then is killed (SIGKILL) and the query answers 400 DEADLINE_EXCEEDED; the
 * next query starts a new process. So the limit holds whatever the query does, including a
 * single SQL function call that runs for minutes inside SQLite (instr, replace, like of long
 * operands), which the progress handler cannot stop. The process also caps SQLite's heap
 * (sqlite3_hard_heap_limit64) and arms its own timer, so that it never outlives its query
 * even if the server is gone. Why a process and not overridden SQL functions: it bounds
 * every function and every loop of SQLite, present and future, and the memory too, without
 * a list of what is slow to keep in step with each SQLite release; it costs one process
 * start per worker (reused for every query) and a copy of the answer through a pipe.
 *
 * The answer is text, never a jansson tree: the server sends it as it is, so that the loop
 * never renders or frees a large result (that was what stalled decisions), and it is never
 * larger than max_bytes (the parent refuses a longer one).
 *
 * Statuses (see sql_conn.h) plus, from the engine: 400 DEADLINE_EXCEEDED when the process
 * is killed at the deadline; 500 INTERNAL when the process cannot start or dies otherwise;
 * 503 UNAVAILABLE when the engine is stopping (a running query is killed, the queued ones
 * are refused).
 *
 * Threads: `workers` threads run the queries submitted with sql_submit. sql_run may be called
 * from any thread, concurrently with the workers (but not with sql_engine_free).
 * sql_engine_stop may be called from any thread at any time. Readers never block the
 * server's writer (the database is in WAL mode) and the writer never blocks them.
 *
 * May call: sql_conn, sql_pg, sql_json, options (the defaults of its limits), jansson, pthreads,
 * posix_spawn.
 * Knows nothing of HTTP or of the schema.
 */
#ifndef GOVERNOR_SQL_H
#define GOVERNOR_SQL_H

#include <jansson.h>
#include <stdint.h>

/* argv[1] of a query process; main() passes such a command line to sql_child_main. */
#define SQL_CHILD_COMMAND "__sql-query-process"
/* How long past its time limit a query process may take to answer before it is killed. */
#define SQL_GRACE_MS 500

/* Limits of one engine; a field left 0 takes the default in brackets: the options table's
 * (`governor options`) for the four that are `governor serve` options. */
struct sql_limits {
    int64_t timeout_ms; /* wall-clock time per query, from the start of its run [sql-timeout] */
    int max_rows;       /* rows returned before "truncated": true [sql-max-rows] */
    int64_t max_bytes;  /* the body, so also one row [sql-max-bytes] */
    int64_t max_value;  /* one string or blob, as SQLite builds it and as JSON [sql-max-value] */
    int max_sql_len;    /* bytes of SQL text [100000] */
    int workers;        /* threads running sql_submit's queries [2] */
    int max_queue;      /* queries waiting for a worker before sql_submit refuses [64] */
    int64_t max_memory; /* SQLite's heap in one query process [256 MiB] */
};

struct sql_engine; /* opaque */

/*
 * New: an engine over the database file db_path (borrowed; opened read-only, never
 * created, URI names not interpreted), or over the PostgreSQL database of a libpq URL
 * (each query read-only as the role governor_audit, see sql_pg.h). lim may be NULL for all
 * defaults. Starts one query process per worker up front (so that a missing or unreadable
 * file, or a database that refuses the connection or the role, is reported here, and no
 * query waits for a process to start; a worker replaces a killed process after it has
 * answered), and starts the worker threads. Returns NULL with *errp (new, caller frees) on
 * failure.
 */
struct sql_engine *sql_engine_new(const char *db_path, const struct sql_limits *lim, char **errp);

/*
 * Stops taking queries: the running ones are killed and answer 503, the queued ones answer
 * 503 as the workers reach them (at once), and sql_submit refuses from now on. Returns
 * without waiting. For SIGTERM: the server must not wait for a query to finish. NULL is a
 * no-op.
 */
void sql_engine_stop(struct sql_engine *e);

/*
 * Stops the engine (sql_engine_stop), joins the workers and ends the query processes.
 * Every done callback has returned when it returns; none is called afterwards. Must not be
 * called from a done callback. NULL is a no-op.
 */
void sql_engine_free(struct sql_engine *e);

/*
 * Runs one statement synchronously on the calling thread (in a query process). sql
 * (borrowed) is the statement, NULL for "not a string"; params (borrowed, may be NULL or
 * JSON null for none) as in sql_conn_run. Always sets *body (new, free() it) to the JSON
 * text of the answer, ending with a newline. Returns 0 when *status is 200, -1 otherwise.
 */
int sql_run(struct sql_engine *e, const char *sql, json_t *params, char **body, int *status);

/*
 * Callback of sql_submit. Called exactly once per accepted query, ON A WORKER THREAD (not
 * the caller's, not the event loop): it must only hand the result over (e.g. queue it and
 * event_active() an event of the loop) and must not call sql_engine_free. status and body
 * are those of sql_run; body is new, the callback owns it (free() when done).
 */
typedef void (*sql_done_cb)(void *ud, int status, char *body);

/*
 * Queues one statement for a worker thread and returns at once. sql and params are
 * borrowed (copied before return, so the caller may free them right away). done(ud, ...)
 * is called once, later, on a worker thread. The time limit counts from the start of the
 * run, not from the submission. Returns 0 when queued, or -1 when refused (the queue
 * holds max_queue queries already, or the engine is stopping): done is then never called
 * and the caller should answer 503.
 */
int sql_submit(struct sql_engine *e, const char *sql, json_t *params, sql_done_cb done, void *ud);

/*
 * The main of a query process (argv[1] is SQL_CHILD_COMMAND; the rest are the engine's
 * settings). Reads queries from stdin, one JSON line each, and answers each on stdout;
 * returns the exit status when stdin ends. Only sql.c starts it.
 */
int sql_child_main(int argc, char **argv);

#endif
