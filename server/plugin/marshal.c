/*
 * marshal.c - values between C and a plugin (see marshal.h).
 */
#include <lauxlib.h>
#include <limits.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugin/libgov.h"
#include "plugin/marshal.h"
#include "plugin/proxy.h"

/* ------------------------------------------------------------------ values -- */

void marshal_push_number(lua_State *L, double v)
{
    if (isnan(v))
        lua_pushnil(L);
    else if (v == floor(v) && fabs(v) < 9e15)
        lua_pushinteger(L, (lua_Integer)v);
    else
        lua_pushnumber(L, v);
}

/* t[k] = v at the top, by the number rule; absent (not even nil) for NaN. */
static void set_number(lua_State *L, const char *k, double v)
{
    if (isnan(v))
        return;
    marshal_push_number(L, v);
    lua_setfield(L, -2, k);
}

/* t[k] = v for the table at the top. */
static void set_int(lua_State *L, const char *k, lua_Integer v)
{
    lua_pushinteger(L, v);
    lua_setfield(L, -2, k);
}

static void set_str(lua_State *L, const char *k, const char *v)
{
    lua_pushstring(L, v);
    lua_setfield(L, -2, k);
}

static void set_bool(lua_State *L, const char *k, bool v)
{
    lua_pushboolean(L, v);
    lua_setfield(L, -2, k);
}

void marshal_push_text_table(lua_State *L, int idx, const char *what)
{
    idx = lua_absindex(L, idx);
    lua_newtable(L);
    lua_pushnil(L);
    while (lua_next(L, idx)) {
        int t = lua_type(L, -1);
        if (t == LUA_TBOOLEAN) {
            lua_pushstring(L, lua_toboolean(L, -1) ? "true" : "false");
            lua_replace(L, -2);
        } else if (t == LUA_TNUMBER) {
            lua_tostring(L, -1); /* converts the copy on the stack, not the table's */
        } else if (t != LUA_TSTRING) {
            lua_pushvalue(L, -2);
            return (void)luaL_error(L, "%s.%s must be text, as the server passes it (got %s)", what,
                                    luaL_tolstring(L, -1, NULL), luaL_typename(L, -2));
        }
        lua_pushvalue(L, -2);
        lua_insert(L, -2);
        lua_settable(L, -4);
    }
    proxy_readonly(L, what);
}

/* ------------------------------------------------------------------ the ctx -- */

static void text_cb(void *ud, const char *key, const char *value)
{
    lua_State *L = ud;
    lua_pushstring(L, value);
    lua_setfield(L, -2, key);
}

static void config_cb(void *ud, const char *key, const char *value, enum opt_layer layer)
{
    (void)layer;
    if (value)
        text_cb(ud, key, value);
}

void marshal_push_params(lua_State *L, const struct opt_job *opts, const char *prefix)
{
    lua_newtable(L);
    if (opts && prefix)
        opt_job_params(opts, prefix, text_cb, L);
    proxy_readonly(L, "ctx.params");
}

void marshal_push_config(lua_State *L, const struct opt_job *opts)
{
    lua_newtable(L);
    if (opts)
        opt_job_each(opts, config_cb, L);
    proxy_readonly(L, "ctx.config");
}

void marshal_push_job(lua_State *L, const char *name, const struct core_sample *sm)
{
    lua_createtable(L, 0, 5);
    lua_pushstring(L, name ? name : "");
    lua_setfield(L, -2, "name");
    if (sm) {
        lua_pushinteger(L, sm->at);
        lua_setfield(L, -2, "at");
        lua_pushinteger(L, sm->running_since);
        lua_setfield(L, -2, "running_since");
        lua_pushboolean(L, sm->running);
        lua_setfield(L, -2, "running");
        lua_createtable(L, sm->n_vertices, 0);
        for (int i = 0; i < sm->n_vertices; i++) {
            marshal_push_vertex(L, &sm->vertices[i]);
            lua_rawseti(L, -2, i + 1);
        }
        lua_setfield(L, -2, "vertices");
    }
    proxy_readonly_deep(L, "ctx.job");
}

