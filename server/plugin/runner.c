/*
 * runner.c - `governor test [DIR]` (plugin_test_main, see plugin.h): policy tests run in the
 * real sandbox of a revision loaded from DIR; and plugin_call_json, a hook called with its
 * arguments and ctx given as JSON. The values a test gives reach the plugin as the server
 * would hand them (marshal.c builds both): numbers by the same rule, ctx.params and
 * ctx.config as text, the same read-only parts, ctx.backlog for evaluators only.
 *
 * Two kinds of files, both next to the plugins:
 *
 *  - `*.test`, table-driven in the spirit of jq's .test files. Blocks are separated by
 *    blank lines; `#` lines are comments. A block is four lines:
 *        PLUGIN HOOK                       e.g. `freeze execute`
 *        ARGS                              JSON array: the hook's arguments before ctx
 *        CTX                               JSON object: {"params": {}, "config": {}, "now": 0}
 *        EXPECTED                          JSON array: what the hook returns
 *    A block that starts with a line `%%FAIL` expects the call to fail; its last line is a
 *    substring the error must contain (e.g. `instruction budget exceeded`).
 *
 *  - `*_test.lua`, run in a sandbox environment of their own plus a `test` table:
 *    test.case(name, fn), test.eq(actual, expected [, msg]) (deep, numbers within 1e-9
 *    relative), test.near(a, b, tol), test.ok(v [, msg]), test.fails(fn, substring),
 *    test.plugin(name) (the table a plugin returned), test.ctx{params=, config=, now=, job=}.
 *    Each case runs as one host call with its own budget.
 *
 * May call: load (the revision's insides), vm, sandbox, marshal, proxy, luajson, jansson,
 * Lua.
 */
#include <dirent.h>
#include <jansson.h>
#include <lauxlib.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugin/marshal.h"
#include "plugin/proxy.h"
#include "plugin/sandbox.h"
#include "plugin/load.h"
#include "plugin/luajson.h"
#include "plugin/vm.h"
#include "base/xmem.h"

struct json_job {
    int idx;
    const char *args, *ctx;
    char *out;
};

/* A ctx part of the JSON ctx at 1 as the server passes it: params and config as text,
 * job read-only all the way down; a part that is no object is an empty one. */
static void push_json_part(lua_State *L, const char *part)
{
    char what[32];
    snprintf(what, sizeof what, "ctx.%s", part);
    if (lua_getfield(L, 1, part) != LUA_TTABLE) {
        lua_pop(L, 1);
        lua_newtable(L);
    }
    if (strcmp(part, "job") == 0) {
        proxy_readonly_deep(L, what);
    } else {
        marshal_push_text_table(L, -1, what);
        lua_remove(L, -2);
    }
}

static int json_tramp(lua_State *L)
{
    struct json_job *j = lua_touserdata(L, 1);
    struct plugin_set *s = plugin__set(L);
    struct plugin_one *p = &s->p[j->idx];
    lua_settop(L, 0);
    luajson_push(L, j->ctx ? j->ctx : "{}", "ctx");
    if (!lua_istable(L, 1))
        luaL_error(L, "ctx: a JSON object is needed");
    push_json_part(L, "params");
    push_json_part(L, "config");
    push_json_part(L, "job");
    struct marshal_ctx ctx = {.params = 2, .config = 3, .job = 4, .backlog = -1};
    lua_getfield(L, 1, "now");
    ctx.now = (int64_t)lua_tonumber(L, -1);
    lua_pop(L, 1);
    if (p->kind == PLUGIN_EVALUATOR) { /* as the server: evaluators only, a boolean */
        lua_getfield(L, 1, "backlog");
        ctx.backlog = lua_toboolean(L, -1);
        lua_pop(L, 1);
    }
    luajson_push(L, j->args ? j->args : "[]", "args");
    int args = lua_gettop(L);
    int base = args;
    lua_rawgeti(L, LUA_REGISTRYINDEX, p->ref_fn);
    int n = (int)lua_rawlen(L, args);
    luaL_checkstack(L, n + 4, "args");
    for (int i = 1; i <= n; i++)
        lua_rawgeti(L, args, i);
    marshal_push_ctx(L, &ctx);
    lua_call(L, n + 1, LUA_MULTRET);
    int nres = lua_gettop(L) - base;
    json_t *a = json_array();
    for (int i = 1; i <= nres; i++)
        json_array_append_new(a, luajson_from_lua(L, base + i));
    j->out = json_dumps(a, JSON_COMPACT | JSON_SORT_KEYS | JSON_REAL_PRECISION(17));
    json_decref(a);
    return 0;
}

