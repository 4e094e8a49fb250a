/*
 * Unit tests for core/resources.c: the slot estimate of core/README.md's Resources
 * (core__slots_after) and the quota check (core__quota_reached). Expected values are worked out in
 * the comments.
 */
#include "test.h"

#include "core/core_int.h"
#include "options/options.h"

#define GIB (1024LL * 1024LL * 1024LL)

/* A sample of n unconnected vertices with the given parallelisms and groups (NULL = none). */
static void sample_with(struct core_sample *sm, struct core_vertex_in *v, int n, const int *p,
                        const char *const *groups)
{
    static const char *const ids[] = {"a", "b", "c", "d", "e", "f"};
    memset(sm, 0, sizeof *sm);
    memset(v, 0, (size_t)n * sizeof *v);
    for (int i = 0; i < n; i++) {
        v[i].id = ids[i];
        v[i].parallelism = p[i];
        v[i].max_parallelism = 128;
        v[i].slot_sharing_group = groups ? groups[i] : NULL;
    }
    sm->vertices = v;
    sm->n_vertices = n;
}

/* --------------------------------------------------------- slots (5.1) -- */

static void slots_after_sharing_and_not(void)
{
    static const int cur[] = {2, 4, 3};
    static const int new_p[] = {3, 6, 1};
    struct core_vertex_in v[3];
    struct core_sample sm;
    sample_with(&sm, v, 3, cur, NULL);
    /* max current 4 == 4 slots used: slot sharing -> max(3, 6, 1) = 6 */
    ASSERT_EQ(core__slots_after(&sm, new_p, 4), 6);
    /* 9 slots used (2 + 4 + 3) != 4: no sharing -> 3 + 6 + 1 = 10 */
    ASSERT_EQ(core__slots_after(&sm, new_p, 9), 10);
    /* Unknown slots used: Java's (int) NaN = 0 never equals a parallelism -> no sharing */
    ASSERT_EQ(core__slots_after(&sm, new_p, NAN), 10);
    /* The metric is cast to int as Flink does: 4.9 -> 4 -> sharing */
    ASSERT_EQ(core__slots_after(&sm, new_p, 4.9), 6);
}

/* --------------------------------------------------------- quota (4.6) -- */

static void quota_cfg(struct core_config *c)
{
    opt_config_defaults(c);
    c->slots_per_tm = 1;
    c->tm_cpu = 1.0;
    c->tm.process_size = 4 * GIB;
}

static void quota_not_set(void)
{
    struct core_config c;
    quota_cfg(&c); /* quota_cpu and quota_memory NaN by default */
    static const int cur[] = {1};
    static const int new_p[] = {100};
    static const char *const groups[] = {"default"};
    static const bool in[] = {true};
    struct core_vertex_in v[1];
    struct core_sample sm;
    sample_with(&sm, v, 1, cur, groups);
    struct core_decision d;
    core_decision_init(&d);
    ASSERT(!core__quota_reached(&c, &sm, in, new_p, &d));
    ASSERT_EQ(d.n_events, 0);
    core_decision_deinit(&d);
}

static void quota_no_group_info(void)
{
    struct core_config c;
    quota_cfg(&c);
    c.quota_cpu = 1.0;
    static const int cur[] = {1, 1};
    static const int new_p[] = {100, 100};
    static const bool in[] = {true, true};
    struct core_vertex_in v[2];
    struct core_sample sm;
    sample_with(&sm, v, 2, cur, NULL); /* no slot_sharing_group anywhere: skipped */
    struct core_decision d;
    core_decision_init(&d);
    ASSERT(!core__quota_reached(&c, &sm, in, new_p, &d));
    ASSERT_EQ(d.n_events, 0);
    core_decision_deinit(&d);
}

