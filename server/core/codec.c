/*
 * codec.c - the compact form of a job's samples (codec.h; core/README.md, Codec).
 *
 * A chunk's bytes: a version byte (1), the series count k (varint), the present mask and the
 * counter mask ((k + 7) / 8 bytes each, series i in bit i % 8 of byte i / 8), the layout's
 * length (varint) and bytes; then the rows from the next byte on, most significant bit
 * first. A row: its time (the first row's as 64 bits, later ones as the change of the
 * interval, zigzag, in a bucket of TS_WIDTHS), then each present series in order:
 *
 *   0     the prediction: the last value plus (a counter) its last step, when the last value
 *         was a count of thousandths; the last value's bits otherwise
 *   10    a count of thousandths after one: 2 bits e, then (value - prediction) / 10^e,
 *         zigzag, in a bucket of VAL_WIDTHS (e: the most trailing decimal zeros, up to 3)
 *   110   any other double: the XOR with the last value's bits, as 6 bits of leading zeros,
 *         6 bits of length - 1, and the bits from the first 1 to the last
 *   1110  a count of thousandths after something else: 2 bits e, value / 10^e, zigzag, in a
 *         bucket of VAL_WIDTHS
 *   1111  the bits of the previous present series of the row (a busy time's min, avg and max
 *         when the client sends one number, a vertex's records in and out)
 *
 * A bucket: i ones, a zero unless i is the last, then the table's i-th width of bits. A chunk
 * starts from a last value of +0.0 (a count of thousandths, 0) with no step, and time 0.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/codec.h"
#include "core/core_int.h"

#define VERSION 1

static const int TS_WIDTHS[] = {0, 7, 12, 20, 32, 64};
static const int VAL_WIDTHS[] = {4, 8, 14, 24, 40, 64};
#define N_WIDTHS 6
/* The most bits a series can take in a row: an XOR (3 + 6 + 6 + 64; a count of thousandths
 * takes at most 3 + 2 + 5 + 64). */
#define MAX_VALUE_BITS (3 + 6 + 6 + 64)
#define MAX_TS_BITS    (N_WIDTHS + 64)

static const int64_t POW10[4] = {1, 10, 100, 1000};

/* ------------------------------------------------------------------ numbers -- */

static uint64_t bits_of(double x)
{
    uint64_t b;
    memcpy(&b, &x, sizeof b);
    return b;
}

static double double_of(uint64_t b)
{
    double x;
    memcpy(&x, &b, sizeof x);
    return x;
}

static uint64_t zigzag(int64_t v)
{
    return ((uint64_t)v << 1) ^ (0 - (uint64_t)(v < 0));
}

static int64_t unzigzag(uint64_t z)
{
    uint64_t u = (z >> 1) ^ (0 - (z & 1));
    int64_t v;
    memcpy(&v, &u, sizeof v);
    return v;
}

/* Whether the double with bits b is k thousandths exactly, read back as (double)k / 1000.0:
 * what the core's rounding (core__round3) returns, and every decimal of up to 3 places. */
static bool thousandths(uint64_t b, int64_t *k)
{
    double x = double_of(b);
    if (!(fabs(x) <= 9.0e12)) /* NaN, infinities, and beyond 2^53 thousandths */
        return false;
    double r = round(x * 1000.0);
    int64_t kk = (int64_t)r;
    if (bits_of((double)kk / 1000.0) != b)
        return false;
    *k = kk;
    return true;
}

/* The largest e <= 3 with 10^e dividing v (3 for 0). */
static int decimal_zeros(int64_t v)
{
    int e = 0;
    while (e < 3 && v % POW10[e + 1] == 0)
        e++;
    return e;
}

/* -------------------------------------------------------------------- bits -- */

/* Writes n <= 64 bits of v at bit position *pos of p (which has room). */
static void put_bits(unsigned char *p, size_t *pos, uint64_t v, int n)
{
    size_t at = *pos;
    while (n > 0) {
        int off = (int)(at & 7), room = 8 - off;
        int take = n < room ? n : room;
        unsigned bits = (unsigned)((v >> (n - take)) & ((1u << take) - 1));
        unsigned char *byte = &p[at >> 3];
        if (off == 0)
            *byte = 0;
        *byte |= (unsigned char)(bits << (room - take));
        at += (size_t)take;
        n -= take;
    }
    *pos = at;
}

static void put_bucket(unsigned char *p, size_t *pos, uint64_t z, const int *widths)
{
    int i = 0;
    while (i < N_WIDTHS - 1 && widths[i] < 64 && z >= (1ULL << widths[i]))
        i++;
    if (i == N_WIDTHS - 1)
        put_bits(p, pos, (1ULL << i) - 1, i); /* i ones, no closing zero */
    else
        put_bits(p, pos, ((1ULL << i) - 1) << 1, i + 1);
    put_bits(p, pos, z, widths[i]);
}

