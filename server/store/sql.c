/*
 * sql.c - the read-only SQL engine (see sql.h): the queue and the worker threads of
 * sql_submit, the query processes (start, the pipe protocol, the deadline, the kill), and
 * the main of a query process.
 *
 * The protocol over a query process's stdin and stdout: for PostgreSQL the engine first writes
 * the connection string as one line (never on the command line, where `ps` would show a
 * password); on start the process writes "R\n" (ready) or "E <why>\n" and exits; then, for each
 * request line {"sql": "...", "params": [...]}, it writes "<status> <length>\n" and that many bytes
 * of JSON text.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <sqlite3.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "options/options.h"
#include "store/db.h"
#include "store/sql.h"
#include "store/sql_conn.h"
#include "store/sql_json.h"
#include "store/sql_pg.h"
#include "base/xmem.h"

/* The limits without an option (those with one default to the options table's). */
#define DEF_MAX_SQL_LEN 100000
#define DEF_WORKERS     2
#define DEF_MAX_QUEUE   64
#define DEF_MAX_MEMORY  (256 * 1024 * 1024)
/* argv[2] of a query process that reads its PostgreSQL connection string from stdin. */
#define PG_FROM_STDIN "-"
/* A query process must be ready within this (it only opens the database). */
#define START_TIMEOUT_MS 30000
/* An error body is short; a result is at most max_bytes. */
#define ERROR_SLACK 4096

extern char **environ;

/* One query process. In the engine's idle list, or busy (owned by the thread running a
 * query on it, and listed so that sql_engine_stop can kill it). */
struct proc {
    pid_t pid;
    int to;            /* its stdin: requests (non-blocking) */
    int from;          /* its stdout: answers (non-blocking) */
    struct proc *next; /* in e->idle or e->busy */
};

/* One queued sql_submit. */
struct job {
    char *line; /* the request line, or NULL when refused before it ran: */
    int status; /* then the refusal */
    char *body;
    sql_done_cb done;
    void *ud;
    struct job *next;
};

struct sql_engine {
    char *path;
    struct sql_limits lim;
    atomic_bool stopping;

    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct proc *idle; /* ready, waiting for a query */
    int n_idle;
    struct proc *busy; /* starting or running a query; not yet reaped */
    int n_busy;
    struct job *head, *tail;
    int n_queued;

    pthread_t *threads;
    int n_threads;
};

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* ---- the query processes ---------------------------------------------------------------- */

enum io { IO_OK, IO_TIMEOUT, IO_GONE, IO_PROTOCOL };

/* Waits until fd is ready for events or deadline_ns passes. IO_OK, IO_TIMEOUT, IO_GONE. */
static enum io wait_fd(int fd, short events, int64_t deadline_ns)
{
    for (;;) {
        int64_t left = deadline_ns - now_ns();
        if (left <= 0)
            return IO_TIMEOUT;
        struct pollfd pf = {.fd = fd, .events = events};
        int ms = (int)((left + 999999) / 1000000);
        int n = poll(&pf, 1, ms);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return IO_GONE;
        if (n == 0)
            continue; /* the loop sees the deadline */
        if (pf.revents & events)
            return IO_OK;
        return IO_GONE; /* POLLHUP or POLLERR without data */
    }
}

/* write(2) without SIGPIPE (the engine may run in a process that does not ignore it): a
 * query process that died is an error to report, not a signal that ends the server. */
