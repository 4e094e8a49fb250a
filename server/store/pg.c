/*
 * pg.c - the store's PostgreSQL backend through libpq (store_pg, see backend.h).
 *
 * Schema: schema/pg/NNN_name.sql (embedded as pg_migrations[] by schema/schema.cmake), each
 * applied once, in order, in one transaction under pg_advisory_xact_lock(PG_LOCK_MIGRATE),
 * the version in the one-row table schema_version. A statement's SQL is db.c's with its ?N
 * turned into $N (and DB_SQL_FENCED, DB_SQL_ID1 as backend.h says), prepared once per
 * connection (PQprepare, named after its place in a small cache keyed by its struct db_sql's
 * address), an integer parameter declared bigint. A lost connection is reset before the next
 * transaction. Failures are classed by SQLSTATE into DB_ERR_OWN | enum db_fault.
 *
 * A DB_TX_PIPE transaction is one pipeline (libpq's pipeline mode): BEGIN, the statements,
 * COMMIT are sent, their results read at flush and at the commit, in order; the first failure
 * is the transaction's, and the server skips the rest.
 */
#include <inttypes.h>
#include <libpq-fe.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "base/xmem.h"
#include "store/backend.h"

#define PG_CACHE  64
#define PG_PARAMS 24
/* PostgreSQL's type oids (catalog/pg_type.h, stable). */
#define PG_INT8OID  20
#define PG_BYTEAOID 17
/* The advisory lock key that serializes migrations across processes. */
#define PG_LOCK_MIGRATE 0x676f7600
/* The retention leader's lock key (leader), as SQL text: 0x676f7601. */
#define PG_LOCK_RETENTION_S "1735357953"
/* The id of the decision the unit inserted last, for DB_SQL_ID1's ?1. */
#define PG_LAST_DECISION "currval(pg_get_serial_sequence('decisions', 'id'))"

extern const struct db_migration pg_migrations[];
extern const int pg_n_migrations;

/* What a statement's result sent in a pipeline is read for. */
enum take { T_NONE, T_OUT, T_COMMIT };

struct pg {
    PGconn *c;
    bool read_only;
    bool in_tx;
    int err_code;                            /* DB_ERR_OWN | enum db_fault of the last failure */
    int lock_ms;                             /* lock_wait: < 0 the server's own */
    const struct db_sql *prepared[PG_CACHE]; /* statement "s<i>" is prepared[i] */
    int n_prepared;
    /* A DB_TX_PIPE transaction: statements are being sent, their results read after. */
    bool pipe;
    bool pipe_failed; /* a pipeline failed: a statement it prepared may not exist */
    struct sent {
        int64_t *out;
        enum take what;
        const char *label;
    } * sent;
    int n_sent, cap_sent;
};

/* The parameters of one statement: text (or binary for bytea) values, NULL for SQL NULL. */
struct par {
    int n;
    const char *v[PG_PARAMS];
    int len[PG_PARAMS];
    int fmt[PG_PARAMS];
    Oid type[PG_PARAMS];
    char num[PG_PARAMS][24];
};

static void params(struct par *a, const struct db_param *p, int n)
{
    memset(a, 0, sizeof *a);
    a->n = n < PG_PARAMS ? n : PG_PARAMS;
    for (int i = 0; i < a->n; i++) {
        switch (p[i].type) {
        case DB_PINT:
            snprintf(a->num[i], sizeof a->num[i], "%" PRId64, p[i].i);
            a->v[i] = a->num[i];
            a->type[i] = PG_INT8OID;
            break;
        case DB_PTEXT:
            a->v[i] = p[i].p;
            break;
        case DB_PBLOB:
            a->v[i] = p[i].p;
            a->len[i] = (int)p[i].n;
            a->fmt[i] = 1;
            a->type[i] = PG_BYTEAOID;
            break;
        case DB_PNULL:
            break;
        }
    }
}

/*
 * new: the PostgreSQL text of s: ?N as $N outside string literals, ?1 as the last decision's
 * id (DB_SQL_ID1), RETURNING id after it (DB_SQL_NEW_ID), wrapped in the fence
 * (DB_SQL_FENCED).
 */
