/*
 * bench_codec.c - bytes a sample in the samples' codec (server/core/codec.h), on streams of
 * decide requests, against the raw sizes measured on the same samples in the same run: the
 * request's JSON text, the packed request history keeps today (server/store/pack.h), and the
 * sample's numbers as doubles (its time and every number of its row, 8 bytes each). Each job
 * of a stream is written into chunks of its own, closed as history would close them
 * (--rows, --minutes); the chunks' bytes are their whole size, headers and layouts included.
 * Each job is also decided, sample after sample, by the core (the options' defaults and the
 * request's own), and its metric window's bytes in memory are taken after its last sample
 * (core_state_window_bytes: the chunks the window keeps its samples in, and the state that
 * continues the last), against the same samples as doubles (8 bytes each number and the time).
 *
 * usage: bench_codec [--rows N] [--minutes M] [--bench-job SAMPLES] [LABEL=FILE[,FILE...]]...
 *   --bench-job: the benchmark's own 4-vertex job (tests/bench/load.c's samples), that many
 *   samples 10 s apart, as the stream labelled "bench job"
 *   LABEL=FILES: JSON lines, each a decide request with a "job" member (what
 *   `governor simulate --trace` writes and tests/cases/<case>/trace.jsonl holds)
 * Prints one JSON object per stream.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_job.h"
#include "core/codec.h"
#include "decision/jsn.h"
#include "options/options.h"
#include "store/pack.h"

struct job {
    char *name;
    struct core_codec_state st;
    struct core_chunk *open;
    int k;
    struct core_state *state; /* the job decided by the core */
    struct opt_job *opts;
    int nv; /* its last sample's vertices */
};

struct totals {
    long samples, refused, chunks;
    double json, packed, raw, codec;
    double window_rows, window_bytes, window_raw; /* summed over jobs */
};

static struct core_codec_limits lim = {.max_rows = 360, .max_span_ms = 3600000};

static void close_chunk(struct job *j, struct totals *t)
{
    if (j->open) {
        t->codec += (double)core_codec_bytes(j->open);
        t->chunks++;
        free(j->open);
        j->open = NULL;
    }
}

static void add_sample(struct job *j, const struct core_sample *sm, struct totals *t)
{
    int k = core_codec_sample_k(sm->n_vertices);
    if (k != j->k) {
        close_chunk(j, t);
        if (j->k)
            core_codec_state_deinit(&j->st);
        core_codec_state_init(&j->st, k);
        j->k = k;
    }
    unsigned char *layout, *counter;
    size_t len;
    double *row = calloc((size_t)k, sizeof *row);
    core_codec_sample_layout(sm, &layout, &len, &counter);
    core_codec_sample_row(sm, row);
    if (core_codec_append(&j->open, &j->st, &lim, sm->at, row, counter, layout, len) == 1) {
        close_chunk(j, t);
        core_codec_append(&j->open, &j->st, &lim, sm->at, row, counter, layout, len);
    }
    t->raw += 8.0 * (1 + k);
    t->samples++;
    free(row);
    free(layout);
    free(counter);
}

/* One request's text, of job `name`. */
/* The core decides sm for job j (its window is what is measured). */
static void decide(struct job *j, const struct core_sample *sm)
{
    struct core_config cfg;
    struct core_decision d;
    char *err = NULL, msg[256];
    if (opt_job_resolve(j->opts, &cfg, &err) < 0) {
        free(err);
        return;
    }
    core_decision_init(&d);
    if (core_decide(j->state, sm, &cfg, NULL, &d, msg, sizeof msg) == 0)
        j->nv = sm->n_vertices;
    core_decision_deinit(&d);
}

/* One request's text, of job `name`. */
static void add_text(struct job **jobs, int *n_jobs, const char *name, const char *text, size_t len,
                     struct totals *t, struct jsn_sample *js)
{
    json_error_t je;
    json_t *body = json_loadb(text, len, 0, &je);
    struct jsn_err e;
    struct job *j = NULL;
    for (int i = 0; i < *n_jobs; i++)
        if (strcmp((*jobs)[i].name, name) == 0)
            j = &(*jobs)[i];
    if (!j) {
        *jobs = realloc(*jobs, (size_t)(*n_jobs + 1) * sizeof **jobs);
        j = &(*jobs)[(*n_jobs)++];
        memset(j, 0, sizeof *j);
        j->name = strdup(name);
        j->state = core_state_new();
        j->opts = opt_job_new();
    }
    opt_job_clear_layer(j->opts, OPT_REQUEST);
    if (!body || jsn_parse_sample(body, 0, js, j->opts, &e) < 0 || js->s.batch_mode) {
        t->refused++;
        json_decref(body);
        return;
    }
    unsigned char *packed;
    size_t plen;
    pack_input(text, len, &packed, &plen);
    t->json += (double)len;
    t->packed += (double)plen;
    free(packed);
    add_sample(j, &js->s, t);
    decide(j, &js->s);
    json_decref(body);
}

