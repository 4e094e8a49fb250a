/*
 * sandbox.c - the sandbox's allow list, as data, and the environments built from it (see
 * sandbox.h).
 *
 * Every C function a plugin can reach that does work proportional to its arguments is
 * charged for it before it runs, so a call past the budget is refused instead of run; what
 * it produces is charged afterwards (guarded, below). The pattern functions are first run
 * by the dry run of pattern.c; the functions whose work a charge made up front cannot bound
 * are reimplemented in libstd.c and charge as they go.
 */
#include <ctype.h>
#include <lauxlib.h>
#include <lualib.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "plugin/libgov.h"
#include "plugin/libstd.h"
#include "plugin/pattern.h"
#include "plugin/proxy.h"
#include "plugin/sandbox.h"
#include "plugin/vm.h"

#define REG_BASE     "governor.base"     /* name -> value copied into every environment */
#define REG_FILES    "governor.files"    /* the files require may load (struct files) */
#define REG_MODCACHE "governor.modcache" /* owner -> its modules loaded by require */

/* --------------------------------------------------------------- charging -- */

/* What a function costs beyond the size of its arguments, known from them. */
enum cost { COST_ARGS, COST_FORMAT, COST_PACK, COST_DATE, COST_MOVE, COST_PARSE };

#define QUOTE_COST 8  /* per byte string.format("%q") escapes */
#define CONV_COST  16 /* per conversion of string.format */
#define DATE_COST  32 /* per byte of os.date's format (strftime per directive) */
#define PACK_COST  2  /* per byte string.pack pads or copies one at a time */
#define PARSE_COST 64 /* per byte the governor helpers parse (a period list: 3 us each) */

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
    return n > (lua_Unsigned)(INT64_MAX / 4 / VM_ELEM_COST) ? INT64_MAX / 4
                                                            : (int64_t)n * VM_ELEM_COST;
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
        cost += vm_weigh(L, i);
    vm_charge(L, 1 + cost / VM_BYTES_PER_INSTR); /* before reading the arguments */
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
    vm_charge(L, extra);
    lua_pushvalue(L, lua_upvalueindex(1));
    lua_insert(L, 1);
    lua_call(L, n, LUA_MULTRET);
    int r = lua_gettop(L);
    cost = 0;
    for (int i = 1; i <= r; i++)
        cost += vm_weigh(L, i);
    vm_charge(L, cost / VM_BYTES_PER_INSTR);
    return r;
}

/* string.find, match, gmatch, gsub: the original (upvalue 1) after the dry run of its enum
 * pattern_fn (upvalue 2), its results charged by their size. */
static int pattern_guarded(lua_State *L)
{
    pattern_charge(L, (enum pattern_fn)lua_tointeger(L, lua_upvalueindex(2)));
    int n = lua_gettop(L);
    lua_pushvalue(L, lua_upvalueindex(1));
    lua_insert(L, 1);
    lua_call(L, n, LUA_MULTRET);
    int r = lua_gettop(L);
    int64_t cost = 0;
    for (int i = 1; i <= r; i++)
        cost += vm_weigh(L, i);
    vm_charge(L, cost / VM_BYTES_PER_INSTR);
    return r;
}

/* ------------------------------------------------------------- allow list -- */

/* How an allowed name gets its value from its original: the value of that name in the
 * host's standard library as luaL_openlibs made it. */
enum how {
    HOW_COPY,      /* the original as it is: a constant, or work that does not grow with args */
    HOW_GUARD,     /* the original under guarded(), with cost (an enum cost) */
    HOW_PATTERN,   /* the original after the pattern dry run (cost: its enum pattern_fn) */
    HOW_OVER,      /* fn, a closure whose upvalue 1 is the original */
    HOW_OWN,       /* fn instead of any original */
    HOW_OWN_GUARD, /* fn under guarded(), with cost */
    HOW_TABLE,     /* a read-only table of the entries of sub */
};

struct entry {
    const char *name;
    enum how how;
    int cost;
    lua_CFunction fn;
    const struct entry *sub;
};

