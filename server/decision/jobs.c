/*
 * jobs.c - the job registry (see jobs.h): a sorted array of entries, looked up by binary
 * search. Jobs are few (hundreds) and added rarely, so an insertion that moves pointers
 * is cheaper to reason about than a hash table, and listing comes sorted for free.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "decision/jobs.h"
#include "decision/json.h"
#include "base/jarena.h"
#include "base/log.h"
#include "base/xmem.h"

struct jobs {
    const struct opt_job *defaults;
    struct jobs_entry **v;
    int n, cap;
    struct jobopts_pool *opts; /* the distinct layers of the jobs, shared (jobopts.h) */
};

struct jobs *jobs_new(const struct opt_job *defaults)
{
    struct jobs *js = xcalloc(1, sizeof *js);
    js->defaults = defaults;
    js->opts = jobopts_pool_new();
    return js;
}

static void entry_free(struct jobs_entry *e)
{
    if (!e)
        return;
    core_state_free(e->state);
    jobopts_unref(e->shared);
    json_decref(e->config);
    free(e->id);
    free(e);
}

void jobs_free(struct jobs *js)
{
    if (!js)
        return;
    for (int i = 0; i < js->n; i++)
        entry_free(js->v[i]);
    free(js->v);
    jobopts_pool_free(js->opts);
    free(js);
}

/* Index of id, or -(insertion point) - 1. */
static int find(const struct jobs *js, const char *id)
{
    int lo = 0, hi = js->n - 1;
    while (lo <= hi) {
        int mid = (lo + hi) / 2, c = strcmp(js->v[mid]->id, id);
        if (c == 0)
            return mid;
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid - 1;
    }
    return -lo - 1;
}

struct jobs_entry *jobs_get(struct jobs *js, const char *id)
{
    int i = find(js, id);
    return i >= 0 ? js->v[i] : NULL;
}

struct jobs_entry *jobs_add(struct jobs *js, const char *id, int64_t created_at)
{
    int i = find(js, id);
    if (i >= 0)
        return js->v[i];
    i = -i - 1;
    if (js->n == js->cap) {
        js->cap = js->cap ? js->cap * 2 : 16;
        js->v = xrealloc(js->v, (size_t)js->cap * sizeof *js->v);
    }
    memmove(js->v + i + 1, js->v + i, (size_t)(js->n - i) * sizeof *js->v);
    struct jobs_entry *e = xcalloc(1, sizeof *e);
    e->id = xstrdup(id);
    e->state = core_state_new();
    e->config = json_object();
    /* the defaults alone: one copy for every job without a stored layer */
    e->shared = jobopts_find(js->opts, e->config);
    if (!e->shared)
        e->shared = jobopts_take(js->opts, e->config, opt_job_clone(js->defaults));
    e->opts = e->shared->opts;
    e->cache = &e->shared->cache;
    e->created_at = created_at;
    e->last_at = INT64_MIN;
    js->v[i] = e;
    js->n++;
    return e;
}

void jobs_remove(struct jobs *js, const char *id)
{
    int i = find(js, id);
    if (i < 0)
        return;
    entry_free(js->v[i]);
    memmove(js->v + i, js->v + i + 1, (size_t)(js->n - i - 1) * sizeof *js->v);
    js->n--;
}

int jobs_count(const struct jobs *js)
{
    return js->n;
}

struct jobs_entry *jobs_at(struct jobs *js, int i)
{
    return js->v[i];
}

