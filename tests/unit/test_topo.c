/* Unit tests for core/topo.c: topology validation (core/README.md, Topology) and the stable Kahn
 * order. */
#include "test.h"

#include "core/core_int.h"

#define MAXV 8

/* A hand-built sample of up to MAXV vertices with at most 3 inputs each. */
struct tsample {
    struct core_sample s;
    struct core_vertex_in v[MAXV];
    struct core_input in[MAXV][3];
};

static void tvertex(struct tsample *ts, const char *id, int p, const char *in0, const char *in1,
                    enum core_ship ship)
{
    int i = ts->s.n_vertices++;
    ts->s.vertices = ts->v;
    struct core_vertex_in *v = &ts->v[i];
    memset(v, 0, sizeof *v);
    v->id = id;
    v->parallelism = p;
    v->max_parallelism = 128;
    v->inputs = ts->in[i];
    const char *ins[2] = {in0, in1};
    for (int k = 0; k < 2; k++)
        if (ins[k]) {
            ts->in[i][v->n_inputs].from = ins[k];
            ts->in[i][v->n_inputs].ship = ship;
            v->n_inputs++;
        }
}

static void order_stable_for_sorted_sample(void)
{
    /* a -> b, c -> d: both a and c are ready at first. Lowest sample index first gives
     * a, b (ready once a is out, index 1 < 2), c, d: the sample's own order. */
    struct tsample ts = {0};
    tvertex(&ts, "a", 1, NULL, NULL, CORE_SHIP_FORWARD);
    tvertex(&ts, "b", 1, "a", NULL, CORE_SHIP_FORWARD);
    tvertex(&ts, "c", 1, NULL, NULL, CORE_SHIP_FORWARD);
    tvertex(&ts, "d", 1, "c", NULL, CORE_SHIP_FORWARD);
    struct core_decision d;
    core_decision_init(&d);
    struct core_topo t;
    char err[256];
    ASSERT_EQ(core__topo_build(&ts.s, &d, &t, err, sizeof err), 0);
    ASSERT_EQ(t.n, 4);
    for (int i = 0; i < 4; i++)
        ASSERT_EQ(t.order[i], i);
    core_decision_deinit(&d);
}

static void order_puts_inputs_first(void)
{
    /* Listed sink first: sink(0) <- agg(1) <- src(2). Order must be src, agg, sink. */
    struct tsample ts = {0};
    tvertex(&ts, "sink", 1, "agg", NULL, CORE_SHIP_FORWARD);
    tvertex(&ts, "agg", 2, "src", NULL, CORE_SHIP_HASH);
    tvertex(&ts, "src", 2, NULL, NULL, CORE_SHIP_FORWARD);
    struct core_decision d;
    core_decision_init(&d);
    struct core_topo t;
    char err[256];
    ASSERT_EQ(core__topo_build(&ts.s, &d, &t, err, sizeof err), 0);
    ASSERT_EQ(t.order[0], 2);
    ASSERT_EQ(t.order[1], 1);
    ASSERT_EQ(t.order[2], 0);
    ASSERT(t.is_source[2]);
    ASSERT(!t.is_source[1]);
    ASSERT(t.hash_input[1]);
    ASSERT(!t.hash_input[0]);
    ASSERT_EQ(t.n_outputs[2], 1);
    ASSERT_EQ(t.n_outputs[0], 0);
    ASSERT_EQ(t.in_start[1], 1); /* sink's one input occupies edge 0 */
    ASSERT_EQ(t.in_src[t.in_start[1]], 2);
    ASSERT_EQ(t.in_ship[t.in_start[1]], CORE_SHIP_HASH);
    core_decision_deinit(&d);
}

static void diamond_edges(void)
{
    /* s -> a, s -> b, (a, b) -> j: s has 2 outputs, j has 2 inputs. */
    struct tsample ts = {0};
    tvertex(&ts, "s", 1, NULL, NULL, CORE_SHIP_FORWARD);
    tvertex(&ts, "a", 1, "s", NULL, CORE_SHIP_REBALANCE);
    tvertex(&ts, "b", 1, "s", NULL, CORE_SHIP_REBALANCE);
    tvertex(&ts, "j", 1, "a", "b", CORE_SHIP_HASH);
    struct core_decision d;
    core_decision_init(&d);
    struct core_topo t;
    char err[256];
    ASSERT_EQ(core__topo_build(&ts.s, &d, &t, err, sizeof err), 0);
    ASSERT_EQ(t.n_outputs[0], 2);
    ASSERT_EQ(t.in_start[4] - t.in_start[3], 2);
    ASSERT_EQ(t.order[3], 3);
    ASSERT_EQ(core__topo_find(&t, "b"), 2);
    ASSERT_EQ(core__topo_find(&t, "zz"), -1);
    core_decision_deinit(&d);
}

