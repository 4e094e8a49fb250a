/*
 * api_replay.c - POST /v1/replay: replay against history over HTTP (replay_db.h). Body:
 * {"job": ID, "from": T, "to": T, "config": {...candidate options...}, "policies": "DIR"};
 * T is epoch ms or RFC 3339, every field but job optional. The handler checks the request
 * (a bad option is a 422 that names it, as for decide) and hands the replay to a thread of
 * its own with its own read-only connection; the reply is
 * {"decisions": [...changes...], "summary": {...}}, or 404 when the job has no stored
 * decision. At most REPLAY_MAX replays run at once (503 beyond).
 */
#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "decision/jobs.h"
#include "http/api.h"
#include "time/timeutil.h"
#include "plugin/plugin.h"
#include "decision/replay_db.h"
#include "base/xmem.h"

#define REPLAY_MAX 2

static atomic_int running;

struct replay_job {
    struct replay_db_opts o;
    char *db, *job;
    struct opt_job *cand;
    struct plugin_set *set; /* candidate policies, NULL: native */
    api_async_done done;
    void *tok;
};

static void replay_job_free(void *ud)
{
    struct replay_job *j = ud;
    if (!j)
        return;
    if (j->set)
        plugin_set_unref(j->set);
    opt_job_free(j->cand);
    free(j->db);
    free(j->job);
    free(j);
}

static void collect(void *ud, json_t *change)
{
    json_array_append(ud, change);
}

static json_t *error_body(const char *code, const char *msg)
{
    return json_pack("{s:{s:s, s:s}}", "error", "code", code, "message", msg);
}

static void *replay_thread(void *arg)
{
    struct replay_job *j = arg;
    json_t *changes = json_array(), *summary = NULL, *body;
    char *err = NULL;
    int status = 200;
    if (replay_db_run(&j->o, collect, changes, &summary, &err) < 0) {
        status = 500;
        body = error_body("INTERNAL", err);
    } else if (json_integer_value(json_object_get(summary, "replayed")) == 0) {
        status = 404;
        char msg[300];
        snprintf(msg, sizeof msg, "job %s has no stored decision up to \"to\"", j->job);
        body = error_body("NOT_FOUND", msg);
    } else {
        body = json_pack("{s:O, s:O}", "decisions", changes, "summary", summary);
    }
    json_decref(changes);
    json_decref(summary);
    free(err);
    api_async_done done = j->done;
    void *tok = j->tok;
    replay_job_free(j);
    atomic_fetch_sub(&running, 1);
    done(tok, status, body, NULL);
    return NULL;
}

static int replay_start(void *ud, api_async_done done, void *tok)
{
    struct replay_job *j = ud;
    j->done = done;
    j->tok = tok;
    if (api_thread_start(&running, REPLAY_MAX, replay_thread, j) < 0) {
        replay_job_free(j);
        return -1;
    }
    return 0;
}

/* Reads "from" / "to" as the query parameters of the history take a time (api_time): epoch
 * milliseconds, as a number or digits, or RFC 3339. Absent or null keeps *t. -1 after filling r. */
