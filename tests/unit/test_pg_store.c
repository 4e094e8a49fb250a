/*
 * test_pg_store.c - the PostgreSQL store against the SQLite one: the same write units give the
 * same JSON from every read of db.h; a unit computed from a job version that moved stores
 * nothing (DB_FAULT_FENCED); a refused row is a unit fault and a lost connection a storage
 * fault, after which the next transaction reconnects. Needs GOVERNOR_TEST_PG_URL (a fresh
 * database: tests/pg/with_pg.py sets it, CTest's pg.unit_pg_store); without it every test
 * passes without running (unit.test_pg_store).
 */
#include <libpq-fe.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/jarena.h"
#include "store/db.h"
#include <limits.h>

#include "test.h"

static const char *pg_url(void)
{
    const char *u = getenv("GOVERNOR_TEST_PG_URL");
    return u && *u ? u : NULL;
}

static struct db *open_sqlite(char *path, size_t n)
{
    char *err = NULL;
    snprintf(path, n, "/tmp/governor-test-pg-store-%d.db", (int)getpid());
    unlink(path);
    struct db *db = db_open(path, "OFF", &err);
    if (!db)
        fprintf(stderr, "db_open: %s\n", err);
    free(err);
    return db;
}

static struct db *open_pg(void)
{
    char *err = NULL;
    struct db *db = db_open(pg_url(), "FULL", &err);
    if (!db)
        fprintf(stderr, "db_open: %s\n", err);
    free(err);
    return db;
}

/* new: n bytes of b (which may hold NUL bytes). */
static unsigned char *dup_bytes(const char *b, size_t n)
{
    unsigned char *c = malloc(n);
    memcpy(c, b, n);
    return c;
}

/* new: bytes as hex, for the text compared. */
static json_t *hex(const void *b, size_t n)
{
    char *t = malloc(2 * n + 1);
    for (size_t i = 0; i < n; i++)
        snprintf(t + 2 * i, 3, "%02x", ((const unsigned char *)b)[i]);
    t[2 * n] = '\0';
    json_t *j = json_string(t);
    free(t);
    return j;
}

/* A decision of job at `at` with two vertices, an event, a plugin call and a window sample. */
static struct db_write *decision(const char *job, int64_t at, int64_t seq)
{
    struct db_write *w = db_write_new(DB_W_DECISION, job);
    w->at = at;
    w->now = 1764410400000 + seq;
    w->state_bin = dup_bytes("\x01\x02state\x00x", 9);
    w->state_bin_len = 9;
    w->window_seq0 = seq > 2 ? seq - 2 : 0;
    w->n_ws = 1;
    w->ws = calloc(1, sizeof *w->ws);
    w->ws[0].seq = seq;
    w->ws[0].blob = dup_bytes("\x00sample\xff", 8);
    w->ws[0].len = 8;
    w->last_at = at;
    w->action = strdup(seq % 2 ? "SCALE" : "NO_CHANGE");
    w->reason = strdup("SCALE_UP");
    w->message = strdup("scaling 2 vertices: source 4 -> 8; agg 4 -> 6");
    w->execute = seq % 2;
    w->input_json = strdup("{\"at\": 1, \"vertices\": [{\"id\": \"source\"}], \"x\": 1.50}");
    w->config_json = strdup("{\"job.autoscaler.utilization.target\":\"0.7\"}");
    w->config_hash = strdup("0123456789abcdef");
    w->policy_revision = strdup("native");
    w->response_json = strdup("{\"warnings\":[\"w\"],\"config_changes\":{\"a\":\"1\"}}");
    w->n_v = 2;
    w->v = calloc(2, sizeof *w->v);
    w->v[0] = (struct db_vrow){strdup("source"),
                               strdup("SCALE_UP"),
                               strdup("[]"),
                               strdup("source 4 -> 8"),
                               strdup("{\"load\":0.9,\"lag\":null}"),
                               4,
                               8,
                               8,
                               false,
                               true};
    w->v[1] = (struct db_vrow){strdup("agg"),
                               strdup("SCALE_UP"),
                               strdup("[\"max\"]"),
                               strdup("agg 4 -> 6"),
                               strdup("{\"not\": \"figures\"}"),
                               4,
                               7,
                               6,
                               true,
                               false};
    w->n_e = 1;
    w->e = calloc(1, sizeof *w->e);
    w->e[0] = (struct db_erow){strdup("Normal"), strdup("ScalingReport"), strdup("m"), 2, false};
    w->n_p = 1;
    w->p = calloc(1, sizeof *w->p);
    w->p[0] = (struct db_prow){strdup("p"), strdup("evaluate"), strdup("ok"), NULL, 120};
    return w;
}

