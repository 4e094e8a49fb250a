/*
 * bench_core.c - the decide path without HTTP or storage, per request: jansson's json_loads
 * of the body (the baseline), then json_parse_sample + option layering + core_decide +
 * json_render_decision + json_dumps. Prints nanoseconds per request of each and the ratio
 * to the baseline, measured in this process over the same bodies.
 *
 * usage: bench_core [ITERATIONS]
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "core/core.h"
#include "json.h"
#include "options.h"

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static void body_at(char *buf, size_t n, int t)
{
    snprintf(buf, n,
             "{\"at\": %lld, \"running_since\": 1764410400000, \"status\": \"RUNNING\","
             "\"vertices\": ["
             "{\"id\": \"src\", \"parallelism\": 2, \"max_parallelism\": 128, \"inputs\": [],"
             " \"metrics\": {\"busy_ms_per_s\": 500, \"backpressured_ms_per_s\": 0,"
             " \"pending_records\": %d, \"records_in\": %d, \"records_out\": %d,"
             " \"records_in_per_s\": 1000}},"
             "{\"id\": \"agg\", \"parallelism\": 2, \"max_parallelism\": 128,"
             " \"inputs\": [{\"from\": \"src\", \"ship\": \"HASH\"}],"
             " \"metrics\": {\"busy_ms_per_s\": {\"min\": 600, \"avg\": 700, \"max\": 800},"
             " \"records_in\": %d, \"records_out\": %d, \"records_in_per_s\": 1000}}]}",
             1764410400000LL + t * 10000LL, 100 * t, 1000 * t, 1000 * t, 1000 * t, 100 * t);
}

int main(int argc, char **argv)
{
    int iters = argc > 1 ? atoi(argv[1]) : 20000;
    static char body[2048];
    json_error_t je;

    double t0 = now_ns();
    for (int i = 0; i < iters; i++) {
        body_at(body, sizeof body, i);
        json_t *j = json_loads(body, 0, &je);
        json_decref(j);
    }
    double base = (now_ns() - t0) / iters;

    struct core_state *st = core_state_new();
    struct json_sample js;
    json_sample_init(&js);
    struct core_decision d;
    core_decision_init(&d);
    struct opt_job *defaults = opt_job_new();
    struct core_hooks hooks = {0};
    char err[256];
    int scaled = 0;
    t0 = now_ns();
    for (int i = 0; i < iters; i++) {
        body_at(body, sizeof body, i);
        json_t *j = json_loads(body, 0, &je);
        struct opt_job *o = opt_job_clone(defaults);
        struct json_err e;
        struct core_config cfg;
        char *oerr = NULL;
        if (json_parse_sample(j, 0, &js, o, &e) < 0 || opt_job_resolve(o, &cfg, &oerr) < 0 ||
            core_decide(st, &js.s, &cfg, &hooks, &d, err, sizeof err) < 0) {
            fprintf(stderr, "bench_core: sample %d refused\n", i);
            return 1;
        }
        scaled += d.execute;
        json_t *r = json_render_decision(&d, "bench", "native", "0");
        char *s = json_dumps(r, JSON_COMPACT | JSON_REAL_PRECISION(15));
        free(s);
        json_decref(r);
        free(oerr);
        opt_job_free(o);
        json_decref(j);
    }
    double full = (now_ns() - t0) / iters;
    printf("json_loads alone (baseline): %8.0f ns/request\n", base);
    printf("decide path without HTTP/DB: %8.0f ns/request (%.2fx the baseline; %d scalings)\n",
           full, full / base, scaled);
    core_decision_deinit(&d);
    json_sample_deinit(&js);
    core_state_free(st);
    opt_job_free(defaults);
    return 0;
}
