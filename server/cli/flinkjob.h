/*
 * flinkjob.h - one Flink job read through the JobManager's REST API and turned into a sample
 * of POST /v1/jobs/{job}/metrics (prefix flinkjob_), docs/flink.md's table (What is read, and what
 * each figure becomes) field by field:
 *
 *   GET /jobs/:jobid                     at, running_since, status, each vertex's id, name,
 *                                        parallelism, max_parallelism, slot_sharing_group,
 *                                        finished, and its records_in (not on sources),
 *                                        records_out, accumulated_busy_ms
 *   GET /jobs/:jobid/plan                inputs [{from, ship}] (a vertex without is a source)
 *   GET .../vertices/:v/subtasks/metrics the metric names: listed again when the job's
 *                                        vertices or its running_since change, a source's
 *                                        every poll (Kafka and Pulsar partitions appear late)
 *   the same ?get=NAMES&agg=min,max,avg,sum, listed names only: busy_ms_per_s {min, avg, max},
 *                                        backpressured_ms_per_s, records_in_per_s; a source's
 *                                        records_in, records_in_per_s, pending_records from
 *                                        its Source__ operator, partitions from the names
 *   GET /jobmanager/metrics              job_metrics.task_slots_total, task_slots_available
 *   GET /taskmanagers/metrics?agg=max    job_metrics.heap_used, heap_max, managed_used,
 *                                        metaspace_used, gc_ms_per_s
 *
 * Every payload is outside input: each field is checked. A payload whose shape is not Flink's
 * (not JSON, not an object where one is expected, a required field missing or of another
 * type) fails the poll, naming the request and the field; a metric value that is not a number
 * (Flink prints NaN as "NaN") or out of its range is left out with a warning, never guessed.
 * A metric Flink does not list is left out with one warning per vertex and metric in the
 * poll's `warnings`, and one `level=warn msg="metric missing"` line on stderr while it stays
 * missing.
 *
 * May call: httpc, log, jansson, xmem.
 */
#ifndef GOVERNOR_FLINKJOB_H
#define GOVERNOR_FLINKJOB_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "cli/httpc.h"

/* Where and how a JobManager is read (borrowed by every call). */
struct flinkjob_rest {
    struct httpc *client;
    const struct httpc_url *url;
    int64_t timeout_ms;
};

/* A REST call that failed: what was asked and why (for the warn line and the exit message). */
struct flinkjob_fail {
    char request[512]; /* "GET /jobs/abc/plan" */
    char cause[512];   /* "connection refused", "404: {...}", "vertices[1].id: expected ..." */
    int status;        /* the response's status, 0: none or a 2xx of another shape */
};

struct flinkjob;

/* new: the reader of Flink job flink_id (its names cache and warnings). name is the governor
 * job it is decided as (for the stderr lines). */
struct flinkjob *flinkjob_new(const char *flink_id, const char *name);
void flinkjob_free(struct flinkjob *j);
const char *flinkjob_id(const struct flinkjob *j);
const char *flinkjob_name(const struct flinkjob *j);

/*
 * One poll: reads the job and builds its sample (new in *sample: {"at", "running_since",
 * "status", "job_metrics", "vertices"}, with config a copy of the given object when not NULL)
 * and the poll's warnings (new in *warnings: [{"vertex"?, "metric"?, "message"}]). 0, or -1
 * with *f filled (nothing in *sample, *warnings).
 */
int flinkjob_poll(struct flinkjob *j, const struct flinkjob_rest *rest, json_t *config,
                  json_t **sample, json_t **warnings, struct flinkjob_fail *f);

/*
 * The job ids GET /jobs lists RUNNING, new in *ids ([string]); an id outside the job name
 * grammar is skipped with a warn line. 0, or -1 with *f.
 */
int flinkjob_running(const struct flinkjob_rest *rest, json_t **ids, struct flinkjob_fail *f);

/*
 * --apply rest: GET /jobs/:jobid/resource-requirements, each vertex of parallelism (an object
 * vertex id -> P, borrowed) set to {"lowerBound": 1, "upperBound": P}, and PUT back unless
 * every upper bound already is P (*put false). 0, or -1 with *f (a refused PUT: its status and
 * Flink's `errors`).
 */
int flinkjob_rescale(const struct flinkjob_rest *rest, const char *flink_id, json_t *parallelism,
                     bool *put, struct flinkjob_fail *f);

/* ------------------------------------------------- exposed for unit tests -- */

/*
 * The distinct (cluster, topic, partition) of Kafka source readers' currentOffset metrics and
 * (topic, partition) of Pulsar consumers' numMsgsReceived among the metric names (an array
 * of strings, borrowed): the source's partition count, 0 when none is found.
 */
int flinkjob_partitions(json_t *names);

#endif
