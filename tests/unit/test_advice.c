/*
 * Unit tests for advice.c's patterns (advice_patterns), each on a history built by hand to
 * trigger it, one built to trigger none, and one where two patterns conflict. Decisions are a
 * minute apart; the job's figures per decision are what the advice reads (the vertex rows are
 * not needed).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "test.h"

#include "decision/advice.h"
#include "base/xmem.h"

enum { WITHIN, HIGH_UTIL, HIGH_BACKLOG, LOW_UTIL };

static void init(struct timeline_history *h)
{
    static const char *const codes[] = {"WITHIN_TARGET", "HIGH_UTILIZATION", "HIGH_BACKLOG",
                                        "LOW_UTILIZATION"};
    memset(h, 0, sizeof *h);
    h->job = xstrdup("orders");
    h->n_codes = 4;
    h->codes = xcalloc(4, sizeof *h->codes);
    for (int i = 0; i < 4; i++)
        h->codes[i] = xstrdup(codes[i]);
    h->n_configs = 1;
    h->configs = xcalloc(1, sizeof *h->configs);
    h->configs[0].util_target = 0.7;
    h->configs[0].util_max = 0.9;
    h->configs[0].util_min = 0.4;
    h->configs[0].lag_threshold_s = 300;
    h->configs[0].slo_lag_s = NAN;
    h->configs[0].scale_down_interval_s = 3600;
    h->configs[0].catch_up_s = 300;
}

/* Appends a decision one minute after the last: cur -> tgt (executed when they differ). */
static void add(struct timeline_history *h, int cur, int tgt, double load, double backlog,
                int reason)
{
    h->d = xrealloc(h->d, (size_t)(h->n_d + 1) * sizeof *h->d);
    struct timeline_decision *d = &h->d[h->n_d];
    memset(d, 0, sizeof *d);
    d->id = 100 + h->n_d;
    d->at = 1764410400000LL + h->n_d * 60000LL;
    d->current = cur;
    d->target = tgt;
    d->executed = cur != tgt;
    snprintf(d->action, sizeof d->action, "%s",
             cur == tgt ? "NO_CHANGE" : (tgt > cur ? "SCALE_UP" : "SCALE_DOWN"));
    d->load_max = load;
    d->backlog_s = backlog;
    d->reason = reason;
    h->n_d++;
}

static const char *str(json_t *o, const char *k)
{
    return json_string_value(json_object_get(o, k));
}

static void none(void)
{
    struct timeline_history h;
    init(&h);
    for (int i = 0; i < 120; i++)
        add(&h, 4, 4, 0.6 + 0.05 * (i % 3), i % 5 ? 2 : 0, WITHIN);
    json_t *a = advice_patterns(&h);
    ASSERT_EQ(json_array_size(a), 0);
    json_decref(a);
    timeline_history_free(&h);
    /* no decisions at all */
    init(&h);
    a = advice_patterns(&h);
    ASSERT_EQ(json_array_size(a), 0);
    json_decref(a);
    timeline_history_free(&h);
}

/* Low load, a scale-down 8 -> 4, the backlog grows from 12 on at 0.92, scale-up at 15: 4 min
 * of growth, too short to be a slow scale-up. */
static void build_down_up(struct timeline_history *h, double after_load, double after_backlog)
{
    for (int i = 0; i < 10; i++)
        add(h, 8, 8, 0.3, 0, LOW_UTIL);
    add(h, 8, 4, 0.3, 0, LOW_UTIL);        /* 10: the scale-down (id 110) */
    add(h, 4, 4, 0.6, 0, WITHIN);          /* 11 */
    static const double b[] = {5, 20, 50}; /* 12..14 growing */
    for (int i = 0; i < 3; i++)
        add(h, 4, 4, 0.92, b[i], WITHIN);
    add(h, 4, 8, 0.95, 150, HIGH_UTIL); /* 15: the scale-up (id 115) */
    for (int i = 0; i < 40; i++)
        add(h, 8, 8, after_load, after_backlog, WITHIN);
}

static void excessive_down(void)
{
    struct timeline_history h;
    init(&h);
    build_down_up(&h, 0.6, 0);
    json_t *a = advice_patterns(&h);
    ASSERT_EQ(json_array_size(a), 1);
    json_t *x = json_array_get(a, 0);
    ASSERT_STR(str(x, "pattern"), "EXCESSIVE_DOWN_SCALING");
    ASSERT_STR(str(x, "option"), "job.autoscaler.scale-down.interval");
    ASSERT_STR(str(x, "current"), "60 min");
    /* 60 min + the 5 min from the scale-down to the scale-up, up to 5 min: 65 min */
    ASSERT_STR(str(x, "advised"), "65 min");
    json_t *c = json_array_get(json_object_get(json_object_get(x, "evidence"), "cases"), 0);
    ASSERT_EQ(json_integer_value(json_object_get(c, "scale_down_decision")), 110);
    ASSERT_EQ(json_integer_value(json_object_get(c, "backlog_grew_at_decision")), 112);
    ASSERT_EQ(json_integer_value(json_object_get(c, "scale_up_decision")), 115);
    ASSERT_NEAR(json_real_value(json_object_get(c, "utilization_when_backlog_grew")), 0.92, 1e-9);
    ASSERT(str(x, "expected_effect") != NULL);
    json_decref(a);
    timeline_history_free(&h);
}

