/*
 * api.h - the HTTP API's handlers (prefix api_), free of evhttp so that they can be called
 * directly by tests: `int h(const struct req *, struct resp *)`. http.c turns an evhttp
 * request into a struct req, calls the handler the route table names, and turns the
 * struct resp into a reply. A handler that changes stored data does not write: it fills
 * resp->write, and the reply is sent once the writer has committed that unit
 * (api_committed then completes resp: the decision id, or a 503 or 500).
 *
 * Every handler returns 0; errors are replies (the error envelope, api_error). A bad
 * request changes no state and stores nothing.
 *
 * A handler whose work must not run on the loop (POST /v1/sql, POST /v1/replay) fills
 * resp->async_start instead: http.c calls it after the handler returns, the work runs on
 * another thread, and its done callback delivers the reply later (see struct resp).
 *
 * Files: api.c (errors, ids, query parameters, commit completion), api_decide.c,
 * api_rebalance.c (POST /v1/jobs/{job}/rebalance),
 * api_jobs.c (jobs, config), api_history.c (decisions, events), api_health.c,
 * api_sql.c (POST /v1/sql), api_replay.c (POST /v1/replay), api_dashboard.c (GET /, the
 * page embedded from server/http/dashboard/index.html), api_timeline.c (the timeline and the
 * tuning advice, read off the loop), api_target.c (GET /v1/jobs/{job}/target: a vertex's
 * replica count for KEDA).
 *
 * May call: the layers below (decision, store: reads on the loop's connection, plugin,
 * options, time, base, core), jansson. api.h itself includes only what struct api and struct
 * resp hold by value (the decide scratch, the decision's gauges); each handler includes the
 * headers of what it uses.
 */
#ifndef GOVERNOR_API_H
#define GOVERNOR_API_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/jarena.h"
#include "decision/decision.h"
#include "decision/jobs.h"

/* What struct api points to: each handler includes the headers of what it uses. */
struct db;
struct db_write;
struct jobs;
struct metrics;
struct opt_job;
struct opt_server;
struct pol;
struct sql_engine;
struct writer;

/* What every handler may use; owned by main (serve), borrowed by handlers. */
struct api {
    struct db *db;                  /* the loop's connection (reads) */
    struct jobs *jobs;              /* job registry */
    const struct opt_server *srv;   /* server options */
    const struct opt_job *defaults; /* built-in < server (config file) layers */
    bool ready;                     /* database open and loaded (readyz) */
    const char *policy_revision;    /* stamped when no policy revision is loaded: "native" */
    struct pol *pol;                /* the active policy revision (NULL: native only) */
    struct sql_engine *sql;         /* POST /v1/sql (NULL: 503) */
    struct metrics *metrics;        /* GET /metrics (NULL: not counted) */
    struct writer *wr; /* the store's health, in-flight units per job, commit figures (may be
                          NULL: units are committed synchronously, as in the unit tests) */
    /* scratch reused by decide (one request at a time on the loop) */
    struct jarena arena;     /* decide's jansson allocations (jarena.h) */
    struct decision_buf dec; /* the sample and the decision (decision.h) */
};

/* Sets up the scratch of a (zeroed) struct api; api_deinit releases it. */
void api_init(struct api *a);
void api_deinit(struct api *a);

struct req_kv {
    const char *key, *value;
};

/* One request, as the handlers see it. Everything is borrowed from the caller. */
struct req {
    struct api *api;
    const char *method; /* "GET", "POST", ... */
    const char *path;
    const char *job; /* the decoded {job} of the route, or NULL */
    const char *id;  /* the decoded {id} of the route, or NULL */
    const struct req_kv *query;
    int n_query;
    const char *body; /* not NUL-terminated */
    size_t body_len;
    const char *request_id;
    int64_t now_ms; /* the server clock when the request arrived */
};

/*
 * Completes an asynchronous reply: status and the body (the error envelope when status is
 * not 200), either as json (new, stolen) or as JSON text (new, stolen, free()d; with its
 * final newline), the other NULL. Called exactly once, on any thread: the body is written
 * out there, so that the loop only sends the text, whatever its size.
 */
typedef void (*api_async_done)(void *tok, int status, json_t *json, char *text);

