/*
 * replay.c - `governor replay TRACE.jsonl [--config FILE] [--set KEY=VALUE ...]
 * [--policies DIR]` (see
 * replay.h). The server's decision service (decision.h) minus HTTP and storage: each line is
 * one decision_run on its job's state, and its response or refusal is printed.
 */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "time/timeutil.h"
#include "core/core.h"
#include "decision/decision.h"
#include "decision/jsn.h"
#include "options/options.h"
#include "plugin/plugin.h"
#include "cli/replay.h"
#include "decision/replay_db.h"
#include "base/xmem.h"

struct replay_job {
    char *name;
    struct core_state *st;
    struct decision_seen seen; /* its decided lines: a repeated `at` is answered as a repeat */
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
    struct replay *r = xcalloc(1, sizeof *r);
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
        decision_seen_deinit(&r->jobs[i].seen);
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
        r->jobs = xrealloc(r->jobs, (size_t)r->cap * sizeof *r->jobs);
    }
    struct replay_job *j = &r->jobs[r->n++];
    j->name = xstrdup(name);
    j->st = core_state_new();
    decision_seen_init(&j->seen, 0);
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
    struct replay_job *j = job_get(r, job);
    char err[512];
    if (r->roundtrip && roundtrip(j, err, sizeof err) < 0) {
        /* --roundtrip: the state goes through its stored form before each line. */
        print_error(out, lineno, job, 500, "INTERNAL", err, "");
        rc = -1;
        goto out;
    }
    struct decision_req q = {.job = job,
                             .body = body,
                             .layers = r->defaults,
                             .state = j->st,
                             .set = r->policies,
                             .revision = "native",
                             .seen = &j->seen,
                             .seen_what = "line"};
    struct decision_res res;
    int dr = decision_run(&r->buf, &q, &res);
    if (dr > 0) {
        /* The server's answer to a retry: the decision of then, marked as a repeat. */
        fprintf(out, "{\"repeat\":true,%s\n", res.repeat + 1);
        goto out;
    }
    if (dr < 0) {
        print_error(out, lineno, job, res.err.status, res.err.code, res.err.message, res.err.field);
        goto out;
    }
    char *s = json_dumps(res.response, JSON_COMPACT | JSON_REAL_PRECISION(15));
    fprintf(out, "%s\n", s);
    decision_seen_add(&j->seen, json_integer_value(json_object_get(res.response, "at")), body, s,
                      lineno);
    free(s);
    json_decref(res.response);
out:
    json_decref(body);
    return rc;
}

static void usage(FILE *f, bool db)
{
    if (db)
        fprintf(
            f, "usage: governor replay --db FILE --job ID [--from T] [--to T] [--policies DIR]\n"
               "                       [--config FILE] [--set KEY=VALUE ...]\n"
               "  Re-runs the stored samples of job ID through the core with the recorded options\n"
               "  of each decision overlaid with the candidate (--config, --set), and prints each\n"
               "  decision whose outcome changes as a JSON line, then {\"summary\": {...}}. T is\n"
               "  epoch ms or RFC 3339. The database is opened read-only.\n");
    else
        fprintf(f, "usage: governor replay TRACE.jsonl [--config FILE] [--set KEY=VALUE ...] "
                   "[--roundtrip] [--policies DIR]\n"
                   "  Feeds each line (a decide request body plus \"job\") through the core and\n"
                   "  prints one decision per line as JSON. '-' reads standard input.\n"
                   "  --policies DIR runs the Lua plugins of DIR (exclusion, evaluators,\n"
                   "  executors, alignment modes) as the server would.\n"
                   "  governor replay --db FILE --job ID ... replays a job's stored history\n"
                   "  (governor replay --db FILE --help).\n");
}

/* Sets a --set KEY=VALUE at the server layer. -1 + *errp. */
static int set_arg(struct opt_job *layers, const char *kv, char **errp)
{
    const char *eq = strchr(kv, '=');
    char key[256];
    if (!eq) {
        *errp = xasprintf("--set wants KEY=VALUE, got \"%s\"", kv);
        return -1;
    }
    snprintf(key, sizeof key, "%.*s", (int)(eq - kv), kv);
    return opt_job_set(layers, OPT_SERVER, key, eq + 1, errp);
}

