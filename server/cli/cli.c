/*
 * cli.c - the command line (see cli.h).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sys/stat.h>

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
          "             evaluated figures (markdown, as in docs/api.md)\n"
          "  --help     this text\n"
          "  --version  the version\n"
          "\n"
          "Every server option of `governor options` is a flag of serve, as --name VALUE or\n"
          "--name=VALUE; flags win over the --config file (key = value lines).\n",
          out);
}

void cli_options_usage(FILE *out)
{
    fputs("usage: governor options\n"
          "\n"
          "Prints the options table, the one home of every option and its default: the job\n"
          "options (set in the server's --config file, a job's PUT /v1/jobs/{job}/config or a\n"
          "sample's \"config\"), the Flink cluster keys the algorithm reads, and the server\n"
          "options (the flags of governor serve). Each with its type, default, allowed values\n"
          "and meaning; docs/options.md has the same tables in markdown.\n",
          out);
}

void cli_reference_usage(FILE *out)
{
    fputs("usage: governor reference\n"
          "\n"
          "Prints, as markdown, what an answer of POST /v1/jobs/{job}/metrics can carry: the\n"
          "reason codes (what each means, what to do), the constraint codes, the fields of a\n"
          "vertex and its evaluated figures (unit, range, meaning), from the tables the server\n"
          "itself uses. docs/api.md holds the same text.\n",
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

/* serve's flags: the config file first, then the flags over it. *policies_given when a
 * --policies flag was seen. */
static int parse_serve(int argc, char **argv, struct cli *c, bool *policies_given, char **errp)
{
    char name[128];
    const char *value;
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
        if (strcmp(name, "policies") == 0)
            *policies_given = true;
        if (opt_server_set(&c->srv, name, value, errp) < 0)
            return -1;
    }
    return 0;
}

int cli_parse(int argc, char **argv, struct cli *c, char **errp)
{
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
    if (strcmp(cmd, "options") == 0 || strcmp(cmd, "reference") == 0) {
        /* No flags but --help (the command's own usage); anything else is an error. */
        bool opts = strcmp(cmd, "options") == 0;
        c->cmd = opts ? CLI_OPTIONS : CLI_REFERENCE;
        if (argc > 2 && strcmp(argv[2], "--help") != 0 && strcmp(argv[2], "-h") != 0) {
            *errp = xasprintf("unknown option for %s: %s", cmd, argv[2]);
            return -1;
        }
        if (argc > 2)
            c->cmd = opts ? CLI_OPTIONS_HELP : CLI_REFERENCE_HELP;
        else
            c->cmd = opts ? CLI_OPTIONS : CLI_REFERENCE;
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
    /* Whether the policies directory was named (a flag or the config file): the default
     * ./policies may be absent (native decisions only), a named one must exist. */
    char *default_policies = c->srv.policies;
    bool given = false;
    c->srv.policies = NULL;
    int rc = parse_serve(argc, argv, c, &given, errp);
    if (c->srv.policies) {
        given = true;
    } else {
        c->srv.policies = default_policies;
        default_policies = NULL;
    }
    free(default_policies);
    if (rc < 0 || c->cmd != CLI_SERVE)
        return rc;
    struct stat st;
    const char *why = NULL;
    if (given && stat(c->srv.policies, &st) < 0)
        why = strerror(errno);
    else if (given && !S_ISDIR(st.st_mode))
        why = "not a directory";
    if (why) {
        *errp = xasprintf("--policies %s: %s (a policies directory that is named must exist; "
                          "without --policies the server serves native decisions when "
                          "./policies is absent)",
                          c->srv.policies, why);
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
