/*
 * cron.c - the excluded periods: a Quartz 2.4 CronExpression parser and matcher, the
 * Quartz DailyCalendar range form, and the ';' / '&&' list (see cron.h).
 *
 * A Quartz expression compiles to one bit set per field (bit v - lo for value v) plus the
 * day-of-month and day-of-week specials (L, L-n, W, LW, nL, n#k). Matching reads the
 * instant's civil time once (tz_local) and tests each field: no "next fire time" search, so
 * the DST behaviour is exactly that of the wall clock in the zone.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/core.h"
#include "time/cron.h"
#include "time/tz.h"
#include "base/xmem.h"

enum { F_SEC, F_MIN, F_HOUR, F_DOM, F_MON, F_DOW, F_YEAR, F__COUNT };

/* Name, value range and largest step of each field (Quartz's checkIncrementRange). */
static const struct field_info {
    const char *name;
    int lo, hi, max_inc;
} fields[F__COUNT] = {
    {"second", 0, 59, 59},       {"minute", 0, 59, 59}, {"hour", 0, 23, 23},
    {"day-of-month", 1, 31, 31}, {"month", 1, 12, 12},  {"day-of-week", 1, 7, 7},
    {"year", 1970, 2099, 129},
};

static const char *const month_names[12] = {"JAN", "FEB", "MAR", "APR", "MAY", "JUN",
                                            "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"};
static const char *const day_names[7] = {"SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"};

enum dom_kind { DOM_NONE, DOM_SET, DOM_LAST, DOM_WEEKDAY };
enum dow_kind { DOW_NONE, DOW_SET, DOW_LAST, DOW_NTH };

struct quartz {
    uint64_t bits[F__COUNT][3]; /* bit (v - lo); year needs 130 bits */
    bool any_year;              /* year absent or "*": every year, even past 2099 */
    enum dom_kind dom_kind;     /* DOM_NONE = '?' */
    int dom_n;                  /* DOM_LAST: offset back from the last day; DOM_WEEKDAY: day */
    bool dom_w;                 /* DOM_LAST: the nearest weekday to it (LW, L-3W) */
    enum dow_kind dow_kind;     /* DOW_NONE = '?' */
    int dow_n, dow_k;           /* DOW_LAST: weekday 1-7; DOW_NTH: weekday and k (1-5) */
};

/* A daily range: milliseconds after local midnight, start < end, both inclusive. */
struct daily {
    int32_t start_ms, end_ms;
};

struct sub {
    bool is_daily;
    struct quartz q;
    struct daily d;
};

struct elem {
    char *text; /* trimmed, for messages and "why" */
    int n_sub;  /* 1 or 2 */
    struct sub sub[2];
};

struct cron_expr {
    int n;
    struct elem *elems;
};

/* ------------------------------------------------------------- helpers -- */

static bool is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

static bool is_digit(char c)
{
    return c >= '0' && c <= '9';
}

static bool is_alpha(char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z');
}

static char upper(char c)
{
    return c >= 'a' && c <= 'z' ? (char)(c - 'a' + 'A') : c;
}

/* New: s[b..e) with surrounding white space removed. */
static char *trim_dup(const char *s, size_t b, size_t e)
{
    while (b < e && is_space(s[b]))
        b++;
    while (e > b && is_space(s[e - 1]))
        e--;
    char *r = xcalloc(1, e - b + 1);
    memcpy(r, s + b, e - b);
    return r;
}

/* Reads decimal digits at s[*i..end); 0 if there are none. Values saturate at 1e6. */
static int scan_num(const char *s, size_t *i, size_t end, int *out)
{
    size_t p = *i;
    int v = 0;
    while (p < end && is_digit(s[p])) {
        if (v < 1000000)
            v = v * 10 + (s[p] - '0');
        p++;
    }
    if (p == *i)
        return 0;
    *out = v;
    *i = p;
    return 1;
}

