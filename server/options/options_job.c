/*
 * options_job.c - a job's options in layers (options.h, struct opt_job): values set per layer
 * and spelling, plugin keys, the knobs' mapped values, resolution into a struct core_config, the
 * hash and the warnings.
 */
#include <ctype.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/index.h"
#include "time/cron.h"
#include "options/options.h"
#include "options/options_int.h"
#include "base/xmem.h"

/* -------------------------------------------------------------- job options -- */

/* One key's values, one per layer (BUILTIN unused: the table's default). rank orders the
 * spellings that map to one key: canonical 0, deprecated alias 1, kubernetes.operator.
 * canonical 2, kubernetes.operator. alias 3; a lower rank wins within a layer. */
struct slot {
    char *v[4];
    unsigned char rank[4];
};

/* A key that is not a row: a plugin parameter, or a key recorded as ignored. */
struct extra {
    char *key; /* canonical spelling */
    bool ignored;
    struct slot s;
};

/* A resolved list (borrowed by core_config until the next resolve). */
struct list_cache {
    char *buf;
    const char **items;
};

/* The value a knob gives the option it maps onto, per layer (opt__knob_maps[m]). */
struct mapped {
    int row;    /* the target's row */
    char *v[4]; /* per layer, NULL: the knob is not set there */
};

/*
 * The keys that are not rows are kept in the order first set (extra[]), and found through a
 * growing sorted index of them (core_runs): adding a key is amortized log n moves, finding one
 * log^2 n compares, and a prefix's keys (a plugin's parameters) a binary search per run: no
 * step compares every key with every other, however many a layer brings.
 */
struct opt_job {
    struct extra *extra;
    int n_extra, cap_extra;
    struct core_runs keys;    /* extra[], by key */
    struct list_cache *lists; /* one a row: in the same block, after rows */
    /* opt__knob_maps' values (knobs_refresh); n_mapped 0: no knob is set at any layer */
    struct mapped *mapped; /* one a knob map: in the same block, after lists */
    int n_mapped;
    struct slot rows[]; /* one a row of the table (its count is known at run time only
                           where the table is not in the same file) */
};

#define EXTRA_KEY sizeof(struct extra), offsetof(struct extra, key)

static void slot_clear(struct slot *s, int layer)
{
    free(s->v[layer]);
    s->v[layer] = NULL;
    s->rank[layer] = 0;
}

/* The effective value of a slot: highest layer set; NULL when only the default applies. */
static const char *slot_value(const struct slot *s, enum opt_layer *layer)
{
    for (int l = OPT_REQUEST; l > OPT_BUILTIN; l--)
        if (s->v[l]) {
            if (layer)
                *layer = (enum opt_layer)l;
            return s->v[l];
        }
    if (layer)
        *layer = OPT_BUILTIN;
    return NULL;
}

static void knobs_refresh(struct opt_job *j);

/* Forgets every knob's mapped values. */
static void mapped_clear(struct opt_job *j)
{
    for (int m = 0; m < N_KNOB_MAPS; m++)
        for (int l = 0; l < 4; l++) {
            free(j->mapped[m].v[l]);
            j->mapped[m].v[l] = NULL;
        }
    j->n_mapped = 0;
}

static void lists_free(struct opt_job *j)
{
    for (int i = 0; i < N_ROWS; i++) {
        free(j->lists[i].buf);
        free(j->lists[i].items);
        j->lists[i].buf = NULL;
        j->lists[i].items = NULL;
    }
}

/* Returns "default", "server", "job" or "request" (static). */
const char *opt_layer_name(enum opt_layer l)
{
    static const char *const n[] = {"default", "server", "job", "request"};
    return (unsigned)l < 4 ? n[l] : "?";
}

/* new: an empty set of job options (every value is the table's default). Aborts on OOM. */
struct opt_job *opt_job_new(void)
{
    /* One block: the struct, its rows' slots, their lists, the knobs' mapped values. */
    size_t size = sizeof(struct opt_job) + (size_t)N_ROWS * sizeof(struct slot) +
                  (size_t)N_ROWS * sizeof(struct list_cache) +
                  (size_t)N_KNOB_MAPS * sizeof(struct mapped);
    struct opt_job *j = xmalloc(size);
    memset(j, 0, size);
    j->lists = (struct list_cache *)(void *)(j->rows + N_ROWS);
    j->mapped = (struct mapped *)(void *)(j->lists + N_ROWS);
    return j;
}

