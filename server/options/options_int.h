/*
 * options_int.h - what the files of options/ share, internal to them: the table's row and its
 * types (options_table.c holds the rows), the knobs' maps, and the helpers of parsing
 * (options.c) that layering (options_job.c) and printing (options_print.c) use.
 */
#ifndef GOVERNOR_OPTIONS_INT_H
#define GOVERNOR_OPTIONS_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "options/options.h"

#define MS_S 1000LL
#define MS_M (60 * MS_S)
#define MS_H (60 * MS_M)
#define MS_D (24 * MS_H)
#define KIB  1024LL
#define MIB  (1024 * KIB)
#define GIB  (1024 * MIB)
#define TIB  (1024 * GIB)

enum scope { S_JOB, S_CLUSTER, S_SERVER };
enum type { T_BOOL, T_INT, T_DOUBLE, T_DURATION, T_MEMORY, T_ENUM, T_LIST, T_STRING, T_TZ };
/* Where a parsed value lands: a field of struct core_config (JOB, CLUSTER rows) or of struct
 * opt_server (SERVER rows), by offset; or an apply hook. */
enum land {
    L_NONE,   /* accepted, not read by the core */
    L_BOOL,   /* bool */
    L_INT,    /* int */
    L_I64,    /* int64_t: ms, bytes or a count; unset = -1 */
    L_DOUBLE, /* double; unset = NaN */
    L_DMEM,   /* double holding bytes (quota.memory); unset = NaN */
    L_STR,    /* core_config: borrowed const char *; opt_server: owned char *, "" = NULL */
    L_LIST,   /* const char *const * at off, int count at off2 */
    L_HOOK,   /* the row's apply hook */
};

/* Row flags. */
#define F_OPTIONAL   (1u << 0) /* no default: "" means unset */
#define F_DEPRECATED (1u << 1)
#define F_OPEN       (1u << 2) /* enum: any other name selects a plugin of that name */
#define F_NAMES      (1u << 3) /* list of plugin names */
#define MAX_PLUGINS  16        /* different names in an F_NAMES list */
#define F_PERIODS    (1u << 4) /* excluded-period syntax, checked with cron_validate */
#define F_CASE       (1u << 5) /* enum values match with exact case */
#define F_NONEMPTY   (1u << 6) /* optional, but a value given must not be empty */

/* A parsed value. */
struct val {
    bool unset;
    bool b;
    int64_t i;
    double d;
    int e; /* enum: index into values, -1 = a plugin name (F_OPEN) */
};

struct opt_row;
/* A row's apply hook: lands v (text, from layer) in c; j is the job being resolved. */
typedef void (*apply_fn)(struct core_config *c, const struct opt_row *r, const struct val *v,
                         const char *text, enum opt_layer layer, const struct opt_job *j);

struct opt_row {
    const char *name; /* canonical */
    enum scope scope;
    enum type type;
    const char *def; /* default as display text; "" = none */
    double min, max;
    unsigned char has_min, has_max; /* 0 none, 1 inclusive, 2 exclusive */
    unsigned flags;
    const char *const *values; /* T_ENUM: allowed values, NULL-terminated */
    const char *alias;         /* deprecated alias (full key), NULL = none */
    const char *gate; /* range checked only when this bool row is true (core/README.md, Options) */
    const char *help;
    enum land land;
    size_t off, off2;
    apply_fn apply;
    const char *gov_def; /* a number that follows governor.profile: its value under the
                            governor profile when unset (none under flink) */
};

extern const struct opt_row opt__rows[];
extern const int opt__n_rows;
#define N_ROWS opt__n_rows

#define JOB_PREFIX    "job.autoscaler."
#define LEGACY_PREFIX "kubernetes.operator."
#define GOV_PREFIX    "governor."
/* Plugin parameter prefixes: `<prefix><name>.<param>` is kept verbatim. */
extern const char *const opt__plugin_prefixes[];
extern const int opt__n_plugin_prefixes;

/*
 * Dataflow's knobs (docs/flink.md, docs/keda.md): what each knob row sets. A knob's
 * value in a layer is the value of each option it maps onto in that same layer, unless that option
 * is itself set there (a canonical spelling wins over another, as for aliases); the highest layer
 * still wins per option. The mapped values are computed when a knob or the slots row changes
 * (knobs_refresh), so that reading an option stays a lookup.
 */
enum knob_fn {
    KNOB_SAME,        /* the knob's text */
    KNOB_TIMES_SLOTS, /* workers x taskmanager.numberOfTaskSlots (effective) */
    KNOB_ALGORITHM,   /* THROUGHPUT_BASED -> true, NONE -> false */
};

struct knob_map {
    const char *knob, *target;
    enum knob_fn fn;
};
extern const struct knob_map opt__knob_maps[];
extern const int opt__n_knob_maps;
#define N_KNOB_MAPS opt__n_knob_maps
#define SLOTS_KEY   "taskmanager.numberOfTaskSlots"

/* Sets *errp (when errp is given) to a new formatted message and returns -1. */
int opt__fail(char **errp, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
char *opt__trim_dup(const char *s);
bool opt__starts_with(const char *s, const char *prefix);
int opt__parse_int64(const char *t, int64_t *out);
void opt__fmt_interval(char *buf, size_t n, const struct opt_row *r, double lo, int has_lo,
                       double hi, int has_hi);
void opt__fmt_range(char *buf, size_t n, const struct opt_row *r);
bool opt__is_plugin_name(const char *s, size_t n);
bool opt__in_range(const struct opt_row *r, double x);
int opt__parse_row_value(const struct opt_row *r, const char *t, struct val *v, char **errp);
/* What a key the user wrote refers to. */
struct key_ref {
    int row;         /* index into opt__rows, -1 = not a row */
    const char *key; /* canonical spelling of a non-row key (points into the given key) */
    int rank;
    bool ignored;
};

int opt__lookup_job_key(const char *key, struct key_ref *ref);
void opt__land_value(void *base, const struct opt_row *r, const struct val *v, const char *text,
                     enum opt_layer layer, struct opt_job *j, int row);
const struct opt_row *opt__row_by_name(const char *name, int *index);
bool opt__adjust_mode_set(const struct opt_job *j);
/* The hooks of the rows that follow governor.profile (opt_config_set_profile applies them). */
void opt__apply_safeguard(struct core_config *c, const struct opt_row *r, const struct val *v,
                          const char *text, enum opt_layer layer, const struct opt_job *j);
void opt__apply_profile_double(struct core_config *c, const struct opt_row *r, const struct val *v,
                               const char *text, enum opt_layer layer, const struct opt_job *j);
void opt__apply_profile_int(struct core_config *c, const struct opt_row *r, const struct val *v,
                            const char *text, enum opt_layer layer, const struct opt_job *j);

#endif
