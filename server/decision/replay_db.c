/*
 * replay_db.c - replay against history (see replay_db.h).
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "decision/decision.h"
#include "decision/jobs.h"
#include "decision/jsn.h"
#include "plugin/plugin.h"
#include "decision/replay_db.h"
#include "store/db.h"
#include "base/xmem.h"

/* Everything one run holds; released at `out:` of replay_db_run. */
struct run {
    const struct replay_db_opts *o;
    struct db *db;
    int64_t *deletes; /* the decision id after which each deletion happened, ascending */
    int n_deletes;
    struct core_state *st;
    struct decision_buf buf;
    char *base_text;      /* the config_json base was built from */
    struct opt_job *base; /* recorded effective options (OPT_JOB layer) */
    /* summary */
    int64_t replayed, warmup, compared, changed, identical, errors;
    int64_t without_sample; /* decisions whose sample is no longer kept (sample-retention) */
    int64_t sc_rec, sc_cand, sc_added, sc_removed;
    double sm_rec, sm_cand; /* subtask-milliseconds */
    int64_t prev_at;        /* at of the previous compared decision, INT64_MIN: none */
    double prev_p_rec, prev_p_cand;
    /* The candidate's last decided sample: one stored again with its `at` is answered as the
     * server answers a retry (a repeat, or a 409), not decided a second time. */
    struct decision_seen seen;
};

/* The recorded effective options as an OPT_JOB layer; keys without a value are skipped
 * (their built-in default has none either). NULL + *errp when a stored value is refused. */
static struct opt_job *base_opts(const char *config_json, char **errp)
{
    json_error_t je;
    json_t *o = json_loads(config_json, 0, &je);
    struct opt_job *j = opt_job_new();
    const char *key;
    json_t *v;
    if (!json_is_object(o)) {
        *errp = xasprintf("stored config_json is not a JSON object: %s", je.text);
        goto fail;
    }
    json_object_foreach(o, key, v)
    {
        char buf[64];
        const char *text = jobs_value_text(v, buf, sizeof buf);
        if (!text || !*text)
            continue;
        if (opt_job_set(j, OPT_JOB, key, text, errp) < 0)
            goto fail;
    }
    json_decref(o);
    return j;
fail:
    json_decref(o);
    opt_job_free(j);
    return NULL;
}

static void iso_utc(int64_t ms, char *buf, size_t len)
{
    time_t t = (time_t)(ms / 1000 - (ms % 1000 < 0));
    struct tm tm;
    gmtime_r(&t, &tm);
    int frac = (int)(((ms % 1000) + 1000) % 1000);
    snprintf(buf, len, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1,
             tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, frac);
}

/* A scaling is a decision the client applies that changes something. */
static bool is_scaling(json_t *dec)
{
    const char *a = json_string_value(json_object_get(dec, "action"));
    return json_is_true(json_object_get(dec, "execute")) && a && strcmp(a, "NO_CHANGE") != 0;
}

/* The total parallelism the job runs at after dec: its targets if it executes. */
static double running_parallelism(json_t *dec)
{
    bool exec = json_is_true(json_object_get(dec, "execute"));
    double sum = 0;
    size_t i;
    json_t *v;
    json_array_foreach(json_object_get(dec, "vertices"), i, v)
    {
        json_t *p = json_object_get(v, exec ? "target" : "current");
        sum += json_is_integer(p) ? (double)json_integer_value(p) : 0;
    }
    return sum;
}

static json_t *outline(json_t *dec, bool with_message)
{
    json_t *o =
        json_pack("{s:O?, s:O?, s:O?, s:O?}", "action", json_object_get(dec, "action"), "execute",
                  json_object_get(dec, "execute"), "reason", json_object_get(dec, "reason"),
                  "parallelism", json_object_get(dec, "parallelism"));
    if (with_message)
        json_object_set(o, "message", json_object_get(dec, "message"));
    return o;
}

