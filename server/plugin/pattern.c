/*
 * pattern.c - the cost guard of Lua's pattern functions (see pattern.h): the matching rules
 * of Lua 5.4's lstrlib.c rewritten to count their steps, run over the same subject and
 * pattern before Lua's own matcher, which executes no VM instructions and is thus invisible
 * to the count hook.
 */
#include <ctype.h>
#include <lauxlib.h>
#include <stdio.h>
#include <string.h>

#include "plugin/pattern.h"
#include "plugin/vm.h"

/* Pattern-matcher steps per charged instruction. */
#define STEPS_PER_INSTR 5

const char *pattern_fn_name(enum pattern_fn fn)
{
    static const char *const names[] = {"find", "match", "gmatch", "gsub"};
    return (unsigned)fn < 4 ? names[fn] : "?";
}

#define DRY_MAXCAP   32
#define DRY_MAXDEPTH 200
#define CAP_UNF      (-1)
#define CAP_POS      (-2)

struct dry {
    lua_State *L;
    struct vm *vm;
    const char *src, *src_end, *pat_end;
    int level;
    struct {
        const char *init;
        ptrdiff_t len;
    } cap[DRY_MAXCAP];
    int64_t steps, limit;
    int depth;
    bool over; /* step limit reached: refuse */
    bool bad;  /* malformed or too deep: leave the verdict to Lua's own matcher */
};

static bool dry_tick(struct dry *d, int64_t n)
{
    d->steps += n;
    if (d->steps > d->limit)
        d->over = true;
    else if ((d->steps & 0xffff) < n && d->vm->in_call && vm_now_ns() > d->vm->deadline_ns)
        d->over = true;
    return !d->over;
}

static const char *class_end(struct dry *d, const char *p)
{
    if (*p++ == '%') {
        if (p >= d->pat_end) {
            d->bad = true;
            return d->pat_end;
        }
        return p + 1;
    }
    if (p[-1] == '[') {
        if (p < d->pat_end && *p == '^')
            p++;
        do {
            if (p >= d->pat_end) {
                d->bad = true;
                return d->pat_end;
            }
            if (*p++ == '%' && p < d->pat_end)
                p++;
        } while (p >= d->pat_end || *p != ']');
        return p + 1;
    }
    return p;
}

static bool class_match(int c, int cl)
{
    bool r;
    switch (tolower(cl)) {
    case 'a':
        r = isalpha(c);
        break;
    case 'c':
        r = iscntrl(c);
        break;
    case 'd':
        r = isdigit(c);
        break;
    case 'g':
        r = isgraph(c);
        break;
    case 'l':
        r = islower(c);
        break;
    case 'p':
        r = ispunct(c);
        break;
    case 's':
        r = isspace(c);
        break;
    case 'u':
        r = isupper(c);
        break;
    case 'w':
        r = isalnum(c);
        break;
    case 'x':
        r = isxdigit(c);
        break;
    default:
        return cl == c;
    }
    return isupper(cl) ? !r : r;
}

/* p at '[', ec at the closing ']'. */
static bool bracket_match(int c, const char *p, const char *ec)
{
    bool neg = false;
    p++;
    if (*p == '^') {
        neg = true;
        p++;
    }
    for (; p < ec; p++) {
        if (*p == '%' && p + 1 < ec) {
            p++;
            if (class_match(c, (unsigned char)*p))
                return !neg;
        } else if (p + 2 < ec && p[1] == '-') {
            if ((unsigned char)p[0] <= c && c <= (unsigned char)p[2])
                return !neg;
            p += 2;
        } else if ((unsigned char)*p == c) {
            return !neg;
        }
    }
    return neg;
}

static bool single(struct dry *d, const char *s, const char *p, const char *ep)
{
    if (!dry_tick(d, 1) || s >= d->src_end)
        return false;
    int c = (unsigned char)*s;
    switch (*p) {
    case '.':
        return true;
    case '%':
        return class_match(c, (unsigned char)p[1]);
    case '[':
        return bracket_match(c, p, ep - 1);
    default:
        return (unsigned char)*p == c;
    }
}

static const char *dmatch(struct dry *d, const char *s, const char *p);

static const char *max_expand(struct dry *d, const char *s, const char *p, const char *ep)
{
    ptrdiff_t i = 0;
    while (single(d, s + i, p, ep))
        i++;
    while (i >= 0 && !d->over && !d->bad) {
        const char *r = dmatch(d, s + i, ep + 1);
        if (r)
            return r;
        i--;
    }
    return NULL;
}

