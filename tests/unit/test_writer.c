/*
 * test_writer.c - the group-committing writer thread on a temporary database: a unit whose
 * rows are refused fails alone (its group is written again unit by unit) and fails the later
 * units of its job until the job is recovered; a storage fault fails units at once and
 * marks the writer unhealthy until a probe commits; shutting down while faulted answers
 * every queued unit; the synchronous form classifies its failures; a unit fenced on a job
 * version that moved stores nothing, fails the later units of its job, and not its group.
 */
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>
#include <event2/thread.h>

#include "store/db.h"
#include "test.h"
#include "store/writer.h"

static char g_path[96];
static struct event_base *g_base;

/* The units whose done callback ran, in order (freed by the test). */
struct done {
    struct db_write *w[32];
    int n;
};

static void done_cb(struct db_write *w, void *ud)
{
    struct done *d = ud;
    if (d->n < 32)
        d->w[d->n++] = w;
    else
        db_write_free(w);
}

static void done_free(struct done *d)
{
    for (int i = 0; i < d->n; i++)
        db_write_free(d->w[i]);
    d->n = 0;
}

/* Runs the loop until n callbacks ran (or 20 s passed). */
static int wait_done(struct done *d, int n)
{
    for (int t = 0; t < 20000 && d->n < n; t++) {
        event_base_loop(g_base, EVLOOP_NONBLOCK);
        usleep(1000);
    }
    return d->n >= n;
}

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static void fresh_db(void)
{
    char p[128];
    snprintf(g_path, sizeof g_path, "/tmp/governor-test-writer-%d.db", (int)getpid());
    unlink(g_path);
    snprintf(p, sizeof p, "%s-wal", g_path);
    unlink(p);
    snprintf(p, sizeof p, "%s-shm", g_path);
    unlink(p);
    char *err = NULL;
    struct db *db = db_open(g_path, "OFF", &err);
    if (!db) {
        fprintf(stderr, "db_open: %s\n", err);
        exit(1);
    }
    db_close(db);
}

/* A stored config change of job: a unit the store takes. */
static struct db_write *good(const char *job)
{
    struct db_write *w = db_write_new(DB_W_JOB_CONFIG, job);
    w->at = w->now = 1764410400000;
    w->job_config_json = strdup("{}");
    return w;
}

/* A decision without its NOT NULL columns: a unit the store refuses (a constraint). */
static struct db_write *bad(const char *job)
{
    struct db_write *w = db_write_new(DB_W_DECISION, job);
    w->at = w->now = 1764410400000;
    return w;
}

