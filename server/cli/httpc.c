/*
 * httpc.c - the blocking HTTP client (see httpc.h), on sockets.
 *
 * One call: the host resolved (getaddrinfo), each address tried with a non-blocking connect
 * until one takes, the request written, the response read: status line, headers (at most
 * HEADER_MAX bytes), then the body by Content-Length, chunked transfer coding, or up to the
 * close. Every wait is a poll() bounded by the call's one deadline, so each failure has its own
 * words: cannot resolve, cannot connect (refused, unreachable), timed out, closed before a
 * response, a malformed response, a body above the limit.
 *
 * Why not libevent's evhttp client: a refused connection reaches its callback as a request
 * with no response and no error (2.1), so the warn line could not say why; a blocking call
 * needs no event loop either.
 */
#include <ctype.h>
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <event2/http.h>

#include "cli/httpc.h"
#include "base/xmem.h"

/* The response's status line and headers together, at most. */
#define HEADER_MAX (64 * 1024)

struct httpc {
    int unused;
};

struct httpc *httpc_new(char **errp)
{
    (void)errp;
    return xcalloc(1, sizeof(struct httpc));
}

void httpc_free(struct httpc *c)
{
    free(c);
}

void httpc_url_deinit(struct httpc_url *u)
{
    free(u->host);
    free(u->prefix);
    free(u->text);
    memset(u, 0, sizeof *u);
}

int httpc_url_parse(const char *text, struct httpc_url *u, char **errp)
{
    memset(u, 0, sizeof *u);
    struct evhttp_uri *p = text ? evhttp_uri_parse(text) : NULL;
    int rc = -1;
    if (!p) {
        *errp = xasprintf("\"%s\" is not a URL (http://HOST[:PORT][/PATH])", text ? text : "");
        goto out;
    }
    const char *scheme = evhttp_uri_get_scheme(p), *host = evhttp_uri_get_host(p);
    if (!scheme || strcasecmp(scheme, "http") != 0) {
        *errp = xasprintf("\"%s\": only http:// URLs are supported (reach an https endpoint "
                          "through a local proxy)",
                          text);
        goto out;
    }
    if (!host || !*host) {
        *errp = xasprintf("\"%s\" has no host", text);
        goto out;
    }
    if (evhttp_uri_get_query(p) || evhttp_uri_get_fragment(p) || evhttp_uri_get_userinfo(p)) {
        *errp = xasprintf("\"%s\": a base URL takes no query, fragment or user", text);
        goto out;
    }
    int port = evhttp_uri_get_port(p);
    if (port == 0 || port > 65535) {
        *errp = xasprintf("\"%s\": the port must be in [1, 65535]", text);
        goto out;
    }
    u->port = port < 0 ? 80 : port;
    u->host = xstrdup(host);
    const char *path = evhttp_uri_get_path(p);
    size_t n = path ? strlen(path) : 0;
    while (n > 0 && path[n - 1] == '/')
        n--;
    u->prefix = xmalloc(n + 1);
    memcpy(u->prefix, path ? path : "", n);
    u->prefix[n] = '\0';
    n = strlen(text);
    while (n > 0 && text[n - 1] == '/')
        n--;
    u->text = xmalloc(n + 1);
    memcpy(u->text, text, n);
    u->text[n] = '\0';
    rc = 0;
out:
    if (p)
        evhttp_uri_free(p);
    return rc;
}

void httpc_res_deinit(struct httpc_res *res)
{
    free(res->body);
    memset(res, 0, sizeof *res);
    res->retry_after = -1;
}

char *httpc_escape(const char *s)
{
    static const char hex[] = "0123456789ABCDEF";
    char *out = xmalloc(3 * strlen(s) + 1), *o = out;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if ((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') ||
            *p == '-' || *p == '.' || *p == '_' || *p == '~') {
            *o++ = (char)*p;
        } else {
            *o++ = '%';
            *o++ = hex[*p >> 4];
            *o++ = hex[*p & 15];
        }
    }
    *o = '\0';
    return out;
}

