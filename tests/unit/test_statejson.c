/* Unit tests for statejson.c, the old JSON form of a job's state that migration 008 reads one
 * last time: what governor wrote in that form (tests/unit/data/state_json_*.json, written by
 * the last version that wrote it, from the states of states.h) reads back to the very same
 * state; a row from before migration 002 reads with the parts it lacks at their defaults; a
 * broken document is refused naming the spot, leaving the state empty (and, under ASan, leaking
 * nothing). */
#include <stdlib.h>

#include "test.h"

#include "core/core_int.h"
#include "store/statejson.h"
#include "states.h"
#include "testfile.h"

static void reads_what_was_written(void)
{
    struct core_state *want = rich_state(), *got = core_state_new();
    char err[256] = "";
    want->w.seq0 = 41;
    char *text = testfile_read(TESTFILE_DATA("state_json_rich.json"));
    ASSERT(text != NULL);
    int rc = statejson_read(text, got, err, sizeof err);
    if (rc)
        fprintf(stderr, "    %s\n", err);
    ASSERT_EQ(rc, 0);
    assert_same_state(got, want);
    free(text);
    core_state_free(want);

    want = core_state_new();
    fill_state(want);
    text = testfile_read(TESTFILE_DATA("state_json_odd.json"));
    ASSERT(text != NULL);
    ASSERT_EQ(statejson_read(text, got, err, sizeof err), 0);
    assert_same_state(got, want);
    ASSERT(signbit(wrow(&got->w, 0)->g.managed_used)); /* -0.0 */
    ASSERT_EQ(got->hist[0].e[0].at, INT64_MAX);
    ASSERT_STR(got->w.ids[1], "agg \"quoted\" \x1f");
    free(text);
    core_state_free(want);
    core_state_free(got);
}

/* A row from before migration 002: no sample numbers, nothing after the events. Samples are
 * numbered from 0, the window stabilizes from its running_since, its counters are unknown,
 * nothing is pending. Columns are read by name: unknown ones skipped, missing ones NaN. */
static void reads_a_row_from_before_002(void)
{
    const char *doc =
        "{\"version\":1,\"last_at\":5,\"window\":{\"running_since\":1,\"ids\":[\"a\"],"
        "\"parallelism\":[2],\"vmetrics\":[\"lag\",\"future\",\"load\"],\"gmetrics\":[],"
        "\"samples\":[{\"at\":3,\"g\":[],\"v\":[[7.5,1,\"Infinity\"]]}]},"
        "\"history\":[],\"tracking\":[],\"delayed\":[],\"events\":[],\"extra\":{}}";
    struct core_state *st = core_state_new();
    char err[256] = "";
    ASSERT_EQ(statejson_read(doc, st, err, sizeof err), 0);
    ASSERT_EQ(core_state_last_at(st), 5);
    ASSERT_EQ(core_state_seq0(st), 0);
    ASSERT_EQ(core_state_seq_end(st), 1);
    ASSERT_DEQ(wrow(&st->w, 0)->v[0].lag, 7.5);
    ASSERT_DEQ(wrow(&st->w, 0)->v[0].load, INFINITY);
    ASSERT(isnan(wrow(&st->w, 0)->v[0].rec_in));
    ASSERT(isnan(wrow(&st->w, 0)->g.heap_used));
    ASSERT_EQ(st->w.started_at, 1);
    ASSERT_EQ(st->w.full_from, INT64_MIN);
    ASSERT_EQ(st->w.topo_hash, 0);
    ASSERT(isnan(st->w.ctr[CORE_CTR_BUSY].sent));
    ASSERT_DEQ(st->w.ctr[CORE_CTR_BUSY].offset, 0.0);
    ASSERT_EQ(st->rejected, 0);
    ASSERT_EQ(st->pending.at, INT64_MIN);
    core_state_free(st);
}

