/*
 * decision.c - the decision service (see decision.h): parse, options, checks, hooks, decide,
 * render, write unit.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "time/cron.h"
#include "decision/decision.h"
#include "base/jarena.h"
#include "plugin/plugin.h"
#include "decision/unit.h"
#include "base/xmem.h"

void decision_buf_init(struct decision_buf *b)
{
    jsn_sample_init(&b->js);
    memset(&b->jr, 0, sizeof b->jr); /* zeroed is empty (jsn.h) */
    core_decision_init(&b->d);
    jsn_text_init(&b->text);
    jsn_text_init(&b->rest);
    b->warn = NULL;
    b->warn_cap = 0;
    sample_fields_reset(&b->sf);
}

void decision_buf_deinit(struct decision_buf *b)
{
    jsn_rebalance_deinit(&b->jr);
    jsn_sample_deinit(&b->js);
    sample_text_deinit(&b->st);
    core_decision_deinit(&b->d);
    jsn_text_deinit(&b->text);
    jsn_text_deinit(&b->rest);
    free(b->warn);
}

void decision_cache_set(struct decision_cache *c, struct opt_job *layers)
{
    c->layers = layers;
    c->resolved = false;
}

void decision_cache_deinit(struct decision_cache *c)
{
    free(c->options_json);
    memset(c, 0, sizeof *c);
}

int decision_refuse(struct decision_err *e, int status, const char *code, const char *field,
                    const char *fmt, ...)
{
    va_list ap;
    e->status = status;
    snprintf(e->code, sizeof e->code, "%s", code);
    snprintf(e->field, sizeof e->field, "%s", field ? field : "");
    va_start(ap, fmt);
    vsnprintf(e->message, sizeof e->message, fmt, ap);
    va_end(ap);
    return -1;
}

void decision_seen_init(struct decision_seen *s, int keep)
{
    memset(s, 0, sizeof *s);
    s->keep = keep;
}

void decision_seen_clear(struct decision_seen *s)
{
    for (int i = 0; i < s->n; i++) {
        json_decref(s->e[i].body);
        free(s->e[i].response);
    }
    s->n = 0;
}

void decision_seen_deinit(struct decision_seen *s)
{
    decision_seen_clear(s);
    free(s->e);
    memset(s, 0, sizeof *s);
}

int decision_seen_check(const struct decision_seen *s, int64_t at, json_t *body, const char *what,
                        const char **response, struct decision_err *e)
{
    if (s->n == 0 || at > s->e[s->n - 1].at)
        return 0;
    int lo = 0, hi = s->n - 1; /* ascending: the last one with e.at <= at */
    while (lo < hi) {
        int mid = lo + (hi - lo + 1) / 2;
        if (s->e[mid].at <= at)
            lo = mid;
        else
            hi = mid - 1;
    }
    const struct decision_seen_entry *x = &s->e[lo];
    if (x->at != at)
        return decision_refuse(e, 409, "FAILED_PRECONDITION", "at",
                               "at %lld is not after the job's last sample (%lld) and repeats no "
                               "decided sample; samples of one job must go forward in time",
                               (long long)at, (long long)s->e[s->n - 1].at);
    if (!json_equal(x->body, body))
        return decision_refuse(e, 409, "FAILED_PRECONDITION", "at",
                               "at %lld was already decided (%s %ld) from another sample; a retry "
                               "must send the same body, and a new sample a later at",
                               (long long)at, what, x->tag);
    *response = x->response;
    return 1;
}

void decision_seen_add(struct decision_seen *s, int64_t at, json_t *body, const char *response,
                       long tag)
{
    if (s->keep > 0 && s->n == s->keep) {
        json_decref(s->e[0].body);
        free(s->e[0].response);
        memmove(s->e, s->e + 1, (size_t)(s->n - 1) * sizeof *s->e);
        s->n--;
    }
    if (s->n == s->cap) {
        s->cap = s->cap ? s->cap * 2 : 16;
        s->e = xrealloc(s->e, (size_t)s->cap * sizeof *s->e);
    }
    s->e[s->n++] = (struct decision_seen_entry){at, json_incref(body), xstrdup(response), tag};
}

