/*
 * memory.c - memory tuning (core/README.md, Memory tuning). core__memory_tune re-distributes
 * the TM process memory over network, metaspace, heap and managed memory from the observed
 * usage (steps 1-9 there), emits the "Configuration recommendation" event and, when tuning is
 * enabled, fills the decision's config changes and removals.
 *
 * Pure int64 byte arithmetic; no I/O. Calls util.c (arena, events) and taskmanager.c (the
 * memory model core__tm_derive, and core__slots_after).
 */
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/core_int.h"

#define K_PROCESS           "taskmanager.memory.process.size"
#define K_FLINK             "taskmanager.memory.flink.size"
#define K_TASK_HEAP         "taskmanager.memory.task.heap.size"
#define K_MANAGED           "taskmanager.memory.managed.size"
#define K_MANAGED_OLD       "taskmanager.memory.size" /* managed.size's deprecated fallback key */
#define K_FRAMEWORK_HEAP    "taskmanager.memory.framework.heap.size"
#define K_MANAGED_FRACTION  "taskmanager.memory.managed.fraction"
#define K_NETWORK_MIN       "taskmanager.memory.network.min"
#define K_NETWORK_MAX       "taskmanager.memory.network.max"
#define K_OVERHEAD_FRACTION "taskmanager.memory.jvm-overhead.fraction"
#define K_METASPACE         "taskmanager.memory.jvm-metaspace.size"

/* ------------------------------------------------------------ arithmetic -- */

/* Java's (long) cast of a double: NaN -> 0, saturating at the int64 bounds. */
static int64_t java_d2l(double x)
{
    if (isnan(x))
        return 0;
    if (x >= 9.2233720368547758e18)
        return INT64_MAX;
    if (x <= -9.2233720368547758e18)
        return INT64_MIN;
    return (int64_t)x;
}

/* BigDecimal.valueOf(x).setScale(3, CEILING) as a count of thousandths; x >= 0 finite. */
static int64_t ceil3_thousandths(double x)
{
    if (!(x > 0) || isinf(x))
        return 0;
    uint64_t m;
    int k;
    bool neg;
    core__shortest_decimal(x, &m, &k, &neg);
    if (k >= -3) {
        for (int i = 0; i < k + 3; i++) {
            if (m > UINT64_MAX / 20)
                return INT64_MAX;
            m *= 10;
        }
        return m > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)m;
    }
    int drop = -k - 3; /* decimal digits below the thousandths */
    if (drop > 19)
        return m ? 1 : 0;
    uint64_t q = 1;
    for (int i = 0; i < drop; i++)
        q *= 10;
    return (int64_t)(m / q + (m % q != 0));
}

/* Java's Float.toString of a thousandths count: 0.401, 0.4, 1.0, 0.0. */
static void fraction_str(int64_t th, char *buf, size_t len)
{
    char frac[8];
    snprintf(frac, sizeof frac, "%03d", (int)(th % 1000));
    size_t n = strlen(frac);
    while (n > 1 && frac[n - 1] == '0')
        frac[--n] = '\0';
    snprintf(buf, len, "%" PRId64 ".%s", th / 1000, frac);
}

/* ----------------------------------------------------------------- tuning -- */

/* take(x) of core/README.md, Memory tuning: grants min(x, remaining) and subtracts it. */
struct budget {
    int64_t initial, remaining;
};

static int64_t budget_take(struct budget *b, int64_t amount)
{
    if (amount < 0)
        amount = 0;
    int64_t got = amount < b->remaining ? amount : b->remaining;
    b->remaining -= got;
    return got;
}

/* Step 3: network buffers a gate of a vertex at p_this needs for an edge to p_conn. */
static int64_t segments(int p_this, int p_conn, enum core_ship ship, int per_channel, int floating)
{
    if (p_this < 1)
        p_this = 1;
    if (p_conn < 0)
        p_conn = 0;
    if (ship == CORE_SHIP_FORWARD && p_this == p_conn)
        return (int64_t)per_channel + floating;
    if (ship == CORE_SHIP_FORWARD || ship == CORE_SHIP_RESCALE) {
        int64_t channels = ((int64_t)p_conn + p_this - 1) / p_this;
        return channels * per_channel + floating;
    }
    return (int64_t)p_conn * per_channel + floating;
}

