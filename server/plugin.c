/*
 * plugin.c - the Lua host (see plugin.h): loading a policies directory into a revision,
 * the limits of every call (count hook: instruction budget and wall-clock deadline; a
 * capped allocator per state), protected calls with file:line messages, reference
 * counting, and the four hooks of struct core_hooks. The sandbox's library is in
 * plugin_api.c.
 *
 * Every use of the Lua API that may allocate happens inside a protected call (a C
 * trampoline run by lua_pcall), so running out of the memory cap is an error of that call,
 * never a panic.
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <jansson.h>
#include <lauxlib.h>
#include <lualib.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "cron.h"
#include "log.h"
#include "plugin_int.h"
#include "xmem.h"

#define DEFAULT_INSTRUCTIONS          1000000
#define DEFAULT_TIMEOUT_MS            100
#define DEFAULT_MEMORY                (64 * 1024 * 1024)
#define DEFAULT_DECISION_INSTRUCTIONS 10000000
#define DEFAULT_DECISION_TIMEOUT_MS   100
#define HOOK_STEP                     1000 /* instructions between two count-hook checks */
#define LOAD_DEADLINES                10   /* a load's deadline, in decision deadlines */
#define MAX_FILE_BYTES                (1024 * 1024)

static const char *const kind_names[] = {"exclusion", "evaluator", "executor", "alignment"};
static const char *const hook_names[] = {"excluded", "evaluate", "execute", "align"};
static const char *const kind_prefix[] = {
    NULL,
    "job.autoscaler.metrics.custom-evaluator.",
    "job.autoscaler.scaling.custom-executor.",
    "job.autoscaler.scaling.parallelism-alignment.mode.",
};

struct plugin_call {
    struct plugin_set *set;
    const char *job;
    const struct opt_job *opts;
    const struct core_state *st;
    const struct core_sample *sm;
    const char **exec_sorted;
    int ref_config; /* LUA_NOREF until first built */
    int ref_job;
    /* every hook call of this decision, for the plugin_calls table */
    int n_rec, cap_rec;
    struct plugin_record *rec;
    /* the decision's share of the limits; the calls it skipped have one record */
    struct plugin__batch batch;
    int skip_rec; /* index of that record, -1 until a call is skipped */
};

/* ------------------------------------------------------------- helpers -- */

void plugin__fnv_hex(const void *data, size_t len, char out[17])
{
    uint64_t h = 1469598103934665603ull;
    const unsigned char *p = data;
    for (size_t i = 0; i < len; i++) {
        h ^= p[i];
        h *= 1099511628211ull;
    }
    snprintf(out, 17, "%016llx", (unsigned long long)h);
}

int64_t plugin__now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int64_t imax64(int64_t a, int64_t b)
{
    return a > b ? a : b;
}

/* t0 + ms milliseconds in ns, saturating (a limit of "1000000 d" must not wrap around). */
static int64_t after_ms(int64_t t0, int64_t ms)
{
    return ms > (INT64_MAX - t0) / 1000000 ? INT64_MAX : t0 + ms * 1000000;
}

static int64_t wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void plugin_limits_from(struct plugin_limits *l, const struct opt_server *srv)
{
    l->instructions = srv ? srv->plugin_instructions : 0;
    l->timeout_ms = srv ? srv->plugin_timeout_ms : 0;
    l->decision_instructions = srv ? srv->plugin_decision_instructions : 0;
    l->decision_timeout_ms = srv ? srv->plugin_decision_timeout_ms : 0;
    l->memory_bytes = srv ? srv->plugin_memory_bytes : 0;
}

void plugin_limits_offline(struct plugin_limits *l, const struct opt_server *srv)
{
    plugin_limits_from(l, srv);
    l->timeout_ms = PLUGIN_OFFLINE_TIMEOUT_MS;
    l->decision_timeout_ms = PLUGIN_OFFLINE_TIMEOUT_MS;
}

const char *plugin_kind_name(enum plugin_kind k)
{
    return (unsigned)k < 4 ? kind_names[k] : "?";
}

struct plugin_set *plugin__set(lua_State *L)
{
    return *(struct plugin_set **)lua_getextraspace(L);
}

const struct core_state *plugin__call_state(const struct plugin_call *c)
{
    return c->st;
}

/* ----------------------------------------------------------- the limits -- */

/*
 * Where the limits are checked: the count hook (every HOOK_STEP VM instructions, and at
 * every instruction once a call has been stopped, so nothing a plugin left pending, such as
 * a to-be-closed variable's __close, runs on); plugin__charge, which every library function
 * calls before it does work proportional to its arguments (plugin_api.c); the allocator,
 * which charges what a call allocates; and the watchdog below for the deadline.
 */

static void count_hook(lua_State *L, lua_Debug *ar);

/* Every further instruction of the running call raises again. */
static void stick(lua_State *L)
{
    lua_sethook(L, count_hook, LUA_MASKCOUNT, 1);
}

/*
 * The watchdog. One VM instruction can take milliseconds (the string-to-number conversion
 * of a 60 MB string as a for loop's limit, a concatenation of two 30 MB strings), so a loop
 * of them would run seconds past the deadline before the count hook next looks at the
 * clock. A per-thread POSIX timer raises WD_SIGNAL at the deadline on the thread running the
 * call; the handler makes the hook run at the very next instruction (lua_sethook may be
 * called from a signal handler: lua.c stops a script on SIGINT the same way).
 */
#ifndef sigev_notify_thread_id
#define sigev_notify_thread_id _sigev_un._tid
#endif
#define WD_SIGNAL (SIGRTMIN + 1)

static _Thread_local lua_State *volatile wd_L; /* the state running a call on this thread */
static pthread_once_t wd_once = PTHREAD_ONCE_INIT;
static pthread_key_t wd_key; /* this thread's timer, deleted when the thread ends */
static bool wd_ok;

static void wd_signal(int sig)
{
    (void)sig;
    lua_State *L = wd_L;
    if (L)
        stick(L);
}

static void wd_timer_free(void *p)
{
    timer_delete(*(timer_t *)p);
    free(p);
}

static void wd_init(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = wd_signal;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    wd_ok = sigaction(WD_SIGNAL, &sa, NULL) == 0 && pthread_key_create(&wd_key, wd_timer_free) == 0;
    if (!wd_ok)
        log_msg(LOG_WARN, "plugin", "no deadline watchdog: the count hook alone checks the clock",
                "error=\"%s\"", strerror(errno));
}

/* This thread's timer (created on first use), or NULL when there is none. */
static timer_t *wd_timer(void)
{
    pthread_once(&wd_once, wd_init);
    if (!wd_ok)
        return NULL;
    timer_t *t = pthread_getspecific(wd_key);
    if (t)
        return t;
    t = xmalloc(sizeof *t);
    struct sigevent ev;
    memset(&ev, 0, sizeof ev);
    ev.sigev_notify = SIGEV_THREAD_ID;
    ev.sigev_signo = WD_SIGNAL;
    ev.sigev_notify_thread_id = (pid_t)syscall(SYS_gettid);
    if (timer_create(CLOCK_MONOTONIC, &ev, t) < 0) {
        log_msg(LOG_WARN, "plugin", "no deadline watchdog on this thread", "error=\"%s\"",
                strerror(errno));
        free(t);
        return NULL;
    }
    pthread_setspecific(wd_key, t);
    return t;
}

/* When this thread's timer fires (CLOCK_MONOTONIC), 0 when disarmed. The calls of one
 * decision share its deadline, so the timer is armed once for them (a system call per
 * call would double the cost of a short one) and disarmed when the decision ends. */
static _Thread_local int64_t wd_at;

/* Arms this thread's timer at deadline_ns, or disarms it (0). */
static void wd_set(int64_t deadline_ns)
{
    if (deadline_ns == wd_at)
        return;
    timer_t *t = wd_timer();
    if (!t)
        return;
    struct itimerspec it;
    memset(&it, 0, sizeof it);
    it.it_value.tv_sec = deadline_ns / 1000000000;
    it.it_value.tv_nsec = deadline_ns % 1000000000;
    if (timer_settime(*t, deadline_ns ? TIMER_ABSTIME : 0, &it, NULL) == 0)
        wd_at = deadline_ns;
}

/*
 * The allocator's share of the limits: what a call allocates is charged like the bytes a
 * library function touches, and the deadline is looked at every CLOCK_BYTES. When a limit
 * is reached here (the memory cap included) the call is stopped at its next instruction:
 * the allocation itself does not fail for the budget or the deadline, and nothing fails
 * after a stop only because of it, since every failed allocation costs Lua a full
 * emergency collection (after a stop, pending __close handlers would each pay one).
 */
#define ALLOC_BYTES_PER_INSTR 64
#define CLOCK_BYTES           (1 << 20)

static void stop_at_next(struct plugin_set *s, enum plugin__kill why)
{
    if (!s->killed)
        s->killed = why;
    stick(s->L);
}

