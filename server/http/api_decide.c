/*
 * api_decide.c - POST /v1/jobs/{job}/metrics: one scaling cycle.
 *
 * Order of checks, so that a bad request changes nothing: job id, a job whose earlier write
 * failed and is not reloaded yet (503), JSON, then the decision service (decision.h): the
 * sample and its `config` (into a copy of the job's options), `at` against the job's last
 * sample (not_after here: a retry of a stored sample gets its decision again, anything else
 * not after it a 409), the effective options (422), a store that refuses writes (store_ready
 * here, 503), then the core's decide, which validates the topology before it touches the
 * state. Only then is the state changed (in memory) and the service's write unit, completed
 * here with the new state, handed back for commit.
 *
 * A retry (the same `at`, the same JSON value; for a sample the store keeps in its job's chunks
 * of samples, the same sample as the server reads it) changes nothing and stores nothing: it
 * reads the decision stored then (db_decision_find) and answers it again with "repeat": true. When
 * a unit of the job is still in flight, the decision may not be committed yet: the retry then
 * queues a DB_W_REPEAT unit, which writes nothing and comes back after every unit queued
 * before it, and is answered from the store then (api_committed).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/codec.h"
#include "decision/jobs.h"
#include "plugin/policies.h"
#include "http/api.h"
#include "options/options.h"
#include "decision/decision.h"
#include "base/jarena.h"
#include "plugin/plugin.h"
#include "base/log.h"
#include "store/timeline.h"
#include "store/writer.h"
#include "base/xmem.h"

/* Whether two request bodies hold the same streaming sample, read as the server reads it (the
 * same numbers bit for bit, the same layout), and neither has options of its own. */
