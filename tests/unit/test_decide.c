/*
 * Unit tests for core/decide.c: the cycle end to end with C hooks standing in for plugins
 * (executors that veto, change or fail; an evaluator that fails), advisor mode, and the
 * state round trip. The sample is tests/cases' base pipeline: src (p 2) -> agg (HASH, p 2),
 * 1000 rec/s, agg busy 950 ms/s; with a 1 min stabilization and 2 min window the 7th sample
 * (t = 180 s) scales agg 2 -> 4 (derivation in tests/cases/README.md).
 */
#include <stdlib.h>

#include "test.h"

#include "core/core_int.h"
#include "decision/jsn.h"
#include "options/options.h"

#define T0 1764410400000LL

struct fx {
    struct core_config cfg;
    struct core_state *st;
    struct core_decision d;
    struct core_hooks hooks;
    struct core_vertex_in v[2];
    struct core_input in;
    struct core_sample sm;
};

static void fx_init(struct fx *f)
{
    memset(f, 0, sizeof *f);
    opt_config_defaults(&f->cfg);
    f->cfg.stabilization_ms = 60000;
    f->cfg.metrics_window_ms = 120000;
    f->st = core_state_new();
    core_decision_init(&f->d);
    f->in = (struct core_input){.from = "src", .ship = CORE_SHIP_HASH};
}

static void fx_deinit(struct fx *f)
{
    core_decision_deinit(&f->d);
    core_state_free(f->st);
}

/* The base pipeline at t seconds. */
static void fx_sample(struct fx *f, int t)
{
    for (int i = 0; i < 2; i++) {
        struct core_vertex_in *v = &f->v[i];
        memset(v, 0, sizeof *v);
        v->parallelism = 2;
        v->max_parallelism = 128;
        v->busy_min = v->busy_avg = v->busy_max = i == 0 ? 500 : 950;
        v->backpressured = i == 0 ? 0 : NAN;
        v->records_in = 1000.0 * t;
        v->records_out = i == 0 ? 1000.0 * t : 100.0 * t;
        v->accumulated_busy_ms = NAN;
        v->records_in_per_s = 1000;
        v->records_out_per_s = NAN;
        v->pending_records = i == 0 ? 100.0 * t : NAN;
    }
    f->v[0].id = "src";
    f->v[1].id = "agg";
    f->v[1].inputs = &f->in;
    f->v[1].n_inputs = 1;
    f->sm = (struct core_sample){.at = T0 + t * 1000LL,
                                 .running_since = T0,
                                 .running = true,
                                 .heap_used = NAN,
                                 .heap_max = NAN,
                                 .gc_ms_per_s = NAN,
                                 .managed_used = NAN,
                                 .metaspace_used = NAN,
                                 .task_slots_total = NAN,
                                 .task_slots_available = NAN,
                                 .vertices = f->v,
                                 .n_vertices = 2};
}

/* Runs the 7 samples; returns core_decide's result of the last. */
static int fx_run(struct fx *f)
{
    char err[256];
    int rc = 0;
    for (int t = 0; t <= 180; t += 30) {
        fx_sample(f, t);
        rc = core_decide(f->st, &f->sm, &f->cfg, &f->hooks, &f->d, err, sizeof err);
        if (rc < 0)
            return rc;
    }
    return rc;
}

static const struct core_vdecision *vd(const struct core_decision *d, const char *id)
{
    for (int i = 0; i < d->n_vertices; i++)
        if (strcmp(d->vertices[i].id, id) == 0)
            return &d->vertices[i];
    return NULL;
}

static void native_decision_scales_agg(void)
{
    struct fx f;
    fx_init(&f);
    ASSERT_EQ(fx_run(&f), 0);
    ASSERT_EQ(f.d.action, CORE_SCALE_UP);
    ASSERT(f.d.execute);
    ASSERT_EQ(f.d.reason, CORE_R_HIGH_UTILIZATION);
    ASSERT_EQ(vd(&f.d, "agg")->target, 4);
    /* The execution is in the history. */
    struct core_vhistory *h = core__history_find(f.st, "agg");
    ASSERT(h && h->n == 1 && h->e[0].new_parallelism == 4);
    fx_deinit(&f);
}

