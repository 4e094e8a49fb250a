/*
 * bench_job.h - the benchmark's job (tests/bench/README.md, The load): the body of its sample k,
 * one definition for the load generator (load.c) and the codec's figures (bench_codec.c), so
 * that both measure the same job. Four vertices (source, map, HASH aggregation, sink), steady
 * rates, samples 10 s of job time apart from 2025-11-29T10:00:00Z.
 */
#ifndef GOVERNOR_BENCH_JOB_H
#define GOVERNOR_BENCH_JOB_H

#include <stdio.h>

#define BENCH_AT0     1764410400000LL /* the first sample of every job */
#define BENCH_STEP_MS 10000LL         /* job time between two samples of one job */

/* The body of sample k into buf; returns its length (as snprintf). */
static inline int bench_job_body(char *buf, size_t n, long long k)
{
    long long at = BENCH_AT0 + k * BENCH_STEP_MS,
              t = k * 10; /* seconds of job time since BENCH_AT0 */
    return snprintf(
        buf, n,
        "{\"at\":%lld,\"running_since\":%lld,\"status\":\"RUNNING\",\"vertices\":["
        "{\"id\":\"source\",\"parallelism\":4,\"max_parallelism\":128,\"partitions\":32,"
        "\"inputs\":[],\"metrics\":{\"busy_ms_per_s\":{\"min\":380,\"avg\":420,\"max\":470},"
        "\"backpressured_ms_per_s\":0,\"pending_records\":900000,\"records_in\":%lld,"
        "\"records_out\":%lld,\"records_in_per_s\":1000}},"
        "{\"id\":\"map\",\"parallelism\":4,\"max_parallelism\":128,"
        "\"inputs\":[{\"from\":\"source\",\"ship\":\"FORWARD\"}],"
        "\"metrics\":{\"busy_ms_per_s\":{\"min\":250,\"avg\":300,\"max\":340},"
        "\"backpressured_ms_per_s\":0,\"records_in\":%lld,\"records_out\":%lld,"
        "\"records_in_per_s\":1000}},"
        "{\"id\":\"agg\",\"parallelism\":2,\"max_parallelism\":128,"
        "\"inputs\":[{\"from\":\"map\",\"ship\":\"HASH\"}],"
        "\"metrics\":{\"busy_ms_per_s\":{\"min\":840,\"avg\":880,\"max\":920},"
        "\"backpressured_ms_per_s\":0,\"records_in\":%lld,\"records_out\":%lld,"
        "\"records_in_per_s\":1000}},"
        "{\"id\":\"sink\",\"parallelism\":2,\"max_parallelism\":128,"
        "\"inputs\":[{\"from\":\"agg\",\"ship\":\"FORWARD\"}],"
        "\"metrics\":{\"busy_ms_per_s\":{\"min\":150,\"avg\":200,\"max\":260},"
        "\"backpressured_ms_per_s\":0,\"records_in\":%lld,\"records_out\":%lld,"
        "\"records_in_per_s\":100}}]}",
        at, BENCH_AT0 - 3600000LL, 1000 * t, 1000 * t, 1000 * t, 1000 * t, 1000 * t, 100 * t,
        100 * t, 100 * t);
}

#endif
