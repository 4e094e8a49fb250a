/*
 * tz.c - TZif (RFC 8536) and POSIX TZ rule parsing, civil time in a zone, and the process-wide
 * cache of loaded zones (see tz.h). Only tz_get does I/O (one read of one file); the rest is
 * pure arithmetic on the proleptic Gregorian calendar (Howard Hinnant's day algorithms).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "time/timeutil.h"
#include "time/tz.h"
#include "base/xmem.h"

#define TZ_DIR       "/usr/share/zoneinfo"
#define TZ_MAX_NAME  255
#define TZ_MAX_FILE  (1 << 20)
#define TZ_CLAMP_S   INT64_C(100000000000000000) /* 1e17 s, about 3e9 years */
#define SECS_PER_DAY 86400

/* One local time type: offset east of UTC and whether it is daylight saving time. */
struct tz_type {
    int32_t utoff;
    bool isdst;
};

/* A date of a POSIX TZ rule: Jn (1-365, no Feb 29), n (0-365), or Mm.w.d; plus a time. */
struct tz_date {
    char kind; /* 'J', 'N' or 'M' */
    int n, m, w, d;
    int32_t time; /* seconds after local midnight; v3 allows -167h..167h */
};

/* The POSIX TZ rule of a footer: standard time, and optionally DST with its two dates. */
struct tz_rule {
    int32_t std_off, dst_off; /* seconds east of UTC */
    bool has_dst;
    struct tz_date start, end;
};

struct tz {
    char *name;
    int n_trans;
    int64_t *trans; /* ascending transition instants */
    uint8_t *idx;   /* type index of each transition */
    int n_types;    /* >= 1 */
    struct tz_type *types;
    bool has_rule; /* footer present and non-empty */
    struct tz_rule rule;
    struct tz *next; /* cache list */
};

/* ------------------------------------------------------------- helpers -- */

