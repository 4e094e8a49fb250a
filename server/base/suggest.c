/*
 * suggest.c - the nearest known name (see suggest.h).
 */
#include <ctype.h>
#include <string.h>

#include "base/suggest.h"

#define SUGGEST_MAX 64

/* Optimal string alignment distance of a and b (each at most SUGGEST_MAX bytes), letters
 * compared without case: three rows of the dynamic programme, O(len(a) x len(b)). */
static int distance(const char *a, size_t na, const char *b, size_t nb)
{
    int rows[3][SUGGEST_MAX + 1];
    int *prev2 = rows[0], *prev = rows[1], *cur = rows[2];
    for (size_t j = 0; j <= nb; j++)
        prev[j] = (int)j;
    for (size_t i = 1; i <= na; i++) {
        cur[0] = (int)i;
        for (size_t j = 1; j <= nb; j++) {
            int ca = tolower((unsigned char)a[i - 1]), cb = tolower((unsigned char)b[j - 1]);
            int cost = ca != cb;
            int d = prev[j] + 1;
            if (cur[j - 1] + 1 < d)
                d = cur[j - 1] + 1;
            if (prev[j - 1] + cost < d)
                d = prev[j - 1] + cost;
            if (i > 1 && j > 1 && ca == tolower((unsigned char)b[j - 2]) &&
                tolower((unsigned char)a[i - 2]) == cb && prev2[j - 2] + 1 < d)
                d = prev2[j - 2] + 1;
            cur[j] = d;
        }
        int *t = prev2;
        prev2 = prev;
        prev = cur;
        cur = t;
    }
    return prev[nb];
}

const char *suggest_nearest(const char *got, const char *const *names, size_t n)
{
    size_t ng = strlen(got);
    if (ng > SUGGEST_MAX)
        return NULL;
    const char *best = NULL;
    int best_d = 0;
    for (size_t i = 0; i < n; i++) {
        size_t nn = strlen(names[i]);
        if (nn > SUGGEST_MAX)
            continue;
        int allowed = nn <= 5 ? 1 : (int)(nn / 3 < 2 ? nn / 3 : 2);
        int d = distance(got, ng, names[i], nn);
        if (d <= allowed && (!best || d < best_d)) {
            best = names[i];
            best_d = d;
        }
    }
    return best;
}
