/*
 * statejson.h - the JSON form a job's state was stored in before the binary one (prefix
 * statejson_), read one last time: jobs.state_json held it in rows written before migration
 * 002, and migration 008 (migrate.c) converts every such row to the binary form (core.h, State
 * codec) and drops the column. Nothing writes this form any more; this module goes with
 * migration 008, when databases older than schema version 8 no longer need to open.
 *
 * The form, as governor wrote it: {"version": 1, "last_at", "window": {"running_since",
 * "seq0", "ids", "parallelism", "vmetrics" and "gmetrics" (the column names of the samples'
 * metric vectors), "samples": [{"at", "g", "v"}], "started_at", "full_from", "topo_hash" (16
 * hex digits), "counters" (per vertex: sent and offset of each counter)}, "history",
 * "tracking", "delayed", "events", "rejected", "pending"}. Doubles are numbers printed with 17
 * digits, or "NaN", "Infinity", "-Infinity". Rows written before migration 002 lack seq0 and
 * everything from started_at on: those parts then read as a state written without them would
 * (numbering from 0, counters unknown, stabilizing from running_since, nothing pending).
 *
 * May call: core (the state's layout, core/state.h), jansson, xmem. No I/O.
 */
#ifndef GOVERNOR_STATEJSON_H
#define GOVERNOR_STATEJSON_H

#include <stddef.h>

#include "core/core.h"

/*
 * Reads a state in the JSON form (text borrowed) into st, which is cleared first; what it
 * allocates is malloc'd, as the core's own allocations are, and released by core_state_free.
 * -1 with a message in err naming the spot (e.g. "window.samples[3].v[1]: ...") on text that
 * is not such a state; st is then empty (last_at INT64_MIN).
 */
int statejson_read(const char *text, struct core_state *st, char *err, size_t err_len);

#endif