/* The number of leading ones of w, at most max. */
static inline int ones(uint64_t w, int max)
{
    int n = ~w ? __builtin_clzll(~w) : 64;
    return n < max ? n : max;
}

/* ------------------------------------------------------------------ header -- */

static size_t varint_len(uint64_t v)
{
    size_t n = 1;
    while (v >= 0x80) {
        v >>= 7;
        n++;
    }
    return n;
}

static size_t put_varint(unsigned char *p, uint64_t v)
{
    size_t n = 0;
    while (v >= 0x80) {
        p[n++] = (unsigned char)(v | 0x80);
        v >>= 7;
    }
    p[n++] = (unsigned char)v;
    return n;
}

/* A varint at p[*off, len): -1 when truncated or longer than 64 bits. */
static int get_varint(const unsigned char *p, size_t len, size_t *off, uint64_t *v)
{
    uint64_t x = 0;
    for (int shift = 0; shift < 64; shift += 7) {
        if (*off >= len)
            return -1;
        unsigned char b = p[(*off)++];
        x |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *v = x;
            return 0;
        }
    }
    return -1;
}

static bool bit_at(const unsigned char *mask, int i)
{
    return mask && (mask[i >> 3] >> (i & 7)) & 1u;
}

/* Where the header's parts are; -1 when p[0, len) does not hold a whole header. */
struct header {
    int k;
    const unsigned char *present, *counter, *layout;
    size_t layout_len, size;
};

static int header_parse(const unsigned char *p, size_t len, struct header *h, char *err,
                        size_t err_len)
{
    size_t off = 1;
    uint64_t k, ll;
    if (len < 1 || p[0] != VERSION) {
        snprintf(err, err_len, "not a chunk of samples (version %d)", len < 1 ? -1 : p[0]);
        return -1;
    }
    if (get_varint(p, len, &off, &k) < 0 || k > CORE_CODEC_MAX_SERIES) {
        snprintf(err, err_len, "chunk header: bad series count");
        return -1;
    }
    size_t mask = ((size_t)k + 7) / 8;
    if (len - off < 2 * mask) {
        snprintf(err, err_len, "chunk header: truncated masks");
        return -1;
    }
    h->k = (int)k;
    h->present = p + off;
    h->counter = p + off + mask;
    off += 2 * mask;
    if (get_varint(p, len, &off, &ll) < 0 || ll > len - off) {
        snprintf(err, err_len, "chunk header: bad layout length");
        return -1;
    }
    h->layout = p + off;
    h->layout_len = (size_t)ll;
    h->size = off + (size_t)ll;
    return 0;
}

/* ------------------------------------------------------------------- state -- */

void core_codec_state_init(struct core_codec_state *st, int k)
{
    st->k = k;
    st->at = st->dat = 0;
    st->prev = core__xcalloc((size_t)(k ? k : 1), sizeof *st->prev);
    st->dk = core__xcalloc((size_t)(k ? k : 1), sizeof *st->dk);
}

void core_codec_state_deinit(struct core_codec_state *st)
{
    free(st->prev);
    free(st->dk);
    memset(st, 0, sizeof *st);
}

static void state_reset(struct core_codec_state *st)
{
    st->at = st->dat = 0;
    memset(st->prev, 0, (size_t)st->k * sizeof *st->prev);
    memset(st->dk, 0, (size_t)st->k * sizeof *st->dk);
}

/* ------------------------------------------------------------------ writer -- */

static void reserve(struct core_chunk **c, size_t bytes)
{
    if (bytes <= (*c)->cap)
        return;
    *c = core__xrealloc(*c, sizeof **c + bytes);
    (*c)->cap = bytes;
}

/* A new chunk for k series, its header from row, counter and layout. */
static struct core_chunk *chunk_open(int k, const double *row, const unsigned char *counter,
                                     const void *layout, size_t layout_len)
{
    size_t mask = ((size_t)k + 7) / 8;
    size_t size = 1 + varint_len((uint64_t)k) + 2 * mask + varint_len(layout_len) + layout_len;
    struct core_chunk *c = core__xcalloc(1, sizeof *c + size);
    c->cap = size;
    unsigned char *p = c->p;
    size_t off = 0;
    p[off++] = VERSION;
    off += put_varint(p + off, (uint64_t)k);
    for (int i = 0; i < k; i++) {
        if (bits_of(row[i]) != CORE_CODEC_ABSENT)
            p[off + (size_t)(i >> 3)] |= (unsigned char)(1u << (i & 7));
        if (bit_at(counter, i))
            p[off + mask + (size_t)(i >> 3)] |= (unsigned char)(1u << (i & 7));
    }
    off += 2 * mask;
    off += put_varint(p + off, layout_len);
    if (layout_len)
        memcpy(p + off, layout, layout_len);
    c->nbits = 8 * size;
    return c;
}

