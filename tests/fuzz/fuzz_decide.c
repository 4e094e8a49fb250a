/*
 * fuzz_decide.c - libFuzzer target: any bytes as a decide request body, through the same
 * steps as the server's handler (parse, layer options, resolve, decide, render, the state's
 * round trip through its binary form). A crash, a sanitizer report or a leak is a bug;
 * refusing the input is fine. One job state lives across inputs, so sequences are explored.
 */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/core.h"
#include "cron.h"
#include "json.h"
#include "options.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct core_state *st;
    static struct json_sample js;
    static struct core_decision d;
    static struct opt_job *defaults;
    if (!st) {
        st = core_state_new();
        json_sample_init(&js);
        core_decision_init(&d);
        defaults = opt_job_new();
    }
    json_error_t je;
    json_t *body = json_loadb((const char *)data, size, JSON_REJECT_DUPLICATES, &je);
    if (!body)
        return 0;
    struct opt_job *o = opt_job_clone(defaults);
    struct json_err e;
    struct core_config cfg;
    char *oerr = NULL;
    char err[512];
    static const struct core_hooks hooks = {.excluded = cron_excluded_hook};
    json_sample_reset(&js);
    if (json_parse_sample(body, 1764410400000, &js, o, &e) == 0 &&
        opt_job_resolve(o, &cfg, &oerr) == 0 && js.s.at >= core_state_last_at(st) &&
        core_decide(st, &js.s, &cfg, &hooks, &d, err, sizeof err) == 0) {
        json_t *r = json_render_decision(&d, "fuzz", "native", "0");
        char *s = json_dumps(r, JSON_COMPACT);
        free(s);
        json_decref(r);
        /* The state's binary form must decode what it encoded. */
        unsigned char *blob;
        size_t len;
        core_state_encode(st, &blob, &len);
        if (core_state_decode(blob, len, st, NULL, err, sizeof err) < 0)
            abort();
        free(blob);
    }
    free(oerr);
    opt_job_free(o);
    json_decref(body);
    return 0;
}
