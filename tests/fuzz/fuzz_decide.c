/*
 * fuzz_decide.c - libFuzzer target: any bytes as a decide request body, through the decision
 * service as the server's handler calls it (parse, layer options, resolve, decide, render,
 * the write unit), then the state's round trip through its binary form. A body with `items`
 * or a `workers` array goes in as a rebalance request too. A crash, a sanitizer report or a
 * leak is a bug; refusing the input is fine. One job state lives across inputs, so sequences
 * are explored. The server's reader without a tree (sample_text.h) reads each input too: a
 * body it takes must be one the tree takes, read to the same sample, or the target aborts.
 */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/codec.h"
#include "core/core.h"
#include "decision/decision.h"
#include "decision/jsn.h"
#include "decision/sample_text.h"
#include "options/options.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct core_state *st;
    static struct decision_buf buf;
    static struct opt_job *defaults;
    static struct jsn_sample fast, tree;
    static struct sample_text text;
    if (!st) {
        jsn_sample_init(&fast);
        jsn_sample_init(&tree);
        st = core_state_new();
        decision_buf_init(&buf);
        defaults = opt_job_new();
    }
    json_error_t je;
    json_t *body = json_loadb((const char *)data, size, JSON_REJECT_DUPLICATES, &je);
    int read = sample_text_read((const char *)data, size, 1764410400000, &fast, &text);
    if (!body) {
        if (read == 0) /* the fast reader took what is not JSON */
            abort();
        return 0;
    }
    if (read == 0) {
        struct jsn_err e;
        if (!json_is_object(body) || jsn_parse_sample(body, 1764410400000, &tree, NULL, &e) < 0 ||
            !core_codec_sample_same(&fast.s, &tree.s))
            abort();
    }
    bool advice = json_object_get(body, "items") || json_is_array(json_object_get(body, "workers"));
    struct decision_req q = {.kind = advice ? DECISION_REBALANCE : DECISION_SAMPLE,
                             .job = "fuzz",
                             .body = body,
                             .text = (const char *)data,
                             .len = size,
                             .now_ms = 1764410400000,
                             .layers = defaults,
                             .state = st,
                             .revision = "native",
                             .warnings = true};
    struct decision_res res;
    if (decision_run(&buf, &q, &res) == 0) {
        char err[512];
        char *s = json_dumps(res.response, JSON_COMPACT);
        free(s);
        json_decref(res.response);
        db_write_free(res.write);
        /* The state's binary form must decode what it encoded. */
        unsigned char *blob;
        size_t len;
        core_state_encode(st, &blob, &len);
        if (core_state_decode(blob, len, st, NULL, err, sizeof err) < 0)
            abort();
        free(blob);
    }
    json_decref(body);
    return 0;
}
