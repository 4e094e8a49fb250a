/*
 * advice.c - tuning advice from a job's stored decisions (see advice.h).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decision/advice.h"
#include "decision/replay_db.h"
#include "store/db.h"
#include "options/options.h"
#include "base/xmem.h"

#define MIN_MS          60000LL
#define DOWN_UP_HORIZON (120 * MIN_MS) /* a scale-up this soon after a scale-down undoes it */
#define SLOW_MIN_MS     (5 * MIN_MS)   /* backlog growth this long before a scale-up is slow */
#define SLOW_MIN_STEPS  3              /* ... over at least this many decisions */
#define AFTER_UP_MS     (30 * MIN_MS)  /* how long after a scale-up utilization is looked at */
#define AFTER_UP_MIN    3              /* decisions needed in that time */
#define NO_BACKLOG_S    10.0           /* a backlog of at most this is none */
#define MAX_EPISODES    10             /* evidence listed per pattern */

static bool is_up(const struct timeline_decision *d)
{
    return d->executed && d->target > d->current;
}

static bool is_down(const struct timeline_decision *d)
{
    return d->executed && d->target < d->current;
}

/* Whether the backlog grew at decision k (from the one before). */
static bool grew(const struct timeline_history *h, int k)
{
    return k > 0 && !isnan(h->d[k].backlog_s) && !isnan(h->d[k - 1].backlog_s) &&
           h->d[k].backlog_s > h->d[k - 1].backlog_s && h->d[k].backlog_s > 0;
}

static double floor05(double x)
{
    return floor(x * 20 + 1e-9) / 20;
}

static double round05(double x)
{
    return round(x * 20) / 20;
}

/* A duration as an option value: whole minutes when it is some, else seconds. */
static json_t *duration_text(double s)
{
    char buf[48];
    int64_t v = (int64_t)llround(s);
    if (v % 60 == 0)
        snprintf(buf, sizeof buf, "%lld min", (long long)(v / 60));
    else
        snprintf(buf, sizeof buf, "%lld s", (long long)v);
    return json_string(buf);
}

static json_t *ratio_text(double x)
{
    char buf[32];
    snprintf(buf, sizeof buf, "%.2f", x);
    return json_string(buf);
}

static json_t *num(double x)
{
    return isnan(x) || isinf(x) ? json_null() : json_real(round(x * 1000) / 1000);
}

static const struct timeline_config *last_config(const struct timeline_history *h)
{
    return &h->configs[h->d[h->n_d - 1].config];
}

/* EXCESSIVE_DOWN_SCALING: a scale-down, backlog growth, a scale-up within the horizon. */
static json_t *excessive_down(const struct timeline_history *h)
{
    json_t *eps = json_array();
    int64_t max_gap = 0;
    int found = 0;
    for (int i = 0; i < h->n_d; i++) {
        if (!is_down(&h->d[i]))
            continue;
        int j = i + 1, g = -1;
        for (; j < h->n_d && !h->d[j].executed; j++)
            if (g < 0 && grew(h, j))
                g = j;
        if (j == h->n_d || !is_up(&h->d[j]) || h->d[j].at - h->d[i].at > DOWN_UP_HORIZON)
            continue;
        if (g < 0 && grew(h, j))
            g = j;
        if (g < 0)
            continue;
        found++;
        if (h->d[j].at - h->d[i].at > max_gap)
            max_gap = h->d[j].at - h->d[i].at;
        if (json_array_size(eps) < MAX_EPISODES)
            json_array_append_new(
                eps, json_pack("{s:I, s:I, s:I, s:o, s:f}", "scale_down_decision",
                               (json_int_t)h->d[i].id, "backlog_grew_at_decision",
                               (json_int_t)h->d[g].id, "scale_up_decision", (json_int_t)h->d[j].id,
                               "utilization_when_backlog_grew", num(h->d[g].load_max),
                               "minutes_down_to_up",
                               round((double)(h->d[j].at - h->d[i].at) / 6000.0) / 10));
    }
    if (!found) {
        json_decref(eps);
        return NULL;
    }
    const struct timeline_config *c = last_config(h);
    double cur = c->scale_down_interval_s;
    double adv = ceil((cur + (double)max_gap / 1000.0) / 300.0) * 300.0;
    char msg[512];
    snprintf(msg, sizeof msg,
             "%d scale-down(s) were undone by a scale-up within %lld min after the backlog grew "
             "again: wait longer before scaling down",
             found, (long long)(max_gap / MIN_MS));
    return json_pack("{s:s, s:s, s:o, s:o, s:{s:i, s:o}, s:s, s:s}", "pattern",
                     "EXCESSIVE_DOWN_SCALING", "option", "job.autoscaler.scale-down.interval",
                     "current", duration_text(cur), "advised", duration_text(adv), "evidence",
                     "episodes", found, "cases", eps, "expected_effect",
                     "a scale-down waits until the load has stayed low for the longer interval, "
                     "so a dip shorter than it no longer scales the job down and up again",
                     "message", msg);
}

