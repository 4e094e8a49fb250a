/*
 * db.c - the store above its backends (see db.h, backend.h): each statement's SQL, written
 * once; the rows of each kind of write unit, and the one transaction of a group; the reads of
 * the HTTP API and of a job's load, and the one rebuild of a response from its rows; fault
 * injection; retention's deletes. Which backend runs a statement, and in which dialect, is
 * the struct store_backend's business: nothing here tests for one.
 */
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "base/jarena.h"
#include "base/xmem.h"
#include "core/core.h"
#include "store/pack.h"
#include "store/query.h"

/* Units sent between two flushes of a pipeline: bounds what the server answers before its
 * answers are read. */
#define DB_PIPE_UNITS 32

struct db {
    const struct store_backend *be;
    void *c;      /* the backend's connection */
    int err_code; /* an injected failure's code (0: the backend's own, errcode) */
    bool pipe;    /* a pipelining transaction is open: results come at flush and commit */
};

/* Fault injection (tests only): set by a test's thread, read by the writer's. */
static atomic_int fail_writes;
static atomic_int fail_code = 19; /* SQLITE_CONSTRAINT */

/* ------------------------------------------------------------ connection -- */

bool db_is_pg(const char *db)
{
    return db && (strncmp(db, "postgresql://", 13) == 0 || strncmp(db, "postgres://", 11) == 0);
}

bool db_pg(const struct db *db)
{
    return db && db->be == &store_pg;
}

struct db *db_wrap(const struct store_backend *be, void *conn)
{
    struct db *db = xcalloc(1, sizeof *db);
    db->be = be;
    db->c = conn;
    return db;
}

void db_close(struct db *db)
{
    if (!db)
        return;
    db->be->close(db->c);
    free(db);
}

int db_user_version(struct db *db)
{
    return db->be->version(db->c);
}

int db_script(struct db *db, const char *sql, char **errp)
{
    return db->be->script(db->c, sql, errp);
}

int db_exec(struct db *db, const struct db_sql *s, const struct db_param *p, int n, int64_t *out,
            char **errp)
{
    return db->be->send(db->c, s, p, n, out, errp);
}

int db_query(struct db *db, const struct db_sql *s, const struct db_param *p, int n,
             struct db_cur *c, char **errp)
{
    int rc = db->be->query(db->c, s, p, n, c, errp);
    c->be = db->be;
    return rc;
}

static int begin(struct db *db, enum db_tx tx, char **errp)
{
    db->err_code = 0;
    db->pipe = tx == DB_TX_PIPE && db->be->pipelines;
    return db->be->begin(db->c, tx, errp);
}

int db_begin(struct db *db, char **errp)
{
    return begin(db, DB_TX_WRITE, errp);
}

int db_commit(struct db *db, char **errp)
{
    db->pipe = false;
    return db->be->commit(db->c, errp);
}

void db_rollback(struct db *db)
{
    db->pipe = false;
    db->be->rollback(db->c);
}

int db_read_begin(struct db *db, char **errp)
{
    return db->be->begin(db->c, DB_TX_READ, errp);
}

void db_read_end(struct db *db)
{
    char *e = NULL;
    db->be->commit(db->c, &e);
    free(e);
}

/* --------------------------------------------------------------- faults -- */

void db_fail_next_writes(int n)
{
    db_fail_next_writes_code(n, 19 /* SQLITE_CONSTRAINT */);
}

void db_fail_next_writes_code(int n, int code)
{
    atomic_store(&fail_code, code);
    atomic_store(&fail_writes, n);
}

/* An injected failure is due: takes it, with its code and message. */
static int injected(struct db *db, char **errp)
{
    int n = atomic_load(&fail_writes);
    while (n > 0 && !atomic_compare_exchange_weak(&fail_writes, &n, n - 1))
        ;
    if (n <= 0)
        return 0;
    db->err_code = atomic_load(&fail_code);
    *errp = xasprintf("injected write failure: %s", store_sqlite.errstr(db->err_code));
    return 1;
}

int db_last_errcode(const struct db *db)
{
    return db->err_code ? db->err_code : db->be->errcode(db->c);
}

enum db_fault db_fault_of(int code)
{
    /* The codes are SQLite's (those fault injection takes too) or this module's own. */
    return store_sqlite.fault_of(code);
}

static const struct db_sql SQL_PROBE = {"INSERT INTO store_probe (id, at) VALUES (1, ?1) "
                                        "ON CONFLICT (id) DO UPDATE SET at = excluded.at",
                                        NULL, "probe", 0};

int db_probe(struct db *db, int64_t now, int busy_ms, char **errp)
{
    int rc = -1;
    if (injected(db, errp))
        return -1;
    db->be->lock_wait(db->c, busy_ms);
    if (db_begin(db, errp) == 0 && db_exec(db, &SQL_PROBE, DB_ARGS(DB_INT(now)), NULL, errp) >= 0)
        rc = db_commit(db, errp);
    if (rc < 0)
        db_rollback(db);
    db->be->lock_wait(db->c, -1);
    return rc;
}

/* ---------------------------------------------------------------- writes -- */

struct db_write *db_write_new(enum db_write_kind kind, const char *job)
{
    struct db_write *w = xcalloc(1, sizeof *w);
    w->kind = kind;
    w->job = xstrdup(job);
    w->last_at = INT64_MIN;
    w->expect_version = -1;
    return w;
}

void db_write_free(struct db_write *w)
{
    if (!w)
        return;
    for (int i = 0; i < w->n_v; i++) {
        struct db_vrow *v = &w->v[i];
        free(v->vertex);
        free(v->reason);
        free(v->constraints);
        free(v->message);
        free(v->evaluated_json);
    }
    free(w->v);
    for (int i = 0; i < w->n_e; i++) {
        free(w->e[i].type);
        free(w->e[i].reason);
        free(w->e[i].message);
    }
    free(w->e);
    for (int i = 0; i < w->n_p; i++) {
        free(w->p[i].plugin);
        free(w->p[i].hook);
        free(w->p[i].outcome);
        free(w->p[i].error);
    }
    free(w->p);
    free(w->revision);
    free(w->files_json);
    free(w->job);
    free(w->job_config_json);
    free(w->state_bin);
    for (int i = 0; i < w->n_ws; i++)
        free(w->ws[i].blob);
    free(w->ws);
    free(w->action);
    free(w->reason);
    free(w->message);
    free(w->input_json);
    free(w->config_json);
    free(w->decision_json);
    free(w->response_json);
    free(w->policy_revision);
    free(w->config_hash);
    free(w->error);
    free(w);
}

