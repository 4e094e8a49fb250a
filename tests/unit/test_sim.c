/*
 * Unit tests for server/sim/: the simulator's own arithmetic, on jobs small enough to
 * compute by hand, and the adapter over the decision pipeline.
 */
#include <jansson.h>
#include <stdlib.h>

#include "test.h"

#include "options/options.h"
#include "sim/sim_family.h"
#include "sim/sim_model.h"
#include "sim/sim_pipeline.h"
#include "sim/sim_report.h"
#include "sim/sim_run.h"
#include "sim/sim_scenario.h"

static struct sim_scenario *scenario(const char *text)
{
    json_error_t je;
    json_t *doc = json_loads(text, 0, &je);
    if (!doc) {
        fprintf(stderr, "bad test scenario: %s\n", je.text);
        abort();
    }
    struct sim_scenario *sc = NULL;
    char *err = NULL;
    if (sim_scenario_parse(doc, "t", &sc, &err) < 0) {
        fprintf(stderr, "bad test scenario: %s\n", err);
        abort();
    }
    json_decref(doc);
    return sc;
}

/* The parse error of a scenario (new), or NULL if it parses. */
static char *scenario_error(const char *text)
{
    json_t *doc = json_loads(text, 0, NULL);
    struct sim_scenario *sc = NULL;
    char *err = NULL;
    if (sim_scenario_parse(doc, "t", &sc, &err) == 0)
        sim_scenario_free(sc);
    json_decref(doc);
    return err;
}

/*
 * One source, 2 subtasks of 1000 records/s each (2000/s), 1500 records/s arriving, a
 * failure at t = 600 s with 120 s of downtime, 1200 s in all, lag SLO 60 s, recovery under
 * 30 s.
 *
 * Lag (the age of the record read next, at the end of each second t = 1..1200):
 *  - t <= 600: every record is read as it arrives: 0 (600 values);
 *  - 601..720: nothing is read, the oldest waiting record arrived at 600: t - 600 = 1..120;
 *  - from 720 the source reads 2000/s: read(t) = 1500 x 600 + 2000 (t - 720), arrivals
 *    1500 x tau, so the record read at t arrived at tau = 600 + (4/3)(t - 720) and
 *    lag = t - tau = 120 - (t - 720) / 3: 119.667 at 721, 0 at 1080 (the backlog of
 *    1500 x 120 = 180,000 records drains at 500/s in 360 s); then 0.
 * Max: 120 (t = 720). p95 (nearest rank): rank ceil(0.95 x 1200) = 1140 of 1200, i.e. the
 * 61st largest. Values >= 105: 105..120 while down (16) and 120 - k/3 for k = 1..45 (45):
 * 61, the smallest of them 105. Minutes over the SLO: lag > 60 at t = 661..720 (60 s) and
 * for k = 1..179 (179 s): 239 s = 3.983 min. Subtask-hours: 2 x 1200 / 3600 = 0.667.
 * Recovery after the failure: lag <= 30 from k = 270, t = 990, on: 390 s.
 */
static const char *const failure_job =
    "{\"horizon\": 1200, \"interval\": 30, \"slo\": 60, \"recovery_lag\": 30,"
    " \"vertices\": [{\"id\": \"src\", \"parallelism\": 2, \"capacity\": 1000,"
    "   \"arrival\": [{\"type\": \"constant\", \"rate\": 1500}]}],"
    " \"failures\": [{\"at\": 600, \"downtime\": 120}]}";

static void lag_grows_while_down_and_drains_at_the_spare_rate(void)
{
    struct sim_scenario *sc = scenario(failure_job);
    int fixed[] = {2};
    struct sim_policy pol = {.name = "fixed", .fixed = true, .fixed_p = fixed};
    struct sim_result *r = NULL;
    char *err = NULL;
    ASSERT_EQ(sim_run(sc, &pol, 0, NULL, &r, &err), 0);
    ASSERT_EQ(r->n, 1200);
    ASSERT_NEAR(r->lag[599], 0, 1e-9);   /* t = 600 */
    ASSERT_NEAR(r->lag[600], 1, 1e-9);   /* t = 601 */
    ASSERT_NEAR(r->lag[719], 120, 1e-9); /* t = 720 */
    ASSERT_NEAR(r->lag[720], 120 - 1.0 / 3, 1e-6);
    ASSERT_NEAR(r->lag[899], 120 - 180.0 / 3, 1e-6); /* t = 900 */
    ASSERT_NEAR(r->lag[1079], 0, 1e-6);              /* t = 1080 */
    ASSERT_NEAR(r->arrival[0], 1500, 1e-9);
    ASSERT_NEAR(r->capacity[0], 2000, 1e-9);

    struct sim_figures f;
    sim_report_figures(sc, r, &f);
    ASSERT_NEAR(f.max_lag, 120, 1e-9);
    ASSERT_NEAR(f.p95_lag, 105, 1e-6);
    ASSERT_NEAR(f.minutes_over_slo, 239.0 / 60, 1e-9);
    ASSERT_NEAR(f.subtask_hours, 2.0 * 1200 / 3600, 1e-9);
    ASSERT_EQ(f.rescales, 0);
    ASSERT_EQ(f.n_marks, 1);
    ASSERT_EQ(f.marks[0].at, 600);
    ASSERT_STR(f.marks[0].label, "failure");
    ASSERT_NEAR(f.marks[0].recovered, 390, 1e-9);
    ASSERT_NEAR(f.recovery, 390, 1e-9);
    sim_result_free(r);
    sim_scenario_free(sc);
}

