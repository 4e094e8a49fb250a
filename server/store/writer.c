/*
 * writer.c - the group-committing writer thread (see writer.h).
 *
 * Queue: a singly linked FIFO under a mutex. The thread takes up to max_batch units,
 * writes them in one transaction, then moves them to the done list and wakes the loop
 * with event_active (thread-safe once libevent threading is on). The loop's callback
 * takes the whole done list and runs each unit's callback.
 *
 * Beside the queue, under the same mutex: a small hash table of the jobs that have units in
 * flight or a failed unit not yet recovered (struct wjob), and the faulted state with its
 * probe schedule (on CLOCK_MONOTONIC, which the condition variable waits on too).
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <event2/event.h>

#include "base/log.h"
#include "store/writer.h"
#include "base/xmem.h"

#define WJOB_BUCKETS 256
/* The first probe after a storage fault, the longest interval between probes, and the
 * probe's wait for another connection's lock (a probe that waited the connection's full
 * busy timeout would hold up the units queued behind it). */
#define PROBE_FIRST_MS 200
#define PROBE_MAX_MS   2000
#define PROBE_BUSY_MS  100
/* A write-ahead log past its limit (writer_new's wal_max) is truncated by a checkpoint that
 * waits for the readers still on older snapshots: first at most CKPT_WAIT_FIRST_MS, then,
 * CKPT_RETRY_MS later while it stays past the limit, four times as long, up to
 * CKPT_WAIT_MAX_MS (the store's busy timeout, which a write already tolerates from another
 * process). A log past its limit means readers overlap without a gap: a page of a timeline is
 * read in milliseconds, so a first wait of 50 ms sees them through; a query of POST /v1/sql
 * may hold its snapshot up to sql-timeout, which the longer waits cover. */
#define CKPT_WAIT_FIRST_MS 50
#define CKPT_WAIT_MAX_MS   5000
#define CKPT_RETRY_MS      50

/* A job with units in flight or a failed unit not yet recovered. */
struct wjob {
    struct wjob *next;
    int pending;   /* submitted, callback not yet run */
    bool poisoned; /* a unit failed: later units fail until writer_job_recovered */
    char job[];
};

struct writer {
    struct db *db;
    bool pg; /* a PostgreSQL store: groups are sorted by job (sort_by_job) */
    struct event *done_ev;
    int max_batch;
    pthread_t th;
    bool started;

    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct db_write *q_head, *q_tail; /* waiting to be written */
    struct db_write *d_head, *d_tail; /* written (or failed), callback pending */
    bool stop;
    int pending; /* submitted, callback not yet run (loop thread only) */
    struct wjob *jobs[WJOB_BUCKETS];
    bool faulted;        /* the store refuses writes: units fail at once */
    char fault_msg[512]; /* what failed last */
    int probe_ms;        /* the current interval between probes */
    struct timespec next_probe, fault_since;
    struct writer_stats st;
    /* The write-ahead log's limit (0: none), and while it is past it, the next checkpoint's
     * time and wait (thread only; read under mu by the wait for work). */
    int64_t wal_max;
    bool ckpt_pending;
    int ckpt_wait_ms;
    struct timespec next_ckpt;
};

/* ------------------------------------------------------------------ time -- */

static void mono_now(struct timespec *t)
{
    clock_gettime(CLOCK_MONOTONIC, t);
}

static int64_t ms_between(const struct timespec *a, const struct timespec *b)
{
    return (int64_t)(b->tv_sec - a->tv_sec) * 1000 + (b->tv_nsec - a->tv_nsec) / 1000000;
}

static bool due(const struct timespec *t)
{
    struct timespec now;
    mono_now(&now);
    return now.tv_sec > t->tv_sec || (now.tv_sec == t->tv_sec && now.tv_nsec >= t->tv_nsec);
}

static int64_t wall_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/* -------------------------------------------------------- jobs (under mu) -- */

static unsigned bucket(const char *s)
{
    uint32_t h = 2166136261u;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 16777619u;
    return h % WJOB_BUCKETS;
}

/* The entry of job (NULL for "" and, unless create, for a job without one). */
static struct wjob *wjob_get(struct writer *wr, const char *job, bool create)
{
    if (!job || !*job)
        return NULL;
    unsigned b = bucket(job);
    for (struct wjob *j = wr->jobs[b]; j; j = j->next)
        if (strcmp(j->job, job) == 0)
            return j;
    if (!create)
        return NULL;
    size_t n = strlen(job);
    struct wjob *j = xcalloc(1, sizeof *j + n + 1);
    memcpy(j->job, job, n + 1);
    j->next = wr->jobs[b];
    wr->jobs[b] = j;
    return j;
}