/*
 * The jobs row of a unit, fenced by its version (db_write.expect_version): each statement in
 * three forms, [0] expect -1 writes whatever is there; [1] a job new to the unit (expect 0)
 * is inserted, or updated where its version is still 0 (a row from before migration 010);
 * [2] a row known to the unit (expect > 0) is updated only where its version is still that
 * one. Each adds 1 to the version and returns it: no row returned is a fence that did not
 * hold (on PostgreSQL an error, backend.h DB_SQL_FENCED).
 */
#define JOB_STATE_UPSERT                                                                           \
    "INSERT INTO jobs (job, created_at, state_bin, last_at, version) VALUES (?1, ?2, ?3, ?4, 1) "  \
    "ON CONFLICT (job) DO UPDATE SET state_bin = excluded.state_bin, "                             \
    "last_at = excluded.last_at, version = jobs.version + 1"
static const struct db_sql SQL_JOB_STATE[3] = {
    {JOB_STATE_UPSERT " RETURNING version", NULL, "update job state", 0},
    {JOB_STATE_UPSERT " WHERE jobs.version = ?5 RETURNING version", NULL, "update job state",
     DB_SQL_FENCED},
    {"UPDATE jobs SET state_bin = ?3, last_at = ?4, version = version + 1 "
     "WHERE job = ?1 AND version = ?5 RETURNING version",
     NULL, "update job state", DB_SQL_FENCED}};
#define JOB_CONFIG_UPSERT                                                                          \
    "INSERT INTO jobs (job, created_at, config_json, version) VALUES (?1, ?2, ?3, 1) "             \
    "ON CONFLICT (job) DO UPDATE SET config_json = excluded.config_json, "                         \
    "version = jobs.version + 1"
static const struct db_sql SQL_JOB_CONFIG[3] = {
    {JOB_CONFIG_UPSERT " RETURNING version", NULL, "update job config", 0},
    {JOB_CONFIG_UPSERT " WHERE jobs.version = ?4 RETURNING version", NULL, "update job config",
     DB_SQL_FENCED},
    {"UPDATE jobs SET config_json = ?3, version = version + 1 "
     "WHERE job = ?1 AND version = ?4 RETURNING version",
     NULL, "update job config", DB_SQL_FENCED}};
/* [0] unchecked, [1] checked (?2 >= 0): no row deleted is a fence that did not hold. On
 * PostgreSQL the check raises, but not for version 0 where there is no row (the EXISTS sees the
 * row as it was before the statement); its row says it held. */
static const struct db_sql SQL_JOB_DELETE[2] = {
    {"DELETE FROM jobs WHERE job = ?1", NULL, "delete job", 0},
    {"DELETE FROM jobs WHERE job = ?1 AND version = ?2",
     "WITH d AS (DELETE FROM jobs WHERE job = ?1 AND version = ?2 RETURNING 1) SELECT 1 "
     "UNION ALL SELECT governor_fenced(?1) WHERE NOT EXISTS (SELECT 1 FROM d) "
     "AND (?2 > 0 OR EXISTS (SELECT 1 FROM jobs WHERE job = ?1))",
     "delete job", 0}};
static const struct db_sql SQL_CONFIG_CHANGE = {
    "INSERT INTO config_changes (job, at, config_json, after_decision) "
    "VALUES (?1, ?2, ?3, (SELECT max(id) FROM decisions))",
    NULL, "insert config_changes", 0};
/* The effective options (?1 their hash, ?2 their text) are stored once: a new row unless one
 * of the same hash and text is there (a hash alone could stand for two texts, written by two
 * versions of the options table); the decision takes the first. */
static const struct db_sql SQL_CONFIG_ADD = {
    "INSERT INTO decision_configs (hash, config_json) SELECT ?1, ?2 WHERE NOT EXISTS "
    "(SELECT 1 FROM decision_configs WHERE hash = ?1 AND config_json = ?2)",
    NULL, "insert decision_configs", 0};
static const struct db_sql SQL_DECISION = {
    "INSERT INTO decisions (job, at, action, reason, execute, message, input, config_id, "
    "response, policy_revision, created_at, message_parts, decision_json) "
    "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, (SELECT id FROM decision_configs WHERE hash = ?8 "
    "AND config_json = ?14 ORDER BY id LIMIT 1), ?9, ?10, ?11, ?12, ?13) RETURNING id",
    NULL, "insert decision", 0};
static const struct db_sql SQL_VERTEX = {
    "INSERT INTO vertex_decisions (decision_id, ord, vertex, current, raw_target, target, "
    "reason, constraints, message, flags, figures, evaluated_json) "
    "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
    NULL, "insert vertex_decisions", DB_SQL_ID1};
#define EVENT_INSERT(decision_id)                                                                  \
    "INSERT INTO events (decision_id, job, at, type, reason, message, count, suppressed) "         \
    "VALUES (" decision_id ", ?2, ?3, ?4, ?5, ?6, ?7, ?8)"
static const struct db_sql SQL_EVENT = {EVENT_INSERT("?1"), NULL, "insert event", DB_SQL_ID1};
static const struct db_sql SQL_EVENT_LOOSE = {EVENT_INSERT("NULL"), NULL, "insert event", 0};
static const struct db_sql SQL_PLUGIN_CALL = {
    "INSERT INTO plugin_calls (decision_id, plugin, hook, outcome, duration_us, error) "
    "VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
    NULL, "insert plugin call", DB_SQL_ID1};
static const struct db_sql SQL_REVISION = {
    "INSERT INTO policy_revisions (revision, loaded_at, files_json) VALUES (?1, ?2, ?3) "
    "ON CONFLICT (revision) DO NOTHING",
    NULL, "insert policy revision", 0};
static const struct db_sql SQL_WINDOW_DROP = {"DELETE FROM job_window WHERE job = ?1 AND seq < ?2",
                                              NULL, "drop window samples", 0};
static const struct db_sql SQL_WINDOW_ADD = {
    "INSERT INTO job_window (job, seq, sample) VALUES (?1, ?2, ?3) "
    "ON CONFLICT (job, seq) DO UPDATE SET sample = excluded.sample",
    NULL, "add a window sample", 0};
static const struct db_sql SQL_WINDOW_FORGET = {"DELETE FROM job_window WHERE job = ?1", NULL,
                                                "delete job window", 0};

