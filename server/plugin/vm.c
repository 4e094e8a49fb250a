/*
 * vm.c - a Lua state under the host's limits (see vm.h): the capped allocator, the count
 * hook, the deadline watchdog, batches, protected calls and the log rate.
 *
 * Where the limits are checked: the count hook (every HOOK_STEP VM instructions, and at
 * every instruction once a call has been stopped, so nothing a plugin left pending, such as
 * a to-be-closed variable's __close, runs on); vm_charge, which every library function calls
 * before it does work proportional to its arguments; the allocator, which charges what a
 * call allocates; and the watchdog for the deadline.
 */
#include <errno.h>
#include <lauxlib.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "base/log.h"
#include "options/options.h"
#include "plugin/vm.h"
#include "base/xmem.h"

#define HOOK_STEP 1000 /* instructions between two count-hook checks */

/* ------------------------------------------------------------- limits -- */

void plugin_limits_from(struct plugin_limits *l, const struct opt_server *srv)
{
    struct opt_server defaults;
    if (!srv) { /* the options table's defaults: the one place they are written */
        opt_server_init(&defaults);
        srv = &defaults;
    }
    l->instructions = srv->plugin_instructions;
    l->timeout_ms = srv->plugin_timeout_ms;
    l->decision_instructions = srv->plugin_decision_instructions;
    l->decision_timeout_ms = srv->plugin_decision_timeout_ms;
    l->memory_bytes = srv->plugin_memory_bytes;
    if (srv == &defaults)
        opt_server_deinit(&defaults);
}

void plugin_limits_offline(struct plugin_limits *l, const struct opt_server *srv)
{
    plugin_limits_from(l, srv);
    l->timeout_ms = PLUGIN_OFFLINE_TIMEOUT_MS;
    l->decision_timeout_ms = PLUGIN_OFFLINE_TIMEOUT_MS;
}

static int64_t imax64(int64_t a, int64_t b)
{
    return a > b ? a : b;
}

/* in with every field <= 0 replaced by its default (see vm_open). */
static void limits_resolve(struct plugin_limits *out, const struct plugin_limits *in)
{
    struct plugin_limits d;
    plugin_limits_from(&d, NULL);
    out->instructions = in && in->instructions > 0 ? in->instructions : d.instructions;
    out->timeout_ms = in && in->timeout_ms > 0 ? in->timeout_ms : d.timeout_ms;
    out->memory_bytes = in && in->memory_bytes > 0 ? in->memory_bytes : d.memory_bytes;
    out->decision_instructions = in && in->decision_instructions > 0
                                     ? in->decision_instructions
                                     : imax64(d.decision_instructions, out->instructions);
    out->decision_timeout_ms = in && in->decision_timeout_ms > 0
                                   ? in->decision_timeout_ms
                                   : imax64(d.decision_timeout_ms, out->timeout_ms);
}

int64_t vm_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* t0 + ms milliseconds in ns, saturating (a limit of "1000000 d" must not wrap around). */
static int64_t after_ms(int64_t t0, int64_t ms)
{
    return ms > (INT64_MAX - t0) / 1000000 ? INT64_MAX : t0 + ms * 1000000;
}

struct vm *vm_of(lua_State *L)
{
    return *(struct vm **)lua_getextraspace(L);
}

static void count_hook(lua_State *L, lua_Debug *ar);

/* Every further instruction of the running call raises again. */
static void stick(lua_State *L)
{
    lua_sethook(L, count_hook, LUA_MASKCOUNT, 1);
}

/* ----------------------------------------------------------- watchdog -- */

/*
 * One VM instruction can take milliseconds (the string-to-number conversion of a 60 MB
 * string as a for loop's limit, a concatenation of two 30 MB strings), so a loop of them
 * would run seconds past the deadline before the count hook next looks at the clock. A
 * per-thread POSIX timer raises WD_SIGNAL at the deadline on the thread running the call;
 * the handler makes the hook run at the very next instruction (lua_sethook may be called
 * from a signal handler: lua.c stops a script on SIGINT the same way).
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

void vm_decision_done(void)
{
    wd_set(0);
}

/* ---------------------------------------------------------- allocator -- */

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

static void stop_at_next(struct vm *vm, enum vm_kill why)
{
    if (!vm->killed)
        vm->killed = why;
    stick(vm->L);
}

