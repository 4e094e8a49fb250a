/*
 * sql_json.c - the JSON text of a POST /v1/sql answer (see sql_json.h): strings as jansson
 * escapes them, base64 blobs, reals as jansson's %.15g, and the rows under their limits.
 */
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/sql_json.h"
#include "base/text.h"
#include "base/xmem.h"

/* What follows the last row: `],"truncated":false}` and the newline. */
#define TRAILER_BYTES 22

char *sql_json_error_text(const char *code, const char *field, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    json_t *err = json_object();
    json_object_set_new(err, "code", json_string(code));
    /* msg may hold bytes of the user's SQL cut at any point: json_string needs UTF-8. */
    json_t *m = json_string(msg);
    json_object_set_new(err, "message", m ? m : json_string("(message is not valid UTF-8)"));
    if (field)
        json_object_set_new(err, "field", json_string(field));
    json_t *body = json_object();
    json_object_set_new(body, "error", err);
    char *s = json_dumps(body, JSON_COMPACT);
    json_decref(body);
    if (!s)
        xmem_oom(); /* jansson is out of memory */
    size_t n = strlen(s);
    char *out = xmalloc(n + 2);
    memcpy(out, s, n);
    memcpy(out + n, "\n", 2);
    free(s);
    return out;
}
int sql_json_sql_check(const char *sql, int max_sql_len, char **err)
{
    if (!sql) {
        *err = sql_json_error_text("INVALID_ARGUMENT", "sql", "sql must be a string");
        return -1;
    }
    size_t sql_len = strlen(sql);
    if (sql_len > (size_t)max_sql_len) {
        *err = sql_json_error_text("INVALID_ARGUMENT", "sql",
                                   "sql is %zu bytes, longer than the %d allowed", sql_len,
                                   max_sql_len);
        return -1;
    }
    return 0;
}

int sql_json_params_check(json_t *params, int want, char **err)
{
    size_t have = 0;
    if (params && !json_is_null(params)) {
        if (!json_is_array(params)) {
            *err = sql_json_error_text("INVALID_ARGUMENT", "params", "params must be an array");
            return -1;
        }
        have = json_array_size(params);
    }
    if (have != (size_t)want) {
        *err = sql_json_error_text("INVALID_ARGUMENT", "params",
                                   "the statement has %d parameter%s but %zu value%s given", want,
                                   want == 1 ? "" : "s", have, have == 1 ? " was" : "s were");
        return -1;
    }
    for (size_t i = 0; i < have; i++) {
        json_t *v = json_array_get(params, i);
        if (!json_is_object(v) && !json_is_array(v))
            continue;
        char field[32];
        snprintf(field, sizeof field, "params[%zu]", i);
        *err = sql_json_error_text("INVALID_ARGUMENT", field,
                                   "a parameter must be a number, a string, a boolean or null, "
                                   "not an %s",
                                   json_is_object(v) ? "object" : "array");
        return -1;
    }
    return 0;
}

/* ---- text ---------------------------------------------------------------------------- */

static void out_str(struct text *o, const char *s)
{
    text_add(o, s, strlen(s));
}

/* The bytes jansson writes for an ASCII byte b inside a string: itself, a two-character
 * escape (\" \\ \b \f \n \r \t) or \u00XX. */
static size_t ascii_json_len(unsigned char b)
{
    if (b == '"' || b == '\\' || b == '\b' || b == '\f' || b == '\n' || b == '\r' || b == '\t')
        return 2;
    return b < 0x20 ? 6 : 1;
}

/* Bytes of the JSON string (quotes included) of the n bytes at s, each invalid UTF-8 byte
 * counted as the 3 bytes of U+FFFD. */
size_t sql_json_text_size(const unsigned char *s, size_t n)
{
    size_t total = 2;
    for (size_t i = 0; i < n;) {
        if (s[i] < 0x80) {
            total += ascii_json_len(s[i++]);
            continue;
        }
        size_t k = text_utf8_len(s + i, n - i);
        total += k ? k : 3;
        i += k ? k : 1;
    }
    return total;
}

