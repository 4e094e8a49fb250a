/*
 * api_policies.c - GET /v1/policies (the active revision, its plugins with their counters,
 * the last reload's result) and POST /v1/policies/reload (load the directory again; 422 with
 * the error, file:line, when any of it fails to load, and the old revision stays active);
 * and the write unit of a revision that became active or of a failed reload (the
 * policy_revisions table and a global event), for every process that decides.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugin/policies.h"
#include "http/api.h"
#include "store/db.h"
#include "base/xmem.h"

struct db_write *api_policy_unit(const struct pol_outcome *o)
{
    struct db_write *w = db_write_new(DB_W_POLICY, "");
    w->at = w->now = o->loaded_at;
    w->revision = xstrdup(o->revision);
    w->files_json = xstrdup(o->files_json);
    w->loaded_at = o->loaded_at;
    w->n_e = 1;
    w->e = xcalloc(1, sizeof *w->e);
    char msg[1200];
    if (o->error)
        snprintf(msg, sizeof msg, "policy reload (%s) failed, the previous revision stays: %s",
                 o->trigger, o->error);
    else
        snprintf(msg, sizeof msg, "policy revision %s active (%s)", o->revision, o->trigger);
    w->e[0].type = xstrdup(o->error ? "Warning" : "Normal");
    w->e[0].reason = xstrdup(o->error ? "PolicyReloadFailed" : "PolicyReloaded");
    w->e[0].message = xstrdup(msg);
    w->e[0].count = 1;
    return w;
}

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
