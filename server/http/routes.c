/*
 * routes.c - the route table of the HTTP API (see http.h, http_route): each method and path
 * pattern with its handler (api.h), and the strict decoding of a raw path into its
 * parameters.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http/api.h"
#include "http/http.h"
#include "base/xmem.h"

typedef int (*http_handler)(const struct req *, struct resp *);

struct route {
    const char *method;
    const char *pattern;
    http_handler h;
    bool open; /* no token needed */
};

static const struct route routes[] = {
    {"POST", "/v1/jobs/{job}/metrics", api_decide, false},
    {"POST", "/v1/jobs/{job}/rebalance", api_rebalance, false},
    {"PUT", "/v1/jobs/{job}/config", api_config_put, false},
    {"GET", "/v1/jobs/{job}/config", api_config_get, false},
    {"GET", "/v1/jobs", api_jobs_list, false},
    {"DELETE", "/v1/jobs/{job}", api_job_delete, false},
    {"GET", "/v1/jobs/{job}/decisions", api_decisions_list, false},
    {"GET", "/v1/jobs/{job}/events", api_events_list, false},
    {"GET", "/v1/events", api_events_list, false}, /* the server's own (reloads) */
    {"GET", "/v1/decisions/{id}", api_decision_get, false},
    {"GET", "/v1/jobs/{job}/timeline", api_timeline, false},
    {"GET", "/v1/jobs/{job}/advice", api_advice, false},
    {"GET", "/v1/jobs/{job}/target", api_target, false},
    {"GET", "/v1/policies", api_policies_get, false},
    {"POST", "/v1/policies/reload", api_policies_reload, false},
    {"POST", "/v1/sql", api_sql, false},
    {"POST", "/v1/replay", api_replay, false},
    {"GET", "/metrics", api_metrics, false},
    {"GET", "/healthz", api_healthz, true},
    {"GET", "/readyz", api_readyz, true},
    {"GET", "/", api_dashboard, true}, /* the page; its API calls need the token */
    {"GET", "/page.css", api_dashboard, true},
    {"GET", "/page.js", api_dashboard, true},
    {"GET", "/timeline.js", api_dashboard, true},
};
#define N_ROUTES (sizeof routes / sizeof routes[0])

/* ------------------------------------------------------------------ routes -- */

/* Splits a raw path into segments (pointers into buf). */
static int split(char *buf, char **seg, int max)
{
    int n = 0;
    char *p = buf;
    if (*p != '/')
        return -1;
    while (*p == '/' && n < max) {
        *p++ = '\0';
        seg[n++] = p;
        p += strcspn(p, "/");
    }
    return *p ? -1 : n;
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/*
 * Percent-decodes the n bytes at s (a path parameter: '+' is itself). NULL with *why when
 * an escape is not %HH, or when the value would hold a NUL byte (a C string would end there
 * and name something else).
 */
static char *decode(const char *s, size_t n, const char **why)
{
    char *d = xmalloc(n + 1);
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        char ch = s[i];
        if (ch == '%') {
            int hi = i + 2 < n ? hexval(s[i + 1]) : -1;
            int lo = i + 2 < n ? hexval(s[i + 2]) : -1;
            if (hi < 0 || lo < 0) {
                *why = "has a malformed percent-escape (not %HH)";
                free(d);
                return NULL;
            }
            ch = (char)(hi * 16 + lo);
            i += 2;
        }
        if (ch == '\0') {
            *why = "holds a NUL byte";
            free(d);
            return NULL;
        }
        d[k++] = ch;
    }
    d[k] = '\0';
    return d;
}

/*
 * Matches path segments against a pattern. With absorb, the one {param} of the pattern may
 * take several segments (a job id with a slash), so that the request gets a 400 naming the
 * parameter rather than a 404.
 */
static bool match(const char *pattern, char **seg, int n, bool absorb, struct http_match *m)
{
    char pbuf[128];
    char *pseg[16];
    snprintf(pbuf, sizeof pbuf, "%s", pattern);
    int np = split(pbuf, pseg, 16);
    int extra = n - np;
    if (extra < 0 || (extra > 0 && !absorb))
        return false;
    int param = -1;
    for (int i = 0; i < np; i++)
        if (pseg[i][0] == '{')
            param = i;
    if (extra > 0 && param < 0)
        return false;
    for (int i = 0, j = 0; i < np; i++, j++) {
        if (i == param) {
            /* the raw segments seg[j .. j+extra] joined with '/' (they are consecutive in
             * the split buffer, separated by the NULs that split wrote over the slashes) */
            const char *raw = seg[j];
            size_t len = (size_t)(seg[j + extra] + strlen(seg[j + extra]) - raw);
            char *joined = xmalloc(len + 1);
            memcpy(joined, raw, len);
            for (size_t k = 0; k < len; k++)
                if (joined[k] == '\0')
                    joined[k] = '/';
            joined[len] = '\0';
            bool is_job = strcmp(pseg[i], "{job}") == 0;
            const char *why = NULL;
            char *v = decode(joined, len, &why);
            free(joined);
            if (!v) {
                m->field = is_job ? "job" : "id";
                m->problem = why;
            }
            if (is_job) {
                free(m->job);
                m->job = v;
            } else {
                free(m->id);
                m->id = v;
            }
            j += extra;
        } else if (strcmp(pseg[i], seg[j]) != 0) {
            return false;
        }
    }
    return true;
}

int http_route(const char *method, const char *path, struct http_match *m)
{
    size_t plen = strlen(path);
    char *buf = xmalloc(plen + 1);
    char *seg[32];
    memset(m, 0, sizeof *m);
    m->status = 404;
    memcpy(buf, path, plen + 1);
    int n = split(buf, seg, 32);
    /* HEAD is GET without the body */
    const char *want = strcmp(method, "HEAD") == 0 ? "GET" : method;
    for (int pass = 0; n >= 0 && pass < 2; pass++) {
        bool path_known = false;
        for (size_t i = 0; i < N_ROUTES; i++) {
            m->field = m->problem = NULL;
            if (!match(routes[i].pattern, seg, n, pass == 1, m))
                continue;
            path_known = true;
            if (strcmp(routes[i].method, want) == 0) {
                m->open = routes[i].open;
                m->pattern = routes[i].pattern;
                if (m->field || (m->job && !api_job_id_ok(m->job))) {
                    m->field = m->field ? m->field : "job"; /* problem NULL: the grammar */
                    m->status = 400;
                    goto out;
                }
                m->h = routes[i].h;
                m->status = 200;
                goto out;
            }
            /* the methods this path takes, for the Allow header of a 405 */
            if (!strstr(m->allow, routes[i].method)) {
                size_t k = strlen(m->allow);
                snprintf(m->allow + k, sizeof m->allow - k, "%s%s%s", k ? ", " : "",
                         routes[i].method, strcmp(routes[i].method, "GET") == 0 ? ", HEAD" : "");
            }
        }
        free(m->job);
        free(m->id);
        m->job = m->id = NULL;
        m->field = m->problem = NULL;
        if (path_known) {
            m->status = 405;
            goto out;
        }
        m->allow[0] = '\0';
    }
out:
    free(buf);
    return m->h ? 0 : -1;
}

void http_match_deinit(struct http_match *m)
{
    free(m->job);
    free(m->id);
    m->job = m->id = NULL;
}
