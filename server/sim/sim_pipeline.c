/*
 * sim_pipeline.c - the decision service, in process (see sim_pipeline.h): one job's state and
 * buffers, and one decision_run per sample, as the server's decide handler makes it minus
 * storage.
 */
#include <stdlib.h>
#include <string.h>

#include "core/core.h"
#include "decision/decision.h"
#include "plugin/plugin.h"
#include "sim/sim_pipeline.h"
#include "base/xmem.h"

struct sim_pipeline {
    char *job;
    struct opt_job *layers; /* a copy of the scenario's, resolved once (cache) */
    struct plugin_set *set;
    struct core_state *st;
    struct decision_buf buf;
    struct decision_cache cache;
};

struct sim_pipeline *sim_pipeline_new(const char *job, const struct opt_job *layers,
                                      struct plugin_set *set)
{
    struct sim_pipeline *p = xcalloc(1, sizeof *p);
    p->job = xstrdup(job);
    p->layers = opt_job_clone(layers);
    decision_cache_set(&p->cache, p->layers);
    p->set = set ? plugin_set_ref(set) : NULL;
    p->st = core_state_new();
    decision_buf_init(&p->buf);
    return p;
}

void sim_pipeline_free(struct sim_pipeline *p)
{
    if (!p)
        return;
    plugin_set_unref(p->set);
    core_state_free(p->st);
    decision_buf_deinit(&p->buf);
    decision_cache_deinit(&p->cache);
    opt_job_free(p->layers);
    free(p->job);
    free(p);
}

json_t *sim_decide(struct sim_pipeline *p, json_t *sample, char **errp)
{
    struct decision_req q = {.job = p->job,
                             .body = sample,
                             .layers = p->layers,
                             .cache = &p->cache,
                             .state = p->st,
                             .set = p->set,
                             .revision = "native"};
    struct decision_res res;
    if (decision_run(&p->buf, &q, &res) < 0) {
        *errp = xstrdup(res.err.message); /* it names the field */
        return NULL;
    }
    return res.response;
}