static const char *min_expand(struct dry *d, const char *s, const char *p, const char *ep)
{
    for (;;) {
        const char *r = dmatch(d, s, ep + 1);
        if (r)
            return r;
        if (d->over || d->bad || !single(d, s, p, ep))
            return NULL;
        s++;
    }
}

static const char *start_cap(struct dry *d, const char *s, const char *p, ptrdiff_t what)
{
    if (d->level >= DRY_MAXCAP) {
        d->bad = true;
        return NULL;
    }
    d->cap[d->level].init = s;
    d->cap[d->level].len = what;
    d->level++;
    const char *r = dmatch(d, s, p);
    if (!r)
        d->level--;
    return r;
}

static const char *end_cap(struct dry *d, const char *s, const char *p)
{
    int l = -1;
    for (int k = d->level - 1; k >= 0; k--)
        if (d->cap[k].len == CAP_UNF) {
            l = k;
            break;
        }
    if (l < 0) {
        d->bad = true;
        return NULL;
    }
    d->cap[l].len = s - d->cap[l].init;
    const char *r = dmatch(d, s, p + 1);
    if (!r)
        d->cap[l].len = CAP_UNF;
    return r;
}

static const char *dmatch(struct dry *d, const char *s, const char *p)
{
    if (d->over || d->bad || !dry_tick(d, 1))
        return NULL;
    if (++d->depth > DRY_MAXDEPTH) {
        d->bad = true;
        return NULL;
    }
    const char *r = NULL;
    for (;;) {
        if (p >= d->pat_end) {
            r = s;
            break;
        }
        if (*p == '(') {
            r = (p + 1 < d->pat_end && p[1] == ')') ? start_cap(d, s, p + 2, CAP_POS)
                                                    : start_cap(d, s, p + 1, CAP_UNF);
            break;
        }
        if (*p == ')') {
            r = end_cap(d, s, p);
            break;
        }
        if (*p == '$' && p + 1 == d->pat_end) {
            r = s == d->src_end ? s : NULL;
            break;
        }
        if (*p == '%' && p + 1 < d->pat_end && p[1] == 'b') {
            if (p + 3 >= d->pat_end) {
                d->bad = true;
                break;
            }
            if (s >= d->src_end || *s != p[2])
                break;
            int cont = 1;
            const char *e = NULL;
            while (++s < d->src_end && dry_tick(d, 1)) {
                if (*s == p[3]) {
                    if (--cont == 0) {
                        e = s + 1;
                        break;
                    }
                } else if (*s == p[2]) {
                    cont++;
                }
            }
            if (!e)
                break;
            s = e;
            p += 4;
            continue;
        }
        if (*p == '%' && p + 1 < d->pat_end && p[1] == 'f') {
            p += 2;
            if (p >= d->pat_end || *p != '[') {
                d->bad = true;
                break;
            }
            const char *ep = class_end(d, p);
            if (d->bad)
                break;
            int prev = s == d->src ? 0 : (unsigned char)s[-1];
            int cur = s < d->src_end ? (unsigned char)*s : 0;
            if (!bracket_match(prev, p, ep - 1) && bracket_match(cur, p, ep - 1)) {
                p = ep;
                continue;
            }
            break;
        }
        if (*p == '%' && p + 1 < d->pat_end && isdigit((unsigned char)p[1])) {
            int l = p[1] - '1';
            if (l < 0 || l >= d->level || d->cap[l].len == CAP_UNF) {
                d->bad = true;
                break;
            }
            ptrdiff_t len = d->cap[l].len == CAP_POS ? 0 : d->cap[l].len;
            dry_tick(d, len);
            if (d->src_end - s >= len && memcmp(d->cap[l].init, s, (size_t)len) == 0) {
                s += len;
                p += 2;
                continue;
            }
            break;
        }
        const char *ep = class_end(d, p);
        if (d->bad)
            break;
        char q = ep < d->pat_end ? *ep : '\0';
        if (!single(d, s, p, ep)) {
            if (q == '*' || q == '?' || q == '-') {
                p = ep + 1;
                continue;
            }
            break;
        }
        if (q == '?') {
            const char *x = dmatch(d, s + 1, ep + 1);
            if (x) {
                r = x;
                break;
            }
            p = ep + 1;
            continue;
        }
        if (q == '+') {
            r = max_expand(d, s + 1, p, ep);
            break;
        }
        if (q == '*') {
            r = max_expand(d, s, p, ep);
            break;
        }
        if (q == '-') {
            r = min_expand(d, s, p, ep);
            break;
        }
        s++;
        p = ep;
    }
    d->depth--;
    return r;
}

