/*
 * testfile.h - tests kept as data: a runner for `.test` files (after jq's tests/jq.test), so
 * that a table of cases is a table in a text file rather than a wall of assertions in C. Each
 * case is an input and the output expected for it; a C function per file (the handler) turns
 * one input into its output, and the runner compares. The files live in tests/unit/data/.
 *
 * The format, one case per line or per block:
 *
 *     # A comment: a line whose first character is '#'. Blank lines are ignored.
 *     verb | field | field => expected output
 *     verb | field
 *     => expected output, line 1
 *     => expected output, line 2
 *
 * A case starts with a line that does not start with "=>". Its input is split into fields at
 * each '|', every field trimmed of blanks; a field written in double quotes keeps its blanks
 * and may hold '|' or "=>" and the escapes \" \\ \t \n. The first "=>" outside quotes ends the
 * input: what follows it on the line (one blank after "=>" dropped) is the first line of the
 * expected output, and each following line starting with "=>" adds one more. A case without
 * any expected line is an error in the file. By convention the first field names what to do
 * (a verb: `match`, `local`, `align`, ...), so one file can hold several kinds of case.
 *
 * The handler gets the fields and prints the case's output with testfile_printf, one line per
 * '\n'; the output must equal the expected lines exactly (trailing newlines aside). It returns
 * 0, or -1 when the case itself is malformed (an unknown verb, a missing field), after
 * printing why; that counts as a failure. Everything is header-only, like test.h, so each
 * test program stays one file.
 *
 * Use from a test.h test function:
 *
 *     static void cron_cases(void)
 *     {
 *         ASSERT_EQ(testfile_run(TESTFILE_DATA("cron.test"), cron_case, NULL), 0);
 *     }
 */
#ifndef GOVERNOR_TESTFILE_H
#define GOVERNOR_TESTFILE_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A data file under tests/unit/data/, from the source tree (so any working directory works). */
#define TESTFILE_DATA(name) GOVERNOR_SOURCE_DIR "/tests/unit/data/" name

#define TESTFILE_MAX_FIELDS 16

/* new (free() it): the whole text of the file at path, or NULL when it cannot be read. For
 * data a test reads whole (a document, the README) rather than as cases. */
static inline char *testfile_read(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = n < 0 ? NULL : malloc((size_t)n + 1);
    if (s)
        s[fread(s, 1, (size_t)n, f)] = '\0';
    fclose(f);
    return s;
}

/* One case as the handler sees it. Everything is borrowed from the runner for the call. */
struct testfile_case {
    const char *file;
    int line;                               /* where the case starts */
    int n_fields;                           /* >= 1 */
    const char *field[TESTFILE_MAX_FIELDS]; /* field[0] is conventionally the verb */
};

/* The output a handler prints (a growing string, lines separated by '\n'). */
struct testfile_out {
    char *buf;
    size_t len, cap;
};

/* Appends formatted text to out. Aborts on out-of-memory (a test program has no better way). */
__attribute__((format(printf, 2, 3))) static inline void testfile_printf(struct testfile_out *out,
                                                                         const char *fmt, ...)
{
    va_list ap, aq;
    va_start(ap, fmt);
    va_copy(aq, ap);
    int n = vsnprintf(NULL, 0, fmt, aq);
    va_end(aq);
    if (n < 0)
        n = 0;
    if (out->len + (size_t)n + 1 > out->cap) {
        size_t cap = out->cap ? out->cap : 256;
        while (out->len + (size_t)n + 1 > cap)
            cap *= 2;
        char *b = realloc(out->buf, cap);
        if (!b)
            abort();
        out->buf = b;
        out->cap = cap;
    }
    vsnprintf(out->buf + out->len, (size_t)n + 1, fmt, ap);
    out->len += (size_t)n;
    va_end(ap);
}

/* Field i of c, or NULL when the case has fewer fields. */
static inline const char *testfile_field(const struct testfile_case *c, int i)
{
    return i >= 0 && i < c->n_fields ? c->field[i] : NULL;
}

/* A blank for the format: space or tab. */
static inline int testfile__blank(char ch)
{
    return ch == ' ' || ch == '\t';
}

/*
 * Splits the input part of line (modified in place; fields point into it or into quoted,
 * which holds the unescaped quoted fields) into c's fields. Sets *expected to the text after
 * the first "=>" outside quotes, or NULL when there is none. -1 with why on a bad line.
 */
static inline int testfile__split(char *line, char *quoted, struct testfile_case *c,
                                  char **expected, const char **why)
{
    char *p = line, *q = quoted;
    c->n_fields = 0;
    *expected = NULL;
    for (;;) {
        while (testfile__blank(*p))
            p++;
        if (c->n_fields == TESTFILE_MAX_FIELDS) {
            *why = "too many fields";
            return -1;
        }
        char *end; /* where the field's text ends, in line */
        if (*p == '"') {
            c->field[c->n_fields++] = q;
            for (p++; *p && *p != '"'; p++) {
                if (*p == '\\' && p[1]) {
                    p++;
                    *q++ = *p == 't' ? '\t' : *p == 'n' ? '\n' : *p;
                } else {
                    *q++ = *p;
                }
            }
            if (*p != '"') {
                *why = "unterminated quoted field";
                return -1;
            }
            *q++ = '\0';
            p++;
            while (testfile__blank(*p))
                p++;
            end = NULL;
        } else {
            c->field[c->n_fields++] = p;
            while (*p && *p != '|' && !(p[0] == '=' && p[1] == '>'))
                p++;
            end = p;
            while (end > c->field[c->n_fields - 1] && testfile__blank(end[-1]))
                end--;
        }
        int bar = *p == '|', arrow = p[0] == '=' && p[1] == '>';
        if (!bar && !arrow && *p) {
            *why = "text after a quoted field";
            return -1;
        }
        char *next = p + (bar ? 1 : arrow ? 2 : 0);
        if (end)
            *end = '\0'; /* may overwrite the '|' or '=' just looked at */
        if (bar) {
            p = next;
            continue;
        }
        if (arrow)
            *expected = *next == ' ' ? next + 1 : next;
        return 0;
    }
}

