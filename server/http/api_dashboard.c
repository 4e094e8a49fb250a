/*
 * api_dashboard.c - GET /: the dashboard page, server/http/dashboard/index.html,
 * and its files GET /page.css, /page.js, /timeline.js, embedded into the binary at build time
 * (server/http/dashboard/dashboard.cmake generates dashboard_<name>.c). They are open without a
 * token: they hold no data; the page reads the JSON API with fetch, sending the bearer token the
 * user typed into it.
 *
 * Every file goes out with a strict Content-Security-Policy (API_PAGE_POLICY): scripts and
 * styles from this origin only, no inline script or style, requests to this origin only, no
 * frames, forms or plugins; so the page can neither run injected code nor send anything
 * anywhere but the server.
 */
#include "http/api.h"
#include "base/xmem.h"

/* Generated: each file's bytes with a terminating NUL, and their count without it. */
extern const unsigned char dashboard_html[], dashboard_page_css[], dashboard_page_js[],
    dashboard_timeline_js[];
extern const unsigned long dashboard_html_len, dashboard_page_css_len, dashboard_page_js_len,
    dashboard_timeline_js_len;

static const struct asset {
    const char *path, *type;
    const unsigned char *bytes;
    const unsigned long *len;
} assets[] = {
    {"/", "text/html; charset=utf-8", dashboard_html, &dashboard_html_len},
    {"/page.css", "text/css; charset=utf-8", dashboard_page_css, &dashboard_page_css_len},
    {"/page.js", "text/javascript; charset=utf-8", dashboard_page_js, &dashboard_page_js_len},
    {"/timeline.js", "text/javascript; charset=utf-8", dashboard_timeline_js,
     &dashboard_timeline_js_len},
};

int api_dashboard(const struct req *q, struct resp *r)
{
    const struct asset *a = &assets[0];
    for (size_t i = 0; i < sizeof assets / sizeof assets[0]; i++)
        if (q->path && strcmp(q->path, assets[i].path) == 0)
            a = &assets[i];
    r->status = 200;
    r->text = xmalloc(*a->len + 1);
    memcpy(r->text, a->bytes, *a->len + 1);
    r->content_type = a->type;
    r->security_policy = API_PAGE_POLICY;
    return 0;
}
