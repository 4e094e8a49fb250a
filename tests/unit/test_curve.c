/* Unit tests for core/curve.c (core/README.md, Curve): the measured scalability curve, its
 * fit, its knee, and when it is read. */
#include "test.h"

#include "core/core_int.h"
#include "options/options.h"

/* A history of scale-ups from p[k] measuring x[k] (each expecting linear gains). */
static void history(struct core_vhistory *h, struct core_hist_entry *e, const int *p,
                    const double *x, int n)
{
    memset(h, 0, sizeof *h);
    for (int k = 0; k < n; k++)
        e[k] = (struct core_hist_entry){.at = 1000 * k,
                                        .current_parallelism = p[k],
                                        .new_parallelism = p[k + 1],
                                        .true_processing_rate = x[k],
                                        .expected_processing_rate = x[k] / p[k] * p[k + 1],
                                        .target_data_rate = NAN};
    h->e = e;
    h->n = h->cap = n;
}

/* Amdahl's law exactly: c = 1000/s a subtask, sigma = 0.1. X(2) = 2000 / 1.1, X(4) = 4000 /
 * 1.3, X(8) = 8000 / 1.7, so p / X = 0.0009 + 0.0001 p: b = 0.0001, a = 0.0009. The most any
 * parallelism reaches is 1 / b = 10,000/s; at share 0.9 the stop is ceil(0.9 x 0.0009 / (0.1
 * x 0.0001)) = 81 (X(81) = 81000 / 9 = 9000, 90% of 10,000; X(80) = 80000 / 8.9 = 8988.8). */
static void amdahl_fit_and_knee(void)
{
    const int p[] = {2, 4, 8};
    const double x[] = {2000.0 / 1.1, 4000.0 / 1.3};
    struct core_hist_entry e[2];
    struct core_vhistory h;
    history(&h, e, p, x, 2);
    struct core_curve c;
    ASSERT(core__curve_fit(&h, 8, 8000.0 / 1.7, 0.9, &c));
    ASSERT_EQ(c.n, 3);
    ASSERT_NEAR(c.b, 0.0001, 1e-12);
    ASSERT_NEAR(c.a, 0.0009, 1e-12);
    ASSERT_NEAR(c.x_max, 10000, 1e-6);
    ASSERT_EQ(c.stop, 81);
    ASSERT_NEAR(core__curve_rate(&c, 81), 9000, 1e-6);
    /* The stop is never below the fewest subtasks measured. */
    ASSERT(core__curve_fit(&h, 8, 8000.0 / 1.7, 0.05, &c));
    ASSERT_EQ(c.stop, 2);
}

/* A sink capped at 1245/s by a database: 2 subtasks and 7 both process 1245/s. p / X =
 * p / 1245: a = 0, b = 1 / 1245: sigma = 1, the most is 1245/s, reached at any p; the stop is
 * the fewest measured, 2. A linear vertex (2000/s at 2, 4000/s at 4) draws no bend. */
static void flat_and_linear(void)
{
    const int p[] = {2, 7};
    const double x[] = {1245};
    struct core_hist_entry e[1];
    struct core_vhistory h;
    history(&h, e, p, x, 1);
    struct core_curve c;
    ASSERT(core__curve_fit(&h, 7, 1245, 0.9, &c));
    ASSERT_NEAR(c.a, 0, 1e-12);
    ASSERT_NEAR(c.x_max, 1245, 1e-6);
    ASSERT_EQ(c.stop, 2);
    ASSERT_EQ(c.least_p, 2);

    const int q[] = {2, 4};
    const double y[] = {2000};
    history(&h, e, q, y, 1);
    ASSERT(!core__curve_fit(&h, 4, 4000, 0.9, &c));
    ASSERT(!c.fitted);
    /* One parallelism only: nothing to fit. */
    ASSERT(!core__curve_fit(NULL, 4, 4000, 0.9, &c));
}

/* core__curve_limited reads the curve only after a scale-up that did not pay: 2 -> 7 expected
 * 1245 x 7 / 2 = 4357.5/s and measured 1245/s: 0 of the 3112.5/s expected, below the
 * effectiveness threshold 0.1. A scale-up that paid (2 -> 4, 2000 -> 3900: 95%) is not
 * limited; nor is a vertex without the option, or one whose measured rate moved a little
 * (2 -> 4, 2000 -> 2150: 7.5% < 10%: limited). */
static void read_after_a_scale_up_that_did_not_pay(void)
{
    struct core_config cfg;
    opt_config_defaults(&cfg);
    ASSERT(cfg.scalability_curve);
    ASSERT_NEAR(core__knee_share(&cfg), 0.9, 0);
    const int p[] = {2, 7};
    const double x[] = {1245};
    struct core_hist_entry e[1];
    struct core_vhistory h;
    history(&h, e, p, x, 1);
    struct core_curve c;
    ASSERT(core__curve_limited(&cfg, &h, 7, 1245, &c));
    ASSERT_EQ(c.stop, 2);
    const int q[] = {2, 4};
    const double y[] = {2000};
    history(&h, e, q, y, 1);
    ASSERT(!core__curve_limited(&cfg, &h, 4, 3900, &c));
    ASSERT(core__curve_limited(&cfg, &h, 4, 2150, &c));
    cfg.scalability_curve = false;
    ASSERT(!core__curve_limited(&cfg, &h, 4, 2150, &c));
    /* Without the curve the knee share is the skew diagnosis's: 1 - skew.saturation. */
    ASSERT_NEAR(core__knee_share(&cfg), 0.95, 1e-12);
    /* Under the flink profile the curve is off. */
    opt_config_set_profile(&cfg, CORE_PROFILE_FLINK);
    ASSERT(!cfg.scalability_curve);
}

TEST_MAIN(TEST_ENTRY(amdahl_fit_and_knee), TEST_ENTRY(flat_and_linear),
          TEST_ENTRY(read_after_a_scale_up_that_did_not_pay))
