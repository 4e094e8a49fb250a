/*
 * hooks.c - one decision's calls of a revision's plugins (see plugin.h): the binding of a
 * revision to the core's struct core_hooks, which plugin an instance name selects, the
 * executors' order, each call run under the decision's limits with its arguments and ctx
 * built by marshal.c and its result read back there, and the record of every call.
 */
#include <lauxlib.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "time/cron.h"
#include "plugin/marshal.h"
#include "plugin/load.h"
#include "plugin/vm.h"
#include "base/xmem.h"

/* Where an instance's parameters are: `<prefix><instance>.<param>`. */
static const char *const kind_prefix[] = {
    NULL,
    "job.autoscaler.metrics.custom-evaluator.",
    "job.autoscaler.scaling.custom-executor.",
    "job.autoscaler.scaling.parallelism-alignment.mode.",
};

struct plugin_call {
    struct plugin_set *set;
    const char *job;
    const struct opt_job *opts;
    const struct core_state *st;
    const struct core_sample *sm;
    const char **exec_sorted;
    char hash[17];  /* the options' config hash: ctx.config and ctx.params are kept per hash
                       in the revision's state ("": built for this decision only) */
    int ref_config; /* LUA_NOREF until first built */
    int ref_job;
    /* every hook call of this decision, for the plugin_calls table */
    int n_rec, cap_rec;
    struct plugin_record *rec;
    /* the decision's share of the limits; the calls it skipped have one record */
    struct vm_batch batch;
    int skip_rec; /* index of that record, -1 until a call is skipped */
};

/* One hook call: what it is handed and where its result goes. */
struct hook_job {
    struct plugin_call *c;
    int idx;          /* plugin */
    const char *inst; /* configured instance name (params prefix) */
    enum plugin_kind kind;
    int64_t now;
    /* evaluator */
    const struct core_vertex_in *v;
    struct core_evaluated *ev;
    bool backlog;
    /* executor */
    struct core_decision *d;
    bool *veto;
    /* exclusion */
    bool *excluded;
    /* exclusion's why, executor's veto reason */
    char *why;
    size_t why_len;
    /* alignment */
    const struct core_align_ctx *a;
    int *out;
};

static void copy_str(char *dst, size_t n, const char *s)
{
    if (n)
        snprintf(dst, n, "%s", s ? s : "");
}

/*
 * The options' read-only views kept in the revision's state, by config hash: what
 * ctx.config and ctx.params hold is a function of the effective options (the hash covers
 * every key they list: opt_job_each, opt_job_params), so one decision builds them and the
 * next ones of the same revision and config share them. Bounded: past OPTS_CACHE_MAX hashes
 * the kept views are dropped and built again as they are used.
 */
#define REG_OPTS       "governor.opts" /* hash -> {[""] = ctx.config, [prefix] = ctx.params} */
#define OPTS_CACHE_MAX 32

/* Pushes the views kept for c's hash (a table, made when new), or nothing: false. */
static bool push_opts_views(lua_State *L, const struct plugin_call *c)
{
    if (!c->hash[0])
        return false;
    if (lua_getfield(L, LUA_REGISTRYINDEX, REG_OPTS) != LUA_TTABLE) {
        lua_pop(L, 1);
        lua_newtable(L);
        lua_pushvalue(L, -1);
        lua_setfield(L, LUA_REGISTRYINDEX, REG_OPTS);
    }
    if (lua_getfield(L, -1, c->hash) == LUA_TTABLE) {
        lua_remove(L, -2);
        return true;
    }
    lua_pop(L, 1);
    lua_Integer n = (lua_rawgeti(L, -1, 1), lua_tointeger(L, -1)); /* [1]: hashes kept */
    lua_pop(L, 1);
    if (n >= OPTS_CACHE_MAX) {
        lua_pop(L, 1);
        lua_newtable(L);
        lua_pushvalue(L, -1);
        lua_setfield(L, LUA_REGISTRYINDEX, REG_OPTS);
        n = 0;
    }
    lua_pushinteger(L, n + 1);
    lua_rawseti(L, -2, 1);
    lua_newtable(L);
    lua_pushvalue(L, -1);
    lua_setfield(L, -3, c->hash);
    lua_remove(L, -2);
    return true;
}