/* Frees j and everything it owns (including what a resolved core_config borrows). */
void opt_job_free(struct opt_job *j)
{
    if (!j)
        return;
    for (int i = 0; i < N_ROWS; i++)
        for (int l = 0; l < 4; l++)
            free(j->rows[i].v[l]);
    for (int i = 0; i < j->n_extra; i++) {
        free(j->extra[i].key);
        for (int l = 0; l < 4; l++)
            free(j->extra[i].s.v[l]);
    }
    free(j->extra);
    core_runs_free(&j->keys);
    lists_free(j);
    mapped_clear(j);
    free(j);
}

static void slot_copy(struct slot *dst, const struct slot *src)
{
    for (int l = 0; l < 4; l++) {
        dst->v[l] = src->v[l] ? xstrdup(src->v[l]) : NULL;
        dst->rank[l] = src->rank[l];
    }
}

/* new: a deep copy of j's layers (not of its resolve results). */
struct opt_job *opt_job_clone(const struct opt_job *j)
{
    struct opt_job *c = opt_job_new();
    for (int i = 0; i < N_ROWS; i++)
        slot_copy(&c->rows[i], &j->rows[i]);
    if (j->n_extra) {
        c->extra = xmalloc((size_t)j->n_extra * sizeof *c->extra);
        core_runs_copy(&c->keys, &j->keys);
        c->cap_extra = c->n_extra = j->n_extra;
        for (int i = 0; i < j->n_extra; i++) {
            c->extra[i].key = xstrdup(j->extra[i].key);
            c->extra[i].ignored = j->extra[i].ignored;
            slot_copy(&c->extra[i].s, &j->extra[i].s);
        }
    }
    for (int m = 0; m < N_KNOB_MAPS; m++) {
        c->mapped[m].row = j->mapped[m].row;
        for (int l = 0; l < 4; l++)
            c->mapped[m].v[l] = j->mapped[m].v[l] ? xstrdup(j->mapped[m].v[l]) : NULL;
    }
    c->n_mapped = j->n_mapped;
    return c;
}

/* Removes every value set at layer (rows, plugin keys and ignored keys alike). */
void opt_job_clear_layer(struct opt_job *j, enum opt_layer layer)
{
    if ((unsigned)layer >= 4)
        return;
    for (int i = 0; i < N_ROWS; i++)
        slot_clear(&j->rows[i], layer);
    for (int i = 0; i < j->n_extra; i++)
        slot_clear(&j->extra[i].s, layer);
    knobs_refresh(j);
}

/* Maps a key of a job's config to a row, a plugin parameter, or an ignored key; -1 for an
 * unknown job.autoscaler.* key. */
int opt__lookup_job_key(const char *key, struct key_ref *ref)
{
    const char *k = key;
    int rank = 0;
    memset(ref, 0, sizeof *ref);
    ref->row = -1;
    if (opt__starts_with(k, LEGACY_PREFIX JOB_PREFIX)) {
        k += strlen(LEGACY_PREFIX);
        rank = 2;
    }
    for (int i = 0; i < N_ROWS; i++) {
        const struct opt_row *r = &opt__rows[i];
        if (r->scope == S_SERVER || (rank && r->scope != S_JOB))
            continue;
        if (strcmp(r->name, k) == 0 || (r->alias && strcmp(r->alias, k) == 0)) {
            ref->row = i;
            ref->rank = rank + (strcmp(r->name, k) != 0);
            return 0;
        }
    }
    for (int i = 0; i < opt__n_plugin_prefixes; i++) {
        if (!opt__starts_with(k, opt__plugin_prefixes[i]))
            continue;
        const char *name = k + strlen(opt__plugin_prefixes[i]);
        const char *dot = strchr(name, '.');
        if (dot && opt__is_plugin_name(name, (size_t)(dot - name)) && dot[1]) {
            ref->key = k;
            ref->rank = rank;
            return 0;
        }
    }
    if (opt__starts_with(k, JOB_PREFIX) || opt__starts_with(k, GOV_PREFIX))
        return -1;
    ref->key = key;
    ref->ignored = true;
    return 0;
}

static struct extra *find_extra(const struct opt_job *j, const char *key)
{
    int i = core_runs_find(&j->keys, j->extra, EXTRA_KEY, key);
    return i >= 0 ? &j->extra[i] : NULL;
}

