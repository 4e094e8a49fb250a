/*
 * jobs.c - the job registry (see jobs.h): a sorted array of entries, looked up by binary
 * search, and a doubly linked list of them in the order of use, for jobs_trim. The jobs held
 * are at most max-jobs-in-memory, added rarely, so an insertion that moves pointers is cheaper
 * to reason about than a hash table, and listing comes sorted for free.
 */
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "decision/jobs.h"
#include "decision/jsn.h"
#include "base/jarena.h"
#include "base/log.h"
#include "base/xmem.h"

struct jobs {
    const struct opt_job *defaults;
    struct jobs_entry **v;
    int n, cap;
    int max;                      /* jobs held at most (jobs_trim) */
    int64_t evicted;              /* forgotten by jobs_trim */
    struct jobs_entry *mru, *lru; /* the use order's ends */
    struct jobopts_pool *opts;    /* the distinct layers of the jobs, shared (jobopts.h) */
};

struct jobs *jobs_new(const struct opt_job *defaults)
{
    struct jobs *js = xcalloc(1, sizeof *js);
    js->defaults = defaults;
    js->max = INT_MAX;
    js->opts = jobopts_pool_new();
    return js;
}

/* ------------------------------------------------------------ use order -- */

static void lru_unlink(struct jobs *js, struct jobs_entry *e)
{
    if (e->lru_prev)
        e->lru_prev->lru_next = e->lru_next;
    else if (js->mru == e)
        js->mru = e->lru_next;
    if (e->lru_next)
        e->lru_next->lru_prev = e->lru_prev;
    else if (js->lru == e)
        js->lru = e->lru_prev;
    e->lru_prev = e->lru_next = NULL;
}

/* e becomes the most recently used (front) or, with back, the least. */
static void lru_put(struct jobs *js, struct jobs_entry *e, bool back)
{
    lru_unlink(js, e);
    if (back) {
        e->lru_prev = js->lru;
        if (js->lru)
            js->lru->lru_next = e;
        js->lru = e;
        if (!js->mru)
            js->mru = e;
    } else {
        e->lru_next = js->mru;
        if (js->mru)
            js->mru->lru_prev = e;
        js->mru = e;
        if (!js->lru)
            js->lru = e;
    }
}

static void entry_free(struct jobs_entry *e)
{
    if (!e)
        return;
    core_state_free(e->state);
    free(e->samples);
    core_codec_state_deinit(&e->samples_st);
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
    if (i < 0)
        return NULL;
    lru_put(js, js->v[i], false);
    return js->v[i];
}

/*
 * A new job's generation: a random positive 63-bit number (0 is the generation of rows from
 * before it existed). Two incarnations of a job, made by any processes, draw the same one with
 * a chance of 2^-63; without the kernel's randomness, the clock, the process and a counter.
 */
static int64_t new_generation(void)
{
    static uint64_t counter;
    uint64_t g = 0;
    if (getrandom(&g, sizeof g, GRND_NONBLOCK) != (ssize_t)sizeof g) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        g = ((uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec) * 0x9E3779B97F4A7C15u ^
            ((uint64_t)getpid() << 32) ^ ++counter;
    }
    g &= INT64_MAX;
    return g ? (int64_t)g : 1;
}

struct jobs_entry *jobs_add(struct jobs *js, const char *id, int64_t created_at)
{
    int i = find(js, id);
    if (i >= 0) {
        lru_put(js, js->v[i], false);
        return js->v[i];
    }
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
    e->generation = new_generation();
    js->v[i] = e;
    js->n++;
    lru_put(js, e, false);
    return e;
}

void jobs_remove(struct jobs *js, const char *id)
{
    int i = find(js, id);
    if (i < 0)
        return;
    lru_unlink(js, js->v[i]);
    entry_free(js->v[i]);
    memmove(js->v + i, js->v + i + 1, (size_t)(js->n - i - 1) * sizeof *js->v);
    js->n--;
}

int jobs_count(const struct jobs *js)
{
    return js->n;
}

