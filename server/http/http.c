/*
 * http.c - evhttp glue (see http.h).
 *
 * Connections: evhttp owns each connection and its bufferevent. We learn the connection
 * right after its accept (attach_cb), file it by descriptor, and forget it in evhttp's close
 * callback; we never hold a reference past that (a bufferevent kept alive after evhttp's free
 * keeps its events on a descriptor number the kernel gives to the next connection).
 *
 * The read deadline: evhttp's own timeout is an idle timeout, reset by every byte, so a
 * client trickling one byte a second would hold a connection forever. So each connection
 * also has a timer: its next request must arrive complete within read-timeout of the
 * connection opening or of the previous reply; the timer is stopped while a request is
 * being answered (a reply waiting for its commit is never cut off). When it fires, a
 * request under way gets a 408 and an idle keep-alive connection is just closed.
 *
 * Limits: evhttp enforces max-header (request line plus headers) and max-body (it refuses a
 * larger body as soon as Content-Length or the chunks say so, without reading it), so memory
 * per connection stays bounded. Its own refusals are HTML pages with statuses that do not
 * tell the cases apart; fixup_cb rewrites each into the error envelope with the precise
 * status (414, 431, 413, 400, 417, 501), from what the connection's received bytes show.
 *
 * Framing: every received byte goes through framing.h's validator before evhttp parses it
 * (in_cb), since evhttp frames requests leniently enough that a proxy in front and evhttp
 * could disagree on where a request ends (two Content-Length headers, a Transfer-Encoding
 * other than chunked, ...: the rest of a body would run as a request of its own). At the
 * first byte it refuses, the input is cut back to the end of the last acceptable request, and
 * whatever the client sends after is dropped; the requests before it are answered, then the
 * connection gets a 400 naming what is wrong and is closed (refuse_cb).
 *
 * Refusals that close the connection (those, 413, 408) drain what the client still sends
 * before the socket is really closed (struct drain), so that a client which sends its whole
 * request before reading gets the reply instead of a reset.
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <fcntl.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/http.h>
#include <event2/listener.h>
#include <sys/queue.h>

#include <event2/keyvalq_struct.h>

#include "http/framing.h"
#include "http/http.h"
#include "http/metrics.h"
#include "base/log.h"
#include "base/xmem.h"

/*
 * One client connection, from its accept to evhttp's close callback. evhttp owns the
 * connection and its bufferevent; we only borrow them while evhttp keeps them (holding a
 * reference past evhttp's free would keep the bufferevent's events registered on a
 * descriptor that the kernel hands to the next connection, and those stale events would
 * read and drop the new connection's bytes).
 */
struct conn {
    struct http *h;
    struct evhttp_connection *evcon; /* evhttp's, borrowed until close_cb */
    struct bufferevent *bev;         /* evhttp's, borrowed until close_cb */
    evutil_socket_t fd;
    struct event *attach;   /* one-shot: learns evcon once evhttp has set it up */
    struct event *deadline; /* the read deadline */
    struct event *fixup;    /* one-shot: rewrites a refusal evhttp queued on its own */
    struct evbuffer_cb_entry *in_cb, *out_cb;
    /* The current request as received so far (reset when its reply is queued): bytes of
     * the request line and of the whole head, end-of-line bytes not counted (as evhttp
     * counts them against max-header), bytes of the body, and all bytes. */
    size_t line1, head, body, bytes, line_len;
    bool line1_done, head_done;
    bool replying; /* our reply is being queued: what the output gets is ours */
    bool linger;   /* a refusal closes the connection: drain the client's bytes first */
    /* Framing: the stream's validator, the bytes the input got (so that an offset of the
     * stream can be found in the input, which holds its last bytes), the replies queued. */
    struct framing fr;
    uint64_t received, replied;
    bool refusing;        /* the framing was refused: the input is dropped, refuse_cb closes */
    bool editing;         /* in_cb is cutting the input itself: not new bytes */
    struct event *refuse; /* one-shot: the framing refusal, once the replies before it are out */
};

/*
 * A closed connection still draining what its client sends, so that the client reads the
 * refusal sent before the close instead of a reset (closing a socket with unread input
 * makes the kernel send RST, and the client's unread reply is lost with it).
 */
struct drain {
    struct http *h;
    evutil_socket_t fd; /* a dup of the connection's descriptor, ours to close */
    struct event *ev;
    struct timespec until;
    struct drain *prev, *next;
};

struct http {
    struct event_base *base;
    struct evhttp *ev;
    struct evhttp_bound_socket *sock;
    struct api *api;
    struct writer *wr;
    const struct opt_server *srv;
    char **tokens;
    struct timeval read_tv;
    int port;
    int deferred;
    uint64_t seq, rid_base;
    struct conn **by_fd; /* open connections by descriptor (evhttp closes the fd after
                            close_cb, so a slot never outlives its connection) */
    size_t n_by_fd;
    const struct timeval *read_tv_common; /* read_tv as a libevent common timeout */
    struct drain *drains;
    int n_drains;
    bool closing;               /* http_free: no new lingers */
    struct event *accept_again; /* re-enables accepting after running out of descriptors */
    time_t accept_warned;
};

/* A reply waiting for its commit, or for the work of an asynchronous handler. */
struct pending {
    struct http *h;
    struct evhttp_request *ev;
    struct resp resp;
    struct event *async_ev; /* asynchronous: activated by async_done from any thread */
    int async_status;
    char *async_text; /* the body, written out on the worker's thread */
    bool etag;        /* the handler asked for an ETag: hashed on the worker's thread */
    char etag_value[24];
    struct timespec t0;
    char method[8];
    char *path;
    const char *route; /* the matched route's pattern (static), NULL: none */
    char rid[24];
};

/* ------------------------------------------------------------ connections -- */

/* ------------------------------------------------------------------ lingers -- */

static void drain_free(struct drain *l)
{
    struct http *h = l->h;
    if (l->prev)
        l->prev->next = l->next;
    else
        h->drains = l->next;
    if (l->next)
        l->next->prev = l->prev;
    h->n_drains--;
    event_free(l->ev);
    evutil_closesocket(l->fd);
    free(l);
}

