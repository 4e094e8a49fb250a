/*
 * flink.c - `governor flink` (see flink.h).
 *
 * Each job goes through three steps, each retried on its own: poll (the sample), decide (the
 * same sample text until it is answered), apply (the same answer until it is applied or
 * refused). A step that fails for want of an answer keeps what the job holds, so the next
 * attempt picks up where this one stopped; a refusal (a 4xx of governor, a refused rescale)
 * is final for that sample. The loop runs rounds: every job one attempt, then the interval,
 * or the backoff after a round with a failure.
 */
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/decider.h"
#include "cli/flink.h"
#include "cli/flinkjob.h"
#include "cli/httpc.h"
#include "http/api.h"
#include "options/options.h"
#include "base/log.h"
#include "base/xmem.h"

#define EXIT_USAGE    2
#define EXIT_FLINK    3
#define EXIT_GOVERNOR 4
#define EXIT_APPLY    5

enum apply_mode { APPLY_NONE, APPLY_REST, APPLY_PRINT };

struct args {
    const char *rest, *job, *server, *token_file, *db, *policies, *config, *name;
    bool all, once;
    int64_t interval_ms, timeout_ms; /* timeout -1: from the options */
    int retries;
    enum apply_mode apply;
    json_t *set; /* --set KEY=VALUE: each sample's config, NULL: none */
};

/* One governed job and what it holds between attempts. */
struct job {
    struct flinkjob *fj;
    char *pending;  /* the sample text not answered yet (sent again as it is) */
    json_t *answer; /* an answer with execute true not applied yet */
};

/* A step's failure: the exit code it stands for, whether another attempt may help, and the
 * stderr line's `URL: cause`. */
struct failure {
    int code;
    bool retry;
    int retry_after; /* seconds, -1: none */
    char text[1200];
};

struct flink {
    struct args a;
    struct httpc *client;
    struct httpc_url url;
    struct flinkjob_rest rest;
    struct decider *dec;
    struct opt_server srv;
    struct opt_job *defaults;
    struct job *jobs;
    int n_jobs, cap_jobs;
};

static volatile sig_atomic_t stopping;

static void on_signal(int sig)
{
    (void)sig;
    stopping = 1;
}

static void usage(FILE *out)
{
    fputs(
        "usage: governor flink --rest URL (--job JOBID | --all) [--server URL [--token-file "
        "FILE]]\n"
        "                      [--db PATH] [--policies DIR] [--config FILE] [--set KEY=VALUE ...]\n"
        "                      [--name NAME] [--interval D] [--timeout D] [--retries N]\n"
        "                      [--apply none|rest|print] [--once]\n"
        "\n"
        "Reads a Flink job through its JobManager's REST API (--rest http://HOST:8081), has each\n"
        "sample decided and applies the answer, every --interval (default 30 s), until SIGTERM.\n"
        "\n"
        "  --job JOBID       one job (in any state); --all: every job GET /jobs lists RUNNING\n"
        "  --name NAME       the governor job of --job (default: the Flink job id)\n"
        "  --server URL      decide on that governor server; without it, in this process with\n"
        "                    the state and history in --db (./governor.db) and the plugins of\n"
        "                    --policies (./policies), as `governor serve` would\n"
        "  --token-file FILE the server's bearer token (the file's first)\n"
        "  --config FILE     the in-process server layer (`key = value`, as serve's)\n"
        "  --set KEY=VALUE   a job option in each sample's config (repeatable)\n"
        "  --interval D      between polls, in [1 s, 1 h] (30 s)\n"
        "  --timeout D       one REST call (job.autoscaler.flink.rest-client.timeout, 10 s)\n"
        "  --retries N       --once: attempts after the first of each step (2)\n"
        "  --apply MODE      rest: PUT the adaptive scheduler's resource requirements (Flink\n"
        "                    1.18+); print: the operator's pipeline.jobvertex-parallelism-\n"
        "                    overrides value on stdout; none (default): nothing\n"
        "  --once            one poll of each job; stdout: {job, flink_job, sample, warnings}\n"
        "                    then {job, flink_job, answer, applied} per job\n"
        "\n"
        "Exit: 0; 2 usage; 3 Flink, 4 governor, 5 the rescale failed (with --once).\n",
        out);
}

/* ------------------------------------------------------------------ flags -- */

