/*
 * main.c - wires the modules: argv (cli) -> the sub-command. For `serve`: open the store
 * (migrations), load the jobs, start the writer, the SQL engine (POST /v1/sql) and audit
 * retention, bind HTTP, run the loop; on SIGTERM or SIGINT stop accepting and queueing
 * retention rounds, wait until every accepted write has committed and every asynchronous
 * request (SQL, replay) has been answered, then shut down in reverse order. It holds no logic
 * of its own.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sys/resource.h>

#include <event2/event.h>
#include <event2/thread.h>

#include "http/api.h"
#include "decision/unit.h"
#include "cli/cli.h"
#include "cli/flink.h"
#include "cli/reference.h"
#include "store/db.h"
#include "http/http.h"
#include "decision/jobs.h"
#include "base/jarena.h"
#include "base/log.h"
#include "http/metrics.h"
#include "plugin/plugin.h"
#include "plugin/policies.h"
#include "cli/replay.h"
#include "store/retention.h"
#include "sim/sim.h"
#include "store/sql.h"
#include "store/writer.h"
#include "base/xmem.h"

struct serve {
    struct event_base *base;
    struct api *api;
    struct db *db; /* the loop's connection */
    struct http *http;
    struct writer *wr;
    struct retention *ret;
    struct event *drain;
    bool stopping;
};

/* Every 10 ms while stopping: leave the loop once nothing waits for a commit. */
static void drain_cb(evutil_socket_t fd, short what, void *arg)
{
    struct serve *s = arg;
    (void)fd;
    (void)what;
    if (http_deferred(s->http) == 0 && writer_pending(s->wr) == 0)
        event_base_loopbreak(s->base);
}

static void signal_cb(evutil_socket_t sig, short what, void *arg)
{
    struct serve *s = arg;
    (void)what;
    if (s->stopping)
        return;
    s->stopping = true;
    log_msg(LOG_INFO, "main", "stopping", "signal=%d", (int)sig);
    http_stop_accepting(s->http);
    retention_stop(s->ret);
    /* A running query is killed (503), not waited for: it may run up to its limit. */
    sql_engine_stop(s->api->sql);
    struct timeval tv = {0, 10000};
    event_add(s->drain, &tv);
}

/* A stored policy change has been committed (or not): only the log needs to know. */
static void policy_stored_cb(struct db_write *w, void *ud)
{
    (void)ud;
    if (!w->ok)
        log_msg(LOG_ERROR, "main", "cannot store a policy revision", "revision=%s",
                w->revision ? w->revision : "-");
    db_write_free(w);
}

/* A revision became active, or a reload failed: the policy_revisions table and an event. */
static void policy_changed(void *ud, const struct pol_outcome *o)
{
    struct serve *s = ud;
    metrics_reload(s->api->metrics, o->error == NULL);
    struct db_write *w = unit_policy(o);
    if (strcmp(o->trigger, "start") == 0 && s->db) {
        /* At start, before anything is served: stored at once, so that the database is
         * settled when the first request arrives. */
        char *err = NULL;
        if (db_begin(s->db, &err) < 0 || db_write_apply(s->db, w, &err) < 0 ||
            db_commit(s->db, &err) < 0) {
            db_rollback(s->db);
            log_msg(LOG_ERROR, "main", "cannot store the policy revision", "error=\"%s\"",
                    err ? err : "");
        }
        free(err);
        db_write_free(w);
        return;
    }
    writer_submit(s->wr, w, policy_stored_cb, NULL);
}

static void sighup_cb(evutil_socket_t sig, short what, void *arg)
{
    struct api *api = arg;
    char *err = NULL;
    (void)sig;
    (void)what;
    pol_reload(api->pol, "signal", &err);
    free(err);
}

/*
 * Raises the soft limit on open descriptors to the hard limit: each client connection holds
 * one (two while it drains after a refusal), and the default soft limit (often 1024) would
 * refuse connections long before memory runs short. Logs the limit in force.
 */
static void raise_nofile(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
        return;
    rlim_t was = rl.rlim_cur;
    if (rl.rlim_cur != rl.rlim_max) {
        rlim_t want = rl.rlim_max;
        if (want == RLIM_INFINITY)
            want = 1048576; /* the kernel refuses more than fs.nr_open (1048576 by default) */
        struct rlimit up = {want, rl.rlim_max};
        if (setrlimit(RLIMIT_NOFILE, &up) < 0) {
            log_msg(LOG_WARN, "main", "cannot raise the descriptor limit",
                    "nofile=%llu hard=%llu error=\"%s\"", (unsigned long long)rl.rlim_cur,
                    (unsigned long long)rl.rlim_max, strerror(errno));
            return;
        }
        rl.rlim_cur = want;
    }
    log_msg(LOG_INFO, "main", "descriptor limit", "nofile=%llu was=%llu",
            (unsigned long long)rl.rlim_cur, (unsigned long long)was);
}

