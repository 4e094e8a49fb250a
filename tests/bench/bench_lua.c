/*
 * bench_lua.c - what a plugin call costs in Lua itself, without governor's host: a plain Lua
 * 5.4 state with a count hook every 1,000 instructions (as the host sets it), the arguments
 * built once, and lua_pcall per call. Three calls are timed:
 *   bare      function(vertex, evaluated, ctx) return nil end
 *   evaluate  policies/external_limit.lua's evaluate, on the benchmark's 4-vertex job with the
 *             limit binding (as bench.py configures it), ctx.log a no-op
 *   execute   policies/freeze.lua's execute with `until` in the future (a veto)
 * Times are CPU time of the process (the machine may be shared). The plugins' own work is what the
 * host's call of them cannot cost less than; the rest of a host call (tests/bench/README.md, the
 * profile) is marshalling and bookkeeping.
 *
 * usage: bench_lua [POLICIES_DIR] [ITERATIONS]   (default ./policies, 200000)
 */
#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static long long hook_calls;

static void count_hook(lua_State *L, lua_Debug *ar)
{
    (void)L;
    (void)ar;
    hook_calls++;
}

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* governor.duration("5 min") -> ms: the units the shipped plugins use. */
static int g_duration(lua_State *L)
{
    const char *s = luaL_checkstring(L, 1);
    char *end;
    double v = strtod(s, &end);
    while (*end == ' ')
        end++;
    double ms = strcmp(end, "min") == 0 ? 60000 : strcmp(end, "s") == 0 ? 1000 : 1;
    lua_pushinteger(L, (lua_Integer)(v * ms));
    return 1;
}

/* governor.time(text) -> ms: a fixed instant far in the future (freeze's `until`). */
static int g_time(lua_State *L)
{
    luaL_checkstring(L, 1);
    lua_pushinteger(L, 4070908800000LL);
    return 1;
}

static int noop(lua_State *L)
{
    (void)L;
    return 0;
}

static void run_file(lua_State *L, const char *path)
{
    if (luaL_loadfilex(L, path, "t") != LUA_OK || lua_pcall(L, 0, 1, 0) != LUA_OK) {
        fprintf(stderr, "bench_lua: %s: %s\n", path, lua_tostring(L, -1));
        exit(1);
    }
}

static const char SETUP[] =
    "local function vtx(id, from, ship, rin)\n"
    "  return {id = id, parallelism = 2, max_parallelism = 128, finished = false,\n"
    "          inputs = from and {{from = from, ship = ship}} or {},\n"
    "          metrics = {busy_min = 300, busy_avg = 400, busy_max = 500, backpressured = 0,\n"
    "                     records_in = 1000000, records_out = 1000000, records_in_per_s = rin}}\n"
    "end\n"
    "local vs = {vtx('source', nil, nil, 1000), vtx('map', 'source', 'FORWARD', 1000),\n"
    "            vtx('agg', 'map', 'HASH', 1000), vtx('sink', 'agg', 'FORWARD', 100)}\n"
    "local ev = {load = 0.88, true_processing_rate = 1087, target_data_rate = 1000,\n"
    "            catch_up_data_rate = 500, scale_up_rate_threshold = 1500,\n"
    "            expected_processing_rate = 2174, parallelism = 2, max_parallelism = 128}\n"
    "local config = {}\n"
    "for i = 1, 150 do config['job.autoscaler.option' .. i] = tostring(i) end\n"
    "config['job.autoscaler.restart.time'] = '5 min'\n"
    "config['job.autoscaler.catch-up.duration'] = '30 min'\n"
    "local ctx = {params = {vertex = 'sink', ['max-rate'] = '120'}, config = config,\n"
    "             job = {name = 'bench', vertices = vs}, now = 1764411390000,\n"
    "             log = governor_log, backlog = false}\n"
    "local xctx = {params = {['until'] = '2099-01-01T00:00:00Z'}, config = config,\n"
    "              job = ctx.job, now = 1764411390000, log = governor_log}\n"
    "local d = {at = 1764411390000, action = 'SCALE_UP', reason = 'HIGH_BACKLOG', vertices = {}}\n"
    "for i, v in ipairs(vs) do\n"
    "  d.vertices[i] = {id = v.id, current = 2, raw_target = 4, target = 4, evaluated = ev}\n"
    "end\n"
    "return vs[3], ev, ctx, d, xctx\n";

