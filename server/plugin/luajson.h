/*
 * luajson.h - JSON text and Lua values, both ways (prefix luajson_), private to
 * server/plugin/, for `governor test` (runner.c): a .test file gives a hook's arguments and
 * ctx as JSON and expects its results as JSON; a *_test.lua failure shows values as JSON.
 * Numbers become Lua values by the host's rule (marshal_push_number: 2.0 is the integer 2,
 * as a decision would hand it).
 *
 * May call: marshal (the number rule), jansson, Lua.
 */
#ifndef GOVERNOR_PLUGIN_LUAJSON_H
#define GOVERNOR_PLUGIN_LUAJSON_H

#include <jansson.h>
#include <lua.h>

/* Pushes the JSON text (any value) as a Lua value: objects and arrays as tables, null as
 * nil; nested deeper than 64 or bad JSON raises, naming what. Runs inside a protected call. */
void luajson_push(lua_State *L, const char *text, const char *what);

/* The Lua value at idx as JSON (new): nil as null, a table with keys 1..n an array, other
 * tables objects (keys as text), integers as integers, NaN and infinities as null, anything
 * JSON cannot hold as a string such as "<function>"; nested deeper than 32: a string. */
json_t *luajson_from_lua(lua_State *L, int idx);

/* The same as compact JSON text with sorted keys and 15 significant digits (new; NULL only
 * when out of memory). */
char *luajson_text(lua_State *L, int idx);

#endif
