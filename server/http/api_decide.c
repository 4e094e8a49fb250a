/*
 * api_decide.c - POST /v1/jobs/{job}/metrics (one scaling cycle) and POST
 * /v1/jobs/{job}/rebalance (split-point advice for a stage's stragglers, core/README.md,
 * Rebalance, stored in the history as a decision with action REBALANCE): parsed here, decided
 * and given their write unit by the decision layer (unit_decide, unit.h), replied here.
 *
 * Order of checks, so that a bad request changes nothing: job id, a job whose earlier write
 * failed and is not reloaded yet (503), JSON, then the decision service (decision.h): the
 * sample and its `config` (into a copy of the job's options), `at` against the job's last
 * sample (a retry of a stored sample gets its decision again, anything else not after it a
 * 409), the effective options (422), a store that refuses writes (503; the writer's health is
 * passed down as data), then the core's decide, which validates the topology before it touches
 * the state. Only then is the state changed (in memory) and the unit, finished with the new
 * state, handed back for commit. The advice changes nothing of the job's state: its unit
 * carries the state as it is (a decision unit always writes the job's row), and no window
 * sample.
 *
 * A retry (the same `at`, the same JSON value; for a sample the store keeps in its job's chunks
 * of samples, the same sample as the server reads it) changes nothing and stores nothing: it
 * reads the decision stored then (db_decision_find) and answers it again with "repeat": true. When
 * a unit of the job is still in flight, the decision may not be committed yet: the retry then
 * queues a DB_W_REPEAT unit, which writes nothing and comes back after every unit queued
 * before it, and is answered from the store then (api_committed).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/codec.h"
#include "decision/jobs.h"
#include "plugin/policies.h"
#include "http/api.h"
#include "options/options.h"
#include "decision/decision.h"
#include "decision/unit.h"
#include "base/jarena.h"
#include "plugin/plugin.h"
#include "base/log.h"
#include "store/writer.h"
#include "base/xmem.h"

/* Whether two request bodies hold the same streaming sample, read as the server reads it (the
 * same numbers bit for bit, the same layout), and neither has options of its own. */
static bool same_sample(json_t *sent, json_t *then)
{
    struct jsn_sample x, y;
    struct jsn_err e;
    bool same = false;
    jsn_sample_init(&x);
    jsn_sample_init(&y);
    if (json_object_size(json_object_get(sent, "config")) == 0 &&
        json_object_size(json_object_get(then, "config")) == 0 &&
        jsn_parse_sample(sent, 0, &x, NULL, &e) == 0 &&
        jsn_parse_sample(then, 0, &y, NULL, &e) == 0)
        same = core_codec_sample_same(&x.s, &y.s);
    jsn_sample_deinit(&x);
    jsn_sample_deinit(&y);
    return same;
}

void api_decide_repeat(struct api *a, const char *job, int64_t at, const char *body, size_t len,
                       int64_t last_at, struct resp *r)
{
    char *input = NULL, *stored = NULL, *err = NULL;
    json_t *sent = NULL, *then = NULL;
    int64_t id = 0;
    bool from_samples = false;
    int found = db_decision_find(a->db, job, at, &id, &input, &from_samples, &stored, &err);
    if (found < 0) {
        log_msg(LOG_ERROR, "api", "cannot read a stored decision", "job=%s error=\"%s\"", job, err);
        api_error(r, 503, NULL, NULL, "cannot read the job's stored decisions (%s); retry", err);
        r->retry_after = 1;
        goto out;
    }
    if (!found) {
        api_error(r, 409, NULL, "at",
                  "at %lld is not after the job's last sample (%lld) and repeats no stored "
                  "sample; samples of one job must go forward in time",
                  (long long)at, (long long)last_at);
        goto out;
    }
    /* The same sample: the same JSON value (member order and spacing aside); or, where the
     * store kept the sample as the server read it (its chunks of samples), the same sample. */
    sent = json_loadb(body ? body : "", len, JSON_REJECT_DUPLICATES, NULL);
    then = json_loads(input, JSON_REJECT_DUPLICATES, NULL);
    if (!sent || !then || !(from_samples ? same_sample(sent, then) : json_equal(sent, then)) ||
        stored[0] != '{') {
        api_error(r, 409, NULL, "at",
                  "at %lld was already decided (decision %lld) from another sample; a retry must "
                  "send the same body, and a new sample a later at",
                  (long long)at, (long long)id);
        goto out;
    }
    /* The reply of then (api_committed), marked as a repeat. */
    free(r->text);
    r->text = xasprintf("{\"decision_id\":%lld,\"repeat\":true,%s\n", (long long)id, stored + 1);
    r->content_type = "application/json";
    r->status = 200;
out:
    json_decref(then);
    json_decref(sent);
    free(err);
    free(input);
    free(stored);
}

