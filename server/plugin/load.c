/*
 * load.c - revisions (see plugin.h): reading a policies directory, the revision id, loading
 * and checking every plugin in a fresh sandboxed state, reference counting, and what the
 * server shows of a revision.
 *
 * Every use of the Lua API that may allocate happens inside a protected call (vm_run), so
 * running out of the memory cap is an error of that call, never a panic.
 */
#include <dirent.h>
#include <errno.h>
#include <lauxlib.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "plugin/sandbox.h"
#include "plugin/load.h"
#include "plugin/vm.h"
#include "base/xmem.h"

#define LOAD_DEADLINES 10 /* a load's deadline, in decision deadlines */
#define MAX_FILE_BYTES (1024 * 1024)

static const char *const kind_names[] = {"exclusion", "evaluator", "executor", "alignment"};
static const char *const hook_names[] = {"excluded", "evaluate", "execute", "align"};

const char *plugin_kind_name(enum plugin_kind k)
{
    return (unsigned)k < 4 ? kind_names[k] : "?";
}

const char *plugin__hook_name(enum plugin_kind k)
{
    return (unsigned)k < 4 ? hook_names[k] : "?";
}

struct plugin_set *plugin__set(lua_State *L)
{
    return (struct plugin_set *)((char *)vm_of(L) - offsetof(struct plugin_set, vm));
}

/* FNV-1a 64 as 16 hex digits. */
static void fnv_hex(const void *data, size_t len, char out[17])
{
    uint64_t h = 1469598103934665603ull;
    const unsigned char *p = data;
    for (size_t i = 0; i < len; i++) {
        h ^= p[i];
        h *= 1099511628211ull;
    }
    snprintf(out, 17, "%016llx", (unsigned long long)h);
}

static int64_t wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static bool valid_name(const char *s, size_t n, bool dash)
{
    if (n == 0 || n > 64)
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || (dash && c == '-')))
            return false;
    }
    return true;
}

static bool ends_with(const char *s, const char *suf)
{
    size_t a = strlen(s), b = strlen(suf);
    return a >= b && strcmp(s + a - b, suf) == 0;
}

static int file_cmp(const void *a, const void *b)
{
    return strcmp(((const struct sandbox_file *)a)->path, ((const struct sandbox_file *)b)->path);
}

/* Reads every *.lua regular file of dir/sub into s->files. -1 + *errp. */
static int read_dir(struct plugin_set *s, const char *sub, bool required, char **errp)
{
    char path[4096];
    snprintf(path, sizeof path, "%s%s%s", s->dir, sub ? "/" : "", sub ? sub : "");
    DIR *d = opendir(path);
    if (!d) {
        if (!required && errno == ENOENT)
            return 0;
        *errp = xasprintf("%s: %s", path, strerror(errno));
        return -1;
    }
    int rc = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (!ends_with(e->d_name, ".lua") || e->d_name[0] == '.')
            continue;
        char full[8192];
        snprintf(full, sizeof full, "%s/%s", path, e->d_name);
        struct stat sb;
        if (stat(full, &sb) < 0 || !S_ISREG(sb.st_mode))
            continue;
        char rel[512];
        snprintf(rel, sizeof rel, "%s%s%s", sub ? sub : "", sub ? "/" : "", e->d_name);
        if (sb.st_size > MAX_FILE_BYTES) {
            *errp = xasprintf("%s: file larger than %d bytes", rel, MAX_FILE_BYTES);
            rc = -1;
            break;
        }
        FILE *f = fopen(full, "rb");
        if (!f) {
            *errp = xasprintf("%s: %s", rel, strerror(errno));
            rc = -1;
            break;
        }
        char *buf = xmalloc((size_t)sb.st_size + 1);
        size_t n = fread(buf, 1, (size_t)sb.st_size, f);
        fclose(f);
        buf[n] = '\0';
        s->files = xrealloc(s->files, (size_t)(s->n_files + 1) * sizeof *s->files);
        struct sandbox_file *pf = &s->files[s->n_files++];
        pf->path = xstrdup(rel);
        pf->text = buf;
        pf->len = n;
        fnv_hex(buf, n, pf->hash);
    }
    closedir(d);
    return rc;
}