/* Pushes ctx.params for prefix (NULL: none), kept by hash when c has one. */
static void push_params(lua_State *L, struct plugin_call *c, const char *prefix)
{
    if (!prefix || !push_opts_views(L, c)) {
        marshal_push_params(L, c->opts, prefix);
        return;
    }
    if (lua_getfield(L, -1, prefix) == LUA_TNIL) {
        lua_pop(L, 1);
        marshal_push_params(L, c->opts, prefix);
        lua_pushvalue(L, -1);
        lua_setfield(L, -3, prefix);
    }
    lua_remove(L, -2);
}

/* Pushes ctx.config, kept by hash when c has one. */
static void push_config(lua_State *L, struct plugin_call *c)
{
    if (!push_opts_views(L, c)) {
        marshal_push_config(L, c->opts);
        return;
    }
    if (lua_getfield(L, -1, "") == LUA_TNIL) {
        lua_pop(L, 1);
        marshal_push_config(L, c->opts);
        lua_pushvalue(L, -1);
        lua_setfield(L, -3, "");
    }
    lua_remove(L, -2);
}

/* Pushes the decision's read-only ctx part cached at *ref (built by build on first use). */
static void push_cached(lua_State *L, int *ref, struct plugin_call *c, bool job)
{
    if (*ref != LUA_NOREF) {
        lua_rawgeti(L, LUA_REGISTRYINDEX, *ref);
        return;
    }
    if (job)
        marshal_push_job(L, c->job, c->sm);
    else
        push_config(L, c);
    lua_pushvalue(L, -1);
    *ref = luaL_ref(L, LUA_REGISTRYINDEX);
}

static int hook_tramp(lua_State *L)
{
    struct hook_job *h = lua_touserdata(L, 1);
    struct plugin_call *c = h->c;
    struct plugin_one *p = &c->set->p[h->idx];
    lua_settop(L, 0);
    lua_rawgeti(L, LUA_REGISTRYINDEX, p->ref_fn);
    char prefix[256];
    if (h->inst && kind_prefix[h->kind])
        snprintf(prefix, sizeof prefix, "%s%s.", kind_prefix[h->kind], h->inst);
    push_params(L, c, h->inst && kind_prefix[h->kind] ? prefix : NULL);
    struct marshal_ctx ctx = {.params = lua_gettop(L), .now = h->now, .backlog = -1};
    push_cached(L, &c->ref_config, c, false);
    ctx.config = lua_gettop(L);
    push_cached(L, &c->ref_job, c, true);
    ctx.job = lua_gettop(L);
    lua_pushvalue(L, 1);
    int nargs = 0;
    switch (h->kind) {
    case PLUGIN_EXCLUSION:
        break;
    case PLUGIN_EVALUATOR:
        marshal_push_vertex(L, h->v);
        marshal_push_evaluated(L, h->ev);
        ctx.backlog = h->backlog;
        nargs = 2;
        break;
    case PLUGIN_EXECUTOR:
        marshal_push_decision(L, h->d);
        nargs = 1;
        break;
    case PLUGIN_ALIGNMENT:
        marshal_push_align(L, h->a);
        nargs = 1;
        break;
    }
    marshal_push_ctx(L, &ctx);
    lua_call(L, nargs + 1, 2);
    int r1 = lua_gettop(L) - 1, r2 = r1 + 1;
    const char *file = p->file->path;
    switch (h->kind) {
    case PLUGIN_EXCLUSION:
        *h->excluded = lua_toboolean(L, r1);
        if (*h->excluded)
            copy_str(h->why, h->why_len, lua_isstring(L, r2) ? lua_tostring(L, r2) : p->name);
        break;
    case PLUGIN_EVALUATOR:
        if (lua_isnil(L, r1))
            break;
        if (!lua_istable(L, r1))
            return luaL_error(L, "%s: evaluate must return a table of metrics or nil (got %s)",
                              file, luaL_typename(L, r1));
        marshal_read_evaluated(L, r1, h->ev, file);
        break;
    case PLUGIN_EXECUTOR:
        if (lua_isnil(L, r1) || (lua_isboolean(L, r1) && !lua_toboolean(L, r1))) {
            *h->veto = true;
            copy_str(h->why, h->why_len, lua_isstring(L, r2) ? lua_tostring(L, r2) : "");
        } else if (lua_istable(L, r1)) {
            marshal_read_targets(L, r1, h->d);
        } else if (!lua_isboolean(L, r1)) {
            return luaL_error(L,
                              "%s: execute must return a decision table, true, nil or "
                              "false, why (got %s)",
                              file, luaL_typename(L, r1));
        }
        break;
    case PLUGIN_ALIGNMENT: {
        char what[160];
        snprintf(what, sizeof what, "%s: align's result", file);
        *h->out = (int)marshal_read_int(L, r1, what, 1, MARSHAL_MAX_TARGET);
    } break;
    }
    return 0;
}