/* Whether row can go into c as its next row. */
static bool fits(const struct core_chunk *c, const struct core_codec_limits *lim, int64_t at,
                 const double *row, const void *layout, size_t layout_len)
{
    struct header h;
    char err[8];
    if (lim && lim->max_rows > 0 && c->n >= lim->max_rows)
        return false;
    if (lim && lim->max_span_ms > 0 && at >= c->at_first &&
        (uint64_t)at - (uint64_t)c->at_first >= (uint64_t)lim->max_span_ms)
        return false;
    if (header_parse(c->p, c->cap, &h, err, sizeof err) < 0)
        return false;
    if (h.layout_len != layout_len || (layout_len && memcmp(h.layout, layout, layout_len) != 0))
        return false;
    for (int i = 0; i < h.k; i++)
        if (!bit_at(h.present, i) && bits_of(row[i]) != CORE_CODEC_ABSENT)
            return false;
    return true;
}

/* Writes value b of a series whose last value was *prev (its step *dk, a counter or not),
 * `left` the bits of the previous present series of the row (NULL: none), and updates them. */
static void put_value(unsigned char *p, size_t *pos, uint64_t *prev, int64_t *dk, bool counter,
                      uint64_t b, const uint64_t *left)
{
    int64_t pk = 0, k = 0;
    bool prev_dec = thousandths(*prev, &pk), cur_dec = thousandths(b, &k);
    int64_t res = cur_dec && prev_dec ? k - (pk + *dk) : 1;
    if (prev_dec ? res == 0 : b == *prev) {
        put_bits(p, pos, 0, 1);
    } else if (left && *left == b) {
        put_bits(p, pos, 0xf, 4);
    } else if (cur_dec && prev_dec) {
        int e = decimal_zeros(res);
        put_bits(p, pos, 0x2, 2);
        put_bits(p, pos, (uint64_t)e, 2);
        put_bucket(p, pos, zigzag(res / POW10[e]), VAL_WIDTHS);
    } else if (cur_dec) {
        int e = decimal_zeros(k);
        put_bits(p, pos, 0xe, 4);
        put_bits(p, pos, (uint64_t)e, 2);
        put_bucket(p, pos, zigzag(k / POW10[e]), VAL_WIDTHS);
    } else {
        /* the XOR: never 0 here (equal bits were the prediction) */
        uint64_t x = b ^ *prev;
        int lead = __builtin_clzll(x), trail = __builtin_ctzll(x);
        int len = 64 - lead - trail;
        put_bits(p, pos, 0x6, 3);
        put_bits(p, pos, (uint64_t)lead, 6);
        put_bits(p, pos, (uint64_t)(len - 1), 6);
        put_bits(p, pos, x >> trail, len);
    }
    *dk = counter && prev_dec && cur_dec ? k - pk : 0;
    *prev = b;
}

int core_codec_append(struct core_chunk **c, struct core_codec_state *st,
                      const struct core_codec_limits *lim, int64_t at, const double *row,
                      const unsigned char *counter, const void *layout, size_t layout_len)
{
    if (*c && !fits(*c, lim, at, row, layout, layout_len))
        return 1;
    if (!*c) {
        *c = chunk_open(st->k, row, counter, layout, layout_len);
        state_reset(st);
    }
    size_t worst = (size_t)MAX_TS_BITS + (size_t)st->k * MAX_VALUE_BITS;
    reserve(c, ((*c)->nbits + worst + 7) / 8);
    struct core_chunk *ch = *c;
    unsigned char *p = ch->p;
    size_t pos = ch->nbits;
    size_t hdr = 1 + varint_len((uint64_t)st->k);
    const unsigned char *present = p + hdr, *ctr = p + hdr + ((size_t)st->k + 7) / 8;
    if (ch->n == 0) {
        put_bits(p, &pos, (uint64_t)at, 64);
        st->dat = 0;
        ch->at_first = at;
    } else {
        uint64_t dat = (uint64_t)at - (uint64_t)st->at;
        uint64_t dod = dat - (uint64_t)st->dat;
        int64_t sdod;
        memcpy(&sdod, &dod, sizeof sdod);
        put_bucket(p, &pos, zigzag(sdod), TS_WIDTHS);
        memcpy(&st->dat, &dat, sizeof st->dat);
    }
    st->at = at;
    const uint64_t *left = NULL;
    for (int i = 0; i < st->k; i++)
        if (bit_at(present, i)) {
            put_value(p, &pos, &st->prev[i], &st->dk[i], bit_at(ctr, i), bits_of(row[i]), left);
            left = &st->prev[i];
        } else {
            st->prev[i] = CORE_CODEC_ABSENT; /* so that the state holds the last row */
        }
    ch->nbits = pos;
    ch->n++;
    ch->at_last = at;
    core_codec_shrink(c);
    return 0;
}