/* The field a message names: the text before its first ": " when that is a path (no
 * spaces), as the core's topology errors start ("vertices[2].inputs[0].from: ..."). */
static void error_field(const char *msg, char *field, size_t len)
{
    const char *c = strstr(msg, ": ");
    size_t n = c ? (size_t)(c - msg) : 0;
    if (n >= len || memchr(msg, ' ', n))
        n = 0;
    memcpy(field, msg, n);
    field[n] = '\0';
}

/* Whether the request brings options of its own: a `config` that is neither absent, null
 * nor an empty object (a wrong type too: the parser refuses it). */
static bool own_options(json_t *body)
{
    json_t *c = json_object_get(body, "config");
    return c && !json_is_null(c) && !(json_is_object(c) && json_object_size(c) == 0);
}

struct overlay {
    struct opt_job *opts;
    char *err; /* the first refusal (new) */
};

/* A key the overlay sets itself (not one a knob of it maps onto: the knob is copied, and maps
 * again in its new layer, over the slots in effect there). */
static void overlay_key(void *ud, const char *key, const char *value, enum opt_layer layer,
                        const char *via)
{
    struct overlay *o = ud;
    if (layer == OPT_SERVER && value && !via && !o->err)
        opt_job_set(o->opts, OPT_REQUEST, key, value, &o->err);
}

/* The options of one decision: what it runs on, resolved, and their hash. */
struct options {
    struct opt_job *own;       /* the request's copy of the layers (NULL: the cache's) */
    const struct opt_job *eff; /* own, or the cache's layers */
    struct core_config cfg;    /* a copy: plugin_call_new may reorder its executors */
    char hash[17];
};

/*
 * Step 2: a sample at `at` against the job's decided ones (decision.h: seen, or has_last and
 * last_at). 0: after the last one, to be decided; 1: a repeat (res->repeat, res->repeat_at);
 * -1: a 409 in res->err.
 */
static int not_after(const struct decision_req *q, int64_t at, struct decision_res *res)
{
    if (q->seen) {
        int rc = decision_seen_check(q->seen, at, q->body, q->seen_what ? q->seen_what : "sample",
                                     &res->repeat, &res->err);
        if (rc > 0)
            res->repeat_at = at;
        return rc;
    }
    if (!q->has_last || at > q->last_at)
        return 0;
    res->repeat = NULL;
    res->repeat_at = at;
    return 1;
}

/* Step 5: a unit the store could not take is refused before the state changes (503). */
static int unwritable(const struct decision_req *q, struct decision_err *e)
{
    if (!q->unwritable)
        return 0;
    decision_refuse(e, 503, "UNAVAILABLE", NULL,
                    "the store cannot be written (%s); nothing was stored, retry after %d s",
                    q->unwritable, q->retry_after);
    e->retry_after = q->retry_after;
    return -1;
}

/* Steps 1 to 4: the sample into b->js, the options into o. -1 + res->err (o->own may be set),
 * or 1 for a repeat (not_after). The sample is checked whole (and against the job's decided
 * ones: a retry, a 409) before any work on the options, whose layers may hold thousands of
 * keys. */
