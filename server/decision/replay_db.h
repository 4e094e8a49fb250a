/*
 * replay_db.h - replay against history (prefix replay_db_): `governor replay --db FILE --job
 * ID` and POST /v1/replay. Re-runs the stored samples of one job (db_history_each, in id
 * order) through the decision service with a candidate config and candidate policies, and
 * reports every decision whose outcome would differ from the recorded one, then a summary.
 *
 * Options of each replayed decision: the recorded effective options of that decision
 * (decision_configs.config_json: built-in < server < job < request, as resolved then), with the
 * candidate's keys laid over them (they win over every recorded layer, the request's too).
 * So a replay without a candidate reproduces the recorded decisions exactly.
 *
 * State: the replay starts with an empty job state at the job's first stored decision and
 * replays every stored decision up to `to`; those before `from` only warm the state up (they
 * are not compared). A DELETE /v1/jobs/{job} recorded in config_changes starts the job over
 * with a new state, as it did on the server (the job made again may send older samples). When
 * retention has deleted the job's oldest decisions the replay starts at the oldest one kept, so the
 * first decisions may differ (the window warms up again).
 *
 * The database is opened read-only (SQLITE_OPEN_READONLY, query_only): nothing is written.
 *
 * May call: decision (each replayed sample is one decision of the service), core, jsn,
 * options, plugin, api (time parsing), SQLite, jansson.
 */
#ifndef GOVERNOR_REPLAY_DB_H
#define GOVERNOR_REPLAY_DB_H

#include <jansson.h>
#include <stdint.h>

#include "core/core.h"
#include "options/options.h"
#include "plugin/plugin.h"

struct replay_db_opts {
    const char *db;  /* database file (borrowed) */
    const char *job; /* job id (borrowed) */
    int64_t from;    /* compare decisions with at >= from (INT64_MIN: all) */
    int64_t to;      /* ... and at <= to (INT64_MAX: all); later ones are not replayed */
    /* The candidate: every key set at OPT_SERVER (a --config file, --set, the "config" of
     * POST /v1/replay) overlays each decision's recorded options. NULL: none. Borrowed. */
    const struct opt_job *candidate;
    /* The candidate policies (a loaded revision, borrowed); NULL: the native hooks only
     * (excluded periods by the cron matcher). Their revision is stamped on candidate
     * decisions ("native" without). */
    struct plugin_set *policies;
};

/* Called for each compared decision whose outcome changed; change is borrowed. */
typedef void (*replay_db_change_cb)(void *ud, json_t *change);

/*
 * Runs the replay. Each change is
 *   {"decision_id", "at", "at_utc", "changed": ["action", "execute", "reason", "targets",
 *    "vertex_reasons"], "recorded": {"action", "execute", "reason", "parallelism"},
 *    "candidate": {... the same, "message"}, "vertices": [{"id", "recorded_target",
 *    "candidate_target", "recorded_reason", "candidate_reason"} for each vertex that differs]}
 * or {"decision_id", "at", "error": {"status", "message"}} when the candidate rejects the
 * sample (a bad option value, ...). *summary (new) is
 *   {"job", "from", "to", "replayed", "warmup", "decisions", "changed", "identical",
 *    "figures_only", "errors", "scalings_recorded", "scalings_candidate", "scalings_added",
 *    "scalings_removed", "subtask_minutes_recorded", "subtask_minutes_candidate",
 *    "subtask_minutes_delta", "without_sample"}
 * "changed" counts compared decisions whose outcome (action, execute, reason, a target, a
 * vertex's reason) differs, errors included; "identical" those whose whole response (every
 * vertex's figures, constraints, messages, events) equals the stored one, policy revision and
 * config hash aside; "figures_only" the rest: the same outcome from other figures (another
 * utilization target moves the thresholds and the messages that quote them), so that
 * decisions = changed + identical + figures_only. "without_sample" counts the decisions whose
 * sample is no longer kept (sample-retention): they are not replayed, and the replay starts
 * over after them. Subtask-minutes integrate, between consecutive compared decisions, the sum
 * of the parallelism the job runs at after each decision (the decision's targets when it
 * executes, the current parallelism otherwise).
 * Returns 0, or -1 with *errp (new): the database cannot be opened or read.
 */
int replay_db_run(const struct replay_db_opts *o, replay_db_change_cb cb, void *ud,
                  json_t **summary, char **errp);

#endif
