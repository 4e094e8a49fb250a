/*
 * advice.h - tuning advice from a job's stored decisions (prefix advice_): GET
 * /v1/jobs/{job}/advice?window=24h. Looks for the three patterns autoscaler operators are
 * told to look for, in the job's history (timeline.h, read through the audit views):
 *
 *   EXCESSIVE_DOWN_SCALING  an executed scale-down, then the backlog grows, then an executed
 *                           scale-up within two hours: the scale-down came too early.
 *                           Advice: job.autoscaler.scale-down.interval, longer by the longest
 *                           such gap (rounded up to 5 min).
 *   SLOW_UP_SCALING         the backlog grows over at least 3 decisions and 5 minutes before
 *                           a scale-up (or to the end of the window) while a vertex is busier
 *                           than the utilization target: the upper bound is reached too late.
 *                           Advice: job.autoscaler.utilization.max just below the utilization
 *                           at which the backlog started to grow (utilization.target when that
 *                           would be below the target).
 *   EXCESSIVE_UP_SCALING    an executed scale-up after which, for 30 minutes once applied, every
 *                           vertex stays below its lower utilization bound on average and no
 *                           source has a backlog (10 s at most): it added more than needed.
 *                           Advice: job.autoscaler.catch-up.duration doubled when the scale-ups
 *                           were for a backlog (HIGH_BACKLOG), else a higher
 *                           job.autoscaler.utilization.target.
 *
 * A pattern asking for more capacity (the first two) together with one asking for less (the
 * third) is reported as CONFLICTING_PATTERNS, with the evidence of each and no advised value.
 * Each piece of advice is checked by replaying the job's history with the advised value
 * (replay_db.h) and says what that would have changed.
 *
 * Only the decisions since the job's last deletion (db_job_deletions) are read: a job deleted and
 * made again starts over, and what the deleted one did is not evidence about it.
 *
 * May call: timeline (the history), replay_db (the check), db (the deletions), options, jansson.
 */
#ifndef GOVERNOR_ADVICE_H
#define GOVERNOR_ADVICE_H

#include <jansson.h>
#include <stdint.h>

#include "store/timeline.h"

/*
 * new: the advice array for history h (no replay): each entry {"pattern", "option",
 * "current", "advised", "evidence": {...}, "expected_effect", "message"}, or one
 * {"pattern": "CONFLICTING_PATTERNS", "patterns", "evidence", "option": null, "advised":
 * null, "message"}. Empty when nothing is found.
 */
json_t *advice_patterns(const struct timeline_history *h);

/*
 * Reads job's decisions with from <= at < to from the database file db, finds the patterns
 * and replays the job's history with each advised value. 0 with *out (new):
 * {"job", "from", "to", "decisions", "advice": [... each with "replay": {...}]}; -1 with
 * *errp (new) when the database cannot be read.
 */
int advice_run(const char *db, const char *job, int64_t from, int64_t to, json_t **out,
               char **errp);

#endif