static int usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int usage_error(const char *fmt, ...)
{
    va_list ap;
    fputs("governor flink: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputs(" (governor flink --help)\n", stderr);
    return -1;
}

static int duration_flag(const char *flag, const char *v, int64_t lo, int64_t hi, int64_t *out)
{
    char *err = NULL;
    if (opt_parse_duration(v, out, &err) < 0) {
        usage_error("--%s: %s", flag, err);
        free(err);
        return -1;
    }
    if (*out < lo || *out > hi) {
        char a[32], b[32];
        core_format_duration(a, sizeof a, lo);
        core_format_duration(b, sizeof b, hi);
        return usage_error("--%s: \"%s\" is out of range [%s, %s]", flag, v, a, b);
    }
    return 0;
}

/* The value of one job option as the layers give it (NULL: its default). */
struct lookup {
    const char *key;
    const char *value;
    enum opt_layer layer;
    char buf[128];
};

static void lookup_cb(void *ud, const char *key, const char *value, enum opt_layer layer)
{
    struct lookup *l = ud;
    if (strcmp(key, l->key) == 0) {
        snprintf(l->buf, sizeof l->buf, "%s", value ? value : "");
        l->value = l->buf;
        l->layer = layer;
    }
}

/* Parses argv into f->a (and the server layer into f->srv, f->defaults). -1 after a usage
 * line; 1 for --help. */
static int parse_args(int argc, char **argv, struct flink *f)
{
    struct args *a = &f->a;
    struct opt_job *request = opt_job_new();
    char *err = NULL;
    int rc = -1;
    const char *interval = NULL, *timeout = NULL, *retries = NULL, *apply = NULL;
    a->interval_ms = 30000;
    a->timeout_ms = -1;
    a->retries = 2;
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
            usage(stdout);
            rc = 1;
            goto out;
        }
        if (strcmp(arg, "--all") == 0 || strcmp(arg, "--once") == 0) {
            *(arg[2] == 'a' ? &a->all : &a->once) = true;
            continue;
        }
        if (strncmp(arg, "--", 2) != 0) {
            usage_error("unexpected argument \"%s\"", arg);
            goto out;
        }
        char name[32];
        const char *eq = strchr(arg, '='), *v;
        size_t n = eq ? (size_t)(eq - arg - 2) : strlen(arg + 2);
        if (n == 0 || n >= sizeof name) {
            usage_error("unknown flag %s", arg);
            goto out;
        }
        memcpy(name, arg + 2, n);
        name[n] = '\0';
        if (eq) {
            v = eq + 1;
        } else if (i + 1 < argc) {
            v = argv[++i];
        } else {
            usage_error("--%s needs a value", name);
            goto out;
        }
        static const char *const names[] = {"rest",     "job",      "server",  "token-file",
                                            "db",       "policies", "config",  "name",
                                            "interval", "timeout",  "retries", "apply"};
        const char **slot[] = {&a->rest,  &a->job,      &a->server, &a->token_file,
                               &a->db,    &a->policies, &a->config, &a->name,
                               &interval, &timeout,     &retries,   &apply};
        size_t k = 0;
        for (; k < sizeof names / sizeof names[0]; k++)
            if (strcmp(name, names[k]) == 0)
                break;
        if (k < sizeof names / sizeof names[0]) {
            *slot[k] = v;
            continue;
        }
        if (strcmp(name, "set") != 0) {
            usage_error("unknown flag --%s", name);
            goto out;
        }
        const char *kv = strchr(v, '=');
        if (!kv || kv == v) {
            usage_error("--set: expected KEY=VALUE, got \"%s\"", v);
            goto out;
        }
        char *key = xasprintf("%.*s", (int)(kv - v), v);
        if (opt_job_set(request, OPT_REQUEST, key, kv + 1, &err) < 0) {
            usage_error("--set: %s", err);
            free(key);
            goto out;
        }
        if (!a->set)
            a->set = json_object();
        json_object_set_new(a->set, key, json_string(kv + 1));
        free(key);
    }
    if (!a->rest) {
        usage_error("--rest URL is required (the JobManager's REST address, e.g. "
                    "http://localhost:8081)");
        goto out;
    }
    if (httpc_url_parse(a->rest, &f->url, &err) < 0) {
        usage_error("--rest: %s", err);
        goto out;
    }
    if (!a->job == !a->all) {
        usage_error("give one of --job JOBID and --all");
        goto out;
    }
    if (a->job && !api_job_id_ok(a->job)) {
        usage_error("--job: \"%s\" is not a job id (" API_JOB_GRAMMAR ")", a->job);
        goto out;
    }
    if (a->name && (a->all || !api_job_id_ok(a->name))) {
        usage_error(a->all ? "--name goes with --job (with --all each job is named by its id)"
                           : "--name: \"%s\" is not a governor job name (" API_JOB_GRAMMAR ")",
                    a->name);
        goto out;
    }
    if (a->server && (a->db || a->policies || a->config)) {
        usage_error("--%s is for deciding in this process; with --server, the server has its own",
                    a->db         ? "db"
                    : a->policies ? "policies"
                                  : "config");
        goto out;
    }
    if (a->token_file && !a->server) {
        usage_error("--token-file goes with --server");
        goto out;
    }
    if (apply) {
        if (strcmp(apply, "none") == 0)
            a->apply = APPLY_NONE;
        else if (strcmp(apply, "rest") == 0)
            a->apply = APPLY_REST;
        else if (strcmp(apply, "print") == 0)
            a->apply = APPLY_PRINT;
        else {
            usage_error("--apply: \"%s\" is not one of none, rest, print", apply);
            goto out;
        }
    }
    if (retries) {
        char *end = NULL;
        long r = strtol(retries, &end, 10);
        if (end == retries || *end || r < 0 || r > 100) {
            usage_error("--retries: \"%s\" is not an integer in [0, 100]", retries);
            goto out;
        }
        a->retries = (int)r;
    }
    if (interval && duration_flag("interval", interval, 1000, 3600000, &a->interval_ms) < 0)
        goto out;
    /* The server layer: --config, then --db and --policies over its keys. */
    opt_server_init(&f->srv);
    f->defaults = opt_job_new();
    if (a->config && opt_server_load_file(&f->srv, f->defaults, a->config, &err) < 0) {
        usage_error("--config: %s", err);
        goto out;
    }
    if ((a->db && opt_server_set(&f->srv, "db", a->db, &err) < 0) ||
        (a->policies && opt_server_set(&f->srv, "policies", a->policies, &err) < 0)) {
        usage_error("%s", err);
        goto out;
    }
    if (timeout) {
        if (duration_flag("timeout", timeout, 1, 3600000, &a->timeout_ms) < 0)
            goto out;
    } else {
        /* job.autoscaler.flink.rest-client.timeout of --set, else of --config, else 10 s */
        struct lookup l = {.key = "job.autoscaler.flink.rest-client.timeout"};
        opt_job_each(request, lookup_cb, &l);
        if (l.layer == OPT_BUILTIN)
            opt_job_each(f->defaults, lookup_cb, &l);
        if (opt_parse_duration(l.value ? l.value : "10 s", &a->timeout_ms, NULL) < 0 ||
            a->timeout_ms < 1 || a->timeout_ms > 3600000) {
            usage_error("job.autoscaler.flink.rest-client.timeout: \"%s\" is no timeout in "
                        "[1 ms, 1 h] (or give --timeout)",
                        l.value ? l.value : "");
            goto out;
        }
    }
    rc = 0;