static void alloc_charge(struct plugin_set *s, size_t grow)
{
    if (!s->in_call || s->killed)
        return;
    s->alloc_bytes += grow;
    s->used += (int64_t)(s->alloc_bytes / ALLOC_BYTES_PER_INSTR);
    s->alloc_bytes %= ALLOC_BYTES_PER_INSTR;
    if (s->used > s->budget) {
        stop_at_next(s, KILL_BUDGET);
        return;
    }
    s->alloc_clock += grow;
    if (s->alloc_clock >= CLOCK_BYTES) {
        s->alloc_clock = 0;
        if (plugin__now_ns() >= s->deadline_ns)
            stop_at_next(s, KILL_DEADLINE);
    }
}

/* The capped allocator: growing past the cap fails (Lua then raises a memory error after
 * an emergency collection) and stops the call; shrinking and freeing always succeed. */
static void *capped_alloc(void *ud, void *ptr, size_t osize, size_t nsize)
{
    struct plugin_set *s = ud;
    size_t old = ptr ? osize : 0;
    if (nsize == 0) {
        free(ptr);
        s->mem_used -= old;
        return NULL;
    }
    if (nsize > old) {
        if (nsize - old > s->mem_cap - s->mem_used) {
            if (s->in_call)
                stop_at_next(s, KILL_MEMORY);
            return NULL;
        }
        alloc_charge(s, nsize - old);
    }
    void *p = realloc(ptr, nsize);
    if (p)
        s->mem_used = s->mem_used - old + nsize;
    return p;
}

void plugin__stop(lua_State *L)
{
    stick(L);
}

int plugin__kill(lua_State *L, enum plugin__kill why, const char *detail)
{
    struct plugin_set *s = plugin__set(L);
    lua_pushstring(L, detail ? detail : "stopped by the host");
    if (!s->killed)
        s->killed = why;
    stick(L);
    return lua_error(L);
}

void plugin__charge(lua_State *L, int64_t n)
{
    struct plugin_set *s = plugin__set(L);
    if (!s->in_call)
        return;
    s->used += n;
    if (s->killed)
        plugin__kill(L, s->killed, NULL);
    if (s->used > s->budget)
        plugin__kill(L, KILL_BUDGET, NULL);
    if (plugin__now_ns() >= s->deadline_ns)
        plugin__kill(L, KILL_DEADLINE, NULL);
}

void plugin__charge_units(lua_State *L, lua_Unsigned n, int64_t per)
{
    lua_Unsigned cap = (lua_Unsigned)(INT64_MAX / 4) / (lua_Unsigned)(per > 0 ? per : 1);
    plugin__charge(L, (int64_t)(n > cap ? cap : n) * (per > 0 ? per : 1));
}

/* Charges the instructions run since the hook last ran (HOOK_STEP, or 1 once the call is
 * stopped or the watchdog fired). */
static void count_hook(lua_State *L, lua_Debug *ar)
{
    (void)ar;
    int n = lua_gethookcount(L);
    plugin__charge(L, n);
    /* still running: the timer fired for a deadline that is not this call's (it raced
     * with a re-arm), so back to the usual step */
    if (n == 1) {
        struct plugin_set *s = plugin__set(L);
        int64_t left = s->budget - s->used;
        lua_sethook(L, count_hook, LUA_MASKCOUNT,
                    left < HOOK_STEP ? (int)(left > 0 ? left : 1) : HOOK_STEP);
    }
}

/* The message handler of every host call: the error as text with the file:line of the
 * innermost Lua frame when it has none, followed by a traceback. It runs no Lua code (an
 * error object's __tostring is not called): a handler runs with the hooks off when the
 * error came from the count hook, so plugin code here would run unbounded. */
static int msgh(lua_State *L)
{
    enum plugin__kill k = plugin__set(L)->killed;
    if (k && k != KILL_PATTERN)
        return 1; /* the host's message replaces it: no traceback to build */
    const char *m = lua_tostring(L, 1);
    if (!m)
        m = lua_pushfstring(L, "(error object is a %s value)", luaL_typename(L, 1));
    lua_Debug ar;
    bool has_pos = strstr(m, ".lua:") != NULL;
    for (int level = 1; !has_pos && lua_getstack(L, level, &ar); level++) {
        lua_getinfo(L, "Sl", &ar);
        if (ar.currentline > 0 && ar.source[0] == '@') {
            m = lua_pushfstring(L, "%s:%d: %s", ar.short_src, ar.currentline, m);
            break;
        }
    }
    luaL_traceback(L, L, m, 1);
    return 1;
}

/* The host's message of a killed call. */
static void kill_message(struct plugin_set *s, const char *label, char *err, size_t err_len)
{
    const struct plugin__batch *b = s->batch;
    switch (s->killed) {
    case KILL_BUDGET:
        if (b && s->budget_of_batch)
            snprintf(err, err_len,
                     "%s: the %s's plugin budget is spent (%lld instructions across its "
                     "plugin calls)",
                     label, b->what, (long long)b->budget);
        else
            snprintf(err, err_len, "%s: instruction budget exceeded (%lld instructions)", label,
                     (long long)s->budget);
        break;
    case KILL_DEADLINE:
        if (b && s->deadline_of_batch)
            snprintf(err, err_len,
                     "%s: the %s's plugin deadline passed (%lld ms across its plugin calls)", label,
                     b->what, (long long)b->timeout_ms);
        else
            snprintf(err, err_len, "%s: deadline exceeded (%lld ms)", label,
                     (long long)s->lim.timeout_ms);
        break;
    case KILL_MEMORY:
        snprintf(err, err_len, "%s: out of memory (cap %zu bytes)", label, s->mem_cap);
        break;
    default:
        break;
    }
}

struct tramp {
    int (*fn)(lua_State *L);
    void *ud;
};

static int trampoline(lua_State *L)
{
    struct tramp *t = lua_touserdata(L, 1);
    lua_settop(L, 0);
    lua_pushlightuserdata(L, t->ud);
    return t->fn(L);
}

/* A batch with the per-decision budget, and times the per-decision deadline. */
static void batch_init(struct plugin__batch *b, const char *what, const struct plugin_limits *l,
                       int times)
{
    memset(b, 0, sizeof *b);
    b->what = what;
    b->budget = l->decision_instructions;
    b->timeout_ms =
        l->decision_timeout_ms > INT64_MAX / times ? INT64_MAX : l->decision_timeout_ms * times;
}

/* The message of a call not run because its batch is spent. */
static void skip_message(const struct plugin__batch *b, const char *label, char *err,
                         size_t err_len)
{
    snprintf(err, err_len,
             "%s: not run: the %s's plugin budget is spent (%lld of %lld instructions, deadline "
             "%lld ms, %d calls run)",
             label, b->what, (long long)b->used, (long long)b->budget, (long long)b->timeout_ms,
             b->calls);
}

#define RUN_SKIPPED (-2)

/*
 * Runs fn(L) (with its ud as light userdata at index 1) protected and limited: by the
 * per-call limits and by what is left of batch b's (NULL: none). idx is the plugin whose
 * counters are charged (-1: none); label names it in messages. The caller holds s->mu. 0, or
 * -1 with a one-line message in err; RUN_SKIPPED (with err) when b was already spent, and
 * then fn did not run.
 */
