/*
 * api_target.c - GET /v1/jobs/{job}/target[?vertex=ID]: one vertex's replica count for KEDA's
 * metrics-api scaler (docs/keda.md).
 *
 * `replicas` is the vertex's target in the job's newest decision with execute true, so that a
 * later NO_CHANGE or recommendation keeps a count the client has not applied yet instead of
 * flapping back to the running size; without such a decision it is the vertex's current
 * parallelism in the newest decision. `decision_id`, `at`, `reason` and `execute` are those of
 * the decision `replicas` was read from, `current` is the newest decision's. Two reads on the
 * loop's connection: the newest decision (db_decisions_list, limit 1) and the newest executed
 * one (db_decision_executed, one probe of a partial index), whatever the history's length.
 *
 * A batch decision counts as one vertex, "workers" (its pool). Rebalance advice is no count:
 * it is skipped when looking for the newest decision.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http/api.h"
#include "base/log.h"

/* Rebalance advice in front of the newest count: looked past, up to this many decisions. */
#define TARGET_SCAN 100

/* The {current, target} of vertex id in decision d (borrowed), or NULL; a batch decision's
 * pool is the vertex "workers". */
static json_t *vertex_of(json_t *d, const char *id)
{
    json_t *vs = json_object_get(d, "vertices"), *v;
    size_t i;
    json_array_foreach(vs, i, v)
    {
        const char *vid = json_string_value(json_object_get(v, "id"));
        if (vid && strcmp(vid, id) == 0)
            return v;
    }
    json_t *w = json_object_get(d, "workers");
    if (json_is_object(w) && strcmp(id, "workers") == 0)
        return w;
    return NULL;
}

/* The number of vertices d counts (a batch pool is one). */
static size_t n_vertices(json_t *d)
{
    size_t n = json_array_size(json_object_get(d, "vertices"));
    return n ? n : json_is_object(json_object_get(d, "workers")) ? 1 : 0;
}

/* The only vertex's id of d (n_vertices(d) == 1). */
static const char *only_vertex(json_t *d)
{
    json_t *vs = json_object_get(d, "vertices");
    if (json_array_size(vs) == 1)
        return json_string_value(json_object_get(json_array_get(vs, 0), "id"));
    return "workers";
}

static int read_failed(struct resp *r, const char *job, char *err)
{
    char q[300];
    log_msg(LOG_ERROR, "api", "read failed", "job=%s error=%s", job, log_quote(q, sizeof q, err));
    free(err);
    return api_error(r, 500, NULL, NULL, "the database could not be read");
}

int api_target(const struct req *q, struct resp *r)
{
    struct api *a = q->api;
    json_t *list = NULL, *exec = NULL, *newest = NULL;
    char *err = NULL;
    char shown[48];

    if (!api_job_id_ok(q->job))
        return api_job_id_error(r, q->job);
    const char *vertex = api_query(q, "vertex");
    if (vertex && (!*vertex || strlen(vertex) > 128)) {
        api_error(r, 400, NULL, "vertex",
                  "vertex must be a vertex id (1 to 128 characters), got \"%s\"",
                  api_shown(vertex, shown, sizeof shown));
        goto out;
    }
    for (int limit = 1; !newest; limit = TARGET_SCAN) {
        json_decref(list);
        list = NULL;
        struct db_page page = {.since = INT64_MIN,
                               .until = INT64_MAX,
                               .before = INT64_MAX,
                               .limit = limit,
                               .max_rows = a->srv ? a->srv->limits.page_rows : INT_MAX};
        if (db_decisions_list(a->db, q->job, &page, &list, &err) < 0) {
            read_failed(r, q->job, err);
            goto out;
        }
        json_t *ds = json_object_get(list, "decisions"), *d;
        size_t i;
        json_array_foreach(ds, i, d) if (n_vertices(d) > 0)
        {
            newest = d;
            break;
        }
        if (!newest &&
            ((!page.more && json_array_size(ds) < (size_t)limit) || limit == TARGET_SCAN))
            break;
    }
    if (!newest) {
        api_error(r, 404, NULL, "job", "job \"%s\" has no decision with a vertex yet", q->job);
        goto out;
    }
    if (!vertex) {
        size_t n = n_vertices(newest);
        if (n != 1) {
            api_error(r, 400, NULL, "vertex",
                      "job \"%s\" has %zu vertices: name one with ?vertex=ID (vertex may be left "
                      "out for a one-vertex job only)",
                      q->job, n);
            goto out;
        }
        vertex = only_vertex(newest);
    }
    json_t *now = vertex_of(newest, vertex);
    if (!now) {
        api_error(r, 404, NULL, "vertex", "job \"%s\" has no vertex \"%s\" in its newest decision",
                  q->job, api_shown(vertex, shown, sizeof shown));
        goto out;
    }
    if (db_decision_executed(a->db, q->job, &exec, &err) < 0) {
        read_failed(r, q->job, err);
        goto out;
    }
    json_t *from = newest, *ev = exec ? vertex_of(exec, vertex) : NULL;
    json_t *replicas = json_object_get(now, "current");
    if (ev && json_is_integer(json_object_get(ev, "target"))) {
        from = exec;
        replicas = json_object_get(ev, "target");
    }
    r->status = 200;
    r->json = json_pack(
        "{s:s,s:s,s:O,s:O,s:O,s:O,s:O,s:O}", "job", q->job, "vertex", vertex, "replicas",
        replicas ? replicas : json_null(), "current",
        json_object_get(now, "current") ? json_object_get(now, "current") : json_null(),
        "decision_id", json_object_get(from, "decision_id"), "at", json_object_get(from, "at"),
        "reason", json_object_get(from, "reason"), "execute", json_object_get(from, "execute"));
    if (!r->json)
        api_error(r, 500, NULL, NULL, "a stored decision of job \"%s\" lacks a field", q->job);
out:
    json_decref(exec);
    json_decref(list);
    return 0;
}
