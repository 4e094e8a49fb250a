/*
 * writer.c - the group-committing writer thread (see writer.h).
 *
 * Queue: a singly linked FIFO under a mutex. The thread takes up to max_batch units,
 * writes them in one transaction, then moves them to the done list and wakes the loop
 * with event_active (thread-safe once libevent threading is on). The loop's callback
 * takes the whole done list and runs each unit's callback.
 */
#include <pthread.h>
#include <time.h>
#include <stdbool.h>
#include <stdlib.h>

#include <event2/event.h>

#include "log.h"
#include "writer.h"
#include "xmem.h"

struct writer {
    struct db *db;
    struct event *done_ev;
    int max_batch;
    pthread_t th;
    bool started;

    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct db_write *q_head, *q_tail; /* waiting to be written */
    struct db_write *d_head, *d_tail; /* written (or failed), callback pending */
    bool stop;
    uint64_t epoch;    /* of units submitted now; bumped by writer_ack_failure */
    int64_t bad_epoch; /* units with epoch <= this fail without being written */
    int pending;       /* submitted, callback not yet run (loop thread only) */
    struct writer_stats st;
};

int writer_commit_group(struct db *db, struct db_write **ws, int n, char **errp)
{
    if (db_begin(db, errp) < 0)
        goto fail;
    for (int i = 0; i < n; i++)
        if (db_write_apply(db, ws[i], errp) < 0)
            goto fail;
    if (db_commit(db, errp) < 0)
        goto fail;
    for (int i = 0; i < n; i++)
        ws[i]->ok = 1;
    return 0;
fail:
    db_rollback(db);
    for (int i = 0; i < n; i++) {
        ws[i]->ok = 0;
        ws[i]->decision_id = 0;
    }
    return -1;
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
        while (!wr->q_head && !wr->stop)
            pthread_cond_wait(&wr->cv, &wr->mu);
        if (!wr->q_head && wr->stop)
            break;
        /* Take what is queued: units of a stale epoch fail at once, the rest form a group. */
        int n = 0;
        while (wr->q_head && n < wr->max_batch) {
            struct db_write *w = wr->q_head;
            wr->q_head = w->next;
            if (!wr->q_head)
                wr->q_tail = NULL;
            if ((int64_t)w->epoch <= wr->bad_epoch) {
                w->ok = 0;
                push(&wr->d_head, &wr->d_tail, w);
                continue;
            }
            group[n++] = w;
        }
        pthread_mutex_unlock(&wr->mu);

        char *err = NULL;
        struct timespec c0, c1;
        clock_gettime(CLOCK_MONOTONIC, &c0);
        int rc = n ? writer_commit_group(wr->db, group, n, &err) : 0;
        clock_gettime(CLOCK_MONOTONIC, &c1);
        if (rc < 0)
            log_msg(LOG_ERROR, "writer", "group commit failed", "units=%d error=\"%s\"", n, err);
        free(err);

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
            if (rc < 0) {
                wr->st.failed_commits++;
                for (int i = 0; i < n; i++)
                    if ((int64_t)group[i]->epoch > wr->bad_epoch)
                        wr->bad_epoch = (int64_t)group[i]->epoch;
            } else {
                wr->st.commits++;
            }
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
                          int max_batch, char **errp)
{
    struct writer *wr = xcalloc(1, sizeof *wr);
    wr->max_batch = max_batch > 0 ? max_batch : 1;
    wr->bad_epoch = -1;
    pthread_mutex_init(&wr->mu, NULL);
    pthread_cond_init(&wr->cv, NULL);
    if (!(wr->db = db_open(path, synchronous, errp)))
        goto fail;
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
    pthread_mutex_lock(&wr->mu);
    w->epoch = wr->epoch;
    push(&wr->q_head, &wr->q_tail, w);
    wr->pending++;
    pthread_cond_signal(&wr->cv);
    pthread_mutex_unlock(&wr->mu);
}

void writer_ack_failure(struct writer *wr)
{
    pthread_mutex_lock(&wr->mu);
    if ((int64_t)wr->epoch <= wr->bad_epoch)
        wr->epoch = (uint64_t)wr->bad_epoch + 1;
    pthread_mutex_unlock(&wr->mu);
}

int writer_pending(const struct writer *wr)
{
    return wr->pending;
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
    pthread_cond_destroy(&wr->cv);
    pthread_mutex_destroy(&wr->mu);
    free(wr);
}