static int run_call(struct plugin_set *s, int idx, const char *label, int (*fn)(lua_State *L),
                    void *ud, struct plugin__batch *b, char *err, size_t err_len)
{
    lua_State *L = s->L;
    int base = lua_gettop(L);
    int64_t t0 = plugin__now_ns();
    int64_t budget = s->lim.instructions;
    int64_t deadline = after_ms(t0, s->lim.timeout_ms);
    s->budget_of_batch = s->deadline_of_batch = false;
    if (b) {
        if (!b->deadline_ns)
            b->deadline_ns = after_ms(t0, b->timeout_ms);
        if (b->spent || b->used >= b->budget || t0 >= b->deadline_ns) {
            b->spent = true;
            b->skipped++;
            skip_message(b, label, err, err_len);
            return RUN_SKIPPED;
        }
        if (b->budget - b->used < budget) {
            budget = b->budget - b->used;
            s->budget_of_batch = true;
        }
        if (b->deadline_ns < deadline) {
            deadline = b->deadline_ns;
            s->deadline_of_batch = true;
        }
    }
    s->batch = b;
    s->killed = KILL_NONE;
    s->used = 0;
    s->budget = budget;
    s->deadline_ns = deadline;
    s->alloc_bytes = s->alloc_clock = 0;
    s->log_lines = 0;
    s->cur_name = label;
    s->cur_idx = idx;
    s->in_call = true;
    lua_sethook(L, count_hook, LUA_MASKCOUNT, budget < HOOK_STEP ? (int)budget : HOOK_STEP);
    wd_L = L;
    atomic_signal_fence(memory_order_seq_cst);
    wd_set(deadline);
    struct tramp t = {fn, ud};
    lua_pushcfunction(L, msgh);
    lua_pushcfunction(L, trampoline);
    lua_pushlightuserdata(L, &t);
    int st = lua_pcall(L, 1, 0, base + 1);
    if (!b || !b->decision)
        wd_set(0); /* a decision's stays armed for its next call (plugin_call_free) */
    wd_L = NULL;
    atomic_signal_fence(memory_order_seq_cst);
    s->in_call = false;
    lua_sethook(L, NULL, 0, 0);
    int rc = 0;
    if (st != LUA_OK) {
        rc = -1;
        if (st == LUA_ERRMEM && !s->killed)
            s->killed = KILL_MEMORY;
        if (s->killed && s->killed != KILL_PATTERN) {
            kill_message(s, label, err, err_len);
        } else {
            const char *m = lua_tostring(L, -1);
            m = m ? m : "error";
            const char *nl = strchr(m, '\n');
            int n = nl ? (int)(nl - m) : (int)strlen(m);
            snprintf(err, err_len, "%.*s", n, m);
            if (nl)
                log_msg(LOG_DEBUG, "plugin", m, "plugin=%s", label);
        }
        if (s->killed == KILL_MEMORY)
            lua_gc(L, LUA_GCCOLLECT, 0);
    }
    lua_settop(L, base);
    if (b) {
        b->used += s->used;
        b->calls++;
        if ((s->killed == KILL_BUDGET && s->budget_of_batch) ||
            (s->killed == KILL_DEADLINE && s->deadline_of_batch))
            b->spent = true;
    }
    if (idx >= 0) {
        s->p[idx].calls++;
        s->p[idx].errors += rc < 0;
        s->p[idx].time_us += (uint64_t)((plugin__now_ns() - t0) / 1000);
    }
    plugin__log_flush(s, idx, label);
    s->batch = NULL;
    s->cur_name = NULL;
    s->cur_idx = -1;
    return rc;
}

int plugin__run(struct plugin_set *s, const char *name, int (*fn)(lua_State *L), void *ud,
                char *err, size_t err_len)
{
    int idx = name ? plugin_set_find(s, name) : -1;
    return run_call(s, idx, name ? name : "governor", fn, ud, NULL, err, err_len);
}

/* ------------------------------------------------------------- loading -- */

int plugin__load_chunk(lua_State *L, const struct plugin__file *f, const char *owner)
{
    char chunk[300];
    snprintf(chunk, sizeof chunk, "@%s", f->path);
    if (luaL_loadbufferx(L, f->text, f->len, chunk, "t") != LUA_OK)
        return lua_error(L);
    plugin__sandbox_env(L, owner);
    if (!lua_setupvalue(L, -2, 1))
        lua_pop(L, 1);
    return 1;
}

static bool valid_name(const char *s, size_t n, bool dash)
{
    if (n == 0 || n > 64)
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || (dash && c == '-')))
            return false;
    }
    return true;
}

static bool ends_with(const char *s, const char *suf)
{
    size_t a = strlen(s), b = strlen(suf);
    return a >= b && strcmp(s + a - b, suf) == 0;
}

static int file_cmp(const void *a, const void *b)
{
    return strcmp(((const struct plugin__file *)a)->path, ((const struct plugin__file *)b)->path);
}

/* Reads every *.lua regular file of dir/sub into s->files. -1 + *errp. */
static int read_dir(struct plugin_set *s, const char *sub, bool required, char **errp)
{
    char path[4096];
    snprintf(path, sizeof path, "%s%s%s", s->dir, sub ? "/" : "", sub ? sub : "");
    DIR *d = opendir(path);
    if (!d) {
        if (!required && errno == ENOENT)
            return 0;
        *errp = xasprintf("%s: %s", path, strerror(errno));
        return -1;
    }
    int rc = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (!ends_with(e->d_name, ".lua") || e->d_name[0] == '.')
            continue;
        char full[8192];
        snprintf(full, sizeof full, "%s/%s", path, e->d_name);
        struct stat sb;
        if (stat(full, &sb) < 0 || !S_ISREG(sb.st_mode))
            continue;
        char rel[512];
        snprintf(rel, sizeof rel, "%s%s%s", sub ? sub : "", sub ? "/" : "", e->d_name);
        if (sb.st_size > MAX_FILE_BYTES) {
            *errp = xasprintf("%s: file larger than %d bytes", rel, MAX_FILE_BYTES);
            rc = -1;
            break;
        }
        FILE *f = fopen(full, "rb");
        if (!f) {
            *errp = xasprintf("%s: %s", rel, strerror(errno));
            rc = -1;
            break;
        }
        char *buf = malloc((size_t)sb.st_size + 1);
        if (!buf)
            abort();
        size_t n = fread(buf, 1, (size_t)sb.st_size, f);
        fclose(f);
        buf[n] = '\0';
        struct plugin__file *pf;
        s->files = realloc(s->files, (size_t)(s->n_files + 1) * sizeof *s->files);
        if (!s->files)
            abort();
        pf = &s->files[s->n_files++];
        pf->path = xstrdup(rel);
        pf->text = buf;
        pf->len = n;
        plugin__fnv_hex(buf, n, pf->hash);
    }
    closedir(d);
    return rc;
}

static void compute_revision(struct plugin_set *s)
{
    uint64_t h = 1469598103934665603ull;
    for (int i = 0; i < s->n_files; i++) {
        const struct plugin__file *f = &s->files[i];
        const unsigned char *parts[2] = {(const unsigned char *)f->path,
                                         (const unsigned char *)f->text};
        size_t lens[2] = {strlen(f->path) + 1, f->len};
        for (int k = 0; k < 2; k++)
            for (size_t j = 0; j < lens[k]; j++) {
                h ^= parts[k][j];
                h *= 1099511628211ull;
            }
        /* separator between files, so (a, bc) and (ab, c) differ */
        h ^= 0xff;
        h *= 1099511628211ull;
    }
    snprintf(s->revision, sizeof s->revision, "%08llx", (unsigned long long)(h >> 32));
}

static int open_tramp(lua_State *L)
{
    plugin__sandbox_open(L);
    return 0;
}

/* Loads and checks plugin i (its file is s->p[i].file): run in a protected call. */
static int load_one(lua_State *L)
{
    struct plugin_set *s = plugin__set(L);
    struct plugin__one *p = lua_touserdata(L, 1);
    const char *file = p->file->path;
    plugin__load_chunk(L, p->file, p->name);
    lua_call(L, 0, 1);
    if (!lua_istable(L, -1))
        return luaL_error(L, "%s: must return a table (got %s)", file, luaL_typename(L, -1));
    int t = lua_gettop(L);
    lua_getfield(L, t, "kind");
    const char *kind = lua_tostring(L, -1);
    int k = -1;
    for (int i = 0; kind && i < 4; i++)
        if (strcmp(kind, kind_names[i]) == 0)
            k = i;
    if (k < 0)
        return luaL_error(L,
                          "%s: kind must be one of exclusion, evaluator, executor, alignment "
                          "(got %s)",
                          file, kind ? kind : luaL_typename(L, -1));
    p->kind = (enum plugin_kind)k;
    lua_getfield(L, t, hook_names[k]);
    if (!lua_isfunction(L, -1))
        return luaL_error(L, "%s: a plugin of kind %s must have a function '%s' (got %s)", file,
                          kind, hook_names[k], luaL_typename(L, -1));
    lua_getfield(L, t, "priority");
    if (!lua_isnil(L, -1)) {
        if (lua_type(L, -1) != LUA_TNUMBER || !isfinite(lua_tonumber(L, -1)))
            return luaL_error(L, "%s: priority must be a finite number (got %s)", file,
                              luaL_typename(L, -1));
        p->priority = lua_tonumber(L, -1);
    }
    lua_pop(L, 1);
    p->ref_fn = luaL_ref(L, LUA_REGISTRYINDEX);
    lua_pop(L, 1);
    p->ref_tbl = luaL_ref(L, LUA_REGISTRYINDEX);
    (void)s;
    return 0;
}

static void set_free(struct plugin_set *s)
{
    if (!s)
        return;
    if (s->L)
        lua_close(s->L);
    for (int i = 0; i < s->n_files; i++) {
        free(s->files[i].path);
        free(s->files[i].text);
    }
    free(s->files);
    for (int i = 0; i < s->n; i++)
        free(s->p[i].name);
    free(s->p);
    free(s->dir);
    pthread_mutex_destroy(&s->mu);
    free(s);
}

static int panic(lua_State *L)
{
    log_msg(LOG_ERROR, "plugin", "unprotected Lua error", "error=\"%s\"", lua_tostring(L, -1));
    abort();
}

