/*
 * sample_fields.c - the members of a decide request governor does not read (sample_fields.h).
 */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "base/suggest.h"
#include "decision/sample_fields.h"

#define N(a) (sizeof(a) / sizeof((a)[0]))

/* The fields json.c reads, per level. `job` names the job in a trace line (governor replay)
 * and is not read from a request body; it is known so that a trace line can be posted as is. */
static const char *const top_streaming[] = {"at",     "running_since", "status",   "mode",
                                            "config", "job_metrics",   "vertices", "job"};
static const char *const top_batch[] = {"at",     "running_since", "status",   "mode",
                                        "config", "workers",       "vertices", "job"};
static const char *const job_metrics[] = {
    "heap_used",      "heap_max",         "gc_ms_per_s",         "managed_used",
    "metaspace_used", "task_slots_total", "task_slots_available"};
/* A vertex's `name` is its display name (governor flink sends the operator's): stored with the
 * request, not read by the decision. */
static const char *const vertex[] = {
    "id",         "name",   "parallelism",        "max_parallelism",
    "partitions", "inputs", "slot_sharing_group", "finished",
    "metrics"};
static const char *const input[] = {"from", "ship"};
static const char *const metrics[] = {
    "busy_ms_per_s",       "backpressured_ms_per_s", "records_in",        "records_out",
    "accumulated_busy_ms", "records_in_per_s",       "records_out_per_s", "pending_records"};
static const char *const busy[] = {"min", "avg", "max"};
static const char *const workers[] = {"current",          "running",         "requested",
                                      "slots_per_worker", "cpu_utilization", "shuffle_on_workers"};
static const char *const stage[] = {"id", "batch"};
static const char *const stage_batch[] = {"state",
                                          "unit",
                                          "total_work",
                                          "work_done",
                                          "fraction_consumed",
                                          "busy_s",
                                          "remaining_parallelism",
                                          "fixed_shards"};

void sample_fields_reset(struct sample_fields *f)
{
    f->n = f->more = 0;
    f->tail[0] = '\0';
}

static void found(struct sample_fields *f, const char *at, const char *key,
                  const char *const *names, size_t n)
{
    if (f->n == SAMPLE_FIELDS_MAX) {
        f->more++;
        snprintf(f->tail, sizeof f->tail, "... and %d more unknown field%s, ignored", f->more,
                 f->more == 1 ? "" : "s");
        return;
    }
    char path[sizeof f->path[0]];
    /* A long name is cut, at a character's first byte (the answer is UTF-8). */
    int len = (int)strlen(key);
    if (len > 80) {
        len = 80;
        while (len > 0 && ((unsigned char)key[len] & 0xC0) == 0x80)
            len--;
    }
    snprintf(path, sizeof path, "%s%s%.*s%s", at, *at ? "." : "", len, key, key[len] ? "..." : "");
    const char *near = f->near[f->n] = suggest_nearest(key, names, n);
    memcpy(f->path[f->n], path, sizeof path);
    if (near)
        snprintf(f->message[f->n], sizeof f->message[0],
                 "%s: unknown field, ignored: did you mean \"%s\"?", path, near);
    else
        snprintf(f->message[f->n], sizeof f->message[0], "%s: unknown field, ignored", path);
    f->n++;
}

/* Records obj's members that are not in names (and not null). */
static int unknown_in(const json_t *obj, const char *at, const char *const *names, size_t n,
                      struct sample_fields *f)
{
    int count = 0;
    const char *key;
    json_t *val;
    if (!json_is_object(obj))
        return 0;
    json_object_foreach((json_t *)obj, key, val)
    {
        if (json_is_null(val))
            continue;
        size_t i = 0;
        while (i < n && strcmp(key, names[i]) != 0)
            i++;
        if (i == n) {
            found(f, at, key, names, n);
            count++;
        }
    }
    return count;
}

int sample_fields_check(const json_t *body, struct sample_fields *f)
{
    char at[160];
    int count = 0;
    sample_fields_reset(f);
    const char *mode = json_string_value(json_object_get(body, "mode"));
    bool batch = mode && strcasecmp(mode, "BATCH") == 0;
    if (batch)
        count += unknown_in(body, "", top_batch, N(top_batch), f);
    else
        count += unknown_in(body, "", top_streaming, N(top_streaming), f);
    if (batch)
        count += unknown_in(json_object_get(body, "workers"), "workers", workers, N(workers), f);
    else
        count += unknown_in(json_object_get(body, "job_metrics"), "job_metrics", job_metrics,
                            N(job_metrics), f);
    size_t i;
    json_t *v;
    json_array_foreach(json_object_get(body, "vertices"), i, v)
    {
        snprintf(at, sizeof at, "vertices[%zu]", i);
        if (batch) {
            count += unknown_in(v, at, stage, N(stage), f);
            snprintf(at, sizeof at, "vertices[%zu].batch", i);
            count += unknown_in(json_object_get(v, "batch"), at, stage_batch, N(stage_batch), f);
            continue;
        }
        count += unknown_in(v, at, vertex, N(vertex), f);
        size_t j;
        json_t *in;
        json_array_foreach(json_object_get(v, "inputs"), j, in)
        {
            snprintf(at, sizeof at, "vertices[%zu].inputs[%zu]", i, j);
            count += unknown_in(in, at, input, N(input), f);
        }
        json_t *m = json_object_get(v, "metrics");
        snprintf(at, sizeof at, "vertices[%zu].metrics", i);
        count += unknown_in(m, at, metrics, N(metrics), f);
        snprintf(at, sizeof at, "vertices[%zu].metrics.busy_ms_per_s", i);
        count += unknown_in(json_object_get(m, "busy_ms_per_s"), at, busy, N(busy), f);
    }
    return count;
}