static struct db_write *config(const char *job, const char *layer, int64_t now)
{
    struct db_write *w = db_write_new(layer ? DB_W_JOB_CONFIG : DB_W_JOB_DELETE, job);
    w->at = w->now = now;
    w->job_config_json = layer ? strdup(layer) : NULL;
    return w;
}

/* Applies w in its own transaction; frees it. 0, or -1 with the fault in *fault. */
static int apply(struct db *db, struct db_write *w, enum db_fault *fault, int64_t *version)
{
    char *err = NULL;
    int rc = 0;
    if (db_begin(db, &err) < 0 || db_write_apply(db, w, &err) < 0 || db_commit(db, &err) < 0) {
        if (fault)
            *fault = db_fault_of(db_last_errcode(db));
        db_rollback(db);
        rc = -1;
    }
    if (version)
        *version = w->new_version;
    free(err);
    db_write_free(w);
    return rc;
}

static void put(char **acc, const char *what, json_t *j)
{
    char *t = j ? jarena_dump(j) : strdup("NULL");
    char *n = NULL;
    if (asprintf(&n, "%s%s=%s\n", *acc ? *acc : "", what, t) < 0)
        abort();
    free(*acc);
    free(t);
    *acc = n;
}

static int hist_cb(void *ud, int64_t id, int64_t at, const char *input, const char *cfg,
                   json_t *decision)
{
    json_t *o = json_pack("{s:I,s:I,s:s,s:s,s:O}", "id", (json_int_t)id, "at", (json_int_t)at,
                          "input", input, "config", cfg, "decision", decision);
    put(ud, "history", o);
    json_decref(o);
    return 0;
}

static int jobs_cb(void *ud, const struct db_job_row *r)
{
    /* generation: drawn at random by the registry, 0 in these units */
    json_t *o =
        json_pack("{s:s,s:I,s:s,s:o,s:I,s:I,s:o}", "job", r->job, "created_at",
                  (json_int_t)r->created_at, "config", r->config_json, "state",
                  hex(r->state_bin, r->state_bin_len), "last_at", (json_int_t)r->last_at, "version",
                  (json_int_t)r->version, "samples", hex(r->samples, r->samples_len));
    put(ud, "job", o);
    json_decref(o);
    return 0;
}

static int window_cb(void *ud, int64_t seq, const void *blob, size_t len)
{
    json_t *o = json_pack("{s:I,s:o}", "seq", (json_int_t)seq, "blob", hex(blob, len));
    put(ud, "window", o);
    json_decref(o);
    return 0;
}

/* new: every read of db.h on the rows below, as text. */
static char *everything(struct db *db)
{
    char *acc = NULL, *err = NULL, *in = NULL, *dj = NULL;
    json_t *j = NULL;
    int64_t id = 0, *ids = NULL;
    int n = 0;
    struct db_page page = {0, INT64_MAX, INT64_MAX, 100, INT_MAX, false, 0, 0};
    if (db_decisions_list(db, "j1", &page, &j, &err) == 0)
        put(&acc, "list", j);
    json_decref(j);
    for (int64_t i = 1; i <= 5; i++) {
        j = NULL;
        if (db_decision_get(db, i, &j, &err) == 0)
            put(&acc, "get", j);
        json_decref(j);
    }
    bool from_samples = false;
    if (db_decision_find(db, "j1", 2000, &id, &in, &from_samples, &dj, &err) == 1) {
        json_t *o = json_pack("{s:I,s:s,s:s}", "id", (json_int_t)id, "input", in, "decision", dj);
        put(&acc, "find", o);
        json_decref(o);
    }
    free(in);
    free(dj);
    db_history_each(db, "j1", INT64_MAX, INT64_MAX, hist_cb, &acc, &err);
    j = NULL;
    if (db_events_list(db, "j1", 10, &j, &err) == 0)
        put(&acc, "events", j);
    json_decref(j);
    if (db_job_deletions(db, "j1", &ids, &n, &err) == 0) {
        json_t *a = json_array();
        for (int i = 0; i < n; i++)
            json_array_append_new(a, json_integer(ids[i]));
        put(&acc, "deletions", a);
        json_decref(a);
    }
    free(ids);
    db_jobs_each(db, NULL, 1000, jobs_cb, &acc, &err);
    db_window_each(db, "j2", 0, window_cb, &acc, &err);
    if (err)
        put(&acc, "error", json_string(err));
    free(err);
    return acc;
}

