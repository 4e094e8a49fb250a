/*
 * replay.c - `governor replay TRACE.jsonl [--config FILE] [--set KEY=VALUE ...]
 * [--policies DIR]` (see
 * replay.h). The server's decision service (decision.h) minus HTTP and storage: each line is
 * one decision_run on its job's state, and its response or refusal is printed.
 */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "core/core.h"
#include "decision.h"
#include "json.h"
#include "options.h"
#include "plugin.h"
#include "replay.h"
#include "replay_db.h"

struct replay_job {
    char *name;
    struct core_state *st;
};

struct replay {
    const struct opt_job *defaults;
    bool roundtrip;
    int n, cap;
    struct replay_job *jobs;
    struct decision_buf buf;
    struct plugin_set *policies; /* NULL: native hooks only */
};

struct replay *replay_new(const struct opt_job *defaults, bool roundtrip)
{
    struct replay *r = calloc(1, sizeof *r);
    if (!r)
        abort();
    r->defaults = defaults;
    r->roundtrip = roundtrip;
    decision_buf_init(&r->buf);
    return r;
}

void replay_set_policies(struct replay *r, struct plugin_set *set)
{
    plugin_set_unref(r->policies);
    r->policies = set ? plugin_set_ref(set) : NULL;
}

void replay_free(struct replay *r)
{
    if (!r)
        return;
    plugin_set_unref(r->policies);
    for (int i = 0; i < r->n; i++) {
        free(r->jobs[i].name);
        core_state_free(r->jobs[i].st);
    }
    free(r->jobs);
    decision_buf_deinit(&r->buf);
    free(r);
}

static struct replay_job *job_get(struct replay *r, const char *name)
{
    for (int i = 0; i < r->n; i++)
        if (strcmp(r->jobs[i].name, name) == 0)
            return &r->jobs[i];
    if (r->n == r->cap) {
        r->cap = r->cap ? r->cap * 2 : 4;
        r->jobs = realloc(r->jobs, (size_t)r->cap * sizeof *r->jobs);
        if (!r->jobs)
            abort();
    }
    struct replay_job *j = &r->jobs[r->n++];
    j->name = strdup(name);
    j->st = core_state_new();
    if (!j->name)
        abort();
    return j;
}

/* Prints {"line": N, "job": ..., "error": {...}} for a rejected sample. */
static void print_error(FILE *out, int lineno, const char *job, int status, const char *code,
                        const char *msg, const char *field)
{
    json_t *o =
        json_pack("{s:i, s:s?, s:{s:i, s:s, s:s, s:s}}", "line", lineno, "job", job, "error",
                  "status", status, "code", code, "message", msg, "field", field ? field : "");
    char *s = json_dumps(o, JSON_COMPACT);
    fprintf(out, "%s\n", s);
    free(s);
    json_decref(o);
}

/* Dumps and reloads the state through JSON; the decision must not notice. */
static int roundtrip(struct replay_job *j, char *err, size_t err_len)
{
    json_t *doc = json_state_dump(j->st);
    char *text = json_dumps(doc, JSON_COMPACT | JSON_REAL_PRECISION(17));
    json_decref(doc);
    json_error_t je;
    json_t *back = json_loads(text, 0, &je);
    free(text);
    int rc = back ? json_state_load(back, j->st, err, err_len) : -1;
    json_decref(back);
    return rc;
}

/* One line's job, and whether its round trip failed (the line's result then). */
struct line {
    struct replay_job *j;
    bool broken;
};

/* The service's last check under --roundtrip: the state goes through JSON first. */
static int roundtrip_ready(void *ud, struct decision_err *e)
{
    struct line *l = ud;
    char err[512];
    if (roundtrip(l->j, err, sizeof err) == 0)
        return 0;
    l->broken = true;
    return decision_refuse(e, 500, "INTERNAL", NULL, "%s", err);
}

