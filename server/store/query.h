/*
 * query.h - the statements and cursors of the store, on whichever backend a struct db is
 * open on (db.c), for the files of server/store above the backends (read.c: the reads;
 * migrate.c: SQLite's migrations; timeline.c), and what they share: the decision columns a
 * response is rebuilt from, the rebuild (read.c), the rows of a window (db.c). Internal to
 * server/store.
 *
 * A read: db_query, then db_next until it is false, then db_done (whether the rows ended on an
 * error), then db_end (always, also after a failed db_query); db_finish does the last two. The
 * columns of the current row: db_int (0 when NULL), db_real (NaN when NULL), db_text (NULL when
 * NULL), db_blob (valid until the next db_next), db_null, db_kind, and by position db_colname.
 *
 * May call: the backends (backend.h), pack, jansson.
 */
#ifndef GOVERNOR_QUERY_H
#define GOVERNOR_QUERY_H

#include <jansson.h>

#include "store/backend.h"
#include "store/db.h"

/* new: a struct db over an open connection of be (which it owns from now on). */
struct db *db_wrap(const struct store_backend *be, void *conn);
/* Whether the schema keeps decisions in their form before the compact history (SQLite's
 * migration 009: a reader's file may be older). */
bool db_precompact(struct db *db);
/* Runs statements without parameters as they are (a migration's SQL). -1 + *errp. */
int db_script(struct db *db, const char *sql, char **errp);
/* A write statement (backend.h, send): the rows it returned or changed, or -1 + *errp. */
int db_exec(struct db *db, const struct db_sql *s, const struct db_param *p, int n, int64_t *out,
            char **errp);
/* A read: its rows through *c (db_end it whatever this returns). -1 + *errp. */
int db_query(struct db *db, const struct db_sql *s, const struct db_param *p, int n,
             struct db_cur *c, char **errp);

static inline bool db_next(struct db_cur *c)
{
    return c->be->next(c);
}
static inline int db_done(struct db_cur *c, char **errp)
{
    return c->be->done(c, errp);
}
static inline void db_end(struct db_cur *c)
{
    if (c->be)
        c->be->end(c);
}
/* Ends a read: when rc is 0 (its rows were walked to their end), whether they ended on an
 * error (db_done); the cursor closed (db_end). rc, or db_done's -1 + *errp. */
static inline int db_finish(struct db_cur *c, int rc, char **errp)
{
    if (rc == 0)
        rc = db_done(c, errp);
    db_end(c);
    return rc;
}
static inline int db_ncols(const struct db_cur *c)
{
    return c->be->ncols(c);
}
static inline const char *db_colname(const struct db_cur *c, int i)
{
    return c->be->colname(c, i);
}
static inline enum db_kind db_kind(const struct db_cur *c, int i)
{
    return c->be->kind(c, i);
}
static inline bool db_null(const struct db_cur *c, int i)
{
    return c->be->kind(c, i) == DB_KNULL;
}
static inline int64_t db_int(const struct db_cur *c, int i)
{
    return c->be->i64(c, i);
}
static inline double db_real(const struct db_cur *c, int i)
{
    return c->be->f64(c, i);
}
static inline const char *db_text(const struct db_cur *c, int i)
{
    return c->be->text(c, i);
}
static inline const void *db_blob(struct db_cur *c, int i, size_t *n)
{
    return c->be->blob(c, i, n);
}

/*
 * The decision columns every read of a response takes, first in its SELECT (d: decisions,
 * o: decision_outcomes, c: decision_configs, DB_DEC_FROM), and their positions; DC_VERTICES
 * and DC_EVENTS are the outcome's vertices and events' texts (schema 012's JSON arrays).
 * DB_DEC_COLS_011 gives the same columns from the tables of migrations 009 to 011 (SQLite: a
 * migration's step, a reader of an older file), the vertices built from vertex_decisions.
 */
#define DB_DEC_COLS                                                                                \
    "d.id, d.job, d.at, o.action, o.reason, d.execute, o.message, o.response, "                    \
    "o.policy_revision, c.hash, d.decision_json, o.message_parts, o.vertices, o.events"
#define DB_DEC_FROM                                                                                \
    " FROM decisions d JOIN decision_outcomes o ON o.id = d.outcome_id "                           \
    "LEFT JOIN decision_configs c ON c.id = o.config_id "
#define DB_DEC_COLS_011                                                                            \
    "d.id, d.job, d.at, d.action, d.reason, d.execute, d.message, d.response, "                    \
    "d.policy_revision, c.hash, d.decision_json, d.message_parts, "                                \
    "coalesce((SELECT json_group_array(json(x.v)) FROM (SELECT json_array(v.vertex, v.current, "   \
    "v.raw_target, v.target, v.reason, v.constraints, v.message, v.flags, json(v.figures), "       \
    "v.evaluated_json) AS v FROM vertex_decisions v WHERE v.decision_id = d.id ORDER BY v.ord) "   \
    "x), "                                                                                         \
    "'[]'), NULL"
#define DB_DEC_FROM_011 " FROM decisions d LEFT JOIN decision_configs c ON c.id = d.config_id "
enum {
    DC_ID,
    DC_JOB,
    DC_AT,
    DC_ACTION,
    DC_REASON,
    DC_EXECUTE,
    DC_MESSAGE,
    DC_RESPONSE,
    DC_REVISION,
    DC_HASH,
    DC_DECISION_JSON,
    DC_PARTS,
    DC_VERTICES,
    DC_EVENTS,
    DC__N
};

/*
 * new in *out: the response of the decision at the cursor's row (DB_DEC_COLS, or with old
 * DB_DEC_COLS_011, from column col) rebuilt from its rows, without its decision_id, as if
 * decisions.decision_json were NULL. -1 + *errp.
 */
int db_response_rebuild(struct db *db, struct db_cur *row, int col, bool old, json_t **out,
                        char **errp);
/* Whether the schema keeps decisions in the tables of migrations 009 to 011 (SQLite's
 * migration 012: a reader's file may be older). */
bool db_pre012(struct db *db);
/* The window rows of job: drops its samples below seq0, adds the n of ws. -1 + *errp. */
int db_window_write(struct db *db, const char *job, int64_t seq0, const struct db_wsample *ws,
                    int n, char **errp);

#endif
