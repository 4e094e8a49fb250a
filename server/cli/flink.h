/*
 * flink.h - `governor flink` (prefix flink_): governs a Flink job's parallelism from its
 * JobManager's REST API, with no code on the user's side (docs/flink.md). Each poll reads the job
 * (flinkjob.h), has its sample decided by a governor server or in this process (decider.h),
 * and applies an answer with execute true: `--apply rest` through the adaptive scheduler's
 * resource requirements (Flink 1.18+), `--apply print` as the Kubernetes operator's
 * `pipeline.jobvertex-parallelism-overrides` value on stdout, `--apply none` not at all.
 *
 * Failures never end the loop: an unreachable Flink or governor (refused, timed out, non-2xx,
 * a body of another shape) is a `level=warn` line naming the URL, the request and the cause,
 * and the step is tried again after a backoff (1 s, doubling, at most --interval; a 503's
 * Retry-After when longer), a sample not answered being sent again as it was (the retry
 * contract: the same `at`, the same body). With --once, after --retries: a line
 * `governor flink: URL: REQUEST: cause` and exit 3 (Flink), 4 (governor), 5 (the rescale refused);
 * 2 for a usage error, 0 when every job was decided (and applied).
 *
 * May call: flinkjob, decider, httpc, options, http (the job name grammar), log, jansson,
 * libc.
 */
#ifndef GOVERNOR_FLINK_H
#define GOVERNOR_FLINK_H

/* `governor flink ARGS`: argv[0] is "flink". Returns the exit code. */
int flink_main(int argc, char **argv);

#endif