/* Appends the JSON string of the n bytes at s: escapes as jansson writes them, each invalid
 * UTF-8 byte replaced by U+FFFD. */
void sql_json_text_put(struct text *o, const unsigned char *s, size_t n)
{
    size_t i = 0, start = 0;
    text_add(o, "\"", 1);
    while (i < n) {
        unsigned char b = s[i];
        if (b >= 0x20 && b < 0x80 && b != '"' && b != '\\') {
            i++;
            continue;
        }
        size_t k = b >= 0x80 ? text_utf8_len(s + i, n - i) : 0;
        if (k) {
            i += k;
            continue;
        }
        text_add(o, s + start, i - start);
        char esc[8];
        switch (b) {
        case '"':
            text_add(o, "\\\"", 2);
            break;
        case '\\':
            text_add(o, "\\\\", 2);
            break;
        case '\b':
            text_add(o, "\\b", 2);
            break;
        case '\f':
            text_add(o, "\\f", 2);
            break;
        case '\n':
            text_add(o, "\\n", 2);
            break;
        case '\r':
            text_add(o, "\\r", 2);
            break;
        case '\t':
            text_add(o, "\\t", 2);
            break;
        default:
            if (b >= 0x80) {
                text_add(o, "\xEF\xBF\xBD", 3);
            } else {
                snprintf(esc, sizeof esc, "\\u%04X", (unsigned)b);
                text_add(o, esc, 6);
            }
        }
        start = ++i;
    }
    text_add(o, s + start, i - start);
    text_add(o, "\"", 1);
}

/* Appends standard base64 (RFC 4648, with padding) of n bytes, in quotes. */
static void blob_put(struct text *o, const unsigned char *s, size_t n)
{
    static const char tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    char chunk[4 * 256];
    size_t c = 0, i = 0;
    text_add(o, "\"", 1);
    for (; i + 2 < n; i += 3) {
        uint32_t v = (uint32_t)s[i] << 16 | (uint32_t)s[i + 1] << 8 | s[i + 2];
        chunk[c++] = tab[v >> 18];
        chunk[c++] = tab[(v >> 12) & 63];
        chunk[c++] = tab[(v >> 6) & 63];
        chunk[c++] = tab[v & 63];
        if (c == sizeof chunk) {
            text_add(o, chunk, c);
            c = 0;
        }
    }
    if (i < n) {
        uint32_t v = (uint32_t)s[i] << 16 | (i + 1 < n ? (uint32_t)s[i + 1] << 8 : 0);
        chunk[c++] = tab[v >> 18];
        chunk[c++] = tab[(v >> 12) & 63];
        chunk[c++] = i + 1 < n ? tab[(v >> 6) & 63] : '=';
        chunk[c++] = '=';
    }
    text_add(o, chunk, c);
    text_add(o, "\"", 1);
}

/* A real as jansson writes it with JSON_REAL_PRECISION(15) (its jsonp_dtostr): "%.15g",
 * ".0" added when it would read back as an integer, no '+' or leading zeros in the
 * exponent; "null" when not finite (JSON has no infinity). Returns the length. */
size_t sql_json_real_text(char *buf, size_t size, double d)
{
    if (!isfinite(d))
        return (size_t)snprintf(buf, size, "null");
    size_t len = (size_t)snprintf(buf, size, "%.15g", d);
    if (!strchr(buf, '.') && !strchr(buf, 'e') && len + 3 <= size) {
        memcpy(buf + len, ".0", 3);
        len += 2;
    }
    char *start = strchr(buf, 'e');
    if (start) {
        start++;
        char *end = start + 1;
        if (*start == '-')
            start++;
        while (*end == '0')
            end++;
        if (end != start) {
            memmove(start, end, len - (size_t)(end - buf) + 1);
            len -= (size_t)(end - start);
        }
    }
    return len;
}

