/*
 * libstd.c - the standard library functions the sandbox replaces or wraps (see libstd.h).
 */
#include <lauxlib.h>
#include <limits.h>
#include <string.h>
#include <time.h>

#include "plugin/libstd.h"
#include "plugin/proxy.h"
#include "plugin/vm.h"

/* ------------------------------------------------------------ table -- */

/* table.unpack(t [, i [, j]]): the range is fixed here (j from #t, through __len, once),
 * charged, and handed to the original as explicit bounds. */
int libstd_unpack(lua_State *L)
{
    lua_Integer i = luaL_optinteger(L, 2, 1);
    lua_Integer e = lua_isnoneornil(L, 3) ? luaL_len(L, 1) : luaL_checkinteger(L, 3);
    if (i <= e)
        vm_charge_units(L, (lua_Unsigned)e - (lua_Unsigned)i + 1u, VM_ELEM_COST);
    lua_settop(L, 1);
    lua_pushvalue(L, lua_upvalueindex(1));
    lua_insert(L, 1);
    lua_pushinteger(L, i);
    lua_pushinteger(L, e);
    lua_call(L, 3, LUA_MULTRET);
    return lua_gettop(L);
}

/* table.concat(t [, sep [, i [, j]]]): the same, then the result's bytes. */
int libstd_concat(lua_State *L)
{
    luaL_optstring(L, 2, "");
    lua_Integer i = luaL_optinteger(L, 3, 1);
    lua_Integer e = lua_isnoneornil(L, 4) ? luaL_len(L, 1) : luaL_checkinteger(L, 4);
    if (i <= e)
        vm_charge_units(L, (lua_Unsigned)e - (lua_Unsigned)i + 1u, VM_ELEM_COST);
    lua_settop(L, 2);
    lua_pushvalue(L, lua_upvalueindex(1));
    lua_insert(L, 1);
    lua_pushinteger(L, i);
    lua_pushinteger(L, e);
    lua_call(L, 4, 1);
    vm_charge(L, vm_weigh(L, -1) / VM_BYTES_PER_INSTR);
    return 1;
}

/* Lua 5.4's ltablib.c (MIT, see lua.h) for insert, remove and sort, with the length read
 * once and every element moved or compared charged. */
#define TAB_R  1
#define TAB_W  2
#define TAB_L  4
#define TAB_RW (TAB_R | TAB_W)

static int checkfield(lua_State *L, const char *key, int n)
{
    lua_pushstring(L, key);
    return lua_rawget(L, -n) != LUA_TNIL;
}

static void checktab(lua_State *L, int arg, int what)
{
    if (lua_type(L, arg) != LUA_TTABLE) {
        int n = 1;
        if (lua_getmetatable(L, arg) && (!(what & TAB_R) || checkfield(L, "__index", ++n)) &&
            (!(what & TAB_W) || checkfield(L, "__newindex", ++n)) &&
            (!(what & TAB_L) || checkfield(L, "__len", ++n)))
            lua_pop(L, n);
        else
            luaL_checktype(L, arg, LUA_TTABLE);
    }
}

static lua_Integer aux_getn(lua_State *L, int n, int w)
{
    checktab(L, n, w | TAB_L);
    return luaL_len(L, n);
}

int libstd_insert(lua_State *L)
{
    lua_Integer e = aux_getn(L, 1, TAB_RW);
    e = (lua_Integer)((lua_Unsigned)e + 1u);
    lua_Integer pos;
    switch (lua_gettop(L)) {
    case 2:
        pos = e;
        break;
    case 3:
        pos = luaL_checkinteger(L, 2);
        luaL_argcheck(L, (lua_Unsigned)pos - 1u < (lua_Unsigned)e, 2, "position out of bounds");
        vm_charge_units(L, (lua_Unsigned)(e - pos), VM_ELEM_COST);
        for (lua_Integer i = e; i > pos; i--) {
            lua_geti(L, 1, i - 1);
            lua_seti(L, 1, i);
        }
        break;
    default:
        return luaL_error(L, "wrong number of arguments to 'insert'");
    }
    lua_seti(L, 1, pos);
    return 0;
}