static void alloc_charge(struct vm *vm, size_t grow)
{
    if (!vm->in_call || vm->killed)
        return;
    vm->alloc_bytes += grow;
    vm->used += (int64_t)(vm->alloc_bytes / ALLOC_BYTES_PER_INSTR);
    vm->alloc_bytes %= ALLOC_BYTES_PER_INSTR;
    if (vm->used > vm->budget) {
        stop_at_next(vm, VM_KILL_BUDGET);
        return;
    }
    vm->alloc_clock += grow;
    if (vm->alloc_clock >= CLOCK_BYTES) {
        vm->alloc_clock = 0;
        if (vm_now_ns() >= vm->deadline_ns)
            stop_at_next(vm, VM_KILL_DEADLINE);
    }
}

/*
 * The capped allocator: growing past the cap fails (Lua then raises a memory error after
 * an emergency collection) and stops the call; shrinking and freeing always succeed.
 *
 * The one allocation of the server that does not follow xmem.h (abort on failure): a
 * lua_Alloc must return NULL when it cannot allocate, by Lua's contract, so that the memory
 * error is the failing call's alone and the state stays usable.
 */
static void *capped_alloc(void *ud, void *ptr, size_t osize, size_t nsize)
{
    struct vm *vm = ud;
    size_t old = ptr ? osize : 0;
    if (nsize == 0) {
        free(ptr);
        vm->mem_used -= old;
        return NULL;
    }
    if (nsize > old) {
        if (nsize - old > vm->mem_cap - vm->mem_used) {
            if (vm->in_call)
                stop_at_next(vm, VM_KILL_MEMORY);
            return NULL;
        }
        alloc_charge(vm, nsize - old);
    }
    void *p = realloc(ptr, nsize);
    if (p)
        vm->mem_used = vm->mem_used - old + nsize;
    return p;
}

static int panic(lua_State *L)
{
    log_msg(LOG_ERROR, "plugin", "unprotected Lua error", "error=\"%s\"", lua_tostring(L, -1));
    abort();
}

int vm_open(struct vm *vm, const struct plugin_limits *lim, char **errp)
{
    memset(vm, 0, sizeof *vm);
    limits_resolve(&vm->lim, lim);
    vm->mem_cap = (size_t)vm->lim.memory_bytes;
    vm->L = lua_newstate(capped_alloc, vm);
    if (!vm->L) {
        *errp = xstrdup("cannot create a Lua state");
        return -1;
    }
    *(struct vm **)lua_getextraspace(vm->L) = vm;
    lua_atpanic(vm->L, panic);
    return 0;
}

void vm_close(struct vm *vm)
{
    if (vm->L)
        lua_close(vm->L);
    vm->L = NULL;
}

/* ----------------------------------------------------------- charging -- */

void vm_stop(lua_State *L)
{
    stick(L);
}

int vm_kill(lua_State *L, enum vm_kill why, const char *detail)
{
    struct vm *vm = vm_of(L);
    lua_pushstring(L, detail ? detail : "stopped by the host");
    if (!vm->killed)
        vm->killed = why;
    stick(L);
    return lua_error(L);
}

void vm_charge(lua_State *L, int64_t n)
{
    struct vm *vm = vm_of(L);
    if (!vm->in_call)
        return;
    vm->used += n;
    if (vm->killed)
        vm_kill(L, vm->killed, NULL);
    if (vm->used > vm->budget)
        vm_kill(L, VM_KILL_BUDGET, NULL);
    if (vm_now_ns() >= vm->deadline_ns)
        vm_kill(L, VM_KILL_DEADLINE, NULL);
}

void vm_charge_units(lua_State *L, lua_Unsigned n, int64_t per)
{
    lua_Unsigned cap = (lua_Unsigned)(INT64_MAX / 4) / (lua_Unsigned)(per > 0 ? per : 1);
    vm_charge(L, (int64_t)(n > cap ? cap : n) * (per > 0 ? per : 1));
}

int64_t vm_weigh(lua_State *L, int i)
{
    return lua_type(L, i) == LUA_TSTRING ? (int64_t)lua_rawlen(L, i) : 1;
}

/* Charges the instructions run since the hook last ran (HOOK_STEP, or 1 once the call is
 * stopped or the watchdog fired). */