static void quota_counts_summary_vertices_only(void)
{
    struct core_config c;
    quota_cfg(&c);
    c.quota_cpu = 6.0;
    /* One group: a 4 -> 8 (in the summary), b at 10 (not in the summary). */
    static const int cur[] = {4, 10};
    static const int new_p[] = {8, 10};
    static const char *const groups[] = {"default", "default"};
    static const bool in[] = {true, false};
    struct core_vertex_in v[2];
    struct core_sample sm;
    sample_with(&sm, v, 2, cur, groups);
    struct core_decision d;
    core_decision_init(&d);
    /* Summary only: current 4 slots -> 4 TMs, new 8 -> 8 TMs; 1 CPU x 8 > 6: reached.
     * (Counting b would give 10 -> 10 TMs, no growth, no check.) */
    ASSERT(core__quota_reached(&c, &sm, in, new_p, &d));
    ASSERT_EQ(d.n_events, 1);
    ASSERT_STR(d.events[0].type, "Warning");
    ASSERT_STR(d.events[0].reason, "ResourceQuotaReached");
    ASSERT(d.events[0].key == NULL);
    ASSERT_CONTAINS(d.events[0].message, "quota");

    /* No vertex of the group in the summary: 0 -> 0 slots, nothing grows. */
    static const bool none[] = {false, false};
    core_decision_reset(&d);
    ASSERT(!core__quota_reached(&c, &sm, none, new_p, &d));
    ASSERT_EQ(d.n_events, 0);
    core_decision_deinit(&d);
}

static void quota_groups_summed_with_floor_division(void)
{
    struct core_config c;
    quota_cfg(&c);
    c.slots_per_tm = 4;
    c.quota_cpu = 0.5; /* any growth in TMs would exceed it */
    /* Groups g1 = {a 2 -> 4, b 1 -> 3} and g2 = {c 3 -> 3}; a vertex without group (d)
     * belongs to none. Current: max(2, 1) + 3 = 5 slots; new: max(4, 3) + 3 = 7. */
    static const int cur[] = {2, 1, 3, 50};
    static const int new_p[] = {4, 3, 3, 90};
    static const char *const groups[] = {"g1", "g1", "g2", NULL};
    static const bool in[] = {true, true, true, true};
    struct core_vertex_in v[4];
    struct core_sample sm;
    sample_with(&sm, v, 4, cur, groups);
    struct core_decision d;
    core_decision_init(&d);
    /* floor(5 / 4) = 1 TM, floor(7 / 4) = 1 TM: not more TMs -> OK, quota not checked */
    ASSERT(!core__quota_reached(&c, &sm, in, new_p, &d));
    ASSERT_EQ(d.n_events, 0);

    /* a -> 5: new slots max(5, 3) + 3 = 8, floor(8 / 4) = 2 TMs > 1; 1 CPU x 2 > 0.5 */
    static const int new_p2[] = {5, 3, 3, 90};
    ASSERT(core__quota_reached(&c, &sm, in, new_p2, &d));
    ASSERT_EQ(d.n_events, 1);
    core_decision_deinit(&d);
}

/* a 2 -> 3 in group "default", 1 slot per TM: TMs 2 -> 3. */
static bool quota_run(const struct core_config *c, struct core_decision *d)
{
    static const int cur[] = {2};
    static const int new_p[] = {3};
    static const char *const groups[] = {"default"};
    static const bool in[] = {true};
    struct core_vertex_in v[1];
    struct core_sample sm;
    sample_with(&sm, v, 1, cur, groups);
    return core__quota_reached(c, &sm, in, new_p, d);
}

static void quota_cpu(void)
{
    struct core_config c;
    quota_cfg(&c);
    c.tm_cpu = 2.0;
    struct core_decision d;
    core_decision_init(&d);
    c.quota_cpu = 5.5; /* 2 CPU x 3 TMs = 6 > 5.5 */
    ASSERT(quota_run(&c, &d));
    ASSERT_EQ(d.n_events, 1);
    core_decision_reset(&d);
    c.quota_cpu = 6.0; /* 6 > 6 is false: at the quota is allowed */
    ASSERT(!quota_run(&c, &d));
    ASSERT_EQ(d.n_events, 0);
    c.quota_cpu = 1.0; /* TM CPU unknown: the CPU side cannot be checked */
    c.tm_cpu = NAN;
    ASSERT(!quota_run(&c, &d));
    ASSERT_EQ(d.n_events, 0);
    core_decision_deinit(&d);
}

