/*
 * bench_core.c - the decide path without HTTP or storage, per request: jansson's json_loads
 * of the body (the baseline), then the decision service as the server's handler calls it
 * (json_loads, decision_run with the job's cache: parse, options, core, response, write
 * unit), inside the per-request jansson arena, and the response printed. Prints nanoseconds
 * per request of each and the ratio to the baseline, measured in this process over the same
 * bodies.
 *
 * usage: bench_core [ITERATIONS]
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/core.h"
#include "decision/decision.h"
#include "base/jarena.h"
#include "options/options.h"

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
    jarena_install();
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
    struct decision_buf buf;
    struct decision_cache cache = {0};
    struct jarena arena = {0};
    struct opt_job *defaults = opt_job_new();
    int scaled = 0;
    decision_buf_init(&buf);
    decision_cache_set(&cache, defaults);
    t0 = now_ns();
    for (int i = 0; i < iters; i++) {
        body_at(body, sizeof body, i);
        jarena_begin(&arena);
        json_t *j = json_loads(body, JSON_REJECT_DUPLICATES, &je);
        struct decision_req q = {.job = "bench",
                                 .body = j,
                                 .text = body,
                                 .len = strlen(body),
                                 .layers = defaults,
                                 .cache = &cache,
                                 .state = st,
                                 .revision = "native",
                                 .warnings = true};
        struct decision_res res;
        if (decision_run(&buf, &q, &res) < 0) {
            fprintf(stderr, "bench_core: sample %d refused: %s\n", i, res.err.message);
            return 1;
        }
        scaled += res.write->execute;
        char *s = jarena_dump(res.response);
        free(s);
        db_write_free(res.write);
        json_decref(res.response);
        json_decref(j);
        jarena_end(&arena);
    }
    double full = (now_ns() - t0) / iters;
    printf("json_loads alone (baseline): %8.0f ns/request\n", base);
    printf("decide path without HTTP/DB: %8.0f ns/request (%.2fx the baseline; %d scalings)\n",
           full, full / base, scaled);
    decision_buf_deinit(&buf);
    decision_cache_deinit(&cache);
    jarena_free(&arena);
    core_state_free(st);
    opt_job_free(defaults);
    return 0;
}
