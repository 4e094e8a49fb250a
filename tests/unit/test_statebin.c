/* Unit tests for statebin.c: the binary state round trip is exact, and every truncation or
 * corruption of a blob is refused cleanly (no crash, no leak, an empty state). */
#include <stdlib.h>

#include "test.h"

#include "core/core_int.h"
#include "json.h"
#include "statebin.h"

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
    core__grow(&w->s, &w->cap, 3, sizeof *w->s);
    for (int i = 0; i < 3; i++) {
        w->s[i].at = 1764410400000 + i * 30000;
        w->s[i].g = (struct core_gmetrics){NAN, 0.1 + 0.2, 1e9, 0.25, -0.0, INFINITY};
        w->s[i].v = core__xcalloc(2, sizeof *w->s[i].v);
        w->s[i].v[1] = (struct core_vmetrics){0.95,   0.5,  1.0,       NAN,      1000.0 * i,
                                              5e-324, 1000, -INFINITY, 1234.5678};
        w->n++;
    }
    struct core_hist_entry e = {.at = 5,
                                .current_parallelism = 2,
                                .new_parallelism = 4,
                                .true_processing_rate = 1052.632,
                                .expected_processing_rate = 2105.264,
                                .target_data_rate = NAN};
    core__history_add(st, "agg", &e);
    core__tracking_add(st, 5);
    struct core_config cfg;
    core_config_defaults(&cfg);
    bool out;
    core__delayed_scale_down(st, &cfg, "src", 4, 2, true, 7, &out);
    struct core_decision d;
    core_decision_init(&d);
    core__event(&d, "Normal", "MemoryPressure", "gcPressure", "m");
    core__events_dedupe(st, &d, 9, 60000);
    core_decision_deinit(&d);
    return st;
}

static char *as_json(const struct core_state *st)
{
    json_t *j = json_state_dump(st);
    char *s = json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(j);
    return s;
}

static void round_trip_is_exact(void)
{
    struct core_state *a = rich_state();
    unsigned char *blob;
    size_t len;
    statebin_dump(a, &blob, &len);
    struct core_state *b = core_state_new();
    char err[128];
    ASSERT_EQ(statebin_load(blob, len, b, err, sizeof err), 0);
    char *ja = as_json(a), *jb = as_json(b);
    ASSERT_STR(ja, jb);
    /* -0.0 and 0.1 + 0.2 keep their bits */
    ASSERT(signbit(b->w.s[1].g.managed_used));
    ASSERT_DEQ(b->w.s[1].g.gc_pressure, 0.1 + 0.2);
    unsigned char *blob2;
    size_t len2;
    statebin_dump(b, &blob2, &len2);
    ASSERT_EQ(len, len2);
    ASSERT(memcmp(blob, blob2, len) == 0);
    free(ja);
    free(jb);
    free(blob);
    free(blob2);
    core_state_free(a);
    core_state_free(b);
}

static void every_truncation_is_refused(void)
{
    struct core_state *a = rich_state();
    unsigned char *blob;
    size_t len;
    statebin_dump(a, &blob, &len);
    struct core_state *b = core_state_new();
    char err[128];
    for (size_t n = 0; n < len; n++) {
        if (statebin_load(blob, n, b, err, sizeof err) == 0)
            TEST__FAIL("a blob cut at %zu of %zu bytes was accepted", n, len);
        ASSERT_EQ(core_state_last_at(b), INT64_MIN);
    }
    /* Flipping a count to a huge value must not allocate wildly or crash. */
    for (size_t i = 4; i < len; i += 3) {
        unsigned char *c = malloc(len);
        memcpy(c, blob, len);
        c[i] ^= 0x7f;
        statebin_load(c, len, b, err, sizeof err); /* either outcome, no crash, no leak */
        free(c);
    }
    ASSERT_EQ(statebin_load((const unsigned char *)"nope", 4, b, err, sizeof err), -1);
    ASSERT_CONTAINS(err, "not a governor state");
    free(blob);
    core_state_free(a);
    core_state_free(b);
}

