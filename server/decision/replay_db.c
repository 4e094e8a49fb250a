/*
 * replay_db.c - replay against history (see replay_db.h).
 */
#include <inttypes.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "decision/decision.h"
#include "decision/jobs.h"
#include "decision/json.h"
#include "plugin/plugin.h"
#include "decision/replay_db.h"
#include "base/xmem.h"

/* Everything one run holds; released at `out:` of replay_db_run. */
struct run {
    const struct replay_db_opts *o;
    sqlite3 *h;
    int64_t *deletes; /* the decision id after which each deletion happened, ascending */
    int n_deletes;
    struct core_state *st;
    struct decision_buf buf;
    char *base_text;      /* the config_json base was built from */
    struct opt_job *base; /* recorded effective options (OPT_JOB layer) */
    /* summary */
    int64_t replayed, warmup, compared, changed, identical, errors;
    int64_t sc_rec, sc_cand, sc_added, sc_removed;
    double sm_rec, sm_cand; /* subtask-milliseconds */
    int64_t prev_at;        /* at of the previous compared decision, INT64_MIN: none */
    double prev_p_rec, prev_p_cand;
};

static char *sqlerr(sqlite3 *h, const char *what)
{
    return xasprintf("%s: %s", what, h ? sqlite3_errmsg(h) : "out of memory");
}

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
               const char *recorded, replay_db_change_cb cb, void *ud, char **errp)
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
    rec = json_loads(recorded, 0, &je);
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
                             .revision = "native"};
    struct decision_res res;
    if (decision_run(&r->buf, &q, &res) < 0) {
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
    /* Through text with the server's 15 digits, so both sides compare as stored. */
    char *text = json_dumps(res.response, JSON_COMPACT | JSON_REAL_PRECISION(15));
    json_decref(res.response);
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

/* The decisions.id after which each DELETE of the job happened (rows written before migration
 * 004 have none: the last decision created at or before it, by the server clock). */
static const char SQL_DELETES[] =
    "SELECT coalesce(after_decision, (SELECT max(id) FROM decisions d WHERE d.created_at <= c.at), "
    "0) AS after FROM config_changes c WHERE job = ?1 AND config_json IS NULL ORDER BY after";
static const char SQL_DECISIONS[] =
    "SELECT id, at, input_json, config_json, decision_json, created_at FROM decisions "
    "WHERE job = ?1 AND at <= ?2 ORDER BY id";

int replay_db_run(const struct replay_db_opts *o, replay_db_change_cb cb, void *ud,
                  json_t **summary, char **errp)
{
    struct run r;
    sqlite3_stmt *st = NULL;
    int rc = -1;
    memset(&r, 0, sizeof r);
    r.o = o;
    r.prev_at = INT64_MIN;
    r.st = core_state_new();
    decision_buf_init(&r.buf);
    *summary = NULL;

    if (sqlite3_open_v2(o->db, &r.h, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
        *errp = sqlerr(r.h, o->db);
        goto out;
    }
    sqlite3_busy_timeout(r.h, 5000);
    sqlite3_exec(r.h, "PRAGMA query_only = 1", NULL, NULL, NULL);
    /* One read transaction: the replay sees one snapshot while the server goes on. */
    if (sqlite3_exec(r.h, "BEGIN", NULL, NULL, NULL) != SQLITE_OK) {
        *errp = sqlerr(r.h, o->db);
        goto out;
    }
    if (sqlite3_prepare_v2(r.h, SQL_DELETES, -1, &st, NULL) != SQLITE_OK) {
        *errp = sqlerr(r.h, "read config_changes");
        goto out;
    }
    sqlite3_bind_text(st, 1, o->job, -1, SQLITE_TRANSIENT);
    while (sqlite3_step(st) == SQLITE_ROW) {
        r.deletes = xrealloc(r.deletes, (size_t)(r.n_deletes + 1) * sizeof *r.deletes);
        r.deletes[r.n_deletes++] = sqlite3_column_int64(st, 0);
    }
    sqlite3_finalize(st);
    if (sqlite3_prepare_v2(r.h, SQL_DECISIONS, -1, &st, NULL) != SQLITE_OK) {
        *errp = sqlerr(r.h, "read decisions");
        goto out;
    }
    sqlite3_bind_text(st, 1, o->job, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(st, 2, o->to);
    int step, di = 0;
    int64_t prev_id = INT64_MIN;
    while ((step = sqlite3_step(st)) == SQLITE_ROW) {
        int64_t id = sqlite3_column_int64(st, 0), at = sqlite3_column_int64(st, 1);
        const char *input = (const char *)sqlite3_column_text(st, 2);
        const char *config = (const char *)sqlite3_column_text(st, 3);
        const char *dec = (const char *)sqlite3_column_text(st, 4);
        /* A DELETE of the job between the previous decision and this one emptied its state. */
        bool deleted = false;
        while (di < r.n_deletes && r.deletes[di] < id) {
            deleted |= prev_id != INT64_MIN && r.deletes[di] >= prev_id;
            di++;
        }
        if (deleted)
            core_state_clear(r.st);
        prev_id = id;
        if (one(&r, id, at, input ? input : "", config ? config : "{}", dec ? dec : "", cb, ud,
                errp) < 0)
            goto out;
    }
    if (step != SQLITE_DONE) {
        *errp = sqlerr(r.h, "read decisions");
        goto out;
    }
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
    rc = 0;
out:
    sqlite3_finalize(st);
    if (r.h)
        sqlite3_exec(r.h, "COMMIT", NULL, NULL, NULL);
    sqlite3_close(r.h);
    free(r.deletes);
    free(r.base_text);
    opt_job_free(r.base);
    decision_buf_deinit(&r.buf);
    core_state_free(r.st);
    return rc;
}