/* w's fence did not hold: nothing of it is written (the caller returns before its rows). */
static int fenced(struct db_write *w)
{
    w->fault = DB_FAULT_FENCED;
    free(w->error);
    w->error = xasprintf("job \"%s\": its stored version is no longer %lld: another process "
                         "wrote the job first",
                         w->job, (long long)w->expect_version);
    return 1;
}

/*
 * The jobs row of w by its fence's form of the statement (forms[3], see above), with its n
 * parameters p: 0 with w->new_version (in a pipeline, once it is read), 1 when the fence did
 * not hold (nothing written), -1 + *errp.
 */
static int job_row(struct db *db, struct db_write *w, const struct db_sql *forms,
                   const struct db_param *p, int n, char **errp)
{
    int form = w->expect_version < 0 ? 0 : w->expect_version == 0 ? 1 : 2;
    int rows = db_exec(db, &forms[form], p, n, &w->new_version, errp);
    if (rows < 0)
        return -1;
    return rows == 0 && form > 0 && !db->pipe ? fenced(w) : 0;
}

int db_window_write(struct db *db, const char *job, int64_t seq0, const struct db_wsample *ws,
                    int n, char **errp)
{
    if (db_exec(db, &SQL_WINDOW_DROP, DB_ARGS(DB_TEXT(job), DB_INT(seq0)), NULL, errp) < 0)
        return -1;
    for (int i = 0; i < n; i++)
        if (db_exec(db, &SQL_WINDOW_ADD,
                    DB_ARGS(DB_TEXT(job), DB_INT(ws[i].seq), DB_BLOB(ws[i].blob, ws[i].len)), NULL,
                    errp) < 0)
            return -1;
    return 0;
}

/* The events rows of w: of its decision (the one just inserted), or of none. */
static int insert_events(struct db *db, struct db_write *w, bool of_decision, char **errp)
{
    for (int i = 0; i < w->n_e; i++) {
        const struct db_erow *e = &w->e[i];
        if (db_exec(db, of_decision ? &SQL_EVENT : &SQL_EVENT_LOOSE,
                    DB_ARGS(DB_INT(w->decision_id), DB_TEXT(w->job), DB_INT(w->at),
                            DB_TEXT(e->type), DB_TEXT(e->reason), DB_TEXT(e->message),
                            DB_INT(e->count), DB_INT(e->suppressed)),
                    NULL, errp) < 0)
            return -1;
    }
    return 0;
}

static int apply_policy(struct db *db, struct db_write *w, char **errp)
{
    if (w->revision && db_exec(db, &SQL_REVISION,
                               DB_ARGS(DB_TEXT(w->revision), DB_INT(w->loaded_at),
                                       DB_TEXT(w->files_json ? w->files_json : "{}")),
                               NULL, errp) < 0)
        return -1;
    return insert_events(db, w, false, errp);
}

/*
 * The vertices whose messages the decision's message ends with, joined by "; " in their order
 * (how the core writes a scaling's message): their bitmask (0: none), and in *head_len the
 * length of what comes before them. The decision's message is stored as that head.
 */
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

/* The decision row, its options' row and its id (w->decision_id; in a pipeline, later). */
static int insert_decision(struct db *db, struct db_write *w, char **errp)
{
    const char *hash = w->config_hash ? w->config_hash : "";
    const char *cfg = w->config_json ? w->config_json : "{}";
    const char *in = w->input_json ? w->input_json : "";
    unsigned char *input;
    size_t input_len, head;
    char *msg = NULL;
    int64_t parts = message_parts(w, &head);
    if (db_exec(db, &SQL_CONFIG_ADD, DB_ARGS(DB_TEXT(hash), DB_TEXT(cfg)), NULL, errp) < 0)
        return -1;
    if (parts) {
        msg = xmalloc(head + 1);
        memcpy(msg, w->message, head);
        msg[head] = '\0';
    }
    pack_input(in, strlen(in), &input, &input_len);
    int rc = db_exec(db, &SQL_DECISION,
                     DB_ARGS(DB_TEXT(w->job), DB_INT(w->at), DB_TEXT(w->action), DB_TEXT(w->reason),
                             DB_INT(w->execute), DB_TEXT(parts ? msg : w->message),
                             DB_BLOB(input, input_len), DB_TEXT(hash), DB_TEXT(w->response_json),
                             DB_TEXT(w->policy_revision), DB_INT(w->now),
                             parts ? DB_INT(parts) : DB_NULL,
                             DB_TEXT(w->keep_response ? w->decision_json : NULL), DB_TEXT(cfg)),
                     &w->decision_id, errp);
    free(input);
    free(msg);
    return rc < 0 ? -1 : 0;
}

static int insert_vertices(struct db *db, struct db_write *w, char **errp)
{
    for (int i = 0; i < w->n_v; i++) {
        const struct db_vrow *v = &w->v[i];
        char *figures = pack_figures(v->evaluated_json);
        /* the text itself only when the array cannot give it back exactly */
        const char *ev = figures ? NULL : v->evaluated_json ? v->evaluated_json : "{}";
        int rc = db_exec(db, &SQL_VERTEX,
                         DB_ARGS(DB_INT(w->decision_id), DB_INT(i), DB_TEXT(v->vertex),
                                 DB_INT(v->current), DB_INT(v->raw_target), DB_INT(v->target),
                                 DB_TEXT(v->reason), DB_TEXT(v->constraints), DB_TEXT(v->message),
                                 DB_INT((v->excluded ? 1 : 0) | (v->outside_bounds ? 2 : 0)),
                                 DB_TEXT(figures), DB_TEXT(ev)),
                         NULL, errp);
        free(figures);
        if (rc < 0)
            return -1;
    }
    return 0;
}

/* A decision's rows; its jobs row first, so that a fence that does not hold writes none. */
static int apply_decision(struct db *db, struct db_write *w, char **errp)
{
    int rc = job_row(
        db, w, SQL_JOB_STATE,
        DB_ARGS(DB_TEXT(w->job), DB_INT(w->now), DB_BLOB(w->state_bin, w->state_bin_len),
                w->last_at == INT64_MIN ? DB_NULL : DB_INT(w->last_at), DB_INT(w->expect_version)),
        errp);
    if (rc != 0)
        return rc < 0 ? -1 : 0;
    if (insert_decision(db, w, errp) < 0 || insert_vertices(db, w, errp) < 0 ||
        insert_events(db, w, true, errp) < 0)
        return -1;
    for (int i = 0; i < w->n_p; i++) {
        const struct db_prow *p = &w->p[i];
        if (db_exec(db, &SQL_PLUGIN_CALL,
                    DB_ARGS(DB_INT(w->decision_id), DB_TEXT(p->plugin), DB_TEXT(p->hook),
                            DB_TEXT(p->outcome), DB_INT(p->duration_us), DB_TEXT(p->error)),
                    NULL, errp) < 0)
            return -1;
    }
    return db_window_write(db, w->job, w->window_seq0, w->ws, w->n_ws, errp);
}