static void drain_cb(evutil_socket_t fd, short what, void *arg)
{
    struct drain *l = arg;
    char buf[16384];
    if (what & EV_TIMEOUT)
        goto done;
    for (;;) {
        ssize_t n = recv(fd, buf, sizeof buf, 0);
        if (n > 0)
            continue;
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            break;
        goto done; /* the client closed its side (or the socket failed) */
    }
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    int64_t ms =
        (int64_t)(l->until.tv_sec - now.tv_sec) * 1000 + (l->until.tv_nsec - now.tv_nsec) / 1000000;
    if (ms <= 0)
        goto done;
    struct timeval tv = {(time_t)(ms / 1000), (suseconds_t)(ms % 1000) * 1000};
    event_add(l->ev, &tv);
    return;
done:
    drain_free(l);
}

/*
 * Keeps the connection's socket open on a duplicate of fd after evhttp closes fd (evhttp has
 * shut down the sending side by then, after the reply), reading and dropping what the client
 * still sends until it closes, for at most read-timeout (as nginx's lingering close: time
 * bounds it, not bytes, so that a client sending a large body before it reads gets its
 * reply; the bytes are dropped as they come, and cost no memory).
 */
static void drain_start(struct http *h, evutil_socket_t fd)
{
    if (h->closing || fd < 0)
        return;
    int d = fcntl(fd, F_DUPFD_CLOEXEC, 0);
    if (d < 0)
        return; /* out of descriptors: the close resets the connection */
    struct drain *l = xcalloc(1, sizeof *l);
    l->h = h;
    l->fd = d;
    clock_gettime(CLOCK_MONOTONIC, &l->until);
    l->until.tv_sec += (time_t)(h->srv->read_timeout_ms / 1000);
    l->until.tv_nsec += (long)(h->srv->read_timeout_ms % 1000) * 1000000;
    if (l->until.tv_nsec >= 1000000000) {
        l->until.tv_sec++;
        l->until.tv_nsec -= 1000000000;
    }
    l->ev = event_new(h->base, d, EV_READ, drain_cb, l);
    l->next = h->drains;
    if (h->drains)
        h->drains->prev = l;
    h->drains = l;
    h->n_drains++;
    event_add(l->ev, h->read_tv_common);
}

/* --------------------------------------------------------------- refusals -- */

static const char *reason_phrase(int status)
{
    switch (status) {
    case 400:
        return "Bad Request";
    case 408:
        return "Request Timeout";
    case 413:
        return "Payload Too Large";
    case 414:
        return "URI Too Long";
    case 417:
        return "Expectation Failed";
    case 431:
        return "Request Header Fields Too Large";
    case 501:
        return "Not Implemented";
    default:
        return "Error";
    }
}

/*
 * A complete reply with the error envelope and Connection: close, for a refusal made below
 * evhttp's request handling (evhttp's own refusals, the read deadline). Logs it as a request
 * line and counts it. new text.
 */
static char *refusal_text(struct http *h, int status, const char *field, const char *msg,
                          size_t *len)
{
    struct resp r = {0};
    char rid[24], date[64];
    snprintf(rid, sizeof rid, "%016" PRIx64, h->rid_base + ++h->seq);
    api_error(&r, status, NULL, field, "%s", msg);
    char *body = json_dumps(r.json, JSON_COMPACT);
    resp_deinit(&r);
    time_t t = time(NULL);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(date, sizeof date, "%a, %d %b %Y %H:%M:%S GMT", &tm);
    size_t blen = body ? strlen(body) + 1 : 0;
    size_t cap = blen + 512;
    char *out = xmalloc(cap);
    int n = snprintf(out, cap,
                     "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n"
                     "Connection: close\r\nX-Request-Id: %s\r\nDate: %s\r\n\r\n%s\n",
                     status, reason_phrase(status), blen, rid, date, body ? body : "");
    free(body);
    *len = n > 0 && (size_t)n < cap ? (size_t)n : 0;
    char qmsg[256];
    log_msg(LOG_INFO, "http", "request refused", "status=%d reason=%s rid=%s", status,
            log_quote(qmsg, sizeof qmsg, msg), rid);
    metrics_request(h->api->metrics, NULL, "OTHER", status, 0);
    return out;
}

/* ------------------------------------------------------------ connections -- */

/* Counts n received bytes of the current request (see struct conn). */
static void account(struct conn *c, const unsigned char *p, size_t n)
{
    c->bytes += n;
    for (size_t i = 0; i < n; i++) {
        if (c->head_done) {
            c->body += n - i;
            return;
        }
        if (p[i] == '\n') {
            if (c->line_len == 0 && c->line1_done)
                c->head_done = true;
            c->line1_done = true;
            c->line_len = 0;
        } else if (p[i] != '\r') {
            c->line_len++;
            c->head++;
            if (!c->line1_done)
                c->line1++;
        }
    }
}

/* Counts the bytes from offset off to the end of buf. */
static void account_buffer(struct conn *c, struct evbuffer *buf, size_t off)
{
    struct evbuffer_ptr pos;
    struct evbuffer_iovec v[16];
    size_t len = evbuffer_get_length(buf);
    if (off >= len || evbuffer_ptr_set(buf, &pos, off, EVBUFFER_PTR_SET) < 0)
        return;
    size_t left = len - off;
    while (left) {
        int k = evbuffer_peek(buf, (ev_ssize_t)left, &pos, v, 16);
        if (k <= 0)
            return;
        size_t done = 0;
        for (int i = 0; i < k && i < 16 && left; i++) {
            size_t n = v[i].iov_len < left ? v[i].iov_len : left;
            account(c, v[i].iov_base, n);
            left -= n;
            done += n;
        }
        if (evbuffer_ptr_set(buf, &pos, done, EVBUFFER_PTR_ADD) < 0)
            return;
    }
}

