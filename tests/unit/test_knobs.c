/*
 * test_knobs.c - Dataflow's knobs (README, Next to a Flink job, or under KEDA): each
 * governor.dataflow.* option sets the options it stands for in its own layer, a mapped option set
 * in the same layer wins, a higher layer wins whichever spelling it uses, each effective value says
 * which knob set it, ranges are checked naming the key, and a knob of a decision's overlay maps in
 * the overlay's layer.
 */
#include <stdlib.h>
#include <string.h>

#include "options/options.h"
#include "test.h"

/* The effective value of key, its layer and its knob, via opt_job_each_via. */
struct found {
    const char *key;
    char value[128], via[128];
    enum opt_layer layer;
    int n;
};

static void found_cb(void *ud, const char *key, const char *value, enum opt_layer layer,
                     const char *via)
{
    struct found *f = ud;
    if (strcmp(key, f->key) != 0)
        return;
    snprintf(f->value, sizeof f->value, "%s", value ? value : "");
    snprintf(f->via, sizeof f->via, "%s", via ? via : "");
    f->layer = layer;
    f->n++;
}

static struct found eff(const struct opt_job *j, const char *key)
{
    struct found f = {.key = key};
    opt_job_each_via(j, found_cb, &f);
    return f;
}

static int set(struct opt_job *j, enum opt_layer l, const char *k, const char *v)
{
    char *e = NULL;
    int rc = opt_job_set(j, l, k, v, &e);
    if (rc < 0)
        fprintf(stderr, "  set %s = %s: %s\n", k, v, e);
    free(e);
    return rc;
}

static void each_knob_sets_what_it_stands_for(void)
{
    struct opt_job *j = opt_job_new();
    struct core_config c;
    char *e = NULL;
    ASSERT_EQ(set(j, OPT_JOB, "taskmanager.numberOfTaskSlots", "4"), 0);
    ASSERT_EQ(set(j, OPT_JOB, "governor.dataflow.max-num-workers", "10"), 0);
    ASSERT_EQ(set(j, OPT_JOB, "governor.dataflow.min-num-workers", "2"), 0);
    ASSERT_EQ(set(j, OPT_JOB, "governor.dataflow.worker-utilization-hint", "0.6"), 0);
    ASSERT_EQ(set(j, OPT_JOB, "governor.dataflow.max-backlog", "2 min"), 0);
    ASSERT_EQ(opt_job_resolve(j, &c, &e), 0);
    free(e);
    ASSERT_EQ(c.vertex_max_parallelism, 40);
    ASSERT_EQ(c.vertex_min_parallelism, 8);
    ASSERT_EQ(c.batch.max_workers, 10);
    ASSERT_EQ(c.batch.min_workers, 2);
    ASSERT_DEQ(c.util_target, 0.6);
    ASSERT_EQ(c.catch_up_ms, 120000);
    ASSERT(c.enabled);
    struct found f = eff(j, "job.autoscaler.vertex.max-parallelism");
    ASSERT_EQ(f.n, 1);
    ASSERT_STR(f.value, "40");
    ASSERT_STR(f.via, "governor.dataflow.max-num-workers");
    ASSERT_EQ(f.layer, OPT_JOB);
    f = eff(j, "governor.slo.lag");
    ASSERT_STR(f.value, "2 min");
    ASSERT_STR(f.via, "governor.dataflow.max-backlog");
    f = eff(j, "governor.batch.min-workers");
    ASSERT_STR(f.value, "2");
    ASSERT_STR(f.via, "governor.dataflow.min-num-workers");
    /* the knob itself is listed as set, with no via */
    f = eff(j, "governor.dataflow.max-num-workers");
    ASSERT_STR(f.value, "10");
    ASSERT_STR(f.via, "");
    /* an option no knob touched has no via */
    f = eff(j, "job.autoscaler.metrics.window");
    ASSERT_STR(f.via, "");
    /* slots changed later: the product follows */
    ASSERT_EQ(set(j, OPT_REQUEST, "taskmanager.numberOfTaskSlots", "2"), 0);
    ASSERT_EQ(opt_job_resolve(j, &c, NULL), 0);
    ASSERT_EQ(c.vertex_max_parallelism, 20);
    /* NONE turns the autoscaler off, THROUGHPUT_BASED on (any case) */
    ASSERT_EQ(set(j, OPT_JOB, "governor.dataflow.autoscaling-algorithm", "NONE"), 0);
    ASSERT_EQ(opt_job_resolve(j, &c, NULL), 0);
    ASSERT(!c.enabled);
    ASSERT_EQ(set(j, OPT_JOB, "governor.dataflow.autoscaling-algorithm", "throughput_based"), 0);
    ASSERT_EQ(opt_job_resolve(j, &c, NULL), 0);
    ASSERT(c.enabled);
    opt_job_free(j);
}

