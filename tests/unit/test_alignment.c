/*
 * Unit tests for core/alignment.c: firstAligned, the built-in modes, the legacy blocking
 * modes with ScalingLimited, applicability and the plugin mode (core/README.md, Alignment).
 * The cases are data, in tests/unit/data/alignment.test (with the hand derivations of their
 * figures), run by align_case below; this file holds the handler and the plugin fixtures.
 */
#include <stdlib.h>

#include "test.h"
#include "options/options.h"
#include "testfile.h"

#include "core/core_int.h"

static const enum core_ship hash_in[] = {CORE_SHIP_HASH};
static const enum core_ship rebalance_in[] = {CORE_SHIP_REBALANCE, CORE_SHIP_FORWARD};

struct hook_log {
    int calls;
    const char *name;
    int current, proposed, lower, upper, max_p, partitions, n_inputs;
    enum core_ship first_ship;
};

/* Snaps down to the nearest divisor of N (the spec's example plugin). */
static int snap_down(void *ud, const char *name, const struct core_align_ctx *a, int *out,
                     char *err, size_t err_len)
{
    (void)err;
    (void)err_len;
    struct hook_log *log = ud;
    log->calls++;
    log->name = name;
    log->current = a->current;
    log->proposed = a->proposed;
    log->lower = a->lower;
    log->upper = a->upper;
    log->max_p = a->max_parallelism;
    log->partitions = a->partitions;
    log->n_inputs = a->n_inputs;
    log->first_ship = a->n_inputs > 0 ? a->input_ships[0] : CORE_SHIP_UNKNOWN;
    int n = a->partitions > 0 ? a->partitions : a->max_parallelism;
    int q = a->proposed;
    while (q > 1 && n % q != 0)
        q--;
    *out = q;
    return 0;
}

static int failing(void *ud, const char *name, const struct core_align_ctx *a, int *out, char *err,
                   size_t err_len)
{
    (void)ud;
    (void)name;
    (void)a;
    *out = 999;
    snprintf(err, err_len, "snap.lua:3: attempt to index a nil value");
    return -1;
}

static int returns_huge(void *ud, const char *name, const struct core_align_ctx *a, int *out,
                        char *err, size_t err_len)
{
    (void)ud;
    (void)name;
    (void)a;
    (void)err;
    (void)err_len;
    *out = 100000;
    return 0;
}

static int returns_zero(void *ud, const char *name, const struct core_align_ctx *a, int *out,
                        char *err, size_t err_len)
{
    (void)ud;
    (void)name;
    (void)a;
    (void)err;
    (void)err_len;
    *out = 0;
    return 0;
}

/* Reads "hash|rebalance|source key=value..." (see alignment.test) into a; -1 if malformed. */
static int parse_vertex(const char *text, struct core_align_ctx *a)
{
    memset(a, 0, sizeof *a);
    a->lower = 1;
    a->upper = 200;
    char buf[256];
    snprintf(buf, sizeof buf, "%s", text);
    char *save = NULL;
    char *w = strtok_r(buf, " ", &save);
    if (!w)
        return -1;
    if (strcmp(w, "hash") == 0) {
        a->vertex = "op";
        a->input_ships = hash_in;
        a->n_inputs = 1;
    } else if (strcmp(w, "rebalance") == 0) {
        a->vertex = "op";
        a->input_ships = rebalance_in;
        a->n_inputs = 2;
    } else if (strcmp(w, "source") == 0) {
        a->vertex = "src";
    } else {
        return -1;
    }
    bool have_p = false, have_to = false, have_max = false;
    while ((w = strtok_r(NULL, " ", &save))) {
        char *eq = strchr(w, '=');
        if (!eq)
            return -1;
        *eq = '\0';
        char *end = NULL;
        long v = strtol(eq + 1, &end, 10);
        if (!eq[1] || *end)
            return -1;
        if (strcmp(w, "p") == 0)
            a->current = (int)v, have_p = true;
        else if (strcmp(w, "to") == 0)
            a->proposed = (int)v, have_to = true;
        else if (strcmp(w, "max") == 0)
            a->max_parallelism = (int)v, have_max = true;
        else if (strcmp(w, "partitions") == 0)
            a->partitions = (int)v;
        else if (strcmp(w, "lower") == 0)
            a->lower = (int)v;
        else if (strcmp(w, "upper") == 0)
            a->upper = (int)v;
        else
            return -1;
    }
    return have_p && have_to && have_max ? 0 : -1;
}

