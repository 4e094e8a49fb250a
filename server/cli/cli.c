/*
 * cli.c - the command line (see cli.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "base/xmem.h"

void cli_usage(FILE *out)
{
    fputs("usage: governor <command> [flags]\n"
          "\n"
          "commands:\n"
          "  serve      run the HTTP server: governor serve [--listen HOST:PORT] [--db PATH]\n"
          "             [--policies DIR] [--token-file FILE] [--config FILE]\n"
          "             [--<server option> VALUE ...]   (governor serve --help lists them)\n"
          "  replay     feed a JSONL trace of samples through the decision pipeline and print\n"
          "             each decision: governor replay TRACE.jsonl [--config FILE]\n"
          "             [--set KEY=VALUE ...] [--policies DIR] [--roundtrip]\n"
          "             or re-run a job's stored history with a candidate config:\n"
          "             governor replay --db FILE --job ID [--from T] [--to T]\n"
          "             [--policies DIR] [--config FILE] [--set KEY=VALUE ...]\n"
          "  simulate   drive a simulated job in a closed loop and compare policies:\n"
          "             governor simulate SCENARIO.json [--policies DIR] [--set KEY=VALUE ...]\n"
          "             (governor simulate --help lists its flags)\n"
          "  flink      govern a Flink job from its JobManager's REST API:\n"
          "             governor flink --rest URL (--job JOBID | --all) [--server URL]\n"
          "             [--apply none|rest|print] [--once]   (governor flink --help lists them)\n"
          "  test       run the policy tests (*_test.lua, *.test) of a directory in the\n"
          "             plugin sandbox: governor test [DIR] (default ./policies)\n"
          "  options    print the options table (job and server options)\n"
          "  reference  print the answer's reason and constraint codes, vertex fields and\n"
          "             evaluated figures (markdown, as in the README)\n"
          "  --help     this text\n"
          "  --version  the version\n"
          "\n"
          "Every server option of `governor options` is a flag of serve, as --name VALUE or\n"
          "--name=VALUE; flags win over the --config file (key = value lines).\n",
          out);
}

void cli_serve_usage(FILE *out)
{
    fputs("usage: governor serve [--config FILE] [--NAME VALUE | --NAME=VALUE ...]\n"
          "\n"
          "Runs the HTTP server. Every server option is a flag; the --config file holds\n"
          "`key = value` lines (server options and job option defaults), and flags win over\n"
          "it. The flags:\n\n",
          out);
    opt_print_server_flags(out);
}

static char *msg(const char *a, const char *b)
{
    size_t n = strlen(a) + strlen(b) + 1;
    char *s = xmalloc(n);
    snprintf(s, n, "%s%s", a, b);
    return s;
}

/* Splits argv[*i] ("--name=value" or "--name" "value") into name and value. */
static int flag(int argc, char **argv, int *i, char *name, size_t nlen, const char **value,
                char **errp)
{
    const char *a = argv[*i];
    if (strncmp(a, "--", 2) != 0) {
        *errp = msg("unexpected argument: ", a);
        return -1;
    }
    a += 2;
    const char *eq = strchr(a, '=');
    size_t n = eq ? (size_t)(eq - a) : strlen(a);
    if (n == 0 || n >= nlen) {
        *errp = msg("bad flag: ", argv[*i]);
        return -1;
    }
    memcpy(name, a, n);
    name[n] = '\0';
    if (strcmp(name, "config") != 0 && !opt_server_known(name)) {
        *errp = msg("unknown option --", name);
        return -1;
    }
    if (eq) {
        *value = eq + 1;
    } else {
        if (*i + 1 >= argc) {
            *errp = msg("missing value for --", name);
            return -1;
        }
        *value = argv[++*i];
    }
    return 0;
}

int cli_parse(int argc, char **argv, struct cli *c, char **errp)
{
    char name[128];
    const char *value;
    memset(c, 0, sizeof *c);
    c->cmd = CLI_HELP;
    opt_server_init(&c->srv);
    c->defaults = opt_job_new();
    if (argc < 2) {
        *errp = xstrdup("no command given");
        return -1;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0 || strcmp(cmd, "help") == 0)
        return 0;
    if (strcmp(cmd, "--version") == 0 || strcmp(cmd, "version") == 0) {
        c->cmd = CLI_VERSION;
        return 0;
    }
    if (strcmp(cmd, "options") == 0) {
        c->cmd = CLI_OPTIONS;
        return 0;
    }
    if (strcmp(cmd, "reference") == 0) {
        /* No flags: --help is the general usage, which describes it; anything else is an
         * error. */
        if (argc > 2 && strcmp(argv[2], "--help") != 0 && strcmp(argv[2], "-h") != 0) {
            *errp = msg("unknown option for reference: ", argv[2]);
            return -1;
        }
        c->cmd = argc > 2 ? CLI_HELP : CLI_REFERENCE;
        return 0;
    }
    if (strcmp(cmd, "replay") == 0) {
        c->cmd = CLI_REPLAY; /* replay_main parses the rest */
        return 0;
    }
    if (strcmp(cmd, "simulate") == 0) {
        c->cmd = CLI_SIMULATE; /* sim_main parses the rest */
        return 0;
    }
    if (strcmp(cmd, "flink") == 0) {
        c->cmd = CLI_FLINK; /* flink_main parses the rest */
        return 0;
    }
    if (strcmp(cmd, "test") == 0) {
        c->cmd = CLI_TEST; /* plugin_test_main parses the rest */
        return 0;
    }
    if (strcmp(cmd, "serve") != 0) {
        *errp = msg("unknown command: ", cmd);
        return -1;
    }
    c->cmd = CLI_SERVE;
    /* First the config file, so that the flags override it. */
    for (int i = 2; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            c->cmd = CLI_SERVE_HELP;
            return 0;
        }
        if (flag(argc, argv, &i, name, sizeof name, &value, errp) < 0)
            return -1;
        if (strcmp(name, "config") == 0) {
            if (opt_server_set(&c->srv, "config", value, errp) < 0 ||
                opt_server_load_file(&c->srv, c->defaults, value, errp) < 0)
                return -1;
        }
    }
    for (int i = 2; i < argc; i++) {
        if (flag(argc, argv, &i, name, sizeof name, &value, errp) < 0)
            return -1;
        if (strcmp(name, "config") == 0)
            continue;
        if (opt_server_set(&c->srv, name, value, errp) < 0)
            return -1;
    }
    return 0;
}

void cli_deinit(struct cli *c)
{
    opt_server_deinit(&c->srv);
    opt_job_free(c->defaults);
    c->defaults = NULL;
}