/* Fills the change object for one compared decision; returns true when it changed. */
static bool compare(json_t *rec, json_t *cand, json_t *change)
{
    json_t *what = json_array();
    json_t *verts = json_array();
    static const char *const fields[] = {"action", "execute", "reason"};
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++)
        if (!json_equal(json_object_get(rec, fields[i]), json_object_get(cand, fields[i])))
            json_array_append_new(what, json_string(fields[i]));
    json_t *rv = json_object_get(rec, "vertices"), *cv = json_object_get(cand, "vertices");
    bool targets = json_array_size(rv) != json_array_size(cv), vreasons = false;
    for (size_t i = 0; i < json_array_size(rv) && i < json_array_size(cv); i++) {
        json_t *a = json_array_get(rv, i), *b = json_array_get(cv, i);
        bool t = !json_equal(json_object_get(a, "target"), json_object_get(b, "target"));
        bool r = !json_equal(json_object_get(a, "reason"), json_object_get(b, "reason"));
        targets |= t;
        vreasons |= r;
        if (t || r)
            json_array_append_new(verts, json_pack("{s:O?, s:O?, s:O?, s:O?, s:O?}", "id",
                                                   json_object_get(a, "id"), "recorded_target",
                                                   json_object_get(a, "target"), "candidate_target",
                                                   json_object_get(b, "target"), "recorded_reason",
                                                   json_object_get(a, "reason"), "candidate_reason",
                                                   json_object_get(b, "reason")));
    }
    /* A batch decision's pool is its target. */
    json_t *rw = json_object_get(json_object_get(rec, "workers"), "target");
    json_t *cw = json_object_get(json_object_get(cand, "workers"), "target");
    if ((rw || cw) && !json_equal(rw, cw))
        targets = true;
    if (targets)
        json_array_append_new(what, json_string("targets"));
    if (vreasons)
        json_array_append_new(what, json_string("vertex_reasons"));
    bool changed = json_array_size(what) > 0;
    json_object_set_new(change, "changed", what);
    json_object_set_new(change, "recorded", outline(rec, false));
    json_object_set_new(change, "candidate", outline(cand, true));
    json_object_set_new(change, "vertices", verts);
    return changed;
}

/* The response minus what does not describe the outcome (ids, revision, hash). */
static json_t *essence(json_t *dec)
{
    json_t *c = json_deep_copy(dec);
    static const char *const drop[] = {"decision_id", "policy_revision", "config_hash", "warnings"};
    for (size_t i = 0; i < sizeof drop / sizeof drop[0]; i++)
        json_object_del(c, drop[i]);
    return c;
}

/* Integrates the running parallelism up to `at` and moves the marks. */
static void integrate(struct run *r, int64_t at, double p_rec, double p_cand)
{
    if (r->prev_at != INT64_MIN && at > r->prev_at) {
        r->sm_rec += r->prev_p_rec * (double)(at - r->prev_at);
        r->sm_cand += r->prev_p_cand * (double)(at - r->prev_at);
    }
    r->prev_at = at;
    r->prev_p_rec = p_rec;
    r->prev_p_cand = p_cand;
}

