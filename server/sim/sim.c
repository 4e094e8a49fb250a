/*
 * sim.c - `governor simulate` (see sim.h): arguments, the policies compared, the outputs.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "options/options.h"
#include "plugin/plugin.h"
#include "sim/sim.h"
#include "sim/sim_batch.h"
#include "sim/sim_family.h"
#include "sim/sim_model.h"
#include "sim/sim_out.h"
#include "sim/sim_report.h"
#include "sim/sim_run.h"
#include "sim/sim_scenario.h"
#include "sim/sim_svg.h"
#include "base/xmem.h"

/* The policies compared, in the order of the table. */
static const char *const policy_names[] = {"governor", "flink", "hpa", "fixed"};
#define N_POLICIES 4

static void usage(FILE *f)
{
    fprintf(f, "usage: governor simulate SCENARIO.json [SCENARIO.json ...] [--policies DIR]\n"
               "         [--set KEY=VALUE ...] [--only NAME[,NAME...]] [--out DIR] [--seed N]\n"
               "         [--horizon DURATION] [--trace DIR] [--markdown]\n"
               "       governor simulate --family NAME[,NAME...] --seeds A..B [--emit DIR]\n"
               "         [the same flags]\n"
               "  Runs each scenario's simulated job in a closed loop with the decision pipeline\n"
               "  (in process) under each policy, prints the figures table, and writes\n"
               "  OUT/<scenario>.json and OUT/<scenario>.svg (--out, default ./simulate-out;\n"
               "  never over a scenario of the run). Policies: governor (the options as set),\n"
               "  flink (the same with governor.profile = flink), hpa (Kubernetes HPA's rule per\n"
               "  vertex: ceil(p x busy / target), 10%% tolerance, 5 min downscale\n"
               "  stabilization), fixed (sized for the peak with hindsight).\n"
               "  --family LIST    instead of files, each family's scenario for every seed of\n"
               "                   --seeds (inclusive); one row per seed and policy, then the\n"
               "                   means; OUT/<family>.json holds every run (no charts)\n"
               "  --seeds A..B     the seeds of --family (A..B, or one number)\n"
               "  --emit DIR       write each family scenario as DIR/<family>-<seed>.json, a\n"
               "                   scenario file that runs alone with the same figures\n"
               "  --policies DIR   plugins, as the server loads them (default ./policies)\n"
               "  --set KEY=VALUE  a job option for every policy, over the scenario's config\n"
               "  --only LIST      run these policies only (comma-separated)\n"
               "  --seed N         override the scenario's seed\n"
               "  --horizon D      simulate at most D (\"2 h\", or seconds) of each scenario\n"
               "  --trace DIR      write DIR/<scenario>.<policy>.jsonl: each sample with \"job\"\n"
               "                   and its decision (replayable with governor replay)\n"
               "  --markdown       print the table as markdown\n"
               "  Families:\n");
    for (int i = 0; i < sim_family_count(); i++)
        fprintf(f, "    %-12s %s\n", sim_family_name(i), sim_family_about(i));
}

struct args {
    const char **scenarios;
    int n_scenarios;
    const char **sets;
    int n_sets;
    const char *policies, *out, *trace, *only, *family, *emit;
    bool policies_given, markdown, seed_given, seeds_given;
    uint64_t seed, seed_lo, seed_hi;
    int64_t horizon;
};

/* A seed: a non-negative decimal integer. */
static int parse_seed(const char *t, uint64_t *out)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(t, &end, 10);
    if (errno || end == t || *end || t[0] == '-' || t[0] == '+' || t[0] == ' ')
        return -1;
    *out = v;
    return 0;
}

/* --family: every name must be a family. */
static int check_families(const char *list, char **errp)
{
    for (const char *p = list; *p;) {
        const char *c = strchr(p, ',');
        size_t len = c ? (size_t)(c - p) : strlen(p);
        char name[64];
        snprintf(name, sizeof name, "%.*s", (int)(len < 63 ? len : 63), p);
        if (sim_family_find(name) < 0) {
            *errp = xasprintf("--family: \"%.*s\" is not a family (governor simulate --help "
                              "lists them)",
                              (int)len, p);
            return -1;
        }
        if (!c)
            break;
        p = c + 1;
    }
    return 0;
}

