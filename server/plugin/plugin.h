/*
 * plugin.h - the Lua 5.4 plugin host (prefix plugin_). A policy revision
 * (struct plugin_set) is one Lua state loaded from a policies directory: every `*.lua`
 * directly in it (not `*_test.lua`) is a plugin named by its file name without `.lua`;
 * the .lua files of lib/ are helpers reachable only through `require`. Files are loaded as text
 * only, each in its own _ENV built from an allow list (trimmed stdlib, read-only shared tables, the
 * `governor` helpers), and every call runs under an instruction budget, a wall-clock deadline and
 * the state's memory cap. A call that fails fails alone: the state stays usable.
 *
 * The four hooks are offered to the core as a struct core_hooks bound to one decision
 * (struct plugin_call): exclusion, evaluators, executors (by ascending priority) and
 * alignment modes, with `<prefix>.<name>.<param>` options passed to the plugin as
 * ctx.params.
 *
 * Threads: a revision serializes the calls made on it (a mutex), and is reference counted so
 * decisions in flight finish on the revision they started with while the server swaps a new
 * one in. Loading reads the directory (the only I/O here besides governor.log's log lines).
 *
 * The implementation is the folder server/plugin/, a file per concern, each calling only
 * those below it:
 *   runner.c    `governor test` and plugin_call_json; luajson.c: JSON <-> Lua for it
 *   hooks.c     plugin_call_*: a decision's calls, the executors' order, the records
 *   load.c      plugin_set_*: reading a directory, revisions, loading and checking plugins
 *   marshal.c   the Lua views of the core's structs, the ctx, results read back with their
 *               ranges checked (the hooks and the test runner both marshal here)
 *   sandbox.c   the allow list as data: what each library exposes and how it is charged
 *   libstd.c    the standard functions the sandbox reimplements or wraps (they charge)
 *   libgov.c    the `governor` table and the plugins' log lines
 *   pattern.c   the pattern-cost dry run of string.find/match/gmatch/gsub
 *   proxy.c     read-only views of tables
 *   vm.c        the Lua state and its limits: allocator, count hook, watchdog, batches
 *
 * May call: core (read-only: core.h, core/state.h for the metric window), options, cron,
 * timeutil, log, Lua. Nothing here knows about HTTP or SQLite: the server wires reloads (see
 * the "server wiring" notes at plugin_set_load) and stores revisions.
 */
#ifndef GOVERNOR_PLUGIN_H
#define GOVERNOR_PLUGIN_H

#include <stdbool.h>
#include <stdint.h>

#include "core/core.h"
#include "options/options.h"

/* Per-call, per-decision and per-state limits (the server options plugin-instructions,
 * plugin-timeout, plugin-decision-instructions, plugin-decision-timeout, plugin-memory). A
 * value <= 0 takes the option's default from the options table; a per-decision one at
 * least the per-call figure. The per-decision limits are shared by every hook call of one
 * decision (struct plugin_call), and by the top levels of every file of one load
 * (plugin_set_load), whose deadline is ten times the decision's. */
struct plugin_limits {
    int64_t instructions;          /* VM instructions per call */
    int64_t timeout_ms;            /* wall clock per call */
    int64_t decision_instructions; /* all the calls of one decision (or load) together */
    int64_t decision_timeout_ms;   /* wall clock of those calls together */
    int64_t memory_bytes;          /* the whole Lua state */
};

/* Fills l from the server options (srv NULL: the options table's defaults). */
void plugin_limits_from(struct plugin_limits *l, const struct opt_server *srv);
/*
 * The limits of an offline run (`governor replay`, replay --db, `governor simulate`): the
 * server's instruction and memory limits, which bound a plugin the same on every machine,
 * with the wall-clock deadlines raised to PLUGIN_OFFLINE_TIMEOUT_MS, a safety net only. An
 * offline run must give the same decisions on a busy or a slow (sanitized) machine as on an
 * idle one, and the deadlines are the only limits that depend on the machine.
 */
