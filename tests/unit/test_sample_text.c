/*
 * test_sample_text.c - the decide body read without a tree (decision/sample_text.h) takes a
 * body only when jsn_parse_sample takes the same sample from it: on every body of the decision
 * cases' traces, and on bodies made to differ from a plain one in each way a client may write
 * one (member order, spacing, numbers as reals or with exponents, nulls, unknown members,
 * duplicates, escapes, options of its own, limits, values out of range, malformed JSON), the
 * two readers are run; where the fast one reads a sample, the tree reads one too, number for
 * number (the samples' codec rows, bit for bit) and layout for layout. The plain bodies must be
 * read by the fast one, or the server would never use it.
 */
#include <dirent.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/codec.h"
#include "decision/sample_text.h"
#include "options/options.h"
#include "test.h"

static const struct opt_limits LIMITS = {.vertices = 4, .edges = 4, .config_keys = 10};

/* The tree's sample of body (0), or -1 when it refuses it, into js; *tree holds the strings
 * the sample borrows (the caller releases it after the comparison). */
static int tree_read(const char *body, struct jsn_sample *js, json_t **tree)
{
    json_t *j = *tree = json_loads(body, JSON_REJECT_DUPLICATES, NULL);
    struct jsn_err e;
    js->limits = &LIMITS;
    return j && json_is_object(j) && jsn_parse_sample(j, 5, js, NULL, &e) == 0 ? 0 : -1;
}

/* Bodies the fast reader read otherwise than the tree. */
static int g_wrong;

/* Runs both readers on body: the fast one must read only what the tree reads, as it does
 * (g_wrong counts those it did not). Returns whether the fast one read it. */
static bool both(const char *body)
{
    struct jsn_sample fast, tree;
    struct sample_text st = {0};
    jsn_sample_init(&fast);
    jsn_sample_init(&tree);
    fast.limits = &LIMITS;
    int f = sample_text_read(body, strlen(body), 5, &fast, &st);
    json_t *j;
    int t = tree_read(body, &tree, &j);
    if (f == 0 && (t != 0 || !core_codec_sample_same(&fast.s, &tree.s))) {
        fprintf(stderr, "  %s: %s\n", t ? "the tree refuses" : "different samples from", body);
        g_wrong++;
    }
    sample_text_deinit(&st);
    jsn_sample_deinit(&fast);
    jsn_sample_deinit(&tree);
    json_decref(j);
    return f == 0;
}

/* Every line of every decision case's trace (tests/cases/<case>/trace.jsonl). */
static void test_case_traces(void)
{
    DIR *d = opendir("tests/cases");
    ASSERT(d != NULL);
    struct dirent *e;
    int lines = 0, fast = 0;
    while (d && (e = readdir(d))) {
        char path[512], *line = NULL;
        size_t cap = 0;
        snprintf(path, sizeof path, "tests/cases/%s/trace.jsonl", e->d_name);
        FILE *f = fopen(path, "r");
        if (!f)
            continue;
        while (getline(&line, &cap, f) > 0) {
            if (line[0] != '{')
                continue;
            lines++;
            fast += both(line);
        }
        free(line);
        fclose(f);
    }
    if (d)
        closedir(d);
    printf("  %d trace lines, %d read without a tree\n", lines, fast);
    ASSERT_EQ(g_wrong, 0);
    ASSERT(lines > 100);
    ASSERT(fast * 10 >= lines * 9); /* the plain bodies clients send */
}

#define PLAIN                                                                                      \
    "{\"at\":1764410400000,\"running_since\":1764406800000,\"status\":\"RUNNING\",\"vertices\":"   \
    "[{\"id\":\"source\",\"parallelism\":4,\"max_parallelism\":128,\"partitions\":32,"             \
    "\"inputs\":[],\"metrics\":{\"busy_ms_per_s\":{\"min\":380,\"avg\":420,\"max\":470},"          \
    "\"backpressured_ms_per_s\":0,\"pending_records\":900000,\"records_in\":19990000,"             \
    "\"records_out\":19990000,\"records_in_per_s\":1000}},{\"id\":\"agg\",\"parallelism\":2,"      \
    "\"inputs\":[{\"from\":\"source\",\"ship\":\"HASH\"}],\"metrics\":{\"busy_ms_per_s\":880.5,"   \
    "\"records_in\":1.999e7,\"records_out\":1999000}}]}"

