/*
 * bench_plugin.c - what one plugin call costs the host. A decision of a four-vertex job
 * calls an evaluator on every vertex, an executor once and an alignment on every vertex,
 * through the same hooks the core is handed (plugin_call_new, plugin_call_hooks). The
 * baseline is the same Lua functions called with lua_pcall on tables built by hand in a
 * plain Lua state (no sandbox, no limits, no marshalling of the host's structs), measured
 * in this process, so the ratio does not depend on the machine's speed of the moment.
 *
 * usage: bench_plugin [DECISIONS]
 */
#include <lauxlib.h>
#include <lualib.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/core.h"
#include "plugin/plugin.h"

#define N_V 4

static const char EVAL[] = "return { kind = 'evaluator', evaluate = function(v, e, ctx)\n"
                           "  local f = tonumber(ctx.params.factor or '1')\n"
                           "  return { target_data_rate = (e.target_data_rate or 0) * f }\n"
                           "end }\n";
static const char EXEC[] = "return { kind = 'executor', execute = function(d, ctx)\n"
                           "  for _, v in ipairs(d.vertices) do\n"
                           "    if v.target > 2 * v.current then v.target = 2 * v.current end\n"
                           "  end\n"
                           "  return d\n"
                           "end }\n";
static const char ALIGN[] = "return { kind = 'alignment', align = function(a, ctx)\n"
                            "  return math.max(a.lower, math.min(a.upper, a.proposed))\n"
                            "end }\n";

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static void put(const char *dir, const char *name, const char *text)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    if (!f || fputs(text, f) < 0 || fclose(f) != 0) {
        fprintf(stderr, "bench_plugin: cannot write %s\n", path);
        exit(1);
    }
}

/* The baseline: the three functions on hand-built tables, in a plain state. */
static double bare(int decisions)
{
    lua_State *L = luaL_newstate();
    luaL_openlibs(L);
    const char *src[] = {EVAL, EXEC, ALIGN};
    const char *hook[] = {"evaluate", "execute", "align"};
    for (int i = 0; i < 3; i++) {
        if (luaL_loadstring(L, src[i]) != LUA_OK || lua_pcall(L, 0, 1, 0) != LUA_OK) {
            fprintf(stderr, "bench_plugin: %s\n", lua_tostring(L, -1));
            exit(1);
        }
        lua_getfield(L, -1, hook[i]);
        lua_setglobal(L, hook[i]);
        lua_pop(L, 1);
    }
    double t0 = now_ns();
    for (int k = 0; k < decisions; k++) {
        lua_createtable(L, 0, 4); /* ctx */
        lua_createtable(L, 0, 1);
        lua_pushliteral(L, "1.5");
        lua_setfield(L, -2, "factor");
        lua_setfield(L, -2, "params");
        int ctx = lua_gettop(L);
        for (int v = 0; v < N_V; v++) {
            lua_getglobal(L, "evaluate");
            lua_createtable(L, 0, 3);
            lua_pushliteral(L, "v");
            lua_setfield(L, -2, "id");
            lua_createtable(L, 0, 2);
            lua_pushnumber(L, 1000.5);
            lua_setfield(L, -2, "target_data_rate");
            lua_pushvalue(L, ctx);
            lua_pcall(L, 3, 2, 0);
            lua_pop(L, 2);
        }
        lua_getglobal(L, "execute");
        lua_createtable(L, 0, 1);
        lua_createtable(L, N_V, 0);
        for (int v = 0; v < N_V; v++) {
            lua_createtable(L, 0, 3);
            lua_pushinteger(L, 2);
            lua_setfield(L, -2, "current");
            lua_pushinteger(L, 8);
            lua_setfield(L, -2, "target");
            lua_rawseti(L, -2, v + 1);
        }
        lua_setfield(L, -2, "vertices");
        lua_pushvalue(L, ctx);
        lua_pcall(L, 2, 2, 0);
        lua_pop(L, 2);
        for (int v = 0; v < N_V; v++) {
            lua_getglobal(L, "align");
            lua_createtable(L, 0, 3);
            lua_pushinteger(L, 1);
            lua_setfield(L, -2, "lower");
            lua_pushinteger(L, 128);
            lua_setfield(L, -2, "upper");
            lua_pushinteger(L, 5);
            lua_setfield(L, -2, "proposed");
            lua_pushvalue(L, ctx);
            lua_pcall(L, 2, 2, 0);
            lua_pop(L, 2);
        }
        lua_settop(L, 0);
    }
    double t = (now_ns() - t0) / decisions;
    lua_close(L);
    return t;
}