/* Stores value (new copy) in slot s at layer unless a better-ranked spelling is there. */
static void slot_set(struct slot *s, enum opt_layer layer, int rank, char *value_take)
{
    if (s->v[layer] && s->rank[layer] < rank) {
        free(value_take);
        return;
    }
    free(s->v[layer]);
    s->v[layer] = value_take;
    s->rank[layer] = (unsigned char)rank;
}

/* Sets key = value at layer; see options.h. */
int opt_job_set(struct opt_job *j, enum opt_layer layer, const char *key, const char *value,
                char **errp)
{
    char *t = NULL, *e = NULL;
    int rc = -1;
    if (layer <= OPT_BUILTIN || layer > OPT_REQUEST) {
        opt__fail(errp, "%s: cannot be set at the %s layer", key ? key : "", opt_layer_name(layer));
        goto out;
    }
    if (!key || !*key) {
        opt__fail(errp, "an option key is empty");
        goto out;
    }
    if (!value) {
        opt__fail(errp, "%s: no value", key);
        goto out;
    }
    struct key_ref ref;
    if (opt__lookup_job_key(key, &ref) < 0) {
        opt__fail(errp, "%s: unknown option", key);
        goto out;
    }
    t = opt__trim_dup(value);
    if (ref.row >= 0) {
        struct val v;
        if (opt__parse_row_value(&opt__rows[ref.row], t, &v, &e) < 0) {
            opt__fail(errp, "%s: %s", key, e);
            goto out;
        }
        slot_set(&j->rows[ref.row], layer, ref.rank, t);
        t = NULL;
        rc = 0;
        if (opt__starts_with(opt__rows[ref.row].name, GOV_PREFIX "dataflow.") ||
            strcmp(opt__rows[ref.row].name, SLOTS_KEY) == 0)
            knobs_refresh(j);
        goto out;
    }
    struct extra *x = find_extra(j, ref.key);
    if (!x) {
        if (j->n_extra == j->cap_extra) {
            j->cap_extra = j->cap_extra ? 2 * j->cap_extra : 8;
            j->extra = xrealloc(j->extra, (size_t)j->cap_extra * sizeof *j->extra);
        }
        x = &j->extra[j->n_extra];
        memset(x, 0, sizeof *x);
        x->key = xstrdup(ref.key);
        x->ignored = ref.ignored;
        core_runs_add(&j->keys, j->extra, EXTRA_KEY);
        j->n_extra++;
    }
    slot_set(&x->s, layer, ref.rank, t);
    t = NULL;
    rc = 0;
out:
    free(e);
    free(t);
    return rc;
}

/* Splits a ';' list (items trimmed, empty ones dropped) into c; returns the count. With
 * dedupe, a repeated item is dropped (core/README.md, Cycle: duplicate executor names are ignored;
 * the same for evaluators, which governor chains: running one twice is never wanted, and a name
 * repeated thousands of times would be thousands of calls per vertex). */
static int list_split(struct list_cache *c, const char *text, bool dedupe)
{
    c->buf = xstrdup(text);
    c->items = xmalloc((strlen(text) / 2 + 1) * sizeof *c->items);
    int n = 0;
    for (char *p = c->buf; p;) {
        char *semi = strchr(p, ';');
        if (semi)
            *semi = '\0';
        while (isspace((unsigned char)*p))
            p++;
        char *end = p + strlen(p);
        while (end > p && isspace((unsigned char)end[-1]))
            *--end = '\0';
        if (*p)
            c->items[n++] = p;
        p = semi ? semi + 1 : NULL;
    }
    if (!dedupe || n < 2)
        return n;
    /* Keep each item's first place only: the items sorted, an item is kept when it is the
     * first of its run (n log n, whatever the list's length). */
    int *perm = xmalloc((size_t)n * sizeof *perm), *tmp = xmalloc((size_t)n * sizeof *tmp);
    struct core_index x;
    core_index_build(&x, c->items, sizeof *c->items, 0, n, perm, tmp);
    bool *keep = (bool *)tmp;
    memset(keep, 0, (size_t)n * sizeof *keep);
    for (int i = 0; i < n; i++)
        keep[core_index_find(&x, c->items[i])] = true;
    int m = 0;
    for (int i = 0; i < n; i++)
        if (keep[i])
            c->items[m++] = c->items[i];
    free(perm);
    free(tmp);
    return m;
}