void core_codec_shrink(struct core_chunk **c)
{
    size_t need = ((*c)->nbits + 7) / 8;
    if (need < (*c)->cap) {
        *c = core__xrealloc(*c, sizeof **c + need);
        (*c)->cap = need;
    }
}

size_t core_codec_bytes(const struct core_chunk *c)
{
    return (c->nbits + 7) / 8;
}

/* ------------------------------------------------------------------ reader -- */

int core_codec_read_init(struct core_codec_reader *r, const unsigned char *p, size_t nbits, int n,
                         char *err, size_t err_len)
{
    struct header h;
    memset(r, 0, sizeof *r);
    if (n < 0) {
        snprintf(err, err_len, "chunk: %d rows", n);
        return -1;
    }
    if (header_parse(p, nbits / 8, &h, err, err_len) < 0)
        return -1;
    r->p = p;
    r->nbits = nbits;
    r->pos = 8 * h.size;
    r->n = n;
    r->k = h.k;
    r->present = h.present;
    r->counter = h.counter;
    r->layout = h.layout;
    r->layout_len = h.layout_len;
    size_t k = (size_t)(h.k ? h.k : 1);
    r->s = core__xcalloc(k, sizeof *r->s);
    r->idx = core__xmalloc(k * sizeof *r->idx);
    int absent = h.k;
    for (int i = 0; i < h.k; i++) {
        r->s[i].dec = 1; /* +0.0 is 0 thousandths */
        r->s[i].counter = bit_at(h.counter, i);
        if (bit_at(h.present, i)) {
            r->idx[r->n_present++] = i;
        } else {
            r->idx[--absent] = i;
            r->s[i].prev = CORE_CODEC_ABSENT;
        }
    }
    return 0;
}

void core_codec_read_deinit(struct core_codec_reader *r)
{
    free(r->s);
    free(r->idx);
    memset(r, 0, sizeof *r);
}

/* A bit reader for rows: the next bits left-aligned in acc (nacc of them, and possibly more
 * true bits below), refilled from whole bytes of p and never past nbytes. The bits taken are
 * 8 x byte - nacc; nacc goes below 0 only when a row takes bits past the last byte (zeros),
 * and such a row, like one that takes bits past the chunk's end, is refused after it. */
struct fastbits {
    const unsigned char *p;
    size_t nbytes, byte;
    uint64_t acc;
    int nacc;
};

static inline void refill(struct fastbits *b)
{
    if (b->nacc < 0) /* past the end already: zeros */
        return;
    if (b->byte + 8 <= b->nbytes) {
        uint64_t w;
        memcpy(&w, b->p + b->byte, sizeof w);
        w = __builtin_bswap64(w);
        b->acc |= w >> b->nacc;
        int n = (63 - b->nacc) >> 3;
        b->byte += (size_t)n;
        b->nacc += 8 * n;
    } else {
        while (b->nacc <= 56 && b->byte < b->nbytes) {
            b->acc |= (uint64_t)b->p[b->byte++] << (56 - b->nacc);
            b->nacc += 8;
        }
    }
}

/* Takes n bits, which need() made sure of (or the end was reached): up to 64, a run of zeros
 * read whole from a full accumulator. */
static inline void take(struct fastbits *b, int n)
{
    b->acc = n < 64 ? b->acc << n : 0;
    b->nacc -= n;
}

static inline void need(struct fastbits *b, int n)
{
    if (b->nacc < n)
        refill(b);
}

/* n <= 64 bits. */
static inline uint64_t bits(struct fastbits *b, int n)
{
    if (n == 0)
        return 0;
    if (n > 56) {
        uint64_t hi = bits(b, n - 32);
        return hi << 32 | bits(b, 32);
    }
    need(b, n);
    uint64_t v = b->acc >> (64 - n);
    take(b, n);
    return v;
}

static inline uint64_t bucket(struct fastbits *b, const int *widths)
{
    need(b, N_WIDTHS);
    int i = ones(b->acc, N_WIDTHS - 1);
    take(b, i + (i < N_WIDTHS - 1));
    return bits(b, widths[i]);
}

