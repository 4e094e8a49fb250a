/*
 * httpc.h - a small blocking HTTP/1.1 client (prefix httpc_) for the sub-commands that call
 * out: `governor flink` reads a JobManager's REST API, rescales through it, and posts samples
 * to a governor server. One request per connection (Connection: close), on a socket of its
 * own; a whole call, from the name's resolution to the body's last byte, is bounded by its
 * timeout (a peer that trickles bytes does not stretch it), a body above the caller's limit is
 * refused, and each failure says what failed (cannot resolve, cannot connect and why, timed
 * out, closed, malformed). Bodies by Content-Length, chunked, or up to the close.
 *
 * Only http:// URLs: the binary links no TLS library (a TLS endpoint is reached through a
 * local proxy, or kubectl port-forward).
 *
 * May call: libc (sockets, getaddrinfo, poll), libevent (the URL parser only), xmem.
 */
#ifndef GOVERNOR_HTTPC_H
#define GOVERNOR_HTTPC_H

#include <stddef.h>
#include <stdint.h>

/* A base URL: http://HOST[:PORT][/PREFIX]. */
struct httpc_url {
    char *host;
    int port;     /* 80 when not given */
    char *prefix; /* the path before every request's, "" or "/a/b" (no trailing '/') */
    char *text;   /* the URL as given, without a trailing '/' (for messages) */
};

/* Parses text into u (httpc_url_deinit releases it, also after a failure). -1 + *errp (new)
 * saying what is wrong: another scheme, no host, a port outside [1, 65535], a query or a
 * fragment. */
int httpc_url_parse(const char *text, struct httpc_url *u, char **errp);
void httpc_url_deinit(struct httpc_url *u);

/* One request. Everything is borrowed for the call. */
struct httpc_req {
    const char *method; /* "GET", "PUT", "POST" */
    const char *path;   /* after the URL's prefix, with its query: "/jobs/abc?x=1" */
    const char *body;   /* NULL: none */
    size_t len;
    const char *bearer; /* an Authorization: Bearer token, NULL: none */
    int64_t timeout_ms; /* the whole call, > 0 */
    size_t max_body;    /* the largest response body read */
};

/* What came back. Zeroed storage is empty; httpc_res_deinit releases it. */
struct httpc_res {
    int status; /* the response's status, 0 when none came (error says why) */
    char *body; /* new, NUL-terminated (len bytes), NULL without a response */
    size_t len;
    int retry_after; /* a Retry-After header in seconds, -1: none or not a number */
    char error[256]; /* why there is no response: "connection refused", "timed out after 10 s" */
};

struct httpc;

/* new: a client (it holds nothing between calls today; a handle so that it may). */
struct httpc *httpc_new(char **errp);
void httpc_free(struct httpc *c);

/*
 * Sends q to u and waits for the whole response or the timeout. 0 when a response came (any
 * status; res->status, body, retry_after set), -1 when none did (res->error says why: refused,
 * unreachable, timed out, closed, a body above max_body). res is reset first.
 */
int httpc_call(struct httpc *c, const struct httpc_url *u, const struct httpc_req *q,
               struct httpc_res *res);
void httpc_res_deinit(struct httpc_res *res);

/* new: s percent-encoded for a path segment or a query value (every byte but A-Z a-z 0-9
 * - . _ ~ as %HH). */
char *httpc_escape(const char *s);

#endif