static json_t *metric(json_t *sample, const char *name)
{
    json_t *v = json_array_get(json_object_get(sample, "vertices"), 0);
    return json_object_get(json_object_get(v, "metrics"), name);
}

static double busy(json_t *sample, const char *which)
{
    return json_number_value(json_object_get(metric(sample, "busy_ms_per_s"), which));
}

/*
 * The same job, sampled as it reports:
 *  - t = 570: 1500/s for 570 s: records_in 855,000; busy 1500 / 2000 = 750 ms/s; the 60 s
 *    meter 1500/s; accumulated busy 0.75 x 2 subtasks x 1000 ms x 570 s = 855,000 ms;
 *  - t = 630: restarting: no metrics, status RESTARTING;
 *  - t = 720: running again since 720: counters start over at 0, backlog 180,000;
 *  - t = 750: 30 s at 2000/s: records_in 60,000; the meter counts from 0 before the
 *    restart: (60,000 - 0) / 60 = 1000/s; busy 1000 ms/s; accumulated 1.0 x 2 x 1000 x 30
 *    = 60,000 ms; backlog 180,000 - 500 x 30 = 165,000;
 *  - t = 1170: records_in 2000 x 360 + 1500 x 90 = 855,000; meter 1500/s; busy 750.
 */
static void counters_meters_and_gauges_as_a_job_reports_them(void)
{
    struct sim_scenario *sc = scenario(failure_job);
    struct sim_model *m = sim_model_new(sc, NULL);
    json_t *s = NULL;
    for (int64_t t = 0; t < 1170; t++) {
        if (t == 600)
            sim_model_fail(m, 120);
        if (t == 570 || t == 630 || t == 720 || t == 750) {
            s = sim_model_sample(m);
            int64_t at = json_integer_value(json_object_get(s, "at"));
            int64_t rs = json_integer_value(json_object_get(s, "running_since"));
            ASSERT_EQ(at - sc->start_ms, t * 1000);
            if (t == 570) {
                ASSERT_EQ(rs, sc->start_ms);
                ASSERT_EQ(json_integer_value(metric(s, "records_in")), 855000);
                ASSERT_EQ(json_integer_value(metric(s, "records_out")), 855000);
                ASSERT_NEAR(json_number_value(metric(s, "records_in_per_s")), 1500, 1e-6);
                ASSERT_NEAR(busy(s, "avg"), 750, 1e-6);
                ASSERT_NEAR(busy(s, "max"), 750, 1e-6);
                ASSERT_EQ(json_integer_value(metric(s, "accumulated_busy_ms")), 855000);
                ASSERT_EQ(json_integer_value(metric(s, "pending_records")), 0);
            } else if (t == 630) {
                ASSERT_STR(json_string_value(json_object_get(s, "status")), "RESTARTING");
                ASSERT(metric(s, "records_in") == NULL);
            } else if (t == 720) {
                ASSERT_STR(json_string_value(json_object_get(s, "status")), "RUNNING");
                ASSERT_EQ(rs - sc->start_ms, 720000);
                ASSERT_EQ(json_integer_value(metric(s, "records_in")), 0);
                ASSERT_EQ(json_integer_value(metric(s, "pending_records")), 180000);
            } else {
                ASSERT_EQ(json_integer_value(metric(s, "records_in")), 60000);
                ASSERT_NEAR(json_number_value(metric(s, "records_in_per_s")), 1000, 1e-6);
                ASSERT_NEAR(busy(s, "max"), 1000, 1e-6);
                ASSERT_EQ(json_integer_value(metric(s, "accumulated_busy_ms")), 60000);
                ASSERT_EQ(json_integer_value(metric(s, "pending_records")), 165000);
            }
            json_decref(s);
            s = NULL;
        }
        sim_model_step(m);
    }
    s = sim_model_sample(m);
    ASSERT_EQ(json_integer_value(metric(s, "records_in")), 855000);
    ASSERT_NEAR(json_number_value(metric(s, "records_in_per_s")), 1500, 1e-6);
    ASSERT_NEAR(busy(s, "avg"), 750, 1e-6);
    json_decref(s);
    sim_model_free(m);
    sim_scenario_free(sc);
}

