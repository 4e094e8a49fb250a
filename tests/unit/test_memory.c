/*
 * Unit tests for core/memory.c: Flink's TaskExecutor memory model (core__tm_derive) and
 * the memory tuning of core/README.md (core__memory_tune).
 *
 * Every expected byte count is derived by hand from Flink's rules, written next to it:
 *  - a fraction is a Java float widened: 0.4f = 0.4000000059604645, 0.1f = 0.10000000149011612;
 *    an "inverse" fraction f / (1 - f) for 0.1f is 0.11111111295076065;
 *  - size x fraction is exact decimal multiplication, truncated (MemorySize.multiply);
 *  - tuning grants each pool min(request, remaining) in the order of core/README.md's Memory tuning
 * steps 2-7.
 */
#include "test.h"

#include "core/core_int.h"
#include "options/options.h"

#define MIB (1024LL * 1024LL)
#define GIB (1024LL * MIB)

/* A chain v0 -> v1 -> ... of n vertices, edge i (v_i -> v_i+1) with ships[i]. Arrays are
 * the caller's, sized n + 1 (in_start) and n - 1 (in_src, in_ship). */
static void chain(struct core_topo *t, int n, const enum core_ship *ships, int *in_start,
                  int *in_src, enum core_ship *in_ship)
{
    memset(t, 0, sizeof *t);
    t->n = n;
    in_start[0] = 0;
    for (int v = 1; v <= n; v++)
        in_start[v] = v - 1; /* v0 has no input; v (>= 1) has edge v - 1 */
    for (int e = 0; e < n - 1; e++) {
        in_src[e] = e;
        in_ship[e] = ships[e];
    }
    t->in_start = in_start;
    t->in_src = in_src;
    t->in_ship = in_ship;
}

static const char *change(const struct core_decision *d, const char *key)
{
    for (int i = 0; i < d->n_config_changes; i++)
        if (strcmp(d->config_changes[i].key, key) == 0)
            return d->config_changes[i].value;
    return NULL;
}

/* ------------------------------------------------------------- the model -- */

static void model_30gib_process_size(void)
{
    /* The spec's reproduction note. */
    struct core_config c;
    opt_config_defaults(&c);
    c.tm.process_size = 30 * GIB; /* 32 212 254 720 */
    struct core_tm_pools p;
    char err[256];
    ASSERT_EQ(core__tm_derive(&c.tm, &p, err, sizeof err), 0);
    ASSERT_EQ(p.process, 32212254720LL);
    /* overhead = 32212254720 x 0.10000000149011612 = 3221225520.0.. > max 1 GiB -> 1 GiB */
    ASSERT_EQ(p.overhead, 1073741824LL);
    ASSERT_EQ(p.metaspace, 268435456LL);
    /* flink = 32212254720 - 268435456 - 1073741824 */
    ASSERT_EQ(p.flink, 30870077440LL);
    /* managed = 30870077440 x 0.4000000059604645 = 12348030976 + 184.0000007 -> truncated */
    ASSERT_EQ(p.managed, 12348031160LL);
    /* network = 30870077440 x 0.10000000149011612 = 3087007790.0.. > 1 GiB -> 1 GiB */
    ASSERT_EQ(p.network, 1073741824LL);
    ASSERT_EQ(p.framework_heap, 134217728LL);
    ASSERT_EQ(p.framework_offheap, 134217728LL);
    ASSERT_EQ(p.task_offheap, 0);
    /* task heap = 30870077440 - 2 x 134217728 - 0 - 12348031160 - 1073741824 */
    ASSERT_EQ(p.task_heap, 17179869000LL);
}