/* The connection's next request starts: whatever its input holds already belongs to it. */
static void request_reset(struct conn *c)
{
    c->line1 = c->head = c->body = c->bytes = c->line_len = 0;
    c->line1_done = c->head_done = false;
    account_buffer(c, bufferevent_get_input(c->bev), 0);
}

/* Feeds the validator the bytes from offset off to the end of buf, in place (it may rewrite
 * some, see framing.h). 0, or -1 when it refuses them. */
static int frame_buffer(struct conn *c, struct evbuffer *buf, size_t off)
{
    struct evbuffer_ptr pos;
    struct evbuffer_iovec v[16];
    size_t len = evbuffer_get_length(buf);
    if (off >= len || evbuffer_ptr_set(buf, &pos, off, EVBUFFER_PTR_SET) < 0)
        return 0;
    size_t left = len - off;
    while (left) {
        int k = evbuffer_peek(buf, (ev_ssize_t)left, &pos, v, 16);
        if (k <= 0)
            return 0;
        size_t done = 0;
        for (int i = 0; i < k && i < 16 && left; i++) {
            size_t n = v[i].iov_len < left ? v[i].iov_len : left;
            /* the chains of a socket's input are the buffer's own, writable memory */
            if (framing_feed(&c->fr, v[i].iov_base, n) < 0)
                return -1;
            left -= n;
            done += n;
        }
        if (evbuffer_ptr_set(buf, &pos, done, EVBUFFER_PTR_ADD) < 0)
            return 0;
    }
    return 0;
}

/* Drops the bytes of buf past its first keep (those of a refused request and after). */
static void drop_tail(struct conn *c, struct evbuffer *buf, size_t keep)
{
    size_t len = evbuffer_get_length(buf);
    if (keep >= len)
        return;
    c->editing = true;
    if (keep == 0) {
        evbuffer_drain(buf, len);
    } else {
        struct evbuffer *head = evbuffer_new();
        evbuffer_remove_buffer(buf, head, keep);
        evbuffer_drain(buf, evbuffer_get_length(buf));
        evbuffer_add_buffer(buf, head);
        evbuffer_free(head);
    }
    c->editing = false;
}

/* Bytes arrived on the connection (before evhttp parses them): counted, and checked by the
 * validator; after a refusal, dropped. */
static void in_cb(struct evbuffer *buf, const struct evbuffer_cb_info *info, void *arg)
{
    struct conn *c = arg;
    size_t len = evbuffer_get_length(buf);
    if (c->editing || info->n_added == 0 || info->n_added > len)
        return;
    c->received += info->n_added;
    if (c->refusing) {
        drop_tail(c, buf, len - info->n_added);
        return;
    }
    account_buffer(c, buf, len - info->n_added);
    if (frame_buffer(c, buf, len - info->n_added) < 0) {
        /* buf holds the stream's last len bytes: keep those of the requests before the
         * refused one, for evhttp to answer first */
        uint64_t first = c->received - len;
        drop_tail(c, buf, c->fr.start > first ? (size_t)(c->fr.start - first) : 0);
        c->refusing = true;
        event_active(c->refuse, EV_TIMEOUT, 0);
    }
}

/* Something was queued for sending: if not by us, evhttp is refusing a request itself. */
static void out_cb(struct evbuffer *buf, const struct evbuffer_cb_info *info, void *arg)
{
    struct conn *c = arg;
    if (info->n_added && !c->replying)
        event_active(c->fixup, EV_TIMEOUT, 0);
    /* a reply is out: the framing refusal may be next (refuse_cb runs after evhttp is done
     * with the reply and reads again) */
    if (c->refusing && info->n_deleted && evbuffer_get_length(buf) == 0)
        event_active(c->refuse, EV_TIMEOUT, 0);
}

/*
 * evhttp refused a request on its own (a request line or header block above max-header, a
 * body above max-body, a malformed request, an unsupported Expect or method): it queued an
 * HTML page with a status that does not tell these apart and will close the connection with
 * the client's bytes unread. Runs in the same loop pass, before the page is written:
 * replaces it with the error envelope and the precise status, and makes the close linger.
 */
static void fixup_cb(evutil_socket_t unused, short what, void *arg)
{
    struct conn *c = arg;
    struct http *h = c->h;
    struct evbuffer *out = bufferevent_get_output(c->bev);
    char line[32] = "";
    int code = 0;
    (void)unused;
    (void)what;
    size_t n = evbuffer_get_length(out);
    evbuffer_copyout(out, line, n < sizeof line - 1 ? n : sizeof line - 1);
    if (sscanf(line, "HTTP/1.%*d %d", &code) != 1 || code < 400)
        return; /* 100 Continue */
    char msg[160];
    long long mh = (long long)h->srv->max_header_bytes, mb = (long long)h->srv->max_body_bytes;
    int status = code;
    if (code == 400 && c->line1 > (size_t)mh) {
        status = 414;
        snprintf(msg, sizeof msg, "the request line is longer than max-header (%lld bytes)", mh);
    } else if (code == 400 && c->head > (size_t)mh) {
        status = 431;
        snprintf(msg, sizeof msg, "the request header is larger than max-header (%lld bytes)", mh);
    } else if (code == 400) {
        snprintf(msg, sizeof msg, "malformed HTTP request");
    } else if (code == 413) {
        snprintf(msg, sizeof msg, "the request body is larger than max-body (%lld bytes)", mb);
    } else if (code == 417) {
        snprintf(msg, sizeof msg, "Expect: only 100-continue is supported");
    } else if (code == 501) {
        snprintf(msg, sizeof msg, "method not implemented");
    } else {
        snprintf(msg, sizeof msg, "request refused");
    }
    size_t len;
    char *text = refusal_text(h, status, NULL, msg, &len);
    c->replying = true;
    evbuffer_drain(out, n);
    evbuffer_add(out, text, len);
    c->replying = false;
    free(text);
    c->linger = true;
}