/* A blob written before the part after the events existed ("GVS2") loads: that part empty,
 * the window stabilizing from its running_since, its counters unknown. */
static void version_2_blob_loads(void)
{
    struct core_state *a = rich_state();
    unsigned char *blob;
    size_t len;
    statebin_dump(a, &blob, &len);
    /* the tail: started_at, full_from, hash, 6 counters, rejected, pending (at, n, "agg", 4, 7) */
    size_t tail = 8 + 8 + 8 + 6 * sizeof(struct core_wcounter) + 4 + 8 + 4 + 4 + 3 + 4 + 4;
    memcpy(blob, "GVS2", 4);
    struct core_state *b = core_state_new();
    char err[128];
    ASSERT_EQ(statebin_load(blob, len - tail, b, err, sizeof err), 0);
    ASSERT_EQ(b->w.n, 3);
    ASSERT_EQ(b->w.started_at, b->w.running_since);
    ASSERT_EQ(b->w.full_from, INT64_MIN);
    ASSERT_EQ(b->w.topo_hash, 0);
    ASSERT(isnan(b->w.ctr[5].sent));
    ASSERT_EQ(b->rejected, 0);
    ASSERT_EQ(b->pending.at, INT64_MIN);
    /* and the current version with that tail cut off is refused */
    memcpy(blob, "GVS3", 4);
    ASSERT_EQ(statebin_load(blob, len - tail, b, err, sizeof err), -1);
    free(blob);
    core_state_free(a);
    core_state_free(b);
}

static void meta_plus_samples_round_trip(void)
{
    /* The store's form: the state without its samples, then each sample by number. */
    struct core_state *a = rich_state();
    a->w.seq0 = 41; /* samples 41, 42, 43 */
    unsigned char *meta;
    size_t mlen;
    statebin_dump_meta(a, &meta, &mlen);
    struct core_state *b = core_state_new();
    char err[128];
    bool is_meta = false;
    ASSERT_EQ(statebin_load_meta(meta, mlen, b, &is_meta, err, sizeof err), 0);
    ASSERT(is_meta);
    ASSERT_EQ(b->w.n, 0);
    ASSERT_EQ(b->w.seq0, 41);
    for (int i = 0; i < a->w.n; i++) {
        unsigned char *smp;
        size_t slen;
        statebin_dump_sample(a, i, &smp, &slen);
        /* out of order: refused, nothing added */
        ASSERT_EQ(statebin_add_sample(b, 41 + i + 1, smp, slen, err, sizeof err), -1);
        ASSERT_CONTAINS(err, "out of order");
        ASSERT_EQ(statebin_add_sample(b, 41 + i, smp, slen, err, sizeof err), 0);
        free(smp);
    }
    /* a sample of the wrong size */
    ASSERT_EQ(statebin_add_sample(b, 44, (const unsigned char *)"xx", 2, err, sizeof err), -1);
    char *ja = as_json(a), *jb = as_json(b);
    ASSERT_STR(ja, jb);
    free(ja);
    free(jb);
    free(meta);
    core_state_free(a);
    core_state_free(b);
}

static void numbers_survive_restarts_and_clears(void)
{
    /* seq0 counts every sample ever taken: freeing the window or clearing the state moves it
     * past the samples it held, so storage never sees a number twice. */
    struct core_state *st = rich_state(); /* 3 samples from seq0 0 */
    ASSERT_EQ(st->w.seq0, 0);
    core__window_free(&st->w);
    ASSERT_EQ(st->w.seq0, 3);
    core_state_clear(st);
    ASSERT_EQ(st->w.seq0, 3);
    core_state_free(st);
}

TEST_MAIN(TEST_ENTRY(version_2_blob_loads), TEST_ENTRY(round_trip_is_exact),
          TEST_ENTRY(every_truncation_is_refused), TEST_ENTRY(meta_plus_samples_round_trip),
          TEST_ENTRY(numbers_survive_restarts_and_clears))
