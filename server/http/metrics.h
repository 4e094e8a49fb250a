/*
 * metrics.h - the server's counters and GET /metrics (prefix metrics_): requests and their
 * latency by route, decisions by reason, policy reloads, and, gathered when rendered, the
 * writer's commit groups, the plugins' calls, errors and time, and the jobs tracked; per job
 * (label job_id, as `job` is the label Prometheus gives the scraped target) the last
 * decision's parallelism and backlog, the age of the last sample and the SLO breach, for at
 * most metrics-max-jobs jobs. All in the Prometheus text format (version 0.0.4).
 *
 * Updated and rendered on the loop thread only. May call: core (reason names), writer
 * (stats), plugin (per-plugin counters), jobs (the registry's gauges), libc.
 */
#ifndef GOVERNOR_METRICS_H
#define GOVERNOR_METRICS_H

#include <stdbool.h>
#include <stddef.h>

#include "decision/jobs.h"
#include "plugin/plugin.h"
#include "store/writer.h"

struct metrics;

struct metrics *metrics_new(void);
void metrics_free(struct metrics *m);

/* One answered request: route is the route's pattern ("/v1/jobs/{job}/metrics", borrowed
 * and static), or NULL for a path no route matched. */
void metrics_request(struct metrics *m, const char *route, const char *method, int status,
                     double seconds);
/* One committed decision, by its job reason name ("HIGH_UTILIZATION"). */
void metrics_decision(struct metrics *m, const char *reason);
/* One policy load or reload. */
void metrics_reload(struct metrics *m, bool ok);

/* What the render gathers from elsewhere; every pointer may be NULL. */
struct metrics_sources {
    const struct writer_stats *writer;
    struct plugin_set *policies; /* the active revision */
    int jobs;                    /* jobs held in memory, -1 unknown */
    int jobs_max;                /* max-jobs-in-memory */
    int64_t jobs_evicted;        /* jobs forgotten past it */
    /* The per-job gauges (governor_job_*): the registry, the first max_jobs of its jobs in
     * id order (0: none), and the clock their ages are measured with. */
    struct jobs *registry;
    int max_jobs;
    int64_t now_ms;
};

/* new: the whole exposition text (caller frees); m may be NULL (nothing counted). */
char *metrics_render(const struct metrics *m, const struct metrics_sources *src);

#endif
