/*
 * db.c - the store above its backends (see db.h, backend.h): the connection and its
 * transactions, each write statement's SQL, written once; the rows of each kind of write unit
 * and the one transaction of a group; fault injection; retention's deletes; the write-ahead
 * log's bound, where the backend's log is the store's own (SQLite's). The reads are
 * read.c's. Which backend runs a statement, and in which dialect, is the struct
 * store_backend's business: nothing here tests for one.
 */
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "base/xmem.h"
#include "store/pack.h"
#include "store/query.h"

/* Units sent between two flushes of a pipeline: bounds what the server answers before its
 * answers are read. */
#define DB_PIPE_UNITS 32
/* Effective-option sets a write transaction remembers having stored (config_id). */
#define DB_TX_CONFIGS 8

struct db {
    const struct store_backend *be;
    void *c;      /* the backend's connection */
    int err_code; /* an injected failure's code (0: the backend's own, errcode) */
    bool pipe;    /* a pipelining transaction is open: results come at flush and commit */
    /* the decision_configs rows (hash, text) the open write transaction found or added, with
     * their id when it is known (0 in a pipeline): its later decisions of the same options
     * (a group's units mostly share one set) neither add nor look for theirs; forgotten when
     * the transaction ends, so that nothing another connection deletes is assumed */
    struct {
        char *hash, *text;
        int64_t id;
    } configs[DB_TX_CONFIGS];
    int n_configs;
};

/* Forgets the decision_configs rows the transaction stored. */
static void configs_forget(struct db *db)
{
    for (int i = 0; i < db->n_configs; i++) {
        free(db->configs[i].hash);
        free(db->configs[i].text);
    }
    db->n_configs = 0;
}

/* Fault injection (tests only): set by a test's thread, read by the writer's. */
static atomic_int fail_writes;
static atomic_int fail_code = DB_SQLITE_CONSTRAINT;

/* ------------------------------------------------------------ connection -- */

bool db_is_pg(const char *db)
{
    return db && (strncmp(db, "postgresql://", 13) == 0 || strncmp(db, "postgres://", 11) == 0);
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
    configs_forget(db);
    db->be->close(db->c);
    free(db);
}

int db_user_version(struct db *db)
{
    return db->be->version(db->c);
}

bool db_precompact(struct db *db)
{
    return db->be->compact_since > 0 && db_user_version(db) < db->be->compact_since;
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
    configs_forget(db);
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
    configs_forget(db);
    db->pipe = false;
    return db->be->commit(db->c, errp);
}

