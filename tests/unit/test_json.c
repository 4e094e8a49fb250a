/* Unit tests for the JSON codec (decision/jsn_*.c): the decide request parser, the response
 * renderer, and the job state's JSON round trip. */
#include "test.h"

#include <stdlib.h>

#include "core/core_int.h"
#include "decision/jsn.h"

/* What reached the options: the effective value and layer of a few keys. */
struct seen {
    const char *key;
    char value[128];
    int layer;
};

static void seen_cb(void *ud, const char *key, const char *value, enum opt_layer layer)
{
    struct seen *s = ud;
    for (; s->key; s++)
        if (strcmp(s->key, key) == 0) {
            snprintf(s->value, sizeof s->value, "%s", value);
            s->layer = layer;
        }
}

static json_t *load(const char *text)
{
    json_error_t je;
    json_t *j = json_loads(text, 0, &je);
    if (!j)
        fprintf(stderr, "  bad test JSON: %s at %d: %s\n", je.text, je.position, text);
    return j;
}

/* The README's decide request, verbatim. */
static const char *design_request =
    "{\"at\": 1764410400000, \"running_since\": 1764409800000, \"status\": \"RUNNING\","
    " \"config\": {\"job.autoscaler.utilization.target\": \"0.6\"},"
    " \"job_metrics\": {\"heap_used\": 1.2e9, \"heap_max\": 4e9, \"gc_ms_per_s\": 12,"
    "   \"managed_used\": 0, \"metaspace_used\": 1e8,"
    "   \"task_slots_total\": 16, \"task_slots_available\": 4},"
    " \"vertices\": ["
    "  {\"id\": \"source\", \"parallelism\": 4, \"max_parallelism\": 128, \"partitions\": 8,"
    "   \"inputs\": [],"
    "   \"metrics\": {\"busy_ms_per_s\": {\"min\": 400, \"avg\": 550, \"max\": 700},"
    "     \"backpressured_ms_per_s\": 0,"
    "     \"records_in\": 1203400, \"records_out\": 1203400,"
    "     \"pending_records\": 5000}},"
    "  {\"id\": \"agg\", \"parallelism\": 4, \"max_parallelism\": 128,"
    "   \"inputs\": [{\"from\": \"source\", \"ship\": \"HASH\"}],"
    "   \"metrics\": {\"busy_ms_per_s\": 800, \"records_in\": 1203000, \"records_out\": 40000,"
    "     \"records_in_per_s\": 1000, \"accumulated_busy_ms\": 9.1e6}}"
    " ]}";

static void parse_design_example(void)
{
    json_t *body = load(design_request);
    ASSERT(body);
    struct jsn_sample js;
    jsn_sample_init(&js);
    struct jsn_err e;
    int rc = jsn_parse_sample(body, 42, &js, NULL, &e);
    if (rc != 0)
        fprintf(stderr, "  %s\n", e.message);
    ASSERT_EQ(rc, 0);
    const struct core_sample *s = &js.s;
    ASSERT_EQ(s->at, 1764410400000LL);
    ASSERT_EQ(s->running_since, 1764409800000LL);
    ASSERT(s->running);
    ASSERT_DEQ(s->heap_used, 1.2e9);
    ASSERT_DEQ(s->heap_max, 4e9);
    ASSERT_DEQ(s->gc_ms_per_s, 12);
    ASSERT_DEQ(s->managed_used, 0);
    ASSERT_DEQ(s->metaspace_used, 1e8);
    ASSERT_DEQ(s->task_slots_total, 16);
    ASSERT_DEQ(s->task_slots_available, 4);
    ASSERT_EQ(s->n_vertices, 2);

    const struct core_vertex_in *v = &s->vertices[0];
    ASSERT_STR(v->id, "source");
    ASSERT_EQ(v->parallelism, 4);
    ASSERT_EQ(v->max_parallelism, 128);
    ASSERT_EQ(v->partitions, 8);
    ASSERT(v->slot_sharing_group == NULL);
    ASSERT(!v->finished);
    ASSERT_EQ(v->n_inputs, 0);
    ASSERT_DEQ(v->busy_min, 400);
    ASSERT_DEQ(v->busy_avg, 550);
    ASSERT_DEQ(v->busy_max, 700);
    ASSERT_DEQ(v->backpressured, 0);
    ASSERT_DEQ(v->records_in, 1203400);
    ASSERT_DEQ(v->records_out, 1203400);
    ASSERT_DEQ(v->pending_records, 5000);
    /* not sent: NaN (absent) */
    ASSERT(isnan(v->records_in_per_s));
    ASSERT(isnan(v->records_out_per_s));
    ASSERT(isnan(v->accumulated_busy_ms));

    v = &s->vertices[1];
    ASSERT_STR(v->id, "agg");
    ASSERT_EQ(v->parallelism, 4);
    ASSERT_EQ(v->max_parallelism, 128);
    ASSERT_EQ(v->partitions, 0); /* absent: unknown */
    ASSERT_EQ(v->n_inputs, 1);
    ASSERT_STR(v->inputs[0].from, "source");
    ASSERT_EQ(v->inputs[0].ship, CORE_SHIP_HASH);
    /* a single number sets min, avg and max */
    ASSERT_DEQ(v->busy_min, 800);
    ASSERT_DEQ(v->busy_avg, 800);
    ASSERT_DEQ(v->busy_max, 800);
    ASSERT(isnan(v->backpressured));
    ASSERT_DEQ(v->records_in, 1203000);
    ASSERT_DEQ(v->records_out, 40000);
    ASSERT_DEQ(v->records_in_per_s, 1000);
    ASSERT_DEQ(v->accumulated_busy_ms, 9.1e6);
    ASSERT(isnan(v->pending_records));

    jsn_sample_deinit(&js);
    json_decref(body);
}

