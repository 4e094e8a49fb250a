/*
 * test_api.c - the handlers called directly (no sockets) on a temporary database: decide
 * and its commit, 409, a retry (the stored decision again), a failed commit (500, or 503 for
 * a storage fault, and the in-memory state reloaded), config, history; and the pure helpers
 * (ids, times, auth, routes).
 */
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "decision/jobs.h"
#include "http/api.h"
#include "time/timeutil.h"
#include "http/http.h"
#include "base/jarena.h"
#include "test.h"
#include "store/writer.h"

static const char *SAMPLE = "{\"at\": %lld, \"running_since\": 0, \"vertices\": ["
                            "{\"id\": \"a\", \"parallelism\": 2, \"max_parallelism\": 8, "
                            "\"metrics\": {\"busy_ms_per_s\": 500, \"records_in\": 10, "
                            "\"records_out\": 10, \"records_in_per_s\": 5}}]}";

struct fx {
    char path[64];
    struct db *db;
    struct jobs *jobs;
    struct opt_job *defaults;
    struct opt_server srv;
    struct api a;
};

static void fx_init(struct fx *f)
{
    char *err = NULL;
    jarena_install(); /* as main does: decide runs inside its jansson arena */
    memset(f, 0, sizeof *f);
    snprintf(f->path, sizeof f->path, "/tmp/governor-test-api-%d.db", (int)getpid());
    unlink(f->path);
    opt_server_init(&f->srv);
    f->defaults = opt_job_new();
    f->db = db_open(f->path, "OFF", &err);
    f->jobs = jobs_new(f->defaults);
    f->a.db = f->db;
    f->a.jobs = f->jobs;
    f->a.srv = &f->srv;
    f->a.defaults = f->defaults;
    f->a.ready = true;
    api_init(&f->a);
}

static void fx_deinit(struct fx *f)
{
    char p[80];
    api_deinit(&f->a);
    jobs_free(f->jobs);
    db_close(f->db);
    opt_job_free(f->defaults);
    opt_server_deinit(&f->srv);
    unlink(f->path);
    snprintf(p, sizeof p, "%s-wal", f->path);
    unlink(p);
    snprintf(p, sizeof p, "%s-shm", f->path);
    unlink(p);
}

/* Calls h with body (may be NULL); commits its write unit like the HTTP layer would. */
static int call(struct fx *f, int (*h)(const struct req *, struct resp *), const char *job,
                const char *body, struct resp *r)
{
    struct req q = {0};
    q.api = &f->a;
    q.job = job;
    q.body = body;
    q.body_len = body ? strlen(body) : 0;
    q.now_ms = 1764410400000;
    memset(r, 0, sizeof *r);
    h(&q, r);
    if (r->write) {
        char *err = NULL;
        struct db_write *w = r->write;
        r->write = NULL;
        writer_commit_group(f->db, &w, 1, &err);
        free(err);
        api_committed(&f->a, r, w);
        db_write_free(w);
    }
    return r->status;
}

/* The reply's JSON (decide answers as text). */
static json_t *reply_json(struct resp *r)
{
    return r->json ? json_incref(r->json) : json_loads(r->text ? r->text : "", 0, NULL);
}

/* The error's field; a decide error comes as text (printed inside the request's arena). */
static const char *field(struct resp *r)
{
    static char buf[256];
    json_t *j = r->json ? json_incref(r->json) : json_loads(r->text ? r->text : "", 0, NULL);
    const char *f = json_string_value(json_object_get(json_object_get(j, "error"), "field"));
    snprintf(buf, sizeof buf, "%s", f ? f : "");
    json_decref(j);
    return f ? buf : NULL;
}