static int get_time(json_t *body, const char *key, int64_t *t, struct resp *r)
{
    json_t *v = json_object_get(body, key);
    char num[32];
    if (!v || json_is_null(v))
        return 0;
    if (json_is_integer(v)) {
        snprintf(num, sizeof num, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
        return api_time(r, key, num, t);
    }
    return api_time(r, key, json_is_string(v) ? json_string_value(v) : "", t);
}

/* Whether real (resolved) is root (resolved here) or a directory under it. */
static bool under(const char *real, const char *root)
{
    char *r = realpath(root, NULL);
    bool ok = false;
    if (r) {
        size_t n = strlen(r);
        ok = strncmp(real, r, n) == 0 &&
             (real[n] == '\0' || real[n] == '/' || (n > 0 && r[n - 1] == '/'));
        free(r);
    }
    return ok;
}

/*
 * new: the resolved path of dir when POST /v1/replay may load policies from it, else NULL.
 * Allowed are the server's `policies` directory and those listed in `replay-policies`, and
 * any directory under one of them, compared after realpath(3), so that neither ".." nor a
 * symbolic link leads out. A path that does not exist, is not a directory or is not allowed
 * all give NULL alike: the caller's reply must not tell which (it would probe the file
 * system).
 */
static char *allowed_policies(const struct opt_server *srv, const char *dir)
{
    char *real = realpath(dir, NULL);
    struct stat sb;
    if (!real || stat(real, &sb) < 0 || !S_ISDIR(sb.st_mode))
        goto no;
    if (srv->policies && under(real, srv->policies))
        return real;
    for (const char *p = srv->replay_policies; p && *p;) {
        size_t n = strcspn(p, ";");
        char root[PATH_MAX];
        const char *a = p, *b = p + n;
        while (a < b && (*a == ' ' || *a == '\t'))
            a++;
        while (b > a && (b[-1] == ' ' || b[-1] == '\t'))
            b--;
        if (b > a && (size_t)(b - a) < sizeof root) {
            memcpy(root, a, (size_t)(b - a));
            root[b - a] = '\0';
            if (under(real, root))
                return real;
        }
        p += n;
        if (*p)
            p++;
    }
no:
    free(real);
    return NULL;
}

int api_replay(const struct req *q, struct resp *r)
{
    struct api *a = q->api;
    struct replay_job *j = NULL;
    char *err = NULL;
    json_t *body = api_json_body(q, r, NULL);
    if (!body)
        goto out;
    const char *job = json_string_value(json_object_get(body, "job"));
    if (!api_job_id_ok(job)) {
        api_error(r, 400, NULL, "job", "job must be a string matching [A-Za-z0-9._:-]{1,128}");
        goto out;
    }
    j = xcalloc(1, sizeof *j);
    j->o.from = INT64_MIN;
    j->o.to = INT64_MAX;
    if (get_time(body, "from", &j->o.from, r) < 0 || get_time(body, "to", &j->o.to, r) < 0)
        goto out;
    j->cand = opt_job_new();
    json_t *cfg = json_object_get(body, "config");
    if (cfg && !json_is_null(cfg)) {
        const char *key;
        json_t *v;
        if (!json_is_object(cfg)) {
            api_error(r, 400, NULL, "config", "config must be an object of option -> value");
            goto out;
        }
        if (a->srv && json_object_size(cfg) > (size_t)a->srv->limits.config_keys) {
            api_error(r, 413, NULL, "config",
                      "%zu keys is more than the limit of %d (the server option max-config-keys)",
                      json_object_size(cfg), a->srv->limits.config_keys);
            goto out;
        }
        json_object_foreach(cfg, key, v)
        {
            char buf[64], field[300];
            const char *text = jobs_value_text(v, buf, sizeof buf);
            snprintf(field, sizeof field, "config.%s", key);
            if (!text) {
                api_error(r, 400, NULL, field, "%s: a value must be a string or a number", key);
                goto out;
            }
            if (opt_job_set(j->cand, OPT_SERVER, key, text, &err) < 0) {
                api_error(r, 422, NULL, field, "%s", err);
                goto out;
            }
        }
    }
    json_t *pol = json_object_get(body, "policies");
    if (pol && !json_is_null(pol)) {
        if (!json_is_string(pol)) {
            api_error(r, 400, NULL, "policies", "policies must be a directory on the server");
            goto out;
        }
        char *dir = allowed_policies(a->srv, json_string_value(pol));
        if (!dir) {
            api_error(r, 400, NULL, "policies",
                      "policies must be the server's policies directory, or one listed in "
                      "replay-policies, or a directory under one of them");
            goto out;
        }
        struct plugin_limits lim;
        plugin_limits_from(&lim, a->srv);
        int rc = plugin_set_load(dir, &lim, &j->set, &err);
        free(dir);
        if (rc < 0) {
            api_error(r, 422, "INVALID_POLICY", "policies", "%s", err);
            goto out;
        }
        j->o.policies = j->set;
    }
    j->db = xstrdup(a->srv->db);
    j->job = xstrdup(job);
    j->o.db = j->db;
    j->o.job = j->job;
    j->o.candidate = j->cand;
    r->async_start = replay_start;
    r->async_free = replay_job_free;
    r->async_ud = j;
    j = NULL;
out:
    replay_job_free(j);
    free(err);
    json_decref(body);
    return 0;
}