/* Strips a trailing newline, carriage return and blanks. */
static inline void testfile__chomp(char *s)
{
    size_t n = strlen(s);
    while (n > 0 && (s[n - 1] == '\n' || s[n - 1] == '\r' || testfile__blank(s[n - 1])))
        s[--n] = '\0';
}

/* Prints text under a label, continuation lines indented to line up with the first. */
static inline void testfile__report(const char *label, const char *text)
{
    fprintf(stderr, "  %-10s", label);
    for (const char *p = text; *p; p++) {
        fputc(*p, stderr);
        if (*p == '\n')
            fprintf(stderr, "  %-10s", "");
    }
    fputc('\n', stderr);
}

/* Runs one collected case; prints a report and returns 1 when it fails, else 0. */
static inline int
testfile__check(struct testfile_case *c, const char *input, const char *expected,
                int (*fn)(void *, const struct testfile_case *, struct testfile_out *), void *ud)
{
    struct testfile_out out = {NULL, 0, 0};
    testfile_printf(&out, "%s", "");
    int rc = fn(ud, c, &out);
    while (out.len > 0 && out.buf[out.len - 1] == '\n')
        out.buf[--out.len] = '\0';
    int failed = rc != 0 || strcmp(out.buf, expected) != 0;
    if (failed) {
        fprintf(stderr, "%s:%d: %s\n", c->file, c->line, input);
        if (rc != 0) {
            testfile__report("bad case:", out.buf);
        } else {
            testfile__report("expected:", expected);
            testfile__report("got:", out.buf);
        }
    }
    free(out.buf);
    return failed;
}

/*
 * Runs every case of the file at path through fn (ud is handed to it). Prints each failing
 * case (file:line, the input, what was expected and what came out) to stderr and a closing
 * "path: N cases, N failed" line to stdout. Returns the number of failed cases, or -1 when
 * the file cannot be read or is malformed (the reason printed).
 */
static inline int
testfile_run(const char *path,
             int (*fn)(void *ud, const struct testfile_case *c, struct testfile_out *out), void *ud)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "%s: cannot open\n", path);
        return -1;
    }
    /* line: the line just read; input: the pending case's first line as written (for
     * reports); work: the same, split in place into the fields (the case is checked only
     * when the next case starts, after line has been overwritten). */
    char line[4096], input[4096], work[4096], quoted[4096];
    struct testfile_case c;
    struct testfile_out expected = {NULL, 0, 0};
    int have = 0, n_expected = 0, lineno = 0, cases = 0, failed = 0, bad = 0;
    for (;;) {
        char *got = fgets(line, sizeof line, f);
        if (got)
            lineno++;
        if (got && strlen(line) == sizeof line - 1 && line[sizeof line - 2] != '\n') {
            fprintf(stderr, "%s:%d: line too long\n", path, lineno);
            bad = 1;
            break;
        }
        if (got)
            testfile__chomp(line);
        int continues = got && line[0] == '=' && line[1] == '>';
        /* A case ends where the next starts, or at the end of the file. */
        if (have && !continues && (!got || (line[0] && line[0] != '#'))) {
            if (n_expected == 0) {
                fprintf(stderr, "%s:%d: a case without an expected output\n", path, c.line);
                bad = 1;
                break;
            }
            cases++;
            failed += testfile__check(&c, input, expected.buf, fn, ud);
            have = 0;
        }
        if (!got)
            break;
        if (line[0] == '\0' || line[0] == '#')
            continue;
        if (continues) {
            if (!have) {
                fprintf(stderr, "%s:%d: \"=>\" without a case\n", path, lineno);
                bad = 1;
                break;
            }
            const char *e = line + 2;
            if (*e == ' ')
                e++;
            testfile_printf(&expected, "%s%s", n_expected ? "\n" : "", e);
            n_expected++;
            continue;
        }
        snprintf(input, sizeof input, "%s", line);
        snprintf(work, sizeof work, "%s", line);
        char *exp = NULL;
        const char *why = NULL;
        c.file = path;
        c.line = lineno;
        if (testfile__split(work, quoted, &c, &exp, &why) < 0) {
            fprintf(stderr, "%s:%d: %s\n", path, lineno, why);
            bad = 1;
            break;
        }
        expected.len = 0;
        testfile_printf(&expected, "%s", exp ? exp : "");
        n_expected = exp ? 1 : 0;
        have = 1;
    }
    fclose(f);
    free(expected.buf);
    if (bad)
        return -1;
    printf("%s: %d cases, %d failed\n", path, cases, failed);
    return failed;
}

#endif
