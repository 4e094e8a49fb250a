/*
 * options.c - the options' values parsed (see options.h): a value's text into its row's type
 * and range (durations, sizes, booleans, lists of plugin names, excluded periods, time zones),
 * the display of a range for the errors that name it, the server options and their config
 * file. The table they parse against is options_table.c; a job's layers are options_job.c;
 * printing the table is options_print.c.
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/index.h"
#include "time/cron.h"
#include "options/options.h"
#include "options/options_int.h"
#include "time/tz.h"
#include "base/xmem.h"

/* ------------------------------------------------------------------ errors -- */

/* Sets *errp (when errp is given) to a new formatted message and returns -1. */
int opt__fail(char **errp, const char *fmt, ...)
{
    if (!errp)
        return -1;
    va_list ap;
    va_start(ap, fmt);
    *errp = xvasprintf(fmt, ap);
    va_end(ap);
    return -1;
}

static char *xstrndup(const char *s, size_t n)
{
    char *p = xmalloc(n + 1);
    memcpy(p, s, n);
    p[n] = '\0';
    return p;
}

/* new: s without leading and trailing white space. */
char *opt__trim_dup(const char *s)
{
    while (isspace((unsigned char)*s))
        s++;
    size_t n = strlen(s);
    while (n > 0 && isspace((unsigned char)s[n - 1]))
        n--;
    return xstrndup(s, n);
}

