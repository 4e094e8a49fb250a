/*
 * writer.h - the one writer of the store (prefix writer_): a thread with its own database
 * connection that commits queued write units in groups. A group is whatever is queued when
 * the previous commit ends (at most max_batch units), so a lone client waits for one
 * commit and many clients share one fsync; there is no fixed delay. Each unit's done
 * callback runs on the libevent loop thread once its group has committed (w->ok = 1) or
 * failed (w->ok = 0, w->fault says why, w->error what).
 *
 * Failures, and what they leave behind:
 *  - A storage fault (disk full, read-only, locked by another process, I/O: db_fault_of)
 *    fails the group and puts the writer in the faulted state: units queued while it lasts
 *    fail at once without touching the store, and the thread probes the store (db_probe) at
 *    growing intervals (0.2 s doubling to 2 s) until a write works again; then it is healthy
 *    and the next units commit as usual. writer_health reports the state (readyz, 503s).
 *  - A unit whose own rows are refused (DB_FAULT_UNIT) does not take its group down: the
 *    group is written again one unit per transaction, so only that unit fails.
 *  - A unit whose fence does not hold (db.h: the job's version moved, another process wrote
 *    the job first) stores nothing, DB_FAULT_FENCED, and its group commits without it; the
 *    later units of its job in the group are not written (DB_FAULT_STALE).
 *  - Each unit belongs to a job (w->job; "" for none). Once a unit of a job failed, the job's
 *    in-memory state is ahead of the store, and every later unit of that job was computed
 *    from it: those fail too (DB_FAULT_STALE) until the loop has reloaded the job from the
 *    store and called writer_job_recovered. The loop knows when it can reload: when
 *    writer_job_pending says no unit of the job is left in flight. Other jobs go on.
 *
 * May call: db, log, libevent (event_active; evthread_use_pthreads() must have been called
 * before the event base was created), pthreads.
 */
#ifndef GOVERNOR_WRITER_H
#define GOVERNOR_WRITER_H

#include <event2/event.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store/db.h"

struct writer;

/* Counters since start (read on the loop thread; approximate while running). */
/* Bucket upper bounds of the group-size histogram: 1, 2, 4, ... 512, then +Inf. */
#define WRITER_GROUP_BUCKETS 11

struct writer_stats {
    uint64_t commits, units, failed_commits, max_group;
    /* the write-ahead log truncated past its limit, and checkpoints that readers held up */
    uint64_t wal_truncations, wal_busy;
    uint64_t commit_ns;                            /* total wall time in group commits */
    uint64_t group_hist[WRITER_GROUP_BUCKETS + 1]; /* commits by group size, per bucket */
};

/*
 * new: opens its own connection to path (migrations already applied by the caller's
 * db_open) and starts the thread. Done callbacks are delivered on base. wal_max (bytes, 0:
 * none): the SQLite write-ahead log's limit, past which the thread truncates it after a commit
 * (db_wal_truncate), holding the writes back while readers on older snapshots finish; when
 * they do not within its wait, it tries again a little later, waiting longer each time, until
 * it is done (also without new units). NULL + *errp.
 */
struct writer *writer_new(struct event_base *base, const char *path, const char *synchronous,
                          int max_batch, int64_t wal_max, char **errp);
/*
 * Queues w (steals it until its done callback, which receives it back and must free it
 * with db_write_free). cb runs on the loop thread.
 */
void writer_submit(struct writer *wr, struct db_write *w, void (*cb)(struct db_write *w, void *ud),
                   void *ud);
/* Number of submitted units whose callback has not run yet. */
int writer_pending(const struct writer *wr);
/* Number of submitted units of job whose callback has not run yet (loop thread). */
int writer_job_pending(struct writer *wr, const char *job);
/* True when a unit of job failed and the job has not been reloaded since. */
bool writer_job_blocked(struct writer *wr, const char *job);
/* The loop reloaded job's state from the store: its units are written again. */
void writer_job_recovered(struct writer *wr, const char *job);
/*
 * 0 while the store takes writes; -1 while it is faulted, with what failed copied into msg
 * (len bytes) and *retry_after_s the seconds a client should wait (>= 1). Any thread.
 */
int writer_health(struct writer *wr, char *msg, size_t len, int *retry_after_s);
void writer_get_stats(struct writer *wr, struct writer_stats *out);
/*
 * Commits everything queued (or fails it, while the store is faulted), stops the thread,
 * runs the remaining callbacks on the caller (the loop thread) and frees wr. NULL is fine.
 */
void writer_free(struct writer *wr);

/*
 * Writes n units in one transaction on db (the synchronous form, for tests and tools):
 * sets each ok, decision_id and, on failure, fault; no callbacks. 0, or -1 + *errp (nothing
 * written).
 */
int writer_commit_group(struct db *db, struct db_write **ws, int n, char **errp);

#endif