/* Step 3: bytes of network memory for the new parallelisms, before budgeting. */
static int64_t network_bytes(const struct core_config *cfg, const struct core_topo *t,
                             const int *new_p)
{
    const struct core_tm_memory *m = &cfg->tm;
    int64_t segs = 0;
    for (int v = 0; v < t->n; v++) {
        for (int e = t->in_start[v]; e < t->in_start[v + 1]; e++) {
            int u = t->in_src[e];
            /* v's input gate from u, and u's output gate to v */
            segs += segments(new_p[v], new_p[u], t->in_ship[e], m->buffers_per_channel,
                             m->floating_buffers);
            segs += segments(new_p[u], new_p[v], t->in_ship[e], m->buffers_per_channel,
                             m->floating_buffers);
        }
    }
    int64_t bytes;
    int64_t slots = cfg->slots_per_tm > 0 ? cfg->slots_per_tm : 1;
    if (__builtin_mul_overflow(segs, m->segment_size > 0 ? m->segment_size : 0, &bytes) ||
        __builtin_mul_overflow(bytes, slots, &bytes))
        return INT64_MAX;
    return bytes;
}

/* A global usage average as Java's MemorySize of (long) avg; negatives count as 0. */
static int64_t usage(double avg)
{
    int64_t u = java_d2l(avg);
    return u < 0 ? 0 : u;
}

/* Step 7: max(1, TMs before / TMs after), TMs by ceil division. */
static double compensation_factor(const struct core_config *cfg, const struct core_sample *sm,
                                  const int *new_p, double slots_used)
{
    int64_t per = cfg->slots_per_tm > 0 ? cfg->slots_per_tm : 1;
    int64_t used = core__java_d2i(slots_used);
    int64_t after = core__slots_after(sm, new_p, slots_used);
    int64_t tms_before = used > 0 ? (used + per - 1) / per : 0;
    int64_t tms_after = after > 0 ? (after + per - 1) / per : 0;
    /* Unknown slot usage, or nothing left to run: no compensation (Java would divide by 0). */
    if (tms_before <= 0 || tms_after <= 0)
        return 1.0;
    double f = (double)tms_before / (double)tms_after;
    return f > 1.0 ? f : 1.0;
}

static void add_change(struct core_kv *kv, int *n, struct core_decision *d, const char *key,
                       const char *value)
{
    kv[*n].key = key;
    kv[*n].value = core__astrdup(d, value);
    (*n)++;
}

/*
 * The budget is the process size of the user's own memory model (step 1): in Flink that
 * is the TM container size, which the operator sets as process.size; here a model given by
 * flink.size or explicit pools is sized the way Flink would size it. new_p is indexed like
 * the sample (summary value, else current). Everything stored in d lives in its arena; keys
 * and the removal list are static strings.
 */