static void model_flink_size_only(void)
{
    struct core_config c;
    opt_config_defaults(&c);
    c.tm.flink_size = 1280 * MIB; /* 1 342 177 280 */
    struct core_tm_pools p;
    char err[256];
    ASSERT_EQ(core__tm_derive(&c.tm, &p, err, sizeof err), 0);
    ASSERT_EQ(p.flink, 1342177280LL);
    /* managed = 1342177280 x 0.4000000059604645 = 536870912 + 8.0000000 -> 536870920 */
    ASSERT_EQ(p.managed, 536870920LL);
    /* network = 1342177280 x 0.10000000149011612 = 134217730.0.. in [64 MiB, 1 GiB] */
    ASSERT_EQ(p.network, 134217730LL);
    /* task heap = 1342177280 - 268435456 - 536870920 - 134217730 */
    ASSERT_EQ(p.task_heap, 402653174LL);
    /* overhead is 0.1 of the whole process: (flink + metaspace) x 0.11111111295076065
     * = 1610612736 x 0.111.. = 178956973.. < min 192 MiB -> 201326592 */
    ASSERT_EQ(p.overhead, 201326592LL);
    /* process = 1342177280 + 268435456 + 201326592 */
    ASSERT_EQ(p.process, 1811939328LL);
}

static void model_task_heap_and_managed(void)
{
    struct core_config c;
    opt_config_defaults(&c);
    c.tm.task_heap = 512 * MIB;
    c.tm.managed_size = 512 * MIB;
    struct core_tm_pools p;
    char err[256];
    ASSERT_EQ(core__tm_derive(&c.tm, &p, err, sizeof err), 0);
    /* without network: 128 + 128 + 512 + 0 + 512 MiB = 1342177280; network is 0.1 of the
     * Flink memory: 1342177280 x 0.11111111295076065 = 149130811.358 -> 149130811 */
    ASSERT_EQ(p.network, 149130811LL);
    ASSERT_EQ(p.flink, 1491308091LL);
    ASSERT_EQ(p.task_heap, 536870912LL);
    ASSERT_EQ(p.managed, 536870912LL);
    /* overhead = (1491308091 + 268435456) x 0.111.. = 195527061.. < 192 MiB -> 201326592 */
    ASSERT_EQ(p.overhead, 201326592LL);
    ASSERT_EQ(p.process, 1961070139LL);

    /* With process.size too, the overhead is what is left, inside [192 MiB, 1 GiB]:
     * 2147483648 - 1491308091 - 268435456 = 387740101. */
    c.tm.process_size = 2 * GIB;
    ASSERT_EQ(core__tm_derive(&c.tm, &p, err, sizeof err), 0);
    ASSERT_EQ(p.overhead, 387740101LL);
    ASSERT_EQ(p.process, 2147483648LL);
}

static void model_invalid(void)
{
    struct core_config c;
    struct core_tm_pools p;
    char err[256];

    opt_config_defaults(&c); /* nothing set */
    ASSERT_EQ(core__tm_derive(&c.tm, &p, err, sizeof err), -1);
    ASSERT_CONTAINS(err, "taskmanager.memory.process.size");

    /* 300 MiB: overhead 0.1 x 300 MiB < 192 MiB -> 192 MiB; 256 + 192 > 300 */
    opt_config_defaults(&c);
    c.tm.process_size = 300 * MIB;
    ASSERT_EQ(core__tm_derive(&c.tm, &p, err, sizeof err), -1);
    ASSERT_CONTAINS(err, "exceed");

    /* task heap larger than the Flink memory */
    opt_config_defaults(&c);
    c.tm.flink_size = 1 * GIB;
    c.tm.task_heap = 2 * GIB;
    ASSERT_EQ(core__tm_derive(&c.tm, &p, err, sizeof err), -1);

    /* process.size leaves an overhead below its minimum: 1 GiB - 1491308091 - 256 MiB < 0 */
    opt_config_defaults(&c);
    c.tm.task_heap = 512 * MIB;
    c.tm.managed_size = 512 * MIB;
    c.tm.process_size = 1 * GIB;
    ASSERT_EQ(core__tm_derive(&c.tm, &p, err, sizeof err), -1);

    /* min above max */
    opt_config_defaults(&c);
    c.tm.process_size = 4 * GIB;
    c.tm.network_min = 2 * GIB;
    ASSERT_EQ(core__tm_derive(&c.tm, &p, err, sizeof err), -1);

    /* NaN fraction */
    opt_config_defaults(&c);
    c.tm.process_size = 4 * GIB;
    c.tm.managed_fraction = NAN;
    ASSERT_EQ(core__tm_derive(&c.tm, &p, err, sizeof err), -1);
}

/* ---------------------------------------------------------------- tuning -- */

