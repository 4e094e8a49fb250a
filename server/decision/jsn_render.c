/*
 * jsn_render.c - a struct core_decision into the response object (jansson), and the figures
 * printed straight to text for the stored vertex rows.
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
#include "base/text.h"
#include "base/xmem.h"

/* ------------------------------------------------------------- render -- */

/* new: a real, or null when not finite. */
json_t *jsn__real_or_null(double x)
{
    return isfinite(x) ? json_real(x) : json_null();
}

json_t *jsn_render_evaluated(const struct core_evaluated *ev)
{
    json_t *o = json_object();
    for (int i = 0; i < CORE_N_FIGURES; i++) {
        double x = core_figure_get(ev, i);
        if (isfinite(x) || !(core_figures[i].flags & CORE_FIG_ASSESSED))
            json_object_set_new(o, core_figures[i].name, jsn__real_or_null(x));
    }
    return o;
}

/* Writes the decimal digits of v at p; returns their count. */
static size_t uint_text(char *p, unsigned long long v)
{
    char t[24];
    size_t n = 0;
    do {
        t[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    for (size_t i = 0; i < n; i++)
        p[i] = t[n - 1 - i];
    return n;
}

/* Writes v as "%lld" (jansson's JSON_INTEGER_FORMAT) at p; returns the length. */
size_t jsn__int_text(char *p, long long v)
{
    if (v >= 0)
        return uint_text(p, (unsigned long long)v);
    *p = '-';
    return 1 + uint_text(p + 1, 0ULL - (unsigned long long)v);
}

/*
 * Prints the finite x at p as jansson prints a real with JSON_REAL_PRECISION(15) (its
 * jsonp_dtostr): "%.15g", ".0" added when that reads as an integer, and the exponent without
 * '+' or leading zeros ("1e20", "1.5e-5"). Returns the length; p has room for 32.
 *
 * The core rounds its figures to 3 decimals: when x is the double nearest to k / 1000 for an
 * integer k with |k| < 1e15 (15 digits), "%.15g" prints exactly k / 1000 (the double is
 * within 2^-53 of it, well inside half a unit of the 15th digit) without an exponent, so it
 * is written here digit by digit; anything else goes through snprintf.
 */
static size_t real15(char *p, double x)
{
    if (fabs(x) < 1e12 && x != 0) {
        double r = nearbyint(x * 1000.0);
        long long k = (long long)r;
        if ((double)k / 1000.0 == x) {
            size_t n = 0;
            unsigned long long a = k < 0 ? 0ULL - (unsigned long long)k : (unsigned long long)k;
            unsigned f = (unsigned)(a % 1000);
            if (k < 0)
                p[n++] = '-';
            n += uint_text(p + n, a / 1000);
            p[n++] = '.';
            if (f == 0) {
                p[n++] = '0';
            } else {
                p[n++] = (char)('0' + f / 100);
                if (f % 100) {
                    p[n++] = (char)('0' + f / 10 % 10);
                    if (f % 10)
                        p[n++] = (char)('0' + f % 10);
                }
            }
            p[n] = '\0';
            return n;
        }
    }
    size_t n = (size_t)snprintf(p, 32, "%.15g", x);
    if (!strchr(p, '.') && !strchr(p, 'e')) {
        memcpy(p + n, ".0", 3);
        n += 2;
    }
    char *e = strchr(p, 'e');
    if (e) {
        char *start = e + 1, *end = e + 2;
        if (*start == '-')
            start++;
        while (*end == '0')
            end++;
        memmove(start, end, n + 1 - (size_t)(end - p));
        n -= (size_t)(end - start);
    }
    return n;
}

/* Room for the text of one evaluated object: every figure with its name. */
size_t jsn__evaluated_room(void)
{
    size_t cap = 3;
    for (int i = 0; i < CORE_N_FIGURES; i++)
        cap += strlen(core_figures[i].name) + 4 + 32; /* ,"name": and the number */
    return cap;
}

/* Prints ev's object at t (jsn__evaluated_room() bytes); returns the length. */
size_t jsn__evaluated_print(char *t, const struct core_evaluated *ev)
{
    char *p = t;
    *p++ = '{';
    for (int i = 0; i < CORE_N_FIGURES; i++) {
        double x = core_figure_get(ev, i);
        if (!isfinite(x) && (core_figures[i].flags & CORE_FIG_ASSESSED))
            continue;
        if (p > t + 1)
            *p++ = ',';
        size_t kn = strlen(core_figures[i].name);
        *p++ = '"';
        memcpy(p, core_figures[i].name, kn);
        p += kn;
        *p++ = '"';
        *p++ = ':';
        if (isfinite(x)) {
            p += real15(p, x);
        } else {
            memcpy(p, "null", 4);
            p += 4;
        }
    }
    *p++ = '}';
    *p = '\0';
    return (size_t)(p - t);
}

char *jsn_evaluated_text(const struct core_evaluated *ev)
{
    char *t = xmalloc(jsn__evaluated_room());
    jsn__evaluated_print(t, ev);
    return t;
}

json_t *jsn_render_constraints(unsigned bits)
{
    json_t *a = json_array();
    for (int bit = 0; bit < CORE_C__COUNT; bit++)
        if (bits & (1u << bit))
            json_array_append_new(a, json_string(core_constraint_name(bit)));
    return a;
}

/* new: one vertex's decision, its fields as the core's table lists them. */
static json_t *render_vertex(const struct core_vdecision *v)
{
    json_t *o = json_object();
    for (int i = 0; i < core_n_vfields; i++) {
        const void *at = core_vfield_at(v, i);
        json_t *x = NULL;
        switch (core_vfields[i].type) {
        case CORE_VF_TEXT:
            x = *(const char *const *)at ? text_json_string(*(const char *const *)at) : NULL;
            break;
        case CORE_VF_INT:
            x = json_integer(*(const int *)at);
            break;
        case CORE_VF_BOOL:
            x = json_boolean(*(const bool *)at);
            break;
        case CORE_VF_REASON:
            x = json_string(core_reason_name(*(const enum core_reason *)at));
            break;
        case CORE_VF_CONSTRAINTS:
            x = jsn_render_constraints(*(const unsigned *)at);
            break;
        case CORE_VF_EVALUATED:
            x = jsn_render_evaluated(at);
            break;
        }
        if (x)
            json_object_set_new(o, core_vfields[i].name, x);
    }
    return o;
}

/* new: event e, its members as the core's table lists them. */
static json_t *render_event(const struct core_event *e)
{
    json_t *o = json_object();
    for (int i = 0; i < core_n_efields; i++) {
        const void *at = core_efield_at(e, i);
        const char *s = NULL;
        json_t *x = NULL;
        switch (core_efields[i].type) {
        case CORE_EF_TEXT0:
            s = *(const char *const *)at;
            x = text_json_string(s ? s : "");
            break;
        case CORE_EF_TEXT:
            x = text_json_string(*(const char *const *)at);
            break;
        case CORE_EF_INT:
            x = json_integer(*(const int *)at);
            break;
        case CORE_EF_BOOL:
            x = json_boolean(*(const bool *)at);
            break;
        }
        json_object_set_new(o, core_efields[i].name, x);
    }
    return o;
}

json_t *jsn_render_member(const struct core_decision *d, int i, const char *const *args)
{
    const struct core_dfield *f = &core_dfields[i];
    const void *at = core_dfield_at(d, i);
    json_t *x = NULL;
    const char *s;
    switch (f->type) {
    case CORE_DF_ARG:
        return text_json_string(args[f->arg]);
    case CORE_DF_TEXT:
        s = *(const char *const *)at;
        return text_json_string(s ? s : "");
    case CORE_DF_INT64:
        return json_integer(*(const int64_t *)at);
    case CORE_DF_BOOL:
        return json_boolean(*(const bool *)at);
    case CORE_DF_ACTION:
        return json_string(core_action_name(*(const enum core_action *)at));
    case CORE_DF_REASON:
        return json_string(core_reason_name(*(const enum core_reason *)at));
    case CORE_DF_TARGETS:
        x = json_object();
        for (int k = 0; k < d->n_vertices; k++)
            json_object_set_new(x, d->vertices[k].id, json_integer(d->vertices[k].target));
        return x;
    case CORE_DF_VERTICES:
        x = json_array();
        for (int k = 0; k < d->n_vertices; k++)
            json_array_append_new(x, render_vertex(&d->vertices[k]));
        return x;
    case CORE_DF_EVENTS:
        x = json_array();
        for (int k = 0; k < d->n_events; k++)
            json_array_append_new(x, render_event(&d->events[k]));
        return x;
    case CORE_DF_KVS:
        if (core_dfield_n(d, i) <= 0)
            return NULL;
        x = json_object();
        for (int k = 0; k < core_dfield_n(d, i); k++) {
            const struct core_kv *kv = &(*(const struct core_kv *const *)at)[k];
            json_object_set_new(x, kv->key, text_json_string(kv->value));
        }
        return x;
    case CORE_DF_TEXTS:
        if (core_dfield_n(d, i) <= 0)
            return NULL;
        x = json_array();
        for (int k = 0; k < core_dfield_n(d, i); k++)
            json_array_append_new(x, text_json_string((*(const char *const *const *)at)[k]));
        return x;
    }
    return NULL;
}

json_t *jsn_render_decision(const struct core_decision *d, const char *job,
                            const char *policy_revision, const char *config_hash)
{
    const char *args[CORE_DARG__N] = {job, policy_revision, config_hash};
    json_t *o = json_object();
    for (int i = 0; i < core_n_dfields; i++) {
        json_t *x = jsn_render_member(d, i, args);
        if (x)
            json_object_set_new(o, core_dfields[i].name, x);
    }
    return o;
}
