/*
 * codec.h - the compact form of a job's samples (core/README.md, Codec): chunks of
 * consecutive rows, each row a time and k numbers (series), written and read bit by bit.
 * Times are kept as the change of their interval (delta-of-delta); a number that is a whole
 * count of thousandths (what the core's rounding makes of every figure, and what most
 * metrics are) as its change from a prediction, counted in the largest power of ten that
 * divides it: the last value for a gauge, the last value plus the last step for a cumulative
 * counter; any other double (NaN of any payload, infinities, -0.0, denormals, more digits)
 * as the XOR of its bits with the last value's (Gorilla, VLDB 2015). Every value and time is
 * read back bit for bit, so what is computed from decoded rows is what would have been
 * computed from the originals.
 *
 * A chunk is self-contained: its header holds the series count, which series are present
 * (a series that is exactly NAN in the chunk's first row costs nothing until it gets a
 * value, which opens a new chunk), which are counters, and the caller's layout bytes
 * (e.g. vertex ids and parallelisms), stored once; a row with another layout opens a new
 * chunk too. A chunk is closed after a number of rows or a span of time (core_codec_limits).
 *
 * The second part maps a decide request's sample (struct core_sample, streaming mode) to a
 * layout and a row and back, for keeping samples as history.
 *
 * Pure: no I/O, no clock, no globals; may call libc and libm only. Allocation failure aborts
 * (the core's allocators).
 *
 * Ownership, in jansson's terms: a chunk is owned by whoever holds the pointer and released
 * with free(); rows, layouts and masks passed in are borrowed for the call; a reader borrows
 * the chunk's bytes for its life.
 */
#ifndef GOVERNOR_CORE_CODEC_H
#define GOVERNOR_CORE_CODEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/core.h"

/* The bits of NAN: a series with exactly this value in a chunk's first row is absent. */
#define CORE_CODEC_ABSENT 0x7ff8000000000000ULL
/* The most series a chunk may hold (a reader refuses more). */
#define CORE_CODEC_MAX_SERIES (1 << 20)

/* When a chunk is closed: after max_rows rows, or once a row would be max_span_ms or more
 * after the chunk's first (<= 0: no limit on time). */
struct core_codec_limits {
    int max_rows;
    int64_t max_span_ms;
};

/* A chunk: its header and rows, bits[0, nbits) of p. */
struct core_chunk {
    int n;                     /* rows */
    int64_t at_first, at_last; /* the first and the last row's time */
    size_t nbits;              /* bits used */
    size_t cap;                /* bytes allocated at p */
    unsigned char p[];
};

/* What continues a chunk: its last row. Storage the caller owns (core_codec_state_init,
 * _deinit), for k series. */
struct core_codec_state {
    int k;
    int64_t at, dat; /* the last row's time and its interval from the row before */
    uint64_t *prev;  /* [k] the last row's values, as bits (an absent series' NAN too) */
    int64_t *dk;     /* [k] a counter's last step, in thousandths (0: none) */
};
void core_codec_state_init(struct core_codec_state *st, int k);
void core_codec_state_deinit(struct core_codec_state *st);

/*
 * Appends a row (k doubles, the state's k) taken at `at` to *c, continuing st (which must be
 * the state *c was last appended to with). *c NULL: opens a chunk, with a header from the
 * row (the series present), counter (bit i of counter[i / 8], from the low bit: series i is
 * a cumulative counter; NULL: none) and layout (layout_len bytes, copied). Returns 0; or 1,
 * writing nothing, when the row belongs to a new chunk: *c holds lim's rows or time span, a
 * series absent from *c has a value, or the layout differs. The caller then keeps *c as it is
 * (core_codec_shrink it) and appends to NULL. *c may move (realloc).
 */
int core_codec_append(struct core_chunk **c, struct core_codec_state *st,
                      const struct core_codec_limits *lim, int64_t at, const double *row,
                      const unsigned char *counter, const void *layout, size_t layout_len);
/* Gives back the bytes *c has beyond its bits (*c may move). */
void core_codec_shrink(struct core_chunk **c);
/* The bytes a chunk's bits take, header included. */
size_t core_codec_bytes(const struct core_chunk *c);

/* What a reader knows of one series. */
struct core_codec_series {
    uint64_t prev;     /* the last value's bits */
    int64_t pk, dk;    /* the last value and step in thousandths, when it is a count of them */
    unsigned char dec; /* whether the last value is a count of thousandths */
    unsigned char counter;
};

