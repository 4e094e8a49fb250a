/* Unit tests for state.c: the binary form of a job's state (core.h, State codec). The round
 * trip is exact, bit for bit, in the whole form and in the stored one (the state without its
 * window, then each sample); every truncation or corruption of a blob is refused cleanly (no
 * crash, no leak, an empty state); blobs of the previous version still decode. */
#include <stdlib.h>

#include "test.h"

#include "core/core_int.h"
#include "states.h"

static void round_trip_is_exact(void)
{
    struct core_state *a = rich_state();
    size_t len;
    unsigned char *blob = blob_of(a, &len);
    struct core_state *b = core_state_new();
    char err[128];
    bool meta = true;
    ASSERT_EQ(core_state_decode(blob, len, b, &meta, err, sizeof err), 0);
    ASSERT(!meta);
    assert_same_state(a, b);
    /* -0.0 and 0.1 + 0.2 keep their bits, and so does every part */
    ASSERT(signbit(wrow(&b->w, 1)->g.managed_used));
    ASSERT_DEQ(wrow(&b->w, 1)->g.gc_pressure, 0.1 + 0.2);
    ASSERT_EQ(b->w.topo_hash, 0xfedcba9876543210ULL);
    ASSERT_DEQ(b->w.ctr[2].offset, 8.64e7);
    ASSERT_EQ(b->rejected, 2);
    ASSERT_STR(b->pending.v[0].id, "agg");
    ASSERT_EQ(b->pending.v[0].to, 7);
    ASSERT_EQ(b->hist[0].e[0].new_parallelism, 4);
    ASSERT_EQ(b->n_track, 1);
    ASSERT_EQ(b->delayed[0].r[0].outside_bounds, true);
    ASSERT_STR(b->events[0].key, "MemoryPressure\x1fgcPressure");
    free(blob);
    core_state_free(a);
    core_state_free(b);
}

