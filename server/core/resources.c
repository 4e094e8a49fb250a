/*
 * resources.c - the quota check (core/README.md, Resources).
 *
 * The reference's other check, the cluster-capacity ResourceCheck, asks the Kubernetes cluster
 * whether the new TaskManagers can be scheduled; outside Kubernetes (the standalone
 * autoscaler, and governor, which sees no cluster) it is a no-op that always says yes, so
 * nothing of it is implemented here.
 *
 * Pure arithmetic; calls util.c (events) and taskmanager.c (core__tm_derive) only.
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "core/core_int.h"

/*
 * The memory of one TaskManager: the tuned process size when memory tuning produced one this
 * cycle (the check uses the tuned configuration), else the process size of the user's memory
 * model. 0 when unknown.
 */
static int64_t tm_memory_bytes(const struct core_config *cfg, const struct core_decision *d)
{
    for (int i = 0; i < d->n_config_changes; i++)
        if (strcmp(d->config_changes[i].key, "taskmanager.memory.process.size") == 0) {
            long long v = strtoll(d->config_changes[i].value, NULL, 10);
            if (v > 0)
                return v;
        }
    struct core_tm_pools p;
    char err[256];
    if (core__tm_derive(&cfg->tm, &p, err, sizeof err) == 0 && p.process > 0)
        return p.process;
    return 0;
}

/*
 * Quota check. Only vertices in the summary count; a vertex without a slot-sharing group
 * belongs to no group. An unknown TM CPU (NaN) or TM memory leaves that side unchecked,
 * as Flink's 0 default does.
 */
bool core__quota_reached(const struct core_config *cfg, const struct core_sample *sm,
                         const bool *in_summary, const int *new_p, struct core_decision *d)
{
    if (isnan(cfg->quota_cpu) && isnan(cfg->quota_memory))
        return false;
    bool any_group = false;
    for (int i = 0; i < sm->n_vertices; i++)
        if (sm->vertices[i].slot_sharing_group)
            any_group = true;
    if (!any_group)
        return false;

    /* Each group's largest parallelisms: the vertices sorted by group, each group one run
     * (n log n; a vertex without a group sorts first and is skipped). */
    int64_t cur_slots = 0, new_slots = 0;
    int n = sm->n_vertices;
    struct core_index by_group;
    core_index_build(&by_group, sm->vertices, sizeof *sm->vertices,
                     offsetof(struct core_vertex_in, slot_sharing_group), n,
                     core__alloc(d, (size_t)n * sizeof(int)),
                     core__alloc(d, (size_t)n * sizeof(int)));
    for (int a = 0; a < n;) {
        const char *grp = sm->vertices[by_group.perm[a]].slot_sharing_group;
        int b = a;
        int cur_max = 0, new_max = 0;
        for (; b < n; b++) {
            int j = by_group.perm[b];
            const char *g = sm->vertices[j].slot_sharing_group;
            if (!g != !grp || (g && strcmp(g, grp) != 0))
                break;
            if (!g || !in_summary || !in_summary[j])
                continue;
            if (sm->vertices[j].parallelism > cur_max)
                cur_max = sm->vertices[j].parallelism;
            if (new_p[j] > new_max)
                new_max = new_p[j];
        }
        a = b;
        if (!grp)
            continue;
        cur_slots += cur_max;
        new_slots += new_max;
    }

    int64_t per = cfg->slots_per_tm > 0 ? cfg->slots_per_tm : 1;
    int64_t cur_tms = cur_slots / per, new_tms = new_slots / per; /* floor, as Flink does here */
    if (new_tms <= cur_tms)
        return false;

    bool reached = false;
    if (!isnan(cfg->quota_cpu) && cfg->tm_cpu * (double)new_tms > cfg->quota_cpu)
        reached = true;
    if (!reached && !isnan(cfg->quota_memory)) {
        int64_t tm_mem = tm_memory_bytes(cfg, d);
        if (tm_mem > 0 && (double)tm_mem * (double)new_tms > cfg->quota_memory)
            reached = true;
    }
    if (reached)
        core__event(d, "Warning", "ResourceQuotaReached", NULL,
                    "Resource usage would exceed the configured quota "
                    "(job.autoscaler.quota.cpu / job.autoscaler.quota.memory); scaling is not "
                    "executed. Please adjust the resource quota.");
    return reached;
}