static char *translate(const struct db_sql *s)
{
    static const char pre[] = "WITH u AS (",
                      post[] = ") SELECT version FROM u UNION ALL SELECT governor_fenced($1) "
                               "WHERE NOT EXISTS (SELECT 1 FROM u)",
                      returning[] = " RETURNING id";
    const char *src = s->pg ? s->pg : s->sql;
    bool fenced = s->flags & DB_SQL_FENCED, quoted = false;
    size_t n = strlen(src), q = 0, k = 0;
    for (size_t i = 0; i < n; i++)
        q += src[i] == '?';
    char *t =
        xmalloc(sizeof pre + n + q * sizeof PG_LAST_DECISION + sizeof returning + sizeof post);
    if (fenced)
        k += (size_t)sprintf(t, "%s", pre);
    for (size_t i = 0; i < n; i++) {
        quoted ^= src[i] == '\'';
        if (quoted || src[i] != '?') {
            t[k++] = src[i];
        } else if ((s->flags & DB_SQL_ID1) && src[i + 1] == '1' &&
                   !(src[i + 2] >= '0' && src[i + 2] <= '9')) {
            k += (size_t)sprintf(t + k, "%s", PG_LAST_DECISION);
            i++;
        } else {
            t[k++] = '$';
        }
    }
    if (s->flags & DB_SQL_NEW_ID)
        k += (size_t)sprintf(t + k, "%s", returning);
    if (fenced)
        k += (size_t)sprintf(t + k, "%s", post);
    t[k] = '\0';
    return t;
}

/* ---------------------------------------------------------------- errors -- */

/* The class of a failure: what the store's condition causes (the connection, the server
 * shutting down, out of disk or memory, read-only, a lock or serialization conflict) is
 * DB_FAULT_STORAGE, the rest (a constraint, a value) DB_FAULT_UNIT. */
static enum db_fault classify(PGconn *c, const PGresult *r)
{
    const char *s = r ? PQresultErrorField(r, PG_DIAG_SQLSTATE) : NULL;
    if (PQstatus(c) != CONNECTION_OK || !s)
        return DB_FAULT_STORAGE;
    if (strcmp(s, "GV001") == 0) /* governor_fenced */
        return DB_FAULT_FENCED;
    static const char *const storage[] = {"08", "53",    "57",    "58",   "40",
                                          "XX", "25006", "55P03", "55006"};
    for (size_t i = 0; i < sizeof storage / sizeof storage[0]; i++)
        if (strncmp(s, storage[i], strlen(storage[i])) == 0)
            return DB_FAULT_STORAGE;
    return DB_FAULT_UNIT;
}

/* Records a failure of r (NULL: of the connection) and returns its text, new. */
static char *failure(struct pg *p, const PGresult *r, const char *what)
{
    const char *m = r ? PQresultErrorMessage(r) : "";
    if (!m || !*m)
        m = PQerrorMessage(p->c);
    if (!m || !*m)
        m = "unknown error";
    size_t n = strlen(m);
    while (n && (m[n - 1] == '\n' || m[n - 1] == ' '))
        n--;
    p->err_code = DB_ERR_OWN | (int)classify(p->c, r);
    return xasprintf("%s%s%.*s", what ? what : "", what ? ": " : "", (int)n, m);
}

static int pg_errcode(const void *c)
{
    return ((const struct pg *)c)->err_code;
}

static enum db_fault pg_fault_of(int code)
{
    return code & DB_ERR_OWN ? (enum db_fault)(code & 0xff) : DB_FAULT_UNIT;
}

static const char *pg_errstr(int code)
{
    (void)code;
    return "PostgreSQL error";
}

/* ------------------------------------------------------------ statements -- */

/* Outside a transaction, a lost connection is reset (its prepared statements with it). */
static int alive(struct pg *p, char **errp)
{
    if (PQstatus(p->c) == CONNECTION_OK)
        return 0;
    if (p->in_tx) {
        *errp = failure(p, NULL, "connection lost");
        return -1;
    }
    PQreset(p->c);
    p->n_prepared = 0;
    if (PQstatus(p->c) != CONNECTION_OK) {
        *errp = failure(p, NULL, "reconnect");
        return -1;
    }
    log_msg(LOG_WARN, "db", "reconnected to PostgreSQL", NULL);
    return 0;
}

/* The cache slot of s (n_prepared: not prepared yet), or -1: run unnamed (DB_SQL_ONCE, or the
 * cache is full, which the fixed set of db.c's statements never fills). */
static int slot(const struct pg *p, const struct db_sql *s, char name[16])
{
    int i;
    for (i = 0; i < p->n_prepared && p->prepared[i] != s; i++)
        ;
    if ((s->flags & DB_SQL_ONCE) || i >= PG_CACHE)
        return -1;
    snprintf(name, 16, "s%d", i);
    return i;
}