/*
 * The 4 GiB TM used by the tuning tests (defaults otherwise):
 *   overhead = 4294967296 x 0.10000000149011612 = 429496736.000000003 -> 429496736
 *   flink    = 4294967296 - 268435456 - 429496736 = 3597035104
 *   managed  = 3597035104 x 0.4000000059604645 = 1438814063.04 -> 1438814063
 *   network  = 3597035104 x 0.10000000149011612 = 359703515.76 -> 359703515
 *   task heap = 3597035104 - 268435456 - 1438814063 - 359703515 = 1530082070
 * Budget after step 2: 4294967296 - 134217728 (framework off-heap) - 0 - 429496736
 *   = 3731252832.
 */
static void cfg_4gib(struct core_config *c)
{
    opt_config_defaults(c);
    c->tm.process_size = 4 * GIB;
    c->mem_tuning_enabled = true;
}

static void sample_with(struct core_sample *sm, struct core_vertex_in *v, int n, const int *p)
{
    memset(sm, 0, sizeof *sm);
    memset(v, 0, (size_t)n * sizeof *v);
    static const char *const ids[] = {"v0", "v1", "v2", "v3", "v4", "v5"};
    for (int i = 0; i < n; i++) {
        v[i].id = ids[i];
        v[i].parallelism = p[i];
        v[i].max_parallelism = 128;
    }
    sm->vertices = v;
    sm->n_vertices = n;
}

static void tune_topology_and_usage(void)
{
    struct core_config c;
    cfg_4gib(&c);
    c.slots_per_tm = 2;
    /* src -FORWARD-> map -FORWARD-> flat -RESCALE-> resc -HASH-> agg */
    static const enum core_ship ships[] = {CORE_SHIP_FORWARD, CORE_SHIP_FORWARD, CORE_SHIP_RESCALE,
                                           CORE_SHIP_HASH};
    int in_start[6], in_src[4];
    enum core_ship in_ship[4];
    struct core_topo t;
    chain(&t, 5, ships, in_start, in_src, in_ship);
    static const int cur[] = {2, 2, 2, 2, 2};
    static const int new_p[] = {4, 4, 2, 3, 5};
    struct core_vertex_in v[5];
    struct core_sample sm;
    sample_with(&sm, v, 5, cur);
    struct core_global_eval g = {.heap_used_avg = 1.0 * GIB,
                                 .managed_used_avg = 50.0 * MIB,
                                 .metaspace_used_avg = 100.0 * MIB,
                                 .slots_used = 2};
    struct core_decision d;
    core_decision_init(&d);
    core__memory_tune(&c, &sm, &t, new_p, &g, &d);

    /* Network segments (buffers/channel 2, floating 8), input gate + upstream output gate:
     *   src->map FORWARD 4=4:    (2+8) + (2+8)                          = 20
     *   map->flat FORWARD 4->2:  flat ceil(4/2)=2: 2x2+8=12; map ceil(2/4)=1: 10 = 22
     *   flat->resc RESCALE 2->3: resc ceil(2/3)=1: 10; flat ceil(3/2)=2: 12     = 22
     *   resc->agg HASH 3->5:     agg 3x2+8=14; resc 5x2+8=18                    = 32
     *   96 segments x 32768 B x 2 slots/TM = 6291456 (granted; 3724961376 left)
     * metaspace = (long)(104857600 x 1.2) = 125829120      (3599132256 left)
     * heap      = (long)(1073741824 x 1.2) = 1288490188    (2310642068 left)
     * managed   = used > 0, not maximized: the reference model's 1438814063 (871828005 left)
     * compensation: max current 2 == 2 slots used -> sharing -> 5 slots after;
     *   TMs ceil(2/2)=1 -> ceil(5/2)=3: factor max(1, 1/3) = 1, heap unchanged.
     * total = 4294967296 - 871828005 = 3423139291 */
    ASSERT_EQ(d.n_config_changes, 7);
    ASSERT_STR(change(&d, "taskmanager.memory.process.size"), "3423139291 bytes");
    ASSERT_STR(change(&d, "taskmanager.memory.framework.heap.size"), "0 bytes");
    ASSERT_STR(change(&d, "taskmanager.memory.network.min"), "6291456 bytes");
    ASSERT_STR(change(&d, "taskmanager.memory.network.max"), "6291456 bytes");
    ASSERT_STR(change(&d, "taskmanager.memory.jvm-metaspace.size"), "125829120 bytes");
    /* new flink = 3597035104 + (1288490188 - (134217728 + 1530082070))
     *           + (1438814063 - 1438814063) + (6291456 - 359703515) = 2867813435;
     * 1438814063 / 2867813435 = 0.50171.. -> ceil3 0.502 */
    ASSERT_STR(change(&d, "taskmanager.memory.managed.fraction"), "0.502");
    /* 429496736 / 3423139291 = 0.12546.. -> 0.126 */
    ASSERT_STR(change(&d, "taskmanager.memory.jvm-overhead.fraction"), "0.126");

    ASSERT_EQ(d.n_config_removals, 4);
    ASSERT_STR(d.config_removals[0], "taskmanager.memory.flink.size");
    ASSERT_STR(d.config_removals[1], "taskmanager.memory.task.heap.size");
    ASSERT_STR(d.config_removals[2], "taskmanager.memory.managed.size");
    ASSERT_STR(d.config_removals[3], "taskmanager.memory.size");

    ASSERT_EQ(d.n_events, 1);
    ASSERT_STR(d.events[0].type, "Normal");
    ASSERT_STR(d.events[0].reason, "Configuration recommendation");
    ASSERT_STR(d.events[0].key, "MemoryTuning");
    const char *m = d.events[0].message;
    static const char head[] = "Memory tuning recommends the following configuration "
                               "(automatic tuning is enabled):\n";
    ASSERT(strncmp(m, head, strlen(head)) == 0);
    ASSERT_CONTAINS(m, "\ntaskmanager.memory.process.size: 3423139291 bytes\n");
    ASSERT_CONTAINS(m, "\ntaskmanager.memory.managed.fraction: 0.502\n");
    ASSERT_CONTAINS(m, "\nRemove the following config entries if present: "
                       "[taskmanager.memory.flink.size, taskmanager.memory.task.heap.size, "
                       "taskmanager.memory.managed.size, taskmanager.memory.size]");
    core_decision_deinit(&d);
}