static void test_decide_commit_and_409(void)
{
    struct fx f;
    struct resp r;
    char body[1024];
    fx_init(&f);
    snprintf(body, sizeof body, SAMPLE, 1000LL);
    ASSERT_EQ(call(&f, api_decide, "j1", body, &r), 200);
    json_t *got = json_loads(r.text ? r.text : "", 0, NULL);
    ASSERT_EQ(json_integer_value(json_object_get(got, "decision_id")), 1);
    ASSERT_STR(json_string_value(json_object_get(got, "job")), "j1");
    json_decref(got);
    resp_deinit(&r);
    /* at 999 < 1000: 409 naming at, and the registry keeps last_at 1000 */
    snprintf(body, sizeof body, SAMPLE, 999LL);
    ASSERT_EQ(call(&f, api_decide, "j1", body, &r), 409);
    ASSERT_STR(field(&r), "at");
    resp_deinit(&r);
    ASSERT_EQ(jobs_get(f.jobs, "j1")->last_at, 1000);
    /* a bad job id */
    ASSERT_EQ(call(&f, api_decide, "a/b", body, &r), 400);
    ASSERT_STR(field(&r), "job");
    resp_deinit(&r);
    /* a failed commit: 500, and the state is reloaded from the store (last_at 1000) */
    snprintf(body, sizeof body, SAMPLE, 2000LL);
    db_fail_next_writes(1);
    ASSERT_EQ(call(&f, api_decide, "j1", body, &r), 500);
    resp_deinit(&r);
    ASSERT_EQ(jobs_get(f.jobs, "j1")->last_at, 1000);
    /* a failed first decision of a new job leaves no job behind */
    db_fail_next_writes(1);
    ASSERT_EQ(call(&f, api_decide, "j2", body, &r), 500);
    resp_deinit(&r);
    ASSERT(jobs_get(f.jobs, "j2") == NULL);
    /* history: one decision stored */
    ASSERT_EQ(call(&f, api_decisions_list, "j1", NULL, &r), 200);
    json_t *list = reply_json(&r);
    ASSERT_EQ(json_array_size(json_object_get(list, "decisions")), 1);
    json_decref(list);
    resp_deinit(&r);
    fx_deinit(&f);
}

static void test_retry_and_storage_fault(void)
{
    struct fx f;
    struct resp r;
    char body[1024], spaced[1100];
    fx_init(&f);
    snprintf(body, sizeof body, SAMPLE, 1000LL);
    ASSERT_EQ(call(&f, api_decide, "j", body, &r), 200);
    json_t *first = reply_json(&r);
    resp_deinit(&r);
    ASSERT(json_object_get(first, "repeat") == NULL);
    /* the same sample again, spaced differently: the stored decision, marked, nothing new */
    snprintf(spaced, sizeof spaced, "  %s  ", body);
    ASSERT_EQ(call(&f, api_decide, "j", spaced, &r), 200);
    json_t *again = reply_json(&r);
    resp_deinit(&r);
    ASSERT(json_is_true(json_object_get(again, "repeat")));
    json_object_del(again, "repeat");
    ASSERT(json_equal(first, again));
    json_decref(again);
    json_decref(first);
    /* another body at the same at: 409 naming at */
    char other[1024];
    snprintf(other, sizeof other, SAMPLE, 1000LL);
    char *p = strstr(other, "\"busy_ms_per_s\": 500");
    ASSERT(p != NULL);
    memcpy(p, "\"busy_ms_per_s\": 600", strlen("\"busy_ms_per_s\": 600"));
    ASSERT_EQ(call(&f, api_decide, "j", other, &r), 409);
    ASSERT_STR(field(&r), "at");
    resp_deinit(&r);
    ASSERT_EQ(call(&f, api_decisions_list, "j", NULL, &r), 200);
    json_t *list = reply_json(&r);
    ASSERT_EQ(json_array_size(json_object_get(list, "decisions")), 1);
    json_decref(list);
    resp_deinit(&r);
    /* a storage fault: 503 with Retry-After, nothing stored, the state as before */
    snprintf(body, sizeof body, SAMPLE, 2000LL);
    db_fail_next_writes_code(1, SQLITE_FULL);
    ASSERT_EQ(call(&f, api_decide, "j", body, &r), 503);
    ASSERT(r.retry_after >= 1);
    json_t *e = reply_json(&r);
    ASSERT_CONTAINS(json_string_value(json_object_get(json_object_get(e, "error"), "message")),
                    "full");
    json_decref(e);
    resp_deinit(&r);
    ASSERT_EQ(jobs_get(f.jobs, "j")->last_at, 1000);
    /* and the same sample once the store takes it: decided, not a repeat */
    ASSERT_EQ(call(&f, api_decide, "j", body, &r), 200);
    e = reply_json(&r);
    ASSERT_EQ(json_integer_value(json_object_get(e, "decision_id")), 2);
    ASSERT(json_object_get(e, "repeat") == NULL);
    json_decref(e);
    resp_deinit(&r);
    fx_deinit(&f);
}