/* A statement without parameters, not prepared (transaction control, the migrations). */
static int simple(struct pg *p, const char *sql, const char *what, char **errp)
{
    PGresult *r = PQexec(p->c, sql);
    ExecStatusType s = PQresultStatus(r);
    if (s != PGRES_COMMAND_OK && s != PGRES_TUPLES_OK) {
        *errp = failure(p, r, what);
        PQclear(r);
        return -1;
    }
    PQclear(r);
    return 0;
}

/* Runs s with a's parameters now: the result (rows or a command's), or NULL + *errp. */
static PGresult *run(struct pg *p, const struct db_sql *s, const struct par *a, char **errp)
{
    char name[16];
    PGresult *r;
    if (alive(p, errp) < 0)
        return NULL;
    int i = slot(p, s, name);
    if (i < 0 || i == p->n_prepared) {
        char *text = translate(s);
        if (i < 0) {
            r = PQexecParams(p->c, text, a->n, a->type, a->v, a->len, a->fmt, 0);
        } else {
            r = PQprepare(p->c, name, text, a->n, a->type);
            if (PQresultStatus(r) != PGRES_COMMAND_OK) {
                *errp = failure(p, r, "prepare");
                PQclear(r);
                free(text);
                return NULL;
            }
            PQclear(r);
            p->prepared[p->n_prepared++] = s;
        }
        free(text);
    }
    if (i >= 0)
        r = PQexecPrepared(p->c, name, a->n, a->v, a->len, a->fmt, 0);
    ExecStatusType st = PQresultStatus(r);
    if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) {
        *errp = failure(p, r, s->what);
        PQclear(r);
        return NULL;
    }
    return r;
}

static int64_t i64(const PGresult *r, int row, int col)
{
    return PQgetisnull(r, row, col) ? 0 : strtoll(PQgetvalue(r, row, col), NULL, 10);
}

/* A statement sent in the pipeline: its result is read in this order. */
static void pipe_note(struct pg *p, int64_t *out, enum take what, const char *label)
{
    if (p->n_sent == p->cap_sent) {
        p->cap_sent = p->cap_sent ? 2 * p->cap_sent : 256;
        p->sent = xrealloc(p->sent, (size_t)p->cap_sent * sizeof *p->sent);
    }
    p->sent[p->n_sent++] = (struct sent){out, what, label};
}

/* Sends s with a's parameters in the pipeline, its result noted for *out. -1 + *errp. */
static int pipe_send(struct pg *p, const struct db_sql *s, const struct par *a, int64_t *out,
                     char **errp)
{
    char name[16];
    int i = slot(p, s, name), ok;
    char *text = i < 0 || i == p->n_prepared ? translate(s) : NULL;
    if (i < 0) {
        ok = PQsendQueryParams(p->c, text, a->n, a->type, a->v, a->len, a->fmt, 0);
    } else {
        if (i == p->n_prepared) {
            if (!PQsendPrepare(p->c, name, text, a->n, a->type)) {
                free(text);
                *errp = failure(p, NULL, "prepare");
                return -1;
            }
            p->prepared[p->n_prepared++] = s;
            pipe_note(p, NULL, T_NONE, "prepare");
        }
        ok = PQsendQueryPrepared(p->c, name, a->n, a->v, a->len, a->fmt, 0);
    }
    free(text);
    if (!ok) {
        *errp = failure(p, NULL, s->what);
        return -1;
    }
    pipe_note(p, out, out ? T_OUT : T_NONE, s->what);
    return 0;
}

static int pg_send(void *c, const struct db_sql *s, const struct db_param *p, int n, int64_t *out,
                   char **errp)
{
    struct pg *g = c;
    struct par a;
    params(&a, p, n);
    if (g->pipe)
        return pipe_send(g, s, &a, out, errp);
    PGresult *r = run(g, s, &a, errp);
    if (!r)
        return -1;
    if (out && PQntuples(r) >= 1)
        *out = i64(r, 0, 0);
    int rows = (int)strtol(PQcmdTuples(r), NULL, 10);
    PQclear(r);
    return rows;
}

/*
 * Reads the results of every statement sent since the last sync, then the sync's. The first
 * failure is the pipeline's (*errp; the rest were skipped by the server). -1 + *errp.
 */