/* SLOW_UP_SCALING: backlog growth over SLOW_MIN_STEPS decisions and SLOW_MIN_MS before a
 * scale-up (or the window's end), at a utilization above the target. */
static json_t *slow_up(const struct timeline_history *h)
{
    json_t *eps = json_array();
    double u_min = NAN;
    int found = 0;
    const struct timeline_config *c = last_config(h);
    for (int j = 1; j < h->n_d; j++) {
        bool end = j == h->n_d - 1 && grew(h, j);
        if (!is_up(&h->d[j]) && !end)
            continue;
        int k = end ? j : j - 1; /* the last decision of the growth */
        if (!grew(h, k))
            continue;
        int s = k;
        while (s > 1 && grew(h, s - 1))
            s--;
        /* s: the first decision at which the backlog had grown */
        const struct timeline_decision *ds = &h->d[s];
        int64_t ms = h->d[j].at - h->d[s - 1].at;
        if (k - s + 1 < SLOW_MIN_STEPS || ms < SLOW_MIN_MS || isnan(ds->load_max) ||
            ds->load_max <= h->configs[ds->config].util_target)
            continue;
        found++;
        if (isnan(u_min) || ds->load_max < u_min)
            u_min = ds->load_max;
        if (json_array_size(eps) < MAX_EPISODES)
            json_array_append_new(
                eps, json_pack("{s:I, s:o, s:o, s:f, s:o}", "backlog_grew_from_decision",
                               (json_int_t)ds->id, "utilization_when_backlog_grew",
                               num(ds->load_max), "scale_up_decision",
                               end && !is_up(&h->d[j]) ? json_null()
                                                       : json_integer((json_int_t)h->d[j].id),
                               "minutes_growing", round((double)ms / 6000.0) / 10,
                               "backlog_s_at_scale_up", num(h->d[j].backlog_s)));
    }
    if (!found) {
        json_decref(eps);
        return NULL;
    }
    double adv = floor05(u_min - 0.05);
    const char *option = "job.autoscaler.utilization.max";
    double cur = c->util_max;
    if (adv <= c->util_target) {
        option = "job.autoscaler.utilization.target";
        cur = c->util_target;
        adv = floor05(u_min - 0.15);
        if (adv < 0.1)
            adv = 0.1;
    }
    if (adv >= cur) {
        json_decref(eps);
        return NULL;
    }
    char msg[512];
    snprintf(msg, sizeof msg,
             "the backlog grew for %d stretch(es) of 5 min or more before a scale-up, starting "
             "at a utilization of %.2f, below the upper bound %.2f that triggers one",
             found, u_min, c->util_max);
    return json_pack(
        "{s:s, s:s, s:o, s:o, s:{s:i, s:o, s:o}, s:s, s:s}", "pattern", "SLOW_UP_SCALING", "option",
        option, "current", ratio_text(cur), "advised", ratio_text(adv), "evidence", "episodes",
        found, "lowest_utilization_when_backlog_grew", num(u_min), "cases", eps, "expected_effect",
        "a vertex counts as too busy at the utilization where the backlog began to "
        "grow, so the scale-up comes before the backlog builds up",
        "message", msg);
}

/* EXCESSIVE_UP_SCALING: after a scale-up, once applied, AFTER_UP_MS below the lower bound on
 * average with no backlog. */