/* Replays one stored decision. -1 + *errp only when the stored record is unreadable. */
static int one(struct run *r, int64_t id, int64_t at, const char *input, const char *config,
               json_t *recorded, replay_db_change_cb cb, void *ud, char **errp)
{
    int rc = -1;
    json_t *body = NULL, *rec = NULL, *cand = NULL, *change = NULL;
    char at_utc[64];
    json_error_t je;
    bool compared = at >= r->o->from;

    if (!r->base_text || strcmp(r->base_text, config) != 0) {
        opt_job_free(r->base);
        free(r->base_text);
        r->base_text = NULL;
        if (!(r->base = base_opts(config, errp))) {
            char *e = xasprintf("decision %" PRId64 ": %s", id, *errp);
            free(*errp);
            *errp = e;
            goto out;
        }
        r->base_text = xstrdup(config);
    }
    body = json_loads(input, JSON_REJECT_DUPLICATES, &je);
    rec = json_incref(recorded);
    if (!json_is_object(body) || !json_is_object(rec)) {
        *errp = xasprintf("decision %" PRId64 ": the stored sample or decision is not JSON", id);
        goto out;
    }
    r->replayed++;
    if (compared)
        r->compared++;
    else
        r->warmup++;
    iso_utc(at, at_utc, sizeof at_utc);
    change = json_pack("{s:I, s:I, s:s}", "decision_id", (json_int_t)id, "at", (json_int_t)at,
                       "at_utc", at_utc);

    /* The candidate's keys go over the recorded options, and over the request's own. A
     * stored rebalance advice is advised again from its request. */
    const char *action = json_string_value(json_object_get(rec, "action"));
    bool advice = action && strcmp(action, "REBALANCE") == 0;
    struct decision_req q = {.kind = advice ? DECISION_REBALANCE : DECISION_SAMPLE,
                             .job = r->o->job,
                             .body = body,
                             .now_ms = at,
                             .layers = r->base,
                             .overlay = r->o->candidate,
                             .state = r->st,
                             .set = r->o->policies,
                             .revision = "native",
                             .seen = advice ? NULL : &r->seen,
                             .seen_what = "decision"};
    struct decision_res res;
    char *text = NULL;
    int dr = decision_run(&r->buf, &q, &res);
    if (dr > 0) {
        /* A retry: the candidate's decision of then, again. */
        text = xasprintf("{\"repeat\":true,%s", res.repeat + 1);
    } else if (res.err.status != 0) {
        /* The candidate refuses the sample: the job would have kept running as it was. */
        if (compared) {
            r->errors++;
            r->changed++;
            json_object_set_new(
                change, "error",
                json_pack("{s:i, s:s}", "status", res.err.status, "message", res.err.message));
            cb(ud, change);
            integrate(r, at, running_parallelism(rec), running_parallelism(rec));
        }
        rc = 0;
        goto out;
    }
    if (!text) {
        /* Through text with the server's 15 digits, so both sides compare as stored. */
        text = json_dumps(res.response, JSON_COMPACT | JSON_REAL_PRECISION(15));
        json_decref(res.response);
        if (text && !advice)
            decision_seen_add(&r->seen, at, body, text, (long)id);
    }
    cand = text ? json_loads(text, 0, &je) : NULL;
    free(text);
    if (!cand) {
        *errp = xasprintf("decision %" PRId64 ": cannot render the candidate", id);
        goto out;
    }
    if (compared) {
        bool rs = is_scaling(rec), cs = is_scaling(cand);
        r->sc_rec += rs;
        r->sc_cand += cs;
        r->sc_added += cs && !rs;
        r->sc_removed += rs && !cs;
        json_t *a = essence(rec), *b = essence(cand);
        r->identical += json_equal(a, b);
        json_decref(a);
        json_decref(b);
        if (compare(rec, cand, change)) {
            r->changed++;
            cb(ud, change);
        }
        integrate(r, at, running_parallelism(rec), running_parallelism(cand));
    }
    rc = 0;
out:
    json_decref(change);
    json_decref(cand);
    json_decref(rec);
    json_decref(body);
    return rc;
}

/* What replay_db_run's reading of history hands to each decision. */
struct each {
    struct run *r;
    replay_db_change_cb cb;
    void *ud;
    char **errp;
    int di;
    int64_t prev_id;
};