static void every_truncation_is_refused(void)
{
    struct core_state *a = rich_state();
    size_t len;
    unsigned char *blob = blob_of(a, &len);
    struct core_state *b = core_state_new();
    char err[128];
    for (size_t n = 0; n < len; n++) {
        if (core_state_decode(blob, n, b, NULL, err, sizeof err) == 0)
            TEST__FAIL("a blob cut at %zu of %zu bytes was accepted", n, len);
        ASSERT_EQ(core_state_last_at(b), INT64_MIN);
    }
    /* Flipping a count to a huge value must not allocate wildly or crash. */
    for (size_t i = 4; i < len; i += 3) {
        unsigned char *c = malloc(len);
        memcpy(c, blob, len);
        c[i] ^= 0x7f;
        core_state_decode(c, len, b, NULL, err, sizeof err); /* either outcome, no crash, no leak */
        free(c);
    }
    ASSERT_EQ(core_state_decode((const unsigned char *)"nope", 4, b, NULL, err, sizeof err), -1);
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
    size_t len;
    unsigned char *blob = blob_of(a, &len);
    /* the tail: started_at, full_from, hash, 6 counters, rejected, pending (at, n, "agg", 4, 7) */
    size_t tail = 8 + 8 + 8 + 6 * sizeof(struct core_wcounter) + 4 + 8 + 4 + 4 + 3 + 4 + 4;
    memcpy(blob, "GVS2", 4);
    struct core_state *b = core_state_new();
    char err[128];
    ASSERT_EQ(core_state_decode(blob, len - tail, b, NULL, err, sizeof err), 0);
    ASSERT_EQ(b->w.n, 3);
    ASSERT_EQ(b->w.started_at, b->w.running_since);
    ASSERT_EQ(b->w.full_from, INT64_MIN);
    ASSERT_EQ(b->w.topo_hash, 0);
    ASSERT(isnan(b->w.ctr[5].sent));
    ASSERT_EQ(b->rejected, 0);
    ASSERT_EQ(b->pending.at, INT64_MIN);
    /* and the current version with that tail cut off is refused */
    memcpy(blob, "GVS3", 4);
    ASSERT_EQ(core_state_decode(blob, len - tail, b, NULL, err, sizeof err), -1);
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
    core_state_encode_meta(a, &meta, &mlen);
    struct core_state *b = core_state_new();
    char err[128];
    bool is_meta = false;
    ASSERT_EQ(core_state_decode(meta, mlen, b, &is_meta, err, sizeof err), 0);
    ASSERT(is_meta);
    ASSERT_EQ(b->w.n, 0);
    ASSERT_EQ(b->w.seq0, 41);
    ASSERT_EQ(core_state_seq0(b), 41);
    ASSERT_EQ(core_state_seq_end(a), 44);
    for (int i = 0; i < a->w.n; i++) {
        unsigned char *smp;
        size_t slen;
        core_state_encode_sample(a, 41 + i, &smp, &slen);
        /* out of order: refused, nothing added */
        ASSERT_EQ(core_state_decode_sample(b, 41 + i + 1, smp, slen, err, sizeof err), -1);
        ASSERT_CONTAINS(err, "out of order");
        ASSERT_EQ(core_state_decode_sample(b, 41 + i, smp, slen, err, sizeof err), 0);
        free(smp);
    }
    /* a sample of the wrong size */
    ASSERT_EQ(core_state_decode_sample(b, 44, (const unsigned char *)"xx", 2, err, sizeof err), -1);
    ASSERT_EQ(core_state_seq_end(b), 44);
    assert_same_state(a, b);
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

/* ---------------------------------------------------- odd doubles, empty -- */

static double nan_payload(uint64_t bits)
{
    double x;
    memcpy(&x, &bits, sizeof x);
    return x;
}

static void with_payloads(struct win *x)
{
    x->r[0]->g.heap_used = nan_payload(0x7ff8000000000123ULL);
    x->r[2]->v[1].lag = nan_payload(0xfff8000000000001ULL);
}

/* Every double keeps its bits, NaN payloads and signs included (a text form could not). */
static void odd_doubles_keep_their_bits(void)
{
    struct core_state *a = core_state_new(), *b = core_state_new();
    fill_state_tweaked(a, with_payloads);
    unsigned char *blob;
    size_t len;
    char err[128];
    core_state_encode(a, &blob, &len);
    ASSERT_EQ(core_state_decode(blob, len, b, NULL, err, sizeof err), 0);
    ASSERT_EQ(b->last_at, a->last_at);
    ASSERT_EQ(b->w.running_since, INT64_MIN);
    ASSERT_STR(b->w.ids[1], a->w.ids[1]);
    ASSERT_EQ(b->w.n, 3);
    size_t rs = sizeof(struct core_wrow) + 2 * sizeof(struct core_vmetrics);
    struct core_wrow *ra = malloc(rs), *rb = malloc(rs);
    for (int i = 0; i < 3; i++) {
        int64_t ta, tb;
        core__window_get(&a->w, i, &ta, ra);
        core__window_get(&b->w, i, &tb, rb);
        ASSERT_EQ(ta, tb);
        ASSERT(memcmp(ra, rb, rs) == 0);
    }
    uint64_t payload;
    memcpy(&payload, &rb->v[1].lag, sizeof payload);
    ASSERT_EQ(payload, 0xfff8000000000001ULL);
    free(ra);
    free(rb);
    ASSERT(memcmp(a->hist[0].e, b->hist[0].e, 2 * sizeof *a->hist[0].e) == 0);
    ASSERT_EQ(b->hist[0].e[0].at, INT64_MAX);
    ASSERT_EQ(b->track[0].restart_ms, -1);
    ASSERT_EQ(b->delayed[0].r[1].parallelism, 2);
    ASSERT_STR(b->events[0].key, "ScalingReport\x1fsource");
    assert_same_state(a, b);
    free(blob);
    core_state_free(a);
    core_state_free(b);
}

static void empty_state_round_trip(void)
{
    struct core_state *a = core_state_new(), *b = core_state_new();
    unsigned char *blob;
    size_t len;
    char err[128];
    fill_state(b); /* something to clear */
    core_state_encode(a, &blob, &len);
    ASSERT_EQ(core_state_decode(blob, len, b, NULL, err, sizeof err), 0);
    ASSERT_EQ(core_state_last_at(b), INT64_MIN);
    ASSERT_EQ(b->w.n_vertices, 0);
    ASSERT_EQ(b->n_hist, 0);
    ASSERT_EQ(b->pending.at, INT64_MIN);
    assert_same_state(a, b);
    free(blob);
    core_state_free(a);
    core_state_free(b);
}

TEST_MAIN(TEST_ENTRY(version_2_blob_loads), TEST_ENTRY(round_trip_is_exact),
          TEST_ENTRY(every_truncation_is_refused), TEST_ENTRY(meta_plus_samples_round_trip),
          TEST_ENTRY(numbers_survive_restarts_and_clears), TEST_ENTRY(odd_doubles_keep_their_bits),
          TEST_ENTRY(empty_state_round_trip))