/* A job's config change (layer: its new stored layer) or deletion (layer NULL). */
static int apply_config(struct db *db, struct db_write *w, const char *layer, char **errp)
{
    if (w->kind == DB_W_JOB_CONFIG) {
        int rc = job_row(
            db, w, SQL_JOB_CONFIG,
            DB_ARGS(DB_TEXT(w->job), DB_INT(w->now), DB_TEXT(layer), DB_INT(w->expect_version)),
            errp);
        if (rc != 0)
            return rc < 0 ? -1 : 0;
    } else {
        bool check = w->expect_version >= 0;
        int rows = db_exec(db, &SQL_JOB_DELETE[check],
                           DB_ARGS(DB_TEXT(w->job), DB_INT(w->expect_version)), NULL, errp);
        if (rows < 0)
            return -1;
        if (check && rows == 0 && !db->pipe) {
            fenced(w);
            return 0;
        }
        w->new_version = 0;
        if (db_exec(db, &SQL_WINDOW_FORGET, DB_ARGS(DB_TEXT(w->job)), NULL, errp) < 0)
            return -1;
    }
    return db_exec(db, &SQL_CONFIG_CHANGE, DB_ARGS(DB_TEXT(w->job), DB_INT(w->now), DB_TEXT(layer)),
                   NULL, errp) < 0
               ? -1
               : 0;
}

/*
 * Retention: ids grow with commit order and created_at is the server clock at the request,
 * so the old rows are a prefix of the table by id. A batch takes the first `batch` rows by
 * id and deletes the leading run of those older than the cutoff: a few hundred index reads,
 * never a scan of the table (a clock step back only delays a deletion).
 */
#define RET(name, sql) static const struct db_sql name = {sql, NULL, "retention", 0}
RET(SQL_RET_DECISIONS, "SELECT id, created_at FROM decisions ORDER BY id LIMIT ?1");
RET(SQL_RET_VERTEX, "DELETE FROM vertex_decisions WHERE decision_id <= ?1");
RET(SQL_RET_EVENTS, "DELETE FROM events WHERE decision_id <= ?1");
RET(SQL_RET_EVENTS_LOOSE, "DELETE FROM events WHERE decision_id IS NULL AND at < ?1");
RET(SQL_RET_PLUGIN, "DELETE FROM plugin_calls WHERE decision_id <= ?1");
/* The option sets that only the decisions up to ?1 use (decisions_config keeps it to the
 * batch's rows and one index probe per set). */
RET(SQL_RET_CONFIGS,
    "DELETE FROM decision_configs WHERE id IN (SELECT config_id FROM decisions WHERE id <= ?1) "
    "AND NOT EXISTS (SELECT 1 FROM decisions n WHERE n.config_id = decision_configs.id "
    "AND n.id > ?1)");
RET(SQL_RET_DECISION, "DELETE FROM decisions WHERE id <= ?1");
RET(SQL_RET_CHANGES, "SELECT id, at FROM config_changes ORDER BY id LIMIT ?1");
RET(SQL_RET_CHANGE, "DELETE FROM config_changes WHERE id <= ?1");

/* The last id of the leading run of rows (id, time) with time < cutoff; *n their count. */
static int old_prefix(struct db *db, const struct db_sql *s, struct db_write *w, int64_t *last,
                      int *n, char **errp)
{
    struct db_cur c;
    bool more = false;
    *last = INT64_MIN;
    *n = 0;
    int rc = db_query(db, s, DB_ARGS(DB_INT(w->batch)), &c, errp);
    while (rc == 0 && (more = db_next(&c)) && db_int(&c, 1) < w->cutoff) {
        *last = db_int(&c, 0);
        (*n)++;
    }
    if (rc == 0 && !more)
        rc = db_done(&c, errp);
    db_end(&c);
    return rc;
}

static int delete_upto(struct db *db, const struct db_sql *s, int64_t id, char **errp)
{
    return db_exec(db, s, DB_ARGS(DB_INT(id)), NULL, errp) < 0 ? -1 : 0;
}

static int apply_retention(struct db *db, struct db_write *w, char **errp)
{
    int64_t last;
    int n, m;
    w->deleted = 0;
    w->more = false;
    if (w->batch <= 0)
        w->batch = 500;
    int leader = db->be->leader(db->c, errp);
    if (leader <= 0)
        return leader;
    if (old_prefix(db, &SQL_RET_DECISIONS, w, &last, &n, errp) < 0)
        return -1;
    if (n > 0 && (delete_upto(db, &SQL_RET_VERTEX, last, errp) < 0 ||
                  delete_upto(db, &SQL_RET_EVENTS, last, errp) < 0 ||
                  delete_upto(db, &SQL_RET_PLUGIN, last, errp) < 0 ||
                  delete_upto(db, &SQL_RET_CONFIGS, last, errp) < 0 ||
                  delete_upto(db, &SQL_RET_DECISION, last, errp) < 0))
        return -1;
    if (delete_upto(db, &SQL_RET_EVENTS_LOOSE, w->cutoff, errp) < 0 ||
        old_prefix(db, &SQL_RET_CHANGES, w, &last, &m, errp) < 0)
        return -1;
    if (m > 0 && delete_upto(db, &SQL_RET_CHANGE, last, errp) < 0)
        return -1;
    w->deleted = n + m;
    w->more = n == w->batch || m == w->batch;
    return 0;
}

int db_write_apply(struct db *db, struct db_write *w, char **errp)
{
    w->fault = DB_FAULT_NONE;
    if (injected(db, errp))
        return -1;
    switch (w->kind) {
    case DB_W_DECISION:
        return apply_decision(db, w, errp);
    case DB_W_JOB_CONFIG:
        return apply_config(db, w, w->job_config_json ? w->job_config_json : "{}", errp);
    case DB_W_JOB_DELETE:
        return apply_config(db, w, NULL, errp);
    case DB_W_POLICY:
        return apply_policy(db, w, errp);
    case DB_W_RETENTION:
        return apply_retention(db, w, errp);
    case DB_W_REPEAT:
        return 0;
    }
    *errp = xasprintf("unknown write kind %d", (int)w->kind);
    return -1;
}