/* Writes v (parsed from text, for row r) into the struct at base. */
void opt__land_value(void *base, const struct opt_row *r, const struct val *v, const char *text,
                     enum opt_layer layer, struct opt_job *j, int row)
{
    char *p = (char *)base + r->off;
    switch (r->land) {
    case L_NONE:
        break;
    case L_BOOL:
        *(bool *)p = v->b;
        break;
    case L_INT:
        *(int *)p = (int)v->i;
        break;
    case L_I64:
        *(int64_t *)p = v->unset ? -1 : v->i;
        break;
    case L_DOUBLE:
        *(double *)p = v->unset ? NAN : v->d;
        break;
    case L_DMEM:
        *(double *)p = v->unset ? NAN : (double)v->i;
        break;
    case L_STR:
        if (r->scope == S_SERVER) {
            const char *s = r->type == T_ENUM ? r->values[v->e] : text;
            free(*(char **)p);
            *(char **)p = (v->unset || !*s) ? NULL : xstrdup(s);
        } else {
            *(const char **)p = text;
        }
        break;
    case L_LIST: {
        struct list_cache *c = &j->lists[row];
        int n = list_split(c, text, (r->flags & F_NAMES) != 0);
        *(const char *const **)p = n ? c->items : NULL;
        *(int *)((char *)base + r->off2) = n;
        break;
    }
    case L_HOOK:
        r->apply(base, r, v, text, layer, j);
        break;
    }
}

const struct opt_row *opt__row_by_name(const char *name, int *index)
{
    for (int i = 0; i < N_ROWS; i++)
        if (strcmp(opt__rows[i].name, name) == 0) {
            if (index)
                *index = i;
            return &opt__rows[i];
        }
    return NULL;
}

/* The effective text of row i of j, the layer it came from and the knob that set it (NULL:
 * the option itself, or its default). Per layer, from the highest: the option's own value,
 * else a knob's value mapped onto it. */
static const char *row_value(const struct opt_job *j, int i, enum opt_layer *layer,
                             const char **via)
{
    if (via)
        *via = NULL;
    if (!j->n_mapped) {
        const char *v = slot_value(&j->rows[i], layer);
        return v ? v : opt__rows[i].def;
    }
    for (int l = OPT_REQUEST; l > OPT_BUILTIN; l--) {
        if (j->rows[i].v[l]) {
            if (layer)
                *layer = (enum opt_layer)l;
            return j->rows[i].v[l];
        }
        for (int m = 0; m < N_KNOB_MAPS; m++)
            if (j->mapped[m].row == i && j->mapped[m].v[l]) {
                if (layer)
                    *layer = (enum opt_layer)l;
                if (via)
                    *via = opt__knob_maps[m].knob;
                return j->mapped[m].v[l];
            }
    }
    if (layer)
        *layer = OPT_BUILTIN;
    return opt__rows[i].def;
}

/* The effective text of a row of j and the layer it came from. */
static const char *row_text(const struct opt_job *j, int i, enum opt_layer *layer)
{
    return row_value(j, i, layer, NULL);
}

/*
 * Computes what each knob of j maps onto, per layer (struct mapped): called whenever a knob
 * or the slots row may have changed. A knob's text was checked when it was set; a product
 * that does not fit its option is printed all the same, and refused when the options are
 * resolved, naming the knob.
 */
static void knobs_refresh(struct opt_job *j)
{
    mapped_clear(j);
    int slots_row = 0, n = 0;
    opt__row_by_name(SLOTS_KEY, &slots_row);
    int64_t slots = 1;
    if (opt__parse_int64(row_text(j, slots_row, NULL), &slots) < 0 || slots < 1)
        slots = 1;
    for (int m = 0; m < N_KNOB_MAPS; m++) {
        int knob = 0, target = 0;
        opt__row_by_name(opt__knob_maps[m].knob, &knob);
        opt__row_by_name(opt__knob_maps[m].target, &target);
        j->mapped[m].row = target;
        for (int l = OPT_SERVER; l <= OPT_REQUEST; l++) {
            const char *t = j->rows[knob].v[l];
            int64_t w;
            if (!t || !*t)
                continue;
            switch (opt__knob_maps[m].fn) {
            case KNOB_SAME:
                j->mapped[m].v[l] = xstrdup(t);
                break;
            case KNOB_TIMES_SLOTS:
                if (opt__parse_int64(t, &w) < 0)
                    continue;
                if (w > INT64_MAX / slots)
                    j->mapped[m].v[l] = xasprintf("%.0f", (double)w * (double)slots);
                else
                    j->mapped[m].v[l] = xasprintf("%" PRId64, w * slots);
                break;
            case KNOB_ALGORITHM:
                j->mapped[m].v[l] = xstrdup(strcasecmp(t, "NONE") == 0 ? "false" : "true");
                break;
            }
            n++;
        }
    }
    j->n_mapped = n;
}

