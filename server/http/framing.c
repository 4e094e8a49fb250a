/*
 * framing.c - where each request on a connection ends, checked strictly (see framing.h).
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "http/framing.h"

/* A chunk-size line (the size and its extensions) longer than this is refused: evhttp would
 * hold the whole line in memory until its end. */
#define CHUNK_LINE_MAX 4096

enum {
    S_LINE1,    /* the first byte of a request line */
    S_METHOD,   /* the method */
    S_TARGET,   /* the rest of the request line */
    S_LINE1_LF, /* after the CR that ends the request line */
    S_FIELD,    /* the first byte of a header (or trailer) line */
    S_END_LF,   /* after the CR of the empty line that ends the fields */
    S_NAME,     /* a field name */
    S_VALUE,    /* a field value (blanks around it included) */
    S_FIELD_LF, /* after the CR that ends a field line */
    S_BODY,     /* Content-Length bytes of body */
    S_SIZE1,    /* the first byte of a chunk-size line */
    S_SIZE,     /* the chunk size's further hex digits */
    S_SIZE_BWS, /* blanks after the chunk size, before ';' */
    S_EXT,      /* a chunk extension */
    S_SIZE_LF,  /* after the CR that ends a chunk-size line */
    S_DATA,     /* chunk data */
    S_DATA_CR,  /* the CR after the chunk data */
    S_DATA_LF,  /* the LF after it */
    S_DEAD,     /* refused */
};

/* Bits of nmatch: what the field name may still be. */
#define M_CL 1 /* Content-Length */
#define M_TE 2 /* Transfer-Encoding */

static const char cl_name[] = "content-length";
static const char te_name[] = "transfer-encoding";

/* RFC 9110 tchar: the bytes of a token (a field name). */
static bool tchar(unsigned char c)
{
    static const char other[] = "!#$%&'*+-.^_`|~";
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           (c && memchr(other, c, sizeof other - 1));
}

/* A control character: what no request line, field value or chunk extension may hold
 * (HTAB is tested apart where it is allowed). */
static bool ctl(unsigned char c)
{
    return c < 0x20 || c == 0x7f;
}

static int hexdigit(unsigned char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    c |= 0x20;
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    return -1;
}

void framing_init(struct framing *f)
{
    memset(f, 0, sizeof *f);
    f->st = S_LINE1;
}

bool framing_partial(const struct framing *f)
{
    return f->st != S_LINE1 && f->st != S_DEAD;
}

/* Refuses the stream at offset at: -1. */
__attribute__((format(printf, 4, 5))) static int fail(struct framing *f, uint64_t at,
                                                      const char *field, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(f->error, sizeof f->error, fmt, ap);
    va_end(ap);
    f->field = field;
    f->offset = at;
    f->st = S_DEAD;
    return -1;
}

/* The field name for a message: its first 40 bytes, then "..." when it is longer. */
static const char *shown_name(struct framing *f, char *buf, size_t n)
{
    snprintf(buf, n, "%s%s", f->name, f->nlen > sizeof f->name - 1 ? "..." : "");
    return buf;
}

/* The request ends before offset next: the stream goes on with the next one. */
static void complete(struct framing *f, uint64_t next)
{
    f->requests++;
    f->start = next;
    f->trailer = f->have_cl = f->have_te = false;
    f->cl = 0;
    f->mlen = 0;
    f->st = S_LINE1;
}

/* The method evhttp reads a body for (any other it reads without one). */
static bool takes_body(const char *m, size_t n)
{
    static const char *const with[] = {"GET",    "PUT",     "POST",   "PATCH",
                                       "DELETE", "OPTIONS", "CONNECT"};
    for (size_t i = 0; i < sizeof with / sizeof with[0]; i++)
        if (strlen(with[i]) == n && memcmp(with[i], m, n) == 0)
            return true;
    return false;
}

