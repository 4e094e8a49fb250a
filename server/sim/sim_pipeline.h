/*
 * sim_pipeline.h - the one place where the simulator calls the decision service (prefix
 * sim_pipeline_, and sim_decide): a decide request in, the decision out, exactly as the
 * server decides it for one job (decision_run, decision.h) but in process, without HTTP and
 * without storage.
 *
 * May call: decision, core (the job's state), plugin (a reference to the set), jansson.
 * Ownership: a pipeline keeps a copy of its option layers (resolved once, as the server
 * resolves a job's) and a reference to its plugin set; it owns the job's state.
 */
#ifndef GOVERNOR_SIM_PIPELINE_H
#define GOVERNOR_SIM_PIPELINE_H

#include <jansson.h>

#include "options/options.h"

struct plugin_set;
struct sim_pipeline;

/*
 * new: one job named `job` whose options start from `layers` (the server layer: what a
 * config file and --set would give; copied), deciding with the plugins of `set` (a
 * reference is taken; NULL: native hooks only, as the server without a policies
 * directory).
 */
struct sim_pipeline *sim_pipeline_new(const char *job, const struct opt_job *layers,
                                      struct plugin_set *set);
void sim_pipeline_free(struct sim_pipeline *p);

/*
 * Decides on one sample (a decide request body; borrowed). Returns the decision as the
 * server's response object (new; without decision_id), or NULL with *errp (new) when the
 * server would have refused the sample (the message names the field).
 */
json_t *sim_decide(struct sim_pipeline *p, json_t *sample, char **errp);

#endif
