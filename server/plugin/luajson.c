/*
 * luajson.c - JSON text and Lua values, both ways, for `governor test` (see luajson.h).
 */
#include <lauxlib.h>
#include <math.h>
#include <stdio.h>

#include "plugin/luajson.h"
#include "plugin/marshal.h"

static void push_value(lua_State *L, json_t *v, int depth)
{
    if (depth > 64)
        luaL_error(L, "JSON nested too deep");
    luaL_checkstack(L, 4, "JSON");
    switch (json_typeof(v)) {
    case JSON_OBJECT: {
        lua_newtable(L);
        const char *k;
        json_t *x;
        json_object_foreach(v, k, x)
        {
            push_value(L, x, depth + 1);
            lua_setfield(L, -2, k);
        }
        break;
    }
    case JSON_ARRAY: {
        lua_newtable(L);
        size_t i;
        json_t *x;
        json_array_foreach(v, i, x)
        {
            push_value(L, x, depth + 1);
            lua_rawseti(L, -2, (lua_Integer)i + 1);
        }
        break;
    }
    case JSON_STRING:
        lua_pushlstring(L, json_string_value(v), json_string_length(v));
        break;
    case JSON_INTEGER:
        lua_pushinteger(L, (lua_Integer)json_integer_value(v));
        break;
    case JSON_REAL:
        marshal_push_number(L, json_real_value(v));
        break;
    case JSON_TRUE:
        lua_pushboolean(L, 1);
        break;
    case JSON_FALSE:
        lua_pushboolean(L, 0);
        break;
    default:
        lua_pushnil(L);
        break;
    }
}

void luajson_push(lua_State *L, const char *text, const char *what)
{
    json_error_t je;
    json_t *v = json_loads(text, JSON_DECODE_ANY, &je);
    if (!v)
        luaL_error(L, "%s: bad JSON: %s", what, je.text);
    push_value(L, v, 0);
    json_decref(v);
}

static json_t *to_json(lua_State *L, int idx, int depth)
{
    idx = lua_absindex(L, idx);
    switch (lua_type(L, idx)) {
    case LUA_TNIL:
        return json_null();
    case LUA_TBOOLEAN:
        return json_boolean(lua_toboolean(L, idx));
    case LUA_TNUMBER:
        if (lua_isinteger(L, idx))
            return json_integer((json_int_t)lua_tointeger(L, idx));
        return isfinite(lua_tonumber(L, idx)) ? json_real(lua_tonumber(L, idx)) : json_null();
    case LUA_TSTRING:
        return json_stringn(lua_tostring(L, idx), lua_rawlen(L, idx));
    case LUA_TTABLE: {
        if (depth > 32)
            return json_string("<nested too deep>");
        size_t n = lua_rawlen(L, idx);
        size_t count = 0;
        lua_pushnil(L);
        while (lua_next(L, idx)) {
            count++;
            lua_pop(L, 1);
        }
        if (n > 0 && count == n) {
            json_t *a = json_array();
            for (size_t i = 1; i <= n; i++) {
                lua_rawgeti(L, idx, (lua_Integer)i);
                json_array_append_new(a, to_json(L, -1, depth + 1));
                lua_pop(L, 1);
            }
            return a;
        }
        json_t *o = json_object();
        lua_pushnil(L);
        while (lua_next(L, idx)) {
            char key[64];
            const char *k;
            if (lua_type(L, -2) == LUA_TSTRING) {
                k = lua_tostring(L, -2);
            } else {
                lua_pushvalue(L, -2);
                snprintf(key, sizeof key, "%s", luaL_tolstring(L, -1, NULL));
                lua_pop(L, 2);
                k = key;
            }
            json_object_set_new(o, k, to_json(L, -1, depth + 1));
            lua_pop(L, 1);
        }
        return o;
    }
    default: {
        char buf[64];
        snprintf(buf, sizeof buf, "<%s>", luaL_typename(L, idx));
        return json_string(buf);
    }
    }
}

json_t *luajson_from_lua(lua_State *L, int idx)
{
    return to_json(L, idx, 0);
}

char *luajson_text(lua_State *L, int idx)
{
    json_t *j = to_json(L, idx, 0);
    char *s =
        json_dumps(j, JSON_COMPACT | JSON_ENCODE_ANY | JSON_SORT_KEYS | JSON_REAL_PRECISION(15));
    json_decref(j);
    return s;
}
