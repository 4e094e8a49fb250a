/*
 * fuzz_api.c - libFuzzer target for the request handlers, called as the HTTP layer calls
 * them but without sockets: the input's first line is "METHOD PATH?QUERY", the rest the
 * body. Routes are found by http_route, writes committed by the writer's group commit on a
 * temporary database, as the server would. Every route with any body must answer with a
 * status, never crash or leak; the store must stay consistent (a final integrity check).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "decision/jobs.h"
#include "http/api.h"
#include "plugin/plugin.h"
#include "plugin/policies.h"
#include "http/http.h"
#include "base/jarena.h"
#include "store/writer.h"

static struct {
    bool ready;
    char path[64];
    struct db *db;
    struct jobs *jobs;
    struct opt_job *defaults;
    struct opt_server srv;
    struct api a;
    struct plugin_limits lim;
} F;

static void cleanup(void)
{
    api_deinit(&F.a);
    pol_free(F.a.pol);
    jobs_free(F.jobs);
    db_close(F.db);
    opt_job_free(F.defaults);
    opt_server_deinit(&F.srv);
    char p[80];
    unlink(F.path);
    snprintf(p, sizeof p, "%s-wal", F.path);
    unlink(p);
    snprintf(p, sizeof p, "%s-shm", F.path);
    unlink(p);
}

static void setup(void)
{
    char *err = NULL;
    jarena_install(); /* as main does */
    snprintf(F.path, sizeof F.path, "/tmp/governor-fuzz-api-%d.db", (int)getpid());
    unlink(F.path);
    opt_server_init(&F.srv);
    F.defaults = opt_job_new();
    F.db = db_open(F.path, "OFF", &err);
    if (!F.db) {
        fprintf(stderr, "fuzz_api: %s\n", err);
        abort();
    }
    F.jobs = jobs_new(F.defaults);
    F.a.db = F.db;
    F.a.jobs = F.jobs;
    F.a.srv = &F.srv;
    F.a.defaults = F.defaults;
    F.a.ready = true;
    F.a.pol = pol_new(GOVERNOR_SOURCE_DIR "/policies", &F.lim, NULL, NULL, NULL, &err);
    api_init(&F.a);
    F.ready = true;
    atexit(cleanup);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!F.ready)
        setup();
    const char *nl = memchr(data, '\n', size);
    if (!nl || nl - (const char *)data > 600)
        return 0;
    char line[640];
    memcpy(line, data, (size_t)(nl - (const char *)data));
    line[nl - (const char *)data] = '\0';
    char *sp = strchr(line, ' ');
    if (!sp)
        return 0;
    *sp = '\0';
    const char *method = line;
    char *path = sp + 1;
    char *query = strchr(path, '?');
    struct req_kv kv[8];
    int nq = 0;
    if (query) {
        *query++ = '\0';
        for (char *tok = strtok(query, "&"); tok && nq < 8; tok = strtok(NULL, "&")) {
            char *eq = strchr(tok, '=');
            kv[nq].key = tok;
            kv[nq].value = eq ? (*eq = '\0', eq + 1) : "";
            nq++;
        }
    }
    struct http_match m;
    http_route(method, path, &m);
    int (*fn)(const struct req *, struct resp *) = m.h;
    if (fn) {
        struct req q = {0};
        struct resp r = {0};
        q.api = &F.a;
        q.method = method;
        q.path = path;
        q.job = m.job;
        q.id = m.id;
        q.query = kv;
        q.n_query = nq;
        q.body = nl + 1;
        q.body_len = size - (size_t)(nl + 1 - (const char *)data);
        q.request_id = "fuzz";
        q.now_ms = 1764410400000;
        fn(&q, &r);
        if (r.write) {
            char *err = NULL;
            struct db_write *w = r.write;
            r.write = NULL;
            writer_commit_group(F.db, &w, 1, &err);
            free(err);
            api_committed(&F.a, &r, w);
            db_write_free(w);
        }
        if (r.async_start) {
            /* Work handed to a thread (sql, replay): not started here, only released. */
            if (r.async_free)
                r.async_free(r.async_ud);
            r.async_ud = NULL;
        } else if (r.status < 200 || r.status > 599) {
            abort(); /* every synchronous answer has a status */
        }
        resp_deinit(&r);
    }
    http_match_deinit(&m);
    return 0;
}
