/*
 * load.c - the load generator of the decide benchmark (bench_load). Keep-alive connections,
 * each with one request in flight (a closed loop), POST samples of 4-vertex jobs (source ->
 * map -> HASH aggregation -> sink, busy time as {min, avg, max}) round-robin over --jobs jobs
 * named PREFIX-0 .. PREFIX-(J-1). Request n goes to job n % J with that job's sample
 * k = FIRST + n / J, whose `at` is 10 s of job time after sample k - 1, and whose cumulative
 * counters grow with k, so a job's samples go forward in time and its metric window holds
 * what a real job's would. A phase always ends on a whole round (every job got as many
 * samples), and prints the sample index the next phase starts from, so phases run by several
 * invocations continue each job's time without a gap.
 *
 * One thread, epoll, bodies written with snprintf into a reused buffer: it reports its own
 * CPU time so that the caller can check that the generator is not the bottleneck.
 *
 * usage: bench_load --port P [--conns C] [--jobs J] [--prefix NAME] [--first K]
 *                   [--seconds S] [--rounds R]
 * Stops after S seconds (then finishes the round) or R rounds, whichever comes first
 * (a missing one does not limit). Prints one JSON object on stdout: requests, seconds, rps,
 * latency percentiles in ms, statuses other than 200, the next first sample, CPU seconds.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "bench_job.h"

#define BUF 8192

struct conn {
    int fd;
    int64_t job;   /* the job of the request in flight, -1: idle */
    double t0;     /* when its first byte was written */
    char out[BUF]; /* the request */
    size_t out_len, out_off;
    char in[BUF * 4]; /* the response so far */
    size_t in_len;
};

struct gen {
    const char *prefix;
    int port, n_conns;
    int64_t jobs, first, rounds;
    double seconds;
    int64_t next;      /* the sequence number of the next request */
    int64_t issued;    /* requests written */
    int64_t done;      /* responses read */
    int64_t stop_at;   /* no request at or after this sequence number; -1: not decided yet */
    int64_t status[6]; /* 1xx .. 5xx, [0]: not an HTTP answer */
    int64_t reconnects;
    int printed_error;
    unsigned char *busy;  /* per job: a request of it is in flight */
    struct conn **parked; /* connections waiting for the job of the next request */
    int n_parked;
    uint32_t *lat_us;
    size_t n_lat, cap_lat;
    double start;
};

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void die(const char *what)
{
    fprintf(stderr, "bench_load: %s: %s\n", what, strerror(errno));
    exit(1);
}

static void conn_open(struct gen *g, struct conn *c, int ep)
{
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)g->port)};
    int one = 1;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    c->fd = socket(AF_INET, SOCK_STREAM, 0);
    if (c->fd < 0)
        die("socket");
    if (connect(c->fd, (struct sockaddr *)&sa, sizeof sa) < 0)
        die("connect");
    setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    fcntl(c->fd, F_SETFL, fcntl(c->fd, F_GETFL) | O_NONBLOCK);
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = c};
    if (epoll_ctl(ep, EPOLL_CTL_ADD, c->fd, &ev) < 0)
        die("epoll_ctl");
    c->job = -1;
    c->in_len = 0;
}

static void conn_reopen(struct gen *g, struct conn *c, int ep)
{
    epoll_ctl(ep, EPOLL_CTL_DEL, c->fd, NULL);
    close(c->fd);
    g->reconnects++;
    conn_open(g, c, ep);
}

/* Writes what is left of c's request; 0 when all of it went out. */
static int flush_out(struct conn *c)
{
    while (c->out_off < c->out_len) {
        ssize_t w = write(c->fd, c->out + c->out_off, c->out_len - c->out_off);
        if (w < 0 && errno == EAGAIN)
            return 1;
        if (w < 0)
            die("write");
        c->out_off += (size_t)w;
    }
    return 0;
}

