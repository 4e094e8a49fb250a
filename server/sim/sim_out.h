/*
 * sim_out.h - the files `governor simulate` writes (prefix sim_out_): under --out (default
 * ./simulate-out, a folder of its own) and --trace, and never over one of its inputs. A
 * scenario run in its own folder with `--out .` would otherwise be replaced by its report
 * (backfill.json by the report of the scenario named "backfill").
 *
 * May call: libc (stat, fopen).
 */
#ifndef GOVERNOR_SIM_OUT_H
#define GOVERNOR_SIM_OUT_H

#include <stdio.h>

/* The default of --out. */
#define SIM_OUT_DEFAULT "simulate-out"

/*
 * Opens DIR/NAME+EXT for writing (new, the caller fcloses it). NULL with *errp (new) when it
 * cannot be written, or when it is the same file (device and inode) as one of inputs[0..n):
 * nothing is written then, and the message names both and says to choose another --out.
 */
FILE *sim_out_open(const char *dir, const char *name, const char *ext, const char *const *inputs,
                   int n, char **errp);

#endif
