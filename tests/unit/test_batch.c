/* Unit tests for core/batch.c: the batch rule and the rebalancing advice (core/README.md,
 * Batch and Rebalance). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test.h"

#include "core/core.h"
#include "core/state.h"
#include "options/options.h"

#define T0 1764410400000LL /* the run's start */

static struct core_batch_config defaults(void)
{
    struct core_config cfg;
    opt_config_defaults(&cfg);
    return cfg.batch;
}

/* One running stage of `total` bytes with `done` done. */
static struct core_batch_stage stage(double total, double done)
{
    return (struct core_batch_stage){.id = "read",
                                     .state = CORE_BATCH_RUNNING,
                                     .total = total,
                                     .done = done,
                                     .busy_s = NAN,
                                     .remaining_parallelism = NAN,
                                     .fixed_shards = NAN};
}

static struct core_batch_in pool(int workers, const struct core_batch_stage *st, int n)
{
    return (struct core_batch_in){
        .workers = workers, .slots_per_worker = 1, .cpu = 0.6, .stages = st, .n_stages = n};
}

static void defaults_are_the_table(void)
{
    struct core_batch_config c = defaults();
    ASSERT_EQ(c.min_workers, 1);
    ASSERT_EQ(c.max_workers, 2000);
    ASSERT_EQ(c.worker_overhead_ms, 60000);
    ASSERT_DEQ(c.speed_weight, 4.0);
    ASSERT_DEQ(c.dead_band, 0.15);
    ASSERT_DEQ(c.max_scale_up, 2.0);
    ASSERT_EQ(c.scale_down_confirmations, 2);
    ASSERT_EQ(c.change_interval_ms, 30000);
    ASSERT_DEQ(c.idle_cpu, 0.05);
}

/* 4 TB at 25 MB/s per worker: W = 4e12 / 25e6 = 160,000 worker-seconds;
 * sqrt(4 x 160000 / 60) = sqrt(10666.7) = 103.28, rounded up: 104. */
static void worked_example_raw(void)
{
    ASSERT_EQ(core_batch_raw_workers(4e12 / 25e6, 4, 60), 104);
    /* the window of W that gives 104: (159135, 162240] */
    ASSERT_EQ(core_batch_raw_workers(159135.0, 4, 60), 103);
    ASSERT_EQ(core_batch_raw_workers(159135.1, 4, 60), 104);
    ASSERT_EQ(core_batch_raw_workers(162240.0, 4, 60), 104);
    ASSERT_EQ(core_batch_raw_workers(162240.1, 4, 60), 105);
    /* binary units would give 109: 4 TiB / 25 MB/s = 175,922 worker-seconds */
    ASSERT_EQ(core_batch_raw_workers(4.0 * 1099511627776.0 / 25e6, 4, 60), 109);
}

/* The README's batch request: 10 workers for 30 s read 7.5 GB, so a byte costs 300 / 7.5e9
 * worker-seconds (25 MB/s per worker) and the 3.9925 TB left are 159,700 worker-seconds. */
static void worked_example_first_decision(void)
{
    struct core_batch_config c = defaults();
    struct core_batch_state st;
    struct core_batch_decision d;
    struct core_batch_stage s[2] = {stage(4e12, 7.5e9), stage(0, 0)};
    s[1].state = CORE_BATCH_PENDING;
    s[1].id = "write";
    s[1].fixed_shards = 8;
    struct core_batch_in in = pool(10, s, 2);
    in.slots_per_worker = 4;
    core_batch_state_init(&st);
    core_batch_decide(&st, &in, T0 + 30000, T0, true, &c, &d);
    ASSERT_NEAR(d.remaining_worker_seconds, 159700, 1e-6);
    ASSERT_EQ(d.raw, 104);
    ASSERT_EQ(d.target, 104);
    ASSERT_EQ(d.action, CORE_SCALE_UP);
    ASSERT(d.execute);
    ASSERT_EQ(d.reason, CORE_R_HIGH_BACKLOG);
    ASSERT_EQ(d.constraints, 0u);
    ASSERT_NEAR(d.worker_seconds_spent, 300, 1e-9);
    ASSERT_NEAR(d.eta_s, 159700.0 / 104, 1e-9);
    core_batch_state_reset(&st);
}

static void raw_edges(void)
{
    ASSERT_EQ(core_batch_raw_workers(0, 4, 60), 0);
    ASSERT_EQ(core_batch_raw_workers(-5, 4, 60), 0);
    ASSERT_EQ(core_batch_raw_workers(NAN, 4, 60), 0);
    ASSERT_EQ(core_batch_raw_workers(1, 4, 60), 1);
    ASSERT_EQ(core_batch_raw_workers(1e300, 4, 60), 2147483647);
    /* exact squares: W = 15 k^2 gives k, not k + 1 */
    for (int k = 1; k <= 3000; k++)
        ASSERT_EQ(core_batch_raw_workers(15.0 * k * k, 4, 60), k);
    /* a hair above the square: k + 1 */
    ASSERT_EQ(core_batch_raw_workers(15.0 * 100 * 100 + 1, 4, 60), 101);
}