static void test_config_put_get(void)
{
    struct fx f;
    struct resp r;
    fx_init(&f);
    ASSERT_EQ(call(&f, api_config_put, "j",
                   "{\"config\": {\"job.autoscaler.utilization.target\": 0.5}}", &r),
              200);
    resp_deinit(&r);
    ASSERT_EQ(call(&f, api_config_put, "j", "{\"config\": {\"job.autoscaler.x\": 1}}", &r), 422);
    ASSERT_STR(field(&r), "config.job.autoscaler.x");
    resp_deinit(&r);
    ASSERT_EQ(call(&f, api_config_get, "j", NULL, &r), 200);
    json_t *t =
        json_object_get(json_object_get(r.json, "effective"), "job.autoscaler.utilization.target");
    ASSERT_STR(json_string_value(json_object_get(t, "value")), "0.5");
    ASSERT_STR(json_string_value(json_object_get(t, "source")), "job");
    resp_deinit(&r);
    /* the layer survives a reload from the store */
    jobs_remove(f.jobs, "j");
    char *err = NULL;
    ASSERT_EQ(jobs_load(f.jobs, f.db, NULL, &err), 0);
    ASSERT(jobs_get(f.jobs, "j") != NULL);
    ASSERT_STR(json_string_value(json_object_get(jobs_get(f.jobs, "j")->config,
                                                 "job.autoscaler.utilization.target")),
               "0.5");
    ASSERT_EQ(call(&f, api_job_delete, "j", NULL, &r), 200);
    resp_deinit(&r);
    ASSERT_EQ(call(&f, api_job_delete, "j", NULL, &r), 404);
    resp_deinit(&r);
    fx_deinit(&f);
}

/* Jobs with the same stored layer share one copy of their options (decision/jobopts.h): the
 * defaults for every job without a layer; a layer's keys in any order are the same layer; a
 * request's own options change only its decision; each job keeps its own effective options
 * through PUT, a reload from the store and DELETE. */
