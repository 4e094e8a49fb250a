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
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/state.h"
#include "cron.h"
#include "log.h"
#include "options.h"
#include "plugin_int.h"
#include "timeutil.h"

#define REG_LOCKED "governor.locked" /* weak set of read-only proxies */
#define REG_BASE   "governor.base"   /* name -> value copied into every environment */

/* Pattern-matcher steps per charged instruction. */
#define STEPS_PER_INSTR 5

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

/*
 * Every C function the sandbox exposes that does work proportional to its arguments is
 * charged for it before it runs, so a call past the budget is refused instead of run; what
 * it produces is charged afterwards. The rates below are calibrated against the VM (an
 * instruction takes about 3 ns under the count hook), so the budget bounds the time of a
 * library call as it bounds the time of Lua code. Functions whose work a plugin could make
 * unbounded independently of the charge (table.insert, remove and sort, which find their
 * length through __len and move elements through __index/__newindex; utf8.codes'
 * iterator) are reimplemented here and charge as they go.
 */
#define BYTES_PER_INSTR 8  /* bytes a string function touches */
#define ELEM_COST       8  /* per element a table function touches (lua_geti/lua_seti) */
#define QUOTE_COST      8  /* per byte string.format("%q") escapes */
#define CONV_COST       16 /* per conversion of string.format */
#define DATE_COST       32 /* per byte of os.date's format (strftime per directive) */
#define PACK_COST       2  /* per byte string.pack pads or copies one at a time */
#define PARSE_COST      64 /* per byte the governor helpers parse (a period list: 3 us each) */

static int64_t weigh(lua_State *L, int i)
{
    return lua_type(L, i) == LUA_TSTRING ? (int64_t)lua_rawlen(L, i) : 1;
}

/* What a function costs beyond the size of its arguments, known from them. */
enum cost { COST_ARGS, COST_FORMAT, COST_PACK, COST_DATE, COST_MOVE, COST_PARSE };

/* string.format: each conversion, and each byte %q escapes. */
static int64_t format_cost(lua_State *L)
{
    size_t lf;
    const char *f = lua_tolstring(L, 1, &lf);
    if (!f)
        return 0;
    int64_t cost = 0;
    int arg = 1;
    for (const char *p = f, *e = f + lf; p < e; p++) {
        if (*p != '%')
            continue;
        if (++p < e && *p == '%')
            continue;
        while (p < e && *p && strchr("-+ #0123456789.", *p))
            p++;
        if (p >= e)
            break;
        arg++;
        cost += CONV_COST;
        if (*p == 'q' && lua_type(L, arg) == LUA_TSTRING)
            cost += (int64_t)lua_rawlen(L, arg) * QUOTE_COST;
    }
    return cost;
}

/* string.pack: the format's sizes (c20000000 pads twenty million bytes one at a time). */
static int64_t pack_cost(lua_State *L)
{
    size_t lf;
    const char *f = lua_tolstring(L, 1, &lf);
    if (!f)
        return 0;
    int64_t cost = (int64_t)lf * PACK_COST;
    for (size_t i = 0; i < lf;) {
        if (!isdigit((unsigned char)f[i])) {
            i++;
            continue;
        }
        int64_t n = 0;
        for (; i < lf && isdigit((unsigned char)f[i]); i++)
            n = n < 1000000000000LL ? n * 10 + (f[i] - '0') : n;
        cost += n * PACK_COST;
    }
    return cost;
}

/* table.move(a1, f, e, t [, a2]): e - f + 1 elements. */
static int64_t move_cost(lua_State *L)
{
    lua_Integer f = luaL_checkinteger(L, 2), e = luaL_checkinteger(L, 3);
    if (e < f)
        return 0;
    lua_Unsigned n = (lua_Unsigned)e - (lua_Unsigned)f + 1u;
    return n > (lua_Unsigned)(INT64_MAX / 4 / ELEM_COST) ? INT64_MAX / 4 : (int64_t)n * ELEM_COST;
}

/*
 * Any library function, through a closure over the original (upvalue 1) and its enum cost
 * (upvalue 2): charged by the size of its arguments and its known cost before it runs, and
 * by the size of its results after, the deadline checked each time (a loop of
 * cheap-looking calls on huge strings is stopped even though it executes few VM
 * instructions).
 */
