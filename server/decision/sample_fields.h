/*
 * sample_fields.h - the members of a decide request that governor does not read (prefix
 * sample_fields_): a misspelt field ("runing_since", "metrcs") would otherwise be ignored
 * without a word, and the sample decided as if it had not been sent. The server lists each
 * one in the answer's `warnings` (with the known field it is nearest to), or refuses the
 * sample with a 400 naming it under `strict-samples`.
 *
 * The known fields are those json.c reads, per level of the request: the sample, `job_metrics`,
 * a vertex, its `inputs[]`, its `metrics` and their `busy_ms_per_s` object; in batch mode
 * (`"mode": "BATCH"`) `workers` and each stage's `batch`. A field added to the parser is added
 * to its list here (tests/api/test_sample_fields.py sends every documented field and expects no
 * warning).
 *
 * May call: base (suggest), jansson, xmem.
 */
#ifndef GOVERNOR_SAMPLE_FIELDS_H
#define GOVERNOR_SAMPLE_FIELDS_H

#include <jansson.h>
#include <stdbool.h>

/* At most this many unknown fields are listed; the rest are counted in one more line. */
#define SAMPLE_FIELDS_MAX 16

/* The unknown fields of one request: each its path and its message. Zeroed storage is
 * empty; sample_fields_reset empties it for the next request (keeping its buffers). */
struct sample_fields {
    int n;                                /* listed, at most SAMPLE_FIELDS_MAX */
    int more;                             /* found beyond those */
    char path[SAMPLE_FIELDS_MAX][256];    /* e.g. "vertices[0].metrcs" */
    const char *near[SAMPLE_FIELDS_MAX];  /* the known field it is nearest to, or NULL (static) */
    char message[SAMPLE_FIELDS_MAX][400]; /* the warning's text, naming the path */
    char tail[96];                        /* "... and N more unknown fields", when more */
};

/*
 * Walks body (a decide request that jsn_parse_sample accepted: every known member has its
 * type) and records each member no level of the parser reads, in document order. A member
 * whose value is null is absent, as everywhere in the request. Linear in the body's members.
 * Returns how many were found (listed or not).
 */
int sample_fields_check(const json_t *body, struct sample_fields *out);

void sample_fields_reset(struct sample_fields *f);

#endif