/* Monotone and sub-linear over W from 1 to 2,000,000 worker-seconds: twice the work never
 * more than twice the workers, four times the work about twice, and from W = 60 on twice the
 * work strictly fewer than twice the workers. */
static void sweep_monotone_sublinear(void)
{
    int prev = 0, steps = 0;
    for (double w = 1; w <= 2e6; w *= 1.001, steps++) {
        int n = core_batch_raw_workers(w, 4, 60);
        ASSERT(n >= prev);
        int n2 = core_batch_raw_workers(2 * w, 4, 60);
        ASSERT(n2 <= 2 * n);
        if (w >= 60)
            ASSERT(n2 < 2 * n);
        ASSERT(core_batch_raw_workers(4 * w, 4, 60) <= 2 * n);
        prev = n;
    }
    ASSERT(steps > 10000);
    ASSERT_EQ(core_batch_raw_workers(2e6, 4, 60), 366);
    /* The whole decision too (first decision, defaults): monotone in W. */
    struct core_batch_config c = defaults();
    prev = 0;
    for (double w = 1; w <= 2e6; w *= 1.05) {
        struct core_batch_state st;
        struct core_batch_decision d;
        /* 10 workers for 100 s did 1000 units: 1 worker-second a unit */
        struct core_batch_stage s = stage(1000 + w, 1000);
        struct core_batch_in in = pool(10, &s, 1);
        core_batch_state_init(&st);
        core_batch_decide(&st, &in, T0 + 100000, T0, true, &c, &d);
        ASSERT(d.target >= prev);
        prev = d.target;
        core_batch_state_reset(&st);
    }
}

static void caps_and_limits(void)
{
    struct core_batch_config c = defaults();
    struct core_batch_state st;
    struct core_batch_decision d;
    struct core_batch_stage s = stage(4e12, 7.5e9);
    struct core_batch_in in = pool(10, &s, 1);
    in.slots_per_worker = 4;
    s.remaining_parallelism = 150; /* 150 parts, 4 slots a worker: 38 workers */
    core_batch_state_init(&st);
    core_batch_decide(&st, &in, T0 + 30000, T0, true, &c, &d);
    ASSERT_EQ(d.raw, 104);
    ASSERT_EQ(d.target, 38);
    ASSERT_EQ(d.reason, CORE_R_UNSPLITTABLE_WORK);
    ASSERT_EQ(d.constraints, (unsigned)CORE_BC_CAPPED_AT_SPLITTABLE_PARTS);
    s.fixed_shards = 20; /* 20 shards, 4 slots a worker: 5 workers (from 2) */
    in.workers = 2;
    core_batch_state_reset(&st);
    core_batch_decide(&st, &in, T0 + 30000, T0, true, &c, &d);
    ASSERT_EQ(d.target, 5);
    ASSERT_EQ(d.constraints, (unsigned)CORE_BC_CAPPED_AT_FIXED_SHARDS);
    s.fixed_shards = s.remaining_parallelism = NAN;
    in.workers = 10;
    c.max_workers = 50;
    core_batch_state_reset(&st);
    core_batch_decide(&st, &in, T0 + 30000, T0, true, &c, &d);
    ASSERT_EQ(d.target, 50);
    ASSERT_EQ(d.reason, CORE_R_LIMIT_REACHED);
    ASSERT_EQ(d.constraints, (unsigned)CORE_BC_CLAMPED_MAX_WORKERS);
    c = defaults();
    c.min_workers = 200;
    core_batch_state_reset(&st);
    core_batch_decide(&st, &in, T0 + 30000, T0, true, &c, &d);
    ASSERT_EQ(d.target, 200);
    ASSERT_EQ(d.constraints, (unsigned)CORE_BC_CLAMPED_MIN_WORKERS);
    core_batch_state_reset(&st);
}

/* Nothing done yet: no cost measured, the pool is held. */
static void nothing_measured(void)
{
    struct core_batch_config c = defaults();
    struct core_batch_state st;
    struct core_batch_decision d;
    struct core_batch_stage s = stage(4e12, 0);
    struct core_batch_in in = pool(10, &s, 1);
    core_batch_state_init(&st);
    core_batch_decide(&st, &in, T0 + 30000, T0, true, &c, &d);
    ASSERT_EQ(d.reason, CORE_R_COLLECTING_METRICS);
    ASSERT_EQ(d.target, 10);
    ASSERT(!d.execute);
    core_batch_decide(&st, &in, T0 + 60000, T0, false, &c, &d);
    ASSERT_EQ(d.reason, CORE_R_JOB_NOT_RUNNING);
    core_batch_state_reset(&st);
}

/* A stage that reports its busy time: its cost is busy / done, whatever the pool did. */
static void busy_time_sets_the_cost(void)
{
    struct core_batch_config c = defaults();
    struct core_batch_state st;
    struct core_batch_decision d;
    struct core_batch_stage s = stage(1000, 100);
    s.busy_s = 1500; /* 15 worker-seconds a unit: 900 units left = 13,500 */
    struct core_batch_in in = pool(10, &s, 1);
    core_batch_state_init(&st);
    core_batch_decide(&st, &in, T0 + 30000, T0, true, &c, &d);
    ASSERT_NEAR(d.remaining_worker_seconds, 13500, 1e-9);
    ASSERT_EQ(d.raw, 30); /* sqrt(4 x 13500 / 60) = 30 exactly */
    core_batch_state_reset(&st);
}

