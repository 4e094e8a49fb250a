/*
 * text.h - text helpers the layers share (prefix text_): a growing text buffer, the length of
 * a valid UTF-8 sequence as jansson checks it, and a jansson string of a text that may not be
 * UTF-8 (a plugin's error, a message with a client's bytes), as every answer renders one. The
 * one copy of each: the JSON codec's printer (decision/jsn_text.c), the SQL answer's printer
 * (store/sql_json.c), the store's rebuild of a response and the response's renderer use them.
 *
 * May call: jansson, xmem, libc.
 */
#ifndef GOVERNOR_TEXT_H
#define GOVERNOR_TEXT_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

/* A growing text buffer: zeroed storage is empty; p (NUL-terminated once anything was added)
 * is the owner's, released with text_free. */
struct text {
    char *p;
    size_t n, cap;
};

/* text_room's growth (first 4096 bytes, then doubling). */
char *text__grow(struct text *t, size_t more);
/* Makes room for more bytes and a NUL after t->n; returns where they go. The caller writes them
 * and adds them to t->n. Aborts when out of memory. Inline: printers call it for every value. */
static inline char *text_room(struct text *t, size_t more)
{
    return t->n + more + 1 <= t->cap ? t->p + t->n : text__grow(t, more);
}
/* Appends n bytes (and keeps the text NUL-terminated). */
void text_add(struct text *t, const void *s, size_t n);
/* Releases t's text; t is empty again. */
void text_free(struct text *t);

/* The length of the valid UTF-8 sequence at s (n bytes left; a NUL-terminated string may pass
 * SIZE_MAX), 1 to 4, or 0 when it is not one (jansson's rules: no overlong forms, no
 * surrogates, nothing above U+10FFFF). */
size_t text_utf8_len(const unsigned char *s, size_t n);
/* Whether the NUL-terminated s is valid UTF-8 (json_string would take it). */
bool text_utf8_valid(const char *s);

/* new: s as a JSON string, NULL as null; text that is not UTF-8 has its non-ASCII bytes as
 * '?' (json_string would refuse it). */
json_t *text_json_string(const char *s);
/* Appends s as JSON text, as jansson's compact dump writes text_json_string(s): NULL is null,
 * text that is not UTF-8 has its non-ASCII bytes as '?', and '"', '\\' and control characters
 * escaped. */
void text_json_str(struct text *t, const char *s);

#endif
