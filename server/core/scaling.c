/*
 * scaling.c - the new parallelism of one vertex (core/README.md, Scaling, steps 1-10) and the
 * observed scalability coefficient alpha (same section).
 *
 * Scale factor = target capacity / true processing rate, softened by alpha, clamped by the
 * max factors, applied to p and bounded by the min/max parallelism and the key groups; a
 * source is further capped at its partition count (governor's fix of FLINK-40389). The
 * result is then aligned (alignment.c). Gating (gating.c) is not done here.
 *
 * Arithmetic follows the Java original: IEEE doubles, Java's (int) cast of a double
 * (NaN -> 0, saturating), and the ceiling of alpha on its shortest decimal representation.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/core_int.h"

/*
 * BigDecimal.valueOf(x).setScale(2, CEILING).doubleValue(): the ceiling to two decimals of
 * the shortest decimal string that reads back as x (Java's Double.toString), so 0.83 stays
 * 0.83 although the double is 0.8299999..., and 0.55 stays 0.55 although 0.55 * 100 is
 * 55.00000000000001 in doubles.
 */
static double ceil_2_decimals(double x)
{
    if (!isfinite(x) || x == 0.0)
        return x;
    uint64_t h, tail, q;
    bool neg;
    int split = core__decimal_split(x, 2, &h, &tail, &q, &neg);
    if (split == 0)
        return x; /* already within 2 decimals */
    if (split < 0)
        return neg ? -0.0 : 0.01;
    if (!neg && tail != 0)
        h++; /* ceiling: up for positives, truncation for negatives */
    double r = (double)h / 100.0;
    return neg ? -r : r;
}

/*
 * The observed scalability coefficient alpha of a vertex from its scaling history
 * (borrowed, may be NULL): 1 with fewer than observed-scalability.min-observations entries
 * or any NaN rate; else the least-squares fit clamped to [coefficient-min, 1] and rounded up
 * to two decimals. A fit that comes out NaN (every rate 0: 0 / 0) counts as "no evidence"
 * and gives 1; Java would throw there.
 */
double core__scalability_alpha(const struct core_config *cfg, const struct core_vhistory *hist)
{
    if (!hist || hist->n == 0 || hist->n < cfg->observed_scalability_min_observations)
        return 1.0;

    /* Baseline: newest to oldest; P == 1 wins at once, else the smallest P (newest on ties). */
    double beta = NAN;
    int min_p = INT_MAX;
    double min_r = NAN;
    bool at_one = false;
    for (int k = hist->n - 1; k >= 0; k--) {
        const struct core_hist_entry *e = &hist->e[k];
        if (e->current_parallelism == 1) {
            beta = e->true_processing_rate;
            at_one = true;
            break;
        }
        if (e->current_parallelism < min_p) {
            min_p = e->current_parallelism;
            min_r = e->true_processing_rate;
        }
    }
    if (!at_one)
        beta = min_r / (double)min_p;
    if (isnan(beta))
        return 1.0;

    double sum_pr = 0.0, sum_p2 = 0.0;
    for (int k = 0; k < hist->n; k++) {
        const struct core_hist_entry *e = &hist->e[k];
        if (isnan(e->true_processing_rate))
            return 1.0;
        double pk = (double)e->current_parallelism;
        sum_pr += pk * e->true_processing_rate;
        sum_p2 += pk * pk;
    }
    if (sum_p2 == 0.0)
        return 1.0;
    double alpha = sum_pr / (beta * sum_p2);
    if (isnan(alpha))
        return 1.0;
    /* Java: Math.max(coefficientMin, Math.min(1.0, alpha)); +inf lands on 1. */
    alpha = alpha < 1.0 ? alpha : 1.0;
    if (alpha < cfg->observed_scalability_coefficient_min)
        alpha = cfg->observed_scalability_coefficient_min;
    return ceil_2_decimals(alpha);
}

/*
 * The subtasks the busiest of which carries N / ceil(N / q) of the vertex's load in units of
 * an even share: q for q dividing N, and between divisors the value of the next lower one;
 * N for q >= N (more subtasks than keys read nothing).
 */
static double even_shares(int n, int q)
{
    if (q >= n)
        return (double)n;
    return (double)n / (double)((n + q - 1) / q);
}

/*
 * governor.alignment.busiest-share (core/README.md, Scaling step 7): with the MAX aggregator
 * the true processing rate is what the busiest subtask allows, so a vertex at p delivers
 * even_shares(N, p) subtasks' worth, and factor x that is needed. The fewest subtasks that
 * deliver it: the busiest may carry at most k = floor(N / need) of the N keys, which
 * ceil(N / k) subtasks achieve. N when even N would not be enough.
 */
static int busiest_share_size(int n, int p, double factor)
{
    double need = factor * even_shares(n, p);
    if (!(need > 0))
        return 1;
    if (need > (double)n)
        return n;
    int k = (int)floor((double)n / need + 1e-9);
    if (k < 1)
        k = 1;
    return (n + k - 1) / k;
}

/*
 * Steps 1-10 of core/README.md, Scaling, for sample vertex i; see core_int.h. ev is vertex i's own
 * evaluated figures (borrowed; it also becomes the alignment context's ev). Never fails: a NaN rate
 * or target yields computed = false and target = current.
 */