/* ---- cells and rows ------------------------------------------------------------------- */

static size_t cell_size(const struct sql_json_cell *c)
{
    switch (c->kind) {
    case SQL_JSON_NUMBER:
        return c->numlen;
    case SQL_JSON_TEXT:
        return sql_json_text_size(c->p, c->n);
    case SQL_JSON_BLOB:
        return 2 + (c->n + 2) / 3 * 4;
    default:
        return 4; /* null */
    }
}

static void cell_put(struct text *o, const struct sql_json_cell *c)
{
    switch (c->kind) {
    case SQL_JSON_NUMBER:
        text_add(o, c->num, c->numlen);
        break;
    case SQL_JSON_TEXT:
        sql_json_text_put(o, c->p, c->n);
        break;
    case SQL_JSON_BLOB:
        blob_put(o, c->p ? c->p : (const unsigned char *)"", c->n);
        break;
    default:
        text_add(o, "null", 4);
    }
}

int sql_json_head(struct text *o, const char *const *names, int ncol, int64_t max_bytes, char **err)
{
    out_str(o, "{\"columns\":[");
    for (int i = 0; i < ncol; i++) {
        if (i > 0)
            text_add(o, ",", 1);
        if (names[i])
            sql_json_text_put(o, (const unsigned char *)names[i], strlen(names[i]));
        else
            text_add(o, "null", 4);
    }
    out_str(o, "],\"rows\":[");
    if (o->n + TRAILER_BYTES > (size_t)max_bytes) {
        *err = sql_json_error_text("RESOURCE_EXHAUSTED", "sql",
                                   "the %d column names alone are above the result limit of %lld "
                                   "bytes (sql-max-bytes)",
                                   ncol, (long long)max_bytes);
        return -1;
    }
    return 0;
}

int sql_json_row_put(struct text *o, const struct sql_json_cell *cells, const char *const *names,
                     int ncol, int nrows, int64_t max_value, int64_t max_bytes, char **err)
{
    size_t mark = o->n, limit = (size_t)max_bytes;
    text_add(o, nrows ? ",[" : "[", nrows ? 2 : 1);
    for (int i = 0; i < ncol; i++) {
        size_t sz = cell_size(&cells[i]);
        if (sz > (size_t)max_value) {
            o->n = mark;
            *err = sql_json_error_text(
                "RESOURCE_EXHAUSTED", "sql",
                "row %d, column %d (%.40s): the value is %zu bytes as JSON, above the limit of "
                "one value of %lld bytes (sql-max-value)",
                nrows + 1, i + 1, names[i] ? names[i] : "?", sz, (long long)max_value);
            return -1;
        }
        /* this cell with its comma, then a comma per cell left and the ']' */
        if (o->n + (i > 0) + sz + (size_t)(ncol - i) + TRAILER_BYTES > limit) {
            if (nrows > 0) {
                o->n = mark;
                return 1;
            }
            /* the first row alone is too large: say how large, without building it */
            size_t total = o->n - mark + (i > 0) + sz + 1;
            for (int k = i + 1; k < ncol; k++)
                total += 1 + cell_size(&cells[k]);
            o->n = mark;
            *err = sql_json_error_text("RESOURCE_EXHAUSTED", "sql",
                                       "row 1 is %zu bytes as JSON, above the result limit of "
                                       "%lld bytes (sql-max-bytes)",
                                       total, (long long)max_bytes);
            return -1;
        }
        if (i > 0)
            text_add(o, ",", 1);
        cell_put(o, &cells[i]);
    }
    text_add(o, "]", 1);
    return 0;
}

void sql_json_tail(struct text *o, bool truncated)
{
    out_str(o, truncated ? "],\"truncated\":true}\n" : "],\"truncated\":false}\n");
}

void sql_json_body(struct text *o, char *err, char **body, size_t *len)
{
    if (err) {
        free(o->p);
        *body = err;
        *len = strlen(err);
    } else {
        *body = o->p;
        *len = o->n;
    }
}