#define PLUGIN_OFFLINE_TIMEOUT_MS 10000
void plugin_limits_offline(struct plugin_limits *l, const struct opt_server *srv);

enum plugin_kind { PLUGIN_EXCLUSION, PLUGIN_EVALUATOR, PLUGIN_EXECUTOR, PLUGIN_ALIGNMENT };
/* "exclusion" | "evaluator" | "executor" | "alignment". */
const char *plugin_kind_name(enum plugin_kind k);

/* What GET /v1/policies and /metrics show of one plugin. Strings borrowed from the set. */
struct plugin_info {
    const char *name; /* "freeze" */
    const char *file; /* "freeze.lua", relative to the policies directory */
    const char *hash; /* FNV-1a 64 of the file's bytes, 16 hex digits */
    enum plugin_kind kind;
    double priority;   /* executors; 0 otherwise */
    int64_t loaded_at; /* epoch ms */
    /* counters since the revision was loaded */
    uint64_t calls, errors;
    uint64_t time_us; /* total wall time in calls */
};

struct plugin_set; /* one revision: opaque */

/*
 * Builds a revision from the policies directory dir, in a fresh Lua state with limits lim.
 * Every plugin file is loaded (text only), run once in its own environment, and checked:
 * it must return a table whose `kind` is one of the four, with the hook function of that
 * kind (`excluded`, `evaluate`, `execute`, `align`) and, if present, a numeric `priority`.
 * The revision id is the first 8 hex digits of FNV-1a 64 over the sorted (relative path,
 * contents) of every .lua file in dir and dir/lib (test files included: they are part of
 * what was reviewed). On success *out is a new set with one reference (plugin_set_unref
 * releases it). On any failure returns -1 with *errp (new) naming the file and line, e.g.
 * "freeze.lua:12: attempt to call a nil value" or "freeze.lua: kind must be one of ...";
 * nothing is kept. An empty or missing-plugins directory is a valid, empty revision; a
 * directory that cannot be read is an error.
 *
 * Server wiring (the lead's part): call this on start, on POST /v1/policies/reload, on
 * SIGHUP and on a debounced inotify event in dir (and dir/lib); on success swap the active
 * pointer (unref the old one: decisions holding a reference finish on it), store the
 * revision with plugin_set_each's files, log and emit an event; on failure keep the old set
 * and report *errp (422 / log line / event / last_reload in GET /v1/policies).
 */
int plugin_set_load(const char *dir, const struct plugin_limits *lim, struct plugin_set **out,
                    char **errp);

/* Takes one more reference (thread-safe); returns s. */
struct plugin_set *plugin_set_ref(struct plugin_set *s);
/* Drops one reference; the last one closes the Lua state. NULL is a no-op. */
void plugin_set_unref(struct plugin_set *s);

/* The revision id: 8 hex digits, borrowed. */
const char *plugin_set_revision(const struct plugin_set *s);
/* When the set was loaded, epoch ms. */
int64_t plugin_set_loaded_at(const struct plugin_set *s);
/* Number of plugins and a snapshot of plugin i (0 <= i < n) into *info (counters are read
 * under the set's lock). */
int plugin_set_count(const struct plugin_set *s);
void plugin_set_info(struct plugin_set *s, int i, struct plugin_info *info);
/* Index of the plugin named name, or -1. */
int plugin_set_find(const struct plugin_set *s, const char *name);

/*
 * Every .lua file hashed into the revision: fn(ud, relative path, 16-hex FNV-1a 64 of the
 * contents) in sorted order (for the revisions table: "every revision is stored with its
 * files' hashes and load time").
 */
void plugin_set_each_file(const struct plugin_set *s,
                          void (*fn)(void *ud, const char *path, const char *hash), void *ud);

/* Where governor.log and ctx.log lines go: default log_write at info level with
 * mod=plugin. A test may redirect them (fn NULL restores the default). Not thread-safe:
 * set it before any call. */
void plugin_set_log_sink(struct plugin_set *s,
                         void (*fn)(void *ud, const char *plugin, const char *msg), void *ud);

