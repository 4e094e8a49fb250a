/*
 * unit.h - the write units of the decision layer (prefix unit_): one builder per kind of unit a
 * request makes, and unit_decide, the one function the handlers of a decision call (POST
 * /v1/jobs/{job}/metrics and POST /v1/jobs/{job}/rebalance). unit_decide runs the decision
 * service (decision_run) on a job the server holds and finishes its unit here: the decision's
 * rows, the job's state and its new window samples, its last sample, the fence. So HTTP parses,
 * calls and replies; what it knows of the store (the job's units in flight, whether the store
 * takes writes) comes in as data, and nothing here calls back up into a handler.
 *
 * The kinds (db.h): DB_W_DECISION (unit_sample, unit_batch, unit_rebalance: made by
 * decision_run, the job's state added by unit_decide), DB_W_REPEAT (unit_repeat: a retry whose
 * decision may still wait for its commit), DB_W_JOB_CONFIG (unit_config), DB_W_JOB_DELETE
 * (unit_delete), DB_W_POLICY (unit_policy). DB_W_RETENTION is the store's own (retention.h).
 * Every unit is new; the caller hands it to the writer (or frees it with db_write_free).
 *
 * May call: decision (decision_run), jobs (the entry, its fence), core (the state codec), jsn
 * (the response's text), store (struct db_write; timeline_backlog_s), options, plugin (the
 * calls' records, a policy outcome), jansson, jarena, xmem.
 */
#ifndef GOVERNOR_UNIT_H
#define GOVERNOR_UNIT_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "decision/decision.h"
#include "decision/jobs.h"
#include "store/db.h"

struct plugin_call;
struct pol_outcome;

/* What a handler of a decision passes: the request, parsed, and the store's state as data. */
struct unit_req {
    enum decision_kind kind;
    const char *job;
    json_t *body;     /* the body, parsed (a JSON object); NULL with parsed */
    bool parsed;      /* the sample is in the buffer's js, read without a tree (sample_text.h) */
    const char *text; /* the body as sent (len bytes): the unit's input_json */
    size_t len;
    int64_t now_ms;
    struct plugin_set *set;          /* the policy revision to decide with (NULL: native) */
    const struct opt_limits *limits; /* the request budget (NULL: none) */
    const char *revision;            /* stamped when set is NULL ("native") */
    bool strict;            /* a sample's unknown field is a 400 (the server's strict-samples) */
    int in_flight;          /* the job's units not committed yet (writer_job_pending) */
    const char *unwritable; /* why the store takes no write now (NULL: it does) */
    int retry_after;        /* with unwritable: seconds a client should wait (>= 1) */
};

/*
 * Decides for job e (its state, layers and cache) with b's buffers, and finishes the unit:
 *  0: res->write (new) is the unit to commit before the reply: the decision's, its reply the
 *     unit's decision_json (e's state, last sample and fence are updated, and *g holds what
 *     GET /metrics shows of it once committed); or, for a sample not after the job's last one
 *     while a unit of the job is in flight, a DB_W_REPEAT unit, answered when it is back.
 *  1: the sample is not after the job's last one and no unit of the job is in flight: the
 *     caller answers it from the store (a repeat of the decision stored at res->repeat_at, or
 *     a 409); nothing changed.
 * -1: refused, res->err says why (its retry_after for a 503); nothing changed.
 * res->response is new when set (the rebalance advice); the caller releases it.
 */
int unit_decide(struct decision_buf *b, struct jobs_entry *e, const struct unit_req *q,
                struct decision_res *res, struct jobs_gauges *g);

/* ---------------------------------------------------------------- builders -- */

/*
 * new: a streaming decision's unit, its rows from d itself: each vertex's constraints and
 * evaluated texts are the response's (text, printed from d), decision_json is text and
 * response_json rest (NULL when rest is empty); the plugin calls' records of call (may be
 * NULL). The caller sets the options (config_json, policy_revision, config_hash).
 */
struct db_write *unit_sample(const struct decision_req *q, const struct core_decision *d,
                             const struct plugin_call *call, const struct jsn_text *text,
                             const struct jsn_text *rest);
/* new: a batch decision's unit: its pool as one row, vertex "workers" (core/README.md, Batch),
 * the response (borrowed) stored whole. The caller sets the options. */
struct db_write *unit_batch(const struct decision_req *q, const struct core_batch_decision *d,
                            json_t *response);
/* new: a rebalance advice's unit (action REBALANCE), the response (borrowed) stored whole, with
 * no options of its own. */
struct db_write *unit_rebalance(const struct decision_req *q, int64_t at, int reason,
                                const char *message, json_t *response);
/* new: a retry of job's sample at `at` (text: the body as sent, len bytes; last_at: the job's
 * last sample) while the decision it may repeat waits for its commit: writes nothing, and
 * comes back after every unit queued before it. */
struct db_write *unit_repeat(const char *job, int64_t at, int64_t last_at, const char *text,
                             size_t len);
/* new: job e's new stored layer (config_json: a JSON object as text, copied), fenced. */
struct db_write *unit_config(struct jobs_entry *e, int64_t now, const char *config_json);
/* new: job e's deletion, fenced. */
struct db_write *unit_delete(struct jobs_entry *e, int64_t now);
/* new: a policy outcome (policies.h): the revision's row when one became active, and its
 * global event (PolicyReloaded, or PolicyReloadFailed with the error). For `serve` and for the
 * other processes that decide and store (`governor flink --db`). */
struct db_write *unit_policy(const struct pol_outcome *o);

#endif