static int sample_and_options(struct decision_buf *b, const struct decision_req *q,
                              struct options *o, struct decision_res *res)
{
    struct decision_err *e = &res->err;
    struct jsn_err je;
    char *err = NULL;
    const struct opt_job *layers = q->cache ? q->cache->layers : q->layers;
    bool own = !q->cache || q->overlay || own_options(q->body);
    memset(&je, 0, sizeof je);
    b->js.limits = q->limits;
    if (!q->parsed && jsn_parse_sample(q->body, q->now_ms, &b->js, NULL, &je) < 0)
        return decision_refuse(e, je.status ? je.status : 400,
                               je.code[0] ? je.code : "INVALID_ARGUMENT", je.field, "%s",
                               je.message);
    sample_fields_reset(&b->sf);
    /* (a sample read without a tree has no member governor does not know: sample_text.h) */
    if ((q->warnings || q->strict) && q->body && sample_fields_check(q->body, &b->sf) > 0 &&
        q->strict) {
        const char *near = b->sf.near[0];
        return decision_refuse(e, 400, "INVALID_ARGUMENT", b->sf.path[0],
                               "%s: unknown field%s%s%s (the server runs with strict-samples: "
                               "a sample with a field governor does not read is refused)",
                               b->sf.path[0], near ? ": did you mean \"" : "", near ? near : "",
                               near ? "\"?" : "");
    }
    int seen = not_after(q, b->js.s.at, res);
    if (seen != 0)
        return seen;
    if (b->js.s.at < core_state_last_at(q->state))
        return decision_refuse(e, 409, "FAILED_PRECONDITION", "at",
                               "\"at\" is earlier than the job's last sample");
    if (own) {
        o->own = opt_job_clone(layers);
        if (jsn_apply_config(q->body, o->own, &je) < 0)
            return decision_refuse(e, je.status ? je.status : 422,
                                   je.code[0] ? je.code : "INVALID_CONFIG", je.field, "%s",
                                   je.message);
    }
    if (q->overlay) {
        struct overlay ov = {o->own, NULL};
        opt_job_each_via(q->overlay, overlay_key, &ov);
        if (ov.err) {
            decision_refuse(e, 422, "INVALID_CONFIG", "config", "%s", ov.err);
            free(ov.err);
            return -1;
        }
    }
    struct decision_cache *c = own ? NULL : q->cache;
    if (c && !c->resolved) {
        /* The job's layers, resolved once per change of them (decision_cache_set). */
        if (opt_job_resolve(c->layers, &c->cfg, &err) < 0)
            goto refused;
        opt_job_hash(c->layers, c->hash);
        c->resolved = true;
    }
    if (c) {
        o->eff = c->layers;
        o->cfg = c->cfg;
        memcpy(o->hash, c->hash, sizeof o->hash);
        return 0;
    }
    if (opt_job_resolve(o->own, &o->cfg, &err) < 0)
        goto refused;
    o->eff = o->own;
    opt_job_hash(o->own, o->hash);
    return 0;
refused:
    decision_refuse(e, 422, "INVALID_CONFIG", "config", "%s", err);
    free(err);
    return -1;
}

static void add_option(void *ud, const char *key, const char *value, enum opt_layer layer)
{
    (void)layer;
    json_object_set_new(ud, key, json_string(value ? value : ""));
}

/* new: the stored text of the effective options (config_json), from the cache when their
 * hash has not changed. */
static char *options_text(const struct decision_req *q, const struct options *o)
{
    struct decision_cache *c = q->cache;
    if (c && c->options_json && strcmp(c->options_hash, o->hash) == 0)
        return xstrdup(c->options_json);
    json_t *all = json_object();
    opt_job_each(o->eff, add_option, all);
    char *text = jarena_dump(all);
    json_decref(all);
    if (c) {
        free(c->options_json);
        c->options_json = xstrdup(text);
        memcpy(c->options_hash, o->hash, sizeof o->hash);
    }
    return text;
}

/* A rebalance request (DECISION_REBALANCE): parse, advise, render, write unit; the job's
 * state is not touched. */
static int rebalance_run(struct decision_buf *b, const struct decision_req *q,
                         struct decision_res *res)
{
    struct jsn_err je;
    struct core_rebalance_out o;
    memset(&je, 0, sizeof je);
    memset(&o, 0, sizeof o);
    b->jr.limits = q->limits;
    if (jsn_parse_rebalance(q->body, q->now_ms, &b->jr, &je) < 0)
        return decision_refuse(&res->err, je.status ? je.status : 400,
                               je.code[0] ? je.code : "INVALID_ARGUMENT", je.field, "%s",
                               je.message);
    if (unwritable(q, &res->err) < 0)
        return -1;
    o.splits = xcalloc((size_t)b->jr.in.n_items, sizeof *o.splits);
    o.blocks = xcalloc((size_t)b->jr.in.n_items, sizeof *o.blocks);
    core_rebalance(&b->jr.in, &o);
    res->response = jsn_render_rebalance(&b->jr, &o, q->job, o.reason, o.message);
    if (q->text)
        res->write = unit_rebalance(q, b->jr.at, o.reason, o.message, res->response);
    free(o.splits);
    free(o.blocks);
    return 0;
}

/* The response's warnings, borrowed into b->warn: the sample's unknown fields, then the
 * options' keys governor does not read. Their count. */
