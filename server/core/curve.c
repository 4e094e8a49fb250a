/*
 * curve.c - governor's measured scalability curve (core/README.md, Curve): what a vertex
 * processes against its parallelism, fitted from the processing rates the history recorded
 * at each parallelism it ran at and the one measured now, with Amdahl's law
 *
 *     X(p) = c p / (1 + sigma (p - 1)),   so   p / X(p) = a + b p,
 *
 * a straight line in p (a = (1 - sigma) / c, b = sigma / c), fitted by least squares. The
 * most any parallelism reaches is 1 / b; the stop is the fewest subtasks reaching `share`
 * of it, p >= share a / ((1 - share) b), and never below the fewest subtasks measured (the
 * curve is not extrapolated downwards). It is read only after a scale-up that did not pay
 * (core__curve_limited): two rates measured at nearby parallelisms under noise draw a bend
 * that is not there. A vertex whose processing rate stays put when
 * subtasks are added (an external system caps it) draws sigma near 1 and stops where it was
 * measured to reach its cap; a hot key of share h draws sigma = h, which is what the skew
 * diagnosis (skew.c) reads off the busy times before any scaling.
 */
#include <stddef.h>

#include "core/core_int.h"

bool core__curve_fit(const struct core_vhistory *hist, int p, double tpr, double share,
                     struct core_curve *out)
{
    out->fitted = false;
    out->a = out->b = out->x_max = NAN;
    out->stop = 0;
    out->n = 0;
    out->least_p = p;
    if (!(share > 0) || !(share < 1))
        return false;
    /* The points: each past scaling's starting parallelism and rate, and now. */
    double sp = 0, sy = 0, spp = 0, spy = 0, best = 0;
    int n = 0, distinct_lo = p, distinct_hi = p;
    int cap = hist ? hist->n + 1 : 1;
    for (int k = 0; k < cap; k++) {
        int q = k < cap - 1 ? hist->e[k].current_parallelism : p;
        double x = k < cap - 1 ? hist->e[k].true_processing_rate : tpr;
        if (q < 1 || !isfinite(x) || !(x > 0))
            continue;
        double y = (double)q / x;
        sp += q;
        sy += y;
        spp += (double)q * q;
        spy += q * y;
        n++;
        if (q < distinct_lo)
            distinct_lo = q;
        if (q > distinct_hi)
            distinct_hi = q;
        if (x > best)
            best = x;
    }
    out->n = n;
    if (n < 2 || distinct_lo == distinct_hi)
        return false;
    double den = n * spp - sp * sp;
    if (!(den > 0))
        return false;
    double b = (n * spy - sp * sy) / den;
    double a = (sy - b * sp) / n;
    if (!(b > 0))
        return false; /* linear or better: no limit in sight */
    if (a < 0)
        a = 0; /* a rate falling with more subtasks: as flat as Amdahl gets */
    out->a = a;
    out->b = b;
    out->x_max = 1.0 / b;
    if (out->x_max < best)
        out->x_max = best;
    double stop = ceil(share * a / ((1.0 - share) * b) - 1e-9);
    if (!(stop >= 1))
        stop = 1;
    if (stop > 1e9)
        stop = 1e9;
    out->stop = (int)stop;
    out->least_p = distinct_lo;
    if (out->stop < distinct_lo)
        out->stop = distinct_lo;
    out->fitted = true;
    return true;
}

bool core__curve_limited(const struct core_config *cfg, const struct core_vhistory *hist, int p,
                         double tpr, struct core_curve *out)
{
    out->fitted = false;
    if (!cfg->scalability_curve || !hist || hist->n == 0)
        return false;
    /* One of the vertex's recorded scale-ups did not pay: the rate measured at its new
     * parallelism (the next scaling's, or now's) rose by less than the effectiveness
     * threshold of what was expected. */
    bool unpaid = false;
    for (int k = 0; k < hist->n && !unpaid; k++) {
        const struct core_hist_entry *e = &hist->e[k];
        if (e->new_parallelism <= e->current_parallelism)
            continue;
        double after = NAN;
        if (k + 1 < hist->n && hist->e[k + 1].current_parallelism == e->new_parallelism)
            after = hist->e[k + 1].true_processing_rate;
        else if (k + 1 == hist->n && p == e->new_parallelism)
            after = tpr;
        double expected = e->expected_processing_rate - e->true_processing_rate;
        double actual = after - e->true_processing_rate;
        if (expected > 0 && actual / expected < cfg->effectiveness_threshold)
            unpaid = true;
    }
    if (!unpaid)
        return false;
    return core__curve_fit(hist, p, tpr, core__knee_share(cfg), out);
}

double core__knee_share(const struct core_config *cfg)
{
    if (cfg->scalability_curve && cfg->scalability_share > 0 && cfg->scalability_share < 1)
        return cfg->scalability_share;
    return 1.0 - cfg->skew_saturation;
}

double core__curve_rate(const struct core_curve *c, int p)
{
    if (!c->fitted || p < 1)
        return NAN;
    return (double)p / (c->a + c->b * (double)p);
}