const char *jobs_value_text(json_t *v, char *buf, size_t len)
{
    if (json_is_string(v))
        return json_string_value(v);
    if (json_is_integer(v)) {
        snprintf(buf, len, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
        return buf;
    }
    if (json_is_real(v)) {
        snprintf(buf, len, "%.17g", json_real_value(v));
        return buf;
    }
    if (json_is_boolean(v))
        return json_is_true(v) ? "true" : "false";
    return NULL;
}

int jobs_layer_opts(const struct jobs *js, json_t *layer, struct opt_job **out, char **errp,
                    char *bad_key, size_t bad_key_len)
{
    struct opt_job *o = opt_job_clone(js->defaults);
    const char *key;
    json_t *v;
    *out = NULL;
    json_object_foreach(layer, key, v)
    {
        char buf[64];
        const char *text = jobs_value_text(v, buf, sizeof buf);
        if (!text) {
            char m[320];
            snprintf(m, sizeof m, "%s: must be a string, a number or a boolean", key);
            *errp = xstrdup(m);
            goto fail;
        }
        if (opt_job_set(o, OPT_JOB, key, text, errp) < 0)
            goto fail;
    }
    *out = o;
    return 0;
fail:
    snprintf(bad_key, bad_key_len, "%s", key);
    opt_job_free(o);
    return -1;
}

/* Binds e to the shared entry o (a reference, taken over) for its stored layer. */
static void set_shared(struct jobs_entry *e, json_t *layer, struct jobopts *o)
{
    jobopts_unref(e->shared); /* after the new reference: the same entry stays */
    json_decref(e->config);
    e->config = layer;
    e->shared = o;
    e->opts = o->opts;
    e->cache = &o->cache;
}

void jobs_set_layer_take(struct jobs_entry *e, json_t *layer, struct opt_job *opts)
{
    set_shared(e, layer, jobopts_take(e->shared->pool, layer, opts));
}

struct load_ctx {
    struct jobs *js;
    struct db *db;
    bool seen;
};

/* Adds one stored window sample to a state being loaded. */
struct window_ctx {
    struct core_state *st;
    char *msg;
    size_t msg_len;
};

static int add_sample(void *ud, int64_t seq, const void *blob, size_t len)
{
    struct window_ctx *wc = ud;
    return core_state_decode_sample(wc->st, seq, blob, len, wc->msg, wc->msg_len) < 0 ? -1 : 0;
}

static int load_row(void *ud, const char *id, int64_t created_at, const char *config_json,
                    const void *state_bin, size_t state_bin_len, int64_t last_at, int64_t version)
{
    struct load_ctx *lc = ud;
    struct jobs *js = lc->js;
    json_t *layer = NULL;
    struct opt_job *opts = NULL;
    char *err = NULL;
    char bad[256], msg[256];
    lc->seen = true;

    jobs_remove(js, id);
    struct jobs_entry *e = jobs_add(js, id, created_at);
    e->last_at = last_at;
    e->version = version;
    layer = json_loads(config_json ? config_json : "{}", 0, NULL);
    if (!json_is_object(layer)) {
        json_decref(layer);
        layer = json_object();
    }
    /* A layer another job has: its options are made already (a start on many jobs with
     * few distinct layers builds each set once). */
    struct jobopts *o = jobopts_find(js->opts, layer);
    if (o) {
        set_shared(e, layer, o);
    } else {
        /* A stored layer that no longer validates (an option removed in a newer version) is
         * kept in the row but not applied: the job runs on the defaults, with a warning. */
        if (jobs_layer_opts(js, layer, &opts, &err, bad, sizeof bad) < 0)
            opts = opt_job_clone(js->defaults);
        jobs_set_layer_take(e, layer, opts);
        if (err && !e->shared->invalid)
            e->shared->invalid = err;
        else
            free(err);
    }
    if (e->shared->invalid)
        log_msg(LOG_WARN, "jobs", "stored config ignored", "job=%s error=\"%s\"", id,
                e->shared->invalid);
    if (state_bin) {
        bool meta = false;
        int rc = core_state_decode(state_bin, state_bin_len, e->state, &meta, msg, sizeof msg);
        if (rc == 0 && meta) {
            struct window_ctx wc = {e->state, msg, sizeof msg};
            char *derr = NULL;
            rc = db_window_each(lc->db, id, core_state_seq0(e->state), add_sample, &wc, &derr);
            if (derr) {
                snprintf(msg, sizeof msg, "%s", derr);
                free(derr);
            }
        }
        if (rc != 0) {
            log_msg(LOG_ERROR, "jobs", "stored state unreadable, starting empty",
                    "job=%s error=\"%s\"", id, msg);
            core_state_clear(e->state);
        }
        /* Everything stored is in the state now; new samples start after it (all of them
         * when the blob held its samples itself, which no row does since migration 008). Rows
         * above a failed load's point are overwritten (INSERT OR REPLACE) and older ones
         * dropped. */
        e->stored_seq = meta ? core_state_seq_end(e->state) : core_state_seq0(e->state);
    }
    return 0;
}

int jobs_load(struct jobs *js, struct db *db, const char *id, char **errp)
{
    struct load_ctx lc = {js, db, false};
    struct jarena *ar = jarena_pause();
    int n = db_jobs_each(db, id, load_row, &lc, errp);
    if (n >= 0 && id && !lc.seen)
        jobs_remove(js, id);
    jarena_resume(ar);
    return n < 0 ? -1 : 0;
}

void jobs_fence(struct jobs_entry *e, struct db_write *w)
{
    w->expect_version = e->version;
    e->version++;
}