static void count_hook(lua_State *L, lua_Debug *ar)
{
    (void)ar;
    int n = lua_gethookcount(L);
    vm_charge(L, n);
    /* still running: the timer fired for a deadline that is not this call's (it raced
     * with a re-arm), so back to the usual step */
    if (n == 1) {
        struct vm *vm = vm_of(L);
        int64_t left = vm->budget - vm->used;
        lua_sethook(L, count_hook, LUA_MASKCOUNT,
                    left < HOOK_STEP ? (int)(left > 0 ? left : 1) : HOOK_STEP);
    }
}

/* -------------------------------------------------------------- calls -- */

/* The message handler of every host call: the error as text with the file:line of the
 * innermost Lua frame when it has none, followed by a traceback. It runs no Lua code (an
 * error object's __tostring is not called): a handler runs with the hooks off when the
 * error came from the count hook, so plugin code here would run unbounded. */
static int msgh(lua_State *L)
{
    enum vm_kill k = vm_of(L)->killed;
    if (k && k != VM_KILL_PATTERN)
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
static void kill_message(struct vm *vm, const char *label, char *err, size_t err_len)
{
    const struct vm_batch *b = vm->batch;
    switch (vm->killed) {
    case VM_KILL_BUDGET:
        if (b && vm->budget_of_batch)
            snprintf(err, err_len,
                     "%s: the %s's plugin budget is spent (%lld instructions across its "
                     "plugin calls)",
                     label, b->what, (long long)b->budget);
        else
            snprintf(err, err_len, "%s: instruction budget exceeded (%lld instructions)", label,
                     (long long)vm->budget);
        break;
    case VM_KILL_DEADLINE:
        if (b && vm->deadline_of_batch)
            snprintf(err, err_len,
                     "%s: the %s's plugin deadline passed (%lld ms across its plugin calls)", label,
                     b->what, (long long)b->timeout_ms);
        else
            snprintf(err, err_len, "%s: deadline exceeded (%lld ms)", label,
                     (long long)vm->lim.timeout_ms);
        break;
    case VM_KILL_MEMORY:
        snprintf(err, err_len, "%s: out of memory (cap %zu bytes)", label, vm->mem_cap);
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

void vm_batch_init(struct vm_batch *b, const char *what, const struct plugin_limits *l, int times)
{
    memset(b, 0, sizeof *b);
    b->what = what;
    b->budget = l->decision_instructions;
    b->timeout_ms =
        l->decision_timeout_ms > INT64_MAX / times ? INT64_MAX : l->decision_timeout_ms * times;
}

/* The message of a call not run because its batch is spent. */
static void skip_message(const struct vm_batch *b, const char *label, char *err, size_t err_len)
{
    snprintf(err, err_len,
             "%s: not run: the %s's plugin budget is spent (%lld of %lld instructions, deadline "
             "%lld ms, %d calls run)",
             label, b->what, (long long)b->used, (long long)b->budget, (long long)b->timeout_ms,
             b->calls);
}

static void log_flush(struct vm *vm, struct vm_owner *owner, const char *who);

int vm_run(struct vm *vm, struct vm_owner *owner, const char *label, int (*fn)(lua_State *L),
           void *ud, struct vm_batch *b, char *err, size_t err_len)
{
    lua_State *L = vm->L;
    int base = lua_gettop(L);
    int64_t t0 = vm_now_ns();
    int64_t budget = vm->lim.instructions;
    int64_t deadline = after_ms(t0, vm->lim.timeout_ms);
    vm->budget_of_batch = vm->deadline_of_batch = false;
    if (b) {
        if (!b->deadline_ns)
            b->deadline_ns = after_ms(t0, b->timeout_ms);
        if (b->spent || b->used >= b->budget || t0 >= b->deadline_ns) {
            b->spent = true;
            b->skipped++;
            skip_message(b, label, err, err_len);
            return VM_SKIPPED;
        }
        if (b->budget - b->used < budget) {
            budget = b->budget - b->used;
            vm->budget_of_batch = true;
        }
        if (b->deadline_ns < deadline) {
            deadline = b->deadline_ns;
            vm->deadline_of_batch = true;
        }
    }
    vm->batch = b;
    vm->killed = VM_KILL_NONE;
    vm->used = 0;
    vm->budget = budget;
    vm->deadline_ns = deadline;
    vm->alloc_bytes = vm->alloc_clock = 0;
    vm->log_lines = 0;
    vm->cur_name = label;
    vm->cur_owner = owner;
    vm->in_call = true;
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
        wd_set(0); /* a decision's stays armed for its next call (vm_decision_done) */
    wd_L = NULL;
    atomic_signal_fence(memory_order_seq_cst);
    vm->in_call = false;
    lua_sethook(L, NULL, 0, 0);
    int rc = 0;
    if (st != LUA_OK) {
        rc = -1;
        if (st == LUA_ERRMEM && !vm->killed)
            vm->killed = VM_KILL_MEMORY;
        if (vm->killed && vm->killed != VM_KILL_PATTERN) {
            kill_message(vm, label, err, err_len);
        } else {
            const char *m = lua_tostring(L, -1);
            m = m ? m : "error";
            const char *nl = strchr(m, '\n');
            int n = nl ? (int)(nl - m) : (int)strlen(m);
            snprintf(err, err_len, "%.*s", n, m);
            if (nl)
                log_msg(LOG_DEBUG, "plugin", m, "plugin=%s", label);
        }
        if (vm->killed == VM_KILL_MEMORY)
            lua_gc(L, LUA_GCCOLLECT, 0);
    }
    lua_settop(L, base);
    if (b) {
        b->used += vm->used;
        b->calls++;
        if ((vm->killed == VM_KILL_BUDGET && vm->budget_of_batch) ||
            (vm->killed == VM_KILL_DEADLINE && vm->deadline_of_batch))
            b->spent = true;
    }
    if (owner) {
        owner->calls++;
        owner->errors += rc < 0;
        owner->time_us += (uint64_t)((vm_now_ns() - t0) / 1000);
    }
    log_flush(vm, owner, label);
    vm->batch = NULL;
    vm->cur_name = NULL;
    vm->cur_owner = NULL;
    return rc;
}

/* ----------------------------------------------------------- log rate -- */

/*
 * The log rate of plugins. A plugin's lines (governor.log, ctx.log, print, from any of its
 * files) are written while it has tokens: LOG_BURST at first, LOG_RATE more each second,
 * and at most LOG_PER_CALL in one call; the rest are counted, and the count is written as
 * one line ("N log lines suppressed") as soon as the plugin may log again (at the end of a
 * call at the latest).
 */
#define LOG_PER_CALL 20
#define LOG_BURST    100
#define LOG_RATE     10.0 /* lines per second */

static void emit_log(struct vm *vm, const char *plugin, const char *msg)
{
    if (vm->log_fn)
        vm->log_fn(vm->log_ud, plugin, msg);
    else
        log_msg(LOG_INFO, "plugin", msg, "plugin=%s revision=%s", plugin,
                vm->revision ? vm->revision : "");
}

/* Tops the bucket up for the time since it last was; true when a line may be written. */
static bool log_take(struct vm_lograte *g)
{
    int64_t now = vm_now_ns();
    if (!g->refill_ns) {
        g->tokens = LOG_BURST;
    } else {
        g->tokens += (double)(now - g->refill_ns) / 1e9 * LOG_RATE;
        if (g->tokens > LOG_BURST)
            g->tokens = LOG_BURST;
    }
    g->refill_ns = now;
    if (g->tokens < 1)
        return false;
    g->tokens -= 1;
    return true;
}

static void log_report(struct vm *vm, struct vm_lograte *g, const char *who)
{
    char m[256];
    snprintf(m, sizeof m,
             "%llu log lines suppressed (a plugin logs at most %d lines per call, and %d at once "
             "then %g a second)",
             (unsigned long long)g->suppressed, LOG_PER_CALL, LOG_BURST, LOG_RATE);
    g->suppressed = 0;
    emit_log(vm, who, m);
}

/* Reports the lines of owner dropped so far, if any and its rate allows. */
static void log_flush(struct vm *vm, struct vm_owner *owner, const char *who)
{
    struct vm_lograte *g = owner ? &owner->log : &vm->log_other;
    if (g->suppressed && log_take(g))
        log_report(vm, g, owner ? owner->name : who);
}

void vm_log_line(struct vm *vm, struct vm_owner *owner, const char *who, const char *msg)
{
    struct vm_lograte *g = owner ? &owner->log : &vm->log_other;
    if (vm->log_lines >= LOG_PER_CALL || !log_take(g)) {
        g->suppressed++;
        return;
    }
    vm->log_lines++;
    if (g->suppressed)
        log_report(vm, g, who);
    emit_log(vm, who, msg);
}
