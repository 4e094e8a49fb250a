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
#include "base/xmem.h"

void decision_buf_init(struct decision_buf *b)
{
    json_sample_init(&b->js);
    memset(&b->jr, 0, sizeof b->jr); /* zeroed is empty (json.h) */
    core_decision_init(&b->d);
    json_text_init(&b->text);
    b->warn = NULL;
    b->warn_cap = 0;
}

void decision_buf_deinit(struct decision_buf *b)
{
    json_rebalance_deinit(&b->jr);
    json_sample_deinit(&b->js);
    sample_text_deinit(&b->st);
    core_decision_deinit(&b->d);
    json_text_deinit(&b->text);
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

/* Steps 1 to 4: the sample into b->js, the options into o. -1 + *e (o->own may be set). The
 * sample is checked whole (and the caller's check run: a retry, a 409) before any work on the
 * options, whose layers may hold thousands of keys. */
static int sample_and_options(struct decision_buf *b, const struct decision_req *q,
                              struct options *o, struct decision_err *e)
{
    struct json_err je;
    char *err = NULL;
    const struct opt_job *layers = q->cache ? q->cache->layers : q->layers;
    bool own = !q->cache || q->overlay || own_options(q->body);
    memset(&je, 0, sizeof je);
    b->js.limits = q->limits;
    if (!q->parsed && json_parse_sample(q->body, q->now_ms, &b->js, NULL, &je) < 0)
        return decision_refuse(e, je.status ? je.status : 400,
                               je.code[0] ? je.code : "INVALID_ARGUMENT", je.field, "%s",
                               je.message);
    if (q->sampled && q->sampled(q->ud, &b->js.s, e) < 0)
        return -1;
    if (b->js.s.at < core_state_last_at(q->state))
        return decision_refuse(e, 409, "FAILED_PRECONDITION", "at",
                               "\"at\" is earlier than the job's last sample");
    if (own) {
        o->own = opt_job_clone(layers);
        if (json_apply_config(q->body, o->own, &je) < 0)
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

/* new: a write unit's decision row (the body as sent for input_json) with n_v vertex rows to
 * fill, no events and no plugin calls yet. */
static struct db_write *unit_begin(const struct decision_req *q, int64_t at, const char *action,
                                   int reason, const char *message, bool execute, int n_v)
{
    struct db_write *w = db_write_new(DB_W_DECISION, q->job);
    w->at = at;
    w->now = q->now_ms;
    w->action = xstrdup(action);
    w->reason = xstrdup(core_reason_name(reason));
    w->message = xstrdup(message);
    w->execute = execute;
    w->n_v = n_v;
    w->v = xcalloc((size_t)(n_v ? n_v : 1), sizeof *w->v);
    w->e = xcalloc(1, sizeof *w->e);
    w->p = xcalloc(1, sizeof *w->p);
    /* The body was parsed as a JSON object: stored as sent. */
    w->input_json = xmalloc(q->len + 1);
    memcpy(w->input_json, q->text, q->len);
    w->input_json[q->len] = '\0';
    return w;
}

/* new: the batch decision's unit: its pool as one row, vertex "workers" (core/README.md,
 * Batch), so that the audit views show it as they show a vertex's scaling. */
static struct db_write *batch_unit_new(const struct decision_req *q,
                                       const struct core_batch_decision *d)
{
    struct db_write *w =
        unit_begin(q, d->at, core_action_name(d->action), d->reason, d->message, d->execute, 1);
    json_t *c = json_render_batch_constraints(d->constraints);
    struct db_vrow *row = &w->v[0];
    row->vertex = xstrdup("workers");
    row->current = d->current;
    row->raw_target = d->raw;
    row->target = d->target;
    row->reason = xstrdup(core_reason_name(d->reason));
    row->constraints = jarena_dump(c);
    row->message = xstrdup(d->message);
    row->evaluated_json = json_batch_evaluated_text(d);
    json_decref(c);
    w->keep_response = true; /* its rows are the pool's, not a streaming decision's */
    return w;
}

/* The response's members that the decision's rows hold (the store rebuilds them). */
static bool in_rows(const char *key)
{
    static const char *const keys[] = {
        "job",         "at",       "action", "execute",         "reason",     "message",
        "parallelism", "vertices", "events", "policy_revision", "config_hash"};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        if (strcmp(key, keys[i]) == 0)
            return true;
    return false;
}

/* new: the response's members that no row holds, as JSON text; NULL when there are none. */
static char *response_rest(json_t *response)
{
    json_t *rest = NULL, *v;
    const char *key;
    json_object_foreach(response, key, v)
    {
        if (in_rows(key))
            continue;
        if (!rest)
            rest = json_object();
        json_object_set(rest, key, v);
    }
    char *text = rest ? jarena_dump(rest) : NULL;
    json_decref(rest);
    return text;
}

/* new (malloc'd): n bytes of t's text from off. */
static char *text_dup(const struct json_text *t, size_t off, size_t n)
{
    char *s = xmalloc(n + 1);
    memcpy(s, t->p + off, n);
    s[n] = '\0';
    return s;
}

/* new: the vertex rows, events and plugin calls of the decision d, from d itself; each
 * vertex's constraints and evaluated texts are the response's (t, printed from d). */
static struct db_write *unit_new(const struct decision_req *q, const struct core_decision *d,
                                 const struct plugin_call *call, const struct json_text *t)
{
    struct db_write *w = unit_begin(q, d->at, core_action_name(d->action), d->reason, d->message,
                                    d->execute, d->n_vertices);
    for (int i = 0; i < d->n_vertices; i++) {
        const struct core_vdecision *v = &d->vertices[i];
        struct db_vrow *row = &w->v[i];
        const struct json_text_vspan *sp = &t->vspan[i];
        row->vertex = xstrdup(v->id);
        row->current = v->current;
        row->raw_target = v->raw_target;
        row->target = v->target;
        row->reason = xstrdup(core_reason_name(v->reason));
        row->constraints = text_dup(t, sp->constraints, sp->constraints_len);
        row->message = xstrdup(v->message);
        row->excluded = v->excluded;
        row->outside_bounds = v->outside_bounds;
        row->evaluated_json = text_dup(t, sp->evaluated, sp->evaluated_len);
    }
    w->n_e = d->n_events;
    free(w->e);
    w->e = xcalloc((size_t)(d->n_events ? d->n_events : 1), sizeof *w->e);
    for (int i = 0; i < d->n_events; i++) {
        const struct core_event *e = &d->events[i];
        w->e[i].type = xstrdup(e->type);
        w->e[i].reason = xstrdup(e->reason);
        w->e[i].message = xstrdup(e->message);
        w->e[i].count = e->count;
        w->e[i].suppressed = e->suppressed;
    }
    w->n_p = call ? plugin_call_n_records(call) : 0;
    free(w->p);
    w->p = xcalloc((size_t)(w->n_p ? w->n_p : 1), sizeof *w->p);
    for (int i = 0; i < w->n_p; i++) {
        const struct plugin_record *pr = plugin_call_record(call, i);
        w->p[i].plugin = xstrdup(pr->plugin);
        w->p[i].hook = xstrdup(pr->hook);
        w->p[i].outcome = xstrdup(pr->outcome);
        w->p[i].error = xstrdup(pr->error);
        w->p[i].duration_us = pr->duration_us;
    }
    return w;
}

/* A rebalance request (DECISION_REBALANCE): parse, advise, render, write unit; the job's
 * state is not touched. */
static int rebalance_run(struct decision_buf *b, const struct decision_req *q,
                         struct decision_res *res)
{
    struct json_err je;
    struct core_rebalance_out o;
    memset(&je, 0, sizeof je);
    memset(&o, 0, sizeof o);
    b->jr.limits = q->limits;
    if (json_parse_rebalance(q->body, q->now_ms, &b->jr, &je) < 0)
        return decision_refuse(&res->err, je.status ? je.status : 400,
                               je.code[0] ? je.code : "INVALID_ARGUMENT", je.field, "%s",
                               je.message);
    if (q->ready && q->ready(q->ud, &res->err) < 0)
        return -1;
    o.splits = xcalloc((size_t)b->jr.in.n_items, sizeof *o.splits);
    o.blocks = xcalloc((size_t)b->jr.in.n_items, sizeof *o.blocks);
    core_rebalance(&b->jr.in, &o);
    res->response = json_render_rebalance(&b->jr, &o, q->job, o.reason, o.message);
    if (q->text) {
        struct db_write *w = res->write =
            unit_begin(q, b->jr.at, "REBALANCE", o.reason, o.message, false, 0);
        w->decision_json = jarena_dump(res->response);
        w->keep_response = true;
        w->config_json = xstrdup("{}");
        w->policy_revision = xstrdup(q->revision ? q->revision : "native");
        w->config_hash = xstrdup("");
    }
    free(o.splits);
    free(o.blocks);
    return 0;
}

/* new: the options' warnings as the response lists them. */
static json_t *warnings_json(const struct opt_job *eff)
{
    json_t *warn = json_array();
    int n = opt_job_n_warnings(eff);
    const char **keys = xmalloc((size_t)(n + 1) * sizeof *keys);
    opt_job_warnings(eff, keys, n);
    for (int i = 0; i < n; i++)
        json_array_append_new(warn, json_string(keys[i]));
    free(keys);
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
    if (sample_and_options(b, q, &o, &res->err) < 0)
        goto out;
    if (q->ready && q->ready(q->ud, &res->err) < 0)
        goto out;
    const char *revision = q->set ? plugin_set_revision(q->set) : q->revision;
    if (b->js.s.batch_mode) {
        /* A worker pool to size (core/README.md, Batch): no plugin hooks. */
        core_decide_batch(q->state, &b->js.s, &o.cfg, &b->bd);
        res->response = json_render_batch(&b->bd, q->job, revision, o.hash);
        if (q->warnings)
            json_object_set_new(res->response, "warnings", warnings_json(o.eff));
        if (q->text) {
            struct db_write *w = res->write = batch_unit_new(q, &b->bd);
            w->decision_json = jarena_dump(res->response);
            w->response_json = response_rest(res->response);
            unit_finish(w, q, &o, revision);
        }
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

    int n_warn = q->warnings ? opt_job_n_warnings(o.eff) : 0;
    if (q->text) {
        /* The response printed once, straight from d: sent with decision_id added
         * (api_committed); the rows take their figures from it, and the store rebuilds it
         * from the rows and what no row holds (the warnings). */
        if (n_warn > b->warn_cap) {
            b->warn_cap = n_warn;
            b->warn = xrealloc(b->warn, (size_t)n_warn * sizeof *b->warn);
        }
        opt_job_warnings(o.eff, b->warn, n_warn);
        json_decision_text(&b->text, &b->d, q->job, revision, o.hash, q->warnings, b->warn, n_warn);
        struct db_write *w = res->write = unit_new(q, &b->d, call, &b->text);
        w->decision_json = text_dup(&b->text, 0, b->text.n);
        if (q->warnings) {
            json_t *rest = json_object();
            json_object_set_new(rest, "warnings", warnings_json(o.eff));
            w->response_json = jarena_dump(rest);
            json_decref(rest);
        }
        unit_finish(w, q, &o, revision);
    }
    if (!q->text || !q->text_only) {
        res->response = json_render_decision(&b->d, q->job, revision, o.hash);
        if (q->warnings)
            json_object_set_new(res->response, "warnings", warnings_json(o.eff));
    }
    rc = 0;
out:
    plugin_call_free(call);
    opt_job_free(o.own);
    return rc;
}