static int64_t floor_div(int64_t a, int64_t b)
{
    int64_t q = a / b;
    if ((a % b != 0) && ((a < 0) != (b < 0)))
        q--;
    return q;
}

static bool has_bit(const uint64_t *b, int64_t i)
{
    return i >= 0 && i < 192 && ((b[i / 64] >> (i % 64)) & 1u);
}

static void set_bit(uint64_t *b, int i)
{
    b[i / 64] |= UINT64_C(1) << (i % 64);
}

/* --------------------------------------------------------- Quartz parse -- */

/* Parse state of one cron expression: its text, the field at hand, the first error. */
struct pctx {
    const char *expr;
    int field;
    char *msg; /* new; the first error */
};

static int perr(struct pctx *c, size_t pos, const char *f, ...)
    __attribute__((format(printf, 3, 4)));

/* Records an error at 0-based offset pos of the expression; always returns -1. */
static int perr(struct pctx *c, size_t pos, const char *f, ...)
{
    va_list ap;
    va_start(ap, f);
    char *inner = xvasprintf(f, ap);
    va_end(ap);
    if (c->field >= 0)
        c->msg = xasprintf("cron \"%s\": %s field: %s (at char %zu)", c->expr,
                           fields[c->field].name, inner, pos + 1);
    else
        c->msg = xasprintf("cron \"%s\": %s (at char %zu)", c->expr, inner, pos + 1);
    free(inner);
    return -1;
}

/* A field value at s[*i]: a number in range, or a month/day name where those are allowed. */
static int parse_value(struct pctx *c, size_t *i, size_t end, int *v)
{
    const char *s = c->expr;
    const struct field_info *fi = &fields[c->field];
    size_t p = *i;
    if (scan_num(s, &p, end, v)) {
        if (*v < fi->lo || *v > fi->hi)
            return perr(c, *i, "%d out of range %d-%d", *v, fi->lo, fi->hi);
        *i = p;
        return 0;
    }
    if ((c->field == F_MON || c->field == F_DOW) && p < end && is_alpha(s[p])) {
        const char *const *names = c->field == F_MON ? month_names : day_names;
        int n = c->field == F_MON ? 12 : 7;
        if (end - p >= 3) {
            for (int k = 0; k < n; k++) {
                if (upper(s[p]) == names[k][0] && upper(s[p + 1]) == names[k][1] &&
                    upper(s[p + 2]) == names[k][2]) {
                    *v = k + 1;
                    *i = p + 3;
                    return 0;
                }
            }
        }
        size_t e = p;
        while (e < end && is_alpha(s[e]))
            e++;
        return perr(c, p, "unknown %s name \"%.*s\"", c->field == F_MON ? "month" : "day",
                    (int)(e - p), s + p);
    }
    if (p >= end)
        return perr(c, p, "missing value");
    return perr(c, p, "unexpected character '%c'", s[p]);
}

/* The step after a '/' at s[*i]. */
static int parse_inc(struct pctx *c, size_t *i, size_t end, int *inc)
{
    size_t p = *i;
    if (!scan_num(c->expr, &p, end, inc))
        return perr(c, *i, "'/' must be followed by a number");
    if (*inc < 1 || *inc > fields[c->field].max_inc)
        return perr(c, *i, "increment %d out of range 1-%d", *inc, fields[c->field].max_inc);
    *i = p;
    return 0;
}

/* Adds a..b step inc to the field's set; b < a wraps around (Quartz: 22-2 = 22,23,0,1,2). */
static void add_range(uint64_t *bits, const struct field_info *fi, int a, int b, int inc)
{
    int span = fi->hi - fi->lo + 1;
    if (b < a)
        b += span;
    for (int v = a; v <= b; v += inc)
        set_bit(bits, (v - fi->lo) % span);
}