/* Whether the legacy adjust.mode key chose an alignment mode: set above the defaults, to a
 * value (core/README.md, Alignment: the legacy mode; apply_adjust_mode lands it). */
bool opt__adjust_mode_set(const struct opt_job *j)
{
    int i = 0;
    const struct opt_row *r =
        opt__row_by_name(JOB_PREFIX "scaling.key-group.partitions.adjust.mode", &i);
    enum opt_layer layer;
    const char *text = row_text(j, i, &layer);
    struct val v;
    return layer != OPT_BUILTIN && opt__parse_row_value(r, text, &v, NULL) == 0 && !v.unset;
}

/* The index of the utilization.target row. */
static int util_target_row(void)
{
    int i = 0;
    opt__row_by_name(JOB_PREFIX "utilization.target", &i);
    return i;
}

/* "key: "text" is out of range [lo, hi]" for a cross-field check. */
static int range_error(char **errp, const struct opt_job *j, const char *name, double lo,
                       int has_lo, double hi, int has_hi)
{
    int i = 0;
    const struct opt_row *r = opt__row_by_name(name, &i);
    char range[128];
    const char *via;
    const char *text = row_value(j, i, NULL, &via);
    opt__fmt_interval(range, sizeof range, r, lo, has_lo, hi, has_hi);
    if (via)
        return opt__fail(errp, "%s: sets %s to \"%s\", out of range %s", via, name, text, range);
    return opt__fail(errp, "%s: \"%s\" is out of range %s", name, text, range);
}

/* Resolves the effective options into cfg and validates them (core/README.md, Options); see
 * options.h. */