static void conn_free(struct conn *c)
{
    if (c->refuse)
        event_free(c->refuse);
    if (c->attach)
        event_free(c->attach);
    if (c->deadline)
        event_free(c->deadline);
    if (c->fixup)
        event_free(c->fixup);
    free(c);
}

/*
 * evhttp is about to free the connection (and then shut it down and close its descriptor):
 * forget it, and keep its socket draining if it closes on a refusal. Called once per
 * attached connection, from evhttp_connection_free.
 */
static void close_cb(struct evhttp_connection *evcon, void *arg)
{
    struct conn *c = arg;
    struct http *h = c->h;
    (void)evcon;
    if (c->fd >= 0 && (size_t)c->fd < h->n_by_fd && h->by_fd[c->fd] == c)
        h->by_fd[c->fd] = NULL;
    /* the evbuffers live on until the bufferevent is finalized: our callbacks must not */
    evbuffer_remove_cb_entry(bufferevent_get_input(c->bev), c->in_cb);
    evbuffer_remove_cb_entry(bufferevent_get_output(c->bev), c->out_cb);
    if (c->linger)
        drain_start(h, c->fd);
    conn_free(c);
}

/*
 * The connection's next request did not arrive complete in time. A request under way gets
 * a 408 (written straight to the socket: evhttp is reading, its output is empty); an idle
 * keep-alive connection is just closed. Then the connection is failed as a timeout and
 * evhttp closes it (close_cb frees c during the call).
 */
static void deadline_cb(evutil_socket_t fd, short what, void *arg)
{
    struct conn *c = arg;
    struct http *h = c->h;
    (void)fd;
    (void)what;
    if (c->bytes > 0 && evbuffer_get_length(bufferevent_get_output(c->bev)) == 0) {
        char msg[96];
        size_t len;
        snprintf(msg, sizeof msg, "the request did not arrive within read-timeout (%lld ms)",
                 (long long)h->srv->read_timeout_ms);
        char *text = refusal_text(h, 408, NULL, msg, &len);
        ssize_t k = send(c->fd, text, len, MSG_NOSIGNAL | MSG_DONTWAIT);
        (void)k; /* best effort: the client may be gone, or not reading */
        free(text);
        c->linger = true;
    } else {
        log_msg(LOG_DEBUG, "http", "idle connection closed", "read_timeout_ms=%lld",
                (long long)h->srv->read_timeout_ms);
    }
    bufferevent_trigger_event(c->bev, BEV_EVENT_READING | BEV_EVENT_TIMEOUT, 0);
}

/*
 * The framing of a request on the connection was refused (in_cb): once every request before
 * it is answered and its reply written, sends the 400 straight to the socket (evhttp is
 * reading, its output is empty), then fails the connection as a timeout so that evhttp
 * closes it (close_cb frees c during the call; the close lingers). Until then it waits: out_cb
 * calls again when the output is written.
 */
static void refuse_cb(evutil_socket_t unused, short what, void *arg)
{
    struct conn *c = arg;
    struct http *h = c->h;
    (void)unused;
    (void)what;
    if (!c->refusing || c->replied < c->fr.requests ||
        evbuffer_get_length(bufferevent_get_output(c->bev)) > 0)
        return;
    size_t len;
    char *text = refusal_text(h, 400, c->fr.field, c->fr.error, &len);
    ssize_t k = send(c->fd, text, len, MSG_NOSIGNAL | MSG_DONTWAIT);
    (void)k; /* best effort: the client may be gone, or not reading */
    free(text);
    c->linger = true;
    c->refusing = false;
    bufferevent_trigger_event(c->bev, BEV_EVENT_READING | BEV_EVENT_TIMEOUT, 0);
}

/*
 * Runs right after the accept callback that made the connection, in the same loop pass and
 * so before any of its I/O: evhttp has set its callbacks on the bufferevent (their argument
 * is the evhttp_connection) and its descriptor. Registers the close callback, files the
 * connection by descriptor, watches its bytes, starts the read deadline, and drops the
 * reference bev_cb took.
 */
static void attach_cb(evutil_socket_t unused, short what, void *arg)
{
    struct conn *c = arg;
    struct http *h = c->h;
    struct bufferevent *bev = c->bev;
    bufferevent_event_cb ecb = NULL;
    void *cbarg = NULL;
    (void)unused;
    (void)what;
    bufferevent_getcb(bev, NULL, NULL, &ecb, &cbarg);
    c->fd = bufferevent_getfd(bev);
    if (!ecb || !cbarg || c->fd < 0) {
        /* evhttp gave the connection up already (it could not set it up) */
        conn_free(c);
        bufferevent_decref(bev);
        return;
    }
    c->evcon = cbarg;
    if ((size_t)c->fd >= h->n_by_fd) {
        size_t n = h->n_by_fd ? h->n_by_fd : 64;
        while (n <= (size_t)c->fd)
            n *= 2;
        h->by_fd = xrealloc(h->by_fd, n * sizeof *h->by_fd);
        memset(h->by_fd + h->n_by_fd, 0, (n - h->n_by_fd) * sizeof *h->by_fd);
        h->n_by_fd = n;
    }
    h->by_fd[c->fd] = c;
    event_free(c->attach);
    c->attach = NULL;
    c->fixup = event_new(h->base, -1, 0, fixup_cb, c);
    c->refuse = event_new(h->base, -1, 0, refuse_cb, c);
    framing_init(&c->fr);
    c->in_cb = evbuffer_add_cb(bufferevent_get_input(bev), in_cb, c);
    c->out_cb = evbuffer_add_cb(bufferevent_get_output(bev), out_cb, c);
    request_reset(c);
    evhttp_connection_set_closecb(c->evcon, close_cb, c);
    evtimer_add(c->deadline, h->read_tv_common);
    bufferevent_decref(bev);
}

/*
 * evhttp asks for each new connection's bufferevent. The connection object does not exist
 * yet: attach_cb, activated here, learns it once evhttp has set it up. The reference taken
 * here only spans that (no I/O happens in between), so that attach_cb can tell whether
 * evhttp has already dropped the connection.
 */
