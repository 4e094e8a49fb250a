/*
 * pack.c - compact forms of stored history (see pack.h).
 */
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/text.h"
#include "base/xmem.h"
#include "store/pack.h"

const char *const pack_figure_names[] = {"load",
                                         "true_processing_rate",
                                         "target_data_rate",
                                         "catch_up_data_rate",
                                         "lag",
                                         "scale_up_rate_threshold",
                                         "scale_down_rate_threshold",
                                         "expected_processing_rate",
                                         "parallelism",
                                         "max_parallelism",
                                         "num_source_partitions",
                                         "busy_max_avg_ratio",
                                         "hot_key_share",
                                         "key_rate_bound",
                                         "salting_fanout",
                                         NULL};

/* Form 1's dictionary: entry i is written as the byte codes[i]. Append only; every entry
 * starts with one of STARTS. */
#define E(text)                                                                                    \
    {                                                                                              \
        text, sizeof text - 1                                                                      \
    }
static const struct {
    const char *s;
    size_t n;
} dict[] = {
    E("{\"id\":\""),
    E("\",\"parallelism\":"),
    E(",\"max_parallelism\":"),
    E(",\"inputs\":["),
    E("{\"from\":\""),
    E("\",\"ship\":\"HASH\"}"),
    E("\",\"ship\":\"FORWARD\"}"),
    E("\",\"ship\":\"REBALANCE\"}"),
    E("],\"metrics\":{\"busy_ms_per_s\":"),
    E("\"busy_ms_per_s\":"),
    E("{\"min\":"),
    E(",\"avg\":"),
    E(",\"max\":"),
    E(",\"backpressured_ms_per_s\":"),
    E(",\"pending_records\":"),
    E(",\"records_in\":"),
    E(",\"records_out\":"),
    E(",\"records_in_per_s\":"),
    E(",\"records_out_per_s\":"),
    E(",\"partitions\":"),
    E("{\"at\":"),
    E(",\"running_since\":"),
    E(",\"status\":\"RUNNING\""),
    E(",\"vertices\":["),
    E("\"job.autoscaler."),
    E(",\"config\":{"),
    E("}},{\"id\":\""),
    E("]}"),
};
#undef E
#define STARTS "{\",]}"
static const unsigned char codes[] = {1,  2,  3,  4,  5,  6,  7,  8,  11, 12, 14, 15, 16, 17,
                                      18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31};
#define N_DICT ((int)(sizeof dict / sizeof dict[0]))
_Static_assert(sizeof dict / sizeof dict[0] == sizeof codes, "one code per entry");

/* Whether byte c is one of form 1's codes (then *entry is its index). */
static bool is_code(unsigned char c, int *entry)
{
    static const signed char index[32] = {-1, 0,  1,  2,  3,  4,  5,  6,  7,  -1, -1,
                                          8,  9,  -1, 10, 11, 12, 13, 14, 15, 16, 17,
                                          18, 19, 20, 21, 22, 23, 24, 25, 26, 27};
    if (c >= 32 || index[c] < 0)
        return false;
    *entry = index[c];
    return true;
}

void pack_input(const char *text, size_t len, unsigned char **out, size_t *out_len)
{
    unsigned char *o = xmalloc(len + 1), *p = o;
    bool in_str = false, esc = false;
    int e;
    /* Form 1 only holds text without raw bytes in the code range. */
    for (size_t i = 0; i < len; i++)
        if ((unsigned char)text[i] < 32 && (is_code((unsigned char)text[i], &e) || !text[i]))
            goto raw;

    /* The whitespace outside strings first: o holds the compact text after its form byte. */
    *p++ = 1;
    char *compact = xmalloc(len + 1);
    size_t n = 0;
    for (size_t i = 0; i < len; i++) {
        char c = text[i];
        if (in_str) {
            if (esc)
                esc = false;
            else if (c == '\\')
                esc = true;
            else if (c == '"')
                in_str = false;
        } else if (c == '"') {
            in_str = true;
        } else if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
            continue;
        }
        compact[n++] = c;
    }
    /* Then each longest dictionary match becomes its code. */
    for (size_t i = 0; i < n;) {
        int best = -1;
        size_t best_len = 0;
        bool may = strchr(STARTS, compact[i]) != NULL;
        for (int k = 0; may && k < N_DICT; k++) {
            size_t m = dict[k].n;
            if (dict[k].s[0] == compact[i] && m > best_len && m <= n - i &&
                memcmp(compact + i, dict[k].s, m) == 0) {
                best = k;
                best_len = m;
            }
        }
        if (best >= 0) {
            *p++ = codes[best];
            i += best_len;
        } else {
            *p++ = (unsigned char)compact[i++];
        }
    }
    free(compact);
    *out = o;
    *out_len = (size_t)(p - o);
    return;
