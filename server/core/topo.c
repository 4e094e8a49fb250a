/*
 * topo.c - the sample's topology (core/README.md, Topology): validation of ids, parallelisms
 * and inputs,
 * and a stable topological order by Kahn's algorithm. Everything built here lives in the
 * decision's arena (core__alloc), so it is released with the decision. Every step is linear in
 * vertices and edges, or n log n (the sorted ids, the ready heap): no pairwise comparison.
 */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "core/core_int.h"

/* Index of vertex id in the sample t was built from (NULL id or absent: -1): a binary search
 * of its sorted ids. */
int core__topo_find(const struct core_topo *t, const char *id)
{
    return core_index_find(&t->ids, id);
}

/* Field-level checks of each vertex and its inputs, before any graph work. */
static int check_vertices(const struct core_sample *sm, const struct core_topo *t, char *err,
                          size_t err_len)
{
    for (int i = 0; i < sm->n_vertices; i++) {
        const struct core_vertex_in *v = &sm->vertices[i];
        if (!v->id || !v->id[0]) {
            snprintf(err, err_len, "vertices[%d].id: missing", i);
            return -1;
        }
        int first = core__topo_find(t, v->id);
        if (first != i) {
            snprintf(err, err_len, "vertices[%d].id: duplicate id \"%s\"", i, v->id);
            return -1;
        }
        if (v->parallelism < 1) {
            snprintf(err, err_len, "vertices[%d].parallelism: %d must be >= 1", i, v->parallelism);
            return -1;
        }
        if (v->max_parallelism < 1) {
            snprintf(err, err_len, "vertices[%d].max_parallelism: %d must be >= 1", i,
                     v->max_parallelism);
            return -1;
        }
        if (v->parallelism > v->max_parallelism) {
            snprintf(err, err_len, "vertices[%d].parallelism: %d exceeds max_parallelism %d", i,
                     v->parallelism, v->max_parallelism);
            return -1;
        }
        if (v->n_inputs < 0 || (v->n_inputs > 0 && !v->inputs)) {
            snprintf(err, err_len, "vertices[%d].inputs: malformed", i);
            return -1;
        }
    }
    /* Inputs after all ids are known to be unique, so a duplicate id is reported as such
     * even when an earlier vertex names it. */
    for (int i = 0; i < sm->n_vertices; i++) {
        const struct core_vertex_in *v = &sm->vertices[i];
        for (int k = 0; k < v->n_inputs; k++) {
            const char *from = v->inputs[k].from;
            if (core__topo_find(t, from) < 0) {
                snprintf(err, err_len, "vertices[%d].inputs[%d].from: unknown vertex \"%s\"", i, k,
                         from ? from : "");
                return -1;
            }
        }
    }
    return 0;
}

/*
 * Names the vertices of a cycle. Kahn's leftovers include vertices merely downstream of a
 * cycle; peeling off, repeatedly, leftovers none of whose outputs lead to another leftover
 * keeps only vertices on (or between) cycles, which is what a user needs to look at. The
 * peeling is Kahn's algorithm backwards over the leftovers: each vertex's outputs to other
 * leftovers are counted once, and a vertex whose count drops to 0 goes, so the work is
 * linear in vertices and edges.
 */
static void describe_cycle(const struct core_sample *sm, const struct core_topo *t,
                           struct core_decision *d, bool *left, char *err, size_t err_len)
{
    int n = t->n;
    size_t nn = (size_t)(n ? n : 1);
    int *feeds = core__alloc(d, nn * sizeof *feeds); /* outputs to leftovers */
    int *queue = core__alloc(d, nn * sizeof *queue);
    int head = 0, tail = 0;
    for (int v = 0; v < n; v++)
        if (left[v])
            for (int k = t->in_start[v]; k < t->in_start[v + 1]; k++)
                if (left[t->in_src[k]])
                    feeds[t->in_src[k]]++;
    for (int u = 0; u < n; u++)
        if (left[u] && feeds[u] == 0)
            queue[tail++] = u;
    while (head < tail) {
        int v = queue[head++];
        left[v] = false;
        for (int k = t->in_start[v]; k < t->in_start[v + 1]; k++) {
            int u = t->in_src[k];
            if (left[u] && --feeds[u] == 0)
                queue[tail++] = u;
        }
    }
    size_t pos = (size_t)snprintf(err, err_len, "vertices: cycle through ");
    bool first = true;
    for (int u = 0; u < n && pos < err_len; u++) {
        if (!left[u])
            continue;
        pos += (size_t)snprintf(err + pos, err_len - pos, "%s\"%s\"", first ? "" : ", ",
                                sm->vertices[u].id);
        first = false;
    }
}

/* The ready set of Kahn's algorithm: a binary min-heap of sample indices, so the lowest ready
 * index comes out first in log n. */
