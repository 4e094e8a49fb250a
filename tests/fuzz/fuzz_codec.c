/*
 * fuzz_codec.c - libFuzzer target for the samples' codec (server/core/codec.c). The first
 * byte picks what the rest is:
 *  - a chunk (the next byte its row count): read to its end or its first bad row; the rows
 *    read are written again into a chunk of the same series and counters, which must read
 *    back bit for bit;
 *  - rows to write (times and doubles from the bytes, with a series count, a counter mask
 *    and limits from the first bytes): every row read back bit for bit across the chunks the
 *    limits make, and a reader's state equal to the writer's after each chunk;
 *  - a sample's layout: refused, or a sample whose layout and row give the same bytes back.
 * Crashing, a sanitizer report or a difference is a bug.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/codec.h"

static uint64_t bits(double x)
{
    uint64_t b;
    memcpy(&b, &x, sizeof b);
    return b;
}

/* Reads chunk c's rows into rows/at (k series, up to n rows); the count read, -1 if bad. */
static int read_chunk(const struct core_chunk *c, int k, double *rows, int64_t *at, int n,
                      struct core_codec_state *st)
{
    struct core_codec_reader r;
    char err[128];
    if (core_codec_read_init(&r, c->p, c->nbits, c->n, err, sizeof err) < 0 || r.k != k)
        abort();
    int got = 0, rc;
    while (got < n && (rc = core_codec_read_row(&r, &at[got], rows + (size_t)got * (size_t)k)) == 1)
        got++;
    if (got != c->n)
        abort();
    if (st)
        core_codec_read_state(&r, st);
    core_codec_read_deinit(&r);
    return got;
}

/* Writes n rows (k series) into chunks under lim and checks they read back exactly, and
 * that each chunk's reader ends in the writer's state. */
static void write_and_check(const double *rows, const int64_t *at, int n, int k,
                            const unsigned char *counter, const struct core_codec_limits *lim)
{
    struct core_codec_state w, r;
    core_codec_state_init(&w, k);
    core_codec_state_init(&r, k);
    double *back = malloc(((size_t)n + 1) * ((size_t)k + 1) * sizeof *back);
    int64_t *bat = malloc(((size_t)n + 1) * sizeof *bat);
    struct core_chunk *c = NULL;
    int first = 0; /* the first row of c */
    for (int i = 0; i <= n; i++) {
        int rc = i < n ? core_codec_append(&c, &w, lim, at[i], rows + (size_t)i * (size_t)k,
                                           counter, "L", 1)
                       : 1;
        if (rc == 0)
            continue;
        if (c) { /* c is complete: check it */
            int got = read_chunk(c, k, back, bat, n, &r);
            for (int j = 0; j < got; j++) {
                if (bat[j] != at[first + j])
                    abort();
                for (int s = 0; s < k; s++)
                    if (bits(back[(size_t)j * (size_t)k + (size_t)s]) !=
                        bits(rows[(size_t)(first + j) * (size_t)k + (size_t)s]))
                        abort();
            }
            if (r.at != w.at || r.dat != w.dat ||
                memcmp(r.prev, w.prev, (size_t)k * sizeof *r.prev) != 0 ||
                memcmp(r.dk, w.dk, (size_t)k * sizeof *r.dk) != 0)
                abort();
            first += got;
            free(c);
            c = NULL;
        }
        if (i < n && core_codec_append(&c, &w, lim, at[i], rows + (size_t)i * (size_t)k, counter,
                                       "L", 1) != 0)
            abort();
    }
    if (first != n)
        abort();
    free(back);
    free(bat);
    core_codec_state_deinit(&w);
    core_codec_state_deinit(&r);
}

static void a_chunk(const uint8_t *data, size_t size)
{
    if (size < 1)
        return;
    int n = data[0];
    struct core_codec_reader r;
    char err[128];
    if (core_codec_read_init(&r, data + 1, 8 * (size - 1), n, err, sizeof err) < 0) {
        core_codec_read_deinit(&r);
        return;
    }
    /* every row is read; those of a chunk of at most 64 series are kept to write again */
    int k = r.k;
    bool keep = k > 0 && k <= 64;
    double *rows = malloc(((size_t)n + 1) * (keep ? (size_t)k : 1) * sizeof *rows);
    double *one = malloc(((size_t)k + 1) * sizeof *one);
    int64_t *at = malloc(((size_t)n + 1) * sizeof *at);
    int got = 0;
    while (core_codec_read_row(&r, &at[got], keep ? rows + (size_t)got * (size_t)k : one) == 1)
        got++;
    unsigned char counter[8] = {0};
    if (keep)
        memcpy(counter, r.counter, ((size_t)k + 7) / 8);
    core_codec_read_deinit(&r);
    if (got > 0 && keep)
        write_and_check(rows, at, got, k, counter, NULL);
    free(rows);
    free(one);
    free(at);
}

static void rows_from_bytes(const uint8_t *data, size_t size)
{
    if (size < 12)
        return;
    int k = 1 + data[0] % 16;
    unsigned char counter[2] = {data[1], data[2]};
    struct core_codec_limits lim = {.max_rows = data[3], .max_span_ms = (int64_t)data[4] * 1000};
    data += 5;
    size -= 5;
    size_t per = 8 * ((size_t)k + 1);
    int n = (int)(size / per);
    if (n == 0)
        return;
    double *rows = malloc((size_t)n * (size_t)k * sizeof *rows);
    int64_t *at = malloc((size_t)n * sizeof *at);
    for (int i = 0; i < n; i++) {
        const uint8_t *p = data + (size_t)i * per;
        memcpy(&at[i], p, 8);
        memcpy(rows + (size_t)i * (size_t)k, p + 8, 8 * (size_t)k);
    }
    write_and_check(rows, at, n, k, counter, &lim);
    free(rows);
    free(at);
}

static void a_layout(const uint8_t *data, size_t size)
{
    struct core_sample sm;
    void *mem;
    char err[128];
    double row[7 + 10 * 64];
    for (size_t i = 0; i < sizeof row / sizeof row[0]; i++)
        row[i] = (double)i;
    for (int nv = 0; nv < 64; nv++) {
        if (core_codec_sample_from(data, size, 1, row, core_codec_sample_k(nv), &sm, &mem, err,
                                   sizeof err) < 0)
            continue;
        unsigned char *out, *counter;
        size_t len;
        core_codec_sample_layout(&sm, &out, &len, &counter);
        /* the same sample, though not always the same bytes (a varint may be written longer) */
        struct core_sample again;
        void *mem2;
        if (core_codec_sample_from(out, len, 1, row, core_codec_sample_k(nv), &again, &mem2, err,
                                   sizeof err) < 0)
            abort();
        unsigned char *out2, *counter2;
        size_t len2;
        core_codec_sample_layout(&again, &out2, &len2, &counter2);
        if (len2 != len || memcmp(out, out2, len) != 0)
            abort();
        free(out);
        free(out2);
        free(counter);
        free(counter2);
        free(mem);
        free(mem2);
        break;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1 || size > 8192)
        return 0;
    switch (data[0] % 3) {
    case 0:
        a_chunk(data + 1, size - 1);
        break;
    case 1:
        rows_from_bytes(data + 1, size - 1);
        break;
    default:
        a_layout(data + 1, size - 1);
    }
    return 0;
}