int plugin_set_load(const char *dir, const struct plugin_limits *lim, struct plugin_set **out,
                    char **errp)
{
    *out = NULL;
    struct plugin_set *s = calloc(1, sizeof *s);
    if (!s)
        abort();
    char err[1024] = "";
    atomic_init(&s->refs, 1);
    pthread_mutex_init(&s->mu, NULL);
    s->dir = xstrdup(dir);
    s->lim.instructions = lim && lim->instructions > 0 ? lim->instructions : DEFAULT_INSTRUCTIONS;
    s->lim.timeout_ms = lim && lim->timeout_ms > 0 ? lim->timeout_ms : DEFAULT_TIMEOUT_MS;
    s->lim.memory_bytes = lim && lim->memory_bytes > 0 ? lim->memory_bytes : DEFAULT_MEMORY;
    s->lim.decision_instructions = lim && lim->decision_instructions > 0
                                       ? lim->decision_instructions
                                       : imax64(DEFAULT_DECISION_INSTRUCTIONS, s->lim.instructions);
    s->lim.decision_timeout_ms = lim && lim->decision_timeout_ms > 0
                                     ? lim->decision_timeout_ms
                                     : imax64(DEFAULT_DECISION_TIMEOUT_MS, s->lim.timeout_ms);
    s->mem_cap = (size_t)s->lim.memory_bytes;
    s->cur_idx = -1;
    s->loaded_at = wall_ms();

    if (read_dir(s, NULL, true, errp) < 0 || read_dir(s, "lib", false, errp) < 0)
        goto fail;
    if (s->n_files > 0) /* files is NULL for a directory without policies */
        qsort(s->files, (size_t)s->n_files, sizeof *s->files, file_cmp);
    compute_revision(s);

    s->L = lua_newstate(capped_alloc, s);
    if (!s->L) {
        *errp = xstrdup("cannot create a Lua state");
        goto fail;
    }
    *(struct plugin_set **)lua_getextraspace(s->L) = s;
    lua_atpanic(s->L, panic);
    if (run_call(s, -1, "sandbox", open_tramp, NULL, NULL, err, sizeof err) < 0) {
        *errp = xasprintf("sandbox: %s", err);
        goto fail;
    }
    for (int i = 0; i < s->n_files; i++) {
        const char *path = s->files[i].path;
        if (strchr(path, '/') || ends_with(path, "_test.lua"))
            continue;
        size_t n = strlen(path) - 4;
        if (!valid_name(path, n, true)) {
            *errp = xasprintf("%s: a plugin's file name must be letters, digits, '_' or '-' "
                              "followed by .lua",
                              path);
            goto fail;
        }
        s->p = realloc(s->p, (size_t)(s->n + 1) * sizeof *s->p);
        if (!s->p)
            abort();
        struct plugin__one *p = &s->p[s->n++];
        memset(p, 0, sizeof *p);
        p->name = strndup(path, n);
        if (!p->name)
            abort();
        p->file = &s->files[i];
        p->ref_fn = p->ref_tbl = LUA_NOREF;
    }
    /* The top levels of all the files together get the instructions of one decision's
     * calls, and ten times its deadline: a load must not fail because the machine is slow
     * for a moment (at start the server would not start), and a reload blocks decisions
     * no longer than that, however many files loop. */
    struct plugin__batch load_batch;
    batch_init(&load_batch, "load", &s->lim, LOAD_DEADLINES);
    for (int i = 0; i < s->n; i++) {
        if (run_call(s, -1, s->p[i].file->path, load_one, &s->p[i], &load_batch, err, sizeof err) !=
            0) {
            /* a kill message names the plugin; a Lua error names file:line already */
            if (strncmp(err, s->p[i].file->path, strlen(s->p[i].file->path)) == 0)
                *errp = xstrdup(err);
            else
                *errp = xasprintf("%s: %s", s->p[i].file->path, err);
            goto fail;
        }
        s->p[i].calls = s->p[i].errors = s->p[i].time_us = 0;
    }
    *out = s;
    return 0;
fail:
    set_free(s);
    return -1;
}

struct plugin_set *plugin_set_ref(struct plugin_set *s)
{
    atomic_fetch_add(&s->refs, 1);
    return s;
}

void plugin_set_unref(struct plugin_set *s)
{
    if (s && atomic_fetch_sub(&s->refs, 1) == 1)
        set_free(s);
}

const char *plugin_set_revision(const struct plugin_set *s)
{
    return s->revision;
}

int64_t plugin_set_loaded_at(const struct plugin_set *s)
{
    return s->loaded_at;
}

int plugin_set_count(const struct plugin_set *s)
{
    return s->n;
}

void plugin_set_info(struct plugin_set *s, int i, struct plugin_info *info)
{
    const struct plugin__one *p = &s->p[i];
    pthread_mutex_lock(&s->mu);
    info->name = p->name;
    info->file = p->file->path;
    info->hash = p->file->hash;
    info->kind = p->kind;
    info->priority = p->priority;
    info->loaded_at = s->loaded_at;
    info->calls = p->calls;
    info->errors = p->errors;
    info->time_us = p->time_us;
    pthread_mutex_unlock(&s->mu);
}

int plugin_set_find(const struct plugin_set *s, const char *name)
{
    for (int i = 0; i < s->n; i++)
        if (strcmp(s->p[i].name, name) == 0)
            return i;
    return -1;
}

void plugin_set_each_file(const struct plugin_set *s,
                          void (*fn)(void *ud, const char *path, const char *hash), void *ud)
{
    for (int i = 0; i < s->n_files; i++)
        fn(ud, s->files[i].path, s->files[i].hash);
}

void plugin_set_log_sink(struct plugin_set *s,
                         void (*fn)(void *ud, const char *plugin, const char *msg), void *ud)
{
    s->log_fn = fn;
    s->log_ud = ud;
}

/* ------------------------------------------------------- Lua views of C -- */

/*
 * The figures of struct core_evaluated as plugins see them, with what an evaluator may
 * return for each: a number in [lo, hi] (finite, unless inf_ok allows +math.huge, which the
 * core itself uses for "no limit"), an integral one when integral. Anything else fails the
 * call naming the figure, so no overflowed or nonsensical figure reaches a decision.
 */
#define RATE_MAX 1e15 /* records/s: far above any real job, far below overflow */
static const struct ev_field {
    const char *name;
    size_t off;
    double lo, hi;
    bool inf_ok, integral;
} ev_fields[] = {
#define F(x, lo, hi, inf_ok, integral)                                                             \
    {                                                                                              \
#x, offsetof(struct core_evaluated, x), lo, hi, inf_ok, integral                           \
    }
    F(load, 0, 1, false, false),
    F(true_processing_rate, 0, RATE_MAX, true, false),
    F(target_data_rate, 0, RATE_MAX, false, false),
    F(catch_up_data_rate, 0, RATE_MAX, false, false),
    F(lag, 0, RATE_MAX, false, false),
    F(scale_up_rate_threshold, 0, RATE_MAX, false, false),
    F(scale_down_rate_threshold, 0, RATE_MAX, true, false),
    F(expected_processing_rate, 0, RATE_MAX, false, false),
    F(parallelism, 1, INT_MAX, false, true),
    F(max_parallelism, 1, INT_MAX, false, true),
    F(num_source_partitions, 0, INT_MAX, false, true),
    F(busy_max_avg_ratio, 0, 1e9, false, false),
    F(hot_key_share, 0, 1, false, false),
    F(key_rate_bound, 0, RATE_MAX, true, false),
    F(salting_fanout, 1, INT_MAX, false, true),
#undef F
};
#define N_EV ((int)(sizeof ev_fields / sizeof ev_fields[0]))

static double *ev_at(struct core_evaluated *ev, int i)
{
    return (double *)((char *)ev + ev_fields[i].off);
}

/* Pushes a number, or nothing (returns false) for NaN: absent figures are nil. */
static void setnum(lua_State *L, const char *k, double v)
{
    if (isnan(v))
        return;
    if (v == floor(v) && fabs(v) < 9e15)
        lua_pushinteger(L, (lua_Integer)v);
    else
        lua_pushnumber(L, v);
    lua_setfield(L, -2, k);
}

static void push_evaluated(lua_State *L, const struct core_evaluated *ev)
{
    lua_createtable(L, 0, N_EV);
    for (int i = 0; i < N_EV; i++)
        setnum(L, ev_fields[i].name, *ev_at((struct core_evaluated *)ev, i));
}

