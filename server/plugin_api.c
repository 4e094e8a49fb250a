/*
 * plugin_api.c - the sandbox's library (see plugin_int.h): the allow list of globals, the
 * read-only proxies of the shared library tables, the guarded C functions (every string,
 * table, utf8 and os function is charged by the size of what it touches; the pattern
 * functions are first run by a step-counting dry run of the same matching rules, so a
 * pathological pattern is refused before Lua's matcher, which executes no VM instructions
 * and is thus invisible to the count hook, gets to it), and the `governor` helpers.
 */
#include <lauxlib.h>
#include <lualib.h>
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/state.h"
#include "cron.h"
#include "log.h"
#include "options.h"
#include "plugin_int.h"

#define REG_LOCKED "governor.locked" /* weak set of read-only proxies */
#define REG_BASE   "governor.base"   /* name -> value copied into every environment */

/* Pattern-matcher steps per charged instruction. */
#define STEPS_PER_INSTR 5
/* Bytes touched by a library function per charged instruction. */
#define BYTES_PER_INSTR 64

/* ---------------------------------------------------------- read-only proxies -- */

static int ro_newindex(lua_State *L)
{
    const char *what = lua_tostring(L, lua_upvalueindex(1));
    return luaL_error(L, "attempt to modify read-only table '%s'", what ? what : "?");
}

/* The iterator of pairs(proxy): next() over the hidden table, which is never exposed. */
static int ro_next(lua_State *L)
{
    lua_settop(L, 2);
    lua_pushvalue(L, 2);
    if (lua_next(L, lua_upvalueindex(1)))
        return 2;
    lua_pushnil(L);
    return 1;
}

static int ro_pairs(lua_State *L)
{
    lua_getmetatable(L, 1);
    lua_getfield(L, -1, "__index");
    lua_pushcclosure(L, ro_next, 1);
    lua_pushnil(L);
    lua_pushnil(L);
    return 3;
}

static int ro_len(lua_State *L)
{
    lua_getmetatable(L, 1);
    lua_getfield(L, -1, "__index");
    lua_pushinteger(L, (lua_Integer)lua_rawlen(L, -1));
    return 1;
}

void plugin__readonly(lua_State *L, const char *what)
{
    int real = lua_gettop(L);
    lua_newtable(L); /* the proxy */
    lua_createtable(L, 0, 6);
    lua_pushvalue(L, real);
    lua_setfield(L, -2, "__index");
    lua_pushstring(L, what);
    lua_pushcclosure(L, ro_newindex, 1);
    lua_setfield(L, -2, "__newindex");
    lua_pushcfunction(L, ro_pairs);
    lua_setfield(L, -2, "__pairs");
    lua_pushcfunction(L, ro_len);
    lua_setfield(L, -2, "__len");
    lua_pushstring(L, "locked");
    lua_setfield(L, -2, "__metatable");
    lua_setmetatable(L, -2);
    lua_getfield(L, LUA_REGISTRYINDEX, REG_LOCKED);
    lua_pushvalue(L, -2);
    lua_pushboolean(L, 1);
    lua_rawset(L, -3);
    lua_pop(L, 1);
    lua_replace(L, real);
}

/* ------------------------------------------------------------- charging -- */

static int64_t weigh(lua_State *L, int i)
{
    switch (lua_type(L, i)) {
    case LUA_TSTRING:
        return (int64_t)lua_rawlen(L, i);
    case LUA_TTABLE:
        return (int64_t)lua_rawlen(L, i) * 8;
    default:
        return 1;
    }
}

/* Any library function: called as is, then charged by the size of its arguments and
 * results, with the deadline checked (a loop of cheap-looking calls on huge strings is
 * stopped even though it executes few VM instructions). */
static int guarded(lua_State *L)
{
    int n = lua_gettop(L);
    int64_t cost = 0;
    for (int i = 1; i <= n; i++)
        cost += weigh(L, i);
    lua_pushvalue(L, lua_upvalueindex(1));
    lua_insert(L, 1);
    lua_call(L, n, LUA_MULTRET);
    int r = lua_gettop(L);
    for (int i = 1; i <= r; i++)
        cost += weigh(L, i);
    plugin__charge(L, 1 + cost / BYTES_PER_INSTR);
    return r;
}