raw:
    o = xrealloc(o, len + 1);
    o[0] = 0;
    memcpy(o + 1, text, len);
    *out = o;
    *out_len = len + 1;
}

char *pack_input_text(const void *blob, size_t len)
{
    const unsigned char *b = blob;
    if (!b || len < 1)
        return NULL;
    if (b[0] == 0) {
        char *t = xmalloc(len);
        memcpy(t, b + 1, len - 1);
        t[len - 1] = '\0';
        return t;
    }
    if (b[0] != 1)
        return NULL;
    size_t n = 0;
    int e;
    for (size_t i = 1; i < len; i++)
        n += is_code(b[i], &e) ? dict[e].n : 1;
    char *t = xmalloc(n + 1), *p = t;
    for (size_t i = 1; i < len; i++) {
        if (is_code(b[i], &e)) {
            size_t m = dict[e].n;
            memcpy(p, dict[e].s, m);
            p += m;
        } else {
            *p++ = (char)b[i];
        }
    }
    *p = '\0';
    return t;
}

/* The end of the value token at s (a number, null, true, false): the next ',' ']' '}'. */
static const char *token_end(const char *s)
{
    while (*s && *s != ',' && *s != '}' && *s != ']')
        s++;
    return s;
}

static bool is_scalar(const char *s, size_t n)
{
    if (n == 0)
        return false;
    if (n == 4 && memcmp(s, "null", 4) == 0)
        return true;
    for (size_t i = 0; i < n; i++)
        if (!strchr("0123456789+-.eE", s[i]))
            return false;
    return true;
}

char *pack_figures(const char *ev)
{
    if (!ev || ev[0] != '{')
        return NULL;
    size_t cap = strlen(ev) + 8 * sizeof pack_figure_names / sizeof pack_figure_names[0] + 8;
    char *o = xmalloc(cap), *p = o;
    const char *s = ev + 1;
    int next = 0; /* the index the next value is written at */
    *p++ = '[';
    while (*s != '}') {
        if (p > o + 1) {
            if (*s != ',')
                goto fail;
            s++;
        }
        if (*s != '"')
            goto fail;
        const char *name = ++s, *q = strchr(name, '"');
        if (!q || q[1] != ':')
            goto fail;
        int k = next;
        while (pack_figure_names[k] && (strlen(pack_figure_names[k]) != (size_t)(q - name) ||
                                        memcmp(pack_figure_names[k], name, (size_t)(q - name))))
            k++;
        if (!pack_figure_names[k])
            goto fail;
        s = q + 2;
        const char *end = token_end(s);
        if (!is_scalar(s, (size_t)(end - s)) ||
            (size_t)(p - o) + 8 * (size_t)(k - next + 1) + (size_t)(end - s) + 4 > cap)
            goto fail;
        for (; next < k; next++)
            p += (size_t)(p > o + 1 ? sprintf(p, ",false") : sprintf(p, "false"));
        if (p > o + 1)
            *p++ = ',';
        memcpy(p, s, (size_t)(end - s));
        p += end - s;
        next = k + 1;
        s = end;
        if (*s != ',' && *s != '}')
            goto fail;
    }
    if (s[1] != '\0')
        goto fail;
    *p++ = ']';
    *p = '\0';
    /* Exact or nothing. */
    char *back = pack_figures_text(o);
    bool same = back && strcmp(back, ev) == 0;
    free(back);
    if (same)
        return o;
fail:
    free(o);
    return NULL;
}