/* One comma-separated item s[is..ie) of the current field; alone = the only item. */
static int parse_item(struct pctx *c, struct quartz *q, size_t is, size_t ie, bool alone)
{
    const char *s = c->expr;
    const int f = c->field;
    const struct field_info *fi = &fields[f];
    size_t i = is;
    int a, b, inc = 1;

    if (is == ie)
        return perr(c, is, "empty list item");
    char ch = upper(s[i]);
    if (ch == '?')
        return perr(c, is, "'?' must be the whole field");
    if (f == F_DOM && ch == 'L') {
        /* L, L-n, LW, L-nW: the last day, n days before it, or the nearest weekday. */
        if (!alone)
            return perr(c, is, "'L' cannot be combined with other days");
        int off = 0;
        i++;
        if (i < ie && s[i] == '-') {
            size_t np = ++i;
            if (!scan_num(s, &i, ie, &off))
                return perr(c, np, "'L-' must be followed by a number");
            if (off > 30)
                return perr(c, np, "offset %d from the last day out of range 0-30", off);
        }
        bool w = i < ie && upper(s[i]) == 'W';
        if (w)
            i++;
        if (i != ie)
            return perr(c, i, "unexpected character '%c'", s[i]);
        q->dom_kind = DOM_LAST;
        q->dom_n = off;
        q->dom_w = w;
        return 0;
    }
    if (f == F_DOW && ch == 'L' && ie - is == 1) {
        /* Quartz: a bare L in day-of-week is 7, Saturday (the last day of the week). */
        if (!alone)
            return perr(c, is, "'L' cannot be combined with other days");
        set_bit(q->bits[f], 7 - fi->lo);
        return 0;
    }
    if (ch == '*' || ch == '/') {
        /* "*", "*" "/" n, and Quartz's bare "/n" (= "*" "/" n). */
        a = fi->lo;
        b = fi->hi;
        if (ch == '*')
            i++;
        if (i < ie && s[i] == '/') {
            i++;
            if (parse_inc(c, &i, ie, &inc))
                return -1;
        }
    } else {
        if (parse_value(c, &i, ie, &a))
            return -1;
        b = a;
        bool range = false;
        if (i < ie && s[i] == '-') {
            i++;
            if (parse_value(c, &i, ie, &b))
                return -1;
            range = true;
            if (f == F_YEAR && b < a)
                return perr(c, is, "range %d-%d runs backwards", a, b);
        }
        if (i < ie && s[i] == '/') {
            i++;
            if (parse_inc(c, &i, ie, &inc))
                return -1;
            if (!range)
                b = fi->hi; /* "3/10": from 3 to the end of the range */
        } else if (!range && i < ie && f == F_DOM && upper(s[i]) == 'W') {
            if (!alone)
                return perr(c, i, "'W' cannot be combined with other days");
            if (i + 1 != ie)
                return perr(c, i + 1, "unexpected character '%c'", s[i + 1]);
            q->dom_kind = DOM_WEEKDAY;
            q->dom_n = a;
            return 0;
        } else if (!range && i < ie && f == F_DOW && upper(s[i]) == 'L') {
            if (!alone)
                return perr(c, i, "'L' cannot be combined with other days");
            if (i + 1 != ie)
                return perr(c, i + 1, "unexpected character '%c'", s[i + 1]);
            q->dow_kind = DOW_LAST;
            q->dow_n = a;
            return 0;
        } else if (!range && i < ie && f == F_DOW && s[i] == '#') {
            if (!alone)
                return perr(c, i, "'#' cannot be combined with other days");
            size_t np = ++i;
            int k;
            if (!scan_num(s, &i, ie, &k) || k < 1 || k > 5)
                return perr(c, np, "'#' must be followed by a number 1-5");
            if (i != ie)
                return perr(c, i, "unexpected character '%c'", s[i]);
            q->dow_kind = DOW_NTH;
            q->dow_n = a;
            q->dow_k = k;
            return 0;
        }
    }
    if (i != ie)
        return perr(c, i, "unexpected character '%c'", s[i]);
    add_range(q->bits[f], fi, a, b, inc);
    return 0;
}