static int veto_hook(void *ud, const char *name, struct core_decision *d, int64_t now, bool *veto,
                     char *err, size_t err_len)
{
    (void)ud, (void)d, (void)now;
    *veto = strcmp(name, "freeze") == 0;
    snprintf(err, err_len, "change freeze");
    return 0;
}

static void executor_veto(void)
{
    struct fx f;
    fx_init(&f);
    static const char *const ex[] = {"freeze"};
    f.cfg.executors = ex;
    f.cfg.n_executors = 1;
    f.hooks.execute = veto_hook;
    ASSERT_EQ(fx_run(&f), 0);
    ASSERT_EQ(f.d.reason, CORE_R_VETOED);
    ASSERT(!f.d.execute);
    ASSERT_CONTAINS(f.d.message, "freeze");
    ASSERT_STR(f.d.events[f.d.n_events - 1].reason, "ScalingVetoed");
    ASSERT_STR(f.d.events[f.d.n_events - 1].key, "ScalingVetoed:freeze");
    /* Nothing stored: no history entry. */
    ASSERT(core__history_find(f.st, "agg") == NULL);
    fx_deinit(&f);
}

static int halve_hook(void *ud, const char *name, struct core_decision *d, int64_t now, bool *veto,
                      char *err, size_t err_len)
{
    (void)ud, (void)name, (void)now, (void)veto, (void)err, (void)err_len;
    for (int i = 0; i < d->n_vertices; i++)
        if (d->vertices[i].target > d->vertices[i].current)
            d->vertices[i].target = d->vertices[i].current + 1;
    return 0;
}

static void executor_changes_target(void)
{
    struct fx f;
    fx_init(&f);
    static const char *const ex[] = {"step"};
    f.cfg.executors = ex;
    f.cfg.n_executors = 1;
    f.hooks.execute = halve_hook;
    ASSERT_EQ(fx_run(&f), 0);
    ASSERT(f.d.execute);
    ASSERT_EQ(vd(&f.d, "agg")->target, 3);
    ASSERT(vd(&f.d, "agg")->constraints & CORE_C_CHANGED_BY_EXECUTOR);
    /* The history records what was executed. */
    ASSERT_EQ(core__history_find(f.st, "agg")->e[0].new_parallelism, 3);
    fx_deinit(&f);
}

static int failing_exec(void *ud, const char *name, struct core_decision *d, int64_t now,
                        bool *veto, char *err, size_t err_len)
{
    (void)ud, (void)name, (void)now, (void)veto;
    d->vertices[0].target = 99; /* a half-done change must not survive a failure */
    snprintf(err, err_len, "boom.lua:3: attempt to index a nil value");
    return -1;
}

static void failing_executor_keeps_native_result(void)
{
    struct fx f;
    fx_init(&f);
    static const char *const ex[] = {"boom"};
    f.cfg.executors = ex;
    f.cfg.n_executors = 1;
    f.hooks.execute = failing_exec;
    ASSERT_EQ(fx_run(&f), 0);
    ASSERT_EQ(f.d.reason, CORE_R_PLUGIN_ERROR);
    ASSERT_CONTAINS(f.d.message, "boom");
    ASSERT_CONTAINS(f.d.message, "boom.lua:3");
    ASSERT(f.d.execute);
    ASSERT_EQ(vd(&f.d, "agg")->target, 4);
    ASSERT_EQ(vd(&f.d, "src")->target, 2);
    fx_deinit(&f);
}

static int failing_eval(void *ud, const char *name, const struct core_vertex_in *v,
                        struct core_evaluated *ev, bool backlog, int64_t now, char *err,
                        size_t err_len)
{
    (void)ud, (void)name, (void)v, (void)backlog, (void)now;
    ev->true_processing_rate = 1; /* ignored: the call failed */
    snprintf(err, err_len, "limit.lua:9: out of memory");
    return -1;
}

