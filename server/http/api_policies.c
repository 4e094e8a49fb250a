/*
 * api_policies.c - GET /v1/policies (the active revision, its plugins with their counters,
 * the last reload's result) and POST /v1/policies/reload (load the directory again; 422 with
 * the error, file:line, when any of it fails to load, and the old revision stays active). The
 * write unit of a revision that became active or of a failed reload is unit_policy (unit.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugin/policies.h"
#include "http/api.h"
#include "store/db.h"
#include "base/xmem.h"

int api_policies_get(const struct req *q, struct resp *r)
{
    if (!q->api->pol)
        return api_error(r, 503, NULL, NULL, "not ready: no policy manager");
    r->status = 200;
    r->json = pol_describe(q->api->pol);
    return 0;
}

int api_policies_reload(const struct req *q, struct resp *r)
{
    char *err = NULL;
    if (!q->api->pol)
        return api_error(r, 503, NULL, NULL, "not ready: no policy manager");
    if (pol_reload(q->api->pol, "api", &err) < 0) {
        api_error(r, 422, "INVALID_POLICY", "policies", "%s", err);
        free(err);
        return 0;
    }
    r->status = 200;
    r->json = pol_describe(q->api->pol);
    return 0;
}