/* Replaces every function of the table at idx with a guarded closure over it. */
static void guard_all(lua_State *L, int idx)
{
    idx = lua_absindex(L, idx);
    lua_pushnil(L);
    while (lua_next(L, idx)) {
        if (lua_iscfunction(L, -1)) {
            lua_pushvalue(L, -2);
            lua_insert(L, -2);
            lua_pushcclosure(L, guarded, 1);
            lua_rawset(L, idx);
            lua_pushvalue(L, -1); /* keep the key for lua_next: re-push */
            lua_pop(L, 1);
        } else {
            lua_pop(L, 1);
        }
    }
}

/* ------------------------------------------------- the pattern dry run -- */

#define DRY_MAXCAP   32
#define DRY_MAXDEPTH 200
#define CAP_UNF      (-1)
#define CAP_POS      (-2)

struct dry {
    lua_State *L;
    struct plugin_set *s;
    const char *src, *src_end, *pat_end;
    int level;
    struct {
        const char *init;
        ptrdiff_t len;
    } cap[DRY_MAXCAP];
    int64_t steps, limit;
    int depth;
    bool over; /* step limit reached: refuse */
    bool bad;  /* malformed or too deep: leave the verdict to Lua's own matcher */
};

static bool dry_tick(struct dry *d, int64_t n)
{
    d->steps += n;
    if (d->steps > d->limit)
        d->over = true;
    else if ((d->steps & 0xffff) < n && d->s->in_call && plugin__now_ns() > d->s->deadline_ns)
        d->over = true;
    return !d->over;
}

static const char *class_end(struct dry *d, const char *p)
{
    if (*p++ == '%') {
        if (p >= d->pat_end) {
            d->bad = true;
            return d->pat_end;
        }
        return p + 1;
    }
    if (p[-1] == '[') {
        if (p < d->pat_end && *p == '^')
            p++;
        do {
            if (p >= d->pat_end) {
                d->bad = true;
                return d->pat_end;
            }
            if (*p++ == '%' && p < d->pat_end)
                p++;
        } while (p >= d->pat_end || *p != ']');
        return p + 1;
    }
    return p;
}

static bool class_match(int c, int cl)
{
    bool r;
    switch (tolower(cl)) {
    case 'a':
        r = isalpha(c);
        break;
    case 'c':
        r = iscntrl(c);
        break;
    case 'd':
        r = isdigit(c);
        break;
    case 'g':
        r = isgraph(c);
        break;
    case 'l':
        r = islower(c);
        break;
    case 'p':
        r = ispunct(c);
        break;
    case 's':
        r = isspace(c);
        break;
    case 'u':
        r = isupper(c);
        break;
    case 'w':
        r = isalnum(c);
        break;
    case 'x':
        r = isxdigit(c);
        break;
    default:
        return cl == c;
    }
    return isupper(cl) ? !r : r;
}

/* p at '[', ec at the closing ']'. */
static bool bracket_match(int c, const char *p, const char *ec)
{
    bool neg = false;
    p++;
    if (*p == '^') {
        neg = true;
        p++;
    }
    for (; p < ec; p++) {
        if (*p == '%' && p + 1 < ec) {
            p++;
            if (class_match(c, (unsigned char)*p))
                return !neg;
        } else if (p + 2 < ec && p[1] == '-') {
            if ((unsigned char)p[0] <= c && c <= (unsigned char)p[2])
                return !neg;
            p += 2;
        } else if ((unsigned char)*p == c) {
            return !neg;
        }
    }
    return neg;
}

static bool single(struct dry *d, const char *s, const char *p, const char *ep)
{
    if (!dry_tick(d, 1) || s >= d->src_end)
        return false;
    int c = (unsigned char)*s;
    switch (*p) {
    case '.':
        return true;
    case '%':
        return class_match(c, (unsigned char)p[1]);
    case '[':
        return bracket_match(c, p, ep - 1);
    default:
        return (unsigned char)*p == c;
    }
}

static const char *dmatch(struct dry *d, const char *s, const char *p);

static const char *max_expand(struct dry *d, const char *s, const char *p, const char *ep)
{
    ptrdiff_t i = 0;
    while (single(d, s + i, p, ep))
        i++;
    while (i >= 0 && !d->over && !d->bad) {
        const char *r = dmatch(d, s + i, ep + 1);
        if (r)
            return r;
        i--;
    }
    return NULL;
}

static const char *min_expand(struct dry *d, const char *s, const char *p, const char *ep)
{
    for (;;) {
        const char *r = dmatch(d, s, ep + 1);
        if (r)
            return r;
        if (d->over || d->bad || !single(d, s, p, ep))
            return NULL;
        s++;
    }
}

