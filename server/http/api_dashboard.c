/*
 * api_dashboard.c - GET /: the dashboard page, server/http/dashboard/index.html,
 * embedded into the binary at build time (server/http/dashboard/dashboard.cmake generates
 * dashboard_html.c). The page is open without a token: it holds no data; it reads the JSON API
 * with fetch, sending the bearer token the user typed into it.
 */
#include "http/api.h"
#include "base/xmem.h"

/* Generated: the page's bytes with a terminating NUL, and their count without it. */
extern const unsigned char dashboard_html[];
extern const unsigned long dashboard_html_len;

int api_dashboard(const struct req *q, struct resp *r)
{
    (void)q;
    r->status = 200;
    r->text = xmalloc(dashboard_html_len + 1);
    memcpy(r->text, dashboard_html, dashboard_html_len + 1);
    r->content_type = "text/html; charset=utf-8";
    return 0;
}
