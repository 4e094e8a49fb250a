/*
 * advice.h - tuning advice from a job's stored decisions (prefix advice_): GET
 * /v1/jobs/{job}/advice. Placeholder until the patterns are in.
 */
#ifndef GOVERNOR_ADVICE_H
#define GOVERNOR_ADVICE_H

#include <jansson.h>
#include <stdint.h>

int advice_run(const char *db, const char *job, int64_t from, int64_t to, json_t **out,
               char **errp);

#endif