/* ctx.log(msg): governor.log of its first argument. */
static int ctx_log(lua_State *L)
{
    lua_settop(L, 1);
    return libgov_log(L);
}

static void set_part(lua_State *L, const char *name, int idx)
{
    if (idx)
        lua_pushvalue(L, idx);
    else
        lua_newtable(L);
    lua_setfield(L, -2, name);
}

void marshal_push_ctx(lua_State *L, const struct marshal_ctx *c)
{
    lua_createtable(L, 0, 6);
    set_part(L, "params", c->params);
    set_part(L, "config", c->config);
    set_part(L, "job", c->job);
    lua_pushinteger(L, c->now);
    lua_setfield(L, -2, "now");
    lua_pushcfunction(L, ctx_log);
    lua_setfield(L, -2, "log");
    if (c->backlog >= 0) {
        lua_pushboolean(L, c->backlog);
        lua_setfield(L, -2, "backlog");
    }
}

/* ---------------------------------------------------------- hook arguments -- */

/*
 * The figures of struct core_evaluated as plugins see them are the core's figure table
 * (core_figures), with what an evaluator may return for each: a number in [lo, hi] (finite,
 * unless CORE_FIG_INF allows +math.huge, which the core itself uses for "no limit"), an
 * integral one with CORE_FIG_INT. Anything else fails the call naming the figure, so no
 * overflowed or nonsensical figure reaches a decision.
 */
void marshal_push_evaluated(lua_State *L, const struct core_evaluated *ev)
{
    lua_createtable(L, 0, CORE_N_FIGURES);
    for (int i = 0; i < CORE_N_FIGURES; i++)
        set_number(L, core_figures[i].name, core_figure_get(ev, i));
}

void marshal_push_vertex(lua_State *L, const struct core_vertex_in *v)
{
    lua_createtable(L, 0, 10);
    set_str(L, "id", v->id);
    set_int(L, "parallelism", v->parallelism);
    set_int(L, "max_parallelism", v->max_parallelism);
    if (v->partitions > 0)
        set_int(L, "partitions", v->partitions);
    if (v->slot_sharing_group)
        set_str(L, "slot_sharing_group", v->slot_sharing_group);
    set_bool(L, "finished", v->finished);
    lua_createtable(L, v->n_inputs, 0);
    for (int i = 0; i < v->n_inputs; i++) {
        lua_createtable(L, 0, 2);
        set_str(L, "from", v->inputs[i].from);
        set_str(L, "ship", core_ship_name(v->inputs[i].ship));
        lua_rawseti(L, -2, i + 1);
    }
    lua_setfield(L, -2, "inputs");
    lua_createtable(L, 0, 11);
    set_number(L, "busy_min", v->busy_min);
    set_number(L, "busy_avg", v->busy_avg);
    set_number(L, "busy_max", v->busy_max);
    set_number(L, "backpressured", v->backpressured);
    set_number(L, "records_in", v->records_in);
    set_number(L, "records_out", v->records_out);
    set_number(L, "accumulated_busy_ms", v->accumulated_busy_ms);
    set_number(L, "records_in_per_s", v->records_in_per_s);
    set_number(L, "records_out_per_s", v->records_out_per_s);
    set_number(L, "pending_records", v->pending_records);
    lua_setfield(L, -2, "metrics");
}

