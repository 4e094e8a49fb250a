/*
 * proxy.h - read-only views of tables (prefix proxy_), private to server/plugin/. A proxy is
 * an empty table whose metatable reads through to the real one (__index, __pairs, __len),
 * refuses writes naming what it is ("attempt to modify read-only table 'ctx.params'") and is
 * locked (__metatable). A proxy is known by its metatable's __newindex (proxy_is_readonly),
 * so that the sandbox's rawset can refuse them too; making one costs two tables. The shared
 * library tables and every ctx part a plugin is handed are proxies.
 *
 * May call: Lua.
 */
#ifndef GOVERNOR_PLUGIN_PROXY_H
#define GOVERNOR_PLUGIN_PROXY_H

#include <lua.h>
#include <stdbool.h>

/* Once per state, before any proxy is made (nothing to set up today). */
void proxy_init(lua_State *L);

/* Replaces the table at the top of the stack with a read-only proxy of it named what. */
void proxy_readonly(lua_State *L, const char *what);

/* The same, and every table nested in it (8 levels deep) becomes a proxy too (the nested
 * tables are replaced by proxies in the table itself). */
void proxy_readonly_deep(lua_State *L, const char *what);

/* Whether the value at idx is a proxy made here. */
bool proxy_is_readonly(lua_State *L, int idx);

#endif
