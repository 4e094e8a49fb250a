/*
 * sim_report.c - the figures of a run, as JSON and as a table (see sim_report.h).
 */
#include <stdlib.h>
#include <string.h>

#include "sim/sim_report.h"
#include "base/xmem.h"

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y ? 1 : 0;
}

void sim_report_figures(const struct sim_scenario *sc, const struct sim_result *r,
                        struct sim_figures *f)
{
    memset(f, 0, sizeof *f);
    int64_t n = r->n;
    double *sorted = xmalloc((size_t)n * sizeof *sorted);
    int64_t over = 0;
    for (int64_t k = 0; k < n; k++) {
        sorted[k] = r->lag[k];
        if (r->lag[k] > (double)sc->slo)
            over++;
    }
    qsort(sorted, (size_t)n, sizeof *sorted, cmp_double);
    f->max_lag = n ? sorted[n - 1] : 0;
    int64_t rank = (int64_t)ceil(0.95 * (double)n - 1e-9);
    f->p95_lag = n ? sorted[rank > 0 ? rank - 1 : 0] : 0;
    free(sorted);
    f->minutes_over_slo = (double)over / 60.0;
    double sum = 0;
    for (size_t k = 0; k < (size_t)n * (size_t)r->nv; k++)
        sum += r->par[k];
    f->subtask_hours = sum / 3600.0;
    f->rescales = r->rescales;

    int64_t at[SIM_MAX_MARKS];
    const char *label[SIM_MAX_MARKS];
    int nm = sim_scenario_marks(sc, at, label, SIM_MAX_MARKS);
    double thr = (double)sc->recovery_lag;
    f->recovery = 0;
    for (int i = 0; i < nm; i++) {
        if (at[i] >= n)
            break;
        int64_t end = i + 1 < nm && at[i + 1] < n ? at[i + 1] : n;
        /* lag at time t is r->lag[t - 1]. Recovered at the first t in (at, end] from which
         * the lag stays at or below the threshold for SIM_RECOVERY_HOLD seconds (or until
         * end, when that comes first). */
        bool rose = false;
        int64_t from = -1;
        double rec = NAN;
        for (int64_t t = at[i] + 1; t <= end; t++) {
            if (r->lag[t - 1] > thr) {
                rose = true;
                from = -1;
                continue;
            }
            if (from < 0)
                from = t;
            if (t - from + 1 >= SIM_RECOVERY_HOLD || t == end) {
                rec = rose ? (double)(from - at[i]) : 0.0;
                break;
            }
        }
        struct sim_mark *mk = &f->marks[f->n_marks++];
        mk->at = at[i];
        mk->label = label[i];
        mk->recovered = rec;
        if (isnan(mk->recovered) || isnan(f->recovery))
            f->recovery = NAN;
        else if (mk->recovered > f->recovery)
            f->recovery = mk->recovered;
    }
}

static json_t *num(double x)
{
    return isfinite(x) ? json_real(x) : json_null();
}

/* Rounded for reading: the JSON keeps three decimals. */
static double r3(double x)
{
    return isfinite(x) ? round(x * 1000.0) / 1000.0 : x;
}