void marshal_push_decision(lua_State *L, const struct core_decision *d)
{
    lua_createtable(L, 0, 6);
    set_int(L, "at", d->at);
    set_str(L, "action", core_action_name(d->action));
    set_str(L, "reason", core_reason_name(d->reason));
    set_str(L, "message", d->message ? d->message : "");
    lua_createtable(L, d->n_vertices, 0);
    for (int k = 0; k < d->n_vertices; k++) {
        const struct core_vdecision *v = &d->vertices[k];
        lua_createtable(L, 0, 9);
        set_str(L, "id", v->id);
        set_int(L, "current", v->current);
        set_int(L, "raw_target", v->raw_target);
        set_int(L, "target", v->target);
        set_str(L, "reason", core_reason_name(v->reason));
        set_bool(L, "outside_bounds", v->outside_bounds);
        set_bool(L, "excluded", v->excluded);
        lua_newtable(L);
        int n = 0;
        for (int b = 0; b < CORE_C__COUNT; b++)
            if (v->constraints & (1u << b)) {
                lua_pushstring(L, core_constraint_name(b));
                lua_rawseti(L, -2, ++n);
            }
        lua_setfield(L, -2, "constraints");
        marshal_push_evaluated(L, &v->ev);
        lua_setfield(L, -2, "evaluated");
        lua_rawseti(L, -2, k + 1);
    }
    lua_setfield(L, -2, "vertices");
}

void marshal_push_align(lua_State *L, const struct core_align_ctx *a)
{
    lua_createtable(L, 0, 10);
    set_str(L, "vertex", a->vertex);
    set_int(L, "current", a->current);
    set_int(L, "proposed", a->proposed);
    set_int(L, "lower", a->lower);
    set_int(L, "upper", a->upper);
    set_int(L, "max_parallelism", a->max_parallelism);
    set_int(L, "partitions", a->partitions);
    lua_createtable(L, a->n_inputs, 0);
    for (int i = 0; i < a->n_inputs; i++) {
        lua_pushstring(L, core_ship_name(a->input_ships[i]));
        lua_rawseti(L, -2, i + 1);
    }
    lua_setfield(L, -2, "input_ships");
    if (a->ev) {
        marshal_push_evaluated(L, a->ev);
        lua_setfield(L, -2, "evaluated");
    }
}

/* ------------------------------------------------------------ hook results -- */

/* "1e+300", "inf", "nan", "4294967301": a returned number as the messages show it. */
static const char *num_text(lua_State *L, int i, char *buf, size_t n)
{
    double x = (double)lua_tonumber(L, i);
    if (lua_isinteger(L, i))
        snprintf(buf, n, "%lld", (long long)lua_tointeger(L, i));
    else if (isnan(x))
        snprintf(buf, n, "nan");
    else
        for (int prec = 15; prec <= 17; prec++) { /* the shortest that reads back as x */
            snprintf(buf, n, "%.*g", prec, x);
            if (strtod(buf, NULL) == x)
                break;
        }
    return buf;
}

lua_Integer marshal_read_int(lua_State *L, int i, const char *what, lua_Integer lo, lua_Integer hi)
{
    char buf[64];
    if (lua_type(L, i) != LUA_TNUMBER)
        luaL_error(L, "%s must be an integer in [%I, %I] (got %s)", what, (LUAI_UACINT)lo,
                   (LUAI_UACINT)hi, luaL_typename(L, i));
    int isint = 0;
    lua_Integer v = lua_tointegerx(L, i, &isint);
    if (!isint || v < lo || v > hi)
        luaL_error(L, "%s must be an integer in [%I, %I] (got %s)", what, (LUAI_UACINT)lo,
                   (LUAI_UACINT)hi, num_text(L, i, buf, sizeof buf));
    return v;
}