/* Sends the next request on c, if the phase is not over; returns 1 when it sent one. */
static int send_next(struct gen *g, struct conn *c, int ep)
{
    if (g->stop_at < 0 && g->next % g->jobs == 0) {
        int64_t round = g->next / g->jobs;
        if ((g->rounds >= 0 && round >= g->rounds) ||
            (g->seconds >= 0 && now_s() - g->start >= g->seconds))
            g->stop_at = g->next;
    }
    if (g->stop_at >= 0 && g->next >= g->stop_at)
        return 0;
    if (g->busy[g->next % g->jobs]) {
        /* The job's previous sample is not answered yet: wait for it, so that no sample
         * overtakes the one before it. */
        g->parked[g->n_parked++] = c;
        return 1;
    }
    int64_t n = g->next++;
    int64_t j = n % g->jobs, k = g->first + n / g->jobs;
    g->busy[j] = 1;
    char body[BUF / 2];
    int bl = bench_job_body(body, sizeof body, k);
    int hl = snprintf(c->out, sizeof c->out,
                      "POST /v1/jobs/%s-%lld/metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                      "Content-Type: application/json\r\nContent-Length: %d\r\n\r\n",
                      g->prefix, (long long)j, bl);
    memcpy(c->out + hl, body, (size_t)bl);
    c->out_len = (size_t)(hl + bl);
    c->out_off = 0;
    c->job = j;
    c->t0 = now_s();
    g->issued++;
    if (flush_out(c)) {
        struct epoll_event ev = {.events = EPOLLIN | EPOLLOUT, .data.ptr = c};
        epoll_ctl(ep, EPOLL_CTL_MOD, c->fd, &ev);
    }
    return 1;
}

/* A response in c->in is complete: its length, or 0 while more is needed. */
static size_t complete(const struct conn *c, int *status)
{
    const char *end = memmem(c->in, c->in_len, "\r\n\r\n", 4);
    if (!end)
        return 0;
    size_t head = (size_t)(end - c->in) + 4;
    long clen = 0;
    *status = 0;
    if (c->in_len >= 12 && memcmp(c->in, "HTTP/1.", 7) == 0)
        *status = atoi(c->in + 9);
    for (const char *p = c->in; p < end;) {
        const char *eol = memmem(p, (size_t)(end - p) + 2, "\r\n", 2);
        if (!eol)
            break;
        if ((size_t)(eol - p) > 15 && strncasecmp(p, "Content-Length:", 15) == 0)
            clen = atol(p + 15);
        p = eol + 2;
    }
    return c->in_len >= head + (size_t)clen ? head + (size_t)clen : 0;
}

