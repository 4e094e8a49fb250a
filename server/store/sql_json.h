/*
 * sql_json.h - the JSON text of a POST /v1/sql answer, shared by both engines (prefix
 * sql_json_): the SQLite connection (sql_conn.h) and the PostgreSQL one (sql_pg.h) render
 * their rows through it, so that the same values give the same bytes on either store.
 *
 * The body is {"columns": [...], "rows": [[...]], "truncated": false} and a newline, written
 * exactly as jansson's compact form with 15 significant digits would write it: a number as
 * its text (a real as "%.15g", ".0" added to a whole one, null when not finite), a string
 * with invalid UTF-8 replaced by U+FFFD, a blob as a base64 string, NULL as null. The limits
 * are checked on the JSON sizes before anything is built: one value (max_value), and the
 * body (max_bytes: a row that does not fit after the first ends the result, "truncated").
 *
 * May call: jansson (params, error bodies), xmem. Knows nothing of SQLite, libpq or HTTP.
 */
#ifndef GOVERNOR_SQL_JSON_H
#define GOVERNOR_SQL_JSON_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/text.h"

/* Bytes of the JSON string (quotes included) of the n bytes at s. */
size_t sql_json_text_size(const unsigned char *s, size_t n);

/* Appends the JSON string of the n bytes at s (escapes as jansson writes them). */
void sql_json_text_put(struct text *o, const unsigned char *s, size_t n);

/* Writes the JSON text of a real into buf (at least 32 bytes) and returns its length. */
size_t sql_json_real_text(char *buf, size_t size, double d);

/* One value of a row. TEXT and BLOB point at bytes the caller keeps alive (borrowed). */
enum sql_json_kind { SQL_JSON_NULL, SQL_JSON_NUMBER, SQL_JSON_TEXT, SQL_JSON_BLOB };
struct sql_json_cell {
    enum sql_json_kind kind;
    const unsigned char *p; /* TEXT, BLOB */
    size_t n;
    char num[48]; /* NUMBER: its JSON text (sql_json_real_text, or an integer's digits) */
    size_t numlen;
};

/*
 * Appends {"columns":[names...],"rows":[ to o (empty). 0, or -1 with *err (new, the error
 * body) when the names alone leave no room under max_bytes.
 */
int sql_json_head(struct text *o, const char *const *names, int ncol, int64_t max_bytes,
                  char **err);

/*
 * Appends row number nrows (0-based: the rows already in o) of ncol cells, or refuses it.
 * Returns 0 when it was added, 1 when it does not fit in max_bytes after earlier rows (o
 * unchanged: the result ends there, truncated), or -1 with *err (new) when a value is above
 * max_value, or the first row alone above max_bytes. names are for the messages.
 */
int sql_json_row_put(struct text *o, const struct sql_json_cell *cells, const char *const *names,
                     int ncol, int nrows, int64_t max_value, int64_t max_bytes, char **err);

/* Appends the end of the body: `],"truncated":false}` and the newline. */
void sql_json_tail(struct text *o, bool truncated);
/* The answer's body into *body (new) and *len: err (new, taken) when it is set, o's text then
 * dropped, or else o's text. */
void sql_json_body(struct text *o, char *err, char **body, size_t *len);

/*
 * Checks a request's SQL text (borrowed; NULL: the request's sql was not a string) against
 * the length limit. 0, or -1 with *err (new, the error body of a 400).
 */
int sql_json_sql_check(const char *sql, int max_sql_len, char **err);

/*
 * Checks a request's params (borrowed: NULL or JSON null for none, else an array) against a
 * statement of want parameters: an array of that length whose values are numbers, strings,
 * booleans or nulls. 0, or -1 with *err (new, the error body; field "params" or "params[i]").
 */
int sql_json_params_check(json_t *params, int want, char **err);

/*
 * new: the JSON text (with the trailing newline) of the error body
 * {"error": {"code": code, "message": ..., "field": field}}; field NULL omits it.
 */
char *sql_json_error_text(const char *code, const char *field, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
