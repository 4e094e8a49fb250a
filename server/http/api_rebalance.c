/*
 * api_rebalance.c - POST /v1/jobs/{job}/rebalance: split-point advice for a stage's
 * stragglers (core/README.md, Rebalance), through the decision service
 * (DECISION_REBALANCE) and stored in the history as a decision with action REBALANCE.
 *
 * The advice changes nothing of the job's state: its unit carries the state as it is (a
 * decision unit always writes the job's row), and no window sample. A bad request (a field
 * named in the error) stores nothing; a store that refuses writes is a 503 before anything.
 */
#include <string.h>

#include "decision/jobs.h"
#include "http/api.h"
#include "options/options.h"
#include "decision/decision.h"
#include "store/writer.h"
#include "base/xmem.h"

struct check {
    struct api *a;
    struct resp *r;
};

/* The service's check before the advice is made: the unit could be stored. */
static int writable(void *ud, struct decision_err *err)
{
    struct check *c = ud;
    char why[512];
    int retry = 1;
    if (!c->a->wr || writer_health(c->a->wr, why, sizeof why, &retry) == 0)
        return 0;
    c->r->retry_after = retry;
    return decision_refuse(err, 503, api_code(503), NULL,
                           "the store cannot be written (%s); nothing was stored, retry", why);
}

int api_rebalance(const struct req *q, struct resp *r)
{
    struct api *a = q->api;
    struct decision_res res;
    json_t *body = NULL;
    struct jobs_entry *e = NULL;
    bool created = false;

    memset(&res, 0, sizeof res);
    if (api_decision_job(q, r, &body, &e, &created) < 0)
        goto out;
    struct check c = {a, r};
    struct decision_req dq = {.kind = DECISION_REBALANCE,
                              .job = q->job,
                              .body = body,
                              .text = q->body,
                              .len = q->body_len,
                              .now_ms = q->now_ms,
                              .layers = e->opts,
                              .state = e->state,
                              .limits = a->srv ? &a->srv->limits : NULL,
                              .revision = a->policy_revision,
                              .ready = writable,
                              .ud = &c};
    if (api_decision_run(a, &dq, &res, r) < 0)
        goto out;
    created = false;
    struct db_write *w = res.write;
    core_state_encode_meta(e->state, &w->state_bin, &w->state_bin_len);
    w->window_seq0 = core_state_seq0(e->state);
    w->n_ws = 0;
    w->ws = xcalloc(1, sizeof *w->ws);
    w->last_at = e->last_at;
    jobs_fence(e, w);
    r->status = 200;
    r->content_type = "application/json";
    r->write = w;
out:
    json_decref(res.response);
    if (created)
        jobs_remove(a->jobs, q->job);
    json_decref(body);
    return 0;
}
