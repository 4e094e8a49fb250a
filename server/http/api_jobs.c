/*
 * api_jobs.c - the jobs resource: GET /v1/jobs, DELETE /v1/jobs/{job},
 * PUT and GET /v1/jobs/{job}/config.
 *
 * GET /v1/jobs lists the jobs of the store (db_jobs_list) with those in memory, not only the
 * latter: the registry forgets idle jobs past max-jobs-in-memory, and another process may have
 * made some.
 *
 * PUT replaces the job's stored layer after validating it over the server defaults; the
 * in-memory entry changes at once (so the next decide on the loop sees it) and the write
 * unit makes it durable before the reply. DELETE forgets the job's state and stored layer;
 * its decisions and events stay. A job not in memory is looked up in the store first
 * (api_job_find: another process may have made it); both units are fenced on the job's
 * version, and one that finds the version moved stores nothing (503 conflict, the job reloaded).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decision/jobs.h"
#include "decision/unit.h"
#include "http/api.h"
#include "options/options.h"
#include "base/xmem.h"

static json_t *time_or_null(int64_t t)
{
    return t == INT64_MIN ? json_null() : json_integer(t);
}

int api_jobs_list(const struct req *q, struct resp *r)
{
    struct jobs *js = q->api->jobs;
    json_t *stored = NULL;
    char *err = NULL;
    if (db_jobs_list(q->api->db, &stored, &err) < 0) {
        api_error(r, 503, NULL, NULL, "cannot read the jobs from the store (%s); retry", err);
        r->retry_after = 1;
        free(err);
        return 0;
    }
    /* Both in job order: a job held in memory is listed as memory has it (its last decision
     * may still wait for its commit), any other as stored. */
    json_t *rows = json_object_get(stored, "jobs"), *arr = json_array();
    size_t i = 0;
    int k = 0, n = jobs_count(js);
    while (i < json_array_size(rows) || k < n) {
        json_t *row = json_array_get(rows, i);
        struct jobs_entry *e = k < n ? jobs_at(js, k) : NULL;
        int c = !row ? 1 : !e ? -1 : strcmp(json_string_value(json_object_get(row, "job")), e->id);
        if (c < 0) {
            json_array_append(arr, row);
            i++;
            continue;
        }
        json_array_append_new(arr, json_pack("{s:s,s:I,s:o,s:O}", "job", e->id, "created_at",
                                             (json_int_t)e->created_at, "last_at",
                                             time_or_null(e->last_at), "config", e->config));
        k++;
        i += c == 0;
    }
    json_decref(stored);
    r->status = 200;
    r->json = json_pack("{s:o}", "jobs", arr);
    return 0;
}

static int bad_job(const struct req *q, struct resp *r)
{
    if (api_job_id_ok(q->job))
        return 0;
    api_error(r, 400, NULL, "job", "job id must match [A-Za-z0-9._:-]{1,128}");
    return 1;
}

/* The job a request names, which must exist: 0 with *e, or -1 after filling r (the store
 * cannot be read, or a 404). */
static int existing(const struct req *q, struct resp *r, struct jobs_entry **e)
{
    int found = api_job_find(q->api, q->job, e, r);
    if (found == 0)
        api_error(r, 404, NULL, "job", "no job \"%s\"", q->job);
    return found > 0 ? 0 : -1;
}

int api_job_delete(const struct req *q, struct resp *r)
{
    struct jobs_entry *e;
    if (bad_job(q, r) || api_job_recover(q->api, q->job, r) < 0 || existing(q, r, &e) < 0)
        return 0;
    struct db_write *w = unit_delete(e, q->now_ms);
    jobs_remove(q->api->jobs, q->job);
    r->status = 200;
    r->json = json_pack("{s:s,s:b}", "job", q->job, "deleted", 1);
    r->write = w;
    return 0;
}

struct each_ctx {
    json_t *obj;
};