static bool wanted(const struct args *a, const char *name)
{
    if (!a->only)
        return true;
    size_t n = strlen(name);
    for (const char *p = a->only; *p;) {
        const char *c = strchr(p, ',');
        size_t len = c ? (size_t)(c - p) : strlen(p);
        if (len == n && strncmp(p, name, n) == 0)
            return true;
        if (!c)
            break;
        p = c + 1;
    }
    return false;
}

static int parse_args(int argc, char **argv, struct args *a, char **errp)
{
    memset(a, 0, sizeof *a);
    a->policies = "./policies";
    a->out = SIM_OUT_DEFAULT;
    a->scenarios = xcalloc((size_t)argc, sizeof *a->scenarios);
    a->sets = xcalloc((size_t)argc, sizeof *a->sets);
    for (int i = 1; i < argc; i++) {
        const char *s = argv[i];
        bool has = i + 1 < argc;
        if (strcmp(s, "--policies") == 0 && has) {
            a->policies = argv[++i];
            a->policies_given = true;
        } else if (strcmp(s, "--set") == 0 && has) {
            if (!strchr(argv[i + 1], '=')) {
                *errp = xasprintf("--set wants KEY=VALUE, got \"%s\"", argv[i + 1]);
                return -1;
            }
            a->sets[a->n_sets++] = argv[++i];
        } else if (strcmp(s, "--only") == 0 && has) {
            a->only = argv[++i];
            for (const char *p = a->only; *p;) {
                const char *c = strchr(p, ',');
                size_t len = c ? (size_t)(c - p) : strlen(p);
                bool known = false;
                for (int k = 0; k < N_POLICIES; k++)
                    if (strlen(policy_names[k]) == len && strncmp(p, policy_names[k], len) == 0)
                        known = true;
                if (!known) {
                    *errp = xasprintf("--only: \"%.*s\" is not one of governor, flink, hpa, "
                                      "fixed",
                                      (int)len, p);
                    return -1;
                }
                if (!c)
                    break;
                p = c + 1;
            }
        } else if (strcmp(s, "--out") == 0 && has) {
            a->out = argv[++i];
        } else if (strcmp(s, "--trace") == 0 && has) {
            a->trace = argv[++i];
        } else if (strcmp(s, "--seed") == 0 && has) {
            char *end;
            errno = 0;
            unsigned long long v = strtoull(argv[++i], &end, 10);
            if (errno || *end || argv[i][0] == '-' || !argv[i][0]) {
                *errp = xasprintf("--seed wants a non-negative integer, got \"%s\"", argv[i]);
                return -1;
            }
            a->seed = v;
            a->seed_given = true;
        } else if (strcmp(s, "--horizon") == 0 && has) {
            const char *h = argv[++i];
            char *end;
            double secs = strtod(h, &end);
            int64_t ms = 0;
            char *e = NULL;
            if (*end == '\0' && end != h) {
                ms = (int64_t)(secs * 1000.0);
            } else if (opt_parse_duration(h, &ms, &e) < 0) {
                *errp = xasprintf("--horizon: %s", e);
                free(e);
                return -1;
            }
            if (ms < 1000) {
                *errp = xasprintf("--horizon must be at least 1 s, got \"%s\"", h);
                return -1;
            }
            a->horizon = ms / 1000;
        } else if (strcmp(s, "--family") == 0 && has) {
            a->family = argv[++i];
            if (check_families(a->family, errp) < 0)
                return -1;
        } else if (strcmp(s, "--seeds") == 0 && has) {
            const char *t = argv[++i], *dots = strstr(t, "..");
            char lo[32];
            snprintf(lo, sizeof lo, "%.*s", dots ? (int)(dots - t) : (int)strlen(t), t);
            if ((dots && (dots - t) >= (long)sizeof lo) || parse_seed(lo, &a->seed_lo) < 0 ||
                parse_seed(dots ? dots + 2 : t, &a->seed_hi) < 0 || a->seed_hi < a->seed_lo ||
                a->seed_hi - a->seed_lo >= 100000) {
                *errp = xasprintf("--seeds wants A..B (0 <= A <= B, at most 100000 seeds) or "
                                  "one seed, got \"%s\"",
                                  t);
                return -1;
            }
            a->seeds_given = true;
        } else if (strcmp(s, "--emit") == 0 && has) {
            a->emit = argv[++i];
        } else if (strcmp(s, "--markdown") == 0) {
            a->markdown = true;
        } else if (s[0] != '-' || strcmp(s, "-") == 0) {
            a->scenarios[a->n_scenarios++] = s;
        } else {
            *errp = xasprintf("unknown or incomplete flag \"%s\"", s);
            return -1;
        }
    }
    if (a->family && a->n_scenarios > 0) {
        *errp = xstrdup("give scenario files or --family, not both");
        return -1;
    }
    if (a->family && !a->seeds_given) {
        *errp = xstrdup("--family needs --seeds A..B");
        return -1;
    }
    if (!a->family && (a->seeds_given || a->emit)) {
        *errp = xasprintf("%s is for --family", a->emit ? "--emit" : "--seeds");
        return -1;
    }
    if (a->family && a->seed_given) {
        *errp = xstrdup("--seed is for scenario files; a family's seeds are --seeds");
        return -1;
    }
    if (a->n_scenarios == 0 && !a->family) {
        *errp = xstrdup("no scenario given");
        return -1;
    }
    return 0;
}

