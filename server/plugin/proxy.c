/*
 * proxy.c - read-only views of tables (see proxy.h).
 */
#include <lauxlib.h>

#include "plugin/proxy.h"

/*
 * A proxy is an empty table whose metatable (hidden: __metatable) holds the real table as
 * __index, the proxy's name at [1], and the same C functions for every proxy; a proxy is
 * known by its __newindex, so making one allocates two tables and nothing else.
 */
static int ro_newindex(lua_State *L)
{
    const char *what = NULL;
    if (lua_getmetatable(L, 1) && lua_rawgeti(L, -1, 1) == LUA_TSTRING)
        what = lua_tostring(L, -1);
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

void proxy_init(lua_State *L)
{
    (void)L; /* nothing to set up: a proxy is known by its metatable */
}

void proxy_readonly(lua_State *L, const char *what)
{
    int real = lua_gettop(L);
    lua_newtable(L); /* the proxy */
    lua_createtable(L, 1, 5);
    lua_pushvalue(L, real);
    lua_setfield(L, -2, "__index");
    lua_pushstring(L, what);
    lua_rawseti(L, -2, 1);
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

static void readonly_deep(lua_State *L, const char *what, int depth)
{
    if (depth > 8)
        return;
    int t = lua_gettop(L);
    lua_pushnil(L);
    while (lua_next(L, t)) {
        if (lua_istable(L, -1)) {
            readonly_deep(L, what, depth + 1);
            lua_pushvalue(L, -2);
            lua_insert(L, -2);
            lua_rawset(L, t);
        } else {
            lua_pop(L, 1);
        }
    }
    proxy_readonly(L, what);
}

void proxy_readonly_deep(lua_State *L, const char *what)
{
    readonly_deep(L, what, 0);
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
