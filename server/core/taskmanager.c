/*
 * taskmanager.c - what one TaskManager is made of, shared by memory tuning (memory.c) and
 * the quota check (resources.c), which both build on it and on nothing of each other:
 *
 *  - core__tm_derive: Flink's TaskExecutor memory model. From the user's
 *    taskmanager.memory.* keys it derives every pool the way Flink's process-memory utilities
 *    do: fractions are Java floats widened to double (0.4f = 0.4000000059604645), and a size
 *    times a fraction is Flink's MemorySize.multiply, i.e. the exact product of the byte count
 *    and the fraction's shortest decimal form, truncated.
 *  - core__slots_after: the task slots a job needs after scaling.
 *
 * Both are described in core/README.md, TaskManager.
 *
 * Pure int64 byte arithmetic; no I/O. Calls util.c (core__shortest_decimal, core__java_d2i).
 */
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "core/core_int.h"

__extension__ typedef unsigned __int128 u128;

/* ------------------------------------------------------------ arithmetic -- */

/* A fraction option is a Java float: the double Flink computes with is the float widened. */
static double java_float(double f)
{
    return (double)(float)f;
}

/* MemorySize.multiply: bytes x the decimal of mult, exact, truncated; saturates. */
static int64_t mem_multiply(int64_t bytes, double mult)
{
    if (bytes <= 0 || !(mult > 0))
        return 0;
    if (isinf(mult))
        return INT64_MAX;
    uint64_t m;
    int k;
    bool neg;
    core__shortest_decimal(mult, &m, &k, &neg);
    const u128 cap = (u128)INT64_MAX;
    u128 v = (u128)(uint64_t)bytes * m;
    for (; k > 0; k--) {
        if (v > cap)
            return INT64_MAX;
        v *= 10;
    }
    for (; k < 0 && v; k++)
        v /= 10;
    return v > cap ? INT64_MAX : (int64_t)v;
}

static bool add_ok(int64_t *acc, int64_t v)
{
    return !__builtin_add_overflow(*acc, v, acc);
}

/* ----------------------------------------------------- the memory model -- */

/* Flink's RangeFraction: a pool derived from a fraction and capped to [min, max]. */
struct range {
    int64_t min, max;
    double fraction;
};

static bool range_bad(const struct range *r)
{
    return r->min < 0 || r->max < r->min || !(r->fraction >= 0 && r->fraction <= 1);
}

static int64_t cap_range(int64_t v, const struct range *r)
{
    if (v > r->max)
        return r->max;
    if (v < r->min)
        return r->min;
    return v;
}

/* deriveWithFraction: fraction x base, capped. */
static int64_t with_fraction(int64_t base, const struct range *r)
{
    return cap_range(mem_multiply(base, r->fraction), r);
}

/* deriveWithInverseFraction: the pool is `fraction` of (base + pool), capped. fraction < 1. */
static int64_t with_inverse_fraction(int64_t base, const struct range *r)
{
    return cap_range(mem_multiply(base, r->fraction / (1 - r->fraction)), r);
}

static int fail(char *err, size_t err_len, const char *msg)
{
    if (err && err_len)
        snprintf(err, err_len, "%s", msg);
    return -1;
}

/*
 * Total Flink memory known (p->flink): managed from managed.size or its fraction, then either
 * the network is what task.heap leaves (checked against its range) or the network comes from
 * its fraction and the task heap is what is left.
 */
static int from_total_flink(const struct core_tm_memory *m, const struct range *net,
                            const struct range *man, struct core_tm_pools *p, char *err,
                            size_t err_len)
{
    p->managed = m->managed_size >= 0 ? m->managed_size : with_fraction(p->flink, man);
    int64_t rest = p->framework_heap;
    if (m->task_heap >= 0) {
        p->task_heap = m->task_heap;
        if (!add_ok(&rest, p->framework_offheap) || !add_ok(&rest, p->task_heap) ||
            !add_ok(&rest, p->task_offheap) || !add_ok(&rest, p->managed) || rest > p->flink)
            return fail(err, err_len,
                        "framework, task and managed memory exceed the total Flink memory");
        p->network = p->flink - rest;
        if (p->network < net->min || p->network > net->max)
            return fail(err, err_len,
                        "derived network memory is outside taskmanager.memory.network.min/max");
        return 0;
    }
    p->network = with_fraction(p->flink, net);
    if (!add_ok(&rest, p->framework_offheap) || !add_ok(&rest, p->task_offheap) ||
        !add_ok(&rest, p->managed) || !add_ok(&rest, p->network) || rest > p->flink)
        return fail(err, err_len,
                    "framework, managed and network memory exceed the total Flink memory");
    p->task_heap = p->flink - rest;
    return 0;
}

/* Total Flink memory known: JVM overhead is what process.size leaves (checked against its
 * range), or, without process.size, a fraction of the whole process. */
