/*
 * sim_svg.c - the chart of a scenario (see sim_svg.h).
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/sim_svg.h"
#include "base/xmem.h"

#define W     1000.0 /* whole width */
#define LEFT  70.0   /* room for the y labels */
#define RIGHT 150.0  /* room for the legend */
#define PANEL 140.0  /* height of one panel */
#define GAP   46.0   /* between panels: the panel's title */
#define TOP   56.0   /* the chart's title */

struct frame {
    double y0;    /* top of the panel */
    double ymax;  /* value at the top */
    double hours; /* value at the right edge */
    double ystep; /* between two y labels; 0: a quarter of ymax */
};

static const char *color(const char *policy, int i)
{
    static const char *const other[] = {"#9467bd", "#8c564b", "#e377c2", "#17becf"};
    if (strcmp(policy, "governor") == 0)
        return "#1f77b4";
    if (strcmp(policy, "flink") == 0)
        return "#ff7f0e";
    if (strcmp(policy, "hpa") == 0)
        return "#2ca02c";
    if (strcmp(policy, "fixed") == 0)
        return "#7f7f7f";
    return other[i % 4];
}

static const char *dash(const char *policy)
{
    /* The reference often decides as governor does: dashed, so both stay visible. */
    return strcmp(policy, "flink") == 0 ? " stroke-dasharray=\"7 4\"" : "";
}

static void escape(FILE *out, const char *s)
{
    for (; s && *s; s++) {
        switch (*s) {
        case '&':
            fputs("&amp;", out);
            break;
        case '<':
            fputs("&lt;", out);
            break;
        case '>':
            fputs("&gt;", out);
            break;
        case '"':
            fputs("&quot;", out);
            break;
        default:
            fputc(*s, out);
        }
    }
}

/* A round number at or above x: 1, 2, 2.5 or 5 times a power of ten. */
static double nice(double x)
{
    if (!(x > 0) || !isfinite(x))
        return 1.0;
    double e = pow(10.0, floor(log10(x)));
    const double steps[] = {1, 2, 2.5, 5, 10};
    for (int i = 0; i < 5; i++)
        if (steps[i] * e >= x * (1 - 1e-9))
            return steps[i] * e;
    return 10 * e;
}

static double px(const struct frame *f, double hours)
{
    return LEFT + (W - LEFT - RIGHT) * hours / f->hours;
}

static double py(const struct frame *f, double v)
{
    double y = v / f->ymax;
    if (y > 1.05)
        y = 1.05;
    if (y < 0)
        y = 0;
    return f->y0 + PANEL * (1 - y);
}

static void fmt_value(char *buf, size_t n, double v)
{
    if (v >= 1e6)
        snprintf(buf, n, "%gM", v / 1e6);
    else if (v >= 1e4)
        snprintf(buf, n, "%gk", v / 1e3);
    else
        snprintf(buf, n, "%g", v);
}

/* A duration of whole seconds as the scenarios write it: "24 h", "90 min", "45 s". */
static void duration_text(char *buf, size_t n, int64_t s)
{
    if (s >= 3600 && s % 3600 == 0)
        snprintf(buf, n, "%lld h", (long long)(s / 3600));
    else if (s >= 60 && s % 60 == 0)
        snprintf(buf, n, "%lld min", (long long)(s / 60));
    else
        snprintf(buf, n, "%lld s", (long long)s);
}

static void panel(FILE *out, const struct frame *f, const char *title)
{
    double x1 = W - RIGHT;
    fprintf(out, "<text x=\"%.1f\" y=\"%.1f\" class=\"h\">", LEFT, f->y0 - 10);
    escape(out, title);
    fprintf(out, "</text>\n");
    fprintf(out,
            "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"none\" "
            "stroke=\"#bbb\"/>\n",
            LEFT, f->y0, x1 - LEFT, PANEL);
    double ystep = f->ystep > 0 ? f->ystep : f->ymax / 4;
    int nticks = (int)(f->ymax / ystep + 0.5);
    for (int i = 0; i <= nticks; i++) {
        double v = ystep * i;
        double y = py(f, v);
        char b[32];
        fmt_value(b, sizeof b, v);
        if (i > 0 && i < nticks)
            fprintf(out,
                    "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#eee\"/>\n",
                    LEFT, y, x1, y);
        fprintf(out, "<text x=\"%.1f\" y=\"%.1f\" class=\"yl\">%s</text>\n", LEFT - 6, y + 4, b);
    }
    double step = f->hours <= 8 ? 1 : f->hours <= 16 ? 2 : f->hours <= 48 ? 4 : 24;
    for (double h = 0; h <= f->hours + 1e-9; h += step) {
        double x = px(f, h);
        if (h > 0 && h < f->hours)
            fprintf(out,
                    "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#eee\"/>\n", x,
                    f->y0, x, f->y0 + PANEL);
        fprintf(out, "<text x=\"%.1f\" y=\"%.1f\" class=\"xl\">%gh</text>\n", x, f->y0 + PANEL + 14,
                h);
    }
}

