/* Unit tests for codec.c: the compact form of a job's samples (core/codec.h). Every row read
 * back is the row written, bit for bit, whatever the numbers (random, and the awkward ones:
 * NaN payloads, infinities, -0.0, denormals, the largest doubles, counters that reset, the
 * largest and smallest times), across chunk boundaries made by the row and time limits, by a
 * series appearing and by a layout change; a reader's state continues a chunk as the
 * writer's does; a steady stream takes about a bit a number; a decide request's sample goes
 * to a layout and a row and back unchanged; truncated chunks are refused. */
#include <float.h>
#include <stdlib.h>

#include "test.h"

#include "core/codec.h"

static uint64_t rng = 0x9e3779b97f4a7c15ULL;
static uint64_t next(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static uint64_t bits(double x)
{
    uint64_t b;
    memcpy(&b, &x, sizeof b);
    return b;
}

static double of_bits(uint64_t b)
{
    double x;
    memcpy(&x, &b, sizeof x);
    return x;
}

/* Rows written, kept to compare against what is read. */
struct stream {
    int k, n;
    int64_t *at;
    double *rows; /* n x k */
};

/* Chunks of a stream. */
struct chunks {
    int n;
    struct core_chunk *c[4096];
};

static void chunks_free(struct chunks *cs)
{
    for (int i = 0; i < cs->n; i++)
        free(cs->c[i]);
    cs->n = 0;
}

/* Writes s into cs under lim, counter mask and the layout of each row (layout[i], NULL: ""). */
static void write_all(const struct stream *s, struct chunks *cs,
                      const struct core_codec_limits *lim, const unsigned char *counter,
                      const char *const *layout)
{
    struct core_codec_state st;
    core_codec_state_init(&st, s->k);
    struct core_chunk *open = NULL;
    for (int i = 0; i < s->n; i++) {
        const char *l = layout && layout[i] ? layout[i] : "";
        const double *row = s->rows + (size_t)i * (size_t)s->k;
        if (core_codec_append(&open, &st, lim, s->at[i], row, counter, l, strlen(l)) == 1) {
            cs->c[cs->n++] = open;
            open = NULL;
            if (core_codec_append(&open, &st, lim, s->at[i], row, counter, l, strlen(l)) != 0)
                abort();
        }
    }
    if (open)
        cs->c[cs->n++] = open;
    core_codec_state_deinit(&st);
}

/* Reads every chunk back and compares with s bit for bit; the number of rows that differ. */
static int read_all_differ(const struct stream *s, const struct chunks *cs)
{
    int row = 0, bad = 0;
    double *got = calloc((size_t)s->k + 1, sizeof *got);
    for (int c = 0; c < cs->n; c++) {
        struct core_codec_reader r;
        char err[128];
        if (core_codec_read_init(&r, cs->c[c]->p, cs->c[c]->nbits, cs->c[c]->n, err, sizeof err) <
            0) {
            fprintf(stderr, "  chunk %d: %s\n", c, err);
            free(got);
            return -1;
        }
        int64_t at;
        int rc;
        while ((rc = core_codec_read_row(&r, &at, got)) == 1) {
            const double *want = s->rows + (size_t)row * (size_t)s->k;
            bool same = at == s->at[row];
            for (int i = 0; i < s->k; i++)
                if (bits(got[i]) != bits(want[i])) {
                    if (same)
                        fprintf(stderr, "  row %d series %d: %016llx != %016llx\n", row, i,
                                (unsigned long long)bits(got[i]),
                                (unsigned long long)bits(want[i]));
                    same = false;
                }
            bad += !same;
            row++;
        }
        core_codec_read_deinit(&r);
        if (rc < 0) {
            fprintf(stderr, "  chunk %d: bad rows\n", c);
            free(got);
            return -1;
        }
    }
    free(got);
    return row == s->n ? bad : -1;
}

static void stream_init(struct stream *s, int k, int n)
{
    s->k = k;
    s->n = n;
    s->at = calloc((size_t)n, sizeof *s->at);
    s->rows = calloc((size_t)n * (size_t)k + 1, sizeof *s->rows);
}

static void stream_free(struct stream *s)
{
    free(s->at);
    free(s->rows);
}

/* The awkward doubles. */
static const double odd[] = {0.0,
                             -0.0,
                             INFINITY,
                             -INFINITY,
                             DBL_MAX,
                             -DBL_MAX,
                             DBL_MIN,
                             4.9406564584124654e-324, /* the smallest denormal */
                             -2.2250738585072009e-308,
                             9.0e12,
                             9.007199254740993e12,
                             1e300,
                             0.1 + 0.2,
                             0.0004, /* core__round3 keeps a value that would round to 0 */
                             123456.789,
                             -0.001,
                             1.0 / 3.0};

static double random_value(int i)
{
    switch (next() % 8) {
    case 0:
        return odd[next() % (sizeof odd / sizeof odd[0])];
    case 1:
        return of_bits(next()); /* any bits: NaN payloads, denormals, anything */
    case 2:
        return of_bits(0x7ff0000000000000ULL | (next() & 0x000fffffffffffffULL) | 1); /* NaN */
    case 3:
        return (double)(int64_t)(next() % 2000001) / 1000.0 - 1000.0;
    case 4:
        return (double)(int64_t)(next() >> 11) / 1000.0; /* up to 2^53 thousandths */
    case 5:
        return NAN;
    default:
        return (double)i * 1000.0 + (double)(next() % 100);
    }
}

/* random_value, but never exactly NAN (which would open a new chunk for an absent series). */
static double present_value(int i)
{
    double x = random_value(i);
    return bits(x) == bits(NAN) ? 1.5 : x;
}

static void random_rows_round_trip(void)
{
    for (int trial = 0; trial < 40; trial++) {
        int k = 1 + (int)(next() % 40);
        int n = 1 + (int)(next() % 300);
        struct stream s;
        stream_init(&s, k, n);
        unsigned char counter[8];
        for (int i = 0; i < 8; i++)
            counter[i] = (unsigned char)next();
        int64_t t = (int64_t)next();
        for (int r = 0; r < n; r++) {
            switch (next() % 4) {
            case 0:
                t = (int64_t)next(); /* anywhere */
                break;
            case 1:
                t += 10000;
                break;
            default:
                t += (int64_t)(next() % 20001) - 5000;
            }
            s.at[r] = t;
            for (int i = 0; i < k; i++)
                s.rows[(size_t)r * (size_t)k + (size_t)i] = random_value(r);
        }
        struct core_codec_limits lim = {.max_rows = 1 + (int)(next() % 64),
                                        .max_span_ms = (int64_t)(next() % 600000)};
        struct chunks cs = {0};
        write_all(&s, &cs, &lim, counter, NULL);
        ASSERT_EQ(read_all_differ(&s, &cs), 0);
        chunks_free(&cs);
        stream_free(&s);
    }
}

/* Counters that reset and jump, gauges around 0, extreme times. */
static void adversarial_round_trip(void)
{
    static const int64_t times[] = {
        INT64_MIN,     INT64_MAX,     0,        -1, INT64_MIN + 1, INT64_MAX, 1764410400000,
        1764410410000, 1764410420000, INT64_MIN};
    int n = 200, k = 6;
    struct stream s;
    stream_init(&s, k, n);
    unsigned char counter[1] = {0x3}; /* series 0 and 1 count */
    for (int r = 0; r < n; r++) {
        s.at[r] = r < 10 ? times[r] : 1764410400000 + r * 10000;
        double *row = s.rows + (size_t)r * (size_t)k;
        row[0] = r % 50 == 49 ? 0.0 : (double)(r % 50) * 1e6; /* resets to 0 */
        row[1] = r % 7 == 0 ? 9.0e12 - r : (double)r * 0.125; /* jumps */
        row[2] = odd[r % (sizeof odd / sizeof odd[0])];
        row[3] = r % 2 ? -0.0 : 0.0;
        row[4] = r % 3 ? 4.9406564584124654e-324 * r : NAN;
        row[5] = r % 4 == 0 ? row[4] : (double)r / 1000.0 * (r % 2 ? 1 : -1); /* its neighbour */
    }
    struct core_codec_limits lim = {.max_rows = 32};
    struct chunks cs = {0};
    write_all(&s, &cs, &lim, counter, NULL);
    ASSERT_EQ(read_all_differ(&s, &cs), 0);
    ASSERT(cs.n >= 7); /* 200 rows, at most 32 a chunk */
    chunks_free(&cs);
    stream_free(&s);
}

/* A chunk closes after max_rows, after max_span_ms, when an absent series gets a value,
 * and when the layout changes; a present series may become NAN inside a chunk. */
static void chunks_close_where_they_should(void)
{
    struct core_codec_state st;
    core_codec_state_init(&st, 2);
    struct core_codec_limits lim = {.max_rows = 3, .max_span_ms = 60000};
    struct core_chunk *c = NULL;
    double r1[2] = {1.0, NAN}, r2[2] = {NAN, NAN}, r3[2] = {2.0, 5.0};
    ASSERT_EQ(core_codec_append(&c, &st, &lim, 0, r1, NULL, "a", 1), 0);
    ASSERT_EQ(core_codec_append(&c, &st, &lim, 10000, r2, NULL, "a", 1), 0); /* present -> NAN */
    ASSERT_EQ(core_codec_append(&c, &st, &lim, 20000, r3, NULL, "a", 1), 1); /* absent -> value */
    ASSERT_EQ(core_codec_append(&c, &st, &lim, 20000, r1, NULL, "b", 1), 1); /* layout */
    ASSERT_EQ(core_codec_append(&c, &st, &lim, 60000, r1, NULL, "a", 1), 1); /* span */
    ASSERT_EQ(core_codec_append(&c, &st, &lim, 59999, r1, NULL, "a", 1), 0);
    ASSERT_EQ(c->n, 3);
    ASSERT_EQ(core_codec_append(&c, &st, &lim, 59999, r1, NULL, "a", 1), 1); /* rows */
    ASSERT_EQ(c->at_first, 0);
    ASSERT_EQ(c->at_last, 59999);
    free(c);
    c = NULL;
    ASSERT_EQ(core_codec_append(&c, &st, &lim, 20000, r3, NULL, "b", 1), 0);
    struct core_codec_reader r;
    char err[64];
    ASSERT_EQ(core_codec_read_init(&r, c->p, c->nbits, c->n, err, sizeof err), 0);
    ASSERT_EQ(r.layout_len, 1);
    ASSERT_EQ(r.layout[0], 'b');
    core_codec_read_deinit(&r);
    free(c);
    core_codec_state_deinit(&st);
}

/* What a reader holds after a chunk's rows continues it as the writer would. */
static void reader_state_continues_the_chunk(void)
{
    int k = 5, n = 20;
    struct core_codec_state a, b;
    core_codec_state_init(&a, k);
    core_codec_state_init(&b, k);
    unsigned char counter[1] = {0x5};
    struct core_chunk *c = NULL;
    double row[5];
    for (int i = 0; i < n; i++) {
        for (int s = 0; s < k; s++)
            row[s] = present_value(i);
        ASSERT_EQ(core_codec_append(&c, &a, NULL, 1000 * i + (int64_t)(next() % 7), row, counter,
                                    NULL, 0),
                  0);
    }
    struct core_codec_reader r;
    char err[64];
    double got[5];
    int64_t at;
    ASSERT_EQ(core_codec_read_init(&r, c->p, c->nbits, c->n, err, sizeof err), 0);
    int rows = 0;
    while (core_codec_read_row(&r, &at, got) == 1)
        rows++;
    ASSERT_EQ(rows, n);
    core_codec_read_state(&r, &b);
    core_codec_read_deinit(&r);
    ASSERT_EQ(a.at, b.at);
    ASSERT_EQ(a.dat, b.dat);
    ASSERT(memcmp(a.prev, b.prev, (size_t)k * sizeof *a.prev) == 0);
    ASSERT(memcmp(a.dk, b.dk, (size_t)k * sizeof *a.dk) == 0);
    free(c);
    core_codec_state_deinit(&a);
    core_codec_state_deinit(&b);
}

/* 43 numbers a row (a 4-vertex window), gauges constant, counters at a constant rate, a
 * sample every 10 s: about a bit each. */
static void a_steady_stream_takes_a_bit_a_number(void)
{
    int k = 43, n = 90;
    struct stream s;
    stream_init(&s, k, n);
    unsigned char counter[6] = {0};
    for (int v = 0; v < 4; v++)
        for (int f = 3; f <= 5; f++) {
            int i = 6 + 9 * v + f;
            counter[i / 8] |= (unsigned char)(1u << (i % 8));
        }
    for (int r = 0; r < n; r++) {
        s.at[r] = 1764410400000 + 10000LL * r;
        for (int i = 0; i < k; i++)
            s.rows[(size_t)r * (size_t)k + (size_t)i] =
                counter[i / 8] >> (i % 8) & 1 ? 1234.5 * r : 0.25 * i;
    }
    struct core_codec_limits lim = {.max_rows = 90};
    struct chunks cs = {0};
    write_all(&s, &cs, &lim, counter, NULL);
    ASSERT_EQ(cs.n, 1);
    ASSERT_EQ(read_all_differ(&s, &cs), 0);
    size_t bytes = core_codec_bytes(cs.c[0]);
    /* the first row and the header, then 1 + 43 bits a row */
    ASSERT(bytes < 300 + (size_t)n * 6);
    ASSERT(bytes * 20 < (size_t)n * (size_t)(k + 1) * 8); /* a twentieth of the doubles */
    chunks_free(&cs);
    stream_free(&s);
}

/* A decide request's sample: its layout and row give it back. */
static void a_sample_goes_and_comes_back(void)
{
    struct core_input in[2] = {{"src", CORE_SHIP_HASH}, {"map", CORE_SHIP_FORWARD}};
    struct core_vertex_in v[3] = {{.id = "src",
                                   .parallelism = 4,
                                   .max_parallelism = 128,
                                   .partitions = 12,
                                   .busy_min = 100,
                                   .busy_avg = 200.5,
                                   .busy_max = 300,
                                   .backpressured = NAN,
                                   .records_in = 1e6,
                                   .records_out = 1e6,
                                   .accumulated_busy_ms = NAN,
                                   .records_in_per_s = 1000.25,
                                   .records_out_per_s = NAN,
                                   .pending_records = 900000},
                                  {.id = "map",
                                   .parallelism = 2,
                                   .max_parallelism = 32768,
                                   .slot_sharing_group = "ssg-1",
                                   .inputs = in,
                                   .n_inputs = 1,
                                   .busy_min = -0.0,
                                   .busy_avg = INFINITY,
                                   .busy_max = NAN},
                                  {.id = "sink \xe2\x9c\x93",
                                   .parallelism = 1,
                                   .max_parallelism = 1,
                                   .finished = true,
                                   .inputs = in,
                                   .n_inputs = 2,
                                   .records_in = 1.0 / 3.0}};
    struct core_sample sm = {.at = 1764410400000,
                             .running_since = -5,
                             .running = true,
                             .heap_used = 1e9,
                             .heap_max = NAN,
                             .gc_ms_per_s = 0.1 + 0.2,
                             .managed_used = NAN,
                             .metaspace_used = NAN,
                             .task_slots_total = 8,
                             .task_slots_available = 2,
                             .vertices = v,
                             .n_vertices = 3};
    unsigned char *layout, *counter;
    size_t len;
    core_codec_sample_layout(&sm, &layout, &len, &counter);
    int k = core_codec_sample_k(3);
    double row[37];
    ASSERT_EQ(k, 37);
    core_codec_sample_row(&sm, row);
    struct core_sample got;
    void *mem;
    char err[128];
    ASSERT_EQ(core_codec_sample_from(layout, len, sm.at, row, k, &got, &mem, err, sizeof err), 0);
    ASSERT_EQ(got.at, sm.at);
    ASSERT_EQ(got.running_since, -5);
    ASSERT(got.running);
    ASSERT_EQ(got.n_vertices, 3);
    ASSERT(bits(got.gc_ms_per_s) == bits(0.1 + 0.2));
    ASSERT(isnan(got.heap_max));
    ASSERT_DEQ(got.task_slots_available, 2);
    for (int i = 0; i < 3; i++) {
        ASSERT_STR(got.vertices[i].id, v[i].id);
        ASSERT_EQ(got.vertices[i].parallelism, v[i].parallelism);
        ASSERT_EQ(got.vertices[i].max_parallelism, v[i].max_parallelism);
        ASSERT_EQ(got.vertices[i].partitions, v[i].partitions);
        ASSERT_EQ(got.vertices[i].finished, v[i].finished);
        ASSERT_EQ(got.vertices[i].n_inputs, v[i].n_inputs);
        for (int j = 0; j < v[i].n_inputs; j++) {
            ASSERT_STR(got.vertices[i].inputs[j].from, v[i].inputs[j].from);
            ASSERT_EQ(got.vertices[i].inputs[j].ship, v[i].inputs[j].ship);
        }
        const double *a = &v[i].busy_min, *b = &got.vertices[i].busy_min;
        (void)a;
        (void)b;
    }
    ASSERT(got.vertices[0].slot_sharing_group == NULL);
    ASSERT_STR(got.vertices[1].slot_sharing_group, "ssg-1");
    ASSERT(signbit(got.vertices[1].busy_min));
    ASSERT_DEQ(got.vertices[1].busy_avg, INFINITY);
    ASSERT(bits(got.vertices[2].records_in) == bits(1.0 / 3.0));
    ASSERT_DEQ(got.vertices[0].pending_records, 900000);
    double again[37];
    core_codec_sample_row(&got, again);
    ASSERT(memcmp(row, again, sizeof row) == 0);
    /* the counters are records_in, records_out and accumulated_busy_ms of each vertex */
    ASSERT_EQ(counter[(7 + 4) / 8] >> ((7 + 4) % 8) & 1, 1);
    ASSERT_EQ(counter[(7 + 3) / 8] >> ((7 + 3) % 8) & 1, 0);
    /* a truncated layout is refused */
    free(mem);
    ASSERT_EQ(core_codec_sample_from(layout, len - 1, sm.at, row, k, &got, &mem, err, sizeof err),
              -1);
    ASSERT(mem == NULL);
    ASSERT_CONTAINS(err, "not a sample's layout");
    ASSERT_EQ(core_codec_sample_from(layout, len, sm.at, row, k - 1, &got, &mem, err, sizeof err),
              -1);
    free(layout);
    free(counter);
}

/* Every truncation of a chunk is refused or read short, never read past its end. */
static void truncated_chunks_are_refused(void)
{
    int k = 9, n = 40;
    struct stream s;
    stream_init(&s, k, n);
    for (int r = 0; r < n; r++) {
        s.at[r] = 1000 * r;
        for (int i = 0; i < k; i++)
            s.rows[(size_t)r * (size_t)k + (size_t)i] = present_value(r);
    }
    struct chunks cs = {0};
    write_all(&s, &cs, NULL, NULL, NULL);
    ASSERT_EQ(cs.n, 1);
    struct core_chunk *c = cs.c[0];
    for (size_t cut = 0; cut < c->nbits; cut += 3) {
        unsigned char *copy = malloc((cut + 7) / 8 + 1);
        memcpy(copy, c->p, (cut + 7) / 8);
        struct core_codec_reader r;
        char err[64];
        double row[9];
        int64_t at;
        int rows = 0, rc = -1;
        if (core_codec_read_init(&r, copy, cut, n, err, sizeof err) == 0) {
            while ((rc = core_codec_read_row(&r, &at, row)) == 1)
                rows++;
            ASSERT(rc == -1 && rows < n);
        }
        core_codec_read_deinit(&r);
        free(copy);
    }
    struct core_codec_reader r;
    char err[64];
    ASSERT_EQ(core_codec_read_init(&r, c->p, c->nbits, -1, err, sizeof err), -1);
    core_codec_read_deinit(&r);
    unsigned char bad[4] = {2, 0, 0, 0};
    ASSERT_EQ(core_codec_read_init(&r, bad, 32, 0, err, sizeof err), -1);
    ASSERT_CONTAINS(err, "not a chunk");
    chunks_free(&cs);
    stream_free(&s);
}

TEST_MAIN(TEST_ENTRY(random_rows_round_trip), TEST_ENTRY(adversarial_round_trip),
          TEST_ENTRY(chunks_close_where_they_should), TEST_ENTRY(reader_state_continues_the_chunk),
          TEST_ENTRY(a_steady_stream_takes_a_bit_a_number),
          TEST_ENTRY(a_sample_goes_and_comes_back), TEST_ENTRY(truncated_chunks_are_refused))