/*
 * Back-pressure: src (2 x 1000/s) -> sink (2 x 600/s = 1200/s), 1000/s arriving, a failure
 * of 60 s at t = 100 leaves 60,000 records. Catching up, src reads what sink takes, 1200/s:
 * src busy 1200 / 2000 = 0.6 and back-pressured the rest, 0.4; sink busy 1.0, not
 * back-pressured. The backlog drains at 200/s: 300 s, so from t = 460 src reads 1000/s
 * again: busy 0.5, no back-pressure; sink busy 1000 / 1200.
 */
static void a_saturated_downstream_vertex_throttles_its_source(void)
{
    struct sim_scenario *sc =
        scenario("{\"horizon\": 600, \"vertices\": ["
                 " {\"id\": \"src\", \"parallelism\": 2, \"capacity\": 1000,"
                 "  \"arrival\": [{\"type\": \"constant\", \"rate\": 1000}]},"
                 " {\"id\": \"sink\", \"parallelism\": 2, \"capacity\": 600,"
                 "  \"inputs\": [{\"from\": \"src\", \"ship\": \"REBALANCE\"}]}],"
                 " \"failures\": [{\"at\": 100, \"downtime\": 60}]}");
    struct sim_model *m = sim_model_new(sc, NULL);
    struct sim_vstat a, b;
    for (int64_t t = 0; t < 600; t++) {
        if (t == 100)
            sim_model_fail(m, 60);
        sim_model_step(m);
        if (t == 200) {
            sim_model_vstat(m, 0, &a);
            sim_model_vstat(m, 1, &b);
            ASSERT_NEAR(a.in_rate, 1200, 1e-9);
            ASSERT_NEAR(a.busy_avg, 0.6, 1e-12);
            ASSERT_NEAR(a.backpressured, 0.4, 1e-12);
            ASSERT_NEAR(b.in_rate, 1200, 1e-9);
            ASSERT_NEAR(b.busy_max, 1.0, 1e-12);
            ASSERT_NEAR(b.backpressured, 0, 1e-12);
            /* 60,000 - 200 x 41 s */
            ASSERT_NEAR(sim_model_pending(m), 60000 - 200.0 * 41, 1e-6);
        }
        if (t == 500) {
            sim_model_vstat(m, 0, &a);
            sim_model_vstat(m, 1, &b);
            ASSERT_NEAR(a.in_rate, 1000, 1e-9);
            ASSERT_NEAR(a.busy_avg, 0.5, 1e-12);
            ASSERT_NEAR(a.backpressured, 0, 1e-12);
            ASSERT_NEAR(b.busy_avg, 1000.0 / 1200, 1e-12);
        }
    }
    sim_model_free(m);
    sim_scenario_free(sc);
}

/*
 * Capacity curves. keyed: HASH input with 30% on one key, 8 key groups, 1000/s per subtask.
 * At p = 4 each subtask has 2 key groups: the hot subtask carries 0.3 + 0.7 x 2/8 = 0.475
 * of the input, so the vertex processes at most 1000 / 0.475 = 2105.263/s. At p = 3 the
 * largest subtask has ceil(8/3) = 3 groups: 0.3 + 0.7 x 3/8 = 0.5625, 1777.778/s. With
 * scaling 0.5 one subtask of 4 processes 1000 x 4^-0.5 = 500/s: 1052.632/s. capped: an
 * even vertex of 4 x 1000/s behind an external cap of 2500/s: 2500/s.
 */