int opt_job_resolve(struct opt_job *j, struct core_config *cfg, char **errp)
{
    lists_free(j);
    for (int i = 0; i < N_ROWS; i++) {
        const struct opt_row *r = &opt__rows[i];
        if (r->scope == S_SERVER)
            continue;
        enum opt_layer layer;
        const char *via;
        const char *text = row_value(j, i, &layer, &via);
        struct val v;
        char *e = NULL;
        if (opt__parse_row_value(r, text, &v, &e) < 0) {
            if (via)
                opt__fail(errp, "%s: sets %s, and %s", via, r->name, e);
            else
                opt__fail(errp, "%s: %s", r->name, e);
            free(e);
            return -1;
        }
        opt__land_value(cfg, r, &v, text, layer, j, i);
    }
    if (!cfg->enabled) /* options are validated only when the autoscaler is on (core/README.md,
                          Options) */
        return 0;

    /* The governor profile refuses a target of 0 (every vertex would go to its maximum); the
     * reference, and so the flink profile, accepts [0, 1]. */
    if (cfg->profile == CORE_PROFILE_GOVERNOR && !(cfg->util_target > 0))
        return opt__fail(errp,
                         "%sutilization.target: \"%s\" is out of range (0, 1] (0 is accepted only "
                         "with governor.profile = flink)",
                         JOB_PREFIX, row_text(j, util_target_row(), NULL));
    /* governor.utilization.min-target: a target below the floor (0.01 sends every vertex
     * towards its maximum in one decision) is refused, naming the floor. */
    if (isfinite(cfg->util_min_target) && cfg->util_target < cfg->util_min_target) {
        char fl[32];
        snprintf(fl, sizeof fl, "%g", cfg->util_min_target);
        return opt__fail(errp,
                         "%sutilization.target: \"%s\" is below %sutilization.min-target (%s): a "
                         "target that low sizes every vertex for many times what arrives; lower "
                         "%sutilization.min-target to allow it",
                         JOB_PREFIX, row_text(j, util_target_row(), NULL), GOV_PREFIX, fl,
                         GOV_PREFIX);
    }
    /* The reference's validation, in its order (first error wins; core/README.md, Options). The
     * single-value ranges of the ungated rows were checked when each value was set; what is left
     * are the bounds that depend on another option and the ranges that count only when their
     * feature is on. */
    if (!isnan(cfg->util_max) && !(cfg->util_max >= cfg->util_target && cfg->util_max <= 1))
        return range_error(errp, j, JOB_PREFIX "utilization.max", cfg->util_target, 1, 1.0, 1);
    if (!isnan(cfg->util_min) && !(cfg->util_min >= 0 && cfg->util_min <= cfg->util_target))
        return range_error(errp, j, JOB_PREFIX "utilization.min", 0.0, 1, cfg->util_target, 1);
    if (cfg->batch.min_workers > cfg->batch.max_workers)
        return range_error(errp, j, GOV_PREFIX "batch.max-workers", cfg->batch.min_workers, 1,
                           INFINITY, 0);
    static const char *const gated[] = {
        JOB_PREFIX "observed-scalability.coefficient-min",
        JOB_PREFIX "scaling.effectiveness.threshold",
        JOB_PREFIX "memory.tuning.overhead",
    };
    for (size_t k = 0; k < sizeof gated / sizeof gated[0]; k++) {
        const struct opt_row *r = opt__row_by_name(gated[k], NULL);
        int g = 0;
        opt__row_by_name(r->gate, &g);
        bool on = false;
        opt_parse_bool(row_text(j, g, NULL), &on, NULL);
        double x = *(const double *)((const char *)cfg + r->off);
        if (on && !opt__in_range(r, x))
            return range_error(errp, j, r->name, r->min, r->has_min, r->max, r->has_max);
    }
    if (cfg->vertex_min_parallelism > cfg->vertex_max_parallelism)
        return range_error(errp, j, JOB_PREFIX "vertex.min-parallelism", 1.0, 1,
                           (double)cfg->vertex_max_parallelism, 1);
    if (*cfg->excluded_periods) {
        char *e = NULL;
        if (cron_validate(cfg->excluded_periods, &e) < 0) {
            opt__fail(errp, "%sexcluded.periods: \"%s\" is not a valid excluded period: %s",
                      JOB_PREFIX, cfg->excluded_periods, e ? e : "invalid");
            free(e);
            return -1;
        }
    }
    return 0;
}

/* The built-in defaults: a job without options, resolved. Its strings are the table's. */
void opt_config_defaults(struct core_config *cfg)
{
    struct opt_job *j = opt_job_new();
    if (opt_job_resolve(j, cfg, NULL) < 0)
        abort(); /* a bad default in the table: caught by the tests */
    opt_job_free(j);
}

void opt_config_set_profile(struct core_config *cfg, enum core_profile p)
{
    struct val unset = {.unset = true};
    cfg->profile = p;
    for (int i = 0; i < N_ROWS; i++)
        if (opt__rows[i].apply == opt__apply_safeguard ||
            opt__rows[i].apply == opt__apply_profile_double ||
            opt__rows[i].apply == opt__apply_profile_int)
            opt__rows[i].apply(cfg, &opt__rows[i], &unset, NULL, OPT_BUILTIN, NULL);
}

/* Indices of the set plugin keys of j, sorted by key (new array, *n entries): n log n. */
static int *plugin_keys_sorted(const struct opt_job *j, int *n)
{
    size_t cap = (size_t)j->n_extra + 1;
    int *idx = xmalloc(cap * sizeof *idx), *tmp = xmalloc(cap * sizeof *tmp);
    struct core_index x;
    core_index_build(&x, j->extra, sizeof *j->extra, offsetof(struct extra, key), j->n_extra, idx,
                     tmp);
    int m = 0;
    for (int k = 0; k < j->n_extra; k++) {
        const struct extra *e = &j->extra[idx[k]];
        if (!e->ignored && slot_value(&e->s, NULL))
            idx[m++] = idx[k];
    }
    free(tmp);
    *n = m;
    return idx;
}

/* Reports every JOB and CLUSTER row (table order), then the set plugin keys (sorted), each
 * with the knob that set it (NULL: none). */