/* A count of thousandths after 2 bits e and a bucket, multiplied out (wrapping, so that
 * corrupt bits give garbage rather than undefined behaviour). */
static inline uint64_t scaled(struct fastbits *b)
{
    int e = (int)bits(b, 2);
    return (uint64_t)unzigzag(bucket(b, VAL_WIDTHS)) * (uint64_t)POW10[e];
}

int core_codec_read_row(struct core_codec_reader *r, int64_t *at, double *row)
{
    if (r->row >= r->n)
        return 0;
    struct fastbits b = {.p = r->p, .nbytes = (r->nbits + 7) / 8, .byte = r->pos >> 3};
    refill(&b);
    take(&b, (int)(r->pos & 7));
    if (r->row == 0) {
        uint64_t a = bits(&b, 64);
        memcpy(&r->at, &a, sizeof r->at);
        r->dat = 0;
    } else {
        uint64_t dod = (uint64_t)unzigzag(bucket(&b, TS_WIDTHS));
        uint64_t dat = (uint64_t)r->dat + dod;
        uint64_t a = (uint64_t)r->at + dat;
        memcpy(&r->dat, &dat, sizeof r->dat);
        memcpy(&r->at, &a, sizeof r->at);
    }
    *at = r->at;
    int left = -1; /* the previous present series of the row */
    for (int j = 0; j < r->n_present;) {
        need(&b, 32);
        if (!(b.acc >> 63)) {
            /* 0: the prediction, the most frequent code: a run of them at once */
            int z = b.acc ? __builtin_clzll(b.acc) : 64;
            if (z > b.nacc)
                z = b.nacc > 0 ? b.nacc : 1; /* none left: a row past the end, refused */
            if (z > r->n_present - j)
                z = r->n_present - j;
            take(&b, z);
            for (int end = j + z; j < end; j++) {
                int i = r->idx[j];
                struct core_codec_series *s = &r->s[i];
                if (s->dec && s->dk) { /* a counter's steady step */
                    s->pk = (int64_t)((uint64_t)s->pk + (uint64_t)s->dk);
                    s->prev = bits_of((double)s->pk / 1000.0);
                }
                row[i] = double_of(s->prev);
                left = i;
            }
            continue;
        }
        int i = r->idx[j++];
        struct core_codec_series *s = &r->s[i];
        uint64_t k = 0, v = 0;
        bool dec;
        int code = ones(b.acc, 4); /* 10, 110, 1110, 1111 */
        take(&b, code + (code < 4));
        switch (code) {
        case 1: /* after a count of thousandths */
            if (!s->dec)
                return -1;
            dec = true;
            k = (uint64_t)s->pk + (uint64_t)s->dk + scaled(&b);
            break;
        case 2: { /* the XOR */
            need(&b, 12);
            int lead = (int)(b.acc >> 58), len = (int)(b.acc >> 52 & 0x3f) + 1;
            if (lead + len > 64)
                return -1;
            take(&b, 12);
            dec = false;
            v = s->prev ^ bits(&b, len) << (64 - lead - len);
            break;
        }
        case 3: /* after something else */
            if (s->dec)
                return -1;
            dec = true;
            k = scaled(&b);
            break;
        default: { /* the previous present series' bits */
            if (left < 0)
                return -1;
            v = r->s[left].prev;
            int64_t kk = 0;
            dec = thousandths(v, &kk);
            k = (uint64_t)kk;
        }
        }
        if (dec) {
            int64_t sk;
            memcpy(&sk, &k, sizeof sk);
            v = bits_of((double)sk / 1000.0);
            s->dk = s->counter && s->dec ? (int64_t)(k - (uint64_t)s->pk) : 0;
            s->pk = sk;
        } else {
            s->dk = 0;
        }
        s->dec = dec;
        s->prev = v;
        row[i] = double_of(v);
        left = i;
    }
    for (int j = r->n_present; j < r->k; j++) /* their prev is CORE_CODEC_ABSENT already */
        row[r->idx[j]] = double_of(CORE_CODEC_ABSENT);
    size_t pos = 8 * b.byte - (size_t)(int64_t)b.nacc; /* nacc < 0: past the bytes */
    if (b.nacc < 0 || pos > r->nbits)
        return -1;
    r->pos = pos;
    r->row++;
    return 1;
}

void core_codec_read_state(const struct core_codec_reader *r, struct core_codec_state *st)
{
    st->at = r->at;
    st->dat = r->dat;
    for (int i = 0; i < r->k; i++) {
        st->prev[i] = r->s[i].prev;
        st->dk[i] = r->s[i].dk;
    }
}