int main(int argc, char **argv)
{
    int decisions = argc > 1 ? atoi(argv[1]) : 20000;
    char dir[] = "/tmp/governor-bench-plugin-XXXXXX";
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    put(dir, "ev.lua", EVAL);
    put(dir, "ex.lua", EXEC);
    put(dir, "al.lua", ALIGN);
    /* the server's instruction and memory limits; the deadlines of an offline run, so that
     * a busy machine makes the figures slower, not the calls fail */
    struct plugin_limits lim;
    plugin_limits_offline(&lim, NULL);
    struct plugin_set *set = NULL;
    char *err = NULL;
    if (plugin_set_load(dir, &lim, &set, &err) < 0) {
        fprintf(stderr, "bench_plugin: %s\n", err);
        return 1;
    }
    struct opt_job *opts = opt_job_new();
    if (opt_job_set(opts, OPT_JOB, "job.autoscaler.metrics.custom-evaluator.ev.factor", "1.5",
                    &err) < 0) {
        fprintf(stderr, "bench_plugin: %s\n", err);
        return 1;
    }
    struct core_config cfg;
    if (opt_job_resolve(opts, &cfg, &err) < 0) {
        fprintf(stderr, "bench_plugin: %s\n", err);
        return 1;
    }

    static const char *const ids[N_V] = {"src", "map", "agg", "sink"};
    struct core_input in[N_V];
    struct core_vertex_in vin[N_V];
    struct core_vdecision vd[N_V];
    memset(vin, 0, sizeof vin);
    memset(vd, 0, sizeof vd);
    for (int v = 0; v < N_V; v++) {
        in[v] = (struct core_input){.from = ids[v > 0 ? v - 1 : 0], .ship = CORE_SHIP_HASH};
        vin[v] = (struct core_vertex_in){.id = ids[v],
                                         .parallelism = 2,
                                         .max_parallelism = 128,
                                         .inputs = v ? &in[v] : NULL,
                                         .n_inputs = v ? 1 : 0,
                                         .busy_min = 500,
                                         .busy_avg = 600,
                                         .busy_max = 700,
                                         .backpressured = 0,
                                         .records_in = 1e6,
                                         .records_out = 1e6,
                                         .accumulated_busy_ms = NAN,
                                         .records_in_per_s = 1000,
                                         .records_out_per_s = 1000,
                                         .pending_records = NAN};
        vd[v].id = ids[v];
        vd[v].current = 2;
        vd[v].raw_target = vd[v].target = 8;
    }
    struct core_sample sm = {.at = 1764410400000LL,
                             .running_since = 1764400000000LL,
                             .running = true,
                             .vertices = vin,
                             .n_vertices = N_V};

    double t_bare = bare(decisions);
    int calls = 0, failed = 0;
    double t0 = now_ns();
    for (int k = 0; k < decisions; k++) {
        struct plugin_call *c = plugin_call_new(set, "bench", opts, &cfg, NULL, &sm);
        struct core_hooks h;
        plugin_call_hooks(c, &h);
        char e[512];
        for (int v = 0; v < N_V; v++) {
            struct core_evaluated ev;
            double *f = (double *)&ev;
            for (size_t i = 0; i < sizeof ev / sizeof(double); i++)
                f[i] = NAN;
            ev.target_data_rate = 1000.5;
            ev.load = 0.6;
            failed += h.evaluate(h.ud, "ev", &vin[v], &ev, false, sm.at, e, sizeof e) < 0;
            calls++;
        }
        struct core_decision d = {.at = sm.at, .n_vertices = N_V, .vertices = vd};
        bool veto = false;
        failed += h.execute(h.ud, "ex", &d, sm.at, &veto, e, sizeof e) < 0;
        calls++;
        for (int v = 0; v < N_V; v++) {
            struct core_align_ctx a = {.vertex = ids[v],
                                       .current = 2,
                                       .proposed = 5,
                                       .lower = 1,
                                       .upper = 128,
                                       .max_parallelism = 128};
            int out = 0;
            failed += h.align(h.ud, "al", &a, &out, e, sizeof e) < 0;
            calls++;
        }
        plugin_call_free(c);
        for (int v = 0; v < N_V; v++)
            vd[v].target = 8;
    }
    double t_host = (now_ns() - t0) / decisions;
    if (failed) {
        fprintf(stderr, "bench_plugin: %d calls failed\n", failed);
        return 1;
    }
    int per = calls / decisions;
    printf("bare Lua (baseline):  %8.0f ns/decision, %6.0f ns/call\n", t_bare, t_bare / per);
    printf("plugin host:          %8.0f ns/decision, %6.0f ns/call (%.2fx the baseline)\n", t_host,
           t_host / per, t_host / t_bare);
    plugin_set_unref(set);
    opt_job_free(opts);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    return system(cmd) == 0 ? 0 : 1;
}