/* A JSON option value as the options table takes it: strings as they are. */
static char *value_text(json_t *v)
{
    if (json_is_string(v))
        return xstrdup(json_string_value(v));
    if (json_is_integer(v))
        return xasprintf("%lld", (long long)json_integer_value(v));
    if (json_is_real(v))
        return xasprintf("%.17g", json_real_value(v));
    return xstrdup(json_is_true(v) ? "true" : "false");
}

/*
 * The options every policy starts from: the scenario's config (server layer), then --set
 * (job layer). -1 with *errp naming the key.
 */
static struct opt_job *base_layers(const struct sim_scenario *sc, const struct args *a, char **errp)
{
    struct opt_job *j = opt_job_new();
    const char *key;
    json_t *val;
    json_object_foreach(sc->config, key, val)
    {
        char *text = value_text(val), *e = NULL;
        int rc = opt_job_set(j, OPT_SERVER, key, text, &e);
        free(text);
        if (rc < 0) {
            *errp = xasprintf("%s: config: %s", sc->name, e);
            free(e);
            opt_job_free(j);
            return NULL;
        }
    }
    for (int i = 0; i < a->n_sets; i++) {
        const char *kv = a->sets[i], *eq = strchr(kv, '=');
        char *k = xasprintf("%.*s", (int)(eq - kv), kv), *e = NULL;
        int rc = opt_job_set(j, OPT_JOB, k, eq + 1, &e);
        free(k);
        if (rc < 0) {
            *errp = xasprintf("--set: %s", e);
            free(e);
            opt_job_free(j);
            return NULL;
        }
    }
    return j;
}

/* The options of one policy: the base plus what makes the baseline itself (request layer,
 * so that neither the scenario nor --set can turn it into another policy). NULL with *errp
 * if the options table refuses one of them. */
static struct opt_job *policy_layers(const struct opt_job *base, const char *policy, char **errp)
{
    struct opt_job *j = opt_job_clone(base);
    static const char *const flink[][2] = {{"governor.profile", "flink"}};
    const char *const(*kv)[2] = NULL;
    size_t n = 0;
    if (strcmp(policy, "flink") == 0) {
        kv = flink;
        n = sizeof flink / sizeof flink[0];
    }
    for (size_t i = 0; i < n; i++) {
        char *e = NULL;
        if (opt_job_set(j, OPT_REQUEST, kv[i][0], kv[i][1], &e) < 0) {
            *errp = xasprintf("policy %s: %s", policy, e);
            free(e);
            opt_job_free(j);
            return NULL;
        }
    }
    return j;
}

