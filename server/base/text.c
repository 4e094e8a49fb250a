/*
 * text.c - text helpers the layers share (see text.h).
 */
#include <stdint.h>
#include <string.h>

#include "base/text.h"
#include "base/xmem.h"

char *text__grow(struct text *t, size_t more)
{
    size_t cap = t->cap ? t->cap : 4096;
    while (cap < t->n + more + 1)
        cap *= 2;
    t->p = xrealloc(t->p, cap);
    t->cap = cap;
    return t->p + t->n;
}

void text_add(struct text *t, const void *s, size_t n)
{
    memcpy(text_room(t, n), s, n);
    t->n += n;
    t->p[t->n] = '\0';
}

void text_free(struct text *t)
{
    free(t->p);
    memset(t, 0, sizeof *t);
}

size_t text_utf8_len(const unsigned char *s, size_t n)
{
    unsigned c = s[0];
    size_t len;
    uint32_t cp;
    if (c < 0x80)
        return 1;
    if (c >= 0xC2 && c <= 0xDF)
        len = 2, cp = c & 0x1F;
    else if (c >= 0xE0 && c <= 0xEF)
        len = 3, cp = c & 0x0F;
    else if (c >= 0xF0 && c <= 0xF4)
        len = 4, cp = c & 0x07;
    else
        return 0;
    if (len > n)
        return 0;
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xC0) != 0x80)
            return 0;
        cp = (cp << 6) | (s[i] & 0x3F);
    }
    if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10FFFF)) ||
        (cp >= 0xD800 && cp <= 0xDFFF))
        return 0;
    return len;
}

bool text_utf8_valid(const char *s)
{
    for (const unsigned char *p = (const unsigned char *)s; *p;) {
        if (*p < 0x80) { /* most text: no call a byte */
            p++;
            continue;
        }
        size_t n = text_utf8_len(p, SIZE_MAX);
        if (!n)
            return false;
        p += n;
    }
    return true;
}

json_t *text_json_string(const char *s)
{
    if (!s)
        return json_null();
    json_t *v = json_string(s);
    if (v)
        return v;
    size_t n = strlen(s);
    char *c = xmalloc(n + 1);
    for (size_t i = 0; i <= n; i++)
        c[i] = (unsigned char)s[i] < 0x80 ? s[i] : '?';
    v = json_string(c);
    free(c);
    return v;
}

void text_json_str(struct text *t, const char *s)
{
    if (!s) {
        text_add(t, "null", 4);
        return;
    }
    size_t len = strlen(s);
    /* One pass that checks the UTF-8 as it copies; a text that turns out not to be UTF-8 is
     * printed again with its non-ASCII bytes as '?' (t->n moves only at the end). */
    for (int ascii_only = 0; ascii_only < 2; ascii_only++) {
        char *p = text_room(t, 2 + 6 * len), *p0 = p;
        const unsigned char *c = (const unsigned char *)s, *end = c + len;
        *p++ = '"';
        while (c < end) {
            unsigned char ch = *c;
            if (ch >= 0x20 && ch < 0x80 && ch != '"' && ch != '\\') {
                *p++ = (char)ch;
                c++;
            } else if (ch >= 0x80) {
                size_t k = ascii_only ? 1 : text_utf8_len(c, (size_t)(end - c));
                if (!k)
                    break;
                if (ascii_only)
                    *p++ = '?';
                else
                    memcpy(p, c, k), p += k;
                c += k;
            } else if (ch == '"' || ch == '\\') {
                *p++ = '\\';
                *p++ = (char)ch;
                c++;
            } else {
                static const char hex[] = "0123456789ABCDEF";
                static const char short_esc[32] = {
                    ['\b'] = 'b', ['\f'] = 'f', ['\n'] = 'n', ['\r'] = 'r', ['\t'] = 't'};
                *p++ = '\\';
                if (short_esc[ch]) {
                    *p++ = short_esc[ch];
                } else {
                    memcpy(p, "u00", 3);
                    p[3] = hex[ch >> 4];
                    p[4] = hex[ch & 15];
                    p += 5;
                }
                c++;
            }
        }
        if (c < end) /* not UTF-8 */
            continue;
        *p++ = '"';
        t->n += (size_t)(p - p0);
        *p = '\0';
        return;
    }
}