/* PLAIN with its first occurrence of `from` replaced by `to`. */
static char *variant(const char *from, const char *to)
{
    const char *p = strstr(PLAIN, from);
    if (!p)
        return NULL;
    size_t a = (size_t)(p - PLAIN), n = strlen(PLAIN) - strlen(from) + strlen(to);
    char *s = malloc(n + 1);
    memcpy(s, PLAIN, a);
    memcpy(s + a, to, strlen(to));
    strcpy(s + a + strlen(to), p + strlen(from));
    return s;
}

static void test_variants(void)
{
    ASSERT(both(PLAIN));
    /* {from, to, whether the fast reader must take it} */
    static const struct {
        const char *from, *to;
        int fast;
    } v[] = {
        {"{\"at\"", " \n\t{ \"at\" ", 1},
        {"\"status\":\"RUNNING\"", "\"status\":\"running\"", 1},
        {"\"status\":\"RUNNING\"", "\"status\":\"FAILED\"", 1},
        {"\"status\":\"RUNNING\"", "\"status\":\"RUNNING_NOT\"", 1},
        {"\"status\":\"RUNNING\"", "\"status\":\"RESTARTING-A-VERY-LONG-STATUS\"", 1},
        {"\"status\":\"RUNNING\"", "\"mode\":\"streaming\"", 1},
        {"\"status\":\"RUNNING\"", "\"mode\":\"BATCH\"", 0},
        {"\"status\":\"RUNNING\"", "\"mode\":\"OTHER\"", 0},
        {"\"status\":\"RUNNING\"", "\"job\":\"orders\"", 1},
        /* a member governor does not know: the tree's, which lists it in the warnings */
        {"\"status\":\"RUNNING\"", "\"job\":\"orders\",\"n\":-1.5e3,\"ok\":true", 0},
        {"\"partitions\":32", "\"name\":\"Source: orders\"", 1},
        {"\"partitions\":32", "\"paralelism\":4", 0},
        {"\"status\":\"RUNNING\"", "\"job\":\"a\",\"job\":\"b\"", 0},
        {"\"status\":\"RUNNING\"", "\"status\":null", 0},
        {"\"status\":\"RUNNING\"", "\"config\":{\"job.autoscaler.utilization.target\":\"0.6\"}", 0},
        {"\"status\":\"RUNNING\"", "\"job_metrics\":{\"heap_used\":1e9,\"gc_ms_per_s\":3.25}", 1},
        {"\"status\":\"RUNNING\"", "\"job_metrics\":{\"heap_used\":-1}", 0},
        {"\"status\":\"RUNNING\"", "\"x\":{\"nested\":1}", 0},
        {"\"status\":\"RUNNING\"", "\"x\":\"caf\\u00e9\"", 0},
        {"\"at\":1764410400000", "\"at\":\"2025-11-29T10:00:00Z\"", 0},
        {"\"at\":1764410400000", "\"at\":1764410400000.0", 0},
        {"\"at\":1764410400000", "\"at\":1764410400", 0},
        {"\"at\":1764410400000", "\"at\":1764410400000000", 0},
        {"\"at\":1764410400000,\"running_since\":1764406800000", "\"at\":-5,\"running_since\":-9",
         1},
        {"\"at\":1764410400000,", "", 0}, /* running_since is after the clock at 5 */
        {"\"running_since\":1764406800000", "\"running_since\":1764410400001", 0},
        {"\"running_since\":1764406800000,", "", 1},
        {"\"id\":\"source\"", "\"id\":\"so urce\"", 0},
        {"\"id\":\"source\"", "\"id\":\"s\\\"ource\"", 0},
        {"\"id\":\"source\"", "\"id\":\"\"", 0},
        {"\"parallelism\":4", "\"parallelism\":4.0", 0},
        {"\"parallelism\":4", "\"parallelism\":0", 0},
        {"\"parallelism\":4", "\"parallelism\":200", 0},
        {"\"parallelism\":4,", "", 0},
        {"\"max_parallelism\":128,", "", 1},
        {"\"max_parallelism\":128", "\"max_parallelism\":128,\"max_parallelism\":64", 0},
        {"\"partitions\":32", "\"partitions\":-1", 0},
        {"\"partitions\":32", "\"slot_sharing_group\":\"g1\",\"finished\":false", 1},
        {"\"partitions\":32", "\"finished\":true", 1},
        {"\"partitions\":32", "\"finished\":1", 0},
        {"\"inputs\":[]", "\"inputs\":[{\"from\":\"agg\"}]", 1},
        {"\"inputs\":[]", "\"inputs\":[{\"from\":\"agg\",\"ship\":\"WEIRD\"}]", 1},
        {"\"inputs\":[]", "\"inputs\":[{\"ship\":\"HASH\"}]", 0},
        {"\"inputs\":[]",
         "\"inputs\":[{\"from\":\"a\"},{\"from\":\"b\"},{\"from\":\"c\"},"
         "{\"from\":\"d\"},{\"from\":\"e\"}]",
         0},
        {"{\"min\":380,\"avg\":420,\"max\":470}", "{\"avg\":420}", 1},
        {"{\"min\":380,\"avg\":420,\"max\":470}", "{\"min\":380,\"max\":470}", 0},
        {"{\"min\":380,\"avg\":420,\"max\":470}", "{\"min\":470.5,\"avg\":470,\"max\":470}", 1},
        {"{\"min\":380,\"avg\":420,\"max\":470}", "{\"min\":480,\"avg\":470,\"max\":470}", 0},
        {"{\"min\":380,\"avg\":420,\"max\":470}", "{\"min\":380,\"avg\":470.8,\"max\":470}", 1},
        {"{\"min\":380,\"avg\":420,\"max\":470}", "{\"min\":380,\"avg\":475,\"max\":470}", 0},
        {"{\"min\":380,\"avg\":420,\"max\":470}", "-20", 1},
        {"{\"min\":380,\"avg\":420,\"max\":470}", "1000.5", 0},
        {"\"backpressured_ms_per_s\":0", "\"backpressured_ms_per_s\":1001", 0},
        {"\"backpressured_ms_per_s\":0", "\"backpressured_ms_per_s\":-0", 1},
        {"\"backpressured_ms_per_s\":0", "\"backpressured_ms_per_s\":-0.0", 1},
        {"\"pending_records\":900000", "\"pending_records\":9e5", 1},
        {"\"pending_records\":900000", "\"pending_records\":1e400", 0},
        {"\"pending_records\":900000", "\"pending_records\":1e-400", 1},
        {"\"pending_records\":900000", "\"pending_records\":123456789012345678901", 0},
        {"\"pending_records\":900000", "\"pending_records\":null", 0},
        {"\"pending_records\":900000", "\"pending_records\":01", 0},
        {"\"records_in_per_s\":1000", "\"records_in_per_s\":1000,\"extra\":\"x\"", 0},
        {"\"records_in_per_s\":1000", "\"records_in_per_s\":1000,", 0},
        {"]}", "],\"a\":1,\"b\":2,\"c\":3,\"d\":4,\"e\":5,\"f\":6,\"g\":7,\"h\":8,\"i\":9}", 0},
        {"]}", "]} x", 0},
        {"]}", "]}  \n", 1},
        {"]}", "]", 0},
    };
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        char *b = variant(v[i].from, v[i].to);
        ASSERT(b != NULL);
        if (!b)
            continue;
        bool f = both(b);
        if (f != (v[i].fast == 1))
            fprintf(stderr, "  variant %zu: read %s a tree, expected %s: %s\n", i,
                    f ? "without" : "with", v[i].fast ? "without" : "with", b);
        ASSERT_EQ(f, v[i].fast == 1);
        free(b);
    }
    ASSERT(!both(""));
    ASSERT(!both("[]"));
    ASSERT(!both("{}"));
    ASSERT(!both("{\"vertices\":[]}"));
    ASSERT_EQ(g_wrong, 0);
}

TEST_MAIN(TEST_ENTRY(test_case_traces), TEST_ENTRY(test_variants))
