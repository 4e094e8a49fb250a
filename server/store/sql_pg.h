/*
 * sql_pg.h - one read-only PostgreSQL connection that runs one user-supplied statement and
 * renders its result as JSON text (prefix sql_pg_): the PostgreSQL twin of sql_conn.h, run by
 * a query process of the SQL engine (sql.h) when the database is a postgresql:// URL. The
 * answer's shape, statuses, error codes and limits are sql_conn.h's.
 *
 * Each query runs alone in its own transaction, on one connection kept open between queries:
 *     BEGIN READ ONLY; SET LOCAL statement_timeout = <what is left of the time limit>;
 *     SET LOCAL ROLE governor_audit; <the statement>; ROLLBACK
 * Safety is layered, as in SQLite's engine:
 *   1. the role: governor_audit (schema/pg/002_audit_views.sql) may read the audit views and
 *      nothing else of governor's (a base table is "permission denied"); it cannot write;
 *   2. the transaction is READ ONLY (INSERT, UPDATE, DELETE, DDL, nextval, SELECT FOR UPDATE
 *      refused by PostgreSQL) and always rolled back;
 *   3. exactly one statement that returns rows: the statement is prepared (the extended
 *      protocol refuses two), and one without a row description (SET, RESET ROLE, COMMIT,
 *      DO, ...) is refused before it runs;
 *   4. functions that would change the role in the middle of a statement or run SQL text
 *      given as a string (set_config, query_to_xml and the other *_to_xml, ts_stat,
 *      ts_rewrite, dblink), advisory locks (a lock held by this connection would outlive the
 *      query) and Unicode-escaped identifiers (U&"...", which could spell those) are refused
 *      from the text before it is sent;
 *   5. limits: statement_timeout on the server, and the deadline between rendered rows; rows
 *      are fetched one at a time (libpq's single-row mode), so the row limit and the byte
 *      limits stop the fetch (the rest of the query is cancelled) without holding the result.
 *      One value is received whole before its size is checked (PostgreSQL's limit is 1 GB):
 *      the query process is what bounds that memory, not the server.
 * A connection that failed is reopened at the next query; a query that finds the database
 * unreachable (or in recovery conflict) answers 503 UNAVAILABLE, which a client retries.
 *
 * Values: integer types and numeric values without a fraction or exponent are JSON integers,
 * other numbers reals (null when not finite), booleans 1 / 0 (as SQLite's comparisons give
 * them), bytea a base64 string, everything else its text.
 *
 * May call: libpq, sql_json (the text), sql_conn.h (the limits' struct only), jansson
 * (params). Knows nothing of HTTP, processes or the schema but the role's name.
 */
#ifndef GOVERNOR_SQL_PG_H
#define GOVERNOR_SQL_PG_H

#include <jansson.h>
#include <stddef.h>

#include "store/sql_conn.h"

/* The role every query runs as (created by schema/pg/002_audit_views.sql). */
#define SQL_PG_ROLE "governor_audit"

struct sql_pg; /* opaque */

/*
 * New: a connection to conninfo (borrowed; a libpq URL or key=value string). Connects and
 * checks that the role can be taken, so that a wrong URL or a missing role is reported here.
 * NULL with *errp (new, caller frees; it never repeats a password) on failure.
 */
struct sql_pg *sql_pg_open(const char *conninfo, const struct sql_conn_limits *lim, char **errp);

/* Closes c. NULL is a no-op. */
void sql_pg_close(struct sql_pg *c);

/*
 * Runs one statement, as sql_conn_run: sql (borrowed) or NULL; params (borrowed, NULL or JSON
 * null for none) an array bound to $1, $2, ... (a number, a string, null, or a boolean as
 * 1 / 0). Always sets *body (new) and *len; returns the status.
 */
int sql_pg_run(struct sql_pg *c, const char *sql, json_t *params, char **body, size_t *len);

#endif