static int guarded(lua_State *L)
{
    int n = lua_gettop(L);
    int64_t cost = 0;
    for (int i = 1; i <= n; i++)
        cost += weigh(L, i);
    plugin__charge(L, 1 + cost / BYTES_PER_INSTR); /* before reading the arguments */
    int64_t extra = 0;
    switch ((enum cost)lua_tointeger(L, lua_upvalueindex(2))) {
    case COST_ARGS:
        break;
    case COST_FORMAT:
        extra = format_cost(L);
        break;
    case COST_PACK:
        extra = pack_cost(L);
        break;
    case COST_DATE:
        extra = lua_type(L, 1) == LUA_TSTRING ? (int64_t)lua_rawlen(L, 1) * DATE_COST : 0;
        break;
    case COST_MOVE:
        extra = move_cost(L);
        break;
    case COST_PARSE:
        for (int i = 1; i <= n; i++)
            if (lua_type(L, i) == LUA_TSTRING)
                extra += (int64_t)lua_rawlen(L, i) * PARSE_COST;
        break;
    }
    plugin__charge(L, extra);
    lua_pushvalue(L, lua_upvalueindex(1));
    lua_insert(L, 1);
    lua_call(L, n, LUA_MULTRET);
    int r = lua_gettop(L);
    cost = 0;
    for (int i = 1; i <= r; i++)
        cost += weigh(L, i);
    plugin__charge(L, cost / BYTES_PER_INSTR);
    return r;
}

/* Pushes a guarded closure over the function at the top (replaces it). */
static void push_guarded(lua_State *L, enum cost c)
{
    lua_pushinteger(L, c);
    lua_pushcclosure(L, guarded, 2);
}

/* Replaces every C function of the table at idx with a guarded closure over it, of cost c. */
static void guard_all_cost(lua_State *L, int idx, enum cost c)
{
    idx = lua_absindex(L, idx);
    lua_pushnil(L);
    while (lua_next(L, idx)) {
        if (lua_iscfunction(L, -1)) {
            lua_pushvalue(L, -2);
            lua_insert(L, -2);
            push_guarded(L, c);
            lua_rawset(L, idx);
        } else {
            lua_pop(L, 1);
        }
    }
}

static void guard_all(lua_State *L, int idx)
{
    guard_all_cost(L, idx, COST_ARGS);
}

/* Guards t[name] with the cost c (t[name] is a C function, or already guarded). */
static void guard_cost(lua_State *L, int t, const char *name, enum cost c)
{
    lua_getfield(L, t, name);
    if (lua_getupvalue(L, -1, 1))
        lua_remove(L, -2);
    push_guarded(L, c);
    lua_setfield(L, t, name);
}

/* ------------------------------------------------------------ table -- */

/* table.unpack(t [, i [, j]]): the range is fixed here (j from #t, through __len, once),
 * charged, and handed to the original as explicit bounds. */
static int sb_unpack(lua_State *L)
{
    lua_Integer i = luaL_optinteger(L, 2, 1);
    lua_Integer e = lua_isnoneornil(L, 3) ? luaL_len(L, 1) : luaL_checkinteger(L, 3);
    if (i <= e)
        plugin__charge_units(L, (lua_Unsigned)e - (lua_Unsigned)i + 1u, ELEM_COST);
    lua_settop(L, 1);
    lua_pushvalue(L, lua_upvalueindex(1));
    lua_insert(L, 1);
    lua_pushinteger(L, i);
    lua_pushinteger(L, e);
    lua_call(L, 3, LUA_MULTRET);
    return lua_gettop(L);
}