static json_t *excessive_up(const struct timeline_history *h)
{
    json_t *eps = json_array();
    int found = 0, for_backlog = 0;
    double u_sum = 0;
    int backlog_code = -1;
    for (int i = 0; i < h->n_codes; i++)
        if (strcmp(h->codes[i], "HIGH_BACKLOG") == 0)
            backlog_code = i;
    for (int j = 0; j < h->n_d; j++) {
        const struct timeline_decision *up = &h->d[j];
        if (!is_up(up))
            continue;
        const struct timeline_config *c = &h->configs[up->config];
        double sum = 0, bmax = 0;
        int n = 0;
        bool stop = false;
        for (int k = j + 1; k < h->n_d && h->d[k].at - up->at <= AFTER_UP_MS && !stop; k++) {
            const struct timeline_decision *d = &h->d[k];
            if (d->current != up->target)
                continue; /* not applied yet */
            if (isnan(d->load_max))
                continue; /* collecting metrics after the restart */
            sum += d->load_max;
            n++;
            if (!isnan(d->backlog_s) && d->backlog_s > bmax)
                bmax = d->backlog_s;
            stop = d->executed;
        }
        if (n < AFTER_UP_MIN || sum / n >= c->util_min || bmax > NO_BACKLOG_S)
            continue;
        found++;
        u_sum += sum / n;
        for_backlog += up->reason == backlog_code;
        if (json_array_size(eps) < MAX_EPISODES)
            json_array_append_new(
                eps, json_pack("{s:I, s:s, s:i, s:i, s:o, s:o}", "scale_up_decision",
                               (json_int_t)up->id, "reason", h->codes[up->reason],
                               "subtasks_before", up->current, "subtasks_after", up->target,
                               "utilization_after", num(sum / n), "lower_bound", num(c->util_min)));
    }
    if (!found) {
        json_decref(eps);
        return NULL;
    }
    const struct timeline_config *c = last_config(h);
    double u_after = u_sum / found;
    json_t *cur, *adv;
    const char *option, *effect;
    if (2 * for_backlog >= found) {
        option = "job.autoscaler.catch-up.duration";
        cur = duration_text(c->catch_up_s);
        adv = duration_text(c->catch_up_s * 2);
        effect = "a backlog is worked off over a longer time with fewer extra subtasks, so a "
                 "scale-up for a backlog adds less than the job needs once it is drained";
    } else {
        option = "job.autoscaler.utilization.target";
        double a = round05(c->util_target + (c->util_target - u_after) / 2);
        if (a > c->util_max - 0.05)
            a = c->util_max - 0.05;
        if (a <= c->util_target) {
            json_decref(eps);
            return NULL;
        }
        cur = ratio_text(c->util_target);
        adv = ratio_text(a);
        effect = "each scale-up sizes the vertex for a higher utilization, so it adds fewer "
                 "subtasks";
    }
    char msg[512];
    snprintf(msg, sizeof msg,
             "%d scale-up(s) were followed by 30 min at a mean utilization of %.2f, below the "
             "lower bound, with no backlog: they added more than needed",
             found, u_after);
    return json_pack("{s:s, s:s, s:o, s:o, s:{s:i, s:o, s:o}, s:s, s:s}", "pattern",
                     "EXCESSIVE_UP_SCALING", "option", option, "current", cur, "advised", adv,
                     "evidence", "episodes", found, "mean_utilization_after", num(u_after), "cases",
                     eps, "expected_effect", effect, "message", msg);
}

json_t *advice_patterns(const struct timeline_history *h)
{
    json_t *out = json_array();
    if (h->n_d == 0)
        return out;
    json_t *more[2] = {excessive_down(h), slow_up(h)};
    json_t *less = excessive_up(h);
    if (less && (more[0] || more[1])) {
        /* Asking for more capacity and for less at once: the history does not say which. */
        json_t *names = json_array(), *ev = json_object();
        json_t *all[3] = {more[0], more[1], less};
        for (int i = 0; i < 3; i++) {
            if (!all[i])
                continue;
            const char *p = json_string_value(json_object_get(all[i], "pattern"));
            json_array_append_new(names, json_string(p));
            json_object_set(ev, p, json_object_get(all[i], "evidence"));
            json_decref(all[i]);
        }
        json_array_append_new(
            out,
            json_pack("{s:s, s:o, s:n, s:n, s:n, s:o, s:s}", "pattern", "CONFLICTING_PATTERNS",
                      "patterns", names, "option", "current", "advised", "evidence", ev, "message",
                      "the history shows scalings that came too late or too early and "
                      "scale-ups that added too much: no single option change fixes both; "
                      "look at the evidence (the load may change faster than the metric "
                      "window, or the job's capacity may not grow with its parallelism)"));
        return out;
    }
    for (int i = 0; i < 2; i++)
        if (more[i])
            json_array_append_new(out, more[i]);
    if (less)
        json_array_append_new(out, less);
    return out;
}

/* Keeps the first few changes of the replay: what the advised value changes first. */
static void keep_change(void *ud, json_t *change)
{
    if (json_array_size(ud) >= 3)
        return;
    json_t *rec = json_object_get(change, "recorded"), *cand = json_object_get(change, "candidate");
    json_array_append_new(ud, json_pack("{s:O?, s:O?, s:O?, s:O?, s:O?, s:O?}", "decision_id",
                                        json_object_get(change, "decision_id"), "at",
                                        json_object_get(change, "at"), "recorded_action",
                                        json_object_get(rec, "action"), "recorded_reason",
                                        json_object_get(rec, "reason"), "candidate_action",
                                        json_object_get(cand, "action"), "candidate_reason",
                                        json_object_get(cand, "reason")));
}

