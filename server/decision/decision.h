/*
 * decision.h - the decision service (prefix decision_): the one way a sample becomes a
 * decision. The server's POST /v1/jobs/{job}/metrics, `governor replay`, replay against
 * history and the simulator all call decision_run; nothing else calls the core's decide.
 *
 * One call runs, in this order:
 *   1. parse the sample (jsn_parse_sample), held to the request budget (req.limits); its
 *      unknown fields found when the response lists warnings, refused under `strict`;
 *   2. a sample not after the job's last decided one (req.seen, or req.last_at): a repeat of
 *      a decided one is handed back (decision_run returns 1), anything else is a 409; and a
 *      sample earlier than the job state's last one refused (409, field "at"): both before any
 *      work on the options;
 *   3. the request's `config` laid over a copy of the job's option layers, and a candidate's
 *      keys over those (replay against history);
 *   4. resolve the effective options, or reuse the job's resolution (struct decision_cache);
 *   5. a store that cannot take the unit now (req.unwritable) refused with a 503, the last
 *      check before anything changes;
 *   6. the plugins' hooks (or the native ones), then core_decide, which updates the state
 *      (a batch sample: core_decide_batch, no hooks);
 *   7. the response (jsn_render_decision, and the warnings when asked: the sample's
 *      unknown fields, the options' ignored keys);
 *   8. when asked, the write unit of the decision (unit.h), its rows built from the decision
 *      itself, with the response printed once as text (jsn_decision_text) for decision_json
 *      and each vertex row's figures (with text_only, only as that text: the server).
 * A refusal at any step comes back in one form (struct decision_err) and changes nothing:
 * the job's state is touched only by a decision made.
 *
 * The job's state, its option layers, the policy revision, the clock and what the caller knows
 * of the job's decided samples and of its store are passed in as data: the service calls
 * nothing of its caller, and keeps nothing between calls but the caller's reusable buffers
 * (struct decision_buf) and, for a job the caller keeps, its cache (struct decision_cache).
 * The server calls it through unit_decide (unit.h), which finishes the unit with the job's
 * state.
 *
 * May call: core, jsn (the sample in, the response out), unit (the write unit's builders),
 * options, plugin (the hooks), cron (the native excluded-periods hook), jarena (printing the
 * unit's texts), db (the write unit's struct only), jansson.
 */
#ifndef GOVERNOR_DECISION_H
#define GOVERNOR_DECISION_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/core.h"
#include "store/db.h"
#include "decision/jsn.h"
#include "decision/sample_fields.h"
#include "decision/sample_text.h"
#include "options/options.h"

struct plugin_set;

/* A refusal, in the one form every caller reports. */
struct decision_err {
    int status;      /* 400, 409, 422, ...; 0: a caller's check answered the request itself */
    char code[32];   /* "INVALID_ARGUMENT", "INVALID_CONFIG", "FAILED_PRECONDITION", ... */
    char field[256]; /* the path of the field at fault ("vertices[2].parallelism"), "" if none */
    char message[1024];
    int retry_after; /* a 503: the seconds a client should wait (0: none) */
};

/* Fills e (the field may be NULL: none) and returns -1. */
int decision_refuse(struct decision_err *e, int status, const char *code, const char *field,
                    const char *fmt, ...) __attribute__((format(printf, 5, 6)));

/* A caller's buffers, reused from one decision to the next (one decision at a time). */
struct decision_buf {
    struct jsn_sample js;
    struct sample_text st; /* a body read without a tree (sample_text.h) */
    struct core_decision d;
    struct core_batch_decision bd; /* "mode": "BATCH" */
    struct jsn_rebalance jr;       /* DECISION_REBALANCE */
    struct jsn_text text;          /* the response's text (with a write unit) */
    struct jsn_text rest;          /* what no row of the store holds of it (jsn_rest_text) */
    const char **warn;             /* the response's warnings, borrowed for one decision */
    int warn_cap;
    struct sample_fields sf; /* the sample's unknown fields (with req.warnings or .strict) */
};

void decision_buf_init(struct decision_buf *b);
void decision_buf_deinit(struct decision_buf *b);

/*
 * A job its caller keeps between decisions (the server's jobs_entry, the simulator's job):
 * its option layers, resolved in place once per change of them, and the stored text of the
 * effective options of its last decision (rebuilt only when their hash changes). Zeroed
 * storage is an empty cache; decision_cache_set binds it to the job's layers, and again
 * whenever they are replaced; decision_cache_deinit releases what it holds (not the layers).
 */
struct decision_cache {
    struct opt_job *layers; /* borrowed: resolved in place, so cfg can borrow from them */
    bool resolved;
    struct core_config cfg;
    char hash[17];
    char *options_json; /* the effective options of the last decision, NULL: none yet */
    char options_hash[17];
};

void decision_cache_set(struct decision_cache *c, struct opt_job *layers);
void decision_cache_deinit(struct decision_cache *c);

/* What a request asks: a decision from a sample (streaming, or batch with "mode": "BATCH"),
 * or rebalancing advice (POST /v1/jobs/{job}/rebalance: parsed, advised, rendered and given a
 * write unit with action REBALANCE; the job's state, options, plugins and decided samples are
 * not used, only `unwritable`). */
