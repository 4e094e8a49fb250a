/*
 * explain.c - the human text of a decision: for each vertex, why it moves, stays or waits,
 * in the figures the algorithm used (what the subtasks can process, what arrives, how busy
 * they are, what the new parallelism is expected to process, which limit held it back).
 * Pure formatting into the decision's arena; no decision is taken here.
 */
#include <stdio.h>
#include <string.h>

#include "core/core_int.h"

void core__fmt_rate(char *buf, size_t n, double x)
{
    if (isnan(x))
        snprintf(buf, n, "an unknown rate");
    else if (isinf(x))
        snprintf(buf, n, "an unbounded rate");
    else if (fabs(x) >= 100.0)
        snprintf(buf, n, "%.0f/s", x);
    else
        snprintf(buf, n, "%.1f/s", x);
}

void core_format_duration(char *buf, size_t n, int64_t ms)
{
    static const struct {
        const char *name;
        int64_t mult;
    } u[] = {{"d", 86400000}, {"h", 3600000}, {"min", 60000}, {"s", 1000}};
    for (size_t i = 0; i < sizeof u / sizeof u[0]; i++)
        if (ms != 0 && ms % u[i].mult == 0) {
            snprintf(buf, n, "%lld %s", (long long)(ms / u[i].mult), u[i].name);
            return;
        }
    snprintf(buf, n, "%lld ms", (long long)ms);
}

void core__fmt_utc(char *buf, size_t n, int64_t ms)
{
    /* Civil date from days since 1970-01-01 (Howard Hinnant's algorithm). */
    int64_t s = ms >= 0 ? ms / 1000 : -((-ms + 999) / 1000);
    int64_t days = s >= 0 ? s / 86400 : -((-s + 86399) / 86400);
    int64_t sod = s - days * 86400;
    int64_t z = days + 719468;
    int64_t era = (z >= 0 ? z : z - 146096) / 146097;
    int64_t doe = z - era * 146097;
    int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    int64_t y = yoe + era * 400;
    int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    int64_t mp = (5 * doy + 2) / 153;
    int64_t d = doy - (153 * mp + 2) / 5 + 1;
    int64_t m = mp < 10 ? mp + 3 : mp - 9;
    if (m <= 2)
        y++;
    snprintf(buf, n, "%04lld-%02lld-%02lldT%02lld:%02lld:%02lldZ", (long long)y, (long long)m,
             (long long)d, (long long)(sod / 3600), (long long)(sod / 60 % 60),
             (long long)(sod % 60));
}

/* " (busy 95%)" when the load is known. */
static void busy(char *buf, size_t n, double load)
{
    if (isfinite(load))
        snprintf(buf, n, " (busy %.0f%%)", load * 100.0);
    else
        buf[0] = '\0';
}

/* What arrives: "1100/s arrive" plus the catch-up share when there is one. */
static void arriving(char *buf, size_t n, const struct core_evaluated *e)
{
    char tdr[40], cu[40];
    core__fmt_rate(tdr, sizeof tdr, e->target_data_rate);
    if (e->catch_up_data_rate > 0.0) {
        core__fmt_rate(cu, sizeof cu, e->catch_up_data_rate);
        snprintf(buf, n, "%s arrive, plus %s to work off the backlog", tdr, cu);
    } else {
        snprintf(buf, n, "%s arrive", tdr);
    }
}

static const char *subtasks(int p)
{
    return p == 1 ? "subtask" : "subtasks";
}

/* The verb after "p subtasks": "1 subtask processes", "2 subtasks process". */
static const char *process(int p)
{
    return p == 1 ? "processes" : "process";
}

/*
 * What the restart headroom adds to the capacity a vertex of p subtasks is sized for, as a
 * clause ("; sized for 1595/s, of which 167/s to work off what piles up during a 5 min restart
 * within 30 min"), when it changes the number of subtasks (core/README.md, Evaluation: target
 * capacity, Scaling step 7), else "". A vertex busy less than its target utilization can be
 * scaled up for it alone (with another vertex's restart), which the message must say.
 */