/* Network memory of a two-vertex job up -> down (1 slot per TM): segments x 32768. */
static const char *network_of(enum core_ship ship, int p_up, int p_down, struct core_decision *d)
{
    struct core_config c;
    cfg_4gib(&c);
    int in_start[3], in_src[1];
    enum core_ship in_ship[1];
    struct core_topo t;
    chain(&t, 2, &ship, in_start, in_src, in_ship);
    const int p[] = {p_up, p_down};
    struct core_vertex_in v[2];
    struct core_sample sm;
    sample_with(&sm, v, 2, p);
    struct core_global_eval g = {.heap_used_avg = NAN,
                                 .managed_used_avg = NAN,
                                 .metaspace_used_avg = NAN,
                                 .slots_used = NAN};
    core_decision_reset(d);
    core__memory_tune(&c, &sm, &t, p, &g, d);
    return change(d, "taskmanager.memory.network.min");
}

static void tune_network_rules(void)
{
    struct core_decision d;
    core_decision_init(&d);
    /* FORWARD, equal: (2+8) + (2+8) = 20 x 32768 = 655360 */
    ASSERT_STR(network_of(CORE_SHIP_FORWARD, 3, 3, &d), "655360 bytes");
    /* FORWARD 2 -> 5: down ceil(2/5)=1: 10; up ceil(5/2)=3: 14; 24 x 32768 = 786432 */
    ASSERT_STR(network_of(CORE_SHIP_FORWARD, 2, 5, &d), "786432 bytes");
    /* RESCALE 6 -> 4: down ceil(6/4)=2: 12; up ceil(4/6)=1: 10; 22 x 32768 = 720896 */
    ASSERT_STR(network_of(CORE_SHIP_RESCALE, 6, 4, &d), "720896 bytes");
    /* RESCALE equal is not special: 4 -> 4: ceil(1)=1: 10 + 10 = 20 -> 655360 */
    ASSERT_STR(network_of(CORE_SHIP_RESCALE, 4, 4, &d), "655360 bytes");
    /* HASH 6 -> 4: down 6x2+8=20; up 4x2+8=16; 36 x 32768 = 1179648 */
    ASSERT_STR(network_of(CORE_SHIP_HASH, 6, 4, &d), "1179648 bytes");
    /* REBALANCE equal is all-to-all too: 3x2+8 = 14, twice: 28 x 32768 = 917504 */
    ASSERT_STR(network_of(CORE_SHIP_REBALANCE, 3, 3, &d), "917504 bytes");
    core_decision_deinit(&d);
}