int libstd_remove(lua_State *L)
{
    lua_Integer size = aux_getn(L, 1, TAB_RW);
    lua_Integer pos = luaL_optinteger(L, 2, size);
    if (pos != size)
        luaL_argcheck(L, (lua_Unsigned)pos - 1u <= (lua_Unsigned)size, 1, "position out of bounds");
    if (pos < size)
        vm_charge_units(L, (lua_Unsigned)(size - pos), VM_ELEM_COST);
    lua_geti(L, 1, pos);
    for (; pos < size; pos++) {
        lua_geti(L, 1, pos + 1);
        lua_seti(L, 1, pos);
    }
    lua_pushnil(L);
    lua_seti(L, 1, pos);
    return 1;
}

typedef unsigned int IdxT;
#define RANLIMIT   100u
#define SORT_BATCH 256 /* comparisons charged at once */

struct sorter {
    lua_State *L;
    int pending; /* comparisons not charged yet */
};

static unsigned int random_pivot(void)
{
    return (unsigned int)clock() + (unsigned int)time(NULL);
}

static void set2(lua_State *L, IdxT i, IdxT j)
{
    lua_seti(L, 1, i);
    lua_seti(L, 1, j);
}

static int sort_comp(struct sorter *so, int a, int b)
{
    lua_State *L = so->L;
    if (++so->pending == SORT_BATCH) {
        vm_charge(L, (int64_t)SORT_BATCH * VM_ELEM_COST);
        so->pending = 0;
    }
    if (lua_isnil(L, 2))
        return lua_compare(L, a, b, LUA_OPLT);
    lua_pushvalue(L, 2);
    lua_pushvalue(L, a - 1);
    lua_pushvalue(L, b - 2);
    lua_call(L, 2, 1);
    int res = lua_toboolean(L, -1);
    lua_pop(L, 1);
    return res;
}

static IdxT partition(struct sorter *so, IdxT lo, IdxT up)
{
    lua_State *L = so->L;
    IdxT i = lo;
    IdxT j = up - 1;
    for (;;) {
        while ((void)lua_geti(L, 1, ++i), sort_comp(so, -1, -2)) {
            if (i == up - 1)
                luaL_error(L, "invalid order function for sorting");
            lua_pop(L, 1);
        }
        while ((void)lua_geti(L, 1, --j), sort_comp(so, -3, -1)) {
            if (j < i)
                luaL_error(L, "invalid order function for sorting");
            lua_pop(L, 1);
        }
        if (j < i) {
            lua_pop(L, 1);
            set2(L, up - 1, i);
            return i;
        }
        set2(L, i, j);
    }
}

static IdxT choose_pivot(IdxT lo, IdxT up, unsigned int rnd)
{
    IdxT r4 = (up - lo) / 4;
    return rnd % (r4 * 2) + (lo + r4);
}

static void auxsort(struct sorter *so, IdxT lo, IdxT up, unsigned int rnd)
{
    lua_State *L = so->L;
    while (lo < up) {
        IdxT p, n;
        lua_geti(L, 1, lo);
        lua_geti(L, 1, up);
        if (sort_comp(so, -1, -2))
            set2(L, lo, up);
        else
            lua_pop(L, 2);
        if (up - lo == 1)
            return;
        if (up - lo < RANLIMIT || rnd == 0)
            p = (lo + up) / 2;
        else
            p = choose_pivot(lo, up, rnd);
        lua_geti(L, 1, p);
        lua_geti(L, 1, lo);
        if (sort_comp(so, -2, -1)) {
            set2(L, p, lo);
        } else {
            lua_pop(L, 1);
            lua_geti(L, 1, up);
            if (sort_comp(so, -1, -2))
                set2(L, p, up);
            else
                lua_pop(L, 2);
        }
        if (up - lo == 2)
            return;
        lua_geti(L, 1, p);
        lua_pushvalue(L, -1);
        lua_geti(L, 1, up - 1);
        set2(L, p, up - 1);
        p = partition(so, lo, up);
        if (p - lo < up - p) {
            auxsort(so, lo, p - 1, rnd);
            n = p - lo;
            lo = p + 1;
        } else {
            auxsort(so, p + 1, up, rnd);
            n = up - p;
            up = p - 1;
        }
        if ((up - lo) / 128 > n)
            rnd = random_pivot();
    }
}

int libstd_sort(lua_State *L)
{
    lua_Integer n = aux_getn(L, 1, TAB_RW);
    if (n > 1) {
        luaL_argcheck(L, n < INT_MAX, 1, "array too big");
        if (!lua_isnoneornil(L, 2))
            luaL_checktype(L, 2, LUA_TFUNCTION);
        lua_settop(L, 2);
        struct sorter so = {L, 0};
        auxsort(&so, 1, (IdxT)n, 0);
        vm_charge(L, (int64_t)so.pending * VM_ELEM_COST);
    }
    return 0;
}