void jobs_set_max(struct jobs *js, int max)
{
    js->max = max < 1 ? 1 : max;
}

int jobs_trim(struct jobs *js, struct writer *wr)
{
    int n = 0;
    struct jobs_entry *e = js->lru;
    /* From the least recently used up, never the most recently used one (mru). */
    while (js->n > js->max && e && e != js->mru) {
        struct jobs_entry *prev = e->lru_prev;
        if (!wr || (writer_job_pending(wr, e->id) == 0 && !writer_job_blocked(wr, e->id))) {
            jobs_remove(js, e->id);
            js->evicted++;
            n++;
        }
        e = prev;
    }
    return n;
}

int64_t jobs_evicted(const struct jobs *js)
{
    return js->evicted;
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
    bool all; /* every job: each loaded one goes behind those loaded before it (newest first) */
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

static int load_row(void *ud, const struct db_job_row *row)
{
    const char *id = row->job, *config_json = row->config_json;
    const void *state_bin = row->state_bin;
    size_t state_bin_len = row->state_bin_len;
    int64_t created_at = row->created_at, last_at = row->last_at, version = row->version,
            generation = row->generation;
    struct load_ctx *lc = ud;
    struct jobs *js = lc->js;
    json_t *layer = NULL;
    struct opt_job *opts = NULL;
    char *err = NULL;
    char bad[256], msg[256];
    lc->seen = true;

    jobs_remove(js, id);
    struct jobs_entry *e = jobs_add(js, id, created_at);
    if (lc->all)
        lru_put(js, e, true);
    e->last_at = last_at;
    e->version = version;
    e->generation = generation;
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
    /* The chunk of samples its decisions were filling goes on; one that does not read is
     * started over by the next decision. */
    if (row->samples && core_codec_blob_resume(row->samples, row->samples_len, &e->samples,
                                               &e->samples_st, msg, sizeof msg) < 0)
        log_msg(LOG_ERROR, "jobs", "stored chunk of samples unreadable, starting a new one",
                "job=%s error=\"%s\"", id, msg);
    return 0;
}

int jobs_load(struct jobs *js, struct db *db, const char *id, char **errp)
{
    struct load_ctx lc = {js, db, false, id == NULL};
    struct jarena *ar = jarena_pause();
    int n = db_jobs_each(db, id, js->max, load_row, &lc, errp);
    if (n >= 0 && id && !lc.seen)
        jobs_remove(js, id);
    jarena_resume(ar);
    return n < 0 ? -1 : 0;
}

void jobs_samples_add(struct jobs_entry *e, const struct core_sample *sm, struct db_write *w)
{
    static const struct core_codec_limits lim = {JOBS_SAMPLES_ROWS, JOBS_SAMPLES_SPAN_MS};
    unsigned char *layout, *counter;
    size_t len;
    int k = core_codec_sample_k(sm->n_vertices);
    double *row = xmalloc((size_t)k * sizeof *row);
    core_codec_sample_layout(sm, &layout, &len, &counter);
    core_codec_sample_row(sm, row);
    if (!e->samples || e->samples_st.k != k || core_codec_bytes(e->samples) >= JOBS_SAMPLES_BYTES ||
        core_codec_append(&e->samples, &e->samples_st, &lim, sm->at, row, counter, layout, len)) {
        if (e->samples) {
            core_codec_blob(e->samples, &w->samples_closed, &w->samples_closed_len);
            free(e->samples);
            e->samples = NULL;
        }
        if (!e->samples_st.prev || e->samples_st.k != k) {
            core_codec_state_deinit(&e->samples_st);
            core_codec_state_init(&e->samples_st, k);
        }
        core_codec_append(&e->samples, &e->samples_st, &lim, sm->at, row, counter, layout, len);
        w->samples_new = true;
    }
    core_codec_blob(e->samples, &w->samples, &w->samples_len);
    free(row);
    free(layout);
    free(counter);
}

void jobs_fence(struct jobs_entry *e, struct db_write *w)
{
    w->expect_version = e->version;
    w->expect_generation = e->generation;
    e->version++;
}