static void set_err(char **errp, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void set_err(char **errp, const char *fmt, ...)
{
    if (!errp)
        return;
    va_list ap;
    va_start(ap, fmt);
    *errp = xvasprintf(fmt, ap);
    va_end(ap);
}

static int64_t floor_div(int64_t a, int64_t b)
{
    int64_t q = a / b;
    if ((a % b != 0) && ((a < 0) != (b < 0)))
        q--;
    return q;
}

static int64_t floor_mod(int64_t a, int64_t b)
{
    return a - floor_div(a, b) * b;
}

/* 0 = Sunday; 1970-01-01 was a Thursday. */
static int weekday(int64_t days)
{
    return (int)floor_mod(days + 4, 7);
}

/* ---------------------------------------------------------- POSIX rules -- */

/* Parses a zone abbreviation: <...> quoted, or 3+ letters. Returns the end, or NULL. */
static const char *parse_abbr(const char *p)
{
    const char *s = p;
    if (*p == '<') {
        p++;
        while ((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') ||
               *p == '+' || *p == '-')
            p++;
        if (*p != '>' || p - s < 4)
            return NULL;
        return p + 1;
    }
    while ((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z'))
        p++;
    return p - s >= 3 ? p : NULL;
}

/* Parses [+-]h[h[h]][:mm[:ss]] with hours up to max_h; *out in seconds (signed). */
static const char *parse_hms(const char *p, int max_h, int32_t *out)
{
    int sign = 1;
    if (*p == '+' || *p == '-')
        sign = *p++ == '-' ? -1 : 1;
    if (*p < '0' || *p > '9')
        return NULL;
    int h = 0, m = 0, s = 0, nd = 0;
    while (*p >= '0' && *p <= '9' && nd < 3) {
        h = h * 10 + (*p++ - '0');
        nd++;
    }
    if (h > max_h)
        return NULL;
    for (int part = 0; part < 2 && *p == ':'; part++) {
        p++;
        if (p[0] < '0' || p[0] > '9' || p[1] < '0' || p[1] > '9')
            return NULL;
        int v = (p[0] - '0') * 10 + (p[1] - '0');
        if (v > 59)
            return NULL;
        if (part == 0)
            m = v;
        else
            s = v;
        p += 2;
    }
    *out = sign * (h * 3600 + m * 60 + s);
    return p;
}

static const char *parse_num(const char *p, int lo, int hi, int *out)
{
    if (*p < '0' || *p > '9')
        return NULL;
    int v = 0;
    while (*p >= '0' && *p <= '9') {
        v = v * 10 + (*p++ - '0');
        if (v > hi)
            return NULL;
    }
    if (v < lo)
        return NULL;
    *out = v;
    return p;
}

/* Parses a rule date with its optional /time (default 02:00:00). */
static const char *parse_date(const char *p, struct tz_date *d)
{
    memset(d, 0, sizeof *d);
    if (*p == 'J') {
        d->kind = 'J';
        p = parse_num(p + 1, 1, 365, &d->n);
    } else if (*p == 'M') {
        d->kind = 'M';
        p = parse_num(p + 1, 1, 12, &d->m);
        if (p && *p == '.')
            p = parse_num(p + 1, 1, 5, &d->w);
        else
            p = NULL;
        if (p && *p == '.')
            p = parse_num(p + 1, 0, 6, &d->d);
        else
            p = NULL;
    } else {
        d->kind = 'N';
        p = parse_num(p, 0, 365, &d->n);
    }
    if (!p)
        return NULL;
    d->time = 7200;
    if (*p == '/')
        p = parse_hms(p + 1, 167, &d->time);
    return p;
}

/* Parses a whole POSIX TZ string into r. Returns 0, or -1 on any syntax error. */
static int parse_rule(const char *s, struct tz_rule *r)
{
    memset(r, 0, sizeof *r);
    const char *p = parse_abbr(s);
    int32_t off;
    if (!p || !(p = parse_hms(p, 24, &off)))
        return -1;
    r->std_off = -off; /* POSIX offsets count west of Greenwich */
    if (*p == '\0')
        return 0;
    if (!(p = parse_abbr(p)))
        return -1;
    r->has_dst = true;
    r->dst_off = r->std_off + 3600;
    if (*p != ',' && *p != '\0') {
        if (!(p = parse_hms(p, 24, &off)))
            return -1;
        r->dst_off = -off;
    }
    if (*p == '\0') {
        /* No dates: the US rules, as glibc and tzcode assume (never in real footers). */
        r->start = (struct tz_date){.kind = 'M', .m = 3, .w = 2, .d = 0, .time = 7200};
        r->end = (struct tz_date){.kind = 'M', .m = 11, .w = 1, .d = 0, .time = 7200};
        return 0;
    }
    if (*p != ',' || !(p = parse_date(p + 1, &r->start)))
        return -1;
    if (*p != ',' || !(p = parse_date(p + 1, &r->end)))
        return -1;
    return *p == '\0' ? 0 : -1;
}

/* Seconds since the epoch, reckoned in local time, at which date d happens in year y. */
static int64_t rule_local_secs(const struct tz_date *d, int64_t y)
{
    int64_t jan1 = time_days_from_civil(y, 1, 1), day;
    if (d->kind == 'J') {
        day = jan1 + d->n - 1 + (time_is_leap(y) && d->n >= 60);
    } else if (d->kind == 'N') {
        day = jan1 + d->n;
    } else {
        int64_t first = time_days_from_civil(y, d->m, 1);
        int mday = 1 + (d->d - weekday(first) + 7) % 7 + 7 * (d->w - 1);
        while (mday > time_month_days(y, d->m))
            mday -= 7;
        day = first + mday - 1;
    }
    return day * SECS_PER_DAY + d->time;
}

/* The local time type the rule gives at instant t. */
static struct tz_type rule_type(const struct tz_rule *r, int64_t t)
{
    if (!r->has_dst)
        return (struct tz_type){r->std_off, false};
    int64_t y;
    int m, d;
    time_civil_from_days(floor_div(t + r->std_off, SECS_PER_DAY), &y, &m, &d);
    /* The start is written in standard time, the end in daylight time (POSIX). */
    int64_t start = rule_local_secs(&r->start, y) - r->std_off;
    int64_t end = rule_local_secs(&r->end, y) - r->dst_off;
    bool dst = start < end ? (t >= start && t < end) : !(t >= end && t < start);
    return dst ? (struct tz_type){r->dst_off, true} : (struct tz_type){r->std_off, false};
}

struct tz *tz_posix_new(const char *rule, char **errp)
{
    struct tz_rule r;
    if (parse_rule(rule, &r) != 0) {
        set_err(errp, "time zone rule \"%s\": malformed POSIX TZ string", rule);
        return NULL;
    }
    struct tz *z = xcalloc(1, sizeof *z);
    z->name = xstrdup(rule);
    z->n_types = 1;
    z->types = xcalloc(1, sizeof *z->types);
    z->types[0] = (struct tz_type){r.std_off, false};
    z->has_rule = true;
    z->rule = r;
    return z;
}

/* ----------------------------------------------------------------- TZif -- */

struct tzif_hdr {
    int version; /* 1, 2, 3, 4 */
    uint32_t isutcnt, isstdcnt, leapcnt, timecnt, typecnt, charcnt;
};

static uint32_t be32(const unsigned char *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static int64_t be64(const unsigned char *p)
{
    return (int64_t)((uint64_t)be32(p) << 32 | be32(p + 4));
}

static const char *read_hdr(const unsigned char *p, size_t len, struct tzif_hdr *h)
{
    if (len < 44 || memcmp(p, "TZif", 4) != 0)
        return "not a TZif file";
    h->version = p[4] == 0 ? 1 : p[4] - '0';
    if (h->version < 1 || h->version > 9)
        return "unknown TZif version";
    h->isutcnt = be32(p + 20);
    h->isstdcnt = be32(p + 24);
    h->leapcnt = be32(p + 28);
    h->timecnt = be32(p + 32);
    h->typecnt = be32(p + 36);
    h->charcnt = be32(p + 40);
    if (h->typecnt == 0 || h->typecnt > 256 || h->timecnt > TZ_MAX_FILE ||
        h->charcnt > TZ_MAX_FILE || h->leapcnt > TZ_MAX_FILE ||
        (h->isstdcnt != 0 && h->isstdcnt != h->typecnt) ||
        (h->isutcnt != 0 && h->isutcnt != h->typecnt))
        return "bad TZif header counts";
    return NULL;
}

/* Size of the data block after a header; tsize is 4 (v1) or 8 (v2+). */
static size_t block_size(const struct tzif_hdr *h, size_t tsize)
{
    return (size_t)h->timecnt * tsize + h->timecnt + (size_t)h->typecnt * 6 + h->charcnt +
           (size_t)h->leapcnt * (tsize + 4) + h->isstdcnt + h->isutcnt;
}

struct tz *tz_parse(const char *name, const unsigned char *buf, size_t len, char **errp)
{
    struct tz *z = NULL;
    const char *why = NULL;
    char *footer = NULL;
    struct tzif_hdr h;

    if ((why = read_hdr(buf, len, &h)))
        goto out;
    const unsigned char *p = buf + 44, *end = buf + len;
    size_t tsize = 4;
    if ((size_t)(end - p) < block_size(&h, 4)) {
        why = "truncated data";
        goto out;
    }
    if (h.version >= 2) {
        /* Skip the 32-bit block: the 64-bit one after the second header supersedes it. */
        p += block_size(&h, 4);
        if ((why = read_hdr(p, (size_t)(end - p), &h)))
            goto out;
        p += 44;
        tsize = 8;
        if ((size_t)(end - p) < block_size(&h, 8)) {
            why = "truncated data";
            goto out;
        }
    }
    if (h.leapcnt != 0) {
        why = "leap-second zones are not supported";
        goto out;
    }

    z = xcalloc(1, sizeof *z);
    z->name = xstrdup(name);
    z->n_trans = (int)h.timecnt;
    z->trans = xcalloc(h.timecnt, sizeof *z->trans);
    z->idx = xcalloc(h.timecnt, 1);
    z->n_types = (int)h.typecnt;
    z->types = xcalloc(h.typecnt, sizeof *z->types);
    for (uint32_t i = 0; i < h.timecnt; i++, p += tsize) {
        z->trans[i] = tsize == 8 ? be64(p) : (int64_t)(int32_t)be32(p);
        if (i > 0 && z->trans[i] <= z->trans[i - 1]) {
            why = "transition times not ascending";
            goto out;
        }
    }
    for (uint32_t i = 0; i < h.timecnt; i++, p++) {
        if (*p >= h.typecnt) {
            why = "transition type index out of range";
            goto out;
        }
        z->idx[i] = *p;
    }
    for (uint32_t i = 0; i < h.typecnt; i++, p += 6) {
        int32_t utoff = (int32_t)be32(p);
        if (utoff < -89999 || utoff > 93599 || p[4] > 1 || p[5] >= h.charcnt) {
            why = "bad local time type";
            goto out;
        }
        z->types[i] = (struct tz_type){utoff, p[4] == 1};
    }
    p += h.charcnt + h.isstdcnt + h.isutcnt; /* abbreviations and indicators: unused */

    if (h.version >= 2) {
        /* Footer: '\n' POSIX-TZ '\n' (RFC 8536 section 3.3); empty means "no rule". */
        const unsigned char *nl = NULL;
        if (p < end && *p == '\n')
            nl = memchr(p + 1, '\n', (size_t)(end - p - 1));
        if (!nl) {
            why = "missing footer";
            goto out;
        }
        size_t n = (size_t)(nl - p - 1);
        footer = xcalloc(1, n + 1);
        memcpy(footer, p + 1, n);
        if (memchr(footer, '\0', n) != NULL) {
            why = "bad footer";
            goto out;
        }
        if (n > 0) {
            if (parse_rule(footer, &z->rule) != 0) {
                why = "malformed footer TZ string";
                goto out;
            }
            z->has_rule = true;
        }
    }

out:
    if (why) {
        if (footer && *footer)
            set_err(errp, "time zone \"%s\": %s (\"%s\")", name, why, footer);
        else
            set_err(errp, "time zone \"%s\": %s", name, why);
        tz_free(z);
        z = NULL;
    }
    free(footer);
    return z;
}

void tz_free(struct tz *z)
{
    if (!z)
        return;
    free(z->name);
    free(z->trans);
    free(z->idx);
    free(z->types);
    free(z);
}

const char *tz_name(const struct tz *z)
{
    return z->name;
}

/* ---------------------------------------------------------------- lookup -- */

static struct tz_type find_type(const struct tz *z, int64_t t)
{
    int n = z->n_trans;
    if (n == 0 || t > z->trans[n - 1]) {
        if (z->has_rule)
            return rule_type(&z->rule, t);
        return z->types[n == 0 ? 0 : z->idx[n - 1]];
    }
    if (t < z->trans[0])
        return z->types[0]; /* RFC 8536: type 0 before the first transition */
    int lo = 0, hi = n - 1; /* invariant: trans[lo] <= t */
    while (lo < hi) {
        int mid = lo + (hi - lo + 1) / 2;
        if (z->trans[mid] <= t)
            lo = mid;
        else
            hi = mid - 1;
    }
    return z->types[z->idx[lo]];
}

void tz_local(const struct tz *z, int64_t epoch_s, struct tz_tm *out)
{
    if (epoch_s > TZ_CLAMP_S)
        epoch_s = TZ_CLAMP_S;
    if (epoch_s < -TZ_CLAMP_S)
        epoch_s = -TZ_CLAMP_S;
    struct tz_type ty = find_type(z, epoch_s);
    int64_t local = epoch_s + ty.utoff;
    int64_t days = floor_div(local, SECS_PER_DAY);
    int64_t secs = floor_mod(local, SECS_PER_DAY);
    memset(out, 0, sizeof *out);
    time_civil_from_days(days, &out->year, &out->mon, &out->mday);
    out->hour = (int)(secs / 3600);
    out->min = (int)(secs / 60 % 60);
    out->sec = (int)(secs % 60);
    out->wday = weekday(days);
    out->yday = (int)(days - time_days_from_civil(out->year, 1, 1));
    out->utoff = ty.utoff;
    out->isdst = ty.isdst;
}

/* ----------------------------------------------------------------- cache -- */

static pthread_mutex_t cache_mu = PTHREAD_MUTEX_INITIALIZER;
static struct tz *cache_head;

static const char *check_name(const char *name)
{
    size_t n = strlen(name);
    if (n == 0)
        return "empty name";
    if (n > TZ_MAX_NAME)
        return "name too long";
    if (name[0] == '/')
        return "name must not start with '/'";
    if (strstr(name, ".."))
        return "name must not contain \"..\"";
    for (const char *p = name; *p; p++) {
        char c = *p;
        if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '+' || c == '/' || c == '-'))
            return "name has a character outside [A-Za-z0-9_+/-]";
    }
    return NULL;
}

/* Reads and parses TZ_DIR/name; new zone or NULL with *errp. */
static struct tz *load(const char *name, char **errp)
{
    char path[sizeof TZ_DIR + TZ_MAX_NAME + 2];
    unsigned char *buf = NULL;
    struct tz *z = NULL;
    int fd = -1;
    struct stat st;

    snprintf(path, sizeof path, "%s/%s", TZ_DIR, name);
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        set_err(errp, "time zone \"%s\": %s", name,
                errno == ENOENT ? "unknown time zone" : strerror(errno));
        goto out;
    }
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > TZ_MAX_FILE) {
        set_err(errp, "time zone \"%s\": not a zone file", name);
        goto out;
    }
    size_t len = (size_t)st.st_size, got = 0;
    buf = xcalloc(1, len);
    while (got < len) {
        ssize_t r = read(fd, buf + got, len - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            set_err(errp, "time zone \"%s\": read error", name);
            goto out;
        }
        got += (size_t)r;
    }
    z = tz_parse(name, buf, len, errp);
out:
    free(buf);
    if (fd >= 0)
        close(fd);
    return z;
}

const struct tz *tz_get(const char *name, char **errp)
{
    const char *bad = check_name(name);
    if (bad) {
        set_err(errp, "time zone \"%s\": %s", name, bad);
        return NULL;
    }
    pthread_mutex_lock(&cache_mu);
    struct tz *z = cache_head;
    while (z && strcmp(z->name, name) != 0)
        z = z->next;
    if (!z) {
        if (strcmp(name, "UTC") == 0) {
            z = tz_posix_new("UTC0", NULL);
            free(z->name);
            z->name = xstrdup("UTC");
        } else {
            z = load(name, errp);
        }
        if (z) {
            z->next = cache_head;
            cache_head = z;
        }
    }
    pthread_mutex_unlock(&cache_mu);
    return z;
}