void opt_job_each_via(const struct opt_job *j,
                      void (*fn)(void *ud, const char *key, const char *value, enum opt_layer layer,
                                 const char *via),
                      void *ud)
{
    for (int i = 0; i < N_ROWS; i++) {
        if (opt__rows[i].scope == S_SERVER)
            continue;
        enum opt_layer layer;
        const char *via;
        const char *text = row_value(j, i, &layer, &via);
        fn(ud, opt__rows[i].name, text, layer, via);
    }
    int n = 0;
    int *idx = plugin_keys_sorted(j, &n);
    for (int k = 0; k < n; k++) {
        enum opt_layer layer;
        const char *text = slot_value(&j->extra[idx[k]].s, &layer);
        fn(ud, j->extra[idx[k]].key, text, layer, NULL);
    }
    free(idx);
}

struct each_adapter {
    void (*fn)(void *ud, const char *key, const char *value, enum opt_layer layer);
    void *ud;
};

static void each_adapt(void *ud, const char *key, const char *value, enum opt_layer layer,
                       const char *via)
{
    struct each_adapter *a = ud;
    (void)via;
    a->fn(a->ud, key, value, layer);
}

/* opt_job_each_via without the knob. */
void opt_job_each(const struct opt_job *j,
                  void (*fn)(void *ud, const char *key, const char *value, enum opt_layer layer),
                  void *ud)
{
    struct each_adapter a = {fn, ud};
    opt_job_each_via(j, each_adapt, &a);
}

static int cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

/* Reports the set plugin keys under prefix, with the prefix stripped, in the order first set:
 * a binary search of each run of the key index finds them, then only they are looked at. */
void opt_job_params(const struct opt_job *j, const char *prefix,
                    void (*fn)(void *ud, const char *param, const char *value), void *ud)
{
    size_t n = strlen(prefix);
    int *hit = NULL, n_hit = core_runs_prefix(&j->keys, j->extra, EXTRA_KEY, prefix, &hit);
    if (n_hit > 1)
        qsort(hit, (size_t)n_hit, sizeof *hit, cmp_int);
    for (int k = 0; k < n_hit; k++) {
        const struct extra *e = &j->extra[hit[k]];
        const char *v = slot_value(&e->s, NULL);
        if (!e->ignored && v && e->key[n])
            fn(ud, e->key + n, v);
    }
    free(hit);
}

/* Number of ignored keys set at any layer. */
int opt_job_n_warnings(const struct opt_job *j)
{
    int n = 0;
    for (int i = 0; i < j->n_extra; i++)
        if (j->extra[i].ignored && slot_value(&j->extra[i].s, NULL))
            n++;
    return n;
}

/* The ignored keys (borrowed) in the order first set, at most cap of them into out; how many
 * there are. */
int opt_job_warnings(const struct opt_job *j, const char **out, int cap)
{
    int n = 0;
    for (int k = 0; k < j->n_extra; k++)
        if (j->extra[k].ignored && slot_value(&j->extra[k].s, NULL)) {
            if (n < cap)
                out[n] = j->extra[k].key;
            n++;
        }
    return n;
}

struct kv {
    const char *key, *value;
};

static int cmp_kv(const void *a, const void *b)
{
    return strcmp(((const struct kv *)a)->key, ((const struct kv *)b)->key);
}

static uint64_t fnv1a(uint64_t h, const char *s)
{
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 0x100000001b3ULL;
    }
    return h;
}

/* FNV-1a 64 over "key=value\n" for every effective key (rows and plugin keys), sorted by
 * key; ignored keys do not count. Values are hashed as written ("5 min" != "5min"). */
void opt_job_hash(const struct opt_job *j, char out[17])
{
    struct kv *kv = xmalloc(((size_t)N_ROWS + (size_t)j->n_extra) * sizeof *kv);
    int n = 0;
    for (int i = 0; i < N_ROWS; i++)
        if (opt__rows[i].scope != S_SERVER)
            kv[n++] = (struct kv){opt__rows[i].name, row_text(j, i, NULL)};
    for (int i = 0; i < j->n_extra; i++) {
        const char *v = slot_value(&j->extra[i].s, NULL);
        if (!j->extra[i].ignored && v)
            kv[n++] = (struct kv){j->extra[i].key, v};
    }
    qsort(kv, (size_t)n, sizeof *kv, cmp_kv);
    uint64_t h = 0xcbf29ce484222325ULL;
    for (int i = 0; i < n; i++) {
        h = fnv1a(h, kv[i].key);
        h = fnv1a(h, "=");
        h = fnv1a(h, kv[i].value);
        h = fnv1a(h, "\n");
    }
    free(kv);
    snprintf(out, 17, "%016" PRIx64, h);
}