/* table.concat(t [, sep [, i [, j]]]): the same, then the result's bytes. */
static int sb_concat(lua_State *L)
{
    luaL_optstring(L, 2, "");
    lua_Integer i = luaL_optinteger(L, 3, 1);
    lua_Integer e = lua_isnoneornil(L, 4) ? luaL_len(L, 1) : luaL_checkinteger(L, 4);
    if (i <= e)
        plugin__charge_units(L, (lua_Unsigned)e - (lua_Unsigned)i + 1u, ELEM_COST);
    lua_settop(L, 2);
    lua_pushvalue(L, lua_upvalueindex(1));
    lua_insert(L, 1);
    lua_pushinteger(L, i);
    lua_pushinteger(L, e);
    lua_call(L, 4, 1);
    plugin__charge(L, weigh(L, -1) / BYTES_PER_INSTR);
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

static int sb_insert(lua_State *L)
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
        plugin__charge_units(L, (lua_Unsigned)(e - pos), ELEM_COST);
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

static int sb_remove(lua_State *L)
{
    lua_Integer size = aux_getn(L, 1, TAB_RW);
    lua_Integer pos = luaL_optinteger(L, 2, size);
    if (pos != size)
        luaL_argcheck(L, (lua_Unsigned)pos - 1u <= (lua_Unsigned)size, 1, "position out of bounds");
    if (pos < size)
        plugin__charge_units(L, (lua_Unsigned)(size - pos), ELEM_COST);
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
        plugin__charge(L, (int64_t)SORT_BATCH * ELEM_COST);
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

static int sb_sort(lua_State *L)
{
    lua_Integer n = aux_getn(L, 1, TAB_RW);
    if (n > 1) {
        luaL_argcheck(L, n < INT_MAX, 1, "array too big");
        if (!lua_isnoneornil(L, 2))
            luaL_checktype(L, 2, LUA_TFUNCTION);
        lua_settop(L, 2);
        struct sorter so = {L, 0};
        auxsort(&so, 1, (IdxT)n, 0);
        plugin__charge(L, (int64_t)so.pending * ELEM_COST);
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
        if (n - from > BYTES_PER_INSTR)
            plugin__charge(L, (int64_t)(n - from) / BYTES_PER_INSTR);
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

static int sb_codes(lua_State *L)
{
    luaL_checkstring(L, 1);
    int lax = lua_toboolean(L, 2);
    lua_pushboolean(L, !lax);
    lua_pushcclosure(L, codes_step, 1);
    lua_pushvalue(L, 1);
    lua_pushinteger(L, 0);
    return 3;
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

    int64_t repl = 0; /* gsub: the cost of building the replacements */
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
        /* gsub builds a replacement per match: a string one is scanned for its %
         * escapes each time (a long one on many empty matches is a long call). */
        if (fn == DRY_GSUB && !d.over && !d.bad)
            repl =
                (int64_t)n * (1 + (lua_type(L, 3) == LUA_TSTRING ? (int64_t)lua_rawlen(L, 3) : 0));
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
    plugin__charge(L, d.steps / STEPS_PER_INSTR + repl);
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
 * what the memory cap leaves is refused up front (and an empty result is not looped for),
 * and the rest is charged before it runs: a repetition each, and the bytes. */
static int rep_guarded(lua_State *L)
{
    struct plugin_set *s = plugin__set(L);
    size_t l, lsep = 0;
    plugin__charge(L, 1 + (weigh(L, 1) + weigh(L, 2) + weigh(L, 3)) / BYTES_PER_INSTR);
    luaL_checklstring(L, 1, &l);
    lua_Integer n = luaL_checkinteger(L, 2);
    luaL_optlstring(L, 3, "", &lsep);
    if (n <= 0 || (l == 0 && lsep == 0)) {
        lua_pushliteral(L, "");
        return 1;
    }
    double total = (double)l * (double)n + (double)lsep * (double)(n - 1);
    double room = (double)s->mem_cap - (double)s->mem_used;
    if (total > room && total < (double)s->mem_cap) {       /* garbage may be in the way */
        plugin__charge(L, 1 + (int64_t)(s->mem_used / 64)); /* a collection visits it all */
        lua_gc(L, LUA_GCCOLLECT, 0);
        room = (double)s->mem_cap - (double)s->mem_used;
    }
    if (total > room) {
        char msg[160];
        snprintf(msg, sizeof msg,
                 "string.rep: a result of %.0f bytes exceeds the memory cap "
                 "(%zu bytes, %zu in use)",
                 total, s->mem_cap, s->mem_used);
        return luaL_error(L, "%s", msg);
    }
    plugin__charge(L, (int64_t)n + (int64_t)(total / BYTES_PER_INSTR));
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
    struct plugin_set *s = plugin__set(L);
    if (status == LUA_ERRMEM && !s->killed)
        s->killed = KILL_MEMORY;
    if (status != LUA_OK && s->killed) {
        plugin__stop(L);
        return lua_error(L);
    }
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

/*
 * xpcall(f, msgh, ...) without a message handler in Lua's sense: Lua runs a handler at the
 * point of the error, and when the error came from the count hook (a limit) the hooks are
 * off while it runs, so a handler that loops would run forever. Here f runs under a plain
 * protected call; when it fails (and not because of a limit) msgh runs afterwards with the
 * error, as an ordinary call under the limits, and its result is returned after false. A
 * plugin cannot tell the difference (it has no debug library to look at the stack from
 * the handler). An error in msgh gives false, "error in error handling", as in Lua.
 */
static int sb_xpcall(lua_State *L)
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
static int sb_error(lua_State *L)
{
    if (lua_type(L, 2) == LUA_TSTRING)
        plugin__charge(L, 1 + weigh(L, 2) / BYTES_PER_INSTR);
    int level = (int)luaL_optinteger(L, 2, 1);
    lua_settop(L, 1);
    if (lua_type(L, 1) == LUA_TSTRING && level > 0) {
        luaL_where(L, level);
        lua_pushvalue(L, 1);
        lua_concat(L, 2);
    }
    return lua_error(L);
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

/*
 * The log rate of plugins. A plugin's lines (governor.log, ctx.log, print, from any of its
 * files) are written while it has tokens: LOG_BURST at first, LOG_RATE more each second,
 * and at most LOG_PER_CALL in one call; the rest are counted, and the count is written as
 * one line ("N log lines suppressed") as soon as the plugin may log again (at the end of a
 * call at the latest). A line is cut at LOG_LINE_MAX bytes, each argument at LOG_ARG_MAX.
 */
#define LOG_PER_CALL 20
#define LOG_BURST    100
#define LOG_RATE     10.0 /* lines per second */
#define LOG_LINE_MAX 4096
#define LOG_ARG_MAX  1024

static void emit_log(struct plugin_set *s, const char *plugin, const char *msg)
{
    if (s->log_fn)
        s->log_fn(s->log_ud, plugin, msg);
    else
        log_msg(LOG_INFO, "plugin", msg, "plugin=%s revision=%s", plugin, s->revision);
}

static struct plugin__log *log_state(struct plugin_set *s, int idx)
{
    return idx >= 0 && idx < s->n ? &s->p[idx].log : &s->log_other;
}

/* Tops the bucket up for the time since it last was; true when a line may be written. */
static bool log_take(struct plugin__log *g)
{
    int64_t now = plugin__now_ns();
    if (!g->refill_ns) {
        g->tokens = LOG_BURST;
    } else {
        g->tokens += (double)(now - g->refill_ns) / 1e9 * LOG_RATE;
        if (g->tokens > LOG_BURST)
            g->tokens = LOG_BURST;
    }
    g->refill_ns = now;
    if (g->tokens < 1)
        return false;
    g->tokens -= 1;
    return true;
}

static void log_report(struct plugin_set *s, struct plugin__log *g, const char *who)
{
    char m[256];
    snprintf(m, sizeof m,
             "%llu log lines suppressed (a plugin logs at most %d lines per call, and %d at once "
             "then %g a second)",
             (unsigned long long)g->suppressed, LOG_PER_CALL, LOG_BURST, LOG_RATE);
    g->suppressed = 0;
    emit_log(s, who, m);
}

void plugin__log_flush(struct plugin_set *s, int idx, const char *who)
{
    struct plugin__log *g = log_state(s, idx);
    if (g->suppressed && log_take(g))
        log_report(s, g, idx >= 0 && idx < s->n ? s->p[idx].name : who);
}

void plugin__log_line(struct plugin_set *s, int idx, const char *who, const char *msg)
{
    struct plugin__log *g = log_state(s, idx);
    if (s->log_lines >= LOG_PER_CALL || !log_take(g)) {
        g->suppressed++;
        return;
    }
    s->log_lines++;
    if (g->suppressed)
        log_report(s, g, who);
    emit_log(s, who, msg);
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
    plugin__charge(L, 1 + (int64_t)len / BYTES_PER_INSTR);
    if (len > LOG_LINE_MAX) {
        lua_pushfstring(L, "%s...", lua_pushlstring(L, line, LOG_LINE_MAX));
        line = lua_tostring(L, -1);
    }
    const char *who = lua_isstring(L, lua_upvalueindex(1)) ? lua_tostring(L, lua_upvalueindex(1))
                                                           : (s->cur_name ? s->cur_name : "?");
    int idx = plugin_set_find(s, who);
    plugin__log_line(s, idx >= 0 ? idx : s->cur_idx, who, line);
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
    plugin__charge(L, 1 + (int64_t)f->len / BYTES_PER_INSTR); /* the parser is not hooked */
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

/* governor.time("2026-12-24T00:00:00Z") -> epoch ms (RFC 3339, Z or +hh:mm offsets). */
static int gv_time(lua_State *L)
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
    plugin__charge_units(L, (lua_Unsigned)w->n, ELEM_COST * 10);
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
    guard_all_cost(L, -1, COST_PARSE);
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
        "assert", "ipairs",   "next",     "pairs", "rawequal",     "rawget",   "rawlen",
        "select", "tonumber", "tostring", "type",  "getmetatable", "_VERSION", NULL};
    lua_pushvalue(L, base);
    copy_fields(L, g, base_names);
    lua_pop(L, 1);
    /* the two that convert a string argument to a number, which takes as long as it is */
    guard_cost(L, base, "select", COST_ARGS);
    guard_cost(L, base, "tonumber", COST_ARGS);
    static const luaL_Reg wrapped[] = {{"pcall", sb_pcall},
                                       {"xpcall", sb_xpcall},
                                       {"error", sb_error},
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
    guard_cost(L, str, "format", COST_FORMAT);
    guard_cost(L, str, "pack", COST_PACK);
    lua_pushliteral(L, "");
    lua_getmetatable(L, -1);
    lua_pushliteral(L, "locked");
    lua_setfield(L, -2, "__metatable");
    /* "10" + 1 runs the metatable's arithmetic, which converts the string */
    static const char *const arith[] = {"__add", "__sub",  "__mul", "__mod", "__pow",
                                        "__div", "__idiv", "__unm", NULL};
    for (const char *const *a = arith; *a; a++)
        if (lua_getfield(L, -1, *a) == LUA_TFUNCTION) {
            push_guarded(L, COST_ARGS);
            lua_setfield(L, -2, *a);
        } else {
            lua_pop(L, 1);
        }
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
        if (strcmp(*l, "table") == 0) {
            int t = lua_gettop(L);
            guard_cost(L, t, "move", COST_MOVE);
            static const struct {
                const char *name;
                lua_CFunction fn;
            } over[] = {{"unpack", sb_unpack}, {"concat", sb_concat}};
            for (size_t i = 0; i < sizeof over / sizeof over[0]; i++) {
                lua_getfield(L, t, over[i].name);
                lua_getupvalue(L, -1, 1);
                lua_remove(L, -2);
                lua_pushcclosure(L, over[i].fn, 1);
                lua_setfield(L, t, over[i].name);
            }
            static const luaL_Reg own[] = {
                {"insert", sb_insert}, {"remove", sb_remove}, {"sort", sb_sort}, {NULL, NULL}};
            luaL_setfuncs(L, own, 0);
        } else {
            lua_pushcfunction(L, sb_codes);
            lua_setfield(L, -2, "codes");
        }
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
    guard_all(L, -1); /* a string argument is converted to a number */
    plugin__readonly(L, "math");
    lua_setfield(L, base, "math");

    lua_newtable(L);
    lua_getfield(L, g, "os");
    static const char *const os_names[] = {"time", "clock", "date", NULL};
    lua_insert(L, -2);
    copy_fields(L, lua_gettop(L) - 1, os_names);
    lua_remove(L, -2);
    guard_all(L, -1);
    guard_cost(L, lua_gettop(L), "date", COST_DATE);
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
    guard_all_cost(L, -1, COST_PARSE); /* the helpers parse their text arguments */
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
