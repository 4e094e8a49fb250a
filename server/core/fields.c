/*
 * fields.c - the core's field tables (see core.h): the evaluated figures (CORE_FIGURES), the
 * fields of a vertex's decision, and the constraints' names (CORE_CONSTRAINTS), as data for
 * every codec around the core (the response, the stored rows, the plugins' view), so that a
 * figure, a field or a constraint added to the core is one row; and the members of a
 * decision's response (core_dfields) and of its events (core_efields).
 */
#include <math.h>

#include "core/core.h"

const struct core_figure core_figures[] = {
#define ROW(name, lo, hi, flags) {#name, offsetof(struct core_evaluated, name), lo, hi, flags},
    CORE_FIGURES(ROW)
#undef ROW
};

/* Every member of struct core_evaluated is a figure of the table. */
_Static_assert(sizeof core_figures / sizeof core_figures[0] == CORE_N_FIGURES,
               "struct core_evaluated holds only the doubles of CORE_FIGURES");

void core_evaluated_clear(struct core_evaluated *ev)
{
    for (int i = 0; i < CORE_N_FIGURES; i++)
        *core_figure_at(ev, i) = NAN;
}

const struct core_vfield core_vfields[] = {
#define ROW(name, type)                                                                            \
    {                                                                                              \
#name, type, offsetof(struct core_vdecision, name)                                         \
    }
    ROW(id, CORE_VF_TEXT),
    ROW(current, CORE_VF_INT),
    ROW(target, CORE_VF_INT),
    ROW(raw_target, CORE_VF_INT),
    ROW(reason, CORE_VF_REASON),
    ROW(constraints, CORE_VF_CONSTRAINTS),
    ROW(excluded, CORE_VF_BOOL),
    ROW(outside_bounds, CORE_VF_BOOL),
    ROW(message, CORE_VF_TEXT),
    /* the figures come last: a reader of a vertex sees its outcome first */
    {"evaluated", CORE_VF_EVALUATED, offsetof(struct core_vdecision, ev)},
#undef ROW
};
const int core_n_vfields = (int)(sizeof core_vfields / sizeof core_vfields[0]);

#define DOFF(f) offsetof(struct core_decision, f)
const struct core_dfield core_dfields[] = {
    {"job", CORE_DF_ARG, CORE_DS_COLUMN, 0, 0, CORE_DARG_JOB},
    {"at", CORE_DF_INT64, CORE_DS_COLUMN, DOFF(at), 0, 0},
    {"action", CORE_DF_ACTION, CORE_DS_COLUMN, DOFF(action), 0, 0},
    {"execute", CORE_DF_BOOL, CORE_DS_COLUMN, DOFF(execute), 0, 0},
    {"reason", CORE_DF_REASON, CORE_DS_COLUMN, DOFF(reason), 0, 0},
    {"message", CORE_DF_TEXT, CORE_DS_COLUMN, DOFF(message), 0, 0},
    {"parallelism", CORE_DF_TARGETS, CORE_DS_ROWS, 0, 0, 0},
    {"vertices", CORE_DF_VERTICES, CORE_DS_ROWS, 0, 0, 0},
    {"events", CORE_DF_EVENTS, CORE_DS_ROWS, 0, 0, 0},
    /* memory tuning's overrides and removals (core/README.md, Memory tuning) */
    {"config_changes", CORE_DF_KVS, CORE_DS_REST, DOFF(config_changes), DOFF(n_config_changes), 0},
    {"config_removals", CORE_DF_TEXTS, CORE_DS_REST, DOFF(config_removals), DOFF(n_config_removals),
     0},
    {"policy_revision", CORE_DF_ARG, CORE_DS_COLUMN, 0, 0, CORE_DARG_REVISION},
    {"config_hash", CORE_DF_ARG, CORE_DS_COLUMN, 0, 0, CORE_DARG_HASH},
};
#undef DOFF
const int core_n_dfields = (int)(sizeof core_dfields / sizeof core_dfields[0]);

const struct core_efield core_efields[] = {
    {"type", CORE_EF_TEXT, offsetof(struct core_event, type)},
    {"reason", CORE_EF_TEXT, offsetof(struct core_event, reason)},
    {"message", CORE_EF_TEXT0, offsetof(struct core_event, message)},
    {"count", CORE_EF_INT, offsetof(struct core_event, count)},
    {"suppressed", CORE_EF_BOOL, offsetof(struct core_event, suppressed)},
};
const int core_n_efields = (int)(sizeof core_efields / sizeof core_efields[0]);

const char *core_constraint_name(int bit)
{
    static const char *const names[CORE_C__COUNT] = {
#define NAME(name) #name,
        CORE_CONSTRAINTS(NAME)
#undef NAME
    };
    return bit >= 0 && bit < CORE_C__COUNT ? names[bit] : "?";
}
