/*
 * test_decision.c - the decision service: a trace decided with and without the job's cache
 * gives the same responses; the write unit's vertex rows hold the response's figures and
 * constraints, printed from the decision itself; every refusal (sample, options, `at`, the
 * core's topology, a caller's check) has the one form and leaves the state as it was; a
 * candidate's keys win over the request's own; and the rows' figure text is byte for byte
 * what the response prints.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decision/decision.h"
#include "base/jarena.h"
#include "test.h"

static const char *TRACE = "tests/cases/scale_up_utilization/trace.jsonl";

/* One job deciding: its layers, state, buffers and (maybe) cache. */
struct job {
    struct opt_job *layers;
    struct core_state *st;
    struct decision_buf buf;
    struct decision_cache cache;
};

static void job_init(struct job *j)
{
    char *err = NULL;
    memset(j, 0, sizeof *j);
    j->layers = opt_job_new();
    opt_job_set(j->layers, OPT_SERVER, "job.autoscaler.stabilization.interval", "1 min", &err);
    opt_job_set(j->layers, OPT_SERVER, "job.autoscaler.metrics.window", "2 min", &err);
    j->st = core_state_new();
    decision_buf_init(&j->buf);
    decision_cache_set(&j->cache, j->layers);
}

static void job_deinit(struct job *j)
{
    decision_cache_deinit(&j->cache);
    decision_buf_deinit(&j->buf);
    core_state_free(j->st);
    opt_job_free(j->layers);
}

static struct decision_req req_of(struct job *j, json_t *body, bool cached)
{
    struct decision_req q = {.job = "orders",
                             .body = body,
                             .layers = j->layers,
                             .cache = cached ? &j->cache : NULL,
                             .state = j->st,
                             .revision = "native"};
    return q;
}

/* new: line n (1-based) of the trace as a request body, without its "job". */
static json_t *trace_line(int n)
{
    char line[8192];
    FILE *f = fopen(TRACE, "r");
    json_t *o = NULL;
    for (int i = 1; f && fgets(line, sizeof line, f); i++)
        if (i == n) {
            o = json_loads(line, 0, NULL);
            json_object_del(o, "job");
        }
    if (f)
        fclose(f);
    return o;
}

static void a_cached_job_decides_as_an_uncached_one(void)
{
    struct job a, b;
    job_init(&a);
    job_init(&b);
    int n = 0;
    for (json_t *body; (body = trace_line(n + 1)); n++) {
        struct decision_req qa = req_of(&a, body, true), qb = req_of(&b, body, false);
        struct decision_res ra, rb;
        ASSERT_EQ(decision_run(&a.buf, &qa, &ra), 0);
        ASSERT_EQ(decision_run(&b.buf, &qb, &rb), 0);
        char *ta = jarena_dump(ra.response), *tb = jarena_dump(rb.response);
        ASSERT_STR(ta, tb);
        free(ta);
        free(tb);
        json_decref(ra.response);
        json_decref(rb.response);
        json_decref(body);
    }
    ASSERT_EQ(n, 7);
    ASSERT(a.cache.resolved); /* resolved once, kept */
    job_deinit(&a);
    job_deinit(&b);
}

static void the_rows_hold_the_response_figures(void)
{
    struct job j;
    job_init(&j);
    for (int n = 1; n <= 7; n++) {
        json_t *body = trace_line(n);
        char *text = json_dumps(body, JSON_COMPACT);
        struct decision_req q = req_of(&j, body, true);
        struct decision_res res;
        q.text = text;
        q.len = strlen(text);
        q.now_ms = 42;
        q.warnings = true;
        ASSERT_EQ(decision_run(&j.buf, &q, &res), 0);
        struct db_write *w = res.write;
        ASSERT(w != NULL);
        json_t *vs = json_object_get(res.response, "vertices");
        ASSERT_EQ(w->n_v, (int)json_array_size(vs));
        for (int i = 0; i < w->n_v; i++) {
            json_t *v = json_array_get(vs, (size_t)i);
            char *ev = jarena_dump(json_object_get(v, "evaluated"));
            char *cs = jarena_dump(json_object_get(v, "constraints"));
            ASSERT_STR(w->v[i].evaluated_json, ev);
            ASSERT_STR(w->v[i].constraints, cs);
            ASSERT_STR(w->v[i].vertex, json_string_value(json_object_get(v, "id")));
            ASSERT_EQ(w->v[i].target, json_integer_value(json_object_get(v, "target")));
            ASSERT_EQ(w->v[i].raw_target, json_integer_value(json_object_get(v, "raw_target")));
            free(ev);
            free(cs);
        }
        char *dec = jarena_dump(res.response);
        ASSERT_STR(w->decision_json, dec);
        ASSERT_STR(w->input_json, text);
        ASSERT_STR(w->config_hash, json_string_value(json_object_get(res.response, "config_hash")));
        ASSERT_STR(w->policy_revision, "native");
        ASSERT_EQ(w->now, 42);
        ASSERT(json_is_array(json_object_get(res.response, "warnings")));
        free(dec);
        db_write_free(w);
        json_decref(res.response);
        free(text);
        json_decref(body);
    }
    job_deinit(&j);
}