static void parse_defaults(void)
{
    json_t *body = load(
        "{\"vertices\": [{\"id\": \"a\", \"parallelism\": 4},"
        " {\"id\": \"b\", \"parallelism\": 100, \"slot_sharing_group\": \"g1\", \"finished\": true,"
        "  \"inputs\": [{\"from\": \"a\"}, {\"from\": \"a\", \"ship\": \"hash\"},"
        "               {\"from\": \"a\", \"ship\": \"weird\"}],"
        "  \"metrics\": {\"busy_ms_per_s\": {\"avg\": 300, \"max\": 900}}},"
        " {\"id\": \"c\", \"parallelism\": 30000, \"metrics\": {\"busy_ms_per_s\": null}},"
        " {\"id\": \"d\", \"parallelism\": 40000}],"
        " \"status\": \"FAILING\", \"job_metrics\": {}, \"unknown_field\": [1, 2]}");
    ASSERT(body);
    struct jsn_sample js;
    jsn_sample_init(&js);
    struct jsn_err e;
    ASSERT_EQ(jsn_parse_sample(body, 1764410400000LL, &js, NULL, &e), 0);
    const struct core_sample *s = &js.s;
    ASSERT_EQ(s->at, 1764410400000LL); /* absent: now_ms */
    ASSERT_EQ(s->running_since, 0);    /* absent: 0 */
    ASSERT(!s->running);               /* FAILING */
    ASSERT(isnan(s->heap_used));
    ASSERT(isnan(s->task_slots_available));
    ASSERT_EQ(s->n_vertices, 4);
    /* Flink's default max parallelism: roundUpToPowerOfTwo(p + p/2) within [128, 32768]:
     * p=4: 6 -> 8 -> 128; p=100: 150 -> 256; p=30000: 45000 -> 65536 -> 32768;
     * p=40000: 32768 < p, so p itself. */
    ASSERT_EQ(s->vertices[0].max_parallelism, 128);
    ASSERT_EQ(s->vertices[1].max_parallelism, 256);
    ASSERT_EQ(s->vertices[2].max_parallelism, 32768);
    ASSERT_EQ(s->vertices[3].max_parallelism, 40000);
    ASSERT_EQ(s->vertices[0].n_inputs, 0);
    ASSERT(s->vertices[0].inputs == NULL);
    ASSERT(isnan(s->vertices[0].busy_avg));
    const struct core_vertex_in *b = &s->vertices[1];
    ASSERT_STR(b->slot_sharing_group, "g1");
    ASSERT(b->finished);
    ASSERT_EQ(b->n_inputs, 3);
    ASSERT_EQ(b->inputs[0].ship, CORE_SHIP_REBALANCE); /* absent ship */
    ASSERT_EQ(b->inputs[1].ship, CORE_SHIP_HASH);      /* case-insensitive */
    ASSERT_EQ(b->inputs[2].ship, CORE_SHIP_UNKNOWN);
    /* object form: missing min defaults to avg */
    ASSERT_DEQ(b->busy_min, 300);
    ASSERT_DEQ(b->busy_avg, 300);
    ASSERT_DEQ(b->busy_max, 900);
    ASSERT(isnan(s->vertices[2].busy_max)); /* null = absent */
    jsn_sample_deinit(&js);
    json_decref(body);
}

/* The same jsn_sample reused across requests of different sizes keeps pointers right. */
static void parse_reuses_buffers(void)
{
    struct jsn_sample js;
    jsn_sample_init(&js);
    struct jsn_err e;
    char big[16384];
    size_t n = (size_t)snprintf(big, sizeof big, "{\"vertices\": [");
    for (int i = 0; i < 40; i++)
        n += (size_t)snprintf(big + n, sizeof big - n,
                              "%s{\"id\": \"v%d\", \"parallelism\": %d, \"inputs\": "
                              "[{\"from\": \"v%d\"}, {\"from\": \"w%d\", \"ship\": \"FORWARD\"}]}",
                              i ? "," : "", i, i + 1, i, i);
    snprintf(big + n, sizeof big - n, "]}");
    const char *small = "{\"vertices\": [{\"id\": \"x\", \"parallelism\": 2,"
                        " \"inputs\": [{\"from\": \"y\"}]}]}";
    for (int round = 0; round < 2; round++) {
        json_t *b1 = load(small);
        ASSERT_EQ(jsn_parse_sample(b1, 0, &js, NULL, &e), 0);
        ASSERT_EQ(js.s.n_vertices, 1);
        ASSERT_STR(js.s.vertices[0].inputs[0].from, "y");
        json_decref(b1);

        json_t *b2 = load(big);
        ASSERT_EQ(jsn_parse_sample(b2, 0, &js, NULL, &e), 0);
        ASSERT_EQ(js.s.n_vertices, 40);
        for (int i = 0; i < 40; i++) {
            char id[16];
            snprintf(id, sizeof id, "w%d", i);
            ASSERT_EQ(js.s.vertices[i].parallelism, i + 1);
            ASSERT_EQ(js.s.vertices[i].n_inputs, 2);
            ASSERT_STR(js.s.vertices[i].inputs[1].from, id);
            ASSERT_EQ(js.s.vertices[i].inputs[1].ship, CORE_SHIP_FORWARD);
        }
        json_decref(b2);
    }
    jsn_sample_reset(&js);
    ASSERT_EQ(js.s.n_vertices, 0);
    jsn_sample_deinit(&js);
}

/* Parses body with vertex list `verts`; returns the error (rc in e->status, 0 = ok). */
static int parse_err(const char *text, struct jsn_err *e)
{
    json_t *body = load(text);
    if (!body)
        return -2;
    struct jsn_sample js;
    jsn_sample_init(&js);
    int rc = jsn_parse_sample(body, 0, &js, NULL, e);
    jsn_sample_deinit(&js);
    json_decref(body);
    return rc;
}

#define V0 "{\"id\": \"a\", \"parallelism\": 4}"