static int pipe_collect(struct pg *p, char **errp)
{
    int rc = 0;
    for (int k = 0; k < p->n_sent; k++) {
        struct sent *e = &p->sent[k];
        PGresult *r = PQgetResult(p->c);
        if (!r) {
            if (!rc)
                *errp = failure(p, NULL, e->label);
            rc = -1;
            break;
        }
        ExecStatusType st = PQresultStatus(r);
        if (st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK) {
            if (e->what == T_COMMIT && strcmp(PQcmdStatus(r), "COMMIT") != 0 && !rc) {
                p->err_code = DB_ERR_OWN | DB_FAULT_UNIT;
                *errp = xasprintf("commit: the transaction was rolled back");
                rc = -1;
            }
            if (e->what == T_OUT && PQntuples(r) == 1)
                *e->out = i64(r, 0, 0);
        } else if (st != PGRES_PIPELINE_ABORTED && !rc) {
            *errp = failure(p, r, e->label);
            rc = -1;
        }
        PQclear(r);
        while ((r = PQgetResult(p->c)) != NULL) /* the end of this statement's results */
            PQclear(r);
    }
    p->n_sent = 0;
    /* the sync */
    for (int guard = 0; guard < 4 && PQstatus(p->c) == CONNECTION_OK; guard++) {
        PGresult *r = PQgetResult(p->c);
        if (!r)
            continue;
        ExecStatusType st = PQresultStatus(r);
        PQclear(r);
        if (st == PGRES_PIPELINE_SYNC)
            return rc;
    }
    if (!rc)
        *errp = failure(p, NULL, "pipeline");
    return -1;
}

static int pg_flush(void *c, char **errp)
{
    struct pg *p = c;
    if (!p->pipe)
        return 0;
    if (!PQpipelineSync(p->c)) {
        *errp = failure(p, NULL, "pipeline");
        return -1;
    }
    return pipe_collect(p, errp);
}

/*
 * Ends the pipeline: the sync, the results left (their first failure is the pipeline's when
 * rc is 0; after a failure, the first one's class stays), pipeline mode left.
 */
static int pipe_end(struct pg *p, int rc, char **errp)
{
    int code = p->err_code;
    char *e = NULL;
    if (!PQpipelineSync(p->c))
        e = failure(p, NULL, "pipeline");
    else
        pipe_collect(p, &e);
    if (e && rc == 0) {
        *errp = e;
        e = NULL;
        rc = -1;
    } else if (rc < 0) {
        p->err_code = code;
    }
    free(e);
    p->pipe = false;
    p->n_sent = 0;
    if (!PQexitPipelineMode(p->c) && PQstatus(p->c) == CONNECTION_OK) {
        /* results left unread: the connection cannot be trusted, start it again */
        PQreset(p->c);
        p->n_prepared = 0;
    }
    if (rc < 0)
        p->pipe_failed = true;
    return rc;
}

/* ----------------------------------------------------------- transactions -- */

static int pg_begin(void *c, enum db_tx tx, char **errp)
{
    struct pg *p = c;
    char sql[64];
    if (tx != DB_TX_READ)
        p->err_code = 0;
    if (alive(p, errp) < 0)
        return -1;
    if (tx == DB_TX_PIPE) {
        if (!PQenterPipelineMode(p->c)) {
            *errp = failure(p, NULL, "pipeline");
            return -1;
        }
        p->pipe = p->in_tx = true;
        p->n_sent = 0;
        if (!PQsendQueryParams(p->c, "BEGIN", 0, NULL, NULL, NULL, NULL, 0)) {
            *errp = failure(p, NULL, "begin");
            return -1;
        }
        pipe_note(p, NULL, T_NONE, "begin");
        return 0;
    }
    if (simple(p, tx == DB_TX_READ ? "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY" : "BEGIN",
               "begin", errp) < 0)
        return -1;
    p->in_tx = true;
    snprintf(sql, sizeof sql, "SET LOCAL lock_timeout = %d", p->lock_ms > 0 ? p->lock_ms : 1);
    return tx == DB_TX_WRITE && p->lock_ms >= 0 ? simple(p, sql, "lock timeout", errp) : 0;
}