static void compute_revision(struct plugin_set *s)
{
    uint64_t h = 1469598103934665603ull;
    for (int i = 0; i < s->n_files; i++) {
        const struct sandbox_file *f = &s->files[i];
        const unsigned char *parts[2] = {(const unsigned char *)f->path,
                                         (const unsigned char *)f->text};
        size_t lens[2] = {strlen(f->path) + 1, f->len};
        for (int k = 0; k < 2; k++)
            for (size_t j = 0; j < lens[k]; j++) {
                h ^= parts[k][j];
                h *= 1099511628211ull;
            }
        /* separator between files, so (a, bc) and (ab, c) differ */
        h ^= 0xff;
        h *= 1099511628211ull;
    }
    snprintf(s->revision, sizeof s->revision, "%08llx", (unsigned long long)(h >> 32));
}

static int open_tramp(lua_State *L)
{
    struct plugin_set *s = plugin__set(L);
    sandbox_open(L, s->files, s->n_files);
    return 0;
}

/* Loads and checks one plugin (the light userdata at 1; its file is p->file): run in a
 * protected call. */
static int load_one(lua_State *L)
{
    struct plugin_one *p = lua_touserdata(L, 1);
    const char *file = p->file->path;
    sandbox_load_chunk(L, p->file, p->name, &p->owner);
    lua_call(L, 0, 1);
    if (!lua_istable(L, -1))
        return luaL_error(L, "%s: must return a table (got %s)", file, luaL_typename(L, -1));
    int t = lua_gettop(L);
    lua_getfield(L, t, "kind");
    const char *kind = lua_tostring(L, -1);
    int k = -1;
    for (int i = 0; kind && i < 4; i++)
        if (strcmp(kind, kind_names[i]) == 0)
            k = i;
    if (k < 0)
        return luaL_error(L,
                          "%s: kind must be one of exclusion, evaluator, executor, alignment "
                          "(got %s)",
                          file, kind ? kind : luaL_typename(L, -1));
    p->kind = (enum plugin_kind)k;
    lua_getfield(L, t, hook_names[k]);
    if (!lua_isfunction(L, -1))
        return luaL_error(L, "%s: a plugin of kind %s must have a function '%s' (got %s)", file,
                          kind, hook_names[k], luaL_typename(L, -1));
    lua_getfield(L, t, "priority");
    if (!lua_isnil(L, -1)) {
        if (lua_type(L, -1) != LUA_TNUMBER || !isfinite(lua_tonumber(L, -1)))
            return luaL_error(L, "%s: priority must be a finite number (got %s)", file,
                              luaL_typename(L, -1));
        p->priority = lua_tonumber(L, -1);
    }
    lua_pop(L, 1);
    p->ref_fn = luaL_ref(L, LUA_REGISTRYINDEX);
    lua_pop(L, 1);
    p->ref_tbl = luaL_ref(L, LUA_REGISTRYINDEX);
    return 0;
}

static void set_free(struct plugin_set *s)
{
    if (!s)
        return;
    vm_close(&s->vm);
    for (int i = 0; i < s->n_files; i++) {
        free(s->files[i].path);
        free(s->files[i].text);
    }
    free(s->files);
    for (int i = 0; i < s->n; i++)
        free(s->p[i].name);
    free(s->p);
    free(s->dir);
    pthread_mutex_destroy(&s->mu);
    free(s);
}

/* Adds the plugins of s's files (not lib/, not tests) to s->p, not loaded yet. */
static int list_plugins(struct plugin_set *s, char **errp)
{
    for (int i = 0; i < s->n_files; i++) {
        const char *path = s->files[i].path;
        if (strchr(path, '/') || ends_with(path, "_test.lua"))
            continue;
        size_t n = strlen(path) - 4;
        if (!valid_name(path, n, true)) {
            *errp = xasprintf("%s: a plugin's file name must be letters, digits, '_' or '-' "
                              "followed by .lua",
                              path);
            return -1;
        }
        s->p = xrealloc(s->p, (size_t)(s->n + 1) * sizeof *s->p);
        struct plugin_one *p = &s->p[s->n++];
        memset(p, 0, sizeof *p);
        p->name = xasprintf("%.*s", (int)n, path);
        p->file = &s->files[i];
        p->ref_fn = p->ref_tbl = LUA_NOREF;
        p->owner.name = p->name;
    }
    return 0;
}

