/*
 * options.h - the one options table (prefix opt_): every job option (with the
 * deprecated aliases and the `kubernetes.operator.` fallback prefix), governor's own job
 * options, the Flink cluster keys the algorithm reads, and the server's own settings
 * (listen address, database, limits). The table feeds the value parsers, validation (spec
 * 6.4), layering (built-in < server < job < request), `governor options`, the `--flag`
 * parser of `governor serve`, the config file reader, and docs/options.md's tables.
 *
 * The table's default column is the one home of every default (the core has none: it is
 * handed a struct core_config this module resolved, opt_config_defaults when nothing is set).
 *
 * Files: options_table.c (the rows, and the knobs' maps), options.c (parsing a value, the
 * server options and their file), options_job.c (a job's layers, resolved), options_print.c
 * (`governor options`, `--help`, docs/options.md's tables); options_int.h is what they share.
 *
 * May call: core (struct core_config, enum names), cron, tz, libc. No I/O except opt_print_*
 * (to a FILE the caller gives) and opt_server_load_file (reads the config file).
 */
#ifndef GOVERNOR_OPTIONS_H
#define GOVERNOR_OPTIONS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "core/core.h"

enum opt_layer { OPT_BUILTIN, OPT_SERVER, OPT_JOB, OPT_REQUEST };
const char *opt_layer_name(enum opt_layer l); /* "default", "server", "job", "request" */

/* ------------------------------------------------------------ value parsers -- */

/* Flink durations: "5 min", "5min", "5m", "30 s", "500 ms", "1 h", "1 d", bare = ms.
 * 0 / -1 with *errp (new) naming what is allowed. */
int opt_parse_duration(const char *s, int64_t *ms, char **errp);
/* Memory sizes: "4 gb", "512m", "1024 kb", bare = bytes. */
int opt_parse_memory(const char *s, int64_t *bytes, char **errp);
int opt_parse_bool(const char *s, bool *out, char **errp);

/* -------------------------------------------------------------- job options -- */

/*
 * The options of one job, layered. Owns copies of every key and value. Keys are stored
 * under their canonical name (aliases and the kubernetes.operator. prefix are mapped);
 * plugin parameter keys (`<prefix>.<name>.<param>` under custom-evaluator,
 * custom-executor and parallelism-alignment.mode) are kept verbatim.
 */
struct opt_job;

struct opt_job *opt_job_new(void);
void opt_job_free(struct opt_job *j);
/* new: a deep copy (the server copies a job's stored layers, then adds the request's). */
struct opt_job *opt_job_clone(const struct opt_job *j);
/* Removes every key of one layer (PUT /v1/jobs/{job}/config replaces the job layer). */
void opt_job_clear_layer(struct opt_job *j, enum opt_layer layer);

/*
 * Sets key = value at layer. An unknown `job.autoscaler.*` key, or a value that does not
 * parse or is out of its row's range, is -1 with *errp (new) naming the key, the value and
 * what is allowed, e.g. `job.autoscaler.utilization.target: "1.5" is out of range [0, 1]`;
 * nothing is changed then. A key the algorithm does not read (outside job.autoscaler.* and
 * the cluster keys of the table) is accepted and recorded as ignored (opt_job_warnings).
 * A Dataflow knob (governor.dataflow.*: docs/flink.md, docs/keda.md) sets, in the
 * same layer, each option it maps onto, unless that option is set in that layer itself.
 */
int opt_job_set(struct opt_job *j, enum opt_layer layer, const char *key, const char *value,
                char **errp);

/*
 * Resolves the effective options (highest layer wins per key, the table's default below them)
 * into cfg, every field of which it writes (each has its row), and which borrows strings and
 * lists from j (valid until j is changed or freed), and runs the cross-field checks of spec
 * 6.4 (utilization.max in [target, 1], ...; feature-gated ones only when the feature is on;
 * excluded-period syntax via cron_validate). -1 with *errp on the first error.
 */
int opt_job_resolve(struct opt_job *j, struct core_config *cfg, char **errp);

/* Fills cfg with the built-in defaults of every option: opt_job_resolve of a job with none
 * set. cfg borrows only the table's own strings (static). For callers of the core with no
 * options of their own: tests, tools. */
void opt_config_defaults(struct core_config *cfg);
/* Sets cfg->profile to p and every option that follows governor.profile (its rows apply an
 * unset value) to what p gives it, leaving the rest of cfg alone: opt_config_defaults then
 * opt_config_set_profile(cfg, CORE_PROFILE_FLINK) is the reference algorithm with governor's
 * first differences only. For tests and tools. */
void opt_config_set_profile(struct core_config *cfg, enum core_profile p);

/* Calls fn for each effective key (every table row, plus set plugin keys), in table order:
 * key, value as text, and the layer it came from. */
void opt_job_each(const struct opt_job *j,
                  void (*fn)(void *ud, const char *key, const char *value, enum opt_layer layer),
                  void *ud);

/* opt_job_each, and for each key the knob that set it (governor.dataflow.*: docs/flink.md,
 * docs/keda.md), or NULL when the key's own value (or its default) is in effect. */
void opt_job_each_via(const struct opt_job *j,
                      void (*fn)(void *ud, const char *key, const char *value, enum opt_layer layer,
                                 const char *via),
                      void *ud);

/* Calls fn for each set key that starts with prefix (e.g.
 * "job.autoscaler.scaling.custom-executor.freeze."), with the prefix stripped. */