static void quota_memory(void)
{
    struct core_config c;
    quota_cfg(&c); /* 4 GiB per TM */
    struct core_decision d;
    core_decision_init(&d);
    c.quota_memory = 10.0 * GIB; /* 4 GiB x 3 TMs = 12 GiB > 10 GiB */
    ASSERT(quota_run(&c, &d));
    ASSERT_EQ(d.n_events, 1);
    core_decision_reset(&d);
    c.quota_memory = 12.0 * GIB; /* 12 GiB > 12 GiB is false */
    ASSERT(!quota_run(&c, &d));

    /* The TM size comes from the memory model when process.size is not set:
     * flink.size 1280 MiB -> process 1811939328 (see test_memory); x 3 = 5435817984. */
    c.tm.process_size = -1;
    c.tm.flink_size = 1280LL * 1024 * 1024;
    c.quota_memory = 5435817983.0;
    ASSERT(quota_run(&c, &d));
    core_decision_reset(&d);
    c.quota_memory = 5435817984.0;
    ASSERT(!quota_run(&c, &d));

    /* Unknown TM memory (no usable model): the memory side is not checked. */
    c.tm.flink_size = -1;
    c.quota_memory = 1.0;
    ASSERT(!quota_run(&c, &d));
    ASSERT_EQ(d.n_events, 0);
    core_decision_deinit(&d);
}

static void quota_memory_uses_tuned_process_size(void)
{
    struct core_config c;
    quota_cfg(&c); /* the user's TMs are 4 GiB: 3 x 4 GiB would exceed 10 GiB */
    c.quota_memory = 10.0 * GIB;
    struct core_decision d;
    core_decision_init(&d);
    /* Memory tuning ran first this cycle and shrank the TM to 1 GiB: 3 x 1 GiB fits. */
    struct core_kv *kv = core__alloc(&d, sizeof *kv);
    kv[0].key = "taskmanager.memory.process.size";
    kv[0].value = "1073741824 bytes";
    d.config_changes = kv;
    d.n_config_changes = 1;
    ASSERT(!quota_run(&c, &d));
    ASSERT_EQ(d.n_events, 0);
    core_decision_deinit(&d);
}

static void quota_fewer_tms_is_ok(void)
{
    struct core_config c;
    quota_cfg(&c);
    c.quota_cpu = 0.0;
    c.quota_memory = 0.0;
    static const int cur[] = {6};
    static const int new_p[] = {3};
    static const char *const groups[] = {"default"};
    static const bool in[] = {true};
    struct core_vertex_in v[1];
    struct core_sample sm;
    sample_with(&sm, v, 1, cur, groups);
    struct core_decision d;
    core_decision_init(&d);
    /* 6 -> 3 TMs: newTMs <= currentTMs, fine even against a zero quota */
    ASSERT(!core__quota_reached(&c, &sm, in, new_p, &d));
    /* equal: 6 -> 6 */
    static const int same[] = {6};
    ASSERT(!core__quota_reached(&c, &sm, in, same, &d));
    ASSERT_EQ(d.n_events, 0);
    core_decision_deinit(&d);
}

TEST_MAIN(TEST_ENTRY(slots_after_sharing_and_not), TEST_ENTRY(quota_not_set),
          TEST_ENTRY(quota_no_group_info), TEST_ENTRY(quota_counts_summary_vertices_only),
          TEST_ENTRY(quota_groups_summed_with_floor_division), TEST_ENTRY(quota_cpu),
          TEST_ENTRY(quota_memory), TEST_ENTRY(quota_memory_uses_tuned_process_size),
          TEST_ENTRY(quota_fewer_tms_is_ok))