static ssize_t write_nosig(int fd, const void *p, size_t n)
{
    sigset_t pipe_set, old;
    sigemptyset(&pipe_set);
    sigaddset(&pipe_set, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
    ssize_t k = write(fd, p, n);
    int saved = errno;
    if (k < 0 && saved == EPIPE && !sigismember(&old, SIGPIPE)) {
        struct timespec zero = {0, 0};
        while (sigtimedwait(&pipe_set, NULL, &zero) < 0 && errno == EINTR)
            ;
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    errno = saved;
    return k;
}

static enum io write_all(int fd, const char *p, size_t n, int64_t deadline_ns)
{
    while (n > 0) {
        ssize_t k = write_nosig(fd, p, n);
        if (k > 0) {
            p += k;
            n -= (size_t)k;
            continue;
        }
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
            return IO_GONE;
        enum io r = wait_fd(fd, POLLOUT, deadline_ns);
        if (r != IO_OK)
            return r;
    }
    return IO_OK;
}

/* Reads exactly n bytes. */
static enum io read_all(int fd, char *p, size_t n, int64_t deadline_ns)
{
    while (n > 0) {
        ssize_t k = read(fd, p, n);
        if (k > 0) {
            p += k;
            n -= (size_t)k;
            continue;
        }
        if (k == 0)
            return IO_GONE;
        if (errno == EINTR)
            continue;
        if (errno != EAGAIN && errno != EWOULDBLOCK)
            return IO_GONE;
        enum io r = wait_fd(fd, POLLIN, deadline_ns);
        if (r == IO_GONE) {
            /* POLLHUP may come with the last bytes still readable: read them first */
            k = read(fd, p, n);
            if (k > 0) {
                p += k;
                n -= (size_t)k;
                continue;
            }
        }
        if (r != IO_OK)
            return r;
    }
    return IO_OK;
}

/* Reads one line (without its '\n') of at most cap - 1 bytes into buf, byte by byte: the
 * protocol's lines are short, and nothing after the '\n' may be consumed. */
static enum io read_line(int fd, char *buf, size_t cap, int64_t deadline_ns)
{
    size_t n = 0;
    for (;;) {
        enum io r = read_all(fd, buf + n, 1, deadline_ns);
        if (r != IO_OK)
            return r;
        if (buf[n] == '\n') {
            buf[n] = '\0';
            return IO_OK;
        }
        if (++n == cap)
            return IO_PROTOCOL;
    }
}

/* Removes p from e->busy (the caller holds e->mu). */
static void busy_remove(struct sql_engine *e, struct proc *p)
{
    for (struct proc **pp = &e->busy; *pp; pp = &(*pp)->next)
        if (*pp == p) {
            *pp = p->next;
            e->n_busy--;
            return;
        }
}

/* Removes p from the busy list, kills it if asked, reaps it and frees it. *wstatus gets
 * its wait status (-1 when unknown). After the removal sql_engine_stop cannot see p, so its
 * pid is never signalled once reaped. */
static void proc_end(struct sql_engine *e, struct proc *p, bool kill_it, int *wstatus)
{
    pthread_mutex_lock(&e->mu);
    busy_remove(e, p);
    pthread_mutex_unlock(&e->mu);
    if (kill_it)
        kill(p->pid, SIGKILL);
    close(p->to);
    close(p->from);
    int st = -1;
    while (waitpid(p->pid, &st, 0) < 0 && errno == EINTR)
        ;
    if (wstatus)
        *wstatus = st;
    free(p);
}

/* Ends an idle process: closing its stdin makes it exit; it is killed if it does not
 * within a second. */
static void proc_close_idle(struct proc *p)
{
    close(p->to);
    char c;
    if (read_all(p->from, &c, 1, now_ns() + 1000000000LL) != IO_GONE)
        kill(p->pid, SIGKILL);
    close(p->from);
    int st;
    while (waitpid(p->pid, &st, 0) < 0 && errno == EINTR)
        ;
    free(p);
}

/* Starts a query process and waits until it is ready. It is in the busy list on success.
 * NULL with *errp (new) on failure. */
static struct proc *proc_start(struct sql_engine *e, char **errp)
{
    int to[2] = {-1, -1}, from[2] = {-1, -1};
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t at;
    bool have_fa = false, have_at = false;
    struct proc *p = NULL;
    char lines[8][32];
    char why[512];

    if (pipe2(to, O_CLOEXEC) < 0 || pipe2(from, O_CLOEXEC) < 0) {
        *errp = xasprintf("sql: cannot start a query process: pipe: %s", strerror(errno));
        goto fail;
    }
    posix_spawn_file_actions_init(&fa);
    have_fa = true;
    posix_spawn_file_actions_adddup2(&fa, to[0], 0);
    posix_spawn_file_actions_adddup2(&fa, from[1], 1);
    posix_spawnattr_init(&at);
    have_at = true;
    /* Its own process group: a terminal's ^C goes to the server, which ends its queries.
     * Default signal dispositions and no blocked signal, whatever the spawning thread has. */
    sigset_t none, def;
    sigemptyset(&none);
    sigemptyset(&def);
    sigaddset(&def, SIGPIPE);
    sigaddset(&def, SIGALRM);
    sigaddset(&def, SIGTERM);
    sigaddset(&def, SIGINT);
    sigaddset(&def, SIGHUP);
    posix_spawnattr_setflags(&at, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK |
                                      POSIX_SPAWN_SETSIGDEF);
    posix_spawnattr_setpgroup(&at, 0);
    posix_spawnattr_setsigmask(&at, &none);
    posix_spawnattr_setsigdefault(&at, &def);
    snprintf(lines[0], sizeof lines[0], "%" PRId64, e->lim.timeout_ms);
    snprintf(lines[1], sizeof lines[1], "%d", e->lim.max_rows);
    snprintf(lines[2], sizeof lines[2], "%" PRId64, e->lim.max_bytes);
    snprintf(lines[3], sizeof lines[3], "%" PRId64, e->lim.max_value);
    snprintf(lines[4], sizeof lines[4], "%d", e->lim.max_sql_len);
    snprintf(lines[5], sizeof lines[5], "%" PRId64, e->lim.max_memory);
    bool pg = db_is_pg(e->path);
    char *argv[] = {"governor", SQL_CHILD_COMMAND, pg ? PG_FROM_STDIN : e->path,
                    lines[0],   lines[1],          lines[2],
                    lines[3],   lines[4],          lines[5],
                    NULL};
    p = xcalloc(1, sizeof *p);
    int rc = posix_spawn(&p->pid, "/proc/self/exe", &fa, &at, argv, environ);
    if (rc != 0) {
        *errp = xasprintf("sql: cannot start a query process: %s", strerror(rc));
        free(p);
        p = NULL;
        goto fail;
    }
    close(to[0]);
    close(from[1]);
    to[0] = from[1] = -1;
    p->to = to[1];
    p->from = from[0];
    fcntl(p->to, F_SETFL, fcntl(p->to, F_GETFL) | O_NONBLOCK);
    fcntl(p->from, F_SETFL, fcntl(p->from, F_GETFL) | O_NONBLOCK);
    pthread_mutex_lock(&e->mu);
    p->next = e->busy;
    e->busy = p;
    e->n_busy++;
    if (atomic_load(&e->stopping))
        kill(p->pid, SIGKILL);
    pthread_mutex_unlock(&e->mu);

    int64_t start_deadline = now_ns() + START_TIMEOUT_MS * 1000000LL;
    enum io r = IO_OK;
    if (pg) {
        r = write_all(p->to, e->path, strlen(e->path), start_deadline);
        if (r == IO_OK)
            r = write_all(p->to, "\n", 1, start_deadline);
    }
    if (r == IO_OK)
        r = read_line(p->from, why, sizeof why, start_deadline);
    if (r == IO_OK && strcmp(why, "R") == 0)
        goto out;
    if (r == IO_OK && why[0] == 'E' && why[1] == ' ')
        *errp = xstrdup(why + 2);
    else if (atomic_load(&e->stopping))
        *errp = xstrdup("sql: the engine is stopping");
    else
        *errp = xasprintf("sql: the query process did not start (%s)",
                          r == IO_TIMEOUT ? "timed out" : "no answer");
    proc_end(e, p, true, NULL);
    p = NULL;
    goto out;
fail:
    for (int i = 0; i < 2; i++) {
        if (to[i] >= 0)
            close(to[i]);
        if (from[i] >= 0)
            close(from[i]);
    }
out:
    if (have_fa)
        posix_spawn_file_actions_destroy(&fa);
    if (have_at)
        posix_spawnattr_destroy(&at);
    return p;
}

/* A process for one query, in the busy list: an idle one, or a new one. NULL with *errp. */
static struct proc *proc_get(struct sql_engine *e, char **errp)
{
    pthread_mutex_lock(&e->mu);
    struct proc *p = e->idle;
    if (p) {
        e->idle = p->next;
        e->n_idle--;
        p->next = e->busy;
        e->busy = p;
        e->n_busy++;
    }
    pthread_mutex_unlock(&e->mu);
    return p ? p : proc_start(e, errp);
}

/* Returns p (busy, healthy) to the idle list; ends it if enough are idle already. */
static void proc_put(struct sql_engine *e, struct proc *p)
{
    pthread_mutex_lock(&e->mu);
    busy_remove(e, p);
    if (!atomic_load(&e->stopping) && e->n_idle < e->lim.workers + 1) {
        p->next = e->idle;
        e->idle = p;
        e->n_idle++;
        p = NULL;
    }
    pthread_mutex_unlock(&e->mu);
    if (p)
        proc_close_idle(p);
}

/*
 * Starts query processes until there is one per worker (idle or busy), so that a query
 * never waits for a process to start when the workers are not all busy: at the engine's
 * start, and after a query whose process was killed. 0, or -1 with *errp (new).
 */
static int proc_refill(struct sql_engine *e, char **errp)
{
    for (;;) {
        pthread_mutex_lock(&e->mu);
        bool enough = atomic_load(&e->stopping) || e->n_idle + e->n_busy >= e->lim.workers;
        pthread_mutex_unlock(&e->mu);
        if (enough)
            return 0;
        struct proc *p = proc_start(e, errp);
        if (!p)
            return -1;
        proc_put(e, p);
    }
}

/* new: the text of the error body of an engine failure. */
static char *dead_text(struct sql_engine *e, int wstatus, int *status)
{
    if (atomic_load(&e->stopping)) {
        *status = 503;
        return sql_json_error_text("UNAVAILABLE", NULL, "the server is shutting down");
    }
    if (wstatus != -1 && WIFSIGNALED(wstatus) && WTERMSIG(wstatus) == SIGALRM) {
        *status = 400;
        return sql_json_error_text("DEADLINE_EXCEEDED", "sql",
                                   "query exceeded the %" PRId64 " ms time limit",
                                   e->lim.timeout_ms);
    }
    *status = 500;
    if (wstatus != -1 && WIFSIGNALED(wstatus))
        return sql_json_error_text("INTERNAL", NULL, "the query process was killed by signal %d",
                                   WTERMSIG(wstatus));
    return sql_json_error_text("INTERNAL", NULL, "the query process ended (status %d)",
                               wstatus != -1 && WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : -1);
}

/* Runs one request line in a query process; the answer's text in *body, the status as the
 * return value. */
static int run_line(struct sql_engine *e, const char *line, char **body)
{
    char *err = NULL, head[64];
    int status = 500, wstatus = -1;
    *body = NULL;
    if (atomic_load(&e->stopping)) {
        *body = sql_json_error_text("UNAVAILABLE", NULL, "the server is shutting down");
        return 503;
    }
    struct proc *p = proc_get(e, &err);
    if (!p) {
        if (atomic_load(&e->stopping)) {
            status = 503;
            *body = sql_json_error_text("UNAVAILABLE", NULL, "the server is shutting down");
        } else {
            *body = sql_json_error_text("INTERNAL", NULL, "%s", err);
        }
        free(err);
        return status;
    }
    /* The query process stops itself at timeout_ms; past the grace it is killed. */
    int64_t deadline = now_ns() + (e->lim.timeout_ms + SQL_GRACE_MS) * 1000000;
    enum io r = write_all(p->to, line, strlen(line), deadline);
    if (r == IO_OK)
        r = read_line(p->from, head, sizeof head, deadline);
    long long len = -1;
    if (r == IO_OK) {
        char *end = NULL;
        status = (int)strtol(head, &end, 10);
        if (end && *end == ' ')
            len = strtoll(end + 1, &end, 10);
        if (status < 200 || status > 599 || len < 0 || !end || *end ||
            len > e->lim.max_bytes + ERROR_SLACK)
            r = IO_PROTOCOL;
    }
    if (r == IO_OK) {
        *body = xmalloc((size_t)len + 1);
        r = read_all(p->from, *body, (size_t)len, deadline);
        (*body)[len] = '\0';
    }
    if (r == IO_OK) {
        proc_put(e, p);
        return status;
    }
    free(*body);
    *body = NULL;
    proc_end(e, p, true, &wstatus);
    if (r == IO_TIMEOUT && !atomic_load(&e->stopping)) {
        *body =
            sql_json_error_text("DEADLINE_EXCEEDED", "sql",
                                "query exceeded the %" PRId64 " ms time limit", e->lim.timeout_ms);
        return 400;
    }
    if (r == IO_PROTOCOL && !atomic_load(&e->stopping)) {
        *body = sql_json_error_text("INTERNAL", NULL, "the query process answered garbage");
        return 500;
    }
    *body = dead_text(e, wstatus, &status);
    return status;
}

/* new: the request line of a query, or NULL with *body and *status set (refused). */
static char *request_line(const char *sql, json_t *params, char **body, int *status)
{
    if (!sql) {
        *status = 400;
        *body = sql_json_error_text("INVALID_ARGUMENT", "sql", "sql must be a string");
        return NULL;
    }
    json_t *s = json_string(sql);
    if (!s) {
        *status = 400;
        *body = sql_json_error_text("INVALID_ARGUMENT", "sql", "sql must be valid UTF-8");
        return NULL;
    }
    json_t *req = json_object();
    json_object_set_new(req, "sql", s);
    if (params)
        json_object_set(req, "params", params);
    char *text = json_dumps(req, JSON_COMPACT);
    json_decref(req);
    if (!text)
        xmem_oom(); /* jansson is out of memory */
    size_t n = strlen(text);
    char *line = xmalloc(n + 2);
    memcpy(line, text, n);
    memcpy(line + n, "\n", 2);
    free(text);
    return line;
}

int sql_run(struct sql_engine *e, const char *sql, json_t *params, char **body, int *status)
{
    char *line = request_line(sql, params, body, status);
    if (line) {
        *status = run_line(e, line, body);
        free(line);
    }
    return *status == 200 ? 0 : -1;
}

/* ---- workers -------------------------------------------------------------------------- */

static void job_free(struct job *j)
{
    free(j->line);
    free(j->body);
    free(j);
}

static void *worker_main(void *arg)
{
    struct sql_engine *e = arg;
    for (;;) {
        pthread_mutex_lock(&e->mu);
        while (!e->head && !atomic_load(&e->stopping))
            pthread_cond_wait(&e->cv, &e->mu);
        struct job *j = e->head;
        if (j) {
            e->head = j->next;
            if (!e->head)
                e->tail = NULL;
            e->n_queued--;
        }
        pthread_mutex_unlock(&e->mu);
        if (!j)
            return NULL; /* stopping and nothing left */
        char *body = j->body;
        int status = j->status;
        j->body = NULL;
        if (j->line)
            status = run_line(e, j->line, &body); /* 503 once stopping */
        j->done(j->ud, status, body);
        job_free(j);
        /* after the answer, not before it: a replacement for a killed process */
        char *err = NULL;
        proc_refill(e, &err);
        free(err);
    }
}

int sql_submit(struct sql_engine *e, const char *sql, json_t *params, sql_done_cb done, void *ud)
{
    struct job *j = xcalloc(1, sizeof *j);
    /* a refusal is still answered once, by a worker, like any other query */
    j->line = request_line(sql, params, &j->body, &j->status);
    j->done = done;
    j->ud = ud;
    pthread_mutex_lock(&e->mu);
    if (atomic_load(&e->stopping) || e->n_queued >= e->lim.max_queue) {
        pthread_mutex_unlock(&e->mu);
        job_free(j);
        return -1;
    }
    if (e->tail)
        e->tail->next = j;
    else
        e->head = j;
    e->tail = j;
    e->n_queued++;
    pthread_cond_signal(&e->cv);
    pthread_mutex_unlock(&e->mu);
    return 0;
}

/* ---- the engine ----------------------------------------------------------------------- */

struct sql_engine *sql_engine_new(const char *db_path, const struct sql_limits *lim, char **errp)
{
    if (db_is_pg(db_path) && strpbrk(db_path, "\r\n")) {
        /* it goes to the query process as one line */
        *errp = xstrdup("sql: the PostgreSQL connection string holds a line break");
        return NULL;
    }
    struct sql_engine *e = xcalloc(1, sizeof *e);
    struct opt_server def;
    opt_server_init(&def);
    if (lim)
        e->lim = *lim;
    if (e->lim.timeout_ms <= 0)
        e->lim.timeout_ms = def.sql_timeout_ms;
    if (e->lim.max_rows <= 0)
        e->lim.max_rows = def.sql_max_rows;
    if (e->lim.max_bytes <= 0)
        e->lim.max_bytes = def.sql_max_bytes;
    if (e->lim.max_value <= 0)
        e->lim.max_value = def.sql_max_value;
    opt_server_deinit(&def);
    if (e->lim.max_sql_len <= 0)
        e->lim.max_sql_len = DEF_MAX_SQL_LEN;
    if (e->lim.workers <= 0)
        e->lim.workers = DEF_WORKERS;
    if (e->lim.max_queue <= 0)
        e->lim.max_queue = DEF_MAX_QUEUE;
    if (e->lim.max_memory <= 0)
        e->lim.max_memory = DEF_MAX_MEMORY;
    e->path = xstrdup(db_path);
    atomic_init(&e->stopping, false);
    pthread_mutex_init(&e->mu, NULL);
    pthread_cond_init(&e->cv, NULL);

    /* one process per worker up front; the first reports a database that cannot open */
    if (proc_refill(e, errp) < 0)
        goto fail;

    e->threads = xmalloc(sizeof *e->threads * (size_t)e->lim.workers);
    for (int i = 0; i < e->lim.workers; i++) {
        int rc = pthread_create(&e->threads[i], NULL, worker_main, e);
        if (rc != 0) {
            *errp = xasprintf("sql: cannot start a worker thread: %s", strerror(rc));
            goto fail;
        }
        e->n_threads++;
    }
    return e;
fail:
    sql_engine_free(e);
    return NULL;
}

void sql_engine_stop(struct sql_engine *e)
{
    if (!e)
        return;
    pthread_mutex_lock(&e->mu);
    atomic_store(&e->stopping, true);
    pthread_cond_broadcast(&e->cv);
    /* Not yet reaped (see proc_end), so the pids are still theirs. */
    for (struct proc *p = e->busy; p; p = p->next)
        kill(p->pid, SIGKILL);
    pthread_mutex_unlock(&e->mu);
}

void sql_engine_free(struct sql_engine *e)
{
    if (!e)
        return;
    sql_engine_stop(e);
    for (int i = 0; i < e->n_threads; i++)
        pthread_join(e->threads[i], NULL);
    /* Workers drain the queue before they exit; with no worker (a failed start) nothing
     * was ever queued. A sql_run of another thread may not overlap with this call. */
    while (e->idle) {
        struct proc *p = e->idle;
        e->idle = p->next;
        proc_close_idle(p);
    }
    pthread_cond_destroy(&e->cv);
    pthread_mutex_destroy(&e->mu);
    free(e->threads);
    free(e->path);
    free(e);
}

/* ---- a query process ------------------------------------------------------------------ */

/* Arms (ms > 0) or disarms (0) the process's own alarm: SIGALRM's default action ends it. */
static void alarm_ms(int64_t ms)
{
    struct itimerval it = {{0, 0}, {(time_t)(ms / 1000), (suseconds_t)(ms % 1000) * 1000}};
    setitimer(ITIMER_REAL, &it, NULL);
}

static int64_t arg_i64(const char *s)
{
    char *end = NULL;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    return errno || !end || *end || v <= 0 ? -1 : (int64_t)v;
}

int sql_child_main(int argc, char **argv)
{
    if (argc != 9) {
        fprintf(stderr, "%s: for the SQL engine only\n", argv[0]);
        return 2;
    }
    /* Nothing of the server's but the pipes: no listening socket, no database handle. */
    close_range(3, ~0U, 0);
    struct sql_conn_limits lim = {
        .timeout_ms = arg_i64(argv[3]),
        .max_rows = (int)arg_i64(argv[4]),
        .max_bytes = arg_i64(argv[5]),
        .max_value = arg_i64(argv[6]),
        .max_sql_len = (int)arg_i64(argv[7]),
        .max_memory = arg_i64(argv[8]),
    };
    if (lim.timeout_ms < 0 || lim.max_rows < 0 || lim.max_bytes < 0 || lim.max_value < 0 ||
        lim.max_sql_len < 0 || lim.max_memory < 0) {
        printf("E sql: bad settings of the query process\n");
        return 2;
    }
    char *err = NULL;
    struct sql_conn *c = NULL;
    struct sql_pg *pgc = NULL;
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    if (strcmp(argv[2], PG_FROM_STDIN) == 0) {
        /* the connection string: the first line of stdin */
        n = getline(&line, &cap, stdin);
        if (n > 0 && line[n - 1] == '\n')
            line[n - 1] = '\0';
        if (n <= 0)
            err = xstrdup("sql: no connection string");
        else
            pgc = sql_pg_open(line, &lim, &err);
    } else {
        sqlite3_hard_heap_limit64(lim.max_memory);
        c = sql_conn_open(argv[2], &lim, &err);
    }
    if (!c && !pgc) {
        for (char *q = err; *q; q++)
            if (*q == '\n' || *q == '\r')
                *q = ' ';
        printf("E %s\n", err);
        free(err);
        free(line);
        return 1;
    }
    fputs("R\n", stdout);
    fflush(stdout);
    int rc = 0;
    while ((n = getline(&line, &cap, stdin)) > 0) {
        json_t *req = json_loadb(line, (size_t)n, 0, NULL);
        char *body = NULL;
        size_t len = 0;
        /* Past the engine's own deadline the server kills this process; this alarm is for
         * a server that is gone. */
        alarm_ms(lim.timeout_ms + SQL_GRACE_MS + 1000);
        int status;
        if (!json_is_object(req)) {
            status = 500;
            body = sql_json_error_text("INTERNAL", NULL, "the query process got garbage");
            len = strlen(body);
        } else {
            const char *sql = json_string_value(json_object_get(req, "sql"));
            json_t *params = json_object_get(req, "params");
            status = pgc ? sql_pg_run(pgc, sql, params, &body, &len)
                         : sql_conn_run(c, sql, params, &body, &len);
        }
        printf("%d %zu\n", status, len);
        fwrite(body, 1, len, stdout);
        int bad = fflush(stdout) != 0 || ferror(stdout);
        alarm_ms(0);
        free(body);
        json_decref(req);
        if (bad) {
            rc = 1;
            break;
        }
    }
    free(line);
    sql_conn_close(c);
    sql_pg_close(pgc);
    return rc;
}