static const char *start_cap(struct dry *d, const char *s, const char *p, ptrdiff_t what)
{
    if (d->level >= DRY_MAXCAP) {
        d->bad = true;
        return NULL;
    }
    d->cap[d->level].init = s;
    d->cap[d->level].len = what;
    d->level++;
    const char *r = dmatch(d, s, p);
    if (!r)
        d->level--;
    return r;
}

static const char *end_cap(struct dry *d, const char *s, const char *p)
{
    int l = -1;
    for (int k = d->level - 1; k >= 0; k--)
        if (d->cap[k].len == CAP_UNF) {
            l = k;
            break;
        }
    if (l < 0) {
        d->bad = true;
        return NULL;
    }
    d->cap[l].len = s - d->cap[l].init;
    const char *r = dmatch(d, s, p + 1);
    if (!r)
        d->cap[l].len = CAP_UNF;
    return r;
}

static const char *dmatch(struct dry *d, const char *s, const char *p)
{
    if (d->over || d->bad || !dry_tick(d, 1))
        return NULL;
    if (++d->depth > DRY_MAXDEPTH) {
        d->bad = true;
        return NULL;
    }
    const char *r = NULL;
    for (;;) {
        if (p >= d->pat_end) {
            r = s;
            break;
        }
        if (*p == '(') {
            r = (p + 1 < d->pat_end && p[1] == ')') ? start_cap(d, s, p + 2, CAP_POS)
                                                    : start_cap(d, s, p + 1, CAP_UNF);
            break;
        }
        if (*p == ')') {
            r = end_cap(d, s, p);
            break;
        }
        if (*p == '$' && p + 1 == d->pat_end) {
            r = s == d->src_end ? s : NULL;
            break;
        }
        if (*p == '%' && p + 1 < d->pat_end && p[1] == 'b') {
            if (p + 3 >= d->pat_end) {
                d->bad = true;
                break;
            }
            if (s >= d->src_end || *s != p[2])
                break;
            int cont = 1;
            const char *e = NULL;
            while (++s < d->src_end && dry_tick(d, 1)) {
                if (*s == p[3]) {
                    if (--cont == 0) {
                        e = s + 1;
                        break;
                    }
                } else if (*s == p[2]) {
                    cont++;
                }
            }
            if (!e)
                break;
            s = e;
            p += 4;
            continue;
        }
        if (*p == '%' && p + 1 < d->pat_end && p[1] == 'f') {
            p += 2;
            if (p >= d->pat_end || *p != '[') {
                d->bad = true;
                break;
            }
            const char *ep = class_end(d, p);
            if (d->bad)
                break;
            int prev = s == d->src ? 0 : (unsigned char)s[-1];
            int cur = s < d->src_end ? (unsigned char)*s : 0;
            if (!bracket_match(prev, p, ep - 1) && bracket_match(cur, p, ep - 1)) {
                p = ep;
                continue;
            }
            break;
        }
        if (*p == '%' && p + 1 < d->pat_end && isdigit((unsigned char)p[1])) {
            int l = p[1] - '1';
            if (l < 0 || l >= d->level || d->cap[l].len == CAP_UNF) {
                d->bad = true;
                break;
            }
            ptrdiff_t len = d->cap[l].len == CAP_POS ? 0 : d->cap[l].len;
            dry_tick(d, len);
            if (d->src_end - s >= len && memcmp(d->cap[l].init, s, (size_t)len) == 0) {
                s += len;
                p += 2;
                continue;
            }
            break;
        }
        const char *ep = class_end(d, p);
        if (d->bad)
            break;
        char q = ep < d->pat_end ? *ep : '\0';
        if (!single(d, s, p, ep)) {
            if (q == '*' || q == '?' || q == '-') {
                p = ep + 1;
                continue;
            }
            break;
        }
        if (q == '?') {
            const char *x = dmatch(d, s + 1, ep + 1);
            if (x) {
                r = x;
                break;
            }
            p = ep + 1;
            continue;
        }
        if (q == '+') {
            r = max_expand(d, s + 1, p, ep);
            break;
        }
        if (q == '*') {
            r = max_expand(d, s, p, ep);
            break;
        }
        if (q == '-') {
            r = min_expand(d, s, p, ep);
            break;
        }
        s++;
        p = ep;
    }
    d->depth--;
    return r;
}