/* Runs body (text) on j and expects a refusal that leaves the state's last `at` alone. */
static void refused(struct job *j, const char *body_text, int status, const char *code,
                    const char *field, const char *needle)
{
    json_t *body = json_loads(body_text, 0, NULL);
    struct decision_req q = req_of(j, body, true);
    struct decision_res res;
    int64_t before = core_state_last_at(j->st);
    ASSERT(body != NULL);
    ASSERT_EQ(decision_run(&j->buf, &q, &res), -1);
    ASSERT_EQ(res.err.status, status);
    ASSERT_STR(res.err.code, code);
    ASSERT_STR(res.err.field, field);
    ASSERT_CONTAINS(res.err.message, needle);
    ASSERT(res.response == NULL && res.write == NULL);
    ASSERT_EQ(core_state_last_at(j->st), before);
    json_decref(body);
}

static void every_refusal_has_one_form_and_changes_nothing(void)
{
    struct job j;
    job_init(&j);
    json_t *first = trace_line(3);
    struct decision_req q = req_of(&j, first, true);
    struct decision_res res;
    ASSERT_EQ(decision_run(&j.buf, &q, &res), 0);
    json_decref(res.response);
    json_decref(first);
    /* the sample */
    refused(&j,
            "{\"at\": 1764410500000, \"vertices\": [{\"id\": \"a\", \"parallelism\": 0, "
            "\"max_parallelism\": 8}]}",
            400, "INVALID_ARGUMENT", "vertices[0].parallelism", "vertices[0].parallelism");
    /* a request option that does not parse */
    refused(&j,
            "{\"at\": 1764410500000, \"config\": {\"job.autoscaler.utilization.target\": 7}, "
            "\"vertices\": [{\"id\": \"a\", \"parallelism\": 1, \"max_parallelism\": 8}]}",
            422, "INVALID_ARGUMENT", "config.job.autoscaler.utilization.target",
            "utilization.target");
    /* options that do not resolve together */
    refused(&j,
            "{\"at\": 1764410500000, \"config\": {\"job.autoscaler.utilization.target\": 0}, "
            "\"vertices\": [{\"id\": \"a\", \"parallelism\": 1, \"max_parallelism\": 8}]}",
            422, "INVALID_CONFIG", "config", "utilization.target");
    /* earlier than the state's last sample */
    refused(&j, "{\"at\": 1, \"vertices\": [{\"id\": \"a\", \"parallelism\": 1}]}", 409,
            "FAILED_PRECONDITION", "at", "earlier");
    /* the core's topology: the field is the path before ": " */
    refused(&j,
            "{\"at\": 1764410500000, \"vertices\": [{\"id\": \"a\", \"parallelism\": 1}, "
            "{\"id\": \"b\", \"parallelism\": 1, \"inputs\": [{\"from\": \"x y\"}]}]}",
            400, "INVALID_ARGUMENT", "vertices[1].inputs[0].from", "unknown vertex \"x y\"");
    refused(&j,
            "{\"at\": 1764410500000, \"vertices\": [{\"id\": \"a\", \"parallelism\": 1}, "
            "{\"id\": \"a\", \"parallelism\": 1}]}",
            400, "INVALID_ARGUMENT", "vertices[1].id", "duplicate");
    job_deinit(&j);
}