int plugin_set_load(const char *dir, const struct plugin_limits *lim, struct plugin_set **out,
                    char **errp)
{
    *out = NULL;
    struct plugin_set *s = xcalloc(1, sizeof *s);
    char err[1024] = "";
    atomic_init(&s->refs, 1);
    pthread_mutex_init(&s->mu, NULL);
    s->dir = xstrdup(dir);
    s->loaded_at = wall_ms();

    if (read_dir(s, NULL, true, errp) < 0 || read_dir(s, "lib", false, errp) < 0)
        goto fail;
    if (s->n_files > 0) /* files is NULL for a directory without policies */
        qsort(s->files, (size_t)s->n_files, sizeof *s->files, file_cmp);
    compute_revision(s);

    if (vm_open(&s->vm, lim, errp) < 0)
        goto fail;
    s->vm.revision = s->revision;
    if (vm_run(&s->vm, NULL, "sandbox", open_tramp, NULL, NULL, err, sizeof err) < 0) {
        *errp = xasprintf("sandbox: %s", err);
        goto fail;
    }
    if (list_plugins(s, errp) < 0)
        goto fail;
    /* The top levels of all the files together get the instructions of one decision's
     * calls, and ten times its deadline: a load must not fail because the machine is slow
     * for a moment (at start the server would not start), and a reload blocks decisions
     * no longer than that, however many files loop. */
    struct vm_batch load_batch;
    vm_batch_init(&load_batch, "load", &s->vm.lim, LOAD_DEADLINES);
    for (int i = 0; i < s->n; i++) {
        const char *path = s->p[i].file->path;
        if (vm_run(&s->vm, NULL, path, load_one, &s->p[i], &load_batch, err, sizeof err) != 0) {
            /* a kill message names the plugin; a Lua error names file:line already */
            if (strncmp(err, path, strlen(path)) == 0)
                *errp = xstrdup(err);
            else
                *errp = xasprintf("%s: %s", path, err);
            goto fail;
        }
    }
    *out = s;
    return 0;
fail:
    set_free(s);
    return -1;
}

struct plugin_set *plugin_set_ref(struct plugin_set *s)
{
    atomic_fetch_add(&s->refs, 1);
    return s;
}

void plugin_set_unref(struct plugin_set *s)
{
    if (s && atomic_fetch_sub(&s->refs, 1) == 1)
        set_free(s);
}

const char *plugin_set_revision(const struct plugin_set *s)
{
    return s->revision;
}

int64_t plugin_set_loaded_at(const struct plugin_set *s)
{
    return s->loaded_at;
}

int plugin_set_count(const struct plugin_set *s)
{
    return s->n;
}

void plugin_set_info(struct plugin_set *s, int i, struct plugin_info *info)
{
    const struct plugin_one *p = &s->p[i];
    pthread_mutex_lock(&s->mu);
    info->name = p->name;
    info->file = p->file->path;
    info->hash = p->file->hash;
    info->kind = p->kind;
    info->priority = p->priority;
    info->loaded_at = s->loaded_at;
    info->calls = p->owner.calls;
    info->errors = p->owner.errors;
    info->time_us = p->owner.time_us;
    pthread_mutex_unlock(&s->mu);
}

int plugin_set_find(const struct plugin_set *s, const char *name)
{
    for (int i = 0; i < s->n; i++)
        if (strcmp(s->p[i].name, name) == 0)
            return i;
    return -1;
}

void plugin_set_each_file(const struct plugin_set *s,
                          void (*fn)(void *ud, const char *path, const char *hash), void *ud)
{
    for (int i = 0; i < s->n_files; i++)
        fn(ud, s->files[i].path, s->files[i].hash);
}

void plugin_set_log_sink(struct plugin_set *s,
                         void (*fn)(void *ud, const char *plugin, const char *msg), void *ud)
{
    s->vm.log_fn = fn;
    s->vm.log_ud = ud;
}
