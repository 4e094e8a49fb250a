/*
 * jsn.h - the JSON codec, jansson in and out of the core (prefix jsn_; json_ is jansson's): the
 * decide request into a struct core_sample, and a struct core_decision into the response
 * object. (A job's state has one form, the core's binary one: core.h, State codec.)
 *
 * Files: jsn_get.c (the parsers' typed getters and error paths), jsn_sample.c (the decide
 * request), jsn_render.c (the response as a jansson object), jsn_text.c (the same response
 * printed straight to text), jsn_batch.c (batch mode, rebalance); jsn_int.h is what they share.
 *
 * May call: core, options (for the request's `config`), timeutil (RFC 3339), jansson, xmem.
 * No I/O.
 */
#ifndef GOVERNOR_JSN_H
#define GOVERNOR_JSN_H

#include <jansson.h>
#include <stdint.h>

#include "core/core.h"
#include "options/options.h"
#include "base/text.h"

/* A parse error: the HTTP status it maps to, a code, the message, the JSON path. */
struct jsn_err {
    int status;    /* 400, 409, 413, 415, 422 */
    char code[32]; /* "INVALID_ARGUMENT", "FAILED_PRECONDITION", ... */
    char message[512];
    char field[256]; /* e.g. "vertices[2].parallelism", "" when not about one field */
};

/*
 * A parsed sample: the core_sample and everything it points to (ids, inputs), owned by
 * this struct. Reusable: jsn_sample_reset keeps its buffers for the next request.
 */
struct jsn_sample {
    struct core_sample s;
    /* The request budget the parser holds the sample to (borrowed; NULL: none, for tools
     * that replay what was accepted already). Set by the caller, kept across samples. */
    const struct opt_limits *limits;
    /* internal storage */
    void *priv;
};

void jsn_sample_init(struct jsn_sample *js);
/* Forgets the parsed sample but keeps the buffers (jsn_parse_sample calls it itself). */
void jsn_sample_reset(struct jsn_sample *js);
void jsn_sample_deinit(struct jsn_sample *js);

/*
 * Parses a decide request body (borrowed). The sample borrows its strings (ids, inputs'
 * `from`, slot-sharing groups) from body, so body must outlive js's current sample and any
 * decision made from it. `now_ms` is used when `at` is absent; `running_since` absent is 0.
 * Optional fields that are null count as absent; unknown fields are ignored. Every
 * value is checked: types, parallelism >= 1 and <= max_parallelism, numbers finite and
 * >= 0 where the metric cannot be negative (a negative busy time is passed on: the core
 * counts it as 0 with a warning), busy {min <= avg <= max}, `status` a string (RUNNING in
 * any case), `at` epoch ms or RFC 3339, `running_since` not later than `at`, ids 1-128
 * chars. The request's `config` object (strings or numbers) is set into `opts`
 * at OPT_REQUEST (opts may be NULL to ignore it); a bad option is a 422 naming the key.
 * Topology errors (unknown input, duplicate id, cycle) are left to core_decide. Returns 0,
 * or -1 with *e filled.
 */
int jsn_parse_sample(json_t *body, int64_t now_ms, struct jsn_sample *js, struct opt_job *opts,
                     struct jsn_err *e);
/* What jsn_parse_sample holds a vertex to, for another reader of a sample (sample_text.c):
 * Flink's default max parallelism for parallelism p (KeyGroupRangeAssignment's
 * computeDefaultMaxParallelism: roundUpToPowerOfTwo(p + p/2) within [128, 32768], never below
 * p); whether s is a vertex id (1 to OPT_MAX_ID_LEN printable ASCII characters, no spaces);
 * how far apart (ms/s) busy min, avg and max may be the wrong way round by rounding. */
int jsn_default_max_parallelism(int p);
bool jsn_valid_id(const char *s);
#define JSN_BUSY_SLACK 1.0
/* Sets the request's `config` (body's, which jsn_parse_sample has checked) into opts at
 * OPT_REQUEST: what jsn_parse_sample does with opts, for a caller that checks the sample
 * before it copies and resolves the options. 0, or -1 with *e filled (422 naming the key). */
int jsn_apply_config(json_t *body, struct opt_job *opts, struct jsn_err *e);

/*
 * new: the decide answer object for d (decision_id is added by the caller once the
 * decision has an id). Non-finite figures become null. Dump it with JSON_REAL_PRECISION(15):
 * the core's figures are rounded to 3 decimals, and 15 digits print them as written (0.7
 * rather than jansson's default 17-digit 0.69999999999999996).
 */