static void push_vertex(lua_State *L, const struct core_vertex_in *v)
{
    lua_createtable(L, 0, 10);
    lua_pushstring(L, v->id);
    lua_setfield(L, -2, "id");
    lua_pushinteger(L, v->parallelism);
    lua_setfield(L, -2, "parallelism");
    lua_pushinteger(L, v->max_parallelism);
    lua_setfield(L, -2, "max_parallelism");
    if (v->partitions > 0) {
        lua_pushinteger(L, v->partitions);
        lua_setfield(L, -2, "partitions");
    }
    if (v->slot_sharing_group) {
        lua_pushstring(L, v->slot_sharing_group);
        lua_setfield(L, -2, "slot_sharing_group");
    }
    lua_pushboolean(L, v->finished);
    lua_setfield(L, -2, "finished");
    lua_createtable(L, v->n_inputs, 0);
    for (int i = 0; i < v->n_inputs; i++) {
        lua_createtable(L, 0, 2);
        lua_pushstring(L, v->inputs[i].from);
        lua_setfield(L, -2, "from");
        lua_pushstring(L, core_ship_name(v->inputs[i].ship));
        lua_setfield(L, -2, "ship");
        lua_rawseti(L, -2, i + 1);
    }
    lua_setfield(L, -2, "inputs");
    lua_createtable(L, 0, 11);
    setnum(L, "busy_min", v->busy_min);
    setnum(L, "busy_avg", v->busy_avg);
    setnum(L, "busy_max", v->busy_max);
    setnum(L, "backpressured", v->backpressured);
    setnum(L, "records_in", v->records_in);
    setnum(L, "records_out", v->records_out);
    setnum(L, "accumulated_busy_ms", v->accumulated_busy_ms);
    setnum(L, "records_in_per_s", v->records_in_per_s);
    setnum(L, "records_out_per_s", v->records_out_per_s);
    setnum(L, "pending_records", v->pending_records);
    lua_setfield(L, -2, "metrics");
}

static void push_decision(lua_State *L, const struct core_decision *d)
{
    lua_createtable(L, 0, 6);
    lua_pushinteger(L, d->at);
    lua_setfield(L, -2, "at");
    lua_pushstring(L, core_action_name(d->action));
    lua_setfield(L, -2, "action");
    lua_pushstring(L, core_reason_name(d->reason));
    lua_setfield(L, -2, "reason");
    lua_pushstring(L, d->message ? d->message : "");
    lua_setfield(L, -2, "message");
    lua_createtable(L, d->n_vertices, 0);
    for (int k = 0; k < d->n_vertices; k++) {
        const struct core_vdecision *v = &d->vertices[k];
        lua_createtable(L, 0, 9);
        lua_pushstring(L, v->id);
        lua_setfield(L, -2, "id");
        lua_pushinteger(L, v->current);
        lua_setfield(L, -2, "current");
        lua_pushinteger(L, v->raw_target);
        lua_setfield(L, -2, "raw_target");
        lua_pushinteger(L, v->target);
        lua_setfield(L, -2, "target");
        lua_pushstring(L, core_reason_name(v->reason));
        lua_setfield(L, -2, "reason");
        lua_pushboolean(L, v->outside_bounds);
        lua_setfield(L, -2, "outside_bounds");
        lua_pushboolean(L, v->excluded);
        lua_setfield(L, -2, "excluded");
        lua_newtable(L);
        int n = 0;
        for (int b = 0; b < CORE_C__COUNT; b++)
            if (v->constraints & (1u << b)) {
                lua_pushstring(L, core_constraint_name(b));
                lua_rawseti(L, -2, ++n);
            }
        lua_setfield(L, -2, "constraints");
        push_evaluated(L, &v->ev);
        lua_setfield(L, -2, "evaluated");
        lua_rawseti(L, -2, k + 1);
    }
    lua_setfield(L, -2, "vertices");
}

/* Deep read-only: every nested table of the table at the top becomes a proxy. */
static void deep_readonly(lua_State *L, const char *what, int depth)
{
    if (depth > 8)
        return;
    int t = lua_gettop(L);
    lua_pushnil(L);
    while (lua_next(L, t)) {
        if (lua_istable(L, -1)) {
            deep_readonly(L, what, depth + 1);
            lua_pushvalue(L, -2);
            lua_insert(L, -2);
            lua_rawset(L, t);
        } else {
            lua_pop(L, 1);
        }
    }
    plugin__readonly(L, what);
}

static void param_cb(void *ud, const char *param, const char *value)
{
    lua_State *L = ud;
    lua_pushstring(L, value);
    lua_setfield(L, -2, param);
}

static void config_cb(void *ud, const char *key, const char *value, enum opt_layer layer)
{
    (void)layer;
    lua_State *L = ud;
    if (!value)
        return;
    lua_pushstring(L, value);
    lua_setfield(L, -2, key);
}

/* The read-only ctx.config of a call (built once per decision). */
static void push_config(lua_State *L, struct plugin_call *c)
{
    if (c->ref_config != LUA_NOREF) {
        lua_rawgeti(L, LUA_REGISTRYINDEX, c->ref_config);
        return;
    }
    lua_newtable(L);
    if (c->opts)
        opt_job_each(c->opts, config_cb, L);
    plugin__readonly(L, "ctx.config");
    lua_pushvalue(L, -1);
    c->ref_config = luaL_ref(L, LUA_REGISTRYINDEX);
}

/* The read-only ctx.job: {name, at, running_since, running, vertices}. */
static void push_job(lua_State *L, struct plugin_call *c)
{
    if (c->ref_job != LUA_NOREF) {
        lua_rawgeti(L, LUA_REGISTRYINDEX, c->ref_job);
        return;
    }
    lua_createtable(L, 0, 5);
    lua_pushstring(L, c->job ? c->job : "");
    lua_setfield(L, -2, "name");
    if (c->sm) {
        lua_pushinteger(L, c->sm->at);
        lua_setfield(L, -2, "at");
        lua_pushinteger(L, c->sm->running_since);
        lua_setfield(L, -2, "running_since");
        lua_pushboolean(L, c->sm->running);
        lua_setfield(L, -2, "running");
        lua_createtable(L, c->sm->n_vertices, 0);
        for (int i = 0; i < c->sm->n_vertices; i++) {
            push_vertex(L, &c->sm->vertices[i]);
            lua_rawseti(L, -2, i + 1);
        }
        lua_setfield(L, -2, "vertices");
    }
    deep_readonly(L, "ctx.job", 0);
    lua_pushvalue(L, -1);
    c->ref_job = luaL_ref(L, LUA_REGISTRYINDEX);
}

/* Lua's log function of ctx: governor.log bound to the plugin's name. */
static int ctx_log(lua_State *L)
{
    lua_getfield(L, LUA_REGISTRYINDEX, "governor.base");
    lua_getfield(L, -1, "governor");
    lua_getfield(L, -1, "log");
    lua_insert(L, 1);
    lua_settop(L, 2);
    lua_call(L, 1, 0);
    return 0;
}

void plugin__push_ctx(lua_State *L, const char *name, int params, int config, int job, int64_t now)
{
    (void)name;
    lua_createtable(L, 0, 6);
    if (params)
        lua_pushvalue(L, params);
    else
        lua_newtable(L);
    lua_setfield(L, -2, "params");
    if (config)
        lua_pushvalue(L, config);
    else
        lua_newtable(L);
    lua_setfield(L, -2, "config");
    if (job)
        lua_pushvalue(L, job);
    else
        lua_newtable(L);
    lua_setfield(L, -2, "job");
    lua_pushinteger(L, now);
    lua_setfield(L, -2, "now");
    lua_pushcfunction(L, ctx_log);
    lua_setfield(L, -2, "log");
}

/* ------------------------------------------------------------ the hooks -- */

struct hook_job {
    struct plugin_call *c;
    int idx;          /* plugin */
    const char *inst; /* configured instance name (params prefix) */
    enum plugin_kind kind;
    int64_t now;
    /* evaluator */
    const struct core_vertex_in *v;
    struct core_evaluated *ev;
    bool backlog;
    /* executor */
    struct core_decision *d;
    bool *veto;
    /* exclusion */
    bool *excluded;
    /* exclusion's why, executor's veto reason */
    char *why;
    size_t why_len;
    /* alignment */
    const struct core_align_ctx *a;
    int *out;
};

static void copy_str(char *dst, size_t n, const char *s)
{
    if (n)
        snprintf(dst, n, "%s", s ? s : "");
}

/* The most a plugin may set a vertex's parallelism to (executor targets, alignment). */
#define MAX_TARGET 1000000

/* "1e+300", "inf", "nan", "4294967301": a returned number as the messages show it. */
static const char *num_text(lua_State *L, int i, char *buf, size_t n)
{
    double x = (double)lua_tonumber(L, i);
    if (lua_isinteger(L, i))
        snprintf(buf, n, "%lld", (long long)lua_tointeger(L, i));
    else if (isnan(x))
        snprintf(buf, n, "nan");
    else
        for (int prec = 15; prec <= 17; prec++) { /* the shortest that reads back as x */
            snprintf(buf, n, "%.*g", prec, x);
            if (strtod(buf, NULL) == x)
                break;
        }
    return buf;
}

