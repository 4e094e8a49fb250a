/*
 * Unit tests for the Lua host (server/plugin/): loading and checking a
 * policies directory (every load-time error names the file, and line when there is one),
 * revision ids, the limits (budget, deadline, memory cap: each fails the call alone and
 * the next call works), per-plugin counters, and the four hooks through struct core_hooks
 * with hand-built inputs (parameters under `<prefix>.<name>.`, `.class`, executors sorted
 * by priority, veto, changed targets, the native exclusion fallback).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <dirent.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "test.h"

#include "time/cron.h"
#include "options/options.h"
#include "plugin/plugin.h"
#include "core/core_int.h"
#include "windows.h"

/* 2025-11-29T10:03:00Z */
#define T 1764410580000LL

/* ---------------------------------------------------------------- helpers -- */

static char tmpdir[64];

static void put(const char *rel, const char *text, size_t len)
{
    char path[256];
    snprintf(path, sizeof path, "%s/%s", tmpdir, rel);
    if (strchr(rel, '/')) {
        char sub[256];
        snprintf(sub, sizeof sub, "%s/lib", tmpdir);
        mkdir(sub, 0700);
    }
    FILE *f = fopen(path, "wb");
    fwrite(text, 1, len, f);
    fclose(f);
}

static void put_s(const char *rel, const char *text)
{
    put(rel, text, strlen(text));
}

static void fresh_dir(void)
{
    snprintf(tmpdir, sizeof tmpdir, "/tmp/governor-plugin-XXXXXX");
    if (!mkdtemp(tmpdir))
        abort();
}

/* The server's budget and memory cap, with a deadline that a loaded (or sanitized) test
 * machine cannot hit by accident; the deadline itself is tested with its own limits. */
static const struct plugin_limits relaxed = {.timeout_ms = 5000};

static void rm_dir(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
    if (system(cmd) != 0)
        fprintf(stderr, "cannot remove %s\n", tmpdir);
}

/* Loads tmpdir; returns the error (new) or NULL with *out set. */
static char *load(const struct plugin_limits *lim, struct plugin_set **out)
{
    char *err = NULL;
    if (plugin_set_load(tmpdir, lim, out, &err) < 0)
        return err;
    return NULL;
}

static const char *OK_EVAL = "return { kind = 'evaluator', evaluate = function() return 1 end }";

/* ------------------------------------------------------------ loading -- */

/* The .lua files directly in dir (under lib/ with sub), without their extension: plugins
 * when not *_test.lua. Calls fn on each name and returns how many there were; the shipped
 * plugins are counted from the directory itself, so adding one changes no test. */
static int each_lua(const char *dir, bool tests, void (*fn)(const char *name, void *ud), void *ud)
{
    DIR *d = opendir(dir);
    if (!d)
        fprintf(stderr, "%s: cannot be read\n", dir);
    int n = d ? 0 : -1;
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL) {
        size_t len = strlen(e->d_name);
        if (len <= 4 || strcmp(e->d_name + len - 4, ".lua") != 0)
            continue;
        bool is_test = len > 9 && strcmp(e->d_name + len - 9, "_test.lua") == 0;
        if (is_test != tests)
            continue;
        char name[256];
        snprintf(name, sizeof name, "%.*s", (int)(len - 4), e->d_name);
        if (fn)
            fn(name, ud);
        n++;
    }
    if (d)
        closedir(d);
    return n;
}

static void assert_found(const char *name, void *ud)
{
    int i = plugin_set_find(ud, name);
    if (i < 0)
        fprintf(stderr, "plugin %s of policies/ was not loaded\n", name);
    ASSERT(i >= 0);
}