/* Forgets j once nothing is in flight and nothing is to recover. */
static void wjob_settle(struct writer *wr, struct wjob *j)
{
    if (!j || j->pending > 0 || j->poisoned)
        return;
    for (struct wjob **pp = &wr->jobs[bucket(j->job)]; *pp; pp = &(*pp)->next)
        if (*pp == j) {
            *pp = j->next;
            free(j);
            return;
        }
}

/* ------------------------------------------------------- faults (under mu) -- */

/* w stored nothing: why and what; its job's later units fail until it is recovered. */
static void fail(struct writer *wr, struct db_write *w, enum db_fault f, const char *err)
{
    w->ok = 0;
    w->fault = f;
    w->decision_id = 0;
    free(w->error);
    w->error = xstrdup(err ? err : "");
    struct wjob *j = wjob_get(wr, w->job, false);
    if (j)
        j->poisoned = true;
}

/* *t = now + ms (monotonic). */
static void after_ms(struct timespec *t, int ms)
{
    mono_now(t);
    t->tv_sec += ms / 1000;
    t->tv_nsec += (long)(ms % 1000) * 1000000L;
    if (t->tv_nsec >= 1000000000L) {
        t->tv_sec++;
        t->tv_nsec -= 1000000000L;
    }
}

static void schedule_probe(struct writer *wr)
{
    after_ms(&wr->next_probe, wr->probe_ms);
}

static void enter_fault(struct writer *wr, const char *err)
{
    snprintf(wr->fault_msg, sizeof wr->fault_msg, "%s", err ? err : "");
    if (wr->faulted)
        return;
    wr->faulted = true;
    wr->probe_ms = PROBE_FIRST_MS;
    mono_now(&wr->fault_since);
    schedule_probe(wr);
    log_msg(LOG_ERROR, "writer", "store unavailable: writes are refused until a probe succeeds",
            "error=\"%s\"", wr->fault_msg);
}

/* The outcome of a probe (rc 0: a write committed). */
static void probed(struct writer *wr, int rc, const char *err)
{
    struct timespec now;
    mono_now(&now);
    if (rc == 0) {
        wr->faulted = false;
        log_msg(LOG_WARN, "writer", "store writable again", "unavailable_ms=%lld",
                (long long)ms_between(&wr->fault_since, &now));
        return;
    }
    snprintf(wr->fault_msg, sizeof wr->fault_msg, "%s", err ? err : "");
    wr->probe_ms = wr->probe_ms * 2 > PROBE_MAX_MS ? PROBE_MAX_MS : wr->probe_ms * 2;
    schedule_probe(wr);
    log_msg(LOG_DEBUG, "writer", "store still unavailable", "error=\"%s\" next_probe_ms=%d",
            wr->fault_msg, wr->probe_ms);
}

/* ------------------------------------------------------------------ writes -- */

/*
 * Sorts a group by job, stably (one job's units keep their order): two processes writing
 * their groups to one PostgreSQL store then take the jobs rows' locks in the same order, where
 * groups in arrival order would now and then deadlock. Insertion sort: groups are small, and
 * mostly sorted runs already.
 */
static void sort_by_job(struct db_write **g, int n)
{
    for (int i = 1; i < n; i++) {
        struct db_write *w = g[i];
        int j = i;
        for (; j > 0 && strcmp(g[j - 1]->job, w->job) > 0; j--)
            g[j] = g[j - 1];
        g[j] = w;
    }
}

/*
 * One transaction of n units (db_write_group: on every backend the same call); on failure it
 * is rolled back and no unit is ok. A unit that stored nothing (a fence that did not hold, or
 * a later unit of its job) is not ok either, the others commit.
 */
static int write_units(struct db *db, struct db_write **ws, int n, char **errp)
{
    int rc = db_write_group(db, ws, n, errp);
    for (int i = 0; i < n; i++) {
        ws[i]->ok = rc == 0 && ws[i]->fault == DB_FAULT_NONE;
        if (!ws[i]->ok)
            ws[i]->decision_id = 0;
    }
    return rc;
}

int writer_commit_group(struct db *db, struct db_write **ws, int n, char **errp)
{
    if (write_units(db, ws, n, errp) == 0)
        return 0;
    enum db_fault f = db_fault_of(db_last_errcode(db));
    for (int i = 0; i < n; i++) {
        ws[i]->fault = f;
        free(ws[i]->error);
        ws[i]->error = xstrdup(*errp ? *errp : "");
    }
    return -1;
}

/* The units of a committed group that stored nothing (fenced, or after a fenced unit of their
 * job) fail, and their job's later units with them until it is reloaded. */