static void failing_evaluator_keeps_native_result(void)
{
    struct fx f;
    fx_init(&f);
    static const char *const ev[] = {"limit"};
    f.cfg.evaluators = ev;
    f.cfg.n_evaluators = 1;
    f.hooks.evaluate = failing_eval;
    ASSERT_EQ(fx_run(&f), 0);
    ASSERT_EQ(f.d.reason, CORE_R_PLUGIN_ERROR);
    ASSERT_CONTAINS(f.d.message, "limit");
    ASSERT_EQ(vd(&f.d, "agg")->target, 4);
    ASSERT_NEAR(vd(&f.d, "agg")->ev.true_processing_rate, 1052.632, 1e-9);
    fx_deinit(&f);
}

static void topology_error_changes_nothing(void)
{
    struct fx f;
    fx_init(&f);
    fx_sample(&f, 0);
    f.in.from = "nope";
    char err[256];
    ASSERT_EQ(core_decide(f.st, &f.sm, &f.cfg, &f.hooks, &f.d, err, sizeof err), -1);
    ASSERT_CONTAINS(err, "vertices[1].inputs[0].from");
    ASSERT_EQ(core_state_last_at(f.st), INT64_MIN);
    fx_deinit(&f);
}

static void state_round_trip_changes_no_decision(void)
{
    /* Two runs over the same samples, one with the state encoded and decoded (core.h, State
     * codec) before every sample: every decision's action, targets and reason agree. */
    struct fx a, b;
    fx_init(&a);
    fx_init(&b);
    char err[256];
    for (int t = 0; t <= 180; t += 30) {
        fx_sample(&a, t);
        fx_sample(&b, t);
        unsigned char *blob;
        size_t len;
        core_state_encode(b.st, &blob, &len);
        ASSERT_EQ(core_state_decode(blob, len, b.st, NULL, err, sizeof err), 0);
        free(blob);
        ASSERT_EQ(core_decide(a.st, &a.sm, &a.cfg, &a.hooks, &a.d, err, sizeof err), 0);
        ASSERT_EQ(core_decide(b.st, &b.sm, &b.cfg, &b.hooks, &b.d, err, sizeof err), 0);
        ASSERT_EQ(a.d.action, b.d.action);
        ASSERT_EQ(a.d.reason, b.d.reason);
        for (int i = 0; i < 2; i++) {
            ASSERT_EQ(a.d.vertices[i].target, b.d.vertices[i].target);
            ASSERT_DEQ(a.d.vertices[i].ev.true_processing_rate,
                       b.d.vertices[i].ev.true_processing_rate);
        }
    }
    ASSERT_EQ(a.d.action, CORE_SCALE_UP);
    fx_deinit(&a);
    fx_deinit(&b);
}

/* One more sample at t seconds with agg at p_agg (running_since T0 + rs seconds). */
static void fx_more(struct fx *f, int t, int p_agg, int rs)
{
    char err[256];
    fx_sample(f, t);
    f->v[1].parallelism = p_agg;
    f->sm.running_since = T0 + rs * 1000LL;
    ASSERT_EQ(core_decide(f->st, &f->sm, &f->cfg, &f->hooks, &f->d, err, sizeof err), 0);
}

static const struct core_event *event(const struct core_decision *d, const char *reason)
{
    for (int i = 0; i < d->n_events; i++)
        if (strcmp(d->events[i].reason, reason) == 0)
            return &d->events[i];
    return NULL;
}