/* Whether a unit of ws[i]'s job before it in the group stored nothing (a fence that did not
 * hold): ws[i] was computed from that unit's state. */
static bool after_fenced(struct db_write **ws, int i)
{
    if (!ws[i]->job[0])
        return false;
    for (int k = 0; k < i; k++)
        if (ws[k]->fault != DB_FAULT_NONE && strcmp(ws[k]->job, ws[i]->job) == 0)
            return true;
    return false;
}

int db_write_group(struct db *db, struct db_write **ws, int n, char **errp)
{
    enum db_tx tx = DB_TX_PIPE;
    int fenced_units = 0;
    for (int i = 0; i < n; i++)
        if (ws[i]->kind == DB_W_RETENTION)
            tx = DB_TX_WRITE; /* its deletes depend on its reads */
    if (begin(db, tx, errp) < 0)
        goto fail;
    for (int i = 0; i < n; i++) {
        if (fenced_units && after_fenced(ws, i)) {
            ws[i]->fault = DB_FAULT_STALE;
            free(ws[i]->error);
            ws[i]->error = xstrdup(DB_STALE_MSG);
            continue;
        }
        if (db_write_apply(db, ws[i], errp) < 0)
            goto fail;
        if (ws[i]->fault != DB_FAULT_NONE)
            fenced_units++;
        if (db->pipe && (i + 1) % DB_PIPE_UNITS == 0 && i + 1 < n && db->be->flush(db->c, errp) < 0)
            goto fail;
    }
    if (db_commit(db, errp) < 0)
        goto fail;
    return 0;
fail:
    db_rollback(db);
    return -1;
}

/* ----------------------------------------------------------------- reads -- */

static const struct db_sql SQL_WINDOW_READ = {
    "SELECT seq, sample FROM job_window WHERE job = ?1 AND seq >= ?2 ORDER BY seq", NULL,
    "read window samples", 0};

int db_window_each(struct db *db, const char *job, int64_t from_seq,
                   int (*fn)(void *ud, int64_t seq, const void *blob, size_t len), void *ud,
                   char **errp)
{
    struct db_cur c;
    int rc = db_query(db, &SQL_WINDOW_READ, DB_ARGS(DB_TEXT(job), DB_INT(from_seq)), &c, errp);
    bool more = rc == 0;
    while (more && (more = db_next(&c))) {
        size_t n;
        const void *b = db_blob(&c, 1, &n);
        if ((rc = fn(ud, db_int(&c, 0), b, n)) != 0)
            break;
    }
    return db_finish(&c, rc, errp);
}

/* COLLATE "C" on PostgreSQL: the order of SQLite's BINARY collation whatever the locale. */
static const struct db_sql SQL_JOBS_ALL = {
    "SELECT job, created_at, config_json, last_at, state_bin, version FROM jobs ORDER BY job",
    "SELECT job, created_at, config_json, last_at, state_bin, version FROM jobs "
    "ORDER BY job COLLATE \"C\"",
    "read jobs", 0};
static const struct db_sql SQL_JOBS_ONE = {
    "SELECT job, created_at, config_json, last_at, state_bin, version FROM jobs WHERE job = ?1",
    NULL, "read jobs", 0};

int db_jobs_each(struct db *db, const char *job,
                 int (*fn)(void *ud, const char *job, int64_t created_at, const char *config_json,
                           const void *state_bin, size_t state_bin_len, int64_t last_at,
                           int64_t version),
                 void *ud, char **errp)
{
    struct db_cur c;
    struct db_param name = DB_TEXT(job);
    int n = 0;
    if (db_query(db, job ? &SQL_JOBS_ONE : &SQL_JOBS_ALL, &name, job ? 1 : 0, &c, errp) < 0) {
        db_end(&c);
        return -1;
    }
    while (db_next(&c)) {
        size_t len;
        const void *state = db_blob(&c, 4, &len);
        int64_t last = db_null(&c, 3) ? INT64_MIN : db_int(&c, 3);
        if (fn(ud, db_text(&c, 0), db_int(&c, 1), db_text(&c, 2), state, len, last,
               db_int(&c, 5)) != 0) {
            *errp = xasprintf("job \"%s\": bad stored row", db_text(&c, 0));
            n = -1;
            break;
        }
        n++;
    }
    if (n >= 0 && db_done(&c, errp) < 0)
        n = -1;
    db_end(&c);
    return n;
}

/* new: column i parsed as JSON, or null when it is NULL or does not parse. */
static json_t *col_json(const struct db_cur *c, int i)
{
    const char *s = db_text(c, i);
    json_t *j = s ? json_loads(s, JSON_DECODE_ANY, NULL) : NULL;
    return j ? j : json_null();
}

static json_t *col_text(const struct db_cur *c, int i)
{
    const char *s = db_text(c, i);
    return s ? json_string(s) : json_null();
}

/* new: a vertex row's evaluated figures as an object (columns fig: figures, fig + 1:
 * evaluated_json). */
static json_t *col_evaluated(const struct db_cur *c, int fig)
{
    const char *f = db_text(c, fig);
    if (!f)
        return col_json(c, fig + 1);
    char *text = pack_figures_text(f);
    json_t *j = text ? json_loads(text, 0, NULL) : NULL;
    free(text);
    return j ? j : json_null();
}

/* new: the request's text of column i, a packed one (pack.h): "" when it is not one. */
static char *col_input_text(struct db_cur *c, int i)
{
    size_t n;
    const void *b = db_blob(c, i, &n);
    char *text = pack_input_text(b, n);
    return text ? text : xstrdup("");
}

/* new: column i (a packed request) parsed as JSON, or null. */
static json_t *col_input(struct db_cur *c, int i)
{
    char *text = col_input_text(c, i);
    json_t *j = json_loads(text, JSON_DECODE_ANY, NULL);
    free(text);
    return j ? j : json_null();
}

/*
 * The response of a decision, rebuilt from its rows (migration 009): the decision row, its
 * vertex rows in order, its events, and `response` (the members no row holds), member for
 * member in the order json_render_decision writes them. A row converted from an older form
 * whose rows do not give its response back exactly kept it in decisions.decision_json.
 */
static const struct db_sql SQL_RESPONSE_VERTICES = {
    "SELECT vertex, current, target, raw_target, reason, constraints, flags, message, figures, "
    "evaluated_json FROM vertex_decisions WHERE decision_id = ?1 ORDER BY ord",
    NULL, "read vertex_decisions", 0};