static struct bufferevent *bev_cb(struct event_base *base, void *arg)
{
    struct http *h = arg;
    struct bufferevent *bev = bufferevent_socket_new(base, -1, 0);
    if (!bev)
        return NULL;
    struct conn *c = xcalloc(1, sizeof *c);
    c->h = h;
    c->bev = bev;
    c->fd = -1;
    c->deadline = evtimer_new(base, deadline_cb, c);
    c->attach = event_new(base, -1, 0, attach_cb, c);
    bufferevent_incref(bev);
    event_active(c->attach, EV_TIMEOUT, 0);
    return bev;
}

/* The connection of a request, or NULL (the client has gone). O(1). */
static struct conn *conn_of(struct http *h, struct evhttp_request *ev)
{
    struct evhttp_connection *evcon = evhttp_request_get_connection(ev);
    if (!evcon)
        return NULL;
    evutil_socket_t fd = bufferevent_getfd(evhttp_connection_get_bufferevent(evcon));
    if (fd < 0 || (size_t)fd >= h->n_by_fd)
        return NULL;
    struct conn *c = h->by_fd[fd];
    return c && c->evcon == evcon ? c : NULL;
}

/* The whole request has arrived: no deadline while it is being answered. */
static void request_arrived(struct http *h, struct evhttp_request *ev)
{
    struct conn *c = conn_of(h, ev);
    if (c)
        evtimer_del(c->deadline);
}

/* ------------------------------------------------------------------ replies -- */

static double ms_since(const struct timespec *t0)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)(t.tv_sec - t0->tv_sec) * 1e3 + (double)(t.tv_nsec - t0->tv_nsec) / 1e6;
}

/* The ETag of a body: its FNV-1a 64-bit hash, quoted. */
static void etag_of(const char *text, char out[24])
{
    uint64_t h = 0xcbf29ce484222325ULL;
    for (const unsigned char *p = (const unsigned char *)text; *p; p++)
        h = (h ^ *p) * 0x100000001b3ULL;
    snprintf(out, 24, "\"%016" PRIx64 "\"", h);
}

/* Whether an If-None-Match header names tag (or is "*"); a weak W/ tag compares the same. */
static bool etag_matches(const char *inm, const char *tag)
{
    if (!inm)
        return false;
    while (*inm == ' ')
        inm++;
    return strcmp(inm, "*") == 0 || strstr(inm, tag) != NULL;
}

/* The cleanup of a text handed to an evbuffer by reference. */
static void free_text(const void *data, size_t len, void *text)
{
    (void)data;
    (void)len;
    free(text);
}

/* Sends r; logs first, as the request (and the path it owns) may be gone after the send. */
static void reply(struct http *h, struct evhttp_request *ev, struct resp *r, const char *method,
                  const char *path, const char *route, const char *rid, const struct timespec *t0)
{
    struct evbuffer *b = evbuffer_new();
    struct evkeyvalq *oh = evhttp_request_get_output_headers(ev);
    if (r->etag && r->status == 200 && (r->text || r->json)) {
        if (!r->etag_value[0]) {
            if (r->json && !r->text) {
                r->text = json_dumps(r->json, JSON_COMPACT | JSON_REAL_PRECISION(15));
                r->content_type = "application/json";
                json_decref(r->json);
                r->json = NULL;
            }
            etag_of(r->text ? r->text : "", r->etag_value);
        }
        evhttp_add_header(oh, "ETag", r->etag_value);
        evhttp_add_header(oh, "Cache-Control", "no-cache");
        if (etag_matches(evhttp_find_header(evhttp_request_get_input_headers(ev), "If-None-Match"),
                         r->etag_value)) {
            r->status = 304;
            free(r->text);
            r->text = NULL;
        }
    }
    if (r->json) {
        /* 15 digits: evaluated figures are rounded to 3 decimals, and 17 would print 0.7 as
         * 0.69999999999999996. */
        char *s = json_dumps(r->json, JSON_COMPACT | JSON_REAL_PRECISION(15));
        if (s) {
            evbuffer_add(b, s, strlen(s));
            free(s);
        }
        evbuffer_add(b, "\n", 1);
        evhttp_add_header(oh, "Content-Type", "application/json");
    } else if (r->text) {
        /* Handed over, not copied: the connection frees it once it is written. */
        size_t n = strlen(r->text);
        if (evbuffer_add_reference(b, r->text, n, free_text, r->text) == 0)
            r->text = NULL;
        else
            evbuffer_add(b, r->text, n);
        evhttp_add_header(oh, "Content-Type", r->content_type ? r->content_type : "text/plain");
    }
    evhttp_add_header(oh, "X-Request-Id", rid);
    if (r->security_policy) {
        evhttp_add_header(oh, "Content-Security-Policy", r->security_policy);
        evhttp_add_header(oh, "X-Content-Type-Options", "nosniff");
    }
    if (r->status == 401)
        evhttp_add_header(oh, "WWW-Authenticate", "Bearer");
    if (r->status == 413)
        evhttp_add_header(oh, "Connection", "close");
    if (r->retry_after > 0) {
        char ra[16];
        snprintf(ra, sizeof ra, "%d", r->retry_after);
        evhttp_add_header(oh, "Retry-After", ra);
    }
    int status = r->status ? r->status : 500;
    double ms = ms_since(t0);
    char qpath[1024];
    log_msg(LOG_INFO, "http", "request", "method=%s path=%s status=%d duration_ms=%.3f rid=%s",
            method, log_quote(qpath, sizeof qpath, path), status, ms, rid);
    metrics_request(h->api->metrics, route, method, status, ms / 1000.0);
    /* The next request on this connection starts now and must arrive within read-timeout. */
    struct conn *c = conn_of(h, ev);
    if (c) {
        c->replied++;
        request_reset(c);
        evtimer_add(c->deadline, h->read_tv_common);
        c->linger = c->linger || r->status == 413;
        c->replying = true;
    }
    if (strcmp(method, "HEAD") == 0) {
        /* the headers GET would send, its Content-Length included, and no body */
        char n[32];
        snprintf(n, sizeof n, "%zu", evbuffer_get_length(b));
        evhttp_add_header(oh, "Content-Length", n);
        evbuffer_drain(b, evbuffer_get_length(b));
    }
    evhttp_send_reply(ev, status, NULL, b);
    if (c)
        c->replying = false;
    evbuffer_free(b);
}