/* Reads an integer result in [lo, hi] (an integral float is accepted); anything else (a
 * fraction, NaN, infinity, a value out of range, another type) raises an error naming
 * what, which fails the call: a plugin's number is never truncated into an int. */
static lua_Integer check_int(lua_State *L, int i, const char *what, lua_Integer lo, lua_Integer hi)
{
    char buf[64];
    if (lua_type(L, i) != LUA_TNUMBER)
        luaL_error(L, "%s must be an integer in [%I, %I] (got %s)", what, (LUAI_UACINT)lo,
                   (LUAI_UACINT)hi, luaL_typename(L, i));
    int isint = 0;
    lua_Integer v = lua_tointegerx(L, i, &isint);
    if (!isint || v < lo || v > hi)
        luaL_error(L, "%s must be an integer in [%I, %I] (got %s)", what, (LUAI_UACINT)lo,
                   (LUAI_UACINT)hi, num_text(L, i, buf, sizeof buf));
    return v;
}

/* Sets next[k] for vertex id from the integer at stack index vi. */
static void target_of(lua_State *L, struct hook_job *h, int *next, const char *id, int vi)
{
    struct core_decision *d = h->d;
    int k;
    for (k = 0; k < d->n_vertices; k++)
        if (strcmp(d->vertices[k].id, id) == 0)
            break;
    if (k == d->n_vertices)
        luaL_error(L, "execute returned an unknown vertex '%s'", id);
    char what[160];
    snprintf(what, sizeof what, "execute: vertex '%.100s' target", id);
    next[k] = (int)check_int(L, vi, what, 1, MAX_TARGET);
}

/* Checks the number at the top against figure i's rule; returns it. */
static double check_figure(lua_State *L, const struct plugin__one *p, int i)
{
    const struct ev_field *f = &ev_fields[i];
    char buf[64], rule[96];
    if (lua_type(L, -1) != LUA_TNUMBER)
        luaL_error(L, "%s: evaluate: metric '%s' must be a number (got %s)", p->file->path, f->name,
                   luaL_typename(L, -1));
    double x = lua_tonumber(L, -1);
    bool ok =
        x >= f->lo && (x <= f->hi || (f->inf_ok && isinf(x))) && (!f->integral || x == floor(x));
    if (ok)
        return x;
    if (f->integral)
        snprintf(rule, sizeof rule, "an integer in [%.0f, %.0f]", f->lo, f->hi);
    else
        snprintf(rule, sizeof rule, "a finite number in [%g, %g]%s", f->lo, f->hi,
                 f->inf_ok ? " or math.huge" : "");
    return luaL_error(L, "%s: evaluate: metric '%s' must be %s (got %s)", p->file->path, f->name,
                      rule, num_text(L, -1, buf, sizeof buf));
}

/* Applies an executor's returned decision table (at top) to h->d: every entry is checked
 * before any target changes, so an error leaves the decision as it was. Entries are
 * {id = ..., target = n} (array) or [id] = n / [id] = {target = n}. */
static void apply_decision(lua_State *L, struct hook_job *h)
{
    int t = lua_gettop(L);
    if (lua_getfield(L, t, "vertices") != LUA_TTABLE)
        luaL_error(L, "execute: the returned decision has no 'vertices' table");
    int vs = lua_gettop(L);
    int n = h->d->n_vertices;
    int *next = lua_newuserdatauv(L, (size_t)(n > 0 ? n : 1) * sizeof(int), 0);
    for (int k = 0; k < n; k++)
        next[k] = h->d->vertices[k].target;
    lua_pushnil(L);
    while (lua_next(L, vs)) {
        int val = lua_gettop(L);
        if (lua_type(L, -2) == LUA_TSTRING) {
            const char *id = lua_tostring(L, -2);
            if (lua_istable(L, val))
                lua_getfield(L, val, "target");
            else
                lua_pushvalue(L, val);
            target_of(L, h, next, id, lua_gettop(L));
        } else if (lua_istable(L, val)) {
            lua_getfield(L, val, "id");
            const char *id = lua_tostring(L, -1);
            if (!id)
                luaL_error(L, "execute: a returned vertex has no id");
            lua_getfield(L, val, "target");
            target_of(L, h, next, id, lua_gettop(L));
        } else {
            luaL_error(L, "execute: 'vertices' entries must be tables");
        }
        lua_settop(L, val - 1);
    }
    for (int k = 0; k < n; k++)
        h->d->vertices[k].target = next[k];
}

static int hook_tramp(lua_State *L)
{
    struct hook_job *h = lua_touserdata(L, 1);
    struct plugin_call *c = h->c;
    struct plugin__one *p = &c->set->p[h->idx];
    lua_settop(L, 0);
    lua_rawgeti(L, LUA_REGISTRYINDEX, p->ref_fn);
    /* ctx pieces */
    lua_newtable(L);
    if (h->inst && kind_prefix[h->kind] && c->opts) {
        char prefix[256];
        snprintf(prefix, sizeof prefix, "%s%s.", kind_prefix[h->kind], h->inst);
        opt_job_params(c->opts, prefix, param_cb, L);
    }
    plugin__readonly(L, "ctx.params");
    int params = lua_gettop(L);
    push_config(L, c);
    int config = lua_gettop(L);
    push_job(L, c);
    int job = lua_gettop(L);
    lua_pushvalue(L, 1);
    int nargs = 0;
    switch (h->kind) {
    case PLUGIN_EXCLUSION:
        break;
    case PLUGIN_EVALUATOR:
        push_vertex(L, h->v);
        push_evaluated(L, h->ev);
        nargs = 2;
        break;
    case PLUGIN_EXECUTOR:
        push_decision(L, h->d);
        nargs = 1;
        break;
    case PLUGIN_ALIGNMENT: {
        const struct core_align_ctx *a = h->a;
        lua_createtable(L, 0, 10);
        lua_pushstring(L, a->vertex);
        lua_setfield(L, -2, "vertex");
        lua_pushinteger(L, a->current);
        lua_setfield(L, -2, "current");
        lua_pushinteger(L, a->proposed);
        lua_setfield(L, -2, "proposed");
        lua_pushinteger(L, a->lower);
        lua_setfield(L, -2, "lower");
        lua_pushinteger(L, a->upper);
        lua_setfield(L, -2, "upper");
        lua_pushinteger(L, a->max_parallelism);
        lua_setfield(L, -2, "max_parallelism");
        lua_pushinteger(L, a->partitions);
        lua_setfield(L, -2, "partitions");
        lua_createtable(L, a->n_inputs, 0);
        for (int i = 0; i < a->n_inputs; i++) {
            lua_pushstring(L, core_ship_name(a->input_ships[i]));
            lua_rawseti(L, -2, i + 1);
        }
        lua_setfield(L, -2, "input_ships");
        if (a->ev) {
            push_evaluated(L, a->ev);
            lua_setfield(L, -2, "evaluated");
        }
        nargs = 1;
        break;
    }
    }
    plugin__push_ctx(L, p->name, params, config, job, h->now);
    if (h->kind == PLUGIN_EVALUATOR) {
        lua_pushboolean(L, h->backlog);
        lua_setfield(L, -2, "backlog");
    }
    lua_call(L, nargs + 1, 2);
    int r1 = lua_gettop(L) - 1, r2 = r1 + 1;
    switch (h->kind) {
    case PLUGIN_EXCLUSION:
        *h->excluded = lua_toboolean(L, r1);
        if (*h->excluded)
            copy_str(h->why, h->why_len, lua_isstring(L, r2) ? lua_tostring(L, r2) : p->name);
        break;
    case PLUGIN_EVALUATOR:
        if (lua_isnil(L, r1))
            break;
        if (!lua_istable(L, r1))
            return luaL_error(L, "%s: evaluate must return a table of metrics or nil (got %s)",
                              p->file->path, luaL_typename(L, r1));
        {
            struct core_evaluated out = *h->ev;
            for (int i = 0; i < N_EV; i++)
                *ev_at(&out, i) = NAN;
            lua_pushnil(L);
            while (lua_next(L, r1)) {
                const char *k = lua_type(L, -2) == LUA_TSTRING ? lua_tostring(L, -2) : NULL;
                int fi = -1;
                for (int i = 0; k && i < N_EV; i++)
                    if (strcmp(ev_fields[i].name, k) == 0)
                        fi = i;
                if (fi < 0)
                    return luaL_error(L, "%s: evaluate returned an unknown metric '%s'",
                                      p->file->path, k ? k : luaL_typename(L, -2));
                *ev_at(&out, fi) = check_figure(L, p, fi);
                lua_pop(L, 1);
            }
            for (int i = 0; i < N_EV; i++)
                if (!isnan(*ev_at(&out, i)))
                    *ev_at(h->ev, i) = *ev_at(&out, i);
        }
        break;
    case PLUGIN_EXECUTOR:
        if (lua_isnil(L, r1) || (lua_isboolean(L, r1) && !lua_toboolean(L, r1))) {
            *h->veto = true;
            copy_str(h->why, h->why_len, lua_isstring(L, r2) ? lua_tostring(L, r2) : "");
        } else if (lua_istable(L, r1)) {
            lua_pushvalue(L, r1);
            apply_decision(L, h);
        } else if (!lua_isboolean(L, r1)) {
            return luaL_error(L,
                              "%s: execute must return a decision table, true, nil or "
                              "false, why (got %s)",
                              p->file->path, luaL_typename(L, r1));
        }
        break;
    case PLUGIN_ALIGNMENT: {
        char what[160];
        snprintf(what, sizeof what, "%s: align's result", p->file->path);
        *h->out = (int)check_int(L, r1, what, 1, MAX_TARGET);
    } break;
    }
    return 0;
}

