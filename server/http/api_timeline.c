/*
 * api_timeline.c - the history over time: GET /v1/jobs/{job}/timeline (the
 * bucketed series of timeline.h) and GET /v1/jobs/{job}/advice (the tuning advice of
 * advice.h). The handler checks the parameters on the loop; the reading and the computing run
 * on a thread of their own with their own read-only connection (as POST /v1/replay does), so
 * a long history never holds the loop. At most HISTORY_MAX run at once (503 beyond). Both
 * replies carry an ETag (http.c): a refresh with If-None-Match gets 304.
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http/api.h"
#include "decision/advice.h"
#include "store/timeline.h"
#include "time/timeutil.h"
#include "base/xmem.h"

#define HISTORY_MAX    4
#define MAX_VERTICES   64
#define ADVICE_MAX_WIN (31 * 86400000LL)
/* The largest step: the whole range of times (a larger one could only give one bucket). */
#define STEP_MAX (TIME_MAX_MS + 1 - TIME_MIN_MS)

static atomic_int running;

struct hist_job {
    bool advice;
    char *db, *job;
    int64_t from, to, step_ms;
    char **only; /* vertices=, NULL: all */
    int n_only;
    api_async_done done;
    void *tok;
};

static void hist_job_free(void *ud)
{
    struct hist_job *j = ud;
    if (!j)
        return;
    for (int i = 0; i < j->n_only; i++)
        free(j->only[i]);
    free(j->only);
    free(j->db);
    free(j->job);
    free(j);
}

static void *hist_thread(void *arg)
{
    struct hist_job *j = arg;
    json_t *body = NULL;
    char *err = NULL;
    int status = 200;
    if (j->advice) {
        if (advice_run(j->db, j->job, j->from, j->to, &body, &err) < 0)
            status = 500;
    } else {
        struct timeline_history h;
        int64_t n = 0;
        timeline_buckets(j->from, j->to, j->step_ms, &n);
        if (timeline_history_read(j->db, j->job, j->from, j->to, 0, &h, &err) < 0)
            status = 500;
        else if (timeline_values(&h, n, (const char *const *)j->only, j->n_only) >
                 TIMELINE_MAX_VALUES)
            status = 413; /* buckets x vertices: refused before a series is made */
        else
            body = timeline_render(&h, j->from, j->to, j->step_ms, (const char *const *)j->only,
                                   j->n_only);
        timeline_history_free(&h);
    }
    if (status == 413) {
        char msg[256];
        snprintf(msg, sizeof msg,
                 "the timeline would hold more than %d values per series (buckets x vertices "
                 "shown): pick vertices, or a larger step",
                 TIMELINE_MAX_VALUES);
        body = json_pack("{s:{s:s, s:s, s:s}}", "error", "code", "PAYLOAD_TOO_LARGE", "message",
                         msg, "field", "vertices");
    } else if (status != 200) {
        json_decref(body);
        body = json_pack("{s:{s:s, s:s}}", "error", "code", "INTERNAL", "message",
                         err ? err : "the history could not be read");
    }
    free(err);
    api_async_done done = j->done;
    void *tok = j->tok;
    hist_job_free(j);
    atomic_fetch_sub(&running, 1);
    done(tok, status, body, NULL);
    return NULL;
}

static int hist_start(void *ud, api_async_done done, void *tok)
{
    struct hist_job *j = ud;
    j->done = done;
    j->tok = tok;
    if (api_thread_start(&running, HISTORY_MAX, hist_thread, j) < 0) {
        hist_job_free(j);
        return -1;
    }
    return 0;
}