out:
    free(err);
    opt_job_free(request);
    return rc;
}

/* ------------------------------------------------------------------ output -- */

/* One JSON line on stdout: the sample with every digit it was sent with (17), the answer as
 * the server prints its figures (15: the core rounds them to 3 decimals). */
static void print_line(json_t *o, int precision)
{
    char *s = json_dumps(o, JSON_COMPACT | JSON_REAL_PRECISION(precision));
    if (!s)
        xmem_oom();
    fputs(s, stdout);
    fputc('\n', stdout);
    fflush(stdout);
    free(s);
}

static int64_t wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Sleeps ms, waking early when a signal asks to stop. */
static void pause_ms(int64_t ms)
{
    while (ms > 0 && !stopping) {
        int64_t step = ms < 100 ? ms : 100;
        struct timespec ts = {(time_t)(step / 1000), (long)(step % 1000) * 1000000L};
        nanosleep(&ts, NULL);
        ms -= step;
    }
}

/* The overrides value: "vertex:P,..." in the answer's order (new). */
static char *overrides(json_t *parallelism)
{
    size_t cap = 1, len = 0;
    const char *k;
    json_t *v;
    json_object_foreach(parallelism, k, v) cap += strlen(k) + 24;
    char *s = xmalloc(cap);
    s[0] = '\0';
    json_object_foreach(parallelism, k, v) len += (size_t)snprintf(
        s + len, cap - len, "%s%s:%lld", len ? "," : "", k, (long long)json_integer_value(v));
    return s;
}