static void test_shipped_set_loads(void)
{
    struct plugin_set *s = NULL;
    char *err = NULL;
    ASSERT_EQ(plugin_set_load("policies", &relaxed, &s, &err), 0);
    ASSERT_EQ(strlen(plugin_set_revision(s)), 8);
    /* every *.lua of the directory but the *_test.lua is a plugin, found by its name */
    ASSERT_EQ(plugin_set_count(s), each_lua("policies", false, assert_found, s));
    int i = plugin_set_find(s, "freeze");
    ASSERT(i >= 0);
    struct plugin_info in;
    plugin_set_info(s, i, &in);
    ASSERT_STR(in.name, "freeze");
    ASSERT_STR(in.file, "freeze.lua");
    ASSERT_EQ(in.kind, PLUGIN_EXECUTOR);
    ASSERT_NEAR(in.priority, 10, 0);
    ASSERT_EQ(strlen(in.hash), 16);
    ASSERT(in.loaded_at > 0);
    ASSERT_EQ(plugin_set_find(s, "freeze_test"), -1); /* tests are not plugins */
    ASSERT_EQ(plugin_set_find(s, "cfg"), -1);         /* lib/ is not plugins */
    plugin_set_info(s, plugin_set_find(s, "excluded_periods"), &in);
    ASSERT_EQ(in.kind, PLUGIN_EXCLUSION);
    plugin_set_info(s, plugin_set_find(s, "tm_align"), &in);
    ASSERT_EQ(in.kind, PLUGIN_ALIGNMENT);
    plugin_set_unref(s);
}

struct load_err_case {
    const char *file;
    const char *text;
    size_t len;
    const char *want;
};