static void unapplied_scaling_is_said_and_forgotten(void)
{
    /* Decided but not applied (core/README.md, History): agg 2 -> 4 executed at 180 s; the sample
     * at 210 s still runs agg at 2. The decision says so (message and ScalingNotApplied), the
     * history and the tracking forget the 180 s scaling, and the re-decided scale-up is the one
     * they hold now. */
    struct fx f;
    fx_init(&f);
    ASSERT_EQ(fx_run(&f), 0);
    ASSERT(f.d.execute);
    ASSERT_EQ(f.st->pending.at, T0 + 180000);
    ASSERT_EQ(f.st->n_track, 1);
    fx_more(&f, 210, 2, 0);
    const struct core_event *e = event(&f.d, "ScalingNotApplied");
    ASSERT(e != NULL);
    ASSERT_STR(e->type, "Warning");
    ASSERT_CONTAINS(f.d.message, "the scaling decided at 2025-11-29T10:03:00Z (agg 2 -> 4) was "
                                 "not applied: the job runs agg at 2");
    ASSERT(f.d.execute);
    ASSERT_EQ(vd(&f.d, "agg")->target, 4);
    struct core_vhistory *h = core__history_find(f.st, "agg");
    ASSERT(h && h->n == 1 && h->e[0].at == T0 + 210000);
    ASSERT_EQ(f.st->n_track, 1);
    ASSERT_EQ(f.st->track[0].at, T0 + 210000);
    /* Applied at 240 s (a restart with agg at 4): ScalingApplied, nothing pending. */
    fx_more(&f, 240, 4, 235);
    ASSERT(event(&f.d, "ScalingApplied") != NULL);
    ASSERT(event(&f.d, "ScalingNotApplied") == NULL);
    ASSERT_EQ(f.st->pending.at, INT64_MIN);
    ASSERT_EQ(f.d.reason, CORE_R_COLLECTING_METRICS);
    fx_deinit(&f);
}

static void delayed_scale_down_waits_for_the_application(void)
{
    /* The delayed scale-downs (core/README.md, Gating) are dropped when a scaling is applied, not
     * when it is executed, so an unapplied scale-down is due again at once. */
    struct fx f;
    fx_init(&f);
    f.cfg.scale_down_interval_ms = 60000;
    f.cfg.restart_cost_w = NAN; /* the interval, not governor.scale-down.restart-cost */
    char err[256];
    for (int t = 0; t <= 240; t += 30) {
        fx_sample(&f, t);
        f.v[1].busy_min = f.v[1].busy_avg = f.v[1].busy_max = 100;
        ASSERT_EQ(core_decide(f.st, &f.sm, &f.cfg, &f.hooks, &f.d, err, sizeof err), 0);
    }
    ASSERT_EQ(f.d.action, CORE_SCALE_DOWN); /* agg 2 -> 1 after the minute's wait */
    ASSERT(f.d.execute);
    ASSERT_EQ(f.st->n_delayed, 1);
    fx_sample(&f, 270);
    f.v[1].busy_min = f.v[1].busy_avg = f.v[1].busy_max = 100;
    ASSERT_EQ(core_decide(f.st, &f.sm, &f.cfg, &f.hooks, &f.d, err, sizeof err), 0);
    ASSERT_EQ(f.d.action, CORE_SCALE_DOWN);
    ASSERT(f.d.execute);
    ASSERT(event(&f.d, "ScalingNotApplied") != NULL);
    /* applied: the proposals that waited on the old parallelism go */
    fx_more(&f, 300, 1, 290);
    ASSERT_EQ(f.st->n_delayed, 0);
    fx_deinit(&f);
}

static void implausible_sample_decides_nothing(void)
{
    /* An implausible sample (core/README.md, Window): agg's records_in jumps by 1e12 at 180 s while
     * its gauge says 1000/s: IMPLAUSIBLE_SAMPLE, no change, the window as it was; under
     * governor.profile = flink (plausibility off) the jump is taken for input. */
    for (int flink = 0; flink < 2; flink++) {
        struct fx f;
        fx_init(&f);
        if (flink)
            opt_config_set_profile(&f.cfg, CORE_PROFILE_FLINK);
        char err[256];
        for (int t = 0; t <= 180; t += 30) {
            fx_sample(&f, t);
            if (t == 180)
                f.v[1].records_in += 1e12;
            ASSERT_EQ(core_decide(f.st, &f.sm, &f.cfg, &f.hooks, &f.d, err, sizeof err), 0);
        }
        if (!flink) {
            ASSERT_EQ(f.d.reason, CORE_R_IMPLAUSIBLE_SAMPLE);
            ASSERT_EQ(f.d.action, CORE_NO_CHANGE);
            ASSERT(!f.d.execute);
            ASSERT_EQ(f.st->w.n, 6);
            ASSERT_EQ(f.st->rejected, 1);
            ASSERT(event(&f.d, "ImplausibleSample") != NULL);
            ASSERT_CONTAINS(f.d.message, "agg's records_in grew");
        } else {
            ASSERT_EQ(f.d.action, CORE_SCALE_UP);
            ASSERT_EQ(vd(&f.d, "agg")->target, 128);
        }
        fx_deinit(&f);
    }
}

