/*
 * api_sql.c - POST /v1/sql: {"sql": "SELECT ...", "params": [...]} ->
 * {"columns": [...], "rows": [[...]], "truncated": false}. The handler only checks the
 * envelope; the statement is judged and run by the read-only engine (sql.h) on one of its
 * worker threads, so a slow query never holds the loop. The engine's status is the reply's:
 * 200, 400 (refused, failed, or past the time limit), 500, 503 (queue full, stopping).
 */
#include <stdlib.h>
#include <string.h>

#include "http/api.h"
#include "store/sql.h"
#include "base/xmem.h"

/* What the worker needs; copied out of the request, which is gone by then. */
struct sql_job {
    struct sql_engine *engine;
    char *sql;
    json_t *params;
};

static void sql_job_free(void *ud)
{
    struct sql_job *j = ud;
    if (!j)
        return;
    free(j->sql);
    json_decref(j->params);
    free(j);
}

/* Where the engine's answer goes. */
struct sql_reply {
    api_async_done done;
    void *tok;
};

/* On a worker thread: the engine's answer is already JSON text; pass it on as it is. */
static void sql_done(void *ud, int status, char *body)
{
    struct sql_reply rep = *(struct sql_reply *)ud;
    free(ud);
    rep.done(rep.tok, status, NULL, body);
}

/* Queues the statement (sql_submit copies what it needs) and drops the job. */
static int sql_job_start(void *ud, api_async_done done, void *tok)
{
    struct sql_job *j = ud;
    struct sql_reply *rep = xmalloc(sizeof *rep);
    rep->done = done;
    rep->tok = tok;
    int rc = sql_submit(j->engine, j->sql, j->params, sql_done, rep);
    if (rc < 0)
        free(rep);
    sql_job_free(j);
    return rc;
}

int api_sql(const struct req *q, struct resp *r)
{
    struct api *a = q->api;
    json_t *body = api_json_body(q, r, "{\"sql\": ..., \"params\": [...]}");
    if (!body)
        goto out;
    json_t *sql = json_object_get(body, "sql");
    json_t *params = json_object_get(body, "params");
    if (!json_is_string(sql)) {
        api_error(r, 400, NULL, "sql", "\"sql\" must be a string holding one SELECT statement");
        goto out;
    }
    if (params && !json_is_array(params) && !json_is_null(params)) {
        api_error(r, 400, NULL, "params", "\"params\" must be an array");
        goto out;
    }
    if (!a->sql) {
        api_error(r, 503, NULL, NULL, "the SQL engine is not running");
        goto out;
    }
    struct sql_job *j = xcalloc(1, sizeof *j);
    j->engine = a->sql;
    j->sql = xstrdup(json_string_value(sql));
    j->params = params ? json_incref(params) : NULL;
    r->async_start = sql_job_start;
    r->async_free = sql_job_free;
    r->async_ud = j;
out:
    json_decref(body);
    return 0;
}