int plugin_call_json(struct plugin_set *s, const char *name, const char *args_json,
                     const char *ctx_json, char **outp, char **errp)
{
    *outp = NULL;
    int idx = plugin_set_find(s, name);
    if (idx < 0) {
        *errp = xasprintf("no plugin named \"%s\" in policy revision %s", name, s->revision);
        return -1;
    }
    struct json_job j = {.idx = idx, .args = args_json, .ctx = ctx_json};
    char err[1024];
    pthread_mutex_lock(&s->mu);
    int rc = vm_run(&s->vm, &s->p[idx].owner, name, json_tramp, &j, NULL, err, sizeof err);
    pthread_mutex_unlock(&s->mu);
    if (rc < 0) {
        free(j.out);
        *errp = xstrdup(err);
        return -1;
    }
    *outp = j.out;
    return 0;
}

struct tally {
    int passed, failed;
};

/* Runs fn protected under the per-call limits, charged to no plugin. */
static int run(struct plugin_set *s, int (*fn)(lua_State *L), void *ud, char *err, size_t err_len)
{
    return vm_run(&s->vm, NULL, "governor", fn, ud, NULL, err, err_len);
}

/* ------------------------------------------------------------- .test files -- */

static bool json_close(json_t *a, json_t *b)
{
    if (json_is_number(a) && json_is_number(b)) {
        double x = json_number_value(a), y = json_number_value(b);
        return fabs(x - y) <= 1e-9 * fmax(1.0, fmax(fabs(x), fabs(y)));
    }
    /* an empty Lua table has no shape: [] and {} are the same */
    if ((json_is_array(a) || json_is_object(a)) && (json_is_array(b) || json_is_object(b)) &&
        json_typeof(a) != json_typeof(b))
        return json_array_size(a) + json_object_size(a) == 0 &&
               json_array_size(b) + json_object_size(b) == 0;
    if (json_is_array(a) && json_is_array(b)) {
        if (json_array_size(a) != json_array_size(b))
            return false;
        for (size_t i = 0; i < json_array_size(a); i++)
            if (!json_close(json_array_get(a, i), json_array_get(b, i)))
                return false;
        return true;
    }
    if (json_is_object(a) && json_is_object(b)) {
        if (json_object_size(a) != json_object_size(b))
            return false;
        const char *k;
        json_t *v;
        json_object_foreach(a, k, v)
        {
            json_t *w = json_object_get(b, k);
            if (!w || !json_close(v, w))
                return false;
        }
        return true;
    }
    return json_equal(a, b);
}

