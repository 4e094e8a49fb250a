/*
 * metrics.c - counters and the Prometheus text of GET /metrics (see metrics.h).
 */
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/core.h"
#include "http/metrics.h"
#include "base/xmem.h"

/* Latency histogram bounds, seconds. */
static const double bounds[] = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
                                0.05,   0.1,   0.25,   0.5,   1.0,  2.5};
#define N_BOUNDS (sizeof bounds / sizeof bounds[0])

#define MAX_SERIES 64

/* Requests of one (route, method, status). */
struct req_series {
    const char *route, *method;
    int status;
    uint64_t n;
};

/* Latency of one route. */
struct lat_series {
    const char *route;
    uint64_t bucket[N_BOUNDS + 1];
    uint64_t n;
    double sum;
};

struct metrics {
    struct req_series req[MAX_SERIES];
    int n_req;
    struct lat_series lat[MAX_SERIES / 2];
    int n_lat;
    uint64_t decisions[CORE_R__COUNT];
    uint64_t reloads_ok, reloads_failed;
};

struct metrics *metrics_new(void)
{
    return xcalloc(1, sizeof(struct metrics));
}

void metrics_free(struct metrics *m)
{
    free(m);
}

void metrics_request(struct metrics *m, const char *route, const char *method, int status,
                     double seconds)
{
    if (!m)
        return;
    if (!route)
        route = "unmatched";
    /* Keep a static copy of the method: the caller's may be a request's buffer. */
    static const char *const methods[] = {"GET",  "POST",    "PUT",  "DELETE",
                                          "HEAD", "OPTIONS", "PATCH"};
    const char *mstat = "OTHER";
    for (size_t k = 0; k < sizeof methods / sizeof methods[0]; k++)
        if (strcmp(methods[k], method) == 0)
            mstat = methods[k];
    method = mstat;
    int i;
    for (i = 0; i < m->n_req; i++)
        if (m->req[i].status == status && strcmp(m->req[i].route, route) == 0 &&
            strcmp(m->req[i].method, method) == 0)
            break;
    if (i == m->n_req && m->n_req < MAX_SERIES) {
        m->req[m->n_req++] = (struct req_series){route, method, status, 0};
    }
    if (i < m->n_req)
        m->req[i].n++;
    for (i = 0; i < m->n_lat; i++)
        if (strcmp(m->lat[i].route, route) == 0)
            break;
    if (i == m->n_lat && m->n_lat < MAX_SERIES / 2) {
        memset(&m->lat[i], 0, sizeof m->lat[i]);
        m->lat[m->n_lat++].route = route;
    }
    if (i < m->n_lat) {
        struct lat_series *l = &m->lat[i];
        size_t b = 0;
        while (b < N_BOUNDS && seconds > bounds[b])
            b++;
        l->bucket[b]++;
        l->n++;
        l->sum += seconds;
    }
}

void metrics_decision(struct metrics *m, const char *reason)
{
    if (!m || !reason)
        return;
    for (int r = 0; r < CORE_R__COUNT; r++)
        if (strcmp(core_reason_name((enum core_reason)r), reason) == 0) {
            m->decisions[r]++;
            return;
        }
}

void metrics_reload(struct metrics *m, bool ok)
{
    if (!m)
        return;
    if (ok)
        m->reloads_ok++;
    else
        m->reloads_failed++;
}

/* ------------------------------------------------------------------ render -- */

struct out {
    char *p;
    size_t n, cap;
};

static void add(struct out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void add(struct out *o, const char *fmt, ...)
{
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int k = vsnprintf(o->p + o->n, o->cap - o->n, fmt, ap);
        va_end(ap);
        if (k < 0)
            return;
        if ((size_t)k < o->cap - o->n) {
            o->n += (size_t)k;
            return;
        }
        o->cap = o->cap * 2 + (size_t)k + 1;
        o->p = xrealloc(o->p, o->cap);
    }
}

