/*
 * proxy.c - read-only views of tables (see proxy.h).
 */
#include <lauxlib.h>

#include "plugin/proxy.h"

#define REG_LOCKED "governor.locked" /* weak set of read-only proxies */

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

void proxy_init(lua_State *L)
{
    lua_newtable(L);
    lua_createtable(L, 0, 1);
    lua_pushliteral(L, "k");
    lua_setfield(L, -2, "__mode");
    lua_setmetatable(L, -2);
    lua_setfield(L, LUA_REGISTRYINDEX, REG_LOCKED);
}

void proxy_readonly(lua_State *L, const char *what)
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
    idx = lua_absindex(L, idx);
    lua_getfield(L, LUA_REGISTRYINDEX, REG_LOCKED);
    lua_pushvalue(L, idx);
    bool locked = lua_rawget(L, -2) != LUA_TNIL;
    lua_pop(L, 2);
    return locked;
}