bool opt__starts_with(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* ------------------------------------------------------------ value parsers -- */

struct unit {
    const char *name;
    int64_t mult;
};

static const struct unit duration_units[] = {
    {"ms", 1},      {"milli", 1},   {"millis", 1},   {"millisecond", 1}, {"milliseconds", 1},
    {"s", MS_S},    {"sec", MS_S},  {"secs", MS_S},  {"second", MS_S},   {"seconds", MS_S},
    {"m", MS_M},    {"min", MS_M},  {"mins", MS_M},  {"minute", MS_M},   {"minutes", MS_M},
    {"h", MS_H},    {"hour", MS_H}, {"hours", MS_H}, {"d", MS_D},        {"day", MS_D},
    {"days", MS_D}, {NULL, 0},
};

static const struct unit memory_units[] = {
    {"b", 1},           {"bytes", 1}, {"k", KIB},         {"kb", KIB},        {"kibibytes", KIB},
    {"m", MIB},         {"mb", MIB},  {"mebibytes", MIB}, {"g", GIB},         {"gb", GIB},
    {"gibibytes", GIB}, {"t", TIB},   {"tb", TIB},        {"tebibytes", TIB}, {NULL, 0},
};

/*
 * Flink's "<digits> [unit]" form, shared by durations and memory sizes: surrounding white
 * space is allowed, so is space between number and unit; units are case-insensitive; no
 * unit means the first unit of the table (ms / bytes). 0 or -1 (no message: the caller
 * knows what the value should have looked like).
 */
static int parse_scaled(const char *s, const struct unit *units, int64_t *out)
{
    const char *p = s;
    while (isspace((unsigned char)*p))
        p++;
    if (!isdigit((unsigned char)*p))
        return -1;
    uint64_t n = 0;
    while (isdigit((unsigned char)*p)) {
        int d = *p++ - '0';
        if (n > ((uint64_t)INT64_MAX - (uint64_t)d) / 10)
            return -1;
        n = n * 10 + (uint64_t)d;
    }
    while (isspace((unsigned char)*p))
        p++;
    const char *u = p;
    while (isalpha((unsigned char)*p))
        p++;
    size_t ulen = (size_t)(p - u);
    while (isspace((unsigned char)*p))
        p++;
    if (*p)
        return -1;
    int64_t mult = 1;
    if (ulen > 0) {
        const struct unit *k = units;
        for (; k->name; k++)
            if (strlen(k->name) == ulen && strncasecmp(k->name, u, ulen) == 0)
                break;
        if (!k->name)
            return -1;
        mult = k->mult;
    }
    if (n > (uint64_t)(INT64_MAX / mult))
        return -1;
    *out = (int64_t)n * mult;
    return 0;
}

/* Parses a Flink duration (see options.h) into milliseconds. */
int opt_parse_duration(const char *s, int64_t *ms, char **errp)
{
    if (!s || parse_scaled(s, duration_units, ms) < 0)
        return opt__fail(errp, "\"%s\" is not a duration (e.g. \"5 min\", \"30 s\", \"500 ms\")",
                         s ? s : "");
    return 0;
}

/* Parses a Flink memory size (see options.h) into bytes (k = 1024). */
int opt_parse_memory(const char *s, int64_t *bytes, char **errp)
{
    if (!s || parse_scaled(s, memory_units, bytes) < 0)
        return opt__fail(errp, "\"%s\" is not a memory size (e.g. \"4 gb\", \"512 mb\", \"64 kb\")",
                         s ? s : "");
    return 0;
}

/* Parses "true" / "false" (any case, surrounding white space allowed). */
int opt_parse_bool(const char *s, bool *out, char **errp)
{
    char *t = opt__trim_dup(s ? s : "");
    int rc = 0;
    if (strcasecmp(t, "true") == 0)
        *out = true;
    else if (strcasecmp(t, "false") == 0)
        *out = false;
    else
        rc = opt__fail(errp, "\"%s\" is not a boolean (true or false)", s ? s : "");
    free(t);
    return rc;
}

/* A finite decimal number, the whole (trimmed) text. No hex, no inf/nan. */
static int parse_double(const char *t, double *out)
{
    if (!*t || strpbrk(t, "xXpP"))
        return -1;
    char *end = NULL;
    errno = 0;
    double d = strtod(t, &end);
    if (end == t || *end || errno == ERANGE || !isfinite(d))
        return -1;
    *out = d;
    return 0;
}

/* An integer, the whole (trimmed) text; an integral decimal such as "2.0" or "1e3" (how a
 * JSON number may be printed) is accepted too. */
int opt__parse_int64(const char *t, int64_t *out)
{
    if (!*t)
        return -1;
    char *end = NULL;
    errno = 0;
    long long v = strtoll(t, &end, 10);
    if (end != t && !*end && errno == 0) {
        *out = v;
        return 0;
    }
    double d;
    if (parse_double(t, &d) < 0 || d != floor(d) || d < -9.2e18 || d > 9.2e18)
        return -1;
    *out = (int64_t)d;
    return 0;
}

/* ----------------------------------------------------- display of a value -- */

static void fmt_memory(char *buf, size_t n, int64_t b)
{
    static const struct unit u[] = {{"tb", TIB}, {"gb", GIB}, {"mb", MIB}, {"kb", KIB}};
    for (size_t i = 0; i < sizeof u / sizeof u[0]; i++)
        if (b != 0 && b % u[i].mult == 0) {
            snprintf(buf, n, "%" PRId64 " %s", b / u[i].mult, u[i].name);
            return;
        }
    snprintf(buf, n, "%" PRId64 " bytes", b);
}

static void fmt_number(char *buf, size_t n, const struct opt_row *r, double x)
{
    if (r->type == T_DURATION)
        core_format_duration(buf, n, (int64_t)x);
    else if (r->type == T_MEMORY)
        fmt_memory(buf, n, (int64_t)x);
    else
        snprintf(buf, n, "%g", x);
}

/* An interval such as "[0, 1]", "(0, 1)", "[1, inf)"; explicit bounds override the row's. */
void opt__fmt_interval(char *buf, size_t n, const struct opt_row *r, double lo, int has_lo,
                       double hi, int has_hi)
{
    char a[48] = "-inf", b[48] = "inf";
    if (has_lo)
        fmt_number(a, sizeof a, r, lo);
    if (has_hi)
        fmt_number(b, sizeof b, r, hi);
    snprintf(buf, n, "%s%s, %s%s", has_lo == 1 ? "[" : "(", a, b, has_hi == 1 ? "]" : ")");
}

void opt__fmt_range(char *buf, size_t n, const struct opt_row *r)
{
    opt__fmt_interval(buf, n, r, r->min, r->has_min, r->max, r->has_max);
}

/* ------------------------------------------------------ parsing one value -- */

bool opt__is_plugin_name(const char *s, size_t n)
{
    if (n == 0)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!isalnum((unsigned char)s[i]) && s[i] != '_' && s[i] != '-')
            return false;
    return true;
}

static bool is_tz_name(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > 64 || s[0] == '/' || strstr(s, ".."))
        return false;
    for (size_t i = 0; i < n; i++)
        if (!isalnum((unsigned char)s[i]) && !strchr("_+/-", s[i]))
            return false;
    return true;
}

bool opt__in_range(const struct opt_row *r, double x)
{
    if ((r->has_min == 1 && x < r->min) || (r->has_min == 2 && x <= r->min))
        return false;
    if ((r->has_max == 1 && x > r->max) || (r->has_max == 2 && x >= r->max))
        return false;
    return true;
}