/* ------------------------------------------------------------- utf8 -- */

#define UTF8_MAXCP 0x7FFFFFFFu
#define iscont(c)  (((c)&0xC0) == 0x80)

/* Lua 5.4's utf8_decode (MIT, see lua.h). */
static const char *utf8_decode(const char *s, unsigned int *val, int strict)
{
    static const unsigned int limits[] = {~(unsigned int)0, 0x80,      0x800,
                                          0x10000u,         0x200000u, 0x4000000u};
    unsigned int c = (unsigned char)s[0];
    unsigned int res = 0;
    if (c < 0x80) {
        res = c;
    } else {
        int count = 0;
        for (; c & 0x40; c <<= 1) {
            unsigned int cc = (unsigned char)s[++count];
            if ((cc & 0xC0) != 0x80)
                return NULL;
            res = (res << 6) | (cc & 0x3F);
        }
        res |= ((unsigned int)(c & 0x7F) << (count * 5));
        if (count > 5 || res > UTF8_MAXCP || res < limits[count])
            return NULL;
        s += count;
    }
    if (strict && (res > 0x10FFFFu || (0xD800u <= res && res <= 0xDFFFu)))
        return NULL;
    if (val)
        *val = res;
    return s + 1;
}

/* utf8.codes' iterator: Lua's own skips any run of continuation bytes in one call, which
 * on a long run is a long call; this one charges what it skips. Upvalue 1: strict. */
static int codes_step(lua_State *L)
{
    size_t len;
    const char *s = luaL_checklstring(L, 1, &len);
    lua_Unsigned n = (lua_Unsigned)lua_tointeger(L, 2);
    int strict = lua_toboolean(L, lua_upvalueindex(1));
    if (n < len) {
        lua_Unsigned from = n;
        while (n < len && iscont((unsigned char)s[n]))
            n++;
        if (n - from > VM_BYTES_PER_INSTR)
            vm_charge(L, (int64_t)(n - from) / VM_BYTES_PER_INSTR);
    }
    if (n >= len)
        return 0;
    unsigned int code;
    if (!utf8_decode(s + n, &code, strict))
        return luaL_error(L, "invalid UTF-8 code");
    lua_pushinteger(L, (lua_Integer)n + 1);
    lua_pushinteger(L, code);
    return 2;
}

int libstd_codes(lua_State *L)
{
    luaL_checkstring(L, 1);
    int lax = lua_toboolean(L, 2);
    lua_pushboolean(L, !lax);
    lua_pushcclosure(L, codes_step, 1);
    lua_pushvalue(L, 1);
    lua_pushinteger(L, 0);
    return 3;
}

/* string.rep: the result's size is known before anything is built, so a result larger than
 * what the memory cap leaves is refused up front (and an empty result is not looped for),
 * and the rest is charged before it runs: a repetition each, and the bytes. */
int libstd_rep(lua_State *L)
{
    struct vm *vm = vm_of(L);
    size_t l, lsep = 0;
    vm_charge(L, 1 + (vm_weigh(L, 1) + vm_weigh(L, 2) + vm_weigh(L, 3)) / VM_BYTES_PER_INSTR);
    luaL_checklstring(L, 1, &l);
    lua_Integer n = luaL_checkinteger(L, 2);
    luaL_optlstring(L, 3, "", &lsep);
    if (n <= 0 || (l == 0 && lsep == 0)) {
        lua_pushliteral(L, "");
        return 1;
    }
    double total = (double)l * (double)n + (double)lsep * (double)(n - 1);
    double room = (double)vm->mem_cap - (double)vm->mem_used;
    if (total > room && total < (double)vm->mem_cap) {  /* garbage may be in the way */
        vm_charge(L, 1 + (int64_t)(vm->mem_used / 64)); /* a collection visits it all */
        lua_gc(L, LUA_GCCOLLECT, 0);
        room = (double)vm->mem_cap - (double)vm->mem_used;
    }
    if (total > room) {
        char msg[160];
        snprintf(msg, sizeof msg,
                 "string.rep: a result of %.0f bytes exceeds the memory cap "
                 "(%zu bytes, %zu in use)",
                 total, vm->mem_cap, vm->mem_used);
        return luaL_error(L, "%s", msg);
    }
    vm_charge(L, (int64_t)n + (int64_t)(total / VM_BYTES_PER_INSTR));
    int top = lua_gettop(L);
    lua_pushvalue(L, lua_upvalueindex(1));
    lua_insert(L, 1);
    lua_call(L, top, 1);
    return 1;
}