static void record(struct gen *g, double us)
{
    if (g->n_lat == g->cap_lat) {
        g->cap_lat = g->cap_lat ? 2 * g->cap_lat : 1 << 16;
        g->lat_us = realloc(g->lat_us, g->cap_lat * sizeof *g->lat_us);
        if (!g->lat_us)
            die("realloc");
    }
    g->lat_us[g->n_lat++] = us > 4e9 ? 4000000000u : (uint32_t)us;
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

static double pct(const struct gen *g, double p)
{
    if (!g->n_lat)
        return 0;
    size_t i = (size_t)(p / 100.0 * (double)(g->n_lat - 1) + 0.5);
    return g->lat_us[i] / 1000.0;
}

/* Retries the parked connections, in order, until one parks again. */
static void unpark(struct gen *g, int ep, int *active)
{
    int n = g->n_parked;
    struct conn *c;
    for (int i = 0; i < n; i++) {
        c = g->parked[0];
        memmove(g->parked, g->parked + 1, (size_t)--g->n_parked * sizeof *g->parked);
        int before = g->n_parked;
        if (!send_next(g, c, ep))
            (*active)--;
        if (g->n_parked > before)
            break; /* parked again: the rest wait too */
    }
}

/* Reads what c has; on a complete response, records it and sends the next request. */
static void on_readable(struct gen *g, struct conn *c, int ep, int *active)
{
    for (;;) {
        ssize_t r = read(c->fd, c->in + c->in_len, sizeof c->in - c->in_len);
        if (r < 0 && errno == EAGAIN)
            return;
        if (r <= 0) {
            /* The server closed: the request in flight (if any) counts as not answered. */
            if (c->job >= 0) {
                g->status[0]++;
                g->done++;
                g->busy[c->job] = 0;
            }
            conn_reopen(g, c, ep);
            unpark(g, ep, active);
            if (!send_next(g, c, ep))
                (*active)--;
            return;
        }
        c->in_len += (size_t)r;
        int status;
        size_t len = complete(c, &status);
        if (!len) {
            if (c->in_len == sizeof c->in) {
                fprintf(stderr, "bench_load: a response larger than %zu bytes\n", sizeof c->in);
                exit(1);
            }
            continue;
        }
        double t = now_s();
        record(g, (t - c->t0) * 1e6);
        g->status[status >= 100 && status < 600 ? status / 100 : 0]++;
        if (status != 200 && g->printed_error < 3) {
            g->printed_error++;
            fprintf(stderr, "bench_load: job %s-%lld: %.*s\n", g->prefix, (long long)c->job,
                    (int)(c->in_len < 600 ? c->in_len : 600), c->in);
        }
        g->done++;
        memmove(c->in, c->in + len, c->in_len - len);
        c->in_len -= len;
        g->busy[c->job] = 0;
        c->job = -1;
        unpark(g, ep, active);
        if (!send_next(g, c, ep))
            (*active)--;
        return;
    }
}

static const char *arg(int argc, char **argv, int *i)
{
    if (*i + 1 >= argc) {
        fprintf(stderr, "bench_load: %s needs a value\n", argv[*i]);
        exit(2);
    }
    return argv[++*i];
}

int main(int argc, char **argv)
{
    struct gen g = {
        .prefix = "bench", .n_conns = 64, .jobs = 1000, .rounds = -1, .seconds = -1, .stop_at = -1};
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--port") == 0)
            g.port = atoi(arg(argc, argv, &i));
        else if (strcmp(argv[i], "--conns") == 0)
            g.n_conns = atoi(arg(argc, argv, &i));
        else if (strcmp(argv[i], "--jobs") == 0)
            g.jobs = atoll(arg(argc, argv, &i));
        else if (strcmp(argv[i], "--prefix") == 0)
            g.prefix = arg(argc, argv, &i);
        else if (strcmp(argv[i], "--first") == 0)
            g.first = atoll(arg(argc, argv, &i));
        else if (strcmp(argv[i], "--seconds") == 0)
            g.seconds = atof(arg(argc, argv, &i));
        else if (strcmp(argv[i], "--rounds") == 0)
            g.rounds = atoll(arg(argc, argv, &i));
        else {
            fprintf(stderr, "bench_load: unknown option %s\n", argv[i]);
            return 2;
        }
    }
    if (g.port <= 0 || g.n_conns < 1 || g.jobs < 1 || (g.rounds < 0 && g.seconds < 0)) {
        fprintf(stderr, "usage: bench_load --port P [--conns C] [--jobs J] [--prefix NAME] "
                        "[--first K] [--seconds S] [--rounds R] (S or R needed)\n");
        return 2;
    }
    int ep = epoll_create1(0);
    if (ep < 0)
        die("epoll_create1");
    struct conn *cs = calloc((size_t)g.n_conns, sizeof *cs);
    g.busy = calloc((size_t)g.jobs, 1);
    g.parked = calloc((size_t)g.n_conns, sizeof *g.parked);
    if (!cs || !g.busy || !g.parked)
        die("calloc");
    for (int i = 0; i < g.n_conns; i++)
        conn_open(&g, &cs[i], ep);
    struct rusage ru0, ru1;
    getrusage(RUSAGE_SELF, &ru0);
    g.start = now_s();
    int active = 0;
    for (int i = 0; i < g.n_conns; i++)
        active += send_next(&g, &cs[i], ep);
    struct epoll_event evs[256];
    while (active > 0) {
        int n = epoll_wait(ep, evs, 256, 1000);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            die("epoll_wait");
        for (int i = 0; i < n; i++) {
            struct conn *c = evs[i].data.ptr;
            if (evs[i].events & EPOLLOUT) {
                if (!flush_out(c)) {
                    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = c};
                    epoll_ctl(ep, EPOLL_CTL_MOD, c->fd, &ev);
                }
            }
            if (evs[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR))
                on_readable(&g, c, ep, &active);
        }
    }
    double secs = now_s() - g.start;
    getrusage(RUSAGE_SELF, &ru1);
    double cpu = (double)(ru1.ru_utime.tv_sec - ru0.ru_utime.tv_sec) +
                 (double)(ru1.ru_utime.tv_usec - ru0.ru_utime.tv_usec) / 1e6 +
                 (double)(ru1.ru_stime.tv_sec - ru0.ru_stime.tv_sec) +
                 (double)(ru1.ru_stime.tv_usec - ru0.ru_stime.tv_usec) / 1e6;
    qsort(g.lat_us, g.n_lat, sizeof *g.lat_us, cmp_u32);
    printf("{\"requests\": %lld, \"seconds\": %.3f, \"rps\": %.1f, \"p50_ms\": %.3f, "
           "\"p90_ms\": %.3f, \"p99_ms\": %.3f, \"p999_ms\": %.3f, \"max_ms\": %.3f, "
           "\"status_2xx\": %lld, \"status_other\": %lld, \"reconnects\": %lld, "
           "\"next_first\": %lld, \"cpu_s\": %.3f}\n",
           (long long)g.done, secs, (double)g.done / secs, pct(&g, 50), pct(&g, 90), pct(&g, 99),
           pct(&g, 99.9), pct(&g, 100), (long long)g.status[2], (long long)(g.done - g.status[2]),
           (long long)g.reconnects, (long long)(g.first + g.next / g.jobs), cpu);
    for (int i = 0; i < g.n_conns; i++)
        close(cs[i].fd);
    free(cs);
    free(g.lat_us);
    free(g.busy);
    free(g.parked);
    close(ep);
    return 0;
}