#define ALLOW(n)                                                                                   \
    {                                                                                              \
        n, HOW_COPY, 0, NULL, NULL                                                                 \
    }
#define GUARD(n, cost)                                                                             \
    {                                                                                              \
        n, HOW_GUARD, cost, NULL, NULL                                                             \
    }
#define DRY_RUN(n, fn)                                                                             \
    {                                                                                              \
        n, HOW_PATTERN, fn, NULL, NULL                                                             \
    }
#define OVER(n, f)                                                                                 \
    {                                                                                              \
        n, HOW_OVER, 0, f, NULL                                                                    \
    }
#define OWN(n, f)                                                                                  \
    {                                                                                              \
        n, HOW_OWN, 0, f, NULL                                                                     \
    }
#define OWN_GUARD(n, cost, f)                                                                      \
    {                                                                                              \
        n, HOW_OWN_GUARD, cost, f, NULL                                                            \
    }
#define TABLE(n, sub)                                                                              \
    {                                                                                              \
        n, HOW_TABLE, 0, NULL, sub                                                                 \
    }
#define END                                                                                        \
    {                                                                                              \
        NULL, HOW_COPY, 0, NULL, NULL                                                              \
    }

/* An original missing from the host's library (math.pow in a Lua built without
 * LUA_COMPAT_MATHLIB) is simply not there for plugins either. */

static const struct entry base_lib[] = {
    ALLOW("assert"),
    ALLOW("getmetatable"),
    ALLOW("ipairs"),
    ALLOW("next"),
    ALLOW("pairs"),
    ALLOW("rawequal"),
    ALLOW("rawget"),
    ALLOW("rawlen"),
    ALLOW("tostring"),
    ALLOW("type"),
    ALLOW("_VERSION"),
    /* the two that convert a string argument to a number, which takes as long as it is */
    GUARD("select", COST_ARGS),
    GUARD("tonumber", COST_ARGS),
    OWN("collectgarbage", libstd_collectgarbage),
    OWN("error", libstd_error),
    OWN("pcall", libstd_pcall),
    OWN("rawset", libstd_rawset),
    OWN("setmetatable", libstd_setmetatable),
    OWN("xpcall", libstd_xpcall),
    OWN("print", libgov_log), /* each environment's names its plugin (sandbox_env) */
    END,
};

/* No string.dump. */
static const struct entry string_lib[] = {
    GUARD("byte", COST_ARGS),
    GUARD("char", COST_ARGS),
    DRY_RUN("find", PATTERN_FIND),
    GUARD("format", COST_FORMAT),
    DRY_RUN("gmatch", PATTERN_GMATCH),
    DRY_RUN("gsub", PATTERN_GSUB),
    GUARD("len", COST_ARGS),
    GUARD("lower", COST_ARGS),
    DRY_RUN("match", PATTERN_MATCH),
    GUARD("pack", COST_PACK),
    GUARD("packsize", COST_ARGS),
    OVER("rep", libstd_rep),
    GUARD("reverse", COST_ARGS),
    GUARD("sub", COST_ARGS),
    GUARD("unpack", COST_ARGS),
    GUARD("upper", COST_ARGS),
    END,
};

/* "10" + 1 runs the strings' metatable's arithmetic, which converts the string. */
static const struct entry string_meta[] = {
    GUARD("__add", COST_ARGS),  GUARD("__sub", COST_ARGS), GUARD("__mul", COST_ARGS),
    GUARD("__mod", COST_ARGS),  GUARD("__pow", COST_ARGS), GUARD("__div", COST_ARGS),
    GUARD("__idiv", COST_ARGS), GUARD("__unm", COST_ARGS), END,
};

static const struct entry table_lib[] = {
    OVER("concat", libstd_concat), OWN("insert", libstd_insert),
    GUARD("move", COST_MOVE),      GUARD("pack", COST_ARGS),
    OWN("remove", libstd_remove),  OWN("sort", libstd_sort),
    OVER("unpack", libstd_unpack), END,
};