/* One block of a .test file: lines[0..n). */
static void run_block(struct plugin_set *s, const char *file, int line, char **lines, int n,
                      struct tally *t)
{
    bool fail = n > 0 && strcmp(lines[0], "%%FAIL") == 0;
    int o = fail ? 1 : 0;
    char plugin[128] = "", hook[64] = "";
    char *out = NULL, *err = NULL;
    json_t *ctx = NULL, *exp = NULL, *act = NULL;
    char why[1024] = "";
    if (n - o != 4 || sscanf(lines[o], "%127s %63s", plugin, hook) != 2) {
        snprintf(why, sizeof why, "a block is PLUGIN HOOK, ARGS, CTX, EXPECTED (got %d lines)",
                 n - o);
        goto done;
    }
    json_error_t je;
    ctx = json_loads(lines[o + 2], 0, &je);
    if (!json_is_object(ctx)) {
        snprintf(why, sizeof why, "CTX is not a JSON object: %s", je.text);
        goto done;
    }
    int idx = plugin_set_find(s, plugin);
    if (idx >= 0) {
        struct plugin_info in;
        plugin_set_info(s, idx, &in);
        if (strcmp(plugin__hook_name(in.kind), hook) != 0) {
            snprintf(why, sizeof why, "%s is an %s plugin: its hook is %s, not %s", plugin,
                     plugin_kind_name(in.kind), plugin__hook_name(in.kind), hook);
            goto done;
        }
    }
    int rc = plugin_call_json(s, plugin, lines[o + 1], lines[o + 2], &out, &err);
    if (fail) {
        if (rc == 0)
            snprintf(why, sizeof why, "expected an error containing \"%s\", got %s", lines[o + 3],
                     out);
        else if (!strstr(err, lines[o + 3]))
            snprintf(why, sizeof why, "expected an error containing \"%s\", got \"%s\"",
                     lines[o + 3], err);
        goto done;
    }
    if (rc < 0) {
        snprintf(why, sizeof why, "error: %s", err);
        goto done;
    }
    exp = json_loads(lines[o + 3], 0, &je);
    act = json_loads(out, 0, &je);
    if (!exp) {
        snprintf(why, sizeof why, "EXPECTED is not JSON: %s", je.text);
        goto done;
    }
    if (!act || !json_close(exp, act))
        snprintf(why, sizeof why, "expected %s, got %s", lines[o + 3], out);
done:
    if (why[0]) {
        printf("FAIL %s:%d: %s %s: %s\n", file, line, plugin, hook, why);
        t->failed++;
    } else {
        t->passed++;
    }
    json_decref(ctx);
    json_decref(exp);
    json_decref(act);
    free(out);
    free(err);
}

static void run_test_file(struct plugin_set *s, const char *dir, const char *name, struct tally *t)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "r");
    if (!f) {
        printf("FAIL %s: cannot open\n", name);
        t->failed++;
        return;
    }
    char *lines[16];
    int n = 0, start = 0, lineno = 0;
    char *buf = NULL;
    size_t cap = 0;
    ssize_t len;
    for (;;) {
        len = getline(&buf, &cap, f);
        if (len >= 0)
            lineno++;
        while (len > 0 && (buf[len - 1] == '\n' || buf[len - 1] == '\r'))
            buf[--len] = '\0';
        if (len > 0 && buf[0] == '#')
            continue;
        if (len <= 0) {
            if (n > 0)
                run_block(s, name, start, lines, n, t);
            for (int i = 0; i < n; i++)
                free(lines[i]);
            n = 0;
            if (len < 0)
                break;
            continue;
        }
        if (n == 0)
            start = lineno;
        if (n < 16)
            lines[n++] = xstrdup(buf);
    }
    free(buf);
    fclose(f);
}

/* -------------------------------------------------------- *_test.lua files -- */

/* Deep equality with a relative tolerance on numbers (1e-9). */
static int deep_eq(lua_State *L, int a, int b, int depth)
{
    a = lua_absindex(L, a);
    b = lua_absindex(L, b);
    if (lua_type(L, a) == LUA_TNUMBER && lua_type(L, b) == LUA_TNUMBER) {
        double x = lua_tonumber(L, a), y = lua_tonumber(L, b);
        return x == y || fabs(x - y) <= 1e-9 * fmax(1.0, fmax(fabs(x), fabs(y)));
    }
    if (!lua_istable(L, a) || !lua_istable(L, b) || depth > 32)
        return lua_rawequal(L, a, b);
    for (int pass = 0; pass < 2; pass++) {
        int x = pass ? b : a, y = pass ? a : b;
        lua_pushnil(L);
        while (lua_next(L, x)) {
            lua_pushvalue(L, -2);
            lua_gettable(L, y);
            bool ok = pass ? !lua_isnil(L, -1) : deep_eq(L, -2, -1, depth + 1);
            lua_pop(L, 2);
            if (!ok) {
                lua_pop(L, 1);
                return 0;
            }
        }
    }
    return 1;
}

