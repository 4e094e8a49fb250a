/*
 * alignment.c - parallelism alignment and alignment plugins (core/README.md, Alignment).
 *
 * A vertex whose clamped target P' differs from its current parallelism p is moved to a
 * parallelism that spreads its N key groups (or N source partitions) evenly, or at least
 * lowers the most any one subtask carries. The built-in modes BALANCED, EVENLY_SPREAD and
 * OFF never block; the deprecated adjust.mode values (legacy) relax downwards and may block
 * a vertex, with a ScalingLimited event. A plugin mode hands the decision to a hook.
 *
 * Pure: reads the config and the context, writes events into the decision.
 */
#include <limits.h>

#include "core/core_int.h"

/* N: source partitions when known, else the key groups. */
static int num_keys(const struct core_align_ctx *a)
{
    return a->partitions > 0 ? a->partitions : a->max_parallelism;
}

static int imin(int x, int y)
{
    return x < y ? x : y;
}

static int imax(int x, int y)
{
    return x > y ? x : y;
}

/* The built-in modes apply to a vertex with known partitions, or any HASH input. */
static bool applicable(const struct core_align_ctx *a)
{
    if (a->partitions > 0)
        return true;
    for (int k = 0; k < a->n_inputs; k++)
        if (a->input_ships[k] == CORE_SHIP_HASH)
            return true;
    return false;
}

/* firstAligned over the mode's region: [P', alignCap] up, [P', min(p, alignCap)] down. */
static int aligned_in_region(const struct core_align_ctx *a, bool accept_reducing)
{
    int n = num_keys(a);
    int cap = imin(n, imin(a->max_parallelism, a->upper));
    int to = a->proposed > a->current ? cap : imin(a->current, cap);
    return core__first_aligned(n, a->proposed, a->proposed, to, accept_reducing);
}

/*
 * first_aligned of core/README.md, Alignment: scans q = from, from + 1, ... to and returns the
 * first q that divides n_keys or, with accept_reducing, lowers n_keys / q below n_keys / proposed.
 * 0 when none does (an empty region included).
 */
int core__first_aligned(int n_keys, int proposed, int from, int to, bool accept_reducing)
{
    if (n_keys <= 0)
        return 0;
    /* A parallelism below 1 cannot run; start the scan at 1 so N % q is defined. */
    for (int q = imax(from, 1); q <= to; q++) {
        if (n_keys % q == 0)
            return q;
        /* Java integer division: the busiest subtask's share strictly drops. */
        if (accept_reducing && proposed > 0 && n_keys / q < n_keys / proposed)
            return q;
        if (q == INT_MAX)
            break;
    }
    return 0;
}

/*
 * The deprecated KeyGroupOrPartitionsAdjustMode (release 1.15): first aligned value in the
 * region, else the relaxed downward fallback, with the direction guard. Emits ScalingLimited
 * whenever the result is not P'.
 */
static int align_legacy(const struct core_align_ctx *a, bool maximize_utilisation,
                        struct core_decision *d)
{
    int aligned = aligned_in_region(a, maximize_utilisation);
    if (aligned > 0)
        return aligned;

    int n = num_keys(a);
    int q = a->proposed;
    for (; q > 0; q--) {
        if (n / q > n / a->proposed) {
            if (n % q != 0)
                q++;
            break;
        }
    }
    q = imax(q, a->lower);

    bool up = a->proposed > a->current;
    int result = q;
    if ((up && q <= a->current) || (!up && q >= a->current))
        result = a->current; /* the fallback would reverse the direction: block the vertex */
    if (result != a->proposed) {
        char *key = core__asprintf(d, "ScalingLimited%s", a->vertex);
        core__event(d, "Warning", "ScalingLimited", key,
                    "Scaling limited for vertex %s: expected parallelism %d, actual parallelism "
                    "%d (key groups or partitions %d, upper bound %d, lower limit %d)",
                    a->vertex, a->proposed, result, n, imin(a->max_parallelism, a->upper),
                    a->lower);
    }
    return result;
}

/*
 * Plugin mode: the hook decides, applicability included. Its answer is clamped to the same
 * limits as the native target, [lower, min(maxParallelism, upper)], and for a source to its
 * partition count (governor's own cap), so a plugin cannot push a vertex outside what the user
 * configured. The upper bound wins when the two cross, as in core/README.md, Scaling step 7.
 */
static int align_plugin(const struct core_config *cfg, const struct core_align_ctx *a,
                        const struct core_hooks *h, unsigned *constraints,
                        struct core_plugin_err *pe)
{
    char err[512] = "";
    int out = a->proposed;
    if (h->align(h->ud, cfg->align_plugin, a, &out, err, sizeof err) != 0) {
        core__plugin_fail(pe, cfg->align_plugin, err[0] ? err : "alignment failed");
        return a->proposed;
    }
    int v = out;
    if (v < a->lower) {
        v = a->lower;
        *constraints |= CORE_C_CLAMPED_MIN_PARALLELISM;
    }
    int ub = imin(a->max_parallelism, a->upper);
    if (v > ub) {
        v = ub;
        *constraints |= CORE_C_CLAMPED_MAX_PARALLELISM;
    }
    if (a->partitions > 0 && v > a->partitions) {
        v = a->partitions;
        *constraints |= CORE_C_CAPPED_AT_PARTITIONS;
    }
    if (v != a->proposed)
        *constraints |= CORE_C_ALIGNED_BY_PLUGIN;
    return v;
}

/*
 * core/README.md, Alignment, for one vertex; see core_int.h. The mode comes from cfg->align_mode; a
 * plugin mode without a plugin name or without an align hook falls back to BALANCED, as the
 * reference does for an undiscovered plugin class. Borrows everything; events go to d's arena.
 */
int core__align(const struct core_config *cfg, const struct core_align_ctx *a,
                const struct core_hooks *h, struct core_decision *d, unsigned *constraints,
                struct core_plugin_err *pe)
{
    enum core_align_mode mode = cfg->align_mode;
    if (mode == CORE_ALIGN_PLUGIN && (!cfg->align_plugin || !h || !h->align))
        mode = CORE_ALIGN_BALANCED;
    if (mode == CORE_ALIGN_PLUGIN)
        return align_plugin(cfg, a, h, constraints, pe);
    if (a->proposed == a->current || mode == CORE_ALIGN_OFF || !applicable(a))
        return a->proposed;

    int v;
    switch (mode) {
    case CORE_ALIGN_EVENLY_SPREAD:
    case CORE_ALIGN_BALANCED: {
        int aligned = aligned_in_region(a, mode == CORE_ALIGN_BALANCED);
        v = aligned > 0 ? aligned : a->proposed;
        break;
    }
    case CORE_ALIGN_LEGACY_EVENLY_SPREAD:
        v = align_legacy(a, false, d);
        break;
    case CORE_ALIGN_LEGACY_MAXIMIZE_UTILISATION:
        v = align_legacy(a, true, d);
        break;
    default:
        v = a->proposed;
        break;
    }
    if (v != a->proposed)
        *constraints |=
            a->partitions > 0 ? CORE_C_ALIGNED_TO_PARTITIONS : CORE_C_ALIGNED_TO_KEY_GROUPS;
    return v;
}