static void committed_cb(struct db_write *w, void *ud)
{
    struct pending *p = ud;
    struct http *h = p->h;
    api_committed(h->api, &p->resp, w);
    db_write_free(w);
    reply(h, p->ev, &p->resp, p->method, p->path, p->route, p->rid, &p->t0);
    h->deferred--;
    resp_deinit(&p->resp);
    free(p->path);
    free(p);
}

/* The done callback of an asynchronous handler (any thread): writes the body out here, off
 * the loop (a large result would stall every decision while jansson writes it), and hands
 * the text over to the loop. */
static void async_done(void *tok, int status, json_t *json, char *text)
{
    struct pending *p = tok;
    if (json && !text) {
        char *s = json_dumps(json, JSON_COMPACT | JSON_REAL_PRECISION(15));
        if (s) {
            size_t n = strlen(s);
            text = xmalloc(n + 2);
            memcpy(text, s, n);
            memcpy(text + n, "\n", 2);
            free(s);
        }
    }
    json_decref(json);
    if (p->etag && status == 200 && text)
        etag_of(text, p->etag_value);
    p->async_status = status;
    p->async_text = text;
    event_active(p->async_ev, EV_READ, 0);
}

/* On the loop: the asynchronous work is done, reply. */
static void async_cb(evutil_socket_t fd, short what, void *arg)
{
    struct pending *p = arg;
    struct http *h = p->h;
    (void)fd;
    (void)what;
    p->resp.status = p->async_status ? p->async_status : 500;
    p->resp.text = p->async_text;
    p->resp.content_type = "application/json";
    p->resp.etag = p->etag;
    memcpy(p->resp.etag_value, p->etag_value, sizeof p->etag_value);
    if (!p->resp.text)
        api_error(&p->resp, 500, NULL, NULL, "the request produced no answer");
    reply(h, p->ev, &p->resp, p->method, p->path, p->route, p->rid, &p->t0);
    h->deferred--;
    resp_deinit(&p->resp);
    event_free(p->async_ev);
    free(p->path);
    free(p);
}

static const char *method_name(enum evhttp_cmd_type t)
{
    switch (t) {
    case EVHTTP_REQ_GET:
        return "GET";
    case EVHTTP_REQ_POST:
        return "POST";
    case EVHTTP_REQ_PUT:
        return "PUT";
    case EVHTTP_REQ_DELETE:
        return "DELETE";
    case EVHTTP_REQ_HEAD:
        return "HEAD";
    case EVHTTP_REQ_OPTIONS:
        return "OPTIONS";
    case EVHTTP_REQ_PATCH:
        return "PATCH";
    default:
        return "OTHER";
    }
}

static bool is_json(const char *ct)
{
    if (!ct)
        return false;
    while (*ct == ' ')
        ct++;
    size_t n = strlen("application/json");
    return strncasecmp(ct, "application/json", n) == 0 &&
           (ct[n] == '\0' || ct[n] == ';' || ct[n] == ' ');
}