/* The same units on both stores: one alone, the rest as one group (PostgreSQL: one pipeline). */
static void write_all(struct db *db)
{
    char *err = NULL;
    apply(db, config("j1", "{\"a\":\"1\"}", 1764410399000), NULL, NULL);
    struct db_write *g[6] = {decision("j1", 1000, 1),           decision("j1", 2000, 2),
                             config("j1", NULL, 1764410400003), decision("j1", 3000, 3),
                             decision("j2", 1000, 4),           db_write_new(DB_W_POLICY, "")};
    g[5]->at = g[5]->now = g[5]->loaded_at = 1764410400005;
    g[5]->revision = strdup("rev1");
    g[5]->files_json = strdup("{\"a.lua\":\"x\"}");
    if (db_write_group(db, g, 6, &err) < 0)
        fprintf(stderr, "db_write_group: %s\n", err);
    if (g[3]->decision_id != 3)
        fprintf(stderr, "decision_id %lld\n", (long long)g[3]->decision_id);
    for (int i = 0; i < 6; i++)
        db_write_free(g[i]);
    free(err);
}

static void test_same_json_as_sqlite(void)
{
    if (!pg_url())
        return;
    char path[96];
    struct db *lite = open_sqlite(path, sizeof path), *pg = open_pg();
    ASSERT(lite && pg);
    write_all(lite);
    write_all(pg);
    char *a = everything(lite), *b = everything(pg);
    int same = strcmp(a, b) == 0;
    if (getenv("GOVERNOR_TEST_SHOW"))
        fprintf(stderr, "%s", b);
    if (!same)
        fprintf(stderr, "SQLite:\n%s\nPostgreSQL:\n%s\n", a, b);
    free(a);
    free(b);
    db_close(lite);
    db_close(pg);
    unlink(path);
    ASSERT(same);
}

static int n_decisions(struct db *db, const char *job)
{
    json_t *j = NULL;
    char *err = NULL;
    int n = -1;
    struct db_page page = {0, INT64_MAX, INT64_MAX, 1000, INT_MAX, false, 0, 0};
    if (db_decisions_list(db, job, &page, &j, &err) == 0)
        n = (int)json_array_size(json_object_get(j, "decisions"));
    json_decref(j);
    free(err);
    return n;
}

static void test_fencing(void)
{
    if (!pg_url())
        return;
    struct db *db = open_pg();
    ASSERT(db);
    enum db_fault f = DB_FAULT_NONE;
    int64_t v = -1;
    struct db_write *w = decision("fj", 1000, 1);
    w->expect_version = 0; /* a job never stored */
    ASSERT_EQ(apply(db, w, &f, &v), 0);
    ASSERT_EQ(v, 1);
    w = decision("fj", 2000, 2);
    w->expect_version = 1;
    ASSERT_EQ(apply(db, w, &f, &v), 0);
    ASSERT_EQ(v, 2);
    /* Another process computed from version 1 too: it stores nothing. */
    w = decision("fj", 3000, 3);
    w->expect_version = 1;
    ASSERT_EQ(apply(db, w, &f, NULL), -1);
    ASSERT_EQ(f, DB_FAULT_FENCED);
    ASSERT_EQ(n_decisions(db, "fj"), 2);
    /* Not the first write of a job that another process stored already. */
    w = config("fj", "{}", 1);
    w->expect_version = 0;
    ASSERT_EQ(apply(db, w, &f, NULL), -1);
    ASSERT_EQ(f, DB_FAULT_FENCED);
    w = config("fj", "{}", 1);
    w->expect_version = 2;
    ASSERT_EQ(apply(db, w, &f, &v), 0);
    ASSERT_EQ(v, 3);
    w = config("fj", NULL, 1);
    w->expect_version = 2;
    ASSERT_EQ(apply(db, w, &f, NULL), -1);
    ASSERT_EQ(f, DB_FAULT_FENCED);
    w = config("fj", NULL, 1);
    w->expect_version = 3;
    ASSERT_EQ(apply(db, w, &f, NULL), 0);
    /* Unchecked (-1): written whatever the version. */
    w = decision("fj", 4000, 4);
    ASSERT_EQ(apply(db, w, &f, &v), 0);
    ASSERT_EQ(v, 1);
    ASSERT_EQ(n_decisions(db, "fj"), 3);
    /* In a group (one pipeline): the fenced unit fails the group, which stores nothing. */
    struct db_write *g[2] = {decision("fj2", 1000, 1), decision("fj", 5000, 5)};
    g[1]->expect_version = 0;
    char *err = NULL;
    ASSERT_EQ(db_write_group(db, g, 2, &err), -1);
    ASSERT_EQ(db_fault_of(db_last_errcode(db)), DB_FAULT_FENCED);
    ASSERT_CONTAINS(err, "fj");
    free(err);
    db_write_free(g[0]);
    db_write_free(g[1]);
    ASSERT_EQ(n_decisions(db, "fj2"), 0);
    ASSERT_EQ(n_decisions(db, "fj"), 3);
    /* and the connection goes on */
    g[0] = decision("fj2", 1000, 1);
    g[1] = decision("fj", 5000, 5);
    g[1]->expect_version = 1;
    err = NULL;
    ASSERT_EQ(db_write_group(db, g, 2, &err), 0);
    ASSERT_EQ(g[1]->new_version, 2);
    ASSERT(g[0]->decision_id > 0 && g[1]->decision_id == g[0]->decision_id + 1);
    db_write_free(g[0]);
    db_write_free(g[1]);
    ASSERT_EQ(n_decisions(db, "fj"), 4);
    db_close(db);
}