/* Checks the number at the top against figure i's rule; returns it. */
static double read_figure(lua_State *L, const char *file, int i)
{
    const struct core_figure *f = &core_figures[i];
    bool inf_ok = f->flags & CORE_FIG_INF, integral = f->flags & CORE_FIG_INT;
    char buf[64], rule[96];
    if (lua_type(L, -1) != LUA_TNUMBER)
        luaL_error(L, "%s: evaluate: metric '%s' must be a number (got %s)", file, f->name,
                   luaL_typename(L, -1));
    double x = lua_tonumber(L, -1);
    bool ok = x >= f->lo && (x <= f->hi || (inf_ok && isinf(x))) && (!integral || x == floor(x));
    if (ok)
        return x;
    if (integral)
        snprintf(rule, sizeof rule, "an integer in [%.0f, %.0f]", f->lo, f->hi);
    else
        snprintf(rule, sizeof rule, "a finite number in [%g, %g]%s", f->lo, f->hi,
                 inf_ok ? " or math.huge" : "");
    return luaL_error(L, "%s: evaluate: metric '%s' must be %s (got %s)", file, f->name, rule,
                      num_text(L, -1, buf, sizeof buf));
}

void marshal_read_evaluated(lua_State *L, int idx, struct core_evaluated *ev, const char *file)
{
    idx = lua_absindex(L, idx);
    struct core_evaluated out = *ev;
    for (int i = 0; i < CORE_N_FIGURES; i++)
        *core_figure_at(&out, i) = NAN;
    lua_pushnil(L);
    while (lua_next(L, idx)) {
        const char *k = lua_type(L, -2) == LUA_TSTRING ? lua_tostring(L, -2) : NULL;
        int fi = -1;
        for (int i = 0; k && i < CORE_N_FIGURES; i++)
            if (strcmp(core_figures[i].name, k) == 0)
                fi = i;
        if (fi < 0)
            luaL_error(L, "%s: evaluate returned an unknown metric '%s'", file,
                       k ? k : luaL_typename(L, -2));
        *core_figure_at(&out, fi) = read_figure(L, file, fi);
        lua_pop(L, 1);
    }
    for (int i = 0; i < CORE_N_FIGURES; i++)
        if (!isnan(*core_figure_at(&out, i)))
            *core_figure_at(ev, i) = *core_figure_at(&out, i);
}

/* Sets next[k] for vertex id of d from the integer at stack index vi. */
static void target_of(lua_State *L, const struct core_decision *d, int *next, const char *id,
                      int vi)
{
    int k;
    for (k = 0; k < d->n_vertices; k++)
        if (strcmp(d->vertices[k].id, id) == 0)
            break;
    if (k == d->n_vertices)
        luaL_error(L, "execute returned an unknown vertex '%s'", id);
    char what[160];
    snprintf(what, sizeof what, "execute: vertex '%.100s' target", id);
    next[k] = (int)marshal_read_int(L, vi, what, 1, MARSHAL_MAX_TARGET);
}

void marshal_read_targets(lua_State *L, int idx, struct core_decision *d)
{
    idx = lua_absindex(L, idx);
    if (lua_getfield(L, idx, "vertices") != LUA_TTABLE)
        luaL_error(L, "execute: the returned decision has no 'vertices' table");
    int vs = lua_gettop(L);
    int n = d->n_vertices;
    int *next = lua_newuserdatauv(L, (size_t)(n > 0 ? n : 1) * sizeof(int), 0);
    for (int k = 0; k < n; k++)
        next[k] = d->vertices[k].target;
    lua_pushnil(L);
    while (lua_next(L, vs)) {
        int val = lua_gettop(L);
        if (lua_type(L, -2) == LUA_TSTRING) {
            const char *id = lua_tostring(L, -2);
            if (lua_istable(L, val))
                lua_getfield(L, val, "target");
            else
                lua_pushvalue(L, val);
            target_of(L, d, next, id, lua_gettop(L));
        } else if (lua_istable(L, val)) {
            lua_getfield(L, val, "id");
            const char *id = lua_tostring(L, -1);
            if (!id)
                luaL_error(L, "execute: a returned vertex has no id");
            lua_getfield(L, val, "target");
            target_of(L, d, next, id, lua_gettop(L));
        } else {
            luaL_error(L, "execute: 'vertices' entries must be tables");
        }
        lua_settop(L, val - 1);
    }
    for (int k = 0; k < n; k++)
        d->vertices[k].target = next[k];
}
