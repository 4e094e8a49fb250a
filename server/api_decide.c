/*
 * api_decide.c - POST /v1/jobs/{job}/metrics: one scaling cycle (DESIGN 3.1).
 *
 * Order of checks, so that a bad request changes nothing: job id, a job whose earlier write
 * failed and is not reloaded yet (503), JSON, the sample and its `config` (json_parse_sample
 * into a copy of the job's options), `at` against the job's last sample (a retry of a stored
 * sample gets its decision again, anything else not after it a 409), the effective options
 * (422), a store that refuses writes (503), then core_decide, which validates the topology
 * before it touches the state. Only then is the state changed (in memory) and a write unit
 * with the decision and the new state handed back for commit.
 *
 * A retry (the same `at`, the same JSON value) changes nothing and stores nothing: it reads
 * the decision stored then (db_decision_find) and answers it again with "repeat": true. When
 * a unit of the job is still in flight, the decision may not be committed yet: the retry then
 * queues a DB_W_REPEAT unit, which writes nothing and comes back after every unit queued
 * before it, and is answered from the store then (api_committed).
 */
#include <stdio.h>
#include <string.h>

#include "api.h"
#include "cron.h"
#include "jarena.h"
#include "plugin.h"
#include "log.h"
#include "writer.h"
#include "xmem.h"

static void add_option(void *ud, const char *key, const char *value, enum opt_layer layer)
{
    (void)layer;
    json_object_set_new(ud, key, json_string(value ? value : ""));
}

/* new (malloc'd): a compact JSON text of o, as the client sees it (15 digits). */
static char *dump(const json_t *o)
{
    return jarena_dump(o);
}

/* The hooks without plugins: excluded periods by the native cron matcher. */
static const struct core_hooks native_hooks = {.excluded = cron_excluded_hook};

/* The field a core topology error names: the text before ": ". */
static void error_field(const char *err, char *field, size_t len)
{
    const char *c = strstr(err, ": ");
    size_t n = c ? (size_t)(c - err) : 0;
    if (n >= len || strchr(err, ' ') < c)
        n = 0;
    memcpy(field, err, n);
    field[n] = '\0';
}

static json_t *constraint_names(unsigned bits)
{
    json_t *a = json_array();
    for (int i = 0; i < CORE_C__COUNT; i++)
        if (bits & (1u << i))
            json_array_append_new(a, json_string(core_constraint_name(i)));
    return a;
}

/* Fills w's rows from the decision and its rendered response. */
static void fill_write(struct db_write *w, const struct core_decision *d, json_t *out)
{
    json_t *vs = json_object_get(out, "vertices");
    w->at = d->at;
    w->action = xstrdup(core_action_name(d->action));
    w->reason = xstrdup(core_reason_name(d->reason));
    w->message = xstrdup(d->message);
    w->execute = d->execute;
    w->n_v = d->n_vertices;
    w->v = xcalloc((size_t)d->n_vertices, sizeof *w->v);
    for (int i = 0; i < d->n_vertices; i++) {
        const struct core_vdecision *v = &d->vertices[i];
        struct db_vrow *row = &w->v[i];
        json_t *c = constraint_names(v->constraints);
        row->vertex = xstrdup(v->id);
        row->current = v->current;
        row->raw_target = v->raw_target;
        row->target = v->target;
        row->reason = xstrdup(core_reason_name(v->reason));
        row->constraints = dump(c);
        row->message = xstrdup(v->message);
        row->evaluated_json = dump(json_object_get(json_array_get(vs, (size_t)i), "evaluated"));
        json_decref(c);
    }
    w->n_e = d->n_events;
    w->e = xcalloc((size_t)d->n_events, sizeof *w->e);
    for (int i = 0; i < d->n_events; i++) {
        const struct core_event *e = &d->events[i];
        w->e[i].type = xstrdup(e->type);
        w->e[i].reason = xstrdup(e->reason);
        w->e[i].message = xstrdup(e->message);
        w->e[i].count = e->count;
        w->e[i].suppressed = e->suppressed;
    }
}

/* The hook calls of the decision, for the plugin_calls table. */
static void fill_plugin_calls(struct db_write *w, const struct plugin_call *c)
{
    w->n_p = plugin_call_n_records(c);
    w->p = xcalloc((size_t)(w->n_p ? w->n_p : 1), sizeof *w->p);
    for (int i = 0; i < w->n_p; i++) {
        const struct plugin_record *pr = plugin_call_record(c, i);
        w->p[i].plugin = xstrdup(pr->plugin);
        w->p[i].hook = xstrdup(pr->hook);
        w->p[i].outcome = xstrdup(pr->outcome);
        w->p[i].error = pr->error ? xstrdup(pr->error) : NULL;
        w->p[i].duration_us = pr->duration_us;
    }
}

