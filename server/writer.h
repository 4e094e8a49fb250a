/*
 * writer.h - the one writer of the store (prefix writer_): a thread with its own database
 * connection that commits queued write units in groups. A group is whatever is queued when
 * the previous commit ends (at most max_batch units), so a lone client waits for one
 * commit and many clients share one fsync; there is no fixed delay. Each unit's done
 * callback runs on the libevent loop thread once its group has committed (w->ok = 1) or
 * failed (w->ok = 0).
 *
 * After a failed group every unit submitted before the loop has seen the failure (and
 * called writer_ack_failure) fails too: those units were computed from in-memory state
 * that the failure made stale, and the loop reloads that state from the database.
 *
 * May call: db, log, libevent (event_active; evthread_use_pthreads() must have been called
 * before the event base was created), pthreads.
 */
#ifndef GOVERNOR_WRITER_H
#define GOVERNOR_WRITER_H

#include <event2/event.h>
#include <stdint.h>

#include "db.h"

struct writer;

/* Counters since start (read on the loop thread; approximate while running). */
/* Bucket upper bounds of the group-size histogram: 1, 2, 4, ... 512, then +Inf. */
#define WRITER_GROUP_BUCKETS 11

struct writer_stats {
    uint64_t commits, units, failed_commits, max_group;
    uint64_t commit_ns;                            /* total wall time in group commits */
    uint64_t group_hist[WRITER_GROUP_BUCKETS + 1]; /* commits by group size, per bucket */
};

/*
 * new: opens its own connection to path (migrations already applied by the caller's
 * db_open) and starts the thread. Done callbacks are delivered on base. NULL + *errp.
 */
struct writer *writer_new(struct event_base *base, const char *path, const char *synchronous,
                          int max_batch, char **errp);
/*
 * Queues w (steals it until its done callback, which receives it back and must free it
 * with db_write_free). cb runs on the loop thread.
 */
void writer_submit(struct writer *wr, struct db_write *w, void (*cb)(struct db_write *w, void *ud),
                   void *ud);
/* Called by the loop after it reloaded the state a failed group made stale. */
void writer_ack_failure(struct writer *wr);
/* Number of submitted units whose callback has not run yet. */
int writer_pending(const struct writer *wr);
void writer_get_stats(struct writer *wr, struct writer_stats *out);
/*
 * Commits everything queued, stops the thread, runs the remaining callbacks on the caller
 * (the loop thread) and frees wr. NULL is fine.
 */
void writer_free(struct writer *wr);

/*
 * Writes n units in one transaction on db (the synchronous form, for tests and tools):
 * sets each ok and decision_id; no callbacks. 0, or -1 + *errp (nothing written).
 */
int writer_commit_group(struct db *db, struct db_write **ws, int n, char **errp);

#endif
