/*
 * policies.h - the active policy revision of a running server (prefix pol_): loads the
 * policies directory at start, reloads it on request (POST /v1/policies/reload, SIGHUP, a
 * change in the directory seen by inotify, debounced), swaps a new revision in only when all
 * of it loads, and keeps the last reload's result for GET /v1/policies. A decision takes a
 * reference to the revision it starts with (pol_acquire) and finishes on it, whatever is
 * swapped in meanwhile.
 *
 * Every revision that becomes active, and every failed reload, is handed to a callback
 * (main sends them to the writer: the policy_revisions table and a global event).
 *
 * Runs on the loop thread only. May call: plugin, log, jansson, libevent, libc.
 */
#ifndef GOVERNOR_POLICIES_H
#define GOVERNOR_POLICIES_H

#include <event2/event.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "plugin/plugin.h"

struct pol;

/* What a reload produced, for storage: revision and files_json are set when a revision
 * became active (files_json: {"path": "hash", ...}); error when it failed. Borrowed for the
 * call. */
struct pol_outcome {
    const char *revision;
    const char *files_json;
    int64_t loaded_at;
    const char *error;
    const char *trigger; /* "start", "api", "signal", "watch" */
};

/*
 * new: a manager of dir (borrowed, must outlive it). Loads it now: a directory that does not
 * exist gives an empty revision (no plugins: the native decisions, exclusion by the native
 * cron matcher) with a warning; any other load error is -1 with *errp (new) and no manager.
 * base may be NULL (no inotify watcher: tests, replay). on_change may be NULL.
 */
struct pol *pol_new(const char *dir, const struct plugin_limits *lim, struct event_base *base,
                    void (*on_change)(void *ud, const struct pol_outcome *o), void *ud,
                    char **errp);
void pol_free(struct pol *p);

/* The active revision, with a reference the caller drops with plugin_set_unref. */
struct plugin_set *pol_acquire(struct pol *p);

/* Loads the directory again; swaps the new revision in when it all loads. 0, or -1 with
 * *errp (new: the error with file:line) and the old revision still active. */
int pol_reload(struct pol *p, const char *trigger, char **errp);

/* new: {"revision", "plugins": [{name, kind, file, hash, loaded_at, priority, calls, errors,
 * time_us}], "last_reload": {"at", "ok", "error", "trigger"}} for GET /v1/policies. */
json_t *pol_describe(struct pol *p);

#endif