static void mapped_option_in_the_same_layer_wins(void)
{
    struct opt_job *j = opt_job_new();
    struct core_config c;
    ASSERT_EQ(set(j, OPT_JOB, "governor.dataflow.max-num-workers", "10"), 0);
    ASSERT_EQ(set(j, OPT_JOB, "job.autoscaler.vertex.max-parallelism", "7"), 0);
    ASSERT_EQ(opt_job_resolve(j, &c, NULL), 0);
    ASSERT_EQ(c.vertex_max_parallelism, 7);
    ASSERT_EQ(c.batch.max_workers, 10); /* the other option it maps onto is still set */
    struct found f = eff(j, "job.autoscaler.vertex.max-parallelism");
    ASSERT_STR(f.via, "");
    /* set first or last: the same */
    struct opt_job *k = opt_job_new();
    ASSERT_EQ(set(k, OPT_JOB, "job.autoscaler.vertex.max-parallelism", "7"), 0);
    ASSERT_EQ(set(k, OPT_JOB, "governor.dataflow.max-num-workers", "10"), 0);
    ASSERT_EQ(opt_job_resolve(k, &c, NULL), 0);
    ASSERT_EQ(c.vertex_max_parallelism, 7);
    opt_job_free(k);
    /* a knob in a higher layer wins over the option in a lower one, and the other way round */
    ASSERT_EQ(set(j, OPT_REQUEST, "governor.dataflow.max-num-workers", "3"), 0);
    ASSERT_EQ(opt_job_resolve(j, &c, NULL), 0);
    ASSERT_EQ(c.vertex_max_parallelism, 3);
    f = eff(j, "job.autoscaler.vertex.max-parallelism");
    ASSERT_EQ(f.layer, OPT_REQUEST);
    ASSERT_STR(f.via, "governor.dataflow.max-num-workers");
    opt_job_clear_layer(j, OPT_REQUEST);
    ASSERT_EQ(set(j, OPT_SERVER, "governor.dataflow.worker-utilization-hint", "0.5"), 0);
    ASSERT_EQ(set(j, OPT_JOB, "job.autoscaler.utilization.target", "0.8"), 0);
    ASSERT_EQ(opt_job_resolve(j, &c, NULL), 0);
    ASSERT_DEQ(c.util_target, 0.8);
    /* clearing the layer the knob was set in removes what it mapped */
    opt_job_clear_layer(j, OPT_JOB);
    ASSERT_EQ(opt_job_resolve(j, &c, NULL), 0);
    ASSERT_DEQ(c.util_target, 0.5);
    ASSERT_EQ(c.vertex_max_parallelism, 200);
    opt_job_free(j);
}