/* Reads the mode field into cfg and the hook table; -1 if unknown. */
static int parse_mode(const char *text, struct core_config *cfg, struct core_hooks *h,
                      bool *with_hooks, char name[64])
{
    static const struct {
        const char *name;
        enum core_align_mode mode;
    } modes[] = {{"BALANCED", CORE_ALIGN_BALANCED},
                 {"EVENLY_SPREAD", CORE_ALIGN_EVENLY_SPREAD},
                 {"OFF", CORE_ALIGN_OFF},
                 {"LEGACY_EVENLY_SPREAD", CORE_ALIGN_LEGACY_EVENLY_SPREAD},
                 {"LEGACY_MAXIMIZE_UTILISATION", CORE_ALIGN_LEGACY_MAXIMIZE_UTILISATION}};
    *with_hooks = false;
    for (size_t i = 0; i < sizeof modes / sizeof modes[0]; i++)
        if (strcmp(text, modes[i].name) == 0) {
            cfg->align_mode = modes[i].mode;
            return 0;
        }
    char hook[32];
    if (sscanf(text, "PLUGIN %63s %31s", name, hook) != 2)
        return -1;
    cfg->align_mode = CORE_ALIGN_PLUGIN;
    cfg->align_plugin = name;
    *with_hooks = strcmp(hook, "none") != 0;
    if (strcmp(hook, "snap_down") == 0)
        h->align = snap_down;
    else if (strcmp(hook, "failing") == 0)
        h->align = failing;
    else if (strcmp(hook, "huge") == 0)
        h->align = returns_huge;
    else if (strcmp(hook, "zero") == 0)
        h->align = returns_zero;
    else if (strcmp(hook, "empty") != 0 && strcmp(hook, "none") != 0)
        return -1;
    return 0;
}

/* The handler of alignment.test (its header lists the verbs and what they print). */
static int align_case(void *ud, const struct testfile_case *c, struct testfile_out *out)
{
    (void)ud;
    const char *verb = c->field[0];
    if (strcmp(verb, "first") == 0 && c->n_fields == 6) {
        bool reducing = strcmp(c->field[5], "reducing") == 0;
        if (!reducing && strcmp(c->field[5], "divisor") != 0) {
            testfile_printf(out, "expected divisor or reducing");
            return -1;
        }
        testfile_printf(out, "%d",
                        core__first_aligned(atoi(c->field[1]), atoi(c->field[2]), atoi(c->field[3]),
                                            atoi(c->field[4]), reducing));
        return 0;
    }
    if (strcmp(verb, "align") != 0 || c->n_fields != 3) {
        testfile_printf(out, "unknown verb or bad fields");
        return -1;
    }
    struct core_config cfg;
    opt_config_defaults(&cfg);
    struct hook_log log = {0};
    struct core_hooks h = {.ud = &log};
    bool with_hooks;
    char name[64];
    struct core_align_ctx a;
    if (parse_mode(c->field[1], &cfg, &h, &with_hooks, name) < 0 ||
        parse_vertex(c->field[2], &a) < 0) {
        testfile_printf(out, "bad mode or vertex");
        return -1;
    }
    struct core_decision d;
    core_decision_init(&d);
    struct core_plugin_err pe;
    memset(&pe, 0, sizeof pe);
    unsigned constraints = 0;
    int v = core__align(&cfg, &a, with_hooks ? &h : NULL, &d, &constraints, &pe);
    testfile_printf(out, "%d", v);
    for (int bit = 0; bit < CORE_C__COUNT; bit++)
        if (constraints & (1u << bit))
            testfile_printf(out, " %s", core_constraint_name(bit));
    for (int i = 0; i < d.n_events; i++)
        testfile_printf(out, "\nevent %s %s %s: %s", d.events[i].type, d.events[i].reason,
                        d.events[i].key ? d.events[i].key : "-", d.events[i].message);
    if (pe.set)
        testfile_printf(out, "\nplugin error %s: %s", pe.plugin, pe.message);
    if (log.calls)
        testfile_printf(out,
                        "\nhook %s: current %d, proposed %d, lower %d, upper %d, max %d, "
                        "partitions %d, inputs %d, first %s",
                        log.name, log.current, log.proposed, log.lower, log.upper, log.max_p,
                        log.partitions, log.n_inputs, core_ship_name(log.first_ship));
    if (log.calls > 1)
        testfile_printf(out, "\nhook called %d times", log.calls);
    core_decision_deinit(&d);
    return 0;
}

static void cases(void)
{
    ASSERT_EQ(testfile_run(TESTFILE_DATA("alignment.test"), align_case, NULL), 0);
}

TEST_MAIN(TEST_ENTRY(cases))
