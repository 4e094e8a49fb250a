/*
 * marshal.h - values between C and a plugin (prefix marshal_), private to server/plugin/:
 * the Lua views of the core's structs a hook is handed (a vertex of the sample, its
 * evaluated figures, the decision, an alignment's inputs, the job), what a hook returns read
 * back with every number checked against its range, and the ctx every hook gets. The
 * hooks of a decision (hooks.c) and `governor test` (runner.c) both build their values
 * here, so a policy test hands a plugin what the server would: numbers by the same rule,
 * parameters and options as text, the same read-only parts, the same ctx.
 *
 * Functions that build Lua values run inside a protected call (they allocate); the ones
 * that read results raise the plugin's error naming the field.
 *
 * May call: core (read only), options (a job's parameters and options), proxy, libgov
 * (ctx.log), Lua.
 */
#ifndef GOVERNOR_PLUGIN_MARSHAL_H
#define GOVERNOR_PLUGIN_MARSHAL_H

#include <lua.h>
#include <stdbool.h>
#include <stdint.h>

#include "core/core.h"
#include "options/options.h"
#include "plugin/plugin.h"

/* ------------------------------------------------------------------ values -- */

/* Pushes a number as the host hands every figure to a plugin: an integral value (below
 * 9e15) as an integer, any other as a float, NaN as nil. */
void marshal_push_number(lua_State *L, double v);

/*
 * Pushes a read-only copy, named what, of the table at idx with its values as text, the way
 * the server hands a plugin its parameters and options: a string stays, a number or a
 * boolean becomes its text (2 -> "2", true -> "true"); any other value raises an error
 * naming what and the key. The table at idx is not changed.
 */
void marshal_push_text_table(lua_State *L, int idx, const char *what);

/* ------------------------------------------------------------------ the ctx -- */

/* ctx.params: the job's options under prefix (the prefix stripped), read-only; an empty
 * table when opts or prefix is NULL. */
void marshal_push_params(lua_State *L, const struct opt_job *opts, const char *prefix);
/* ctx.config: the job's effective options as text, read-only (opts NULL: empty). */
void marshal_push_config(lua_State *L, const struct opt_job *opts);
/* ctx.job: {name, at, running_since, running, vertices} of the sample (sm NULL: name
 * only), read-only all the way down. */
void marshal_push_job(lua_State *L, const char *name, const struct core_sample *sm);

/* What a ctx is made of. params, config, job: stack indices of the (read-only) parts, 0 for
 * an empty table. backlog: ctx.backlog, which evaluators get; -1 for none. */
struct marshal_ctx {
    int params, config, job;
    int64_t now; /* epoch ms */
    int backlog; /* 0, 1, or -1 */
};

/* Pushes ctx = {params, config, job, now, log[, backlog]}. */
void marshal_push_ctx(lua_State *L, const struct marshal_ctx *c);

/* ---------------------------------------------------------- hook arguments -- */

void marshal_push_vertex(lua_State *L, const struct core_vertex_in *v);
/* The figures of ev (absent: nil) as the table `evaluated`. */
void marshal_push_evaluated(lua_State *L, const struct core_evaluated *ev);
void marshal_push_decision(lua_State *L, const struct core_decision *d);
void marshal_push_align(lua_State *L, const struct core_align_ctx *a);

/* ------------------------------------------------------------ hook results -- */

/*
 * An evaluator's result at idx (a table of figures) over ev: every name must be one of the
 * figures and every value a number within that figure's range (an integer for the counts;
 * +math.huge where "no limit" is meaningful), else an error naming file and the figure,
 * and then ev is not changed at all.
 */
void marshal_read_evaluated(lua_State *L, int idx, struct core_evaluated *ev, const char *file);

/*
 * An executor's returned decision at idx over d: its `vertices` entries are {id = ..., target
 * = n} (array) or [id] = n / [id] = {target = n}; every target must be an integer in [1,
 * MARSHAL_MAX_TARGET] of a vertex of d. Every entry is checked before any target changes, so
 * an error leaves d as it was.
 */
void marshal_read_targets(lua_State *L, int idx, struct core_decision *d);

/* The most a plugin may set a vertex's parallelism to (executor targets, alignment). */
#define MARSHAL_MAX_TARGET 1000000

/* The integer at idx, which must lie in [lo, hi] (an integral float is accepted); anything
 * else (a fraction, NaN, infinity, out of range, another type) raises an error naming what:
 * a plugin's number is never truncated into an int. */
lua_Integer marshal_read_int(lua_State *L, int idx, const char *what, lua_Integer lo,
                             lua_Integer hi);

#endif