/* One whole field s[fs..fe). */
static int parse_field(struct pctx *c, struct quartz *q, size_t fs, size_t fe)
{
    const char *s = c->expr;
    if (fe - fs == 1 && s[fs] == '?') {
        if (c->field != F_DOM && c->field != F_DOW)
            return perr(c, fs, "'?' is only allowed in day-of-month or day-of-week");
        if (c->field == F_DOM)
            q->dom_kind = DOM_NONE;
        else
            q->dow_kind = DOW_NONE;
        return 0;
    }
    if (c->field == F_DOM)
        q->dom_kind = DOM_SET;
    if (c->field == F_DOW)
        q->dow_kind = DOW_SET;
    if (c->field == F_YEAR && fe - fs == 1 && s[fs] == '*')
        q->any_year = true;
    bool alone = memchr(s + fs, ',', fe - fs) == NULL;
    size_t is = fs;
    for (size_t i = fs; i <= fe; i++) {
        if (i == fe || s[i] == ',') {
            if (parse_item(c, q, is, i, alone))
                return -1;
            is = i + 1;
        }
    }
    return 0;
}

/* Compiles the cron expression expr (already trimmed) into q; -1 with *msg (new). */
static int quartz_parse(const char *expr, struct quartz *q, char **msg)
{
    struct pctx c = {.expr = expr, .field = -1, .msg = NULL};
    size_t fs[F__COUNT + 1], fe[F__COUNT + 1];
    int n = 0;
    size_t len = strlen(expr), i = 0;

    memset(q, 0, sizeof *q);
    for (;;) {
        while (i < len && is_space(expr[i]))
            i++;
        if (i >= len)
            break;
        if (n == F__COUNT) {
            perr(&c, i, "more than 7 fields");
            goto out;
        }
        fs[n] = i;
        while (i < len && !is_space(expr[i]))
            i++;
        fe[n++] = i;
    }
    if (n < 6) {
        c.msg = xasprintf("cron \"%s\": expected 6 or 7 fields (sec min hour day-of-month month "
                          "day-of-week [year]), got %d",
                          expr, n);
        goto out;
    }
    for (c.field = 0; c.field < n; c.field++)
        if (parse_field(&c, q, fs[c.field], fe[c.field]))
            goto out;
    if (n == 6)
        q->any_year = true;
    c.field = F_DOW;
    if (q->dom_kind == DOM_NONE && q->dow_kind == DOW_NONE)
        perr(&c, fs[F_DOW], "day-of-month and day-of-week cannot both be '?'");
    else if (q->dom_kind != DOM_NONE && q->dow_kind != DOW_NONE)
        perr(&c, fs[F_DOW],
             "one of day-of-month and day-of-week must be '?' (both given is not supported)");
out:
    *msg = c.msg;
    return c.msg ? -1 : 0;
}

/* -------------------------------------------------------- Quartz match -- */