static void restart_note(char *buf, size_t n, const struct core_config *cfg,
                         const struct core_evaluated *e, int64_t restart_ms, int p)
{
    buf[0] = '\0';
    double with = core__capacity_cfg(cfg, e, cfg->util_target, true, restart_ms);
    double without = core__capacity_cfg(cfg, e, cfg->util_target, false, restart_ms);
    int64_t restart_s = restart_ms / 1000, catch_up_s = cfg->catch_up_ms / 1000;
    double tpr = e->true_processing_rate;
    if (!isfinite(with) || !(with > without) || catch_up_s <= 0 || restart_s <= 0 || !(tpr > 0) ||
        !isfinite(tpr) || ceil(with / tpr * p) == ceil(without / tpr * p))
        return;
    char cap[40], rr[40], rd[32], cd[32];
    core__fmt_rate(cap, sizeof cap, with);
    core__fmt_rate(rr, sizeof rr, e->target_data_rate * (double)restart_s / (double)catch_up_s);
    core_format_duration(rd, sizeof rd, restart_s * 1000);
    core_format_duration(cd, sizeof cd, catch_up_s * 1000);
    snprintf(buf, n,
             "; sized for %s, of which %s to work off what piles up during a %s restart within "
             "%s",
             cap, rr, rd, cd);
}

/* What changed the number on the way, as a clause: "; capped at its 3 partitions". */
static void limits_note(char *buf, size_t n, const struct core_vertex_in *v, unsigned c, int raw)
{
    buf[0] = '\0';
    size_t off = 0;
#define NOTE(...)                                                                                  \
    do {                                                                                           \
        int w__ = snprintf(buf + off, n - off, __VA_ARGS__);                                       \
        if (w__ > 0 && (size_t)w__ < n - off)                                                      \
            off += (size_t)w__;                                                                    \
    } while (0)
    if (c & CORE_C_CLAMPED_MAX_FACTOR)
        NOTE("; the step is limited by the scale-%s max-factor",
             raw > v->parallelism ? "up" : "down");
    if (c & CORE_C_CAPPED_AT_PARTITIONS)
        NOTE("; capped at its %d partition%s", v->partitions, core__plural(v->partitions));
    if (c & CORE_C_CLAMPED_MAX_PARALLELISM)
        NOTE("; capped by max_parallelism %d or job.autoscaler.vertex.max-parallelism",
             v->max_parallelism);
    if (c & CORE_C_CLAMPED_MIN_PARALLELISM)
        NOTE("; raised to job.autoscaler.vertex.min-parallelism");
    if (c & CORE_C_ALIGNED_TO_KEY_GROUPS)
        NOTE("; aligned to its %d key group%s", v->max_parallelism,
             core__plural(v->max_parallelism));
    if (c & CORE_C_ALIGNED_TO_PARTITIONS)
        NOTE("; aligned to its %d partition%s", v->partitions, core__plural(v->partitions));
    if (c & CORE_C_ALIGNED_BY_PLUGIN)
        NOTE("; aligned by the alignment plugin");
#undef NOTE
}