/* Appends a record of one hook call to c (strings copied). */
static void record(struct plugin_call *c, const char *plugin, enum plugin_kind kind,
                   const char *outcome, int64_t duration_us, const char *error)
{
    if (c->n_rec == c->cap_rec) {
        c->cap_rec = c->cap_rec ? c->cap_rec * 2 : 8;
        c->rec = xrealloc(c->rec, (size_t)c->cap_rec * sizeof *c->rec);
    }
    struct plugin_record *r = &c->rec[c->n_rec++];
    r->plugin = xstrdup(plugin);
    r->hook = plugin__hook_name(kind);
    r->outcome = outcome;
    r->duration_us = duration_us;
    r->error = error && *error ? xstrdup(error) : NULL;
}

/* Finds the plugin an instance name selects (its `.class` parameter, else itself). */
struct class_find {
    char cls[128];
};

static void class_cb(void *ud, const char *param, const char *value)
{
    struct class_find *f = ud;
    if (strcmp(param, "class") == 0)
        copy_str(f->cls, sizeof f->cls, value);
}

static int resolve(struct plugin_call *c, enum plugin_kind kind, const char *inst, char *err,
                   size_t err_len)
{
    struct class_find f;
    copy_str(f.cls, sizeof f.cls, inst);
    if (c->opts && kind_prefix[kind]) {
        char prefix[256];
        snprintf(prefix, sizeof prefix, "%s%s.", kind_prefix[kind], inst);
        opt_job_params(c->opts, prefix, class_cb, &f);
    }
    int idx = plugin_set_find(c->set, f.cls);
    if (idx < 0) {
        snprintf(err, err_len, "no plugin named \"%s\" in policy revision %s", f.cls,
                 c->set->revision);
        record(c, f.cls, kind, "error", 0, err);
        return -1;
    }
    if (c->set->p[idx].kind != kind) {
        snprintf(err, err_len, "plugin \"%s\" is an %s, not an %s", f.cls,
                 plugin_kind_name(c->set->p[idx].kind), plugin_kind_name(kind));
        record(c, f.cls, kind, "error", 0, err);
        return -1;
    }
    return idx;
}

/* Counts a call skipped because the decision's limits are spent: one record for them all,
 * the first skipped call's, whose error says how many there were. */
static void record_skip(struct plugin_call *c, const char *plugin, enum plugin_kind kind,
                        const char *err)
{
    if (c->skip_rec < 0) {
        c->skip_rec = c->n_rec;
        record(c, plugin, kind, "skipped", 0, err);
    }
    struct plugin_record *r = &c->rec[c->skip_rec];
    char *old = (char *)r->error;
    char *tail = strstr(old, "; calls skipped: ");
    if (tail)
        *tail = '\0';
    r->error = xasprintf("%s; calls skipped: %d", old, c->batch.skipped);
    free(old);
}

