/*
 * options_print.c - the options table printed: `governor options`, `governor serve --help`,
 * docs/options.md's tables and docs/api.md's limits table (markdown).
 */
#include <stdio.h>
#include <string.h>

#include "options/options.h"
#include "options/options_int.h"

/* ------------------------------------------------------------------- output -- */

static const char *type_name(const struct opt_row *r)
{
    static const char *const n[] = {"bool", "int",  "double", "duration", "memory",
                                    "enum", "list", "string", "time zone"};
    return n[r->type];
}

/* What values are allowed, as display text ("" when anything of the type goes). */
static void allowed_text(char *buf, size_t n, const struct opt_row *r)
{
    buf[0] = '\0';
    if (r->type == T_ENUM) {
        for (int i = 0; r->values[i]; i++)
            snprintf(buf + strlen(buf), n - strlen(buf), "%s%s", i ? ", " : "", r->values[i]);
        if (r->flags & F_OPEN)
            snprintf(buf + strlen(buf), n - strlen(buf), ", or a plugin name");
    } else if (r->type == T_LIST) {
        snprintf(buf, n, "`;`-separated");
    } else if (r->has_min || r->has_max) {
        opt__fmt_range(buf, n, r);
        if (r->gate)
            snprintf(buf + strlen(buf), n - strlen(buf), " when enabled");
    }
}

/* Help text plus the alias / deprecation notes. */
static void help_text(char *buf, size_t n, const struct opt_row *r)
{
    snprintf(buf, n, "%s%s", (r->flags & F_DEPRECATED) ? "(Deprecated.) " : "", r->help);
    if (r->alias)
        snprintf(buf + strlen(buf), n - strlen(buf), " Deprecated alias: `%s`.", r->alias);
}

/* Row i when it is of scope sc (else NULL), with its allowed values' and help texts. */
static const struct opt_row *row_texts(int i, int sc, char *allowed, size_t na, char *help,
                                       size_t nh)
{
    const struct opt_row *r = &opt__rows[i];
    if ((int)r->scope != sc)
        return NULL;
    allowed_text(allowed, na, r);
    help_text(help, nh, r);
    return r;
}

static const char *const scope_titles[] = {
    "Job options (also accepted with the `kubernetes.operator.` prefix)",
    "Flink cluster keys read by the algorithm",
    "Server options (`governor serve --NAME VALUE`, or `NAME = VALUE` in the config file)",
};

/* The width `governor options` and `governor serve --help` wrap their lines at. */
#define TEXT_WIDTH 100

/* Prints text from column `indent`, its words wrapped so that no line passes TEXT_WIDTH (a
 * word longer than a line stands alone on its own). */
static void print_wrapped(FILE *out, const char *text, int indent)
{
    int col = 0;
    const char *p = text;
    while (*p) {
        while (*p == ' ')
            p++;
        size_t n = strcspn(p, " ");
        if (!n)
            break;
        if (col > indent && col + 1 + (int)n > TEXT_WIDTH) {
            fputc('\n', out);
            col = 0;
        }
        if (col == 0)
            col = fprintf(out, "%*s", indent, "");
        else
            col += fprintf(out, " ");
        col += fprintf(out, "%.*s", (int)n, p);
        p += n;
    }
    if (col)
        fputc('\n', out);
}

/* Prints every row, grouped by scope: its name, then its type, default and allowed values on
 * the same line when they fit, then its description, wrapped at TEXT_WIDTH columns. */
void opt_print_table(FILE *out)
{
    for (int sc = S_JOB; sc <= S_SERVER; sc++) {
        fprintf(out, "%s%s:\n\n", sc == S_JOB ? "" : "\n", scope_titles[sc]);
        for (int i = 0; i < N_ROWS; i++) {
            char allowed[256], help[1024], meta[512];
            const struct opt_row *r = row_texts(i, sc, allowed, sizeof allowed, help, sizeof help);
            if (!r)
                continue;
            snprintf(meta, sizeof meta, "%s, default %s%s%s", type_name(r),
                     *r->def ? r->def : "(none)", *allowed ? ", allowed " : "", allowed);
            if (2 + strlen(r->name) + 2 + strlen(meta) <= TEXT_WIDTH)
                fprintf(out, "  %s  %s\n", r->name, meta);
            else
                fprintf(out, "  %s\n      %s\n", r->name, meta);
            print_wrapped(out, help, 6);
        }
    }
}

bool opt_server_known(const char *name)
{
    int i = 0;
    const struct opt_row *r = opt__row_by_name(name, &i);
    return r && r->scope == S_SERVER;
}

/* `governor serve --help`: each server option as a flag, with its default and meaning. */
void opt_print_server_flags(FILE *out)
{
    for (int i = 0; i < N_ROWS; i++) {
        char allowed[256], help[1024];
        const struct opt_row *r =
            row_texts(i, S_SERVER, allowed, sizeof allowed, help, sizeof help);
        if (!r)
            continue;
        fprintf(out, "  --%s %s (default %s%s%s)\n", r->name, type_name(r),
                *r->def ? r->def : "none", *allowed ? "; " : "", allowed);
        print_wrapped(out, help, 6);
    }
}

/* Prints s with '|' escaped for a markdown table cell. */
static void md_cell(FILE *out, const char *s)
{
    for (; *s; s++) {
        if (*s == '|')
            fputc('\\', out);
        fputc(*s, out);
    }
}

/*
 * docs/api.md's limits table: one row per bounded size of a request. A row names a server
 * option (its default is the limit, and its help says the rest) or holds a fixed limit of
 * options.h or of the layer that enforces it. The only copy is here; the page's table is
 * printed from it (opt_print_limits_markdown) and a unit test keeps the two equal.
 */
