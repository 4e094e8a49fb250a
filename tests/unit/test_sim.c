/*
 * Unit tests for server/sim/: the simulator's own arithmetic, on jobs small enough to
 * compute by hand, and the adapter over the decision pipeline.
 */
#include <jansson.h>
#include <stdlib.h>

#include "test.h"

#include "options/options.h"
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

TEST_MAIN(TEST_ENTRY(lag_grows_while_down_and_drains_at_the_spare_rate),
          TEST_ENTRY(counters_meters_and_gauges_as_a_job_reports_them),
          TEST_ENTRY(a_saturated_downstream_vertex_throttles_its_source),
          TEST_ENTRY(capacity_with_a_hot_key_sub_linear_scaling_and_a_cap),
          TEST_ENTRY(arrival_profiles_and_the_fixed_size), TEST_ENTRY(daily_cycle),
          TEST_ENTRY(deterministic_for_a_seed), TEST_ENTRY(a_bad_scenario_names_the_field),
          TEST_ENTRY(the_adapter_decides_as_the_server))
