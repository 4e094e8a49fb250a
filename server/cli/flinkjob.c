/*
 * flinkjob.c - a Flink job's REST payloads into a sample (see flinkjob.h).
 *
 * A poll reads, in order: the job's details, its plan, each vertex's metric names (when they
 * must be listed), each vertex's aggregated values of the listed names it needs, then the
 * JobManager's and the TaskManagers' metrics; it stops at the first call that fails. The
 * sample is built only from what was read and checked; each lookup is by a sorted index (ids,
 * names), so a poll is linear in the payloads' size but for the sorts.
 */
#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/flinkjob.h"
#include "base/log.h"
#include "base/xmem.h"

/* The largest payload read: a job of thousands of vertices and their metric names fits. */
#define FLINKJOB_MAX_BODY (64u << 20)
/* The metric names one ?get= asks for at most (a URL stays well under Flink's 4 KiB limit). */
#define GET_BATCH 16

static const char BUSY[] = "busyTimeMsPerSecond";
static const char BACKPRESSURE[] = "backPressuredTimeMsPerSecond";
static const char RATE_IN[] = "numRecordsInPerSecond";
static const char SOURCE_PREFIX[] = "Source__";
static const char S_IN[] = ".numRecordsIn";
static const char S_IN_RATE[] = ".numRecordsInPerSecond";
static const char S_OUT_RATE[] = ".numRecordsOutPerSecond";
static const char PENDING[] = ".pendingRecords";

/* The TaskManagers' metrics (agg=max) and the sample's job_metrics field each becomes. */
static const char *const tm_metrics[][2] = {
    {"Status.JVM.Memory.Heap.Used", "heap_used"},
    {"Status.JVM.Memory.Heap.Max", "heap_max"},
    {"Status.Flink.Memory.Managed.Used", "managed_used"},
    {"Status.JVM.Memory.Metaspace.Used", "metaspace_used"},
    {"Status.JVM.GarbageCollector.All.TimeMsPerSecond", "gc_ms_per_s"},
};
static const char *const jm_metrics[][2] = {
    {"taskSlotsTotal", "task_slots_total"},
    {"taskSlotsAvailable", "task_slots_available"},
};

struct flinkjob {
    char *id, *name;
    char *sig;      /* running_since and the vertex ids of the names listed in *names */
    json_t *names;  /* vertex id -> [metric name] (non-sources: kept between polls) */
    char **missing; /* "vertex\tmetric" warned on stderr and still missing, sorted */
    int n_missing;
};

struct flinkjob *flinkjob_new(const char *flink_id, const char *name)
{
    struct flinkjob *j = xcalloc(1, sizeof *j);
    j->id = xstrdup(flink_id);
    j->name = xstrdup(name);
    j->names = json_object();
    return j;
}

static void missing_free(char **m, int n)
{
    for (int i = 0; i < n; i++)
        free(m[i]);
    free(m);
}

void flinkjob_free(struct flinkjob *j)
{
    if (!j)
        return;
    free(j->id);
    free(j->name);
    free(j->sig);
    json_decref(j->names);
    missing_free(j->missing, j->n_missing);
    free(j);
}

const char *flinkjob_id(const struct flinkjob *j)
{
    return j->id;
}

const char *flinkjob_name(const struct flinkjob *j)
{
    return j->name;
}

/* ------------------------------------------------------------------ calls -- */

