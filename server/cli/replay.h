/*
 * replay.h - `governor replay`: feeds a JSONL file of samples (one decide request body
 * per line, plus "job") through the core with a candidate config, and prints one decision
 * per line as JSON. Nothing is written anywhere but the output stream. Each job of the
 * trace keeps its own state, exactly as the server would.
 *
 * May call: decision (each line is one decision of the service), replay_db (the --db form),
 * core, json (the state's round trip), options, plugin (loading a policies directory,
 * --policies), api (time parsing), log.
 */
#ifndef GOVERNOR_REPLAY_H
#define GOVERNOR_REPLAY_H

#include <stdbool.h>
#include <stdio.h>

#include "options/options.h"

/*
 * The sub-command (argv[0] is "replay"), both forms: `governor replay TRACE.jsonl [--config
 * FILE] [--set KEY=VALUE ...] [--roundtrip] [--policies DIR]`, and with `--db FILE --job ID
 * [--from T] [--to T]` the job's stored history replayed with that candidate (replay_db.h),
 * each change printed as one JSON line, then {"summary": {...}}. Returns the exit code: 0; 1 a
 * trace line that is not JSON, a trace or database that cannot be read; 2 usage, options or
 * policies that do not load.
 */
int replay_main(int argc, char **argv);

struct replay;

/*
 * new: a replay session whose jobs all start from `defaults` (the server layer: config file
 * and --set values; borrowed, must outlive the session). roundtrip: store and reload every
 * job's state in the form the server stores it in (the state without its window, then each
 * window sample) before each sample (proves the round trip changes nothing).
 */
struct replay *replay_new(const struct opt_job *defaults, bool roundtrip);
void replay_free(struct replay *r);

struct plugin_set;
/* Runs the plugins of set (a reference is taken; NULL: native hooks only) for the
 * following lines; each decision names set's revision instead of "native". */
void replay_set_policies(struct replay *r, struct plugin_set *set);

/*
 * Runs one trace line (a request body with "job"). Writes the decision as one JSON line to
 * out, or an {"error": ...} line for a rejected sample (the trace goes on, as a client's
 * would). lineno is for messages. Returns 0, or -1 if the line is not JSON at all.
 */
int replay_line(struct replay *r, const char *line, int lineno, FILE *out);

#endif