/* Appends a record of one hook call to c (strings copied). */
static void record(struct plugin_call *c, const char *plugin, enum plugin_kind kind,
                   const char *outcome, int64_t duration_us, const char *error)
{
    if (c->n_rec == c->cap_rec) {
        c->cap_rec = c->cap_rec ? c->cap_rec * 2 : 8;
        c->rec = realloc(c->rec, (size_t)c->cap_rec * sizeof *c->rec);
        if (!c->rec)
            abort();
    }
    struct plugin_record *r = &c->rec[c->n_rec++];
    r->plugin = xstrdup(plugin);
    r->hook = hook_names[kind];
    r->outcome = outcome;
    r->duration_us = duration_us;
    r->error = error && *error ? xstrdup(error) : NULL;
}

/* Finds the plugin an instance name selects (its `.class` parameter, else itself). */
struct class_find {
    char cls[128];
};

static void class_cb(void *ud, const char *param, const char *value)
{
    struct class_find *f = ud;
    if (strcmp(param, "class") == 0)
        copy_str(f->cls, sizeof f->cls, value);
}

static int resolve(struct plugin_call *c, enum plugin_kind kind, const char *inst, char *err,
                   size_t err_len)
{
    struct class_find f;
    copy_str(f.cls, sizeof f.cls, inst);
    if (c->opts && kind_prefix[kind]) {
        char prefix[256];
        snprintf(prefix, sizeof prefix, "%s%s.", kind_prefix[kind], inst);
        opt_job_params(c->opts, prefix, class_cb, &f);
    }
    int idx = plugin_set_find(c->set, f.cls);
    if (idx < 0) {
        snprintf(err, err_len, "no plugin named \"%s\" in policy revision %s", f.cls,
                 c->set->revision);
        record(c, f.cls, kind, "error", 0, err);
        return -1;
    }
    if (c->set->p[idx].kind != kind) {
        snprintf(err, err_len, "plugin \"%s\" is an %s, not an %s", f.cls,
                 kind_names[c->set->p[idx].kind], kind_names[kind]);
        record(c, f.cls, kind, "error", 0, err);
        return -1;
    }
    return idx;
}

/* Counts a call skipped because the decision's limits are spent: one record for them all,
 * the first skipped call's, whose error says how many there were. */
static void record_skip(struct plugin_call *c, const char *plugin, enum plugin_kind kind,
                        const char *err)
{
    if (c->skip_rec < 0) {
        c->skip_rec = c->n_rec;
        record(c, plugin, kind, "skipped", 0, err);
    }
    struct plugin_record *r = &c->rec[c->skip_rec];
    char *old = (char *)r->error;
    char *tail = strstr(old, "; calls skipped: ");
    if (tail)
        *tail = '\0';
    r->error = xasprintf("%s; calls skipped: %d", old, c->batch.skipped);
    free(old);
}

static int run_hook(struct hook_job *h, char *err, size_t err_len)
{
    struct plugin_set *s = h->c->set;
    int64_t t0 = plugin__now_ns();
    pthread_mutex_lock(&s->mu);
    s->cur_call = h->c;
    int rc = run_call(s, h->idx, s->p[h->idx].name, hook_tramp, h, &h->c->batch, err, err_len);
    s->cur_call = NULL;
    pthread_mutex_unlock(&s->mu);
    if (rc == RUN_SKIPPED) {
        record_skip(h->c, s->p[h->idx].name, h->kind, err);
        return -1;
    }
    const char *outcome = rc < 0                                                       ? "error"
                          : h->kind == PLUGIN_EXECUTOR && h->veto && *h->veto          ? "veto"
                          : h->kind == PLUGIN_EXCLUSION && h->excluded && *h->excluded ? "excluded"
                                                                                       : "ok";
    record(h->c, s->p[h->idx].name, h->kind, outcome, (plugin__now_ns() - t0) / 1000,
           rc < 0 ? err : NULL);
    return rc;
}

static int hook_excluded(void *ud, const struct core_config *cfg, int64_t now, bool *excluded,
                         char *why, size_t why_len, char *err, size_t err_len)
{
    (void)cfg;
    struct plugin_call *c = ud;
    *excluded = false;
    for (int i = 0; i < c->set->n; i++) {
        if (c->set->p[i].kind != PLUGIN_EXCLUSION)
            continue;
        struct hook_job h = {.c = c,
                             .idx = i,
                             .kind = PLUGIN_EXCLUSION,
                             .now = now,
                             .excluded = excluded,
                             .why = why,
                             .why_len = why_len};
        if (run_hook(&h, err, err_len) < 0) {
            *excluded = false;
            return -1;
        }
        if (*excluded)
            return 0;
    }
    return 0;
}

static int hook_evaluate(void *ud, const char *name, const struct core_vertex_in *v,
                         struct core_evaluated *ev, bool backlog, int64_t now, char *err,
                         size_t err_len)
{
    struct plugin_call *c = ud;
    int idx = resolve(c, PLUGIN_EVALUATOR, name, err, err_len);
    if (idx < 0)
        return -1;
    struct hook_job h = {.c = c,
                         .idx = idx,
                         .inst = name,
                         .kind = PLUGIN_EVALUATOR,
                         .now = now,
                         .v = v,
                         .ev = ev,
                         .backlog = backlog};
    return run_hook(&h, err, err_len);
}

static int hook_execute(void *ud, const char *name, struct core_decision *d, int64_t now,
                        bool *veto, char *err, size_t err_len)
{
    struct plugin_call *c = ud;
    *veto = false;
    int idx = resolve(c, PLUGIN_EXECUTOR, name, err, err_len);
    if (idx < 0)
        return -1;
    char why[512] = "";
    struct hook_job h = {.c = c,
                         .idx = idx,
                         .inst = name,
                         .kind = PLUGIN_EXECUTOR,
                         .now = now,
                         .d = d,
                         .veto = veto,
                         .why = why,
                         .why_len = sizeof why};
    if (run_hook(&h, err, err_len) < 0) {
        *veto = false;
        return -1;
    }
    if (*veto)
        copy_str(err, err_len, why);
    return 0;
}

static int hook_align(void *ud, const char *name, const struct core_align_ctx *a, int *out,
                      char *err, size_t err_len)
{
    struct plugin_call *c = ud;
    int idx = resolve(c, PLUGIN_ALIGNMENT, name, err, err_len);
    if (idx < 0)
        return -1;
    int v = a->proposed;
    struct hook_job h = {
        .c = c, .idx = idx, .inst = name, .kind = PLUGIN_ALIGNMENT, .now = 0, .a = a, .out = &v};
    h.now = c->sm ? c->sm->at : 0;
    if (run_hook(&h, err, err_len) < 0)
        return -1;
    *out = v;
    return 0;
}

struct plugin_call *plugin_call_new(struct plugin_set *set, const char *job,
                                    const struct opt_job *opts, struct core_config *cfg,
                                    const struct core_state *st, const struct core_sample *sm)
{
    struct plugin_call *c = calloc(1, sizeof *c);
    if (!c)
        abort();
    c->set = set;
    c->job = job;
    c->opts = opts;
    c->st = st;
    c->sm = sm;
    c->ref_config = c->ref_job = LUA_NOREF;
    batch_init(&c->batch, "decision", &set->lim, 1);
    c->batch.decision = true;
    c->skip_rec = -1;
    if (cfg && cfg->n_executors > 1) {
        int n = cfg->n_executors;
        c->exec_sorted = malloc((size_t)n * sizeof *c->exec_sorted);
        double *prio = malloc((size_t)n * sizeof *prio);
        if (!c->exec_sorted || !prio)
            abort();
        char err[256];
        for (int i = 0; i < n; i++) {
            c->exec_sorted[i] = cfg->executors[i];
            int idx = resolve(c, PLUGIN_EXECUTOR, cfg->executors[i], err, sizeof err);
            prio[i] = idx >= 0 ? set->p[idx].priority : 0;
        }
        /* stable insertion sort: equal priorities keep the listed order */
        for (int i = 1; i < n; i++) {
            const char *x = c->exec_sorted[i];
            double px = prio[i];
            int j = i - 1;
            for (; j >= 0 && prio[j] > px; j--) {
                c->exec_sorted[j + 1] = c->exec_sorted[j];
                prio[j + 1] = prio[j];
            }
            c->exec_sorted[j + 1] = x;
            prio[j + 1] = px;
        }
        free(prio);
        cfg->executors = c->exec_sorted;
    }
    return c;
}