/* Reads the rows of a chunk, oldest first. */
struct core_codec_reader {
    const unsigned char *p;
    size_t nbits, pos;
    int n, row;                   /* rows in all, rows read */
    int k;                        /* series */
    const unsigned char *present; /* [(k + 7) / 8] bits: the series written */
    const unsigned char *counter; /* [(k + 7) / 8] bits */
    const unsigned char *layout;  /* borrowed from the chunk */
    size_t layout_len;
    int64_t at, dat;
    struct core_codec_series *s; /* [k] */
    int *idx;                    /* [k] the present series, then the absent ones */
    int n_present;
};

/*
 * Starts reading n rows from nbits bits at p (borrowed for the reader's life). -1 with a
 * message in err when the header is not one (truncated, more series than
 * CORE_CODEC_MAX_SERIES, n < 0); the reader is then empty (deinit is still safe).
 */
int core_codec_read_init(struct core_codec_reader *r, const unsigned char *p, size_t nbits, int n,
                         char *err, size_t err_len);
/* The next row into *at and row[k]: 1; 0 after the last row; -1 when the bits are not rows
 * (truncated or corrupt: row is then unspecified). */
int core_codec_read_row(struct core_codec_reader *r, int64_t *at, double *row);
/* The reader's state as a core_codec_state (st initialized for its k): what continues the
 * chunk after the rows read. */
void core_codec_read_state(const struct core_codec_reader *r, struct core_codec_state *st);
void core_codec_read_deinit(struct core_codec_reader *r);

/* ------------------------------------------------------------------ a chunk's blob -- */

/*
 * A chunk as one self-contained blob, as history stores it: its rows and its bits as varints,
 * then its bytes. core_codec_blob sets new (*out, free() it) from c; core_codec_blob_read
 * starts a reader on a blob (borrowed for the reader's life: core_codec_read_row,
 * core_codec_read_deinit); core_codec_blob_resume makes *c (new) a copy of the blob's chunk
 * and *st (initialized here, for the chunk's k) the state after its last row, so that
 * core_codec_append continues it. Each -1 with a message in err when the blob is not one.
 */
void core_codec_blob(const struct core_chunk *c, unsigned char **out, size_t *len);
int core_codec_blob_read(struct core_codec_reader *r, const unsigned char *blob, size_t len,
                         char *err, size_t err_len);
int core_codec_blob_resume(const unsigned char *blob, size_t len, struct core_chunk **c,
                           struct core_codec_state *st, char *err, size_t err_len);

/* ------------------------------------------------------- a decide request's sample -- */

/* Numbers a sample's row holds: its job metrics, then each vertex's. */
#define CORE_CODEC_SAMPLE_JOB    7
#define CORE_CODEC_SAMPLE_VERTEX 10
static inline int core_codec_sample_k(int n_vertices)
{
    return CORE_CODEC_SAMPLE_JOB + CORE_CODEC_SAMPLE_VERTEX * n_vertices;
}

/* new (*out, free() it): sm's layout (running_since, running, and each vertex's id,
 * parallelisms, partitions, slot-sharing group, finished, inputs), and the counter mask of
 * its row (*counter, new, (k + 7) / 8 bytes). sm must be a streaming sample. */
void core_codec_sample_layout(const struct core_sample *sm, unsigned char **out, size_t *len,
                              unsigned char **counter);
/* sm's numbers into row[core_codec_sample_k(sm->n_vertices)]. */
void core_codec_sample_row(const struct core_sample *sm, double *row);
/* Whether a and b are the same streaming sample as the codec keeps it: the same layout, the
 * same numbers bit for bit, the same at, running_since and status (a batch sample is never). */
bool core_codec_sample_same(const struct core_sample *a, const struct core_sample *b);
/*
 * The sample a layout and a row describe, into *sm, its vertices, inputs and strings in one
 * new block (*mem, free() it once sm is no longer used). at is the row's time. -1 with a
 * message in err when the layout is not one (then *mem is NULL); k must be the row's.
 */
int core_codec_sample_from(const unsigned char *layout, size_t len, int64_t at, const double *row,
                           int k, struct core_sample *sm, void **mem, char *err, size_t err_len);

#endif