void api_decide_repeat(struct api *a, const char *job, int64_t at, const char *body, size_t len,
                       int64_t last_at, struct resp *r)
{
    char *input = NULL, *stored = NULL, *err = NULL;
    json_t *sent = NULL, *then = NULL;
    int64_t id = 0;
    int found = db_decision_find(a->db, job, at, &id, &input, &stored, &err);
    if (found < 0) {
        log_msg(LOG_ERROR, "api", "cannot read a stored decision", "job=%s error=\"%s\"", job, err);
        api_error(r, 503, NULL, NULL, "cannot read the job's stored decisions (%s); retry", err);
        r->retry_after = 1;
        goto out;
    }
    if (!found) {
        api_error(r, 409, NULL, "at",
                  "at %lld is not after the job's last sample (%lld) and repeats no stored "
                  "sample; samples of one job must go forward in time",
                  (long long)at, (long long)last_at);
        goto out;
    }
    /* The same sample: the same JSON value (member order and spacing aside). */
    sent = json_loadb(body ? body : "", len, JSON_REJECT_DUPLICATES, NULL);
    then = json_loads(input, JSON_REJECT_DUPLICATES, NULL);
    if (!sent || !then || !json_equal(sent, then) || stored[0] != '{') {
        api_error(r, 409, NULL, "at",
                  "at %lld was already decided (decision %lld) from another sample; a retry must "
                  "send the same body, and a new sample a later at",
                  (long long)at, (long long)id);
        goto out;
    }
    /* The reply of then (api_committed), marked as a repeat. */
    free(r->text);
    r->text = xasprintf("{\"decision_id\":%lld,\"repeat\":true,%s\n", (long long)id, stored + 1);
    r->content_type = "application/json";
    r->status = 200;
out:
    json_decref(then);
    json_decref(sent);
    free(err);
    free(input);
    free(stored);
}

static void decide(const struct req *q, struct resp *r);

/*
 * The handler: decide() inside the request's jansson arena. Everything it makes with
 * jansson is released inside; an error's envelope is printed to text before the arena
 * closes, since the reply is sent after this returns.
 */
int api_decide(const struct req *q, struct resp *r)
{
    jarena_begin(&q->api->arena);
    decide(q, r);
    if (r->json) {
        size_t n;
        char *t = jarena_dump(r->json);
        json_decref(r->json);
        r->json = NULL;
        n = strlen(t);
        r->text = xrealloc(t, n + 2);
        memcpy(r->text + n, "\n", 2);
        r->content_type = "application/json";
    }
    jarena_end(&q->api->arena);
    return 0;
}

