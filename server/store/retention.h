/*
 * retention.h - audit retention (prefix retention_): deletes the audit history (decisions
 * with their outcomes, events and plugin calls, and job config changes) older than the
 * server option audit-retention, and the samples decisions were made from (the jobs' chunks
 * of samples) older than sample-retention or than the decisions kept, whichever is shorter;
 * age measured on the server clock (decisions.created_at, config_changes.at, a chunk's
 * created_at: when it was closed), never on the samples' `at`. 0 keeps everything (for
 * samples: as long as the decisions).
 *
 * The deletes go through the writer as DB_W_RETENTION units of at most `batch` decisions, so
 * they share the writer's transactions and never hold the database away from decisions for
 * long: a timer on the loop queues one unit every `interval`; while a unit reports that it
 * deleted a full batch, the next one is queued as soon as it has committed.
 *
 * May call: writer, db (write units), log, libevent.
 */
#ifndef GOVERNOR_RETENTION_H
#define GOVERNOR_RETENTION_H

#include <event2/event.h>
#include <stdint.h>

#include "store/writer.h"

struct retention;

/*
 * new: starts the timer on base (NULL when both retention_ms and sample_ms are 0: nothing to
 * do). interval_ms is the time between rounds (0: a minute, or the shorter retention when
 * shorter, at least 1 s).
 */
struct retention *retention_new(struct event_base *base, struct writer *wr, int64_t retention_ms,
                                int64_t sample_ms, int64_t interval_ms, int batch);
/* Stops queueing units (the shutdown starts); units in flight finish. NULL is fine. */
void retention_stop(struct retention *rt);
/* Frees rt; call after writer_free (which runs the callbacks still due). NULL is fine. */
void retention_free(struct retention *rt);

#endif