/*
 * governor.not-applied.max (3 under the governor profile): agg 2 -> 4 is executed at 180 s and
 * the job keeps running agg at 2. It is executed again at 210 and 240 s (not applied once,
 * twice), and at 270 s, not applied the third time, it is recommended (execute false, reason
 * NOT_APPLIED), and stays so while nothing changes; the count survives the state's binary
 * form. Once the job runs agg at another parallelism (3: a restart) it is decided afresh. Under
 * the flink profile it is executed every time.
 */
static void not_applied_is_recommended_after_three(void)
{
    for (int flink = 0; flink <= 1; flink++) {
        struct fx f;
        fx_init(&f);
        if (flink)
            opt_config_set_profile(&f.cfg, CORE_PROFILE_FLINK);
        ASSERT_EQ(fx_run(&f), 0);
        ASSERT(f.d.execute);
        for (int t = 210; t <= 300; t += 30) {
            fx_more(&f, t, 2, 0);
            bool recommended = !flink && t >= 270;
            ASSERT_EQ(f.d.execute, !recommended);
            ASSERT_EQ(vd(&f.d, "agg")->target, 4);
            if (recommended) {
                ASSERT_EQ(f.d.reason, CORE_R_NOT_APPLIED);
                ASSERT_CONTAINS(f.d.message, "recommended, not executed: the client did not "
                                             "apply this scaling the last 3 times");
                ASSERT_EQ(f.st->unapplied.count, 3);
            }
        }
        if (!flink) {
            unsigned char *blob;
            size_t len;
            char err[128];
            core_state_encode(f.st, &blob, &len);
            struct core_state *back = core_state_new();
            ASSERT_EQ(core_state_decode(blob, len, back, NULL, err, sizeof err), 0);
            ASSERT_EQ(back->unapplied.count, 3);
            ASSERT_EQ(back->unapplied.n, 1);
            ASSERT_STR(back->unapplied.v[0].id, "agg");
            ASSERT_EQ(back->unapplied.v[0].to, 4);
            core_state_free(back);
            free(blob);
        }
        fx_more(&f, 360, 3, 0); /* the job runs agg at 3: the window restarts */
        ASSERT(f.d.reason != CORE_R_NOT_APPLIED);
        fx_deinit(&f);
    }
}

/*
 * governor.window.refill-after-gap: agg inside its bounds (busy 600 ms/s) decides WITHIN_TARGET
 * at 180 s; the next sample comes 200 s later, longer than the 2 min window: the window starts
 * over (a RestartInferred warning names the gap) and refills before anything is decided, without
 * a stabilization (the job did not restart): COLLECTING_METRICS until 120 s of samples (at
 * 500 s), then a decision. Without it the window kept full (governor.window.keep-full) decides
 * from 410 s on two samples 30 s apart, the gap trimmed away.
 */
