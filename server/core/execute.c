/*
 * execute.c - the end of a scaling cycle (core/README.md, Cycle): the executor plugins run in
 * order, an executed scaling recorded as history and pending, and, on the next running sample,
 * whether the job applied it; a restart drops what belonged to a parallelism it left.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/cycle.h"

/* A reason that explains a move up. */
static bool up_reason_code(enum core_reason r)
{
    return r == CORE_R_HIGH_BACKLOG || r == CORE_R_HIGH_UTILIZATION ||
           r == CORE_R_KEY_PARALLELISM_LIMIT;
}

/* Runs the executors in order; returns true when one vetoed. */
bool core__run_executors(struct cycle *c)
{
    const struct core_config *cfg = c->cfg;
    struct core_decision *d = c->d;
    if (!c->h || !c->h->execute)
        return false;
    int *before = core__alloc(d, (size_t)d->n_vertices * sizeof *before);
    for (int x = 0; x < cfg->n_executors; x++) {
        const char *name = cfg->executors[x];
        for (int k = 0; k < d->n_vertices; k++)
            before[k] = d->vertices[k].target;
        bool veto = false;
        char err[512] = "";
        if (c->h->execute(c->h->ud, name, d, c->now, &veto, err, sizeof err) < 0) {
            core__plugin_fail(&c->pe, name, err);
            for (int k = 0; k < d->n_vertices; k++)
                d->vertices[k].target = before[k];
            continue;
        }
        if (veto) {
            for (int k = 0; k < d->n_vertices; k++)
                d->vertices[k].target = before[k];
            core__event(d, "Warning", "ScalingVetoed", core__asprintf(d, "ScalingVetoed:%s", name),
                        "Scaling vetoed by custom executor %s%s%s", name, err[0] ? ": " : "", err);
            d->message =
                core__asprintf(d, "vetoed by executor %s%s%s", name, err[0] ? ": " : "", err);
            return true;
        }
        /* Keep what the executor changed within [1, max_parallelism]. */
        for (int k = 0; k < d->n_vertices; k++) {
            struct core_vdecision *v = &d->vertices[k];
            int i = c->t.order[k];
            int maxp = c->sm->vertices[i].max_parallelism;
            if (v->target < 1)
                v->target = 1;
            if (maxp > 0 && v->target > maxp)
                v->target = maxp;
            if (v->target != before[k]) {
                v->constraints |= CORE_C_CHANGED_BY_EXECUTOR;
                c->new_p[i] = v->target;
                c->in_summary[i] = v->target != v->current;
                /* What the new parallelism is expected to process, as for a native move
                 * (Scaling step 10), so that the report prints no undefined figure. */
                v->ev.expected_processing_rate =
                    v->target == v->current
                        ? NAN
                        : core__round3(v->ev.true_processing_rate / v->current * v->target);
                /* The executor's move, and the native one it replaces when there was one. */
                v->message =
                    core__asprintf(d, "%s: %d -> %d set by executor %s%s%s%s", v->id, v->current,
                                   v->target, name, v->message ? " (natively: " : "",
                                   v->message ? v->message : "", v->message ? ")" : "");
                /* A move against the native reason's direction takes its direction's. */
                bool up = v->target > v->current, down = v->target < v->current;
                if (up && !up_reason_code(v->reason))
                    v->reason = CORE_R_HIGH_UTILIZATION;
                else if (down && v->reason != CORE_R_LOW_UTILIZATION &&
                         v->reason != CORE_R_LIMIT_REACHED)
                    v->reason = CORE_R_LOW_UTILIZATION;
                else if (!up && !down &&
                         (up_reason_code(v->reason) || v->reason == CORE_R_LOW_UTILIZATION))
                    v->reason = CORE_R_WITHIN_TARGET; /* the executor keeps it */
            }
        }
    }
    return false;
}

/* The executed scaling goes into the history and tracking, and is pending until the next
 * running sample shows whether the job applied it (core/README.md, Cycle step 14). */
void core__record_execution(struct cycle *c)
{
    struct core_decision *d = c->d;
    struct core_pending *pd = &c->st->pending;
    core__pending_clear(c->st);
    pd->at = c->now;
    for (int k = 0; k < d->n_vertices; k++) {
        const struct core_vdecision *v = &d->vertices[k];
        if (v->target == v->current)
            continue;
        int i = c->t.order[k];
        struct core_hist_entry e = {
            .at = c->now,
            .current_parallelism = v->current,
            .new_parallelism = v->target,
            .true_processing_rate = v->ev.true_processing_rate,
            .expected_processing_rate = v->ev.expected_processing_rate,
            .target_data_rate = v->ev.target_data_rate,
        };
        core__history_add_at(c->st, &c->hist_of[i], v->id, &e);
        core__grow(&pd->v, &pd->cap, pd->n + 1, sizeof *pd->v);
        pd->v[pd->n++] = (struct core_pending_vertex){core__strdup(v->id), v->current, v->target};
    }
    core__tracking_add(c->st, c->now);
}

