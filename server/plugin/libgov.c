/*
 * libgov.c - the `governor` table of the sandbox and the plugins' log lines (see libgov.h).
 */
#include <lauxlib.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/state.h"
#include "time/cron.h"
#include "options/options.h"
#include "plugin/libgov.h"
#include "plugin/vm.h"
#include "time/timeutil.h"

/* A logged line is cut at LOG_LINE_MAX bytes, each argument at LOG_ARG_MAX. */
#define LOG_LINE_MAX 4096
#define LOG_ARG_MAX  1024

int libgov_log(lua_State *L)
{
    struct vm *vm = vm_of(L);
    int n = lua_gettop(L);
    luaL_checkstack(L, 2 * n + 2, "log");
    for (int i = 1; i <= n; i++) {
        size_t len;
        luaL_tolstring(L, i, &len);
        if (len > LOG_ARG_MAX) {
            lua_pushlstring(L, lua_tostring(L, -1), LOG_ARG_MAX);
            lua_remove(L, -2);
        }
        if (i < n)
            lua_pushliteral(L, " ");
    }
    lua_concat(L, n > 0 ? 2 * n - 1 : 0);
    size_t len;
    const char *line = lua_tolstring(L, -1, &len);
    vm_charge(L, 1 + (int64_t)len / VM_BYTES_PER_INSTR);
    if (len > LOG_LINE_MAX) {
        lua_pushfstring(L, "%s...", lua_pushlstring(L, line, LOG_LINE_MAX));
        line = lua_tostring(L, -1);
    }
    const char *who = lua_isstring(L, lua_upvalueindex(1)) ? lua_tostring(L, lua_upvalueindex(1))
                                                           : (vm->cur_name ? vm->cur_name : "?");
    struct vm_owner *owner = lua_touserdata(L, lua_upvalueindex(2));
    vm_log_line(vm, owner ? owner : vm->cur_owner, who, line);
    return 0;
}

static int cron_result(lua_State *L, int rc, bool match, char *err)
{
    if (rc < 0) {
        lua_pushstring(L, err ? err : "bad expression");
        free(err);
        return lua_error(L);
    }
    lua_pushboolean(L, match);
    return 1;
}

/* governor.cron/daily/periods.matches(expr, epoch_ms [, tz]) on the native matcher fn. */
static int match_with(lua_State *L, int (*fn)(const char *expr, int64_t epoch_ms, const char *tz,
                                              bool *match, char **errp))
{
    const char *e = luaL_checkstring(L, 1);
    int64_t at = (int64_t)luaL_checknumber(L, 2);
    const char *tz = luaL_optstring(L, 3, "UTC");
    bool m = false;
    char *err = NULL;
    int rc = fn(e, at, tz, &m, &err);
    return cron_result(L, rc, m, err);
}

int libgov_cron(lua_State *L)
{
    return match_with(L, cron_matches);
}

int libgov_daily(lua_State *L)
{
    return match_with(L, cron_daily_matches);
}

int libgov_periods(lua_State *L)
{
    return match_with(L, cron_periods_match);
}

int libgov_duration(lua_State *L)
{
    const char *t = luaL_checkstring(L, 1);
    int64_t ms;
    char *err = NULL;
    if (opt_parse_duration(t, &ms, &err) < 0) {
        lua_pushstring(L, err);
        free(err);
        return lua_error(L);
    }
    lua_pushinteger(L, ms);
    return 1;
}

/* governor.time("2026-12-24T00:00:00Z") -> epoch ms (RFC 3339, Z or +hh:mm offsets). */
int libgov_time(lua_State *L)
{
    const char *t = luaL_checkstring(L, 1);
    int64_t ms;
    enum time_error why;
    if (time_parse_rfc3339(t, &ms, &why) < 0)
        return luaL_error(L, "governor.time: \"%s\" %s", t, time_error_text(why));
    lua_pushinteger(L, ms);
    return 1;
}

static void set_num(lua_State *L, const char *k, double v)
{
    if (isnan(v))
        return;
    lua_pushnumber(L, v);
    lua_setfield(L, -2, k);
}

/* governor.window(vertex) -> the metric window's samples of that vertex, oldest first:
 * {at, load, load_avg, load_max, busy_ms (accumulated), records_in, records_out,
 * records_in_per_s, lag, observed_tpr}; absent figures are nil. {} outside a decision. */
int libgov_window(lua_State *L)
{
    struct vm *vm = vm_of(L);
    const char *id = luaL_checkstring(L, 1);
    const struct core_state *st = vm->state;
    lua_newtable(L);
    if (!st)
        return 1;
    const struct core_window *w = &st->w;
    int vi = -1;
    for (int i = 0; i < w->n_vertices; i++)
        if (strcmp(w->ids[i], id) == 0)
            vi = i;
    if (vi < 0)
        return 1;
    vm_charge_units(L, (lua_Unsigned)w->n, VM_ELEM_COST * 10);
    /* A decision reads its window decoded (vm->state is set during one only), so the
     * iterator holds nothing that a Lua error (out of memory) could leak. */
    struct core_witer it;
    for (core_witer_begin(&it, w); core_witer_next(&it);) {
        const struct core_vmetrics *m = &it.r->v[vi];
        lua_createtable(L, 0, 10);
        lua_pushinteger(L, it.at);
        lua_setfield(L, -2, "at");
        set_num(L, "load", m->load);
        set_num(L, "load_avg", m->load_avg);
        set_num(L, "load_max", m->load_max);
        set_num(L, "busy_ms", m->acc_busy);
        set_num(L, "records_in", m->rec_in);
        set_num(L, "records_out", m->rec_out);
        set_num(L, "records_in_per_s", m->rec_in_per_s);
        set_num(L, "lag", m->lag);
        set_num(L, "observed_tpr", m->observed_tpr);
        lua_rawseti(L, -2, it.k);
    }
    core_witer_end(&it);
    return 1;
}