json_t *jsn_render_decision(const struct core_decision *d, const char *job,
                            const char *policy_revision, const char *config_hash);
/* new: member i of d's response (core_dfields[i]; args: the texts of enum core_darg), or NULL
 * when the member is left out (an empty CORE_DF_KVS or CORE_DF_TEXTS). */
json_t *jsn_render_member(const struct core_decision *d, int i, const char *const *args);

/* new: a vertex's evaluated figures as the response shows them (the core's figure table:
 * null when undefined, a figure of a diagnosis left out when it was not made). */
json_t *jsn_render_evaluated(const struct core_evaluated *ev);
/* new (malloc'd): the same object as compact JSON text, printed directly (the bytes of
 * jarena_dump(jsn_render_evaluated(ev))), for the stored vertex rows. */
char *jsn_evaluated_text(const struct core_evaluated *ev);
/* new: the names of the constraint bits set in bits, in bit order. */
json_t *jsn_render_constraints(unsigned bits);

/* ------------------------------------------------------------------ batch -- */

/* A decide request with "mode": "BATCH" is parsed by jsn_parse_sample too: the
 * sample's batch_mode is set and its batch part filled (stages borrowed as the vertices are).
 *
 * new: the batch decision's response object, decision_id added by the caller. */
json_t *jsn_render_batch(const struct core_batch_decision *d, const char *job,
                         const char *policy_revision, const char *config_hash);
/* new: the names of the batch constraint bits set in bits. */
json_t *jsn_render_batch_constraints(unsigned bits);
/* new (malloc'd): the batch decision's figures as compact JSON text, for the stored row. */
char *jsn_batch_evaluated_text(const struct core_batch_decision *d);

/* A parsed rebalance request; strings borrowed from the body, items in a buffer
 * kept between requests. Zeroed storage is empty; jsn_rebalance_deinit releases it. */
struct jsn_rebalance {
    const struct opt_limits *limits; /* as jsn_sample's: set by the caller, NULL: none */
    int64_t at;
    const char *stage, *unit; /* NULL when absent */
    struct core_rebalance_in in;
    struct core_rebalance_item *items;
    int cap;
};
void jsn_rebalance_deinit(struct jsn_rebalance *jr);
/* Parses POST /v1/jobs/{job}/rebalance's body (borrowed, must outlive jr's items); every bad
 * field is refused naming it (negative work, a fraction above 1, a worker with no items,
 * idle_slots above OPT_MAX_IDLE_SLOTS), and more items than jr->limits allow is a 413.
 * 0, or -1 with *e filled. */
int jsn_parse_rebalance(json_t *body, int64_t now_ms, struct jsn_rebalance *jr, struct jsn_err *e);
/* new: the rebalance answer, decision_id added by the caller. */
json_t *jsn_render_rebalance(const struct jsn_rebalance *jr, const struct core_rebalance_out *o,
                             const char *job, int reason, const char *message);
/*
 * The response as text, printed directly into a buffer the caller reuses from one decision
 * to the next: the bytes jarena_dump prints of jsn_render_decision's object (with
 * "warnings" last when asked), every figure printed once. Where each
 * vertex's constraints and evaluated objects are in the text is kept too, for the stored
 * vertex rows. Zeroed storage is an empty buffer (jsn_text_init); jsn_text_deinit frees.
 */
struct jsn_text_vspan {
    size_t constraints, constraints_len; /* offsets into p */
    size_t evaluated, evaluated_len;
};

struct jsn_text {
    struct text b;                /* the text, NUL-terminated, b.n bytes */
    struct jsn_text_vspan *vspan; /* one a vertex of the last decision printed */
    int vcap;
};

void jsn_text_init(struct jsn_text *t);
void jsn_text_deinit(struct jsn_text *t);
/* Prints d's response into t (replacing what it held); job, policy_revision, config_hash
 * and warnings[i] are printed as jsn_render_decision writes them (text_json_string), and the
 * "warnings" list (last) only when with_warnings. */
void jsn_decision_text(struct jsn_text *t, const struct core_decision *d, const char *job,
                       const char *policy_revision, const char *config_hash, bool with_warnings,
                       const char *const *warnings, int n_warnings);
/* Prints into t the members of d's response that no row of the store holds (core_dfields'
 * CORE_DS_REST, and the warnings when with_warnings) as one object, as jsn_decision_text
 * prints them: what the store keeps of the response as JSON (db_write.response_json). t->b.n is
 * 0 when there are none. */
void jsn_rest_text(struct jsn_text *t, const struct core_decision *d, bool with_warnings,
                   const char *const *warnings, int n_warnings);

#endif