/* One effective option: its value, its layer and, when a Dataflow knob set it, the knob. */
static void add_effective(void *ud, const char *key, const char *value, enum opt_layer layer,
                          const char *via)
{
    struct each_ctx *c = ud;
    json_t *o =
        json_pack("{s:s,s:s}", "value", value ? value : "", "source", opt_layer_name(layer));
    if (via)
        json_object_set_new(o, "via", json_string(via));
    json_object_set_new(c->obj, key, o);
}

int api_config_get(const struct req *q, struct resp *r)
{
    struct jobs_entry *e;
    if (bad_job(q, r) || existing(q, r, &e) < 0)
        return 0;
    struct each_ctx c = {json_object()};
    opt_job_each_via(e->opts, add_effective, &c);
    r->status = 200;
    r->json = json_pack("{s:s,s:O,s:o}", "job", q->job, "stored", e->config, "effective", c.obj);
    return 0;
}

int api_config_put(const struct req *q, struct resp *r)
{
    struct api *a = q->api;
    json_t *body = NULL, *layer = NULL, *warn = NULL;
    struct opt_job *opts = NULL;
    struct core_config cfg;
    json_error_t jerr;
    char *err = NULL;
    char bad[256], field[300];

    if (bad_job(q, r) || api_job_recover(a, q->job, r) < 0)
        goto out;
    body = json_loadb(q->body ? q->body : "", q->body_len, JSON_REJECT_DUPLICATES, &jerr);
    if (!body) {
        api_error(r, 400, NULL, "", "malformed JSON at line %d column %d: %s", jerr.line,
                  jerr.column, jerr.text);
        goto out;
    }
    layer = json_object_get(body, "config");
    if (!json_is_object(body) || !json_is_object(layer)) {
        api_error(r, 400, NULL, "config", "the body must be {\"config\": {\"option\": value}}");
        goto out;
    }
    if (a->srv && json_object_size(layer) > (size_t)a->srv->limits.config_keys) {
        api_error(r, 413, NULL, "config",
                  "%zu keys is more than the limit of %d (the server option max-config-keys)",
                  json_object_size(layer), a->srv->limits.config_keys);
        goto out;
    }
    if (jobs_layer_opts(a->jobs, layer, &opts, &err, bad, sizeof bad) < 0) {
        snprintf(field, sizeof field, "config.%s", bad);
        api_error(r, 422, NULL, field, "%s", err);
        goto out;
    }
    if (opt_job_resolve(opts, &cfg, &err) < 0) {
        api_error(r, 422, NULL, "config", "%s", err);
        goto out;
    }
    /* Store the values as text, exactly as the layer is applied. */
    json_t *stored = json_object();
    const char *key;
    json_t *v;
    json_object_foreach(layer, key, v)
    {
        char buf[64];
        json_object_set_new(stored, key, json_string(jobs_value_text(v, buf, sizeof buf)));
    }
    warn = json_array();
    int n_warn = opt_job_n_warnings(opts);
    const char **keys = xmalloc((size_t)(n_warn + 1) * sizeof *keys);
    opt_job_warnings(opts, keys, n_warn);
    for (int i = 0; i < n_warn; i++)
        json_array_append_new(warn, json_string(keys[i]));
    free(keys);

    struct jobs_entry *e;
    int found = api_job_find(a, q->job, &e, r);
    if (found < 0) {
        json_decref(stored);
        goto out;
    }
    if (!found)
        e = jobs_add(a->jobs, q->job, q->now_ms);
    char *text = json_dumps(stored, JSON_COMPACT);
    struct db_write *w = unit_config(e, q->now_ms, text);
    free(text);
    r->status = 200;
    r->json = json_pack("{s:s,s:O,s:o}", "job", q->job, "config", stored, "warnings", warn);
    r->write = w;
    jobs_set_layer_take(e, stored, opts);
    opts = NULL;
    warn = NULL;
out:
    free(err);
    json_decref(warn);
    json_decref(body);
    opt_job_free(opts);
    return 0;
}
