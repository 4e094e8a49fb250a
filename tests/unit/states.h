/*
 * states.h - job states for the tests of their codecs (test_state.c, the binary form;
 * test_statejson.c, the old JSON form): one with something in every part, one of awkward
 * doubles, and a comparison of two states through their binary form. Header-only, like
 * test.h (include it after test.h and core/core_int.h).
 */
#ifndef GOVERNOR_TEST_STATES_H
#define GOVERNOR_TEST_STATES_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "options/options.h"
#include "windows.h"

/* A state with something in every part: a window (with what it knows of the counters),
 * history, tracking, delayed scale-downs, the event table, a rejected-sample count and a
 * pending scaling. */
static struct core_state *rich_state(void)
{
    struct core_state *st = core_state_new();
    st->last_at = 1764410400000;
    struct core_window *w = &st->w;
    w->running_since = 1764410000000;
    w->n_vertices = 2;
    w->ids = core__xcalloc(2, sizeof *w->ids);
    w->parallelism = core__xcalloc(2, sizeof *w->parallelism);
    w->ids[0] = core__strdup("src");
    w->ids[1] = core__strdup("agg");
    w->parallelism[0] = 2;
    w->parallelism[1] = 4;
    w->started_at = 1764410100000;
    w->full_from = 1764410400000;
    w->topo_hash = 0xfedcba9876543210ULL;
    w->ctr = core__xcalloc(2 * CORE_CTR__COUNT, sizeof *w->ctr);
    for (int i = 0; i < 2 * CORE_CTR__COUNT; i++)
        w->ctr[i] = (struct core_wcounter){i % 2 ? NAN : 1e6 * i, i == 2 ? 8.64e7 : -0.0};
    st->rejected = 2;
    st->pending.at = 1764410370000;
    core__grow(&st->pending.v, &st->pending.cap, 1, sizeof *st->pending.v);
    st->pending.v[0] = (struct core_pending_vertex){core__strdup("agg"), 4, 7};
    st->pending.n = 1;
    struct win x;
    win_init(&x, 2, 3, 30000, 0.0);
    for (int i = 0; i < 3; i++) {
        x.at[i] += 1764410400000;
        x.r[i]->g = (struct core_gmetrics){NAN, 0.1 + 0.2, 1e9, 0.25, -0.0, INFINITY};
        x.r[i]->v[1] = (struct core_vmetrics){0.95,   0.5,  1.0,       NAN,      1000.0 * i,
                                              5e-324, 1000, -INFINITY, 1234.5678};
    }
    win_put(&x, w);
    win_free(&x);
    struct core_hist_entry e = {.at = 5,
                                .current_parallelism = 2,
                                .new_parallelism = 4,
                                .true_processing_rate = 1052.632,
                                .expected_processing_rate = 2105.264,
                                .target_data_rate = NAN};
    core__history_add(st, "agg", &e);
    core__tracking_add(st, 5);
    struct core_config cfg;
    opt_config_defaults(&cfg);
    bool out;
    core__delayed_scale_down(st, &cfg, "src", 4, 2, true, 7, &out);
    struct core_decision d;
    core_decision_init(&d);
    core__event(&d, "Normal", "MemoryPressure", "gcPressure", "m");
    core__events_dedupe(st, &d, 9, 60000);
    core_decision_deinit(&d);
    return st;
}

/* A state whose doubles are the awkward ones (0.1 + 0.2, NaN, infinities, -0.0, the smallest
 * subnormal, the largest finite), whose ids need quoting in any text form, and whose times
 * are the extremes of int64; tweak (may be NULL) changes the window's samples before they go
 * into the window. */
static void fill_state_tweaked(struct core_state *st, void (*tweak)(struct win *))
{
    const double odd[] = {
        0.1 + 0.2, NAN,  INFINITY, -INFINITY, -0.0, 5e-324, 1.7976931348623157e308,
        1.0 / 3.0, 1e21, -2.5};
    int k = 0;
#define ODD() (odd[(k++) % (int)(sizeof odd / sizeof odd[0])])
    st->last_at = 1764410400000LL;
    struct core_window *w = &st->w;
    w->running_since = INT64_MIN;
    w->n_vertices = 2;
    w->ids = core__xcalloc(2, sizeof *w->ids);
    w->ids[0] = core__strdup("source");
    w->ids[1] = core__strdup("agg \"quoted\" \x1f");
    w->parallelism = core__xcalloc(2, sizeof *w->parallelism);
    w->parallelism[0] = 4;
    w->parallelism[1] = 1;
    struct win x;
    win_init(&x, 2, 3, 10000, 0.0);
    for (int i = 0; i < 3; i++) {
        x.at[i] += 1764410400000LL;
        double *g = &x.r[i]->g.slots_used;
        for (int f = 0; f < 6; f++)
            g[f] = ODD();
        for (int v = 0; v < 2; v++) {
            double *m = &x.r[i]->v[v].load;
            for (int f = 0; f < 9; f++)
                m[f] = ODD();
        }
    }
    if (tweak)
        tweak(&x);
    win_put(&x, w);
    win_free(&x);
    core__grow(&st->hist, &st->cap_hist, 1, sizeof *st->hist);
    st->n_hist = 1;
    st->hist[0].id = core__strdup("source");
    core__grow(&st->hist[0].e, &st->hist[0].cap, 2, sizeof *st->hist[0].e);
    st->hist[0].n = 2;
    st->hist[0].e[0] = (struct core_hist_entry){INT64_MAX, 4, 8, ODD(), ODD(), ODD()};
    st->hist[0].e[1] = (struct core_hist_entry){-1, 8, 6, ODD(), ODD(), ODD()};
    core__grow(&st->track, &st->cap_track, 2, sizeof *st->track);
    st->n_track = 2;
    st->track[0] = (struct core_tracking){1000, -1};
    st->track[1] = (struct core_tracking){2000, 312000};
    core__grow(&st->delayed, &st->cap_delayed, 1, sizeof *st->delayed);
    st->n_delayed = 1;
    st->delayed[0].id = core__strdup("agg");
    st->delayed[0].first_trigger = 5000;
    core__grow(&st->delayed[0].r, &st->delayed[0].cap, 2, sizeof *st->delayed[0].r);
    st->delayed[0].n = 2;
    st->delayed[0].r[0] = (struct core_delayed_rec){5000, 3, true};
    st->delayed[0].r[1] = (struct core_delayed_rec){6000, 2, false};
    core__grow(&st->events, &st->cap_events, 1, sizeof *st->events);
    st->n_events = 1;
    st->events[0] = (struct core_event_seen){core__strdup("ScalingReport\x1fsource"), 10, 20, 2};
#undef ODD
}

static inline void fill_state(struct core_state *st)
{
    fill_state_tweaked(st, NULL);
}

/* The whole blob of st: two states encode to the same bytes when they agree in everything
 * the state keeps (the encoder writes every field but the allocation sizes). */
static unsigned char *blob_of(const struct core_state *st, size_t *len)
{
    unsigned char *b;
    core_state_encode(st, &b, len);
    return b;
}

static void assert_same_state(const struct core_state *a, const struct core_state *b)
{
    size_t la, lb;
    unsigned char *ba = blob_of(a, &la), *bb = blob_of(b, &lb);
    ASSERT_EQ(la, lb);
    ASSERT(memcmp(ba, bb, la) == 0);
    free(ba);
    free(bb);
}

#endif
