/*
 * advice.c - tuning advice (see advice.h).
 */
#include "decision/advice.h"

int advice_run(const char *db, const char *job, int64_t from, int64_t to, json_t **out, char **errp)
{
    (void)db;
    (void)job;
    (void)from;
    (void)to;
    (void)errp;
    *out = json_pack("{s:[]}", "advice");
    return 0;
}