static const struct db_sql SQL_DECISION_EVENTS = {
    "SELECT type, reason, message, count, suppressed FROM events WHERE decision_id = ?1 "
    "ORDER BY id",
    NULL, "read events", 0};

/* How the rebuild writes a member of the response. */
enum rb_how {
    RB_STRING, /* a column as the response renders a string (pack_str_json; NULL: "") */
    RB_TEXT,   /* a column's text, or null */
    RB_INT,
    RB_BOOL,
    RB_OBJECT, /* parallelism, filled from the vertex rows */
    RB_ARRAY,  /* vertices, events: filled from their rows */
    RB_EXTRA   /* a member of `response` that goes here (those not listed go last) */
};
/* The members of a response in the order json_render_decision writes them; col: a column of
 * DB_DEC_COLS. */
static const struct {
    const char *name;
    enum rb_how how;
    int col;
} rb_members[] = {
    {"job", RB_STRING, DC_JOB},        {"at", RB_INT, DC_AT},
    {"action", RB_TEXT, DC_ACTION},    {"execute", RB_BOOL, DC_EXECUTE},
    {"reason", RB_TEXT, DC_REASON},    {"message", RB_STRING, DC_MESSAGE},
    {"parallelism", RB_OBJECT, -1},    {"vertices", RB_ARRAY, -1},
    {"events", RB_ARRAY, -1},          {"config_changes", RB_EXTRA, -1},
    {"config_removals", RB_EXTRA, -1}, {"policy_revision", RB_TEXT, DC_REVISION},
    {"config_hash", RB_TEXT, DC_HASH},
};
#define RB_N (sizeof rb_members / sizeof rb_members[0])

static bool rb_extra(const char *key)
{
    for (size_t i = 0; i < RB_N; i++)
        if (rb_members[i].how == RB_EXTRA && strcmp(rb_members[i].name, key) == 0)
            return true;
    return false;
}

/* new: one vertex of the response from a row of SQL_RESPONSE_VERTICES, its members in the
 * order of the core's table (core_vfields). */
static json_t *response_vertex(const struct db_cur *c)
{
    json_t *o = json_object();
    bool flags = !db_null(c, 6);
    int64_t bits = db_int(c, 6);
    for (int i = 0; i < core_n_vfields; i++) {
        const char *name = core_vfields[i].name;
        json_t *x = NULL;
        if (strcmp(name, "id") == 0)
            x = pack_str_json(db_text(c, 0));
        else if (strcmp(name, "current") == 0)
            x = json_integer(db_int(c, 1));
        else if (strcmp(name, "target") == 0)
            x = json_integer(db_int(c, 2));
        else if (strcmp(name, "raw_target") == 0)
            x = json_integer(db_int(c, 3));
        else if (strcmp(name, "reason") == 0)
            x = col_text(c, 4);
        else if (strcmp(name, "constraints") == 0)
            x = col_json(c, 5);
        else if (strcmp(name, "excluded") == 0)
            x = flags ? json_boolean(bits & 1) : NULL;
        else if (strcmp(name, "outside_bounds") == 0)
            x = flags ? json_boolean(bits & 2) : NULL;
        else if (strcmp(name, "message") == 0)
            x = db_null(c, 7) ? NULL : pack_str_json(db_text(c, 7));
        else if (strcmp(name, "evaluated") == 0)
            x = col_evaluated(c, 8);
        if (x)
            json_object_set_new(o, name, x);
    }
    return o;
}

/* The vertices of the decision at row into o's parallelism and vertices, and its message's
 * end (message_parts): the messages of the vertices of its bitmask. -1 + *errp. */