const char *core__explain_move(struct core_decision *d, const struct core_config *cfg,
                               const struct core_vertex_in *v, enum core_reason reason, int target,
                               int raw, unsigned constraints, const struct core_evaluated *e,
                               int64_t restart_ms)
{
    char tpr[40], exp[40], arr[160], b[32], dur[32], note[256], rs[256];
    const char *id = v->id;
    int p = v->parallelism;
    core__fmt_rate(tpr, sizeof tpr, e->true_processing_rate);
    core__fmt_rate(exp, sizeof exp, e->expected_processing_rate);
    arriving(arr, sizeof arr, e);
    busy(b, sizeof b, e->load);
    limits_note(note, sizeof note, v, constraints, raw);
    restart_note(rs, sizeof rs, cfg, e, restart_ms, p);
    if (reason == CORE_R_HIGH_BACKLOG) {
        core_format_duration(dur, sizeof dur, cfg->catch_up_ms);
        char cu[40];
        core__fmt_rate(cu, sizeof cu, e->catch_up_data_rate);
        if (isfinite(e->lag) && e->lag > 0)
            return core__asprintf(d,
                                  "%s: %d -> %d: a backlog of %.0f records is to be worked off "
                                  "within %s (%s on top of what arrives); %d %s %s at most "
                                  "%s%s%s; at %d, about %s%s",
                                  id, p, target, e->lag, dur, cu, p, subtasks(p), process(p), tpr,
                                  b, rs, target, exp, note);
        return core__asprintf(d,
                              "%s: %d -> %d: the job is working off a backlog within %s: %s; "
                              "%d %s %s at most %s%s%s; at %d, about %s%s",
                              id, p, target, dur, arr, p, subtasks(p), process(p), tpr, b, rs,
                              target, exp, note);
    }
    /* How busy the current subtasks must be to serve what arrives: the figure the target
     * utilization is about. */
    char need[96];
    double load_needed =
        (e->target_data_rate + (e->catch_up_data_rate > 0 ? e->catch_up_data_rate : 0.0)) /
        e->true_processing_rate;
    if (isfinite(load_needed) && load_needed > 1.0)
        snprintf(need, sizeof need, "more than %s can process", p == 1 ? "it" : "they");
    else if (isfinite(load_needed))
        snprintf(need, sizeof need, "needing %s %.0f%% of the time", p == 1 ? "it" : "them",
                 load_needed * 100.0);
    else
        snprintf(need, sizeof need, "an unknown share of it");
    return core__asprintf(d,
                          "%s: %d -> %d: %d %s can process %s%s; %s, %s (target utilization "
                          "%.0f%%)%s; at %d, about %s%s",
                          id, p, target, p, subtasks(p), tpr, b, arr, need,
                          cfg->util_target * 100.0, rs, target, exp, note);
}

const char *core__explain_steady(struct core_decision *d, const char *id, int p,
                                 const struct core_evaluated *e)
{
    char tpr[40], arr[160], b[32], up[40], down[64];
    core__fmt_rate(tpr, sizeof tpr, e->true_processing_rate);
    arriving(arr, sizeof arr, e);
    busy(b, sizeof b, e->load);
    core__fmt_rate(up, sizeof up, e->scale_up_rate_threshold);
    if (isinf(e->scale_down_rate_threshold))
        snprintf(down, sizeof down, "no scale-down while the backlog lasts");
    else {
        char r[40];
        core__fmt_rate(r, sizeof r, e->scale_down_rate_threshold);
        snprintf(down, sizeof down, "down above %s", r);
    }
    return core__asprintf(d,
                          "%s: %d %s %s at most %s%s and %s: inside its bounds (scale up "
                          "below %s, %s)",
                          id, p, subtasks(p), process(p), tpr, b, arr, up, down);
}

const char *core__explain_limit(struct core_decision *d, const struct core_config *cfg,
                                const struct core_vertex_in *v, int raw, unsigned constraints)
{
    char why[256] = "";
    if (constraints & CORE_C_CAPPED_AT_PARTITIONS)
        snprintf(why, sizeof why, "it reads %d partition%s", v->partitions,
                 core__plural(v->partitions));
    else if (constraints & CORE_C_CLAMPED_MAX_PARALLELISM)
        snprintf(why, sizeof why,
                 "max_parallelism is %d and job.autoscaler.vertex.max-parallelism %d",
                 v->max_parallelism, cfg->vertex_max_parallelism);
    else if (constraints & CORE_C_CLAMPED_MIN_PARALLELISM)
        snprintf(why, sizeof why, "job.autoscaler.vertex.min-parallelism is %d",
                 cfg->vertex_min_parallelism);
    else if (constraints & (CORE_C_ALIGNED_TO_KEY_GROUPS | CORE_C_ALIGNED_TO_PARTITIONS))
        snprintf(why, sizeof why, "no parallelism between them spreads the %s evenly",
                 constraints & CORE_C_ALIGNED_TO_PARTITIONS ? "partitions" : "key groups");
    else if (constraints & CORE_C_ALIGNED_BY_PLUGIN)
        snprintf(why, sizeof why, "the alignment plugin %s kept it",
                 cfg->align_plugin ? cfg->align_plugin : "");
    else
        snprintf(why, sizeof why, "its limits");
    return core__asprintf(d, "%s: needs %d %s but stays at %d: %s", v->id, raw, subtasks(raw),
                          v->parallelism, why);
}
