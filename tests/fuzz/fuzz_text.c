/*
 * fuzz_text.c - libFuzzer target for the text parsers users write by hand: the first byte
 * picks one, the rest is the text: an excluded-periods list (validated, then matched at a
 * few instants in a few zones), a duration, a memory size, an option value set by key, a
 * binary state blob, and a state in the old JSON form (read by migration 008); and any bytes
 * printed as a JSON string by the answer's printer (text_json_str), which must be jansson's
 * dump of the same string byte for byte. Refusing is fine; crashing, leaking or a sanitizer
 * report is not.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "core/core.h"
#include "time/cron.h"
#include "base/text.h"
#include "options/options.h"
#include "store/statejson.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1 || size > 4096)
        return 0;
    char *s = malloc(size);
    memcpy(s, data + 1, size - 1);
    s[size - 1] = '\0';
    char *err = NULL;
    switch (data[0] % 7) {
    case 0: {
        if (cron_validate(s, &err) == 0) {
            static const char *const zones[] = {"UTC", "America/New_York", "Europe/Berlin"};
            for (int z = 0; z < 3; z++)
                for (int64_t t = 1764410400000; t < 1764410400000 + 4 * 86400000LL;
                     t += 3 * 3600000LL + 7777) {
                    bool m;
                    char *e2 = NULL;
                    cron_periods_match(s, t, zones[z], &m, &e2);
                    free(e2);
                }
        }
        break;
    }
    case 1: {
        int64_t v;
        opt_parse_duration(s, &v, &err);
        break;
    }
    case 2: {
        int64_t v;
        opt_parse_memory(s, &v, &err);
        break;
    }
    case 3: {
        /* "key=value" */
        char *eq = strchr(s, '=');
        if (eq) {
            *eq = '\0';
            struct opt_job *j = opt_job_new();
            if (opt_job_set(j, OPT_REQUEST, s, eq + 1, &err) == 0) {
                struct core_config c;
                free(err);
                err = NULL;
                opt_job_resolve(j, &c, &err);
            }
            opt_job_free(j);
        }
        break;
    }
    case 4: {
        struct core_state *st = core_state_new();
        char e[128];
        core_state_decode(data + 1, size - 1, st, NULL, e, sizeof e);
        core_state_free(st);
        break;
    }
    case 5: {
        struct core_state *st = core_state_new();
        char e[128];
        statejson_read(s, st, e, sizeof e);
        core_state_free(st);
        break;
    }
    case 6: {
        struct text t = {0};
        json_t *j = text_json_string(s);
        char *want = json_dumps(j, JSON_COMPACT | JSON_ENCODE_ANY);
        text_json_str(&t, s);
        if (!want || !t.p || strcmp(want, t.p) != 0)
            abort();
        free(want);
        json_decref(j);
        text_free(&t);
        break;
    }
    }
    free(err);
    free(s);
    return 0;
}