static void test_jobs_share_options(void)
{
    struct fx f;
    struct resp r;
    char body[1024];
    fx_init(&f);
    const char *jobs[] = {"j1", "j2", "j3"};
    for (int i = 0; i < 3; i++) {
        snprintf(body, sizeof body, SAMPLE, 1000LL);
        ASSERT_EQ(call(&f, api_decide, jobs[i], body, &r), 200);
        resp_deinit(&r);
    }
    struct jobopts *dflt = jobs_get(f.jobs, "j1")->shared;
    ASSERT(jobs_get(f.jobs, "j2")->shared == dflt);
    ASSERT(jobs_get(f.jobs, "j3")->opts == dflt->opts);
    ASSERT_EQ(call(&f, api_config_put, "j1",
                   "{\"config\": {\"job.autoscaler.utilization.target\": 0.5, "
                   "\"job.autoscaler.stabilization.interval\": \"1 min\"}}",
                   &r),
              200);
    resp_deinit(&r);
    struct jobopts *half = jobs_get(f.jobs, "j1")->shared;
    ASSERT(half != dflt);
    ASSERT(jobs_get(f.jobs, "j2")->shared == dflt);
    /* the same layer, its keys in another order */
    ASSERT_EQ(call(&f, api_config_put, "j2",
                   "{\"config\": {\"job.autoscaler.stabilization.interval\": \"1 min\", "
                   "\"job.autoscaler.utilization.target\": 0.5}}",
                   &r),
              200);
    resp_deinit(&r);
    ASSERT(jobs_get(f.jobs, "j2")->shared == half);
    /* a request's own options are its decision's only */
    snprintf(body, sizeof body, SAMPLE, 2000LL);
    json_t *b = json_loads(body, 0, NULL);
    json_object_set_new(b, "config",
                        json_pack("{s:s}", "job.autoscaler.utilization.target", "0.8"));
    char *text = json_dumps(b, 0);
    ASSERT_EQ(call(&f, api_decide, "j2", text, &r), 200);
    free(text);
    json_decref(b);
    resp_deinit(&r);
    for (int i = 0; i < 2; i++) {
        ASSERT_EQ(call(&f, api_config_get, jobs[i], NULL, &r), 200);
        json_t *t = json_object_get(json_object_get(r.json, "effective"),
                                    "job.autoscaler.utilization.target");
        ASSERT_STR(json_string_value(json_object_get(t, "value")), "0.5");
        ASSERT_STR(json_string_value(json_object_get(t, "source")), "job");
        resp_deinit(&r);
    }
    ASSERT_EQ(call(&f, api_config_get, "j3", NULL, &r), 200);
    json_t *t =
        json_object_get(json_object_get(r.json, "effective"), "job.autoscaler.utilization.target");
    ASSERT_STR(json_string_value(json_object_get(t, "source")), "default");
    resp_deinit(&r);
    /* reloaded from the store: shared again */
    jobs_remove(f.jobs, "j1");
    jobs_remove(f.jobs, "j2");
    char *err = NULL;
    ASSERT_EQ(jobs_load(f.jobs, f.db, NULL, &err), 0);
    ASSERT(jobs_get(f.jobs, "j1")->shared == jobs_get(f.jobs, "j2")->shared);
    ASSERT(jobs_get(f.jobs, "j1")->shared != jobs_get(f.jobs, "j3")->shared);
    /* a job back on the defaults shares them again */
    ASSERT_EQ(call(&f, api_config_put, "j1", "{\"config\": {}}", &r), 200);
    resp_deinit(&r);
    ASSERT(jobs_get(f.jobs, "j1")->shared == jobs_get(f.jobs, "j3")->shared);
    ASSERT_EQ(call(&f, api_job_delete, "j2", NULL, &r), 200); /* the last of its layer */
    resp_deinit(&r);
    fx_deinit(&f);
}

