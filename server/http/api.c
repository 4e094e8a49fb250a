/*
 * api.c - what every handler shares (see api.h): the error envelope, job id parsing, query
 * lookup, a job's recovery after a failed write. A reply is completed once its write unit
 * committed in api_commit.c.
 */
#include <ctype.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/core.h"
#include "decision/jobs.h"
#include "http/api.h"
#include "options/options.h"
#include "base/log.h"
#include "time/timeutil.h"
#include "store/writer.h"
#include "base/xmem.h"

void api_init(struct api *a)
{
    decision_buf_init(&a->dec);
    if (!a->policy_revision)
        a->policy_revision = "native";
}

void api_deinit(struct api *a)
{
    decision_buf_deinit(&a->dec);
    jarena_free(&a->arena);
}

const char *api_shown(const char *s, char *buf, size_t n)
{
    size_t i = 0;
    for (; s[i] && i + 4 < n && i < 40; i++)
        buf[i] = s[i] >= 0x20 && s[i] < 0x7F ? s[i] : '?';
    if (s[i])
        buf[i++] = '.', buf[i++] = '.', buf[i++] = '.';
    buf[i] = '\0';
    return buf;
}

void resp_deinit(struct resp *r)
{
    json_decref(r->json);
    free(r->text);
    db_write_free(r->write);
    if (r->async_ud && r->async_free)
        r->async_free(r->async_ud);
    memset(r, 0, sizeof *r);
}

const char *api_code(int status)
{
    switch (status) {
    case 400:
        return "INVALID_ARGUMENT";
    case 401:
        return "UNAUTHENTICATED";
    case 404:
        return "NOT_FOUND";
    case 405:
        return "METHOD_NOT_ALLOWED";
    case 408:
        return "REQUEST_TIMEOUT";
    case 409:
        return "FAILED_PRECONDITION";
    case 413:
        return "PAYLOAD_TOO_LARGE";
    case 414:
        return "URI_TOO_LONG";
    case 415:
        return "UNSUPPORTED_MEDIA_TYPE";
    case 417:
        return "EXPECTATION_FAILED";
    case 422:
        return "INVALID_CONFIG";
    case 431:
        return "HEADERS_TOO_LARGE";
    case 501:
        return "NOT_IMPLEMENTED";
    case 503:
        return "UNAVAILABLE";
    default:
        return "INTERNAL";
    }
}

int api_error(struct resp *r, int status, const char *code, const char *field, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    json_decref(r->json);
    db_write_free(r->write);
    r->write = NULL;
    r->status = status;
    /* A message that echoes client bytes (a path) may not be UTF-8, or may be cut inside a
     * character: JSON strings must be, so such bytes become '?' rather than losing the
     * envelope. */
    json_t *m = json_string(msg);
    if (!m) {
        for (char *p = msg; *p; p++)
            if ((unsigned char)*p >= 0x80)
                *p = '?';
        m = json_string(msg);
    }
    json_t *e = json_pack("{s:s,s:o}", "code", code ? code : api_code(status), "message", m);
    if (field && *field)
        json_object_set_new(e, "field", json_string(field));
    r->json = json_pack("{s:o}", "error", e);
    return 0;
}

static bool job_char_ok(unsigned char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' ||
           c == '_' || c == ':' || c == '-';
}

bool api_job_id_ok(const char *id)
{
    size_t n = 0;
    if (!id)
        return false;
    for (; id[n]; n++)
        if (!job_char_ok((unsigned char)id[n]))
            return false;
    return n >= 1 && n <= API_JOB_MAX;
}

int api_job_id_error(struct resp *r, const char *id)
{
    size_t n = id ? strlen(id) : 0;
    size_t bad = 0;
    while (bad < n && job_char_ok((unsigned char)id[bad]))
        bad++;
    if (n == 0)
        return api_error(r, 400, NULL, "job", "job is empty; a job name is " API_JOB_GRAMMAR);
    if (bad < n) {
        unsigned char c = (unsigned char)id[bad];
        if (c > 32 && c < 127)
            return api_error(r, 400, NULL, "job",
                             "job has '%c' at offset %zu; a job name is " API_JOB_GRAMMAR, c, bad);
        return api_error(r, 400, NULL, "job",
                         "job has byte 0x%02x at offset %zu; a job name is " API_JOB_GRAMMAR, c,
                         bad);
    }
    return api_error(r, 400, NULL, "job",
                     "job is %zu characters long; a job name is " API_JOB_GRAMMAR, n);
}

const char *api_query(const struct req *q, const char *key)
{
    for (int i = 0; i < q->n_query; i++)
        if (strcmp(q->query[i].key, key) == 0)
            return q->query[i].value;
    return NULL;
}

int api_parse_uint(const char *s, int64_t *out)
{
    if (!s || !isdigit((unsigned char)*s) || (s[0] == '0' && s[1]))
        return -1;
    int64_t v = 0;
    for (; *s; s++) {
        if (!isdigit((unsigned char)*s))
            return -1;
        int d = *s - '0';
        if (v > (INT64_MAX - d) / 10)
            return -1;
        v = v * 10 + d;
    }
    *out = v;
    return 0;
}

int api_query_time(const struct req *q, struct resp *r, const char *key, int64_t *t, bool *given)
{
    const char *s = api_query(q, key);
    *given = s != NULL;
    return s ? api_time(r, key, s, t) : 0;
}