static const char *show(lua_State *L, int i)
{
    char *j = luajson_text(L, i);
    const char *r = lua_pushstring(L, j ? j : "?");
    free(j);
    return r;
}

static int t_eq(lua_State *L)
{
    lua_settop(L, 3);
    if (!deep_eq(L, 1, 2, 0)) {
        const char *a = show(L, 1), *b = show(L, 2);
        return luaL_error(L, "%s%sexpected %s, got %s",
                          lua_isstring(L, 3) ? lua_tostring(L, 3) : "",
                          lua_isstring(L, 3) ? ": " : "", b, a);
    }
    return 0;
}

static int t_near(lua_State *L)
{
    double a = luaL_checknumber(L, 1), b = luaL_checknumber(L, 2);
    double tol = luaL_optnumber(L, 3, 1e-9);
    if (!(fabs(a - b) <= tol))
        return luaL_error(L, "expected %f within %g, got %f", b, tol, a);
    return 0;
}

static int t_ok(lua_State *L)
{
    if (!lua_toboolean(L, 1))
        return luaL_error(L, "%s", luaL_optstring(L, 2, "expected a true value"));
    return 0;
}

static int t_fails(lua_State *L)
{
    luaL_checktype(L, 1, LUA_TFUNCTION);
    const char *sub = luaL_optstring(L, 2, "");
    lua_pushvalue(L, 1);
    int st = lua_pcall(L, 0, 0, 0);
    if (st != LUA_OK && vm_of(L)->killed)
        return lua_error(L);
    if (st == LUA_OK)
        return luaL_error(L, "expected an error containing \"%s\", got none", sub);
    const char *m = lua_tostring(L, -1);
    if (!m || !strstr(m, sub))
        return luaL_error(L, "expected an error containing \"%s\", got \"%s\"", sub,
                          m ? m : "(not a string)");
    return 0;
}

static int t_case(lua_State *L)
{
    luaL_checkstring(L, 1);
    luaL_checktype(L, 2, LUA_TFUNCTION);
    lua_getfield(L, LUA_REGISTRYINDEX, "governor.cases");
    lua_createtable(L, 0, 2);
    lua_pushvalue(L, 1);
    lua_setfield(L, -2, "name");
    lua_pushvalue(L, 2);
    lua_setfield(L, -2, "fn");
    lua_rawseti(L, -2, (lua_Integer)lua_rawlen(L, -2) + 1);
    return 0;
}

static int t_plugin(lua_State *L)
{
    struct plugin_set *s = plugin__set(L);
    const char *name = luaL_checkstring(L, 1);
    int i = plugin_set_find(s, name);
    if (i < 0)
        return luaL_error(L, "no plugin named \"%s\"", name);
    lua_rawgeti(L, LUA_REGISTRYINDEX, s->p[i].ref_tbl);
    return 1;
}

/* A deep copy of the table at the top (8 levels; deeper tables are shared), replacing it. */
static void deep_copy(lua_State *L, int depth)
{
    int src = lua_gettop(L);
    lua_newtable(L);
    lua_pushnil(L);
    while (lua_next(L, src)) {
        if (lua_istable(L, -1) && depth < 8)
            deep_copy(L, depth + 1);
        lua_pushvalue(L, -2);
        lua_insert(L, -2);
        lua_rawset(L, -4);
    }
    lua_replace(L, src);
}