void core__memory_tune(const struct core_config *cfg, const struct core_sample *sm,
                       const struct core_topo *t, const int *new_p,
                       const struct core_global_eval *g, struct core_decision *d)
{
    struct core_tm_pools spec;
    char err[256];
    if (core__tm_derive(&cfg->tm, &spec, err, sizeof err) < 0 || spec.process <= 0)
        return;

    /* Steps 1-2: the whole process is the budget; the pools tuning keeps are reserved. */
    struct budget b = {spec.process, spec.process};
    budget_take(&b, spec.framework_offheap);
    budget_take(&b, spec.task_offheap);
    budget_take(&b, spec.overhead);

    /* Steps 3-6, in this order: when usage exceeds the budget, the later pools go short. */
    double over = 1.0 + cfg->mem_tuning_overhead;
    int64_t network = budget_take(&b, network_bytes(cfg, t, new_p));
    int64_t metaspace = budget_take(&b, java_d2l((double)usage(g->metaspace_used_avg) * over));
    int64_t heap = budget_take(&b, java_d2l((double)usage(g->heap_used_avg) * over));
    int64_t managed;
    if (usage(g->managed_used_avg) <= 0)
        managed = 0;
    else if (cfg->mem_maximize_managed)
        managed = budget_take(&b, INT64_MAX);
    else
        managed = budget_take(&b, spec.managed);

    /* Step 7: fewer TMs after a scale-down get proportionally more heap each. */
    if (cfg->mem_scale_down_compensation) {
        double f = compensation_factor(cfg, sm, new_p, g->slots_used);
        heap += budget_take(&b, java_d2l(f * (double)heap) - heap);
    }

    /* Step 8. */
    int64_t total = b.initial - b.remaining;
    if (total <= 0)
        return;

    /* Step 9. The new Flink memory is the model's with each tuned pool's difference. */
    int64_t new_flink = spec.flink + (heap - (spec.framework_heap + spec.task_heap)) +
                        (managed - spec.managed) + (network - spec.network);
    char managed_frac[32], overhead_frac[32];
    fraction_str(new_flink > 0 ? ceil3_thousandths((double)managed / (double)new_flink) : 0,
                 managed_frac, sizeof managed_frac);
    fraction_str(ceil3_thousandths((double)spec.overhead / (double)total), overhead_frac,
                 sizeof overhead_frac);

    enum { N_CHANGES = 7, N_REMOVALS = 4 };
    struct core_kv *kv = core__alloc(d, N_CHANGES * sizeof *kv);
    int n = 0;
    char v[64];
    snprintf(v, sizeof v, "%" PRId64 " bytes", total);
    add_change(kv, &n, d, K_PROCESS, v);
    add_change(kv, &n, d, K_FRAMEWORK_HEAP, "0 bytes");
    add_change(kv, &n, d, K_MANAGED_FRACTION, managed_frac);
    snprintf(v, sizeof v, "%" PRId64 " bytes", network);
    add_change(kv, &n, d, K_NETWORK_MIN, v);
    add_change(kv, &n, d, K_NETWORK_MAX, v);
    add_change(kv, &n, d, K_OVERHEAD_FRACTION, overhead_frac);
    snprintf(v, sizeof v, "%" PRId64 " bytes", metaspace);
    add_change(kv, &n, d, K_METASPACE, v);
    static const char *const removals[N_REMOVALS] = {K_FLINK, K_TASK_HEAP, K_MANAGED,
                                                     K_MANAGED_OLD};

    char msg[2048];
    size_t len = 0;
    len += (size_t)snprintf(msg + len, sizeof msg - len,
                            "Memory tuning recommends the following configuration (automatic "
                            "tuning is %s):\n",
                            cfg->mem_tuning_enabled ? "enabled" : "disabled");
    for (int i = 0; i < n && len < sizeof msg; i++)
        len += (size_t)snprintf(msg + len, sizeof msg - len, "%s: %s\n", kv[i].key, kv[i].value);
    for (int i = 0; i < N_REMOVALS && len < sizeof msg; i++)
        len += (size_t)snprintf(msg + len, sizeof msg - len, "%s%s%s",
                                i ? ", " : "Remove the following config entries if present: [",
                                removals[i], i == N_REMOVALS - 1 ? "]" : "");
    core__event(d, "Normal", "Configuration recommendation", "MemoryTuning", "%s", msg);

    if (!cfg->mem_tuning_enabled)
        return;
    d->config_changes = kv;
    d->n_config_changes = n;
    d->cap_changes = n;
    d->config_removals = core__alloc(d, N_REMOVALS * sizeof *d->config_removals);
    for (int i = 0; i < N_REMOVALS; i++)
        d->config_removals[i] = removals[i];
    d->n_config_removals = N_REMOVALS;
}