/* ------------------------------------------------------------------ a chunk's blob -- */

void core_codec_blob(const struct core_chunk *c, unsigned char **out, size_t *len)
{
    size_t bytes = core_codec_bytes(c);
    unsigned char *b = core__xmalloc(20 + bytes);
    size_t off = put_varint(b, (uint64_t)c->n);
    off += put_varint(b + off, (uint64_t)c->nbits);
    memcpy(b + off, c->p, bytes);
    *out = b;
    *len = off + bytes;
}

/* The rows, bits and bytes of a blob; -1 when it does not hold them. */
static int blob_parts(const unsigned char *blob, size_t len, int *n, size_t *nbits,
                      const unsigned char **p, char *err, size_t err_len)
{
    size_t off = 0;
    uint64_t rows, bits;
    if (!blob || get_varint(blob, len, &off, &rows) < 0 || get_varint(blob, len, &off, &bits) < 0 ||
        rows > INT32_MAX || bits > 8 * (uint64_t)(len - off)) {
        snprintf(err, err_len, "not a chunk of samples (%zu bytes)", len);
        return -1;
    }
    *n = (int)rows;
    *nbits = (size_t)bits;
    *p = blob + off;
    return 0;
}

int core_codec_blob_read(struct core_codec_reader *r, const unsigned char *blob, size_t len,
                         char *err, size_t err_len)
{
    int n;
    size_t nbits;
    const unsigned char *p;
    memset(r, 0, sizeof *r);
    if (blob_parts(blob, len, &n, &nbits, &p, err, err_len) < 0)
        return -1;
    return core_codec_read_init(r, p, nbits, n, err, err_len);
}

int core_codec_blob_resume(const unsigned char *blob, size_t len, struct core_chunk **c,
                           struct core_codec_state *st, char *err, size_t err_len)
{
    struct core_codec_reader r;
    int64_t at = 0, first = 0;
    int rc = core_codec_blob_read(&r, blob, len, err, err_len);
    *c = NULL;
    if (rc < 0 || r.n < 1) {
        if (rc == 0)
            snprintf(err, err_len, "chunk of samples without rows");
        core_codec_read_deinit(&r);
        return -1;
    }
    double *row = core__xmalloc((size_t)(r.k ? r.k : 1) * sizeof *row);
    for (int i = 0; i < r.n && rc == 0; i++) {
        if (core_codec_read_row(&r, &at, row) != 1) {
            snprintf(err, err_len, "chunk of samples: row %d does not read", i);
            rc = -1;
        }
        if (i == 0)
            first = at;
    }
    free(row);
    if (rc == 0) {
        size_t bytes = (r.nbits + 7) / 8;
        struct core_chunk *ch = core__xcalloc(1, sizeof *ch + bytes);
        memcpy(ch->p, r.p, bytes);
        ch->n = r.n;
        ch->nbits = r.nbits;
        ch->cap = bytes;
        ch->at_first = first;
        ch->at_last = at;
        core_codec_state_init(st, r.k);
        core_codec_read_state(&r, st);
        *c = ch;
    }
    core_codec_read_deinit(&r);
    return rc;
}

/* ------------------------------------------------------- a decide request's sample -- */

/* A growing byte buffer. */
struct bbuf {
    unsigned char *p;
    size_t n, cap;
};

static void bput(struct bbuf *b, const void *x, size_t n)
{
    if (b->n + n > b->cap) {
        size_t cap = b->cap ? b->cap : 128;
        while (cap < b->n + n)
            cap *= 2;
        b->p = core__xrealloc(b->p, cap);
        b->cap = cap;
    }
    if (n)
        memcpy(b->p + b->n, x, n);
    b->n += n;
}

static void bput_varint(struct bbuf *b, uint64_t v)
{
    unsigned char tmp[10];
    bput(b, tmp, put_varint(tmp, v));
}

static void bput_int(struct bbuf *b, int64_t v)
{
    bput_varint(b, zigzag(v));
}

static void bput_str(struct bbuf *b, const char *s)
{
    size_t n = strlen(s);
    bput_varint(b, n);
    bput(b, s, n);
}

