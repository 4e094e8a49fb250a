/*
 * api_commit.c - the completion of a reply once its write unit is back from the writer
 * (api_committed, see api.h): a decision's answer gets its id, a repeated sample the answer of
 * then, and a unit that was not stored a 503 or 500 that says so, after its job's state is
 * reloaded from the store (state, config, window and version: a unit fenced because another
 * process wrote the job first is answered 503 "conflict", and the job's next request decides
 * from what that process stored).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "base/xmem.h"
#include "decision/jobs.h"
#include "http/api.h"
#include "http/metrics.h"
#include "store/writer.h"

static void committed(struct api *a, struct resp *r, const struct db_write *w);

void api_committed(struct api *a, struct resp *r, const struct db_write *w)
{
    committed(a, r, w);
    /* A unit back from the writer may leave its job idle: jobs past max-jobs-in-memory are
     * forgotten once they are (the store holds what they hold). */
    jobs_trim(a->jobs, a->wr);
}

static void committed(struct api *a, struct resp *r, const struct db_write *w)
{
    if (w->ok) {
        if (w->kind == DB_W_REPEAT) {
            api_decide_repeat(a, w->job, w->at, w->input_json,
                              w->input_json ? strlen(w->input_json) : 0, w->last_at, r);
            return;
        }
        if (w->kind == DB_W_DECISION || w->kind == DB_W_JOB_CONFIG) {
            /* The job's row is at the unit's version now; the entry counted it when the unit
             * was made (jobs_fence), and takes it from the store once no later unit of the job
             * is in flight. */
            struct jobs_entry *e = jobs_get(a->jobs, w->job);
            if (e && (!a->wr || writer_job_pending(a->wr, w->job) == 0))
                e->version = w->new_version;
            if (w->kind == DB_W_DECISION) {
                metrics_decision(a->metrics, w->reason);
                if (e && r->gauges.set)
                    e->gauges = r->gauges;
            }
        }
        if (w->kind == DB_W_DECISION && w->decision_json && w->decision_json[0] == '{') {
            /* The stored text with decision_id first, as the decide answer has it: one copy,
             * which the connection then sends as it is (http.c). */
            char head[48];
            int h =
                snprintf(head, sizeof head, "{\"decision_id\":%lld,", (long long)w->decision_id);
            size_t n = strlen(w->decision_json + 1);
            free(r->text);
            r->text = xmalloc((size_t)h + n + 2);
            memcpy(r->text, head, (size_t)h);
            memcpy(r->text + h, w->decision_json + 1, n);
            memcpy(r->text + h + n, "\n", 2);
            r->content_type = "application/json";
        }
        return;
    }
    /* Nothing of w was stored. Without a writer (units committed synchronously) nothing else
     * of the job is in flight: reload it now. */
    if (w->job[0]) {
        if (a->wr) {
            api_job_recover(a, w->job, NULL);
        } else {
            char *err = NULL;
            if (jobs_load(a->jobs, a->db, w->job, &err) < 0) {
                log_msg(LOG_ERROR, "api", "cannot reload a job after a failed write",
                        "job=%s error=\"%s\"", w->job, err);
                free(err);
            }
        }
    }
    switch (w->fault) {
    case DB_FAULT_STORAGE: {
        int retry = 1;
        if (a->wr)
            writer_health(a->wr, NULL, 0, &retry);
        api_error(r, 503, NULL, NULL,
                  "the store cannot be written (%s); nothing was stored, retry after %d s",
                  w->error ? w->error : "unknown error", retry);
        r->retry_after = retry;
        break;
    }
    case DB_FAULT_FENCED:
        api_error(r, 503, "conflict", NULL,
                  "another governor process %s job \"%s\" first (its stored version moved); "
                  "nothing was stored, and the job is reloaded from the store: retry",
                  w->kind == DB_W_DECISION ? "decided" : "changed", w->job);
        r->retry_after = 1;
        break;
    case DB_FAULT_STALE:
        api_error(r, 503, NULL, NULL,
                  "an earlier write of job \"%s\" failed and this one was made from the state "
                  "it left; nothing was stored, retry",
                  w->job);
        r->retry_after = 1;
        break;
    default:
        api_error(r, 500, NULL, NULL, "the write could not be committed; nothing was stored");
        break;
    }
}