void core__scale_target(const struct core_config *cfg, const struct core_sample *sm,
                        const struct core_topo *t, int i, const struct core_evaluated *ev,
                        const struct core_vhistory *hist, int64_t restart_ms,
                        const struct core_hooks *h, struct core_decision *d,
                        struct core_plugin_err *pe, struct core_scale_result *out)
{
    const struct core_vertex_in *v = &sm->vertices[i];
    int p = v->parallelism;
    out->computed = false;
    out->raw = p;
    out->target = p;
    out->constraints = 0;
    out->expected_rate = NAN;
    out->factor = NAN;

    /* Steps 1-3. */
    double tpr = ev->true_processing_rate;
    if (isnan(tpr))
        return;
    double target = core__capacity_cfg(cfg, ev, cfg->util_target, true, restart_ms);
    if (isnan(target))
        return;
    double factor = target / tpr;

    /* Step 4. */
    if (cfg->observed_scalability_enabled)
        factor /= core__scalability_alpha(cfg, hist);

    /* Step 5: a NaN factor (0 / 0) skips both comparisons, as in Java. */
    unsigned c = 0;
    /* governor.scale-down.in-one-step: a scale-down goes where it is sized in one restart. */
    double min_f = cfg->scale_down_one_step ? 0.0 : 1.0 - cfg->scale_down_max_factor;
    double max_f = 1.0 + cfg->scale_up_max_factor;
    if (factor < min_f) {
        factor = min_f;
        c |= CORE_C_CLAMPED_MAX_FACTOR;
    } else if (factor > max_f) {
        factor = max_f;
        c |= CORE_C_CLAMPED_MAX_FACTOR;
    }

    /* Step 6: a current parallelism outside the configured range widens the range. */
    int lower = p < cfg->vertex_min_parallelism ? p : cfg->vertex_min_parallelism;
    int upper = p > cfg->vertex_max_parallelism ? p : cfg->vertex_max_parallelism;

    /* Step 7, then governor's own cap: a source never gets more subtasks than partitions. The
     * bounds are applied one after the other so each one that moved the value is reported. */
    /* Java's Math.min keeps a NaN (0 / 0 factor), and (int) NaN is 0 (core/README.md, Scaling,
     * edge cases). */
    double scaled = ceil(factor * (double)p);
    int raw = core__java_d2i(isnan(scaled) || scaled < (double)INT_MAX ? scaled : (double)INT_MAX);
    out->computed = true;
    out->raw = raw;
    out->factor = factor;
    int np = raw;
    /* governor.alignment.busiest-share: size by the busiest subtask's share of the keys. */
    int keys = t->is_source[i] ? v->partitions : t->hash_input[i] ? v->max_parallelism : 0;
    bool by_share = cfg->align_busiest_share && cfg->align_mode == CORE_ALIGN_BALANCED &&
                    cfg->busy_aggregator == CORE_AGG_MAX && keys > 0 && !isnan(factor);
    if (by_share) {
        np = busiest_share_size(keys, p, factor);
        if (np != raw)
            c |= t->is_source[i] ? CORE_C_ALIGNED_TO_PARTITIONS : CORE_C_ALIGNED_TO_KEY_GROUPS;
    }
    int sized = np;
    if (np < lower) {
        np = lower;
        c |= CORE_C_CLAMPED_MIN_PARALLELISM;
    }
    int ub = v->max_parallelism < upper ? v->max_parallelism : upper;
    if (np > ub) {
        np = ub;
        c |= CORE_C_CLAMPED_MAX_PARALLELISM;
    }
    int partitions = t->is_source[i] && v->partitions > 0 ? v->partitions : 0;
    if (partitions > 0 && np > partitions) {
        np = partitions;
        c |= CORE_C_CAPPED_AT_PARTITIONS;
    }

    /* Step 8; a size by the busiest share is aligned already unless a limit moved it. */
    if (np != p && !(by_share && np == sized)) {
        struct core_align_ctx a = {
            .vertex = v->id,
            .current = p,
            .proposed = np,
            /* With the partition cap the lower limit cannot exceed it either, or the legacy
             * fallback's max(q, lower) would push a source past its partitions again. */
            .lower = partitions > 0 && lower > partitions ? partitions : lower,
            .upper = upper,
            .max_parallelism = v->max_parallelism,
            .partitions = partitions,
            .input_ships = t->in_ship + t->in_start[i],
            .n_inputs = t->in_start[i + 1] - t->in_start[i],
            .ev = ev,
        };
        np = core__align(cfg, &a, h, d, &c, pe);
    }
    out->constraints = c;

    /* Steps 9-10: the expected rate is an evaluated figure, rounded like all of them. Only as
     * many subtasks of a source as it has partitions read anything, before and after. */
    if (np == p)
        return;
    out->target = np;
    int busy_p = partitions > 0 && partitions < p ? partitions : p;
    int busy_np = partitions > 0 && partitions < np ? partitions : np;
    out->expected_rate = core__round3(tpr / (double)busy_p * (double)busy_np);
}

double core__hold_time(const struct core_config *cfg, double restart_s, double tdr, double growth)
{
    double h = restart_s + (double)(cfg->stabilization_ms + cfg->metrics_window_ms) / 1000.0;
    if (cfg->restart_cost_w > 0 && tdr > 0 && growth > 0) {
        double u = cfg->util_target > 0 && cfg->util_target < 1 ? cfg->util_target : 0.7;
        double eoq = sqrt(2.0 * cfg->restart_cost_w * restart_s / ((1.0 - u) * growth / tdr));
        if (eoq > h)
            h = eoq;
    }
    double most = (double)cfg->trend_horizon_ms / 1000.0;
    return h < most ? h : most;
}