char *pack_figures_text(const char *fig)
{
    if (!fig || fig[0] != '[')
        return NULL;
    size_t cap = 2;
    for (int k = 0; pack_figure_names[k]; k++)
        cap += strlen(pack_figure_names[k]) + 4;
    cap += strlen(fig);
    char *o = xmalloc(cap), *p = o;
    const char *s = fig + 1;
    *p++ = '{';
    for (int k = 0; *s != ']'; k++) {
        if (k > 0) {
            if (*s != ',')
                goto fail;
            s++;
        }
        const char *end = token_end(s);
        if (!pack_figure_names[k] || end == s || (*end != ',' && *end != ']'))
            goto fail;
        if (!(end - s == 5 && memcmp(s, "false", 5) == 0)) {
            if (p > o + 1)
                *p++ = ',';
            p += sprintf(p, "\"%s\":", pack_figure_names[k]);
            memcpy(p, s, (size_t)(end - s));
            p += end - s;
        }
        s = end;
    }
    if (s[1] != '\0')
        goto fail;
    *p++ = '}';
    *p = '\0';
    return o;
fail:
    free(o);
    return NULL;
}

/* ------------------------------------------------------------------- hash -- */

uint64_t pack_hash_text(uint64_t h, const char *s)
{
    if (!s) {
        h = (h ^ 1u) * 0x100000001b3ULL; /* NULL: a byte no text ends with before the 0 */
    } else {
        for (const unsigned char *p = (const unsigned char *)s; *p; p++)
            h = (h ^ *p) * 0x100000001b3ULL;
    }
    return (h ^ 0u) * 0x100000001b3ULL;
}

uint64_t pack_hash_int(uint64_t h, int64_t v)
{
    char buf[24];
    snprintf(buf, sizeof buf, "%" PRId64, v);
    return pack_hash_text(h, buf);
}

/* ---------------------------------------------------------------- samples -- */

void pack_text_str(struct text *t, const char *s)
{
    text_add(t, s, strlen(s));
}

void pack_text_int(struct text *t, int64_t v)
{
    char buf[24];
    text_add(t, buf, (size_t)snprintf(buf, sizeof buf, "%" PRId64, v));
}

/* x (finite) in the shortest text that reads back as x: a whole number as an integer. */
static void pt_num(struct text *t, double x)
{
    char buf[40];
    if (x == 0 && signbit(x)) {
        snprintf(buf, sizeof buf, "-0.0"); /* read back as the real -0.0, not the integer 0 */
    } else if (x == floor(x) && fabs(x) < 1e15) {
        snprintf(buf, sizeof buf, "%" PRId64, (int64_t)x);
    } else {
        for (int prec = 15; prec <= 17; prec++) {
            snprintf(buf, sizeof buf, "%.*g", prec, x);
            if (strtod(buf, NULL) == x)
                break;
        }
    }
    pack_text_str(t, buf);
}

/* ,"name":x when x is a number (NaN: absent); first: no comma before it. */
static void pt_member(struct text *t, bool *first, const char *name, double x)
{
    if (isnan(x))
        return;
    if (!*first)
        text_add(t, ",", 1);
    *first = false;
    text_json_str(t, name);
    text_add(t, ":", 1);
    pt_num(t, x);
}