/* Later decisions: scale-ups at most double, the dead band, one change per 30 s, the
 * scale-down confirmed twice, never while the last stage finishes. */
static void later_decisions(void)
{
    struct core_batch_config c = defaults();
    struct core_batch_state st;
    struct core_batch_decision d;
    /* 1 worker-second a unit: 10 workers, 100 s, 1000 units */
    struct core_batch_stage s = stage(1e6, 1000);
    struct core_batch_in in = pool(10, &s, 1);
    core_batch_state_init(&st);
    core_batch_decide(&st, &in, T0 + 100000, T0, true, &c, &d);
    ASSERT_EQ(d.target, 259); /* ceil(sqrt(4 x 999000 / 60)) = ceil(258.07) */
    /* 10 run and more work appeared: the 259 asked for have not had time to start (core/README.md,
     * Batch: this was answered 10 -> 20, undoing the pool before its workers could arrive) */
    s.total = 2e6;
    s.done = 1000 + 10 * 60.0;
    core_batch_decide(&st, &in, T0 + 160000, T0, true, &c, &d);
    ASSERT_EQ(d.current, 259);
    ASSERT_EQ(d.running, 10);
    ASSERT_EQ(d.target, 259);
    ASSERT(!d.execute);
    ASSERT(d.constraints & CORE_BC_HELD_WORKERS_STARTING);
    /* worker-startup (3 min) later the client still runs 10: it did not apply 259; from 10,
     * now at most double */
    s.done += 10 * 121.0;
    core_batch_decide(&st, &in, T0 + 281000, T0, true, &c, &d);
    ASSERT_EQ(d.current, 10);
    ASSERT_EQ(d.target, 20);
    ASSERT_EQ(d.constraints, (unsigned)CORE_BC_CLAMPED_SCALE_UP);
    /* 10 s later another change is held */
    in.workers = 20;
    s.done += 10 * 20.0;
    core_batch_decide(&st, &in, T0 + 291000, T0, true, &c, &d);
    ASSERT_EQ(d.target, 20);
    ASSERT(!d.execute);
    ASSERT(d.constraints & CORE_BC_HELD_CHANGE_INTERVAL);
    /* within 15%: no change */
    struct core_batch_state st2;
    struct core_batch_stage s2 = stage(1e6, 1000);
    struct core_batch_in in2 = pool(250, &s2, 1);
    core_batch_state_init(&st2);
    core_batch_decide(&st2, &in2, T0 + 4000, T0, true, &c, &d);
    ASSERT_EQ(d.raw, 259);
    ASSERT_EQ(d.target, 250);
    ASSERT_EQ(d.reason, CORE_R_WITHIN_TARGET);
    ASSERT_EQ(d.constraints, (unsigned)CORE_BC_WITHIN_DEAD_BAND);

    /* scale-down: 100 workers, a small remainder (one stage pending: not the last) */
    struct core_batch_stage s3[2] = {stage(3000, 1000), stage(0, 0)};
    s3[1].state = CORE_BATCH_PENDING;
    s3[1].id = "write";
    struct core_batch_in in3 = pool(100, s3, 2);
    core_batch_state_reset(&st2);
    core_batch_decide(&st2, &in3, T0 + 10000, T0, true, &c, &d); /* first: 1 ws a unit */
    ASSERT_EQ(d.raw, 12);
    ASSERT_EQ(d.target, 100);
    ASSERT_EQ(d.reason, CORE_R_SCALE_DOWN_DELAYED);
    ASSERT(d.constraints & CORE_BC_HELD_FOR_CONFIRMATION);
    s3[0].done = 1000 + 100 * 31;
    s3[0].total = s3[0].done + 2400; /* W = 2400: ceil(sqrt(160)) = 13 */
    core_batch_decide(&st2, &in3, T0 + 41000, T0, true, &c, &d);
    ASSERT_EQ(d.target, 13); /* the larger of 12 and 13 */
    ASSERT_EQ(d.action, CORE_SCALE_DOWN);
    ASSERT_EQ(d.reason, CORE_R_LOW_BACKLOG);

    /* the last stage finishing: never down */
    struct core_batch_stage s4 = stage(100000, 95000);
    struct core_batch_in in4 = pool(100, &s4, 1);
    core_batch_state_reset(&st2);
    for (int k = 1; k <= 3; k++) {
        core_batch_decide(&st2, &in4, T0 + 950000 + 31000 * k, T0, true, &c, &d);
        ASSERT_EQ(d.target, 100);
        ASSERT(d.constraints & CORE_BC_HELD_LAST_STAGE);
    }
    /* ... unless the parts left cap the pool: the workers beyond them are idle for sure */
    s4.remaining_parallelism = 3;
    core_batch_state_reset(&st2);
    core_batch_decide(&st2, &in4, T0 + 981000, T0, true, &c, &d);
    ASSERT_EQ(d.target, 100);
    ASSERT(d.constraints & CORE_BC_HELD_FOR_CONFIRMATION);
    core_batch_decide(&st2, &in4, T0 + 1012000, T0, true, &c, &d);
    ASSERT_EQ(d.target, 3);
    ASSERT_EQ(d.reason, CORE_R_UNSPLITTABLE_WORK);
    ASSERT(d.execute);
    /* shuffle data on the workers: never down */
    in3.shuffle_on_workers = true;
    core_batch_state_reset(&st2);
    for (int k = 1; k <= 3; k++) {
        core_batch_decide(&st2, &in3, T0 + 31000 * k, T0, true, &c, &d);
        ASSERT_EQ(d.target, 100);
        ASSERT(d.constraints & CORE_BC_HELD_SHUFFLE_ON_WORKERS);
    }
    /* idle CPU: held */
    in.cpu = 0.01;
    core_batch_state_reset(&st);
    core_batch_decide(&st, &in, T0 + 100000, T0, true, &c, &d);
    ASSERT_EQ(d.target, in.workers);
    ASSERT(d.constraints & CORE_BC_HELD_IDLE_CPU);
    core_batch_state_reset(&st);
    core_batch_state_reset(&st2);
}

