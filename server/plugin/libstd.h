/*
 * libstd.h - the standard library functions the sandbox replaces or wraps (prefix libstd_),
 * private to server/plugin/; sandbox.c's allow list says where each goes. Their work depends
 * on their arguments in ways a charge made up front cannot bound (a length read through
 * __len, elements moved through __index/__newindex, comparisons, a run of continuation
 * bytes), or they must not let a plugin escape the host's limits (pcall, xpcall), so they
 * charge as they go.
 *
 * "Over the original": a closure whose upvalue 1 is Lua's own function, which the wrapper
 * calls once it has fixed and charged the arguments.
 *
 * May call: vm (charging), proxy (rawset refuses proxies), Lua.
 */
#ifndef GOVERNOR_PLUGIN_LIBSTD_H
#define GOVERNOR_PLUGIN_LIBSTD_H

#include <lua.h>

/* table.unpack(t [, i [, j]]), over the original: the range fixed (#t read once) and
 * charged per element. */
int libstd_unpack(lua_State *L);
/* table.concat(t [, sep [, i [, j]]]), over the original: the same, then the result's
 * bytes. */
int libstd_concat(lua_State *L);
/* table.insert, table.remove, table.sort: Lua 5.4's ltablib.c with the length read once
 * and every element moved or compared charged. */
int libstd_insert(lua_State *L);
int libstd_remove(lua_State *L);
int libstd_sort(lua_State *L);
/* utf8.codes(s [, lax]): its iterator charges the continuation bytes it skips. */
int libstd_codes(lua_State *L);
/* string.rep(s, n [, sep]), over the original: refused up front when the result would not
 * fit in the memory cap, else charged per repetition and byte before it runs. */
int libstd_rep(lua_State *L);
/* pcall and xpcall that cannot catch a limit (a stopped call is re-raised); xpcall runs its
 * handler after the failed call, under the limits (Lua runs it with the hooks off). */
int libstd_pcall(lua_State *L);
int libstd_xpcall(lua_State *L);
/* error(msg [, level]), a level given as a string charged for its conversion. */
int libstd_error(lua_State *L);
/* rawset that refuses read-only proxies; setmetatable that refuses __gc; collectgarbage
 * with "count" only. */
int libstd_rawset(lua_State *L);
int libstd_setmetatable(lua_State *L);
int libstd_collectgarbage(lua_State *L);

#endif
