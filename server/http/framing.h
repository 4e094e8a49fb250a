/*
 * framing.h - where each request on a connection ends, checked as strictly as a proxy in
 * front of the server would read it (prefix framing_). A pure validator of the byte stream a
 * client sends: no socket, no allocation, no clock.
 *
 * Why: evhttp frames requests leniently (the first of two Content-Length headers wins, a
 * name with a blank before its colon is another header, a Transfer-Encoding other than
 * exactly "chunked" falls back to Content-Length, a chunk size may carry a sign or 0x, an
 * empty line where a chunk size belongs is skipped, header fields may be folded). Wherever a
 * proxy and evhttp could disagree on where a request ends, the rest of one request's body
 * would run as a request of its own (smuggling). http.c feeds every received byte here
 * before evhttp parses it; a request this refuses never reaches evhttp (its bytes are
 * dropped) and gets a 400 that closes the connection.
 *
 * The grammar (RFC 9112): lines end in CRLF (a bare CR or a bare LF is refused); the
 * request line has no control character; a header field is a token, a colon (no blank
 * before it), optional blanks, a value without NUL or other control characters (HTAB
 * aside); no obsolete line folding. Content-Length is decimal digits only; several agree or
 * are refused; Transfer-Encoding is exactly "chunked", once, and never with Content-Length.
 * A method that evhttp reads without a body (HEAD, TRACE, an unknown one) may not announce
 * one. A chunk is 1*HEXDIG, optional extensions (`;name=value`, RFC 9112 7.1.1, ignored),
 * CRLF, the data, CRLF; after the last chunk (size 0) the trailer fields, then CRLF; the
 * trailer may not hold Content-Length or Transfer-Encoding.
 *
 * Rewrites in place keep evhttp reading what was checked here, at no copy: the first byte
 * after a chunk size that starts an extension (';' or a blank) becomes a space (evhttp takes
 * "size SP anything" and ignores the rest, but refuses "size;ext" as too large); a tab
 * before the value of Content-Length or Transfer-Encoding becomes a space (evhttp's source
 * skips only spaces there, so that "\tchunked" would be another coding to a build of it, and
 * the chunked body a request of its own); and the first byte of each trailer field's name
 * becomes '~' (evhttp would merge trailer fields into the header fields, where a trailer
 * `Authorization` would count as the header; the server reads no trailer field).
 *
 * Cost: the request line and header fields are looked at byte by byte (one switch each);
 * body and chunk data are skipped over in one step.
 *
 * May call: libc.
 */
#ifndef GOVERNOR_FRAMING_H
#define GOVERNOR_FRAMING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct framing {
    /* What the caller reads. */
    uint64_t offset;   /* bytes of the stream taken so far (the refused byte is not) */
    uint64_t start;    /* offset of the first byte of the current (or the refused) request */
    uint64_t requests; /* requests complete so far */
    const char *field; /* after a refusal: the header it concerns (static text), or NULL */
    char error[160];   /* after a refusal: what is wrong, a sentence; "" until then */
    /* The parser's own state. */
    uint8_t st;     /* the state (framing.c) */
    uint8_t te_pos; /* bytes of "chunked" matched in a Transfer-Encoding value */
    uint8_t mlen;   /* bytes of the method seen */
    uint8_t nmatch; /* which of Content-Length / Transfer-Encoding the name may still be */
    bool bodyless;  /* the method is one evhttp reads without a body */
    char method[8]; /* the method's first bytes */
    uint32_t nlen;  /* bytes of the field name seen */
    char name[41];  /* the field name's first 40 bytes (for messages) */
    bool trailer;   /* the fields read are the trailer's */
    bool have_cl, have_te;
    bool digits, blank; /* the value so far has a digit (CL) / a blank after its text */
    uint64_t cl;        /* the Content-Length given */
    uint64_t val;       /* the number being read: a Content-Length or a chunk size */
    uint64_t left;      /* bytes of the body or of the chunk still to come */
    uint32_t line;      /* bytes of the chunk-size line so far */
};

/* Starts a connection's stream. */
void framing_init(struct framing *f);

/*
 * Takes the next n bytes of the stream (p is writable: see the rewrites above). 0 when they
 * are all acceptable so far (f->requests counts the requests they complete); -1 at the first
 * byte that breaks the grammar, with f->error, f->field, f->start (where the refused request
 * began) and f->offset (the refused byte) set. Once refused the stream stays refused.
 */
int framing_feed(struct framing *f, unsigned char *p, size_t n);

/* Whether a request has begun and is not complete yet (its bytes so far are acceptable). */
bool framing_partial(const struct framing *f);

#endif