static void window_refills_after_a_gap(void)
{
    for (int refill = 1; refill >= 0; refill--) {
        struct fx f;
        fx_init(&f);
        f.cfg.window_refill = refill;
        char err[256];
        for (int t = 0; t <= 180; t += 30) {
            fx_sample(&f, t);
            f.v[0].pending_records = 0; /* the source keeps up */
            f.v[1].busy_min = f.v[1].busy_avg = f.v[1].busy_max = 600;
            ASSERT_EQ(core_decide(f.st, &f.sm, &f.cfg, &f.hooks, &f.d, err, sizeof err), 0);
        }
        ASSERT_EQ(f.d.reason, CORE_R_WITHIN_TARGET);
        for (int t = 380; t <= 500; t += 30) {
            fx_sample(&f, t);
            f.v[0].pending_records = 0;
            f.v[1].busy_min = f.v[1].busy_avg = f.v[1].busy_max = 600;
            ASSERT_EQ(core_decide(f.st, &f.sm, &f.cfg, &f.hooks, &f.d, err, sizeof err), 0);
            if (t == 380 && refill) {
                const struct core_event *e = event(&f.d, "RestartInferred");
                ASSERT(e != NULL);
                ASSERT_CONTAINS(e->message, "no sample for 200 s, longer than the metric window "
                                            "(2 min): the window refills");
            }
            bool collecting = refill ? t < 500 : t < 410;
            ASSERT_EQ(f.d.reason, collecting ? CORE_R_COLLECTING_METRICS : CORE_R_WITHIN_TARGET);
        }
        fx_deinit(&f);
    }
}

/*
 * governor.scale-down.restart-cost (W = 4): the source keeps up (no backlog); agg busy 200
 * ms/s processes 5000/s where 1000/s arrive: 2 -> 1 (ceil(1000 / 0.7 / 5000 x 2) = 1). With a
 * restart time of 30 s the restart costs
 * W x 3 subtasks after it (src 2, agg 1) x 30 s / (1 - 0.7) = 1200 subtask-seconds, and the
 * scale-down saves 1 subtask: it waits until the lower load has lasted 1200 s since it was
 * first proposed at 180 s, and is executed at 1380 s.
 */
static void scale_down_waits_for_what_it_saves(void)
{
    struct fx f;
    fx_init(&f);
    f.cfg.restart_time_ms = 30000;
    char err[256];
    int executed_at = -1;
    for (int t = 0; t <= 1500 && executed_at < 0; t += 30) {
        fx_sample(&f, t);
        f.v[0].pending_records = 0; /* the source keeps up */
        f.v[1].busy_min = f.v[1].busy_avg = f.v[1].busy_max = 200;
        ASSERT_EQ(core_decide(f.st, &f.sm, &f.cfg, &f.hooks, &f.d, err, sizeof err), 0);
        if (t == 600) {
            ASSERT_EQ(vd(&f.d, "agg")->reason, CORE_R_SCALE_DOWN_DELAYED);
            ASSERT_CONTAINS(vd(&f.d, "agg")->message,
                            "1 subtask fewer for the 420 s the lower load has lasted saved 420 "
                            "subtask-seconds, less than governor.scale-down.restart-cost (4) x 3 "
                            "subtasks x 30 s / (1 - 0.70) = 1200");
        }
        if (f.d.execute)
            executed_at = t;
    }
    ASSERT_EQ(executed_at, 1380);
    ASSERT_EQ(vd(&f.d, "agg")->target, 1);
    ASSERT_EQ(f.d.reason, CORE_R_LOW_UTILIZATION);
    fx_deinit(&f);
}

TEST_MAIN(TEST_ENTRY(unapplied_scaling_is_said_and_forgotten),
          TEST_ENTRY(not_applied_is_recommended_after_three),
          TEST_ENTRY(window_refills_after_a_gap), TEST_ENTRY(scale_down_waits_for_what_it_saves),
          TEST_ENTRY(delayed_scale_down_waits_for_the_application),
          TEST_ENTRY(implausible_sample_decides_nothing), TEST_ENTRY(native_decision_scales_agg),
          TEST_ENTRY(executor_veto), TEST_ENTRY(executor_changes_target),
          TEST_ENTRY(failing_executor_keeps_native_result),
          TEST_ENTRY(failing_evaluator_keeps_native_result),
          TEST_ENTRY(topology_error_changes_nothing),
          TEST_ENTRY(state_round_trip_changes_no_decision))
