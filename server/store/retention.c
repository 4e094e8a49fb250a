/*
 * retention.c - audit retention through the writer (see retention.h).
 */
#include <inttypes.h>
#include <stdbool.h>
#include <time.h>

#include "base/log.h"
#include "store/retention.h"
#include "base/xmem.h"

struct retention {
    struct writer *wr;
    struct event *timer;
    int64_t retention_ms, sample_ms;
    int batch;
    bool stopping, in_flight;
};

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void submit(struct retention *rt);

static void done_cb(struct db_write *w, void *ud)
{
    struct retention *rt = ud;
    rt->in_flight = false;
    /* A failed batch deleted nothing; the next round tries again. */
    if (w->ok) {
        if (w->deleted)
            log_msg(LOG_DEBUG, "retention", "deleted old audit rows", "rows=%" PRId64 " more=%d",
                    w->deleted, (int)w->more);
    }
    bool more = w->ok && w->more;
    db_write_free(w);
    if (more && !rt->stopping)
        submit(rt);
}

static void submit(struct retention *rt)
{
    if (rt->in_flight || rt->stopping)
        return;
    struct db_write *w = db_write_new(DB_W_RETENTION, "");
    w->now = now_ms();
    w->cutoff = rt->retention_ms > 0 ? w->now - rt->retention_ms : INT64_MIN;
    w->sample_cutoff = rt->sample_ms > 0 ? w->now - rt->sample_ms : INT64_MIN;
    w->batch = rt->batch;
    rt->in_flight = true;
    writer_submit(rt->wr, w, done_cb, rt);
}

static void timer_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    submit(arg);
}

struct retention *retention_new(struct event_base *base, struct writer *wr, int64_t retention_ms,
                                int64_t sample_ms, int64_t interval_ms, int batch)
{
    if (retention_ms <= 0 && sample_ms <= 0)
        return NULL;
    struct retention *rt = xcalloc(1, sizeof *rt);
    rt->wr = wr;
    rt->retention_ms = retention_ms;
    rt->sample_ms = sample_ms;
    rt->batch = batch > 0 ? batch : 500;
    int64_t shortest = retention_ms <= 0                            ? sample_ms
                       : sample_ms <= 0 || retention_ms < sample_ms ? retention_ms
                                                                    : sample_ms;
    if (interval_ms <= 0)
        interval_ms = shortest < 60000 ? shortest : 60000;
    if (interval_ms < 1000)
        interval_ms = 1000;
    struct timeval tv = {(time_t)(interval_ms / 1000), (suseconds_t)(interval_ms % 1000) * 1000};
    rt->timer = event_new(base, -1, EV_PERSIST, timer_cb, rt);
    event_add(rt->timer, &tv);
    return rt;
}

void retention_stop(struct retention *rt)
{
    if (!rt)
        return;
    rt->stopping = true;
    event_del(rt->timer);
}

void retention_free(struct retention *rt)
{
    if (!rt)
        return;
    event_free(rt->timer);
    free(rt);
}