static bool has_suffix(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

static bool has_prefix(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

static int failf(struct flinkjob_fail *f, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static int failf(struct flinkjob_fail *f, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(f->cause, sizeof f->cause, fmt, ap);
    va_end(ap);
    return -1;
}

/* A response body as a message may show it: its first 200 bytes, control bytes as '?'. */
static void shown(char *buf, size_t cap, const char *body, size_t len)
{
    size_t n = 0;
    for (size_t i = 0; i < len && n + 4 < cap && i < 200; i++)
        buf[n++] = (unsigned char)body[i] < 32 ? '?' : body[i];
    if (len > 200 && n + 4 < cap) {
        memcpy(buf + n, "...", 3);
        n += 3;
    }
    buf[n] = '\0';
}

/* One call: method and path (after the URL's prefix), body NULL or JSON text. The response's
 * JSON is new in *out (NULL for an empty 2xx body). -1 with *f filled: no response, a status
 * other than 2xx (f->status), or a body that is not JSON. */
static int call(const struct flinkjob_rest *rest, const char *method, const char *path,
                const char *body, json_t **out, struct flinkjob_fail *f)
{
    struct httpc_res res = {0};
    struct httpc_req q = {.method = method,
                          .path = path,
                          .body = body,
                          .len = body ? strlen(body) : 0,
                          .timeout_ms = rest->timeout_ms,
                          .max_body = FLINKJOB_MAX_BODY};
    int rc = -1;
    *out = NULL;
    memset(f, 0, sizeof *f);
    snprintf(f->request, sizeof f->request, "%s %s", method, path);
    if (httpc_call(rest->client, rest->url, &q, &res) < 0) {
        failf(f, "%s", res.error);
        goto out;
    }
    if (res.status < 200 || res.status > 299) {
        /* Flink's refusals are {"errors": ["..."]}: those, else the body's start */
        char b[400] = "";
        size_t len = 0, i;
        json_t *err = json_loadb(res.body, res.len, 0, NULL), *e;
        json_array_foreach(json_object_get(err, "errors"), i, e)
        {
            const char *s = json_string_value(e);
            if (s && len < sizeof b)
                len += (size_t)snprintf(b + len, sizeof b - len, "%s%s", i ? "; " : "", s);
        }
        json_decref(err);
        if (len == 0)
            shown(b, sizeof b, res.body, res.len);
        else
            for (char *c = b; *c; c++)
                if ((unsigned char)*c < 32)
                    *c = ' ';
        f->status = res.status;
        failf(f, "HTTP %d%s: %s", res.status, len ? ", errors" : "", b);
        goto out;
    }
    if (res.len > 0) {
        json_error_t je;
        *out = json_loadb(res.body, res.len, JSON_DECODE_ANY, &je);
        if (!*out) {
            failf(f, "the body is not JSON (line %d column %d: %s)", je.line, je.column, je.text);
            goto out;
        }
    }
    rc = 0;
out:
    httpc_res_deinit(&res);
    return rc;
}

static int get_json(const struct flinkjob_rest *rest, const char *path, json_t **out,
                    struct flinkjob_fail *f)
{
    return call(rest, "GET", path, NULL, out, f);
}

/* ---------------------------------------------------------------- values -- */

/*
 * A metric value: a JSON number, or a string holding one (the JobManager's gauges are
 * strings). 1 with *x, 0 when it is not a finite number (Flink prints NaN as "NaN"), -1 when
 * absent.
 */
static int number_of(const json_t *v, double *x)
{
    if (!v || json_is_null(v))
        return -1;
    if (json_is_number(v)) {
        *x = json_number_value(v);
        return isfinite(*x) ? 1 : 0;
    }
    const char *s = json_string_value(v);
    if (!s || !*s || isspace((unsigned char)*s) || strpbrk(s, "xXpP"))
        return 0;
    char *end = NULL;
    double d = strtod(s, &end);
    if (end == s || *end || !isfinite(d))
        return 0;
    *x = d;
    return 1;
}

/* An integer field; a number that is no integer is not one. */
static bool int_of(const json_t *v, json_int_t *x)
{
    if (!json_is_integer(v))
        return false;
    *x = json_integer_value(v);
    return true;
}

/* ---------------------------------------------------------------- warnings -- */

/* A poll's warnings and the missing metrics it saw. */
struct poll {
    struct flinkjob *j;
    json_t *warnings;
    char **missing;
    int n_missing, cap_missing;
};

static void warn(struct poll *p, const char *vertex, const char *metric, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void warn(struct poll *p, const char *vertex, const char *metric, const char *fmt, ...)
{
    char msg[600];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    json_t *w = json_object();
    if (vertex)
        json_object_set_new(w, "vertex", json_string(vertex));
    if (metric)
        json_object_set_new(w, "metric", json_string(metric));
    json_object_set_new(w, "message", json_string(msg));
    json_array_append_new(p->warnings, w);
}

/* A metric Flink does not list: a warning, and remembered for the stderr line. */
static void missing(struct poll *p, const char *vertex, const char *metric)
{
    if (vertex)
        warn(p, vertex, metric, "vertex %s: Flink lists no %s; left out", vertex, metric);
    else
        warn(p, NULL, metric, "Flink reports no %s; left out", metric);
    if (p->n_missing == p->cap_missing) {
        p->cap_missing = p->cap_missing ? 2 * p->cap_missing : 16;
        p->missing = xrealloc(p->missing, (size_t)p->cap_missing * sizeof *p->missing);
    }
    p->missing[p->n_missing++] = xasprintf("%s\t%s", vertex ? vertex : "", metric);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* One stderr line per metric newly missing; the job then remembers this poll's set. */
static void missing_settle(struct poll *p)
{
    struct flinkjob *j = p->j;
    if (p->n_missing > 1)
        qsort(p->missing, (size_t)p->n_missing, sizeof *p->missing, cmp_str);
    for (int i = 0; i < p->n_missing; i++) {
        if (i > 0 && strcmp(p->missing[i], p->missing[i - 1]) == 0)
            continue;
        if (j->missing &&
            bsearch(&p->missing[i], j->missing, (size_t)j->n_missing, sizeof *j->missing, cmp_str))
            continue;
        char *tab = strchr(p->missing[i], '\t');
        char qj[300], qv[300], qm[600];
        *tab = '\0';
        log_msg(LOG_WARN, "flink", "metric missing", "job=%s flink_job=%s vertex=%s metric=%s",
                log_quote(qj, sizeof qj, j->name), j->id, log_quote(qv, sizeof qv, p->missing[i]),
                log_quote(qm, sizeof qm, tab + 1));
        *tab = '\t';
    }
    missing_free(j->missing, j->n_missing);
    j->missing = p->missing;
    j->n_missing = p->n_missing;
    p->missing = NULL;
    p->n_missing = p->cap_missing = 0;
}

/* ----------------------------------------------------------------- vertices -- */

struct vtx {
    const char *id, *name, *ssg;
    json_int_t p, maxp; /* maxp 0: absent */
    bool finished, source;
    double rin, rout, busy_acc; /* NaN: absent */
    json_t *inputs;             /* [{"from", "ship"}] (new) */
    json_t *names;              /* listed metric names (borrowed from the job's cache or
                                   the poll's listing) */
    json_t *values;             /* name -> {"min", "max", "avg", "sum"} (new) */
};

/* An index of the vertices by id (sorted copies of the pointers). */
struct vindex {
    struct vtx **by_id;
    int n;
};

static int cmp_vtx(const void *a, const void *b)
{
    return strcmp((*(struct vtx *const *)a)->id, (*(struct vtx *const *)b)->id);
}

static struct vtx *vfind(const struct vindex *ix, const char *id)
{
    struct vtx key = {.id = id}, *kp = &key;
    struct vtx **hit = bsearch(&kp, ix->by_id, (size_t)ix->n, sizeof *ix->by_id, cmp_vtx);
    return hit ? *hit : NULL;
}

static bool id_ok(const char *s)
{
    size_t n = strlen(s);
    return n >= 1 && n <= 128;
}

/* A counter of the vertex's IO metrics (details): >= 0, else left out with a warning. */
static double io_counter(struct poll *p, const struct vtx *v, const json_t *metrics,
                         const char *key)
{
    const json_t *x = json_object_get(metrics, key);
    double d;
    int rc = number_of(x, &d);
    if (rc < 0)
        return NAN;
    if (rc == 0 || d < 0) {
        warn(p, v->id, key, "vertex %s: %s is %s; left out", v->id, key,
             rc == 0 ? "not a number" : "negative");
        return NAN;
    }
    return d;
}

/* The details' vertices[] into vs (n of them). -1 with *f on a shape that is not Flink's. */
static int read_vertices(struct poll *p, json_t *details, struct vtx **vs, int *n,
                         struct flinkjob_fail *f)
{
    json_t *arr = json_object_get(details, "vertices");
    if (!json_is_array(arr))
        return failf(f, "vertices: expected an array");
    size_t cnt = json_array_size(arr);
    *vs = xcalloc(cnt ? cnt : 1, sizeof **vs);
    *n = (int)cnt;
    for (size_t i = 0; i < cnt; i++) {
        json_t *jv = json_array_get(arr, i);
        struct vtx *v = &(*vs)[i];
        v->rin = v->rout = v->busy_acc = NAN;
        if (!json_is_object(jv))
            return failf(f, "vertices[%zu]: expected an object", i);
        v->id = json_string_value(json_object_get(jv, "id"));
        if (!v->id || !id_ok(v->id))
            return failf(f, "vertices[%zu].id: expected a string of 1 to 128 characters", i);
        if (!int_of(json_object_get(jv, "parallelism"), &v->p) || v->p < 1 || v->p > INT32_MAX)
            return failf(f, "vertices[%zu].parallelism: expected an integer >= 1", i);
        v->name = json_string_value(json_object_get(jv, "name"));
        json_t *mp = json_object_get(jv, "maxParallelism");
        if (mp && !(int_of(mp, &v->maxp) && v->maxp >= v->p && v->maxp <= INT32_MAX)) {
            warn(p, v->id, NULL,
                 "vertex %s: maxParallelism is not an integer >= parallelism; "
                 "left out",
                 v->id);
            v->maxp = 0;
        }
        json_t *ssg = json_object_get(jv, "slotSharingGroupId");
        if (ssg && !json_is_null(ssg)) {
            v->ssg = json_string_value(ssg);
            if (!v->ssg || !id_ok(v->ssg)) {
                warn(p, v->id, NULL, "vertex %s: slotSharingGroupId is not an id; left out", v->id);
                v->ssg = NULL;
            }
        }
        const char *st = json_string_value(json_object_get(jv, "status"));
        v->finished = st && strcmp(st, "FINISHED") == 0;
        json_t *m = json_object_get(jv, "metrics");
        if (m && !json_is_object(m))
            return failf(f, "vertices[%zu].metrics: expected an object", i);
        v->rin = io_counter(p, v, m, "read-records");
        v->rout = io_counter(p, v, m, "write-records");
        v->busy_acc = io_counter(p, v, m, "accumulated-busy-time");
    }
    return 0;
}

/* The plan's inputs onto each vertex (a vertex without is a source). -1 with *f. */
static int read_plan(json_t *plan_resp, const struct vindex *ix, struct flinkjob_fail *f)
{
    json_t *plan = json_object_get(plan_resp, "plan");
    json_t *nodes = json_object_get(plan, "nodes");
    if (!json_is_object(plan) || !json_is_array(nodes))
        return failf(f, "plan.nodes: expected an array");
    size_t i, k;
    json_t *node, *in;
    json_array_foreach(nodes, i, node)
    {
        const char *id = json_string_value(json_object_get(node, "id"));
        if (!json_is_object(node) || !id)
            return failf(f, "plan.nodes[%zu].id: expected a string", i);
        struct vtx *v = vfind(ix, id);
        if (!v)
            continue; /* a node of no vertex: nothing of the sample needs it */
        if (v->inputs)
            return failf(f, "plan.nodes[%zu].id: vertex %s has two nodes", i, id);
        v->inputs = json_array();
        json_t *ins = json_object_get(node, "inputs");
        if (ins && !json_is_null(ins) && !json_is_array(ins))
            return failf(f, "plan.nodes[%zu].inputs: expected an array", i);
        json_array_foreach(ins, k, in)
        {
            const char *from = json_string_value(json_object_get(in, "id"));
            json_t *ship = json_object_get(in, "ship_strategy");
            if (!json_is_object(in) || !from)
                return failf(f, "plan.nodes[%zu].inputs[%zu].id: expected a string", i, k);
            if (!vfind(ix, from))
                return failf(f, "plan.nodes[%zu].inputs[%zu].id: %s is not a vertex of the job", i,
                             k, from);
            if (ship && !json_is_null(ship) && !json_is_string(ship))
                return failf(f, "plan.nodes[%zu].inputs[%zu].ship_strategy: expected a string", i,
                             k);
            json_t *e = json_pack("{s:s}", "from", from);
            if (json_is_string(ship))
                json_object_set(e, "ship", ship);
            json_array_append_new(v->inputs, e);
        }
    }
    for (int x = 0; x < ix->n; x++)
        if (!ix->by_id[x]->inputs)
            return failf(f, "plan.nodes: no node for vertex %s", ix->by_id[x]->id);
    for (int x = 0; x < ix->n; x++)
        ix->by_id[x]->source = json_array_size(ix->by_id[x]->inputs) == 0;
    return 0;
}

/* The vertices in topological order (Kahn; ties in the details' order), into order[]. A
 * cycle leaves its vertices at the end in the details' order: decide refuses the sample. */
static void topo_order(struct vtx *vs, int n, const struct vindex *ix, int *order)
{
    int *indeg = xcalloc((size_t)n + 1, sizeof *indeg);
    int *out_start = xcalloc((size_t)n + 2, sizeof *out_start);
    int *edges = NULL, n_edges = 0;
    bool *done = xcalloc((size_t)n + 1, sizeof *done);
    /* the edges from -> to, grouped by `from` (counting sort) */
    for (int i = 0; i < n; i++)
        n_edges += (int)json_array_size(vs[i].inputs);
    edges = xcalloc((size_t)n_edges + 1, sizeof *edges);
    for (int i = 0; i < n; i++) {
        size_t k;
        json_t *in;
        json_array_foreach(vs[i].inputs, k, in)
        {
            struct vtx *from = vfind(ix, json_string_value(json_object_get(in, "from")));
            out_start[(from - vs) + 1]++;
            indeg[i]++;
        }
    }
    for (int i = 0; i < n; i++)
        out_start[i + 1] += out_start[i];
    int *fill = xcalloc((size_t)n + 1, sizeof *fill);
    for (int i = 0; i < n; i++) {
        size_t k;
        json_t *in;
        json_array_foreach(vs[i].inputs, k, in)
        {
            int from = (int)(vfind(ix, json_string_value(json_object_get(in, "from"))) - vs);
            edges[out_start[from] + fill[from]++] = i;
        }
    }
    int head = 0, tail = 0;
    for (int i = 0; i < n; i++)
        if (indeg[i] == 0)
            order[tail++] = i;
    while (head < tail) {
        int v = order[head++];
        done[v] = true;
        for (int e = out_start[v]; e < out_start[v + 1]; e++)
            if (--indeg[edges[e]] == 0)
                order[tail++] = edges[e];
    }
    for (int i = 0; i < n; i++)
        if (!done[i] && indeg[i] > 0)
            order[tail++] = i;
    free(fill);
    free(indeg);
    free(out_start);
    free(edges);
    free(done);
}

/* ------------------------------------------------------------------ metrics -- */

/* Whether the vertex wants metric name (of the ones the sample takes). */
static bool wanted(const struct vtx *v, const char *name)
{
    if (strcmp(name, BUSY) == 0 || strcmp(name, BACKPRESSURE) == 0)
        return true;
    if (!v->source)
        return strcmp(name, RATE_IN) == 0;
    if (has_suffix(name, PENDING))
        return true;
    return has_prefix(name, SOURCE_PREFIX) &&
           (has_suffix(name, S_IN) || has_suffix(name, S_IN_RATE) || has_suffix(name, S_OUT_RATE));
}

/* GET the vertex's metric names: [{"id": name}] into a new [name]. */
static int list_names(const struct flinkjob_rest *rest, const char *jid, struct vtx *v,
                      json_t **out, struct flinkjob_fail *f)
{
    char *path = xasprintf("/jobs/%s/vertices/%s/subtasks/metrics", jid, v->id);
    json_t *resp = NULL;
    int rc = get_json(rest, path, &resp, f);
    free(path);
    if (rc < 0)
        return -1;
    if (!json_is_array(resp)) {
        json_decref(resp);
        return failf(f, "expected an array of {\"id\"}");
    }
    *out = json_array();
    size_t i;
    json_t *e;
    json_array_foreach(resp, i, e)
    {
        json_t *id = json_object_get(e, "id");
        if (json_is_string(id))
            json_array_append(*out, id);
    }
    json_decref(resp);
    return 0;
}

/* GET the aggregated values of the listed names the vertex wants, into v->values. */
static int read_values(const struct flinkjob_rest *rest, const char *jid, struct vtx *v,
                       struct flinkjob_fail *f)
{
    size_t i, n = json_array_size(v->names);
    json_t *batch = json_array();
    v->values = json_object();
    for (i = 0; i <= n; i++) {
        const char *name = i < n ? json_string_value(json_array_get(v->names, i)) : NULL;
        if (name && wanted(v, name) && !strchr(name, ',') && !json_object_get(v->values, name)) {
            json_array_append_new(batch, json_string(name));
            json_object_set_new(v->values, name, json_null()); /* asked once */
        }
        if (json_array_size(batch) < (i < n ? GET_BATCH : 1))
            continue;
        /* ?get=a,b,c&agg=min,max,avg,sum */
        size_t cap = 64 + strlen(jid) + strlen(v->id), len = 0, k;
        json_t *e;
        json_array_foreach(batch, k, e) cap += 3 * strlen(json_string_value(e)) + 1;
        char *q = xmalloc(cap);
        len = (size_t)snprintf(q, cap, "/jobs/%s/vertices/%s/subtasks/metrics?get=", jid, v->id);
        json_array_foreach(batch, k, e)
        {
            char *esc = httpc_escape(json_string_value(e));
            len += (size_t)snprintf(q + len, cap - len, "%s%s", k ? "," : "", esc);
            free(esc);
        }
        snprintf(q + len, cap - len, "&agg=min,max,avg,sum");
        json_t *resp = NULL;
        int rc = get_json(rest, q, &resp, f);
        free(q);
        json_array_clear(batch);
        if (rc < 0) {
            json_decref(batch);
            return -1;
        }
        if (!json_is_array(resp)) {
            json_decref(resp);
            json_decref(batch);
            return failf(f, "expected an array of {\"id\", \"min\", \"max\", \"avg\", \"sum\"}");
        }
        json_array_foreach(resp, k, e)
        {
            const char *id = json_string_value(json_object_get(e, "id"));
            if (json_is_object(e) && id && json_object_get(v->values, id))
                json_object_set(v->values, id, e);
        }
        json_decref(resp);
    }
    json_decref(batch);
    return 0;
}

/* One aggregate (min, max, avg or sum) of a listed, answered metric: 1 with *x; 0 when it is
 * not a number (with a warning); -1 when Flink gave none. */
static int agg_of(struct poll *p, const struct vtx *v, const char *name, const char *agg, double *x)
{
    json_t *e = json_object_get(v->values, name);
    int rc = number_of(json_object_get(e, agg), x);
    if (rc == 0)
        warn(p, v->id, name, "vertex %s: %s %s is not a number; left out", v->id, name, agg);
    return rc;
}

/* The sum over every listed name of one kind (prefix NULL: any; suffix): 1 with *x, 0 when
 * some are listed but none has a number, -1 when none is listed. */
static int sum_of(struct poll *p, const struct vtx *v, const char *prefix, const char *suffix,
                  double *x)
{
    const char *name;
    json_t *e;
    int found = -1;
    *x = 0;
    json_object_foreach(v->values, name, e)
    {
        if ((prefix && !has_prefix(name, prefix)) || !has_suffix(name, suffix))
            continue;
        double d;
        if (found < 0)
            found = 0;
        if (agg_of(p, v, name, "sum", &d) == 1) {
            *x += d;
            found = 1;
        }
    }
    return found;
}

static double clamp(double x, double lo, double hi)
{
    return x < lo ? lo : x > hi ? hi : x;
}

/* A count or a rate that cannot be negative: set into m as key, or left out with a warning. */
static void set_nonneg(struct poll *p, const struct vtx *v, json_t *m, const char *key,
                       const char *metric, double x)
{
    if (x < 0) {
        warn(p, v->id, metric, "vertex %s: %s is negative (%g); left out", v->id, metric, x);
        return;
    }
    json_object_set_new(m, key, json_real(x));
}

/* The vertex's metrics object of the sample. */
static json_t *vertex_metrics(struct poll *p, const struct vtx *v)
{
    json_t *m = json_object(), *e;
    double mn, mx, avg, x;
    const char *name;
    json_object_foreach(v->values, name, e) if (json_is_null(e)) warn(
        p, v->id, name, "vertex %s: Flink lists %s but gave no value of it; left out", v->id, name);
    if (!v->finished) {
        if (!json_object_get(v->values, BUSY))
            missing(p, v->id, BUSY);
        if (!json_object_get(v->values, BACKPRESSURE))
            missing(p, v->id, BACKPRESSURE);
    }
    if (agg_of(p, v, BUSY, "avg", &avg) == 1) {
        avg = clamp(avg, 0, 1000);
        json_t *b = json_object();
        int has_min = agg_of(p, v, BUSY, "min", &mn) == 1;
        int has_max = agg_of(p, v, BUSY, "max", &mx) == 1;
        mn = has_min ? clamp(mn, 0, 1000) : avg;
        mx = has_max ? clamp(mx, 0, 1000) : avg;
        if (mn > mx) {
            double t = mn;
            mn = mx;
            mx = t;
        }
        avg = clamp(avg, mn, mx);
        if (has_min)
            json_object_set_new(b, "min", json_real(mn));
        json_object_set_new(b, "avg", json_real(avg));
        if (has_max)
            json_object_set_new(b, "max", json_real(mx));
        json_object_set_new(m, "busy_ms_per_s", b);
    }
    if (agg_of(p, v, BACKPRESSURE, "avg", &x) == 1)
        json_object_set_new(m, "backpressured_ms_per_s", json_real(clamp(x, 0, 1000)));
    if (!v->source) {
        if (!isnan(v->rin))
            json_object_set_new(m, "records_in", json_real(v->rin));
        if (!v->finished && !json_object_get(v->values, RATE_IN))
            missing(p, v->id, RATE_IN);
        if (agg_of(p, v, RATE_IN, "sum", &x) == 1)
            set_nonneg(p, v, m, "records_in_per_s", RATE_IN, x);
    } else {
        int rc = sum_of(p, v, SOURCE_PREFIX, S_IN, &x);
        if (rc == 1)
            set_nonneg(p, v, m, "records_in", "Source__*.numRecordsIn", x);
        else if (rc < 0 && !v->finished)
            missing(p, v->id, "Source__*.numRecordsIn");
        rc = sum_of(p, v, SOURCE_PREFIX, S_IN_RATE, &x);
        if (rc < 0)
            rc = sum_of(p, v, SOURCE_PREFIX, S_OUT_RATE, &x);
        if (rc == 1)
            set_nonneg(p, v, m, "records_in_per_s", "Source__*.numRecordsInPerSecond", x);
        else if (rc < 0 && !v->finished)
            missing(p, v->id, "Source__*.numRecordsInPerSecond");
        rc = sum_of(p, v, NULL, PENDING, &x);
        if (rc == 1)
            set_nonneg(p, v, m, "pending_records", "*.pendingRecords", x);
        else if (rc < 0 && !v->finished)
            missing(p, v->id, "*.pendingRecords");
    }
    if (!isnan(v->rout))
        json_object_set_new(m, "records_out", json_real(v->rout));
    if (!isnan(v->busy_acc))
        json_object_set_new(m, "accumulated_busy_ms", json_real(v->busy_acc));
    return m;
}

/* ------------------------------------------------------------- partitions -- */

/* The digits of s[0..n): true when n >= 1 and all are digits. */
static bool all_digits(const char *s, size_t n)
{
    if (n == 0)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!isdigit((unsigned char)s[i]))
            return false;
    return true;
}

/* A name's partition key ("kafka\0cluster\0topic\0N" as text with '\n' between), new, or
 * NULL when the name is no partition metric. */
static char *partition_key(const char *name)
{
    static const char reader[] = ".KafkaSourceReader.topic.", cluster[] = ".kafkaCluster.",
                      offset[] = ".currentOffset", part[] = ".partition.";
    const char *r = strstr(name, reader);
    if (r && has_suffix(name, offset)) {
        const char *topic = r + strlen(reader);
        const char *end = name + strlen(name) - strlen(offset);
        /* the last ".partition." before ".currentOffset": a topic may hold dots */
        const char *pp = NULL;
        for (const char *s = topic; (s = strstr(s, part)) && s < end; s++)
            pp = s;
        if (!pp || pp == topic || !all_digits(pp + strlen(part), (size_t)(end - pp - strlen(part))))
            return NULL;
        const char *c = strstr(name, cluster), *cl = "null";
        size_t cn = 4;
        if (c && c < r) {
            cl = c + strlen(cluster);
            cn = (size_t)(r - cl);
        }
        return xasprintf("kafka\n%.*s\n%.*s\n%.*s", (int)cn, cl, (int)(pp - topic), topic,
                         (int)(end - pp - strlen(part)), pp + strlen(part));
    }
    static const char consumer[] = ".PulsarConsumer.", pdash[] = "-partition-",
                      received[] = ".numMsgsReceived";
    const char *pc = strstr(name, consumer);
    if (pc && has_suffix(name, received)) {
        const char *topic = pc + strlen(consumer);
        const char *end = name + strlen(name) - strlen(received);
        /* <topic>-partition-<id>.<anything>: the first "-partition-" followed by digits
         * and a dot */
        for (const char *s = topic; (s = strstr(s, pdash)) && s < end; s++) {
            const char *d = s + strlen(pdash), *e = d;
            while (e < end && isdigit((unsigned char)*e))
                e++;
            if (e > d && e < end && *e == '.' && s > topic)
                return xasprintf("pulsar\n%.*s\n%.*s", (int)(s - topic), topic, (int)(e - d), d);
        }
    }
    return NULL;
}

int flinkjob_partitions(json_t *names)
{
    size_t n = json_array_size(names), i;
    char **keys = xcalloc(n + 1, sizeof *keys);
    int k = 0, distinct = 0;
    json_t *e;
    json_array_foreach(names, i, e)
    {
        const char *s = json_string_value(e);
        char *key = s ? partition_key(s) : NULL;
        if (key)
            keys[k++] = key;
    }
    qsort(keys, (size_t)k, sizeof *keys, cmp_str);
    for (int x = 0; x < k; x++)
        if (x == 0 || strcmp(keys[x], keys[x - 1]) != 0)
            distinct++;
    missing_free(keys, k);
    return distinct;
}

/* ---------------------------------------------------------- job metrics -- */

/* GET /jobmanager/metrics and /taskmanagers/metrics into jm (the sample's job_metrics). */
static int read_cluster(const struct flinkjob_rest *rest, struct poll *p, json_t *jm,
                        struct flinkjob_fail *f)
{
    char path[512];
    json_t *resp = NULL, *e;
    size_t i, k;
    snprintf(path, sizeof path, "/jobmanager/metrics?get=%s,%s", jm_metrics[0][0],
             jm_metrics[1][0]);
    for (int round = 0; round < 2; round++) {
        const char *const(*rows)[2] = round == 0 ? jm_metrics : tm_metrics;
        size_t n_rows = round == 0 ? sizeof jm_metrics / sizeof jm_metrics[0]
                                   : sizeof tm_metrics / sizeof tm_metrics[0];
        const char *agg = round == 0 ? "value" : "max";
        if (round == 1) {
            size_t len = (size_t)snprintf(path, sizeof path, "/taskmanagers/metrics?get=");
            for (k = 0; k < n_rows; k++)
                len += (size_t)snprintf(path + len, sizeof path - len, "%s%s", k ? "," : "",
                                        rows[k][0]);
            snprintf(path + len, sizeof path - len, "&agg=max");
        }
        if (get_json(rest, path, &resp, f) < 0)
            return -1;
        if (!json_is_array(resp)) {
            json_decref(resp);
            return failf(f, "expected an array of {\"id\", \"%s\"}", agg);
        }
        for (k = 0; k < n_rows; k++) {
            json_t *hit = NULL;
            json_array_foreach(resp, i, e)
            {
                const char *id = json_string_value(json_object_get(e, "id"));
                if (id && strcmp(id, rows[k][0]) == 0)
                    hit = e;
            }
            double x;
            int rc = hit ? number_of(json_object_get(hit, agg), &x) : -1;
            if (rc < 0)
                missing(p, NULL, rows[k][0]);
            else if (rc == 0 || x < 0)
                warn(p, NULL, rows[k][0], "%s is not a number >= 0; left out", rows[k][0]);
            else
                json_object_set_new(jm, rows[k][1], json_real(x));
        }
        json_decref(resp);
        resp = NULL;
    }
    return 0;
}

/* ------------------------------------------------------------------ poll -- */

/* "running_since vertex-id vertex-id ..." of this poll (new): the names are listed again when
 * it changes. */
static char *signature(json_int_t since, const struct vtx *vs, int n)
{
    size_t cap = 32;
    for (int i = 0; i < n; i++)
        cap += strlen(vs[i].id) + 1;
    char *s = xmalloc(cap);
    size_t len = (size_t)snprintf(s, cap, "%lld", (long long)since);
    for (int i = 0; i < n; i++)
        len += (size_t)snprintf(s + len, cap - len, " %s", vs[i].id);
    return s;
}

/* Whether the cached names of v lack a metric it needs (listed again then). */
static bool names_incomplete(const struct vtx *v)
{
    bool busy = false, bp = false, rate = false;
    size_t i;
    json_t *e;
    json_array_foreach(v->names, i, e)
    {
        const char *s = json_string_value(e);
        busy = busy || strcmp(s, BUSY) == 0;
        bp = bp || strcmp(s, BACKPRESSURE) == 0;
        rate = rate || strcmp(s, RATE_IN) == 0;
    }
    return !(busy && bp && rate);
}

int flinkjob_poll(struct flinkjob *j, const struct flinkjob_rest *rest, json_t *config,
                  json_t **sample, json_t **warnings, struct flinkjob_fail *f)
{
    struct poll p = {.j = j, .warnings = json_array()};
    json_t *details = NULL, *plan = NULL, *fresh = json_object(), *out = NULL;
    struct vtx *vs = NULL;
    struct vindex ix = {0};
    int n = 0, *order = NULL, rc = -1;
    char path[512], *sig = NULL;
    json_int_t now = 0, since = 0;

    *sample = *warnings = NULL;
    snprintf(path, sizeof path, "/jobs/%s", j->id);
    if (get_json(rest, path, &details, f) < 0)
        goto out;
    if (!json_is_object(details)) {
        failf(f, "expected an object (the job's details)");
        goto out;
    }
    const char *state = json_string_value(json_object_get(details, "state"));
    if (!int_of(json_object_get(details, "now"), &now) || now <= 0) {
        failf(f, "now: expected epoch milliseconds");
        goto out;
    }
    if (!state || !*state || strlen(state) > 64) {
        failf(f, "state: expected a job status");
        goto out;
    }
    json_t *ts = json_object_get(details, "timestamps");
    json_t *run = json_object_get(ts, "RUNNING");
    if (run && !(int_of(run, &since) && since >= 0)) {
        warn(&p, NULL, NULL, "timestamps.RUNNING is not epoch milliseconds; left out");
        since = 0;
    }
    if (since > now) {
        warn(&p, NULL, NULL, "timestamps.RUNNING %lld is after now %lld; left out",
             (long long)since, (long long)now);
        since = 0;
    }
    if (read_vertices(&p, details, &vs, &n, f) < 0)
        goto out;
    ix.by_id = xcalloc((size_t)n + 1, sizeof *ix.by_id);
    ix.n = n;
    for (int i = 0; i < n; i++)
        ix.by_id[i] = &vs[i];
    qsort(ix.by_id, (size_t)n, sizeof *ix.by_id, cmp_vtx);
    for (int i = 1; i < n; i++)
        if (strcmp(ix.by_id[i]->id, ix.by_id[i - 1]->id) == 0) {
            failf(f, "vertices: id %s appears twice", ix.by_id[i]->id);
            goto out;
        }

    snprintf(path, sizeof path, "/jobs/%s/plan", j->id);
    if (get_json(rest, path, &plan, f) < 0)
        goto out;
    if (read_plan(plan, &ix, f) < 0)
        goto out;
    order = xcalloc((size_t)n + 1, sizeof *order);
    topo_order(vs, n, &ix, order);

    /* A job that is not running has no metrics to read (a restarting one lists none): its
     * sample says its state, and what was missing before stays remembered. */
    bool running = strcmp(state, "RUNNING") == 0;
    json_t *jm = NULL;
    if (!running)
        goto build;
    /* The names: a source's every poll; the others' when the vertices or running_since
     * changed, or a needed one was not listed yet. */
    sig = signature(since, vs, n);
    if (!j->sig || strcmp(j->sig, sig) != 0) {
        json_object_clear(j->names);
        free(j->sig);
        j->sig = sig;
        sig = NULL;
    }
    for (int i = 0; i < n; i++) {
        struct vtx *v = &vs[i];
        json_t *cached = json_object_get(j->names, v->id);
        if (!v->source && cached && !names_incomplete(&(struct vtx){.names = cached})) {
            v->names = cached;
            continue;
        }
        json_t *listed = NULL;
        if (list_names(rest, j->id, v, &listed, f) < 0)
            goto out;
        if (v->source)
            json_object_set_new(fresh, v->id, listed);
        else
            json_object_set_new(j->names, v->id, listed);
        v->names = listed;
    }
    for (int i = 0; i < n; i++)
        if (read_values(rest, j->id, &vs[i], f) < 0)
            goto out;

    jm = json_object();
    if (read_cluster(rest, &p, jm, f) < 0) {
        json_decref(jm);
        goto out;
    }

build:
    out = json_object();
    json_object_set_new(out, "at", json_integer(now));
    if (since > 0)
        json_object_set_new(out, "running_since", json_integer(since));
    json_object_set_new(out, "status", json_string(state));
    if (config)
        json_object_set_new(out, "config", json_deep_copy(config));
    if (jm)
        json_object_set_new(out, "job_metrics", jm);
    json_t *varr = json_array();
    for (int k = 0; k < n; k++) {
        struct vtx *v = &vs[order[k]];
        json_t *jv = json_object();
        json_object_set_new(jv, "id", json_string(v->id));
        if (v->name)
            json_object_set_new(jv, "name", json_string(v->name));
        json_object_set_new(jv, "parallelism", json_integer(v->p));
        if (v->maxp)
            json_object_set_new(jv, "max_parallelism", json_integer(v->maxp));
        if (v->ssg)
            json_object_set_new(jv, "slot_sharing_group", json_string(v->ssg));
        if (v->finished)
            json_object_set_new(jv, "finished", json_true());
        if (v->source && running) {
            int parts = flinkjob_partitions(v->names);
            if (parts > 0)
                json_object_set_new(jv, "partitions", json_integer(parts));
        }
        json_object_set(jv, "inputs", v->inputs);
        if (running)
            json_object_set_new(jv, "metrics", vertex_metrics(&p, v));
        json_array_append_new(varr, jv);
    }
    json_object_set_new(out, "vertices", varr);
    if (running)
        missing_settle(&p);
    *sample = out;
    *warnings = p.warnings;
    p.warnings = NULL;
    rc = 0;
out:
    for (int i = 0; i < n; i++) {
        json_decref(vs[i].inputs);
        json_decref(vs[i].values);
    }
    missing_free(p.missing, p.n_missing);
    json_decref(p.warnings);
    free(vs);
    free(ix.by_id);
    free(order);
    free(sig);
    json_decref(fresh);
    json_decref(plan);
    json_decref(details);
    return rc;
}

/* ---------------------------------------------------------------- --all -- */

static bool job_name_ok(const char *s)
{
    size_t n = strlen(s);
    if (n < 1 || n > 128)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!isalnum((unsigned char)s[i]) && !strchr("._:-", s[i]))
            return false;
    return true;
}

int flinkjob_running(const struct flinkjob_rest *rest, json_t **ids, struct flinkjob_fail *f)
{
    json_t *resp = NULL, *e;
    size_t i;
    *ids = NULL;
    if (get_json(rest, "/jobs", &resp, f) < 0)
        return -1;
    json_t *jobs = json_object_get(resp, "jobs");
    if (!json_is_array(jobs)) {
        json_decref(resp);
        return failf(f, "jobs: expected an array of {\"id\", \"status\"}");
    }
    *ids = json_array();
    json_array_foreach(jobs, i, e)
    {
        const char *id = json_string_value(json_object_get(e, "id"));
        const char *st = json_string_value(json_object_get(e, "status"));
        if (!id || !st) {
            json_decref(*ids);
            *ids = NULL;
            json_decref(resp);
            return failf(f, "jobs[%zu]: expected {\"id\", \"status\"} strings", i);
        }
        if (strcmp(st, "RUNNING") != 0)
            continue;
        if (!job_name_ok(id)) {
            char q[300];
            log_msg(LOG_WARN, "flink", "job id is no governor job name: skipped", "flink_job=%s",
                    log_quote(q, sizeof q, id));
            continue;
        }
        json_array_append_new(*ids, json_string(id));
    }
    json_decref(resp);
    return 0;
}

/* --------------------------------------------------------------- rescale -- */

int flinkjob_rescale(const struct flinkjob_rest *rest, const char *flink_id, json_t *parallelism,
                     bool *put, struct flinkjob_fail *f)
{
    char path[512];
    json_t *req = NULL, *resp = NULL, *v;
    const char *vid;
    int rc = -1;
    *put = false;
    snprintf(path, sizeof path, "/jobs/%s/resource-requirements", flink_id);
    if (get_json(rest, path, &req, f) < 0)
        return -1;
    if (!json_is_object(req)) {
        failf(f, "expected an object of vertex id -> {\"parallelism\": {\"lowerBound\", "
                 "\"upperBound\"}}");
        goto out;
    }
    json_object_foreach(req, vid, v)
    {
        json_t *par = json_object_get(v, "parallelism");
        json_int_t lo, hi;
        if (!int_of(json_object_get(par, "lowerBound"), &lo) ||
            !int_of(json_object_get(par, "upperBound"), &hi)) {
            failf(f, "%s.parallelism: expected {\"lowerBound\", \"upperBound\"} integers", vid);
            goto out;
        }
    }
    json_object_foreach(parallelism, vid, v)
    {
        json_int_t want = json_integer_value(v);
        json_int_t hi = -1;
        int_of(json_object_get(json_object_get(json_object_get(req, vid), "parallelism"),
                               "upperBound"),
               &hi);
        if (hi == want)
            continue;
        *put = true;
        json_t *e = json_object_get(req, vid);
        if (!json_is_object(e)) {
            e = json_object();
            json_object_set_new(req, vid, e);
        }
        json_object_set_new(
            e, "parallelism",
            json_pack("{s:i,s:I}", "lowerBound", 1, "upperBound", (json_int_t)want));
    }
    if (!*put) {
        rc = 0;
        goto out;
    }
    char *body = json_dumps(req, JSON_COMPACT);
    if (!body)
        xmem_oom();
    rc = call(rest, "PUT", path, body, &resp, f);
    free(body);
out:
    json_decref(resp);
    json_decref(req);
    return rc;
}