static void slow_up(void)
{
    struct timeline_history h;
    init(&h);
    for (int i = 0; i < 5; i++)
        add(&h, 4, 4, 0.6, 0, WITHIN);
    for (int i = 0; i < 20; i++) /* 5..24: growing at 0.86 for 20 min */
        add(&h, 4, 4, 0.86 + 0.001 * i, 10.0 * (i + 1), WITHIN);
    add(&h, 4, 6, 0.95, 220, HIGH_UTIL); /* 25: the scale-up */
    for (int i = 0; i < 10; i++)
        add(&h, 6, 6, 0.65, 0, WITHIN);
    json_t *a = advice_patterns(&h);
    ASSERT_EQ(json_array_size(a), 1);
    json_t *x = json_array_get(a, 0);
    ASSERT_STR(str(x, "pattern"), "SLOW_UP_SCALING");
    ASSERT_STR(str(x, "option"), "job.autoscaler.utilization.max");
    ASSERT_STR(str(x, "current"), "0.90");
    ASSERT_STR(str(x, "advised"), "0.80"); /* 0.86 - 0.05, down to 0.05 */
    json_t *ev = json_object_get(x, "evidence");
    ASSERT_NEAR(json_real_value(json_object_get(ev, "lowest_utilization_when_backlog_grew")), 0.86,
                1e-9);
    json_t *c = json_array_get(json_object_get(ev, "cases"), 0);
    ASSERT_EQ(json_integer_value(json_object_get(c, "backlog_grew_from_decision")), 105);
    ASSERT_EQ(json_integer_value(json_object_get(c, "scale_up_decision")), 125);
    json_decref(a);
    timeline_history_free(&h);
}

static void excessive_up(void)
{
    struct timeline_history h;
    init(&h);
    for (int i = 0; i < 5; i++)
        add(&h, 4, 4, 0.8, 0, WITHIN);
    add(&h, 4, 12, 0.95, 0, HIGH_UTIL); /* 5: 4 -> 12 */
    add(&h, 4, 4, 0.95, 0, WITHIN);     /* not applied yet: not counted */
    for (int i = 0; i < 40; i++)
        add(&h, 12, 12, 0.2, 0, WITHIN);
    json_t *a = advice_patterns(&h);
    ASSERT_EQ(json_array_size(a), 1);
    json_t *x = json_array_get(a, 0);
    ASSERT_STR(str(x, "pattern"), "EXCESSIVE_UP_SCALING");
    ASSERT_STR(str(x, "option"), "job.autoscaler.utilization.target");
    ASSERT_STR(str(x, "current"), "0.70");
    ASSERT_STR(str(x, "advised"), "0.85"); /* 0.7 + (0.7 - 0.2) / 2, held below 0.9 - 0.05 */
    json_t *c = json_array_get(json_object_get(json_object_get(x, "evidence"), "cases"), 0);
    ASSERT_EQ(json_integer_value(json_object_get(c, "scale_up_decision")), 105);
    ASSERT_NEAR(json_real_value(json_object_get(c, "utilization_after")), 0.2, 1e-9);
    json_decref(a);
    timeline_history_free(&h);

    /* For a backlog: the catch-up duration. */
    init(&h);
    add(&h, 4, 4, 0.8, 400, WITHIN);
    add(&h, 4, 12, 0.95, 400, HIGH_BACKLOG);
    for (int i = 0; i < 40; i++)
        add(&h, 12, 12, 0.2, 0, WITHIN);
    a = advice_patterns(&h);
    x = json_array_get(a, 0);
    ASSERT_STR(str(x, "pattern"), "EXCESSIVE_UP_SCALING");
    ASSERT_STR(str(x, "option"), "job.autoscaler.catch-up.duration");
    ASSERT_STR(str(x, "current"), "5 min");
    ASSERT_STR(str(x, "advised"), "10 min");
    json_decref(a);
    timeline_history_free(&h);
}

static void conflicting(void)
{
    struct timeline_history h;
    init(&h);
    build_down_up(&h, 0.2, 0); /* the scale-up that undid the scale-down was too large */
    json_t *a = advice_patterns(&h);
    ASSERT_EQ(json_array_size(a), 1);
    json_t *x = json_array_get(a, 0);
    ASSERT_STR(str(x, "pattern"), "CONFLICTING_PATTERNS");
    ASSERT(json_is_null(json_object_get(x, "advised")));
    ASSERT(json_is_null(json_object_get(x, "option")));
    json_t *p = json_object_get(x, "patterns");
    ASSERT_EQ(json_array_size(p), 2);
    ASSERT_STR(json_string_value(json_array_get(p, 0)), "EXCESSIVE_DOWN_SCALING");
    ASSERT_STR(json_string_value(json_array_get(p, 1)), "EXCESSIVE_UP_SCALING");
    ASSERT(json_object_get(json_object_get(x, "evidence"), "EXCESSIVE_UP_SCALING") != NULL);
    json_decref(a);
    timeline_history_free(&h);
}

TEST_MAIN(TEST_ENTRY(none), TEST_ENTRY(excessive_down), TEST_ENTRY(slow_up),
          TEST_ENTRY(excessive_up), TEST_ENTRY(conflicting))