static void tune_maximize_managed(void)
{
    struct core_config c;
    cfg_4gib(&c);
    c.slots_per_tm = 2;
    c.mem_maximize_managed = true;
    static const enum core_ship ships[] = {CORE_SHIP_FORWARD, CORE_SHIP_FORWARD, CORE_SHIP_RESCALE,
                                           CORE_SHIP_HASH};
    int in_start[6], in_src[4];
    enum core_ship in_ship[4];
    struct core_topo t;
    chain(&t, 5, ships, in_start, in_src, in_ship);
    static const int cur[] = {2, 2, 2, 2, 2};
    static const int new_p[] = {4, 4, 2, 3, 5};
    struct core_vertex_in v[5];
    struct core_sample sm;
    sample_with(&sm, v, 5, cur);
    struct core_global_eval g = {.heap_used_avg = 1.0 * GIB,
                                 .managed_used_avg = 50.0 * MIB,
                                 .metaspace_used_avg = 100.0 * MIB,
                                 .slots_used = 2};
    struct core_decision d;
    core_decision_init(&d);
    core__memory_tune(&c, &sm, &t, new_p, &g, &d);
    /* As tune_topology_and_usage up to the heap (2310642068 left); managed takes it all:
     * managed = 2310642068, total = the whole 4 GiB. */
    ASSERT_STR(change(&d, "taskmanager.memory.process.size"), "4294967296 bytes");
    /* new flink = 3597035104 + (1288490188 - 1664299798) + (2310642068 - 1438814063)
     *           + (6291456 - 359703515) = 3739641440; 2310642068 / 3739641440 = 0.61787..
     *           -> 0.618 */
    ASSERT_STR(change(&d, "taskmanager.memory.managed.fraction"), "0.618");
    /* 429496736 / 4294967296 = 0.10000000149011612: ceil3 rounds UP -> 0.101 */
    ASSERT_STR(change(&d, "taskmanager.memory.jvm-overhead.fraction"), "0.101");
    core_decision_deinit(&d);
}

/* Two vertices a -HASH-> b at 3 each, scaled to 2 each; 1 slot per TM; 3 slots used. */
static void run_scale_down(bool compensation, struct core_decision *d)
{
    struct core_config c;
    cfg_4gib(&c);
    c.mem_scale_down_compensation = compensation;
    enum core_ship ship = CORE_SHIP_HASH;
    int in_start[3], in_src[1];
    enum core_ship in_ship[1];
    struct core_topo t;
    chain(&t, 2, &ship, in_start, in_src, in_ship);
    static const int cur[] = {3, 3};
    static const int new_p[] = {2, 2};
    struct core_vertex_in v[2];
    struct core_sample sm;
    sample_with(&sm, v, 2, cur);
    struct core_global_eval g = {.heap_used_avg = 1.0 * GIB,
                                 .managed_used_avg = 50.0 * MIB,
                                 .metaspace_used_avg = 100.0 * MIB,
                                 .slots_used = 3};
    core_decision_reset(d);
    core__memory_tune(&c, &sm, &t, new_p, &g, d);
}