/* The utilization the fixed deployment is sized at: the effective utilization target (the
 * options table's default when the layers do not resolve). */
static double util_target(const struct opt_job *base)
{
    struct opt_job *j = opt_job_clone(base);
    struct core_config cfg;
    char *e = NULL;
    opt_config_defaults(&cfg);
    double u = cfg.util_target;
    if (opt_job_resolve(j, &cfg, &e) == 0 && cfg.util_target > 0)
        u = cfg.util_target;
    free(e);
    opt_job_free(j);
    return u;
}

/* mkdir -p: creates dir and its missing parents. -1 with errno. */
static int mkdir_p(const char *dir)
{
    char *p = xstrdup(dir);
    int rc = 0;
    for (char *c = p + 1; *c && rc == 0; c++)
        if (*c == '/') {
            *c = '\0';
            if (mkdir(p, 0777) < 0 && errno != EEXIST)
                rc = -1;
            *c = '/';
        }
    if (rc == 0 && mkdir(p, 0777) < 0 && errno != EEXIST)
        rc = -1;
    free(p);
    return rc;
}

/* The scenario files of this run, which no output may replace (sim_main sets them). */
static const char *const *out_inputs;
static int n_out_inputs;

static FILE *open_out(const char *dir, const char *name, const char *ext, char **errp)
{
    return sim_out_open(dir, name, ext, out_inputs, n_out_inputs, errp);
}

/* Runs one scenario under every wanted policy into runs[0..*n) (each new, the caller frees
 * them). -1 with *errp when a run fails; the runs made so far are in runs[]. */
static int run_policies(const struct sim_scenario *sc, const struct args *a, struct plugin_set *set,
                        struct sim_result **runs, int *n, char **errp)
{
    int rc = -1;
    struct opt_job *layers[N_POLICIES] = {0};
    *n = 0;
    int *fixed = xcalloc((size_t)sc->n, sizeof *fixed);
    struct opt_job *base = base_layers(sc, a, errp);
    if (!base)
        goto out;
    double util = util_target(base);
    sim_model_fixed_size(sc, util, fixed);
    for (int k = 0; k < N_POLICIES; k++) {
        const char *name = policy_names[k];
        if (!wanted(a, name))
            continue;
        struct sim_policy pol = {.name = name, .set = set};
        if (strcmp(name, "fixed") == 0) {
            pol.fixed = true;
            pol.fixed_p = fixed;
        } else if (strcmp(name, "hpa") == 0) {
            /* Kubernetes HPA's defaults: 10% tolerance, a 5 min downscale stabilization
             * window, a 5 min CPU initialization period; the job's utilization target. */
            pol.hpa = true;
            pol.hpa_rule = (struct sim_hpa){
                .target = util, .tolerance = 0.1, .stabilization = 300, .init_period = 300};
        } else {
            if (!(layers[k] = policy_layers(base, name, errp)))
                goto out;
            pol.layers = layers[k];
        }
        FILE *trace = NULL;
        if (a->trace) {
            char *tn = xasprintf("%s.%s", sc->name, name);
            trace = open_out(a->trace, tn, ".jsonl", errp);
            free(tn);
            if (!trace)
                goto out;
        }
        int r = sim_run(sc, &pol, a->horizon, trace, &runs[*n], errp);
        if (trace)
            fclose(trace);
        if (r < 0) {
            char *e = *errp;
            *errp = xasprintf("%s: %s", sc->name, e);
            free(e);
            goto out;
        }
        (*n)++;
    }
    rc = 0;
out:
    for (int k = 0; k < N_POLICIES; k++)
        opt_job_free(layers[k]);
    opt_job_free(base);
    free(fixed);
    return rc;
}