void plugin_call_free(struct plugin_call *c)
{
    if (!c)
        return;
    wd_set(0); /* the decision's deadline (run_call left it armed) */
    if (c->ref_config != LUA_NOREF || c->ref_job != LUA_NOREF) {
        pthread_mutex_lock(&c->set->mu);
        luaL_unref(c->set->L, LUA_REGISTRYINDEX, c->ref_config);
        luaL_unref(c->set->L, LUA_REGISTRYINDEX, c->ref_job);
        pthread_mutex_unlock(&c->set->mu);
    }
    for (int i = 0; i < c->n_rec; i++) {
        free((char *)c->rec[i].plugin);
        free((char *)c->rec[i].error);
    }
    free(c->rec);
    free(c->exec_sorted);
    free(c);
}

int plugin_call_n_records(const struct plugin_call *c)
{
    return c->n_rec;
}

const struct plugin_record *plugin_call_record(const struct plugin_call *c, int i)
{
    return &c->rec[i];
}

void plugin_call_hooks(struct plugin_call *c, struct core_hooks *h)
{
    memset(h, 0, sizeof *h);
    h->ud = c;
    bool has_excl = false;
    for (int i = 0; i < c->set->n; i++)
        has_excl |= c->set->p[i].kind == PLUGIN_EXCLUSION;
    h->excluded = has_excl ? hook_excluded : cron_excluded_hook;
    h->evaluate = hook_evaluate;
    h->execute = hook_execute;
    h->align = hook_align;
}

/* ------------------------------------------------------------------ JSON -- */

void plugin__push_json_value(lua_State *L, json_t *v, int depth);
void plugin__push_json_value(lua_State *L, json_t *v, int depth)
{
    if (depth > 64)
        luaL_error(L, "JSON nested too deep");
    luaL_checkstack(L, 4, "JSON");
    switch (json_typeof(v)) {
    case JSON_OBJECT: {
        lua_newtable(L);
        const char *k;
        json_t *x;
        json_object_foreach(v, k, x)
        {
            plugin__push_json_value(L, x, depth + 1);
            lua_setfield(L, -2, k);
        }
        break;
    }
    case JSON_ARRAY: {
        lua_newtable(L);
        size_t i;
        json_t *x;
        json_array_foreach(v, i, x)
        {
            plugin__push_json_value(L, x, depth + 1);
            lua_rawseti(L, -2, (lua_Integer)i + 1);
        }
        break;
    }
    case JSON_STRING:
        lua_pushlstring(L, json_string_value(v), json_string_length(v));
        break;
    case JSON_INTEGER:
        lua_pushinteger(L, (lua_Integer)json_integer_value(v));
        break;
    case JSON_REAL:
        lua_pushnumber(L, json_real_value(v));
        break;
    case JSON_TRUE:
        lua_pushboolean(L, 1);
        break;
    case JSON_FALSE:
        lua_pushboolean(L, 0);
        break;
    default:
        lua_pushnil(L);
        break;
    }
}

void plugin__push_json(lua_State *L, const char *text, const char *what)
{
    json_error_t je;
    json_t *v = json_loads(text, JSON_DECODE_ANY, &je);
    if (!v)
        luaL_error(L, "%s: bad JSON: %s", what, je.text);
    plugin__push_json_value(L, v, 0);
    json_decref(v);
}

static json_t *to_json(lua_State *L, int idx, int depth)
{
    idx = lua_absindex(L, idx);
    switch (lua_type(L, idx)) {
    case LUA_TNIL:
        return json_null();
    case LUA_TBOOLEAN:
        return json_boolean(lua_toboolean(L, idx));
    case LUA_TNUMBER:
        if (lua_isinteger(L, idx))
            return json_integer((json_int_t)lua_tointeger(L, idx));
        return isfinite(lua_tonumber(L, idx)) ? json_real(lua_tonumber(L, idx)) : json_null();
    case LUA_TSTRING:
        return json_stringn(lua_tostring(L, idx), lua_rawlen(L, idx));
    case LUA_TTABLE: {
        if (depth > 32)
            return json_string("<nested too deep>");
        size_t n = lua_rawlen(L, idx);
        size_t count = 0;
        lua_pushnil(L);
        while (lua_next(L, idx)) {
            count++;
            lua_pop(L, 1);
        }
        if (n > 0 && count == n) {
            json_t *a = json_array();
            for (size_t i = 1; i <= n; i++) {
                lua_rawgeti(L, idx, (lua_Integer)i);
                json_array_append_new(a, to_json(L, -1, depth + 1));
                lua_pop(L, 1);
            }
            return a;
        }
        json_t *o = json_object();
        lua_pushnil(L);
        while (lua_next(L, idx)) {
            char key[64];
            const char *k;
            if (lua_type(L, -2) == LUA_TSTRING) {
                k = lua_tostring(L, -2);
            } else {
                lua_pushvalue(L, -2);
                snprintf(key, sizeof key, "%s", luaL_tolstring(L, -1, NULL));
                lua_pop(L, 2);
                k = key;
            }
            json_object_set_new(o, k, to_json(L, -1, depth + 1));
            lua_pop(L, 1);
        }
        return o;
    }
    default: {
        char buf[64];
        snprintf(buf, sizeof buf, "<%s>", luaL_typename(L, idx));
        return json_string(buf);
    }
    }
}

char *plugin__to_json(lua_State *L, int idx)
{
    json_t *j = to_json(L, idx, 0);
    char *s =
        json_dumps(j, JSON_COMPACT | JSON_ENCODE_ANY | JSON_SORT_KEYS | JSON_REAL_PRECISION(15));
    json_decref(j);
    return s;
}

struct json_job {
    int idx;
    const char *args, *ctx;
    char *out;
};

static int json_tramp(lua_State *L)
{
    struct json_job *j = lua_touserdata(L, 1);
    struct plugin_set *s = plugin__set(L);
    struct plugin__one *p = &s->p[j->idx];
    lua_settop(L, 0);
    plugin__push_json(L, j->ctx ? j->ctx : "{}", "ctx");
    if (!lua_istable(L, 1))
        luaL_error(L, "ctx: a JSON object is needed");
    static const char *const parts[] = {"params", "config", "job"};
    for (int i = 0; i < 3; i++) {
        if (lua_getfield(L, 1, parts[i]) != LUA_TTABLE) {
            lua_pop(L, 1);
            lua_newtable(L);
        }
        char what[32];
        snprintf(what, sizeof what, "ctx.%s", parts[i]);
        deep_readonly(L, what, 0);
    }
    lua_getfield(L, 1, "now");
    int64_t now = (int64_t)lua_tonumber(L, -1);
    lua_pop(L, 1);
    plugin__push_json(L, j->args ? j->args : "[]", "args");
    int args = lua_gettop(L);
    int base = args;
    lua_rawgeti(L, LUA_REGISTRYINDEX, p->ref_fn);
    int n = (int)lua_rawlen(L, args);
    luaL_checkstack(L, n + 4, "args");
    for (int i = 1; i <= n; i++)
        lua_rawgeti(L, args, i);
    plugin__push_ctx(L, p->name, 2, 3, 4, now);
    lua_getfield(L, 1, "backlog");
    lua_setfield(L, -2, "backlog");
    lua_call(L, n + 1, LUA_MULTRET);
    int nres = lua_gettop(L) - base;
    json_t *a = json_array();
    for (int i = 1; i <= nres; i++)
        json_array_append_new(a, to_json(L, base + i, 0));
    j->out = json_dumps(a, JSON_COMPACT | JSON_SORT_KEYS | JSON_REAL_PRECISION(17));
    json_decref(a);
    return 0;
}

int plugin_call_json(struct plugin_set *s, const char *name, const char *args_json,
                     const char *ctx_json, char **outp, char **errp)
{
    *outp = NULL;
    int idx = plugin_set_find(s, name);
    if (idx < 0) {
        *errp = xasprintf("no plugin named \"%s\" in policy revision %s", name, s->revision);
        return -1;
    }
    struct json_job j = {.idx = idx, .args = args_json, .ctx = ctx_json};
    char err[1024];
    pthread_mutex_lock(&s->mu);
    int rc = run_call(s, idx, name, json_tramp, &j, NULL, err, sizeof err);
    pthread_mutex_unlock(&s->mu);
    if (rc < 0) {
        free(j.out);
        *errp = xstrdup(err);
        return -1;
    }
    *outp = j.out;
    return 0;
}