/*
 * The job of a request that makes a decision (decide, rebalance): the job id checked, a failed
 * earlier write recovered, the body parsed as an object (new in *body; body NULL: the caller
 * has read it otherwise), and the job's entry in *e (api_job_find; a new one when *created:
 * forgotten again unless a decision is made). 0, or -1 with r filled (*body may be set: the
 * caller releases it).
 */
static int api_decision_job(const struct req *q, struct resp *r, json_t **body,
                            struct jobs_entry **e, bool *created)
{
    struct api *a = q->api;
    if (!api_job_id_ok(q->job))
        return api_error(r, 400, NULL, "job", "job id must match [A-Za-z0-9._:-]{1,128}"), -1;
    if (api_job_recover(a, q->job, r) < 0)
        return -1;
    if (body && !(*body = api_json_body(q, r, NULL)))
        return -1;
    int found = api_job_find(a, q->job, e, r);
    if (found < 0)
        return -1;
    if (!found) {
        /* A new job: its entry is forgotten again unless a decision is made. It outlives
         * the request: made outside the arena (when one is open). */
        struct jarena *ar = jarena_pause();
        *e = jobs_add(a->jobs, q->job, q->now_ms);
        jarena_resume(ar);
        *created = true;
    }
    return 0;
}

/* POST .../metrics and POST .../rebalance: the request parsed, the decision layer called with
 * what the writer says of the store, its unit and answer replied. */
static void run(const struct req *q, struct resp *r, enum decision_kind kind)
{
    struct api *a = q->api;
    json_t *body = NULL;
    struct jobs_entry *e = NULL;
    struct plugin_set *set = NULL;
    struct decision_res res;
    bool created = false;
    char why[512];
    int retry = 1;

    memset(&res, 0, sizeof res);
    /* A plain sample's body read straight into the sample; any other parsed as a tree. */
    bool parsed = false;
    if (kind == DECISION_SAMPLE) {
        a->dec.js.limits = a->srv ? &a->srv->limits : NULL;
        parsed = sample_text_read(q->body, q->body_len, q->now_ms, &a->dec.js, &a->dec.st) == 0;
    }
    if (api_decision_job(q, r, parsed ? NULL : &body, &e, &created) < 0)
        goto out;
    /* A sample runs on the revision active now, whatever a reload swaps in meanwhile. */
    if (kind == DECISION_SAMPLE)
        set = pol_acquire(a->pol);
    struct unit_req u = {.kind = kind,
                         .job = q->job,
                         .body = body,
                         .parsed = parsed,
                         .text = q->body,
                         .len = q->body_len,
                         .now_ms = q->now_ms,
                         .set = set,
                         .limits = a->srv ? &a->srv->limits : NULL,
                         .revision = a->policy_revision,
                         .strict = a->srv && a->srv->strict_samples,
                         .in_flight = a->wr ? writer_job_pending(a->wr, q->job) : 0,
                         .retry_after = 1};
    if (a->wr && writer_health(a->wr, why, sizeof why, &retry) < 0) {
        u.unwritable = why;
        u.retry_after = retry;
    }
    int rc = unit_decide(&a->dec, e, &u, &res, &r->gauges);
    if (rc < 0) {
        if (res.err.retry_after)
            r->retry_after = res.err.retry_after;
        api_error(r, res.err.status, res.err.code, res.err.field, "%s", res.err.message);
        goto out;
    }
    if (rc > 0) {
        api_decide_repeat(a, q->job, res.repeat_at, q->body, q->body_len, e->last_at, r);
        goto out;
    }
    r->status = 200;
    if (res.write->kind == DB_W_DECISION) {
        created = false; /* the entry now holds state: keep it */
        r->content_type = "application/json";
    }
    r->write = res.write;
out:
    json_decref(res.response);
    plugin_set_unref(set);
    if (created)
        jobs_remove(a->jobs, q->job);
    json_decref(body);
}

static void decide(const struct req *q, struct resp *r)
{
    run(q, r, DECISION_SAMPLE);
}

/* The handler: decide() inside the request's jansson arena (api_in_arena). */
int api_decide(const struct req *q, struct resp *r)
{
    return api_in_arena(q, r, decide);
}

int api_rebalance(const struct req *q, struct resp *r)
{
    run(q, r, DECISION_REBALANCE);
    return 0;
}
