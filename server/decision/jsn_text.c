/*
 * jsn_text.c - the response printed as text straight from the decision, the bytes jansson
 * would print of jsn_render_decision's object.
 */
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stddef.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "decision/jsn.h"
#include "decision/jsn_int.h"
#include "core/index.h"
#include "base/text.h"
#include "base/xmem.h"

/* ------------------------------------------------------- render as text -- */

void jsn_text_init(struct jsn_text *t)
{
    memset(t, 0, sizeof *t);
}

void jsn_text_deinit(struct jsn_text *t)
{
    text_free(&t->b);
    free(t->vspan);
    memset(t, 0, sizeof *t);
}

/* Makes room for more bytes (and a NUL) after the text; returns where they go. */
static char *tx_room(struct jsn_text *t, size_t more)
{
    return text_room(&t->b, more);
}

static void tx_put(struct jsn_text *t, const char *s, size_t n)
{
    memcpy(tx_room(t, n), s, n);
    t->b.n += n;
}

#define TX_LIT(t, lit) tx_put((t), (lit), sizeof(lit) - 1)

static void tx_int(struct jsn_text *t, long long v)
{
    t->b.n += jsn__int_text(tx_room(t, 24), v);
}

/* A string as jansson's compact dump writes it (text_json_str). */
static void tx_str(struct jsn_text *t, const char *s)
{
    text_json_str(&t->b, s);
}

/* "key": (key is plain ASCII: the core's and the options' names). */
static void tx_key(struct jsn_text *t, const char *key)
{
    tx_str(t, key);
    TX_LIT(t, ":");
}

static void tx_constraints(struct jsn_text *t, unsigned bits)
{
    TX_LIT(t, "[");
    bool first = true;
    for (int bit = 0; bit < CORE_C__COUNT; bit++)
        if (bits & (1u << bit)) {
            if (!first)
                TX_LIT(t, ",");
            first = false;
            tx_str(t, core_constraint_name(bit));
        }
    TX_LIT(t, "]");
}

/* One vertex's decision (render_vertex's object); records where its constraints and
 * evaluated texts are in span. */
static void tx_vertex(struct jsn_text *t, const struct core_vdecision *v,
                      struct jsn_text_vspan *span)
{
    TX_LIT(t, "{");
    bool first = true;
    for (int i = 0; i < core_n_vfields; i++) {
        const void *at = core_vfield_at(v, i);
        if (core_vfields[i].type == CORE_VF_TEXT && !*(const char *const *)at)
            continue;
        if (!first)
            TX_LIT(t, ",");
        first = false;
        tx_key(t, core_vfields[i].name);
        switch (core_vfields[i].type) {
        case CORE_VF_TEXT:
            tx_str(t, *(const char *const *)at);
            break;
        case CORE_VF_INT:
            tx_int(t, *(const int *)at);
            break;
        case CORE_VF_BOOL:
            if (*(const bool *)at)
                TX_LIT(t, "true");
            else
                TX_LIT(t, "false");
            break;
        case CORE_VF_REASON:
            tx_str(t, core_reason_name(*(const enum core_reason *)at));
            break;
        case CORE_VF_CONSTRAINTS:
            span->constraints = t->b.n;
            tx_constraints(t, *(const unsigned *)at);
            span->constraints_len = t->b.n - span->constraints;
            break;
        case CORE_VF_EVALUATED:
            span->evaluated = t->b.n;
            t->b.n += jsn__evaluated_print(tx_room(t, jsn__evaluated_room()), at);
            span->evaluated_len = t->b.n - span->evaluated;
            break;
        }
    }
    TX_LIT(t, "}");
}

/* The key of element i of an array of n structs of size stride, the key at offset off. */
struct keyed {
    const char *base;
    size_t stride, off;
    int n;
};

static const char *key_at(const struct keyed *k, int i)
{
    return *(const char *const *)(k->base + (size_t)i * k->stride + k->off);
}

/*
 * An object of k's elements as jansson builds it with json_object_set_new: a key that is not
 * UTF-8 is refused (left out), and a key set again keeps its first place and takes the last
 * value. val prints element i's value.
 */