/* Every function guarded: a string argument is converted to a number. */
static const struct entry math_lib[] = {
    GUARD("abs", COST_ARGS),
    GUARD("acos", COST_ARGS),
    GUARD("asin", COST_ARGS),
    GUARD("atan", COST_ARGS),
    GUARD("atan2", COST_ARGS),
    GUARD("ceil", COST_ARGS),
    GUARD("cos", COST_ARGS),
    GUARD("cosh", COST_ARGS),
    GUARD("deg", COST_ARGS),
    GUARD("exp", COST_ARGS),
    GUARD("floor", COST_ARGS),
    GUARD("fmod", COST_ARGS),
    GUARD("frexp", COST_ARGS),
    GUARD("ldexp", COST_ARGS),
    GUARD("log", COST_ARGS),
    GUARD("log10", COST_ARGS),
    GUARD("max", COST_ARGS),
    GUARD("min", COST_ARGS),
    GUARD("modf", COST_ARGS),
    GUARD("pow", COST_ARGS),
    GUARD("rad", COST_ARGS),
    GUARD("random", COST_ARGS),
    GUARD("randomseed", COST_ARGS),
    GUARD("sin", COST_ARGS),
    GUARD("sinh", COST_ARGS),
    GUARD("sqrt", COST_ARGS),
    GUARD("tan", COST_ARGS),
    GUARD("tanh", COST_ARGS),
    GUARD("tointeger", COST_ARGS),
    GUARD("type", COST_ARGS),
    GUARD("ult", COST_ARGS),
    ALLOW("huge"),
    ALLOW("maxinteger"),
    ALLOW("mininteger"),
    ALLOW("pi"),
    END,
};

static const struct entry utf8_lib[] = {
    GUARD("char", COST_ARGS),
    ALLOW("charpattern"),
    GUARD("codepoint", COST_ARGS),
    OWN("codes", libstd_codes),
    GUARD("len", COST_ARGS),
    GUARD("offset", COST_ARGS),
    END,
};

/* No os.execute, getenv, exit, remove, rename, tmpname, setlocale, difftime. */
static const struct entry os_lib[] = {
    GUARD("clock", COST_ARGS),
    GUARD("date", COST_DATE),
    GUARD("time", COST_ARGS),
    END,
};

/* The helpers parse their text arguments: charged per byte. */
static const struct entry gov_cron[] = {OWN_GUARD("matches", COST_PARSE, libgov_cron), END};
static const struct entry gov_daily[] = {OWN_GUARD("matches", COST_PARSE, libgov_daily), END};
static const struct entry gov_periods[] = {OWN_GUARD("matches", COST_PARSE, libgov_periods), END};
static const struct entry governor_lib[] = {
    TABLE("cron", gov_cron),
    TABLE("daily", gov_daily),
    TABLE("periods", gov_periods),
    OWN_GUARD("duration", COST_PARSE, libgov_duration),
    OWN_GUARD("time", COST_PARSE, libgov_time),
    OWN_GUARD("window", COST_PARSE, libgov_window),
    OWN("log", libgov_log),
    END,
};

/* Where a library's table comes from. */
enum where {
    BASE,     /* no table: the entries are globals of every environment */
    NEW,      /* a new table of the entries, behind a read-only proxy */
    IN_PLACE, /* the host's own table changed in place (it is also the strings' __index):
                 what is not listed is removed; behind a read-only proxy */
    META,     /* the strings' metatable, changed in place and locked; the rest stays */
};

static const struct lib {
    const char *name; /* the global's name (and the host's library the originals are in) */
    enum where where;
    const struct entry *entries;
} libs[] = {
    {NULL, BASE, base_lib},    {"string", IN_PLACE, string_lib}, {"string", META, string_meta},
    {"table", NEW, table_lib}, {"utf8", NEW, utf8_lib},          {"math", NEW, math_lib},
    {"os", NEW, os_lib},       {"governor", NEW, governor_lib},
};

/* ---------------------------------------------------------------- assembly -- */

static void push_guarded(lua_State *L, int cost)
{
    lua_pushinteger(L, cost);
    lua_pushcclosure(L, guarded, 2);
}