void core_codec_sample_layout(const struct core_sample *sm, unsigned char **out, size_t *len,
                              unsigned char **counter)
{
    struct bbuf b = {0};
    unsigned char flags = (unsigned char)(sm->running ? 1 : 0);
    bput_int(&b, sm->running_since);
    bput(&b, &flags, 1);
    bput_varint(&b, (uint64_t)sm->n_vertices);
    for (int i = 0; i < sm->n_vertices; i++) {
        const struct core_vertex_in *v = &sm->vertices[i];
        unsigned char vf = (unsigned char)((v->finished ? 1 : 0) | (v->slot_sharing_group ? 2 : 0));
        bput_str(&b, v->id);
        bput_int(&b, v->parallelism);
        bput_int(&b, v->max_parallelism);
        bput_int(&b, v->partitions);
        bput(&b, &vf, 1);
        if (v->slot_sharing_group)
            bput_str(&b, v->slot_sharing_group);
        bput_varint(&b, (uint64_t)v->n_inputs);
        for (int k = 0; k < v->n_inputs; k++) {
            unsigned char ship = (unsigned char)v->inputs[k].ship;
            bput_str(&b, v->inputs[k].from);
            bput(&b, &ship, 1);
        }
    }
    int k = core_codec_sample_k(sm->n_vertices);
    unsigned char *mask = core__xcalloc(((size_t)k + 7) / 8, 1);
    for (int i = 0; i < sm->n_vertices; i++)
        for (int f = 4; f <= 6; f++) { /* records_in, records_out, accumulated_busy_ms */
            int s = CORE_CODEC_SAMPLE_JOB + CORE_CODEC_SAMPLE_VERTEX * i + f;
            mask[s >> 3] |= (unsigned char)(1u << (s & 7));
        }
    *out = b.p ? b.p : core__xcalloc(1, 1);
    *len = b.n;
    *counter = mask;
}

void core_codec_sample_row(const struct core_sample *sm, double *row)
{
    double *r = row;
    *r++ = sm->heap_used;
    *r++ = sm->heap_max;
    *r++ = sm->gc_ms_per_s;
    *r++ = sm->managed_used;
    *r++ = sm->metaspace_used;
    *r++ = sm->task_slots_total;
    *r++ = sm->task_slots_available;
    for (int i = 0; i < sm->n_vertices; i++) {
        const struct core_vertex_in *v = &sm->vertices[i];
        *r++ = v->busy_min;
        *r++ = v->busy_avg;
        *r++ = v->busy_max;
        *r++ = v->backpressured;
        *r++ = v->records_in;
        *r++ = v->records_out;
        *r++ = v->accumulated_busy_ms;
        *r++ = v->records_in_per_s;
        *r++ = v->records_out_per_s;
        *r++ = v->pending_records;
    }
}

/* Reads a layout; with `fill` false only counts what it needs (vertices, inputs, string
 * bytes), with it true fills sm from the block. */
struct lreader {
    const unsigned char *p;
    size_t len, off;
    bool bad;
};

static uint64_t lget_varint(struct lreader *r)
{
    uint64_t v = 0;
    if (r->bad || get_varint(r->p, r->len, &r->off, &v) < 0)
        r->bad = true;
    return r->bad ? 0 : v;
}

static int lget_int(struct lreader *r)
{
    int64_t v = unzigzag(lget_varint(r));
    if (v < INT32_MIN || v > INT32_MAX)
        r->bad = true;
    return r->bad ? 0 : (int)v;
}

static unsigned char lget_byte(struct lreader *r)
{
    if (r->bad || r->off >= r->len) {
        r->bad = true;
        return 0;
    }
    return r->p[r->off++];
}

/* A string's bytes (borrowed from the layout) and length. */
static const unsigned char *lget_str(struct lreader *r, size_t *n)
{
    uint64_t len = lget_varint(r);
    if (r->bad || len > r->len - r->off) {
        r->bad = true;
        *n = 0;
        return NULL;
    }
    const unsigned char *s = r->p + r->off;
    r->off += (size_t)len;
    *n = (size_t)len;
    return s;
}

struct lsizes {
    size_t n_vertices, n_inputs, strings;
};

/* One pass over the layout: counts into *sz, and fills sm's vertices from the block parts
 * when v is not NULL. */