/* test.ctx{params =, config =, job =, now =, backlog =}: the ctx the server would build of
 * these: params and config as text, job read-only all the way down (a copy: the table given
 * is not changed), backlog a boolean when given. */
static int t_ctx(lua_State *L)
{
    if (lua_isnoneornil(L, 1))
        lua_newtable(L);
    luaL_checktype(L, 1, LUA_TTABLE);
    lua_settop(L, 1);
    static const char *const parts[] = {"params", "config", "job"};
    for (int i = 0; i < 3; i++) {
        if (lua_getfield(L, 1, parts[i]) != LUA_TTABLE) {
            lua_pop(L, 1);
            lua_newtable(L);
        }
        char what[32];
        snprintf(what, sizeof what, "ctx.%s", parts[i]);
        if (i < 2) {
            marshal_push_text_table(L, -1, what);
            lua_remove(L, -2);
        } else {
            deep_copy(L, 0);
            proxy_readonly_deep(L, what);
        }
    }
    struct marshal_ctx ctx = {.params = 2, .config = 3, .job = 4, .backlog = -1};
    lua_getfield(L, 1, "now");
    ctx.now = (int64_t)lua_tonumber(L, -1);
    if (lua_getfield(L, 1, "backlog") != LUA_TNIL)
        ctx.backlog = lua_toboolean(L, -1);
    lua_pop(L, 2);
    marshal_push_ctx(L, &ctx);
    return 1;
}

struct lua_file_job {
    const struct sandbox_file *f;
};

static int lua_file_tramp(lua_State *L)
{
    struct lua_file_job *j = lua_touserdata(L, 1);
    lua_newtable(L);
    lua_setfield(L, LUA_REGISTRYINDEX, "governor.cases");
    struct plugin_set *s = plugin__set(L);
    char owner[256];
    snprintf(owner, sizeof owner, "%.*s", (int)(strlen(j->f->path) - 9), j->f->path);
    int idx = plugin_set_find(s, owner); /* logs as the plugin it tests, if there is one */
    sandbox_load_chunk(L, j->f, owner, idx >= 0 ? &s->p[idx].owner : NULL);
    /* add `test` to the chunk's environment */
    lua_getupvalue(L, -1, 1);
    static const luaL_Reg fns[] = {{"case", t_case}, {"eq", t_eq},       {"near", t_near},
                                   {"ok", t_ok},     {"fails", t_fails}, {"plugin", t_plugin},
                                   {"ctx", t_ctx},   {NULL, NULL}};
    luaL_newlib(L, fns);
    proxy_readonly(L, "test");
    lua_setfield(L, -2, "test");
    lua_pop(L, 1);
    lua_call(L, 0, 0);
    return 0;
}

struct case_job {
    int i;
};

static int case_tramp(lua_State *L)
{
    struct case_job *j = lua_touserdata(L, 1);
    lua_getfield(L, LUA_REGISTRYINDEX, "governor.cases");
    lua_rawgeti(L, -1, j->i);
    lua_getfield(L, -1, "fn");
    lua_call(L, 0, 0);
    return 0;
}

static int case_count_tramp(lua_State *L)
{
    int *n = lua_touserdata(L, 1);
    lua_getfield(L, LUA_REGISTRYINDEX, "governor.cases");
    *n = (int)lua_rawlen(L, -1);
    return 0;
}

struct name_job {
    int i;
    char name[256];
};

static int case_name_tramp(lua_State *L)
{
    struct name_job *j = lua_touserdata(L, 1);
    lua_getfield(L, LUA_REGISTRYINDEX, "governor.cases");
    lua_rawgeti(L, -1, j->i);
    lua_getfield(L, -1, "name");
    snprintf(j->name, sizeof j->name, "%s", lua_tostring(L, -1));
    return 0;
}