static void parse_rejects_bad_input(void)
{
    static const struct {
        const char *body, *field, *msg;
    } cases[] = {
        {"[]", "", "must be a JSON object"},
        {"{}", "vertices", "required"},
        {"{\"vertices\": null}", "vertices", "required"},
        {"{\"vertices\": []}", "vertices", "at least one"},
        {"{\"vertices\": {\"a\": 1}}", "vertices", "expected an array, got object"},
        {"{\"vertices\": [1]}", "vertices[0]", "expected an object, got integer"},
        {"{\"vertices\": [{\"parallelism\": 4}]}", "vertices[0].id", "required"},
        {"{\"vertices\": [{\"id\": 7, \"parallelism\": 4}]}", "vertices[0].id",
         "expected a string, got integer"},
        {"{\"vertices\": [{\"id\": \"\", \"parallelism\": 4}]}", "vertices[0].id", "1 to 128"},
        {"{\"vertices\": [{\"id\": \"a b\", \"parallelism\": 4}]}", "vertices[0].id", "1 to 128"},
        {"{\"vertices\": [{\"id\": \"a\"}]}", "vertices[0].parallelism", "required"},
        {"{\"vertices\": [" V0 ", {\"id\": \"b\", \"parallelism\": 0}]}", "vertices[1].parallelism",
         "must be >= 1, got 0"},
        {"{\"vertices\": [{\"id\": \"a\", \"parallelism\": -3}]}", "vertices[0].parallelism",
         "must be >= 1, got -3"},
        {"{\"vertices\": [{\"id\": \"a\", \"parallelism\": \"4\"}]}", "vertices[0].parallelism",
         "expected an integer, got string"},
        {"{\"vertices\": [{\"id\": \"a\", \"parallelism\": 4.5}]}", "vertices[0].parallelism",
         "expected an integer, got real"},
        {"{\"vertices\": [{\"id\": \"a\", \"parallelism\": 3000000000}]}",
         "vertices[0].parallelism", "must be <="},
        {"{\"vertices\": [{\"id\": \"a\", \"parallelism\": 200, \"max_parallelism\": 128}]}",
         "vertices[0].parallelism", "200 exceeds max_parallelism 128"},
        {"{\"vertices\": [{\"id\": \"a\", \"parallelism\": 2, \"max_parallelism\": 0}]}",
         "vertices[0].max_parallelism", "must be >= 1"},
        {"{\"vertices\": [{\"id\": \"a\", \"parallelism\": 2, \"partitions\": -1}]}",
         "vertices[0].partitions", "must be >= 0"},
        {"{\"vertices\": [{\"id\": \"a\", \"parallelism\": 2, \"finished\": \"yes\"}]}",
         "vertices[0].finished", "expected a boolean, got string"},
        {"{\"vertices\": [{\"id\": \"a\", \"parallelism\": 2, \"slot_sharing_group\": 1}]}",
         "vertices[0].slot_sharing_group", "expected a string"},
        {"{\"vertices\": [{\"id\": \"a\", \"parallelism\": 2, \"inputs\": \"b\"}]}",
         "vertices[0].inputs", "expected an array, got string"},
        {"{\"vertices\": [" V0 ", {\"id\": \"b\", \"parallelism\": 2, \"inputs\": [{}]}]}",
         "vertices[1].inputs[0].from", "required"},
        {"{\"vertices\": [" V0 ", {\"id\": \"b\", \"parallelism\": 2, \"inputs\": [\"a\"]}]}",
         "vertices[1].inputs[0]", "expected an object, got string"},
        {"{\"vertices\": [{\"id\": \"b\", \"parallelism\": 2, \"inputs\": [{\"from\": \"a\", "
         "\"ship\": 3}]}]}",
         "vertices[0].inputs[0].ship", "expected a string"},
        {"{\"vertices\": [{\"id\": \"a\", \"parallelism\": 2, \"metrics\": []}]}",
         "vertices[0].metrics", "expected an object, got array"},
        {"{\"vertices\": [{\"id\": \"a\", \"parallelism\": 2, \"metrics\": "
         "{\"busy_ms_per_s\": 1000.5}}]}",
         "vertices[0].metrics.busy_ms_per_s", "must be in [0, 1000], got 1000.5"},
        /* (a negative busy_ms_per_s is taken and counted as 0 by the core: README, The metrics
           request) */
        {"{\"vertices\": [{\"id\": \"a\", \"parallelism\": 2, \"metrics\": "
         "{\"busy_ms_per_s\": {\"min\": 700, \"avg\": 600, \"max\": 400}}}]}",
         "vertices[0].metrics.busy_ms_per_s.min", "700 is above max 400"},
        {"{\"vertices\": [{\"id\": \"a\", \"parallelism\": 2, \"metrics\": "
         "{\"busy_ms_per_s\": {\"min\": 100, \"avg\": 600, \"max\": 400}}}]}",
         "vertices[0].metrics.busy_ms_per_s.avg", "600 is outside [min 100, max 400]"},
        {"{\"at\": 1000, \"running_since\": 2000, \"vertices\": [" V0 "]}", "running_since",
         "2000 is later than at 1000"},
        {"{\"vertices\": [{\"id\": \"a\", \"parallelism\": 2, \"metrics\": "
         "{\"busy_ms_per_s\": {\"avg\": 500, \"max\": 1200}}}]}",
         "vertices[0].metrics.busy_ms_per_s.max", "must be in [0, 1000], got 1200"},
        {"{\"vertices\": [{\"id\": \"a\", \"parallelism\": 2, \"metrics\": "
         "{\"busy_ms_per_s\": {\"max\": 700}}}]}",
         "vertices[0].metrics.busy_ms_per_s.avg", "required"},
        {"{\"vertices\": [{\"id\": \"a\", \"parallelism\": 2, \"metrics\": "
         "{\"busy_ms_per_s\": \"800\"}}]}",
         "vertices[0].metrics.busy_ms_per_s", "expected a number or {min, avg, max}, got string"},
        {"{\"vertices\": [{\"id\": \"a\", \"parallelism\": 2, \"metrics\": "
         "{\"backpressured_ms_per_s\": 1001}}]}",
         "vertices[0].metrics.backpressured_ms_per_s", "must be in [0, 1000]"},
        {"{\"vertices\": [" V0 ", {\"id\": \"b\", \"parallelism\": 2, \"metrics\": "
         "{\"records_in\": \"12\"}}]}",
         "vertices[1].metrics.records_in", "expected a number, got string"},
        /* NaN and Infinity can only arrive as strings: the parser rejects the bare tokens */
        {"{\"vertices\": [" V0 ", {\"id\": \"b\", \"parallelism\": 2, \"metrics\": "
         "{\"records_in\": \"NaN\"}}]}",
         "vertices[1].metrics.records_in", "expected a number, got string"},
        {"{\"vertices\": [{\"id\": \"a\", \"parallelism\": 2, \"metrics\": "
         "{\"pending_records\": \"Infinity\"}}]}",
         "vertices[0].metrics.pending_records", "expected a number, got string"},
        {"{\"vertices\": [{\"id\": \"a\", \"parallelism\": 2, \"metrics\": "
         "{\"records_out\": -5}}]}",
         "vertices[0].metrics.records_out", "must be >= 0, got -5"},
        {"{\"vertices\": [{\"id\": \"a\", \"parallelism\": 2, \"metrics\": "
         "{\"records_out_per_s\": true}}]}",
         "vertices[0].metrics.records_out_per_s", "expected a number, got boolean"},
        {"{\"job_metrics\": {\"heap_used\": \"1 gb\"}, \"vertices\": [" V0 "]}",
         "job_metrics.heap_used", "expected a number, got string"},
        {"{\"job_metrics\": {\"gc_ms_per_s\": -1}, \"vertices\": [" V0 "]}",
         "job_metrics.gc_ms_per_s", "must be >= 0"},
        {"{\"job_metrics\": [], \"vertices\": [" V0 "]}", "job_metrics",
         "expected an object, got array"},
        {"{\"status\": 1, \"vertices\": [" V0 "]}", "status", "expected a string, got integer"},
        {"{\"at\": \"yesterday\", \"vertices\": [" V0 "]}", "at", "not an RFC 3339 date-time"},
        {"{\"at\": \"2025-13-01T00:00:00Z\", \"vertices\": [" V0 "]}", "at", "RFC 3339"},
        {"{\"at\": \"2025-02-29T00:00:00Z\", \"vertices\": [" V0 "]}", "at", "RFC 3339"},
        {"{\"at\": \"2025-11-29T24:00:00Z\", \"vertices\": [" V0 "]}", "at", "RFC 3339"},
        {"{\"at\": \"2025-11-29\", \"vertices\": [" V0 "]}", "at", "RFC 3339"},
        {"{\"at\": \"2025-11-29T10:00:00\", \"vertices\": [" V0 "]}", "at", "RFC 3339"},
        {"{\"at\": \"2025-11-29T10:00:00.Z\", \"vertices\": [" V0 "]}", "at", "RFC 3339"},
        {"{\"at\": \"2025-11-29T10:00:00+1:00\", \"vertices\": [" V0 "]}", "at", "RFC 3339"},
        {"{\"at\": \"2025-11-29T10:00:00Zjunk\", \"vertices\": [" V0 "]}", "at", "RFC 3339"},
        {"{\"at\": true, \"vertices\": [" V0 "]}", "at",
         "expected epoch milliseconds or an RFC 3339 string, got boolean"},
        {"{\"at\": 1.5, \"vertices\": [" V0 "]}", "at", "expected epoch milliseconds"},
        {"{\"at\": 253402300800000, \"vertices\": [" V0 "]}", "at", "outside years 0000-9999"},
        {"{\"running_since\": \"soon\", \"vertices\": [" V0 "]}", "running_since", "RFC 3339"},
        {"{\"config\": \"x=1\", \"vertices\": [" V0 "]}", "config",
         "expected an object, got string"},
        {"{\"config\": {\"k\": [1]}, \"vertices\": [" V0 "]}", "config.k",
         "expected a string or a number, got array"},
        {"{\"config\": {\"k\": null}, \"vertices\": [" V0 "]}", "config.k",
         "expected a string or a number, got null"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct jsn_err e;
        int rc = parse_err(cases[i].body, &e);
        if (rc != -1)
            fprintf(stderr, "  case %zu: %s\n", i, cases[i].body);
        ASSERT_EQ(rc, -1);
        ASSERT_EQ(e.status, 400);
        ASSERT_STR(e.code, "INVALID_ARGUMENT");
        if (strcmp(e.field, cases[i].field) != 0 || !strstr(e.message, cases[i].msg))
            fprintf(stderr, "  case %zu: %s\n", i, cases[i].body);
        ASSERT_STR(e.field, cases[i].field);
        ASSERT_CONTAINS(e.message, cases[i].msg);
        /* the message starts with the path it is about */
        ASSERT(strncmp(e.message, e.field, strlen(e.field)) == 0);
    }
}

static void parse_exact_message(void)
{
    struct jsn_err e;
    ASSERT_EQ(parse_err("{\"vertices\": [" V0 ", {\"id\": \"b\", \"parallelism\": 2, "
                        "\"metrics\": {\"records_in\": \"12\"}}]}",
                        &e),
              -1);
    ASSERT_STR(e.message, "vertices[1].metrics.records_in: expected a number, got string");
}

static void parse_id_length(void)
{
    char id[130], text[512];
    memset(id, 'x', 128);
    id[128] = '\0';
    snprintf(text, sizeof text, "{\"vertices\": [{\"id\": \"%s\", \"parallelism\": 1}]}", id);
    struct jsn_err e;
    ASSERT_EQ(parse_err(text, &e), 0); /* 128 characters: the limit */
    id[128] = 'x';
    id[129] = '\0';
    snprintf(text, sizeof text, "{\"vertices\": [{\"id\": \"%s\", \"parallelism\": 1}]}", id);
    ASSERT_EQ(parse_err(text, &e), -1);
    ASSERT_STR(e.field, "vertices[0].id");
    /* Flink's hex vertex ids and names with punctuation are fine */
    ASSERT_EQ(parse_err("{\"vertices\": [{\"id\": \"cbc357ccb763df2852fee8c4fc7d55f2\", "
                        "\"parallelism\": 1}, {\"id\": \"Source:_Kafka->Map(x)#1\", "
                        "\"parallelism\": 1}]}",
                        &e),
              0);
}

/* The JSON parser itself refuses NaN / Infinity literals, so they never reach the codec. */
static void parser_rejects_nonfinite_literals(void)
{
    json_error_t je;
    ASSERT(json_loads("{\"vertices\": [{\"id\": \"a\", \"parallelism\": NaN}]}", 0, &je) == NULL);
    ASSERT(json_loads("{\"at\": Infinity}", 0, &je) == NULL);
    ASSERT(json_loads("{\"at\": -Infinity}", 0, &je) == NULL);
    ASSERT(json_loads("{\"at\": 1e400}", 0, &je) == NULL); /* overflows to inf: refused */
}

static int64_t parse_at(const char *at_json)
{
    char text[256];
    snprintf(text, sizeof text, "{\"at\": %s, \"vertices\": [" V0 "]}", at_json);
    json_t *body = load(text);
    struct jsn_sample js;
    jsn_sample_init(&js);
    struct jsn_err e;
    int64_t at = jsn_parse_sample(body, 0, &js, NULL, &e) == 0 ? js.s.at : INT64_MIN;
    jsn_sample_deinit(&js);
    json_decref(body);
    return at;
}

/* What is normalized rather than refused (README, The metrics request: what is refused,
 * normalized and inferred). */
static void parse_normalizes(void)
{
    static const char *const running[] = {"\"RUNNING\"", "\"running\"", "\"Running\""};
    for (size_t i = 0; i < sizeof running / sizeof running[0]; i++) {
        char text[256];
        snprintf(text, sizeof text,
                 "{\"at\": 5000, \"running_since\": 5000, \"status\": %s, \"vertices\": "
                 "[{\"id\": \"a\", \"parallelism\": 2, \"metrics\": {\"busy_ms_per_s\": -5}}]}",
                 running[i]);
        json_t *body = load(text);
        struct jsn_sample js;
        jsn_sample_init(&js);
        struct jsn_err e;
        ASSERT_EQ(jsn_parse_sample(body, 0, &js, NULL, &e), 0);
        ASSERT(js.s.running);                /* RUNNING in any case */
        ASSERT_EQ(js.s.running_since, 5000); /* running since the sample itself: fine */
        /* a negative busy time is passed on: the core counts it as 0 and says so */
        ASSERT_DEQ(js.s.vertices[0].busy_avg, -5.0);
        jsn_sample_deinit(&js);
        json_decref(body);
    }
    /* figures rounded one by one may cross by up to 1 ms/s: avg is put back between them */
    json_t *body = load("{\"vertices\": [{\"id\": \"a\", \"parallelism\": 2, \"metrics\": "
                        "{\"busy_ms_per_s\": {\"min\": 555.556, \"avg\": 555.5561, "
                        "\"max\": 555.556}}}]}");
    struct jsn_sample js;
    jsn_sample_init(&js);
    struct jsn_err e;
    ASSERT_EQ(jsn_parse_sample(body, 0, &js, NULL, &e), 0);
    ASSERT_DEQ(js.s.vertices[0].busy_avg, 555.556);
    jsn_sample_deinit(&js);
    json_decref(body);
}

static void parse_times(void)
{
    /* 2025-11-29T10:00:00Z by hand: 1970..2024 is 55 years with 14 leap days (1972..2024),
     * 55*365 + 14 = 20089 days; Jan..Oct 2025 = 304 days, + 28 = 332; 20421 days * 86400 =
     * 1764374400 s; + 10 h = 1764410400 s -> 1764410400000 ms (the sample's `at`). */
    ASSERT_EQ(parse_at("\"2025-11-29T10:00:00Z\""), 1764410400000LL);
    ASSERT_EQ(parse_at("1764410400000"), 1764410400000LL);
    ASSERT_EQ(parse_at("1764410400000.0"), 1764410400000LL); /* an integral real */
    ASSERT_EQ(parse_at("\"2025-11-29t10:00:00z\""), 1764410400000LL);
    ASSERT_EQ(parse_at("\"2025-11-29 10:00:00Z\""), 1764410400000LL);
    /* 11:00:00.250 at +01:00 is 10:00:00.250Z */
    ASSERT_EQ(parse_at("\"2025-11-29T11:00:00.250+01:00\""), 1764410400250LL);
    /* 05:30 at -04:30 is 10:00Z */
    ASSERT_EQ(parse_at("\"2025-11-29T05:30:00-04:30\""), 1764410400000LL);
    /* fractions scale to ms; digits past ms are truncated */
    ASSERT_EQ(parse_at("\"2025-11-29T10:00:00.1Z\""), 1764410400100LL);
    ASSERT_EQ(parse_at("\"2025-11-29T10:00:00.123987Z\""), 1764410400123LL);
    ASSERT_EQ(parse_at("\"1970-01-01T00:00:00Z\""), 0);
    /* 2024 is a leap year, so 2024-01-01 is 20089 - 366 = 19723 days; Feb 29 is
     * 19723 + 31 (Jan) + 28 (Feb 1..28) = 19782 days */
    ASSERT_EQ(parse_at("\"2024-02-29T00:00:00Z\""), 19782LL * 86400000);
    ASSERT_EQ(parse_at("\"1969-12-31T23:59:59Z\""), -1000);
    ASSERT_EQ(parse_at("\"2000-02-29T00:00:00Z\""), 951782400000LL); /* 400-year leap */
    ASSERT_EQ(parse_at("\"1900-02-29T00:00:00Z\""), INT64_MIN);      /* not a leap year */
    ASSERT_EQ(parse_at("null"), 0);                                  /* absent: now_ms */
    /* Numbers in [1e8, 1e11) read as seconds (1973-03-03 to 5138) and are refused; as
     * milliseconds they would be 1970-01-02 to 1973-03-03. Either side of the range, and any
     * RFC 3339 string, stays milliseconds (README, The metrics request). */
    ASSERT_EQ(parse_at("1764410400"), INT64_MIN);
    ASSERT_EQ(parse_at("1764410400.0"), INT64_MIN);
    ASSERT_EQ(parse_at("100000000"), INT64_MIN);
    ASSERT_EQ(parse_at("99999999999"), INT64_MIN);
    ASSERT_EQ(parse_at("99999999"), 99999999LL);
    ASSERT_EQ(parse_at("100000000000"), 100000000000LL);
    ASSERT_EQ(parse_at("\"1971-06-01T00:00:00Z\""), 44582400000LL);
    ASSERT_EQ(parse_at("1764410400000000"), INT64_MIN); /* microseconds */
    struct jsn_err e;
    ASSERT_EQ(parse_err("{\"at\": 1764410400000, \"running_since\": 1764409800, "
                        "\"vertices\": [" V0 "]}",
                        &e),
              -1);
    ASSERT_STR(e.field, "running_since");
    ASSERT_STR(e.message, "running_since: 1764409800 reads as seconds since the epoch "
                          "(2025-11-29T09:50:00Z); epoch milliseconds are expected: "
                          "1764409800000");
}

static void config_reaches_opts(void)
{
    json_t *body = load("{\"config\": {\"job.autoscaler.utilization.target\": \"0.6\","
                        " \"job.autoscaler.vertex.max-parallelism\": 200,"
                        " \"job.autoscaler.utilization.max\": 0.85,"
                        " \"job.autoscaler.scaling.effectiveness.threshold\": 2.5e-7,"
                        " \"job.autoscaler.history.max.count\": 3.0,"
                        " \"job.autoscaler.scaling.enabled\": false},"
                        " \"vertices\": [" V0 "]}");
    struct jsn_sample js;
    jsn_sample_init(&js);
    struct jsn_err e;
    struct opt_job *opts = opt_job_new();
    ASSERT_EQ(jsn_parse_sample(body, 0, &js, opts, &e), 0);
    struct seen seen[] = {{.key = "job.autoscaler.utilization.target"},
                          {.key = "job.autoscaler.vertex.max-parallelism"},
                          {.key = "job.autoscaler.utilization.max"},
                          {.key = "job.autoscaler.scaling.effectiveness.threshold"},
                          {.key = "job.autoscaler.history.max.count"},
                          {.key = "job.autoscaler.scaling.enabled"},
                          {.key = NULL}};
    opt_job_each(opts, seen_cb, seen);
    ASSERT_STR(seen[0].value, "0.6");
    ASSERT_EQ(seen[0].layer, OPT_REQUEST);
    ASSERT_STR(seen[1].value, "200");  /* integer: no ".0" */
    ASSERT_STR(seen[2].value, "0.85"); /* shortest form, not 0.84999999999999998 */
    ASSERT_STR(seen[3].value, "2.5e-07");
    ASSERT_STR(seen[4].value, "3");
    ASSERT_STR(seen[5].value, "false");
    json_decref(body);
    opt_job_free(opts);

    /* opts == NULL: the config is checked for types but not applied */
    body = load("{\"config\": {\"a\": \"1\"}, \"vertices\": [" V0 "]}");
    ASSERT_EQ(jsn_parse_sample(body, 0, &js, NULL, &e), 0);
    json_decref(body);

    /* a refused value: 422 naming the key, the options module's message */
    opts = opt_job_new();
    body = load("{\"config\": {\"job.autoscaler.metrics.window\": \"x\"}, \"vertices\": [" V0 "]}");
    ASSERT_EQ(jsn_parse_sample(body, 0, &js, opts, &e), -1);
    ASSERT_EQ(e.status, 422);
    ASSERT_STR(e.code, "INVALID_ARGUMENT");
    ASSERT_STR(e.field, "config.job.autoscaler.metrics.window");
    ASSERT_CONTAINS(e.message, "job.autoscaler.metrics.window");
    json_decref(body);

    /* an otherwise bad request never touches opts */
    body = load("{\"config\": {\"job.autoscaler.utilization.target\": \"0.5\"}, "
                "\"vertices\": []}");
    ASSERT_EQ(jsn_parse_sample(body, 0, &js, opts, &e), -1);
    struct seen t[] = {{.key = "job.autoscaler.utilization.target"}, {.key = NULL}};
    opt_job_each(opts, seen_cb, t);
    ASSERT_EQ(t[0].layer, OPT_BUILTIN);
    json_decref(body);
    opt_job_free(opts);
    jsn_sample_deinit(&js);
}

/* ------------------------------------------------------------- render -- */

static char *dump(const json_t *j, size_t flags)
{
    return json_dumps(j, JSON_COMPACT | flags);
}

static void render_decision(void)
{
    struct core_decision d;
    core_decision_init(&d);
    d.at = 1764410400000LL;
    d.action = CORE_SCALE_UP;
    d.execute = true;
    d.reason = CORE_R_HIGH_BACKLOG;
    d.message = "source: lag";
    d.n_vertices = 2;
    d.vertices = core__alloc(&d, 2 * sizeof *d.vertices);
    struct core_vdecision *v = &d.vertices[0];
    v->id = "source";
    v->current = 4;
    v->raw_target = 7;
    v->target = 8;
    v->reason = CORE_R_HIGH_BACKLOG;
    v->constraints = CORE_C_CLAMPED_MAX_FACTOR | CORE_C_ALIGNED_TO_PARTITIONS;
    v->outside_bounds = true;
    v->ev = (struct core_evaluated){.load = 0.7,
                                    .true_processing_rate = 1714.286,
                                    .target_data_rate = 1200,
                                    .catch_up_data_rate = NAN,
                                    .lag = 5000,
                                    .scale_up_rate_threshold = 1203,
                                    .scale_down_rate_threshold = INFINITY,
                                    .expected_processing_rate = -INFINITY,
                                    .parallelism = 4,
                                    .max_parallelism = 128,
                                    .num_source_partitions = 8,
                                    .busy_max_avg_ratio = NAN,
                                    .hot_key_share = NAN,
                                    .key_rate_bound = INFINITY,
                                    .salting_fanout = NAN};
    v = &d.vertices[1];
    v->id = "agg";
    v->current = v->raw_target = v->target = 4;
    v->reason = CORE_R_KEY_PARALLELISM_LIMIT;
    v->constraints = CORE_C_CAPPED_BY_KEY_SKEW;
    v->excluded = true;
    v->message = "hot key";
    v->ev = (struct core_evaluated){.load = 0.8,
                                    .true_processing_rate = NAN,
                                    .target_data_rate = NAN,
                                    .catch_up_data_rate = NAN,
                                    .lag = NAN,
                                    .scale_up_rate_threshold = NAN,
                                    .scale_down_rate_threshold = NAN,
                                    .expected_processing_rate = NAN,
                                    .parallelism = 4,
                                    .max_parallelism = 128,
                                    .num_source_partitions = 0,
                                    .busy_max_avg_ratio = 1.9,
                                    .hot_key_share = 0.3,
                                    .key_rate_bound = 20000,
                                    .salting_fanout = 5};
    core__event(&d, "Normal", "ScalingReport", NULL, "Scaling %s", "source");
    core__event(&d, "Warning", "ScalingLimited", "k", "limited");
    d.events[1].count = 3;
    d.events[1].suppressed = true;
    d.n_config_changes = 1;
    d.config_changes = core__alloc(&d, sizeof *d.config_changes);
    d.config_changes[0] = (struct core_kv){"taskmanager.memory.process.size", "2 gb"};
    d.n_config_removals = 1;
    d.config_removals = core__alloc(&d, sizeof *d.config_removals);
    d.config_removals[0] = "taskmanager.memory.flink.size";

    json_t *j = jsn_render_decision(&d, "orders", "3f9c2a17", "b2e1");
    /* Printed as a response is (15 significant digits: 0.7, not 0.69999999999999996).
     * Non-finite figures are null; skew figures appear only when finite. */
    char *text = dump(j, JSON_REAL_PRECISION(15));
    ASSERT_STR(text,
               "{\"job\":\"orders\",\"at\":1764410400000,\"action\":\"SCALE_UP\",\"execute\":true,"
               "\"reason\":\"HIGH_BACKLOG\",\"message\":\"source: lag\","
               "\"parallelism\":{\"source\":8,\"agg\":4},"
               "\"vertices\":["
               "{\"id\":\"source\",\"current\":4,\"target\":8,\"raw_target\":7,"
               "\"reason\":\"HIGH_BACKLOG\","
               "\"constraints\":[\"CLAMPED_MAX_FACTOR\",\"ALIGNED_TO_PARTITIONS\"],"
               "\"excluded\":false,\"outside_bounds\":true,"
               "\"evaluated\":{\"load\":0.7,\"true_processing_rate\":1714.286,"
               "\"target_data_rate\":1200.0,\"catch_up_data_rate\":null,\"lag\":5000.0,"
               "\"scale_up_rate_threshold\":1203.0,\"scale_down_rate_threshold\":null,"
               "\"expected_processing_rate\":null,\"parallelism\":4.0,"
               "\"max_parallelism\":128.0,\"num_source_partitions\":8.0}},"
               "{\"id\":\"agg\",\"current\":4,\"target\":4,\"raw_target\":4,"
               "\"reason\":\"KEY_PARALLELISM_LIMIT\",\"constraints\":[\"CAPPED_BY_KEY_SKEW\"],"
               "\"excluded\":true,\"outside_bounds\":false,\"message\":\"hot key\","
               "\"evaluated\":{\"load\":0.8,\"true_processing_rate\":null,"
               "\"target_data_rate\":null,\"catch_up_data_rate\":null,\"lag\":null,"
               "\"scale_up_rate_threshold\":null,\"scale_down_rate_threshold\":null,"
               "\"expected_processing_rate\":null,\"parallelism\":4.0,"
               "\"max_parallelism\":128.0,\"num_source_partitions\":0.0,"
               "\"busy_max_avg_ratio\":1.9,\"hot_key_share\":0.3,\"key_rate_bound\":20000.0,"
               "\"salting_fanout\":5.0}}],"
               "\"events\":[{\"type\":\"Normal\",\"reason\":\"ScalingReport\","
               "\"message\":\"Scaling source\",\"count\":1,\"suppressed\":false},"
               "{\"type\":\"Warning\",\"reason\":\"ScalingLimited\",\"message\":\"limited\","
               "\"count\":3,\"suppressed\":true}],"
               "\"config_changes\":{\"taskmanager.memory.process.size\":\"2 gb\"},"
               "\"config_removals\":[\"taskmanager.memory.flink.size\"],"
               "\"policy_revision\":\"3f9c2a17\",\"config_hash\":\"b2e1\"}");
    free(text);
    json_decref(j);

    /* No changes, no removals, no events, a plugin message that is not UTF-8 */
    core_decision_reset(&d);
    d.reason = CORE_R_PLUGIN_ERROR;
    d.message = "freeze.lua:1: bad \xff byte";
    j = jsn_render_decision(&d, "j", NULL, NULL);
    text = dump(j, 0);
    ASSERT_STR(text, "{\"job\":\"j\",\"at\":0,\"action\":\"NO_CHANGE\",\"execute\":false,"
                     "\"reason\":\"PLUGIN_ERROR\",\"message\":\"freeze.lua:1: bad ? byte\","
                     "\"parallelism\":{},\"vertices\":[],\"events\":[],"
                     "\"policy_revision\":null,\"config_hash\":null}");
    free(text);
    json_decref(j);
    core_decision_deinit(&d);
}

static unsigned rnd(void)
{
    static unsigned seed = 11;
    seed = seed * 1103515245u + 12345u;
    return seed >> 8;
}

/* jansson's compact dump at 15 digits of the tree jsn_render_decision makes, with the
 * options' warnings last when given: what jsn_decision_text must print byte for byte. */
static char *tree_text(const struct core_decision *d, const char *job, const char *rev,
                       const char *hash, const char *const *warn, int n_warn)
{
    json_t *j = jsn_render_decision(d, job, rev, hash);
    if (warn) {
        json_t *w = json_array();
        for (int i = 0; i < n_warn; i++)
            json_array_append_new(w, json_string(warn[i]));
        json_object_set_new(j, "warnings", w);
    }
    char *t = dump(j, JSON_REAL_PRECISION(15));
    json_decref(j);
    return t;
}

/* The response printed directly is the tree's text, whatever the strings and figures: every
 * control character, quotes, UTF-8 and bytes that are not, repeated ids and keys, figures
 * rounded to 3 decimals (the printer's fast path) and any other double. */
static void decision_text_is_the_trees(void)
{
    static const char *const texts[] = {"plain",
                                        "",
                                        "q\"uo\\te",
                                        "tab\there\nnl\r\b\f\x01\x1f\x7f end",
                                        "caf\xc3\xa9 \xe2\x82\xac",
                                        "bad \xff byte",
                                        "\xc0\xaf overlong",
                                        "\xed\xa0\x80 surrogate",
                                        "\xf4\x90\x80\x80 big",
                                        "cut \xe2\x82",
                                        "slash / ok",
                                        "\xf0\x9f\x98\x80 4-byte"};
    static const char *const ids[] = {"source", "map", "agg", "sink", "map"};
    const int nt = (int)(sizeof texts / sizeof texts[0]);
    struct jsn_text t, r;
    jsn_text_init(&t);
    jsn_text_init(&r);
    struct core_decision d;
    core_decision_init(&d);
    for (int k = 0; k < 600; k++) {
        core_decision_reset(&d);
        d.at = (int64_t)rnd() * (k % 3 ? 1000 : -1);
        d.action = (enum core_action)(rnd() % 3);
        d.execute = rnd() % 2;
        d.reason = (enum core_reason)(rnd() % 4);
        d.message = rnd() % 5 ? texts[rnd() % (unsigned)nt] : NULL;
        d.n_vertices = (int)(rnd() % 6);
        d.vertices = core__alloc(&d, 6 * sizeof *d.vertices);
        for (int i = 0; i < d.n_vertices; i++) {
            struct core_vdecision *v = &d.vertices[i];
            memset(v, 0, sizeof *v);
            v->id = k % 7 == 0 ? texts[rnd() % (unsigned)nt] : ids[i];
            v->current = (int)(rnd() % 1000) - 5;
            v->raw_target = (int)rnd();
            v->target = -(int)(rnd() % 100);
            v->reason = (enum core_reason)(rnd() % 4);
            v->constraints = rnd() & ((1u << CORE_C__COUNT) - 1);
            v->excluded = rnd() % 2;
            v->outside_bounds = rnd() % 2;
            v->message = rnd() % 2 ? texts[rnd() % (unsigned)nt] : NULL;
            for (int f = 0; f < CORE_N_FIGURES; f++) {
                double x;
                switch (rnd() % 6) {
                case 0:
                    x = NAN;
                    break;
                case 1:
                    x = (rnd() % 2 ? 1 : -1) * INFINITY;
                    break;
                case 2: /* 3 decimals, as the core rounds */
                    x = ((double)rnd() - 8e6) / 1000.0 * (rnd() % 2 ? 1 : 1e6);
                    break;
                case 3:
                    x = ldexp((double)rnd() / (1 << 24), (int)(rnd() % 200) - 100);
                    break;
                case 4:
                    x = rnd() % 2 ? -0.0 : 0.0;
                    break;
                default:
                    x = (double)(rnd() % 100000);
                }
                *core_figure_at(&v->ev, f) = x;
            }
        }
        d.n_events = 0;
        for (int i = 0, n = (int)(rnd() % 4); i < n; i++)
            core__event(&d, i % 2 ? "Warning" : "Normal", texts[rnd() % (unsigned)nt], NULL, "%s",
                        texts[rnd() % (unsigned)nt]);
        d.n_config_changes = (int)(rnd() % 3);
        d.config_changes = core__alloc(&d, 3 * sizeof *d.config_changes);
        for (int i = 0; i < d.n_config_changes; i++)
            d.config_changes[i] = (struct core_kv){
                i == 2 ? "a.key" : (rnd() % 2 ? "a.key" : "b.key"), texts[rnd() % (unsigned)nt]};
        d.n_config_removals = (int)(rnd() % 3);
        d.config_removals = core__alloc(&d, 3 * sizeof *d.config_removals);
        for (int i = 0; i < d.n_config_removals; i++)
            d.config_removals[i] = texts[rnd() % (unsigned)nt];
        const char *warn[3] = {texts[rnd() % (unsigned)nt], texts[rnd() % (unsigned)nt], "w"};
        int n_warn = (int)(rnd() % 4);
        bool with_warn = rnd() % 2;
        const char *job = texts[rnd() % (unsigned)nt];
        const char *rev = rnd() % 4 ? "3f9c2a17" : NULL, *hash = rnd() % 4 ? "b2e1" : NULL;

        char *want = tree_text(&d, job, rev, hash, with_warn ? warn : NULL, n_warn);
        jsn_decision_text(&t, &d, job, rev, hash, with_warn, warn, n_warn);
        ASSERT_STR(t.b.p, want);
        ASSERT_EQ(t.b.n, strlen(want));
        /* Each vertex's constraints and evaluated texts, where the text says they are. */
        for (int i = 0; i < d.n_vertices; i++) {
            json_t *c = jsn_render_constraints(d.vertices[i].constraints);
            json_t *e = jsn_render_evaluated(&d.vertices[i].ev);
            char *cw = dump(c, 0), *ew = dump(e, JSON_REAL_PRECISION(15));
            ASSERT(t.vspan[i].constraints_len == strlen(cw) &&
                   memcmp(t.b.p + t.vspan[i].constraints, cw, strlen(cw)) == 0);
            ASSERT(t.vspan[i].evaluated_len == strlen(ew) &&
                   memcmp(t.b.p + t.vspan[i].evaluated, ew, strlen(ew)) == 0);
            free(cw);
            free(ew);
            json_decref(c);
            json_decref(e);
        }
        /* What the store keeps as JSON: the tree's members no row holds (core_dfields'
         * rest, and the warnings), in the tree's order; nothing when there are none. */
        json_t *tree = json_loads(want, 0, NULL), *rest = json_object(), *v;
        const char *key;
        json_object_foreach(tree, key, v)
        {
            bool kept = strcmp(key, "warnings") == 0;
            for (int i = 0; i < core_n_dfields; i++)
                kept |=
                    core_dfields[i].store == CORE_DS_REST && strcmp(core_dfields[i].name, key) == 0;
            if (kept)
                json_object_set(rest, key, v);
        }
        char *rest_want = json_object_size(rest) ? dump(rest, JSON_REAL_PRECISION(15)) : NULL;
        jsn_rest_text(&r, &d, with_warn, warn, n_warn);
        if (rest_want)
            ASSERT_STR(r.b.p, rest_want);
        else
            ASSERT_EQ(r.b.n, 0);
        free(rest_want);
        json_decref(rest);
        json_decref(tree);
        free(want);
    }
    core_decision_deinit(&d);
    jsn_text_deinit(&t);
    jsn_text_deinit(&r);
}

TEST_MAIN(TEST_ENTRY(parse_design_example), TEST_ENTRY(parse_defaults),
          TEST_ENTRY(parse_reuses_buffers), TEST_ENTRY(parse_rejects_bad_input),
          TEST_ENTRY(parse_exact_message), TEST_ENTRY(parse_id_length),
          TEST_ENTRY(parser_rejects_nonfinite_literals), TEST_ENTRY(parse_times),
          TEST_ENTRY(parse_normalizes), TEST_ENTRY(config_reaches_opts),
          TEST_ENTRY(render_decision), TEST_ENTRY(decision_text_is_the_trees))
