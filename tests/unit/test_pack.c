/*
 * test_pack.c - the compact forms of stored history (store/pack.h): a request comes back as
 * the same text but for its whitespace, and shorter; evaluated figures come back byte for
 * byte, or are refused so that the text is kept; the figure list is the core's.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/core.h"
#include "decision/jsn.h"
#include "store/pack.h"
#include "test.h"

static char *roundtrip(const char *text, size_t *packed)
{
    unsigned char *b;
    size_t n;
    pack_input(text, strlen(text), &b, &n);
    char *t = pack_input_text(b, n);
    *packed = n;
    free(b);
    return t;
}

static void test_input_comes_back(void)
{
    static const char *const same[] = {
        "{\"at\":1764410400000,\"status\":\"RUNNING\",\"vertices\":[{\"id\":\"source\","
        "\"parallelism\":4,\"max_parallelism\":128,\"inputs\":[],\"metrics\":{\"busy_ms_per_s\":"
        "{\"min\":380,\"avg\":420.5,\"max\":470},\"records_in\":1e3}},{\"id\":\"agg\","
        "\"parallelism\":2,\"max_parallelism\":128,\"inputs\":[{\"from\":\"source\",\"ship\":"
        "\"HASH\"}],\"metrics\":{\"busy_ms_per_s\":880}}]}",
        "{\"config\":{\"job.autoscaler.utilization.target\":\"0.6\"},\"id\":\"a \\\" b\\\\\"}",
        "{\"x\":\"\\u00e9t\xc3\xa9 {\\\"id\\\":\\\"\"}",
        "{}",
    };
    for (size_t i = 0; i < sizeof same / sizeof same[0]; i++) {
        size_t n;
        char *t = roundtrip(same[i], &n);
        ASSERT_STR(t, same[i]);
        ASSERT(n <= strlen(same[i]) + 1);
        free(t);
    }
    size_t n;
    char *t = roundtrip(same[0], &n);
    ASSERT(n * 2 < strlen(same[0])); /* the names go */
    free(t);
    /* Whitespace outside strings goes, inside stays. */
    t = roundtrip(" {\n\t\"id\" : \"a  b\" ,\r\n \"x\": [ 1 , 2 ] } ", &n);
    ASSERT_STR(t, "{\"id\":\"a  b\",\"x\":[1,2]}");
    free(t);
    /* A byte of the code range (not valid JSON, but kept) is stored as it is. */
    t = roundtrip("{\"id\":\"a\x01\"}", &n);
    ASSERT_STR(t, "{\"id\":\"a\x01\"}");
    free(t);
    ASSERT(pack_input_text("\x07xyz", 4) == NULL); /* an unknown form */
    ASSERT(pack_input_text("", 0) == NULL);
}

static void test_figures_exact_or_refused(void)
{
    static const char *const exact[] = {
        "{\"load\":0.47,\"true_processing_rate\":1000.0,\"target_data_rate\":1000.0,"
        "\"catch_up_data_rate\":500.0,\"lag\":null,\"scale_up_rate_threshold\":1500.0,"
        "\"scale_down_rate_threshold\":null,\"expected_processing_rate\":null,"
        "\"parallelism\":4.0,\"max_parallelism\":128.0,\"num_source_partitions\":32.0}",
        "{\"load\":0.92,\"busy_max_avg_ratio\":1.045,\"key_rate_bound\":1e20}",
        "{\"salting_fanout\":2.0}",
        "{}",
    };
    for (size_t i = 0; i < sizeof exact / sizeof exact[0]; i++) {
        char *f = pack_figures(exact[i]);
        ASSERT(f != NULL);
        char *t = pack_figures_text(f);
        ASSERT_STR(t, exact[i]);
        ASSERT(i > 0 || strlen(f) * 3 < strlen(exact[i]));
        free(t);
        free(f);
    }
    char *f = pack_figures(exact[1]);
    ASSERT_STR(f, "[0.92,false,false,false,false,false,false,false,false,false,false,1.045,"
                  "false,1e20]");
    free(f);
    static const char *const refused[] = {
        "{\"lag\":1,\"load\":2}",  /* out of order */
        "{\"load\": 2}",           /* spacing */
        "{\"unknown\":1}",         /* a name outside the list */
        "{\"load\":\"1\"}",        /* not a number */
        "{\"load\":1,\"load\":1}", /* twice */
        "{\"load\":true}",         "{\"load\":1", "[1]", "",
    };
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        f = pack_figures(refused[i]);
        if (f)
            fprintf(stderr, "    accepted %s as %s\n", refused[i], f);
        ASSERT(f == NULL);
        free(f);
    }
    ASSERT(pack_figures(NULL) == NULL);
}

/* Every evaluated text the decision service writes packs exactly: the list is the core's. */
static void test_names_are_the_cores(void)
{
    int n = 0;
    while (pack_figure_names[n])
        n++;
    ASSERT_EQ(n, CORE_N_FIGURES);
    for (int i = 0; i < n && i < CORE_N_FIGURES; i++)
        ASSERT_STR(pack_figure_names[i], core_figures[i].name);
    struct core_evaluated ev;
    for (int mask = 0; mask < 64; mask++) {
        core_evaluated_clear(&ev);
        for (int i = 0; i < CORE_N_FIGURES; i++)
            if ((mask >> (i % 6)) & 1)
                *core_figure_at(&ev, i) = i == 3 ? INFINITY : 1000.0 / (i + 3) + mask;
        char *text = jsn_evaluated_text(&ev);
        char *f = pack_figures(text);
        ASSERT(f != NULL);
        char *back = f ? pack_figures_text(f) : NULL;
        ASSERT_STR(back, text);
        free(back);
        free(f);
        free(text);
    }
}

TEST_MAIN(TEST_ENTRY(test_input_comes_back), TEST_ENTRY(test_figures_exact_or_refused),
          TEST_ENTRY(test_names_are_the_cores))