static void capacity_with_a_hot_key_sub_linear_scaling_and_a_cap(void)
{
    struct sim_scenario *sc = scenario(
        "{\"horizon\": 60, \"vertices\": ["
        " {\"id\": \"src\", \"parallelism\": 1, \"capacity\": 1000, \"partitions\": 8,"
        "  \"arrival\": [{\"type\": \"constant\", \"rate\": 1000}]},"
        " {\"id\": \"keyed\", \"parallelism\": 4, \"max_parallelism\": 8, \"capacity\": 1000,"
        "  \"inputs\": [{\"from\": \"src\", \"ship\": \"HASH\", \"hot_key\": 0.3}]},"
        " {\"id\": \"slow\", \"parallelism\": 4, \"max_parallelism\": 8, \"capacity\": 1000,"
        "  \"scaling\": 0.5, \"inputs\": [{\"from\": \"keyed\", \"ship\": \"HASH\"}]},"
        " {\"id\": \"capped\", \"parallelism\": 4, \"capacity\": 1000, \"rate_cap\": 2500,"
        "  \"inputs\": [{\"from\": \"slow\"}]}]}");
    ASSERT_NEAR(sim_model_vertex_capacity(sc, 1, 4, 0.3), 1000 / 0.475, 1e-9);
    ASSERT_NEAR(sim_model_vertex_capacity(sc, 1, 3, 0.3), 1000 / 0.5625, 1e-9);
    ASSERT_NEAR(sim_model_vertex_capacity(sc, 1, 1, 0.3), 1000, 1e-9);
    ASSERT_NEAR(sim_model_vertex_capacity(sc, 2, 4, 0.0), 4 * 500, 1e-9);
    ASSERT_NEAR(sim_model_vertex_capacity(sc, 3, 4, 0.0), 2500, 1e-9);
    /* src: 8 partitions over 3 subtasks: the largest gets 3/8: 1000 / 0.375. */
    ASSERT_NEAR(sim_model_vertex_capacity(sc, 0, 3, 0.0), 1000 / 0.375, 1e-9);

    /* One second at 1000/s: keyed's hot subtask is busy 1000 x 0.475 / 1000, its average
     * 1000 / 4 / 1000, its least loaded (2 cold key groups) 1000 x 0.7 x 2/8 / 1000. capped
     * at p = 4 x 1000/s would be busy 0.25, but the external system takes 2500/s: each
     * subtask waits on it 1000 / 2500 = 0.4 of the time. */
    struct sim_model *m = sim_model_new(sc, NULL);
    sim_model_step(m);
    struct sim_vstat k, c;
    sim_model_vstat(m, 1, &k);
    sim_model_vstat(m, 3, &c);
    ASSERT_NEAR(k.busy_max, 0.475, 1e-12);
    ASSERT_NEAR(k.busy_avg, 0.25, 1e-12);
    ASSERT_NEAR(k.busy_min, 0.175, 1e-12);
    ASSERT_NEAR(c.busy_avg, 0.4, 1e-12);
    ASSERT_NEAR(c.records_out, 1000, 1e-9);
    sim_model_free(m);
    sim_scenario_free(sc);
}

/*
 * Arrival profiles and the fixed baseline. 1000/s, a 5x spike for 10 min at 1 h, a step to
 * 2000/s at 2 h, a ramp to 3000/s between 3 h and 4 h (2500/s at 3.5 h), an outage without
 * backlog at 5 h. The fixed size: the highest one-minute mean is the spike's 5000/s; at
 * utilization 0.7 one subtask of 1000/s serves 700/s: ceil(5000 / 700) = ceil(7.14) = 8.
 */
static void arrival_profiles_and_the_fixed_size(void)
{
    struct sim_scenario *sc =
        scenario("{\"horizon\": \"6 h\", \"vertices\": ["
                 " {\"id\": \"src\", \"parallelism\": 1, \"capacity\": 1000, "
                 "\"max_parallelism\": 64,"
                 "  \"arrival\": [{\"type\": \"constant\", \"rate\": 1000},"
                 "   {\"type\": \"spike\", \"at\": \"1 h\", \"duration\": \"10 min\", "
                 "\"factor\": 5},"
                 "   {\"type\": \"step\", \"at\": \"2 h\", \"rate\": 2000},"
                 "   {\"type\": \"ramp\", \"at\": \"3 h\", \"until\": \"4 h\", \"rate\": 3000},"
                 "   {\"type\": \"outage\", \"at\": \"5 h\", \"duration\": 60, "
                 "\"backlog\": false}]}]}");
    ASSERT_NEAR(sim_scenario_arrival(sc, 0, 0), 1000, 1e-9);
    ASSERT_NEAR(sim_scenario_arrival(sc, 0, 3600), 5000, 1e-9);
    ASSERT_NEAR(sim_scenario_arrival(sc, 0, 4199), 5000, 1e-9);
    ASSERT_NEAR(sim_scenario_arrival(sc, 0, 4200), 1000, 1e-9);
    ASSERT_NEAR(sim_scenario_arrival(sc, 0, 7200), 2000, 1e-9);
    ASSERT_NEAR(sim_scenario_arrival(sc, 0, 12600), 2500, 1e-9);
    ASSERT_NEAR(sim_scenario_arrival(sc, 0, 14400), 3000, 1e-9);
    ASSERT_NEAR(sim_scenario_arrival(sc, 0, 18000), 0, 1e-9);
    ASSERT(sim_scenario_outage(sc, 0, 18059));
    ASSERT(!sim_scenario_outage(sc, 0, 18060));
    int p[1];
    sim_model_fixed_size(sc, 0.7, p);
    ASSERT_EQ(p[0], 8);
    int64_t at[8];
    const char *label[8];
    ASSERT_EQ(sim_scenario_marks(sc, at, label, 8), 3);
    ASSERT_EQ(at[0], 3600);
    ASSERT_STR(label[0], "spike");
    ASSERT_EQ(at[1], 7200);
    ASSERT_STR(label[1], "step");
    ASSERT_EQ(at[2], 18060);
    ASSERT_STR(label[2], "outage end");
    sim_scenario_free(sc);
}