/* A noisy progress signal: the work done per sample varies by +-30% around 25 MB/s per
 * worker; the dead band and the confirmations keep the changes few. */
/* The changes of a run to the end (-1: it did not end). */
static int noisy_run(const struct core_batch_config *cfg)
{
    struct core_batch_config c = *cfg;
    struct core_batch_state st;
    struct core_batch_decision d;
    struct core_batch_stage s = stage(4e12, 0);
    struct core_batch_in in = pool(10, &s, 1);
    unsigned seed = 7;
    int changes = 0, samples = 0;
    core_batch_state_init(&st);
    for (int64_t t = 30000; s.done < s.total && samples < 2000; t += 30000, samples++) {
        seed = seed * 1103515245u + 12345u;
        double noise = 0.7 + 0.6 * ((seed >> 16) & 0x7fff) / 32767.0;
        s.done += in.workers * 30 * 25e6 * noise;
        if (s.done > s.total)
            s.done = s.total;
        core_batch_decide(&st, &in, T0 + t, T0, true, &c, &d);
        if (d.execute) {
            changes++;
            in.workers = d.target;
        }
    }
    core_batch_state_reset(&st);
    return s.done >= s.total ? changes : -1;
}

static void noisy_progress_few_changes(void)
{
    struct core_batch_config c = defaults();
    int kept = noisy_run(&c);
    c.dead_band = 0;
    c.scale_down_confirmations = 1;
    c.change_interval_ms = 0;
    int naive = noisy_run(&c);
    printf("noisy progress: %d changes (%d without dead band and confirmations)\n", kept, naive);
    /* the pool follows sqrt(W) down as the work drains: a change per 15% of it, no more */
    ASSERT(kept >= 1);
    ASSERT(kept <= 12);
    ASSERT(kept * 3 < naive);
}

/* ---------------------------------------------------------- closed loops -- */

/* How a client reports its pool (core/README.md, Batch): the workers running as `current`, the pool
 * it requested as `current`, or both in `running` and `requested`. */
enum report { REPORT_RUNNING, REPORT_REQUESTED, REPORT_BOTH };

/* A pool that applies every executed decision: requested workers start `startup_s` after
 * the request, removed ones stop at once; each running worker reads 25 MB/s of `total`
 * bytes. Samples every 30 s. Returns the finish in seconds (-1: not within 6 h) and fills
 * pools[] with the pool requested after each decision (n_pools of them). */
static int closed_loop(enum report how, double total, int startup_s, int *pools, int *n_pools,
                       int *max_running)
{
    struct core_batch_config c = defaults();
    struct core_batch_state st;
    struct core_batch_decision d;
    struct core_batch_stage s = stage(total, 0);
    int requested = 10, running = 10, ready_at = 0, finish = -1;
    *n_pools = 0;
    *max_running = running;
    core_batch_state_init(&st);
    for (int t = 30; t <= 6 * 3600; t += 30) {
        /* the interval's work, by the workers that ran in it */
        for (int u = t - 30; u < t; u++) {
            if (u >= ready_at)
                running = requested;
            s.done += running * 25e6;
        }
        if (s.done >= s.total) {
            s.done = s.total;
            finish = t;
            break;
        }
        *max_running = running > *max_running ? running : *max_running;
        struct core_batch_in in = pool(how == REPORT_REQUESTED ? requested : running, &s, 1);
        if (how == REPORT_BOTH) {
            in.has_running = in.has_requested = true;
            in.running = running;
            in.requested = requested;
            in.workers = requested;
        }
        core_batch_decide(&st, &in, T0 + (int64_t)t * 1000, T0, true, &c, &d);
        if (d.execute) {
            if (d.target > requested)
                ready_at = t + startup_s;
            else
                running = d.target < running ? d.target : running;
            requested = d.target;
            pools[(*n_pools)++] = requested;
        }
    }
    core_batch_state_reset(&st);
    return finish;
}