static void request_cb(struct evhttp_request *ev, void *arg)
{
    struct http *h = arg;
    struct timespec t0;
    struct resp r = {0};
    struct req q = {0};
    struct evkeyvalq qs;
    struct req_kv kv[32];
    struct http_match m;
    char rid[24];
    bool have_qs = false;

    clock_gettime(CLOCK_MONOTONIC, &t0);
    request_arrived(h, ev);
    snprintf(rid, sizeof rid, "%016" PRIx64, h->rid_base + ++h->seq);
    const char *method = method_name(evhttp_request_get_command(ev));
    const struct evhttp_uri *uri = evhttp_request_get_evhttp_uri(ev);
    const char *path = uri ? evhttp_uri_get_path(uri) : NULL;
    const char *query = uri ? evhttp_uri_get_query(uri) : NULL;
    struct evkeyvalq *ih = evhttp_request_get_input_headers(ev);
    struct evbuffer *in = evhttp_request_get_input_buffer(ev);
    size_t blen = evbuffer_get_length(in);
    if (!path || !*path)
        path = "/";

    http_route(method, path, &m);
    const char *route = m.pattern;
    if (m.status == 404 || m.status == 405) {
        if (m.status == 405)
            evhttp_add_header(evhttp_request_get_output_headers(ev), "Allow", m.allow);
        api_error(&r, m.status, NULL, NULL,
                  m.status == 405 ? "method %s is not allowed on %s" : "no route %s %s", method,
                  path);
        goto send;
    }
    if (!m.open && !http_auth_ok(h->tokens, evhttp_find_header(ih, "Authorization"))) {
        api_error(&r, 401, NULL, NULL, "a valid bearer token is required");
        goto send;
    }
    /* Path parameters: well-formed escapes, no NUL, and a job name in the grammar, checked
     * by http_route once for every route. */
    if (m.status == 400) {
        if (m.problem)
            api_error(&r, 400, NULL, m.field, "%s %s", m.field, m.problem);
        else
            api_job_id_error(&r, m.job);
        goto send;
    }
    if ((int64_t)blen > h->srv->max_body_bytes) {
        api_error(&r, 413, NULL, NULL, "body of %zu bytes is above max-body (%" PRId64 " bytes)",
                  blen, h->srv->max_body_bytes);
        goto send;
    }
    /* A body must be JSON; a POST without one (reload) needs no Content-Type. */
    if ((strcmp(method, "POST") == 0 || strcmp(method, "PUT") == 0) && blen > 0 &&
        !is_json(evhttp_find_header(ih, "Content-Type"))) {
        api_error(&r, 415, NULL, NULL, "Content-Type must be application/json");
        goto send;
    }
    qs.tqh_first = NULL;
    qs.tqh_last = &qs.tqh_first;
    if (query) {
        /* A value decoded by libevent is a C string: "limit=5%00x" would read as "5". */
        const char *nul = strstr(query, "%00");
        if (nul) {
            const char *k = nul;
            while (k > query && k[-1] != '&')
                k--;
            size_t kl = strcspn(k, "=&"), n = 0;
            char field[41];
            while (n < kl && n < 40 &&
                   (isalnum((unsigned char)k[n]) || k[n] == '_' || k[n] == '-' || k[n] == '.')) {
                field[n] = k[n];
                n++;
            }
            field[n == kl ? n : 0] = '\0';
            if (field[0])
                api_error(&r, 400, NULL, field, "query parameter %s holds a NUL byte (%%00)",
                          field);
            else
                api_error(&r, 400, NULL, NULL, "the query string holds a NUL byte (%%00)");
            goto send;
        }
        if (evhttp_parse_query_str(query, &qs) < 0) {
            api_error(&r, 400, NULL, NULL, "malformed query string");
            goto send;
        }
        have_qs = true;
        /* Every parameter is read, once: a 33rd would be ignored, and of one given twice the
         * handler would read only the first (which one a proxy checked is not known). */
        for (struct evkeyval *e = qs.tqh_first; e; e = e->next.tqe_next) {
            char shown[48];
            if (q.n_query == (int)(sizeof kv / sizeof kv[0])) {
                api_error(&r, 400, NULL, NULL, "the query string has more than %d parameters",
                          (int)(sizeof kv / sizeof kv[0]));
                goto send;
            }
            for (int i = 0; i < q.n_query; i++)
                if (strcmp(kv[i].key, e->key) == 0) {
                    api_shown(e->key, shown, sizeof shown);
                    api_error(&r, 400, NULL, shown, "query parameter %s is given more than once",
                              shown);
                    goto send;
                }
            kv[q.n_query].key = e->key;
            kv[q.n_query].value = e->value;
            q.n_query++;
        }
    }
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    q.api = h->api;
    q.method = method;
    q.path = path;
    q.job = m.job;
    q.id = m.id;
    q.query = kv;
    q.body = blen ? (const char *)evbuffer_pullup(in, (ev_ssize_t)blen) : "";
    q.body_len = blen;
    q.request_id = rid;
    q.now_ms = (int64_t)now.tv_sec * 1000 + now.tv_nsec / 1000000;
    m.h(&q, &r);
    if (r.async_start) {
        struct pending *p = xcalloc(1, sizeof *p);
        p->h = h;
        p->ev = ev;
        p->t0 = t0;
        snprintf(p->method, sizeof p->method, "%s", method);
        p->path = xstrdup(path);
        p->route = route;
        memcpy(p->rid, rid, sizeof rid);
        p->async_ev = event_new(h->base, -1, 0, async_cb, p);
        p->etag = r.etag;
        void *ud = r.async_ud;
        int (*start)(void *, api_async_done, void *) = r.async_start;
        r.async_ud = NULL;
        r.async_start = NULL;
        h->deferred++;
        if (start(ud, async_done, p) < 0) {
            h->deferred--;
            event_free(p->async_ev);
            free(p->path);
            free(p);
            api_error(&r, 503, NULL, NULL, "too many queries or replays are running; retry later");
            goto send;
        }
        goto out;
    }
    if (r.write) {
        struct pending *p = xcalloc(1, sizeof *p);
        p->h = h;
        p->ev = ev;
        p->resp = r;
        p->t0 = t0;
        snprintf(p->method, sizeof p->method, "%s", method);
        p->path = xstrdup(path);
        p->route = route;
        memcpy(p->rid, rid, sizeof rid);
        struct db_write *w = r.write;
        p->resp.write = NULL;
        h->deferred++;
        writer_submit(h->wr, w, committed_cb, p);
        memset(&r, 0, sizeof r);
        goto out;
    }
send:
    reply(h, ev, &r, method, path, route, rid, &t0);
out:
    if (have_qs)
        evhttp_clear_headers(&qs);
    resp_deinit(&r);
    http_match_deinit(&m);
}

/* ---------------------------------------------------------------- lifecycle -- */

static int parse_listen(const char *s, char *host, size_t hlen, int *port)
{
    const char *colon = strrchr(s, ':');
    if (!colon || colon == s)
        return -1;
    const char *hs = s, *he = colon;
    if (*hs == '[' && he[-1] == ']') {
        hs++;
        he--;
    }
    if ((size_t)(he - hs) >= hlen)
        return -1;
    memcpy(host, hs, (size_t)(he - hs));
    host[he - hs] = '\0';
    char *end;
    long p = strtol(colon + 1, &end, 10);
    if (*end || end == colon + 1 || p < 0 || p > 65535)
        return -1;
    *port = (int)p;
    return 0;
}

/* Open client connections (a scan: for the log, not for every request). */
static int http_connections(const struct http *h)
{
    int n = 0;
    for (size_t i = 0; i < h->n_by_fd; i++)
        n += h->by_fd[i] != NULL;
    return n;
}

/* The server whose listener reports accept errors (a listener's error callback gets evhttp's
 * argument, not ours; one server per process). */
static struct http *accepting;

static void accept_again_cb(evutil_socket_t fd, short what, void *arg)
{
    struct http *h = arg;
    (void)fd;
    (void)what;
    if (h->sock)
        evconnlistener_enable(evhttp_bound_socket_get_listener(h->sock));
}

/*
 * accept() failed for a reason that retrying at once does not cure (out of descriptors,
 * most likely): the listening socket would stay readable and the loop would spin. Pause
 * accepting for 100 ms; the waiting connections stay in the backlog.
 */