/*
 * The daily term: min + (max - min)(1 + cos(2 pi (t - peak) / period)) / 2 is max at the
 * peak, min half a period away, and the mean of the two a quarter period away.
 */
static void daily_cycle(void)
{
    struct sim_scenario *sc = scenario(
        "{\"horizon\": \"1 d\", \"vertices\": [{\"id\": \"src\", \"parallelism\": 1,"
        " \"capacity\": 1000, \"arrival\": [{\"type\": \"daily\", \"min\": 2000, \"max\": 20000,"
        " \"peak\": \"14 h\"}]}]}");
    ASSERT_NEAR(sim_scenario_arrival(sc, 0, 14 * 3600), 20000, 1e-6);
    ASSERT_NEAR(sim_scenario_arrival(sc, 0, 2 * 3600), 2000, 1e-6);
    ASSERT_NEAR(sim_scenario_arrival(sc, 0, 8 * 3600), 11000, 1e-6);
    sim_scenario_free(sc);
}

/* The same seed gives the same run; noise (real and measured) depends on the seed only. */
static void deterministic_for_a_seed(void)
{
    const char *text =
        "{\"horizon\": 900, \"noise\": 0.2, \"seed\": %d, \"vertices\": [{\"id\": \"src\","
        " \"parallelism\": 2, \"capacity\": 1000, \"arrival\": [{\"type\": \"constant\","
        " \"rate\": 1500}, {\"type\": \"noise\", \"sd\": 0.1, \"every\": 10}]}]}";
    char buf[512];
    json_t *s[3];
    for (int i = 0; i < 3; i++) {
        snprintf(buf, sizeof buf, text, i < 2 ? 7 : 8);
        struct sim_scenario *sc = scenario(buf);
        struct sim_model *m = sim_model_new(sc, NULL);
        for (int t = 0; t < 600; t++)
            sim_model_step(m);
        s[i] = sim_model_sample(m);
        sim_model_free(m);
        sim_scenario_free(sc);
    }
    ASSERT(json_equal(s[0], s[1]));
    ASSERT(!json_equal(s[0], s[2]));
    double b = busy(s[0], "avg");
    ASSERT(b >= 0 && b <= 1000);
    for (int i = 0; i < 3; i++)
        json_decref(s[i]);
}

/* A bad scenario is refused with the field named. */
static void a_bad_scenario_names_the_field(void)
{
    char *e = scenario_error("{\"vertices\": []}");
    ASSERT_CONTAINS(e, "horizon: required");
    free(e);
    e = scenario_error("{\"horizon\": 60, \"vertices\": [{\"id\": \"a\", \"parallelism\": 1,"
                       " \"capacity\": 1, \"arrival\": [{\"type\": \"wave\"}]}]}");
    ASSERT_CONTAINS(e, "vertices[0].arrival[0].type: \"wave\" is not one of");
    free(e);
    e = scenario_error("{\"horizon\": 60, \"vertices\": [{\"id\": \"a\", \"parallelism\": 1,"
                       " \"capacity\": 1, \"inputs\": [{\"from\": \"b\"}]}]}");
    ASSERT_CONTAINS(e, "vertices[0].inputs[0].from: \"b\" is not an earlier vertex");
    free(e);
    e = scenario_error("{\"horizon\": 60, \"vertices\": [{\"id\": \"a\", \"parallelism\": 1,"
                       " \"capacity\": 1, \"arrival\": [{\"type\": \"constant\", \"rate\": 1}]},"
                       " {\"id\": \"b\", \"parallelism\": 1, \"capacity\": 1, \"inputs\":"
                       " [{\"from\": \"a\", \"hot_key\": 0.3}]}]}");
    ASSERT_CONTAINS(e, "vertices[1].inputs[0].hot_key: only a HASH input has keys");
    free(e);
    e = scenario_error("{\"name\": \"../x\", \"horizon\": 60, \"vertices\": []}");
    ASSERT_CONTAINS(e, "name: must be 1 to 128 of");
    free(e);
    e = scenario_error("{\"horizon\": \"90 ms\", \"vertices\": []}");
    ASSERT_CONTAINS(e, "horizon: must be a whole number of seconds");
    free(e);
    e = scenario_error("{\"horizon\": 60, \"vertices\": [{\"id\": \"a\", \"parallelism\": 3,"
                       " \"max_parallelism\": 2, \"capacity\": 1,"
                       " \"arrival\": [{\"type\": \"constant\", \"rate\": 1}]}]}");
    ASSERT_CONTAINS(e, "vertices[0].parallelism: 3 is above max_parallelism 2");
    free(e);
}

