/*
 * cycle.h - what the files of one scaling cycle share (core/README.md, Cycle): its working
 * data, and the steps decide.c calls from execute.c. Internal to the core.
 */
#ifndef GOVERNOR_CORE_CYCLE_H
#define GOVERNOR_CORE_CYCLE_H

#include "core/core_int.h"

/* Per-cycle working data, all in the decision's arena. */
struct cycle {
    const struct core_sample *sm;
    const struct core_config *cfg;
    const struct core_hooks *h;
    struct core_state *st;
    struct core_decision *d;
    struct core_topo t;
    struct core_evaluated *ev; /* [n] by sample index */
    int *vd;                   /* sample index -> index in d->vertices */
    int *new_p;                /* [n] by sample index */
    bool *in_summary;          /* [n] changed and kept */
    bool *unscaled;            /* [n] excluded, or without the rates to compute a target */
    int *down_to;              /* [n] this cycle's scale-down proposal (0: none) */
    const char **sized_note;   /* [n] how the vertex was sized other than for what arrives */
    /* [n] by sample index: the vertex's position in st->hist and st->delayed (-1: none),
     * kept as they change, so no step searches them by id (core__map_state). */
    int *hist_of, *delayed_of;
    struct core_index excl;       /* cfg->exclude_ids, sorted */
    struct core_variability *var; /* [n] governor's measures of the window (evaluate.c) */
    struct core_plugin_err pe;
    bool backlog;
    int64_t now;
    const char *not_applied; /* the last executed scaling was not applied: why (arena) */
};

/* execute.c: the executors run in order (true: one vetoed); the executed scaling recorded as
 * history and pending; a pending scaling resolved by the sample that shows whether the job
 * applied it; the delayed scale-downs of a parallelism the job no longer runs at dropped. */
bool core__run_executors(struct cycle *c);
void core__record_execution(struct cycle *c);
void core__resolve_pending(struct cycle *c);
void core__forget_old_parallelism(struct cycle *c);

#endif