static void push_table(lua_State *L, int orig, const struct entry *e, const char *what);

/* Pushes the value of entry e, its original taken from the table at orig (0: none). Pushes
 * nothing and returns false when the entry needs an original that is not there. */
static bool push_entry(lua_State *L, int orig, const struct entry *e, const char *what)
{
    if (e->how == HOW_OWN || e->how == HOW_OWN_GUARD) {
        lua_pushcfunction(L, e->fn);
        if (e->how == HOW_OWN_GUARD)
            push_guarded(L, e->cost);
        return true;
    }
    if (e->how == HOW_TABLE) {
        char sub[64];
        snprintf(sub, sizeof sub, "%s.%s", what, e->name);
        push_table(L, 0, e->sub, sub);
        return true;
    }
    if (!orig || lua_getfield(L, orig, e->name) == LUA_TNIL) {
        if (orig)
            lua_pop(L, 1);
        return false;
    }
    switch (e->how) {
    case HOW_GUARD:
        push_guarded(L, e->cost);
        break;
    case HOW_PATTERN:
        lua_pushinteger(L, e->cost);
        lua_pushcclosure(L, pattern_guarded, 2);
        break;
    case HOW_OVER:
        lua_pushcclosure(L, e->fn, 1);
        break;
    default: /* HOW_COPY */
        break;
    }
    return true;
}

/* Sets every entry into the table at t (originals from orig). */
static void set_entries(lua_State *L, int t, int orig, const struct entry *e, const char *what)
{
    for (; e->name; e++)
        if (push_entry(L, orig, e, what))
            lua_setfield(L, t, e->name);
}

/* Pushes a read-only proxy of a new table of the entries. */
static void push_table(lua_State *L, int orig, const struct entry *e, const char *what)
{
    lua_newtable(L);
    set_entries(L, lua_gettop(L), orig, e, what);
    proxy_readonly(L, what);
}

static bool listed(const struct entry *e, const char *name)
{
    for (; e->name; e++)
        if (strcmp(e->name, name) == 0)
            return true;
    return false;
}

/* The host's table at t is made the allow list's: unlisted names removed, listed ones set. */
static void trim_in_place(lua_State *L, int t, const struct entry *e, const char *what)
{
    lua_pushnil(L);
    while (lua_next(L, t)) {
        lua_pop(L, 1);
        if (lua_type(L, -1) != LUA_TSTRING || !listed(e, lua_tostring(L, -1))) {
            lua_pushvalue(L, -1);
            lua_pushnil(L);
            lua_rawset(L, t); /* clearing a field during a traversal is allowed */
        }
    }
    /* the originals are read before they are replaced: a copy to read them from */
    lua_newtable(L);
    int orig = lua_gettop(L);
    for (const struct entry *x = e; x->name; x++) {
        lua_getfield(L, t, x->name);
        lua_setfield(L, orig, x->name);
    }
    set_entries(L, t, orig, e, what);
    lua_pop(L, 1);
}

struct files {
    const struct sandbox_file *files;
    int n;
};

