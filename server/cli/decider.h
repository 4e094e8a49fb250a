/*
 * decider.h - where `governor flink` has a sample decided (prefix decider_): a governor
 * server (POST URL/v1/jobs/{job}/metrics, bearer: the first token of a token file), or this
 * process, through the very handler `serve` runs for that route (api_decide, and so the one
 * decision service) on a store of its own: the job's state, window and history in the
 * database, the policies directory loaded as `serve` loads it (its revision stored), each
 * decision committed before its answer is returned. Either way the caller gets the status
 * and body the route answers, and keeps the retry contract itself (the same body again).
 *
 * May call: http (api_decide, api_committed, the token file), decision (jobs), store (db,
 * writer's synchronous commit), plugin (policies), options, httpc, log, jansson, xmem.
 */
#ifndef GOVERNOR_DECIDER_H
#define GOVERNOR_DECIDER_H

#include <stddef.h>
#include <stdint.h>

#include "cli/httpc.h"
#include "options/options.h"

struct decider;

/* new: decisions by the server at url, each call bounded by timeout_ms; token_file NULL: no
 * Authorization. client is borrowed. NULL + *errp (a bad URL, a token file that does not
 * load). */
struct decider *decider_remote(struct httpc *client, const char *url, const char *token_file,
                               int64_t timeout_ms, char **errp);
/* new: decisions in this process: srv->db opened (migrations applied), its jobs loaded,
 * srv->policies loaded; defaults (the server layer) and srv are borrowed for the decider's
 * life. NULL + *errp. */
struct decider *decider_local(const struct opt_server *srv, const struct opt_job *defaults,
                              char **errp);
void decider_free(struct decider *d);
/* What messages name: the server's URL, or the database. */
const char *decider_where(const struct decider *d);

/* An answer of the metrics route. Zeroed storage is empty; decider_answer_deinit frees. */
struct decider_answer {
    int status;      /* 0: no answer (error says why) */
    char *body;      /* new: the JSON text of the answer (200 or the error envelope) */
    int retry_after; /* seconds, -1: none */
    char error[512];
};

/*
 * Asks for the decision of job's sample body (JSON text, len bytes). now_ms: the clock of a
 * sample without `at` (in-process). 0 when an answer came (any status), -1 when none did
 * (a->error).
 */
int decider_decide(struct decider *d, const char *job, const char *body, size_t len, int64_t now_ms,
                   struct decider_answer *a);
void decider_answer_deinit(struct decider_answer *a);

#endif