static void tune_scale_down_compensation(void)
{
    struct core_decision d;
    core_decision_init(&d);
    /* network: b 2x2+8 = 12, a 2x2+8 = 12 -> 24 x 32768 x 1 = 786432.
     * Without compensation: 134217728 + 429496736 + 786432 + 125829120 + 1288490188
     * + 1438814063 = 3417634267. */
    run_scale_down(false, &d);
    ASSERT_STR(change(&d, "taskmanager.memory.process.size"), "3417634267 bytes");
    /* With it: max current 3 == 3 used -> sharing -> 2 slots after; TMs 3 -> 2;
     * factor 3/2 = 1.5 (a double division); heap += (long)(1.5 x 1288490188) - 1288490188
     * = 644245094 -> 3417634267 + 644245094 = 4061879361. */
    run_scale_down(true, &d);
    ASSERT_STR(change(&d, "taskmanager.memory.process.size"), "4061879361 bytes");
    /* new flink = 3597035104 + (1932735282 - 1664299798) + 0 + (786432 - 359703515)
     * = 3506553505; 1438814063 / 3506553505 = 0.41032.. -> 0.411;
     * 429496736 / 4061879361 = 0.10573.. -> 0.106 */
    ASSERT_STR(change(&d, "taskmanager.memory.managed.fraction"), "0.411");
    ASSERT_STR(change(&d, "taskmanager.memory.jvm-overhead.fraction"), "0.106");
    core_decision_deinit(&d);
}

static void tune_budget_exhausted(void)
{
    struct core_config c;
    cfg_4gib(&c);
    c.slots_per_tm = 2;
    static const enum core_ship ships[] = {CORE_SHIP_FORWARD, CORE_SHIP_FORWARD, CORE_SHIP_RESCALE,
                                           CORE_SHIP_HASH};
    int in_start[6], in_src[4];
    enum core_ship in_ship[4];
    struct core_topo t;
    chain(&t, 5, ships, in_start, in_src, in_ship);
    static const int cur[] = {2, 2, 2, 2, 2};
    static const int new_p[] = {4, 4, 2, 3, 5};
    struct core_vertex_in v[5];
    struct core_sample sm;
    sample_with(&sm, v, 5, cur);
    struct core_global_eval g = {.heap_used_avg = 10.0 * GIB,
                                 .managed_used_avg = 50.0 * MIB,
                                 .metaspace_used_avg = 100.0 * MIB,
                                 .slots_used = 2};
    struct core_decision d;
    core_decision_init(&d);
    core__memory_tune(&c, &sm, &t, new_p, &g, &d);
    /* network 6291456 and metaspace 125829120 are granted first; the heap asks for
     * 12884901888 and gets the 3599132256 left; managed (used, so it wants 1438814063)
     * gets 0. Total = the whole process. */
    ASSERT_STR(change(&d, "taskmanager.memory.process.size"), "4294967296 bytes");
    ASSERT_STR(change(&d, "taskmanager.memory.network.min"), "6291456 bytes");
    ASSERT_STR(change(&d, "taskmanager.memory.jvm-metaspace.size"), "125829120 bytes");
    ASSERT_STR(change(&d, "taskmanager.memory.managed.fraction"), "0.0");
    ASSERT_STR(change(&d, "taskmanager.memory.jvm-overhead.fraction"), "0.101");
    core_decision_deinit(&d);
}

static void tune_managed_unused(void)
{
    struct core_config c;
    cfg_4gib(&c);
    c.slots_per_tm = 2;
    static const enum core_ship ships[] = {CORE_SHIP_FORWARD, CORE_SHIP_FORWARD, CORE_SHIP_RESCALE,
                                           CORE_SHIP_HASH};
    int in_start[6], in_src[4];
    enum core_ship in_ship[4];
    struct core_topo t;
    chain(&t, 5, ships, in_start, in_src, in_ship);
    static const int cur[] = {2, 2, 2, 2, 2};
    static const int new_p[] = {4, 4, 2, 3, 5};
    struct core_vertex_in v[5];
    struct core_sample sm;
    sample_with(&sm, v, 5, cur);
    struct core_global_eval g = {.heap_used_avg = 1.0 * GIB,
                                 .managed_used_avg = NAN, /* (long) NaN = 0: unused */
                                 .metaspace_used_avg = 100.0 * MIB,
                                 .slots_used = 2};
    struct core_decision d;
    core_decision_init(&d);
    core__memory_tune(&c, &sm, &t, new_p, &g, &d);
    /* managed 0: total = 134217728 + 429496736 + 6291456 + 125829120 + 1288490188
     * = 1984325228; overhead 429496736 / 1984325228 = 0.21644.. -> 0.217 */
    ASSERT_STR(change(&d, "taskmanager.memory.process.size"), "1984325228 bytes");
    ASSERT_STR(change(&d, "taskmanager.memory.managed.fraction"), "0.0");
    ASSERT_STR(change(&d, "taskmanager.memory.jvm-overhead.fraction"), "0.217");
    core_decision_deinit(&d);
}