/*
 * The adapter decides as `governor replay` does: the base case of tests/cases (src -> agg,
 * agg busy 950 ms/s at 1000/s; tests/cases/README.md derives agg 2 -> 4 at line 7) with its
 * options (stabilization 1 min, window 2 min).
 */
static void the_adapter_decides_as_the_server(void)
{
    struct opt_job *layers = opt_job_new();
    char *err = NULL;
    ASSERT_EQ(
        opt_job_set(layers, OPT_SERVER, "job.autoscaler.stabilization.interval", "1 min", &err), 0);
    ASSERT_EQ(opt_job_set(layers, OPT_SERVER, "job.autoscaler.metrics.window", "2 min", &err), 0);
    struct sim_pipeline *p = sim_pipeline_new("orders", layers, NULL);
    FILE *f = fopen("tests/cases/scale_up_utilization/trace.jsonl", "r");
    ASSERT(f != NULL);
    char line[8192];
    json_t *d = NULL;
    int n = 0;
    while (fgets(line, sizeof line, f)) {
        json_t *sample = json_loads(line, 0, NULL);
        json_decref(d);
        d = sim_decide(p, sample, &err);
        json_decref(sample);
        n++;
        if (!d)
            break;
    }
    fclose(f);
    ASSERT_EQ(n, 7);
    ASSERT(d != NULL);
    ASSERT_STR(json_string_value(json_object_get(d, "action")), "SCALE_UP");
    ASSERT_STR(json_string_value(json_object_get(d, "reason")), "HIGH_UTILIZATION");
    ASSERT(json_is_true(json_object_get(d, "execute")));
    ASSERT_EQ(json_integer_value(json_object_get(json_object_get(d, "parallelism"), "agg")), 4);

    /* A sample the server would refuse is refused with the field named. */
    json_t *bad =
        json_loads("{\"at\": 1, \"vertices\": [{\"id\": \"a\", \"parallelism\": 0}]}", 0, NULL);
    json_t *none = sim_decide(p, bad, &err);
    ASSERT(none == NULL);
    ASSERT_CONTAINS(err, "vertices[0].parallelism");
    free(err);
    json_decref(bad);
    json_decref(d);
    sim_pipeline_free(p);
    opt_job_free(layers);
}

/*
 * The families' model terms. periodic: 1000/s, x3 for 60 s every 300 s from 100, ramping over
 * 10 s: 1000 before 100; at 100 + k (k < 10) 1000 x (1 + 2 (k + 1) / 10); 3000 in the middle;
 * back to 1000 from 160 to 399. peaks: base 100 plus 900 at 6 h (width 1 h) and 400 at 18 h
 * (width 2 h), period 24 h: at 6 h 100 + 900 + 400 e^-18 (12 h from the second, 6 widths); at
 * 15 h 100 + 900 e^-40.5 + 400 e^-1.125. Amdahl's serial share
 * 0.1: 4 subtasks of 1000/s process 4000 / 1.3. A pause of 50% for 10 s every 100 s from 0:
 * the capacity halves then, and the pause counts as busy time (0.5 + the work). A hot key
 * appearing at 50 s: none before.
 */