static int each_decision(void *ud, int64_t id, int64_t at, const char *input, const char *config,
                         json_t *dec)
{
    struct each *e = ud;
    struct run *r = e->r;
    /* A DELETE of the job between the previous decision and this one: the job made after it
     * started as new, with an empty state (its samples may even go back in time), as the
     * server's did. */
    bool deleted = false;
    while (e->di < r->n_deletes && r->deletes[e->di] < id) {
        deleted |= e->prev_id != INT64_MIN && r->deletes[e->di] >= e->prev_id;
        e->di++;
    }
    if (deleted) {
        core_state_free(r->st);
        r->st = core_state_new();
        decision_seen_clear(&r->seen);
    }
    e->prev_id = id;
    if (!input[0]) { /* its sample is gone: the replay starts over after it */
        r->without_sample++;
        if (r->replayed > 0) {
            core_state_free(r->st);
            r->st = core_state_new();
            decision_seen_clear(&r->seen);
        }
        return 0;
    }
    return one(r, id, at, input, config, dec, e->cb, e->ud, e->errp) < 0 ? -1 : 0;
}

int replay_db_run(const struct replay_db_opts *o, replay_db_change_cb cb, void *ud,
                  json_t **summary, char **errp)
{
    struct run r;
    int rc = -1;
    memset(&r, 0, sizeof r);
    r.o = o;
    r.prev_at = INT64_MIN;
    r.st = core_state_new();
    decision_buf_init(&r.buf);
    decision_seen_init(&r.seen, 1);
    *summary = NULL;

    if (!(r.db = db_open_read(o->db, errp)))
        goto out;
    /* The deletions and the job's last decision in one snapshot: the replay sees the history
     * as it was then while the server goes on, read in pages (db_history_each) so that no
     * snapshot lasts the whole replay. */
    int64_t last = 0;
    if (db_read_begin(r.db, errp) < 0)
        goto out;
    int rd = db_job_deletions(r.db, o->job, &r.deletes, &r.n_deletes, errp) < 0 ||
             db_history_last_id(r.db, o->job, &last, errp) < 0;
    db_read_end(r.db);
    if (rd)
        goto out;
    struct each e = {&r, cb, ud, errp, 0, INT64_MIN};
    if (db_history_each(r.db, o->job, o->to, last, each_decision, &e, errp) < 0)
        goto out;
    *summary = json_object();
    json_object_set_new(*summary, "job", json_string(o->job));
    json_object_set_new(*summary, "from",
                        o->from == INT64_MIN ? json_null() : json_integer((json_int_t)o->from));
    json_object_set_new(*summary, "to",
                        o->to == INT64_MAX ? json_null() : json_integer((json_int_t)o->to));
#define SETI(k, v) json_object_set_new(*summary, k, json_integer((json_int_t)(v)))
    SETI("replayed", r.replayed);
    SETI("warmup", r.warmup);
    SETI("decisions", r.compared);
    SETI("changed", r.changed);
    SETI("identical", r.identical);
    /* The rest: the same outcome, other figures or messages (decisions = changed + identical
     * + figures_only). */
    SETI("figures_only", r.compared - r.changed - r.identical);
    SETI("errors", r.errors);
    SETI("scalings_recorded", r.sc_rec);
    SETI("scalings_candidate", r.sc_cand);
    SETI("scalings_added", r.sc_added);
    SETI("scalings_removed", r.sc_removed);
#undef SETI
    /* Rounded to 0.1 subtask-minute. */
    double mrec = (double)(int64_t)(r.sm_rec / 6000.0 + 0.5) / 10.0;
    double mcand = (double)(int64_t)(r.sm_cand / 6000.0 + 0.5) / 10.0;
    json_object_set_new(*summary, "subtask_minutes_recorded", json_real(mrec));
    json_object_set_new(*summary, "subtask_minutes_candidate", json_real(mcand));
    json_object_set_new(*summary, "subtask_minutes_delta", json_real(mcand - mrec));
    /* decisions whose sample was no longer kept (sample-retention): not replayed */
    json_object_set_new(*summary, "without_sample", json_integer((json_int_t)r.without_sample));
    rc = 0;
out:
    db_close(r.db);
    free(r.deletes);
    free(r.base_text);
    opt_job_free(r.base);
    decision_buf_deinit(&r.buf);
    decision_seen_deinit(&r.seen);
    core_state_free(r.st);
    return rc;
}