/* The end of a field line at offset at: Content-Length and Transfer-Encoding checked. */
static int field_end(struct framing *f, uint64_t at)
{
    if (f->nmatch == M_CL) {
        if (!f->digits)
            return fail(f, at, "Content-Length", "Content-Length is empty");
        if (f->have_te)
            return fail(f, at, "Content-Length",
                        "both Transfer-Encoding and Content-Length (the body's length would be "
                        "ambiguous)");
        if (f->have_cl && f->cl != f->val)
            return fail(f, at, "Content-Length",
                        "two Content-Length headers that disagree (%llu and %llu)",
                        (unsigned long long)f->cl, (unsigned long long)f->val);
        f->have_cl = true;
        f->cl = f->val;
    } else if (f->nmatch == M_TE) {
        if (f->te_pos != sizeof "chunked" - 1)
            return fail(f, at, "Transfer-Encoding",
                        "Transfer-Encoding must be exactly chunked (no other coding is "
                        "supported)");
        if (f->have_te)
            return fail(f, at, "Transfer-Encoding", "several Transfer-Encoding headers");
        if (f->have_cl)
            return fail(f, at, "Transfer-Encoding",
                        "both Transfer-Encoding and Content-Length (the body's length would be "
                        "ambiguous)");
        f->have_te = true;
    }
    f->st = S_FIELD;
    return 0;
}

/* The empty line after the fields ended at offset at (the line's LF). */
static int fields_end(struct framing *f, uint64_t at)
{
    char m[16];
    if (f->trailer) {
        complete(f, at + 1);
        return 0;
    }
    if (f->bodyless && (f->have_te || (f->have_cl && f->cl > 0))) {
        snprintf(m, sizeof m, "%.*s%s",
                 (int)(f->mlen < sizeof f->method ? f->mlen : sizeof f->method), f->method,
                 f->mlen > sizeof f->method ? "..." : "");
        return fail(f, at, f->have_te ? "Transfer-Encoding" : "Content-Length",
                    "a %s request with a body (this method takes none)", m);
    }
    if (f->have_te) {
        f->st = S_SIZE1;
        f->line = 0;
    } else if (f->have_cl && f->cl > 0) {
        f->left = f->cl;
        f->st = S_BODY;
    } else {
        complete(f, at + 1);
    }
    return 0;
}

/* A byte where a line's LF should be (after its CR). */
static int bare_cr(struct framing *f, uint64_t at)
{
    return fail(f, at, NULL, "a bare CR (not followed by LF) in the request's framing");
}

static int bare_lf(struct framing *f, uint64_t at)
{
    return fail(f, at, NULL, "a line that ends in LF without CR");
}