static void accept_error_cb(struct evconnlistener *lev, void *arg)
{
    struct http *h = accepting;
    int err = EVUTIL_SOCKET_ERROR();
    if (!h || (void *)h->ev != arg) { /* arg: the listener's own argument, evhttp's */
        evconnlistener_disable(lev);
        return;
    }
    time_t now = time(NULL);
    if (now != h->accept_warned) {
        h->accept_warned = now;
        log_msg(LOG_WARN, "http", "cannot accept connections, pausing 100 ms",
                "error=\"%s\" open_connections=%d lingering=%d", strerror(err), http_connections(h),
                h->n_drains);
    }
    evconnlistener_disable(lev);
    struct timeval tv = {0, 100000};
    evtimer_add(h->accept_again, &tv);
}

struct http *http_new(struct event_base *base, struct api *api, struct writer *wr,
                      const struct opt_server *srv, char **errp)
{
    struct http *h = xcalloc(1, sizeof *h);
    char host[256], m[512];
    int port;
    h->base = base;
    h->api = api;
    h->wr = wr;
    h->srv = srv;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    h->rid_base = ((uint64_t)ts.tv_sec << 32) ^ ((uint64_t)ts.tv_nsec << 8);
    h->read_tv.tv_sec = (time_t)(srv->read_timeout_ms / 1000);
    h->read_tv.tv_usec = (suseconds_t)(srv->read_timeout_ms % 1000) * 1000;
    /* every connection's deadline has the same duration: one queue instead of a heap */
    h->read_tv_common = event_base_init_common_timeout(base, &h->read_tv);
    if (!h->read_tv_common)
        h->read_tv_common = &h->read_tv;
    if (srv->token_file && *srv->token_file &&
        http_load_tokens(srv->token_file, &h->tokens, errp) < 0)
        goto fail;
    if (parse_listen(srv->listen, host, sizeof host, &port) < 0) {
        snprintf(m, sizeof m, "listen: \"%s\" is not HOST:PORT", srv->listen);
        *errp = xstrdup(m);
        goto fail;
    }
    h->ev = evhttp_new(base);
    evhttp_set_gencb(h->ev, request_cb, h);
    evhttp_set_bevcb(h->ev, bev_cb, h);
    /* evhttp's own timeout (idle, reset by every byte, on reads and writes) is only a
     * backstop at twice read-timeout: the deadline, which always runs while a request is
     * read or a reply written, must fire first and answer 408. (At the same expiry, a plain
     * timer would run before the deadlines, which share a common-timeout queue.) */
    struct timeval backstop = {h->read_tv.tv_sec * 2 + (h->read_tv.tv_usec * 2) / 1000000,
                               (h->read_tv.tv_usec * 2) % 1000000};
    evhttp_set_timeout_tv(h->ev, &backstop);
    evhttp_set_max_headers_size(h->ev, (ev_ssize_t)srv->max_header_bytes);
    /* evhttp refuses a larger body as soon as it knows (Content-Length, or the chunks so far)
     * and fixup_cb turns its refusal into the envelope's 413 */
    evhttp_set_max_body_size(h->ev, (ev_ssize_t)srv->max_body_bytes);
    evhttp_set_allowed_methods(h->ev, EVHTTP_REQ_GET | EVHTTP_REQ_POST | EVHTTP_REQ_PUT |
                                          EVHTTP_REQ_DELETE | EVHTTP_REQ_HEAD | EVHTTP_REQ_OPTIONS |
                                          EVHTTP_REQ_PATCH);
    h->sock = evhttp_bind_socket_with_handle(h->ev, host, (ev_uint16_t)port);
    if (!h->sock) {
        snprintf(m, sizeof m, "listen %s: %s", srv->listen, strerror(errno));
        *errp = xstrdup(m);
        goto fail;
    }
    /* evhttp listens with a backlog of 128: a burst of connections overflows it, and each
     * connection dropped from it waits a second for its SYN to be sent again. Linux lets a
     * second listen() raise it (to net.core.somaxconn at most). */
    if (listen(evhttp_bound_socket_get_fd(h->sock), 4096) < 0)
        log_msg(LOG_WARN, "http", "cannot raise the listen backlog", "error=\"%s\"",
                strerror(errno));
    h->accept_again = evtimer_new(base, accept_again_cb, h);
    accepting = h;
    evconnlistener_set_error_cb(evhttp_bound_socket_get_listener(h->sock), accept_error_cb);
    struct sockaddr_storage ss;
    ev_socklen_t sl = sizeof ss;
    evutil_socket_t fd = evhttp_bound_socket_get_fd(h->sock);
    if (getsockname(fd, (struct sockaddr *)&ss, &sl) == 0) {
        if (ss.ss_family == AF_INET)
            h->port = ntohs(((struct sockaddr_in *)&ss)->sin_port);
        else if (ss.ss_family == AF_INET6)
            h->port = ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
    }
    log_msg(LOG_INFO, "http", "listening", "addr=%s:%d auth=%s", host, h->port,
            h->tokens ? "bearer" : "none");
    return h;
fail:
    http_free(h);
    return NULL;
}

void http_stop_accepting(struct http *h)
{
    if (h && h->accept_again)
        evtimer_del(h->accept_again);
    if (h && h->sock) {
        evhttp_del_accept_socket(h->ev, h->sock);
        h->sock = NULL;
    }
}

int http_deferred(const struct http *h)
{
    int n = h->deferred;
    /* Stopping with a reply still in a connection's output buffer would close the
     * connection under it: the client would get no answer at all. */
    for (size_t i = 0; i < h->n_by_fd; i++) {
        const struct conn *c = h->by_fd[i];
        if (c && evbuffer_get_length(bufferevent_get_output(c->bev)) > 0)
            n++;
    }
    return n;
}

void http_free(struct http *h)
{
    if (!h)
        return;
    h->closing = true;
    if (accepting == h)
        accepting = NULL;
    if (h->accept_again)
        event_free(h->accept_again);
    if (h->ev)
        evhttp_free(h->ev); /* close_cb frees every attached connection */
    while (h->drains)
        drain_free(h->drains);
    free(h->by_fd);
    http_free_tokens(h->tokens);
    free(h);
}