/* ------------------------------------------------------------------- steps -- */

/* A new zeroed job slot at the end of f->jobs. */
static struct job *job_push(struct flink *f)
{
    if (f->n_jobs == f->cap_jobs) {
        f->cap_jobs = f->cap_jobs ? 2 * f->cap_jobs : 8;
        f->jobs = xrealloc(f->jobs, (size_t)f->cap_jobs * sizeof *f->jobs);
    }
    struct job *j = &f->jobs[f->n_jobs++];
    memset(j, 0, sizeof *j);
    return j;
}

static struct job *job_add(struct flink *f, const char *id)
{
    struct job *j = job_push(f);
    j->fj = flinkjob_new(id, f->a.name ? f->a.name : id);
    return j;
}

static void job_clear(struct job *j)
{
    flinkjob_free(j->fj);
    free(j->pending);
    json_decref(j->answer);
}

/* A failure of Flink (or of the rescale): the warn line, and fl filled. */
static void flink_failed(struct flink *f, const struct job *j, const struct flinkjob_fail *ff,
                         int code, bool retry, struct failure *fl)
{
    char qr[600], qc[600], qj[300];
    log_msg(LOG_WARN, "flink", code == EXIT_APPLY ? "rescale failed" : "flink unreachable",
            "url=%s job=%s request=%s cause=%s", f->url.text,
            log_quote(qj, sizeof qj, j ? flinkjob_name(j->fj) : "-"),
            log_quote(qr, sizeof qr, ff->request), log_quote(qc, sizeof qc, ff->cause));
    fl->code = code;
    fl->retry = retry;
    fl->retry_after = -1;
    snprintf(fl->text, sizeof fl->text, "%s: %s: %s", f->url.text, ff->request, ff->cause);
}

/* The answer line of --once: {job, flink_job, answer | error, applied}. */
static void answer_line(const struct job *j, json_t *answer, json_t *error, const char *applied)
{
    json_t *o =
        json_pack("{s:s,s:s}", "job", flinkjob_name(j->fj), "flink_job", flinkjob_id(j->fj));
    if (answer)
        json_object_set(o, "answer", answer);
    if (error)
        json_object_set(o, "error", error);
    json_object_set_new(o, "applied", applied ? json_string(applied) : json_null());
    print_line(o, 15);
    json_decref(o);
}

/* A governor answer that is not 200: its envelope's code and message (new). */
static json_t *refusal_of(const struct decider_answer *da)
{
    json_t *body = json_loads(da->body ? da->body : "", 0, NULL);
    json_t *e = json_object_get(body, "error");
    const char *code = json_string_value(json_object_get(e, "code"));
    const char *msg = json_string_value(json_object_get(e, "message"));
    json_t *out = json_pack("{s:i,s:s,s:s}", "status", da->status, "code", code ? code : "UNKNOWN",
                            "message", msg ? msg : (da->body ? da->body : ""));
    json_t *field = json_object_get(e, "field");
    if (json_is_string(field) && *json_string_value(field))
        json_object_set(out, "field", field);
    json_decref(body);
    return out;
}

/* Poll: the job's sample into j->pending (and the sample line). */
static int step_poll(struct flink *f, struct job *j, struct failure *fl)
{
    json_t *sample = NULL, *warnings = NULL;
    struct flinkjob_fail ff;
    if (flinkjob_poll(j->fj, &f->rest, f->a.set, &sample, &warnings, &ff) < 0) {
        flink_failed(f, j, &ff, EXIT_FLINK, true, fl);
        return -1;
    }
    j->pending = json_dumps(sample, JSON_COMPACT | JSON_REAL_PRECISION(17));
    if (!j->pending)
        xmem_oom();
    if (f->a.once) {
        json_t *o = json_pack("{s:s,s:s,s:O,s:O}", "job", flinkjob_name(j->fj), "flink_job",
                              flinkjob_id(j->fj), "sample", sample, "warnings", warnings);
        print_line(o, 17);
        json_decref(o);
    }
    json_decref(sample);
    json_decref(warnings);
    return 0;
}