/* ---------------------------------------------------------- base functions -- */

/* pcall/xpcall that cannot swallow the host's limits: a killed call, or one out of
 * memory, is re-raised instead of returned as false. */
static int rethrow_if_killed(lua_State *L, int status)
{
    struct vm *vm = vm_of(L);
    if (status == LUA_ERRMEM && !vm->killed)
        vm->killed = VM_KILL_MEMORY;
    if (status != LUA_OK && vm->killed) {
        vm_stop(L);
        return lua_error(L);
    }
    return 0;
}

int libstd_pcall(lua_State *L)
{
    luaL_checkany(L, 1);
    int status = lua_pcall(L, lua_gettop(L) - 1, LUA_MULTRET, 0);
    rethrow_if_killed(L, status);
    lua_pushboolean(L, status == LUA_OK);
    lua_insert(L, 1);
    return lua_gettop(L);
}

/*
 * xpcall(f, msgh, ...) without a message handler in Lua's sense: Lua runs a handler at the
 * point of the error, and when the error came from the count hook (a limit) the hooks are
 * off while it runs, so a handler that loops would run forever. Here f runs under a plain
 * protected call; when it fails (and not because of a limit) msgh runs afterwards with the
 * error, as an ordinary call under the limits, and its result is returned after false. A
 * plugin cannot tell the difference (it has no debug library to look at the stack from
 * the handler). An error in msgh gives false, "error in error handling", as in Lua.
 */
int libstd_xpcall(lua_State *L)
{
    int n = lua_gettop(L);
    luaL_checktype(L, 2, LUA_TFUNCTION);
    lua_pushvalue(L, 1);
    lua_pushvalue(L, 2);
    lua_replace(L, 1); /* msgh at 1 */
    lua_replace(L, 2); /* f at 2 */
    int status = lua_pcall(L, n - 2, LUA_MULTRET, 0);
    rethrow_if_killed(L, status);
    if (status == LUA_OK) {
        lua_pushboolean(L, 1);
        lua_replace(L, 1);
        return lua_gettop(L);
    }
    lua_settop(L, 2); /* msgh, the error */
    lua_pushvalue(L, 1);
    lua_pushvalue(L, 2);
    status = lua_pcall(L, 1, 1, 0);
    rethrow_if_killed(L, status);
    if (status != LUA_OK) {
        lua_pop(L, 1);
        lua_pushliteral(L, "error in error handling");
    }
    lua_pushboolean(L, 0);
    lua_insert(L, -2);
    return 2;
}

/* error(msg [, level]): Lua's, with a level given as a (long) string charged for its
 * conversion; it is not wrapped in a guard, which would shift the levels. */
int libstd_error(lua_State *L)
{
    if (lua_type(L, 2) == LUA_TSTRING)
        vm_charge(L, 1 + vm_weigh(L, 2) / VM_BYTES_PER_INSTR);
    int level = (int)luaL_optinteger(L, 2, 1);
    lua_settop(L, 1);
    if (lua_type(L, 1) == LUA_TSTRING && level > 0) {
        luaL_where(L, level);
        lua_pushvalue(L, 1);
        lua_concat(L, 2);
    }
    return lua_error(L);
}

int libstd_rawset(lua_State *L)
{
    luaL_checktype(L, 1, LUA_TTABLE);
    if (proxy_is_readonly(L, 1))
        return luaL_error(L, "rawset: attempt to modify a read-only table");
    luaL_checkany(L, 2);
    luaL_checkany(L, 3);
    lua_settop(L, 3);
    lua_rawset(L, 1);
    return 1;
}

int libstd_setmetatable(lua_State *L)
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

int libstd_collectgarbage(lua_State *L)
{
    const char *opt = luaL_optstring(L, 1, "count");
    if (strcmp(opt, "count") != 0)
        return luaL_error(L, "collectgarbage: only \"count\" is allowed in plugins");
    int kb = lua_gc(L, LUA_GCCOUNT, 0), b = lua_gc(L, LUA_GCCOUNTB, 0);
    lua_pushnumber(L, (lua_Number)kb + (lua_Number)b / 1024.0);
    return 1;
}