/* The README's 4 TB backfill driven in a closed loop whose new workers take 90 s to start,
 * with the client reporting its pool each of the three ways: every one converges. The first
 * decision asks for 104; no later one undoes it before the workers could arrive (the client
 * reporting its running workers was answered 10 -> 102 -> 20), none counts workers not yet
 * running as working (the client reporting its requested pool was answered 102 -> 204 -> 351),
 * and the pool then only shrinks as the work drains (sqrt of the work left), never below half
 * of itself in one step. 4e12 / 25e6 = 160,000 worker-seconds: at 104 workers 1,538 s, and
 * a pool that follows sqrt(W) down takes up to twice that (dW/dt = -k sqrt(W)). */
static void closed_loop_pools_converge(void)
{
    static const char *const names[] = {"running", "requested", "both"};
    for (int how = REPORT_RUNNING; how <= REPORT_BOTH; how++) {
        int pools[800], n, most;
        int finish = closed_loop((enum report)how, 4e12, 90, pools, &n, &most);
        printf("client reporting %s: finish %d s, %d changes:", names[how], finish, n);
        for (int i = 0; i < n && i < 12; i++)
            printf(" %d", pools[i]);
        printf(", most running %d\n", most);
        ASSERT(finish > 0 && finish < 3200);
        ASSERT(n >= 1 && n <= 12);
        ASSERT_EQ(pools[0], 104);
        ASSERT(most <= 110);
        for (int i = 1; i < n; i++) {
            ASSERT(pools[i] <= pools[i - 1]);
            ASSERT(2 * pools[i] >= pools[i - 1]);
        }
    }
}

/* A second splittable stage after a long first one is charged its own work only (core/README.md,
 * Batch): 8 workers read 4 TB for 20,000 s (the pool held at 8 by max-workers), then `write` has 1
 * TB at 25 MB/s per worker, W = 40,000 worker-seconds, about ceil(sqrt(4 x 40000 / 60)) = 52
 * workers, reached in doublings from 8 (16, 32, 52) as the client applies them (workers start
 * in 90 s). Charged the run's 160,000 worker-seconds it went 8 -> 16 -> 32 -> 64 -> 128 ->
 * 232. The pool then shrinks as the work drains. */
static void second_stage_charged_its_own_work(void)
{
    struct core_batch_config c = defaults();
    struct core_batch_state st;
    struct core_batch_decision d;
    struct core_batch_stage s[2] = {stage(4e12, 0), stage(1e12, 0)};
    s[1].id = "write";
    s[1].state = CORE_BATCH_PENDING;
    int requested = 8, running = 8, ready_at = 0, most = 0, first = 0;
    c.max_workers = 8;
    core_batch_state_init(&st);
    for (int t = 30; t <= 30000 && s[1].done < s[1].total; t += 30) {
        for (int u = t - 30; u < t; u++) {
            if (u >= ready_at)
                running = requested;
            struct core_batch_stage *on = s[0].done < s[0].total ? &s[0] : &s[1];
            on->done = fmin(on->total, on->done + running * 25e6);
        }
        if (s[0].done >= s[0].total && s[0].state == CORE_BATCH_RUNNING) {
            ASSERT_EQ(t, 20010); /* 4e12 / (8 x 25e6) = 20,000 s, seen at the next sample */
            s[0].state = CORE_BATCH_DONE;
            s[1].state = CORE_BATCH_RUNNING;
            c.max_workers = 2000;
        }
        struct core_batch_in in = pool(requested, s, 2);
        in.has_running = in.has_requested = true;
        in.running = running;
        in.requested = requested;
        core_batch_decide(&st, &in, T0 + (int64_t)t * 1000, T0, true, &c, &d);
        if (s[1].state == CORE_BATCH_RUNNING && !first && !isnan(d.remaining_worker_seconds)) {
            first = t;
            ASSERT(d.remaining_worker_seconds < 41000);
            ASSERT(d.raw >= 50 && d.raw <= 53);
        }
        if (d.execute) {
            if (d.target > requested)
                ready_at = t + 90;
            else
                running = d.target < running ? d.target : running;
            requested = d.target;
            most = requested > most ? requested : most;
        }
    }
    printf("second stage: most %d workers, done by %s\n", most,
           s[1].done >= s[1].total ? "the end" : "never");
    ASSERT(first > 0);
    ASSERT(s[1].done >= s[1].total);
    ASSERT(most >= 45 && most <= 56);
    core_batch_state_reset(&st);
}

/* Progress that goes back is a warning, not new work (core/README.md, Batch): the cost stays what
 * it was (the README's 104, not 335), and the stage's progress is taken as its most. */
static void progress_back_is_a_warning(void)
{
    struct core_batch_config c = defaults();
    struct core_batch_state st;
    struct core_batch_decision d;
    struct core_batch_stage s = stage(4e12, 7.5e9);
    struct core_batch_in in = pool(10, &s, 1);
    core_batch_state_init(&st);
    core_batch_decide(&st, &in, T0 + 30000, T0, true, &c, &d);
    ASSERT_EQ(d.target, 104);
    ASSERT_EQ(d.n_warnings, 0);
    in.workers = 104;
    s.done = 7.5e9 - 5e9; /* reads 2.5 GB now */
    core_batch_decide(&st, &in, T0 + 60000, T0, true, &c, &d);
    ASSERT_EQ(d.n_warnings, 1);
    ASSERT_STR(d.warnings[0].reason, "ProgressWentBack");
    ASSERT(strstr(d.warnings[0].message, "read: work_done went back from 7500000000 to "
                                         "2500000000") == d.warnings[0].message);
    ASSERT(d.raw <= 104); /* no new work: W did not grow */
    ASSERT(!d.execute || d.target <= 104);
    core_batch_state_reset(&st);
}