static void tx_object(struct jsn_text *t, const struct keyed *k, const void *ud,
                      void (*val)(struct jsn_text *t, const void *ud, int i))
{
    /* The elements sorted by key: each key's run gives its first place and its last value
     * (n log n; comparing every pair made a large answer quadratic). */
    size_t n = (size_t)(k->n > 0 ? k->n : 1);
    int *perm = xmalloc(n * sizeof *perm), *last = xmalloc(n * sizeof *last);
    struct core_index x;
    core_index_build(&x, k->base, k->stride, k->off, k->n, perm, last);
    for (int i = 0; i < k->n; i++)
        last[i] = -1;
    for (int a = 0, b; a < k->n; a = b) {
        const char *key = key_at(k, perm[a]);
        for (b = a + 1; b < k->n && strcmp(key_at(k, perm[b]), key) == 0; b++)
            ;
        last[perm[a]] = perm[b - 1];
    }
    TX_LIT(t, "{");
    bool first = true;
    for (int i = 0; i < k->n; i++) {
        const char *key = key_at(k, i);
        if (last[i] < 0 || !text_utf8_valid(key))
            continue;
        if (!first)
            TX_LIT(t, ",");
        first = false;
        tx_key(t, key);
        val(t, ud, last[i]);
    }
    TX_LIT(t, "}");
    free(perm);
    free(last);
}

static void target_val(struct jsn_text *t, const void *ud, int i)
{
    tx_int(t, ((const struct core_vdecision *)ud)[i].target);
}

static void kv_val(struct jsn_text *t, const void *ud, int i)
{
    tx_str(t, ((const struct core_kv *)ud)[i].value);
}

/* "name": for a member of the core's tables (plain ASCII: no escape to look for). */
static void tx_name(struct jsn_text *t, const char *name)
{
    size_t n = strlen(name);
    char *p = tx_room(t, n + 3);
    p[0] = '"';
    memcpy(p + 1, name, n);
    p[n + 1] = '"';
    p[n + 2] = ':';
    t->b.n += n + 3;
}

static void tx_bool(struct jsn_text *t, bool b)
{
    if (b)
        TX_LIT(t, "true");
    else
        TX_LIT(t, "false");
}

/* One event (render_event's object). */
static void tx_event(struct jsn_text *t, const struct core_event *e)
{
    TX_LIT(t, "{");
    for (int i = 0; i < core_n_efields; i++) {
        const void *at = core_efield_at(e, i);
        const char *s;
        if (i)
            TX_LIT(t, ",");
        tx_name(t, core_efields[i].name);
        switch (core_efields[i].type) {
        case CORE_EF_TEXT0:
            s = *(const char *const *)at;
            tx_str(t, s ? s : "");
            break;
        case CORE_EF_TEXT:
            tx_str(t, *(const char *const *)at);
            break;
        case CORE_EF_INT:
            tx_int(t, *(const int *)at);
            break;
        case CORE_EF_BOOL:
            tx_bool(t, *(const bool *)at);
            break;
        }
    }
    TX_LIT(t, "}");
}

/* Whether member i of d is in the response (an empty list or object of changes is not). */
static bool shown(const struct core_decision *d, int i)
{
    enum core_dfield_type ty = core_dfields[i].type;
    return (ty != CORE_DF_KVS && ty != CORE_DF_TEXTS) || core_dfield_n(d, i) > 0;
}