static bool has_specials(const char *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (strchr("^$*+?.([%-", p[i]))
            return true;
    return false;
}

void pattern_charge(lua_State *L, enum pattern_fn fn)
{
    struct vm *vm = vm_of(L);
    size_t ls, lp;
    const char *src = lua_tolstring(L, 1, &ls);
    const char *pat = lua_tolstring(L, 2, &lp);
    if (!src || !pat)
        return; /* Lua's own function reports the bad argument */
    struct dry d;
    memset(&d, 0, sizeof d);
    d.L = L;
    d.vm = vm;
    d.src = src;
    d.src_end = src + ls;
    d.pat_end = pat + lp;
    int64_t left = vm->in_call ? vm->budget - vm->used : vm->lim.instructions;
    d.limit = (left > 0 ? left : 0) * STEPS_PER_INSTR;

    lua_Integer init = 1;
    if (fn != PATTERN_GSUB && lua_isinteger(L, 3))
        init = lua_tointeger(L, 3);
    if (init < 0)
        init = (lua_Integer)ls + init + 1;
    if (init < 1)
        init = 1;
    if (init > (lua_Integer)ls + 1)
        return;
    const char *s1 = src + init - 1;

    int64_t repl = 0; /* gsub: the cost of building the replacements */
    bool plain = fn == PATTERN_FIND && (lua_toboolean(L, 4) || !has_specials(pat, lp));
    if (plain) {
        /* memchr for the first byte, then a compare: count the compared bytes. */
        if (lp == 0)
            return;
        for (const char *q = s1; q + lp <= d.src_end && !d.over;) {
            const char *hit = memchr(q, pat[0], (size_t)(d.src_end - q));
            dry_tick(&d, 1 + (hit ? hit - q : d.src_end - q) / 64);
            if (!hit || hit + lp > d.src_end)
                break;
            size_t k = 1;
            while (k < lp && hit[k] == pat[k])
                k++;
            dry_tick(&d, (int64_t)k);
            if (k == lp)
                break;
            q = hit + 1;
        }
    } else {
        const char *p = pat;
        bool anchor = fn != PATTERN_GMATCH && lp > 0 && *p == '^';
        if (anchor)
            p++;
        lua_Integer max_n = fn == PATTERN_GSUB ? luaL_optinteger(L, 4, (lua_Integer)ls + 1) : 1;
        lua_Integer n = 0;
        const char *last = NULL;
        for (;;) {
            d.level = 0;
            d.depth = 0;
            const char *e = dmatch(&d, s1, p);
            if (d.over || d.bad)
                break;
            if (fn == PATTERN_FIND || fn == PATTERN_MATCH) {
                if (e || anchor || s1 >= d.src_end)
                    break;
                s1++;
                continue;
            }
            if (e && e != last) {
                n++;
                s1 = last = e;
                if (fn == PATTERN_GSUB && n >= max_n)
                    break;
            } else if (s1 < d.src_end) {
                s1++;
            } else {
                break;
            }
            if (anchor)
                break;
        }
        /* gsub builds a replacement per match: a string one is scanned for its %
         * escapes each time (a long one on many empty matches is a long call). */
        if (fn == PATTERN_GSUB && !d.over && !d.bad)
            repl =
                (int64_t)n * (1 + (lua_type(L, 3) == LUA_TSTRING ? (int64_t)lua_rawlen(L, 3) : 0));
    }
    if (d.over) {
        char what[160];
        snprintf(what, sizeof what,
                 "string.%s: pattern \"%.40s%s\" is too costly on a subject "
                 "of %zu bytes (over %lld matcher steps)",
                 pattern_fn_name(fn), pat, lp > 40 ? "..." : "", ls, (long long)d.limit);
        if (vm->in_call && vm_now_ns() > vm->deadline_ns)
            vm_kill(L, VM_KILL_DEADLINE, NULL);
        vm_kill(L, VM_KILL_PATTERN, what);
    }
    vm_charge(L, d.steps / STEPS_PER_INSTR + repl);
}