/* A job with no work left is not LIMIT_REACHED (core/README.md, Batch): WITHIN_TARGET, the pool
 * kept while the job finishes, and the same when every stage is DONE. */
static void no_work_left(void)
{
    struct core_batch_config c = defaults();
    struct core_batch_state st;
    struct core_batch_decision d;
    struct core_batch_stage s = stage(4e12, 4e12);
    struct core_batch_in in = pool(40, &s, 1);
    core_batch_state_init(&st);
    core_batch_decide(&st, &in, T0 + 4000000, T0, true, &c, &d);
    ASSERT_EQ(d.reason, CORE_R_WITHIN_TARGET);
    ASSERT_EQ(d.action, CORE_NO_CHANGE);
    ASSERT_EQ(d.target, 40);
    ASSERT(!d.execute);
    ASSERT(strstr(d.message, "no work left") == d.message);
    s.state = CORE_BATCH_DONE;
    core_batch_decide(&st, &in, T0 + 4030000, T0, true, &c, &d);
    ASSERT_EQ(d.reason, CORE_R_WITHIN_TARGET);
    ASSERT(strstr(d.message, "no work left") == d.message);
    core_batch_state_reset(&st);
}

/* The job state keeps the batch part through its binary form (an optional tail), and a
 * streaming job's blob has none. */
static void state_round_trip(void)
{
    struct core_config cfg;
    opt_config_defaults(&cfg);
    struct core_state *st = core_state_new(), *back = core_state_new();
    struct core_batch_decision d;
    struct core_batch_stage s = stage(4e12, 7.5e9);
    struct core_sample sm = {.at = T0 + 30000, .running_since = T0, .running = true};
    unsigned char *blob;
    size_t len, len0;
    char err[256];
    core_state_encode(st, &blob, &len0);
    free(blob);
    sm.batch_mode = true;
    sm.batch = pool(10, &s, 1);
    core_decide_batch(st, &sm, &cfg, &d);
    ASSERT_EQ(d.target, 104);
    ASSERT_EQ(core_state_last_at(st), T0 + 30000);
    core_state_encode(st, &blob, &len);
    ASSERT(len > len0);
    ASSERT_EQ(core_state_decode(blob, len, back, NULL, err, sizeof err), 0);
    ASSERT_EQ(back->batch.running_since, T0);
    ASSERT_EQ(back->batch.target, 104);
    ASSERT_DEQ(back->batch.worker_s, 300.0);
    ASSERT_EQ(back->batch.last_change_at, T0 + 30000);
    ASSERT_EQ(back->batch.requested, 104);
    ASSERT_EQ(back->batch.n_stages, 1);
    ASSERT_STR(back->batch.stages[0].id, "read");
    ASSERT_DEQ(back->batch.stages[0].ws, 300.0);
    ASSERT_DEQ(back->batch.stages[0].done_m, 7.5e9);
    /* A tail of the build before (tag "B", its fields up to the confirmations) reads with
     * the pool asked for and the stages' accounts empty. The "C" tail here: tag, 44 bytes of
     * those fields, 20 of the pool asked for, one stage of 4 + 4 + 4 x 8 + 4 bytes. */
    size_t tail = 1 + 44 + 20 + 44, old_len = len - tail + 1 + 44;
    unsigned char *old = malloc(old_len);
    memcpy(old, blob, len - tail);
    old[len - tail] = 'B';
    memcpy(old + len - tail + 1, blob + len - tail + 1, 44);
    ASSERT_EQ(blob[len - tail], 'C');
    ASSERT_EQ(core_state_decode(old, old_len, back, NULL, err, sizeof err), 0);
    ASSERT_EQ(back->batch.target, 104);
    ASSERT_EQ(back->batch.requested, 0);
    ASSERT_EQ(back->batch.n_stages, 0);
    free(old);
    /* a blob cut inside the tail is refused */
    ASSERT_EQ(core_state_decode(blob, len - 3, back, NULL, err, sizeof err), -1);
    free(blob);
    core_state_free(st);
    core_state_free(back);
}

/* ------------------------------------------------------------------ rebalance -- */