static void tune_disabled_event_only(void)
{
    struct core_config c;
    cfg_4gib(&c);
    c.mem_tuning_enabled = false;
    c.slots_per_tm = 2;
    static const enum core_ship ships[] = {CORE_SHIP_FORWARD, CORE_SHIP_FORWARD, CORE_SHIP_RESCALE,
                                           CORE_SHIP_HASH};
    int in_start[6], in_src[4];
    enum core_ship in_ship[4];
    struct core_topo t;
    chain(&t, 5, ships, in_start, in_src, in_ship);
    static const int cur[] = {2, 2, 2, 2, 2};
    static const int new_p[] = {4, 4, 2, 3, 5};
    struct core_vertex_in v[5];
    struct core_sample sm;
    sample_with(&sm, v, 5, cur);
    struct core_global_eval g = {.heap_used_avg = 1.0 * GIB,
                                 .managed_used_avg = 50.0 * MIB,
                                 .metaspace_used_avg = 100.0 * MIB,
                                 .slots_used = 2};
    struct core_decision d;
    core_decision_init(&d);
    core__memory_tune(&c, &sm, &t, new_p, &g, &d);
    ASSERT_EQ(d.n_config_changes, 0);
    ASSERT(d.config_changes == NULL);
    ASSERT_EQ(d.n_config_removals, 0);
    ASSERT_EQ(d.n_events, 1);
    ASSERT_STR(d.events[0].reason, "Configuration recommendation");
    /* The recommendation is the same one as with tuning enabled. */
    ASSERT_CONTAINS(d.events[0].message, "(automatic tuning is disabled):\n");
    ASSERT_CONTAINS(d.events[0].message, "taskmanager.memory.process.size: 3423139291 bytes\n");
    core_decision_deinit(&d);
}

static void tune_skipped_without_event(void)
{
    int in_start[2] = {0, 0}, in_src[1];
    enum core_ship in_ship[1];
    struct core_topo t;
    chain(&t, 1, NULL, in_start, in_src, in_ship);
    static const int p[] = {2};
    struct core_vertex_in v[1];
    struct core_sample sm;
    sample_with(&sm, v, 1, p);
    struct core_global_eval g = {.heap_used_avg = 1.0 * GIB,
                                 .managed_used_avg = 0,
                                 .metaspace_used_avg = 100.0 * MIB,
                                 .slots_used = 2};
    struct core_decision d;
    core_decision_init(&d);

    struct core_config c;
    opt_config_defaults(&c); /* process size unknown: no process, flink or explicit pools */
    c.mem_tuning_enabled = true;
    core__memory_tune(&c, &sm, &t, p, &g, &d);
    ASSERT_EQ(d.n_events, 0);
    ASSERT_EQ(d.n_config_changes, 0);

    c.tm.process_size = 300 * MIB; /* invalid: metaspace + overhead exceed it */
    core__memory_tune(&c, &sm, &t, p, &g, &d);
    ASSERT_EQ(d.n_events, 0);

    c.tm.process_size = 0; /* valid model? no: 256 MiB metaspace > 0; still skipped */
    core__memory_tune(&c, &sm, &t, p, &g, &d);
    ASSERT_EQ(d.n_events, 0);
    ASSERT_EQ(d.n_config_changes, 0);
    core_decision_deinit(&d);
}

TEST_MAIN(TEST_ENTRY(model_30gib_process_size), TEST_ENTRY(model_flink_size_only),
          TEST_ENTRY(model_task_heap_and_managed), TEST_ENTRY(model_invalid),
          TEST_ENTRY(tune_topology_and_usage), TEST_ENTRY(tune_network_rules),
          TEST_ENTRY(tune_maximize_managed), TEST_ENTRY(tune_scale_down_compensation),
          TEST_ENTRY(tune_budget_exhausted), TEST_ENTRY(tune_managed_unused),
          TEST_ENTRY(tune_disabled_event_only), TEST_ENTRY(tune_skipped_without_event))