/* Each broken document fails with a message naming the spot; the state is left empty. */
static void refuses_broken_documents(void)
{
#define W0                                                                                         \
    "\"window\":{\"running_since\":1,\"ids\":[],\"parallelism\":[],\"vmetrics\":[],"               \
    "\"gmetrics\":[],\"samples\":[]}"
#define REST "\"history\":[],\"tracking\":[],\"delayed\":[],\"events\":[]"
    static const struct {
        const char *doc, *msg;
    } cases[] = {
        {"{", "not JSON"},
        {"[]", "Expected object, got array"},
        {"{\"version\":2,\"last_at\":1," W0 "," REST "}", "version: unsupported state version 2"},
        {"{\"version\":1}", "last_at"},
        {"{\"version\":1,\"last_at\":\"x\"," W0 "," REST "}", "Expected integer, got string"},
        {"{\"version\":1,\"last_at\":1,\"window\":[]," REST "}", "Expected object, got array"},
        {"{\"version\":1,\"last_at\":1,\"window\":{\"running_since\":1,\"ids\":[\"a\",\"b\"],"
         "\"parallelism\":[1],\"vmetrics\":[],\"gmetrics\":[],\"samples\":[]}," REST "}",
         "window.parallelism: expected 2 entries"},
        {"{\"version\":1,\"last_at\":1,\"window\":{\"running_since\":1,\"ids\":[\"a\",3],"
         "\"parallelism\":[1,1],\"vmetrics\":[],\"gmetrics\":[],\"samples\":[]}," REST "}",
         "window.ids[1]: expected a string"},
        {"{\"version\":1,\"last_at\":1,\"window\":{\"running_since\":1,\"ids\":[\"a\"],"
         "\"parallelism\":[1],\"vmetrics\":[\"load\"],\"gmetrics\":[],\"samples\":["
         "{\"at\":1,\"g\":[],\"v\":[[0.5]]},{\"at\":2,\"g\":[],\"v\":[[\"nan\"]]}]}," REST "}",
         "window.samples[1].v[0]: expected a number, \"NaN\""},
        {"{\"version\":1,\"last_at\":1,\"window\":{\"running_since\":1,\"ids\":[\"a\"],"
         "\"parallelism\":[1],\"vmetrics\":[\"load\"],\"gmetrics\":[],\"samples\":["
         "{\"at\":1,\"g\":[],\"v\":[[0.5],[0.5]]}]}," REST "}",
         "window.samples[0]: expected 1 metric vectors"},
        {"{\"version\":1,\"last_at\":1," W0 ",\"history\":[{\"id\":\"a\",\"entries\":[{\"at\":1,"
         "\"current_parallelism\":1,\"new_parallelism\":2,\"true_processing_rate\":1,"
         "\"expected_processing_rate\":2,\"target_data_rate\":3},{\"at\":2}]}],"
         "\"tracking\":[],\"delayed\":[],\"events\":[]}",
         "history[0].entries[1]: Object item not found: current_parallelism"},
        {"{\"version\":1,\"last_at\":1," W0 ",\"history\":[],\"tracking\":[{\"at\":1,"
         "\"restart_ms\":1.5}],\"delayed\":[],\"events\":[]}",
         "tracking[0]: Expected integer, got real"},
        {"{\"version\":1,\"last_at\":1," W0 ",\"history\":[],\"tracking\":[],\"delayed\":[{\"id\":"
         "\"a\",\"first_trigger\":1,\"records\":[{\"at\":1,\"parallelism\":2,"
         "\"outside_bounds\":1}]}],\"events\":[]}",
         "delayed[0].records[0]: Expected true or false, got integer"},
        {"{\"version\":1,\"last_at\":1," W0 ",\"history\":[],\"tracking\":[],\"delayed\":[],"
         "\"events\":[{\"key\":\"k\",\"first_at\":1,\"last_at\":2,\"count\":1},{\"key\":null}]}",
         "events[1]: Expected string, got null"},
        {"{\"version\":1,\"last_at\":1,\"window\":{\"running_since\":1,\"ids\":[],"
         "\"parallelism\":[],\"vmetrics\":[],\"gmetrics\":[],\"samples\":[],"
         "\"topo_hash\":\"12\"}," REST "}",
         "window.topo_hash: expected 16 hex digits"},
        {"{\"version\":1,\"last_at\":1," W0 "," REST ",\"pending\":{\"at\":1,\"vertices\":"
         "[{\"id\":\"a\",\"from\":1}]}}",
         "pending.vertices[0]: Object item not found: to"},
    };
#undef W0
#undef REST
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct core_state *st = rich_state(); /* something to clear */
        char err[256] = "";
        ASSERT_EQ(statejson_read(cases[i].doc, st, err, sizeof err), -1);
        if (!strstr(err, cases[i].msg))
            fprintf(stderr, "    case %zu: %s\n", i, err);
        ASSERT_CONTAINS(err, cases[i].msg);
        ASSERT_EQ(st->w.n, 0);
        ASSERT_EQ(st->w.n_vertices, 0);
        ASSERT_EQ(st->n_hist, 0);
        ASSERT_EQ(st->n_events, 0);
        ASSERT_EQ(st->pending.n, 0);
        ASSERT_EQ(core_state_last_at(st), INT64_MIN);
        core_state_free(st);
    }
}

TEST_MAIN(TEST_ENTRY(reads_what_was_written), TEST_ENTRY(reads_a_row_from_before_002),
          TEST_ENTRY(refuses_broken_documents))