json_t *sim_report_json(const struct sim_scenario *sc, struct sim_result *const *runs, int n)
{
    json_t *o = json_object();
    json_object_set_new(o, "scenario", json_string(sc->name));
    if (sc->about)
        json_object_set_new(o, "about", json_string(sc->about));
    json_object_set_new(o, "seed", json_integer((json_int_t)sc->seed));
    json_object_set_new(o, "horizon_s", json_integer(n ? runs[0]->n : sc->horizon));
    json_object_set_new(o, "interval_s", json_integer(sc->interval));
    json_object_set_new(o, "restart_s", json_integer(sc->restart));
    json_object_set_new(o, "slo_s", json_integer(sc->slo));
    json_object_set_new(o, "recovery_lag_s", json_integer(sc->recovery_lag));
    json_t *ps = json_array();
    for (int i = 0; i < n; i++) {
        const struct sim_result *r = runs[i];
        struct sim_figures f;
        sim_report_figures(sc, r, &f);
        json_t *p = json_object();
        json_object_set_new(p, "policy", json_string(r->policy));
        json_object_set_new(p, "max_lag_s", num(r3(f.max_lag)));
        json_object_set_new(p, "p95_lag_s", num(r3(f.p95_lag)));
        json_object_set_new(p, "minutes_over_slo", num(r3(f.minutes_over_slo)));
        json_object_set_new(p, "subtask_hours", num(r3(f.subtask_hours)));
        json_object_set_new(p, "rescales", json_integer(f.rescales));
        json_object_set_new(p, "executed", json_integer(r->executed));
        json_object_set_new(p, "decisions", json_integer(r->decisions));
        json_t *rec = json_array();
        for (int k = 0; k < f.n_marks; k++)
            json_array_append_new(
                rec, json_pack("{s:I, s:s, s:o}", "at_s", (json_int_t)f.marks[k].at, "after",
                               f.marks[k].label, "recovered_s", num(f.marks[k].recovered)));
        json_object_set_new(p, "recovery", rec);
        json_object_set_new(p, "reasons", json_incref(r->reasons));
        json_t *vs = json_object();
        for (int v = 0; v < r->nv; v++) {
            const int *par = r->par + (size_t)v * (size_t)r->n;
            int top = 0;
            for (int64_t k = 0; k < r->n; k++)
                if (par[k] > top)
                    top = par[k];
            /* Every change, as [second, new parallelism]: what a reader needs to see a
             * vertex go up and down (a reversal) without the whole series. */
            json_t *steps = json_array();
            for (int64_t k = 1; k < r->n; k++)
                if (par[k] != par[k - 1])
                    json_array_append_new(steps, json_pack("[I, i]", (json_int_t)k, par[k]));
            json_object_set_new(vs, sc->v[v].id,
                                json_pack("{s:i, s:i, s:i, s:o}", "first", r->n ? par[0] : 0,
                                          "last", r->n ? par[r->n - 1] : 0, "max", top, "steps",
                                          steps));
        }
        json_object_set_new(p, "parallelism", vs);
        json_array_append_new(ps, p);
    }
    json_object_set_new(o, "policies", ps);
    return o;
}

void sim_report_table_header(FILE *out, bool markdown)
{
    if (markdown) {
        fprintf(out, "| scenario | policy | max lag (s) | p95 lag (s) | minutes over SLO | "
                     "subtask-hours | rescales | recovery (s) |\n"
                     "|---|---|---:|---:|---:|---:|---:|---:|\n");
        return;
    }
    fprintf(out, "%-18s %-9s %10s %10s %9s %11s %8s %10s\n", "scenario", "policy", "max lag s",
            "p95 lag s", "min>SLO", "subtask-h", "rescales", "recovery s");
}

static void recovery_text(char *buf, size_t len, const struct sim_figures *f)
{
    if (f->n_marks == 0)
        snprintf(buf, len, "-");
    else if (isnan(f->recovery))
        snprintf(buf, len, "never");
    else
        snprintf(buf, len, "%.0f", f->recovery);
}

void sim_report_table_rows(FILE *out, bool markdown, const struct sim_scenario *sc,
                           struct sim_result *const *runs, int n)
{
    for (int i = 0; i < n; i++) {
        struct sim_figures f;
        sim_report_figures(sc, runs[i], &f);
        char rec[32];
        recovery_text(rec, sizeof rec, &f);
        if (markdown)
            fprintf(out, "| %s | %s | %.0f | %.0f | %.1f | %.1f | %d | %s |\n", sc->name,
                    runs[i]->policy, f.max_lag, f.p95_lag, f.minutes_over_slo, f.subtask_hours,
                    f.rescales, rec);
        else
            fprintf(out, "%-18s %-9s %10.0f %10.0f %9.1f %11.1f %8d %10s\n", sc->name,
                    runs[i]->policy, f.max_lag, f.p95_lag, f.minutes_over_slo, f.subtask_hours,
                    f.rescales, rec);
    }
}
