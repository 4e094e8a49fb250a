/*
 * proxy.c - read-only views of tables (see proxy.h).
 */
#include <lauxlib.h>

#include "plugin/proxy.h"

/*
 * A proxy is an empty table whose metatable (hidden: __metatable) holds the proxy's name at
 * [1] and the same C functions for every proxy; a proxy is known by its __newindex. A
 * shallow proxy's __index is the real table itself. A deep proxy's __index is ro_deep_index,
 * with the real table at [2], its depth at [3] and, at [4], the proxies of the nested tables
 * read so far: a nested table becomes a proxy when it is first read (by index or pairs),
 * once, so making a deep proxy costs two tables whatever it holds.
 */
#define MT_WHAT   1
#define MT_REAL   2
#define MT_DEPTH  3
#define MT_KIDS   4
#define MAX_DEPTH 8 /* tables nested deeper are handed out as they are */

static int ro_newindex(lua_State *L)
{
    const char *what = NULL;
    if (lua_getmetatable(L, 1) && lua_rawgeti(L, -1, MT_WHAT) == LUA_TSTRING)
        what = lua_tostring(L, -1);
    return luaL_error(L, "attempt to modify read-only table '%s'", what ? what : "?");
}

/* Pushes the real table of the proxy whose metatable is at mt. */
static void push_real(lua_State *L, int mt)
{
    lua_pushliteral(L, "__index");
    if (lua_rawget(L, mt) != LUA_TTABLE) {
        lua_pop(L, 1);
        lua_rawgeti(L, mt, MT_REAL);
    }
}

static void make_proxy(lua_State *L, const char *what, int depth);

/* Replaces the value at the top, read from the deep proxy whose metatable is at mt, with its
 * proxy when it is a table nested not too deep (the same proxy every time). */
static void wrap_kid(lua_State *L, int mt)
{
    if (!lua_istable(L, -1))
        return;
    lua_rawgeti(L, mt, MT_DEPTH);
    int depth = (int)lua_tointeger(L, -1) + 1;
    lua_pop(L, 1);
    if (depth > MAX_DEPTH)
        return;
    if (lua_rawgeti(L, mt, MT_KIDS) != LUA_TTABLE) {
        lua_pop(L, 1);
        lua_newtable(L);
        lua_pushvalue(L, -1);
        lua_rawseti(L, mt, MT_KIDS);
    }
    lua_pushvalue(L, -2);
    if (lua_rawget(L, -2) == LUA_TTABLE) { /* kids, proxy */
        lua_replace(L, -3);
        lua_pop(L, 1);
        return;
    }
    lua_pop(L, 1);
    lua_rawgeti(L, mt, MT_WHAT);
    const char *what = lua_tostring(L, -1); /* anchored in mt */
    lua_pop(L, 1);
    lua_pushvalue(L, -2); /* value, kids, real (the key) */
    lua_pushvalue(L, -1);
    make_proxy(L, what, depth); /* value, kids, real, proxy */
    lua_pushvalue(L, -1);
    lua_replace(L, -5); /* proxy, kids, real, proxy */
    lua_rawset(L, -3);
    lua_pop(L, 1);
}

/* __index of a deep proxy: the real table's value, a nested table as its proxy. */
static int ro_deep_index(lua_State *L)
{
    lua_getmetatable(L, 1);
    int mt = lua_gettop(L);
    lua_rawgeti(L, mt, MT_REAL);
    lua_pushvalue(L, 2);
    lua_rawget(L, -2);
    wrap_kid(L, mt);
    return 1;
}

/* The iterator of pairs(proxy): next() over the hidden table, which is never exposed (a
 * deep proxy's nested tables come as their proxies). Upvalues: the real table, the proxy's
 * metatable. */
static int ro_next(lua_State *L)
{
    lua_settop(L, 2);
    lua_pushvalue(L, 2);
    if (lua_next(L, lua_upvalueindex(1))) {
        if (lua_rawgeti(L, lua_upvalueindex(2), MT_DEPTH) != LUA_TNIL) {
            lua_pop(L, 1);
            wrap_kid(L, lua_upvalueindex(2));
        } else {
            lua_pop(L, 1);
        }
        return 2;
    }
    lua_pushnil(L);
    return 1;
}

static int ro_pairs(lua_State *L)
{
    lua_getmetatable(L, 1);
    int mt = lua_gettop(L);
    push_real(L, mt);
    lua_pushvalue(L, mt);
    lua_pushcclosure(L, ro_next, 2);
    lua_pushnil(L);
    lua_pushnil(L);
    return 3;
}

static int ro_len(lua_State *L)
{
    lua_getmetatable(L, 1);
    push_real(L, lua_gettop(L));
    lua_pushinteger(L, (lua_Integer)lua_rawlen(L, -1));
    return 1;
}

void proxy_init(lua_State *L)
{
    (void)L; /* nothing to set up: a proxy is known by its metatable */
}

/* Replaces the table at the top with a proxy of it named what: shallow (depth < 0), or deep
 * at that depth. */
static void make_proxy(lua_State *L, const char *what, int depth)
{
    int real = lua_gettop(L);
    lua_newtable(L); /* the proxy */
    lua_createtable(L, depth < 0 ? 1 : 3, 5);
    if (depth < 0) {
        lua_pushvalue(L, real);
        lua_setfield(L, -2, "__index");
    } else {
        lua_pushcfunction(L, ro_deep_index);
        lua_setfield(L, -2, "__index");
        lua_pushvalue(L, real);
        lua_rawseti(L, -2, MT_REAL);
        lua_pushinteger(L, depth);
        lua_rawseti(L, -2, MT_DEPTH);
    }
    lua_pushstring(L, what);
    lua_rawseti(L, -2, MT_WHAT);
    lua_pushcfunction(L, ro_newindex);
    lua_setfield(L, -2, "__newindex");
    lua_pushcfunction(L, ro_pairs);
    lua_setfield(L, -2, "__pairs");
    lua_pushcfunction(L, ro_len);
    lua_setfield(L, -2, "__len");
    lua_pushstring(L, "locked");
    lua_setfield(L, -2, "__metatable");
    lua_setmetatable(L, -2);
    lua_replace(L, real);
}

void proxy_readonly(lua_State *L, const char *what)
{
    make_proxy(L, what, -1);
}

void proxy_readonly_deep(lua_State *L, const char *what)
{
    make_proxy(L, what, 0);
}

bool proxy_is_readonly(lua_State *L, int idx)
{
    if (!lua_getmetatable(L, idx))
        return false;
    lua_pushliteral(L, "__newindex");
    lua_rawget(L, -2);
    bool locked = lua_tocfunction(L, -1) == ro_newindex;
    lua_pop(L, 2);
    return locked;
}