/* One reply. The caller zeroes it; resp_deinit releases what the handler hung on it. */
struct resp {
    int status;
    json_t *json; /* the body (new), or NULL */
    char *text;   /* a text body (new) when json is NULL */
    const char *content_type;
    int retry_after;        /* > 0: a Retry-After header, in seconds (503) */
    struct db_write *write; /* commit this unit before replying (steals) */
    /* A 200 reply gets an ETag, a hash of its body (for an asynchronous reply computed on
     * the worker's thread), and becomes a 304 without body when it equals the request's
     * If-None-Match. */
    bool etag;
    /* A Content-Security-Policy header (static), or NULL: the dashboard's files */
    const char *security_policy;
    /* decide: its decision's figures, which GET /metrics shows once it is committed */
    struct jobs_gauges gauges;
    char etag_value[24]; /* http.c's: the quoted hash, once computed */
    /*
     * Asynchronous reply: async_start(async_ud, done, tok) starts the work off the loop and
     * steals async_ud (whatever it returns); done(tok, ...) is then called once, later, from
     * any thread. -1: the work was refused (busy or stopping): done is never called and the
     * caller answers 503. async_free releases async_ud when the reply is never started.
     */
    int (*async_start)(void *ud, api_async_done done, void *tok);
    void (*async_free)(void *ud);
    void *async_ud;
};

void resp_deinit(struct resp *r);

/*
 * Fills r with the error envelope {"error": {"code", "message", "field"}} and
 * status; field may be NULL or "". Returns 0 so a handler can `return api_error(...)`.
 */
