/*
 * fields.c - the core's field tables (see core.h): the evaluated figures (CORE_FIGURES), the
 * fields of a vertex's decision, and the constraints' names (CORE_CONSTRAINTS), as data for
 * every codec around the core (the response, the stored rows, the plugins' view), so that a
 * figure, a field or a constraint added to the core is one row.
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

const char *core_constraint_name(int bit)
{
    static const char *const names[CORE_C__COUNT] = {
#define NAME(name) #name,
        CORE_CONSTRAINTS(NAME)
#undef NAME
    };
    return bit >= 0 && bit < CORE_C__COUNT ? names[bit] : "?";
}