static void heap_push(int *h, int *n, int x)
{
    int i = (*n)++;
    while (i > 0 && h[(i - 1) / 2] > x) {
        h[i] = h[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    h[i] = x;
}

static int heap_pop(int *h, int *n)
{
    int top = h[0], x = h[--*n], i = 0;
    for (;;) {
        int c = 2 * i + 1;
        if (c >= *n)
            break;
        if (c + 1 < *n && h[c + 1] < h[c])
            c++;
        if (h[c] >= x)
            break;
        h[i] = h[c];
        i = c;
    }
    if (*n > 0)
        h[i] = x;
    return top;
}

/*
 * Validates sm and builds t in d's arena (see core_int.h). The order is Kahn's algorithm
 * where, among the vertices that are ready, the one listed first in the sample goes first:
 * a sample already in topological order keeps its order, so responses list vertices the
 * way the client sent them whenever that is possible. Returns -1 with err naming the field
 * (e.g. `vertices[2].inputs[0].from: unknown vertex "x"`); t is then unspecified.
 */
int core__topo_build(const struct core_sample *sm, struct core_decision *d, struct core_topo *t,
                     char *err, size_t err_len)
{
    int n = sm->n_vertices;
    memset(t, 0, sizeof *t);
    if (err_len)
        err[0] = '\0';
    if (n < 0 || (n > 0 && !sm->vertices)) {
        snprintf(err, err_len, "vertices: malformed");
        return -1;
    }
    size_t nn = (size_t)(n ? n : 1);
    core_index_build(&t->ids, sm->vertices, sizeof *sm->vertices,
                     offsetof(struct core_vertex_in, id), n, core__alloc(d, nn * sizeof(int)),
                     core__alloc(d, nn * sizeof(int)));
    if (check_vertices(sm, t, err, err_len) < 0)
        return -1;

    int edges = 0;
    for (int i = 0; i < n; i++)
        edges += sm->vertices[i].n_inputs;
    size_t ne = (size_t)(edges ? edges : 1);
    t->n = n;
    t->order = core__alloc(d, nn * sizeof *t->order);
    t->in_start = core__alloc(d, (nn + 1) * sizeof *t->in_start);
    t->in_src = core__alloc(d, ne * sizeof *t->in_src);
    t->in_ship = core__alloc(d, ne * sizeof *t->in_ship);
    t->n_outputs = core__alloc(d, nn * sizeof *t->n_outputs);
    t->is_source = core__alloc(d, nn * sizeof *t->is_source);
    t->hash_input = core__alloc(d, nn * sizeof *t->hash_input);

    int e = 0;
    for (int i = 0; i < n; i++) {
        const struct core_vertex_in *v = &sm->vertices[i];
        t->in_start[i] = e;
        t->is_source[i] = v->n_inputs == 0;
        for (int k = 0; k < v->n_inputs; k++) {
            int u = core__topo_find(t, v->inputs[k].from);
            t->in_src[e] = u;
            t->in_ship[e] = v->inputs[k].ship;
            t->n_outputs[u]++;
            if (v->inputs[k].ship == CORE_SHIP_HASH)
                t->hash_input[i] = true;
            e++;
        }
    }
    t->in_start[n] = e;

    /* The outputs of each vertex (CSR, by destination), so emitting a vertex touches only
     * its own edges. */
    int *out_start = core__alloc(d, (nn + 1) * sizeof *out_start);
    int *out_dst = core__alloc(d, ne * sizeof *out_dst);
    for (int u = 0; u < n; u++)
        out_start[u + 1] = out_start[u] + t->n_outputs[u];
    int *fill = core__alloc(d, nn * sizeof *fill);
    for (int v = 0; v < n; v++)
        for (int k = t->in_start[v]; k < t->in_start[v + 1]; k++) {
            int u = t->in_src[k];
            out_dst[out_start[u] + fill[u]++] = v;
        }

    /* Kahn: pending[i] = inputs of i not yet emitted; the lowest ready index goes next. */
    int *pending = core__alloc(d, nn * sizeof *pending);
    bool *done = core__alloc(d, nn * sizeof *done);
    int *ready = core__alloc(d, nn * sizeof *ready), n_ready = 0;
    for (int i = 0; i < n; i++) {
        pending[i] = t->in_start[i + 1] - t->in_start[i];
        if (pending[i] == 0)
            heap_push(ready, &n_ready, i);
    }
    int emitted = 0;
    while (n_ready > 0) {
        int next = heap_pop(ready, &n_ready);
        done[next] = true;
        t->order[emitted++] = next;
        for (int k = out_start[next]; k < out_start[next + 1]; k++)
            if (--pending[out_dst[k]] == 0)
                heap_push(ready, &n_ready, out_dst[k]);
    }
    if (emitted < n) {
        bool *left = core__alloc(d, nn * sizeof *left);
        for (int i = 0; i < n; i++)
            left[i] = !done[i];
        describe_cycle(sm, t, d, left, err, err_len);
        return -1;
    }
    return 0;
}

void core__topo_window(struct core_topo *t, const struct core_window *w, struct core_decision *d)
{
    size_t nn = (size_t)(t->n ? t->n : 1), nw = (size_t)(w->n_vertices ? w->n_vertices : 1);
    t->s2w = core__alloc(d, nn * sizeof *t->s2w);
    t->w2s = core__alloc(d, nw * sizeof *t->w2s);
    t->n_w = w->n_vertices;
    for (int i = 0; i < t->n; i++)
        t->s2w[i] = -1;
    for (int wi = 0; wi < w->n_vertices; wi++) {
        int i = t->w2s[wi] = core__topo_find(t, w->ids[wi]);
        if (i >= 0 && t->s2w[i] < 0)
            t->s2w[i] = wi;
    }
}

int core__topo_wi(const struct core_topo *t, const struct core_window *w,
                  const struct core_sample *sm, int i)
{
    if (t->s2w && t->n_w == w->n_vertices)
        return t->s2w[i];
    /* Unmapped: the same position first (a client lists its vertices in the same order
     * sample after sample), else a scan. */
    const char *id = sm->vertices[i].id;
    if (i < w->n_vertices && strcmp(w->ids[i], id) == 0)
        return i;
    return core__window_index(w, id);
}

int core__topo_si(const struct core_topo *t, const struct core_window *w,
                  const struct core_sample *sm, int wi)
{
    if (t->w2s && t->n_w == w->n_vertices)
        return t->w2s[wi];
    if (wi < sm->n_vertices && strcmp(sm->vertices[wi].id, w->ids[wi]) == 0)
        return wi;
    return core__topo_find(t, w->ids[wi]);
}