static void test_load_errors_name_the_file(void)
{
    static const char bytecode[] = "\x1bLua\x54\x00\x19\x93\r\n\x1a\n";
    const struct load_err_case cases[] = {
        {"bin.lua", bytecode, sizeof bytecode - 1, "attempt to load a binary chunk (mode is 't')"},
        {"kind.lua", "return { kind = 'scaler', evaluate = print }", 0,
         "kind.lua: kind must be one of exclusion, evaluator, executor, alignment (got scaler)"},
        {"nofn.lua", "return { kind = 'executor' }", 0,
         "nofn.lua: a plugin of kind executor must have a function 'execute' (got nil)"},
        {"notab.lua", "return 42", 0, "notab.lua: must return a table (got number)"},
        {"syntax.lua", "return {\n kind = 'evaluator',\n evaluate = function( end }", 0,
         "syntax.lua:3:"},
        {"prio.lua", "return { kind = 'executor', execute = print, priority = 'high' }", 0,
         "prio.lua: priority must be a finite number (got string)"},
        {"boom.lua", "\n\nerror('top-level boom')", 0, "boom.lua:3: top-level boom"},
        {"spin.lua", "while true do end", 0, "spin.lua: instruction budget exceeded"},
        {"bad name.lua", OK_EVAL, 0, "bad name.lua: a plugin's file name must be"},
        {"req.lua", "local x = require 'evil'\nreturn x", 0, "no file lib/evil.lua"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        fresh_dir();
        put_s("good.lua", OK_EVAL);
        put(cases[k].file, cases[k].text, cases[k].len ? cases[k].len : strlen(cases[k].text));
        struct plugin_set *s = NULL;
        char *err = load(&relaxed, &s);
        rm_dir();
        ASSERT(s == NULL);
        ASSERT_CONTAINS(err, cases[k].want);
        free(err);
    }
}

static void test_bytecode_lib_refused(void)
{
    fresh_dir();
    static const char bytecode[] = "\x1bLua\x54\x00";
    put("lib/bin.lua", bytecode, sizeof bytecode - 1);
    put_s("user.lua", "local b = require 'bin'\nreturn { kind = 'alignment', align = print }");
    struct plugin_set *s = NULL;
    char *err = load(&relaxed, &s);
    rm_dir();
    ASSERT(s == NULL);
    ASSERT_CONTAINS(err, "attempt to load a binary chunk");
    free(err);
}

static void test_revision_tracks_content(void)
{
    fresh_dir();
    put_s("a.lua", OK_EVAL);
    put_s("lib/m.lua", "return {}");
    struct plugin_set *s1 = NULL, *s2 = NULL, *s3 = NULL, *s4 = NULL;
    ASSERT(load(&relaxed, &s1) == NULL);
    ASSERT(load(&relaxed, &s2) == NULL);
    put_s("lib/m.lua", "return { changed = true }");
    ASSERT(load(&relaxed, &s3) == NULL);
    put_s("a_test.lua", "-- a test file is part of the revision too");
    ASSERT(load(&relaxed, &s4) == NULL);
    rm_dir();
    ASSERT_STR(plugin_set_revision(s1), plugin_set_revision(s2));
    ASSERT(strcmp(plugin_set_revision(s1), plugin_set_revision(s3)) != 0);
    ASSERT(strcmp(plugin_set_revision(s3), plugin_set_revision(s4)) != 0);
    plugin_set_unref(s1);
    plugin_set_unref(s2);
    plugin_set_unref(s3);
    plugin_set_unref(s4);
}

static void count_file(void *ud, const char *path, const char *hash)
{
    (void)path;
    ASSERT_EQ(strlen(hash), 16);
    (*(int *)ud)++;
}

static void test_each_file_and_refs(void)
{
    struct plugin_set *s = NULL;
    char *err = NULL;
    ASSERT_EQ(plugin_set_load("policies", &relaxed, &s, &err), 0);
    int n = 0;
    plugin_set_each_file(s, count_file, &n);
    /* every .lua file of the revision: the plugins, the *_test.lua and those of lib/ */
    ASSERT_EQ(n, each_lua("policies", false, NULL, NULL) + each_lua("policies", true, NULL, NULL) +
                     each_lua("policies/lib", false, NULL, NULL));
    /* a reference taken by a decision in flight keeps the set alive after the swap */
    struct plugin_set *held = plugin_set_ref(s);
    plugin_set_unref(s);
    char *out = NULL;
    ASSERT_EQ(plugin_call_json(held, "tm_align",
                               "[{\"current\":2,\"proposed\":5,\"lower\":1,"
                               "\"upper\":128,\"max_parallelism\":128}]",
                               "{\"params\":{\"slots\":\"4\"}}", &out, &err),
              0);
    ASSERT_STR(out, "[8]");
    free(out);
    plugin_set_unref(held);
}

/* ------------------------------------------------------------- limits -- */

static const char *SPIN = "return { kind = 'evaluator', evaluate = function(v, e, ctx)\n"
                          "  if ctx.params.mode == 'spin' then while true do end end\n"
                          "  if ctx.params.mode == 'hog' then local t = {}\n"
                          "    while true do t[#t + 1] = {} end end\n"
                          "  return 'fine'\n"
                          "end }";

static void test_deadline_stops_a_loop(void)
{
    fresh_dir();
    put_s("spin.lua", SPIN);
    struct plugin_limits lim = {.instructions = 1000000000000LL, .timeout_ms = 30};
    struct plugin_set *s = NULL;
    char *err = load(&lim, &s);
    rm_dir();
    ASSERT(err == NULL);
    char *out = NULL;
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    ASSERT_EQ(
        plugin_call_json(s, "spin", "[{},{}]", "{\"params\":{\"mode\":\"spin\"}}", &out, &err), -1);
    clock_gettime(CLOCK_MONOTONIC, &b);
    double ms = (double)(b.tv_sec - a.tv_sec) * 1e3 + (double)(b.tv_nsec - a.tv_nsec) / 1e6;
    ASSERT_STR(err, "spin: deadline exceeded (30 ms)");
    ASSERT(ms >= 29 && ms < 1000);
    free(err);
    ASSERT_EQ(plugin_call_json(s, "spin", "[{},{}]", "{}", &out, &err), 0);
    ASSERT_STR(out, "[\"fine\"]");
    free(out);
    struct plugin_info in;
    plugin_set_info(s, 0, &in);
    ASSERT_EQ(in.calls, 2);
    ASSERT_EQ(in.errors, 1);
    ASSERT(in.time_us >= 29000);
    plugin_set_unref(s);
}

static void test_memory_cap_fails_the_call_only(void)
{
    fresh_dir();
    put_s("spin.lua", SPIN);
    struct plugin_limits lim = {
        .instructions = 1000000000000LL, .timeout_ms = 5000, .memory_bytes = 2 * 1024 * 1024};
    struct plugin_set *s = NULL;
    char *err = load(&lim, &s);
    rm_dir();
    ASSERT(err == NULL);
    char *out = NULL;
    for (int round = 0; round < 3; round++) {
        ASSERT_EQ(
            plugin_call_json(s, "spin", "[{},{}]", "{\"params\":{\"mode\":\"hog\"}}", &out, &err),
            -1);
        ASSERT_STR(err, "spin: out of memory (cap 2097152 bytes)");
        free(err);
        ASSERT_EQ(plugin_call_json(s, "spin", "[{},{}]", "{}", &out, &err), 0);
        ASSERT_STR(out, "[\"fine\"]");
        free(out);
    }
    plugin_set_unref(s);
}

static void test_budget(void)
{
    fresh_dir();
    put_s("spin.lua", SPIN);
    struct plugin_limits lim = {.instructions = 5000, .timeout_ms = 5000};
    struct plugin_set *s = NULL;
    char *err = load(&lim, &s);
    rm_dir();
    ASSERT(err == NULL);
    char *out = NULL;
    ASSERT_EQ(
        plugin_call_json(s, "spin", "[{},{}]", "{\"params\":{\"mode\":\"spin\"}}", &out, &err), -1);
    ASSERT_STR(err, "spin: instruction budget exceeded (5000 instructions)");
    free(err);
    ASSERT_EQ(plugin_call_json(s, "spin", "[{},{}]", "{}", &out, &err), 0);
    free(out);
    plugin_set_unref(s);
}

/* A pathological pattern is refused before Lua's matcher (which runs no VM instructions)
 * gets to it, well within the deadline; an ordinary one on the same subject works. */
static void test_pattern_guard(void)
{
    fresh_dir();
    put_s("pat.lua", "return { kind = 'evaluator', evaluate = function(v, e, ctx)\n"
                     "  local s = string.rep('a', 20000)\n"
                     "  return s:find(ctx.params.p)\n"
                     "end }");
    struct plugin_set *s = NULL;
    char *err = load(&relaxed, &s);
    rm_dir();
    ASSERT(err == NULL);
    char *out = NULL;
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    ASSERT_EQ(plugin_call_json(s, "pat", "[{},{}]", "{\"params\":{\"p\":\"(.-)(.-)(.-)(.-)x\"}}",
                               &out, &err),
              -1);
    clock_gettime(CLOCK_MONOTONIC, &b);
    double ms = (double)(b.tv_sec - a.tv_sec) * 1e3 + (double)(b.tv_nsec - a.tv_nsec) / 1e6;
    ASSERT_CONTAINS(err, "pat.lua:3: string.find: pattern \"(.-)(.-)(.-)(.-)x\" is too costly");
    ASSERT(ms < 5000); /* refused by the cost guard, not by the (5 s) deadline */
    free(err);
    /* a+$ : greedy, linear: 1..20000 */
    ASSERT_EQ(plugin_call_json(s, "pat", "[{},{}]", "{\"params\":{\"p\":\"a+$\"}}", &out, &err), 0);
    ASSERT_STR(out, "[1,20000]");
    free(out);
    plugin_set_unref(s);
}

/* -------------------------------------------------------------- hooks -- */

struct hk {
    struct plugin_set *s;
    struct opt_job *opts;
    struct core_config cfg;
    struct plugin_call *call;
    struct core_hooks h;
    struct core_vertex_in v[2];
    struct core_input in;
    struct core_sample sm;
};

static void hk_init(struct hk *k, const char *const *kv)
{
    memset(k, 0, sizeof *k);
    char *err = NULL;
    if (plugin_set_load("policies", &relaxed, &k->s, &err) < 0) {
        fprintf(stderr, "%s\n", err);
        abort();
    }
    k->opts = opt_job_new();
    for (; kv && *kv; kv += 2)
        if (opt_job_set(k->opts, OPT_JOB, kv[0], kv[1], &err) < 0) {
            fprintf(stderr, "%s\n", err);
            abort();
        }
    if (opt_job_resolve(k->opts, &k->cfg, &err) < 0) {
        fprintf(stderr, "%s\n", err);
        abort();
    }
    k->in = (struct core_input){.from = "src", .ship = CORE_SHIP_FORWARD};
    k->v[0] = (struct core_vertex_in){
        .id = "src", .parallelism = 2, .max_parallelism = 128, .records_in_per_s = 2000};
    k->v[1] = (struct core_vertex_in){.id = "sink",
                                      .parallelism = 2,
                                      .max_parallelism = 128,
                                      .inputs = &k->in,
                                      .n_inputs = 1,
                                      .records_in_per_s = 1000};
    k->sm = (struct core_sample){.at = T, .running = true, .vertices = k->v, .n_vertices = 2};
    k->call = plugin_call_new(k->s, "orders", k->opts, &k->cfg, NULL, &k->sm);
    plugin_call_hooks(k->call, &k->h);
}

static void hk_deinit(struct hk *k)
{
    plugin_call_free(k->call);
    opt_job_free(k->opts);
    plugin_set_unref(k->s);
}

static void nan_ev(struct core_evaluated *e)
{
    double *p = (double *)e;
    for (size_t i = 0; i < sizeof *e / sizeof(double); i++)
        p[i] = NAN;
}

static void test_hook_evaluate_with_params(void)
{
    const char *kv[] = {"job.autoscaler.metrics.custom-evaluators",
                        "cap",
                        "job.autoscaler.metrics.custom-evaluator.cap.class",
                        "external_limit",
                        "job.autoscaler.metrics.custom-evaluator.cap.vertex",
                        "sink",
                        "job.autoscaler.metrics.custom-evaluator.cap.max-rate",
                        "600",
                        NULL};
    struct hk k;
    hk_init(&k, kv);
    struct core_evaluated ev;
    nan_ev(&ev);
    ev.target_data_rate = 2200;
    ev.catch_up_data_rate = 20;
    ev.true_processing_rate = 5000;
    char err[512] = "";
    /* src reads 2000/s for the sink's 1000/s: its share of the 600/s limit is 1200 (see
     * policies/external_limit.test for the thresholds: up 1200, down 3200) */
    ASSERT_EQ(k.h.evaluate(k.h.ud, "cap", &k.v[0], &ev, false, T, err, sizeof err), 0);
    ASSERT_NEAR(ev.target_data_rate, 1200, 1e-9);
    ASSERT_NEAR(ev.catch_up_data_rate, 0, 0);
    ASSERT_NEAR(ev.scale_up_rate_threshold, 1200, 0);
    ASSERT_NEAR(ev.scale_down_rate_threshold, 3200, 0);
    ASSERT_NEAR(ev.true_processing_rate, 5000, 0); /* not returned: kept */
    /* an unknown instance with no such plugin is the hook's error */
    ASSERT_EQ(k.h.evaluate(k.h.ud, "nothere", &k.v[0], &ev, false, T, err, sizeof err), -1);
    ASSERT_CONTAINS(err, "no plugin named \"nothere\"");
    /* an executor named as an evaluator */
    ASSERT_EQ(k.h.evaluate(k.h.ud, "freeze", &k.v[0], &ev, false, T, err, sizeof err), -1);
    ASSERT_CONTAINS(err, "plugin \"freeze\" is an executor, not an evaluator");
    hk_deinit(&k);
}

static void test_hook_execute_veto_and_change(void)
{
    const char *kv[] = {"job.autoscaler.scaling.custom-executors",
                        "gentle;hpa_exec",
                        "job.autoscaler.scaling.custom-executor.gentle.class",
                        "freeze",
                        "job.autoscaler.scaling.custom-executor.gentle.max-factor",
                        "1.5",
                        NULL};
    struct hk k;
    hk_init(&k, kv);
    /* freeze has priority 10, hpa_exec 0: hpa_exec runs first */
    ASSERT_EQ(k.cfg.n_executors, 2);
    ASSERT_STR(k.cfg.executors[0], "hpa_exec");
    ASSERT_STR(k.cfg.executors[1], "gentle");
    struct core_vdecision vd[1];
    memset(vd, 0, sizeof vd);
    vd[0].id = "sink";
    vd[0].current = 4;
    vd[0].target = 12;
    nan_ev(&vd[0].ev);
    struct core_decision d;
    memset(&d, 0, sizeof d);
    d.at = T;
    d.vertices = vd;
    d.n_vertices = 1;
    bool veto = true;
    char err[512] = "";
    /* max-factor 1.5: ceil(4 x 1.5) = 6 */
    ASSERT_EQ(k.h.execute(k.h.ud, "gentle", &d, T, &veto, err, sizeof err), 0);
    ASSERT(!veto);
    ASSERT_EQ(vd[0].target, 6);
    hk_deinit(&k);

    const char *kv2[] = {"job.autoscaler.scaling.custom-executors", "freeze",
                         "job.autoscaler.scaling.custom-executor.freeze.until",
                         "2026-12-24T00:00:00Z", NULL};
    hk_init(&k, kv2);
    vd[0].target = 12;
    ASSERT_EQ(k.h.execute(k.h.ud, "freeze", &d, T, &veto, err, sizeof err), 0);
    ASSERT(veto);
    ASSERT_STR(err, "change freeze until 2026-12-24T00:00:00Z");
    ASSERT_EQ(vd[0].target, 12);
    hk_deinit(&k);
}

static void test_hook_align_and_exclusion(void)
{
    const char *kv[] = {"job.autoscaler.scaling.parallelism-alignment.mode",
                        "tm_align",
                        "taskmanager.numberOfTaskSlots",
                        "4",
                        "job.autoscaler.excluded.periods",
                        "* * 10 * * ?",
                        NULL};
    struct hk k;
    hk_init(&k, kv);
    ASSERT_EQ(k.cfg.align_mode, CORE_ALIGN_PLUGIN);
    struct core_align_ctx a = {.vertex = "sink",
                               .current = 2,
                               .proposed = 5,
                               .lower = 1,
                               .upper = 128,
                               .max_parallelism = 128};
    int out = 0;
    char err[512] = "", why[256] = "";
    /* ceil(5 / 4) x 4 = 8 */
    ASSERT_EQ(k.h.align(k.h.ud, k.cfg.align_plugin, &a, &out, err, sizeof err), 0);
    ASSERT_EQ(out, 8);
    bool ex = false;
    ASSERT_EQ(k.h.excluded(k.h.ud, &k.cfg, T, &ex, why, sizeof why, err, sizeof err), 0);
    ASSERT(ex);
    ASSERT_STR(why, "* * 10 * * ?");
    /* 11:00Z is outside */
    ASSERT_EQ(k.h.excluded(k.h.ud, &k.cfg, T + 57 * 60000, &ex, why, sizeof why, err, sizeof err),
              0);
    ASSERT(!ex);
    hk_deinit(&k);
}

static void test_exclusion_falls_back_to_native(void)
{
    fresh_dir();
    put_s("only.lua", OK_EVAL);
    struct plugin_set *s = NULL;
    char *err = load(&relaxed, &s);
    rm_dir();
    ASSERT(err == NULL);
    struct core_config cfg;
    opt_config_defaults(&cfg);
    struct plugin_call *c = plugin_call_new(s, "j", NULL, &cfg, NULL, NULL);
    struct core_hooks h;
    plugin_call_hooks(c, &h);
    ASSERT(h.excluded == cron_excluded_hook);
    plugin_call_free(c);
    plugin_set_unref(s);
}

static void test_failing_hook_keeps_state_usable(void)
{
    fresh_dir();
    put_s("bad.lua", "return { kind = 'executor', execute = function(d, ctx)\n"
                     "  if ctx.params.mode == 'loop' then while true do end end\n"
                     "  if ctx.params.mode == 'table' then return { vertices = { nope = 3 } } end\n"
                     "  if ctx.params.mode == 'frac' then return { vertices = { v = 2.5 } } end\n"
                     "  error('exec boom')\n"
                     "end }");
    struct plugin_set *s = NULL;
    char *err = load(&relaxed, &s);
    rm_dir();
    ASSERT(err == NULL);
    const char *modes[] = {"loop", "table", "frac", "boom"};
    const char *want[] = {"bad: instruction budget exceeded", "unknown vertex 'nope'",
                          "target must be an integer in [1, 1000000] (got 2.5)",
                          "bad.lua:5: exec boom"};
    for (int m = 0; m < 4; m++) {
        struct opt_job *o = opt_job_new();
        char *e = NULL;
        opt_job_set(o, OPT_JOB, "job.autoscaler.scaling.custom-executor.bad.mode", modes[m], &e);
        struct core_config cfg;
        opt_job_resolve(o, &cfg, &e);
        struct plugin_call *c = plugin_call_new(s, "j", o, &cfg, NULL, NULL);
        struct core_hooks h;
        plugin_call_hooks(c, &h);
        struct core_vdecision vd = {.id = "v", .current = 1, .target = 4};
        struct core_decision d = {.vertices = &vd, .n_vertices = 1};
        bool veto = false;
        char msg[512] = "";
        ASSERT_EQ(h.execute(h.ud, "bad", &d, T, &veto, msg, sizeof msg), -1);
        ASSERT_CONTAINS(msg, want[m]);
        ASSERT_EQ(vd.target, 4); /* nothing half-applied */
        plugin_call_free(c);
        opt_job_free(o);
    }
    struct plugin_info in;
    plugin_set_info(s, 0, &in);
    ASSERT_EQ(in.calls, 4);
    ASSERT_EQ(in.errors, 4);
    plugin_set_unref(s);
}

/* governor.window(vertex) reads the window's samples oldest first, from its compressed form
 * and from the rows a decision decodes alike: three samples of src, records_in 10, 20, 30,
 * lag absent (nil). */
static void test_window_from_plugins(void)
{
    fresh_dir();
    put_s("win.lua", "return { kind = 'evaluator', evaluate = function(v, e, ctx)\n"
                     "  local n, sum, nils = 0, 0, 0\n"
                     "  for _, s in ipairs(governor.window(v.id)) do\n"
                     "    n = n + 1; sum = sum + s.records_in * n\n"
                     "    if s.lag == nil then nils = nils + 1 end\n"
                     "  end\n"
                     "  return { true_processing_rate = n * 1000000 + sum * 10 + nils }\n"
                     "end }");
    struct plugin_set *s = NULL;
    char *err = load(&relaxed, &s);
    rm_dir();
    ASSERT(err == NULL);
    struct core_state *st = core_state_new();
    st->w.n_vertices = 1;
    st->w.ids = core__xcalloc(1, sizeof *st->w.ids);
    st->w.ids[0] = core__strdup("src");
    st->w.parallelism = core__xcalloc(1, sizeof *st->w.parallelism);
    st->w.parallelism[0] = 1;
    struct win x;
    win_init(&x, 1, 3, 10000, NAN);
    for (int k = 0; k < 3; k++)
        x.r[k]->v[0].rec_in = 10.0 * (k + 1);
    win_put(&x, &st->w);
    win_free(&x);
    struct core_vertex_in v = {.id = "src", .parallelism = 1, .max_parallelism = 128};
    struct core_sample sm = {.at = T, .running = true, .vertices = &v, .n_vertices = 1};
    struct opt_job *o = opt_job_new();
    char *e = NULL;
    opt_job_set(o, OPT_JOB, "job.autoscaler.metrics.custom-evaluators", "win", &e);
    struct core_config cfg;
    opt_job_resolve(o, &cfg, &e);
    for (int decoded = 0; decoded < 2; decoded++) {
        if (decoded)
            core__window_decode(&st->w);
        struct plugin_call *c = plugin_call_new(s, "j", o, &cfg, st, &sm);
        struct core_hooks h;
        plugin_call_hooks(c, &h);
        struct core_evaluated ev;
        nan_ev(&ev);
        char msg[512] = "";
        ASSERT_EQ(h.evaluate(h.ud, "win", &v, &ev, false, T, msg, sizeof msg), 0);
        /* 3 samples; 10 x 1 + 20 x 2 + 30 x 3 = 140; 3 without lag */
        ASSERT_NEAR(ev.true_processing_rate, 3001403, 0);
        plugin_call_free(c);
    }
    opt_job_free(o);
    core_state_free(st);
    plugin_set_unref(s);
}

TEST_MAIN(TEST_ENTRY(test_shipped_set_loads), TEST_ENTRY(test_load_errors_name_the_file),
          TEST_ENTRY(test_bytecode_lib_refused), TEST_ENTRY(test_revision_tracks_content),
          TEST_ENTRY(test_each_file_and_refs), TEST_ENTRY(test_deadline_stops_a_loop),
          TEST_ENTRY(test_memory_cap_fails_the_call_only), TEST_ENTRY(test_budget),
          TEST_ENTRY(test_pattern_guard), TEST_ENTRY(test_hook_evaluate_with_params),
          TEST_ENTRY(test_hook_execute_veto_and_change), TEST_ENTRY(test_hook_align_and_exclusion),
          TEST_ENTRY(test_exclusion_falls_back_to_native),
          TEST_ENTRY(test_failing_hook_keeps_state_usable), TEST_ENTRY(test_window_from_plugins))