static int count(const char *sql)
{
    sqlite3 *h = NULL;
    sqlite3_stmt *st = NULL;
    int n = -1;
    sqlite3_open(g_path, &h);
    if (sqlite3_prepare_v2(h, sql, -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
        n = sqlite3_column_int(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(h);
    return n;
}

/* Holds the write lock from another connection after submitting first, so that the units
 * submitted until group_release queue behind it and form one group. NULL on failure. */
static sqlite3 *group_hold(struct writer *wr, struct db_write *first, struct done *d)
{
    sqlite3 *lock = NULL;
    sqlite3_open(g_path, &lock);
    if (sqlite3_exec(lock, "BEGIN EXCLUSIVE", NULL, NULL, NULL) != SQLITE_OK) {
        sqlite3_close(lock);
        return NULL;
    }
    writer_submit(wr, first, done_cb, d);
    usleep(100 * 1000);
    return lock;
}

static void group_release(sqlite3 *lock)
{
    usleep(100 * 1000);
    sqlite3_exec(lock, "ROLLBACK", NULL, NULL, NULL);
    sqlite3_close(lock);
}

static void test_bad_unit_fails_alone(void)
{
    struct done d = {0};
    char *err = NULL;
    fresh_db();
    struct writer *wr = writer_new(g_base, g_path, "OFF", 64, 0, &err);
    ASSERT(wr != NULL);
    sqlite3 *lock = group_hold(wr, good("p"), &d);
    ASSERT(lock != NULL);
    writer_submit(wr, good("y"), done_cb, &d);
    writer_submit(wr, bad("x"), done_cb, &d);
    writer_submit(wr, good("x"), done_cb, &d); /* made from x's state after the bad one */
    writer_submit(wr, good("z"), done_cb, &d);
    ASSERT_EQ(writer_job_pending(wr, "x"), 2);
    group_release(lock);
    ASSERT(wait_done(&d, 5));
    ASSERT(d.w[0]->ok && d.w[1]->ok && d.w[4]->ok);
    ASSERT(!d.w[2]->ok);
    ASSERT_EQ(d.w[2]->fault, DB_FAULT_UNIT);
    ASSERT_CONTAINS(d.w[2]->error, "NOT NULL");
    ASSERT(!d.w[3]->ok);
    ASSERT_EQ(d.w[3]->fault, DB_FAULT_STALE);
    ASSERT_EQ(writer_health(wr, NULL, 0, NULL), 0); /* a refused unit is not a storage fault */
    ASSERT(writer_job_blocked(wr, "x"));
    ASSERT(!writer_job_blocked(wr, "y"));
    ASSERT_EQ(writer_job_pending(wr, "x"), 0);
    done_free(&d);
    /* x stays blocked until the loop says it reloaded it; the others go on. */
    writer_submit(wr, good("x"), done_cb, &d);
    writer_submit(wr, good("y"), done_cb, &d);
    ASSERT(wait_done(&d, 2));
    ASSERT(!d.w[0]->ok && d.w[0]->fault == DB_FAULT_STALE);
    ASSERT(d.w[1]->ok);
    done_free(&d);
    writer_job_recovered(wr, "x");
    ASSERT(!writer_job_blocked(wr, "x"));
    writer_submit(wr, good("x"), done_cb, &d);
    ASSERT(wait_done(&d, 1));
    ASSERT(d.w[0]->ok);
    done_free(&d);
    writer_free(wr);
    ASSERT_EQ(count("SELECT count(*) FROM config_changes"), 5); /* p, y, z, y, x */
    ASSERT_EQ(count("SELECT count(*) FROM decisions"), 0);
}

static void test_storage_fault_and_recovery(void)
{
    struct done d = {0};
    char *err = NULL, msg[256];
    int retry = 0;
    fresh_db();
    struct writer *wr = writer_new(g_base, g_path, "OFF", 64, 0, &err);
    ASSERT(wr != NULL);
    /* The unit and the next two probes fail as if the disk were full. */
    db_fail_next_writes_code(3, SQLITE_FULL);
    double t0 = now_ms();
    writer_submit(wr, good("a"), done_cb, &d);
    ASSERT(wait_done(&d, 1));
    ASSERT(!d.w[0]->ok);
    ASSERT_EQ(d.w[0]->fault, DB_FAULT_STORAGE);
    ASSERT_CONTAINS(d.w[0]->error, "full");
    ASSERT_EQ(writer_health(wr, msg, sizeof msg, &retry), -1);
    ASSERT_CONTAINS(msg, "full");
    ASSERT(retry >= 1);
    /* While faulted, a unit fails at once without touching the store (the injected failures
     * left are the probes'). */
    writer_submit(wr, good("b"), done_cb, &d);
    ASSERT(wait_done(&d, 2));
    ASSERT(!d.w[1]->ok && d.w[1]->fault == DB_FAULT_STORAGE);
    /* Probes at 0.2 s, then 0.4 s later, then 0.8 s later: the third commits. */
    while (writer_health(wr, NULL, 0, NULL) < 0 && now_ms() - t0 < 20000)
        usleep(10 * 1000);
    ASSERT_EQ(writer_health(wr, NULL, 0, NULL), 0);
    ASSERT(now_ms() - t0 >= 1000);
    ASSERT_EQ(count("SELECT count(*) FROM store_probe"), 1);
    done_free(&d);
    /* a and b failed: blocked until reloaded; then writes work again. */
    ASSERT(writer_job_blocked(wr, "a") && writer_job_blocked(wr, "b"));
    writer_job_recovered(wr, "a");
    writer_job_recovered(wr, "b");
    writer_submit(wr, good("a"), done_cb, &d);
    writer_submit(wr, good("b"), done_cb, &d);
    ASSERT(wait_done(&d, 2));
    ASSERT(d.w[0]->ok && d.w[1]->ok);
    done_free(&d);
    writer_free(wr);
    ASSERT_EQ(count("SELECT count(*) FROM config_changes"), 2);
}

static void test_free_while_faulted(void)
{
    struct done d = {0};
    char *err = NULL;
    fresh_db();
    struct writer *wr = writer_new(g_base, g_path, "OFF", 64, 0, &err);
    ASSERT(wr != NULL);
    db_fail_next_writes_code(1000000, SQLITE_IOERR_WRITE);
    writer_submit(wr, good("a"), done_cb, &d);
    ASSERT(wait_done(&d, 1));
    for (int i = 0; i < 3; i++)
        writer_submit(wr, good("c"), done_cb, &d);
    writer_free(wr); /* answers the queued units: they fail, nothing hangs */
    db_fail_next_writes_code(0, SQLITE_OK);
    ASSERT_EQ(d.n, 4);
    for (int i = 0; i < 4; i++)
        ASSERT(!d.w[i]->ok && d.w[i]->fault != DB_FAULT_NONE);
    done_free(&d);
    ASSERT_EQ(count("SELECT count(*) FROM config_changes"), 0);
}

static void test_commit_group_classifies(void)
{
    char *err = NULL;
    fresh_db();
    struct db *db = db_open(g_path, "OFF", &err);
    ASSERT(db != NULL);
    struct db_write *w = good("a");
    db_fail_next_writes_code(1, SQLITE_BUSY);
    ASSERT_EQ(writer_commit_group(db, &w, 1, &err), -1);
    ASSERT_EQ(w->fault, DB_FAULT_STORAGE);
    free(err);
    err = NULL;
    db_fail_next_writes(1);
    ASSERT_EQ(writer_commit_group(db, &w, 1, &err), -1);
    ASSERT_EQ(w->fault, DB_FAULT_UNIT);
    free(err);
    err = NULL;
    ASSERT_EQ(writer_commit_group(db, &w, 1, &err), 0);
    ASSERT(w->ok);
    db_write_free(w);
    w = bad("a");
    ASSERT_EQ(writer_commit_group(db, &w, 1, &err), -1);
    ASSERT_EQ(w->fault, DB_FAULT_UNIT);
    free(err);
    db_write_free(w);
    /* the probe writes its one row, and fails like a write when the store does */
    err = NULL;
    ASSERT_EQ(db_probe(db, 1, 100, &err), 0);
    db_fail_next_writes_code(1, SQLITE_READONLY);
    ASSERT_EQ(db_probe(db, 2, 100, &err), -1);
    ASSERT_EQ(db_fault_of(db_last_errcode(db)), DB_FAULT_STORAGE);
    free(err);
    db_close(db);
    ASSERT_EQ(db_fault_of(SQLITE_FULL), DB_FAULT_STORAGE);
    ASSERT_EQ(db_fault_of(SQLITE_IOERR_FSYNC), DB_FAULT_STORAGE);
    ASSERT_EQ(db_fault_of(SQLITE_CONSTRAINT_NOTNULL), DB_FAULT_UNIT);
}

static int run_all(void);

/* A config change of job fenced on version expect (-1: none). */
static struct db_write *fenced_config(const char *job, int64_t expect)
{
    struct db_write *w = good(job);
    w->expect_version = expect;
    return w;
}

static void test_fence(void)
{
    struct done d = {0};
    char *err = NULL;
    fresh_db();
    struct writer *wr = writer_new(g_base, g_path, "OFF", 64, 0, &err);
    ASSERT(wr != NULL);
    /* f is new (expect 0): inserted at version 1; another process's view of it is then stale. */
    writer_submit(wr, fenced_config("f", 0), done_cb, &d);
    ASSERT(wait_done(&d, 1));
    ASSERT(d.w[0]->ok);
    ASSERT_EQ(d.w[0]->new_version, 1);
    done_free(&d);
    /* One group: f made from version 0 again (another process inserted f first), then a unit
     * made from its state, and units of other jobs around them. */
    sqlite3 *lock = group_hold(wr, good("p"), &d);
    ASSERT(lock != NULL);
    writer_submit(wr, fenced_config("g", 0), done_cb, &d);
    writer_submit(wr, fenced_config("f", 0), done_cb, &d);
    writer_submit(wr, fenced_config("f", 1), done_cb, &d); /* made from the one before */
    writer_submit(wr, fenced_config("h", -1), done_cb, &d);
    group_release(lock);
    ASSERT(wait_done(&d, 5));
    ASSERT(d.w[0]->ok && d.w[1]->ok && d.w[4]->ok);
    ASSERT_EQ(d.w[1]->new_version, 1);
    ASSERT(!d.w[2]->ok);
    ASSERT_EQ(d.w[2]->fault, DB_FAULT_FENCED);
    ASSERT_CONTAINS(d.w[2]->error, "another process");
    ASSERT(!d.w[3]->ok);
    ASSERT_EQ(d.w[3]->fault, DB_FAULT_STALE);
    ASSERT_EQ(writer_health(wr, NULL, 0, NULL), 0); /* a fence is not a storage fault */
    ASSERT_EQ(count("SELECT version FROM jobs WHERE job = 'f'"), 1);
    ASSERT_EQ(count("SELECT count(*) FROM config_changes WHERE job = 'f'"), 1);
    ASSERT_EQ(count("SELECT count(*) FROM config_changes"), 4);
    done_free(&d);
    /* f's later units fail until it is reloaded; then the current version is taken. */
    ASSERT(writer_job_blocked(wr, "f"));
    writer_job_recovered(wr, "f");
    writer_submit(wr, fenced_config("f", 1), done_cb, &d);
    ASSERT(wait_done(&d, 1));
    ASSERT(d.w[0]->ok);
    ASSERT_EQ(d.w[0]->new_version, 2);
    done_free(&d);
    /* A deletion made from an older version deletes nothing; from the current one, the row. */
    struct db_write *del = db_write_new(DB_W_JOB_DELETE, "f");
    del->expect_version = 1;
    writer_submit(wr, del, done_cb, &d);
    ASSERT(wait_done(&d, 1));
    ASSERT_EQ(d.w[0]->fault, DB_FAULT_FENCED);
    ASSERT_EQ(count("SELECT count(*) FROM jobs WHERE job = 'f'"), 1);
    done_free(&d);
    writer_job_recovered(wr, "f");
    del = db_write_new(DB_W_JOB_DELETE, "f");
    del->expect_version = 2;
    writer_submit(wr, del, done_cb, &d);
    ASSERT(wait_done(&d, 1));
    ASSERT(d.w[0]->ok);
    ASSERT_EQ(count("SELECT count(*) FROM jobs WHERE job = 'f'"), 0);
    done_free(&d);
    /* A unit that knew the row (expect > 0) does not bring a deleted job back. */
    writer_submit(wr, fenced_config("f", 2), done_cb, &d);
    ASSERT(wait_done(&d, 1));
    ASSERT_EQ(d.w[0]->fault, DB_FAULT_FENCED);
    ASSERT_EQ(count("SELECT count(*) FROM jobs WHERE job = 'f'"), 0);
    done_free(&d);
    writer_free(wr);
}

int main(void)
{
    evthread_use_pthreads();
    g_base = event_base_new();
    int rc = run_all();
    event_base_free(g_base);
    char p[128];
    unlink(g_path);
    snprintf(p, sizeof p, "%s-wal", g_path);
    unlink(p);
    snprintf(p, sizeof p, "%s-shm", g_path);
    unlink(p);
    return rc;
}

static int run_all(void)
{
    static const struct test_case tests[] = {
        TEST_ENTRY(test_bad_unit_fails_alone), TEST_ENTRY(test_storage_fault_and_recovery),
        TEST_ENTRY(test_free_while_faulted), TEST_ENTRY(test_commit_group_classifies),
        TEST_ENTRY(test_fence)};
    return test_run(tests, (int)(sizeof tests / sizeof tests[0]));
}