char *pack_sample_text(const struct core_sample *sm)
{
    struct text t = {0};
    char buf[64];
    snprintf(buf, sizeof buf,
             "{\"at\":%" PRId64 ",\"running_since\":%" PRId64 ",\"status\":", sm->at,
             sm->running_since);
    pack_text_str(&t, buf);
    pack_text_str(&t, sm->running ? "\"RUNNING\"" : "\"NOT_RUNNING\"");
    static const char *const jm_names[] = {
        "heap_used",      "heap_max",         "gc_ms_per_s",         "managed_used",
        "metaspace_used", "task_slots_total", "task_slots_available"};
    const double jm[] = {sm->heap_used,           sm->heap_max,       sm->gc_ms_per_s,
                         sm->managed_used,        sm->metaspace_used, sm->task_slots_total,
                         sm->task_slots_available};
    bool any = false;
    for (size_t i = 0; i < sizeof jm / sizeof jm[0]; i++)
        any |= !isnan(jm[i]);
    if (any) {
        bool first = true;
        pack_text_str(&t, ",\"job_metrics\":{");
        for (size_t i = 0; i < sizeof jm / sizeof jm[0]; i++)
            pt_member(&t, &first, jm_names[i], jm[i]);
        text_add(&t, "}", 1);
    }
    pack_text_str(&t, ",\"vertices\":[");
    for (int i = 0; i < sm->n_vertices; i++) {
        const struct core_vertex_in *v = &sm->vertices[i];
        pack_text_str(&t, i ? ",{\"id\":" : "{\"id\":");
        text_json_str(&t, v->id);
        snprintf(buf, sizeof buf, ",\"parallelism\":%d,\"max_parallelism\":%d", v->parallelism,
                 v->max_parallelism);
        pack_text_str(&t, buf);
        if (v->partitions) {
            snprintf(buf, sizeof buf, ",\"partitions\":%d", v->partitions);
            pack_text_str(&t, buf);
        }
        if (v->slot_sharing_group) {
            pack_text_str(&t, ",\"slot_sharing_group\":");
            text_json_str(&t, v->slot_sharing_group);
        }
        if (v->finished)
            pack_text_str(&t, ",\"finished\":true");
        if (v->n_inputs) {
            pack_text_str(&t, ",\"inputs\":[");
            for (int k = 0; k < v->n_inputs; k++) {
                pack_text_str(&t, k ? ",{\"from\":" : "{\"from\":");
                text_json_str(&t, v->inputs[k].from);
                pack_text_str(&t, ",\"ship\":");
                text_json_str(&t, core_ship_name(v->inputs[k].ship));
                text_add(&t, "}", 1);
            }
            text_add(&t, "]", 1);
        }
        pack_text_str(&t, ",\"metrics\":{");
        bool first = true;
        if (!isnan(v->busy_avg) && v->busy_min == v->busy_avg && v->busy_max == v->busy_avg) {
            pt_member(&t, &first, "busy_ms_per_s", v->busy_avg);
        } else if (!isnan(v->busy_avg)) {
            bool f2 = true;
            first = false;
            pack_text_str(&t, "\"busy_ms_per_s\":{");
            pt_member(&t, &f2, "min", v->busy_min);
            pt_member(&t, &f2, "avg", v->busy_avg);
            pt_member(&t, &f2, "max", v->busy_max);
            text_add(&t, "}", 1);
        }
        pt_member(&t, &first, "backpressured_ms_per_s", v->backpressured);
        pt_member(&t, &first, "records_in", v->records_in);
        pt_member(&t, &first, "records_out", v->records_out);
        pt_member(&t, &first, "accumulated_busy_ms", v->accumulated_busy_ms);
        pt_member(&t, &first, "records_in_per_s", v->records_in_per_s);
        pt_member(&t, &first, "records_out_per_s", v->records_out_per_s);
        pt_member(&t, &first, "pending_records", v->pending_records);
        pack_text_str(&t, "}}");
    }
    pack_text_str(&t, "]}");
    return t.p;
}

char *pack_vertices(const struct db_vrow *v, int n)
{
    struct text t = {0};
    text_add(&t, "[", 1);
    for (int i = 0; i < n; i++) {
        const struct db_vrow *r = &v[i];
        char *fig = pack_figures(r->evaluated_json);
        pack_text_str(&t, i ? ",[" : "[");
        text_json_str(&t, r->vertex ? r->vertex : "");
        text_add(&t, ",", 1);
        pack_text_int(&t, r->current);
        text_add(&t, ",", 1);
        pack_text_int(&t, r->raw_target);
        text_add(&t, ",", 1);
        pack_text_int(&t, r->target);
        text_add(&t, ",", 1);
        text_json_str(&t, r->reason ? r->reason : "");
        text_add(&t, ",", 1);
        text_json_str(&t, r->constraints ? r->constraints : "[]");
        text_add(&t, ",", 1);
        text_json_str(&t, r->message);
        text_add(&t, ",", 1);
        pack_text_int(&t, (r->excluded ? 1 : 0) | (r->outside_bounds ? 2 : 0));
        text_add(&t, ",", 1);
        if (fig) {
            pack_text_str(&t, fig);
            pack_text_str(&t, ",null]");
        } else {
            pack_text_str(&t, "null,");
            text_json_str(&t, r->evaluated_json ? r->evaluated_json : "{}");
            text_add(&t, "]", 1);
        }
        free(fig);
    }
    text_add(&t, "]", 1);
    return t.p;
}
