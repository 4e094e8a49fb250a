/*
 * suggest.h - "did you mean": the known name nearest to a name that was not recognized
 * (prefix suggest_), for messages about a misspelt field or flag.
 *
 * May call: libc. No allocation.
 */
#ifndef GOVERNOR_SUGGEST_H
#define GOVERNOR_SUGGEST_H

#include <stddef.h>

/*
 * The name of names[0..n) nearest to got by edit distance (insertions, deletions,
 * substitutions and swaps of two neighbours, letters compared without case), when it is near
 * enough to be a slip of the keyboard: at most 2 edits and at most a third of the name's
 * length (one edit for a name of up to 5 characters). NULL when none is, or when got or a
 * name is longer than 64 characters. Ties go to the first in names. Borrowed from names.
 */
const char *suggest_nearest(const char *got, const char *const *names, size_t n);

#endif