struct limit_row {
    const char *request; /* where the size is */
    const char *what;    /* what is bounded */
    const char *field;   /* the field a refusal names ("" none) */
    const char *option;  /* a SERVER row, or NULL: fixed */
    const char *fixed;   /* the limit, when fixed */
    const char *past;    /* the answer past it */
    const char *why;     /* why the limit is where it is */
};

#define STR_(x) #x
#define STR(x)  STR_(x)

static const struct limit_row limit_rows[] = {
    {"any", "the body", "", "max-body", NULL, "413",
     "holds a sample at the limits below: 5,000 vertices with every metric are about 900 KB"},
    {"any", "the request line and headers", "", "max-header", NULL, "414, 431",
     "a bearer token and a few headers"},
    {"`POST .../metrics`", "vertices (stages of a batch sample)", "`vertices`", "max-vertices",
     NULL, "413",
     "Flink jobs have a few hundred vertices (operators are chained into them); a decision of "
     "5,000 holds the loop about 35 ms"},
    {"`POST .../metrics`", "inputs, in all", "`vertices[i].inputs`", "max-edges", NULL, "413",
     "ten inputs per vertex at the vertex limit; 50,000 into one vertex take about 20 ms"},
    {"`POST .../metrics`", "a vertex's or stage's id", "`vertices[i].id`", NULL,
     STR(OPT_MAX_ID_LEN) " characters", "400", "Flink's vertex ids are 32 hex digits"},
    {"`POST .../metrics`, `PUT .../config`, `POST /v1/replay`", "keys of one options layer",
     "`config`", "max-config-keys", NULL, "413",
     "governor has about 150 options, a plugin a few parameters; 1,000 keys take about 3 ms"},
    {"`POST .../rebalance`", "items, over all workers", "`items`, `workers[i].items`",
     "max-rebalance-items", NULL, "413",
     "a few items per worker of a few thousand workers; 10,000 items take about 45 ms"},
    {"`POST .../rebalance`", "`idle_slots` (a value)", "`idle_slots`", NULL,
     STR(OPT_MAX_IDLE_SLOTS), "400",
     "more slots than a cluster has; the answer's size follows the items, not the slots"},
    {"`GET .../decisions`", "decisions of a page", "`limit`", NULL, STR(OPT_MAX_PAGE), "400",
     "what a dashboard shows at most"},
    {"`GET .../decisions`", "vertex rows of a page (its decisions' vertices, summed)", "",
     "max-page-rows", NULL, "a shorter page, with `next`",
     "1,000 decisions of a 5-vertex job, 100 of a 50-vertex one; about 55 ms of the loop"},
    {"`GET .../timeline`", "buckets", "`step`", NULL, STR(OPT_MAX_BUCKETS), "400",
     "a point per pixel of a wide chart"},
    {"`GET .../timeline`", "values per series (buckets x vertices shown)", "`vertices`", NULL,
     STR(OPT_MAX_VALUES), "413", "2,000 buckets of 500 vertices; a larger job picks vertices"},
    {"every job route", "jobs whose state is held in memory", "", "max-jobs-in-memory", NULL,
     "the least recently used idle job is forgotten, read again from the store at its next "
     "sample",
     "about 8 KB a job: 10,000 jobs are about 80 MB, whatever the number of job names ever seen"},
    {"reads of the history", "the SQLite WAL file", "", "wal-max", NULL,
     "the writer truncates the WAL once readers let it",
     "readers never grow the disk: a timeline, advice or SQL read ends its snapshot often"},
};

void opt_limits_defaults(struct opt_limits *l)
{
    struct opt_server s;
    opt_server_init(&s);
    *l = s.limits;
    opt_server_deinit(&s);
}

/* Prints s with '|' escaped for a markdown table cell. */
static void md_cell(FILE *out, const char *s);

void opt_print_limits_markdown(FILE *out)
{
    fprintf(out, "| request | what | field | limit | option | past it | why this limit |\n");
    fprintf(out, "|---|---|---|---|---|---|---|\n");
    for (size_t k = 0; k < sizeof limit_rows / sizeof limit_rows[0]; k++) {
        const struct limit_row *l = &limit_rows[k];
        const struct opt_row *r = l->option ? opt__row_by_name(l->option, NULL) : NULL;
        fprintf(out, "| %s | %s | %s | ", l->request, l->what, *l->field ? l->field : "");
        if (r) {
            fputc('`', out);
            md_cell(out, r->def);
            fprintf(out, "` | `%s` | ", r->name);
        } else {
            md_cell(out, l->fixed);
            fputs(" | fixed | ", out);
        }
        md_cell(out, l->past);
        fputs(" | ", out);
        md_cell(out, l->why);
        fputs(" |\n", out);
    }
}

/* Prints docs/options.md's options tables (markdown), one per scope. */
void opt_print_markdown(FILE *out)
{
    for (int sc = S_JOB; sc <= S_SERVER; sc++) {
        fprintf(out, "%s### %s\n\n", sc == S_JOB ? "" : "\n", scope_titles[sc]);
        fprintf(out, "| Key | Type | Default | Allowed | Description |\n");
        fprintf(out, "|---|---|---|---|---|\n");
        for (int i = 0; i < N_ROWS; i++) {
            char allowed[256], help[1024];
            const struct opt_row *r = row_texts(i, sc, allowed, sizeof allowed, help, sizeof help);
            if (!r)
                continue;
            fprintf(out, "| `%s` | %s | ", r->name, type_name(r));
            if (*r->def) {
                fputc('`', out);
                md_cell(out, r->def);
                fputc('`', out);
            } else {
                fputs("(none)", out);
            }
            fputs(" | ", out);
            md_cell(out, allowed);
            fputs(" | ", out);
            md_cell(out, help);
            fputs(" |\n", out);
        }
    }
}