/* ----------------------------------------------------------------- hooks -- */

/*
 * One decision's binding of a revision to the core: what the hooks need besides their
 * arguments. New with plugin_call_new, freed with plugin_call_free once core_decide has
 * returned. Everything given is borrowed and must outlive the call object: set (the caller
 * holds a reference for as long as the decision runs), job (the job's name), opts (the
 * job's layered options: ctx.config and ctx.params come from them), st and sm (the job
 * state and the sample, for ctx.job and governor.window; st may be NULL).
 *
 * cfg is the effective config core_decide will get; plugin_call_new reorders
 * cfg->executors by ascending plugin priority (stable: equal priorities keep the listed
 * order; an unknown name counts as priority 0) into storage owned by the call, because
 * the core runs them in list order. cfg must therefore not outlive the call either.
 */
struct plugin_call;
struct plugin_call *plugin_call_new(struct plugin_set *set, const char *job,
                                    const struct opt_job *opts, struct core_config *cfg,
                                    const struct core_state *st, const struct core_sample *sm);
void plugin_call_free(struct plugin_call *c);
/*
 * Tells c the config hash of opts (opt_job_hash). With it, ctx.config and ctx.params are
 * built once per revision and hash and shared by later decisions (they list nothing the
 * hash does not cover); without it (NULL or ""), once per decision.
 */
void plugin_call_config_hash(struct plugin_call *c, const char *hash);

/*
 * Fills h with the hooks of c (h->ud = c). The exclusion hook runs the set's exclusion
 * plugins (by name; excluded if any says so); when the set has none it is the native
 * cron_excluded_hook. The other three run the plugin the option names:
 * `<prefix>.<name>.class` if set, else the plugin called <name>; a missing plugin is an
 * error of that hook (PLUGIN_ERROR), and alignment falls back to BALANCED only in the core
 * when no hook at all is given.
 */
void plugin_call_hooks(struct plugin_call *c, struct core_hooks *h);

/* One hook call of a decision, for the plugin_calls table. */
struct plugin_record {
    const char *plugin;  /* the plugin's name (or the instance a missing plugin was named by) */
    const char *hook;    /* "excluded" | "evaluate" | "execute" | "align" */
    const char *outcome; /* "ok" | "error" | "veto" | "excluded" */
    int64_t duration_us;
    const char *error; /* NULL unless outcome is "error" */
};

/* The hook calls c has made so far, in call order; borrowed, valid until plugin_call_free. */
int plugin_call_n_records(const struct plugin_call *c);
const struct plugin_record *plugin_call_record(const struct plugin_call *c, int i);

/* ------------------------------------------------------------ direct calls -- */

/*
 * For `governor test` and unit tests: calls plugin `name`'s hook in the sandbox with the
 * arguments of args_json (a JSON array: the hook's arguments before ctx) and a ctx built
 * from ctx_json (NULL = {}): {"params": {...}, "config": {...}, "job": {...}, "now": ms,
 * "backlog": bool}, handed to the plugin as a decision would hand them (marshal.c builds
 * both): params and config as text (a number or boolean as its text; anything else is an
 * error), integral numbers as integers, job read-only all the way down, backlog (false when
 * not given) for evaluators only. The hook's return values are encoded as a JSON array in
 * *outp (new; nil is null, a table with keys 1..n an array, other tables objects). The
 * results are not checked against the hook's contract (that is plugin_call_hooks' job), so
 * a test sees exactly what the plugin returned. -1 with *errp (new) when the call fails (the
 * plugin's error with file:line, a limit, bad JSON).
 */
int plugin_call_json(struct plugin_set *s, const char *name, const char *args_json,
                     const char *ctx_json, char **outp, char **errp);

/* `governor test [DIR]` (argv[0] = "test"): runs DIR's *_test.lua and *.test files
 * (default ./policies), prints one line per failure and "N passed, N failed"; returns the
 * exit code (0 all passed, 1 a failure, 2 usage or load error). */
int plugin_test_main(int argc, char **argv);

#endif
