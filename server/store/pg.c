/*
 * pg.c - the store on PostgreSQL (see pg.h). The SQL mirrors db.c's statement for statement
 * with $n placeholders; the JSON of the reads is built member for member as db.c builds it.
 */
#include <inttypes.h>
#include <libpq-fe.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/jarena.h"
#include "base/log.h"
#include "base/xmem.h"
#include "core/core.h"
#include "store/pack.h"
#include "store/pg.h"

#define PG_CACHE  64
#define PG_PARAMS 16
/* PostgreSQL's type oid of bigint (catalog/pg_type.h, stable). */
#define PG_INT8OID 20

struct pg {
    PGconn *c;
    bool read_only;
    bool in_tx;
    int err_code;                   /* DB_ERR_OWN | enum db_fault of the last failure (0: none) */
    const char *prepared[PG_CACHE]; /* statement "s<i>" is prepared[i] */
    int n_prepared;
    /* pg_write_group: statements are being sent in a pipeline, their results read after;
     * what each one's result gives (a unit's decision id or version, the commit) */
    bool pipe;
    struct sent {
        struct db_write *w;
        int what; /* enum take */
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
    char num[PG_PARAMS][24];
};

static void p_text(struct par *a, const char *s)
{
    a->v[a->n] = s;
    a->len[a->n] = 0;
    a->fmt[a->n++] = 0;
}

static void p_int(struct par *a, int64_t x)
{
    snprintf(a->num[a->n], sizeof a->num[a->n], "%" PRId64, x);
    p_text(a, a->num[a->n]);
}

static void p_bytes(struct par *a, const void *b, size_t n)
{
    a->v[a->n] = b ? (const char *)b : "";
    a->len[a->n] = (int)n;
    a->fmt[a->n++] = 1;
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

int pg_last_errcode(const struct pg *p)
{
    return p->err_code;
}

/* -------------------------------------------------------------- statements -- */

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

/*
 * Runs sql (a static literal, prepared on its first use on this connection) with a's
 * parameters: the result (rows or a command's), or NULL + *errp.
 */
static PGresult *run(struct pg *p, const char *sql, const struct par *a, const char *what,
                     char **errp)
{
    char name[16];
    int i;
    if (alive(p, errp) < 0)
        return NULL;
    for (i = 0; i < p->n_prepared && p->prepared[i] != sql; i++)
        ;
    snprintf(name, sizeof name, "s%d", i);
    PGresult *r;
    if (i == p->n_prepared && i >= PG_CACHE) {
        /* Cannot happen with the fixed set below; an unnamed statement keeps it working. */
        r = PQexecParams(p->c, sql, a ? a->n : 0, NULL, a ? a->v : NULL, a ? a->len : NULL,
                         a ? a->fmt : NULL, 0);
    } else {
        if (i == p->n_prepared) {
            r = PQprepare(p->c, name, sql, 0, NULL);
            if (PQresultStatus(r) != PGRES_COMMAND_OK) {
                *errp = failure(p, r, "prepare");
                PQclear(r);
                return NULL;
            }
            PQclear(r);
            p->prepared[p->n_prepared++] = sql;
        }
        r = PQexecPrepared(p->c, name, a ? a->n : 0, a ? a->v : NULL, a ? a->len : NULL,
                           a ? a->fmt : NULL, 0);
    }
    ExecStatusType s = PQresultStatus(r);
    if (s != PGRES_COMMAND_OK && s != PGRES_TUPLES_OK) {
        *errp = failure(p, r, what);
        PQclear(r);
        return NULL;
    }
    return r;
}

/* run for a statement whose result is not read. -1 + *errp. */
static int exec(struct pg *p, const char *sql, const struct par *a, const char *what, char **errp)
{
    PGresult *r = run(p, sql, a, what, errp);
    PQclear(r);
    return r ? 0 : -1;
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

static const char *txt(const PGresult *r, int row, int col)
{
    return PQgetisnull(r, row, col) ? NULL : PQgetvalue(r, row, col);
}

static int64_t i64(const PGresult *r, int row, int col)
{
    return PQgetisnull(r, row, col) ? 0 : strtoll(PQgetvalue(r, row, col), NULL, 10);
}

/* new (PQfreemem): a bytea column's bytes, *n of them; NULL when the value is NULL. */
static unsigned char *bytes(const PGresult *r, int row, int col, size_t *n)
{
    *n = 0;
    if (PQgetisnull(r, row, col))
        return NULL;
    return PQunescapeBytea((const unsigned char *)PQgetvalue(r, row, col), n);
}

/* ------------------------------------------------------------------- open -- */

static void notice_drop(void *arg, const char *message)
{
    (void)arg;
    (void)message;
}

int pg_user_version(struct pg *p)
{
    PGresult *r = PQexec(p->c, "SELECT max(version) FROM schema_version");
    int v = PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1 ? (int)i64(r, 0, 0) : -1;
    PQclear(r);
    return v;
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
    int have = pg_user_version(p);
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

struct pg *pg_open(const char *url, bool read_only, char **errp)
{
    struct pg *p = xcalloc(1, sizeof *p);
    p->read_only = read_only;
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

void pg_close(struct pg *p)
{
    if (!p)
        return;
    free(p->sent);
    PQfinish(p->c);
    free(p);
}

int pg_read_begin(struct pg *p, char **errp)
{
    if (alive(p, errp) < 0 ||
        simple(p, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", "begin", errp) < 0)
        return -1;
    p->in_tx = true;
    return 0;
}

void pg_read_end(struct pg *p)
{
    PQclear(PQexec(p->c, "COMMIT"));
    p->in_tx = false;
}

/* ---------------------------------------------------------------- writes -- */

int pg_begin(struct pg *p, char **errp)
{
    p->err_code = 0;
    if (alive(p, errp) < 0 || simple(p, "BEGIN", "begin", errp) < 0)
        return -1;
    p->in_tx = true;
    return 0;
}

int pg_commit(struct pg *p, char **errp)
{
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

void pg_rollback(struct pg *p)
{
    if (PQstatus(p->c) == CONNECTION_OK && PQtransactionStatus(p->c) != PQTRANS_IDLE)
        PQclear(PQexec(p->c, "ROLLBACK"));
    p->in_tx = false;
}

static const char SQL_PROBE[] = "INSERT INTO store_probe (id, at) VALUES (1, $1) "
                                "ON CONFLICT (id) DO UPDATE SET at = excluded.at";

int pg_probe(struct pg *p, int64_t now, int busy_ms, char **errp)
{
    struct par a = {0};
    char sql[64];
    int rc = -1;
    if (pg_begin(p, errp) < 0)
        goto out;
    snprintf(sql, sizeof sql, "SET LOCAL lock_timeout = %d", busy_ms > 0 ? busy_ms : 1);
    if (simple(p, sql, "probe", errp) < 0)
        goto out;
    p_int(&a, now);
    if (exec(p, SQL_PROBE, &a, "probe", errp) < 0)
        goto out;
    rc = pg_commit(p, errp);
out:
    if (rc < 0)
        pg_rollback(p);
    return rc;
}

/*
 * The statements of the write units. A unit's statements depend on no result of one before
 * them (the decision's options find or add their decision_configs row inside its INSERT, its
 * rows take its id from currval), so a group can be sent as one pipeline (pg_write_group).
 * The job's row is each unit's first statement; a fenced one raises GV001 (governor_fenced),
 * which aborts the transaction. Its three forms: the version not checked; checked to be 0 (the
 * row may not exist yet); checked to be $n.
 */
#define FENCE(u)                                                                                   \
    "SELECT version FROM " u " UNION ALL SELECT governor_fenced($1) "                              \
    "WHERE NOT EXISTS (SELECT 1 FROM " u ")"
/* The state: $1 job, $2 now, $3 state, $4 last_at, $5 the unit's generation, $6 the version. */
static const char SQL_STATE_ANY[] =
    "INSERT INTO jobs (job, created_at, state_bin, last_at, version, generation) "
    "VALUES ($1, $2, $3, $4, 1, $5) "
    "ON CONFLICT (job) DO UPDATE SET state_bin = excluded.state_bin, last_at = excluded.last_at, "
    "version = jobs.version + 1 RETURNING version";
static const char SQL_STATE_V0[] =
    "WITH u AS (INSERT INTO jobs (job, created_at, state_bin, last_at, version, generation) "
    "VALUES ($1, $2, $3, $4, 1, $5) ON CONFLICT (job) DO UPDATE SET state_bin = "
    "excluded.state_bin, last_at = excluded.last_at, version = jobs.version + 1, "
    "generation = excluded.generation WHERE jobs.version = $6 RETURNING version) " FENCE("u");
static const char SQL_STATE_V[] =
    "WITH u AS (UPDATE jobs SET state_bin = $3, last_at = $4, version = version + 1 "
    "WHERE job = $1 AND generation = $5 AND version = $6 AND $2::bigint IS NOT NULL "
    "RETURNING version) " FENCE("u");
/* The config: $1 job, $2 now, $3 layer, $4 the unit's generation, $5 the version. */
static const char SQL_CONFIG_ANY[] =
    "INSERT INTO jobs (job, created_at, config_json, version, generation) "
    "VALUES ($1, $2, $3, 1, $4) ON CONFLICT (job) DO UPDATE SET config_json = "
    "excluded.config_json, version = jobs.version + 1 RETURNING version";
static const char SQL_CONFIG_V0[] =
    "WITH u AS (INSERT INTO jobs (job, created_at, config_json, version, generation) "
    "VALUES ($1, $2, $3, 1, $4) ON CONFLICT (job) DO UPDATE SET config_json = "
    "excluded.config_json, version = jobs.version + 1, generation = excluded.generation "
    "WHERE jobs.version = $5 RETURNING version) " FENCE("u");
static const char SQL_CONFIG_V[] =
    "WITH u AS (UPDATE jobs SET config_json = $3, version = version + 1 "
    "WHERE job = $1 AND generation = $4 AND version = $5 AND $2::bigint IS NOT NULL "
    "RETURNING version) " FENCE("u");
static const char SQL_JOB_DELETE[] = "DELETE FROM jobs WHERE job = $1";
/* No row is version 0; the EXISTS sees the row as it was before the statement. */
static const char SQL_JOB_DELETE_V[] =
    "WITH d AS (DELETE FROM jobs WHERE job = $1 AND version = $2 AND generation = $3 "
    "RETURNING 1) SELECT governor_fenced($1) WHERE NOT EXISTS (SELECT 1 FROM d) "
    "AND ($2 > 0 OR EXISTS (SELECT 1 FROM jobs WHERE job = $1))";

static const char SQL_CONFIG_CHANGE[] =
    "INSERT INTO config_changes (job, at, config_json, after_decision) "
    "VALUES ($1, $2, $3, (SELECT max(id) FROM decisions))";
/* $8, $14: the options' hash and text (the first row of both, or a new one). */
static const char SQL_DECISION[] =
    "WITH f AS (SELECT id FROM decision_configs WHERE hash = $8 AND config_json = $14 "
    "ORDER BY id LIMIT 1), "
    "n AS (INSERT INTO decision_configs (hash, config_json) SELECT $8, $14 "
    "WHERE NOT EXISTS (SELECT 1 FROM f) RETURNING id) "
    "INSERT INTO decisions (job, at, action, reason, execute, message, input, config_id, "
    "response, policy_revision, created_at, message_parts, decision_json) "
    "VALUES ($1, $2, $3, $4, $5, $6, $7, (SELECT id FROM f UNION ALL SELECT id FROM n), "
    "$9, $10, $11, $12, $13) RETURNING id";
#define DECISION_ID "currval(pg_get_serial_sequence('decisions', 'id'))"
static const char SQL_VERTEX[] =
    "INSERT INTO vertex_decisions (decision_id, ord, vertex, current, raw_target, target, "
    "reason, constraints, message, flags, figures, evaluated_json) "
    "VALUES (" DECISION_ID ", $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)";
static const char SQL_EVENT[] =
    "INSERT INTO events (job, decision_id, at, type, reason, message, count, suppressed) "
    "VALUES ($1, " DECISION_ID ", $2, $3, $4, $5, $6, $7)";
static const char SQL_EVENT_LOOSE[] =
    "INSERT INTO events (job, decision_id, at, type, reason, message, count, suppressed) "
    "VALUES ($1, NULL, $2, $3, $4, $5, $6, $7)";
static const char SQL_PLUGIN_CALL[] =
    "INSERT INTO plugin_calls (decision_id, plugin, hook, outcome, duration_us, error) "
    "VALUES (" DECISION_ID ", $1, $2, $3, $4, $5)";
static const char SQL_REVISION[] =
    "INSERT INTO policy_revisions (revision, loaded_at, files_json) VALUES ($1, $2, $3) "
    "ON CONFLICT (revision) DO NOTHING";
static const char SQL_WINDOW_DROP[] = "DELETE FROM job_window WHERE job = $1 AND seq < $2";
static const char SQL_WINDOW_ADD[] =
    "INSERT INTO job_window (job, seq, sample) VALUES ($1, $2, $3) "
    "ON CONFLICT (job, seq) DO UPDATE SET sample = excluded.sample";
static const char SQL_WINDOW_FORGET[] = "DELETE FROM job_window WHERE job = $1";
static const char SQL_WINDOW_READ[] =
    "SELECT seq, sample FROM job_window WHERE job = $1 AND seq >= $2 ORDER BY seq";

/* What a statement's result gives its unit. */
enum take { T_NONE, T_ID, T_VERSION, T_COMMIT };

/* A statement sent in the pipeline: its result is read in this order. */
static void pipe_note(struct pg *p, struct db_write *w, enum take what, const char *label)
{
    if (p->n_sent == p->cap_sent) {
        p->cap_sent = p->cap_sent ? 2 * p->cap_sent : 256;
        p->sent = xrealloc(p->sent, (size_t)p->cap_sent * sizeof *p->sent);
    }
    p->sent[p->n_sent++] = (struct sent){w, what, label};
}

static void take(struct db_write *w, enum take what, const PGresult *r)
{
    if (w && what == T_ID && PQntuples(r) == 1)
        w->decision_id = i64(r, 0, 0);
    else if (w && what == T_VERSION && PQntuples(r) == 1)
        w->new_version = i64(r, 0, 0);
}

/*
 * Runs a write statement of unit w (sql a static literal, prepared once), or in a pipeline
 * (p->pipe) sends it and notes what its result gives. -1 + *errp.
 */
static int send(struct pg *p, const char *sql, const struct par *a, struct db_write *w,
                enum take what, const char *label, char **errp)
{
    if (!p->pipe) {
        PGresult *r = run(p, sql, a, label, errp);
        if (!r)
            return -1;
        take(w, what, r);
        PQclear(r);
        return 0;
    }
    char name[16];
    int i;
    for (i = 0; i < p->n_prepared && p->prepared[i] != sql; i++)
        ;
    snprintf(name, sizeof name, "s%d", i);
    int ok;
    if (i == p->n_prepared && i >= PG_CACHE) {
        ok = PQsendQueryParams(p->c, sql, a ? a->n : 0, NULL, a ? a->v : NULL, a ? a->len : NULL,
                               a ? a->fmt : NULL, 0);
    } else {
        if (i == p->n_prepared) {
            if (!PQsendPrepare(p->c, name, sql, 0, NULL)) {
                *errp = failure(p, NULL, "prepare");
                return -1;
            }
            p->prepared[p->n_prepared++] = sql;
            pipe_note(p, NULL, T_NONE, "prepare");
        }
        ok = PQsendQueryPrepared(p->c, name, a ? a->n : 0, a ? a->v : NULL, a ? a->len : NULL,
                                 a ? a->fmt : NULL, 0);
    }
    if (!ok) {
        *errp = failure(p, NULL, label);
        return -1;
    }
    pipe_note(p, w, what, label);
    return 0;
}

static int apply_window(struct pg *p, struct db_write *w, char **errp)
{
    struct par a = {0};
    p_text(&a, w->job);
    p_int(&a, w->window_seq0);
    if (send(p, SQL_WINDOW_DROP, &a, w, T_NONE, "drop window samples", errp) < 0)
        return -1;
    for (int i = 0; i < w->n_ws; i++) {
        struct par b = {0};
        p_text(&b, w->job);
        p_int(&b, w->ws[i].seq);
        p_bytes(&b, w->ws[i].blob, w->ws[i].len);
        if (send(p, SQL_WINDOW_ADD, &b, w, T_NONE, "add a window sample", errp) < 0)
            return -1;
    }
    return 0;
}

/* The events rows of w: of its decision (the one just inserted), or of none. */
static int insert_events(struct pg *p, struct db_write *w, bool of_decision, char **errp)
{
    for (int i = 0; i < w->n_e; i++) {
        const struct db_erow *e = &w->e[i];
        struct par a = {0};
        p_text(&a, w->job);
        p_int(&a, w->at);
        p_text(&a, e->type);
        p_text(&a, e->reason);
        p_text(&a, e->message);
        p_int(&a, e->count);
        p_int(&a, e->suppressed);
        if (send(p, of_decision ? SQL_EVENT : SQL_EVENT_LOOSE, &a, w, T_NONE, "insert event",
                 errp) < 0)
            return -1;
    }
    return 0;
}

static int apply_policy(struct pg *p, struct db_write *w, char **errp)
{
    if (w->revision) {
        struct par a = {0};
        p_text(&a, w->revision);
        p_int(&a, w->loaded_at);
        p_text(&a, w->files_json ? w->files_json : "{}");
        if (send(p, SQL_REVISION, &a, w, T_NONE, "insert policy revision", errp) < 0)
            return -1;
    }
    return insert_events(p, w, false, errp);
}

/* As db.c's message_parts: the vertices whose messages end the decision's message. */
static int64_t message_parts(const struct db_write *w, size_t *head_len)
{
    const char *m = w->message;
    size_t pos = m ? strlen(m) : 0;
    int64_t parts = 0;
    for (int i = (w->n_v < 62 ? w->n_v : 62) - 1; i >= 0 && m; i--) {
        const char *vm = w->v[i].message;
        size_t n = vm ? strlen(vm) : 0, sep = parts ? 2 : 0;
        if (n == 0 || n + sep > pos || memcmp(m + pos - n - sep, vm, n) != 0 ||
            (sep && memcmp(m + pos - sep, "; ", 2) != 0))
            continue;
        parts |= (int64_t)1 << i;
        pos -= n + sep;
    }
    *head_len = pos;
    return parts;
}

/*
 * The jobs row of w: any/v0/v are the statement's three forms (see above), a its parameters
 * but the generation and the version, appended here. Sets w->new_version.
 */
static int job_row(struct pg *p, struct db_write *w, const char *any, const char *v0, const char *v,
                   struct par *a, char **errp)
{
    const char *sql = w->expect_version < 0 ? any : w->expect_version == 0 ? v0 : v;
    p_int(a, w->expect_generation);
    if (w->expect_version >= 0)
        p_int(a, w->expect_version);
    return send(p, sql, a, w, T_VERSION, "update job", errp);
}

/* The jobs row of a decision first: a fenced unit writes nothing else. */
static int decision_job(struct pg *p, struct db_write *w, char **errp)
{
    struct par a = {0};
    p_text(&a, w->job);
    p_int(&a, w->now);
    if (w->state_bin)
        p_bytes(&a, w->state_bin, w->state_bin_len);
    else
        p_text(&a, NULL);
    if (w->last_at == INT64_MIN)
        p_text(&a, NULL);
    else
        p_int(&a, w->last_at);
    return job_row(p, w, SQL_STATE_ANY, SQL_STATE_V0, SQL_STATE_V, &a, errp);
}

static int insert_vertices(struct pg *p, struct db_write *w, char **errp)
{
    for (int i = 0; i < w->n_v; i++) {
        const struct db_vrow *v = &w->v[i];
        char *figures = pack_figures(v->evaluated_json);
        struct par a = {0};
        p_int(&a, i);
        p_text(&a, v->vertex);
        p_int(&a, v->current);
        p_int(&a, v->raw_target);
        p_int(&a, v->target);
        p_text(&a, v->reason);
        p_text(&a, v->constraints);
        p_text(&a, v->message);
        p_int(&a, (v->excluded ? 1 : 0) | (v->outside_bounds ? 2 : 0));
        p_text(&a, figures);
        p_text(&a, figures ? NULL : v->evaluated_json ? v->evaluated_json : "{}");
        int rc = send(p, SQL_VERTEX, &a, w, T_NONE, "insert vertex_decisions", errp);
        free(figures);
        if (rc < 0)
            return -1;
    }
    return 0;
}

static int apply_decision(struct pg *p, struct db_write *w, char **errp)
{
    unsigned char *input;
    size_t input_len, head;
    char *msg = NULL;
    if (decision_job(p, w, errp) < 0)
        return -1;
    const char *in = w->input_json ? w->input_json : "";
    pack_input(in, strlen(in), &input, &input_len);
    int64_t parts = message_parts(w, &head);
    struct par a = {0};
    p_text(&a, w->job);
    p_int(&a, w->at);
    p_text(&a, w->action);
    p_text(&a, w->reason);
    p_int(&a, w->execute);
    if (parts) {
        msg = xmalloc(head + 1);
        memcpy(msg, w->message, head);
        msg[head] = '\0';
        p_text(&a, msg);
    } else {
        p_text(&a, w->message);
    }
    p_bytes(&a, input, input_len);
    p_text(&a, w->config_hash ? w->config_hash : "");
    p_text(&a, w->response_json);
    p_text(&a, w->policy_revision);
    p_int(&a, w->now);
    if (parts)
        p_int(&a, parts);
    else
        p_text(&a, NULL);
    p_text(&a, w->keep_response ? w->decision_json : NULL);
    p_text(&a, w->config_json ? w->config_json : "{}");
    int rc = send(p, SQL_DECISION, &a, w, T_ID, "insert decision", errp);
    free(input);
    free(msg);
    if (rc < 0 || insert_vertices(p, w, errp) < 0 || insert_events(p, w, true, errp) < 0)
        return -1;
    for (int i = 0; i < w->n_p; i++) {
        const struct db_prow *c = &w->p[i];
        struct par b = {0};
        p_text(&b, c->plugin);
        p_text(&b, c->hook);
        p_text(&b, c->outcome);
        p_int(&b, c->duration_us);
        p_text(&b, c->error);
        if (send(p, SQL_PLUGIN_CALL, &b, w, T_NONE, "insert plugin call", errp) < 0)
            return -1;
    }
    return apply_window(p, w, errp);
}

static int apply_config(struct pg *p, struct db_write *w, const char *layer, char **errp)
{
    struct par a = {0};
    p_text(&a, w->job);
    if (w->kind == DB_W_JOB_CONFIG) {
        p_int(&a, w->now);
        p_text(&a, layer);
        if (job_row(p, w, SQL_CONFIG_ANY, SQL_CONFIG_V0, SQL_CONFIG_V, &a, errp) < 0)
            return -1;
    } else {
        w->new_version = 0;
        if (w->expect_version >= 0) {
            p_int(&a, w->expect_version);
            p_int(&a, w->expect_generation);
        }
        struct par b = {0};
        p_text(&b, w->job);
        if (send(p, w->expect_version >= 0 ? SQL_JOB_DELETE_V : SQL_JOB_DELETE, &a, w, T_NONE,
                 "delete job", errp) < 0 ||
            send(p, SQL_WINDOW_FORGET, &b, w, T_NONE, "delete job window", errp) < 0)
            return -1;
    }
    struct par c = {0};
    p_text(&c, w->job);
    p_int(&c, w->now);
    p_text(&c, layer);
    return send(p, SQL_CONFIG_CHANGE, &c, w, T_NONE, "insert config_changes", errp);
}

/* Retention, as db.c's (the old rows are a prefix of each table by id). */
static const char SQL_RET_DECISIONS[] = "SELECT id, created_at FROM decisions ORDER BY id LIMIT $1";
static const char SQL_RET_VERTEX[] = "DELETE FROM vertex_decisions WHERE decision_id <= $1";
static const char SQL_RET_EVENTS[] = "DELETE FROM events WHERE decision_id <= $1";
static const char SQL_RET_EVENTS_LOOSE[] =
    "DELETE FROM events WHERE decision_id IS NULL AND at < $1";
static const char SQL_RET_PLUGIN[] = "DELETE FROM plugin_calls WHERE decision_id <= $1";
static const char SQL_RET_CONFIGS[] =
    "DELETE FROM decision_configs WHERE id IN (SELECT config_id FROM decisions WHERE id <= $1) "
    "AND NOT EXISTS (SELECT 1 FROM decisions n WHERE n.config_id = decision_configs.id "
    "AND n.id > $1)";
static const char SQL_RET_DECISION[] = "DELETE FROM decisions WHERE id <= $1";
static const char SQL_RET_CHANGES[] = "SELECT id, at FROM config_changes ORDER BY id LIMIT $1";
static const char SQL_RET_CHANGE[] = "DELETE FROM config_changes WHERE id <= $1";

static int old_prefix(struct pg *p, const char *sql, struct db_write *w, int64_t *last, int *n,
                      char **errp)
{
    struct par a = {0};
    *last = INT64_MIN;
    *n = 0;
    p_int(&a, w->batch);
    PGresult *r = run(p, sql, &a, "retention", errp);
    if (!r)
        return -1;
    for (int i = 0; i < PQntuples(r) && i64(r, i, 1) < w->cutoff; i++) {
        *last = i64(r, i, 0);
        (*n)++;
    }
    PQclear(r);
    return 0;
}

/* A retention DELETE of the rows up to id: the number deleted, or -1 + *errp. */
static int64_t delete_upto(struct pg *p, const char *sql, int64_t id, char **errp)
{
    struct par a = {0};
    p_int(&a, id);
    PGresult *r = run(p, sql, &a, "retention delete", errp);
    if (!r)
        return -1;
    int64_t n = strtoll(PQcmdTuples(r), NULL, 10);
    PQclear(r);
    return n;
}

/* One replica at a time deletes (the retention leader): the batch of a replica that does not
 * get this lock, held until its transaction ends, deletes nothing and waits for its next
 * turn. Not a per-job lock: one for the whole store. */
static const char SQL_RET_LEADER[] = "SELECT pg_try_advisory_xact_lock(" PG_LOCK_RETENTION_S ")";

static int apply_retention(struct pg *p, struct db_write *w, char **errp)
{
    int64_t last;
    int n, m;
    w->deleted = 0;
    w->more = false;
    if (w->batch <= 0)
        w->batch = 500;
    PGresult *r = run(p, SQL_RET_LEADER, &(struct par){0}, "retention lock", errp);
    if (!r)
        return -1;
    bool leader = PQntuples(r) == 1 && strcmp(PQgetvalue(r, 0, 0), "t") == 0;
    PQclear(r);
    if (!leader)
        return 0;
    if (old_prefix(p, SQL_RET_DECISIONS, w, &last, &n, errp) < 0)
        return -1;
    if (n > 0) {
        if (delete_upto(p, SQL_RET_VERTEX, last, errp) < 0 ||
            delete_upto(p, SQL_RET_EVENTS, last, errp) < 0 ||
            delete_upto(p, SQL_RET_PLUGIN, last, errp) < 0 ||
            delete_upto(p, SQL_RET_CONFIGS, last, errp) < 0)
            return -1;
        if (delete_upto(p, SQL_RET_DECISION, last, errp) < 0)
            return -1;
    }
    if (delete_upto(p, SQL_RET_EVENTS_LOOSE, w->cutoff, errp) < 0)
        return -1;
    if (old_prefix(p, SQL_RET_CHANGES, w, &last, &m, errp) < 0)
        return -1;
    if (m > 0 && delete_upto(p, SQL_RET_CHANGE, last, errp) < 0)
        return -1;
    w->deleted = n + m;
    w->more = n == w->batch || m == w->batch;
    return 0;
}

int pg_write_apply(struct pg *p, struct db_write *w, char **errp)
{
    switch (w->kind) {
    case DB_W_DECISION:
        return apply_decision(p, w, errp);
    case DB_W_JOB_CONFIG:
        return apply_config(p, w, w->job_config_json ? w->job_config_json : "{}", errp);
    case DB_W_JOB_DELETE:
        return apply_config(p, w, NULL, errp);
    case DB_W_POLICY:
        return apply_policy(p, w, errp);
    case DB_W_RETENTION:
        return apply_retention(p, w, errp);
    case DB_W_REPEAT:
        return 0;
    }
    *errp = xasprintf("unknown write kind %d", (int)w->kind);
    return -1;
}

/*
 * Reads the results of every statement sent since the last sync, then the sync's. The first
 * failure is the group's (*errp; the rest were skipped by the server). -1 + *errp.
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
            take(e->w, (enum take)e->what, r);
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

/* Units sent between two syncs: bounds what the server answers before its answers are read. */
#define PG_PIPE_UNITS 32

int pg_write_group(struct pg *p, struct db_write **ws, int n, char **errp)
{
    int rc = 0;
    bool plain = false;
    for (int i = 0; i < n; i++)
        plain |= ws[i]->kind == DB_W_RETENTION; /* its deletes depend on its reads */
    if (plain) {
        if (pg_begin(p, errp) < 0)
            goto fail;
        for (int i = 0; i < n; i++)
            if (pg_write_apply(p, ws[i], errp) < 0)
                goto fail;
        if (pg_commit(p, errp) < 0)
            goto fail;
        return 0;
    }
    p->err_code = 0;
    if (alive(p, errp) < 0)
        return -1;
    if (!PQenterPipelineMode(p->c)) {
        *errp = failure(p, NULL, "pipeline");
        return -1;
    }
    p->pipe = p->in_tx = true;
    p->n_sent = 0;
    if (!PQsendQueryParams(p->c, "BEGIN", 0, NULL, NULL, NULL, NULL, 0)) {
        *errp = failure(p, NULL, "begin");
        rc = -1;
    } else {
        pipe_note(p, NULL, T_NONE, "begin");
    }
    for (int i = 0; i < n && rc == 0; i++) {
        rc = pg_write_apply(p, ws[i], errp);
        if (rc == 0 && (i + 1) % PG_PIPE_UNITS == 0 && i + 1 < n) {
            if (!PQpipelineSync(p->c)) {
                *errp = failure(p, NULL, "pipeline");
                rc = -1;
            } else {
                rc = pipe_collect(p, errp);
            }
        }
    }
    if (rc == 0) {
        if (!PQsendQueryParams(p->c, "COMMIT", 0, NULL, NULL, NULL, NULL, 0)) {
            *errp = failure(p, NULL, "commit");
            rc = -1;
        } else {
            pipe_note(p, NULL, T_COMMIT, "commit");
        }
    }
    if (PQpipelineSync(p->c)) {
        char *e = NULL;
        if (pipe_collect(p, &e) < 0 && rc == 0) {
            *errp = e;
            e = NULL;
            rc = -1;
        }
        free(e);
    } else if (rc == 0) {
        *errp = failure(p, NULL, "pipeline");
        rc = -1;
    }
    p->pipe = false;
    p->n_sent = 0;
    if (!PQexitPipelineMode(p->c) && PQstatus(p->c) == CONNECTION_OK) {
        /* results left unread: the connection cannot be trusted, start it again */
        PQreset(p->c);
        p->n_prepared = 0;
    }
    if (rc == 0) {
        p->in_tx = false;
        return 0;
    }
fail:
    pg_rollback(p);
    /* a statement prepared in a failed pipeline may not exist */
    PQclear(PQexec(p->c, "DEALLOCATE ALL"));
    p->n_prepared = 0;
    return -1;
}

/* ----------------------------------------------------------------- reads -- */

int pg_window_each(struct pg *p, const char *job, int64_t from_seq,
                   int (*fn)(void *ud, int64_t seq, const void *blob, size_t len), void *ud,
                   char **errp)
{
    struct par a = {0};
    int rc = 0;
    p_text(&a, job);
    p_int(&a, from_seq);
    PGresult *r = run(p, SQL_WINDOW_READ, &a, "read window samples", errp);
    if (!r)
        return -1;
    for (int i = 0; i < PQntuples(r) && !rc; i++) {
        size_t n;
        unsigned char *b = bytes(r, i, 1, &n);
        rc = fn(ud, i64(r, i, 0), b, n);
        PQfreemem(b);
    }
    PQclear(r);
    return rc;
}

/* COLLATE "C": the order of SQLite's BINARY collation whatever the database's locale. */
static const char SQL_JOBS_ALL[] =
    "SELECT job, created_at, config_json, last_at, state_bin, version, generation FROM jobs "
    "ORDER BY coalesce(last_at, created_at) DESC, job COLLATE \"C\" LIMIT $1";
static const char SQL_JOBS_ONE[] = "SELECT job, created_at, config_json, last_at, state_bin, "
                                   "version, generation FROM jobs WHERE job = $1";

int pg_jobs_each(struct pg *p, const char *job, int limit,
                 int (*fn)(void *ud, const char *job, int64_t created_at, const char *config_json,
                           const void *state_bin, size_t state_bin_len, int64_t last_at,
                           int64_t version, int64_t generation),
                 void *ud, char **errp)
{
    struct par a = {0};
    if (job)
        p_text(&a, job);
    else
        p_int(&a, limit);
    PGresult *r = run(p, job ? SQL_JOBS_ONE : SQL_JOBS_ALL, &a, "read jobs", errp);
    int n = 0;
    if (!r)
        return -1;
    for (int i = 0; i < PQntuples(r); i++, n++) {
        size_t len;
        unsigned char *b = bytes(r, i, 4, &len);
        int64_t last = PQgetisnull(r, i, 3) ? INT64_MIN : i64(r, i, 3);
        int bad = fn(ud, txt(r, i, 0), i64(r, i, 1), txt(r, i, 2), b, len, last, i64(r, i, 5),
                     i64(r, i, 6));
        PQfreemem(b);
        if (bad) {
            *errp = xasprintf("job \"%s\": bad stored row", txt(r, i, 0));
            n = -1;
            break;
        }
    }
    PQclear(r);
    return n;
}

static json_t *col_json(const PGresult *r, int row, int col)
{
    const char *s = txt(r, row, col);
    json_t *j = s ? json_loads(s, JSON_DECODE_ANY, NULL) : NULL;
    return j ? j : json_null();
}

static json_t *col_text(const PGresult *r, int row, int col)
{
    const char *s = txt(r, row, col);
    return s ? json_string(s) : json_null();
}

static const char SQL_JOBS_LIST[] =
    "SELECT job, created_at, last_at, config_json FROM jobs ORDER BY job COLLATE \"C\"";

int pg_jobs_list(struct pg *p, json_t **out, char **errp)
{
    struct par a = {0};
    PGresult *r = run(p, SQL_JOBS_LIST, &a, "read jobs", errp);
    *out = NULL;
    if (!r)
        return -1;
    json_t *arr = json_array();
    for (int i = 0; i < PQntuples(r); i++) {
        json_t *config = col_json(r, i, 3);
        if (!json_is_object(config)) {
            json_decref(config);
            config = json_object();
        }
        json_array_append_new(
            arr, json_pack("{s:o,s:I,s:o,s:o}", "job", pack_str_json(txt(r, i, 0)), "created_at",
                           (json_int_t)i64(r, i, 1), "last_at",
                           PQgetisnull(r, i, 2) ? json_null() : json_integer(i64(r, i, 2)),
                           "config", config));
    }
    PQclear(r);
    *out = json_pack("{s:o}", "jobs", arr);
    return 0;
}

/* new: the evaluated figures (columns fig: figures, fig + 1: evaluated_json). */
static json_t *col_evaluated(const PGresult *r, int row, int fig)
{
    const char *f = txt(r, row, fig);
    if (!f)
        return col_json(r, row, fig + 1);
    char *text = pack_figures_text(f);
    json_t *j = text ? json_loads(text, 0, NULL) : NULL;
    free(text);
    return j ? j : json_null();
}

/* The decision columns every read of a response takes (db.c's DEC_COLS). */
#define DEC_COLS                                                                                   \
    "d.id, d.job, d.at, d.action, d.reason, d.execute, d.message, d.response, "                    \
    "d.policy_revision, c.hash, d.decision_json, d.message_parts"
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
    DC__N
};

static const char SQL_RESPONSE_VERTICES[] =
    "SELECT vertex, current, target, raw_target, reason, constraints, flags, message, figures, "
    "evaluated_json FROM vertex_decisions WHERE decision_id = $1 ORDER BY ord";
static const char SQL_DECISION_EVENTS[] =
    "SELECT type, reason, message, count, suppressed FROM events WHERE decision_id = $1 "
    "ORDER BY id";

/* new: one vertex of the response from row i of SQL_RESPONSE_VERTICES (core_vfields order). */
static json_t *response_vertex(const PGresult *r, int i)
{
    json_t *o = json_object();
    bool flags = !PQgetisnull(r, i, 6);
    int64_t bits = i64(r, i, 6);
    for (int f = 0; f < core_n_vfields; f++) {
        const char *name = core_vfields[f].name;
        json_t *x = NULL;
        if (strcmp(name, "id") == 0)
            x = pack_str_json(txt(r, i, 0));
        else if (strcmp(name, "current") == 0)
            x = json_integer(i64(r, i, 1));
        else if (strcmp(name, "target") == 0)
            x = json_integer(i64(r, i, 2));
        else if (strcmp(name, "raw_target") == 0)
            x = json_integer(i64(r, i, 3));
        else if (strcmp(name, "reason") == 0)
            x = col_text(r, i, 4);
        else if (strcmp(name, "constraints") == 0)
            x = col_json(r, i, 5);
        else if (strcmp(name, "excluded") == 0)
            x = flags ? json_boolean(bits & 1) : NULL;
        else if (strcmp(name, "outside_bounds") == 0)
            x = flags ? json_boolean(bits & 2) : NULL;
        else if (strcmp(name, "message") == 0)
            x = PQgetisnull(r, i, 7) ? NULL : pack_str_json(txt(r, i, 7));
        else if (strcmp(name, "evaluated") == 0)
            x = col_evaluated(r, i, 8);
        if (x)
            json_object_set_new(o, name, x);
    }
    return o;
}

static bool before_revision(const char *key)
{
    return strcmp(key, "config_changes") == 0 || strcmp(key, "config_removals") == 0;
}

/* The vertices of decision id into o's parallelism, vertices and message (message_parts). */
static int rebuild_vertices(struct pg *p, const PGresult *row, int ri, json_t *o, char **errp)
{
    struct par a = {0};
    p_int(&a, i64(row, ri, DC_ID));
    PGresult *r = run(p, SQL_RESPONSE_VERTICES, &a, "read vertex_decisions", errp);
    if (!r)
        return -1;
    json_t *par = json_object_get(o, "parallelism"), *vs = json_object_get(o, "vertices");
    const char *msg = txt(row, ri, DC_MESSAGE);
    int64_t parts = i64(row, ri, DC_PARTS);
    char *full = NULL;
    size_t len = 0;
    for (int ord = 0; ord < PQntuples(r); ord++) {
        json_t *v = response_vertex(r, ord);
        json_object_set(par, json_string_value(json_object_get(v, "id")),
                        json_object_get(v, "target"));
        json_array_append_new(vs, v);
        const char *vm = txt(r, ord, 7);
        if (ord >= 62 || !((parts >> ord) & 1) || !vm)
            continue;
        size_t n = strlen(vm);
        if (!full) {
            len = strlen(msg ? msg : "");
            full = xmalloc(len + n + 1);
            memcpy(full, msg ? msg : "", len);
        } else {
            full = xrealloc(full, len + 2 + n + 1);
            memcpy(full + len, "; ", 2);
            len += 2;
        }
        memcpy(full + len, vm, n);
        full[len += n] = '\0';
    }
    if (full)
        json_object_set_new(o, "message", pack_str_json(full));
    free(full);
    PQclear(r);
    return 0;
}

/* new in *out: the response of the decision at row ri (DEC_COLS first), rebuilt from its rows
 * or the text kept whole, without its decision_id. -1 + *errp. */
static int response_of(struct pg *p, const PGresult *row, int ri, json_t **out, char **errp)
{
    json_t *o, *evs, *extra, *v;
    const char *key;
    *out = NULL;
    if (!PQgetisnull(row, ri, DC_DECISION_JSON)) {
        *out = col_json(row, ri, DC_DECISION_JSON);
        return 0;
    }
    o = json_object();
    json_object_set_new(o, "job", pack_str_json(txt(row, ri, DC_JOB)));
    json_object_set_new(o, "at", json_integer(i64(row, ri, DC_AT)));
    json_object_set_new(o, "action", col_text(row, ri, DC_ACTION));
    json_object_set_new(o, "execute", json_boolean(i64(row, ri, DC_EXECUTE)));
    json_object_set_new(o, "reason", col_text(row, ri, DC_REASON));
    const char *msg = txt(row, ri, DC_MESSAGE);
    json_object_set_new(o, "message", pack_str_json(msg ? msg : ""));
    json_object_set_new(o, "parallelism", json_object());
    json_object_set_new(o, "vertices", json_array());
    json_object_set_new(o, "events", evs = json_array());
    if (rebuild_vertices(p, row, ri, o, errp) < 0)
        goto fail;
    struct par a = {0};
    p_int(&a, i64(row, ri, DC_ID));
    PGresult *r = run(p, SQL_DECISION_EVENTS, &a, "read events", errp);
    if (!r)
        goto fail;
    for (int i = 0; i < PQntuples(r); i++) {
        const char *m = txt(r, i, 2);
        json_t *e = json_object();
        json_object_set_new(e, "type", pack_str_json(txt(r, i, 0)));
        json_object_set_new(e, "reason", pack_str_json(txt(r, i, 1)));
        json_object_set_new(e, "message", pack_str_json(m ? m : ""));
        json_object_set_new(e, "count", json_integer(i64(r, i, 3)));
        json_object_set_new(e, "suppressed", json_boolean(i64(r, i, 4)));
        json_array_append_new(evs, e);
    }
    PQclear(r);
    extra = col_json(row, ri, DC_RESPONSE);
    json_object_foreach(extra, key, v)
    {
        if (before_revision(key))
            json_object_set(o, key, v);
    }
    json_object_set_new(o, "policy_revision", col_text(row, ri, DC_REVISION));
    json_object_set_new(o, "config_hash", col_text(row, ri, DC_HASH));
    json_object_foreach(extra, key, v)
    {
        if (!before_revision(key))
            json_object_set(o, key, v);
    }
    json_decref(extra);
    *out = o;
    return 0;
fail:
    json_decref(o);
    return -1;
}

static const char SQL_DECISIONS[] =
    "SELECT " DEC_COLS ", (SELECT coalesce(max(ord) + 1, 0) FROM vertex_decisions v "
    "WHERE v.decision_id = d.id) FROM decisions d LEFT JOIN decision_configs c ON c.id = "
    "d.config_id "
    "WHERE d.job = $1 AND d.at >= $2 AND (d.at < $3 OR (d.at = $3 AND d.id < $5)) "
    "ORDER BY d.at DESC, d.id DESC LIMIT $4";

int pg_decisions_list(struct pg *p, const char *job, struct db_page *page, json_t **out,
                      char **errp)
{
    struct par a = {0};
    int64_t rows = 0;
    *out = NULL;
    page->more = false;
    p_text(&a, job);
    p_int(&a, page->since);
    p_int(&a, page->until);
    p_int(&a, page->limit);
    p_int(&a, page->before);
    PGresult *r = run(p, SQL_DECISIONS, &a, "read decisions", errp);
    if (!r)
        return -1;
    json_t *arr = json_array();
    for (int i = 0; i < PQntuples(r); i++) {
        json_t *d;
        /* As db.c: a decision's vertex rows are counted before it is rebuilt; past the
         * first, one that would take the page past its budget is left for the next page. */
        int64_t will = i64(r, i, DC__N);
        if (rows > 0 && (rows >= page->max_rows || rows + will > page->max_rows)) {
            page->more = true;
            break;
        }
        if (response_of(p, r, i, &d, errp) < 0) {
            PQclear(r);
            json_decref(arr);
            return -1;
        }
        rows += db_response_rows(d);
        page->next_at = i64(r, i, DC_AT);
        page->next_id = i64(r, i, DC_ID);
        if (json_is_object(d)) {
            json_t *o = json_pack("{s:I}", "decision_id", (json_int_t)i64(r, i, DC_ID));
            json_object_update(o, d);
            json_decref(d);
            d = o;
        }
        json_array_append_new(arr, d);
    }
    PQclear(r);
    *out = json_pack("{s:o}", "decisions", arr);
    return 0;
}

static const char SQL_DECISION_EXECUTED[] =
    "SELECT " DEC_COLS " FROM decisions d LEFT JOIN decision_configs c ON c.id = d.config_id "
    "WHERE d.job = $1 AND d.execute = 1 AND d.action <> 'NO_CHANGE' ORDER BY d.id DESC LIMIT 1";

int pg_decision_executed(struct pg *p, const char *job, json_t **out, char **errp)
{
    struct par a = {0};
    *out = NULL;
    p_text(&a, job);
    PGresult *r = run(p, SQL_DECISION_EXECUTED, &a, "read decisions", errp);
    if (!r)
        return -1;
    if (PQntuples(r) > 0) {
        json_t *d;
        if (response_of(p, r, 0, &d, errp) < 0) {
            PQclear(r);
            return -1;
        }
        *out = json_pack("{s:I}", "decision_id", (json_int_t)i64(r, 0, DC_ID));
        if (json_is_object(d))
            json_object_update(*out, d);
        json_decref(d);
    }
    PQclear(r);
    return 0;
}

static const char SQL_DECISION_ONE[] =
    "SELECT " DEC_COLS ", d.input, c.config_json, d.created_at FROM decisions d "
    "LEFT JOIN decision_configs c ON c.id = d.config_id WHERE d.id = $1";
static const char SQL_DECISION_VERTICES[] =
    "SELECT vertex AS id, current, raw_target, target, reason, constraints, message, figures, "
    "evaluated_json FROM vertex_decisions WHERE decision_id = $1 ORDER BY ord";
static const char SQL_DECISION_PLUGINS[] =
    "SELECT plugin, hook, outcome, duration_us, error FROM plugin_calls WHERE decision_id = $1";

/* new: a packed request column parsed as JSON, or null. */
static json_t *col_input(const PGresult *r, int row, int col)
{
    size_t n;
    unsigned char *b = bytes(r, row, col, &n);
    char *text = b ? pack_input_text(b, n) : NULL;
    PQfreemem(b);
    json_t *j = text ? json_loads(text, JSON_DECODE_ANY, NULL) : NULL;
    free(text);
    return j ? j : json_null();
}

/* Appends to arr one object per row of sql for decision id, as db.c's rows(). */
static int rows(struct pg *p, const char *sql, int64_t id, json_t *arr, char **errp)
{
    struct par a = {0};
    p_int(&a, id);
    PGresult *r = run(p, sql, &a, "read decision", errp);
    if (!r)
        return -1;
    for (int i = 0; i < PQntuples(r); i++) {
        json_t *o = json_object();
        for (int c = 0; c < PQnfields(r); c++) {
            const char *name = PQfname(r, c);
            json_t *v;
            if (strcmp(name, "figures") == 0) {
                name = "evaluated";
                v = col_evaluated(r, i, c++);
            } else if (strcmp(name, "constraints") == 0) {
                v = col_json(r, i, c);
            } else if (strcmp(name, "suppressed") == 0) {
                v = json_boolean(i64(r, i, c));
            } else if (PQftype(r, c) == PG_INT8OID && !PQgetisnull(r, i, c)) {
                v = json_integer(i64(r, i, c));
            } else {
                v = col_text(r, i, c);
            }
            json_object_set_new(o, name, v);
        }
        json_array_append_new(arr, o);
    }
    PQclear(r);
    return 0;
}

int pg_decision_get(struct pg *p, int64_t id, json_t **out, char **errp)
{
    struct par a = {0};
    json_t *rec = NULL, *vs = NULL, *evs = NULL, *pcs = NULL;
    int ret = -1;
    *out = NULL;
    p_int(&a, id);
    PGresult *r = run(p, SQL_DECISION_ONE, &a, "read decision", errp);
    if (!r)
        return -1;
    if (PQntuples(r) == 0) {
        ret = 0;
        goto out;
    }
    if (response_of(p, r, 0, &rec, errp) < 0)
        goto out;
    if (!json_is_object(rec)) {
        json_decref(rec);
        rec = json_object();
    }
    json_object_set_new(rec, "decision_id", json_integer(i64(r, 0, DC_ID)));
    json_object_set_new(rec, "job", col_text(r, 0, DC_JOB));
    json_object_set_new(rec, "at", json_integer(i64(r, 0, DC_AT)));
    json_object_set_new(rec, "input", col_input(r, 0, DC__N));
    json_object_set_new(rec, "config", col_json(r, 0, DC__N + 1));
    json_object_set_new(rec, "policy_revision", col_text(r, 0, DC_REVISION));
    json_object_set_new(rec, "config_hash", col_text(r, 0, DC_HASH));
    json_object_set_new(rec, "created_at", json_integer(i64(r, 0, DC__N + 2)));
    vs = json_array();
    evs = json_array();
    pcs = json_array();
    if (rows(p, SQL_DECISION_VERTICES, id, vs, errp) < 0 ||
        rows(p, SQL_DECISION_EVENTS, id, evs, errp) < 0 ||
        rows(p, SQL_DECISION_PLUGINS, id, pcs, errp) < 0)
        goto out;
    json_object_set(rec, "vertices", vs);
    json_object_set(rec, "events", evs);
    json_object_set(rec, "plugin_calls", pcs);
    *out = rec;
    rec = NULL;
    ret = 0;
out:
    PQclear(r);
    json_decref(pcs);
    json_decref(evs);
    json_decref(vs);
    json_decref(rec);
    return ret;
}

static const char SQL_DECISION_AT[] =
    "SELECT " DEC_COLS ", d.input FROM decisions d "
    "LEFT JOIN decision_configs c ON c.id = d.config_id WHERE d.job = $1 AND d.at = $2 "
    "ORDER BY d.id DESC LIMIT 1";

/* new: the request's text of a packed column ("" when it is not one). */
static char *input_text(const PGresult *r, int row, int col)
{
    size_t n;
    unsigned char *b = bytes(r, row, col, &n);
    char *in = b ? pack_input_text(b, n) : NULL;
    PQfreemem(b);
    return in ? in : xstrdup("");
}

int pg_decision_find(struct pg *p, const char *job, int64_t at, int64_t *id, char **input_json,
                     char **decision_json, char **errp)
{
    struct par a = {0};
    int found = 0;
    *input_json = *decision_json = NULL;
    p_text(&a, job);
    p_int(&a, at);
    PGresult *r = run(p, SQL_DECISION_AT, &a, "read decision", errp);
    if (!r)
        return -1;
    if (PQntuples(r) == 1) {
        const char *dj = txt(r, 0, DC_DECISION_JSON);
        json_t *d = NULL;
        *id = i64(r, 0, DC_ID);
        *input_json = input_text(r, 0, DC__N);
        if (dj) {
            *decision_json = xstrdup(dj);
            found = 1;
        } else if (response_of(p, r, 0, &d, errp) == 0) {
            *decision_json = jarena_dump(d);
            json_decref(d);
            found = 1;
        } else {
            free(*input_json);
            *input_json = NULL;
            found = -1;
        }
    }
    PQclear(r);
    return found;
}

static const char SQL_HISTORY[] =
    "SELECT " DEC_COLS ", d.input, c.config_json FROM decisions d "
    "LEFT JOIN decision_configs c ON c.id = d.config_id WHERE d.job = $1 AND d.at <= $2 "
    "AND d.id > $3 AND d.id <= $4 ORDER BY d.id LIMIT $5";
static const char SQL_HISTORY_LAST[] = "SELECT coalesce(max(id), 0) FROM decisions WHERE job = $1";

int pg_history_last_id(struct pg *p, const char *job, int64_t *id, char **errp)
{
    struct par a = {0};
    p_text(&a, job);
    PGresult *r = run(p, SQL_HISTORY_LAST, &a, "read decisions", errp);
    if (!r)
        return -1;
    *id = PQntuples(r) == 1 ? i64(r, 0, 0) : 0;
    PQclear(r);
    return 0;
}

int pg_history_page(struct pg *p, const char *job, int64_t to, int64_t after_id, int64_t max_id,
                    int limit,
                    int (*fn)(void *ud, int64_t id, int64_t at, const char *input,
                              const char *config, json_t *decision),
                    void *ud, char **errp)
{
    struct par a = {0};
    int rc = 0;
    p_text(&a, job);
    p_int(&a, to);
    p_int(&a, after_id);
    p_int(&a, max_id);
    p_int(&a, limit);
    PGresult *r = run(p, SQL_HISTORY, &a, "read decisions", errp);
    if (!r)
        return -1;
    for (int i = 0; i < PQntuples(r) && !rc; i++) {
        json_t *dec = NULL;
        const char *config = txt(r, i, DC__N + 1);
        if (response_of(p, r, i, &dec, errp) < 0) {
            rc = -1;
            break;
        }
        char *input = input_text(r, i, DC__N);
        rc = fn(ud, i64(r, i, DC_ID), i64(r, i, DC_AT), input, config ? config : "{}", dec);
        free(input);
        json_decref(dec);
    }
    PQclear(r);
    return rc;
}

static const char SQL_DELETIONS[] =
    "SELECT coalesce(after_decision, (SELECT max(id) FROM decisions d WHERE d.created_at <= c.at), "
    "0) AS after FROM config_changes c WHERE job = $1 AND config_json IS NULL ORDER BY after";

int pg_job_deletions(struct pg *p, const char *job, int64_t **ids, int *n, char **errp)
{
    struct par a = {0};
    *ids = NULL;
    *n = 0;
    p_text(&a, job);
    PGresult *r = run(p, SQL_DELETIONS, &a, "read config_changes", errp);
    if (!r)
        return -1;
    if (PQntuples(r) > 0) {
        *ids = xcalloc((size_t)PQntuples(r), sizeof **ids);
        for (int i = 0; i < PQntuples(r); i++)
            (*ids)[(*n)++] = i64(r, i, 0);
    }
    PQclear(r);
    return 0;
}

static const char SQL_EVENTS[] =
    "SELECT id, decision_id, at, type, reason, message, count, suppressed FROM events "
    "WHERE job = $1 ORDER BY at DESC, id DESC LIMIT $2";

int pg_events_list(struct pg *p, const char *job, int limit, json_t **out, char **errp)
{
    struct par a = {0};
    *out = NULL;
    p_text(&a, job);
    p_int(&a, limit);
    PGresult *r = run(p, SQL_EVENTS, &a, "read events", errp);
    if (!r)
        return -1;
    json_t *arr = json_array();
    for (int i = 0; i < PQntuples(r); i++)
        json_array_append_new(
            arr, json_pack("{s:I,s:I,s:I,s:o,s:o,s:o,s:i,s:b}", "id", (json_int_t)i64(r, i, 0),
                           "decision_id", (json_int_t)i64(r, i, 1), "at", (json_int_t)i64(r, i, 2),
                           "type", col_text(r, i, 3), "reason", col_text(r, i, 4), "message",
                           col_text(r, i, 5), "count", (int)i64(r, i, 6), "suppressed",
                           (int)i64(r, i, 7)));
    PQclear(r);
    *out = json_pack("{s:o}", "events", arr);
    return 0;
}
