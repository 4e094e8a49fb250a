/*
 * Unit tests for the bounds of the Lua host (server/plugin/) against a
 * hostile plugin: a message handler that loops (at call time and at load time), a pending
 * __close after a stop, VM instructions that each take milliseconds (the deadline's
 * watchdog), library calls charged before they run, the limits shared by the calls of one
 * decision (and of one load), the range of every number a hook returns, and the log rate.
 * Times are checked with wide margins (a loaded or sanitized machine is slow): what is
 * checked is that a call stops near its limit, where the unbounded host took seconds or
 * forever.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "test.h"

#include "options/options.h"
#include "plugin/plugin.h"

#define T 1764410580000LL

/* ---------------------------------------------------------------- helpers -- */

static char tmpdir[64];

static void put(const char *rel, const char *text)
{
    char path[256];
    snprintf(path, sizeof path, "%s/%s", tmpdir, rel);
    FILE *f = fopen(path, "wb");
    fwrite(text, 1, strlen(text), f);
    fclose(f);
}

static void fresh_dir(void)
{
    snprintf(tmpdir, sizeof tmpdir, "/tmp/governor-limits-XXXXXX");
    if (!mkdtemp(tmpdir))
        abort();
}

static void rm_dir(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
    if (system(cmd) != 0)
        fprintf(stderr, "cannot remove %s\n", tmpdir);
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* Loads a directory holding the one file name.lua with text; NULL on a load error (in
 * *errp). */
static struct plugin_set *load_one(const char *name, const char *text,
                                   const struct plugin_limits *lim, char **errp)
{
    fresh_dir();
    char file[96];
    snprintf(file, sizeof file, "%s.lua", name);
    put(file, text);
    struct plugin_set *s = NULL;
    *errp = NULL;
    if (plugin_set_load(tmpdir, lim, &s, errp) < 0)
        s = NULL;
    rm_dir();
    return s;
}

/* An evaluator that runs the Lua expression ctx.params.x names from ATTACKS (a table of
 * functions) and returns what it gives. */
#define ATTACK_PLUGIN(body)                                                                        \
    "local A = {\n" body "\n}\n"                                                                   \
    "return { kind = 'evaluator', evaluate = function(v, e, ctx)\n"                                \
    "  return A[ctx.params.x]()\n"                                                                 \
    "end }"

static int call_attack(struct plugin_set *s, const char *attack, char **out, char **err, double *ms)
{
    char ctx[128];
    snprintf(ctx, sizeof ctx, "{\"params\":{\"x\":\"%s\"}}", attack);
    double t0 = now_ms();
    int rc = plugin_call_json(s, "p", "[{},{}]", ctx, out, err);
    *ms = now_ms() - t0;
    return rc;
}

/* -------------------------------------------------------- decisions -- */

struct dk {
    struct plugin_set *s;
    struct opt_job *opts;
    struct core_config cfg;
    struct plugin_call *call;
    struct core_hooks h;
    struct core_vertex_in v;
};

/* A decision's binding of the set to the job options kv (NULL-terminated pairs). */
static void dk_init(struct dk *k, struct plugin_set *s, const char *const *kv)
{
    memset(k, 0, sizeof *k);
    char *err = NULL;
    k->s = s;
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
    k->v = (struct core_vertex_in){.id = "v", .parallelism = 2, .max_parallelism = 128};
    k->call = plugin_call_new(s, "j", k->opts, &k->cfg, NULL, NULL);
    plugin_call_hooks(k->call, &k->h);
}

static void dk_deinit(struct dk *k)
{
    plugin_call_free(k->call);
    opt_job_free(k->opts);
}

static void nan_ev(struct core_evaluated *e)
{
    double *p = (double *)e;
    for (size_t i = 0; i < sizeof *e / sizeof(double); i++)
        p[i] = NAN;
}

/* ------------------------------------------------- message handlers -- */

static const char *XPCALL = ATTACK_PLUGIN(
    "loop = function() return xpcall(error, function() while true do end end) end,\n"
    "nested = function()\n"
    "  return pcall(xpcall, function() error('x') end, function()\n"
    "    return xpcall(error, function() while true do end end) end)\n"
    "end,\n"
    "handled = function()\n"
    "  return xpcall(function() error('boom') end, function(m) return 'handled: ' .. m end)\n"
    "end,\n"
    "handler_fails = function() return xpcall(error, function() error('again') end) end,\n"
    "args = function() return xpcall(function(a, b) return a + b end, print, 2, 3) end,\n"
    "fine = function() return 'fine' end,");

/* A message handler that loops is stopped by the budget, or by the deadline when the budget
 * is out of reach; the state is usable afterwards. (Lua runs a handler with the hooks off
 * when the error came from the count hook: the server hung here at 100% CPU.) */
static void test_xpcall_handler_is_bounded(void)
{
    char *err = NULL, *out = NULL;
    double ms;
    struct plugin_limits lim = {.timeout_ms = 5000, .decision_timeout_ms = 5000};
    struct plugin_set *s = load_one("p", XPCALL, &lim, &err);
    ASSERT(s != NULL);
    const char *attacks[] = {"loop", "nested"};
    for (int i = 0; i < 2; i++) {
        ASSERT_EQ(call_attack(s, attacks[i], &out, &err, &ms), -1);
        ASSERT_STR(err, "p: instruction budget exceeded (1000000 instructions)");
        ASSERT(ms < 2000);
        free(err);
        ASSERT_EQ(call_attack(s, "fine", &out, &err, &ms), 0);
        ASSERT_STR(out, "[\"fine\"]");
        free(out);
    }
    /* xpcall still works as Lua's for a plugin that means well */
    ASSERT_EQ(call_attack(s, "handled", &out, &err, &ms), 0);
    ASSERT_STR(out, "[false,\"handled: p.lua:8: boom\"]");
    free(out);
    ASSERT_EQ(call_attack(s, "handler_fails", &out, &err, &ms), 0);
    ASSERT_STR(out, "[false,\"error in error handling\"]");
    free(out);
    ASSERT_EQ(call_attack(s, "args", &out, &err, &ms), 0);
    ASSERT_STR(out, "[true,5]");
    free(out);
    plugin_set_unref(s);

    /* with no budget to speak of, the deadline */
    lim = (struct plugin_limits){.instructions = 1000000000000LL,
                                 .timeout_ms = 50,
                                 .decision_instructions = 1000000000000LL};
    s = load_one("p", XPCALL, &lim, &err);
    ASSERT(s != NULL);
    ASSERT_EQ(call_attack(s, "loop", &out, &err, &ms), -1);
    ASSERT_STR(err, "p: deadline exceeded (50 ms)");
    ASSERT(ms >= 49 && ms < 2000);
    free(err);
    plugin_set_unref(s);
}

/* The same line at the top level of a file: the load fails, naming the file. */
static void test_load_is_bounded(void)
{
    char *err = NULL;
    struct plugin_limits lim = {.timeout_ms = 5000, .decision_timeout_ms = 5000};
    double t0 = now_ms();
    struct plugin_set *s =
        load_one("top", "xpcall(error, function() while true do end end)\nreturn {}", &lim, &err);
    ASSERT(s == NULL);
    ASSERT_STR(err, "top.lua: instruction budget exceeded (1000000 instructions)");
    ASSERT(now_ms() - t0 < 2000);
    free(err);

    /* All the files of one load share the per-decision instruction budget: the second
     * file gets what the first left. */
    lim = (struct plugin_limits){.timeout_ms = 5000, .decision_instructions = 1500000};
    fresh_dir();
    put("a.lua", "local i = 0 while i < 200000 do i = i + 1 end\n"
                 "return { kind = 'evaluator', evaluate = print }");
    put("b.lua", "while true do end");
    t0 = now_ms();
    ASSERT_EQ(plugin_set_load(tmpdir, &lim, &s, &err), -1);
    rm_dir();
    ASSERT_STR(err, "b.lua: the load's plugin budget is spent (1500000 instructions across its "
                    "plugin calls)");
    ASSERT(now_ms() - t0 < 2000);
    free(err);

    /* and ten times the per-decision deadline */
    lim = (struct plugin_limits){.instructions = 1000000000000LL,
                                 .timeout_ms = 5000,
                                 .decision_instructions = 1000000000000LL,
                                 .decision_timeout_ms = 10};
    fresh_dir();
    put("a.lua", "while true do end");
    t0 = now_ms();
    ASSERT_EQ(plugin_set_load(tmpdir, &lim, &s, &err), -1);
    rm_dir();
    double ms = now_ms() - t0;
    ASSERT_STR(err, "a.lua: the load's plugin deadline passed (100 ms across its plugin calls)");
    ASSERT(ms >= 99 && ms < 2000);
    free(err);
}

/* After a stop, every further instruction raises: the pending __close handlers (one per
 * frame of a recursion here) end at their first instruction instead of running on until
 * the count hook next looks (20,000 x 1,000 instructions). Counted, not timed: each handler
 * counts its steps in N, which the next call returns. */
static void test_close_handlers_after_a_stop(void)
{
    char *err = NULL, *out = NULL;
    double ms;
    struct plugin_limits lim = {.timeout_ms = 5000, .decision_timeout_ms = 5000};
    struct plugin_set *s =
        load_one("p",
                 "local N = 0\n"
                 "local mt = {__close = function() N = N + 1 while true do N = N + 1 end end}\n"
                 "local function deep(n)\n"
                 "  local x <close> = setmetatable({}, mt)\n"
                 "  if n > 0 then return deep(n - 1) + 0 end\n"
                 "  while true do end\n"
                 "end\n"
                 "return { kind = 'evaluator', evaluate = function(v, e, ctx)\n"
                 "  if ctx.params.x == 'count' then return N end\n"
                 "  return deep(20000)\n"
                 "end }",
                 &lim, &err);
    ASSERT(s != NULL);
    ASSERT_EQ(call_attack(s, "close", &out, &err, &ms), -1);
    ASSERT_STR(err, "p: instruction budget exceeded (1000000 instructions)");
    free(err);
    ASSERT_EQ(call_attack(s, "count", &out, &err, &ms), 0);
    ASSERT_STR(out, "[0]");
    free(out);
    plugin_set_unref(s);
}

/* One VM instruction can take milliseconds (here: converting an 8 MB string of digits to a
 * number as a for loop's start); the watchdog stops the call at the next instruction after
 * the deadline (here the decision's, 100 ms), where the count hook would look at the clock
 * only a thousand instructions (a second) later. */
static void test_deadline_holds_for_slow_instructions(void)
{
    char *err = NULL, *out = NULL;
    double ms;
    struct plugin_limits lim = {.instructions = 1000000000000LL,
                                .timeout_ms = 5000,
                                .decision_instructions = 1000000000000LL,
                                .decision_timeout_ms = 100};
    struct plugin_set *s = load_one("p",
                                    "local S = ''\n"
                                    "return { kind = 'evaluator', evaluate = function(v, e, ctx)\n"
                                    "  if ctx.params.x == 'grow' then\n"
                                    "    S = string.rep(string.rep('1', 65536), 128) return #S\n"
                                    "  end\n"
                                    "  while true do for i = S, 0 do end end\n"
                                    "end }",
                                    &lim, &err);
    ASSERT(s != NULL);
    ASSERT_EQ(call_attack(s, "grow", &out, &err, &ms), 0); /* no decision: 5 s */
    ASSERT_STR(out, "[8388608]");
    free(out);
    const char *kv[] = {"job.autoscaler.metrics.custom-evaluators", "p", NULL};
    struct dk k;
    dk_init(&k, s, kv);
    struct core_evaluated ev;
    nan_ev(&ev);
    char msg[512];
    double t0 = now_ms();
    ASSERT_EQ(k.h.evaluate(k.h.ud, "p", &k.v, &ev, false, T, msg, sizeof msg), -1);
    ms = now_ms() - t0;
    ASSERT_STR(msg, "p: the decision's plugin deadline passed (100 ms across its plugin calls)");
    ASSERT(ms < 1000);
    dk_deinit(&k);
    plugin_set_unref(s);
}

/* ---------------------------------------------------- library calls -- */

static const char *LIBCALLS = ATTACK_PLUGIN(
    "move = function() return table.move({}, 1, 300000000, 2) end,\n"
    "move_max = function() return table.move({}, 1, math.maxinteger // 2, 2) end,\n"
    "insert_len = function()\n"
    "  table.insert(setmetatable({}, {__len = function() return 1 << 40 end}), 1, 0) end,\n"
    "remove_len = function()\n"
    "  table.remove(setmetatable({}, {__len = function() return 1 << 40 end}), 1) end,\n"
    "date = function() return #os.date(string.rep('%Y', 500000)) end,\n"
    "quote = function() return #string.format('%q', string.rep('\\0\\0\\0\\0\\0\\0\\0\\0', "
    "131072)) end,\n"
    "pack = function() return #string.pack('c20000000', '') end,\n"
    "rep = function() return #string.rep('x', 3000000) end,\n"
    "gsub = function()\n"
    "  return #string.rep('a', 100000):gsub('', string.rep('%0', 5000)) end,\n"
    "codes = function()\n"
    "  local s = 'a' .. string.rep('\\x80\\x80\\x80\\x80\\x80\\x80\\x80\\x80', 250000)\n"
    "  local f = utf8.codes(s)\n"
    "  while true do f(s, 1) end\n"
    "end,\n"
    "arith = function()\n"
    "  local s = string.rep('1111111111111111', 62500)\n"
    "  while true do local x = s + 0 end\n"
    "end,\n"
    "tonumber = function()\n"
    "  local s = string.rep('1111111111111111', 62500)\n"
    "  while true do local x = tonumber(s) end\n"
    "end,\n"
    "concat = function()\n"
    "  local s = string.rep('xxxxxxxxxxxxxxxx', 250000)\n"
    "  while true do local t = s .. 'x' end\n"
    "end,\n"
    "periods = function()\n"
    "  return governor.periods.matches(string.rep('* * * * * ?;', 80000), 0) end,\n"
    "fine = function() return 'fine' end,");

/* Each of these library calls used to run as long as its arguments asked (seconds, or
 * until the deadline passed by far): each is now charged before it runs and refused by the
 * budget at once. */
static void test_library_calls_are_charged(void)
{
    char *err = NULL, *out = NULL;
    double ms;
    struct plugin_limits lim = {.timeout_ms = 5000, .decision_timeout_ms = 5000};
    struct plugin_set *s = load_one("p", LIBCALLS, &lim, &err);
    ASSERT(s != NULL);
    const char *attacks[] = {"move",  "move_max", "insert_len", "remove_len", "date",
                             "quote", "pack",     "rep",        "gsub",       "codes",
                             "arith", "tonumber", "concat",     "periods"};
    for (size_t i = 0; i < sizeof attacks / sizeof attacks[0]; i++) {
        int rc = call_attack(s, attacks[i], &out, &err, &ms);
        if (rc == 0) {
            fprintf(stderr, "    %s: not refused: %s\n", attacks[i], out);
            free(out);
        }
        ASSERT_EQ(rc, -1);
        if (!strstr(err, "instruction budget exceeded") || ms >= 2000)
            fprintf(stderr, "    %s: %.0f ms: %s\n", attacks[i], ms, err);
        ASSERT_STR(err, "p: instruction budget exceeded (1000000 instructions)");
        ASSERT(ms < 2000);
        free(err);
        ASSERT_EQ(call_attack(s, "fine", &out, &err, &ms), 0);
        free(out);
    }
    plugin_set_unref(s);

    /* table.sort is charged per comparison: a 400,000-element sort is refused by a budget
     * that built the array, as the same sort written in Lua would be */
    lim = (struct plugin_limits){.instructions = 8000000, .timeout_ms = 5000};
    s = load_one("p",
                 ATTACK_PLUGIN("sort = function()\n"
                               "  local t = {} for i = 1, 400000 do t[i] = -i end\n"
                               "  table.sort(t) return t[1]\n"
                               "end,\n"
                               "small = function()\n"
                               "  local t = {5, 3, 9, 1} table.sort(t)\n"
                               "  table.insert(t, 1, 0) table.insert(t, 10)\n"
                               "  return table.concat(t, ','), table.remove(t, 1), "
                               "table.unpack(t, 2, 3)\n"
                               "end,"),
                 &lim, &err);
    ASSERT(s != NULL);
    ASSERT_EQ(call_attack(s, "sort", &out, &err, &ms), -1);
    ASSERT_STR(err, "p: instruction budget exceeded (8000000 instructions)");
    free(err);
    ASSERT_EQ(call_attack(s, "small", &out, &err, &ms), 0);
    ASSERT_STR(out, "[\"0,1,3,5,9,10\",0,3,5]");
    free(out);
    plugin_set_unref(s);
}

/* The hook calls of one decision share its limits: once they are spent, the calls left
 * are not run, and one record says how many were skipped. */
static void test_decision_budget(void)
{
    char *err = NULL;
    const char *spin = "return { kind = 'evaluator', evaluate = function() while true do end end }";
    const char *kv[] = {"job.autoscaler.metrics.custom-evaluators", "spin", NULL};

    /* by instructions: three calls of about 1,000,000 spend 3,000,000 */
    struct plugin_limits lim = {
        .timeout_ms = 5000, .decision_instructions = 3000000, .decision_timeout_ms = 5000};
    struct plugin_set *s = load_one("spin", spin, &lim, &err);
    ASSERT(s != NULL);
    struct dk k;
    dk_init(&k, s, kv);
    char msg[512];
    struct core_evaluated ev;
    double t0 = now_ms();
    for (int i = 0; i < 50; i++) {
        nan_ev(&ev);
        ASSERT_EQ(k.h.evaluate(k.h.ud, "spin", &k.v, &ev, false, T, msg, sizeof msg), -1);
        if (i < 2)
            ASSERT_STR(msg, "spin: instruction budget exceeded (1000000 instructions)");
        else if (i == 2) /* a little less than 1,000,000 was left */
            ASSERT_STR(msg, "spin: the decision's plugin budget is spent (3000000 instructions "
                            "across its plugin calls)");
        else
            ASSERT_CONTAINS(msg, "spin: not run: the decision's plugin budget is spent");
    }
    ASSERT(now_ms() - t0 < 5000);
    ASSERT_EQ(plugin_call_n_records(k.call), 4);
    const struct plugin_record *r = plugin_call_record(k.call, 3);
    ASSERT_STR(r->outcome, "skipped");
    ASSERT_CONTAINS(r->error, "; calls skipped: 47");
    dk_deinit(&k);
    plugin_set_unref(s);

    /* by time: the first call meets the decision's deadline, the 49 others are skipped */
    lim = (struct plugin_limits){.instructions = 1000000000000LL,
                                 .timeout_ms = 5000,
                                 .decision_instructions = 1000000000000LL,
                                 .decision_timeout_ms = 60};
    s = load_one("spin", spin, &lim, &err);
    ASSERT(s != NULL);
    dk_init(&k, s, kv);
    t0 = now_ms();
    for (int i = 0; i < 50; i++) {
        nan_ev(&ev);
        ASSERT_EQ(k.h.evaluate(k.h.ud, "spin", &k.v, &ev, false, T, msg, sizeof msg), -1);
        if (i == 0)
            ASSERT_STR(msg, "spin: the decision's plugin deadline passed (60 ms across its "
                            "plugin calls)");
    }
    double ms = now_ms() - t0;
    ASSERT(ms >= 59 && ms < 2000);
    ASSERT_EQ(plugin_call_n_records(k.call), 2);
    ASSERT_CONTAINS(plugin_call_record(k.call, 1)->error, "; calls skipped: 49");
    dk_deinit(&k);
    plugin_set_unref(s);
}

/* ----------------------------------------------------------- ranges -- */

/* Every integer a hook returns is range-checked, never truncated into an int. */
static void test_integers_are_range_checked(void)
{
    char *err = NULL;
    struct plugin_limits lim = {.timeout_ms = 5000};
    fresh_dir();
    put("al.lua", "return { kind = 'alignment', align = function(a, ctx)\n"
                  "  return ({\n"
                  "    big = (1 << 32) + 5, int_min = 1 << 31, float = 2.0 ^ 40, nan = 0 / 0,\n"
                  "    inf = math.huge, neg = -1, zero = 0, frac = 2.5, text = '7', ok = 7,\n"
                  "    whole = 7.0 })[ctx.params.r]\n"
                  "end }");
    put("ex.lua", "return { kind = 'executor', execute = function(d, ctx)\n"
                  "  d.vertices[1].target = 2.0 ^ 40 return d\n"
                  "end }");
    struct plugin_set *s = NULL;
    ASSERT_EQ(plugin_set_load(tmpdir, &lim, &s, &err), 0);
    rm_dir();
    const struct {
        const char *r;
        const char *got; /* NULL: accepted, 7 */
    } cases[] = {{"big", "4294967301"},
                 {"int_min", "2147483648"},
                 {"float", "1099511627776"},
                 {"nan", "nan"},
                 {"inf", "inf"},
                 {"neg", "-1"},
                 {"zero", "0"},
                 {"frac", "2.5"},
                 {"text", "string"},
                 {"ok", NULL},
                 {"whole", NULL}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *kv[] = {"job.autoscaler.scaling.parallelism-alignment.mode", "al",
                            "job.autoscaler.scaling.parallelism-alignment.mode.al.r", cases[i].r,
                            NULL};
        struct dk k;
        dk_init(&k, s, kv);
        struct core_align_ctx a = {
            .vertex = "v", .current = 2, .proposed = 4, .lower = 1, .upper = 128};
        a.max_parallelism = 128;
        int out = -5;
        char msg[512] = "";
        int rc = k.h.align(k.h.ud, "al", &a, &out, msg, sizeof msg);
        if (cases[i].got) {
            char want[160];
            snprintf(want, sizeof want,
                     "al.lua: align's result must be an integer in [1, 1000000] (got %s)",
                     cases[i].got);
            ASSERT_EQ(rc, -1);
            ASSERT_STR(msg, want);
            ASSERT_EQ(out, -5); /* nothing written */
        } else {
            ASSERT_EQ(rc, 0);
            ASSERT_EQ(out, 7);
        }
        dk_deinit(&k);
    }
    const char *kv[] = {"job.autoscaler.scaling.custom-executors", "ex", NULL};
    struct dk k;
    dk_init(&k, s, kv);
    struct core_vdecision vd = {.id = "v", .current = 2, .target = 4};
    struct core_decision d = {.vertices = &vd, .n_vertices = 1};
    bool veto = false;
    char msg[512] = "";
    ASSERT_EQ(k.h.execute(k.h.ud, "ex", &d, T, &veto, msg, sizeof msg), -1);
    ASSERT_STR(msg, "execute: vertex 'v' target must be an integer in [1, 1000000] (got "
                    "1099511627776)");
    ASSERT_EQ(vd.target, 4);
    dk_deinit(&k);
    plugin_set_unref(s);
}

/* Every figure an evaluator returns is checked against its range, naming it. */
static void test_figures_are_range_checked(void)
{
    char *err = NULL;
    struct plugin_limits lim = {.timeout_ms = 5000};
    struct plugin_set *s =
        load_one("ev",
                 "return { kind = 'evaluator', evaluate = function(v, e, ctx)\n"
                 "  local x = ({huge = math.huge, neg = -5, big = 1e308, nan = 0 / 0,\n"
                 "              half = 0.5, frac = 1.5})[ctx.params.value]\n"
                 "  return { [ctx.params.figure] = x }\n"
                 "end }",
                 &lim, &err);
    ASSERT(s != NULL);
    const struct {
        const char *figure, *value, *want; /* want NULL: accepted */
    } cases[] = {
        {"target_data_rate", "huge",
         "ev.lua: evaluate: metric 'target_data_rate' must be a finite number in [0, 1e+15] "
         "(got inf)"},
        {"target_data_rate", "neg",
         "ev.lua: evaluate: metric 'target_data_rate' must be a finite number in [0, 1e+15] "
         "(got -5)"},
        {"catch_up_data_rate", "nan", "metric 'catch_up_data_rate' must be a finite number"},
        {"load", "big",
         "ev.lua: evaluate: metric 'load' must be a finite number in [0, 1] (got "
         "1e+308)"},
        {"load", "frac", "metric 'load' must be a finite number in [0, 1] (got 1.5)"},
        {"true_processing_rate", "neg",
         "metric 'true_processing_rate' must be a finite number in [0, 1e+15] or math.huge "
         "(got -5)"},
        {"parallelism", "half", "metric 'parallelism' must be an integer in [1, 2147483647]"},
        {"lag", "big", "metric 'lag' must be a finite number in [0, 1e+15]"},
        /* what the core itself uses: TPR and the scale-down threshold may be infinite */
        {"true_processing_rate", "huge", NULL},
        {"scale_down_rate_threshold", "huge", NULL},
        {"load", "half", NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *kv[] = {"job.autoscaler.metrics.custom-evaluators",
                            "ev",
                            "job.autoscaler.metrics.custom-evaluator.ev.figure",
                            cases[i].figure,
                            "job.autoscaler.metrics.custom-evaluator.ev.value",
                            cases[i].value,
                            NULL};
        struct dk k;
        dk_init(&k, s, kv);
        struct core_evaluated ev;
        nan_ev(&ev);
        ev.target_data_rate = 100;
        char msg[512] = "";
        int rc = k.h.evaluate(k.h.ud, "ev", &k.v, &ev, false, T, msg, sizeof msg);
        if (cases[i].want) {
            ASSERT_EQ(rc, -1);
            ASSERT_CONTAINS(msg, cases[i].want);
            ASSERT_NEAR(ev.target_data_rate, 100, 0); /* nothing merged */
        } else {
            ASSERT_EQ(rc, 0);
        }
        dk_deinit(&k);
    }
    plugin_set_unref(s);
}

/* ------------------------------------------------------------- logs -- */

struct sink {
    int lines;
    size_t bytes;
    char last[256];
};

static void sink_cb(void *ud, const char *plugin, const char *msg)
{
    struct sink *k = ud;
    (void)plugin;
    k->lines++;
    k->bytes += strlen(msg);
    snprintf(k->last, sizeof k->last, "%s", msg);
}

/* A plugin printing 100,000 lines of 1 KB in one call logs 20 of them and one line saying
 * how many were suppressed; then at most the burst, then the rate. */
static void test_log_rate(void)
{
    char *err = NULL, *out = NULL;
    double ms;
    struct plugin_limits lim = {.instructions = 100000000, .timeout_ms = 5000};
    struct plugin_set *s = load_one("p",
                                    ATTACK_PLUGIN("flood = function()\n"
                                                  "  local line = string.rep('x', 1024)\n"
                                                  "  for i = 1, 100000 do print(line) end\n"
                                                  "end,\n"
                                                  "one = function() governor.log('one') end,"),
                                    &lim, &err);
    ASSERT(s != NULL);
    struct sink k = {0};
    plugin_set_log_sink(s, sink_cb, &k);
    ASSERT_EQ(call_attack(s, "flood", &out, &err, &ms), 0);
    free(out);
    ASSERT_EQ(k.lines, 21);
    ASSERT(k.bytes < 30 * 1024);
    ASSERT_STR(k.last, "99980 log lines suppressed (a plugin logs at most 20 lines per call, and "
                       "100 at once then 10 a second)");
    /* the burst left: 100 - 21 tokens; then nothing but what the rate gives back */
    k.lines = 0;
    for (int i = 0; i < 200; i++) {
        ASSERT_EQ(call_attack(s, "one", &out, &err, &ms), 0);
        free(out);
    }
    ASSERT(k.lines >= 79 && k.lines < 79 + 20);
    plugin_set_unref(s);
}

TEST_MAIN(TEST_ENTRY(test_xpcall_handler_is_bounded), TEST_ENTRY(test_load_is_bounded),
          TEST_ENTRY(test_close_handlers_after_a_stop),
          TEST_ENTRY(test_deadline_holds_for_slow_instructions),
          TEST_ENTRY(test_library_calls_are_charged), TEST_ENTRY(test_decision_budget),
          TEST_ENTRY(test_integers_are_range_checked), TEST_ENTRY(test_figures_are_range_checked),
          TEST_ENTRY(test_log_rate))
