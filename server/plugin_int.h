/*
 * plugin_int.h - what plugin.c (the host: loading, limits, hooks), plugin_api.c (the
 * sandbox's library: the allow list, read-only proxies, guarded string functions, the
 * `governor` helpers) and plugin_test.c (`governor test`) share. Not for other modules.
 */
#ifndef GOVERNOR_PLUGIN_INT_H
#define GOVERNOR_PLUGIN_INT_H

#include <lua.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "plugin.h"

/* Why the running call was stopped by the host (it cannot be caught by the plugin). */
enum plugin__kill { KILL_NONE, KILL_BUDGET, KILL_DEADLINE, KILL_MEMORY, KILL_PATTERN };

struct plugin__file { /* every .lua file of the directory, sorted by path */
    char *path;       /* relative: "freeze.lua", "lib/util.lua" */
    char *text;
    size_t len;
    char hash[17];
};

/* The log rate of one plugin (governor.log, ctx.log, print): a bucket of lines. */
struct plugin__log {
    double tokens;       /* lines it may log now */
    int64_t refill_ns;   /* when tokens was last topped up */
    uint64_t suppressed; /* lines dropped since the last report */
};

struct plugin__one {
    char *name;
    const struct plugin__file *file;
    enum plugin_kind kind;
    double priority;
    int ref_fn;  /* registry ref of the hook function */
    int ref_tbl; /* registry ref of the returned table */
    uint64_t calls, errors, time_us;
    struct plugin__log log;
};

/*
 * The limits shared by a group of calls: every hook call of one decision, or the top level
 * of every file of one load. Each call runs until the earlier of its own limits and what
 * is left of the group's; once the group's are spent, the calls left are not run.
 */
struct plugin__batch {
    const char *what;    /* "decision" | "load", for messages */
    int64_t budget;      /* instructions */
    int64_t used;        /* instructions, calls so far */
    int64_t timeout_ms;  /* wall clock, from the first call */
    int64_t deadline_ns; /* CLOCK_MONOTONIC; 0 until the first call */
    int calls;           /* calls run */
    int skipped;         /* calls not run because the group's limits were spent */
    bool spent;
    bool decision; /* a decision's (the watchdog stays armed between its calls) */
};

struct plugin_set {
    atomic_int refs;
    pthread_mutex_t mu; /* serializes calls and counter reads */
    lua_State *L;
    struct plugin_limits lim;
    size_t mem_used, mem_cap;
    char revision[9];
    int64_t loaded_at;
    char *dir;
    int n_files;
    struct plugin__file *files;
    int n;
    struct plugin__one *p;
    void (*log_fn)(void *ud, const char *plugin, const char *msg);
    void *log_ud;
    struct plugin__log log_other; /* lines not from a plugin's own call (tests, helpers) */
    /* the running call */
    const char *cur_name;         /* plugin being called, for messages and logs */
    int cur_idx;                  /* its index in p, -1 when none */
    struct plugin_call *cur_call; /* NULL outside hooks (tests, load) */
    struct plugin__batch *batch;  /* the group it belongs to, NULL when none */
    enum plugin__kill killed;
    int64_t used, budget; /* instructions */
    int64_t deadline_ns;  /* CLOCK_MONOTONIC */
    bool budget_of_batch; /* budget and deadline_ns are what was left of the batch's */
    bool deadline_of_batch;
    size_t alloc_bytes; /* grown since the last instruction charged for it */
    size_t alloc_clock; /* grown since the clock was last read */
    int log_lines;      /* lines logged in this call */
    bool in_call;       /* limits apply */
};

/* The set owning L (stored in the state's extra space). */
struct plugin_set *plugin__set(lua_State *L);

/* Monotonic clock, nanoseconds. */
int64_t plugin__now_ns(void);

/*
 * Charges n instructions to the running call and checks the budget and the deadline;
 * raises the host's (uncatchable) error when one is exceeded. No-op outside calls. A C
 * function that does work proportional to its arguments charges it with this before it
 * does it, so a call past the budget is refused instead of run.
 */
void plugin__charge(lua_State *L, int64_t n);

/* Charges n x per instructions (saturating: a count from the plugin can be huge). */
void plugin__charge_units(lua_State *L, lua_Unsigned n, int64_t per);

/* Makes every further instruction of the running call raise (it has been stopped). */
void plugin__stop(lua_State *L);

/* Raises the error of a kill: sets s->killed and throws a message naming the limit. */
int plugin__kill(lua_State *L, enum plugin__kill why, const char *detail);

/*
 * Builds the shared part of the sandbox in the registry (read-only proxies of string,
 * table, math, utf8, os, governor; the guarded functions; the string metatable locked).
 * Runs inside a protected call.
 */
void plugin__sandbox_open(lua_State *L);

/* Pushes a new environment table for a file of plugin `owner` (require's cache is per
 * environment). Runs inside a protected call. */
void plugin__sandbox_env(lua_State *L, const char *owner);

/* Makes the table at the top of the stack a read-only proxy (replaces it). */
void plugin__readonly(lua_State *L, const char *what);

/* Lua <-> JSON text for `governor test` and plugin_call_json. to_json: the value at idx as
 * new JSON text (-1 on a value JSON cannot hold, message pushed... raises instead). */
void plugin__push_json(lua_State *L, const char *text, const char *what);
char *plugin__to_json(lua_State *L, int idx);

/* Deep equality with a relative tolerance on numbers (1e-9), for the test runners. */
int plugin__deep_eq(lua_State *L, int a, int b, int depth);

/* Loads a file of the set in a new environment of `owner` and pushes the chunk. */
int plugin__load_chunk(lua_State *L, const struct plugin__file *f, const char *owner);

/* Runs fn(L, ud) protected, under the limits, charging plugin `name` (NULL = no plugin
 * counter). 0, or -1 with a message in err. */
int plugin__run(struct plugin_set *s, const char *name, int (*fn)(lua_State *L), void *ud,
                char *err, size_t err_len);

/* Writes one line a plugin logged, if its rate allows (see plugin_api.c); idx is the plugin
 * (-1: not a plugin's). */
void plugin__log_line(struct plugin_set *s, int idx, const char *who, const char *msg);
/* Reports the lines of plugin idx dropped so far, if any and its rate allows. */
void plugin__log_flush(struct plugin_set *s, int idx, const char *who);

/* Pushes a ctx table {params, config, job, now, log} from tables given at the stack
 * positions (0 = absent). */
void plugin__push_ctx(lua_State *L, const char *name, int params, int config, int job, int64_t now);

/* The job state a decision's call binds (NULL when none). */
const struct core_state *plugin__call_state(const struct plugin_call *c);

/* FNV-1a 64 as 16 hex digits. */
void plugin__fnv_hex(const void *data, size_t len, char out[17]);

#endif