static void unknown_input(void)
{
    struct tsample ts = {0};
    tvertex(&ts, "s", 1, NULL, NULL, CORE_SHIP_FORWARD);
    tvertex(&ts, "a", 1, "s", NULL, CORE_SHIP_FORWARD);
    tvertex(&ts, "b", 1, "x", NULL, CORE_SHIP_FORWARD);
    struct core_decision d;
    core_decision_init(&d);
    struct core_topo t;
    char err[256];
    ASSERT_EQ(core__topo_build(&ts.s, &d, &t, err, sizeof err), -1);
    ASSERT_STR(err, "vertices[2].inputs[0].from: unknown vertex \"x\"");
    core_decision_deinit(&d);
}

static void duplicate_id(void)
{
    struct tsample ts = {0};
    tvertex(&ts, "s", 1, NULL, NULL, CORE_SHIP_FORWARD);
    tvertex(&ts, "agg", 1, "s", NULL, CORE_SHIP_FORWARD);
    tvertex(&ts, "sink", 1, "agg", NULL, CORE_SHIP_FORWARD);
    tvertex(&ts, "agg", 1, "s", NULL, CORE_SHIP_FORWARD);
    struct core_decision d;
    core_decision_init(&d);
    struct core_topo t;
    char err[256];
    ASSERT_EQ(core__topo_build(&ts.s, &d, &t, err, sizeof err), -1);
    ASSERT_STR(err, "vertices[3].id: duplicate id \"agg\"");
    core_decision_deinit(&d);
}

static void cycle_named(void)
{
    /* s -> a <-> b -> c: c is only downstream of the cycle and is not named. */
    struct tsample ts = {0};
    tvertex(&ts, "s", 1, NULL, NULL, CORE_SHIP_FORWARD);
    tvertex(&ts, "a", 1, "s", "b", CORE_SHIP_FORWARD);
    tvertex(&ts, "b", 1, "a", NULL, CORE_SHIP_FORWARD);
    tvertex(&ts, "c", 1, "b", NULL, CORE_SHIP_FORWARD);
    struct core_decision d;
    core_decision_init(&d);
    struct core_topo t;
    char err[256];
    ASSERT_EQ(core__topo_build(&ts.s, &d, &t, err, sizeof err), -1);
    ASSERT_STR(err, "vertices: cycle through \"a\", \"b\"");
    core_decision_deinit(&d);
}

static void self_loop_is_a_cycle(void)
{
    struct tsample ts = {0};
    tvertex(&ts, "a", 1, "a", NULL, CORE_SHIP_FORWARD);
    struct core_decision d;
    core_decision_init(&d);
    struct core_topo t;
    char err[256];
    ASSERT_EQ(core__topo_build(&ts.s, &d, &t, err, sizeof err), -1);
    ASSERT_STR(err, "vertices: cycle through \"a\"");
    core_decision_deinit(&d);
}

static void bad_parallelism(void)
{
    struct tsample ts = {0};
    tvertex(&ts, "s", 1, NULL, NULL, CORE_SHIP_FORWARD);
    tvertex(&ts, "a", 0, "s", NULL, CORE_SHIP_FORWARD);
    struct core_decision d;
    core_decision_init(&d);
    struct core_topo t;
    char err[256];
    ASSERT_EQ(core__topo_build(&ts.s, &d, &t, err, sizeof err), -1);
    ASSERT_STR(err, "vertices[1].parallelism: 0 must be >= 1");
    ts.v[1].parallelism = 300;
    ASSERT_EQ(core__topo_build(&ts.s, &d, &t, err, sizeof err), -1);
    ASSERT_STR(err, "vertices[1].parallelism: 300 exceeds max_parallelism 128");
    ts.v[1].parallelism = 128; /* equal to max is fine */
    ASSERT_EQ(core__topo_build(&ts.s, &d, &t, err, sizeof err), 0);
    core_decision_deinit(&d);
}

static void empty_topology(void)
{
    struct core_sample s = {0};
    struct core_decision d;
    core_decision_init(&d);
    struct core_topo t;
    char err[64];
    ASSERT_EQ(core__topo_build(&s, &d, &t, err, sizeof err), 0);
    ASSERT_EQ(t.n, 0);
    core_decision_deinit(&d);
}

TEST_MAIN(TEST_ENTRY(order_stable_for_sorted_sample), TEST_ENTRY(order_puts_inputs_first),
          TEST_ENTRY(diamond_edges), TEST_ENTRY(unknown_input), TEST_ENTRY(duplicate_id),
          TEST_ENTRY(cycle_named), TEST_ENTRY(self_loop_is_a_cycle), TEST_ENTRY(bad_parallelism),
          TEST_ENTRY(empty_topology))