static int metaspace_and_overhead(const struct core_tm_memory *m, const struct range *ovh,
                                  struct core_tm_pools *p, char *err, size_t err_len)
{
    int64_t fm = p->flink;
    if (!add_ok(&fm, p->metaspace))
        return fail(err, err_len, "memory sizes overflow");
    if (m->process_size >= 0) {
        p->process = m->process_size;
        p->overhead = m->process_size - fm;
        if (p->overhead < ovh->min || p->overhead > ovh->max)
            return fail(err, err_len,
                        "derived JVM overhead is outside taskmanager.memory.jvm-overhead.min/max");
        return 0;
    }
    if (!(ovh->fraction < 1))
        return fail(err, err_len, "taskmanager.memory.jvm-overhead.fraction must be below 1");
    p->overhead = with_inverse_fraction(fm, ovh);
    p->process = fm;
    if (!add_ok(&p->process, p->overhead))
        return fail(err, err_len, "memory sizes overflow");
    return 0;
}

/*
 * Which keys drive the derivation follows Flink's precedence: task.heap + managed.size (every
 * pool explicit but the network), else flink.size, else process.size. *out is written only
 * on success; err gets a message naming the offending keys otherwise.
 */
int core__tm_derive(const struct core_tm_memory *m, struct core_tm_pools *out, char *err,
                    size_t err_len)
{
    struct core_tm_pools p;
    memset(&p, 0, sizeof p);
    struct range net = {m->network_min, m->network_max, java_float(m->network_fraction)};
    struct range ovh = {m->overhead_min, m->overhead_max, java_float(m->overhead_fraction)};
    struct range man = {0, INT64_MAX, java_float(m->managed_fraction)};

    if (m->framework_heap < 0 || m->framework_offheap < 0 || m->task_offheap < 0 ||
        m->metaspace < 0)
        return fail(err, err_len,
                    "framework heap/off-heap, task off-heap and metaspace sizes must be >= 0");
    if (range_bad(&net))
        return fail(err, err_len, "inconsistent taskmanager.memory.network.min/max/fraction");
    if (range_bad(&ovh))
        return fail(err, err_len, "inconsistent taskmanager.memory.jvm-overhead.min/max/fraction");
    if (range_bad(&man))
        return fail(err, err_len, "taskmanager.memory.managed.fraction must be in [0, 1]");
    p.framework_heap = m->framework_heap;
    p.framework_offheap = m->framework_offheap;
    p.task_offheap = m->task_offheap;
    p.metaspace = m->metaspace;

    if (m->task_heap >= 0 && m->managed_size >= 0) {
        /* Every Flink pool but the network is explicit. */
        p.task_heap = m->task_heap;
        p.managed = m->managed_size;
        int64_t rest = p.framework_heap;
        if (!add_ok(&rest, p.framework_offheap) || !add_ok(&rest, p.task_heap) ||
            !add_ok(&rest, p.task_offheap) || !add_ok(&rest, p.managed))
            return fail(err, err_len, "memory sizes overflow");
        if (m->flink_size >= 0) {
            if (rest > m->flink_size)
                return fail(err, err_len,
                            "framework, task and managed memory exceed "
                            "taskmanager.memory.flink.size");
            p.network = m->flink_size - rest;
            if (p.network < net.min || p.network > net.max)
                return fail(err, err_len,
                            "derived network memory is outside "
                            "taskmanager.memory.network.min/max");
        } else {
            if (!(net.fraction < 1))
                return fail(err, err_len, "taskmanager.memory.network.fraction must be below 1");
            p.network = with_inverse_fraction(rest, &net);
        }
        p.flink = rest;
        if (!add_ok(&p.flink, p.network))
            return fail(err, err_len, "memory sizes overflow");
        if (metaspace_and_overhead(m, &ovh, &p, err, err_len) < 0)
            return -1;
    } else if (m->flink_size >= 0) {
        p.flink = m->flink_size;
        if (from_total_flink(m, &net, &man, &p, err, err_len) < 0 ||
            metaspace_and_overhead(m, &ovh, &p, err, err_len) < 0)
            return -1;
    } else if (m->process_size >= 0) {
        p.process = m->process_size;
        p.overhead = with_fraction(p.process, &ovh);
        if (p.metaspace > p.process - p.overhead)
            return fail(err, err_len,
                        "JVM metaspace and overhead exceed taskmanager.memory.process.size");
        p.flink = p.process - p.metaspace - p.overhead;
        if (from_total_flink(m, &net, &man, &p, err, err_len) < 0)
            return -1;
    } else {
        return fail(err, err_len,
                    "one of taskmanager.memory.process.size, taskmanager.memory.flink.size, or "
                    "taskmanager.memory.task.heap.size with taskmanager.memory.managed.size "
                    "must be set");
    }
    *out = p;
    return 0;
}

/* ------------------------------------------------------------------ slots -- */

/*
 * Slot sharing is assumed when the largest current parallelism equals the slots in use
 * (compared as Java does, after an (int) cast of NUM_TASK_SLOTS_USED: NaN counts as 0, so an
 * unknown slot count never matches and no sharing is assumed).
 */
int core__slots_after(const struct core_sample *sm, const int *new_p, double slots_used)
{
    int max_cur = 0, max_new = 0;
    int64_t sum = 0;
    for (int i = 0; i < sm->n_vertices; i++) {
        if (sm->vertices[i].parallelism > max_cur)
            max_cur = sm->vertices[i].parallelism;
        if (new_p[i] > max_new)
            max_new = new_p[i];
        sum += new_p[i];
    }
    if (max_cur == core__java_d2i(slots_used))
        return max_new;
    return sum > INT_MAX ? INT_MAX : (int)sum;
}
