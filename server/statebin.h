/*
 * statebin.h - a job's autoscaler state (struct core_state) as a compact binary blob
 * (prefix statebin_), the form the store keeps it in: writing it is a copy of the doubles,
 * where the JSON form (json_state_dump) prints each with 17 digits, which cost more than the
 * whole decision. The JSON form stays for export and debugging.
 *
 * Format: "GVS1", then the fields of state.h in order, little-endian, int32 counts and
 * lengths, IEEE-754 doubles copied bit for bit (so the round trip is exact, NaN payloads
 * included). May call: core (state layout and allocators), libc.
 */
#ifndef GOVERNOR_STATEBIN_H
#define GOVERNOR_STATEBIN_H

#include <stddef.h>

#include "core/core.h"

/* new: the blob of st in *out (caller frees) and its length. Aborts on out-of-memory. */
void statebin_dump(const struct core_state *st, unsigned char **out, size_t *len);

/* Loads a blob into st (cleared first). -1 with a message in err on a truncated or bad one;
 * st is then empty. */
int statebin_load(const unsigned char *in, size_t len, struct core_state *st, char *err,
                  size_t err_len);

#endif