enum decision_kind { DECISION_SAMPLE, DECISION_REBALANCE };

/* One decision to make. Everything is borrowed for the call. */
struct decision_req {
    enum decision_kind kind; /* zero: DECISION_SAMPLE */
    const char *job;
    json_t *body; /* the request body, parsed (a JSON object); NULL with parsed */
    /* The sample is in the buffer's js already, read from the body's text without a tree
     * (sample_text_read, which takes no body with options of its own). */
    bool parsed;
    /* The body as sent: stored in the write unit (input_json). NULL: no write unit. */
    const char *text;
    size_t len;
    int64_t now_ms; /* the clock: the sample's `at` when it has none */
    /* The job's option layers; the request's `config` goes over a copy of them. */
    const struct opt_job *layers;
    /* A kept job (NULL: none): its layers replace `layers`, and a request without options of
     * its own runs on them as resolved once per change. */
    struct decision_cache *cache;
    /* Keys set at OPT_SERVER here go over the request's own (NULL: none; with them the
     * cache is not used). */
    const struct opt_job *overlay;
    struct core_state *state; /* the job's state: updated in place by a decision */
    struct plugin_set *set;   /* the policy revision to decide with; NULL: native hooks only */
    /* The request budget (the server's limits); NULL: none (a replay of what was accepted). */
    const struct opt_limits *limits;
    const char *revision; /* the revision stamped when set is NULL ("native") */
    /* The response lists the warnings: the sample's unknown fields (sample_fields.h), then
     * the options' keys governor does not read. */
    bool warnings;
    /* A sample with a field governor does not read is refused (400 naming its path) instead
     * of decided with a warning (the server's strict-samples). */
    bool strict;
    /* With text: the response only as the write unit's text (decision_json), which is all
     * the server sends; res->response stays NULL. */
    bool text_only;
    /*
     * What the caller knows of the job's decided samples (step 2): with seen (`governor
     * replay`, replay against history), a sample that repeats a decided one is handed back with
     * its response (res->repeat, borrowed from seen), any other not after the last a 409 whose
     * message names seen_what ("line", "decision") with the entry's tag. Without seen but with
     * has_last (the server), a sample at or before last_at is handed back undecided
     * (res->repeat NULL) for the caller to answer from its store.
     */
    const struct decision_seen *seen;
    const char *seen_what;
    bool has_last;
    int64_t last_at;
    /* Why the store cannot take the decision's unit now (NULL: it can): a 503 with
     * retry_after, once the sample and its options are checked, before the state changes. */
    const char *unwritable;
    int retry_after;
};

/* What came of it. */
struct decision_res {
    json_t *response;        /* new: the response object, without its decision_id (NULL
                                with req.text_only) */
    struct db_write *write;  /* new: the DB_W_DECISION unit (when req.text is set); the
                                caller adds the job's state (unit_decide) */
    struct decision_err err; /* when refused */
    /* A sample not after the job's last one (decision_run returned 1): its at, and the
     * response of the decision it repeats (borrowed from req.seen; NULL: the caller's store
     * has it) */
    const char *repeat;
    int64_t repeat_at;
};

/*
 * What a caller without a store (`governor replay`, replay against history) remembers of a
 * job's decided samples, so that a sample not after the job's last one is answered as the
 * server answers it (api_decide.c): the same `at` with the same body is a repeat of that
 * decision, anything else a 409. Samples are kept in the order decided (their `at` ascending);
 * `keep` > 0 bounds how many (the oldest go), 0 keeps all.
 */
struct decision_seen {
    int n, cap, keep;
    struct decision_seen_entry {
        int64_t at;
        json_t *body;   /* the request body (a reference held) */
        char *response; /* the response as printed */
        long tag;       /* the caller's name for it (a line number, a decision id) */
    } * e;
};

void decision_seen_init(struct decision_seen *s, int keep);
void decision_seen_deinit(struct decision_seen *s);
/* Forgets every sample (a deleted job). */
void decision_seen_clear(struct decision_seen *s);
/*
 * A sample at `at` with `body` (borrowed) against what was decided: 0 when it is after the
 * last one (to be decided), 1 when it repeats a decided one (*response borrowed from s), -1
 * with a 409 in *e otherwise (the server's messages; `what` names the caller's tag, "line" or
 * "decision").
 */
int decision_seen_check(const struct decision_seen *s, int64_t at, json_t *body, const char *what,
                        const char **response, struct decision_err *e);
/* Records a decided sample (body: a reference is taken; response: copied). */
void decision_seen_add(struct decision_seen *s, int64_t at, json_t *body, const char *response,
                       long tag);

/*
 * Makes one decision (the steps above), with b's buffers. 0: res->response (and res->write)
 * are new and the state is updated. 1: the sample is not after the job's last decided one and
 * repeats it (res->repeat, res->repeat_at; step 2): nothing is decided. -1: res->err says why.
 * With 1 or -1 nothing is allocated and the state is as it was.
 */
int decision_run(struct decision_buf *b, const struct decision_req *q, struct decision_res *res);

#endif
