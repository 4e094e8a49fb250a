/*
 * api_health.c - GET /metrics (Prometheus text, see metrics.h), GET /healthz (the process answers)
 * and GET /readyz (the database is open and the jobs and policies are loaded; 503 otherwise; a
 * failed reload keeps the server ready on its previous revision). Both are open without a token.
 */
#include <stdio.h>

#include "plugin/policies.h"
#include "decision/jobs.h"
#include "http/metrics.h"
#include "plugin/plugin.h"
#include "http/api.h"
#include "store/writer.h"

int api_healthz(const struct req *q, struct resp *r)
{
    (void)q;
    r->status = 200;
    r->json = json_pack("{s:s}", "status", "ok");
    return 0;
}

int api_readyz(const struct req *q, struct resp *r)
{
    if (!q->api->ready || !q->api->db)
        return api_error(r, 503, NULL, NULL, "not ready: the database is not open");
    if (!q->api->pol)
        return api_error(r, 503, NULL, NULL, "not ready: the policies are not loaded");
    char msg[512];
    int retry = 1;
    if (q->api->wr && writer_health(q->api->wr, msg, sizeof msg, &retry) < 0) {
        api_error(r, 503, NULL, NULL, "not ready: the store cannot be written (%s)", msg);
        r->retry_after = retry;
        return 0;
    }
    r->status = 200;
    r->json = pol_describe(q->api->pol);
    json_t *last = json_object_get(r->json, "last_reload");
    json_t *out =
        json_pack("{s:s, s:i, s:O, s:O}", "status", "ready", "jobs", jobs_count(q->api->jobs),
                  "policy_revision", json_object_get(r->json, "revision"), "last_reload", last);
    json_decref(r->json);
    r->json = out;
    return 0;
}

int api_metrics(const struct req *q, struct resp *r)
{
    struct api *a = q->api;
    struct writer_stats ws;
    struct metrics_sources src = {.jobs = a->jobs ? jobs_count(a->jobs) : -1,
                                  .jobs_max = a->srv ? a->srv->max_jobs_in_memory : 0,
                                  .jobs_evicted = a->jobs ? jobs_evicted(a->jobs) : 0,
                                  .registry = a->jobs,
                                  .max_jobs = a->srv ? a->srv->metrics_max_jobs : 0,
                                  .now_ms = q->now_ms};
    if (a->wr) {
        writer_get_stats(a->wr, &ws);
        src.writer = &ws;
    }
    src.policies = pol_acquire(a->pol);
    r->status = 200;
    r->text = metrics_render(a->metrics, &src);
    r->content_type = "text/plain; version=0.0.4";
    if (src.policies)
        plugin_set_unref(src.policies);
    return 0;
}