/* ------------------------------------------------------------------- a call -- */

/* One call's state: the socket, its deadline, what was read. */
struct conn {
    int fd;
    int64_t deadline_ms; /* CLOCK_MONOTONIC */
    int64_t timeout_ms;
    char *buf; /* read so far and not consumed */
    size_t len, cap, off;
    bool eof;
    struct httpc_res *res;
};

static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int failf(struct conn *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int failf(struct conn *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->res->error, sizeof c->res->error, fmt, ap);
    va_end(ap);
    return -1;
}

/* Waits until fd is ready for events or the deadline passes. 0, or -1 (timed out). */
static int wait_for(struct conn *c, short events)
{
    for (;;) {
        int64_t left = c->deadline_ms - mono_ms();
        if (left <= 0)
            return failf(c, "timed out after %lld ms", (long long)c->timeout_ms);
        struct pollfd p = {.fd = c->fd, .events = events};
        int n = poll(&p, 1, left > 1000000 ? 1000000 : (int)left);
        if (n > 0)
            return 0;
        if (n < 0 && errno != EINTR)
            return failf(c, "poll: %s", strerror(errno));
    }
}

/* Connects to host:port, trying each address of the name. 0, or -1 with the cause. */
static int open_conn(struct conn *c, const struct httpc_url *u)
{
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
    struct addrinfo *ai = NULL;
    char port[16], last[256] = "no address";
    snprintf(port, sizeof port, "%d", u->port);
    int e = getaddrinfo(u->host, port, &hints, &ai);
    if (e != 0)
        return failf(c, "cannot resolve %s (%s)", u->host,
                     e == EAI_SYSTEM ? strerror(errno) : gai_strerror(e));
    for (struct addrinfo *a = ai; a; a = a->ai_next) {
        int fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
        if (fd < 0) {
            snprintf(last, sizeof last, "socket: %s", strerror(errno));
            continue;
        }
        fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
        c->fd = fd;
        int rc = connect(fd, a->ai_addr, a->ai_addrlen);
        if (rc < 0 && errno == EINPROGRESS) {
            if (wait_for(c, POLLOUT) < 0) {
                freeaddrinfo(ai);
                return -1; /* the deadline: no other address gets a chance */
            }
            int err = 0;
            socklen_t n = sizeof err;
            getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &n);
            rc = err ? -1 : 0;
            errno = err;
        }
        if (rc == 0) {
            int one = 1;
            setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
            freeaddrinfo(ai);
            return 0;
        }
        snprintf(last, sizeof last, "%s", strerror(errno));
        close(fd);
        c->fd = -1;
    }
    freeaddrinfo(ai);
    return failf(c, "cannot connect to %s:%d (%s)", u->host, u->port, last);
}

static int send_all(struct conn *c, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = send(c->fd, p, n, MSG_NOSIGNAL);
        if (w > 0) {
            p += w;
            n -= (size_t)w;
        } else if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
            if (wait_for(c, POLLOUT) < 0)
                return -1;
        } else {
            return failf(c, "the connection closed while sending (%s)",
                         w < 0 ? strerror(errno) : "no progress");
        }
    }
    return 0;
}

/* Reads more into c->buf (at least one byte, or the end). 0, or -1 with the cause. */
static int fill(struct conn *c)
{
    if (c->eof)
        return failf(c, "the connection closed before the whole response");
    if (c->off > 0 && c->off == c->len)
        c->off = c->len = 0;
    if (c->cap - c->len < 16384) {
        c->cap = c->cap ? 2 * c->cap : 32768;
        c->buf = xrealloc(c->buf, c->cap);
    }
    for (;;) {
        ssize_t r = recv(c->fd, c->buf + c->len, c->cap - c->len - 1, 0);
        if (r > 0) {
            c->len += (size_t)r;
            c->buf[c->len] = '\0';
            return 0;
        }
        if (r == 0) {
            c->eof = true;
            return 0;
        }
        if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) {
            if (wait_for(c, POLLIN) < 0)
                return -1;
            continue;
        }
        return failf(c, "the connection failed (%s)", strerror(errno));
    }
}