/* Replays the job's history with option = advised and says what would have changed. */
static json_t *check(const char *db, const char *job, int64_t from, int64_t to, json_t *a)
{
    const char *option = json_string_value(json_object_get(a, "option"));
    const char *advised = json_string_value(json_object_get(a, "advised"));
    struct opt_job *cand = opt_job_new();
    json_t *summary = NULL, *out = NULL, *first = NULL;
    char *err = NULL;
    if (!option || !advised)
        goto out;
    if (opt_job_set(cand, OPT_SERVER, option, advised, &err) < 0) {
        out = json_pack("{s:s}", "error", err);
        goto out;
    }
    struct replay_db_opts o = {
        .db = db, .job = job, .from = from, .to = to - 1, .candidate = cand, .policies = NULL};
    first = json_array();
    if (replay_db_run(&o, keep_change, first, &summary, &err) < 0) {
        out = json_pack("{s:s}", "error", err);
        goto out;
    }
    json_int_t n = json_integer_value(json_object_get(summary, "decisions"));
    json_int_t ch = json_integer_value(json_object_get(summary, "changed"));
    json_int_t sr = json_integer_value(json_object_get(summary, "scalings_recorded"));
    json_int_t sc = json_integer_value(json_object_get(summary, "scalings_candidate"));
    double dm = json_real_value(json_object_get(summary, "subtask_minutes_delta"));
    char msg[700], head[300] = "";
    json_t *f0 = json_array_get(first, 0);
    if (f0)
        snprintf(head, sizeof head, "from decision %lld on (recorded %s %s, now %s %s); ",
                 (long long)json_integer_value(json_object_get(f0, "decision_id")),
                 json_string_value(json_object_get(f0, "recorded_action")),
                 json_string_value(json_object_get(f0, "recorded_reason")),
                 json_string_value(json_object_get(f0, "candidate_action")),
                 json_string_value(json_object_get(f0, "candidate_reason")));
    snprintf(msg, sizeof msg,
             "replayed with %s = %s: %s%lld of %lld decisions change, scalings %lld -> %lld, "
             "subtask-minutes %+.1f (the replay feeds the recorded samples, which do not follow "
             "the changed decisions: past the first change the figures are an upper bound)",
             option, advised, head, (long long)ch, (long long)n, (long long)sr, (long long)sc, dm);
    out = json_pack("{s:I, s:I, s:I, s:I, s:f, s:O, s:s}", "decisions", n, "changed", ch,
                    "scalings_recorded", sr, "scalings_candidate", sc, "subtask_minutes_delta", dm,
                    "first_changes", first, "message", msg);
out:
    json_decref(first);
    free(err);
    json_decref(summary);
    opt_job_free(cand);
    return out;
}

/* The id after which the job's last deletion happened (0: never deleted), into *after. */
static int last_deletion(const char *db, const char *job, int64_t *after, char **errp)
{
    int64_t *ids = NULL;
    int n = 0, rc = -1;
    struct db *d = db_open_read(db, errp);
    *after = 0;
    if (!d)
        return -1;
    if (db_job_deletions(d, job, &ids, &n, errp) == 0) {
        *after = n > 0 ? ids[n - 1] : 0;
        rc = 0;
    }
    free(ids);
    db_close(d);
    return rc;
}

int advice_run(const char *db, const char *job, int64_t from, int64_t to, json_t **out, char **errp)
{
    struct timeline_history h;
    int64_t after = 0;
    *out = NULL;
    memset(&h, 0, sizeof h);
    /* The job as it is since it was last made again: a deleted job's history is not its own. */
    if (last_deletion(db, job, &after, errp) < 0 ||
        timeline_history_read(db, job, from, to, after, &h, errp) < 0) {
        timeline_history_free(&h);
        return -1;
    }
    json_t *advice = advice_patterns(&h);
    size_t i;
    json_t *a;
    json_array_foreach(advice, i, a)
    {
        if (!json_is_string(json_object_get(a, "advised")))
            continue;
        json_t *r = check(db, job, from, to, a);
        if (r)
            json_object_set_new(a, "replay", r);
    }
    *out = json_pack("{s:s, s:I, s:I, s:i, s:o}", "job", job, "from", (json_int_t)from, "to",
                     (json_int_t)to, "decisions", h.n_d, "advice", advice);
    timeline_history_free(&h);
    return 0;
}