static void test_faults(void)
{
    if (!pg_url())
        return;
    struct db *db = open_pg();
    ASSERT(db);
    enum db_fault f = DB_FAULT_NONE;
    struct db_write *w = db_write_new(DB_W_DECISION, "bad"); /* NOT NULL columns missing */
    w->at = w->now = 1;
    ASSERT_EQ(apply(db, w, &f, NULL), -1);
    ASSERT_EQ(f, DB_FAULT_UNIT);
    ASSERT_EQ(apply(db, decision("ok", 1000, 1), &f, NULL), 0);
    /* The server ends the connection (an administrator, a failover). */
    char *err = NULL;
    ASSERT_EQ(db_begin(db, &err), 0);
    PGconn *admin = PQconnectdb(pg_url());
    PQclear(PQexec(admin, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                          "WHERE datname = current_database() AND pid <> pg_backend_pid()"));
    PQfinish(admin);
    w = decision("ok", 2000, 2);
    int rc = db_write_apply(db, w, &err);
    f = db_fault_of(db_last_errcode(db));
    db_rollback(db);
    db_write_free(w);
    free(err);
    err = NULL;
    ASSERT_EQ(rc, -1);
    ASSERT_EQ(f, DB_FAULT_STORAGE);
    /* The next transaction reconnects. */
    ASSERT_EQ(db_probe(db, 5, 100, &err), 0);
    ASSERT_EQ(apply(db, decision("ok", 2000, 2), &f, NULL), 0);
    ASSERT_EQ(n_decisions(db, "ok"), 2);
    free(err);
    db_close(db);
}

static struct db_write *retention(int64_t cutoff)
{
    struct db_write *w = db_write_new(DB_W_RETENTION, "");
    w->cutoff = cutoff;
    w->batch = 500;
    return w;
}

/* One replica at a time deletes old history: while one holds the retention lock (its batch's
 * transaction is open), another's batch deletes nothing, and deletes once the lock is free. */
static void test_retention_leader(void)
{
    if (!pg_url())
        return;
    struct db *a = open_pg(), *b = open_pg();
    ASSERT(a && b);
    enum db_fault f = DB_FAULT_NONE;
    ASSERT_EQ(apply(a, decision("rl", 1000, 1), &f, NULL), 0);
    char *err = NULL;
    struct db_write *wa = retention(0); /* takes the lock, deletes nothing older than 0 */
    ASSERT_EQ(db_begin(a, &err), 0);
    ASSERT_EQ(db_write_apply(a, wa, &err), 0);
    ASSERT_EQ(wa->deleted, 0);
    struct db_write *wb = retention(INT64_MAX);
    ASSERT_EQ(db_begin(b, &err), 0);
    ASSERT_EQ(db_write_apply(b, wb, &err), 0);
    ASSERT_EQ(db_commit(b, &err), 0);
    ASSERT_EQ(wb->deleted, 0);
    ASSERT_EQ(n_decisions(b, "rl"), 1);
    ASSERT_EQ(db_commit(a, &err), 0);
    db_write_free(wb);
    wb = retention(INT64_MAX);
    ASSERT_EQ(db_begin(b, &err), 0);
    ASSERT_EQ(db_write_apply(b, wb, &err), 0);
    ASSERT_EQ(db_commit(b, &err), 0);
    ASSERT(wb->deleted >= 1);
    ASSERT_EQ(n_decisions(b, "rl"), 0);
    db_write_free(wa);
    db_write_free(wb);
    free(err);
    db_close(a);
    db_close(b);
}

TEST_MAIN(TEST_ENTRY(test_same_json_as_sqlite), TEST_ENTRY(test_fencing), TEST_ENTRY(test_faults),
          TEST_ENTRY(test_retention_leader))