static void family_terms_pauses_amdahl_and_an_emerging_hot_key(void)
{
    struct sim_scenario *sc =
        scenario("{\"horizon\": 90000, \"vertices\": ["
                 " {\"id\": \"src\", \"parallelism\": 1, \"capacity\": 1e6, \"arrival\": ["
                 "  {\"type\": \"constant\", \"rate\": 1000},"
                 "  {\"type\": \"periodic\", \"at\": 100, \"duration\": 60, \"every\": 300,"
                 "   \"ramp\": 10, \"factor\": 3}]},"
                 " {\"id\": \"day\", \"parallelism\": 1, \"capacity\": 1e6, \"arrival\": ["
                 "  {\"type\": \"peaks\", \"base\": 100, \"peaks\": ["
                 "   {\"at\": \"6 h\", \"width\": \"1 h\", \"rate\": 900},"
                 "   {\"at\": \"18 h\", \"width\": \"2 h\", \"rate\": 400}]}]},"
                 " {\"id\": \"op\", \"parallelism\": 4, \"capacity\": 1000, \"serial\": 0.1,"
                 "  \"pauses\": {\"every\": 100, \"duration\": 10, \"share\": 0.5},"
                 "  \"inputs\": [{\"from\": \"src\", \"ship\": \"HASH\", \"hot_key\": 0.2,"
                 "   \"hot_key_at\": 50}]}]}");
    ASSERT_NEAR(sim_scenario_arrival(sc, 0, 99), 1000, 1e-9);
    ASSERT_NEAR(sim_scenario_arrival(sc, 0, 104), 1000 * (1 + 2 * 0.5), 1e-9);
    ASSERT_NEAR(sim_scenario_arrival(sc, 0, 130), 3000, 1e-9);
    ASSERT_NEAR(sim_scenario_arrival(sc, 0, 200), 1000, 1e-9);
    ASSERT_NEAR(sim_scenario_arrival(sc, 0, 430), 3000, 1e-9);
    ASSERT_NEAR(sim_scenario_arrival(sc, 1, 6 * 3600), 1000 + 400 * exp(-18), 1e-9);
    ASSERT_NEAR(sim_scenario_arrival(sc, 1, 15 * 3600), 100 + 900 * exp(-40.5) + 400 * exp(-1.125),
                1e-9);
    ASSERT_NEAR(sim_model_vertex_capacity(sc, 2, 4, 0.0), 4000 / 1.3, 1e-9);
    struct sim_model *m = sim_model_new(sc, NULL);
    struct sim_vstat v;
    sim_model_step(m); /* second 0: paused, no hot key */
    sim_model_vstat(m, 2, &v);
    ASSERT_NEAR(v.in_rate, 1000, 1e-9);
    ASSERT_NEAR(v.busy_avg, 0.5 + 1000 / (4 * 1000 / 1.3), 1e-9);
    ASSERT_NEAR(v.busy_max, v.busy_avg, 1e-9);
    for (int t = 1; t < 60; t++)
        sim_model_step(m);
    sim_model_vstat(m, 2, &v); /* second 59: no pause, the hot key on one subtask */
    double mu = 1000 / 1.3;
    ASSERT_NEAR(v.busy_max, 1000 * (0.2 + 0.8 / 4) / mu, 1e-9);
    sim_model_free(m);
    sim_scenario_free(sc);
}

/*
 * The HPA-style rule (sim_run.h): one sink of 4 subtasks of 1000/s behind a source, 3500/s
 * arriving: average busy 0.875, 1.25 times the target 0.7: after the 5 min initialization and
 * a minute of samples it wants ceil(4 x 1.25) = 5 and gets it at once (a restart); the load
 * then drops to 1000/s at 1800 s: busy 0.2, desired ceil(5 x 0.2 / 0.7) = 2, applied only
 * once every desired size of the last 5 minutes is at most that.
 */
static void the_hpa_rule(void)
{
    struct sim_scenario *sc =
        scenario("{\"horizon\": 3600, \"interval\": 30, \"restart\": 30, \"vertices\": ["
                 " {\"id\": \"src\", \"parallelism\": 8, \"capacity\": 1000, \"arrival\": ["
                 "  {\"type\": \"constant\", \"rate\": 3500}, {\"type\": \"step\", \"at\": 1800,"
                 "   \"rate\": 1000}]},"
                 " {\"id\": \"sink\", \"parallelism\": 4, \"capacity\": 1000,"
                 "  \"inputs\": [{\"from\": \"src\"}]}]}");
    struct sim_policy pol = {
        .name = "hpa",
        .hpa = true,
        .hpa_rule = {.target = 0.7, .tolerance = 0.1, .stabilization = 300, .init_period = 300}};
    struct sim_result *r = NULL;
    char *err = NULL;
    ASSERT_EQ(sim_run(sc, &pol, 0, NULL, &r, &err), 0);
    const int *sink = r->par + r->n;
    /* The first minute of samples after the initialization ends at 330 s (the sync at 360 s
     * is the first with two samples of the minute): 5 from then. */
    ASSERT_EQ(sink[300], 4);
    ASSERT_EQ(sink[400], 5);
    ASSERT_EQ(sink[1799], 5);
    ASSERT_EQ(sink[r->n - 1], 2);
    /* src: 3500 / 8000 = 0.4375 busy: 0.625 of the target, down to ceil(8 x 0.625) = 5 after
     * the stabilization; later 1000/s: 2. */
    ASSERT_EQ(r->par[r->n - 1], 2);
    ASSERT(r->rescales >= 2 && r->rescales <= 4);
    sim_result_free(r);
    sim_scenario_free(sc);
}

/*
 * The client (scenario "client"): no sample during a gap (the pipeline decides nothing then),
 * and a client that applies scale-ups only: an executed scale-down is counted as executed but
 * the job runs on at its parallelism (not a rescale).
 */