/* Finish times after the advice: every kept part and every piece on its slot, simulated. */
static double simulate(const struct core_rebalance_in *in, const struct core_rebalance_out *o,
                       int *slots)
{
    double end = 0;
    *slots = 0;
    for (int i = 0; i < in->n_items; i++) {
        const struct core_rebalance_item *it = &in->items[i];
        double keep = it->remaining, f;
        for (int k = 0; k < o->n_splits; k++) {
            const struct core_rebalance_split *sp = &o->splits[k];
            if (sp->item != i)
                continue;
            keep = it->remaining * sp->fraction_of_remainder;
            double handed = it->remaining - keep;
            for (int p = 0; p < sp->n_pieces; p++) {
                f = in->startup_s + handed / sp->n_pieces / in->nominal_rate;
                end = f > end ? f : end;
                (*slots)++;
            }
        }
        f = keep > 0 ? keep / it->rate : 0; /* a stuck item that keeps nothing is done */
        end = f > end ? f : end;
    }
    return end;
}

static void rebalance_design_example(void)
{
    struct core_rebalance_item items[2] = {
        {"D", 2000, 5, 0.20, 2000, CORE_SPLIT_OK},
        {"E", 30, 0.15, 0.97, 1, CORE_SPLIT_OK},
    };
    struct core_rebalance_in in = {3, 10, 1, 10, items, 2};
    struct core_rebalance_split sp[2];
    struct core_rebalance_block bl[2];
    struct core_rebalance_out o = {.splits = sp, .blocks = bl};
    core_rebalance(&in, &o);
    ASSERT_NEAR(o.makespan_before_s, 400, 1e-9);
    ASSERT_NEAR(o.target_finish_s, 200, 1e-9);
    ASSERT_NEAR(o.makespan_after_s, 200, 1e-9);
    ASSERT_EQ(o.n_splits, 1);
    ASSERT_EQ(sp[0].item, 0);
    ASSERT_NEAR(sp[0].fraction_of_remainder, 0.5, 1e-12);
    ASSERT_EQ(sp[0].n_pieces, 1);
    ASSERT_NEAR(sp[0].piece_size, 1000, 1e-9);
    ASSERT_NEAR(sp[0].piece_finish_s, 110, 1e-9);
    ASSERT_EQ(o.n_blocks, 1);
    ASSERT_EQ(bl[0].item, 1);
    ASSERT_EQ(bl[0].cause, CORE_SPLIT_HOT_RECORD);
    ASSERT_NEAR(bl[0].finish_s, 200, 1e-9);
    int slots;
    ASSERT_NEAR(simulate(&in, &o, &slots), 200, 1e-9);
}

/* The README's example with D stuck (rate 0; core/README.md, Rebalance): D is the straggler to
 * split, all of its remainder handed out from where it stands (fraction of remainder 0), in two
 * pieces of 1,000 MB (190 s x 10 MB/s fit 1,900 at T = 200, which E bounds); the stage finishes at
 * 200 s instead of never, when E does. Without E: 2,000 MB over 3 slots, 10 + 2000 / 30 = 76.7 s.
 * With no idle slot nothing helps and the stage never finishes. */
static void rebalance_stuck_worker(void)
{
    struct core_rebalance_item items[2] = {
        {"D", 2000, 0, 0.20, 2000, CORE_SPLIT_OK},
        {"E", 30, 0.15, 0.97, 1, CORE_SPLIT_OK},
    };
    struct core_rebalance_in in = {3, 10, 1, 10, items, 2};
    struct core_rebalance_split sp[2];
    struct core_rebalance_block bl[2];
    struct core_rebalance_out o = {.splits = sp, .blocks = bl};
    core_rebalance(&in, &o);
    ASSERT(isinf(o.makespan_before_s));
    ASSERT_EQ(o.reason, CORE_R_STRAGGLERS);
    ASSERT_NEAR(o.target_finish_s, 200, 1e-9);
    ASSERT_NEAR(o.makespan_after_s, 200, 1e-9);
    ASSERT_EQ(o.n_splits, 1);
    ASSERT_EQ(sp[0].item, 0);
    ASSERT_DEQ(sp[0].fraction_of_remainder, 0.0);
    ASSERT_EQ(sp[0].n_pieces, 2);
    ASSERT_NEAR(sp[0].piece_size, 1000, 1e-9);
    ASSERT_DEQ(sp[0].keep_finish_s, 0.0);
    ASSERT_EQ(o.holder, 1);
    ASSERT_NEAR(o.free_finish_s, 10 + 2000.0 / 30, 1e-6);
    int slots;
    ASSERT_NEAR(simulate(&in, &o, &slots), 200, 1e-9);
    ASSERT(strstr(o.message, "instead of never") != NULL);
    in.idle_slots = 0;
    core_rebalance(&in, &o);
    ASSERT(isinf(o.makespan_after_s));
    ASSERT_EQ(o.n_splits, 0);
    ASSERT_EQ(o.holder, 0);
    ASSERT_STR(o.message, "no split brings the finish forward: D is stuck (rate 0) and there is "
                          "no idle slot to take its work: the stage cannot finish until it moves");
}

/* The message names the item that holds the stage, with its figure: with D a single record
 * too (400 s), D holds it, not E (200 s); E finishing at 200 s is said to be held longer by D.
 * In the README's example E and D's kept part both end at 200 s: E, which bounds it, holds. */