static int pg_commit(void *c, char **errp)
{
    struct pg *p = c;
    if (p->pipe) {
        int rc = 0;
        if (!PQsendQueryParams(p->c, "COMMIT", 0, NULL, NULL, NULL, NULL, 0)) {
            *errp = failure(p, NULL, "commit");
            rc = -1;
        } else {
            pipe_note(p, NULL, T_COMMIT, "commit");
        }
        if (pipe_end(p, rc, errp) < 0)
            return -1;
        p->in_tx = false;
        return 0;
    }
    PGresult *r = PQexec(p->c, "COMMIT");
    int rc = 0;
    p->in_tx = false;
    if (PQresultStatus(r) != PGRES_COMMAND_OK) {
        *errp = failure(p, r, "commit");
        rc = -1;
    } else if (strcmp(PQcmdStatus(r), "COMMIT") != 0) {
        /* an aborted transaction's COMMIT answers ROLLBACK */
        p->err_code = DB_ERR_OWN | DB_FAULT_UNIT;
        *errp = xasprintf("commit: the transaction was rolled back");
        rc = -1;
    }
    PQclear(r);
    return rc;
}

static void pg_rollback(void *c)
{
    struct pg *p = c;
    if (p->pipe)
        pipe_end(p, -1, NULL);
    if (PQstatus(p->c) == CONNECTION_OK && PQtransactionStatus(p->c) != PQTRANS_IDLE)
        PQclear(PQexec(p->c, "ROLLBACK"));
    p->in_tx = false;
    if (p->pipe_failed) {
        /* a statement prepared in a failed pipeline may not exist */
        PQclear(PQexec(p->c, "DEALLOCATE ALL"));
        p->n_prepared = 0;
        p->pipe_failed = false;
    }
}

static void pg_lock_wait(void *c, int ms)
{
    ((struct pg *)c)->lock_ms = ms;
}

/* One replica at a time deletes (the retention leader): the batch of a replica that does not
 * get this lock, held until its transaction ends, deletes nothing and waits for its next
 * turn. Not a per-job lock: one for the whole store. */
static const struct db_sql SQL_LEADER = {
    "SELECT pg_try_advisory_xact_lock(" PG_LOCK_RETENTION_S ")", NULL, "retention lock", 0};

static int pg_leader(void *c, char **errp)
{
    struct pg *p = c;
    struct par a = {0};
    PGresult *r = run(p, &SQL_LEADER, &a, errp);
    if (!r)
        return -1;
    int leader = PQntuples(r) == 1 && strcmp(PQgetvalue(r, 0, 0), "t") == 0;
    PQclear(r);
    return leader;
}

/* ---------------------------------------------------------------- cursor -- */

static int pg_query(void *c, const struct db_sql *s, const struct db_param *p, int n,
                    struct db_cur *cur, char **errp)
{
    struct par a;
    params(&a, p, n);
    memset(cur, 0, sizeof *cur);
    cur->be = &store_pg;
    cur->conn = c;
    cur->s = s;
    cur->row = -1;
    if (!(cur->h = run(c, s, &a, errp)))
        return -1;
    cur->n = PQntuples(cur->h);
    return 0;
}

static bool pg_next(struct db_cur *cur)
{
    return ++cur->row < cur->n;
}

static int pg_done(struct db_cur *cur, char **errp)
{
    (void)cur;
    (void)errp;
    return 0; /* every row was read with the result */
}

static void pg_end(struct db_cur *cur)
{
    PQclear(cur->h);
    PQfreemem(cur->buf);
    cur->h = cur->buf = NULL;
}

static int pg_ncols(const struct db_cur *cur)
{
    return PQnfields(cur->h);
}

static const char *pg_colname(const struct db_cur *cur, int i)
{
    return PQfname(cur->h, i);
}

static enum db_kind pg_kind(const struct db_cur *cur, int i)
{
    if (PQgetisnull(cur->h, cur->row, i))
        return DB_KNULL;
    switch (PQftype(cur->h, i)) {
    case 20: /* int8 */
    case 21: /* int2 */
    case 23: /* int4 */
        return DB_KINT;
    case 700:  /* float4 */
    case 701:  /* float8 */
    case 1700: /* numeric */
        return DB_KREAL;
    case PG_BYTEAOID:
        return DB_KBLOB;
    default:
        return DB_KTEXT;
    }
}

static int64_t pg_i64(const struct db_cur *cur, int i)
{
    return i64(cur->h, cur->row, i);
}

static double pg_f64(const struct db_cur *cur, int i)
{
    if (PQgetisnull(cur->h, cur->row, i))
        return NAN;
    return strtod(PQgetvalue(cur->h, cur->row, i), NULL);
}

static const char *pg_text(const struct db_cur *cur, int i)
{
    return PQgetisnull(cur->h, cur->row, i) ? NULL : PQgetvalue(cur->h, cur->row, i);
}

