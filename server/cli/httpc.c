/*
 * httpc.c - the blocking HTTP client (see httpc.h).
 *
 * One call: a connection (evhttp_connection_base_new, no retries), one request, the loop of
 * the client's base run until the request's callback or the call's deadline (a timer that
 * cancels the request), then the connection freed. evhttp reports a failure in two steps: the
 * error callback says which kind, then the request callback runs with no response; errno at
 * the error callback is the socket's error (refused, unreachable).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>

#include "cli/httpc.h"
#include "base/xmem.h"

struct httpc {
    struct event_base *base;
};

struct httpc *httpc_new(char **errp)
{
    struct httpc *c = xcalloc(1, sizeof *c);
    if (!(c->base = event_base_new())) {
        free(c);
        *errp = xstrdup("cannot create an event loop");
        return NULL;
    }
    return c;
}

void httpc_free(struct httpc *c)
{
    if (!c)
        return;
    event_base_free(c->base);
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

/* The state of one call, shared by its callbacks. */
struct call {
    struct event_base *base;
    struct evhttp_request *req; /* until its callback ran or it was cancelled */
    struct httpc_res *res;
    int64_t timeout_ms;
    bool done;
    int err; /* the evhttp_request_error seen, -1: none */
    int sock_errno;
};

static const char *error_text(int e)
{
    switch (e) {
    case EVREQ_HTTP_TIMEOUT:
        return "timed out";
    case EVREQ_HTTP_EOF:
        return "the connection closed before a response";
    case EVREQ_HTTP_INVALID_HEADER:
        return "a malformed response";
    case EVREQ_HTTP_BUFFER_ERROR:
        return "the connection failed";
    case EVREQ_HTTP_DATA_TOO_LONG:
        return "the response body is too large";
    default:
        return "no response";
    }
}

static void error_cb(enum evhttp_request_error e, void *arg)
{
    struct call *c = arg;
    c->err = (int)e;
    c->sock_errno = errno;
}

/* The response's Retry-After in seconds, -1 when absent or not delta-seconds. */
static int retry_after(struct evhttp_request *req)
{
    const char *v = evhttp_find_header(evhttp_request_get_input_headers(req), "Retry-After");
    if (!v || !*v || strlen(v) > 9)
        return -1;
    for (const char *p = v; *p; p++)
        if (*p < '0' || *p > '9')
            return -1;
    return atoi(v);
}

static void done_cb(struct evhttp_request *req, void *arg)
{
    struct call *c = arg;
    struct httpc_res *res = c->res;
    c->done = true;
    c->req = NULL;
    int status = req ? evhttp_request_get_response_code(req) : 0;
    if (status > 0) {
        struct evbuffer *in = evhttp_request_get_input_buffer(req);
        size_t n = evbuffer_get_length(in);
        res->status = status;
        res->body = xmalloc(n + 1);
        evbuffer_remove(in, res->body, n);
        res->body[n] = '\0';
        res->len = n;
        res->retry_after = retry_after(req);
    } else if (c->err == EVREQ_HTTP_TIMEOUT) {
        snprintf(res->error, sizeof res->error, "timed out after %lld ms",
                 (long long)c->timeout_ms);
    } else if (c->sock_errno && c->err != EVREQ_HTTP_DATA_TOO_LONG &&
               c->err != EVREQ_HTTP_INVALID_HEADER) {
        snprintf(res->error, sizeof res->error, "%s (%s)", error_text(c->err),
                 strerror(c->sock_errno));
    } else {
        snprintf(res->error, sizeof res->error, "%s", error_text(c->err));
    }
    event_base_loopbreak(c->base);
}

static void deadline_cb(evutil_socket_t fd, short what, void *arg)
{
    struct call *c = arg;
    (void)fd;
    (void)what;
    if (c->req)
        evhttp_cancel_request(c->req); /* its callback does not run */
    c->req = NULL;
    snprintf(c->res->error, sizeof c->res->error, "timed out after %lld ms",
             (long long)c->timeout_ms);
    event_base_loopbreak(c->base);
}

int httpc_call(struct httpc *hc, const struct httpc_url *u, const struct httpc_req *q,
               struct httpc_res *res)
{
    struct call c = {.base = hc->base, .res = res, .timeout_ms = q->timeout_ms, .err = -1};
    struct evhttp_connection *conn = NULL;
    struct event *deadline = NULL;
    char *uri = NULL;
    int rc = -1;

    httpc_res_deinit(res);
    conn = evhttp_connection_base_new(hc->base, NULL, u->host, (unsigned short)u->port);
    if (!conn) {
        snprintf(res->error, sizeof res->error, "cannot open a connection to %s:%d", u->host,
                 u->port);
        goto out;
    }
    struct timeval tv = {(time_t)(q->timeout_ms / 1000),
                         (suseconds_t)(q->timeout_ms % 1000) * 1000};
    evhttp_connection_set_timeout_tv(conn, &tv);
    evhttp_connection_set_retries(conn, 0);
    evhttp_connection_set_max_body_size(conn, (ev_ssize_t)q->max_body);
    c.req = evhttp_request_new(done_cb, &c);
    evhttp_request_set_error_cb(c.req, error_cb);
    struct evkeyvalq *h = evhttp_request_get_output_headers(c.req);
    char host[300];
    snprintf(host, sizeof host, "%s:%d", u->host, u->port);
    evhttp_add_header(h, "Host", host);
    evhttp_add_header(h, "Connection", "close");
    evhttp_add_header(h, "Accept", "application/json");
    evhttp_add_header(h, "User-Agent", "governor/" GOVERNOR_VERSION);
    if (q->bearer) {
        char *auth = xasprintf("Bearer %s", q->bearer);
        evhttp_add_header(h, "Authorization", auth);
        free(auth);
    }
    if (q->body) {
        evhttp_add_header(h, "Content-Type", "application/json");
        evbuffer_add(evhttp_request_get_output_buffer(c.req), q->body, q->len);
    }
    enum evhttp_cmd_type cmd = EVHTTP_REQ_GET;
    if (strcmp(q->method, "PUT") == 0)
        cmd = EVHTTP_REQ_PUT;
    else if (strcmp(q->method, "POST") == 0)
        cmd = EVHTTP_REQ_POST;
    uri = xasprintf("%s%s", u->prefix, q->path);
    struct evhttp_request *req = c.req;
    if (evhttp_make_request(conn, req, cmd, uri) < 0) {
        /* evhttp freed the request */
        c.req = NULL;
        snprintf(res->error, sizeof res->error, "cannot send the request");
        goto out;
    }
    deadline = evtimer_new(hc->base, deadline_cb, &c);
    evtimer_add(deadline, &tv);
    while (!c.done && c.req)
        if (event_base_dispatch(hc->base) < 0)
            break;
    rc = res->status > 0 ? 0 : -1;
    if (rc < 0 && !res->error[0])
        snprintf(res->error, sizeof res->error, "no response");
out:
    if (deadline)
        event_free(deadline);
    if (conn)
        evhttp_connection_free(conn);
    free(uri);
    return rc;
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