/* The value of header name in the block [h, end) (lines "Name: value\r\n"), copied into out. */
static bool header(const char *h, const char *end, const char *name, char *out, size_t cap)
{
    size_t n = strlen(name);
    for (const char *line = h; line < end;) {
        const char *eol = memchr(line, '\n', (size_t)(end - line));
        if (!eol)
            eol = end;
        if ((size_t)(eol - line) > n && strncasecmp(line, name, n) == 0 && line[n] == ':') {
            const char *v = line + n + 1;
            while (v < eol && (*v == ' ' || *v == '\t'))
                v++;
            const char *ve = eol;
            while (ve > v && isspace((unsigned char)ve[-1]))
                ve--;
            size_t len = (size_t)(ve - v) < cap - 1 ? (size_t)(ve - v) : cap - 1;
            memcpy(out, v, len);
            out[len] = '\0';
            return true;
        }
        line = eol + 1;
    }
    return false;
}

/* Appends n bytes of the body, refusing past max. */
static int body_add(struct conn *c, const char *p, size_t n, size_t max)
{
    struct httpc_res *res = c->res;
    if (res->len + n > max)
        return failf(c, "the response body is above %zu bytes", max);
    res->body = xrealloc(res->body, res->len + n + 1);
    memcpy(res->body + res->len, p, n);
    res->len += n;
    res->body[res->len] = '\0';
    return 0;
}

/* One line (up to CRLF) of the buffer, for the chunk sizes: its start and length. */
static int read_line(struct conn *c, size_t *start, size_t *n)
{
    for (;;) {
        char *nl = memchr(c->buf + c->off, '\n', c->len - c->off);
        if (nl) {
            *start = c->off;
            *n = (size_t)(nl - (c->buf + c->off));
            c->off += *n + 1;
            return 0;
        }
        if (c->len - c->off > 4096)
            return failf(c, "a malformed response (a chunk line too long)");
        if (fill(c) < 0)
            return -1;
        if (c->eof && c->off == c->len)
            return failf(c, "the connection closed before the whole response");
    }
}

static int read_chunked(struct conn *c, size_t max)
{
    for (;;) {
        size_t s, n;
        if (read_line(c, &s, &n) < 0)
            return -1;
        char *end = NULL;
        errno = 0;
        unsigned long long size = strtoull(c->buf + s, &end, 16);
        if (end == c->buf + s || errno || size > max)
            return failf(c,
                         size > max ? "the response body is above %zu bytes"
                                    : "a malformed response (a bad chunk size)",
                         max);
        if (size == 0) {
            /* trailers up to the empty line */
            do {
                if (read_line(c, &s, &n) < 0)
                    return -1;
            } while (n > 0 && !(n == 1 && c->buf[s] == '\r'));
            return 0;
        }
        size_t want = (size_t)size + 2; /* the data and its CRLF */
        while (c->len - c->off < want) {
            if (fill(c) < 0)
                return -1;
            if (c->eof && c->len - c->off < want)
                return failf(c, "the connection closed before the whole response");
        }
        if (body_add(c, c->buf + c->off, (size_t)size, max) < 0)
            return -1;
        c->off += want;
    }
}