enum dry_fn { DRY_FIND, DRY_MATCH, DRY_GMATCH, DRY_GSUB };
static const char *const dry_names[] = {"find", "match", "gmatch", "gsub"};

static bool has_specials(const char *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (strchr("^$*+?.([%-", p[i]))
            return true;
    return false;
}

/*
 * Simulates what Lua's string.<fn> would do with these arguments, counting steps; charges
 * the steps to the call and refuses the call (uncatchable) when they exceed what is left
 * of the budget or the deadline passes.
 */
static void dry_run(lua_State *L, enum dry_fn fn)
{
    struct plugin_set *s = plugin__set(L);
    size_t ls, lp;
    const char *src = lua_tolstring(L, 1, &ls);
    const char *pat = lua_tolstring(L, 2, &lp);
    if (!src || !pat)
        return; /* Lua's own function reports the bad argument */
    struct dry d;
    memset(&d, 0, sizeof d);
    d.L = L;
    d.s = s;
    d.src = src;
    d.src_end = src + ls;
    d.pat_end = pat + lp;
    int64_t left = s->in_call ? s->budget - s->used : s->lim.instructions;
    d.limit = (left > 0 ? left : 0) * STEPS_PER_INSTR;

    lua_Integer init = 1;
    if (fn != DRY_GSUB && lua_isinteger(L, 3))
        init = lua_tointeger(L, 3);
    if (init < 0)
        init = (lua_Integer)ls + init + 1;
    if (init < 1)
        init = 1;
    if (init > (lua_Integer)ls + 1)
        return;
    const char *s1 = src + init - 1;

    bool plain = fn == DRY_FIND && (lua_toboolean(L, 4) || !has_specials(pat, lp));
    if (plain) {
        /* memchr for the first byte, then a compare: count the compared bytes. */
        if (lp == 0)
            return;
        for (const char *q = s1; q + lp <= d.src_end && !d.over;) {
            const char *hit = memchr(q, pat[0], (size_t)(d.src_end - q));
            dry_tick(&d, 1 + (hit ? hit - q : d.src_end - q) / 64);
            if (!hit || hit + lp > d.src_end)
                break;
            size_t k = 1;
            while (k < lp && hit[k] == pat[k])
                k++;
            dry_tick(&d, (int64_t)k);
            if (k == lp)
                break;
            q = hit + 1;
        }
    } else {
        const char *p = pat;
        bool anchor = fn != DRY_GMATCH && lp > 0 && *p == '^';
        if (anchor)
            p++;
        lua_Integer max_n = fn == DRY_GSUB ? luaL_optinteger(L, 4, (lua_Integer)ls + 1) : 1;
        lua_Integer n = 0;
        const char *last = NULL;
        for (;;) {
            d.level = 0;
            d.depth = 0;
            const char *e = dmatch(&d, s1, p);
            if (d.over || d.bad)
                break;
            if (fn == DRY_FIND || fn == DRY_MATCH) {
                if (e || anchor || s1 >= d.src_end)
                    break;
                s1++;
                continue;
            }
            if (e && e != last) {
                n++;
                s1 = last = e;
                if (fn == DRY_GSUB && n >= max_n)
                    break;
            } else if (s1 < d.src_end) {
                s1++;
            } else {
                break;
            }
            if (anchor)
                break;
        }
    }
    if (d.over) {
        char what[160];
        snprintf(what, sizeof what,
                 "string.%s: pattern \"%.40s%s\" is too costly on a subject "
                 "of %zu bytes (over %lld matcher steps)",
                 dry_names[fn], pat, lp > 40 ? "..." : "", ls, (long long)d.limit);
        if (s->in_call && plugin__now_ns() > s->deadline_ns)
            plugin__kill(L, KILL_DEADLINE, NULL);
        plugin__kill(L, KILL_PATTERN, what);
    }
    plugin__charge(L, d.steps / STEPS_PER_INSTR);
}

static int pattern_guarded(lua_State *L)
{
    dry_run(L, (enum dry_fn)lua_tointeger(L, lua_upvalueindex(2)));
    int n = lua_gettop(L);
    lua_pushvalue(L, lua_upvalueindex(1));
    lua_insert(L, 1);
    lua_call(L, n, LUA_MULTRET);
    int r = lua_gettop(L);
    int64_t cost = 0;
    for (int i = 1; i <= r; i++)
        cost += weigh(L, i);
    plugin__charge(L, cost / BYTES_PER_INSTR);
    return r;
}

