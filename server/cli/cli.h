/*
 * cli.h - the command line (prefix cli_): which sub-command, and for `serve` the server
 * options from the --config file and then the flags (flags win). Every server option of
 * the options table is a flag, `--name value` or `--name=value`; the contract's names
 * (--listen, --db, --policies, --token-file, --config) are rows of that table.
 *
 * Sub-commands that parse their own arguments (`governor replay`, `governor test`,
 * `governor simulate`, `governor flink`) are only recognized here. A new sub-command adds a value
 * to enum cli_cmd, a branch in cli_parse and one in main.c.
 *
 * May call: options, libc (reference.h: the core's tables).
 */
#ifndef GOVERNOR_CLI_H
#define GOVERNOR_CLI_H

#include <stdio.h>

#include "options/options.h"

enum cli_cmd {
    CLI_HELP,
    CLI_VERSION,
    CLI_OPTIONS,
    CLI_REFERENCE,
    CLI_SERVE,
    CLI_SERVE_HELP,
    CLI_REPLAY,
    CLI_TEST,
    CLI_SIMULATE,
    CLI_FLINK
};

struct cli {
    enum cli_cmd cmd;
    struct opt_server srv;    /* serve: defaults < config file < flags */
    struct opt_job *defaults; /* serve: job options of the config file (OPT_SERVER layer) */
};

/* Parses argv into c (which cli_deinit releases, also after a failure). -1 + *errp. */
int cli_parse(int argc, char **argv, struct cli *c, char **errp);
void cli_deinit(struct cli *c);
/* `governor --help`. */
void cli_usage(FILE *out);
/* `governor serve --help`: the serve flags, from the options table. */
void cli_serve_usage(FILE *out);

#endif