static int serve(struct cli *c)
{
    struct serve s = {0};
    struct api api = {0};
    struct db *db = NULL;
    struct jobs *jobs = NULL;
    struct event *sigterm = NULL, *sigint = NULL, *sighup = NULL;
    struct sql_engine *sql = NULL;
    char *err = NULL;
    int rc = 1;

    int lvl = log_level_parse(c->srv.log_level ? c->srv.log_level : "info");
    if (lvl >= 0)
        log_min_level = (enum log_level)lvl;
    signal(SIGPIPE, SIG_IGN);
    raise_nofile();
    evthread_use_pthreads();
    if (!(s.base = event_base_new())) {
        err = xstrdup("cannot create the event loop");
        goto out;
    }
    if (!(db = db_open(c->srv.db, c->srv.synchronous, &err)))
        goto out;
    jobs = jobs_new(c->defaults);
    jobs_set_max(jobs, c->srv.max_jobs_in_memory);
    if (jobs_load(jobs, db, NULL, &err) < 0)
        goto out;
    if (!(s.wr = writer_new(s.base, c->srv.db, c->srv.synchronous, c->srv.max_batch,
                            c->srv.wal_max_bytes, &err)))
        goto out;
    struct plugin_limits plim;
    plugin_limits_from(&plim, &c->srv);
    s.db = db;
    s.api = &api;
    api.metrics = metrics_new();
    api.wr = s.wr;
    if (!(api.pol = pol_new(c->srv.policies, &plim, s.base, policy_changed, &s, &err)))
        goto out;
    struct sql_limits lim = {.timeout_ms = c->srv.sql_timeout_ms,
                             .max_rows = c->srv.sql_max_rows,
                             .max_bytes = c->srv.sql_max_bytes,
                             .max_value = c->srv.sql_max_value};
    if (!(sql = sql_engine_new(c->srv.sql_db ? c->srv.sql_db : c->srv.db, &lim, &err)))
        goto out;
    s.ret =
        retention_new(s.base, s.wr, c->srv.audit_retention_ms, c->srv.sample_retention_ms, 0, 500);
    api.sql = sql;
    api.db = db;
    api.jobs = jobs;
    api.srv = &c->srv;
    api.defaults = c->defaults;
    api_init(&api);
    if (!(s.http = http_new(s.base, &api, s.wr, &c->srv, &err)))
        goto out;
    api.ready = true;
    s.drain = event_new(s.base, -1, EV_PERSIST, drain_cb, &s);
    sigterm = evsignal_new(s.base, SIGTERM, signal_cb, &s);
    sigint = evsignal_new(s.base, SIGINT, signal_cb, &s);
    sighup = evsignal_new(s.base, SIGHUP, sighup_cb, &api);
    event_add(sigterm, NULL);
    event_add(sigint, NULL);
    event_add(sighup, NULL);
    log_msg(LOG_INFO, "main", "started", "db=%s jobs=%d synchronous=%s max_batch=%d", c->srv.db,
            jobs_count(jobs), c->srv.synchronous, c->srv.max_batch);
    event_base_dispatch(s.base);
    rc = 0;
out:
    if (err) {
        char qerr[1024];
        log_msg(LOG_ERROR, "main", "cannot serve", "error=%s", log_quote(qerr, sizeof qerr, err));
        free(err);
    }
    api.ready = false;
    retention_stop(s.ret);
    if (s.wr) {
        struct writer_stats st;
        writer_get_stats(s.wr, &st);
        writer_free(s.wr); /* commits what is queued and answers it */
        log_msg(LOG_INFO, "main", "stopped", "commits=%llu units=%llu max_group=%llu",
                (unsigned long long)st.commits, (unsigned long long)st.units,
                (unsigned long long)st.max_group);
    }
    retention_free(s.ret);
    sql_engine_free(sql);
    http_free(s.http);
    if (sighup)
        event_free(sighup);
    if (sigint)
        event_free(sigint);
    if (sigterm)
        event_free(sigterm);
    if (s.drain)
        event_free(s.drain);
    if (api.srv)
        api_deinit(&api);
    pol_free(api.pol);
    metrics_free(api.metrics);
    jobs_free(jobs);
    db_close(db);
    if (s.base)
        event_base_free(s.base);
    return rc;
}

int main(int argc, char **argv)
{
    /* A query process of the SQL engine (sql.h), started by the server itself. */
    if (argc > 1 && strcmp(argv[1], SQL_CHILD_COMMAND) == 0)
        return sql_child_main(argc, argv);
    jarena_install(); /* before any jansson allocation */
    struct cli c;
    char *err = NULL;
    int rc = 0;
    if (cli_parse(argc, argv, &c, &err) < 0) {
        fprintf(stderr, "governor: %s\n", err);
        free(err);
        if (c.cmd == CLI_SERVE || c.cmd == CLI_OPTIONS || c.cmd == CLI_REFERENCE)
            fprintf(stderr, "(governor %s --help)\n", argv[1]);
        else
            cli_usage(stderr);
        cli_deinit(&c);
        return 2;
    }
    switch (c.cmd) {
    case CLI_HELP:
        cli_usage(stdout);
        break;
    case CLI_SERVE_HELP:
        cli_serve_usage(stdout);
        break;
    case CLI_OPTIONS_HELP:
        cli_options_usage(stdout);
        break;
    case CLI_REFERENCE_HELP:
        cli_reference_usage(stdout);
        break;
    case CLI_VERSION:
        printf("governor %s\n", GOVERNOR_VERSION);
        break;
    case CLI_OPTIONS:
        opt_print_table(stdout);
        break;
    case CLI_REFERENCE:
        rc = cli_print_reference(stdout);
        break;
    case CLI_SERVE:
        rc = serve(&c);
        break;
    case CLI_REPLAY:
        rc = replay_main(argc - 1, argv + 1);
        break;
    case CLI_TEST:
        rc = plugin_test_main(argc - 1, argv + 1);
        break;
    case CLI_SIMULATE:
        rc = sim_main(argc - 1, argv + 1);
        break;
    case CLI_FLINK:
        rc = flink_main(argc - 1, argv + 1);
        break;
    }
    cli_deinit(&c);
    return rc;
}