/* Runs one scenario under every wanted policy; prints its rows and writes its files. */
static int run_scenario(const struct sim_scenario *sc, const struct args *a, struct plugin_set *set,
                        char **errp)
{
    int rc = -1, n = 0;
    struct sim_result *runs[N_POLICIES] = {0};
    FILE *f = NULL;
    if (run_policies(sc, a, set, runs, &n, errp) < 0)
        goto out;
    sim_report_table_rows(stdout, a->markdown, sc, runs, n);
    fflush(stdout);
    if (!(f = open_out(a->out, sc->name, ".json", errp)))
        goto out;
    json_t *doc = sim_report_json(sc, runs, n);
    json_dumpf(doc, f, JSON_INDENT(2) | JSON_REAL_PRECISION(10));
    fputc('\n', f);
    json_decref(doc);
    fclose(f);
    if (!(f = open_out(a->out, sc->name, ".svg", errp)))
        goto out;
    sim_svg_write(f, sc, runs, n);
    fclose(f);
    f = NULL;
    rc = 0;
out:
    for (int k = 0; k < N_POLICIES; k++)
        sim_result_free(runs[k]);
    return rc;
}

/* The means over a family's seeds, per policy (index of policy_names). */
struct means {
    int n[N_POLICIES];
    double max_lag[N_POLICIES], p95[N_POLICIES], slo[N_POLICIES], hours[N_POLICIES],
        rescales[N_POLICIES];
};

static int policy_index(const char *name)
{
    for (int k = 0; k < N_POLICIES; k++)
        if (strcmp(policy_names[k], name) == 0)
            return k;
    return 0;
}

/* Runs family fi for every seed of --seeds: one row per seed and policy, then the means;
 * OUT/<family>.json holds every run's report and the means. */
static int run_family(int fi, const struct args *a, struct plugin_set *set, char **errp)
{
    int rc = -1;
    const char *fam = sim_family_name(fi);
    struct means mn;
    memset(&mn, 0, sizeof mn);
    json_t *all = json_array();
    FILE *f = NULL;
    for (uint64_t seed = a->seed_lo;; seed++) {
        json_t *doc = sim_family_scenario(fi, seed);
        struct sim_scenario *sc = NULL;
        if (sim_scenario_parse(doc, NULL, &sc, errp) < 0) {
            json_decref(doc);
            goto out;
        }
        if (a->emit) {
            char *path = xasprintf("%s/%s.json", a->emit, sc->name);
            int bad = json_dump_file(doc, path, JSON_INDENT(1) | JSON_REAL_PRECISION(10));
            if (bad)
                *errp = xasprintf("cannot write %s", path);
            free(path);
            if (bad) {
                json_decref(doc);
                sim_scenario_free(sc);
                goto out;
            }
        }
        json_decref(doc);
        struct sim_result *runs[N_POLICIES] = {0};
        int n = 0;
        int r = run_policies(sc, a, set, runs, &n, errp);
        if (r == 0) {
            sim_report_table_rows(stdout, a->markdown, sc, runs, n);
            fflush(stdout);
            json_array_append_new(all, sim_report_json(sc, runs, n));
            for (int i = 0; i < n; i++) {
                struct sim_figures fg;
                sim_report_figures(sc, runs[i], &fg);
                int k = policy_index(runs[i]->policy);
                mn.n[k]++;
                mn.max_lag[k] += fg.max_lag;
                mn.p95[k] += fg.p95_lag;
                mn.slo[k] += fg.minutes_over_slo;
                mn.hours[k] += fg.subtask_hours;
                mn.rescales[k] += fg.rescales;
            }
        }
        for (int i = 0; i < N_POLICIES; i++)
            sim_result_free(runs[i]);
        sim_scenario_free(sc);
        if (r < 0)
            goto out;
        if (seed == a->seed_hi)
            break;
    }
    json_t *summary = json_object();
    for (int k = 0; k < N_POLICIES; k++) {
        if (!mn.n[k])
            continue;
        double c = mn.n[k];
        json_object_set_new(summary, policy_names[k],
                            json_pack("{s:i, s:f, s:f, s:f, s:f, s:f}", "seeds", mn.n[k],
                                      "max_lag_s", mn.max_lag[k] / c, "p95_lag_s", mn.p95[k] / c,
                                      "minutes_over_slo", mn.slo[k] / c, "subtask_hours",
                                      mn.hours[k] / c, "rescales", mn.rescales[k] / c));
        if (a->markdown)
            printf("| %s (mean of %d) | %s | %.0f | %.0f | %.1f | %.1f | %.2f | - |\n", fam,
                   mn.n[k], policy_names[k], mn.max_lag[k] / c, mn.p95[k] / c, mn.slo[k] / c,
                   mn.hours[k] / c, mn.rescales[k] / c);
        else
            printf("%-18s %-9s %10.0f %10.0f %9.1f %11.1f %8.2f %10s\n", fam, policy_names[k],
                   mn.max_lag[k] / c, mn.p95[k] / c, mn.slo[k] / c, mn.hours[k] / c,
                   mn.rescales[k] / c, "mean");
    }
    fflush(stdout);
    json_t *out_doc = json_pack("{s:s, s:s, s:[I, I], s:o, s:o}", "family", fam, "about",
                                sim_family_about(fi), "seeds", (json_int_t)a->seed_lo,
                                (json_int_t)a->seed_hi, "summary", summary, "runs", all);
    all = NULL;
    if (!(f = open_out(a->out, fam, ".json", errp))) {
        json_decref(out_doc);
        goto out;
    }
    json_dumpf(out_doc, f, JSON_INDENT(1) | JSON_REAL_PRECISION(10));
    fputc('\n', f);
    fclose(f);
    json_decref(out_doc);
    rc = 0;
out:
    json_decref(all);
    return rc;
}