static void run_lua_file(struct plugin_set *s, const struct sandbox_file *f, struct tally *t)
{
    char err[1024];
    struct lua_file_job j = {f};
    pthread_mutex_lock(&s->mu);
    if (run(s, lua_file_tramp, &j, err, sizeof err) < 0) {
        printf("FAIL %s: %s\n", f->path, err);
        t->failed++;
        pthread_mutex_unlock(&s->mu);
        return;
    }
    int n = 0;
    run(s, case_count_tramp, &n, err, sizeof err);
    for (int i = 1; i <= n; i++) {
        struct name_job nj = {.i = i};
        run(s, case_name_tramp, &nj, err, sizeof err);
        struct case_job cj = {i};
        if (run(s, case_tramp, &cj, err, sizeof err) < 0) {
            printf("FAIL %s: %s: %s\n", f->path, nj.name, err);
            t->failed++;
        } else {
            t->passed++;
        }
    }
    pthread_mutex_unlock(&s->mu);
}

/* ------------------------------------------------------------------- main -- */

static int name_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The wall-clock deadline of a call under test: the server's instruction budget and memory
 * cap stop runaway plugins alike everywhere, but a test machine running other tests (or a
 * sanitized build) is slower than a server, and a test must not fail on the clock alone. */
#define TEST_TIMEOUT_MS 1000

int plugin_test_main(int argc, char **argv)
{
    const char *dir = "policies";
    struct plugin_limits lim = {.timeout_ms = TEST_TIMEOUT_MS};
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            printf("usage: governor test [--timeout MS] [DIR]\n"
                   "  Runs DIR's *_test.lua and *.test policy tests (default ./policies)\n"
                   "  in the plugins' sandbox, with the server's default instruction budget\n"
                   "  and memory cap and a %d ms deadline per call (--timeout changes it);\n"
                   "  ends with \"N passed, N failed\".\n",
                   TEST_TIMEOUT_MS);
            return 0;
        }
        if (strcmp(argv[i], "--timeout") == 0 && i + 1 < argc) {
            char *end;
            long v = strtol(argv[++i], &end, 10);
            if (*end || v <= 0) {
                fprintf(stderr, "governor test: --timeout wants milliseconds, got \"%s\"\n",
                        argv[i]);
                return 2;
            }
            lim.timeout_ms = v;
            continue;
        }
        if (argv[i][0] == '-') {
            fprintf(stderr, "usage: governor test [--timeout MS] [DIR]\n");
            return 2;
        }
        dir = argv[i];
    }
    struct tally t = {0, 0};
    struct plugin_set *s = NULL;
    char *err = NULL;
    if (plugin_set_load(dir, &lim, &s, &err) < 0) {
        printf("FAIL %s: %s\n", dir, err);
        free(err);
        printf("0 passed, 1 failed\n");
        return 1;
    }
    for (int i = 0; i < s->n_files; i++) {
        const char *p = s->files[i].path;
        size_t n = strlen(p);
        if (!strchr(p, '/') && n > 9 && strcmp(p + n - 9, "_test.lua") == 0)
            run_lua_file(s, &s->files[i], &t);
    }
    DIR *d = opendir(dir);
    char **names = NULL;
    int nn = 0;
    struct dirent *e;
    while (d && (e = readdir(d))) {
        size_t n = strlen(e->d_name);
        if (n > 5 && strcmp(e->d_name + n - 5, ".test") == 0 && e->d_name[0] != '.') {
            names = xrealloc(names, (size_t)(nn + 1) * sizeof *names);
            names[nn++] = xstrdup(e->d_name);
        }
    }
    if (d)
        closedir(d);
    if (nn)
        qsort(names, (size_t)nn, sizeof *names, name_cmp);
    for (int i = 0; i < nn; i++) {
        run_test_file(s, dir, names[i], &t);
        free(names[i]);
    }
    free(names);
    plugin_set_unref(s);
    printf("%d passed, %d failed\n", t.passed, t.failed);
    return t.failed ? 1 : 0;
}