static int run_hook(struct hook_job *h, char *err, size_t err_len)
{
    struct plugin_set *s = h->c->set;
    struct plugin_one *p = &s->p[h->idx];
    int64_t t0 = vm_now_ns();
    pthread_mutex_lock(&s->mu);
    s->vm.state = h->c->st;
    int rc = vm_run(&s->vm, &p->owner, p->name, hook_tramp, h, &h->c->batch, err, err_len);
    s->vm.state = NULL;
    pthread_mutex_unlock(&s->mu);
    if (rc == VM_SKIPPED) {
        record_skip(h->c, p->name, h->kind, err);
        return -1;
    }
    const char *outcome = rc < 0                                                       ? "error"
                          : h->kind == PLUGIN_EXECUTOR && h->veto && *h->veto          ? "veto"
                          : h->kind == PLUGIN_EXCLUSION && h->excluded && *h->excluded ? "excluded"
                                                                                       : "ok";
    record(h->c, p->name, h->kind, outcome, (vm_now_ns() - t0) / 1000, rc < 0 ? err : NULL);
    return rc;
}

static int hook_excluded(void *ud, const struct core_config *cfg, int64_t now, bool *excluded,
                         char *why, size_t why_len, char *err, size_t err_len)
{
    (void)cfg;
    struct plugin_call *c = ud;
    *excluded = false;
    for (int i = 0; i < c->set->n; i++) {
        if (c->set->p[i].kind != PLUGIN_EXCLUSION)
            continue;
        struct hook_job h = {.c = c,
                             .idx = i,
                             .kind = PLUGIN_EXCLUSION,
                             .now = now,
                             .excluded = excluded,
                             .why = why,
                             .why_len = why_len};
        if (run_hook(&h, err, err_len) < 0) {
            *excluded = false;
            return -1;
        }
        if (*excluded)
            return 0;
    }
    return 0;
}

static int hook_evaluate(void *ud, const char *name, const struct core_vertex_in *v,
                         struct core_evaluated *ev, bool backlog, int64_t now, char *err,
                         size_t err_len)
{
    struct plugin_call *c = ud;
    int idx = resolve(c, PLUGIN_EVALUATOR, name, err, err_len);
    if (idx < 0)
        return -1;
    struct hook_job h = {.c = c,
                         .idx = idx,
                         .inst = name,
                         .kind = PLUGIN_EVALUATOR,
                         .now = now,
                         .v = v,
                         .ev = ev,
                         .backlog = backlog};
    return run_hook(&h, err, err_len);
}

static int hook_execute(void *ud, const char *name, struct core_decision *d, int64_t now,
                        bool *veto, char *err, size_t err_len)
{
    struct plugin_call *c = ud;
    *veto = false;
    int idx = resolve(c, PLUGIN_EXECUTOR, name, err, err_len);
    if (idx < 0)
        return -1;
    char why[512] = "";
    struct hook_job h = {.c = c,
                         .idx = idx,
                         .inst = name,
                         .kind = PLUGIN_EXECUTOR,
                         .now = now,
                         .d = d,
                         .veto = veto,
                         .why = why,
                         .why_len = sizeof why};
    if (run_hook(&h, err, err_len) < 0) {
        *veto = false;
        return -1;
    }
    if (*veto)
        copy_str(err, err_len, why);
    return 0;
}

static int hook_align(void *ud, const char *name, const struct core_align_ctx *a, int *out,
                      char *err, size_t err_len)
{
    struct plugin_call *c = ud;
    int idx = resolve(c, PLUGIN_ALIGNMENT, name, err, err_len);
    if (idx < 0)
        return -1;
    int v = a->proposed;
    struct hook_job h = {.c = c,
                         .idx = idx,
                         .inst = name,
                         .kind = PLUGIN_ALIGNMENT,
                         .now = c->sm ? c->sm->at : 0,
                         .a = a,
                         .out = &v};
    if (run_hook(&h, err, err_len) < 0)
        return -1;
    *out = v;
    return 0;
}

