/*
 * gating.c - the gates between a vertex's computed target and an executed scaling
 * (core/README.md, Gating): memory pressure, delayed scale-down with the maximum in the
 * window, and ineffective scale-up detection.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/core_int.h"

bool core__memory_pressure(const struct core_config *cfg, const struct core_global_eval *g,
                           struct core_decision *d)
{
    /* Plain comparisons: NaN never triggers. */
    if (g->gc_pressure > cfg->gc_pressure_threshold) {
        core__event(d, "Normal", "MemoryPressure", "gcPressure",
                    "GC pressure %.3f is above the threshold %.3f: give the job more memory",
                    g->gc_pressure, cfg->gc_pressure_threshold);
        return true;
    }
    if (g->heap_ratio_avg > cfg->heap_usage_threshold) {
        core__event(d, "Normal", "MemoryPressure", "heapUsage",
                    "heap usage %.3f is above the threshold %.3f: give the job more memory",
                    g->heap_ratio_avg, cfg->heap_usage_threshold);
        return true;
    }
    return false;
}

/* Java's Double.toString: the shortest decimal that reads back, "1000.0" or "1.0E7". */
static void java_double(double x, char *buf, size_t n)
{
    if (!isfinite(x)) {
        snprintf(buf, n, "%s", isnan(x) ? "NaN" : x > 0 ? "Infinity" : "-Infinity");
        return;
    }
    uint64_t m;
    int k;
    bool neg;
    core__shortest_decimal(x, &m, &k, &neg);
    char dig[24];
    int nd = snprintf(dig, sizeof dig, "%llu", (unsigned long long)m);
    int exp10 = nd - 1 + k; /* x = d.ddd x 10^exp10 */
    double ax = fabs(x);
    if (x == 0.0 || (ax >= 1e-3 && ax < 1e7)) {
        int decimals = nd - 1 - exp10;
        snprintf(buf, n, "%.*f", decimals < 1 ? 1 : decimals, x);
        return;
    }
    snprintf(buf, n, "%s%c.%sE%d", neg ? "-" : "", dig[0], nd > 1 ? dig + 1 : "0", exp10);
}

bool core__ineffective_blocked(const struct core_config *cfg, const struct core_vhistory *hist,
                               const char *id, int current, double tpr, struct core_decision *d)
{
    if (!hist || hist->n == 0)
        return false;
    const struct core_hist_entry *last = &hist->e[hist->n - 1];
    /* Only right after our own scale-up: a user-made change bypasses the check. */
    if (last->new_parallelism <= last->current_parallelism || last->new_parallelism != current)
        return false;
    double expected = last->expected_processing_rate - last->true_processing_rate;
    double actual = tpr - last->true_processing_rate;
    double ratio = actual / expected;
    /* NaN and -inf (an expected increase of 0) count as ineffective. */
    if (ratio >= cfg->effectiveness_threshold)
        return false;
    char key[96], exp_s[40];
    java_double(expected, exp_s, sizeof exp_s);
    snprintf(key, sizeof key, "ineffective%s%s", id, exp_s);
    core__event(d, "Normal", "IneffectiveScaling", key,
                "Ineffective scaling detected for %s (expected increase: %.2f, actual "
                "increase: %.2f). Blocking of ineffective scaling decisions is %s",
                id, expected, actual, cfg->effectiveness_detection ? "enabled" : "disabled");
    return cfg->effectiveness_detection;
}

int core__delayed_find(const struct core_state *st, const char *id)
{
    for (int i = 0; i < st->n_delayed; i++)
        if (strcmp(st->delayed[i].id, id) == 0)
            return i;
    return -1;
}

int core__delayed_scale_down(struct core_state *st, const struct core_config *cfg, const char *id,
                             int current, int target, bool outside, int64_t now, bool *outside_out)
{
    int pos = core__delayed_find(st, id);
    return core__delayed_scale_down_at(st, cfg, &pos, id, current, target, outside, now,
                                       outside_out);
}