/* string.rep: the result's size is known before anything is built, so a result larger than
 * what the memory cap leaves is refused up front (and an empty result is not looped for). */
static int rep_guarded(lua_State *L)
{
    struct plugin_set *s = plugin__set(L);
    size_t l, lsep = 0;
    luaL_checklstring(L, 1, &l);
    lua_Integer n = luaL_checkinteger(L, 2);
    luaL_optlstring(L, 3, "", &lsep);
    if (n <= 0 || (l == 0 && lsep == 0)) {
        lua_pushliteral(L, "");
        return 1;
    }
    double total = (double)l * (double)n + (double)lsep * (double)(n - 1);
    double room = (double)s->mem_cap - (double)s->mem_used;
    if (total > room) {
        char msg[160];
        snprintf(msg, sizeof msg,
                 "string.rep: a result of %.0f bytes exceeds the memory cap "
                 "(%zu bytes, %zu in use)",
                 total, s->mem_cap, s->mem_used);
        return luaL_error(L, "%s", msg);
    }
    int top = lua_gettop(L);
    lua_pushvalue(L, lua_upvalueindex(1));
    lua_insert(L, 1);
    lua_call(L, top, 1);
    plugin__charge(L, 1 + (int64_t)(total / BYTES_PER_INSTR));
    return 1;
}

/* ---------------------------------------------------------- base functions -- */

/* pcall/xpcall that cannot swallow the host's limits: a killed call, or one out of
 * memory, is re-raised instead of returned as false. */
static int rethrow_if_killed(lua_State *L, int status)
{
    struct plugin_set *s = plugin__set(L);
    if (status == LUA_ERRMEM && !s->killed)
        s->killed = KILL_MEMORY;
    if (status != LUA_OK && s->killed)
        return lua_error(L);
    return 0;
}

static int sb_pcall(lua_State *L)
{
    luaL_checkany(L, 1);
    int status = lua_pcall(L, lua_gettop(L) - 1, LUA_MULTRET, 0);
    rethrow_if_killed(L, status);
    lua_pushboolean(L, status == LUA_OK);
    lua_insert(L, 1);
    return lua_gettop(L);
}

static int sb_xpcall(lua_State *L)
{
    int n = lua_gettop(L);
    luaL_checktype(L, 2, LUA_TFUNCTION);
    lua_pushvalue(L, 1);
    lua_pushvalue(L, 2);
    lua_replace(L, 1); /* msgh at 1 */
    lua_replace(L, 2); /* f at 2 */
    int status = lua_pcall(L, n - 2, LUA_MULTRET, 1);
    rethrow_if_killed(L, status);
    lua_pushboolean(L, status == LUA_OK);
    lua_replace(L, 1);
    return lua_gettop(L);
}

static int sb_rawset(lua_State *L)
{
    luaL_checktype(L, 1, LUA_TTABLE);
    lua_getfield(L, LUA_REGISTRYINDEX, REG_LOCKED);
    lua_pushvalue(L, 1);
    if (lua_rawget(L, -2) != LUA_TNIL)
        return luaL_error(L, "rawset: attempt to modify a read-only table");
    lua_pop(L, 2);
    luaL_checkany(L, 2);
    luaL_checkany(L, 3);
    lua_settop(L, 3);
    lua_rawset(L, 1);
    return 1;
}

static int sb_setmetatable(lua_State *L)
{
    luaL_checktype(L, 1, LUA_TTABLE);
    int t = lua_type(L, 2);
    luaL_argexpected(L, t == LUA_TNIL || t == LUA_TTABLE, 2, "nil or table");
    if (t == LUA_TTABLE && lua_getfield(L, 2, "__gc") != LUA_TNIL)
        return luaL_error(L, "setmetatable: __gc metamethods are not allowed in plugins");
    lua_settop(L, 2);
    if (luaL_getmetafield(L, 1, "__metatable") != LUA_TNIL)
        return luaL_error(L, "cannot change a protected metatable");
    lua_setmetatable(L, 1);
    return 1;
}

static int sb_collectgarbage(lua_State *L)
{
    const char *opt = luaL_optstring(L, 1, "count");
    if (strcmp(opt, "count") != 0)
        return luaL_error(L, "collectgarbage: only \"count\" is allowed in plugins");
    int kb = lua_gc(L, LUA_GCCOUNT, 0), b = lua_gc(L, LUA_GCCOUNTB, 0);
    lua_pushnumber(L, (lua_Number)kb + (lua_Number)b / 1024.0);
    return 1;
}

