/*
 * jsn_get.c - the typed getters of the request parsers (jsn_int.h): JSON paths formatted only
 * on failure, the error sink, and `at` in its accepted forms.
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
#include "time/timeutil.h"
#include "base/xmem.h"

/* ---------------------------------------------------------------- paths -- */

size_t jsn__path_fmt(const struct path *p, char *buf, size_t len)
{
    if (!p)
        return 0;
    size_t n = jsn__path_fmt(p->up, buf, len);
    int w;
    if (p->key)
        w = snprintf(buf + (n < len ? n : len), n < len ? len - n : 0, "%s%s", p->up ? "." : "",
                     p->key);
    else
        w = snprintf(buf + (n < len ? n : len), n < len ? len - n : 0, "[%d]", p->index);
    return n + (w > 0 ? (size_t)w : 0);
}

/* Fills the sink with "<path>: <message>" (and the path alone into field). Returns -1. */
__attribute__((format(printf, 3, 4))) int jsn__fail(const struct sink *k, const struct path *p,
                                                    const char *fmt, ...)
{
    char where[256];
    where[0] = '\0';
    jsn__path_fmt(p, where, sizeof where);
    if (k->field)
        snprintf(k->field, k->field_len, "%s", where);
    char what[384];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    if (where[0])
        snprintf(k->msg, k->msg_len, "%s: %s", where, what);
    else
        snprintf(k->msg, k->msg_len, "%s", what);
    return -1;
}

const char *jsn__type_name(const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT:
        return "object";
    case JSON_ARRAY:
        return "array";
    case JSON_STRING:
        return "string";
    case JSON_INTEGER:
        return "integer";
    case JSON_REAL:
        return "real";
    case JSON_TRUE:
    case JSON_FALSE:
        return "boolean";
    case JSON_NULL:
        return "null";
    }
    return "?";
}

/* ------------------------------------------------------ typed getters -- */

/*
 * Each getter reads obj[key]. Absent or null: returns 0 and leaves *out (optional fields
 * keep the caller's default), unless `required`. Wrong type or out of range: -1 via jsn__fail().
 */

/* obj's member p->key into *v: NULL when absent or null, which is a failure when required. */
int jsn__member(const struct sink *k, const json_t *obj, bool required, const struct path *p,
                const json_t **v)
{
    *v = json_object_get(obj, p->key);
    if (*v && !json_is_null(*v))
        return 0;
    *v = NULL;
    return required ? jsn__fail(k, p, "required") : 0;
}

int jsn__get_number(const struct sink *k, const json_t *obj, const struct path *up, const char *key,
                    double lo, double hi, double *out)
{
    const json_t *v = json_object_get(obj, key);
    if (!v || json_is_null(v))
        return 0;
    struct path p = {up, key, 0};
    if (!json_is_number(v))
        return jsn__fail(k, &p, "expected a number, got %s", jsn__type_name(v));
    double x = json_number_value(v);
    if (!isfinite(x))
        return jsn__fail(k, &p, "must be a finite number");
    if (x < lo || x > hi) {
        if (isinf(hi))
            return jsn__fail(k, &p, "must be >= %g, got %.17g", lo, x);
        if (isinf(lo)) /* busy time: a negative one is taken and counted as 0 */
            return jsn__fail(k, &p, "must be in [0, %g], got %.17g (a negative value counts as 0)",
                             hi, x);
        return jsn__fail(k, &p, "must be in [%g, %g], got %.17g", lo, hi, x);
    }
    *out = x;
    return 0;
}

int jsn__get_int(const struct sink *k, const json_t *obj, const struct path *up, const char *key,
                 bool required, int lo, int *out)
{
    struct path p = {up, key, 0};
    const json_t *v;
    int rc = jsn__member(k, obj, required, &p, &v);
    if (rc < 0 || !v)
        return rc;
    if (!json_is_integer(v))
        return jsn__fail(k, &p, "expected an integer, got %s", jsn__type_name(v));
    json_int_t x = json_integer_value(v);
    if (x < lo)
        return jsn__fail(k, &p, "must be >= %d, got %" JSON_INTEGER_FORMAT, lo, x);
    if (x > INT_MAX)
        return jsn__fail(k, &p, "must be <= %d, got %" JSON_INTEGER_FORMAT, INT_MAX, x);
    *out = (int)x;
    return 0;
}

int jsn__get_string(const struct sink *k, const json_t *obj, const struct path *up, const char *key,
                    bool required, const char **out)
{
    struct path p = {up, key, 0};
    const json_t *v;
    int rc = jsn__member(k, obj, required, &p, &v);
    if (rc < 0 || !v)
        return rc;
    if (!json_is_string(v))
        return jsn__fail(k, &p, "expected a string, got %s", jsn__type_name(v));
    *out = json_string_value(v);
    return 0;
}

int jsn__get_bool(const struct sink *k, const json_t *obj, const struct path *up, const char *key,
                  bool *out)
{
    const json_t *v = json_object_get(obj, key);
    if (!v || json_is_null(v))
        return 0;
    struct path p = {up, key, 0};
    if (!json_is_boolean(v))
        return jsn__fail(k, &p, "expected a boolean, got %s", jsn__type_name(v));
    *out = json_is_true(v);
    return 0;
}

