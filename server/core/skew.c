/*
 * skew.c - governor's key-parallelism diagnosis (core/README.md, Skew): when most of a HASH-input
 * vertex's load sits on one key, more subtasks cannot move it off the hottest subtask, and
 * a scale-up past a point buys nothing.
 *
 * The model, from the window's averages of the vertex's busy time:
 *   p  current parallelism, r = avg(max busy) / avg(avg busy)  (r = 1: perfectly even)
 *   h  = (r - 1) / (p - 1)   the hottest key's share of the vertex's input. With one hot key
 *      of share h and the rest spread evenly, the hot subtask carries h + (1 - h) / p of the
 *      input while the average subtask carries 1 / p, so r = p h + 1 - h; solved for h.
 *   mu = input rate / avg(avg busy) / p: what one subtask processes per second when busy
 *      all the time (the per-record cost is taken as uniform across keys).
 *   At parallelism P the hot subtask carries h + (1 - h) / P of the input, so the vertex can
 *   process at most mu / (h + (1 - h) / P) records/s, and never more than the bound mu / h
 *   whatever P is.
 *   P_sat = ceil((1 - h) / (h s)) is the first P at which the hot subtask's share is within
 *   s (job.autoscaler.skew.saturation, default 5%) of its floor h: past it, more subtasks
 *   buy less than s more throughput. The caller caps a scale-up there.
 *   fanout = ceil(h x target rate / (mu x utilization.target)): over how many subtasks the
 *   hot key must be salted so that its share fits one subtask at the target utilization.
 * Skew is assessed only when p > 1 and r >= job.autoscaler.skew.min-ratio (default 1.5):
 * below that, busy-time noise dominates the estimate.
 *
 * governor.skew.knee (the governor profile) stops instead at the knee of the capacity curve
 * the vertex's N key groups draw: at P subtasks the busiest carries h + (1 - h) ceil(N / P) / N
 * of the input, at best (P = N) h + (1 - h) / N; the knee is the fewest subtasks within s of
 * that best. Against the floor h (P_sat) a vertex of 200 key groups with h = 0.3 stops at
 * 47; against what 200 key groups allow, at 40, where 5 groups each are as even as 44.
 */
#include <stddef.h>

#include "core/core_int.h"

/* The share of the input the busiest subtask carries at parallelism q: the hot key plus the
 * rest spread by n key groups (n <= 1: evenly). */
static double busiest_share(double h, int n, int q)
{
    if (q < 1)
        q = 1;
    if (n <= 1)
        return h + (1.0 - h) / q;
    int groups = q >= n ? 1 : (n + q - 1) / q;
    return h + (1.0 - h) * (double)groups / (double)n;
}

/*
 * governor.skew.knee: the fewest subtasks whose busiest one carries at most 1 / (1 - s) times
 * the share it carries at n subtasks (one key group each, the most any parallelism reaches):
 * past it, more subtasks buy less than s of the best. With n key groups unknown, 0.
 */
static int knee(double h, int n, double s)
{
    if (n <= 1)
        return 0;
    double best = busiest_share(h, n, n) / (1.0 - s);
    for (int q = 1; q < n; q++)
        if (busiest_share(h, n, q) <= best + 1e-12)
            return q;
    return n;
}

double core__skew_capacity(const struct core_config *cfg, const struct core_evaluated *ev, int q)
{
    double h = ev->hot_key_share, bound = ev->key_rate_bound;
    if (!(h > 0) || !isfinite(bound))
        return NAN;
    int n = cfg->skew_knee ? (int)ev->max_parallelism : 0;
    return bound * h / busiest_share(h, n, q);
}

int core__skew_limit(const struct core_config *cfg, const struct core_window *w, int wi,
                     int current, struct core_evaluated *ev)
{
    if (!cfg->skew_enabled || wi < 0 || current < 2)
        return 0;
    double lmax = core__w_avg(w, wi, offsetof(struct core_vmetrics, load_max), 0);
    double lavg = core__w_avg(w, wi, offsetof(struct core_vmetrics, load_avg), 0);
    if (!isfinite(lmax) || !isfinite(lavg) || lavg <= 0.0)
        return 0;
    double r = lmax / lavg;
    ev->busy_max_avg_ratio = core__round3(r);
    if (!(r >= cfg->skew_min_ratio))
        return 0;
    double h = (r - 1.0) / (current - 1);
    if (h > 1.0)
        h = 1.0;
    double rate = core__w_avg_rate_fallback(w, wi, offsetof(struct core_vmetrics, rec_in_per_s),
                                            offsetof(struct core_vmetrics, rec_in));
    if (!isfinite(rate) || rate <= 0.0 || h <= 0.0)
        return 0;
    double mu = rate / lavg / current;
    double bound = mu / h;
    double s = 1.0 - core__knee_share(cfg);
    double psat = ceil((1.0 - h) / (h * s) - 1e-9);
    if (psat < 1.0)
        psat = 1.0;
    double target_rate = ev->target_data_rate;
    if (isfinite(ev->catch_up_data_rate))
        target_rate += ev->catch_up_data_rate;
    double util = cfg->util_target > 0 ? cfg->util_target : 1.0;
    double fanout = ceil(h * target_rate / (mu * util) - 1e-9);
    if (!(fanout >= 1.0))
        fanout = 1.0;
    ev->hot_key_share = core__round3(h);
    ev->key_rate_bound = core__round3(bound);
    ev->salting_fanout = fanout;
    if (cfg->skew_knee) {
        int k = knee(h, (int)ev->max_parallelism, s);
        if (k > 0)
            return k;
    }
    return psat > 1e9 ? 1000000000 : (int)psat;
}