void sandbox_open(lua_State *L, const struct sandbox_file *files, int n)
{
    luaL_openlibs(L); /* into the host's own _G, which no plugin ever sees */
    proxy_init(L);
    struct files *fs = lua_newuserdatauv(L, sizeof *fs, 0);
    fs->files = files;
    fs->n = n;
    lua_setfield(L, LUA_REGISTRYINDEX, REG_FILES);

    lua_pushglobaltable(L);
    int g = lua_gettop(L);
    lua_newtable(L); /* base: name -> value of every environment */
    int base = lua_gettop(L);
    for (size_t i = 0; i < sizeof libs / sizeof libs[0]; i++) {
        const struct lib *l = &libs[i];
        switch (l->where) {
        case BASE:
            set_entries(L, base, g, l->entries, "_G");
            break;
        case NEW:
            lua_getfield(L, g, l->name);
            push_table(L, lua_istable(L, -1) ? lua_gettop(L) : 0, l->entries, l->name);
            lua_setfield(L, base, l->name);
            lua_pop(L, 1);
            break;
        case IN_PLACE:
            lua_getfield(L, g, l->name);
            trim_in_place(L, lua_gettop(L), l->entries, l->name);
            proxy_readonly(L, l->name);
            lua_setfield(L, base, l->name);
            break;
        case META:
            lua_pushliteral(L, "");
            lua_getmetatable(L, -1);
            lua_pushliteral(L, "locked");
            lua_setfield(L, -2, "__metatable");
            lua_newtable(L); /* the originals */
            for (const struct entry *e = l->entries; e->name; e++) {
                lua_getfield(L, -2, e->name);
                lua_setfield(L, -2, e->name);
            }
            set_entries(L, lua_gettop(L) - 1, lua_gettop(L), l->entries, l->name);
            lua_pop(L, 3);
            break;
        }
    }
    lua_pushvalue(L, base);
    lua_setfield(L, LUA_REGISTRYINDEX, REG_BASE);
    lua_settop(L, g - 1);
}

/* ---------------------------------------------------------- environments -- */

/* require(name): only DIR/lib/NAME.lua, NAME in [A-Za-z0-9_]+, text only, in a new
 * environment of the requiring plugin (upvalues 1 and 3: its name and struct vm_owner);
 * results cached per plugin (upvalue 2). */
static int sb_require(lua_State *L)
{
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
    lua_getfield(L, LUA_REGISTRYINDEX, REG_FILES);
    const struct files *fs = lua_touserdata(L, -1);
    lua_pop(L, 1);
    const struct sandbox_file *f = NULL;
    for (int i = 0; fs && i < fs->n; i++)
        if (strcmp(fs->files[i].path, path) == 0)
            f = &fs->files[i];
    if (!f)
        return luaL_error(L, "require \"%s\": no file %s in the policies directory", name, path);
    /* a marker against cycles */
    lua_pushboolean(L, 0);
    lua_setfield(L, lua_upvalueindex(2), name);
    vm_charge(L, 1 + (int64_t)f->len / VM_BYTES_PER_INSTR); /* the parser is not hooked */
    sandbox_load_chunk(L, f, lua_tostring(L, lua_upvalueindex(1)),
                       lua_touserdata(L, lua_upvalueindex(3)));
    lua_call(L, 0, 1);
    if (lua_isnil(L, -1)) {
        lua_pop(L, 1);
        lua_pushboolean(L, 1);
    }
    lua_pushvalue(L, -1);
    lua_setfield(L, lua_upvalueindex(2), name);
    return 1;
}

void sandbox_env(lua_State *L, const char *owner, struct vm_owner *own)
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
    if (lua_getfield(L, LUA_REGISTRYINDEX, REG_MODCACHE) != LUA_TTABLE) {
        lua_pop(L, 1);
        lua_newtable(L);
        lua_pushvalue(L, -1);
        lua_setfield(L, LUA_REGISTRYINDEX, REG_MODCACHE);
    }
    if (lua_getfield(L, -1, owner) != LUA_TTABLE) {
        lua_pop(L, 1);
        lua_newtable(L);
        lua_pushvalue(L, -1);
        lua_setfield(L, -3, owner);
    }
    lua_remove(L, -2);
    lua_pushlightuserdata(L, own);
    lua_pushcclosure(L, sb_require, 3);
    lua_setfield(L, env, "require");
    lua_pushstring(L, owner);
    lua_pushlightuserdata(L, own);
    lua_pushcclosure(L, libgov_log, 2);
    lua_setfield(L, env, "print");
}

int sandbox_load_chunk(lua_State *L, const struct sandbox_file *f, const char *owner,
                       struct vm_owner *own)
{
    char chunk[300];
    snprintf(chunk, sizeof chunk, "@%s", f->path);
    if (luaL_loadbufferx(L, f->text, f->len, chunk, "t") != LUA_OK)
        return lua_error(L);
    sandbox_env(L, owner, own);
    if (!lua_setupvalue(L, -2, 1))
        lua_pop(L, 1);
    return 1;
}