/* Orders cfg's executors by ascending plugin priority, stably, into c->exec_sorted. */
static void sort_executors(struct plugin_call *c, struct core_config *cfg)
{
    int n = cfg->n_executors;
    c->exec_sorted = xmalloc((size_t)n * sizeof *c->exec_sorted);
    double *prio = xmalloc((size_t)n * sizeof *prio);
    char err[256];
    for (int i = 0; i < n; i++) {
        c->exec_sorted[i] = cfg->executors[i];
        int idx = resolve(c, PLUGIN_EXECUTOR, cfg->executors[i], err, sizeof err);
        prio[i] = idx >= 0 ? c->set->p[idx].priority : 0;
    }
    /* stable insertion sort: equal priorities keep the listed order */
    for (int i = 1; i < n; i++) {
        const char *x = c->exec_sorted[i];
        double px = prio[i];
        int j = i - 1;
        for (; j >= 0 && prio[j] > px; j--) {
            c->exec_sorted[j + 1] = c->exec_sorted[j];
            prio[j + 1] = prio[j];
        }
        c->exec_sorted[j + 1] = x;
        prio[j + 1] = px;
    }
    free(prio);
    cfg->executors = c->exec_sorted;
}

struct plugin_call *plugin_call_new(struct plugin_set *set, const char *job,
                                    const struct opt_job *opts, struct core_config *cfg,
                                    const struct core_state *st, const struct core_sample *sm)
{
    struct plugin_call *c = xcalloc(1, sizeof *c);
    c->set = set;
    c->job = job;
    c->opts = opts;
    c->st = st;
    c->sm = sm;
    c->ref_config = c->ref_job = LUA_NOREF;
    vm_batch_init(&c->batch, "decision", &set->vm.lim, 1);
    c->batch.decision = true;
    c->skip_rec = -1;
    if (cfg && cfg->n_executors > 1)
        sort_executors(c, cfg);
    return c;
}

void plugin_call_config_hash(struct plugin_call *c, const char *hash)
{
    copy_str(c->hash, sizeof c->hash, c->opts ? hash : "");
}

void plugin_call_free(struct plugin_call *c)
{
    if (!c)
        return;
    vm_decision_done(); /* the decision's deadline (vm_run left it armed) */
    if (c->ref_config != LUA_NOREF || c->ref_job != LUA_NOREF) {
        pthread_mutex_lock(&c->set->mu);
        luaL_unref(c->set->vm.L, LUA_REGISTRYINDEX, c->ref_config);
        luaL_unref(c->set->vm.L, LUA_REGISTRYINDEX, c->ref_job);
        pthread_mutex_unlock(&c->set->mu);
    }
    for (int i = 0; i < c->n_rec; i++) {
        free((char *)c->rec[i].plugin);
        free((char *)c->rec[i].error);
    }
    free(c->rec);
    free(c->exec_sorted);
    free(c);
}

int plugin_call_n_records(const struct plugin_call *c)
{
    return c->n_rec;
}

const struct plugin_record *plugin_call_record(const struct plugin_call *c, int i)
{
    return &c->rec[i];
}

void plugin_call_hooks(struct plugin_call *c, struct core_hooks *h)
{
    memset(h, 0, sizeof *h);
    h->ud = c;
    bool has_excl = false;
    for (int i = 0; i < c->set->n; i++)
        has_excl |= c->set->p[i].kind == PLUGIN_EXCLUSION;
    h->excluded = has_excl ? hook_excluded : cron_excluded_hook;
    h->evaluate = hook_evaluate;
    h->execute = hook_execute;
    h->align = hook_align;
}