int api_error(struct resp *r, int status, const char *code, const char *field, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
/*
 * new: the request's body parsed as a JSON object, or NULL with r filled (400: malformed
 * JSON with its line and column, or not an object; what_object, if not NULL, says what the
 * object should hold).
 */
json_t *api_json_body(const struct req *q, struct resp *r, const char *what_object);

/* The envelope's code for a status ("INVALID_ARGUMENT" for 400, ...). */
const char *api_code(int status);

/* The job name grammar, the one definition: letters, digits, '.', '_', ':'
 * and '-', 1 to 128 of them. */
#define API_JOB_GRAMMAR "[A-Za-z0-9._:-]{1,128}"
#define API_JOB_MAX     128
/* True when id matches API_JOB_GRAMMAR. */
bool api_job_id_ok(const char *id);
/* Fills r with a 400 naming the field "job" and saying how id breaks the grammar. 0. */
int api_job_id_error(struct resp *r, const char *id);
/* s as an error message may show it, in buf (n >= 48): printable ASCII, at most 40 bytes (then
 * "..."), any other byte as '?' (the reply is JSON, which cannot hold invalid UTF-8). buf. */
const char *api_shown(const char *s, char *buf, size_t n);
/* The value of query parameter key, or NULL. */
const char *api_query(const struct req *q, const char *key);
/*
 * Query parameters, each parsed with checked arithmetic into its allowed range, so that what
 * a handler computes from them cannot overflow. Each: 0 with *given false and the output
 * untouched when key is absent; 0 with *given true and the value; -1 after filling r with a
 * 400 naming key and its allowed range.
 *
 * api_query_time: an instant, epoch milliseconds (time_parse_instant) or RFC 3339, from
 * TIME_MIN_MS to TIME_MAX_MS (0000-01-01T00:00:00Z to 9999-12-31T23:59:59.999Z).
 * api_query_duration: a duration as the options take it ("5 min", "30 s", "250"), from 1 ms
 * to max_ms. api_query_count: decimal digits (api_parse_uint) from min to max.
 */
int api_query_time(const struct req *q, struct resp *r, const char *key, int64_t *t, bool *given);
int api_query_duration(const struct req *q, struct resp *r, const char *key, int64_t max_ms,
                       int64_t *ms, bool *given);
int api_query_count(const struct req *q, struct resp *r, const char *key, int64_t min, int64_t max,
                    int64_t *v, bool *given);

/*
 * A count or an id, strictly: decimal digits only (no sign, no space, no leading zero but
 * "0" itself), at most INT64_MAX. 0, or -1 when s is anything else (or NULL).
 */
int api_parse_uint(const char *s, int64_t *out);

/*
 * Completes r after its write unit w committed (w->ok) or failed: a decision gets its
 * decision_id, a retry (DB_W_REPEAT) the decision it repeats. A failure stored nothing:
 * r becomes a 503 with Retry-After (the store cannot be written now, an earlier unit of the
 * job failed, or another process wrote the job first: code "conflict") or a 500 (the store refused
 * the unit's rows), and once no other unit of the job is in flight the job's in-memory state and
 * config are reloaded from the database (api_job_recover), so that they are again what the store
 * holds.
 */
void api_committed(struct api *a, struct resp *r, const struct db_write *w);

/*
 * Whether job's in-memory state may be used for a new write: 0 when it may (a job whose
 * earlier unit failed is reloaded from the database here, once none of its units is in
 * flight); -1 while it cannot yet, with r filled (503 and Retry-After) when r is not NULL.
 */
int api_job_recover(struct api *a, const char *job, struct resp *r);

/*
 * The entry of job: the one in memory, or else (a cold load) the job's row and its window's
 * samples read from the store, so that a job another process decided, or changed, goes on from
 * its stored state, config and window instead of starting over. Not while a unit of the job is
 * in flight (a deletion not yet committed): memory is then ahead of the store. The read runs on
 * the loop thread, like the reload after a failed write: one read by the primary key and one
 * range read of the window (milliseconds), only for a job not in memory. 1 with *e, 0 when the
 * store has no such job either (*e NULL), -1 with r filled (503, Retry-After) when the store
 * cannot be read.
 */
int api_job_find(struct api *a, const char *job, struct jobs_entry **e, struct resp *r);

/*
 * The job of a request that makes a decision (decide, rebalance): the job id checked, a failed
 * earlier write recovered, the body parsed as an object (new in *body; body NULL: the caller
 * has read it otherwise), and the job's entry in *e (api_job_find; a new one when *created:
 * forgotten again unless a decision is made). 0, or -1 with r filled (*body may be set: the
 * caller releases it).
 */
struct jobs_entry;
/* decision_run on the server's scratch: 0, or -1 with r filled with the refusal (if any). */
int api_decision_run(struct api *a, const struct decision_req *dq, struct decision_res *res,
                     struct resp *r);
int api_decision_job(const struct req *q, struct resp *r, json_t **body, struct jobs_entry **e,
                     bool *created);

/*
 * A sample of job at `at` that is not after the job's last sample (body: the request as
 * sent, len bytes): the stored decision it repeats when the newest decision at that `at`
 * was made from the same JSON value (200, the reply of then with "repeat": true after its
 * decision_id); otherwise a 409 naming `at` (last_at: the job's last sample, for the text).
 */
void api_decide_repeat(struct api *a, const char *job, int64_t at, const char *body, size_t len,
                       int64_t last_at, struct resp *r);

/*
 * new: the write unit of a policy outcome (policies.h): the revision's row when one became
 * active, and its global event (PolicyReloaded, or PolicyReloadFailed with the error). For
 * `serve` and for the other processes that decide and store (`governor flink --db`).
 */
struct pol_outcome;
struct db_write *api_policy_unit(const struct pol_outcome *o);

/* ---------------------------------------------------------------- handlers -- */

int api_decide(const struct req *q, struct resp *r);     /* POST /v1/jobs/{job}/metrics */
int api_rebalance(const struct req *q, struct resp *r);  /* POST /v1/jobs/{job}/rebalance */
int api_config_put(const struct req *q, struct resp *r); /* PUT /v1/jobs/{job}/config */
int api_config_get(const struct req *q, struct resp *r); /* GET /v1/jobs/{job}/config */
int api_jobs_list(const struct req *q, struct resp *r);  /* GET /v1/jobs */
int api_job_delete(const struct req *q, struct resp *r); /* DELETE /v1/jobs/{job} */
/*
 * Runs the handler fn inside the loop's jansson arena (jarena.h): what it builds with jansson
 * costs a bump of a pointer and is dropped at once, and its JSON body is printed to text
 * before the arena closes. For the handlers that build large answers on the loop. 0.
 */
int api_in_arena(const struct req *q, struct resp *r,
                 void (*fn)(const struct req *, struct resp *));

int api_decisions_list(const struct req *q, struct resp *r);  /* GET /v1/jobs/{job}/decisions */
int api_decision_get(const struct req *q, struct resp *r);    /* GET /v1/decisions/{id} */
int api_events_list(const struct req *q, struct resp *r);     /* GET /v1/jobs/{job}/events */
int api_healthz(const struct req *q, struct resp *r);         /* GET /healthz */
int api_readyz(const struct req *q, struct resp *r);          /* GET /readyz */
int api_policies_get(const struct req *q, struct resp *r);    /* GET /v1/policies */
int api_policies_reload(const struct req *q, struct resp *r); /* POST /v1/policies/reload */
int api_metrics(const struct req *q, struct resp *r);         /* GET /metrics */
int api_sql(const struct req *q, struct resp *r);             /* POST /v1/sql */
int api_replay(const struct req *q, struct resp *r);          /* POST /v1/replay */
int api_dashboard(const struct req *q, struct resp *r);       /* GET / and its files (open) */

/* The dashboard's Content-Security-Policy: nothing but this origin, no inline code. */
#define API_PAGE_POLICY                                                                            \
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "              \
    "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
int api_timeline(const struct req *q, struct resp *r); /* GET /v1/jobs/{job}/timeline */
int api_advice(const struct req *q, struct resp *r);   /* GET /v1/jobs/{job}/advice */
int api_target(const struct req *q, struct resp *r);   /* GET /v1/jobs/{job}/target (KEDA) */

#endif