/* Loads the policies directory as sim_main does (NULL: none); -1 when --policies named one
 * that does not load. */
static int load_policies(const struct args *a, struct plugin_set **set)
{
    struct plugin_limits lim;
    char *err = NULL;
    plugin_limits_offline(&lim, NULL);
    if (plugin_set_load(a->policies, &lim, set, &err) < 0) {
        *set = NULL;
        if (a->policies_given) {
            fprintf(stderr, "governor simulate: --policies: %s\n", err);
            free(err);
            return -1;
        }
        fprintf(stderr, "governor simulate: no plugins (%s): native hooks only\n", err);
        free(err);
    }
    return 0;
}

/* --family: every family of the list over every seed. */
static int family_main(const struct args *a)
{
    int code = 0;
    char *err = NULL;
    struct plugin_set *set = NULL;
    /* The options of --set are checked before anything runs. */
    {
        struct opt_job *j = opt_job_new();
        for (int i = 0; i < a->n_sets && !err; i++) {
            const char *kv = a->sets[i], *eq = strchr(kv, '=');
            char *k = xasprintf("%.*s", (int)(eq - kv), kv), *e = NULL;
            if (opt_job_set(j, OPT_JOB, k, eq + 1, &e) < 0) {
                err = xasprintf("--set: %s", e);
                free(e);
            }
            free(k);
        }
        struct core_config cfg;
        char *e = NULL;
        if (!err && opt_job_resolve(j, &cfg, &e) < 0) {
            err = xasprintf("--set: %s", e);
            free(e);
        }
        opt_job_free(j);
        if (err) {
            fprintf(stderr, "governor simulate: %s\n", err);
            free(err);
            return 2;
        }
    }
    if (load_policies(a, &set) < 0)
        return 2;
    const char *dirs[] = {a->out, a->trace, a->emit};
    for (int i = 0; i < 3; i++)
        if (dirs[i] && mkdir_p(dirs[i]) < 0) {
            fprintf(stderr, "governor simulate: cannot create %s: %s\n", dirs[i], strerror(errno));
            plugin_set_unref(set);
            return 2;
        }
    sim_report_table_header(stdout, a->markdown);
    for (const char *p = a->family; *p;) {
        const char *c = strchr(p, ',');
        size_t len = c ? (size_t)(c - p) : strlen(p);
        char name[64];
        snprintf(name, sizeof name, "%.*s", (int)(len < 63 ? len : 63), p);
        if (run_family(sim_family_find(name), a, set, &err) < 0) {
            fprintf(stderr, "governor simulate: %s: %s\n", name, err);
            free(err);
            err = NULL;
            code = 1;
        }
        if (!c)
            break;
        p = c + 1;
    }
    plugin_set_unref(set);
    return code;
}