/* Absent/null: *out = NULL. Otherwise must be of the given type. */
int jsn__get_typed(const struct sink *k, const json_t *obj, const struct path *up, const char *key,
                   json_type t, const char *tname, json_t **out)
{
    json_t *v = json_object_get(obj, key);
    *out = NULL;
    if (!v || json_is_null(v))
        return 0;
    if (json_typeof(v) != t) {
        struct path p = {up, key, 0};
        return jsn__fail(k, &p, "expected %s, got %s", tname, jsn__type_name(v));
    }
    *out = v;
    return 0;
}

/* -------------------------------------------------------------- time -- */

/* RFC 3339 years are 0000-9999: the epoch-ms range accepted for `at` and `running_since`. */
#define MS_MIN TIME_MIN_MS
#define MS_MAX TIME_MAX_MS

/*
 * Epoch numbers that read as seconds, not milliseconds: [1e8, 1e11). As seconds they are
 * 1973-03-03 to 5138, every date a client means; as milliseconds they would be 1970-01-02 to
 * 1973-03-03, which no job runs at. Below 1e8 a value stays milliseconds (tests and synthetic
 * traces count from the epoch), and an RFC 3339 string is never checked.
 */
#define SECONDS_LIKE_MIN 100000000LL    /* 1e8 */
#define SECONDS_LIKE_END 100000000000LL /* 1e11 */

/* `at` / `running_since`: epoch ms (integer, or an integral real) or an RFC 3339 string. */
int jsn__get_time(const struct sink *k, const json_t *obj, const char *key, int64_t *out)
{
    const json_t *v = json_object_get(obj, key);
    if (!v || json_is_null(v))
        return 0;
    struct path p = {NULL, key, 0};
    int64_t ms;
    if (json_is_integer(v)) {
        ms = json_integer_value(v);
    } else if (json_is_real(v)) {
        double x = json_real_value(v);
        if (!isfinite(x) || x != floor(x) || x < (double)MS_MIN || x > (double)MS_MAX)
            return jsn__fail(k, &p, "expected epoch milliseconds (an integer), got %.17g", x);
        ms = (int64_t)x;
    } else if (json_is_string(v)) {
        const char *s = json_string_value(v);
        if (time_parse_rfc3339(s, &ms, NULL) < 0)
            return jsn__fail(k, &p,
                             "\"%.64s\" is not an RFC 3339 date-time "
                             "(e.g. 2025-11-29T10:00:00Z or 2025-11-29T11:00:00.250+01:00)",
                             s);
    } else {
        return jsn__fail(k, &p, "expected epoch milliseconds or an RFC 3339 string, got %s",
                         jsn__type_name(v));
    }
    if (ms > MS_MAX && ms / 1000 <= MS_MAX && !json_is_string(v))
        return jsn__fail(k, &p,
                         "%" PRId64
                         " is outside years 0000-9999 and reads as microseconds since the "
                         "epoch; epoch milliseconds are expected: %" PRId64,
                         ms, ms / 1000);
    if (ms < MS_MIN || ms > MS_MAX)
        return jsn__fail(k, &p, "%" PRId64 " is outside years 0000-9999", ms);
    if (!json_is_string(v) && ms >= SECONDS_LIKE_MIN && ms < SECONDS_LIKE_END) {
        /* The commonest client bug: seconds, which as milliseconds are early 1970 and would
         * keep the job collecting metrics for ever. Said with the value it would be. */
        int64_t y, sod = ms % 86400;
        int mo, d;
        time_civil_from_days(ms / 86400, &y, &mo, &d);
        return jsn__fail(
            k, &p,
            "%" PRId64 " reads as seconds since the epoch (%04" PRId64
            "-%02d-%02dT%02d:%02d:%02dZ); epoch milliseconds are expected: %" PRId64 "000",
            ms, y, mo, d, (int)(sod / 3600), (int)(sod / 60 % 60), (int)(sod % 60), ms);
    }
    *out = ms;
    return 0;
}

/* Makes *arr (elements of elem bytes, *cap of them) hold need: the buffers only grow, and
 * every element is filled by the parser before it is read. */
void jsn__reserve(void *arr, int *cap, int need, size_t elem)
{
    if (need <= *cap)
        return;
    *(void **)arr = xrealloc(*(void **)arr, (size_t)need * elem);
    *cap = need;
}

/* A size past its limit: 413 naming the field (p) and the limit, and the option that sets it
 * (a server option, or NULL: a fixed limit). -1. */
int jsn__over(struct jsn_err *e, const struct sink *k, const struct path *p, long long n,
              const char *what, long long limit, const char *option)
{
    if (option)
        jsn__fail(k, p, "%lld %s is more than the limit of %lld (the server option %s)", n, what,
                  limit, option);
    else
        jsn__fail(k, p, "%lld %s is more than the limit of %lld", n, what, limit);
    e->status = 413;
    snprintf(e->code, sizeof e->code, "PAYLOAD_TOO_LARGE");
    return -1;
}

void jsn__init_err(struct jsn_err *e, struct sink *k)
{
    e->status = 400;
    snprintf(e->code, sizeof e->code, "INVALID_ARGUMENT");
    e->message[0] = '\0';
    e->field[0] = '\0';
    k->msg = e->message;
    k->msg_len = sizeof e->message;
    k->field = e->field;
    k->field_len = sizeof e->field;
}

bool jsn_valid_id(const char *s)
{
    size_t n = 0;
    for (; s[n]; n++)
        if ((unsigned char)s[n] < 0x21 || (unsigned char)s[n] > 0x7e || n >= OPT_MAX_ID_LEN)
            return false;
    return n >= 1;
}
