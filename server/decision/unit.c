/*
 * unit.c - the write units of the decision layer (see unit.h): one builder per kind, and
 * unit_decide, which finishes a decision's unit with the job's state.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decision/unit.h"
#include "base/jarena.h"
#include "plugin/plugin.h"
#include "plugin/policies.h"
#include "store/timeline.h"
#include "base/xmem.h"

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

/* new (malloc'd): n bytes of t's text from off. */
static char *text_dup(const struct jsn_text *t, size_t off, size_t n)
{
    char *s = xmalloc(n + 1);
    memcpy(s, t->b.p + off, n);
    s[n] = '\0';
    return s;
}

struct db_write *unit_sample(const struct decision_req *q, const struct core_decision *d,
                             const struct plugin_call *call, const struct jsn_text *t,
                             const struct jsn_text *rest)
{
    struct db_write *w = unit_begin(q, d->at, core_action_name(d->action), d->reason, d->message,
                                    d->execute, d->n_vertices);
    for (int i = 0; i < d->n_vertices; i++) {
        const struct core_vdecision *v = &d->vertices[i];
        struct db_vrow *row = &w->v[i];
        const struct jsn_text_vspan *sp = &t->vspan[i];
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
    w->decision_json = text_dup(t, 0, t->b.n);
    if (rest->b.n)
        w->response_json = text_dup(rest, 0, rest->b.n);
    return w;
}

/* The response's members that the decision's rows hold (the store rebuilds them). */
static bool in_rows(const char *key)
{
    for (int i = 0; i < core_n_dfields; i++)
        if (core_dfields[i].store != CORE_DS_REST && strcmp(key, core_dfields[i].name) == 0)
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

struct db_write *unit_batch(const struct decision_req *q, const struct core_batch_decision *d,
                            json_t *response)
{
    struct db_write *w =
        unit_begin(q, d->at, core_action_name(d->action), d->reason, d->message, d->execute, 1);
    json_t *c = jsn_render_batch_constraints(d->constraints);
    struct db_vrow *row = &w->v[0];
    row->vertex = xstrdup("workers");
    row->current = d->current;
    row->raw_target = d->raw;
    row->target = d->target;
    row->reason = xstrdup(core_reason_name(d->reason));
    row->constraints = jarena_dump(c);
    row->message = xstrdup(d->message);
    row->evaluated_json = jsn_batch_evaluated_text(d);
    json_decref(c);
    w->keep_response = true; /* its rows are the pool's, not a streaming decision's */
    w->decision_json = jarena_dump(response);
    w->response_json = response_rest(response);
    return w;
}

struct db_write *unit_rebalance(const struct decision_req *q, int64_t at, int reason,
                                const char *message, json_t *response)
{
    struct db_write *w = unit_begin(q, at, "REBALANCE", reason, message, false, 0);
    w->decision_json = jarena_dump(response);
    w->keep_response = true;
    w->config_json = xstrdup("{}");
    w->policy_revision = xstrdup(q->revision ? q->revision : "native");
    w->config_hash = xstrdup("");
    return w;
}

struct db_write *unit_repeat(const char *job, int64_t at, int64_t last_at, const char *text,
                             size_t len)
{
    struct db_write *w = db_write_new(DB_W_REPEAT, job);
    w->at = at;
    w->last_at = last_at;
    w->input_json = xmalloc(len + 1);
    memcpy(w->input_json, text, len);
    w->input_json[len] = '\0';
    return w;
}

struct db_write *unit_config(struct jobs_entry *e, int64_t now, const char *config_json)
{
    struct db_write *w = db_write_new(DB_W_JOB_CONFIG, e->id);
    w->at = w->now = now;
    w->job_config_json = xstrdup(config_json);
    jobs_fence(e, w);
    return w;
}

struct db_write *unit_delete(struct jobs_entry *e, int64_t now)
{
    struct db_write *w = db_write_new(DB_W_JOB_DELETE, e->id);
    w->at = w->now = now;
    jobs_fence(e, w);
    return w;
}

struct db_write *unit_policy(const struct pol_outcome *o)
{
    struct db_write *w = db_write_new(DB_W_POLICY, "");
    w->at = w->now = o->loaded_at;
    w->revision = xstrdup(o->revision);
    w->files_json = xstrdup(o->files_json);
    w->loaded_at = o->loaded_at;
    w->n_e = 1;
    w->e = xcalloc(1, sizeof *w->e);
    char msg[1200];
    if (o->error)
        snprintf(msg, sizeof msg, "policy reload (%s) failed, the previous revision stays: %s",
                 o->trigger, o->error);
    else
        snprintf(msg, sizeof msg, "policy revision %s active (%s)", o->revision, o->trigger);
    w->e[0].type = xstrdup(o->error ? "Warning" : "Normal");
    w->e[0].reason = xstrdup(o->error ? "PolicyReloadFailed" : "PolicyReloaded");
    w->e[0].message = xstrdup(msg);
    w->e[0].count = 1;
    return w;
}

/* The job's state in w: the state without its window, and (with window) the window's samples
 * not yet handed to the store, one row each; its last sample, and the fence. */
static void unit_state(struct db_write *w, struct jobs_entry *e, bool window)
{
    core_state_encode_meta(e->state, &w->state_bin, &w->state_bin_len);
    int64_t seq0 = core_state_seq0(e->state), end = core_state_seq_end(e->state);
    int64_t from = e->stored_seq > seq0 ? e->stored_seq : seq0;
    w->window_seq0 = seq0;
    w->n_ws = window ? (int)(end - from) : 0;
    w->ws = xcalloc((size_t)(w->n_ws > 0 ? w->n_ws : 1), sizeof *w->ws);
    for (int k = 0; k < w->n_ws; k++) {
        w->ws[k].seq = from + k;
        core_state_encode_sample(e->state, from + k, &w->ws[k].blob, &w->ws[k].len);
    }
    if (window)
        e->stored_seq = end;
    w->last_at = e->last_at;
    jobs_fence(e, w);
}

/* The figures GET /metrics shows of decision d (w: its write unit) of job e. The SLO is read
 * from the decision's effective options only when they changed since the job's last one. */
static void gauges_of(const struct jobs_entry *e, const struct core_decision *d,
                      const struct db_write *w, struct jobs_gauges *g)
{
    memset(g, 0, sizeof *g);
    g->set = true;
    g->backlog_s = g->slo_lag_s = NAN;
    for (int i = 0; i < d->n_vertices; i++) {
        const struct core_vdecision *v = &d->vertices[i];
        double b = timeline_backlog_s(v->ev.lag, v->ev.target_data_rate);
        g->current += v->current;
        g->target += v->target;
        if (!isnan(b) && (isnan(g->backlog_s) || b > g->backlog_s))
            g->backlog_s = b;
    }
    snprintf(g->config_hash, sizeof g->config_hash, "%s", w->config_hash ? w->config_hash : "");
    if (e->gauges.set && strcmp(e->gauges.config_hash, g->config_hash) == 0) {
        g->slo_lag_s = e->gauges.slo_lag_s;
        return;
    }
    json_t *opts = w->config_json ? json_loads(w->config_json, 0, NULL) : NULL;
    const char *slo = json_string_value(json_object_get(opts, "governor.slo.lag"));
    int64_t ms;
    char *err = NULL;
    if (slo && *slo && opt_parse_duration(slo, &ms, &err) == 0)
        g->slo_lag_s = (double)ms / 1000.0;
    free(err);
    json_decref(opts);
}

int unit_decide(struct decision_buf *b, struct jobs_entry *e, const struct unit_req *u,
                struct decision_res *res, struct jobs_gauges *g)
{
    bool sample = u->kind == DECISION_SAMPLE;
    /* The advice uses the job's layers and state only (decision.h); a sample decides on the
     * job's cached options, with the options' warnings, and answers with the unit's text. */
    struct decision_req q = {.kind = u->kind,
                             .job = u->job,
                             .body = u->body,
                             .text = u->text,
                             .len = u->len,
                             .now_ms = u->now_ms,
                             .layers = e->opts,
                             .cache = sample ? e->cache : NULL,
                             .state = e->state,
                             .set = sample ? u->set : NULL,
                             .limits = u->limits,
                             .revision = u->revision,
                             .warnings = sample,
                             .strict = sample && u->strict,
                             .parsed = sample && u->parsed,
                             .text_only = sample,
                             .has_last = sample && e->last_at != INT64_MIN,
                             .last_at = e->last_at,
                             .unwritable = u->unwritable,
                             .retry_after = u->retry_after};
    int rc = decision_run(b, &q, res);
    if (rc < 0)
        return -1;
    if (rc > 0) {
        if (u->in_flight <= 0)
            return 1;
        /* The decision it may repeat is still waiting for its commit: answered once every
         * unit queued before this one is back. */
        res->write = unit_repeat(u->job, res->repeat_at, e->last_at, u->text, u->len);
        return 0;
    }
    if (sample) {
        e->last_at = core_state_last_at(e->state);
        if (e->last_at == INT64_MIN)
            e->last_at = b->js.s.at;
        gauges_of(e, &b->d, res->write, g);
        /* The sample kept as history in the job's chunks of samples, unless the request
         * carries more than the sample (its own options: the request is then stored as it
         * came). */
        if (!b->js.s.batch_mode && json_object_size(json_object_get(u->body, "config")) == 0)
            jobs_samples_add(e, &b->js.s, res->write);
    }
    unit_state(res->write, e, sample);
    return 0;
}