static void header(struct out *o, const char *name, const char *type, const char *help)
{
    add(o, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* The per-job gauges of the first max_jobs jobs (each family's HELP and TYPE once). */
static void render_jobs(struct out *o, const struct metrics_sources *src)
{
    static const struct {
        const char *name, *help;
    } fam[] = {
        {"governor_job_seconds_since_last_sample",
         "Server clock minus the at of the job's last sample: a job that stopped reporting "
         "grows it."},
        {"governor_job_parallelism", "Parallelism the job runs at, summed over its vertices "
                                     "(the last decision's current)."},
        {"governor_job_target_parallelism",
         "Parallelism the last decision asks for, summed over the vertices."},
        {"governor_job_backlog_seconds",
         "The largest source backlog of the last decision: lag / input rate, in seconds."},
        {"governor_job_slo_lag_seconds", "governor.slo.lag of the job (set only)."},
        {"governor_job_slo_breach",
         "1 when the job's backlog seconds are above its governor.slo.lag, else 0 (set only)."},
    };
    int n = jobs_count(src->registry), shown = n < src->max_jobs ? n : src->max_jobs;
    if (shown < 0)
        shown = 0;
    header(o, "governor_job_series_dropped", "gauge",
           "Jobs left out of the governor_job_* series by metrics-max-jobs.");
    add(o, "governor_job_series_dropped %d\n", n - shown);
    for (size_t f = 0; f < sizeof fam / sizeof fam[0]; f++) {
        header(o, fam[f].name, "gauge", fam[f].help);
        for (int i = 0; i < shown; i++) {
            const struct jobs_entry *e = jobs_at(src->registry, i);
            const struct jobs_gauges *g = &e->gauges;
            double v = NAN;
            switch (f) {
            case 0:
                if (e->last_at != INT64_MIN)
                    v = (double)(src->now_ms - e->last_at) / 1000.0;
                break;
            case 1:
                v = g->set ? g->current : NAN;
                break;
            case 2:
                v = g->set ? g->target : NAN;
                break;
            case 3:
                v = g->set ? g->backlog_s : NAN;
                break;
            case 4:
                v = g->set ? g->slo_lag_s : NAN;
                break;
            default:
                if (g->set && !isnan(g->slo_lag_s))
                    v = !isnan(g->backlog_s) && g->backlog_s > g->slo_lag_s;
                break;
            }
            if (!isnan(v))
                add(o, "%s{job_id=\"%s\"} %.3f\n", fam[f].name, e->id, v);
        }
    }
}

char *metrics_render(const struct metrics *m, const struct metrics_sources *src)
{
    static const struct metrics none; /* nothing counted (a server without counters) */
    if (!m)
        m = &none;
    struct out o = {xmalloc(4096), 0, 4096};
    o.p[0] = '\0';

    header(&o, "governor_http_requests_total", "counter", "HTTP requests answered.");
    for (int i = 0; i < m->n_req; i++)
        add(&o, "governor_http_requests_total{route=\"%s\",method=\"%s\",status=\"%d\"} %llu\n",
            m->req[i].route, m->req[i].method, m->req[i].status, (unsigned long long)m->req[i].n);
    header(&o, "governor_http_request_duration_seconds", "histogram",
           "Time from a request's arrival to its reply (decisions: including the commit).");
    for (int i = 0; i < m->n_lat; i++) {
        const struct lat_series *l = &m->lat[i];
        uint64_t cum = 0;
        for (size_t b = 0; b < N_BOUNDS; b++) {
            cum += l->bucket[b];
            add(&o, "governor_http_request_duration_seconds_bucket{route=\"%s\",le=\"%g\"} %llu\n",
                l->route, bounds[b], (unsigned long long)cum);
        }
        add(&o, "governor_http_request_duration_seconds_bucket{route=\"%s\",le=\"+Inf\"} %llu\n",
            l->route, (unsigned long long)l->n);
        add(&o, "governor_http_request_duration_seconds_sum{route=\"%s\"} %.6f\n", l->route,
            l->sum);
        add(&o, "governor_http_request_duration_seconds_count{route=\"%s\"} %llu\n", l->route,
            (unsigned long long)l->n);
    }
    header(&o, "governor_decisions_total", "counter", "Decisions committed, by job reason.");
    for (int r = 0; r < CORE_R__COUNT; r++)
        add(&o, "governor_decisions_total{reason=\"%s\"} %llu\n",
            core_reason_name((enum core_reason)r), (unsigned long long)m->decisions[r]);
    header(&o, "governor_policy_reloads_total", "counter",
           "Policy loads and reloads, by result (a failed one keeps the previous revision).");
    add(&o, "governor_policy_reloads_total{result=\"ok\"} %llu\n",
        (unsigned long long)m->reloads_ok);
    add(&o, "governor_policy_reloads_total{result=\"failed\"} %llu\n",
        (unsigned long long)m->reloads_failed);

    struct plugin_set *s = src ? src->policies : NULL;
    header(&o, "governor_plugin_calls_total", "counter",
           "Calls of each plugin of the active policy revision.");
    header(&o, "governor_plugin_errors_total", "counter",
           "Failed calls (errors, limits) of each plugin of the active revision.");
    header(&o, "governor_plugin_seconds_total", "counter",
           "Wall time in each plugin of the active revision.");
    for (int i = 0; s && i < plugin_set_count(s); i++) {
        struct plugin_info in;
        plugin_set_info(s, i, &in);
        const char *rev = plugin_set_revision(s);
        add(&o, "governor_plugin_calls_total{plugin=\"%s\",revision=\"%s\"} %llu\n", in.name, rev,
            (unsigned long long)in.calls);
        add(&o, "governor_plugin_errors_total{plugin=\"%s\",revision=\"%s\"} %llu\n", in.name, rev,
            (unsigned long long)in.errors);
        add(&o, "governor_plugin_seconds_total{plugin=\"%s\",revision=\"%s\"} %.6f\n", in.name, rev,
            (double)in.time_us / 1e6);
    }

    const struct writer_stats *w = src ? src->writer : NULL;
    if (w) {
        header(&o, "governor_commit_group_size", "histogram",
               "Write units (decisions, config changes) per group commit.");
        uint64_t cum = 0;
        for (int b = 0; b < WRITER_GROUP_BUCKETS; b++) {
            cum += w->group_hist[b];
            add(&o, "governor_commit_group_size_bucket{le=\"%d\"} %llu\n", 1 << b,
                (unsigned long long)cum);
        }
        cum += w->group_hist[WRITER_GROUP_BUCKETS];
        add(&o, "governor_commit_group_size_bucket{le=\"+Inf\"} %llu\n", (unsigned long long)cum);
        add(&o, "governor_commit_group_size_sum %llu\n", (unsigned long long)w->units);
        add(&o, "governor_commit_group_size_count %llu\n", (unsigned long long)cum);
        header(&o, "governor_commit_seconds_total", "counter", "Wall time in group commits.");
        add(&o, "governor_commit_seconds_total %.6f\n", (double)w->commit_ns / 1e9);
        header(&o, "governor_commits_failed_total", "counter", "Group commits that failed.");
        add(&o, "governor_commits_failed_total %llu\n", (unsigned long long)w->failed_commits);
    }
    if (src && src->jobs >= 0) {
        header(&o, "governor_jobs_tracked", "gauge",
               "Jobs whose state the server holds in memory (as governor_jobs_held).");
        add(&o, "governor_jobs_tracked %d\n", src->jobs);
        header(&o, "governor_jobs_held", "gauge",
               "Jobs whose state the server holds in memory (at most max-jobs-in-memory, but "
               "for jobs with writes in flight).");
        add(&o, "governor_jobs_held %d\n", src->jobs);
        header(&o, "governor_jobs_max", "gauge", "max-jobs-in-memory.");
        add(&o, "governor_jobs_max %d\n", src->jobs_max);
        header(&o, "governor_jobs_evicted_total", "counter",
               "Idle jobs forgotten past max-jobs-in-memory (read again from the store at their "
               "next request).");
        add(&o, "governor_jobs_evicted_total %lld\n", (long long)src->jobs_evicted);
    }
    if (src && src->registry)
        render_jobs(&o, src);
    return o.p;
}