static void layout_pass(struct lreader *r, struct lsizes *sz, struct core_sample *sm,
                        struct core_vertex_in *v, struct core_input *in, char *str)
{
    size_t n;
    const unsigned char *s;
    memset(sz, 0, sizeof *sz);
    int64_t since = unzigzag(lget_varint(r));
    unsigned char flags = lget_byte(r);
    uint64_t nv = lget_varint(r);
    if (nv > r->len || nv > (uint64_t)(INT32_MAX / CORE_CODEC_SAMPLE_VERTEX)) /* bytes each */
        r->bad = true;
    if (sm) {
        sm->running_since = since;
        sm->running = flags & 1;
        sm->vertices = v;
        sm->n_vertices = (int)nv;
    }
    for (uint64_t i = 0; i < nv && !r->bad; i++) {
        struct core_vertex_in *x = v ? &v[i] : NULL;
        s = lget_str(r, &n);
        if (x) {
            memcpy(str, s, n);
            str[n] = '\0';
            x->id = str;
            str += n + 1;
        }
        sz->strings += n + 1;
        int par = lget_int(r), maxp = lget_int(r), parts = lget_int(r);
        unsigned char vf = lget_byte(r);
        if (x) {
            x->parallelism = par;
            x->max_parallelism = maxp;
            x->partitions = parts;
            x->finished = vf & 1;
            x->slot_sharing_group = NULL;
        }
        if (vf & 2) {
            s = lget_str(r, &n);
            if (x) {
                memcpy(str, s, n);
                str[n] = '\0';
                x->slot_sharing_group = str;
                str += n + 1;
            }
            sz->strings += n + 1;
        }
        uint64_t ni = lget_varint(r);
        if (ni > r->len)
            r->bad = true;
        if (x) {
            x->inputs = in;
            x->n_inputs = (int)ni;
        }
        for (uint64_t k = 0; k < ni && !r->bad; k++) {
            s = lget_str(r, &n);
            unsigned char ship = lget_byte(r);
            if (ship > CORE_SHIP_UNKNOWN)
                r->bad = true;
            if (x && !r->bad) {
                memcpy(str, s, n);
                str[n] = '\0';
                in->from = str;
                in->ship = (enum core_ship)ship;
                str += n + 1;
                in++;
            }
            sz->strings += n + 1;
            sz->n_inputs++;
        }
        sz->n_vertices++;
    }
    if (r->off != r->len)
        r->bad = true;
}

int core_codec_sample_from(const unsigned char *layout, size_t len, int64_t at, const double *row,
                           int k, struct core_sample *sm, void **mem, char *err, size_t err_len)
{
    struct lsizes sz;
    struct lreader r = {.p = layout, .len = len};
    *mem = NULL;
    layout_pass(&r, &sz, NULL, NULL, NULL, NULL);
    if (r.bad || (size_t)k != (size_t)core_codec_sample_k((int)sz.n_vertices)) {
        snprintf(err, err_len, "not a sample's layout (at byte %zu of %zu)", r.off, len);
        return -1;
    }
    size_t vbytes = sz.n_vertices * sizeof(struct core_vertex_in);
    size_t ibytes = sz.n_inputs * sizeof(struct core_input);
    char *block = core__xcalloc(1, vbytes + ibytes + sz.strings + 1);
    struct core_vertex_in *v = (struct core_vertex_in *)(void *)block;
    struct core_input *in = (struct core_input *)(void *)(block + vbytes);
    memset(sm, 0, sizeof *sm);
    r = (struct lreader){.p = layout, .len = len};
    layout_pass(&r, &sz, sm, v, in, block + vbytes + ibytes);
    sm->at = at;
    const double *x = row;
    sm->heap_used = *x++;
    sm->heap_max = *x++;
    sm->gc_ms_per_s = *x++;
    sm->managed_used = *x++;
    sm->metaspace_used = *x++;
    sm->task_slots_total = *x++;
    sm->task_slots_available = *x++;
    for (int i = 0; i < sm->n_vertices; i++) {
        v[i].busy_min = *x++;
        v[i].busy_avg = *x++;
        v[i].busy_max = *x++;
        v[i].backpressured = *x++;
        v[i].records_in = *x++;
        v[i].records_out = *x++;
        v[i].accumulated_busy_ms = *x++;
        v[i].records_in_per_s = *x++;
        v[i].records_out_per_s = *x++;
        v[i].pending_records = *x++;
    }
    *mem = block;
    return 0;
}

bool core_codec_sample_same(const struct core_sample *a, const struct core_sample *b)
{
    if (a->at != b->at || a->running_since != b->running_since || a->running != b->running ||
        a->batch_mode || b->batch_mode || a->n_vertices != b->n_vertices)
        return false;
    unsigned char *la, *lb, *ca, *cb;
    size_t na, nb;
    int k = core_codec_sample_k(a->n_vertices);
    double *ra = core__xcalloc((size_t)k, sizeof *ra), *rb = core__xcalloc((size_t)k, sizeof *rb);
    core_codec_sample_layout(a, &la, &na, &ca);
    core_codec_sample_layout(b, &lb, &nb, &cb);
    core_codec_sample_row(a, ra);
    core_codec_sample_row(b, rb);
    bool eq = na == nb && memcmp(la, lb, na) == 0 && memcmp(ra, rb, (size_t)k * sizeof *ra) == 0;
    free(la);
    free(lb);
    free(ca);
    free(cb);
    free(ra);
    free(rb);
    return eq;
}