static void test_helpers(void)
{
    int64_t t;
    ASSERT(api_job_id_ok("orders.v2:eu-1_x"));
    ASSERT(!api_job_id_ok(""));
    ASSERT(!api_job_id_ok("a/b"));
    ASSERT(!api_job_id_ok("a b"));
    char long_id[130];
    memset(long_id, 'x', 129);
    long_id[129] = '\0';
    ASSERT(!api_job_id_ok(long_id));
    long_id[128] = '\0';
    ASSERT(api_job_id_ok(long_id));
    /* 2025-11-29T10:00:00Z = 1764410400 s (the DESIGN example's at) */
    ASSERT_EQ(time_parse_instant("2025-11-29T10:00:00Z", &t), 0);
    ASSERT_EQ(t, 1764410400000LL);
    ASSERT_EQ(time_parse_instant("2025-11-29T11:00:00.5+01:00", &t), 0);
    ASSERT_EQ(t, 1764410400500LL);
    ASSERT_EQ(time_parse_instant("1764410400000", &t), 0);
    ASSERT_EQ(t, 1764410400000LL);
    ASSERT_EQ(time_parse_instant("yesterday", &t), -1);
    ASSERT_EQ(time_parse_instant("2025-13-01T00:00:00Z", &t), -1);
    /* the same grammar as a sample's `at`: a day its month does not have is refused, not
     * carried into the next month (2025-02-30 was read as 2025-03-02) */
    ASSERT_EQ(time_parse_instant("2025-02-30T00:00:00Z", &t), -1);
    ASSERT_EQ(time_parse_instant("2025-04-31T00:00:00Z", &t), -1);
    ASSERT_EQ(time_parse_instant("2024-02-29T00:00:00Z", &t), 0);
    ASSERT_EQ(t, 1709164800000LL);

    char *tokens[] = {"abc", "secret", NULL};
    ASSERT(http_auth_ok(tokens, "Bearer secret"));
    ASSERT(http_auth_ok(tokens, "bearer abc"));
    ASSERT(!http_auth_ok(tokens, "Bearer secre"));
    ASSERT(!http_auth_ok(tokens, "Bearer secrets"));
    ASSERT(!http_auth_ok(tokens, "Bearer "));
    ASSERT(!http_auth_ok(tokens, NULL));
    ASSERT(http_auth_ok(NULL, NULL));

    struct http_match m;
    ASSERT_EQ(http_route("POST", "/v1/jobs/a%3Ab/metrics", &m), 0);
    ASSERT(m.h == api_decide);
    ASSERT_STR(m.job, "a:b");
    http_match_deinit(&m);
    /* a job with a slash reaches the check of the grammar (400 naming job), not a 404 */
    ASSERT_EQ(http_route("GET", "/v1/jobs/x/y/decisions", &m), -1);
    ASSERT_EQ(m.status, 400);
    ASSERT_STR(m.field, "job");
    ASSERT(m.problem == NULL);
    ASSERT_STR(m.job, "x/y");
    http_match_deinit(&m);
    ASSERT_EQ(http_route("GET", "/healthz", &m), 0);
    ASSERT(m.h == api_healthz);
    ASSERT(m.open);
    http_match_deinit(&m);
    ASSERT_EQ(http_route("HEAD", "/healthz", &m), 0);
    ASSERT(m.h == api_healthz);
    http_match_deinit(&m);
    ASSERT_EQ(http_route("DELETE", "/healthz", &m), -1);
    ASSERT_EQ(m.status, 405);
    ASSERT_STR(m.allow, "GET, HEAD");
    http_match_deinit(&m);
    ASSERT_EQ(http_route("POST", "/v1/jobs/a/config", &m), -1);
    ASSERT_EQ(m.status, 405);
    ASSERT_STR(m.allow, "PUT, GET, HEAD");
    http_match_deinit(&m);
    ASSERT_EQ(http_route("GET", "/nope", &m), -1);
    ASSERT_EQ(m.status, 404);
    http_match_deinit(&m);
    ASSERT_EQ(http_route("GET", "/v1/decisions/12", &m), 0);
    ASSERT(m.h == api_decision_get);
    ASSERT_STR(m.id, "12");
    http_match_deinit(&m);

    /* parameters are decoded with their length: no NUL, no malformed escape */
    static const char *const bad_paths[] = {"/v1/jobs/a%00b/metrics", "/v1/jobs/a%0/metrics",
                                            "/v1/jobs/a%/metrics", "/v1/jobs/a%zzb/metrics",
                                            "/v1/jobs/%00/metrics"};
    for (size_t i = 0; i < sizeof bad_paths / sizeof bad_paths[0]; i++) {
        ASSERT_EQ(http_route("POST", bad_paths[i], &m), -1);
        ASSERT_EQ(m.status, 400);
        ASSERT_STR(m.field, "job");
        ASSERT(m.problem != NULL);
        http_match_deinit(&m);
    }
    ASSERT_EQ(http_route("GET", "/v1/decisions/1%00", &m), -1);
    ASSERT_EQ(m.status, 400);
    ASSERT_STR(m.field, "id");
    http_match_deinit(&m);
    /* a long path is routed (the grammar refuses the name), not cut at a buffer's end */
    char longp[6000];
    snprintf(longp, sizeof longp, "/v1/jobs/%05000d/metrics", 7);
    ASSERT_EQ(http_route("POST", longp, &m), -1);
    ASSERT_EQ(m.status, 400);
    ASSERT_EQ(strlen(m.job), 5000u);
    http_match_deinit(&m);

    /* the job name grammar, defined once */
    ASSERT(api_job_id_ok("orders-eu.1:v_2"));
    ASSERT(api_job_id_ok("a"));
    ASSERT(!api_job_id_ok(""));
    ASSERT(!api_job_id_ok(NULL));
    ASSERT(!api_job_id_ok("a b"));
    ASSERT(!api_job_id_ok("a/b"));
    ASSERT(!api_job_id_ok("caf\xc3\xa9"));
    char name[130];
    memset(name, 'j', sizeof name);
    name[128] = '\0';
    ASSERT(api_job_id_ok(name));
    name[128] = 'j';
    name[129] = '\0';
    ASSERT(!api_job_id_ok(name));
    struct resp r = {0};
    api_job_id_error(&r, "a\tb");
    ASSERT_EQ(r.status, 400);
    ASSERT_STR(json_string_value(json_object_get(json_object_get(r.json, "error"), "field")),
               "job");
    resp_deinit(&r);
}