void db_rollback(struct db *db)
{
    configs_forget(db);
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

/* ------------------------------------------------------------------- WAL -- */

int db_wal_limit(struct db *db, int64_t bytes, char **errp)
{
    return db->be->wal_limit ? db->be->wal_limit(db->c, bytes, errp) : 0;
}

int64_t db_wal_bytes(const struct db *db)
{
    return db->be->wal_bytes ? db->be->wal_bytes(db->c) : 0;
}

int db_wal_truncate(struct db *db, int busy_ms, char **errp)
{
    return db->be->wal_truncate ? db->be->wal_truncate(db->c, busy_ms, errp) : 0;
}

/* --------------------------------------------------------------- faults -- */

void db_fail_next_writes(int n)
{
    db_fail_next_writes_code(n, DB_SQLITE_CONSTRAINT);
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
 * The jobs row of a unit, fenced by its version and generation (db_write.expect_version,
 * expect_generation; ?5 and ?6 for the state, ?4 and ?5 for the config): each statement in
 * three forms, [0] expect -1 writes whatever is there (a row it inserts takes the unit's
 * generation); [1] a job new to the unit (expect 0) is inserted with the unit's generation,
 * or updated where its version is still 0 (a row from before migration 010), taking the
 * unit's generation; [2] a row known to the unit (expect > 0) is updated only where its
 * version and generation are still those. Each adds 1 to the version and returns it: no row
 * returned is a fence that did not hold (on PostgreSQL an error, backend.h DB_SQL_FENCED).
 */
#define JOB_STATE_UPSERT                                                                           \
    "INSERT INTO jobs (job, created_at, state_bin, last_at, version, generation) "                 \
    "VALUES (?1, ?2, ?3, ?4, 1, ?6) ON CONFLICT (job) DO UPDATE SET state_bin = "                  \
    "excluded.state_bin, last_at = excluded.last_at, version = jobs.version + 1"
static const struct db_sql SQL_JOB_STATE[3] = {
    {JOB_STATE_UPSERT " RETURNING version", NULL, "update job state", 0},
    {JOB_STATE_UPSERT ", generation = excluded.generation WHERE jobs.version = ?5 "
                      "RETURNING version",
     NULL, "update job state", DB_SQL_FENCED},
    {"UPDATE jobs SET state_bin = ?3, last_at = ?4, version = version + 1 "
     "WHERE job = ?1 AND version = ?5 AND generation = ?6 RETURNING version",
     NULL, "update job state", DB_SQL_FENCED}};
#define JOB_CONFIG_UPSERT                                                                          \
    "INSERT INTO jobs (job, created_at, config_json, version, generation) "                        \
    "VALUES (?1, ?2, ?3, 1, ?5) ON CONFLICT (job) DO UPDATE SET config_json = "                    \
    "excluded.config_json, version = jobs.version + 1"
static const struct db_sql SQL_JOB_CONFIG[3] = {
    {JOB_CONFIG_UPSERT " RETURNING version", NULL, "update job config", 0},
    {JOB_CONFIG_UPSERT ", generation = excluded.generation WHERE jobs.version = ?4 "
                       "RETURNING version",
     NULL, "update job config", DB_SQL_FENCED},
    {"UPDATE jobs SET config_json = ?3, version = version + 1 "
     "WHERE job = ?1 AND version = ?4 AND generation = ?5 RETURNING version",
     NULL, "update job config", DB_SQL_FENCED}};
/* [0] unchecked, [1] checked (?2 >= 0, ?3 the generation): no row deleted is a fence that did
 * not hold. On PostgreSQL the check raises, but not for version 0 where there is no row (the
 * EXISTS sees the row as it was before the statement); its row says it held. */
#define JOB_DELETE_FENCED "DELETE FROM jobs WHERE job = ?1 AND version = ?2 AND generation = ?3"
static const struct db_sql SQL_JOB_DELETE[2] = {
    {"DELETE FROM jobs WHERE job = ?1", NULL, "delete job", 0},
    {JOB_DELETE_FENCED,
     "WITH d AS (" JOB_DELETE_FENCED " RETURNING 1) SELECT 1 "
     "UNION ALL SELECT governor_fenced(?1) WHERE NOT EXISTS (SELECT 1 FROM d) "
     "AND (?2 > 0 OR EXISTS (SELECT 1 FROM jobs WHERE job = ?1))",
     "delete job", 0}};
static const struct db_sql SQL_CONFIG_CHANGE = {
    "INSERT INTO config_changes (job, at, config_json, after_decision) "
    "VALUES (?1, ?2, ?3, (SELECT max(id) FROM decisions))",
    NULL, "insert config_changes", 0};
/* The effective options (?1 their hash, ?2 their text) are stored once: a new row unless one
 * of the same hash and text is there (a hash alone could stand for two texts, written by two
 * versions of the options table); the decision takes the first (?15: its id, when the
 * transaction knows it). */
#define CONFIG_FIRST                                                                               \
    "SELECT id FROM decision_configs WHERE hash = ?1 AND config_json = ?2 ORDER BY id LIMIT 1"
static const struct db_sql SQL_CONFIG_ADD = {
    "INSERT INTO decision_configs (hash, config_json) SELECT ?1, ?2 WHERE NOT EXISTS "
    "(SELECT 1 FROM decision_configs WHERE hash = ?1 AND config_json = ?2)",
    NULL, "insert decision_configs", DB_SQL_NEW_ID};
static const struct db_sql SQL_CONFIG_FIRST = {CONFIG_FIRST, NULL, "read decision_configs", 0};
static const struct db_sql SQL_DECISION = {
    "INSERT INTO decisions (job, at, action, reason, execute, message, input, config_id, "
    "response, policy_revision, created_at, message_parts, decision_json) "
    "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, coalesce(?15, (SELECT id FROM decision_configs "
    "WHERE hash = ?8 AND config_json = ?14 ORDER BY id LIMIT 1)), ?9, ?10, ?11, ?12, ?13)",
    NULL, "insert decision", DB_SQL_NEW_ID};
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

/*
 * The decision_configs row of the options, found or added unless the transaction did already:
 * its id in *id, or 0 when it is not known yet (a pipeline's results come later; the
 * decision's statement then looks for it). -1 + *errp.
 */
static int config_id(struct db *db, const char *hash, const char *text, int64_t *id, char **errp)
{
    for (int i = 0; i < db->n_configs; i++)
        if (strcmp(db->configs[i].hash, hash) == 0 && strcmp(db->configs[i].text, text) == 0) {
            *id = db->configs[i].id;
            return 0;
        }
    *id = 0;
    int rows = db_exec(db, &SQL_CONFIG_ADD, DB_ARGS(DB_TEXT(hash), DB_TEXT(text)), id, errp);
    if (rows < 0)
        return -1;
    if (rows == 0 && !db->pipe) { /* stored already: which one */
        struct db_cur c;
        int rc = db_query(db, &SQL_CONFIG_FIRST, DB_ARGS(DB_TEXT(hash), DB_TEXT(text)), &c, errp);
        if (rc == 0 && db_next(&c))
            *id = db_int(&c, 0);
        else if (db_finish(&c, rc, errp) < 0)
            return -1;
        db_end(&c);
    }
    if (db->n_configs < DB_TX_CONFIGS) {
        db->configs[db->n_configs].hash = xstrdup(hash);
        db->configs[db->n_configs].text = xstrdup(text);
        db->configs[db->n_configs++].id = *id;
    }
    return 0;
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
    int64_t parts = message_parts(w, &head), cid;
    if (config_id(db, hash, cfg, &cid, errp) < 0)
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
                             DB_TEXT(w->keep_response ? w->decision_json : NULL), DB_TEXT(cfg),
                             cid ? DB_INT(cid) : DB_NULL),
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
    int rc =
        job_row(db, w, SQL_JOB_STATE,
                DB_ARGS(DB_TEXT(w->job), DB_INT(w->now), DB_BLOB(w->state_bin, w->state_bin_len),
                        w->last_at == INT64_MIN ? DB_NULL : DB_INT(w->last_at),
                        DB_INT(w->expect_version), DB_INT(w->expect_generation)),
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
        int rc = job_row(db, w, SQL_JOB_CONFIG,
                         DB_ARGS(DB_TEXT(w->job), DB_INT(w->now), DB_TEXT(layer),
                                 DB_INT(w->expect_version), DB_INT(w->expect_generation)),
                         errp);
        if (rc != 0)
            return rc < 0 ? -1 : 0;
    } else {
        bool check = w->expect_version >= 0;
        int rows = db_exec(
            db, &SQL_JOB_DELETE[check],
            DB_ARGS(DB_TEXT(w->job), DB_INT(w->expect_version), DB_INT(w->expect_generation)), NULL,
            errp);
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