/* "agg 2 -> 4, src 2 -> 3": the moves of the pending scaling (arena). */
static const char *pending_moves(struct cycle *c)
{
    const struct core_pending *pd = &c->st->pending;
    size_t cap = 16;
    for (int k = 0; k < pd->n; k++)
        cap += strlen(pd->v[k].id) + 32;
    char *buf = core__alloc(c->d, cap);
    size_t off = 0;
    for (int k = 0; k < pd->n; k++)
        off += (size_t)snprintf(buf + off, cap - off, "%s%s %d -> %d", k ? ", " : "", pd->v[k].id,
                                pd->v[k].from, pd->v[k].to);
    return buf;
}

/*
 * Did the job apply the last executed scaling (core/README.md, Cycle: applied or not)? The
 * first running sample after it tells: applied when every vertex it changed runs at its new
 * parallelism. Then what waited on the old parallelisms (delayed scale-downs) is dropped, as
 * the reference drops it when it executes. Otherwise the decision says so with a
 * ScalingNotApplied warning, and the history and tracking forget the scaling, which did not
 * happen; a delayed scale-down it executed is still due.
 */
void core__resolve_pending(struct cycle *c)
{
    struct core_state *st = c->st;
    struct core_pending *pd = &st->pending;
    if (pd->at == INT64_MIN)
        return;
    size_t cap = 16;
    for (int k = 0; k < pd->n; k++)
        cap += strlen(pd->v[k].id) + 48;
    char *runs = core__alloc(c->d, cap);
    size_t off = 0;
    bool applied = true;
    for (int k = 0; k < pd->n; k++) {
        int i = core__topo_find(&c->t, pd->v[k].id);
        int now_p = i < 0 ? 0 : c->sm->vertices[i].parallelism;
        if (now_p == pd->v[k].to)
            continue;
        applied = false;
        if (i < 0)
            off += (size_t)snprintf(runs + off, cap - off, "%sno longer has %s", off ? ", " : "",
                                    pd->v[k].id);
        else
            off += (size_t)snprintf(runs + off, cap - off, "%sruns %s at %d", off ? ", " : "",
                                    pd->v[k].id, now_p);
    }
    char when[32];
    core__fmt_utc(when, sizeof when, pd->at);
    const char *moves = pending_moves(c);
    if (applied) {
        core__event(c->d, "Normal", "ScalingApplied", NULL,
                    "The scaling decided at %s was applied: %s", when, moves);
        core__delayed_clear_all(st);
        core__unapplied_clear(st);
    } else {
        /* governor.not-applied.max: the same scaling not applied again counts on. */
        struct core_unapplied *u = &st->unapplied;
        bool same = u->count > 0 && u->n == pd->n;
        for (int k = 0; same && k < pd->n; k++)
            same = strcmp(u->v[k].id, pd->v[k].id) == 0 && u->v[k].from == pd->v[k].from &&
                   u->v[k].to == pd->v[k].to;
        if (same) {
            u->count++;
        } else {
            core__unapplied_clear(st);
            core__grow(&u->v, &u->cap, pd->n, sizeof *u->v);
            for (int k = 0; k < pd->n; k++)
                u->v[k] = (struct core_pending_vertex){core__strdup(pd->v[k].id), pd->v[k].from,
                                                       pd->v[k].to};
            u->n = pd->n;
            u->count = 1;
        }
        c->not_applied = core__asprintf(c->d,
                                        "the scaling decided at %s (%s) was not applied: the "
                                        "job %s",
                                        when, moves, runs);
        core__event(c->d, "Warning", "ScalingNotApplied",
                    core__asprintf(c->d, "ScalingNotApplied:%s", moves),
                    "The scaling decided at "
                    "%s (%s) was not applied: "
                    "the job %s",
                    when, moves, runs);
        /* A vertex no longer in the sample loses its history at the trim that follows. */
        for (int k = 0; k < pd->n; k++) {
            int i = core__topo_find(&c->t, pd->v[k].id);
            if (i >= 0)
                core__history_forget_at(st, c->hist_of[i], pd->at);
        }
        core__tracking_forget(st, pd->at);
    }
    core__pending_clear(st);
}

/*
 * A restart drops what belonged to a parallelism the job no longer runs at: the delayed
 * scale-downs of a vertex whose parallelism changed or that is gone (core/README.md, Gating).
 * Called before the window restarts, while it still holds the old parallelisms.
 */
void core__forget_old_parallelism(struct cycle *c)
{
    struct core_state *st = c->st;
    for (int k = 0; k < st->n_delayed;) {
        const char *id = st->delayed[k].id;
        int i = core__topo_find(&c->t, id),
            wi = i >= 0 ? core__topo_wi(&c->t, &st->w, c->sm, i) : -1;
        if (i >= 0 && wi >= 0 && st->w.parallelism[wi] == c->sm->vertices[i].parallelism) {
            k++;
            continue;
        }
        core__delayed_clear_at(st, k); /* moves the last entry into slot k */
    }
}
