/*
 * decider.c - a governor server, or this process, deciding `governor flink`'s samples (see
 * decider.h).
 *
 * In process the handler runs as the unit tests run it: a struct api without a writer, so
 * the decision's write unit comes back in the reply and is committed here on the loop's own
 * connection (writer_commit_group), then completed by api_committed exactly as the server
 * completes it (the decision id, or a 503 with Retry-After when the store refused it).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/decider.h"
#include "decision/jobs.h"
#include "http/api.h"
#include "decision/unit.h"
#include "http/http.h"
#include "plugin/plugin.h"
#include "plugin/policies.h"
#include "store/db.h"
#include "store/writer.h"
#include "base/jarena.h"
#include "base/log.h"
#include "base/xmem.h"

struct decider {
    /* remote */
    struct httpc *client;
    struct httpc_url url;
    char **tokens;
    int64_t timeout_ms;
    /* in process */
    struct api api;
    struct db *db;
    struct jobs *jobs;
    struct pol *pol;
    bool local;
    char *where;
};

struct decider *decider_remote(struct httpc *client, const char *url, const char *token_file,
                               int64_t timeout_ms, char **errp)
{
    struct decider *d = xcalloc(1, sizeof *d);
    d->client = client;
    d->timeout_ms = timeout_ms;
    if (httpc_url_parse(url, &d->url, errp) < 0)
        goto fail;
    if (token_file && http_load_tokens(token_file, &d->tokens, errp) < 0)
        goto fail;
    d->where = xstrdup(d->url.text);
    return d;
fail:
    decider_free(d);
    return NULL;
}

/* A revision that became active (at start), or a reload that failed: stored at once, as
 * `serve` stores it at start. */
static void policy_changed(void *ud, const struct pol_outcome *o)
{
    struct decider *d = ud;
    struct db_write *w = unit_policy(o);
    char *err = NULL, q[600];
    if (db_begin(d->db, &err) < 0 || db_write_apply(d->db, w, &err) < 0 ||
        db_commit(d->db, &err) < 0) {
        db_rollback(d->db);
        log_msg(LOG_ERROR, "flink", "cannot store the policy revision", "error=%s",
                log_quote(q, sizeof q, err));
    }
    free(err);
    db_write_free(w);
}

struct decider *decider_local(const struct opt_server *srv, const struct opt_job *defaults,
                              char **errp)
{
    struct decider *d = xcalloc(1, sizeof *d);
    struct plugin_limits lim;
    d->local = true;
    d->where = xstrdup(srv->db);
    if (!(d->db = db_open(srv->db, srv->synchronous, errp)))
        goto fail;
    d->jobs = jobs_new(defaults);
    if (jobs_load(d->jobs, d->db, NULL, errp) < 0)
        goto fail;
    plugin_limits_from(&lim, srv);
    if (!(d->pol = pol_new(srv->policies, &lim, NULL, policy_changed, d, errp)))
        goto fail;
    d->api.db = d->db;
    d->api.jobs = d->jobs;
    d->api.srv = srv;
    d->api.defaults = defaults;
    d->api.pol = d->pol;
    d->api.ready = true;
    api_init(&d->api);
    return d;
fail:
    decider_free(d);
    return NULL;
}

void decider_free(struct decider *d)
{
    if (!d)
        return;
    if (d->local && d->api.srv)
        api_deinit(&d->api);
    pol_free(d->pol);
    jobs_free(d->jobs);
    db_close(d->db);
    httpc_url_deinit(&d->url);
    http_free_tokens(d->tokens);
    free(d->where);
    free(d);
}

const char *decider_where(const struct decider *d)
{
    return d->where;
}

void decider_answer_deinit(struct decider_answer *a)
{
    free(a->body);
    memset(a, 0, sizeof *a);
    a->retry_after = -1;
}

/* The route's handler in process, its unit committed before the answer. */
static int decide_local(struct decider *d, const char *job, const char *body, size_t len,
                        int64_t now_ms, struct decider_answer *a)
{
    struct req q = {.api = &d->api,
                    .method = "POST",
                    .path = "/v1/jobs/{job}/metrics",
                    .job = job,
                    .body = body,
                    .body_len = len,
                    .request_id = "flink",
                    .now_ms = now_ms};
    struct resp r = {0};
    api_decide(&q, &r);
    if (r.write) {
        char *err = NULL;
        struct db_write *w = r.write;
        r.write = NULL;
        writer_commit_group(d->db, &w, 1, &err);
        free(err);
        api_committed(&d->api, &r, w);
        db_write_free(w);
    }
    a->status = r.status;
    a->retry_after = r.retry_after > 0 ? r.retry_after : -1;
    if (r.text) {
        a->body = r.text;
        r.text = NULL;
    } else if (r.json) {
        a->body = json_dumps(r.json, JSON_COMPACT);
        if (!a->body)
            xmem_oom();
    } else {
        a->body = xstrdup("");
    }
    resp_deinit(&r);
    return 0;
}

int decider_decide(struct decider *d, const char *job, const char *body, size_t len, int64_t now_ms,
                   struct decider_answer *a)
{
    decider_answer_deinit(a);
    if (d->local)
        return decide_local(d, job, body, len, now_ms, a);
    char *esc = httpc_escape(job);
    char *path = xasprintf("/v1/jobs/%s/metrics", esc);
    struct httpc_req q = {.method = "POST",
                          .path = path,
                          .body = body,
                          .len = len,
                          .bearer = d->tokens ? d->tokens[0] : NULL,
                          .timeout_ms = d->timeout_ms,
                          .max_body = 64u << 20};
    struct httpc_res res = {0};
    int rc = httpc_call(d->client, &d->url, &q, &res);
    if (rc == 0) {
        a->status = res.status;
        a->body = res.body;
        res.body = NULL;
        a->retry_after = res.retry_after;
    } else {
        snprintf(a->error, sizeof a->error, "%s", res.error);
    }
    httpc_res_deinit(&res);
    free(path);
    free(esc);
    return rc;
}