/* The value of member i of d (jsn_render_member's, as text). */
static void tx_member(struct jsn_text *t, const struct core_decision *d, int i,
                      const char *const *args)
{
    const struct core_dfield *f = &core_dfields[i];
    const void *at = core_dfield_at(d, i);
    const char *s;
    switch (f->type) {
    case CORE_DF_ARG:
        tx_str(t, args[f->arg]);
        break;
    case CORE_DF_TEXT:
        s = *(const char *const *)at;
        tx_str(t, s ? s : "");
        break;
    case CORE_DF_INT64:
        tx_int(t, *(const int64_t *)at);
        break;
    case CORE_DF_BOOL:
        tx_bool(t, *(const bool *)at);
        break;
    case CORE_DF_ACTION:
        tx_str(t, core_action_name(*(const enum core_action *)at));
        break;
    case CORE_DF_REASON:
        tx_str(t, core_reason_name(*(const enum core_reason *)at));
        break;
    case CORE_DF_TARGETS: {
        struct keyed ids = {(const char *)d->vertices, sizeof *d->vertices,
                            offsetof(struct core_vdecision, id), d->n_vertices};
        tx_object(t, &ids, d->vertices, target_val);
        break;
    }
    case CORE_DF_VERTICES:
        TX_LIT(t, "[");
        for (int k = 0; k < d->n_vertices; k++) {
            if (k)
                TX_LIT(t, ",");
            tx_vertex(t, &d->vertices[k], &t->vspan[k]);
        }
        TX_LIT(t, "]");
        break;
    case CORE_DF_EVENTS:
        TX_LIT(t, "[");
        for (int k = 0; k < d->n_events; k++) {
            if (k)
                TX_LIT(t, ",");
            tx_event(t, &d->events[k]);
        }
        TX_LIT(t, "]");
        break;
    case CORE_DF_KVS: {
        const struct core_kv *kv = *(const struct core_kv *const *)at;
        struct keyed keys = {(const char *)kv, sizeof *kv, offsetof(struct core_kv, key),
                             core_dfield_n(d, i)};
        tx_object(t, &keys, kv, kv_val);
        break;
    }
    case CORE_DF_TEXTS:
        TX_LIT(t, "[");
        for (int k = 0; k < core_dfield_n(d, i); k++) {
            if (k)
                TX_LIT(t, ",");
            tx_str(t, (*(const char *const *const *)at)[k]);
        }
        TX_LIT(t, "]");
        break;
    }
}

/* "warnings":[...] (json_string refuses a text that is not UTF-8: that warning is left out). */
static void tx_warnings(struct jsn_text *t, const char *const *warnings, int n_warnings)
{
    TX_LIT(t, "\"warnings\":[");
    bool first = true;
    for (int i = 0; i < n_warnings; i++) {
        if (!warnings[i] || !text_utf8_valid(warnings[i]))
            continue;
        if (!first)
            TX_LIT(t, ",");
        first = false;
        tx_str(t, warnings[i]);
    }
    TX_LIT(t, "]");
}

void jsn_decision_text(struct jsn_text *t, const struct core_decision *d, const char *job,
                       const char *policy_revision, const char *config_hash, bool with_warnings,
                       const char *const *warnings, int n_warnings)
{
    const char *args[CORE_DARG__N] = {job, policy_revision, config_hash};
    t->b.n = 0;
    if (t->vcap < d->n_vertices) {
        t->vcap = d->n_vertices;
        t->vspan = xrealloc(t->vspan, (size_t)t->vcap * sizeof *t->vspan);
    }
    TX_LIT(t, "{");
    bool first = true;
    for (int i = 0; i < core_n_dfields; i++) {
        if (!shown(d, i))
            continue;
        if (!first)
            TX_LIT(t, ",");
        first = false;
        tx_name(t, core_dfields[i].name);
        tx_member(t, d, i, args);
    }
    if (with_warnings) {
        TX_LIT(t, ",");
        tx_warnings(t, warnings, n_warnings);
    }
    TX_LIT(t, "}");
    t->b.p[t->b.n] = '\0';
}

void jsn_rest_text(struct jsn_text *t, const struct core_decision *d, bool with_warnings,
                   const char *const *warnings, int n_warnings)
{
    static const char *const none[CORE_DARG__N] = {NULL};
    bool any = false;
    t->b.n = 0;
    TX_LIT(t, "{");
    for (int i = 0; i < core_n_dfields; i++) {
        if (core_dfields[i].store != CORE_DS_REST || !shown(d, i))
            continue;
        if (any)
            TX_LIT(t, ",");
        any = true;
        tx_name(t, core_dfields[i].name);
        tx_member(t, d, i, none);
    }
    if (with_warnings) {
        if (any)
            TX_LIT(t, ",");
        any = true;
        tx_warnings(t, warnings, n_warnings);
    }
    TX_LIT(t, "}");
    if (!any)
        t->b.n = 0;
    t->b.p[t->b.n] = '\0';
}
