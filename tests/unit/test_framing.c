/*
 * Unit tests for framing.c: where each request of a connection's byte stream ends, and which
 * streams are refused. The cases are data, in tests/unit/data/framing.test; each is fed
 * whole, one byte at a time, and split in two at every offset, and the three must agree (the
 * validator keeps its state across reads, as a socket delivers them).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test.h"
#include "testfile.h"

#include "http/framing.h"

/* The case's stream: the field with \r \n \t \0 \s (a space) \\ and \xHH decoded. */
static unsigned char *unescape(const char *s, size_t *n)
{
    unsigned char *d = calloc(1, strlen(s) + 1);
    size_t k = 0;
    for (const char *p = s; *p; p++) {
        if (*p != '\\' || !p[1]) {
            d[k++] = (unsigned char)*p;
            continue;
        }
        p++;
        switch (*p) {
        case 'r':
            d[k++] = '\r';
            break;
        case 'n':
            d[k++] = '\n';
            break;
        case 't':
            d[k++] = '\t';
            break;
        case '0':
            d[k++] = '\0';
            break;
        case 's':
            d[k++] = ' ';
            break;
        case 'x': {
            unsigned v = 0;
            sscanf(p + 1, "%2x", &v);
            d[k++] = (unsigned char)v;
            p += 2;
            break;
        }
        default:
            d[k++] = (unsigned char)*p;
        }
    }
    *n = k;
    return d;
}

/* The outcome of a stream, as one line: "ok, N complete[, partial]", or "refused ...". */
static void outcome(const struct framing *f, int rc, char *buf, size_t len)
{
    if (rc == 0)
        snprintf(buf, len, "ok, %llu complete%s", (unsigned long long)f->requests,
                 framing_partial(f) ? ", partial" : "");
    else
        snprintf(buf, len, "refused at byte %llu, request %llu from byte %llu%s%s%s: %s",
                 (unsigned long long)f->offset, (unsigned long long)f->requests + 1,
                 (unsigned long long)f->start, f->field ? " [" : "", f->field ? f->field : "",
                 f->field ? "]" : "", f->error);
}

/* Feeds s (n bytes, a copy: the validator may rewrite it) in parts of the given sizes (0
 * ends the list; the rest goes last); the outcome into buf, the rewritten stream into out. */
static void run(const unsigned char *s, size_t n, const size_t *parts, char *buf, size_t len,
                unsigned char *out)
{
    struct framing f;
    int rc = 0;
    size_t off = 0;
    memcpy(out, s, n);
    framing_init(&f);
    for (; rc == 0 && parts && *parts && off < n; parts++) {
        size_t k = *parts < n - off ? *parts : n - off;
        rc = framing_feed(&f, out + off, k);
        off += k;
    }
    if (rc == 0 && off < n)
        rc = framing_feed(&f, out + off, n - off);
    outcome(&f, rc, buf, len);
}

/* The handler of framing.test: `feed | STREAM => OUTCOME`, `rewrite | STREAM => STREAM`. */
static int framing_case(void *ud, const struct testfile_case *c, struct testfile_out *out)
{
    (void)ud;
    const char *verb = c->field[0];
    if (c->n_fields != 2 || (strcmp(verb, "feed") != 0 && strcmp(verb, "rewrite") != 0)) {
        testfile_printf(out, "want `feed | STREAM` or `rewrite | STREAM`");
        return -1;
    }
    size_t n;
    unsigned char *s = unescape(c->field[1], &n);
    unsigned char *w = malloc(n + 1), *w2 = malloc(n + 1);
    char whole[256], other[256];
    run(s, n, NULL, whole, sizeof whole, w);
    /* one byte at a time */
    size_t *ones = malloc((n + 1) * sizeof *ones);
    for (size_t i = 0; i < n; i++)
        ones[i] = 1;
    ones[n] = 0;
    run(s, n, ones, other, sizeof other, w2);
    int rc = 0;
    if (strcmp(whole, other) != 0 || memcmp(w, w2, n) != 0) {
        testfile_printf(out, "whole: %s\none byte at a time: %s", whole, other);
        rc = -1;
    }
    /* in two parts, split at every offset */
    for (size_t k = 1; rc == 0 && k < n; k++) {
        size_t two[2] = {k, 0};
        run(s, n, two, other, sizeof other, w2);
        if (strcmp(whole, other) != 0 || memcmp(w, w2, n) != 0) {
            testfile_printf(out, "whole: %s\nsplit at %zu: %s", whole, k, other);
            rc = -1;
        }
    }
    if (rc == 0 && strcmp(verb, "feed") == 0) {
        testfile_printf(out, "%s", whole);
    } else if (rc == 0) {
        for (size_t i = 0; i < n; i++) {
            unsigned char ch = w[i];
            if (ch == '\r')
                testfile_printf(out, "\\r");
            else if (ch == '\n')
                testfile_printf(out, "\\n");
            else if (ch == '\t')
                testfile_printf(out, "\\t");
            else if (ch == '\\')
                testfile_printf(out, "\\\\");
            else if (ch < 0x20 || ch >= 0x7f)
                testfile_printf(out, "\\x%02x", ch);
            else
                testfile_printf(out, "%c", ch);
        }
    }
    free(ones);
    free(w);
    free(w2);
    free(s);
    return rc;
}

static void framing_cases(void)
{
    ASSERT_EQ(testfile_run(TESTFILE_DATA("framing.test"), framing_case, NULL), 0);
}

/* A refused stream stays refused, whatever comes after. */
static void refused_stays_refused(void)
{
    struct framing f;
    unsigned char bad[] = "GET / HTTP/1.1\r\nContent-Length: +1\r\n\r\n";
    unsigned char good[] = "GET / HTTP/1.1\r\n\r\n";
    framing_init(&f);
    ASSERT_EQ(framing_feed(&f, bad, sizeof bad - 1), -1);
    uint64_t at = f.offset;
    ASSERT_EQ(framing_feed(&f, good, sizeof good - 1), -1);
    ASSERT_EQ(f.offset, at);
    ASSERT_EQ(f.requests, 0);
    ASSERT_STR(f.field, "Content-Length");
}

/* Many pipelined requests: the count and the start of the next one follow. */
static void pipelined(void)
{
    struct framing f;
    unsigned char req[] = "POST /v1/x HTTP/1.1\r\nContent-Length: 2\r\n\r\n{}";
    framing_init(&f);
    for (int i = 0; i < 1000; i++)
        ASSERT_EQ(framing_feed(&f, req, sizeof req - 1), 0);
    ASSERT_EQ(f.requests, 1000);
    ASSERT_EQ(f.start, 1000 * (sizeof req - 1));
    ASSERT_EQ(f.offset, 1000 * (sizeof req - 1));
    ASSERT(!framing_partial(&f));
}

int main(void)
{
    static const struct test_case tests[] = {
        TEST_ENTRY(framing_cases),
        TEST_ENTRY(refused_stays_refused),
        TEST_ENTRY(pipelined),
    };
    return test_run(tests, (int)(sizeof tests / sizeof tests[0]));
}