static void a_callers_checks_stop_before_the_state_changes(void)
{
    struct job j;
    job_init(&j);
    json_t *body = trace_line(1);
    int64_t at = json_integer_value(json_object_get(body, "at"));
    struct decision_req q = req_of(&j, body, true);
    struct decision_res res;
    /* A sample not after the job's last one (the server's last_at): handed back undecided. */
    q.has_last = true;
    q.last_at = at;
    ASSERT_EQ(decision_run(&j.buf, &q, &res), 1);
    ASSERT_EQ(res.err.status, 0);
    ASSERT_EQ(res.repeat_at, at);
    ASSERT(res.repeat == NULL && res.write == NULL && res.response == NULL);
    /* A store that takes no write: a 503 before the state changes. */
    q.last_at = at - 1;
    q.unwritable = "disk full";
    q.retry_after = 4;
    ASSERT_EQ(decision_run(&j.buf, &q, &res), -1);
    ASSERT_EQ(res.err.status, 503);
    ASSERT_STR(res.err.code, "UNAVAILABLE");
    ASSERT_STR(res.err.field, "");
    ASSERT_STR(res.err.message,
               "the store cannot be written (disk full); nothing was stored, retry after 4 s");
    ASSERT_EQ(res.err.retry_after, 4);
    ASSERT_EQ(core_state_last_at(j.st), INT64_MIN);
    /* A caller that keeps what it decided (replay): a repeat is answered from it. */
    struct decision_seen seen;
    decision_seen_init(&seen, 0);
    decision_seen_add(&seen, at, body, "{\"at\":1}", 7);
    q.has_last = false;
    q.unwritable = NULL;
    q.seen = &seen;
    q.seen_what = "line";
    ASSERT_EQ(decision_run(&j.buf, &q, &res), 1);
    ASSERT_STR(res.repeat, "{\"at\":1}");
    json_t *other = trace_line(2);
    json_object_set_new(other, "at", json_integer(at));
    q.body = other;
    ASSERT_EQ(decision_run(&j.buf, &q, &res), -1);
    ASSERT_EQ(res.err.status, 409);
    ASSERT_CONTAINS(res.err.message, "(line 7)");
    ASSERT_EQ(core_state_last_at(j.st), INT64_MIN);
    json_decref(other);
    decision_seen_deinit(&seen);
    json_decref(body);
    job_deinit(&j);
}

static void a_candidates_keys_win_over_the_requests(void)
{
    struct job j;
    char *err = NULL;
    job_init(&j);
    struct opt_job *cand = opt_job_new();
    ASSERT_EQ(opt_job_set(cand, OPT_SERVER, "job.autoscaler.utilization.target", "0.9", &err), 0);
    json_t *body = json_loads("{\"at\": 1764410400000, \"config\": "
                              "{\"job.autoscaler.utilization.target\": 0.5}, \"vertices\": "
                              "[{\"id\": \"a\", \"parallelism\": 1, \"max_parallelism\": 8}]}",
                              0, NULL);
    struct decision_req q = req_of(&j, body, false);
    struct decision_res res;
    q.overlay = cand;
    q.text = "{}";
    q.len = 2;
    ASSERT_EQ(decision_run(&j.buf, &q, &res), 0);
    ASSERT_CONTAINS(res.write->config_json, "\"job.autoscaler.utilization.target\":\"0.9\"");
    db_write_free(res.write);
    json_decref(res.response);
    json_decref(body);
    opt_job_free(cand);
    job_deinit(&j);
}

/* The stored figure text is the response's, byte for byte, whatever the numbers. */
static void the_figure_text_is_the_responses(void)
{
    static const double some[] = {0,       -0.0,    0.7,  1,          1e15,     1e16,  1e17,
                                  1e20,    1.5e-5,  1e-7, 123456.789, 2e-300,   3e300, 0.1234,
                                  1428.57, 1.0 / 3, 1e21, -2.5,       INFINITY, NAN};
    const int n = (int)(sizeof some / sizeof some[0]);
    unsigned seed = 7;
    for (int k = 0; k < 4000; k++) {
        struct core_evaluated ev;
        for (int i = 0; i < CORE_N_FIGURES; i++) {
            seed = seed * 1103515245u + 12345u;
            double x = some[(seed >> 16) % (unsigned)n];
            if (k % 2) /* and anywhere in between */
                x = ldexp((double)(seed >> 8) / (1 << 24), (int)(seed % 200) - 100);
            *core_figure_at(&ev, i) = x;
        }
        json_t *o = jsn_render_evaluated(&ev);
        char *want = jarena_dump(o), *got = jsn_evaluated_text(&ev);
        ASSERT_STR(got, want);
        free(want);
        free(got);
        json_decref(o);
    }
}

TEST_MAIN(TEST_ENTRY(a_cached_job_decides_as_an_uncached_one),
          TEST_ENTRY(the_rows_hold_the_response_figures),
          TEST_ENTRY(every_refusal_has_one_form_and_changes_nothing),
          TEST_ENTRY(a_callers_checks_stop_before_the_state_changes),
          TEST_ENTRY(a_candidates_keys_win_over_the_requests),
          TEST_ENTRY(the_figure_text_is_the_responses))