/*
 * Parses text (trimmed) for row r into v and checks it against the row's own rules: type,
 * range (not for gated rows, whose range counts only when their feature is on: core/README.md,
 * Options), enum values, names. The message (new, in *errp) names the value and what is allowed but
 * not the key: the caller prefixes the key the user wrote.
 */
int opt__parse_row_value(const struct opt_row *r, const char *t, struct val *v, char **errp)
{
    memset(v, 0, sizeof *v);
    if ((r->flags & F_OPTIONAL) && !*t) {
        v->unset = true;
        return 0;
    }
    double x = 0;
    switch (r->type) {
    case T_BOOL:
        return opt_parse_bool(t, &v->b, errp);
    case T_INT:
        if (opt__parse_int64(t, &v->i) < 0)
            return opt__fail(errp, "\"%s\" is not an integer", t);
        if (r->land == L_INT && (v->i < INT_MIN || v->i > INT_MAX))
            return opt__fail(errp, "\"%s\" is out of range [%d, %d]", t, INT_MIN, INT_MAX);
        x = (double)v->i;
        break;
    case T_DOUBLE:
        if (parse_double(t, &v->d) < 0)
            return opt__fail(errp, "\"%s\" is not a number", t);
        x = v->d;
        break;
    case T_DURATION:
        if (opt_parse_duration(t, &v->i, errp) < 0)
            return -1;
        x = (double)v->i;
        break;
    case T_MEMORY:
        if (opt_parse_memory(t, &v->i, errp) < 0)
            return -1;
        x = (double)v->i;
        break;
    case T_ENUM: {
        for (int i = 0; r->values[i]; i++) {
            bool eq = (r->flags & F_CASE) ? strcmp(t, r->values[i]) == 0
                                          : strcasecmp(t, r->values[i]) == 0;
            if (eq) {
                v->e = i;
                return 0;
            }
        }
        char list[256] = "";
        for (int i = 0; r->values[i]; i++)
            snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", i ? ", " : "",
                     r->values[i]);
        if (r->flags & F_OPEN) {
            if (opt__is_plugin_name(t, strlen(t))) {
                v->e = -1;
                return 0;
            }
            return opt__fail(errp,
                             "\"%s\" is neither one of %s nor a plugin name (letters, digits, '_', "
                             "'-')",
                             t, list);
        }
        return opt__fail(errp, "\"%s\" is not one of %s", t, list);
    }
    case T_LIST:
        if (r->flags & F_NAMES) {
            /* Repeated names count once (list_split drops them); more than MAX_PLUGINS
             * different ones are refused: every name costs a plugin call per vertex. */
            const char *seen[MAX_PLUGINS];
            size_t seen_len[MAX_PLUGINS];
            int n_seen = 0;
            for (const char *p = t; *p;) {
                size_t n = strcspn(p, ";");
                const char *a = p, *b = p + n;
                while (a < b && isspace((unsigned char)*a))
                    a++;
                while (b > a && isspace((unsigned char)b[-1]))
                    b--;
                if (b > a && !opt__is_plugin_name(a, (size_t)(b - a)))
                    return opt__fail(errp,
                                     "\"%.*s\" is not a plugin name (letters, digits, '_', '-'; "
                                     "names separated by ';')",
                                     (int)(b - a), a);
                bool dup = b == a;
                for (int i = 0; !dup && i < n_seen; i++)
                    dup = seen_len[i] == (size_t)(b - a) && memcmp(seen[i], a, seen_len[i]) == 0;
                if (!dup) {
                    if (n_seen == MAX_PLUGINS)
                        return opt__fail(errp, "more than %d different plugin names", MAX_PLUGINS);
                    seen[n_seen] = a;
                    seen_len[n_seen++] = (size_t)(b - a);
                }
                p += n;
                if (*p)
                    p++;
            }
        }
        if ((r->flags & F_PERIODS) && *t) {
            char *e = NULL;
            if (cron_validate(t, &e) < 0) {
                int rc = opt__fail(errp, "\"%s\" is not a valid excluded period: %s", t,
                                   e ? e : "invalid");
                free(e);
                return rc;
            }
        }
        return 0;
    case T_STRING:
        return 0;
    case T_TZ:
        if (!is_tz_name(t))
            return opt__fail(errp,
                             "\"%s\" is not a time zone name (IANA, e.g. \"UTC\", "
                             "\"Europe/Berlin\")",
                             t);
        {
            /* The zone must exist in the system's zoneinfo (read once, then cached). */
            char *e = NULL;
            if (!tz_get(t, &e)) {
                int rc = opt__fail(errp, "\"%s\" is not a known time zone: %s", t, e ? e : "");
                free(e);
                return rc;
            }
        }
        return 0;
    }
    if (!r->gate && !opt__in_range(r, x)) {
        char range[128];
        opt__fmt_range(range, sizeof range, r);
        return opt__fail(errp, "\"%s\" is out of range %s", t, range);
    }
    return 0;
}