static const char *text_or(json_t *s)
{
    return json_is_string(s) ? json_string_value(s) : "-";
}

/* The logfmt line of a decision. */
static void decision_line(const struct job *j, json_t *ans, const char *applied)
{
    char *par = overrides(json_object_get(ans, "parallelism"));
    char qj[300], qp[1024];
    log_msg(LOG_INFO, "flink", "decision",
            "job=%s flink_job=%s decision_id=%lld action=%s reason=%s execute=%s "
            "parallelism=%s applied=%s",
            log_quote(qj, sizeof qj, flinkjob_name(j->fj)), flinkjob_id(j->fj),
            (long long)json_integer_value(json_object_get(ans, "decision_id")),
            text_or(json_object_get(ans, "action")), text_or(json_object_get(ans, "reason")),
            json_is_true(json_object_get(ans, "execute")) ? "true" : "false",
            log_quote(qp, sizeof qp, par), applied ? applied : "none");
    free(par);
}

/* Decide: j->pending answered into j->answer (or refused). */
static int step_decide(struct flink *f, struct job *j, struct failure *fl)
{
    struct decider_answer da = {0};
    int rc = -1;
    char qr[300], qc[600], qj[300];
    char request[400];
    snprintf(request, sizeof request, "POST /v1/jobs/%s/metrics", flinkjob_name(j->fj));
    if (decider_decide(f->dec, flinkjob_name(j->fj), j->pending, strlen(j->pending), wall_ms(),
                       &da) < 0 ||
        da.status >= 500) {
        char cause[600];
        if (da.status)
            snprintf(cause, sizeof cause, "HTTP %d: %.300s", da.status, da.body ? da.body : "");
        else
            snprintf(cause, sizeof cause, "%s", da.error);
        for (char *c = cause; *c; c++)
            if ((unsigned char)*c < 32)
                *c = ' ';
        log_msg(LOG_WARN, "flink", "governor unreachable",
                "url=%s job=%s request=%s cause=%s retry_after=%d", decider_where(f->dec),
                log_quote(qj, sizeof qj, flinkjob_name(j->fj)), log_quote(qr, sizeof qr, request),
                log_quote(qc, sizeof qc, cause), da.retry_after);
        fl->code = EXIT_GOVERNOR;
        fl->retry = true;
        fl->retry_after = da.retry_after;
        snprintf(fl->text, sizeof fl->text, "%s: %s: %s", decider_where(f->dec), request, cause);
        goto out;
    }
    free(j->pending);
    j->pending = NULL;
    json_t *ans = da.status == 200 ? json_loads(da.body ? da.body : "", 0, NULL) : NULL;
    if (!json_is_object(ans)) {
        json_t *err = da.status == 200
                          ? json_pack("{s:i,s:s,s:s}", "status", 200, "code", "UNKNOWN", "message",
                                      "the answer is not a JSON object")
                          : refusal_of(&da);
        const char *msg = json_string_value(json_object_get(err, "message"));
        log_msg(LOG_WARN, "flink", "governor refused the sample",
                "url=%s job=%s status=%d cause=%s", decider_where(f->dec),
                log_quote(qj, sizeof qj, flinkjob_name(j->fj)), da.status,
                log_quote(qc, sizeof qc, msg));
        if (f->a.once)
            answer_line(j, NULL, err, NULL);
        fl->code = EXIT_GOVERNOR;
        fl->retry = false;
        fl->retry_after = -1;
        snprintf(fl->text, sizeof fl->text, "%s: %s: HTTP %d: %s", decider_where(f->dec), request,
                 da.status, msg ? msg : "");
        json_decref(err);
        json_decref(ans);
        goto out;
    }
    j->answer = ans;
    rc = 0;
out:
    decider_answer_deinit(&da);
    return rc;
}