static void emit_log(lua_State *L, const char *plugin, const char *msg)
{
    struct plugin_set *s = plugin__set(L);
    if (s->log_fn)
        s->log_fn(s->log_ud, plugin, msg);
    else
        log_msg(LOG_INFO, "plugin", msg, "plugin=%s revision=%s", plugin, s->revision);
}

/* governor.log(msg) and print(...): one log line naming the calling plugin. */
static int sb_log(lua_State *L)
{
    struct plugin_set *s = plugin__set(L);
    int n = lua_gettop(L);
    luaL_checkstack(L, 2 * n + 2, "log");
    for (int i = 1; i <= n; i++) {
        size_t len;
        luaL_tolstring(L, i, &len);
        if (len > 1024) {
            lua_pushlstring(L, lua_tostring(L, -1), 1024);
            lua_remove(L, -2);
        }
        if (i < n)
            lua_pushliteral(L, " ");
    }
    lua_concat(L, n > 0 ? 2 * n - 1 : 0);
    const char *who = lua_isstring(L, lua_upvalueindex(1)) ? lua_tostring(L, lua_upvalueindex(1))
                                                           : (s->cur_name ? s->cur_name : "?");
    emit_log(L, who, lua_tostring(L, -1));
    return 0;
}

/* require(name): only DIR/lib/NAME.lua, NAME in [A-Za-z0-9_]+, text only, in a new
 * environment of the requiring plugin; results cached per plugin (upvalue 2). */
static int sb_require(lua_State *L)
{
    struct plugin_set *s = plugin__set(L);
    size_t n;
    const char *name = luaL_checklstring(L, 1, &n);
    bool ok = n > 0 && n <= 64;
    for (size_t i = 0; ok && i < n; i++)
        ok = isalnum((unsigned char)name[i]) || name[i] == '_';
    if (!ok)
        return luaL_error(L,
                          "require \"%s\": only modules of policies/lib can be required "
                          "(names of letters, digits and '_')",
                          name);
    lua_settop(L, 1);
    if (lua_getfield(L, lua_upvalueindex(2), name) != LUA_TNIL)
        return 1;
    lua_pop(L, 1);
    char path[96];
    snprintf(path, sizeof path, "lib/%s.lua", name);
    const struct plugin__file *f = NULL;
    for (int i = 0; i < s->n_files; i++)
        if (strcmp(s->files[i].path, path) == 0)
            f = &s->files[i];
    if (!f)
        return luaL_error(L, "require \"%s\": no file %s in the policies directory", name, path);
    /* a marker against cycles */
    lua_pushboolean(L, 0);
    lua_setfield(L, lua_upvalueindex(2), name);
    plugin__load_chunk(L, f, lua_tostring(L, lua_upvalueindex(1)));
    lua_call(L, 0, 1);
    if (lua_isnil(L, -1)) {
        lua_pop(L, 1);
        lua_pushboolean(L, 1);
    }
    lua_pushvalue(L, -1);
    lua_setfield(L, lua_upvalueindex(2), name);
    return 1;
}

/* ------------------------------------------------------ governor helpers -- */

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

static int gv_cron(lua_State *L)
{
    return match_with(L, cron_matches);
}

static int gv_daily(lua_State *L)
{
    return match_with(L, cron_daily_matches);
}

static int gv_periods(lua_State *L)
{
    return match_with(L, cron_periods_match);
}

static int gv_duration(lua_State *L)
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