int replay_line(struct replay *r, const char *line, int lineno, FILE *out)
{
    json_error_t je;
    json_t *body = json_loads(line, JSON_REJECT_DUPLICATES, &je);
    if (!body || !json_is_object(body)) {
        print_error(out, lineno, NULL, 400, "INVALID_ARGUMENT",
                    body ? "a trace line must be a JSON object" : je.text, "");
        json_decref(body);
        return -1;
    }
    int rc = 0;
    const char *job = json_string_value(json_object_get(body, "job"));
    if (!job || !job[0]) {
        print_error(out, lineno, NULL, 400, "INVALID_ARGUMENT", "\"job\" must be a string", "job");
        goto out;
    }
    if (!json_object_get(body, "at")) {
        print_error(out, lineno, job, 400, "INVALID_ARGUMENT",
                    "a replayed sample needs \"at\" (replay reads no clock)", "at");
        goto out;
    }
    struct line l = {job_get(r, job), false};
    struct decision_req q = {.job = job,
                             .body = body,
                             .layers = r->defaults,
                             .state = l.j->st,
                             .set = r->policies,
                             .revision = "native",
                             .ready = r->roundtrip ? roundtrip_ready : NULL,
                             .ud = &l};
    struct decision_res res;
    if (decision_run(&r->buf, &q, &res) < 0) {
        print_error(out, lineno, job, res.err.status, res.err.code, res.err.message, res.err.field);
        rc = l.broken ? -1 : 0;
        goto out;
    }
    char *s = json_dumps(res.response, JSON_COMPACT | JSON_REAL_PRECISION(15));
    fprintf(out, "%s\n", s);
    free(s);
    json_decref(res.response);
out:
    json_decref(body);
    return rc;
}

static void usage(FILE *f)
{
    fprintf(f, "usage: governor replay TRACE.jsonl [--config FILE] [--set KEY=VALUE ...] "
               "[--roundtrip] [--policies DIR]\n"
               "  Feeds each line (a decide request body plus \"job\") through the core and\n"
               "  prints one decision per line as JSON. '-' reads standard input.\n"
               "  --policies DIR runs the Lua plugins of DIR (exclusion, evaluators,\n"
               "  executors, alignment modes) as the server would.\n"
               "  governor replay --db FILE --job ID ... replays a job's stored history\n"
               "  (governor replay --db FILE --help).\n");
}

int replay_main(int argc, char **argv)
{
    const char *trace = NULL, *policies = NULL;
    struct plugin_set *set = NULL;
    bool rt = false;
    int code = 0;
    char *err = NULL;
    struct opt_server srv;
    opt_server_init(&srv);
    struct opt_job *defaults = opt_job_new();
    struct replay *r = NULL;
    FILE *in = NULL;
    char *line = NULL;
    size_t cap = 0;

    /* Replay against a database's history: its own flags (replay_db.h). */
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--db") == 0) {
            code = replay_db_main(argc, argv);
            goto out;
        }

    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--config") == 0 && i + 1 < argc) {
            if (opt_server_load_file(&srv, defaults, argv[++i], &err) < 0)
                goto fail;
        } else if (strcmp(argv[i], "--set") == 0 && i + 1 < argc) {
            const char *kv = argv[++i];
            const char *eq = strchr(kv, '=');
            if (!eq) {
                fprintf(stderr, "governor replay: --set wants KEY=VALUE, got \"%s\"\n", kv);
                code = 2;
                goto out;
            }
            char key[256];
            snprintf(key, sizeof key, "%.*s", (int)(eq - kv), kv);
            if (opt_job_set(defaults, OPT_SERVER, key, eq + 1, &err) < 0)
                goto fail;
        } else if (strcmp(argv[i], "--policies") == 0 && i + 1 < argc) {
            policies = argv[++i];
        } else if (strcmp(argv[i], "--roundtrip") == 0) {
            rt = true;
        } else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            usage(stdout);
            goto out;
        } else if (!trace && (argv[i][0] != '-' || strcmp(argv[i], "-") == 0)) {
            trace = argv[i];
        } else {
            usage(stderr);
            code = 2;
            goto out;
        }
    }
    if (!trace) {
        usage(stderr);
        code = 2;
        goto out;
    }
    in = strcmp(trace, "-") == 0 ? stdin : fopen(trace, "r");
    if (!in) {
        fprintf(stderr, "governor replay: cannot open %s\n", trace);
        code = 1;
        goto out;
    }
    r = replay_new(defaults, rt);
    if (policies) {
        struct plugin_limits lim;
        plugin_limits_from(&lim, &srv);
        if (plugin_set_load(policies, &lim, &set, &err) < 0)
            goto fail;
        replay_set_policies(r, set);
    }
    int lineno = 0;
    ssize_t n;
    while ((n = getline(&line, &cap, in)) >= 0) {
        lineno++;
        if (n == 0 || strspn(line, " \t\r\n") == (size_t)n)
            continue;
        if (replay_line(r, line, lineno, stdout) < 0)
            code = 1;
    }
    goto out;
fail:
    fprintf(stderr, "governor replay: %s\n", err);
    code = 2;
out:
    free(err);
    free(line);
    if (in && in != stdin)
        fclose(in);
    replay_free(r);
    plugin_set_unref(set);
    opt_job_free(defaults);
    opt_server_deinit(&srv);
    return code;
}
