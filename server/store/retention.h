/*
 * retention.h - audit retention (prefix retention_): deletes the audit history (decisions
 * with their vertex rows, events and plugin calls, and job config changes) older than the
 * server option audit-retention, measured on the server clock (decisions.created_at,
 * config_changes.at), never on the samples' `at`. 0 keeps everything.
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
 * new: starts the timer on base (NULL when retention_ms is 0: nothing to do). interval_ms
 * is the time between rounds (0: a minute, or retention_ms when shorter, at least 1 s).
 */
struct retention *retention_new(struct event_base *base, struct writer *wr, int64_t retention_ms,
                                int64_t interval_ms, int batch);
/* Stops queueing units (the shutdown starts); units in flight finish. NULL is fine. */
void retention_stop(struct retention *rt);
/* Frees rt; call after writer_free (which runs the callbacks still due). NULL is fine. */
void retention_free(struct retention *rt);

#endif
