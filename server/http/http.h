/*
 * http.h - the evhttp glue of `governor serve` (prefix http_), and nothing else: the route
 * table (method + path pattern with {job} and {id}; HEAD served as GET without the body;
 * 405 with Allow), strict decoding of path parameters and the job name grammar check for
 * every route, evhttp request -> struct req, struct resp -> reply, the limits of struct
 * opt_server (request line and headers: 414/431; body: 413; a per-request read deadline
 * that answers 408 to a client sending one byte a second; idle keep-alive timeout), every
 * refusal evhttp makes on its own rewritten into the error envelope, connections closed on
 * a refusal drained before the close (no reset), the Content-Type check (415), bearer-token
 * auth (401; constant-time compare; tokens never logged), one logfmt line per request (the
 * path quoted), and replies deferred until the writer has committed the request's write unit.
 *
 * Files: http.c (connections, limits, replies, lifecycle), routes.c (the route table and
 * http_route), tokens.c (the token file and http_auth_ok).
 *
 * May call: api (handlers), writer (submit), log, libevent.
 */
#ifndef GOVERNOR_HTTP_H
#define GOVERNOR_HTTP_H

#include <event2/event.h>
#include <stdbool.h>
#include <stddef.h>

#include "http/api.h"
#include "options/options.h"
#include "store/writer.h"

struct http;

/*
 * new: binds srv->listen ("host:port"; port 0 picks a free one, logged as
 * `msg="listening" addr=host:port`), loads srv->token_file when set, and serves on base.
 * api and wr are borrowed for the server's life. NULL + *errp.
 */
struct http *http_new(struct event_base *base, struct api *api, struct writer *wr,
                      const struct opt_server *srv, char **errp);
/* Closes the listening socket: no new connections; open ones are still served. */
void http_stop_accepting(struct http *h);
/* Replies not yet delivered: waiting for a commit or for asynchronous work, or handed to
 * evhttp but with bytes still unsent (the server stops only when this is 0; a client that
 * stops reading is closed by the read/write timeout). */
int http_deferred(const struct http *h);
/* Closes every connection and frees h. NULL is fine. */
void http_free(struct http *h);

/* ------------------------------------------------- exposed for unit tests -- */

/* The longest token a token file may hold (a longer line is an error, never split). */
#define HTTP_TOKEN_MAX 4096
/*
 * Reads a token file: one token per line (whole lines, read with getline); blank lines and
 * lines starting with '#' are skipped; surrounding white space is trimmed. *out (new,
 * NULL-terminated). -1 + *errp naming the file, and the line when one is at fault: a
 * missing file, a token above HTTP_TOKEN_MAX bytes, a NUL byte, no token at all.
 */
int http_load_tokens(const char *path, char ***out, char **errp);
void http_free_tokens(char **tokens);
/*
 * True when the Authorization header value is "Bearer <t>" with t one of tokens. Every
 * token is compared, each in time that depends only on the stored token's length.
 */
bool http_auth_ok(char *const *tokens, const char *authorization);

/* What http_route found for a method and a raw path. */
struct http_match {
    int (*h)(const struct req *, struct resp *); /* the handler, or NULL */
    int status;          /* 200 (h set), 404 (no such path), 405 (path known, method not),
                            400 (a path parameter is malformed: field says which, problem
                            how; problem NULL: job is outside the grammar, api_job_id_error
                            says how) */
    char *job, *id;      /* the percent-decoded {job} and {id} (new), or NULL */
    bool open;           /* no token needed */
    const char *pattern; /* the route's pattern (static), or NULL */
    const char *field;   /* 400: "job" or "id" */
    const char *problem; /* 400: what is wrong with it (static text) */
    char allow[64];      /* 405: the methods the path takes ("GET, HEAD, PUT") */
};

/*
 * Finds the route of method + raw path; HEAD finds the GET route. Parameters are decoded
 * strictly (%HH escapes only, no NUL byte) and {job} must be in the job name grammar
 * (api_job_id_ok): the one check for every route that takes a job. 0 when m->h is set, else
 * -1 (m->status says why). The caller releases m with http_match_deinit in either case.
 */
int http_route(const char *method, const char *path, struct http_match *m);
void http_match_deinit(struct http_match *m);

#endif