/* Ids and counts are read strictly (README, Client contract: names, limits, timeouts) (decimal
 * digits, no sign, space or leading zero, within int64); a percent-decoded NUL is not cut off
 * silently. */
static void test_strict_numbers(void)
{
    int64_t v = -1;
    const char *good[] = {"0", "1", "42", "9223372036854775807"};
    const int64_t want[] = {0, 1, 42, INT64_MAX};
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        ASSERT_EQ(api_parse_uint(good[i], &v), 0);
        ASSERT(v == want[i]);
    }
    const char *bad[] = {"",
                         "+1",
                         "-1",
                         " 1",
                         "1 ",
                         "01",
                         "00",
                         "1x",
                         "0x1",
                         "1e3",
                         "1.0",
                         "9223372036854775808",
                         "99999999999999999999"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        ASSERT_EQ(api_parse_uint(bad[i], &v), -1);
    ASSERT_EQ(api_parse_uint(NULL, &v), -1);

    int64_t t = 0;
    ASSERT_EQ(time_parse_instant("0", &t), 0);
    ASSERT_EQ(t, 0);
    ASSERT_EQ(time_parse_instant("-86400000", &t), 0); /* 1969-12-31 */
    ASSERT_EQ(t, -86400000LL);
    const char *bad_t[] = {"+1764410400000",
                           " 1764410400000",
                           "01764410400000",
                           "-0",
                           "-01",
                           "1764410400000 ",
                           "--1",
                           "-"};
    for (size_t i = 0; i < sizeof bad_t / sizeof bad_t[0]; i++)
        ASSERT_EQ(time_parse_instant(bad_t[i], &t), -1);

    /* "1%00" decodes to "1" and a NUL: the route refuses it, naming the parameter */
    struct http_match m;
    ASSERT_EQ(http_route("GET", "/v1/decisions/1%00", &m), -1);
    ASSERT_EQ(m.status, 400);
    ASSERT_STR(m.field, "id");
    http_match_deinit(&m);
    ASSERT_EQ(http_route("GET", "/v1/jobs/a%00b/decisions", &m), -1);
    ASSERT_EQ(m.status, 400);
    ASSERT_STR(m.field, "job");
    http_match_deinit(&m);

    struct fx f;
    fx_init(&f);
    const char *ids[] = {"1%00", "+1", " 1", "01", "0", "-1", "1 ", "1.0"};
    for (size_t i = 0; i < sizeof ids / sizeof ids[0]; i++) {
        struct req q = {0};
        struct resp r = {0};
        q.api = &f.a;
        q.id = ids[i];
        api_decision_get(&q, &r);
        ASSERT_EQ(r.status, 400);
        ASSERT_STR(field(&r), "id");
        resp_deinit(&r);
    }
    const struct {
        const char *key, *value;
    } params[] = {{"limit", "05"},   {"limit", " 5"}, {"limit", "+5"}, {"limit", "0"},
                  {"limit", "1001"}, {"since", "01"}, {"until", "+1"}, {"since", "\xff"}};
    for (size_t i = 0; i < sizeof params / sizeof params[0]; i++) {
        struct req_kv kv = {params[i].key, params[i].value};
        struct req q = {0};
        struct resp r = {0};
        q.api = &f.a;
        q.job = "j1";
        q.query = &kv;
        q.n_query = 1;
        api_decisions_list(&q, &r);
        ASSERT_EQ(r.status, 400);
        ASSERT_STR(field(&r), params[i].key);
        resp_deinit(&r);
    }
    fx_deinit(&f);
}

TEST_MAIN(TEST_ENTRY(test_decide_commit_and_409), TEST_ENTRY(test_retry_and_storage_fault),
          TEST_ENTRY(test_config_put_get), TEST_ENTRY(test_jobs_share_options),
          TEST_ENTRY(test_helpers), TEST_ENTRY(test_strict_numbers))