static int warnings_of(struct decision_buf *b, const struct opt_job *eff)
{
    const struct sample_fields *f = &b->sf;
    int n = f->n + (f->more > 0) + opt_job_n_warnings(eff), k = 0;
    if (n > b->warn_cap) {
        b->warn_cap = n;
        b->warn = xrealloc(b->warn, (size_t)n * sizeof *b->warn);
    }
    for (int i = 0; i < f->n; i++)
        b->warn[k++] = f->message[i];
    if (f->more > 0)
        b->warn[k++] = f->tail;
    if (n > k)
        k += opt_job_warnings(eff, b->warn + k, n - k);
    return n;
}

/* new: the warnings as the response lists them. */
static json_t *warnings_json(struct decision_buf *b, const struct opt_job *eff)
{
    json_t *warn = json_array();
    int n = warnings_of(b, eff);
    for (int i = 0; i < n; i++)
        json_array_append_new(warn, json_string(b->warn[i]));
    return warn;
}

/* The write unit's options, revision and hash. */
static void unit_finish(struct db_write *w, const struct decision_req *q, const struct options *o,
                        const char *revision)
{
    w->config_json = options_text(q, o);
    w->policy_revision = xstrdup(revision);
    w->config_hash = xstrdup(o->hash);
}

int decision_run(struct decision_buf *b, const struct decision_req *q, struct decision_res *res)
{
    struct options o;
    struct plugin_call *call = NULL;
    struct core_hooks hooks = {.excluded = cron_excluded_hook};
    char err[sizeof res->err.message];
    int rc = -1;

    memset(&o, 0, sizeof o);
    memset(res, 0, sizeof *res);
    if (q->kind == DECISION_REBALANCE)
        return rebalance_run(b, q, res);
    if ((rc = sample_and_options(b, q, &o, res)) != 0)
        goto out;
    rc = -1;
    if (unwritable(q, &res->err) < 0)
        goto out;
    const char *revision = q->set ? plugin_set_revision(q->set) : q->revision;
    if (b->js.s.batch_mode) {
        /* A worker pool to size (core/README.md, Batch): no plugin hooks. */
        core_decide_batch(q->state, &b->js.s, &o.cfg, &b->bd);
        res->response = jsn_render_batch(&b->bd, q->job, revision, o.hash);
        if (q->warnings)
            json_object_set_new(res->response, "warnings", warnings_json(b, o.eff));
        if (q->text)
            unit_finish(res->write = unit_batch(q, &b->bd, res->response), q, &o, revision);
        rc = 0;
        goto out;
    }
    if (q->set) {
        call = plugin_call_new(q->set, q->job, o.eff, &o.cfg, q->state, &b->js.s);
        plugin_call_config_hash(call, o.hash);
        plugin_call_hooks(call, &hooks);
    }
    if (core_decide(q->state, &b->js.s, &o.cfg, &hooks, &b->d, err, sizeof err) < 0) {
        char field[sizeof res->err.field];
        error_field(err, field, sizeof field);
        decision_refuse(&res->err, 400, "INVALID_ARGUMENT", field, "%s", err);
        goto out;
    }

    int n_warn = q->warnings ? warnings_of(b, o.eff) : 0;
    if (q->text) {
        /* The response printed once, straight from d: sent with decision_id added
         * (api_committed); the rows take their figures from it, and the store rebuilds it
         * from the rows and what no row holds (the rest: core_dfields, the warnings). */
        jsn_decision_text(&b->text, &b->d, q->job, revision, o.hash, q->warnings, b->warn, n_warn);
        jsn_rest_text(&b->rest, &b->d, q->warnings, b->warn, n_warn);
        res->write = unit_sample(q, &b->d, call, &b->text, &b->rest);
        unit_finish(res->write, q, &o, revision);
    }
    if (!q->text || !q->text_only) {
        res->response = jsn_render_decision(&b->d, q->job, revision, o.hash);
        if (q->warnings)
            json_object_set_new(res->response, "warnings", warnings_json(b, o.eff));
    }
    rc = 0;
out:
    plugin_call_free(call);
    opt_job_free(o.own);
    return rc;
}