int core__delayed_scale_down_at(struct core_state *st, const struct core_config *cfg, int *pos,
                                const char *id, int current, int target, bool outside, int64_t now,
                                bool *outside_out)
{
    *outside_out = outside;
    if (cfg->scale_down_interval_ms <= 0)
        return target; /* delaying disabled: scale down at once */
    struct core_delayed *e = *pos >= 0 ? &st->delayed[*pos] : NULL;
    /* A proposal at or above the current parallelism is no scale-down: it was made for a
     * parallelism the vertex no longer runs at, and it must not come back as a scale-up. The
     * wait starts again (core/README.md, Gating). Only the head can be that high. */
    if (e && e->n > 0 && e->r[0].parallelism >= current) {
        e->n = 0;
        e->first_trigger = now;
    }
    if (!e) {
        core__grow(&st->delayed, &st->cap_delayed, st->n_delayed + 1, sizeof *st->delayed);
        *pos = st->n_delayed;
        e = &st->delayed[st->n_delayed++];
        memset(e, 0, sizeof *e);
        e->id = core__strdup(id);
        e->first_trigger = now;
    }
    /* Drop from the tail every recommendation <= this one (equal too, so the newest time
     * survives), then append: the list stays strictly decreasing; its head is the max. */
    while (e->n > 0 && e->r[e->n - 1].parallelism <= target)
        e->n--;
    core__grow(&e->r, &e->cap, e->n + 1, sizeof *e->r);
    e->r[e->n].at = now;
    e->r[e->n].parallelism = target;
    e->r[e->n].outside_bounds = outside;
    e->n++;
    /* governor.scale-down.early: a vertex below its lower bound at every proposal of the
     * last early-after has clearly fallen: a shorter wait, still at the highest proposal
     * within it. (A proposal made inside the bounds, say while a backlog was worked off,
     * sends it back to the whole interval.) */
    int64_t interval = cfg->scale_down_interval_ms;
    /* governor.scale-down.restart-cost: no fixed wait; whether the scale-down is worth its
     * restart is the cycle's to judge, from when it was first proposed (core/README.md,
     * Gating). */
    if (cfg->restart_cost_w > 0)
        interval = 0;
    else if (cfg->scale_down_early && cfg->scale_down_early_ms < interval) {
        int64_t since = core__time_sub(now, cfg->scale_down_early_ms);
        bool low = true;
        for (int k = 0; k < e->n; k++)
            if (e->r[k].at >= since && !e->r[k].outside_bounds)
                low = false;
        if (low)
            interval = cfg->scale_down_early_ms;
    }
    int64_t window_start = core__time_sub(now, interval);
    if (window_start < e->first_trigger)
        return current; /* still delayed */
    int drop = 0;
    while (drop < e->n - 1 && e->r[drop].at < window_start)
        drop++;
    if (drop > 0) {
        memmove(e->r, e->r + drop, (size_t)(e->n - drop) * sizeof *e->r);
        e->n -= drop;
    }
    *outside_out = e->r[0].outside_bounds;
    return e->r[0].parallelism;
}

int64_t core__delayed_since(const struct core_state *st, const char *id)
{
    for (int i = 0; i < st->n_delayed; i++)
        if (strcmp(st->delayed[i].id, id) == 0)
            return st->delayed[i].first_trigger;
    return -1;
}

/* When the vertex's pending scale-down may happen at the earliest, or -1 when none. */
int64_t core__delayed_until(const struct core_state *st, const struct core_config *cfg,
                            const char *id)
{
    return core__delayed_until_at(st, cfg, core__delayed_find(st, id));
}

int64_t core__delayed_until_at(const struct core_state *st, const struct core_config *cfg, int pos)
{
    if (pos < 0)
        return -1;
    return core__time_add(st->delayed[pos].first_trigger, cfg->scale_down_interval_ms);
}

void core__delayed_clear(struct core_state *st, const char *id)
{
    core__delayed_clear_at(st, core__delayed_find(st, id));
}

int core__delayed_clear_at(struct core_state *st, int pos)
{
    if (pos < 0)
        return -1;
    free(st->delayed[pos].id);
    free(st->delayed[pos].r);
    int last = --st->n_delayed;
    st->delayed[pos] = st->delayed[last];
    return last != pos ? last : -1;
}

void core__delayed_clear_all(struct core_state *st)
{
    for (int i = 0; i < st->n_delayed; i++) {
        free(st->delayed[i].id);
        free(st->delayed[i].r);
    }
    st->n_delayed = 0;
}