/* Times n calls of the function at fn with the n_args values at args..; ns a call. */
static double time_calls(lua_State *L, int fn, int args, int n_args, int n)
{
    double t0 = now_ns();
    for (int i = 0; i < n; i++) {
        lua_pushvalue(L, fn);
        for (int a = 0; a < n_args; a++)
            lua_pushvalue(L, args + a);
        if (lua_pcall(L, n_args, 2, 0) != LUA_OK) {
            fprintf(stderr, "bench_lua: %s\n", lua_tostring(L, -1));
            exit(1);
        }
        lua_pop(L, 2);
    }
    return (now_ns() - t0) / n;
}

int main(int argc, char **argv)
{
    const char *dir = argc > 1 ? argv[1] : "policies";
    int n = argc > 2 ? atoi(argv[2]) : 200000;
    char path[4096];
    lua_State *L = luaL_newstate();
    luaL_openlibs(L);
    lua_sethook(L, count_hook, LUA_MASKCOUNT, 1000);
    /* governor.*, and require "cfg" from the policies' lib */
    lua_newtable(L);
    lua_pushcfunction(L, g_duration);
    lua_setfield(L, -2, "duration");
    lua_pushcfunction(L, g_time);
    lua_setfield(L, -2, "time");
    lua_pushcfunction(L, noop);
    lua_setfield(L, -2, "log");
    lua_setglobal(L, "governor");
    lua_pushcfunction(L, noop);
    lua_setglobal(L, "governor_log");
    snprintf(path, sizeof path, "%s/lib/cfg.lua", dir);
    luaL_getsubtable(L, LUA_REGISTRYINDEX, LUA_LOADED_TABLE);
    run_file(L, path);
    lua_setfield(L, -2, "cfg");
    lua_pop(L, 1);

    if (luaL_loadstring(L, SETUP) != LUA_OK || lua_pcall(L, 0, 5, 0) != LUA_OK) {
        fprintf(stderr, "bench_lua: setup: %s\n", lua_tostring(L, -1));
        return 1;
    }
    int args = lua_gettop(L) - 4; /* vertex, evaluated, ctx, decision, executor ctx */
    luaL_loadstring(L, "return function(vertex, evaluated, ctx) return nil end");
    lua_call(L, 0, 1);
    int bare = lua_gettop(L);
    snprintf(path, sizeof path, "%s/external_limit.lua", dir);
    run_file(L, path);
    lua_getfield(L, -1, "evaluate");
    int evaluate = lua_gettop(L);
    snprintf(path, sizeof path, "%s/freeze.lua", dir);
    run_file(L, path);
    lua_getfield(L, -1, "execute");
    int execute = lua_gettop(L);
    /* freeze's arguments: the decision and its ctx */
    lua_pushvalue(L, args + 3);
    lua_pushvalue(L, args + 4);
    int xargs = lua_gettop(L) - 1;

    time_calls(L, bare, args, 3, n / 10); /* warm */
    double t_bare = time_calls(L, bare, args, 3, n);
    double t_eval = time_calls(L, evaluate, args, 3, n / 4);
    double t_exec = time_calls(L, execute, xargs, 2, n);
    printf("{\"bare_call_ns\": %.0f, \"external_limit_evaluate_ns\": %.0f, "
           "\"freeze_execute_ns\": %.0f, \"hook_calls\": %lld}\n",
           t_bare, t_eval, t_exec, hook_calls);
    lua_close(L);
    return 0;
}