static void decide(const struct req *q, struct resp *r)
{
    struct api *a = q->api;
    json_t *body = NULL, *out = NULL, *warn = NULL, *eff = NULL;
    struct opt_job *opts = NULL;
    struct jobs_entry *e = NULL;
    bool created = false;
    char *err = NULL;
    char cerr[1024], field[256], hash[17];
    int retry = 1;
    struct json_err je;
    struct core_config cfg;
    struct plugin_set *set = NULL;
    struct plugin_call *call = NULL;
    const char *revision = a->policy_revision;

    if (!api_job_id_ok(q->job)) {
        api_error(r, 400, NULL, "job", "job id must match [A-Za-z0-9._:-]{1,128}");
        goto out;
    }
    if (api_job_recover(a, q->job, r) < 0)
        goto out;
    if (!(body = api_json_body(q, r, NULL)))
        goto out;
    e = jobs_get(a->jobs, q->job);
    /* A request without options of its own runs on the job's layers, resolved once per
     * change of them (jobs_entry.cfg); one with options gets a copy of the layers. */
    json_t *rc_cfg = json_object_get(body, "config");
    bool own = !e || (rc_cfg && !json_is_null(rc_cfg) &&
                      !(json_is_object(rc_cfg) && json_object_size(rc_cfg) == 0));
    if (own)
        opts = opt_job_clone(e ? e->opts : a->defaults);
    const struct opt_job *eff_opts = own ? opts : e->opts;
    memset(&je, 0, sizeof je);
    json_sample_reset(&a->js);
    if (json_parse_sample(body, q->now_ms, &a->js, opts, &je) < 0) {
        api_error(r, je.status ? je.status : 400, je.code[0] ? je.code : NULL, je.field, "%s",
                  je.message);
        goto out;
    }
    if (e && e->last_at != INT64_MIN && a->js.s.at <= e->last_at) {
        /* Not a new sample: a retry of a decided one, or a 409. */
        if (a->wr && writer_job_pending(a->wr, q->job) > 0) {
            /* The decision it may repeat is still waiting for its commit: answer once every
             * unit queued before this one is back (api_committed). */
            struct db_write *w = db_write_new(DB_W_REPEAT, q->job);
            w->at = a->js.s.at;
            w->last_at = e->last_at;
            w->input_json = xmalloc(q->body_len + 1);
            memcpy(w->input_json, q->body, q->body_len);
            w->input_json[q->body_len] = '\0';
            r->status = 200;
            r->write = w;
        } else {
            api_decide_repeat(a, q->job, a->js.s.at, q->body, q->body_len, e->last_at, r);
        }
        goto out;
    }
    if (own) {
        if (opt_job_resolve(opts, &cfg, &err) < 0) {
            api_error(r, 422, NULL, "config", "%s", err);
            goto out;
        }
        opt_job_hash(opts, hash);
    } else {
        if (!e->resolved) {
            if (opt_job_resolve(e->opts, &e->cfg, &err) < 0) {
                api_error(r, 422, NULL, "config", "%s", err);
                goto out;
            }
            opt_job_hash(e->opts, e->hash);
            e->resolved = true;
        }
        cfg = e->cfg; /* a copy: plugin_call_new may reorder its executors */
        memcpy(hash, e->hash, sizeof hash);
    }
    if (a->wr && writer_health(a->wr, cerr, sizeof cerr, &retry) < 0) {
        /* The decision could not be stored: refused before it changes the job's state. */
        api_error(r, 503, NULL, NULL,
                  "the store cannot be written (%s); nothing was stored, retry after %d s", cerr,
                  retry);
        r->retry_after = retry;
        goto out;
    }
    if (!e) {
        /* The entry outlives the request: made outside the arena. */
        struct jarena *ar = jarena_pause();
        e = jobs_add(a->jobs, q->job, q->now_ms);
        jarena_resume(ar);
        created = true;
    }
    cerr[0] = '\0';
    /* The decision runs on the revision active now, whatever a reload swaps in meanwhile. */
    set = pol_acquire(a->pol);
    struct core_hooks hooks = native_hooks;
    if (set) {
        call = plugin_call_new(set, q->job, eff_opts, &cfg, e->state, &a->js.s);
        plugin_call_hooks(call, &hooks);
    }
    revision = set ? plugin_set_revision(set) : a->policy_revision;
    if (core_decide(e->state, &a->js.s, &cfg, &hooks, &a->d, cerr, sizeof cerr) < 0) {
        error_field(cerr, field, sizeof field);
        api_error(r, 400, NULL, field, "%s", cerr);
        goto out;
    }
    e->last_at = core_state_last_at(e->state);
    if (e->last_at == INT64_MIN)
        e->last_at = a->js.s.at;
    created = false; /* the entry now holds state: keep it */

    out = json_render_decision(&a->d, q->job, revision, hash);
    warn = json_array();
    for (int i = 0; i < opt_job_n_warnings(eff_opts); i++)
        json_array_append_new(warn, json_string(opt_job_warning(eff_opts, i)));
    json_object_set_new(out, "warnings", warn);

    struct db_write *w = db_write_new(DB_W_DECISION, q->job);
    w->now = q->now_ms;
    fill_write(w, &a->d, out);
    if (!e->cfg_json || strcmp(e->cfg_hash, hash) != 0) {
        eff = json_object();
        opt_job_each(eff_opts, add_option, eff);
        free(e->cfg_json);
        e->cfg_json = dump(eff);
        memcpy(e->cfg_hash, hash, sizeof hash);
    }
    /* The state without its window, and the window's new samples, one row each. */
    core_state_encode_meta(e->state, &w->state_bin, &w->state_bin_len);
    int64_t seq0 = core_state_seq0(e->state), end = core_state_seq_end(e->state);
    int64_t from = e->stored_seq > seq0 ? e->stored_seq : seq0;
    w->window_seq0 = seq0;
    w->n_ws = (int)(end - from);
    w->ws = xcalloc((size_t)(w->n_ws > 0 ? w->n_ws : 1), sizeof *w->ws);
    for (int k = 0; k < w->n_ws; k++) {
        w->ws[k].seq = from + k;
        core_state_encode_sample(e->state, from + k, &w->ws[k].blob, &w->ws[k].len);
    }
    e->stored_seq = end;
    /* The body was parsed as a JSON object: store it as sent. */
    w->input_json = xmalloc(q->body_len + 1);
    memcpy(w->input_json, q->body, q->body_len);
    w->input_json[q->body_len] = '\0';
    w->config_json = xstrdup(e->cfg_json);
    /* Printed once: stored as is, and sent with decision_id added (api_committed). */
    w->decision_json = dump(out);
    w->last_at = e->last_at;
    w->policy_revision = xstrdup(revision);
    if (call)
        fill_plugin_calls(w, call);
    w->config_hash = xstrdup(hash);
    r->status = 200;
    r->content_type = "application/json";
    r->write = w;
out:
    plugin_call_free(call);
    if (set)
        plugin_set_unref(set);
    if (created)
        jobs_remove(a->jobs, q->job);
    free(err);
    json_decref(eff);
    json_decref(out);
    json_decref(body);
    opt_job_free(opts);
}
