/*
 * replay.c - `governor replay TRACE.jsonl [--config FILE] [--set KEY=VALUE ...]
 * [--policies DIR]` (see
 * replay.h). The same path as the server's decide handler minus HTTP and storage: parse the
 * sample, layer the options, call the core, render the decision.
 */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "core/core.h"
#include "cron.h"
#include "json.h"
#include "options.h"
#include "plugin.h"
#include "replay.h"
#include "replay_db.h"
#include "xmem.h"

struct replay_job {
    char *name;
    struct core_state *st;
};

struct replay {
    const struct opt_job *defaults;
    bool roundtrip;
    int n, cap;
    struct replay_job *jobs;
    struct json_sample js;
    struct core_decision d;
    struct core_hooks hooks;
    struct plugin_set *policies; /* NULL: native hooks only */
};

struct replay *replay_new(const struct opt_job *defaults, bool roundtrip)
{
    struct replay *r = xcalloc(1, sizeof *r);
    r->defaults = defaults;
    r->roundtrip = roundtrip;
    json_sample_init(&r->js);
    core_decision_init(&r->d);
    r->hooks.excluded = cron_excluded_hook;
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
    json_sample_deinit(&r->js);
    core_decision_deinit(&r->d);
    free(r);
}

static struct replay_job *job_get(struct replay *r, const char *name)
{
    for (int i = 0; i < r->n; i++)
        if (strcmp(r->jobs[i].name, name) == 0)
            return &r->jobs[i];
    if (r->n == r->cap) {
        r->cap = r->cap ? r->cap * 2 : 4;
        r->jobs = xrealloc(r->jobs, (size_t)r->cap * sizeof *r->jobs);
    }
    struct replay_job *j = &r->jobs[r->n++];
    j->name = xstrdup(name);
    j->st = core_state_new();
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

/* Stores and reloads the state in the form the server keeps it in (core.h, State codec: the
 * state without its window, then each window sample); the decision must not notice. */
static int roundtrip(struct replay_job *j, char *err, size_t err_len)
{
    unsigned char *meta, **smp;
    size_t len, *slen;
    int64_t seq0 = core_state_seq0(j->st), n = core_state_seq_end(j->st) - seq0;
    core_state_encode_meta(j->st, &meta, &len);
    smp = xcalloc((size_t)n + 1, sizeof *smp);
    slen = xcalloc((size_t)n + 1, sizeof *slen);
    for (int64_t k = 0; k < n; k++)
        core_state_encode_sample(j->st, seq0 + k, &smp[k], &slen[k]);
    int rc = core_state_decode(meta, len, j->st, NULL, err, err_len);
    for (int64_t k = 0; k < n; k++) {
        if (rc == 0)
            rc = core_state_decode_sample(j->st, seq0 + k, smp[k], slen[k], err, err_len);
        free(smp[k]);
    }
    free(smp);
    free(slen);
    free(meta);
    return rc;
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
    struct opt_job *opts = NULL;
    char *oerr = NULL;
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
    opts = opt_job_clone(r->defaults);
    struct json_err e;
    memset(&e, 0, sizeof e);
    if (json_parse_sample(body, 0, &r->js, opts, &e) < 0) {
        print_error(out, lineno, job, e.status, e.code, e.message, e.field);
        goto out;
    }
    struct core_config cfg;
    if (opt_job_resolve(opts, &cfg, &oerr) < 0) {
        print_error(out, lineno, job, 422, "INVALID_ARGUMENT", oerr, "config");
        goto out;
    }
    struct replay_job *j = job_get(r, job);
    if (r->js.s.at < core_state_last_at(j->st)) {
        print_error(out, lineno, job, 409, "FAILED_PRECONDITION",
                    "\"at\" is earlier than the job's last sample", "at");
        goto out;
    }
    char err[512];
    if (r->roundtrip && roundtrip(j, err, sizeof err) < 0) {
        print_error(out, lineno, job, 500, "INTERNAL", err, "");
        rc = -1;
        goto out;
    }
    struct plugin_call *pc = NULL;
    struct core_hooks hooks = r->hooks;
    if (r->policies) {
        pc = plugin_call_new(r->policies, job, opts, &cfg, j->st, &r->js.s);
        plugin_call_hooks(pc, &hooks);
    }
    int drc = core_decide(j->st, &r->js.s, &cfg, &hooks, &r->d, err, sizeof err);
    plugin_call_free(pc);
    if (drc < 0) {
        const char *colon = strchr(err, ':');
        char field[256] = "";
        if (colon && (size_t)(colon - err) < sizeof field)
            memcpy(field, err, (size_t)(colon - err));
        print_error(out, lineno, job, 400, "INVALID_ARGUMENT", err, field);
        goto out;
    }
    char hash[17];
    opt_job_hash(opts, hash);
    json_t *o = json_render_decision(
        &r->d, job, r->policies ? plugin_set_revision(r->policies) : "native", hash);
    char *s = json_dumps(o, JSON_COMPACT | JSON_REAL_PRECISION(15));
    fprintf(out, "%s\n", s);
    free(s);
    json_decref(o);
out:
    free(oerr);
    opt_job_free(opts);
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
        plugin_limits_offline(&lim, &srv);
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
