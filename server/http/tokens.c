/*
 * tokens.c - the API's bearer tokens (see http.h): the token file read, and the
 * Authorization header checked against it in constant time.
 */
#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http/http.h"
#include "base/xmem.h"

/* -------------------------------------------------------------------- auth -- */

/* -1 with *errp = "token file PATH[:LINE]: what" (new). */
static int token_error(char **errp, const char *path, long line, const char *what)
{
    char m[1024];
    if (line > 0)
        snprintf(m, sizeof m, "token file %s:%ld: %s", path, line, what);
    else
        snprintf(m, sizeof m, "token file %s: %s", path, what);
    *errp = xstrdup(m);
    return -1;
}

int http_load_tokens(const char *path, char ***out, char **errp)
{
    FILE *f = NULL;
    char **t = NULL;
    char *line = NULL;
    size_t cap = 0;
    long lineno = 0;
    int n = 0, rc = -1;
    ssize_t len;
    *out = NULL;
    if (!(f = fopen(path, "r"))) {
        token_error(errp, path, 0, strerror(errno));
        goto out;
    }
    /* whole lines, however long: a line is never split into several tokens */
    while ((len = getline(&line, &cap, f)) >= 0) {
        lineno++;
        if (memchr(line, '\0', (size_t)len)) {
            token_error(errp, path, lineno, "holds a NUL byte");
            goto out;
        }
        char *s = line, *e = line + len;
        while (s < e && isspace((unsigned char)*s))
            s++;
        while (e > s && isspace((unsigned char)e[-1]))
            e--;
        *e = '\0';
        if (!*s || *s == '#')
            continue;
        if ((size_t)(e - s) > HTTP_TOKEN_MAX) {
            char m[96];
            snprintf(m, sizeof m, "a token of %zu bytes, longer than %d", (size_t)(e - s),
                     HTTP_TOKEN_MAX);
            token_error(errp, path, lineno, m);
            goto out;
        }
        t = xrealloc(t, (size_t)(n + 2) * sizeof *t);
        t[n++] = xstrdup(s);
        t[n] = NULL;
    }
    if (ferror(f)) {
        token_error(errp, path, 0, strerror(errno));
        goto out;
    }
    if (n == 0) {
        token_error(errp, path, 0, "no token in it");
        goto out;
    }
    *out = t;
    t = NULL;
    rc = 0;
out:
    if (line) {
        /* wipe before release: the process should not keep secrets in freed memory */
        volatile char *v = line;
        for (size_t i = 0; i < cap; i++)
            v[i] = 0;
        free(line);
    }
    http_free_tokens(t);
    if (f)
        fclose(f);
    return rc;
}

void http_free_tokens(char **tokens)
{
    if (!tokens)
        return;
    for (char **p = tokens; *p; p++) {
        /* wipe before release: the process should not keep secrets in freed memory */
        volatile char *v = *p;
        while (*v)
            *v++ = 0;
        free(*p);
    }
    free(tokens);
}

/* 0 when a (alen bytes) equals the stored token b; time depends on strlen(b) only. */
static unsigned ct_diff(const char *a, size_t alen, const char *b)
{
    size_t blen = strlen(b);
    unsigned d = alen != blen;
    for (size_t i = 0; i < blen; i++)
        d |= (unsigned char)(i < alen ? a[i] : 0) ^ (unsigned char)b[i];
    return d;
}

bool http_auth_ok(char *const *tokens, const char *authorization)
{
    if (!tokens)
        return true;
    if (!authorization || strncasecmp(authorization, "Bearer ", 7) != 0)
        return false;
    const char *t = authorization + 7;
    while (*t == ' ')
        t++;
    size_t len = strlen(t);
    while (len && t[len - 1] == ' ')
        len--;
    unsigned ok = 0;
    for (char *const *p = tokens; *p; p++)
        ok |= !ct_diff(t, len, *p);
    return ok && len > 0;
}