/* Apply: j->answer applied as --apply says, its lines written. */
static int step_apply(struct flink *f, struct job *j, struct failure *fl)
{
    json_t *ans = j->answer;
    json_t *par = json_object_get(ans, "parallelism");
    const char *applied = NULL;
    bool execute = json_is_true(json_object_get(ans, "execute"));
    if (execute && json_is_object(par) && f->a.apply == APPLY_REST) {
        struct flinkjob_fail ff;
        bool put;
        if (flinkjob_rescale(&f->rest, flinkjob_id(j->fj), par, &put, &ff) < 0) {
            /* Flink answered no (any status but 2xx): final; no answer: tried again */
            bool refused = ff.status > 0;
            flink_failed(f, j, &ff, refused ? EXIT_APPLY : EXIT_FLINK, !refused, fl);
            if (refused) {
                if (f->a.once) {
                    json_t *err = json_pack("{s:i,s:s,s:s}", "status", ff.status, "code",
                                            "RESCALE_REFUSED", "message", ff.cause);
                    answer_line(j, ans, err, NULL);
                    json_decref(err);
                }
                decision_line(j, ans, NULL);
                json_decref(j->answer);
                j->answer = NULL;
            }
            return -1;
        }
        applied = "rest";
    } else if (execute && json_is_object(par) && f->a.apply == APPLY_PRINT) {
        applied = "print";
    }
    if (f->a.once)
        answer_line(j, ans, NULL, applied);
    if (applied && strcmp(applied, "print") == 0) {
        char *line = overrides(par);
        puts(line);
        fflush(stdout);
        free(line);
    }
    decision_line(j, ans, applied);
    json_decref(j->answer);
    j->answer = NULL;
    return 0;
}

/* One attempt at the job's next steps. 0 when its sample was decided (and applied). */
static int job_attempt(struct flink *f, struct job *j, struct failure *fl)
{
    if (!j->pending && !j->answer && step_poll(f, j, fl) < 0)
        return -1;
    if (j->pending && step_decide(f, j, fl) < 0)
        return -1;
    if (j->answer && step_apply(f, j, fl) < 0)
        return -1;
    return 0;
}

/* bsearch: an id (key) against a job. */
static int cmp_id_job(const void *key, const void *elem)
{
    return strcmp(*(const char *const *)key, flinkjob_id(((const struct job *)elem)->fj));
}

