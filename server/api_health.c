/*
 * api_health.c - GET /healthz (the process answers) and GET /readyz (the database is open
 * and the jobs are loaded; 503 otherwise). Both are open without a token.
 */
#include "api.h"

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
    r->status = 200;
    r->json = json_pack("{s:s,s:i}", "status", "ready", "jobs", jobs_count(q->api->jobs));
    return 0;
}