int framing_feed(struct framing *f, unsigned char *p, size_t n)
{
    uint64_t base = f->offset;
    char nb[48];
    size_t i = 0;
    if (f->st == S_DEAD)
        return -1;
    while (i < n) {
        unsigned char c = p[i];
        uint64_t at = base + i;
        switch (f->st) {
        case S_LINE1:
            if (c == '\r' || c == '\n')
                return fail(f, at, NULL, "an empty line where a request line is expected");
            f->st = S_METHOD;
            f->mlen = 0;
            continue; /* the same byte, as the method's first */
        case S_METHOD:
            if (c == ' ') {
                f->bodyless = !takes_body(f->method, f->mlen <= sizeof f->method ? f->mlen : 0);
                f->st = S_TARGET;
            } else if (c == '\r') {
                f->bodyless = true; /* no target: evhttp refuses the line */
                f->st = S_LINE1_LF;
            } else if (c == '\n') {
                return bare_lf(f, at);
            } else if (ctl(c)) {
                return fail(f, at, NULL, "a control character (0x%02x) in the request line", c);
            } else {
                if (f->mlen < sizeof f->method)
                    f->method[f->mlen] = (char)c;
                if (f->mlen < 255)
                    f->mlen++;
            }
            break;
        case S_TARGET:
            while (i < n && !ctl(p[i]))
                i++;
            if (i == n)
                continue;
            c = p[i];
            at = base + i;
            if (c == '\r')
                f->st = S_LINE1_LF;
            else if (c == '\n')
                return bare_lf(f, at);
            else
                return fail(f, at, NULL, "a control character (0x%02x) in the request line", c);
            break;
        case S_LINE1_LF:
            if (c != '\n')
                return bare_cr(f, at);
            f->st = S_FIELD;
            break;
        case S_FIELD:
            if (c == '\r') {
                f->st = S_END_LF;
            } else if (c == '\n') {
                return bare_lf(f, at);
            } else if (c == ' ' || c == '\t') {
                return fail(f, at, NULL,
                            "obsolete line folding (a header line that starts with a blank)");
            } else if (c == ':') {
                return fail(f, at, NULL, "a header line with an empty name");
            } else if (!tchar(c)) {
                return fail(f, at, NULL,
                            "a header name with the byte 0x%02x, which a field name may not hold",
                            c);
            } else {
                f->nlen = 0;
                f->nmatch = M_CL | M_TE;
                f->st = S_NAME;
                continue; /* the same byte, as the name's first */
            }
            break;
        case S_NAME:
            if (tchar(c)) {
                unsigned char lc = (unsigned char)(c | 0x20);
                if (f->nlen >= sizeof cl_name - 1 || lc != (unsigned char)cl_name[f->nlen])
                    f->nmatch &= (uint8_t)~M_CL;
                if (f->nlen >= sizeof te_name - 1 || lc != (unsigned char)te_name[f->nlen])
                    f->nmatch &= (uint8_t)~M_TE;
                if (f->nlen < sizeof f->name - 1) {
                    f->name[f->nlen] = (char)c;
                    f->name[f->nlen + 1] = '\0';
                }
                if (f->nlen == 0 && f->trailer)
                    p[i] = '~'; /* never merged into the header fields by evhttp */
                f->nlen++;
            } else if (c == ':') {
                f->nmatch = (f->nmatch & M_CL) && f->nlen == sizeof cl_name - 1   ? M_CL
                            : (f->nmatch & M_TE) && f->nlen == sizeof te_name - 1 ? M_TE
                                                                                  : 0;
                if (f->trailer && f->nmatch)
                    return fail(f, at, f->nmatch == M_CL ? "Content-Length" : "Transfer-Encoding",
                                "%s in the chunked body's trailer (framing fields may only be "
                                "headers)",
                                shown_name(f, nb, sizeof nb));
                f->val = 0;
                f->te_pos = 0;
                f->digits = f->blank = false;
                f->st = S_VALUE;
            } else if (c == ' ' || c == '\t') {
                return fail(f, at, NULL, "whitespace between the header name %s and its colon",
                            shown_name(f, nb, sizeof nb));
            } else if (c == '\r' || c == '\n') {
                return fail(f, at, NULL, "a header line without a colon (%s)",
                            shown_name(f, nb, sizeof nb));
            } else {
                return fail(f, at, NULL,
                            "a header name with the byte 0x%02x, which a field name may not hold",
                            c);
            }
            break;
        case S_VALUE:
            if (f->nmatch == 0) {
                while (i < n && (!ctl(p[i]) || p[i] == '\t'))
                    i++;
                if (i == n)
                    continue;
                c = p[i];
                at = base + i;
            }
            if (c == '\r') {
                f->st = S_FIELD_LF;
            } else if (c == '\n') {
                return bare_lf(f, at);
            } else if (c == '\0') {
                return fail(f, at, NULL, "a NUL byte in the value of the header %s",
                            shown_name(f, nb, sizeof nb));
            } else if (ctl(c) && c != '\t') {
                return fail(f, at, NULL,
                            "a control character (0x%02x) in the value of the header %s", c,
                            shown_name(f, nb, sizeof nb));
            } else if (c == ' ' || c == '\t') {
                /* blanks before the value are skipped, after it they end it; evhttp's source
                 * skips only spaces before a value (a tab could make "\tchunked" another
                 * coding to it), so a tab there becomes a space */
                f->blank = f->digits || f->te_pos > 0;
                if (!f->blank)
                    p[i] = ' ';
            } else if (f->nmatch == M_CL) {
                if (c < '0' || c > '9' || f->blank)
                    return fail(f, at, "Content-Length",
                                "Content-Length must be decimal digits only (no sign, blank or "
                                "other character inside)");
                if (f->val > (UINT64_C(0x7fffffffffffffff) - (uint64_t)(c - '0')) / 10)
                    return fail(f, at, "Content-Length", "Content-Length is above 2^63-1");
                f->val = f->val * 10 + (uint64_t)(c - '0');
                f->digits = true;
            } else if (f->nmatch == M_TE) {
                if (f->blank || f->te_pos >= sizeof "chunked" - 1 ||
                    (unsigned char)(c | 0x20) != (unsigned char)"chunked"[f->te_pos])
                    return fail(f, at, "Transfer-Encoding",
                                "Transfer-Encoding must be exactly chunked (no other coding is "
                                "supported)");
                f->te_pos++;
            }
            break;
        case S_FIELD_LF:
            if (c != '\n')
                return bare_cr(f, at);
            if (field_end(f, at) < 0)
                return -1;
            break;
        case S_END_LF:
            if (c != '\n')
                return bare_cr(f, at);
            if (fields_end(f, at) < 0)
                return -1;
            break;
        case S_BODY: {
            uint64_t k = n - i < f->left ? n - i : f->left;
            i += (size_t)k;
            f->left -= k;
            if (f->left == 0)
                complete(f, base + i);
            continue;
        }
        case S_SIZE1:
        case S_SIZE: {
            int d = hexdigit(c);
            if (++f->line > CHUNK_LINE_MAX)
                return fail(f, at, NULL, "a chunk-size line longer than %d bytes", CHUNK_LINE_MAX);
            if (d >= 0) {
                if (f->st == S_SIZE1)
                    f->val = 0;
                if (f->val > (UINT64_C(0x7fffffffffffffff) >> 4))
                    return fail(f, at, NULL, "a chunk size above 2^63-1");
                f->val = f->val * 16 + (uint64_t)d;
                f->st = S_SIZE;
            } else if (f->st == S_SIZE1) {
                if (c == '\r' || c == '\n')
                    return fail(f, at, NULL, "an empty line where a chunk size is expected");
                return fail(f, at, NULL,
                            "a malformed chunk size: it must start with a hex digit, not 0x%02x "
                            "(no sign, 0x or blank)",
                            c);
            } else if (c == ';') {
                p[i] = ' '; /* evhttp takes "size SP ..." and ignores the rest */
                f->st = S_EXT;
            } else if (c == ' ' || c == '\t') {
                p[i] = ' ';
                f->st = S_SIZE_BWS;
            } else if (c == '\r') {
                f->st = S_SIZE_LF;
            } else if (c == '\n') {
                return bare_lf(f, at);
            } else {
                return fail(f, at, NULL,
                            "a malformed chunk size: 0x%02x after its hex digits (only "
                            ";extensions may follow)",
                            c);
            }
            break;
        }
        case S_SIZE_BWS:
            if (++f->line > CHUNK_LINE_MAX)
                return fail(f, at, NULL, "a chunk-size line longer than %d bytes", CHUNK_LINE_MAX);
            if (c == ';')
                f->st = S_EXT;
            else if (c != ' ' && c != '\t')
                return fail(f, at, NULL,
                            "a malformed chunk size: a blank after its hex digits that no "
                            ";extension follows");
            break;
        case S_EXT:
            if (++f->line > CHUNK_LINE_MAX)
                return fail(f, at, NULL, "a chunk-size line longer than %d bytes", CHUNK_LINE_MAX);
            if (c == '\r')
                f->st = S_SIZE_LF;
            else if (c == '\n')
                return bare_lf(f, at);
            else if (ctl(c) && c != '\t')
                return fail(f, at, NULL, "a control character (0x%02x) in a chunk extension", c);
            break;
        case S_SIZE_LF:
            if (c != '\n')
                return bare_cr(f, at);
            if (f->val == 0) {
                f->trailer = true; /* the last chunk: the trailer follows */
                f->st = S_FIELD;
            } else {
                f->left = f->val;
                f->st = S_DATA;
            }
            break;
        case S_DATA: {
            uint64_t k = n - i < f->left ? n - i : f->left;
            i += (size_t)k;
            f->left -= k;
            if (f->left == 0)
                f->st = S_DATA_CR;
            continue;
        }
        case S_DATA_CR:
            if (c != '\r')
                return fail(f, at, NULL, "a chunk's data is not followed by CRLF");
            f->st = S_DATA_LF;
            break;
        case S_DATA_LF:
            if (c != '\n')
                return bare_cr(f, at);
            f->st = S_SIZE1;
            f->line = 0;
            break;
        default:
            return -1;
        }
        i++;
    }
    f->offset = base + n;
    return 0;
}