/*
 * A series as a polyline over buckets of `bucket` seconds, aggregated by mode: 'a' mean,
 * 'n' min, 'x' max. Points on a flat run are dropped (only the ends are kept).
 */
static void series(FILE *out, const struct frame *f, const double *v, int64_t n, int64_t bucket,
                   char mode, const char *stroke, const char *extra)
{
    int64_t nb = (n + bucket - 1) / bucket;
    double *y = xmalloc((size_t)(nb ? nb : 1) * sizeof *y);
    for (int64_t b = 0; b < nb; b++) {
        double acc = mode == 'n' ? INFINITY : mode == 'x' ? -INFINITY : 0;
        int cnt = 0;
        for (int64_t k = b * bucket; k < n && k < (b + 1) * bucket; k++) {
            if (!isfinite(v[k]))
                continue;
            cnt++;
            if (mode == 'a')
                acc += v[k];
            else if (mode == 'n')
                acc = fmin(acc, v[k]);
            else
                acc = fmax(acc, v[k]);
        }
        y[b] = cnt ? (mode == 'a' ? acc / cnt : acc) : NAN;
    }
    fprintf(out, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"1.4\"%s points=\"", stroke,
            extra);
    for (int64_t b = 0; b < nb; b++) {
        if (isnan(y[b]))
            continue;
        if (b > 0 && b + 1 < nb && y[b] == y[b - 1] && y[b] == y[b + 1])
            continue;
        double h = (double)(b * bucket + bucket / 2) / 3600.0;
        fprintf(out, "%.1f,%.1f ", px(f, h), py(f, y[b]));
    }
    fprintf(out, "\"/>\n");
    free(y);
}

/* A step line of an integer series, exact: a point at each change. */
static void steps(FILE *out, const struct frame *f, const int *v, int64_t n, const char *stroke,
                  const char *extra)
{
    fprintf(out, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"1.6\"%s points=\"", stroke,
            extra);
    for (int64_t k = 0; k < n; k++) {
        if (k > 0 && v[k] == v[k - 1])
            continue;
        if (k > 0)
            fprintf(out, "%.1f,%.1f ", px(f, k / 3600.0), py(f, v[k - 1]));
        fprintf(out, "%.1f,%.1f ", px(f, k / 3600.0), py(f, v[k]));
    }
    if (n > 0)
        fprintf(out, "%.1f,%.1f", px(f, n / 3600.0), py(f, v[n - 1]));
    fprintf(out, "\"/>\n");
}