static void the_client_skips_and_refuses(void)
{
    struct sim_scenario *sc = scenario(
        "{\"horizon\": 3600, \"interval\": 30, \"restart\": 30,"
        " \"config\": {\"job.autoscaler.stabilization.interval\": \"1 min\","
        "  \"job.autoscaler.metrics.window\": \"2 min\"},"
        " \"client\": {\"applies\": \"scale-ups\", \"gaps\": [{\"at\": 600, \"duration\": 600}]},"
        " \"vertices\": [{\"id\": \"src\", \"parallelism\": 8, \"capacity\": 1000,"
        "  \"arrival\": [{\"type\": \"constant\", \"rate\": 500}]}]}");
    ASSERT(sim_scenario_gap(sc, 600) && sim_scenario_gap(sc, 1199) && !sim_scenario_gap(sc, 1200));
    struct opt_job *layers = opt_job_new();
    struct sim_policy pol = {.name = "governor", .layers = layers};
    struct sim_result *r = NULL;
    char *err = NULL;
    ASSERT_EQ(sim_run(sc, &pol, 0, NULL, &r, &err), 0);
    ASSERT_EQ(r->decisions, 3600 / 30 - 600 / 30);
    ASSERT_EQ(r->rescales, 0);
    ASSERT(r->executed >= 1 && r->executed <= 3); /* then NOT_APPLIED recommendations */
    ASSERT(json_integer_value(json_object_get(r->reasons, "NOT_APPLIED")) > 0);
    ASSERT_EQ(r->par[r->n - 1], 8);
    sim_result_free(r);
    opt_job_free(layers);
    sim_scenario_free(sc);
    char *e = scenario_error("{\"horizon\": 60, \"client\": {\"applies\": \"some\"},"
                             " \"vertices\": [{\"id\": \"s\", \"parallelism\": 1,"
                             " \"capacity\": 1, \"arrival\": [{\"type\": \"constant\","
                             " \"rate\": 1}]}]}");
    ASSERT_CONTAINS(e, "client.applies: must be \"all\" or \"scale-ups\"");
    free(e);
}

/* A family's scenario is drawn from its seed alone: the same seed gives the same document,
 * another seed another one; every family's documents parse, name their family and seed, and
 * keep each vertex within its key groups. */
static void families_are_drawn_from_the_seed(void)
{
    ASSERT(sim_family_count() >= 10);
    ASSERT_EQ(sim_family_find("spike"), 2);
    ASSERT_EQ(sim_family_find("nope"), -1);
    for (int f = 0; f < sim_family_count(); f++)
        for (uint64_t seed = 1; seed <= 5; seed++) {
            json_t *a = sim_family_scenario(f, seed), *b = sim_family_scenario(f, seed);
            json_t *c = sim_family_scenario(f, seed + 1000);
            ASSERT(json_equal(a, b));
            ASSERT(!json_equal(a, c));
            struct sim_scenario *sc = NULL;
            char *err = NULL;
            ASSERT_EQ(sim_scenario_parse(a, NULL, &sc, &err), 0);
            char name[64];
            snprintf(name, sizeof name, "%s-%llu", sim_family_name(f), (unsigned long long)seed);
            ASSERT_STR(sc->name, name);
            ASSERT(sc->n >= 2 && sc->n <= 8);
            ASSERT(sc->restart >= 30 && sc->restart <= 600);
            for (int v = 0; v < sc->n; v++)
                ASSERT(sc->v[v].parallelism >= 1 &&
                       sc->v[v].parallelism <= sc->v[v].max_parallelism);
            sim_scenario_free(sc);
            json_decref(a);
            json_decref(b);
            json_decref(c);
        }
}

TEST_MAIN(TEST_ENTRY(lag_grows_while_down_and_drains_at_the_spare_rate),
          TEST_ENTRY(family_terms_pauses_amdahl_and_an_emerging_hot_key), TEST_ENTRY(the_hpa_rule),
          TEST_ENTRY(the_client_skips_and_refuses), TEST_ENTRY(families_are_drawn_from_the_seed),
          TEST_ENTRY(counters_meters_and_gauges_as_a_job_reports_them),
          TEST_ENTRY(a_saturated_downstream_vertex_throttles_its_source),
          TEST_ENTRY(capacity_with_a_hot_key_sub_linear_scaling_and_a_cap),
          TEST_ENTRY(arrival_profiles_and_the_fixed_size), TEST_ENTRY(daily_cycle),
          TEST_ENTRY(deterministic_for_a_seed), TEST_ENTRY(a_bad_scenario_names_the_field),
          TEST_ENTRY(the_adapter_decides_as_the_server))