static void fail_unstored(struct writer *wr, struct db_write **g, int n)
{
    pthread_mutex_lock(&wr->mu);
    for (int i = 0; i < n; i++) {
        if (g[i]->ok)
            continue;
        char *why = g[i]->error;
        g[i]->error = NULL;
        fail(wr, g[i], g[i]->fault, why);
        free(why);
    }
    pthread_mutex_unlock(&wr->mu);
}

/* The n units of g failed with fault f and error err (freed here); a storage fault faults the
 * writer. */
static void fail_units(struct writer *wr, struct db_write **g, int n, enum db_fault f, char *err)
{
    pthread_mutex_lock(&wr->mu);
    for (int i = 0; i < n; i++)
        fail(wr, g[i], f, err);
    if (f == DB_FAULT_STORAGE)
        enter_fault(wr, err);
    pthread_mutex_unlock(&wr->mu);
    free(err);
}

/*
 * Writes a group (thread, outside mu). A storage fault fails the whole group and faults the
 * writer; any other failure writes the units again one per transaction, so that only the
 * unit the store refuses fails (with the later units of its job). A unit whose fence did not
 * hold is not a failure of the group. -1 when any unit failed for the store.
 */
static int commit(struct writer *wr, struct db_write **g, int n)
{
    char *err = NULL;
    if (write_units(wr->db, g, n, &err) == 0) {
        fail_unstored(wr, g, n);
        return 0;
    }
    enum db_fault f = db_fault_of(db_last_errcode(wr->db));
    log_msg(LOG_ERROR, "writer", "group commit failed", "units=%d error=\"%s\"", n, err);
    if (f == DB_FAULT_STORAGE || n == 1) {
        fail_units(wr, g, n, f, err);
        return -1;
    }
    free(err);
    for (int i = 0; i < n; i++) {
        pthread_mutex_lock(&wr->mu);
        struct wjob *j = wjob_get(wr, g[i]->job, false);
        bool skip = wr->faulted || (j && j->poisoned);
        if (skip)
            fail(wr, g[i], wr->faulted ? DB_FAULT_STORAGE : DB_FAULT_STALE,
                 wr->faulted ? wr->fault_msg : DB_STALE_MSG);
        pthread_mutex_unlock(&wr->mu);
        if (skip)
            continue;
        err = NULL;
        if (write_units(wr->db, &g[i], 1, &err) == 0) {
            fail_unstored(wr, &g[i], 1);
            continue;
        }
        log_msg(LOG_ERROR, "writer", "write unit refused", "job=%s kind=%d error=\"%s\"", g[i]->job,
                (int)g[i]->kind, err);
        fail_units(wr, &g[i], 1, db_fault_of(db_last_errcode(wr->db)), err);
    }
    return -1;
}

/*
 * The write-ahead log after a commit (thread, outside mu). Readers whose snapshots overlap
 * without a gap keep SQLite's automatic checkpoints from ever starting the log over, so that it
 * grows as long as they keep reading; past wal_max, a TRUNCATE checkpoint holds the writes back
 * until the readers on older snapshots are done (each reader's snapshot is short: store/timeline
 * and db_history_each read in pages, a query of POST /v1/sql is bounded by sql-timeout) and
 * empties the file. When readers still hold it after its wait, it is tried again CKPT_RETRY_MS
 * later, waiting four times as long, also while no unit comes.
 */
static void wal_check(struct writer *wr)
{
    struct timespec t0, t1;
    char *err = NULL;
    int64_t bytes = db_wal_bytes(wr->db);
    if (wr->wal_max <= 0 || bytes <= wr->wal_max) {
        wr->ckpt_pending = false;
        wr->ckpt_wait_ms = CKPT_WAIT_FIRST_MS;
        return;
    }
    if (wr->ckpt_pending && !due(&wr->next_ckpt))
        return;
    mono_now(&t0);
    int rc = db_wal_truncate(wr->db, wr->ckpt_wait_ms, &err);
    mono_now(&t1);
    pthread_mutex_lock(&wr->mu);
    if (rc == 0) {
        wr->ckpt_pending = false;
        wr->st.wal_truncations++;
        log_msg(LOG_INFO, "writer", "write-ahead log truncated",
                "bytes=%lld limit=%lld took_ms=%lld", (long long)bytes, (long long)wr->wal_max,
                (long long)ms_between(&t0, &t1));
        wr->ckpt_wait_ms = CKPT_WAIT_FIRST_MS;
    } else {
        wr->st.wal_busy++;
        log_msg(rc < 0 || wr->ckpt_wait_ms >= CKPT_WAIT_MAX_MS ? LOG_WARN : LOG_DEBUG, "writer",
                "write-ahead log past its limit: readers still on older snapshots, retrying",
                "bytes=%lld limit=%lld waited_ms=%lld error=\"%s\"", (long long)bytes,
                (long long)wr->wal_max, (long long)ms_between(&t0, &t1), err ? err : "");
        wr->ckpt_pending = true;
        wr->ckpt_wait_ms =
            wr->ckpt_wait_ms * 4 > CKPT_WAIT_MAX_MS ? CKPT_WAIT_MAX_MS : wr->ckpt_wait_ms * 4;
        after_ms(&wr->next_ckpt, CKPT_RETRY_MS);
    }
    pthread_mutex_unlock(&wr->mu);
    free(err);
}