void opt_job_params(const struct opt_job *j, const char *prefix,
                    void (*fn)(void *ud, const char *param, const char *value), void *ud);

/* The keys that were accepted but are not read by the algorithm (for `warnings`): how many,
 * and (borrowed, in the order first set) at most cap of them into out, returning how many
 * there are. */
int opt_job_n_warnings(const struct opt_job *j);
int opt_job_warnings(const struct opt_job *j, const char **out, int cap);

/* A stable hash of the effective options (hex, 16 chars) for `config_hash`. */
void opt_job_hash(const struct opt_job *j, char out[17]);

/* ----------------------------------------------------------- server options -- */

/*
 * The budget of one request: every size in a request that drives work has a limit (the
 * docs/api.md's limits table, opt_print_limits_markdown); these are the ones a user may need to
 * raise, each a server option (defaults in the table). A request past one is refused (413
 * naming the field) before any work that grows with it.
 */
struct opt_limits {
    int vertices;        /* max-vertices: vertices (stages) of one sample */
    int edges;           /* max-edges: inputs of a sample's vertices, in all */
    int config_keys;     /* max-config-keys: keys of one options layer */
    int rebalance_items; /* max-rebalance-items: items of one rebalance request */
    int page_rows;       /* max-page-rows: vertex rows of one history page */
};

/* The fixed limits (no option: nobody needs more), one definition each, which the code that
 * enforces them and the docs/api.md's limits table both read. */
#define OPT_MAX_ID_LEN     128     /* a vertex's or a stage's id, characters */
#define OPT_MAX_IDLE_SLOTS 1000000 /* a rebalance request's idle_slots (a value: 400) */
#define OPT_MAX_PAGE       1000    /* limit= of GET /v1/jobs/{job}/decisions and .../events */
#define OPT_MAX_BUCKETS    2000    /* buckets of one timeline */
#define OPT_MAX_VALUES     1000000 /* values per series of one timeline: buckets x vertices */

/* The table's defaults of every limit (what a tool without server options applies). */
void opt_limits_defaults(struct opt_limits *l);

struct opt_server {
    char *listen;                /* "127.0.0.1:8080" */
    char *db;                    /* "./governor.db" */
    char *policies;              /* "./policies" */
    char *replay_policies;       /* more directories POST /v1/replay may load, ';'; NULL = none */
    char *token_file;            /* NULL = no auth */
    char *config;                /* the --config file, NULL = none */
    char *log_level;             /* "info" */
    int64_t max_body_bytes;      /* 1 MiB */
    int64_t max_header_bytes;    /* 16 KiB */
    int64_t read_timeout_ms;     /* 10 s */
    char *synchronous;           /* "FULL" | "NORMAL" | "OFF" */
    int max_batch;               /* decisions per group commit, 256 */
    int64_t wal_max_bytes;       /* SQLite's write-ahead log before the writer truncates it */
    char *sql_db;                /* what POST /v1/sql reads; NULL = db */
    int64_t sql_timeout_ms;      /* POST /v1/sql time limit, 2 s */
    int sql_max_rows;            /* 10000 */
    int64_t sql_max_bytes;       /* POST /v1/sql body, 8 MiB */
    int64_t sql_max_value;       /* one string or blob in a query, 4 MiB */
    int64_t audit_retention_ms;  /* 90 d; 0 = keep forever */
    int64_t sample_retention_ms; /* 0: as long as the decisions */
    int64_t plugin_instructions; /* Lua instruction budget per call */
    int64_t plugin_timeout_ms;   /* Lua wall-clock deadline per call */
    /* all the plugin calls of one decision together: instructions and wall clock */
    int64_t plugin_decision_instructions;
    int64_t plugin_decision_timeout_ms;
    int64_t plugin_memory_bytes; /* Lua memory cap per state */
    int metrics_max_jobs;        /* jobs with governor_job_* series in GET /metrics, 100 */
    struct opt_limits limits;    /* the request budget */
    int max_jobs_in_memory;      /* jobs whose state is held in memory, 10000 */
    bool strict_samples;         /* an unknown field of a sample is a 400, not a warning */
};

/* Fills s with the table's defaults (strings are new; opt_server_deinit frees). */
void opt_server_init(struct opt_server *s);
void opt_server_deinit(struct opt_server *s);
/* Sets a server option by its table name (`listen`, `db`, `max-body`, ...); -1 + *errp. */
int opt_server_set(struct opt_server *s, const char *key, const char *value, char **errp);
/*
 * Reads a `key = value` config file (# comments, blank lines). Server keys set s; job keys
 * (job.autoscaler.*, cluster keys) go to the OPT_SERVER layer of jobdefaults. -1 + *errp
 * naming file:line.
 */
int opt_server_load_file(struct opt_server *s, struct opt_job *jobdefaults, const char *path,
                         char **errp);

/* ------------------------------------------------------------------- output -- */

/* `governor options`: every row, name, type, default, range, help; wrapped at 100 columns. */
void opt_print_table(FILE *out);
/* True when name is a server option (a flag of `governor serve`). */
bool opt_server_known(const char *name);
/* `governor serve --help`: every server option as a flag, with type, default, range, help. */
void opt_print_server_flags(FILE *out);
/* docs/api.md's limits table (markdown): every bounded size of a request, its limit (a server
 * option's default, or a fixed value), the field a refusal names and the answer past it. */
void opt_print_limits_markdown(FILE *out);
/* docs/options.md's tables (markdown), generated from the same rows. */
void opt_print_markdown(FILE *out);

#endif