static int read_response(struct conn *c, size_t max)
{
    struct httpc_res *res = c->res;
    for (;;) {
        /* the status line and headers */
        char *hend;
        while (!(hend = c->buf ? memmem(c->buf + c->off, c->len - c->off, "\r\n\r\n", 4) : NULL)) {
            if (c->len - c->off > HEADER_MAX)
                return failf(c, "a malformed response (headers above %d bytes)", HEADER_MAX);
            if (fill(c) < 0)
                return -1;
            if (c->eof)
                return failf(c, c->len == c->off ? "the connection closed before a response"
                                                 : "the connection closed inside the headers");
        }
        const char *h = c->buf + c->off;
        int major, minor, status;
        if (sscanf(h, "HTTP/%d.%d %d", &major, &minor, &status) != 3 || status < 100 ||
            status > 999)
            return failf(c, "a malformed response (no HTTP status line)");
        const char *hdrs = memchr(h, '\n', (size_t)(hend - h));
        hdrs = hdrs ? hdrs + 1 : hend;
        c->off = (size_t)(hend - c->buf) + 4;
        if (status < 200)
            continue; /* 100 Continue and the like: the response follows */
        char v[64];
        res->status = status;
        res->retry_after = -1;
        if (header(hdrs, hend, "Retry-After", v, sizeof v)) {
            char *e = NULL;
            long s = strtol(v, &e, 10);
            if (e != v && !*e && s >= 0 && s < 86400 * 365)
                res->retry_after = (int)s;
        }
        res->body = xstrdup("");
        if (header(hdrs, hend, "Transfer-Encoding", v, sizeof v) && strcasestr(v, "chunked"))
            return read_chunked(c, max);
        if (header(hdrs, hend, "Content-Length", v, sizeof v)) {
            char *e = NULL;
            errno = 0;
            unsigned long long n = strtoull(v, &e, 10);
            if (e == v || *e || errno)
                return failf(c, "a malformed response (Content-Length \"%s\")", v);
            if (n > max)
                return failf(c, "the response body is above %zu bytes", max);
            while (c->len - c->off < n) {
                if (fill(c) < 0)
                    return -1;
                if (c->eof && c->len - c->off < n)
                    return failf(c, "the connection closed before the whole response");
            }
            return body_add(c, c->buf + c->off, (size_t)n, max);
        }
        if (status == 204 || status == 304)
            return 0;
        /* no length: the body runs to the close */
        for (;;) {
            if (body_add(c, c->buf + c->off, c->len - c->off, max) < 0)
                return -1;
            c->off = c->len;
            if (c->eof)
                return 0;
            if (fill(c) < 0)
                return -1;
        }
    }
}

int httpc_call(struct httpc *hc, const struct httpc_url *u, const struct httpc_req *q,
               struct httpc_res *res)
{
    struct conn c = {.fd = -1, .res = res, .timeout_ms = q->timeout_ms};
    char *head = NULL;
    int rc = -1;
    (void)hc;
    httpc_res_deinit(res);
    c.deadline_ms = mono_ms() + q->timeout_ms;
    if (open_conn(&c, u) < 0)
        goto out;
    char auth[4200] = "";
    if (q->bearer)
        snprintf(auth, sizeof auth, "Authorization: Bearer %s\r\n", q->bearer);
    char clen[96] = "";
    if (q->body)
        snprintf(clen, sizeof clen, "Content-Type: application/json\r\nContent-Length: %zu\r\n",
                 q->len);
    head = xasprintf("%s %s%s HTTP/1.1\r\nHost: %s:%d\r\nUser-Agent: governor/%s\r\n"
                     "Accept: application/json\r\nConnection: close\r\n%s%s\r\n",
                     q->method, u->prefix, q->path, u->host, u->port, GOVERNOR_VERSION, auth, clen);
    if (send_all(&c, head, strlen(head)) < 0 || (q->body && send_all(&c, q->body, q->len) < 0))
        goto out;
    rc = read_response(&c, q->max_body);
out:
    if (rc < 0) {
        char why[sizeof res->error];
        snprintf(why, sizeof why, "%s", res->error[0] ? res->error : "no response");
        httpc_res_deinit(res);
        snprintf(res->error, sizeof res->error, "%s", why);
    }
    if (c.fd >= 0)
        close(c.fd);
    free(c.buf);
    free(head);
    return rc;
}