/* The earliest time the thread must wake without a unit (under mu): a probe, a checkpoint. */
static const struct timespec *wake_at(const struct writer *wr)
{
    const struct timespec *t = wr->faulted ? &wr->next_probe : NULL;
    if (wr->ckpt_pending && !wr->faulted)
        t = &wr->next_ckpt;
    return t;
}

static void push(struct db_write **head, struct db_write **tail, struct db_write *w)
{
    w->next = NULL;
    if (*tail)
        (*tail)->next = w;
    else
        *head = w;
    *tail = w;
}

static void *run(void *arg)
{
    struct writer *wr = arg;
    struct db_write **group = xcalloc((size_t)wr->max_batch, sizeof *group);
    pthread_mutex_lock(&wr->mu);
    for (;;) {
        const struct timespec *until;
        while (!wr->q_head && !wr->stop && !((until = wake_at(wr)) && due(until))) {
            if (until)
                pthread_cond_timedwait(&wr->cv, &wr->mu, until);
            else
                pthread_cond_wait(&wr->cv, &wr->mu);
        }
        if (!wr->q_head && wr->stop)
            break;
        if (wr->faulted && due(&wr->next_probe)) {
            char *err = NULL;
            pthread_mutex_unlock(&wr->mu);
            int rc = db_probe(wr->db, wall_ms(), PROBE_BUSY_MS, &err);
            pthread_mutex_lock(&wr->mu);
            probed(wr, rc, err);
            free(err);
        }
        /* Take what is queued: units of a job that must be recovered first, and every unit
         * while the store is faulted, fail at once; the rest form a group. */
        int n = 0;
        while (wr->q_head && n < wr->max_batch) {
            struct db_write *w = wr->q_head;
            wr->q_head = w->next;
            if (!wr->q_head)
                wr->q_tail = NULL;
            struct wjob *j = wjob_get(wr, w->job, false);
            if ((j && j->poisoned) || wr->faulted) {
                if (j && j->poisoned)
                    fail(wr, w, DB_FAULT_STALE, DB_STALE_MSG);
                else
                    fail(wr, w, DB_FAULT_STORAGE, wr->fault_msg);
                push(&wr->d_head, &wr->d_tail, w);
                continue;
            }
            group[n++] = w;
        }
        pthread_mutex_unlock(&wr->mu);
        if (wr->pg)
            sort_by_job(group, n);

        struct timespec c0, c1;
        mono_now(&c0);
        int rc = n ? commit(wr, group, n) : 0;
        mono_now(&c1);
        if (!wr->faulted)
            wal_check(wr);

        pthread_mutex_lock(&wr->mu);
        if (n) {
            wr->st.units += (uint64_t)n;
            if ((uint64_t)n > wr->st.max_group)
                wr->st.max_group = (uint64_t)n;
            wr->st.commit_ns +=
                (uint64_t)((c1.tv_sec - c0.tv_sec) * 1000000000LL + (c1.tv_nsec - c0.tv_nsec));
            int b = 0;
            while (b < WRITER_GROUP_BUCKETS && n > (1 << b))
                b++;
            wr->st.group_hist[b]++;
            if (rc < 0)
                wr->st.failed_commits++;
            else
                wr->st.commits++;
        }
        for (int i = 0; i < n; i++)
            push(&wr->d_head, &wr->d_tail, group[i]);
        if (wr->d_head)
            event_active(wr->done_ev, EV_READ, 0);
    }
    pthread_mutex_unlock(&wr->mu);
    free(group);
    return NULL;
}

/* Runs the callbacks of every unit on the done list (loop thread). */
static void deliver(struct writer *wr)
{
    pthread_mutex_lock(&wr->mu);
    struct db_write *w = wr->d_head;
    wr->d_head = wr->d_tail = NULL;
    pthread_mutex_unlock(&wr->mu);
    while (w) {
        struct db_write *next = w->next;
        wr->pending--;
        /* Out of flight before its callback: the callback sees only the units after it. */
        pthread_mutex_lock(&wr->mu);
        struct wjob *j = wjob_get(wr, w->job, false);
        if (j) {
            j->pending--;
            wjob_settle(wr, j);
        }
        pthread_mutex_unlock(&wr->mu);
        w->done_cb(w, w->ud);
        w = next;
    }
}

