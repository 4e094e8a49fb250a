/*
 * fuzz_framing.c - libFuzzer target for the request framing validator (server/http/framing.c),
 * which sees every byte a client sends: the input is a byte stream, fed whole and again in
 * parts (split where the input's first two bytes say, then one byte at a time). The outcome
 * (the requests complete, a refusal at the same byte of the same request with the same
 * message) and the rewritten stream must not depend on how the bytes were split, the offsets
 * must stay within the stream, and a refused stream must stay refused. Crashing, a sanitizer
 * report or any of those failing is a bug.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "http/framing.h"

/* Feeds s (n bytes) in parts of at most step bytes (0: whole) into f, rewriting buf. */
static int feed(struct framing *f, uint8_t *buf, const uint8_t *s, size_t n, size_t step)
{
    int rc = 0;
    memcpy(buf, s, n);
    framing_init(f);
    for (size_t off = 0; rc == 0 && off < n;) {
        size_t k = step == 0 || step > n - off ? n - off : step;
        rc = framing_feed(f, buf + off, k);
        off += k;
    }
    return rc;
}

static void same(const struct framing *a, int ra, const uint8_t *ba, const struct framing *b,
                 int rb, const uint8_t *bb, size_t n)
{
    if (ra != rb || a->requests != b->requests || a->start != b->start ||
        (ra == 0 && framing_partial(a) != framing_partial(b)))
        abort();
    if (ra < 0 &&
        (a->offset != b->offset || strcmp(a->error, b->error) != 0 || a->field != b->field))
        abort();
    /* the bytes rewritten are those before the refusal (or all) */
    size_t upto = ra < 0 ? (size_t)a->offset : n;
    if (memcmp(ba, bb, upto) != 0)
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2 || size > 8192)
        return 0;
    size_t split = ((size_t)data[0] << 8 | data[1]) % (size - 1) + 1;
    const uint8_t *s = data + 2;
    size_t n = size - 2;
    uint8_t *b1 = malloc(n + 1), *b2 = malloc(n + 1), *b3 = malloc(n + 1);
    struct framing f1, f2, f3;
    int r1 = feed(&f1, b1, s, n, 0);
    int r2 = feed(&f2, b2, s, n, split);
    int r3 = feed(&f3, b3, s, n, 1);
    same(&f1, r1, b1, &f2, r2, b2, n);
    same(&f1, r1, b1, &f3, r3, b3, n);
    if (r1 == 0 && f1.offset != n)
        abort();
    if (r1 < 0 && (f1.offset >= n || f1.start > f1.offset || !f1.error[0]))
        abort();
    if (f1.start > n)
        abort();
    /* refused stays refused */
    if (r1 < 0) {
        uint64_t at = f1.offset;
        uint8_t more[] = "GET / HTTP/1.1\r\n\r\n";
        if (framing_feed(&f1, more, sizeof more - 1) != -1 || f1.offset != at)
            abort();
    }
    free(b1);
    free(b2);
    free(b3);
    return 0;
}