static void ranges_are_checked_naming_the_key(void)
{
    struct opt_job *j = opt_job_new();
    char *e = NULL;
    struct core_config c;
    static const char *const bad[][2] = {
        {"governor.dataflow.max-num-workers", "0"},
        {"governor.dataflow.min-num-workers", "-1"},
        {"governor.dataflow.max-num-workers", "two"},
        {"governor.dataflow.worker-utilization-hint", "0.95"},
        {"governor.dataflow.worker-utilization-hint", "0.05"},
        {"governor.dataflow.max-backlog", "500 ms"},
        {"governor.dataflow.max-backlog", "4000 d"},
        {"governor.dataflow.autoscaling-algorithm", "BASIC"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ASSERT_EQ(opt_job_set(j, OPT_JOB, bad[i][0], bad[i][1], &e), -1);
        ASSERT(strncmp(e, bad[i][0], strlen(bad[i][0])) == 0);
        free(e);
        e = NULL;
    }
    /* the ends of each range are allowed */
    ASSERT_EQ(set(j, OPT_JOB, "governor.dataflow.worker-utilization-hint", "0.1"), 0);
    ASSERT_EQ(set(j, OPT_JOB, "governor.dataflow.worker-utilization-hint", "0.9"), 0);
    ASSERT_EQ(set(j, OPT_JOB, "governor.dataflow.max-backlog", "1 s"), 0);
    ASSERT_EQ(set(j, OPT_JOB, "governor.dataflow.max-backlog", "3650 d"), 0);
    /* more minimum workers than maximum ones: refused at resolve, naming the knob */
    ASSERT_EQ(set(j, OPT_JOB, "governor.dataflow.max-num-workers", "3"), 0);
    ASSERT_EQ(set(j, OPT_JOB, "governor.dataflow.min-num-workers", "5"), 0);
    ASSERT_EQ(opt_job_resolve(j, &c, &e), -1);
    ASSERT_CONTAINS(e, "governor.dataflow.");
    free(e);
    e = NULL;
    /* a product that does not fit the option: refused naming the knob */
    ASSERT_EQ(set(j, OPT_JOB, "governor.dataflow.min-num-workers", "1"), 0);
    ASSERT_EQ(set(j, OPT_JOB, "taskmanager.numberOfTaskSlots", "8"), 0);
    ASSERT_EQ(set(j, OPT_JOB, "governor.dataflow.max-num-workers", "2000000000"), 0);
    ASSERT_EQ(opt_job_resolve(j, &c, &e), -1);
    ASSERT_CONTAINS(e, "governor.dataflow.max-num-workers: sets job.autoscaler.vertex.max-");
    free(e);
    opt_job_free(j);
}

static void clone_keeps_what_knobs_set(void)
{
    struct opt_job *j = opt_job_new();
    struct core_config c;
    ASSERT_EQ(set(j, OPT_SERVER, "governor.dataflow.max-num-workers", "6"), 0);
    struct opt_job *k = opt_job_clone(j);
    opt_job_free(j);
    ASSERT_EQ(opt_job_resolve(k, &c, NULL), 0);
    ASSERT_EQ(c.vertex_max_parallelism, 6);
    ASSERT_STR(eff(k, "job.autoscaler.vertex.max-parallelism").via,
               "governor.dataflow.max-num-workers");
    opt_job_free(k);
}

static void hash_follows_the_knobs(void)
{
    struct opt_job *a = opt_job_new(), *b = opt_job_new();
    char ha[17], hb[17];
    opt_job_hash(a, ha);
    ASSERT_EQ(set(b, OPT_JOB, "governor.dataflow.max-backlog", "1 min"), 0);
    opt_job_hash(b, hb);
    ASSERT(strcmp(ha, hb) != 0);
    opt_job_free(a);
    opt_job_free(b);
}

TEST_MAIN(TEST_ENTRY(each_knob_sets_what_it_stands_for),
          TEST_ENTRY(mapped_option_in_the_same_layer_wins),
          TEST_ENTRY(ranges_are_checked_naming_the_key), TEST_ENTRY(clone_keeps_what_knobs_set),
          TEST_ENTRY(hash_follows_the_knobs))