static void done_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    deliver(arg);
}

struct writer *writer_new(struct event_base *base, const char *path, const char *synchronous,
                          int max_batch, int64_t wal_max, char **errp)
{
    struct writer *wr = xcalloc(1, sizeof *wr);
    pthread_condattr_t ca;
    wr->max_batch = max_batch > 0 ? max_batch : 1;
    pthread_mutex_init(&wr->mu, NULL);
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&wr->cv, &ca);
    pthread_condattr_destroy(&ca);
    if (!(wr->db = db_open(path, synchronous, errp)))
        goto fail;
    wr->wal_max = wal_max;
    wr->ckpt_wait_ms = CKPT_WAIT_FIRST_MS;
    if (wal_max > 0 && db_wal_limit(wr->db, wal_max, errp) < 0)
        goto fail;
    wr->pg = db_is_pg(path);
    wr->done_ev = event_new(base, -1, 0, done_cb, wr);
    if (pthread_create(&wr->th, NULL, run, wr) != 0) {
        *errp = xstrdup("cannot start the writer thread");
        goto fail;
    }
    wr->started = true;
    return wr;
fail:
    writer_free(wr);
    return NULL;
}

void writer_submit(struct writer *wr, struct db_write *w, void (*cb)(struct db_write *w, void *ud),
                   void *ud)
{
    w->done_cb = cb;
    w->ud = ud;
    w->ok = 0;
    w->fault = DB_FAULT_NONE;
    pthread_mutex_lock(&wr->mu);
    struct wjob *j = wjob_get(wr, w->job, true);
    if (j)
        j->pending++;
    push(&wr->q_head, &wr->q_tail, w);
    wr->pending++;
    pthread_cond_signal(&wr->cv);
    pthread_mutex_unlock(&wr->mu);
}

int writer_pending(const struct writer *wr)
{
    return wr->pending;
}

int writer_job_pending(struct writer *wr, const char *job)
{
    pthread_mutex_lock(&wr->mu);
    struct wjob *j = wjob_get(wr, job, false);
    int n = j ? j->pending : 0;
    pthread_mutex_unlock(&wr->mu);
    return n;
}

bool writer_job_blocked(struct writer *wr, const char *job)
{
    pthread_mutex_lock(&wr->mu);
    struct wjob *j = wjob_get(wr, job, false);
    bool b = j && j->poisoned;
    pthread_mutex_unlock(&wr->mu);
    return b;
}

void writer_job_recovered(struct writer *wr, const char *job)
{
    pthread_mutex_lock(&wr->mu);
    struct wjob *j = wjob_get(wr, job, false);
    if (j) {
        j->poisoned = false;
        wjob_settle(wr, j);
    }
    pthread_mutex_unlock(&wr->mu);
}

int writer_health(struct writer *wr, char *msg, size_t len, int *retry_after_s)
{
    int rc = 0;
    pthread_mutex_lock(&wr->mu);
    if (wr->faulted) {
        rc = -1;
        if (msg && len)
            snprintf(msg, len, "%s", wr->fault_msg);
        if (retry_after_s)
            *retry_after_s = wr->probe_ms > 1000 ? (wr->probe_ms + 999) / 1000 : 1;
    }
    pthread_mutex_unlock(&wr->mu);
    return rc;
}

void writer_get_stats(struct writer *wr, struct writer_stats *out)
{
    pthread_mutex_lock(&wr->mu);
    *out = wr->st;
    pthread_mutex_unlock(&wr->mu);
}

void writer_free(struct writer *wr)
{
    if (!wr)
        return;
    if (wr->started) {
        pthread_mutex_lock(&wr->mu);
        wr->stop = true;
        pthread_cond_signal(&wr->cv);
        pthread_mutex_unlock(&wr->mu);
        pthread_join(wr->th, NULL);
        deliver(wr);
    }
    if (wr->done_ev)
        event_free(wr->done_ev);
    db_close(wr->db);
    for (int b = 0; b < WJOB_BUCKETS; b++)
        while (wr->jobs[b]) {
            struct wjob *j = wr->jobs[b];
            wr->jobs[b] = j->next;
            free(j);
        }
    pthread_cond_destroy(&wr->cv);
    pthread_mutex_destroy(&wr->mu);
    free(wr);
}
