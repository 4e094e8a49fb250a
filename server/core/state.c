/*
 * state.c - creation and release of a job's autoscaler state (the layout is in state.h).
 */
#include <stdlib.h>
#include <string.h>

#include "core/core_int.h"

struct core_state *core_state_new(void)
{
    struct core_state *s = core__xcalloc(1, sizeof *s);
    s->last_at = INT64_MIN;
    s->w.running_since = s->w.started_at = s->w.full_from = INT64_MIN;
    s->pending.at = INT64_MIN;
    return s;
}

/* Releases the window's samples and topology, leaving it empty. */
void core__window_free(struct core_window *w)
{
    int64_t next = w->seq0 + w->n; /* numbers are never reused */
    for (int i = 0; i < w->n; i++)
        free(w->s[i].v);
    free(w->s);
    for (int i = 0; i < w->n_vertices; i++)
        free(w->ids[i]);
    free(w->ids);
    free(w->parallelism);
    free(w->ctr);
    memset(w, 0, sizeof *w);
    w->running_since = w->started_at = w->full_from = INT64_MIN;
    w->seq0 = next;
}

/* Forgets the pending scaling (core/README.md, Cycle: applied or not). */
void core__pending_clear(struct core_state *s)
{
    for (int i = 0; i < s->pending.n; i++)
        free(s->pending.v[i].id);
    s->pending.n = 0;
    s->pending.at = INT64_MIN;
}

static void release(struct core_state *s)
{
    core__window_free(&s->w);
    for (int i = 0; i < s->n_hist; i++) {
        free(s->hist[i].id);
        free(s->hist[i].e);
    }
    free(s->hist);
    free(s->track);
    for (int i = 0; i < s->n_delayed; i++) {
        free(s->delayed[i].id);
        free(s->delayed[i].r);
    }
    free(s->delayed);
    for (int i = 0; i < s->n_events; i++)
        free(s->events[i].key);
    free(s->events);
    core__pending_clear(s);
    free(s->pending.v);
}

void core_state_free(struct core_state *s)
{
    if (!s)
        return;
    release(s);
    free(s);
}

void core_state_clear(struct core_state *s)
{
    int64_t last = s->last_at, next = s->w.seq0 + s->w.n;
    release(s);
    memset(s, 0, sizeof *s);
    s->w.seq0 = next;
    s->w.running_since = s->w.started_at = s->w.full_from = INT64_MIN;
    s->pending.at = INT64_MIN;
    s->last_at = last;
}

int64_t core_state_last_at(const struct core_state *s)
{
    return s->last_at;
}