static int rebuild_vertices(struct db *db, const struct db_cur *row, int col, json_t *o,
                            char **errp)
{
    json_t *par = json_object_get(o, "parallelism"), *vs = json_object_get(o, "vertices");
    const char *msg = db_text(row, col + DC_MESSAGE);
    int64_t parts = db_int(row, col + DC_PARTS);
    char *full = NULL;
    size_t len = 0;
    struct db_cur c;
    int rc =
        db_query(db, &SQL_RESPONSE_VERTICES, DB_ARGS(DB_INT(db_int(row, col + DC_ID))), &c, errp);
    for (int ord = 0; rc == 0 && db_next(&c); ord++) {
        json_t *v = response_vertex(&c);
        json_object_set(par, json_string_value(json_object_get(v, "id")),
                        json_object_get(v, "target"));
        json_array_append_new(vs, v);
        const char *vm = db_text(&c, 7);
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
    return db_finish(&c, rc, errp);
}

static int rebuild_events(struct db *db, int64_t id, json_t *evs, char **errp)
{
    struct db_cur c;
    int rc = db_query(db, &SQL_DECISION_EVENTS, DB_ARGS(DB_INT(id)), &c, errp);
    while (rc == 0 && db_next(&c)) {
        const char *m = db_text(&c, 2);
        json_t *e = json_object();
        json_object_set_new(e, "type", pack_str_json(db_text(&c, 0)));
        json_object_set_new(e, "reason", pack_str_json(db_text(&c, 1)));
        json_object_set_new(e, "message", pack_str_json(m ? m : ""));
        json_object_set_new(e, "count", json_integer(db_int(&c, 3)));
        json_object_set_new(e, "suppressed", json_boolean(db_int(&c, 4)));
        json_array_append_new(evs, e);
    }
    return db_finish(&c, rc, errp);
}

int db_response_rebuild(struct db *db, struct db_cur *row, int col, json_t **out, char **errp)
{
    json_t *o = json_object(), *extra = col_json(row, col + DC_RESPONSE), *v;
    const char *key;
    bool placed = false;
    *out = NULL;
    for (size_t i = 0; i < RB_N; i++) {
        const char *name = rb_members[i].name, *s;
        int k = col + rb_members[i].col;
        switch (rb_members[i].how) {
        case RB_STRING:
            s = db_text(row, k);
            json_object_set_new(o, name, pack_str_json(s ? s : ""));
            break;
        case RB_TEXT:
            json_object_set_new(o, name, col_text(row, k));
            break;
        case RB_INT:
            json_object_set_new(o, name, json_integer(db_int(row, k)));
            break;
        case RB_BOOL:
            json_object_set_new(o, name, json_boolean(db_int(row, k)));
            break;
        case RB_OBJECT:
            json_object_set_new(o, name, json_object());
            break;
        case RB_ARRAY:
            json_object_set_new(o, name, json_array());
            break;
        case RB_EXTRA:
            json_object_foreach(extra, key, v)
            {
                if (!placed && rb_extra(key))
                    json_object_set(o, key, v);
            }
            placed = true;
            break;
        }
    }
    json_object_foreach(extra, key, v)
    {
        if (!rb_extra(key))
            json_object_set(o, key, v);
    }
    json_decref(extra);
    if (rebuild_vertices(db, row, col, o, errp) < 0 ||
        rebuild_events(db, db_int(row, col + DC_ID), json_object_get(o, "events"), errp) < 0) {
        json_decref(o);
        return -1;
    }
    *out = o;
    return 0;
}

/* new in *out: the response of the decision at row (DB_DEC_COLS from `col`): the text kept
 * from before 009, or the rebuild. -1 + *errp. */
static int response_of(struct db *db, struct db_cur *row, int col, json_t **out, char **errp)
{
    if (!db_null(row, col + DC_DECISION_JSON)) {
        *out = col_json(row, col + DC_DECISION_JSON);
        return 0;
    }
    return db_response_rebuild(db, row, col, out, errp);
}

/* {key: [one value per row]} in *out (new), each from row(); -1 + *errp. */
static int list(struct db *db, const struct db_sql *s, const struct db_param *p, int n,
                const char *key,
                int (*row)(struct db *db, struct db_cur *c, json_t **v, char **errp), json_t **out,
                char **errp)
{
    struct db_cur c;
    json_t *arr = json_array(), *v;
    int rc = db_query(db, s, p, n, &c, errp);
    *out = NULL;
    while (rc == 0 && db_next(&c) && (rc = row(db, &c, &v, errp)) == 0)
        json_array_append_new(arr, v);
    rc = db_finish(&c, rc, errp);
    if (rc == 0)
        *out = json_pack("{s:o}", key, arr);
    else
        json_decref(arr);
    return rc;
}

#define DEC_FROM " FROM decisions d LEFT JOIN decision_configs c ON c.id = d.config_id "
static const struct db_sql SQL_DECISIONS = {"SELECT " DB_DEC_COLS DEC_FROM
                                            "WHERE d.job = ?1 AND d.at >= ?2 AND d.at <= ?3 "
                                            "ORDER BY d.at DESC, d.id DESC LIMIT ?4",
                                            NULL, "read decisions", 0};

/* A stored response with its decision_id first, as in the decide response. */
static int decisions_row(struct db *db, struct db_cur *c, json_t **v, char **errp)
{
    if (response_of(db, c, 0, v, errp) < 0)
        return -1;
    if (json_is_object(*v)) {
        json_t *o = json_pack("{s:I}", "decision_id", (json_int_t)db_int(c, DC_ID));
        json_object_update(o, *v);
        json_decref(*v);
        *v = o;
    }
    return 0;
}

int db_decisions_list(struct db *db, const char *job, int64_t since, int64_t until, int limit,
                      json_t **out, char **errp)
{
    return list(db, &SQL_DECISIONS,
                DB_ARGS(DB_TEXT(job), DB_INT(since), DB_INT(until), DB_INT(limit)), "decisions",
                decisions_row, out, errp);
}

/* The record's own columns follow DB_DEC_COLS. */
static const struct db_sql SQL_DECISION_ONE = {
    "SELECT " DB_DEC_COLS ", d.input, c.config_json, d.created_at" DEC_FROM "WHERE d.id = ?1", NULL,
    "read decision", 0};
static const struct db_sql SQL_DECISION_VERTICES = {
    "SELECT vertex AS id, current, raw_target, target, reason, constraints, message, figures, "
    "evaluated_json FROM vertex_decisions WHERE decision_id = ?1 ORDER BY ord",
    NULL, "read decision", 0};
static const struct db_sql SQL_DECISION_PLUGINS = {
    "SELECT plugin, hook, outcome, duration_us, error FROM plugin_calls WHERE decision_id = ?1",
    NULL, "read decision", 0};

/* Appends to arr one object per row of s for decision id, a member per column by its name. */
static int rows(struct db *db, const struct db_sql *s, int64_t id, json_t *arr, char **errp)
{
    struct db_cur c;
    int rc = db_query(db, s, DB_ARGS(DB_INT(id)), &c, errp);
    while (rc == 0 && db_next(&c)) {
        json_t *o = json_object();
        for (int k = 0; k < db_ncols(&c); k++) {
            const char *name = db_colname(&c, k);
            json_t *v;
            if (strcmp(name, "figures") == 0) {
                name = "evaluated";
                v = col_evaluated(&c, k++); /* and evaluated_json */
            } else if (strcmp(name, "constraints") == 0) {
                v = col_json(&c, k);
            } else if (strcmp(name, "suppressed") == 0) {
                v = json_boolean(db_int(&c, k));
            } else if (db_kind(&c, k) == DB_KINT) {
                v = json_integer(db_int(&c, k));
            } else {
                v = col_text(&c, k);
            }
            json_object_set_new(o, name, v);
        }
        json_array_append_new(arr, o);
    }
    return db_finish(&c, rc, errp);
}

int db_decision_get(struct db *db, int64_t id, json_t **out, char **errp)
{
    struct db_cur c;
    json_t *rec = NULL, *vs = json_array(), *evs = json_array(), *pcs = json_array();
    int ret = db_query(db, &SQL_DECISION_ONE, DB_ARGS(DB_INT(id)), &c, errp);
    *out = NULL;
    if (ret < 0)
        goto out;
    if (!db_next(&c)) {
        ret = db_done(&c, errp); /* 0: not found */
        goto out;
    }
    if ((ret = response_of(db, &c, 0, &rec, errp)) < 0)
        goto out;
    if (!json_is_object(rec)) {
        json_decref(rec);
        rec = json_object();
    }
    json_object_set_new(rec, "decision_id", json_integer(db_int(&c, DC_ID)));
    json_object_set_new(rec, "job", col_text(&c, DC_JOB));
    json_object_set_new(rec, "at", json_integer(db_int(&c, DC_AT)));
    json_object_set_new(rec, "input", col_input(&c, DC__N));
    json_object_set_new(rec, "config", col_json(&c, DC__N + 1));
    json_object_set_new(rec, "policy_revision", col_text(&c, DC_REVISION));
    json_object_set_new(rec, "config_hash", col_text(&c, DC_HASH));
    json_object_set_new(rec, "created_at", json_integer(db_int(&c, DC__N + 2)));
    db_end(&c);
    /* The stored rows are the full record: they carry raw targets the response lacks. */
    if ((ret = rows(db, &SQL_DECISION_VERTICES, id, vs, errp)) < 0 ||
        (ret = rows(db, &SQL_DECISION_EVENTS, id, evs, errp)) < 0 ||
        (ret = rows(db, &SQL_DECISION_PLUGINS, id, pcs, errp)) < 0)
        goto out;
    json_object_set(rec, "vertices", vs);
    json_object_set(rec, "events", evs);
    json_object_set(rec, "plugin_calls", pcs);
    *out = rec;
    rec = NULL;
out:
    db_end(&c);
    json_decref(pcs);
    json_decref(evs);
    json_decref(vs);
    json_decref(rec);
    return ret;
}

static const struct db_sql SQL_DECISION_AT = {"SELECT " DB_DEC_COLS ", d.input" DEC_FROM
                                              "WHERE d.job = ?1 AND d.at = ?2 "
                                              "ORDER BY d.id DESC LIMIT 1",
                                              NULL, "read decision", 0};

int db_decision_find(struct db *db, const char *job, int64_t at, int64_t *id, char **input_json,
                     char **decision_json, char **errp)
{
    struct db_cur c;
    int found = db_query(db, &SQL_DECISION_AT, DB_ARGS(DB_TEXT(job), DB_INT(at)), &c, errp);
    *input_json = *decision_json = NULL;
    if (found == 0 && db_next(&c)) {
        const char *dj = db_text(&c, DC_DECISION_JSON);
        json_t *d = NULL;
        *id = db_int(&c, DC_ID);
        *input_json = col_input_text(&c, DC__N);
        if (dj) {
            *decision_json = xstrdup(dj); /* the stored text as it was sent */
            found = 1;
        } else if (db_response_rebuild(db, &c, 0, &d, errp) == 0) {
            *decision_json = jarena_dump(d); /* the text as the reply sent it */
            json_decref(d);
            found = 1;
        } else {
            free(*input_json);
            *input_json = NULL;
            found = -1;
        }
    } else if (found == 0) {
        found = db_done(&c, errp);
    }
    db_end(&c);
    return found;
}

/* ------------------------------------------------------------ history reads -- */

static const struct db_sql SQL_HISTORY = {"SELECT " DB_DEC_COLS ", d.input, c.config_json" DEC_FROM
                                          "WHERE d.job = ?1 AND d.at <= ?2 "
                                          "ORDER BY d.id",
                                          NULL, "read decisions", DB_SQL_ONCE};
/* Before SQLite's migration 009: the same, from the columns of then. */
static const struct db_sql SQL_HISTORY_008 = {
    "SELECT id, at, input_json, config_json, decision_json FROM decisions "
    "WHERE job = ?1 AND at <= ?2 ORDER BY id",
    NULL, "read decisions", DB_SQL_ONCE};

int db_history_each(struct db *db, const char *job, int64_t to,
                    int (*fn)(void *ud, int64_t id, int64_t at, const char *input,
                              const char *config, json_t *decision),
                    void *ud, char **errp)
{
    /* The reader's connection may be on either schema (replay --db of an older file). */
    bool old = db->be->compact_since > 0 && db_user_version(db) < db->be->compact_since;
    struct db_cur c;
    int rc = db_query(db, old ? &SQL_HISTORY_008 : &SQL_HISTORY, DB_ARGS(DB_TEXT(job), DB_INT(to)),
                      &c, errp);
    bool more = rc == 0;
    while (more && (more = db_next(&c))) {
        char *input;
        const char *config;
        json_t *dec = NULL;
        if (old) {
            const char *in = db_text(&c, 2);
            input = xstrdup(in ? in : "");
            config = db_text(&c, 3);
            dec = col_json(&c, 4);
        } else {
            input = col_input_text(&c, DC__N);
            config = db_text(&c, DC__N + 1);
            if ((rc = response_of(db, &c, 0, &dec, errp)) < 0) {
                free(input);
                break;
            }
        }
        rc = fn(ud, db_int(&c, old ? 0 : DC_ID), db_int(&c, old ? 1 : DC_AT), input,
                config ? config : "{}", dec);
        free(input);
        json_decref(dec);
        if (rc)
            break;
    }
    return db_finish(&c, rc, errp);
}

static const struct db_sql SQL_DELETIONS = {
    "SELECT coalesce(after_decision, (SELECT max(id) FROM decisions d WHERE d.created_at <= c.at), "
    "0) AS after FROM config_changes c WHERE job = ?1 AND config_json IS NULL ORDER BY after",
    NULL, "read config_changes", DB_SQL_ONCE};

int db_job_deletions(struct db *db, const char *job, int64_t **ids, int *n, char **errp)
{
    struct db_cur c;
    int rc = db_query(db, &SQL_DELETIONS, DB_ARGS(DB_TEXT(job)), &c, errp);
    *ids = NULL;
    *n = 0;
    while (rc == 0 && db_next(&c)) {
        *ids = xrealloc(*ids, (size_t)(*n + 1) * sizeof **ids);
        (*ids)[(*n)++] = db_int(&c, 0);
    }
    rc = db_finish(&c, rc, errp);
    if (rc < 0) {
        free(*ids);
        *ids = NULL;
        *n = 0;
    }
    return rc;
}

static const struct db_sql SQL_EVENTS = {
    "SELECT id, decision_id, at, type, reason, message, count, suppressed FROM events "
    "WHERE job = ?1 ORDER BY at DESC, id DESC LIMIT ?2",
    NULL, "read events", 0};

static int events_row(struct db *db, struct db_cur *c, json_t **v, char **errp)
{
    (void)db;
    (void)errp;
    *v = json_pack("{s:I,s:I,s:I,s:o,s:o,s:o,s:i,s:b}", "id", (json_int_t)db_int(c, 0),
                   "decision_id", (json_int_t)db_int(c, 1), "at", (json_int_t)db_int(c, 2), "type",
                   col_text(c, 3), "reason", col_text(c, 4), "message", col_text(c, 5), "count",
                   (int)db_int(c, 6), "suppressed", (int)db_int(c, 7));
    return 0;
}

int db_events_list(struct db *db, const char *job, int limit, json_t **out, char **errp)
{
    return list(db, &SQL_EVENTS, DB_ARGS(DB_TEXT(job), DB_INT(limit)), "events", events_row, out,
                errp);
}