/* ----------------------------------------------------------- server options -- */

/* Fills s with the SERVER rows' defaults. */
void opt_server_init(struct opt_server *s)
{
    memset(s, 0, sizeof *s);
    for (int i = 0; i < N_ROWS; i++) {
        const struct opt_row *r = &opt__rows[i];
        if (r->scope != S_SERVER)
            continue;
        struct val v;
        if (opt__parse_row_value(r, r->def, &v, NULL) < 0)
            abort(); /* a bad default in the table: caught by the tests */
        opt__land_value(s, r, &v, r->def, OPT_BUILTIN, NULL, i);
    }
}

/* Frees the strings of s. */
void opt_server_deinit(struct opt_server *s)
{
    for (int i = 0; i < N_ROWS; i++) {
        const struct opt_row *r = &opt__rows[i];
        if (r->scope == S_SERVER && r->land == L_STR) {
            char **p = (char **)((char *)s + r->off);
            free(*p);
            *p = NULL;
        }
    }
}

/* Sets one server option by its table name; -1 + *errp (new) naming the key. */
int opt_server_set(struct opt_server *s, const char *key, const char *value, char **errp)
{
    int i = 0;
    const struct opt_row *r = key ? opt__row_by_name(key, &i) : NULL;
    if (!r || r->scope != S_SERVER)
        return opt__fail(errp, "%s: unknown server option", key ? key : "");
    char *t = opt__trim_dup(value ? value : "");
    char *e = NULL;
    struct val v;
    if ((r->flags & F_NONEMPTY) && !*t) {
        free(t);
        return opt__fail(errp, "%s: an empty value is not allowed (leave the option out instead)",
                         key);
    }
    int rc = opt__parse_row_value(r, t, &v, &e);
    if (rc < 0)
        opt__fail(errp, "%s: %s", key, e);
    else
        opt__land_value(s, r, &v, t, OPT_BUILTIN, NULL, i);
    free(e);
    free(t);
    return rc;
}

/* Reads a `key = value` config file; see options.h. */
int opt_server_load_file(struct opt_server *s, struct opt_job *jobdefaults, const char *path,
                         char **errp)
{
    FILE *f = NULL;
    char *line = NULL, *e = NULL;
    size_t cap = 0;
    int rc = -1, lineno = 0;

    f = fopen(path, "r");
    if (!f) {
        opt__fail(errp, "%s: %s", path, strerror(errno));
        goto out;
    }
    while (getline(&line, &cap, f) >= 0) {
        lineno++;
        char *p = line;
        while (isspace((unsigned char)*p))
            p++;
        if (!*p || *p == '#')
            continue;
        char *eq = strchr(p, '=');
        if (!eq) {
            opt__fail(errp, "%s:%d: expected `key = value`", path, lineno);
            goto out;
        }
        *eq = '\0';
        char *key = p, *value = eq + 1;
        size_t kn = strlen(key);
        while (kn > 0 && isspace((unsigned char)key[kn - 1]))
            key[--kn] = '\0';
        while (isspace((unsigned char)*value))
            value++;
        size_t vn = strlen(value);
        while (vn > 0 && isspace((unsigned char)value[vn - 1]))
            value[--vn] = '\0';
        if (vn >= 2 && value[0] == '"' && value[vn - 1] == '"') {
            value[vn - 1] = '\0';
            value++;
        }
        const struct opt_row *r = opt__row_by_name(key, NULL);
        struct key_ref ref;
        if (r && r->scope == S_SERVER) {
            if (opt_server_set(s, key, value, &e) < 0)
                goto bad;
        } else if (opt__lookup_job_key(key, &ref) == 0 && !ref.ignored) {
            if (jobdefaults && opt_job_set(jobdefaults, OPT_SERVER, key, value, &e) < 0)
                goto bad;
        } else {
            opt__fail(errp, "%s:%d: %s: unknown option", path, lineno, key);
            goto out;
        }
        continue;
    bad:
        opt__fail(errp, "%s:%d: %s", path, lineno, e);
        goto out;
    }
    rc = 0;
out:
    free(e);
    free(line);
    if (f)
        fclose(f);
    return rc;
}