static int64_t days_civil(int64_t y, int m, int d)
{
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    int64_t yoe = y - era * 400;
    int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

/* governor.time("2026-12-24T00:00:00Z") -> epoch ms (RFC 3339, Z or +hh:mm offsets). */
static int gv_time(lua_State *L)
{
    const char *t = luaL_checkstring(L, 1);
    int y, mo, d, h, mi, sec, n = 0;
    if (sscanf(t, "%4d-%2d-%2d%*1[Tt ]%2d:%2d:%2d%n", &y, &mo, &d, &h, &mi, &sec, &n) != 6 ||
        mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || sec > 60)
        return luaL_error(L, "governor.time: \"%s\" is not an RFC 3339 date-time", t);
    const char *p = t + n;
    int64_t ms = 0;
    if (*p == '.') {
        int digits = 0;
        for (p++; isdigit((unsigned char)*p); p++, digits++)
            if (digits < 3)
                ms = ms * 10 + (*p - '0');
        for (; digits < 3; digits++)
            ms *= 10;
    }
    int64_t off = 0;
    if (*p == 'Z' || *p == 'z') {
        p++;
    } else if (*p == '+' || *p == '-') {
        int oh, om, k = 0;
        if (sscanf(p + 1, "%2d:%2d%n", &oh, &om, &k) != 2)
            return luaL_error(L, "governor.time: bad offset in \"%s\"", t);
        off = (*p == '-' ? -1 : 1) * (oh * 3600 + om * 60);
        p += 1 + k;
    } else {
        return luaL_error(L, "governor.time: \"%s\" needs a zone (Z or +hh:mm)", t);
    }
    if (*p)
        return luaL_error(L, "governor.time: trailing text in \"%s\"", t);
    int64_t secs = days_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + sec - off;
    lua_pushinteger(L, secs * 1000 + ms);
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
static int gv_window(lua_State *L)
{
    struct plugin_set *s = plugin__set(L);
    const char *id = luaL_checkstring(L, 1);
    const struct core_state *st = s->cur_call ? plugin__call_state(s->cur_call) : NULL;
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
    for (int k = 0; k < w->n; k++) {
        const struct core_vmetrics *m = &w->s[k].v[vi];
        lua_createtable(L, 0, 10);
        lua_pushinteger(L, w->s[k].at);
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
        lua_rawseti(L, -2, k + 1);
    }
    return 1;
}

/* ------------------------------------------------------------ assembly -- */

/* Pushes a new read-only table of the given functions. */
static void push_ro_lib(lua_State *L, const luaL_Reg *fns, const char *what)
{
    lua_newtable(L);
    luaL_setfuncs(L, fns, 0);
    plugin__readonly(L, what);
}

/* Copies the listed fields of the table at src into the table at the top. */
static void copy_fields(lua_State *L, int src, const char *const *names)
{
    for (; *names; names++) {
        lua_getfield(L, src, *names);
        lua_setfield(L, -2, *names);
    }
}

void plugin__sandbox_open(lua_State *L)
{
    luaL_openlibs(L); /* into the host's own _G, which no plugin ever sees */
    lua_newtable(L);
    lua_createtable(L, 0, 1);
    lua_pushliteral(L, "k");
    lua_setfield(L, -2, "__mode");
    lua_setmetatable(L, -2);
    lua_setfield(L, LUA_REGISTRYINDEX, REG_LOCKED);

    lua_pushglobaltable(L);
    int g = lua_gettop(L);
    lua_newtable(L); /* base */
    int base = lua_gettop(L);

    static const char *const base_names[] = {
        "assert", "error",    "ipairs",   "next", "pairs",        "rawequal", "rawget", "rawlen",
        "select", "tonumber", "tostring", "type", "getmetatable", "_VERSION", NULL};
    lua_pushvalue(L, base);
    copy_fields(L, g, base_names);
    lua_pop(L, 1);
    static const luaL_Reg wrapped[] = {{"pcall", sb_pcall},
                                       {"xpcall", sb_xpcall},
                                       {"rawset", sb_rawset},
                                       {"setmetatable", sb_setmetatable},
                                       {"collectgarbage", sb_collectgarbage},
                                       {NULL, NULL}};
    luaL_setfuncs(L, wrapped, 0);
    lua_pushnil(L);
    lua_pushcclosure(L, sb_log, 1);
    lua_setfield(L, base, "print");

    /* string: the real table itself is changed (it is also the strings' __index), then
     * hidden behind a proxy; dump is gone, the rest guarded. */
    lua_getfield(L, g, "string");
    int str = lua_gettop(L);
    lua_pushnil(L);
    lua_setfield(L, str, "dump");
    guard_all(L, str);
    for (int fn = DRY_FIND; fn <= DRY_GSUB; fn++) {
        lua_getfield(L, str, dry_names[fn]);
        lua_getupvalue(L, -1, 1); /* the original under the generic guard */
        lua_remove(L, -2);
        lua_pushinteger(L, fn);
        lua_pushcclosure(L, pattern_guarded, 2);
        lua_pushvalue(L, -1);
        lua_setfield(L, str, dry_names[fn]);
        lua_pop(L, 1);
    }
    lua_getfield(L, str, "rep");
    lua_getupvalue(L, -1, 1);
    lua_remove(L, -2);
    lua_pushcclosure(L, rep_guarded, 1);
    lua_setfield(L, str, "rep");
    lua_pushliteral(L, "");
    lua_getmetatable(L, -1);
    lua_pushliteral(L, "locked");
    lua_setfield(L, -2, "__metatable");
    lua_pop(L, 2);
    lua_pushvalue(L, str);
    plugin__readonly(L, "string");
    lua_setfield(L, base, "string");
    lua_pop(L, 1);

    static const char *const libs[] = {"table", "utf8", NULL};
    for (const char *const *l = libs; *l; l++) {
        lua_newtable(L);
        lua_getfield(L, g, *l);
        lua_pushnil(L);
        while (lua_next(L, -2)) {
            lua_pushvalue(L, -2);
            lua_insert(L, -2);
            lua_settable(L, -5);
        }
        lua_pop(L, 1);
        guard_all(L, -1);
        plugin__readonly(L, *l);
        lua_setfield(L, base, *l);
    }
    lua_newtable(L);
    lua_getfield(L, g, "math");
    lua_pushnil(L);
    while (lua_next(L, -2)) {
        lua_pushvalue(L, -2);
        lua_insert(L, -2);
        lua_settable(L, -5);
    }
    lua_pop(L, 1);
    plugin__readonly(L, "math");
    lua_setfield(L, base, "math");

    lua_newtable(L);
    lua_getfield(L, g, "os");
    static const char *const os_names[] = {"time", "clock", "date", NULL};
    lua_insert(L, -2);
    copy_fields(L, lua_gettop(L) - 1, os_names);
    lua_remove(L, -2);
    guard_all(L, -1);
    plugin__readonly(L, "os");
    lua_setfield(L, base, "os");

    /* governor */
    lua_newtable(L);
    static const luaL_Reg cronf[] = {{"matches", gv_cron}, {NULL, NULL}};
    static const luaL_Reg dailyf[] = {{"matches", gv_daily}, {NULL, NULL}};
    static const luaL_Reg periodsf[] = {{"matches", gv_periods}, {NULL, NULL}};
    push_ro_lib(L, cronf, "governor.cron");
    lua_setfield(L, -2, "cron");
    push_ro_lib(L, dailyf, "governor.daily");
    lua_setfield(L, -2, "daily");
    push_ro_lib(L, periodsf, "governor.periods");
    lua_setfield(L, -2, "periods");
    static const luaL_Reg gv[] = {
        {"duration", gv_duration}, {"time", gv_time}, {"window", gv_window}, {NULL, NULL}};
    luaL_setfuncs(L, gv, 0);
    lua_pushnil(L);
    lua_pushcclosure(L, sb_log, 1);
    lua_setfield(L, -2, "log");
    plugin__readonly(L, "governor");
    lua_setfield(L, base, "governor");

    lua_pushvalue(L, base);
    lua_setfield(L, LUA_REGISTRYINDEX, REG_BASE);
    lua_settop(L, g - 1);
}

void plugin__sandbox_env(lua_State *L, const char *owner)
{
    lua_newtable(L);
    int env = lua_gettop(L);
    lua_getfield(L, LUA_REGISTRYINDEX, REG_BASE);
    lua_pushnil(L);
    while (lua_next(L, -2)) {
        lua_pushvalue(L, -2);
        lua_insert(L, -2);
        lua_rawset(L, env);
    }
    lua_pop(L, 1);
    lua_pushvalue(L, env);
    lua_setfield(L, env, "_G");
    lua_pushstring(L, owner);
    /* this plugin's module cache, shared by its files (so a cycle ends at the marker) */
    if (lua_getfield(L, LUA_REGISTRYINDEX, "governor.modcache") != LUA_TTABLE) {
        lua_pop(L, 1);
        lua_newtable(L);
        lua_pushvalue(L, -1);
        lua_setfield(L, LUA_REGISTRYINDEX, "governor.modcache");
    }
    if (lua_getfield(L, -1, owner) != LUA_TTABLE) {
        lua_pop(L, 1);
        lua_newtable(L);
        lua_pushvalue(L, -1);
        lua_setfield(L, -3, owner);
    }
    lua_remove(L, -2);
    lua_pushcclosure(L, sb_require, 2);
    lua_setfield(L, env, "require");
    lua_pushstring(L, owner);
    lua_pushcclosure(L, sb_log, 1);
    lua_setfield(L, env, "print");
}
