/*
 * sim_pipeline.c - the decision pipeline, in process (see sim_pipeline.h). The sequence is
 * that of server/replay.c's replay_line and server/api_decide.c, minus storage.
 */
#include <stdlib.h>
#include <string.h>

#include "core/core.h"
#include "cron.h"
#include "json.h"
#include "plugin.h"
#include "sim_pipeline.h"
#include "xmem.h"

struct sim_pipeline {
    char *job;
    const struct opt_job *layers;
    struct plugin_set *set;
    struct core_state *st;
    struct json_sample js;
    struct core_decision d;
};

struct sim_pipeline *sim_pipeline_new(const char *job, const struct opt_job *layers,
                                      struct plugin_set *set)
{
    struct sim_pipeline *p = xcalloc(1, sizeof *p);
    p->job = xstrdup(job);
    p->layers = layers;
    p->set = set ? plugin_set_ref(set) : NULL;
    p->st = core_state_new();
    json_sample_init(&p->js);
    core_decision_init(&p->d);
    return p;
}

void sim_pipeline_free(struct sim_pipeline *p)
{
    if (!p)
        return;
    plugin_set_unref(p->set);
    core_state_free(p->st);
    json_sample_deinit(&p->js);
    core_decision_deinit(&p->d);
    free(p->job);
    free(p);
}

json_t *sim_decide(struct sim_pipeline *p, json_t *sample, char **errp)
{
    json_t *out = NULL;
    char *oerr = NULL;
    struct plugin_call *pc = NULL;
    struct opt_job *opts = opt_job_clone(p->layers);
    struct json_err e;
    memset(&e, 0, sizeof e);
    if (json_parse_sample(sample, 0, &p->js, opts, &e) < 0) {
        *errp = xasprintf("%s: %s", e.field[0] ? e.field : "sample", e.message);
        goto out;
    }
    struct core_config cfg;
    if (opt_job_resolve(opts, &cfg, &oerr) < 0) {
        *errp = xasprintf("config: %s", oerr);
        goto out;
    }
    if (p->js.s.at < core_state_last_at(p->st)) {
        *errp = xstrdup("at: earlier than the job's last sample");
        goto out;
    }
    struct core_hooks hooks;
    memset(&hooks, 0, sizeof hooks);
    hooks.excluded = cron_excluded_hook;
    if (p->set) {
        pc = plugin_call_new(p->set, p->job, opts, &cfg, p->st, &p->js.s);
        plugin_call_hooks(pc, &hooks);
    }
    char err[512];
    if (core_decide(p->st, &p->js.s, &cfg, &hooks, &p->d, err, sizeof err) < 0) {
        *errp = xstrdup(err);
        goto out;
    }
    char hash[17];
    opt_job_hash(opts, hash);
    out =
        json_render_decision(&p->d, p->job, p->set ? plugin_set_revision(p->set) : "native", hash);
out:
    plugin_call_free(pc);
    free(oerr);
    opt_job_free(opts);
    return out;
}