static void finish(struct job *jobs, int n_jobs, struct totals *t, const char *label)
{
    for (int i = 0; i < n_jobs; i++) {
        struct job *j = &jobs[i];
        close_chunk(j, t);
        if (j->k)
            core_codec_state_deinit(&j->st);
        double rows = (double)(core_state_seq_end(j->state) - core_state_seq0(j->state));
        t->window_rows += rows;
        t->window_bytes += (double)core_state_window_bytes(j->state);
        t->window_raw += rows * 8.0 * (1 + 6 + 9 * j->nv);
        core_state_free(j->state);
        opt_job_free(j->opts);
        free(j->name);
    }
    free(jobs);
    double n = t->samples ? (double)t->samples : 1.0;
    double nj = n_jobs ? (double)n_jobs : 1.0, wr = t->window_rows ? t->window_rows : 1.0;
    printf("{\"stream\": \"%s\", \"jobs\": %d, \"samples\": %ld, \"refused\": %ld, "
           "\"chunks\": %ld, \"json_bytes\": %.1f, \"packed_bytes\": %.1f, \"raw_bytes\": %.1f, "
           "\"codec_bytes\": %.2f, \"window_rows\": %.1f, \"window_bytes\": %.0f, "
           "\"window_bytes_per_row\": %.2f, \"window_raw_per_row\": %.1f}\n",
           label, n_jobs, t->samples, t->refused, t->chunks, t->json / n, t->packed / n, t->raw / n,
           t->codec / n, t->window_rows / nj, t->window_bytes / nj, t->window_bytes / wr,
           t->window_raw / wr);
}

int main(int argc, char **argv)
{
    struct jsn_sample js;
    jsn_sample_init(&js);
    for (int a = 1; a < argc; a++) {
        struct totals t = {0};
        struct job *jobs = NULL;
        int n_jobs = 0;
        if (strcmp(argv[a], "--rows") == 0 && a + 1 < argc) {
            lim.max_rows = atoi(argv[++a]);
            continue;
        }
        if (strcmp(argv[a], "--minutes") == 0 && a + 1 < argc) {
            lim.max_span_ms = 60000LL * atoll(argv[++a]);
            continue;
        }
        if (strcmp(argv[a], "--bench-job") == 0 && a + 1 < argc) {
            long long n = atoll(argv[++a]);
            char body[4096];
            for (long long k = 0; k < n; k++) {
                int len = bench_job_body(body, sizeof body, k);
                add_text(&jobs, &n_jobs, "bench", body, (size_t)len, &t, &js);
            }
            finish(jobs, n_jobs, &t, "bench job");
            continue;
        }
        char *spec = strdup(argv[a]), *eq = strchr(spec, '=');
        if (!eq) {
            fprintf(stderr, "usage: bench_codec [--rows N] [--minutes M] [--bench-job N] "
                            "[LABEL=FILE[,FILE...]]...\n");
            return 2;
        }
        *eq = '\0';
        for (char *f = strtok(eq + 1, ","); f; f = strtok(NULL, ",")) {
            FILE *in = fopen(f, "r");
            if (!in) {
                perror(f);
                return 1;
            }
            char *line = NULL;
            size_t cap = 0;
            ssize_t len;
            while ((len = getline(&line, &cap, in)) > 0) {
                json_t *o = json_loadb(line, (size_t)len, 0, NULL);
                const char *job = json_string_value(json_object_get(o, "job"));
                char name[512];
                snprintf(name, sizeof name, "%s/%s", f, job ? job : "");
                if (o) {
                    /* the request without the trace's own members */
                    json_object_del(o, "job");
                    json_object_del(o, "decision");
                    json_object_del(o, "expect");
                    char *text = json_dumps(o, JSON_COMPACT);
                    add_text(&jobs, &n_jobs, name, text, strlen(text), &t, &js);
                    free(text);
                    json_decref(o);
                }
            }
            free(line);
            fclose(in);
        }
        finish(jobs, n_jobs, &t, spec);
        free(spec);
    }
    jsn_sample_deinit(&js);
    return 0;
}