int api_time(struct resp *r, const char *key, const char *s, int64_t *t)
{
    char buf[48];
    int64_t v;
    if (time_parse_instant(s, &v) < 0 || v < TIME_MIN_MS || v > TIME_MAX_MS) {
        api_error(r, 400, NULL, key,
                  "%s must be a time from 0000-01-01T00:00:00Z to 9999-12-31T23:59:59.999Z: "
                  "RFC 3339, or epoch milliseconds from %lld to %lld (digits, '-' before 1970, "
                  "no leading zero), got \"%s\"",
                  key, TIME_MIN_MS, TIME_MAX_MS, api_shown(s, buf, sizeof buf));
        return -1;
    }
    *t = v;
    return 0;
}

int api_query_duration(const struct req *q, struct resp *r, const char *key, int64_t max_ms,
                       int64_t *ms, bool *given)
{
    const char *s = api_query(q, key);
    char buf[48], max[32], *err = NULL;
    int64_t v;
    *given = s != NULL;
    if (!s)
        return 0;
    if (opt_parse_duration(s, &v, &err) < 0 || v < 1 || v > max_ms) {
        free(err);
        core_format_duration(max, sizeof max, max_ms);
        api_error(r, 400, NULL, key,
                  "%s must be a duration from 1 ms to %s (\"5 min\", \"30 s\", \"1 h\", or "
                  "milliseconds), got \"%s\"",
                  key, max, api_shown(s, buf, sizeof buf));
        return -1;
    }
    *ms = v;
    return 0;
}

int api_query_count(const struct req *q, struct resp *r, const char *key, int64_t min, int64_t max,
                    int64_t *v, bool *given)
{
    const char *s = api_query(q, key);
    char buf[48];
    int64_t x;
    *given = s != NULL;
    if (!s)
        return 0;
    if (api_parse_uint(s, &x) < 0 || x < min || x > max) {
        api_error(r, 400, NULL, key,
                  "%s must be an integer in [%lld, %lld] (decimal digits, no sign or leading "
                  "zero), got \"%s\"",
                  key, (long long)min, (long long)max, api_shown(s, buf, sizeof buf));
        return -1;
    }
    *v = x;
    return 0;
}

int api_job_recover(struct api *a, const char *job, struct resp *r)
{
    char *err = NULL;
    if (!a->wr || !writer_job_blocked(a->wr, job))
        return 0;
    /* Units of the job still in flight were computed from the same stale state and fail
     * too; the state is reloaded once the last of them is back. */
    if (writer_job_pending(a->wr, job) > 0)
        goto busy;
    if (jobs_load(a->jobs, a->db, job, &err) < 0) {
        log_msg(LOG_ERROR, "api", "cannot reload a job after a failed write", "job=%s error=\"%s\"",
                job, err);
        free(err);
        goto busy;
    }
    writer_job_recovered(a->wr, job);
    log_msg(LOG_INFO, "api", "job reloaded from the store after a failed write", "job=%s", job);
    return 0;
busy:
    if (r) {
        api_error(r, 503, NULL, NULL,
                  "an earlier write of job \"%s\" failed and its state is being restored from "
                  "the store; nothing was stored, retry",
                  job);
        r->retry_after = 1;
    }
    return -1;
}

int api_job_find(struct api *a, const char *job, struct jobs_entry **e, struct resp *r)
{
    char *err = NULL;
    if ((*e = jobs_get(a->jobs, job)))
        return 1;
    if (a->wr && writer_job_pending(a->wr, job) > 0)
        return 0;
    /* On the loop thread: one indexed read (the row and its window), see api.h. */
    if (jobs_load(a->jobs, a->db, job, &err) < 0) {
        log_msg(LOG_ERROR, "api", "cannot load a job from the store", "job=%s error=\"%s\"", job,
                err);
        api_error(r, 503, NULL, NULL, "cannot read job \"%s\" from the store (%s); retry", job,
                  err);
        r->retry_after = 1;
        free(err);
        return -1;
    }
    *e = jobs_get(a->jobs, job);
    /* the job loaded is the most recently used: never the one forgotten */
    jobs_trim(a->jobs, a->wr);
    return *e ? 1 : 0;
}

json_t *api_json_body(const struct req *q, struct resp *r, const char *what_object)
{
    json_error_t jerr;
    json_t *body = json_loadb(q->body ? q->body : "", q->body_len, JSON_REJECT_DUPLICATES, &jerr);
    if (!body) {
        api_error(r, 400, NULL, "", "malformed JSON at line %d column %d: %s", jerr.line,
                  jerr.column, jerr.text);
        return NULL;
    }
    if (!json_is_object(body)) {
        json_decref(body);
        api_error(r, 400, NULL, "", "the body must be a JSON object%s%s", what_object ? " " : "",
                  what_object ? what_object : "");
        return NULL;
    }
    return body;
}

int api_in_arena(const struct req *q, struct resp *r, void (*fn)(const struct req *, struct resp *))
{
    jarena_begin(&q->api->arena);
    fn(q, r);
    if (r->json) {
        size_t n;
        char *t = jarena_dump(r->json);
        json_decref(r->json);
        r->json = NULL;
        n = strlen(t);
        r->text = xrealloc(t, n + 2);
        memcpy(r->text + n, "\n", 2);
        r->content_type = "application/json";
    }
    jarena_end(&q->api->arena);
    return 0;
}

int api_thread_start(atomic_int *running, int max, void *(*fn)(void *), void *arg)
{
    pthread_t th;
    pthread_attr_t at;
    if (atomic_fetch_add(running, 1) >= max) {
        atomic_fetch_sub(running, 1);
        return -1;
    }
    pthread_attr_init(&at);
    pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
    int rc = pthread_create(&th, &at, fn, arg);
    pthread_attr_destroy(&at);
    if (rc != 0) {
        atomic_fetch_sub(running, 1);
        return -1;
    }
    return 0;
}