/* The trace's lines, one decision each; the exit code. */
static int run_trace(FILE *in, const struct opt_job *layers, bool rt, struct plugin_set *set)
{
    struct replay *r = replay_new(layers, rt);
    char *line = NULL;
    size_t cap = 0;
    int lineno = 0, code = 0;
    ssize_t n;
    replay_set_policies(r, set);
    while ((n = getline(&line, &cap, in)) >= 0) {
        lineno++;
        if (n == 0 || strspn(line, " \t\r\n") == (size_t)n)
            continue;
        if (replay_line(r, line, lineno, stdout) < 0)
            code = 1;
    }
    free(line);
    replay_free(r);
    return code;
}

static void print_change(void *ud, json_t *change)
{
    char *s = json_dumps(change, JSON_COMPACT | JSON_REAL_PRECISION(15));
    fprintf(ud, "%s\n", s);
    free(s);
}

/* The job's history replayed with the candidate: each change, then the summary; the exit
 * code. */
static int run_db(struct replay_db_opts *o, const struct opt_job *layers, struct plugin_set *set)
{
    json_t *summary = NULL;
    char *err = NULL;
    o->candidate = layers;
    o->policies = set;
    if (replay_db_run(o, print_change, stdout, &summary, &err) < 0) {
        fprintf(stderr, "governor replay: %s\n", err);
        free(err);
        return 1;
    }
    json_t *s = json_pack("{s:O}", "summary", summary);
    print_change(stdout, s);
    json_decref(s);
    json_decref(summary);
    return 0;
}

/*
 * Both forms take --config, --set and --policies (the candidate's layers and plugins, loaded
 * with the limits the options set, as the server loads them); a trace its file and
 * --roundtrip; a database --db, --job, --from and --to.
 */
int replay_main(int argc, char **argv)
{
    struct replay_db_opts o = {.from = INT64_MIN, .to = INT64_MAX};
    const char *trace = NULL, *policies = NULL;
    struct plugin_set *set = NULL;
    bool db = false, rt = false;
    int code = 0;
    char *err = NULL;
    struct opt_server srv;
    opt_server_init(&srv);
    struct opt_job *layers = opt_job_new();
    FILE *in = NULL;

    for (int i = 1; i < argc; i++)
        db |= strcmp(argv[i], "--db") == 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            usage(stdout, db);
            goto out;
        }
        if (!db && strcmp(a, "--roundtrip") == 0) {
            rt = true;
            continue;
        }
        if (!db && !trace && (a[0] != '-' || strcmp(a, "-") == 0)) {
            trace = a;
            continue;
        }
        if (!v || strncmp(a, "--", 2) != 0)
            goto usage;
        i++;
        if (strcmp(a, "--config") == 0) {
            if (opt_server_load_file(&srv, layers, v, &err) < 0)
                goto fail;
        } else if (strcmp(a, "--set") == 0) {
            if (set_arg(layers, v, &err) < 0)
                goto fail;
        } else if (strcmp(a, "--policies") == 0) {
            policies = v;
        } else if (db && strcmp(a, "--db") == 0) {
            o.db = v;
        } else if (db && strcmp(a, "--job") == 0) {
            o.job = v;
        } else if (db && (strcmp(a, "--from") == 0 || strcmp(a, "--to") == 0)) {
            if (time_parse_instant(v, a[2] == 'f' ? &o.from : &o.to) < 0) {
                err = xasprintf("%s: \"%s\" is neither epoch ms nor RFC 3339", a, v);
                goto fail;
            }
        } else {
            goto usage;
        }
    }
    if (db ? !o.db || !o.job : !trace)
        goto usage;
    if (!db && !(in = strcmp(trace, "-") == 0 ? stdin : fopen(trace, "r"))) {
        fprintf(stderr, "governor replay: cannot open %s\n", trace);
        code = 1;
        goto out;
    }
    if (policies) {
        struct plugin_limits lim;
        plugin_limits_offline(&lim, &srv);
        if (plugin_set_load(policies, &lim, &set, &err) < 0)
            goto fail;
    }
    code = db ? run_db(&o, layers, set) : run_trace(in, layers, rt, set);
    goto out;
usage:
    usage(stderr, db);
    code = 2;
    goto out;
fail:
    fprintf(stderr, "governor replay: %s\n", err);
    code = 2;
out:
    free(err);
    if (in && in != stdin)
        fclose(in);
    plugin_set_unref(set);
    opt_job_free(layers);
    opt_server_deinit(&srv);
    return code;
}
