/*
 * load.h - a policy revision's insides (struct plugin_set; see plugin.h), private to
 * server/plugin/: load.c builds it (and implements plugin.h's plugin_set_* functions), the
 * hooks (hooks.c) and the test runner (runner.c) call its plugins. The Lua state is the
 * embedded struct vm; a call on it holds mu.
 *
 * May call: vm, sandbox (struct sandbox_file), Lua.
 */
#ifndef GOVERNOR_PLUGIN_LOAD_H
#define GOVERNOR_PLUGIN_LOAD_H

#include <lua.h>
#include <pthread.h>
#include <stdatomic.h>

#include "plugin/plugin.h"
#include "plugin/sandbox.h"
#include "plugin/vm.h"

struct plugin_one {
    char *name;
    const struct sandbox_file *file;
    enum plugin_kind kind;
    double priority;
    int ref_fn;            /* registry ref of the hook function */
    int ref_tbl;           /* registry ref of the returned table */
    struct vm_owner owner; /* its counters and log rate (owner.name = name) */
};

struct plugin_set {
    struct vm vm; /* the Lua state and its limits */
    atomic_int refs;
    pthread_mutex_t mu; /* serializes calls and counter reads */
    char revision[9];
    int64_t loaded_at;
    char *dir;
    int n_files;
    struct sandbox_file *files; /* every .lua file of the directory, sorted by path */
    int n;
    struct plugin_one *p;
};

/* The set owning L. */
struct plugin_set *plugin__set(lua_State *L);

/* The hook function of a kind: "excluded" | "evaluate" | "execute" | "align". */
const char *plugin__hook_name(enum plugin_kind k);

#endif
