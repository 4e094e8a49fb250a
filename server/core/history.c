/*
 * history.c - the scaling history per vertex, its retention, and the scaling-tracking
 * records that measure restart time (core/README.md, History).
 */
#include <stdlib.h>
#include <string.h>

#include "core/core_int.h"

struct core_vhistory *core__history_find(struct core_state *st, const char *id)
{
    for (int i = 0; i < st->n_hist; i++)
        if (strcmp(st->hist[i].id, id) == 0)
            return &st->hist[i];
    return NULL;
}

void core__history_trim(struct core_state *st, const struct core_topo *t,
                        const struct core_config *cfg, int64_t now)
{
    int64_t cutoff = core__time_sub(now, cfg->history_max_age_ms);
    int k = 0;
    for (int i = 0; i < st->n_hist; i++) {
        struct core_vhistory *h = &st->hist[i];
        /* Entries older than the cut-off go (exactly at it stay), then the oldest beyond
         * max.count. */
        int drop = 0;
        while (drop < h->n && h->e[drop].at < cutoff)
            drop++;
        int left = h->n - drop;
        if (left > cfg->history_max_count)
            drop += left - (cfg->history_max_count > 0 ? cfg->history_max_count : 0);
        if (drop > 0) {
            memmove(h->e, h->e + drop, (size_t)(h->n - drop) * sizeof *h->e);
            h->n -= drop;
        }
        /* Vertices no longer in the topology lose their history. */
        if (h->n == 0 || core__topo_find(t, h->id) < 0) {
            free(h->id);
            free(h->e);
            continue;
        }
        st->hist[k++] = *h;
    }
    st->n_hist = k;
}

void core__history_add(struct core_state *st, const char *id, const struct core_hist_entry *e)
{
    struct core_vhistory *h = core__history_find(st, id);
    int pos = h ? (int)(h - st->hist) : -1;
    core__history_add_at(st, &pos, id, e);
}

void core__history_add_at(struct core_state *st, int *pos, const char *id,
                          const struct core_hist_entry *e)
{
    struct core_vhistory *h = *pos >= 0 ? &st->hist[*pos] : NULL;
    if (!h) {
        core__grow(&st->hist, &st->cap_hist, st->n_hist + 1, sizeof *st->hist);
        *pos = st->n_hist;
        h = &st->hist[st->n_hist++];
        memset(h, 0, sizeof *h);
        h->id = core__strdup(id);
    }
    core__grow(&h->e, &h->cap, h->n + 1, sizeof *h->e);
    h->e[h->n++] = *e;
}

void core__history_forget(struct core_state *st, const char *id, int64_t at)
{
    struct core_vhistory *h = core__history_find(st, id);
    core__history_forget_at(st, h ? (int)(h - st->hist) : -1, at);
}

void core__history_forget_at(struct core_state *st, int pos, int64_t at)
{
    if (pos < 0)
        return;
    struct core_vhistory *h = &st->hist[pos];
    int k = 0;
    for (int i = 0; i < h->n; i++)
        if (h->e[i].at != at)
            h->e[k++] = h->e[i];
    h->n = k;
}

void core__tracking_forget(struct core_state *st, int64_t at)
{
    int k = 0;
    for (int i = 0; i < st->n_track; i++)
        if (st->track[i].at != at)
            st->track[k++] = st->track[i];
    st->n_track = k;
}

void core__tracking_add(struct core_state *st, int64_t now)
{
    core__grow(&st->track, &st->cap_track, st->n_track + 1, sizeof *st->track);
    st->track[st->n_track].at = now;
    st->track[st->n_track].restart_ms = -1;
    st->n_track++;
}

/* The history entry of vertex h taken exactly at time `at`, or NULL. */
static const struct core_hist_entry *entry_at(const struct core_vhistory *h, int64_t at)
{
    for (int i = 0; i < h->n; i++)
        if (h->e[i].at == at)
            return &h->e[i];
    return NULL;
}

void core__tracking_update(struct core_state *st, const struct core_sample *sm,
                           const struct core_topo *t, const struct core_config *cfg, int64_t now)
{
    if (st->n_track > 0) {
        struct core_tracking *last = &st->track[st->n_track - 1];
        /* Measured once the job runs at every parallelism the tracked decision asked for,
         * from the decision to the moment the job entered RUNNING again. A job that has not
         * restarted since (running_since before the decision) is not measured. */
        if (last->restart_ms < 0 && sm->running_since >= last->at) {
            bool all = true;
            for (int i = 0; i < st->n_hist && all; i++) {
                const struct core_hist_entry *e = entry_at(&st->hist[i], last->at);
                if (!e)
                    continue;
                int vi = core__topo_find(t, st->hist[i].id);
                if (vi < 0 || sm->vertices[vi].parallelism != e->new_parallelism)
                    all = false;
            }
            if (all)
                last->restart_ms = sm->running_since - last->at;
        }
    }
    /* Trim like history, but always keep the latest record. */
    int64_t cutoff = core__time_sub(now, cfg->history_max_age_ms);
    int drop = 0;
    while (drop < st->n_track - 1 && st->track[drop].at < cutoff)
        drop++;
    int left = st->n_track - drop;
    int maxc = cfg->history_max_count > 1 ? cfg->history_max_count : 1;
    if (left > maxc)
        drop += left - maxc;
    if (drop > 0) {
        memmove(st->track, st->track + drop, (size_t)(st->n_track - drop) * sizeof *st->track);
        st->n_track -= drop;
    }
}

int64_t core__restart_tracked(const struct core_state *st, const struct core_config *cfg)
{
    int64_t maxm = -1;
    for (int i = 0; i < st->n_track; i++)
        if (st->track[i].restart_ms > maxm)
            maxm = st->track[i].restart_ms;
    if (maxm < 0)
        return cfg->restart_time_ms;
    maxm = maxm / 1000 * 1000; /* whole seconds */
    return maxm < cfg->restart_tracking_limit_ms ? maxm : cfg->restart_tracking_limit_ms;
}

int64_t core__restart_time(const struct core_state *st, const struct core_config *cfg)
{
    return cfg->restart_tracking_enabled ? core__restart_tracked(st, cfg) : cfg->restart_time_ms;
}