void sim_svg_write(FILE *out, const struct sim_scenario *sc, struct sim_result *const *runs, int n)
{
    int64_t len = n ? runs[0]->n : sc->horizon;
    int64_t bucket = len / 720 > 60 ? len / 720 : 60;
    int panels = 2 + sc->n;
    double height = TOP + panels * (PANEL + GAP) + 10;
    double hours = (double)len / 3600.0;
    fprintf(out,
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
            "viewBox=\"0 0 %.0f %.0f\" font-family=\"sans-serif\" font-size=\"11\">\n",
            W, height, W, height);
    fprintf(out, "<style>.h{font-size:12px;font-weight:bold}.yl{text-anchor:end;fill:#555}"
                 ".xl{text-anchor:middle;fill:#555}.t{font-size:15px;font-weight:bold}"
                 ".s{fill:#555}</style>\n");
    fprintf(out, "<rect width=\"100%%\" height=\"100%%\" fill=\"#fff\"/>\n");
    fprintf(out, "<text x=\"%.1f\" y=\"22\" class=\"t\">governor simulate: ", LEFT);
    escape(out, sc->name);
    fprintf(out, "</text>\n");
    /* The subtitle: the scenario's description, and the time this run simulated (a shorter
     * --horizon than the scenario's says so: "2 h of 24 h"). */
    char span[96], whole[48];
    duration_text(span, sizeof span, len);
    if (len < sc->horizon) {
        duration_text(whole, sizeof whole, sc->horizon);
        snprintf(span + strlen(span), sizeof span - strlen(span), " of %s", whole);
    }
    fprintf(out, "<text x=\"%.1f\" y=\"40\" class=\"s\">", LEFT);
    if (sc->about) {
        escape(out, sc->about);
        fprintf(out, " \xe2\x80\x94 ");
    }
    fprintf(out, "simulated: %s</text>\n", span);
    /* Legend. */
    double lx = W - RIGHT + 16, ly = TOP + 10;
    fprintf(out,
            "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#000\" "
            "stroke-width=\"1.4\"/><text x=\"%.1f\" y=\"%.1f\">arrival rate</text>\n",
            lx, ly, lx + 22, ly, lx + 28, ly + 4);
    for (int i = 0; i < n; i++) {
        ly += 18;
        fprintf(out,
                "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" "
                "stroke-width=\"2\"%s/><text x=\"%.1f\" y=\"%.1f\">",
                lx, ly, lx + 22, ly, color(runs[i]->policy, i), dash(runs[i]->policy), lx + 28,
                ly + 4);
        escape(out, runs[i]->policy);
        fprintf(out, "</text>\n");
    }
    ly += 18;
    fprintf(out,
            "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#d62728\" "
            "stroke-dasharray=\"3 3\"/><text x=\"%.1f\" y=\"%.1f\">lag SLO</text>\n",
            lx, ly, lx + 22, ly, lx + 28, ly + 4);

    /* 1: arrival and capacity. */
    struct frame f = {TOP + GAP - 20, 0, hours, 0};
    double top = 0;
    for (int i = 0; i < n; i++)
        for (int64_t k = 0; k < len; k++) {
            if (runs[i]->arrival[k] > top)
                top = runs[i]->arrival[k];
        }
    f.ymax = nice(top * 1.6);
    panel(out, &f, "records/s: arrival (black) and the capacity each policy deployed");
    for (int i = n - 1; i >= 0; i--)
        series(out, &f, runs[i]->capacity, len, bucket, 'n', color(runs[i]->policy, i),
               dash(runs[i]->policy));
    if (n)
        series(out, &f, runs[0]->arrival, len, bucket, 'a', "#000", "");

    /* 2..: parallelism per vertex. */
    for (int v = 0; v < sc->n; v++) {
        f.y0 += PANEL + GAP;
        int pm = 1;
        for (int i = 0; i < n; i++)
            for (int64_t k = 0; k < len; k++)
                if (runs[i]->par[(size_t)v * (size_t)len + (size_t)k] > pm)
                    pm = runs[i]->par[(size_t)v * (size_t)len + (size_t)k];
        /* Subtasks are whole: labels at whole steps of 1, 2, 5, 10, ... (at most 5). */
        double want = pm * 1.1, st = 1;
        while (ceil(want / st) > 5)
            st = nice(st * 1.5);
        f.ystep = st;
        f.ymax = st * ceil(want / st);
        char title[300];
        snprintf(title, sizeof title, "parallelism of %s (max parallelism %d)", sc->v[v].id,
                 sc->v[v].max_parallelism);
        panel(out, &f, title);
        for (int i = n - 1; i >= 0; i--)
            steps(out, &f, runs[i]->par + (size_t)v * (size_t)len, len, color(runs[i]->policy, i),
                  dash(runs[i]->policy));
    }

    /* Last: lag. */
    f.y0 += PANEL + GAP;
    f.ystep = 0;
    double lm = (double)sc->slo;
    for (int i = 0; i < n; i++)
        for (int64_t k = 0; k < len; k++)
            if (runs[i]->lag[k] > lm)
                lm = runs[i]->lag[k];
    f.ymax = nice(lm * 1.1);
    char title[200];
    snprintf(title, sizeof title, "lag (s): age of the oldest waiting record; SLO %lld s",
             (long long)sc->slo);
    panel(out, &f, title);
    fprintf(out,
            "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#d62728\" "
            "stroke-dasharray=\"3 3\"/>\n",
            LEFT, py(&f, (double)sc->slo), W - RIGHT, py(&f, (double)sc->slo));
    for (int i = n - 1; i >= 0; i--)
        series(out, &f, runs[i]->lag, len, bucket, 'x', color(runs[i]->policy, i),
               dash(runs[i]->policy));
    fprintf(out, "</svg>\n");
}
