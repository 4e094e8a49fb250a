/*
 * vm.h - one Lua state under the host's limits (prefix vm_), private to server/plugin/. It
 * owns the state and its capped allocator, the count hook that charges VM instructions, the
 * deadline watchdog, the limits shared by a group of calls (a decision's, a load's), the
 * protected call every plugin call goes through (with file:line messages and the host's own
 * message when a limit stops it), and the log rate of what plugins print.
 *
 * Ownership: struct vm is storage its owner embeds (a struct plugin_set) and keeps at one
 * address for the state's life (the allocator and the state's extra space point at it).
 * Strings in it are borrowed from the owner.
 *
 * May call: options (the limits' defaults), log, Lua.
 */
#ifndef GOVERNOR_PLUGIN_VM_H
#define GOVERNOR_PLUGIN_VM_H

#include <lua.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "plugin/plugin.h"

/* Why the running call was stopped by the host (it cannot be caught by the plugin). */
enum vm_kill { VM_KILL_NONE, VM_KILL_BUDGET, VM_KILL_DEADLINE, VM_KILL_MEMORY, VM_KILL_PATTERN };

/*
 * What library work costs, in instructions. The rates are calibrated against the VM (an
 * instruction takes about 3 ns under the count hook), so the budget bounds the time of a
 * library call as it bounds the time of Lua code.
 */
#define VM_BYTES_PER_INSTR 8 /* bytes a string function touches */
#define VM_ELEM_COST       8 /* per element a table function touches (lua_geti/lua_seti) */

/* The log rate of one plugin (governor.log, ctx.log, print): a bucket of lines. */
struct vm_lograte {
    double tokens;       /* lines it may log now */
    int64_t refill_ns;   /* when tokens was last topped up */
    uint64_t suppressed; /* lines dropped since the last report */
};

/* What a call is charged to: one plugin's counters and log rate. */
struct vm_owner {
    const char *name; /* borrowed */
    uint64_t calls, errors;
    uint64_t time_us; /* wall time in calls */
    struct vm_lograte log;
};

/*
 * The limits shared by a group of calls: every hook call of one decision, or the top level
 * of every file of one load. Each call runs until the earlier of its own limits and what
 * is left of the group's; once the group's are spent, the calls left are not run.
 */
struct vm_batch {
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

struct vm {
    lua_State *L;
    struct plugin_limits lim; /* every field > 0 (defaults applied) */
    size_t mem_used, mem_cap;
    /* where logged lines go (log_fn NULL: log_write at info level, naming revision) */
    void (*log_fn)(void *ud, const char *plugin, const char *msg);
    void *log_ud;
    const char *revision;
    struct vm_lograte log_other; /* lines not from a plugin's own call (tests, helpers) */
    /* the running call */
    const char *cur_name;           /* its label, for messages and logs */
    struct vm_owner *cur_owner;     /* NULL when it is no plugin's */
    const struct core_state *state; /* the job state of the decision it serves, or NULL */
    struct vm_batch *batch;         /* the group it belongs to, NULL when none */
    enum vm_kill killed;
    int64_t used, budget; /* instructions */
    int64_t deadline_ns;  /* CLOCK_MONOTONIC */
    bool budget_of_batch; /* budget and deadline_ns are what was left of the batch's */
    bool deadline_of_batch;
    size_t alloc_bytes; /* grown since the last instruction charged for it */
    size_t alloc_clock; /* grown since the clock was last read */
    int log_lines;      /* lines logged in this call */
    bool in_call;       /* limits apply */
};

/*
 * Fills vm (zeroed first) and creates its Lua state with the capped allocator. lim's fields
 * that are <= 0 take the options table's defaults (plugin_limits_from), the per-decision
 * ones at least the per-call figure. 0, or -1 with *errp (new) when no state can be made.
 */
int vm_open(struct vm *vm, const struct plugin_limits *lim, char **errp);
/* Closes the state (NULL-safe on a vm whose open failed). */
void vm_close(struct vm *vm);

/* The vm owning L. */
struct vm *vm_of(lua_State *L);

/* Monotonic clock, nanoseconds. */
int64_t vm_now_ns(void);

/*
 * Charges n instructions to the running call and checks the budget and the deadline;
 * raises the host's (uncatchable) error when one is exceeded. No-op outside calls. A C
 * function that does work proportional to its arguments charges it with this before it
 * does it, so a call past the budget is refused instead of run.
 */
void vm_charge(lua_State *L, int64_t n);
/* Charges n x per instructions (saturating: a count from the plugin can be huge). */
void vm_charge_units(lua_State *L, lua_Unsigned n, int64_t per);
/* The size of argument i as library functions are charged for it: a string's bytes, else 1. */
int64_t vm_weigh(lua_State *L, int i);

/* Makes every further instruction of the running call raise (it has been stopped). */
void vm_stop(lua_State *L);
/* Stops the running call: sets the kill (if none yet) and throws detail (NULL: a generic
 * message; the host replaces it with one naming the limit). Does not return. */
int vm_kill(lua_State *L, enum vm_kill why, const char *detail);

/* A batch with the per-decision budget, and times the per-decision deadline. */
void vm_batch_init(struct vm_batch *b, const char *what, const struct plugin_limits *l, int times);

#define VM_SKIPPED (-2)

/*
 * Runs fn(L) (with ud as light userdata at index 1) protected and limited: by the per-call
 * limits and by what is left of batch b's (NULL: none). owner's counters are charged (NULL:
 * none); label names the call in messages. The caller serializes the calls of one vm. 0, or
 * -1 with a one-line message in err; VM_SKIPPED (with err) when b was already spent, and
 * then fn did not run. A decision's batch leaves the watchdog armed for its next call:
 * vm_decision_done disarms it.
 */
int vm_run(struct vm *vm, struct vm_owner *owner, const char *label, int (*fn)(lua_State *L),
           void *ud, struct vm_batch *b, char *err, size_t err_len);

/* Disarms this thread's watchdog once a decision's calls are over. */
void vm_decision_done(void);

/* Writes one line a plugin logged, if its rate allows (owner NULL: not a plugin's). */
void vm_log_line(struct vm *vm, struct vm_owner *owner, const char *who, const char *msg);

#endif