int sim_main(int argc, char **argv)
{
    struct args a;
    char *err = NULL;
    int code = 0;
    struct plugin_set *set = NULL;
    struct sim_scenario **scs = NULL;
    int n_sc = 0;
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            usage(stdout);
            return 0;
        }
    if (parse_args(argc, argv, &a, &err) < 0) {
        fprintf(stderr, "governor simulate: %s\n", err);
        usage(stderr);
        code = 2;
        goto out;
    }
    out_inputs = a.scenarios;
    n_out_inputs = a.n_scenarios;
    /* A batch scenario (sim_batch.h) runs on its own. */
    if (a.n_scenarios == 1 && sim_batch_is(a.scenarios[0])) {
        for (int k = 0; k < 2; k++) {
            const char *dir = k ? a.trace : a.out;
            if (dir && mkdir_p(dir) < 0) {
                fprintf(stderr, "governor simulate: cannot create %s: %s\n", dir, strerror(errno));
                code = 2;
                goto out;
            }
        }
        code = sim_batch_main(a.scenarios[0], a.out, a.trace, a.seed_given ? &a.seed : NULL);
        goto out;
    }
    if (a.family) {
        code = family_main(&a);
        goto out;
    }
    /* Every scenario is checked before anything runs. */
    scs = xcalloc((size_t)a.n_scenarios, sizeof *scs);
    for (; n_sc < a.n_scenarios; n_sc++) {
        if (sim_scenario_load(a.scenarios[n_sc], &scs[n_sc], &err) < 0) {
            fprintf(stderr, "governor simulate: %s\n", err);
            code = 2;
            goto out;
        }
        if (a.seed_given)
            scs[n_sc]->seed = a.seed;
    }
    /* And its options with --set: a bad key or value stops everything before any output. */
    for (int i = 0; i < n_sc; i++) {
        struct opt_job *base = base_layers(scs[i], &a, &err);
        if (base) {
            struct core_config cfg;
            char *e = NULL;
            if (opt_job_resolve(base, &cfg, &e) < 0) {
                err = xasprintf("%s: config: %s", scs[i]->name, e);
                free(e);
            }
            opt_job_free(base);
        }
        if (err) {
            fprintf(stderr, "governor simulate: %s\n", err);
            code = 2;
            goto out;
        }
    }
    if (load_policies(&a, &set) < 0) {
        code = 2;
        goto out;
    }
    const char *dirs[] = {a.out, a.trace};
    for (int i = 0; i < 2; i++)
        if (dirs[i] && mkdir_p(dirs[i]) < 0) {
            fprintf(stderr, "governor simulate: cannot create %s: %s\n", dirs[i], strerror(errno));
            code = 2;
            goto out;
        }
    sim_report_table_header(stdout, a.markdown);
    for (int i = 0; i < n_sc; i++) {
        if (run_scenario(scs[i], &a, set, &err) < 0) {
            fprintf(stderr, "governor simulate: %s\n", err);
            free(err);
            err = NULL;
            code = 1;
        }
    }
out:
    for (int i = 0; i < n_sc; i++)
        sim_scenario_free(scs[i]);
    free(scs);
    plugin_set_unref(set);
    free(a.scenarios);
    free(a.sets);
    free(err);
    return code;
}