static bool same_sample(json_t *sent, json_t *then)
{
    struct json_sample x, y;
    struct json_err e;
    bool same = false;
    json_sample_init(&x);
    json_sample_init(&y);
    if (json_object_size(json_object_get(sent, "config")) == 0 &&
        json_object_size(json_object_get(then, "config")) == 0 &&
        json_parse_sample(sent, 0, &x, NULL, &e) == 0 &&
        json_parse_sample(then, 0, &y, NULL, &e) == 0 && !x.s.batch_mode && !y.s.batch_mode &&
        x.s.at == y.s.at && x.s.n_vertices == y.s.n_vertices) {
        unsigned char *lx, *ly, *cx, *cy;
        size_t nx, ny;
        int k = core_codec_sample_k(x.s.n_vertices);
        double *rx = xcalloc((size_t)k, sizeof *rx), *ry = xcalloc((size_t)k, sizeof *ry);
        core_codec_sample_layout(&x.s, &lx, &nx, &cx);
        core_codec_sample_layout(&y.s, &ly, &ny, &cy);
        core_codec_sample_row(&x.s, rx);
        core_codec_sample_row(&y.s, ry);
        same = nx == ny && memcmp(lx, ly, nx) == 0 && memcmp(rx, ry, (size_t)k * sizeof *rx) == 0;
        free(lx);
        free(ly);
        free(cx);
        free(cy);
        free(rx);
        free(ry);
    }
    json_sample_deinit(&x);
    json_sample_deinit(&y);
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

int api_decision_run(struct api *a, const struct decision_req *dq, struct decision_res *res,
                     struct resp *r)
{
    if (decision_run(&a->dec, dq, res) == 0)
        return 0;
    if (res->err.status)
        api_error(r, res->err.status, res->err.code, res->err.field, "%s", res->err.message);
    return -1;
}

int api_decision_job(const struct req *q, struct resp *r, json_t **body, struct jobs_entry **e,
                     bool *created)
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

static void decide(const struct req *q, struct resp *r);

/* The figures GET /metrics shows of decision d (w: its write unit) of job e. The SLO is read
 * from the decision's effective options only when they changed since the job's last one. */
static void gauges_of(const struct jobs_entry *e, const struct core_decision *d,
                      const struct db_write *w, struct jobs_gauges *g)
{
    memset(g, 0, sizeof *g);
    g->set = true;
    g->backlog_s = g->slo_lag_s = NAN;
    for (int i = 0; i < d->n_vertices; i++) {
        const struct core_vdecision *v = &d->vertices[i];
        double b = timeline_backlog_s(v->ev.lag, v->ev.target_data_rate);
        g->current += v->current;
        g->target += v->target;
        if (!isnan(b) && (isnan(g->backlog_s) || b > g->backlog_s))
            g->backlog_s = b;
    }
    snprintf(g->config_hash, sizeof g->config_hash, "%s", w->config_hash ? w->config_hash : "");
    if (e->gauges.set && strcmp(e->gauges.config_hash, g->config_hash) == 0) {
        g->slo_lag_s = e->gauges.slo_lag_s;
        return;
    }
    json_t *opts = w->config_json ? json_loads(w->config_json, 0, NULL) : NULL;
    const char *slo = json_string_value(json_object_get(opts, "governor.slo.lag"));
    int64_t ms;
    char *err = NULL;
    if (slo && *slo && opt_parse_duration(slo, &ms, &err) == 0)
        g->slo_lag_s = (double)ms / 1000.0;
    free(err);
    json_decref(opts);
}

/* The handler: decide() inside the request's jansson arena (api_in_arena). */
int api_decide(const struct req *q, struct resp *r)
{
    return api_in_arena(q, r, decide);
}

/* What the service's checks need of the request. */
struct gate {
    const struct req *q;
    struct resp *r;
    struct jobs_entry *e;
};

/* The service's check of the parsed sample: not after the job's last one, it is a retry of a
 * decided sample (answered here) or a 409. */
static int not_after(void *ud, const struct core_sample *s, struct decision_err *err)
{
    struct gate *g = ud;
    struct api *a = g->q->api;
    if (g->e->last_at == INT64_MIN || s->at > g->e->last_at)
        return 0;
    err->status = 0;
    if (a->wr && writer_job_pending(a->wr, g->q->job) > 0) {
        /* The decision it may repeat is still waiting for its commit: answer once every
         * unit queued before this one is back (api_committed). */
        struct db_write *w = db_write_new(DB_W_REPEAT, g->q->job);
        w->at = s->at;
        w->last_at = g->e->last_at;
        w->input_json = xmalloc(g->q->body_len + 1);
        memcpy(w->input_json, g->q->body, g->q->body_len);
        w->input_json[g->q->body_len] = '\0';
        g->r->status = 200;
        g->r->write = w;
    } else {
        api_decide_repeat(a, g->q->job, s->at, g->q->body, g->q->body_len, g->e->last_at, g->r);
    }
    return -1;
}

/* The service's last check: a decision that could not be stored is refused before it
 * changes the job's state. */
static int store_ready(void *ud, struct decision_err *err)
{
    struct gate *g = ud;
    char why[512];
    int retry = 1;
    if (!g->q->api->wr || writer_health(g->q->api->wr, why, sizeof why, &retry) == 0)
        return 0;
    g->r->retry_after = retry;
    return decision_refuse(err, 503, api_code(503), NULL,
                           "the store cannot be written (%s); nothing was stored, retry after %d s",
                           why, retry);
}

static void decide(const struct req *q, struct resp *r)
{
    struct api *a = q->api;
    json_t *body = NULL;
    struct jobs_entry *e = NULL;
    struct plugin_set *set = NULL;
    struct decision_res res;
    bool created = false;

    memset(&res, 0, sizeof res);
    /* A plain body read straight into the sample; any other parsed as a tree. */
    a->dec.js.limits = a->srv ? &a->srv->limits : NULL;
    bool parsed = sample_text_read(q->body, q->body_len, q->now_ms, &a->dec.js, &a->dec.st) == 0;
    if (api_decision_job(q, r, parsed ? NULL : &body, &e, &created) < 0)
        goto out;
    /* The decision runs on the revision active now, whatever a reload swaps in meanwhile. */
    set = pol_acquire(a->pol);
    struct gate g = {q, r, e};
    struct decision_req dq = {.job = q->job,
                              .body = body,
                              .parsed = parsed,
                              .text = q->body,
                              .len = q->body_len,
                              .now_ms = q->now_ms,
                              .layers = e->opts,
                              .cache = e->cache,
                              .state = e->state,
                              .set = set,
                              .limits = a->srv ? &a->srv->limits : NULL,
                              .revision = a->policy_revision,
                              .warnings = true,
                              .text_only = true,
                              .sampled = not_after,
                              .ready = store_ready,
                              .ud = &g};
    if (api_decision_run(a, &dq, &res, r) < 0)
        goto out;
    e->last_at = core_state_last_at(e->state);
    if (e->last_at == INT64_MIN)
        e->last_at = a->dec.js.s.at;
    created = false; /* the entry now holds state: keep it */

    /* The state without its window, and the window's new samples, one row each. */
    struct db_write *w = res.write;
    gauges_of(e, &a->dec.d, w, &r->gauges);
    core_state_encode_meta(e->state, &w->state_bin, &w->state_bin_len);
    int64_t seq0 = core_state_seq0(e->state), end = core_state_seq_end(e->state);
    int64_t from = e->stored_seq > seq0 ? e->stored_seq : seq0;
    w->window_seq0 = seq0;
    w->n_ws = (int)(end - from);
    w->ws = xcalloc((size_t)(w->n_ws > 0 ? w->n_ws : 1), sizeof *w->ws);
    for (int k = 0; k < w->n_ws; k++) {
        w->ws[k].seq = from + k;
        core_state_encode_sample(e->state, from + k, &w->ws[k].blob, &w->ws[k].len);
    }
    e->stored_seq = end;
    /* The sample kept as history in the job's chunks of samples, unless the request carries
     * more than the sample (its own options: the request is then stored as it came). */
    if (!a->dec.js.s.batch_mode && json_object_size(json_object_get(body, "config")) == 0)
        jobs_samples_add(e, &a->dec.js.s, w);
    w->last_at = e->last_at;
    jobs_fence(e, w);
    r->status = 200;
    r->content_type = "application/json";
    r->write = w;
out:
    json_decref(res.response);
    plugin_set_unref(set);
    if (created)
        jobs_remove(a->jobs, q->job);
    json_decref(body);
}
