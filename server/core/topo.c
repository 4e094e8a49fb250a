/*
 * topo.c - the sample's topology (core/README.md, Topology): validation of ids, parallelisms
 * and inputs,
 * and a stable topological order by Kahn's algorithm. Everything built here lives in the
 * decision's arena (core__alloc), so it is released with the decision.
 */
#include <stdio.h>
#include <string.h>

#include "core/core_int.h"

/* Index of vertex id in sm (linear scan; NULL id or absent: -1). */
int core__topo_find(const struct core_sample *sm, const char *id)
{
    if (!id)
        return -1;
    for (int i = 0; i < sm->n_vertices; i++)
        if (sm->vertices[i].id && strcmp(sm->vertices[i].id, id) == 0)
            return i;
    return -1;
}

/* Field-level checks of each vertex and its inputs, before any graph work. */
static int check_vertices(const struct core_sample *sm, char *err, size_t err_len)
{
    for (int i = 0; i < sm->n_vertices; i++) {
        const struct core_vertex_in *v = &sm->vertices[i];
        if (!v->id || !v->id[0]) {
            snprintf(err, err_len, "vertices[%d].id: missing", i);
            return -1;
        }
        int first = core__topo_find(sm, v->id);
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
            if (core__topo_find(sm, from) < 0) {
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
 * keeps only vertices on (or between) cycles, which is what a user needs to look at.
 */
static void describe_cycle(const struct core_sample *sm, const struct core_topo *t, bool *left,
                           char *err, size_t err_len)
{
    int n = t->n;
    bool changed = true;
    while (changed) {
        changed = false;
        for (int u = 0; u < n; u++) {
            if (!left[u])
                continue;
            bool feeds_left = false;
            for (int v = 0; v < n && !feeds_left; v++) {
                if (!left[v])
                    continue;
                for (int k = t->in_start[v]; k < t->in_start[v + 1]; k++)
                    if (t->in_src[k] == u) {
                        feeds_left = true;
                        break;
                    }
            }
            if (!feeds_left) {
                left[u] = false;
                changed = true;
            }
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
    if (check_vertices(sm, err, err_len) < 0)
        return -1;

    int edges = 0;
    for (int i = 0; i < n; i++)
        edges += sm->vertices[i].n_inputs;
    size_t nn = (size_t)(n ? n : 1);
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
            int u = core__topo_find(sm, v->inputs[k].from);
            t->in_src[e] = u;
            t->in_ship[e] = v->inputs[k].ship;
            t->n_outputs[u]++;
            if (v->inputs[k].ship == CORE_SHIP_HASH)
                t->hash_input[i] = true;
            e++;
        }
    }
    t->in_start[n] = e;

    /* Kahn: pending[i] = inputs of i not yet emitted; pick the lowest ready index. */
    int *pending = core__alloc(d, nn * sizeof *pending);
    bool *done = core__alloc(d, nn * sizeof *done);
    for (int i = 0; i < n; i++)
        pending[i] = t->in_start[i + 1] - t->in_start[i];
    int emitted = 0;
    while (emitted < n) {
        int next = -1;
        for (int i = 0; i < n; i++)
            if (!done[i] && pending[i] == 0) {
                next = i;
                break;
            }
        if (next < 0)
            break;
        done[next] = true;
        t->order[emitted++] = next;
        for (int v = 0; v < n; v++)
            for (int k = t->in_start[v]; k < t->in_start[v + 1]; k++)
                if (t->in_src[k] == next)
                    pending[v]--;
    }
    if (emitted < n) {
        bool *left = core__alloc(d, nn * sizeof *left);
        for (int i = 0; i < n; i++)
            left[i] = !done[i];
        describe_cycle(sm, t, left, err, err_len);
        return -1;
    }
    return 0;
}