/* vertices=a,b,c into j->only. -1 after filling r. */
static int get_vertices(const struct req *q, struct resp *r, struct hist_job *j)
{
    const char *s = api_query(q, "vertices");
    if (!s)
        return 0;
    j->only = xcalloc(MAX_VERTICES, sizeof *j->only);
    for (const char *p = s;;) {
        size_t n = strcspn(p, ",");
        if (n == 0 || n > 1000) {
            api_error(r, 400, NULL, "vertices",
                      "vertices must be a comma-separated list of vertex ids, none empty");
            return -1;
        }
        if (j->n_only == MAX_VERTICES) {
            api_error(r, 400, NULL, "vertices", "vertices lists more than %d ids", MAX_VERTICES);
            return -1;
        }
        j->only[j->n_only] = xmalloc(n + 1);
        memcpy(j->only[j->n_only], p, n);
        j->only[j->n_only++][n] = '\0';
        p += n;
        if (!*p)
            break;
        p++;
    }
    return 0;
}

/* Hands j to a thread of its own when the reply is started (http.c). */
static void start_async(struct resp *r, struct hist_job *j)
{
    r->async_start = hist_start;
    r->async_free = hist_job_free;
    r->async_ud = j;
    r->etag = true;
}

int api_timeline(const struct req *q, struct resp *r)
{
    struct hist_job *j = xcalloc(1, sizeof *j);
    int64_t from = 0, to = 0, step = 0, n;
    bool has_from, has_to, has_step;
    if (!api_job_id_ok(q->job)) {
        api_job_id_error(r, q->job ? q->job : "");
        goto fail;
    }
    if (api_query_time(q, r, "from", &from, &has_from) < 0 ||
        api_query_time(q, r, "to", &to, &has_to) < 0 ||
        api_query_duration(q, r, "step", STEP_MAX, &step, &has_step) < 0 ||
        get_vertices(q, r, j) < 0)
        goto fail;
    if (!has_to && !has_from) {
        /* The last six hours, ending at the next whole step: a refresh within the same step
         * asks for the same buckets (and gets 304 when nothing was decided since). A step so
         * long that its next whole one lies past the range of times ends them now. (No
         * overflow: now and step are both below 2^49.) */
        if (!has_step)
            step = timeline_auto_step(TIMELINE_DEFAULT_RANGE_MS);
        to = q->now_ms / step * step + (q->now_ms % step != 0 ? step : 0);
        if (to > TIME_MAX_MS)
            to = q->now_ms;
        from = to - TIMELINE_DEFAULT_RANGE_MS;
    } else if (!has_from) {
        from = to - TIMELINE_DEFAULT_RANGE_MS;
    } else if (!has_to) {
        to = q->now_ms;
    }
    if (from >= to) {
        api_error(r, 400, NULL, "from", "from must be before to");
        goto fail;
    }
    if (!has_step)
        step = timeline_auto_step(to - from);
    if (timeline_buckets(from, to, step, &n) < 0 || n > TIMELINE_MAX_BUCKETS) {
        api_error(r, 400, NULL, has_step ? "step" : "from",
                  "from, to and step give %lld buckets; at most %d are allowed (a larger step "
                  "or a shorter range)",
                  (long long)n, TIMELINE_MAX_BUCKETS);
        goto fail;
    }
    j->db = xstrdup(q->api->srv->db);
    j->job = xstrdup(q->job);
    j->from = from;
    j->to = to;
    j->step_ms = step;
    start_async(r, j);
    return 0;
fail:
    hist_job_free(j);
    return 0;
}

int api_advice(const struct req *q, struct resp *r)
{
    struct hist_job *j = xcalloc(1, sizeof *j);
    int64_t win = 86400000LL, to = q->now_ms;
    bool has_win, has_to;
    if (!api_job_id_ok(q->job)) {
        api_job_id_error(r, q->job ? q->job : "");
        goto fail;
    }
    /* to within the range of times and a window of at most 31 d: to - window cannot
     * overflow */
    if (api_query_duration(q, r, "window", ADVICE_MAX_WIN, &win, &has_win) < 0 ||
        api_query_time(q, r, "to", &to, &has_to) < 0)
        goto fail;
    j->advice = true;
    j->db = xstrdup(q->api->srv->db);
    j->job = xstrdup(q->job);
    j->from = to - win;
    j->to = to;
    start_async(r, j);
    return 0;
fail:
    hist_job_free(j);
    return 0;
}