static const void *pg_blob(struct db_cur *cur, int i, size_t *n)
{
    PQfreemem(cur->buf);
    cur->buf = NULL;
    *n = 0;
    if (PQgetisnull(cur->h, cur->row, i))
        return NULL;
    cur->buf = PQunescapeBytea((const unsigned char *)PQgetvalue(cur->h, cur->row, i), n);
    return cur->buf;
}

/* ------------------------------------------------------------------- open -- */

static void notice_drop(void *arg, const char *message)
{
    (void)arg;
    (void)message;
}

static int pg_version(void *c)
{
    struct pg *p = c;
    PGresult *r = PQexec(p->c, "SELECT max(version) FROM schema_version");
    int v = PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1 ? (int)i64(r, 0, 0) : -1;
    PQclear(r);
    return v;
}

static int pg_script(void *c, const char *sql, char **errp)
{
    return simple(c, sql, NULL, errp);
}

/* Applies every migration newer than schema_version, in one transaction under the lock. */
static int migrate(struct pg *p, char **errp)
{
    char *e = NULL, sql[96];
    if (simple(p, "BEGIN", NULL, &e) < 0)
        goto fail;
    snprintf(sql, sizeof sql, "SELECT pg_advisory_xact_lock(%d)", PG_LOCK_MIGRATE);
    if (simple(p, sql, "lock", &e) < 0 ||
        simple(p, "CREATE TABLE IF NOT EXISTS schema_version (version BIGINT NOT NULL)",
               "schema_version", &e) < 0)
        goto fail;
    int have = pg_version(p);
    if (have < 0) {
        e = failure(p, NULL, "schema_version");
        goto fail;
    }
    for (int i = 0; i < pg_n_migrations; i++) {
        const struct db_migration *m = &pg_migrations[i];
        if (m->version <= have)
            continue;
        if (simple(p, m->sql, m->name, &e) < 0)
            goto fail;
        snprintf(sql, sizeof sql,
                 "DELETE FROM schema_version; INSERT INTO schema_version VALUES (%d)", m->version);
        if (simple(p, sql, "schema_version", &e) < 0)
            goto fail;
        log_msg(LOG_INFO, "db", "migrated", "migration=pg/%s version=%d", m->name, m->version);
    }
    if (simple(p, "COMMIT", "commit", &e) < 0)
        goto fail;
    return 0;
fail:
    *errp = xasprintf("migration: %s", e);
    free(e);
    PQclear(PQexec(p->c, "ROLLBACK"));
    return -1;
}

static void pg_close(void *c)
{
    struct pg *p = c;
    if (!p)
        return;
    free(p->sent);
    PQfinish(p->c);
    free(p);
}

/* The database at url; read_only: every transaction read-only, no migration. */
static void *pg_open(const char *url, bool read_only, const char *synchronous, char **errp)
{
    (void)synchronous; /* SQLite's */
    struct pg *p = xcalloc(1, sizeof *p);
    p->read_only = read_only;
    p->lock_ms = -1;
    p->c = PQconnectdb(url);
    if (!p->c || PQstatus(p->c) != CONNECTION_OK) {
        const char *m = p->c ? PQerrorMessage(p->c) : "out of memory";
        size_t n = strlen(m);
        while (n && m[n - 1] == '\n')
            n--;
        *errp = xasprintf("PostgreSQL: %.*s", (int)n, m);
        goto fail;
    }
    PQsetNoticeProcessor(p->c, notice_drop, NULL);
    if (read_only && simple(p, "SET default_transaction_read_only = on", "read-only", errp) < 0)
        goto fail;
    if (!read_only && migrate(p, errp) < 0)
        goto fail;
    return p;
fail:
    pg_close(p);
    return NULL;
}

const struct store_backend store_pg = {
    .name = "postgresql",
    .pipelines = true,
    .compact_since = 0,
    .open = pg_open,
    .close = pg_close,
    .version = pg_version,
    .script = pg_script,
    .begin = pg_begin,
    .commit = pg_commit,
    .rollback = pg_rollback,
    .send = pg_send,
    .flush = pg_flush,
    .query = pg_query,
    .next = pg_next,
    .done = pg_done,
    .end = pg_end,
    .ncols = pg_ncols,
    .colname = pg_colname,
    .kind = pg_kind,
    .i64 = pg_i64,
    .f64 = pg_f64,
    .text = pg_text,
    .blob = pg_blob,
    .errcode = pg_errcode,
    .fault_of = pg_fault_of,
    .errstr = pg_errstr,
    .lock_wait = pg_lock_wait,
    .leader = pg_leader,
};
