/*
 * policies.c - the active policy revision of a running server (see policies.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/log.h"
#include "plugin/policies.h"
#include "base/xmem.h"

#define DEBOUNCE_MS 300

struct pol {
    const char *dir;
    struct plugin_limits lim;
    struct plugin_set *active; /* NULL: no policies directory, the native decisions */
    void (*on_change)(void *ud, const struct pol_outcome *o);
    void *ud;
    /* the last reload */
    int64_t last_at;
    bool last_ok;
    char *last_error;
    char last_trigger[16];
    /* inotify */
    int ino_fd;
    struct event *ino_ev, *debounce;
};

static int64_t wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void file_cb(void *ud, const char *path, const char *hash)
{
    json_object_set_new(ud, path, json_string(hash));
}

/* Tells on_change about the revision now active (or the failure). */
static void announce(struct pol *p, const char *trigger, const char *error)
{
    if (!p->on_change)
        return;
    struct pol_outcome o = {.trigger = trigger, .error = error, .loaded_at = wall_ms()};
    char *files = NULL;
    if (!error) {
        json_t *f = json_object();
        if (p->active) {
            plugin_set_each_file(p->active, file_cb, f);
            o.loaded_at = plugin_set_loaded_at(p->active);
        }
        files = json_dumps(f, JSON_COMPACT | JSON_SORT_KEYS);
        json_decref(f);
        o.revision = p->active ? plugin_set_revision(p->active) : "native";
        o.files_json = files;
    }
    p->on_change(p->ud, &o);
    free(files);
}

/* Loads dir into *out: NULL (no error) when the directory does not exist. */
static int load(struct pol *p, struct plugin_set **out, char **errp)
{
    struct stat sb;
    *out = NULL;
    if (stat(p->dir, &sb) < 0 && errno == ENOENT)
        return 0;
    return plugin_set_load(p->dir, &p->lim, out, errp);
}

int pol_reload(struct pol *p, const char *trigger, char **errp)
{
    struct plugin_set *s = NULL;
    char *err = NULL;
    p->last_at = wall_ms();
    snprintf(p->last_trigger, sizeof p->last_trigger, "%s", trigger);
    free(p->last_error);
    p->last_error = NULL;
    if (load(p, &s, &err) < 0) {
        p->last_ok = false;
        p->last_error = xstrdup(err);
        log_msg(LOG_WARN, "policies", "reload failed: the previous revision stays active",
                "trigger=%s active=%s error=\"%s\"", trigger,
                p->active ? plugin_set_revision(p->active) : "native", err);
        announce(p, trigger, err);
        *errp = err;
        return -1;
    }
    p->last_ok = true;
    const char *before = p->active ? plugin_set_revision(p->active) : "native";
    const char *after = s ? plugin_set_revision(s) : "native";
    log_msg(LOG_INFO, "policies", "reloaded", "trigger=%s from=%s to=%s plugins=%d", trigger,
            before, after, s ? plugin_set_count(s) : 0);
    /* Decisions that hold a reference finish on the old revision. */
    struct plugin_set *old = p->active;
    p->active = s;
    if (old)
        plugin_set_unref(old);
    announce(p, trigger, NULL);
    return 0;
}

static void debounce_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    char *err = NULL;
    pol_reload(arg, "watch", &err);
    free(err);
}

/* inotify: drain the events and (re)arm the debounce timer, so a burst of writes (an editor
 * saving, a git checkout) gives one reload after it settles. */
static void ino_cb(evutil_socket_t fd, short what, void *arg)
{
    struct pol *p = arg;
    (void)what;
    char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
    while (read(fd, buf, sizeof buf) > 0)
        ;
    struct timeval tv = {DEBOUNCE_MS / 1000, (DEBOUNCE_MS % 1000) * 1000};
    event_add(p->debounce, &tv);
}

static void watch(struct pol *p, struct event_base *base)
{
    p->ino_fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    if (p->ino_fd < 0) {
        log_msg(LOG_WARN, "policies", "no inotify: reload with SIGHUP or the API", "error=\"%s\"",
                strerror(errno));
        return;
    }
    uint32_t mask = IN_CLOSE_WRITE | IN_MOVED_TO | IN_MOVED_FROM | IN_CREATE | IN_DELETE;
    char lib[4096];
    snprintf(lib, sizeof lib, "%s/lib", p->dir);
    if (inotify_add_watch(p->ino_fd, p->dir, mask) < 0)
        log_msg(LOG_WARN, "policies", "cannot watch the policies directory", "dir=%s error=\"%s\"",
                p->dir, strerror(errno));
    inotify_add_watch(p->ino_fd, lib, mask); /* optional */
    p->ino_ev = event_new(base, p->ino_fd, EV_READ | EV_PERSIST, ino_cb, p);
    p->debounce = evtimer_new(base, debounce_cb, p);
    event_add(p->ino_ev, NULL);
}

struct pol *pol_new(const char *dir, const struct plugin_limits *lim, struct event_base *base,
                    void (*on_change)(void *ud, const struct pol_outcome *o), void *ud, char **errp)
{
    struct pol *p = xcalloc(1, sizeof *p);
    p->dir = dir;
    p->lim = *lim;
    p->ino_fd = -1;
    p->on_change = on_change;
    p->ud = ud;
    p->last_at = wall_ms();
    p->last_ok = true;
    snprintf(p->last_trigger, sizeof p->last_trigger, "start");
    if (load(p, &p->active, errp) < 0) {
        free(p);
        return NULL;
    }
    if (!p->active)
        log_msg(LOG_WARN, "policies", "no policies directory: native decisions only", "dir=%s",
                dir);
    else
        log_msg(LOG_INFO, "policies", "loaded", "dir=%s revision=%s plugins=%d", dir,
                plugin_set_revision(p->active), plugin_set_count(p->active));
    if (base)
        watch(p, base);
    announce(p, "start", NULL);
    return p;
}

void pol_free(struct pol *p)
{
    if (!p)
        return;
    if (p->ino_ev)
        event_free(p->ino_ev);
    if (p->debounce)
        event_free(p->debounce);
    if (p->ino_fd >= 0)
        close(p->ino_fd);
    if (p->active)
        plugin_set_unref(p->active);
    free(p->last_error);
    free(p);
}

struct plugin_set *pol_acquire(struct pol *p)
{
    return p && p->active ? plugin_set_ref(p->active) : NULL;
}

json_t *pol_describe(struct pol *p)
{
    json_t *plugins = json_array();
    struct plugin_set *s = p->active;
    for (int i = 0; s && i < plugin_set_count(s); i++) {
        struct plugin_info in;
        plugin_set_info(s, i, &in);
        json_array_append_new(
            plugins, json_pack("{s:s, s:s, s:s, s:s, s:I, s:f, s:I, s:I, s:I}", "name", in.name,
                               "kind", plugin_kind_name(in.kind), "file", in.file, "hash", in.hash,
                               "loaded_at", (json_int_t)in.loaded_at, "priority", in.priority,
                               "calls", (json_int_t)in.calls, "errors", (json_int_t)in.errors,
                               "time_us", (json_int_t)in.time_us));
    }
    json_t *last = json_pack("{s:I, s:b, s:s}", "at", (json_int_t)p->last_at, "ok", p->last_ok,
                             "trigger", p->last_trigger);
    json_object_set_new(last, "error", p->last_error ? json_string(p->last_error) : json_null());
    return json_pack("{s:s, s:s, s:o, s:o}", "revision", s ? plugin_set_revision(s) : "native",
                     "dir", p->dir, "plugins", plugins, "last_reload", last);
}