static int month_len(int64_t y, int m)
{
    static const int len[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    return m == 2 && leap ? 29 : len[m - 1];
}

/* Quartz's 'W': the weekday nearest to day `day` of t's month, never leaving the month. */
static int nearest_weekday(const struct tz_tm *t, int day, int ldom)
{
    int wd = (int)(((t->wday + (day - t->mday)) % 7 + 7) % 7); /* 0 = Sunday */
    if (wd == 6)
        return day == 1 ? day + 2 : day - 1; /* Saturday: Friday, or Monday the 3rd */
    if (wd == 0)
        return day == ldom ? day - 2 : day + 1; /* Sunday: Monday, or Friday before the end */
    return day;
}

static bool day_matches(const struct quartz *q, const struct tz_tm *t)
{
    int ldom = month_len(t->year, t->mon);
    int dow = t->wday + 1; /* Quartz: 1 = Sunday ... 7 = Saturday */
    switch (q->dom_kind) {
    case DOM_SET:
        return has_bit(q->bits[F_DOM], t->mday - 1);
    case DOM_LAST: {
        int day = ldom - q->dom_n;
        if (day < 1)
            return false;
        return t->mday == (q->dom_w ? nearest_weekday(t, day, ldom) : day);
    }
    case DOM_WEEKDAY:
        /* A month shorter than the day has no such weekday (31W in April: never). */
        return q->dom_n <= ldom && t->mday == nearest_weekday(t, q->dom_n, ldom);
    case DOM_NONE:
        break;
    }
    switch (q->dow_kind) {
    case DOW_SET:
        return has_bit(q->bits[F_DOW], dow - 1);
    case DOW_LAST:
        return dow == q->dow_n && t->mday + 7 > ldom;
    case DOW_NTH:
        return dow == q->dow_n && (t->mday - 1) / 7 + 1 == q->dow_k;
    case DOW_NONE:
        break;
    }
    return false;
}

static bool quartz_matches(const struct quartz *q, const struct tz_tm *t)
{
    if (!has_bit(q->bits[F_SEC], t->sec) || !has_bit(q->bits[F_MIN], t->min) ||
        !has_bit(q->bits[F_HOUR], t->hour) || !has_bit(q->bits[F_MON], t->mon - 1))
        return false;
    if (!q->any_year && !has_bit(q->bits[F_YEAR], t->year - 1970))
        return false;
    return day_matches(q, t);
}

/* ---------------------------------------------------------------- daily -- */

/* One time H:M[:S[:ms]] at s[b..e) (white space around it allowed) into *ms. */
static char *parse_time(const char *expr, size_t b, size_t e, const char *which, int32_t *ms)
{
    static const char *const part[4] = {"hour", "minute", "second", "millisecond"};
    static const int max[4] = {23, 59, 59, 999};
    int v[4] = {0, 0, 0, 0}, n = 0;
    while (b < e && is_space(expr[b]))
        b++;
    while (e > b && is_space(expr[e - 1]))
        e--;
    if (b == e)
        return xasprintf("daily \"%s\": %s time is empty (at char %zu)", expr, which, b + 1);
    size_t i = b;
    for (;;) {
        if (n == 4)
            return xasprintf("daily \"%s\": %s time has more than 4 parts (at char %zu)", expr,
                             which, i + 1);
        size_t p = i;
        if (!scan_num(expr, &i, e, &v[n]))
            return xasprintf("daily \"%s\": %s time: expected a number (at char %zu)", expr, which,
                             p + 1);
        if (v[n] > max[n])
            return xasprintf("daily \"%s\": %s time: %s %d out of range 0-%d (at char %zu)", expr,
                             which, part[n], v[n], max[n], p + 1);
        n++;
        if (i == e)
            break;
        if (expr[i] != ':')
            return xasprintf("daily \"%s\": %s time: unexpected character '%c' (at char %zu)", expr,
                             which, expr[i], i + 1);
        i++;
    }
    if (n < 2)
        return xasprintf("daily \"%s\": %s time must be H:M[:S[:ms]] (at char %zu)", expr, which,
                         b + 1);
    *ms = ((v[0] * 60 + v[1]) * 60 + v[2]) * 1000 + v[3];
    return NULL;
}

/* Compiles a daily range (trimmed text); NULL, or a new message. */
static char *daily_parse(const char *expr, struct daily *d)
{
    const char *dash = strchr(expr, '-');
    if (!dash || strchr(dash + 1, '-'))
        return xasprintf("daily \"%s\": expected two times joined by one '-'", expr);
    size_t mid = (size_t)(dash - expr);
    char *m = parse_time(expr, 0, mid, "start", &d->start_ms);
    if (!m)
        m = parse_time(expr, mid + 1, strlen(expr), "end", &d->end_ms);
    if (!m && d->start_ms >= d->end_ms)
        m = xasprintf("daily \"%s\": start is not before end (ranges cannot cross midnight)", expr);
    return m;
}

/* ---------------------------------------------------------------- lists -- */

/* Compiles one sub-expression (trimmed) as syntax wants; NULL or a new message. */
static char *sub_parse(const char *text, enum cron_syntax syntax, struct sub *sb)
{
    char *dmsg = NULL, *cmsg = NULL;
    memset(sb, 0, sizeof *sb);
    if (syntax != CRON_QUARTZ) {
        if (!(dmsg = daily_parse(text, &sb->d))) {
            sb->is_daily = true;
            return NULL;
        }
        if (syntax == CRON_DAILY)
            return dmsg;
    }
    if (quartz_parse(text, &sb->q, &cmsg) == 0) {
        free(dmsg);
        return NULL;
    }
    if (!dmsg)
        return cmsg;
    /* Neither: a ':' only ever appears in a daily range, so report what fits the intent. */
    if (strchr(text, ':')) {
        free(cmsg);
        return dmsg;
    }
    free(dmsg);
    return cmsg;
}

/* Compiles one list element (trimmed) into el; NULL or a new message. */
static char *elem_parse(const char *text, struct elem *el)
{
    const char *parts[3];
    size_t ends[3];
    int n = 0;
    const char *p = text;
    for (;;) {
        const char *amp = strstr(p, "&&");
        if (n == 2)
            return xasprintf("period \"%s\": at most 2 sub-expressions may be joined with \"&&\"",
                             text);
        parts[n] = p;
        ends[n] = amp ? (size_t)(amp - text) : strlen(text);
        n++;
        if (!amp)
            break;
        p = amp + 2;
    }
    el->n_sub = n;
    for (int k = 0; k < n; k++) {
        char *sub = trim_dup(text, (size_t)(parts[k] - text), ends[k]);
        char *m = NULL;
        if (!*sub)
            m = xasprintf("period \"%s\": empty sub-expression", text);
        else
            m = sub_parse(sub, CRON_PERIODS, &el->sub[k]);
        free(sub);
        if (m)
            return m;
    }
    if (n == 2 && el->sub[0].is_daily == el->sub[1].is_daily)
        return xasprintf("period \"%s\": \"&&\" must join one daily range and one cron expression, "
                         "not two %s",
                         text, el->sub[0].is_daily ? "daily ranges" : "cron expressions");
    return NULL;
}

struct cron_expr *cron_parse(const char *text, enum cron_syntax syntax, char **errp)
{
    struct cron_expr *e = xcalloc(1, sizeof *e);
    char *msg = NULL;
    size_t len = strlen(text);

    if (syntax != CRON_PERIODS) {
        e->elems = xcalloc(1, sizeof *e->elems);
        e->n = 1;
        e->elems[0].text = trim_dup(text, 0, len);
        e->elems[0].n_sub = 1;
        msg = sub_parse(e->elems[0].text, syntax, &e->elems[0].sub[0]);
        goto out;
    }
    int cap = 1;
    for (size_t i = 0; i < len; i++)
        cap += text[i] == ';';
    e->elems = xcalloc((size_t)cap, sizeof *e->elems);
    size_t b = 0;
    for (size_t i = 0; i <= len; i++) {
        if (i < len && text[i] != ';')
            continue;
        char *t = trim_dup(text, b, i);
        b = i + 1;
        if (!*t) {
            free(t); /* "a;;b" and a trailing ';' hold no element */
            continue;
        }
        struct elem *el = &e->elems[e->n++];
        el->text = t;
        if ((msg = elem_parse(t, el)))
            goto out;
    }
out:
    if (msg) {
        cron_free(e);
        e = NULL;
        if (errp)
            *errp = msg;
        else
            free(msg);
    }
    return e;
}

void cron_free(struct cron_expr *e)
{
    if (!e)
        return;
    for (int i = 0; i < e->n; i++)
        free(e->elems[i].text);
    free(e->elems);
    free(e);
}

bool cron_expr_matches(const struct cron_expr *e, const struct tz *z, int64_t epoch_ms,
                       const char **why)
{
    struct tz_tm t;
    int64_t s = floor_div(epoch_ms, 1000);
    tz_local(z, s, &t);
    int32_t ms_of_day =
        (int32_t)(((t.hour * 60 + t.min) * 60 + t.sec) * 1000 + (epoch_ms - s * 1000));
    if (why)
        *why = NULL;
    for (int i = 0; i < e->n; i++) {
        const struct elem *el = &e->elems[i];
        bool all = true;
        for (int k = 0; k < el->n_sub && all; k++) {
            const struct sub *sb = &el->sub[k];
            if (sb->is_daily)
                all = ms_of_day >= sb->d.start_ms && ms_of_day <= sb->d.end_ms;
            else
                all = quartz_matches(&sb->q, &t);
        }
        if (all) {
            if (why)
                *why = el->text;
            return true;
        }
    }
    return false;
}

/* ------------------------------------------------------------ shortcuts -- */

int cron_validate(const char *periods, char **errp)
{
    struct cron_expr *e = cron_parse(periods, CRON_PERIODS, errp);
    if (!e)
        return -1;
    cron_free(e);
    return 0;
}

/* Parses text as syntax and matches it once in zone tzname. */
static int match_once(const char *text, enum cron_syntax syntax, int64_t epoch_ms,
                      const char *tzname, bool *match, char **errp)
{
    *match = false;
    const struct tz *z = tz_get(tzname && *tzname ? tzname : "UTC", errp);
    if (!z)
        return -1;
    struct cron_expr *e = cron_parse(text, syntax, errp);
    if (!e)
        return -1;
    *match = cron_expr_matches(e, z, epoch_ms, NULL);
    cron_free(e);
    return 0;
}

int cron_periods_match(const char *periods, int64_t epoch_ms, const char *tz, bool *match,
                       char **errp)
{
    return match_once(periods, CRON_PERIODS, epoch_ms, tz, match, errp);
}

int cron_matches(const char *expr, int64_t epoch_ms, const char *tz, bool *match, char **errp)
{
    return match_once(expr, CRON_QUARTZ, epoch_ms, tz, match, errp);
}

int cron_daily_matches(const char *expr, int64_t epoch_ms, const char *tz, bool *match, char **errp)
{
    return match_once(expr, CRON_DAILY, epoch_ms, tz, match, errp);
}

int cron_excluded_hook(void *ud, const struct core_config *cfg, int64_t now, bool *excluded,
                       char *why, size_t why_len, char *err, size_t err_len)
{
    (void)ud;
    char *msg = NULL;
    struct cron_expr *e = NULL;
    int rc = -1;

    *excluded = false;
    if (why_len > 0)
        why[0] = '\0';
    if (!(e = cron_parse(cfg->excluded_periods ? cfg->excluded_periods : "", CRON_PERIODS, &msg)))
        goto out;
    if (e->n == 0) {
        rc = 0; /* no periods: the zone does not matter */
        goto out;
    }
    const char *tzname = cfg->excluded_tz && *cfg->excluded_tz ? cfg->excluded_tz : "UTC";
    const struct tz *z = tz_get(tzname, &msg);
    if (!z)
        goto out;
    const char *w = NULL;
    *excluded = cron_expr_matches(e, z, now, &w);
    if (*excluded && why_len > 0)
        snprintf(why, why_len, "%s", w);
    rc = 0;
out:
    if (rc != 0 && err_len > 0)
        snprintf(err, err_len, "%s", msg ? msg : "excluded periods: error");
    free(msg);
    cron_free(e);
    return rc;
}