static void rebalance_names_the_holder(void)
{
    struct core_rebalance_item items[2] = {
        {"D", 2000, 5, 0.20, 1, CORE_SPLIT_OK},
        {"E", 30, 0.15, 0.97, 1, CORE_SPLIT_OK},
    };
    struct core_rebalance_in in = {3, 10, 1, 10, items, 2};
    struct core_rebalance_split sp[2];
    struct core_rebalance_block bl[2];
    struct core_rebalance_out o = {.splits = sp, .blocks = bl};
    core_rebalance(&in, &o);
    ASSERT_EQ(o.reason, CORE_R_UNSPLITTABLE_WORK);
    ASSERT_EQ(o.holder, 0);
    ASSERT_EQ(o.n_blocks, 2);
    ASSERT(bl[0].item == 0 && bl[0].holds_stage && !bl[1].holds_stage);
    ASSERT_NEAR(bl[0].without_s, 200, 1e-9); /* E is left */
    ASSERT_NEAR(bl[1].without_s, 400, 1e-9); /* D is left */
    ASSERT_STR(o.message, "no split brings the finish forward: D, which cannot be split "
                          "(HOT_RECORD), holds the stage until 400.0 s");
    items[0].remaining_parallelism = 2000;
    core_rebalance(&in, &o);
    ASSERT_EQ(o.holder, 1);
    ASSERT(o.n_blocks == 1 && bl[0].holds_stage);
    ASSERT_NEAR(bl[0].without_s, o.free_finish_s, 1e-12);
}

/* One straggler of R at rate 1, k idle slots at the same rate, start-up s: the common finish
 * is T with R - T = k (T - s), T = (R + k s) / (k + 1). The simulated finish times agree,
 * and no slot more than the idle ones is used. */
static void rebalance_even_spread_simulated(void)
{
    for (int k = 1; k <= 8; k++) {
        for (double s = 0; s <= 20; s += 10) {
            struct core_rebalance_item it = {"x", 1000, 1, 0, NAN, CORE_SPLIT_OK};
            struct core_rebalance_in in = {k, s, 0, 1, &it, 1};
            struct core_rebalance_split sp[1];
            struct core_rebalance_block bl[1];
            struct core_rebalance_out o = {.splits = sp, .blocks = bl};
            core_rebalance(&in, &o);
            double want = (1000 + k * s) / (k + 1);
            ASSERT_NEAR(o.target_finish_s, want, want * 1e-8);
            int slots;
            double end = simulate(&in, &o, &slots);
            ASSERT_NEAR(end, want, want * 1e-8);
            ASSERT(slots <= k);
            ASSERT_NEAR(o.makespan_after_s, end, 1e-9);
        }
    }
}

/* Mixed items from a fixed generator: the simulated finish is the promised one, never later
 * than before, the slots within the idle ones, and a shorter common finish is not feasible. */
static void rebalance_random_simulated(void)
{
    unsigned seed = 11;
    for (int round = 0; round < 300; round++) {
        struct core_rebalance_item it[6];
        int n = 1 + round % 6;
        for (int i = 0; i < n; i++) {
            seed = seed * 1103515245u + 12345u;
            double r = ((seed >> 16) & 0x7fff) / 32767.0;
            it[i] = (struct core_rebalance_item){"i",
                                                 10 + 2000 * r,
                                                 0.5 + 10 * (1 - r),
                                                 r / 2,
                                                 (seed >> 3) % 5 == 0 ? 1 : NAN,
                                                 CORE_SPLIT_OK};
            if ((seed >> 5) % 7 == 0)
                it[i].cause = CORE_SPLIT_UNSPLITTABLE_SOURCE;
        }
        struct core_rebalance_in in = {(int)((seed >> 9) % 5), 5, 1, 8, it, n};
        struct core_rebalance_split sp[6];
        struct core_rebalance_block bl[6];
        struct core_rebalance_out o = {.splits = sp, .blocks = bl};
        core_rebalance(&in, &o);
        int slots;
        double end = simulate(&in, &o, &slots);
        ASSERT(end <= o.target_finish_s * (1 + 1e-9) + 1e-9);
        ASSERT(end <= o.makespan_before_s * (1 + 1e-9));
        ASSERT(slots <= in.idle_slots);
        ASSERT_NEAR(o.makespan_after_s, end, 1e-6);
    }
}

TEST_MAIN(TEST_ENTRY(defaults_are_the_table), TEST_ENTRY(worked_example_raw),
          TEST_ENTRY(worked_example_first_decision), TEST_ENTRY(raw_edges),
          TEST_ENTRY(sweep_monotone_sublinear), TEST_ENTRY(caps_and_limits),
          TEST_ENTRY(nothing_measured), TEST_ENTRY(busy_time_sets_the_cost),
          TEST_ENTRY(later_decisions), TEST_ENTRY(noisy_progress_few_changes),
          TEST_ENTRY(closed_loop_pools_converge), TEST_ENTRY(second_stage_charged_its_own_work),
          TEST_ENTRY(progress_back_is_a_warning), TEST_ENTRY(no_work_left),
          TEST_ENTRY(state_round_trip), TEST_ENTRY(rebalance_design_example),
          TEST_ENTRY(rebalance_stuck_worker), TEST_ENTRY(rebalance_names_the_holder),
          TEST_ENTRY(rebalance_even_spread_simulated), TEST_ENTRY(rebalance_random_simulated))