static int cmp_id(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* --all: the jobs listed RUNNING this round (kept sorted by id, each kept with what it holds
 * between rounds), the others forgotten. -1 with fl. */
static int list_jobs(struct flink *f, struct failure *fl)
{
    json_t *ids = NULL;
    struct flinkjob_fail ff;
    if (flinkjob_running(&f->rest, &ids, &ff) < 0) {
        flink_failed(f, NULL, &ff, EXIT_FLINK, true, fl);
        return -1;
    }
    size_t n = json_array_size(ids);
    const char **want = xcalloc(n + 1, sizeof *want);
    for (size_t i = 0; i < n; i++)
        want[i] = json_string_value(json_array_get(ids, i));
    qsort(want, n, sizeof *want, cmp_id);
    struct job *old = f->jobs;
    int n_old = f->n_jobs;
    f->jobs = NULL;
    f->n_jobs = f->cap_jobs = 0;
    for (size_t i = 0; i < n; i++) {
        if (i > 0 && strcmp(want[i], want[i - 1]) == 0)
            continue;
        struct job *hit =
            n_old ? bsearch(&want[i], old, (size_t)n_old, sizeof *old, cmp_id_job) : NULL;
        if (hit) {
            *job_push(f) = *hit;
            hit->fj = NULL; /* moved */
        } else {
            job_add(f, want[i]);
        }
    }
    for (int k = 0; k < n_old; k++)
        if (old[k].fj)
            job_clear(&old[k]);
    free(old);
    free(want);
    json_decref(ids);
    return 0;
}

/* The wait before attempt k (0-based) after a failure: 1 s doubling, at most the interval, at
 * least a Retry-After. */
static int64_t backoff_ms(const struct flink *f, int k, int retry_after)
{
    int64_t ms = 1000;
    for (int i = 0; i < k && ms < f->a.interval_ms; i++)
        ms *= 2;
    if (ms > f->a.interval_ms)
        ms = f->a.interval_ms;
    if (retry_after > 0 && (int64_t)retry_after * 1000 > ms)
        ms = (int64_t)retry_after * 1000;
    return ms;
}

/* --once: each job's steps with up to --retries retries each. The exit code. */
static int run_once(struct flink *f)
{
    struct failure fl;
    int code = 0;
    for (int k = 0; f->a.all; k++) {
        if (list_jobs(f, &fl) == 0)
            break;
        if (k >= f->a.retries || stopping) {
            fprintf(stderr, "governor flink: %s\n", fl.text);
            return EXIT_FLINK;
        }
        pause_ms(backoff_ms(f, k, fl.retry_after));
    }
    for (int i = 0; i < f->n_jobs && !stopping; i++) {
        struct job *j = &f->jobs[i];
        for (int k = 0;; k++) {
            if (job_attempt(f, j, &fl) == 0)
                break;
            if (!fl.retry || k >= f->a.retries || stopping) {
                if (fl.retry && j->pending && fl.code == EXIT_GOVERNOR) {
                    /* never answered: the answer line says so */
                    json_t *err = json_pack("{s:i,s:s,s:s}", "status", 0, "code", "UNAVAILABLE",
                                            "message", fl.text);
                    answer_line(j, NULL, err, NULL);
                    json_decref(err);
                } else if (fl.retry && j->answer) {
                    json_t *err = json_pack("{s:i,s:s,s:s}", "status", 0, "code", "RESCALE_FAILED",
                                            "message", fl.text);
                    answer_line(j, j->answer, err, NULL);
                    json_decref(err);
                }
                fprintf(stderr, "governor flink: %s\n", fl.text);
                if (fl.code > code)
                    code = fl.code;
                break;
            }
            pause_ms(backoff_ms(f, k, fl.retry_after));
        }
    }
    return code;
}

/* The loop: rounds until a signal. */
static int run_loop(struct flink *f)
{
    struct failure fl;
    int failures = 0;
    log_msg(LOG_INFO, "flink", "started", "rest=%s decide=%s apply=%s interval_ms=%lld",
            f->url.text, decider_where(f->dec),
            f->a.apply == APPLY_REST    ? "rest"
            : f->a.apply == APPLY_PRINT ? "print"
                                        : "none",
            (long long)f->a.interval_ms);
    while (!stopping) {
        bool failed = false;
        int retry_after = -1;
        if (f->a.all && list_jobs(f, &fl) < 0)
            failed = true;
        for (int i = 0; !failed && i < f->n_jobs && !stopping; i++) {
            if (job_attempt(f, &f->jobs[i], &fl) < 0 && fl.retry) {
                failed = true;
                if (fl.retry_after > retry_after)
                    retry_after = fl.retry_after;
            }
        }
        if (failed)
            pause_ms(backoff_ms(f, failures++, retry_after));
        else {
            failures = 0;
            pause_ms(f->a.interval_ms);
        }
    }
    log_msg(LOG_INFO, "flink", "stopped", "%s", "");
    return 0;
}

int flink_main(int argc, char **argv)
{
    struct flink f;
    char *err = NULL;
    int rc = EXIT_USAGE;
    memset(&f, 0, sizeof f);
    int p = parse_args(argc, argv, &f);
    if (p != 0) {
        rc = p > 0 ? 0 : EXIT_USAGE;
        goto out;
    }
    signal(SIGPIPE, SIG_IGN);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    rc = 1;
    if (!(f.client = httpc_new(&err)))
        goto out;
    f.rest.client = f.client;
    f.rest.url = &f.url;
    f.rest.timeout_ms = f.a.timeout_ms;
    f.dec = f.a.server ? decider_remote(f.client, f.a.server, f.a.token_file, f.a.timeout_ms, &err)
                       : decider_local(&f.srv, f.defaults, &err);
    if (!f.dec) {
        rc = f.a.server ? EXIT_USAGE : 1;
        goto out;
    }
    if (f.a.job)
        job_add(&f, f.a.job);
    rc = f.a.once ? run_once(&f) : run_loop(&f);
out:
    if (err) {
        fprintf(stderr, "governor flink: %s\n", err);
        free(err);
    }
    for (int i = 0; i < f.n_jobs; i++)
        job_clear(&f.jobs[i]);
    free(f.jobs);
    decider_free(f.dec);
    httpc_free(f.client);
    httpc_url_deinit(&f.url);
    opt_server_deinit(&f.srv);
    opt_job_free(f.defaults);
    json_decref(f.a.set);
    return rc;
}
