/*
 * statebin.h - a job's autoscaler state (struct core_state) as a compact binary blob
 * (prefix statebin_), the form the store keeps it in: writing it is a copy of the doubles,
 * where the JSON form (json_state_dump) prints each with 17 digits, which cost more than the
 * whole decision. The JSON form stays for export and debugging.
 *
 * Format: "GVS3", then the fields of state.h in order, little-endian, int32 counts and
 * lengths, IEEE-754 doubles copied bit for bit (so the round trip is exact, NaN payloads
 * included). The store keeps a job's window samples apart, one row each ("GVM3": the state
 * without them, then statebin_dump_sample per sample): a decision then writes its one new
 * sample instead of the whole window. After the events come the window's stabilization
 * start, full-from instant, topology hash and counters, the rejected-sample count and the
 * pending scaling; a version 2 blob ("GVS2", "GVM2", written before they existed) loads
 * without them. May call: core (state layout and allocators), libc.
 */
#ifndef GOVERNOR_STATEBIN_H
#define GOVERNOR_STATEBIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/core.h"

/* new: the blob of st in *out (caller frees) and its length. Aborts on out-of-memory. */
void statebin_dump(const struct core_state *st, unsigned char **out, size_t *len);

/* Loads a blob into st (cleared first). -1 with a message in err on a truncated or bad one;
 * st is then empty. */
int statebin_load(const unsigned char *in, size_t len, struct core_state *st, char *err,
                  size_t err_len);

/* new: st without its window samples ("GVM3"). */
void statebin_dump_meta(const struct core_state *st, unsigned char **out, size_t *len);
/* new: window sample i of st (its number is st's seq0 + i). */
void statebin_dump_sample(const struct core_state *st, int i, unsigned char **out, size_t *len);
/* Loads either form; *meta tells that the samples are to be added (statebin_add_sample). */
int statebin_load_meta(const unsigned char *in, size_t len, struct core_state *st, bool *meta,
                       char *err, size_t err_len);
/* The number of the window's first sample, and one past its last. */
int64_t statebin_seq0(const struct core_state *st);
int64_t statebin_seq_end(const struct core_state *st);
/* Appends sample number seq, which must be the next one (seq0 + n). -1 + err otherwise. */
int statebin_add_sample(struct core_state *st, int64_t seq, const unsigned char *in, size_t len,
                        char *err, size_t err_len);

#endif
