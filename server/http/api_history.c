/*
 * api_history.c - the stored history: GET /v1/jobs/{job}/decisions,
 * GET /v1/decisions/{id}, GET /v1/jobs/{job}/events. Reads on the loop's connection; the
 * history of a deleted job stays readable.
 */
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http/api.h"
#include "options/options.h"
#include "store/db.h"
#include "time/timeutil.h"
#include "base/log.h"

/* The limit parameter: 1..1000, default 100. -1 after filling r. */
static int get_limit(const struct req *q, struct resp *r, int *limit)
{
    int64_t v = 100;
    bool given;
    if (api_query_count(q, r, "limit", 1, 1000, &v, &given) < 0)
        return -1;
    *limit = (int)v;
    return 0;
}

static int db_failed(struct resp *r, char *err)
{
    log_msg(LOG_ERROR, "api", "read failed", "error=\"%s\"", err);
    free(err);
    return api_error(r, 500, NULL, NULL, "the database could not be read");
}

static int decisions_list(const struct req *q, struct resp *r)
{
    int64_t since = INT64_MIN, until = INT64_MAX, before = INT64_MAX;
    int limit;
    bool given;
    char *err = NULL;
    if (!api_job_id_ok(q->job))
        return api_error(r, 400, NULL, "job", "job id must match [A-Za-z0-9._:-]{1,128}");
    if (api_query_time(q, r, "since", &since, &given) < 0 ||
        api_query_time(q, r, "until", &until, &given) < 0 || get_limit(q, r, &limit) < 0)
        return 0;
    const char *b = api_query(q, "before");
    if (b && (api_parse_uint(b, &before) < 0 || before < 1)) {
        char buf[48];
        return api_error(r, 400, NULL, "before",
                         "before must be a decision id (decimal digits, no sign or leading "
                         "zero), got \"%s\"",
                         api_shown(b, buf, sizeof buf));
    }
    if (since > until)
        return api_error(r, 400, NULL, "since", "since is after until");
    struct db_page page = {.since = since,
                           .until = until,
                           .before = before,
                           .limit = limit,
                           .max_rows = q->api->srv ? q->api->srv->limits.page_rows : INT_MAX};
    if (db_decisions_list(q->api->db, q->job, &page, &r->json, &err) < 0)
        return db_failed(r, err);
    if (page.more) {
        /* The page stopped at its rows' budget (max-page-rows): where the rest begins. */
        char next[512];
        int n = snprintf(next, sizeof next,
                         "/v1/jobs/%s/decisions?until=%" PRId64 "&before=%" PRId64 "&limit=%d",
                         q->job, page.next_at, page.next_id, limit);
        if (since != INT64_MIN && n > 0 && (size_t)n < sizeof next)
            snprintf(next + n, sizeof next - (size_t)n, "&since=%" PRId64, since);
        json_object_set_new(r->json, "next", json_string(next));
    }
    r->status = 200;
    return 0;
}

static void decisions_list_in(const struct req *q, struct resp *r)
{
    decisions_list(q, r);
}

/* A page's answer is built inside the arena: its many small objects cost nothing to free. */
int api_decisions_list(const struct req *q, struct resp *r)
{
    return api_in_arena(q, r, decisions_list_in);
}

static int decision_get(const struct req *q, struct resp *r)
{
    char *err = NULL;
    int64_t id;
    if (api_parse_uint(q->id, &id) < 0 || id < 1)
        return api_error(r, 400, NULL, "id",
                         "decision id must be a positive integer in decimal digits (no sign, "
                         "space or leading zero)");
    if (db_decision_get(q->api->db, id, &r->json, &err) < 0)
        return db_failed(r, err);
    if (!r->json)
        return api_error(r, 404, NULL, "id", "no decision %lld", (long long)id);
    r->status = 200;
    return 0;
}

static void decision_get_in(const struct req *q, struct resp *r)
{
    decision_get(q, r);
}

int api_decision_get(const struct req *q, struct resp *r)
{
    return api_in_arena(q, r, decision_get_in);
}

/* GET /v1/jobs/{job}/events, and GET /v1/events for the server's own events (policy reloads,
 * stored under the job "", which no job name can be). */
int api_events_list(const struct req *q, struct resp *r)
{
    int limit;
    char *err = NULL;
    const char *job = q->job ? q->job : "";
    if (q->job && !api_job_id_ok(q->job))
        return api_error(r, 400, NULL, "job", "job id must match [A-Za-z0-9._:-]{1,128}");
    if (get_limit(q, r, &limit) < 0)
        return 0;
    if (db_events_list(q->api->db, job, limit, &r->json, &err) < 0)
        return db_failed(r, err);
    r->status = 200;
    return 0;
}
