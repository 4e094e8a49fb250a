/*
 * libgov.h - the `governor` table a plugin sees (prefix libgov_), private to
 * server/plugin/: the native cron, daily-range and period matchers, durations, RFC 3339
 * date-times, the job's metric window, and the plugins' log lines (governor.log, print,
 * ctx.log). sandbox.c's allow list says how each is charged; these parse their text
 * arguments themselves.
 *
 * May call: vm (charging, the log rate, the running call's job state), cron, options
 * (opt_parse_duration), timeutil, core (the metric window, read only), Lua.
 */
#ifndef GOVERNOR_PLUGIN_LIBGOV_H
#define GOVERNOR_PLUGIN_LIBGOV_H

#include <lua.h>

/* governor.cron.matches / governor.daily.matches / governor.periods.matches(expr,
 * epoch_ms [, tz = "UTC"]) -> bool; a bad expression raises its message. */
int libgov_cron(lua_State *L);
int libgov_daily(lua_State *L);
int libgov_periods(lua_State *L);
/* governor.duration("5 min") -> ms. */
int libgov_duration(lua_State *L);
/* governor.time("2026-12-24T00:00:00Z") -> epoch ms (RFC 3339: timeutil's grammar). */
int libgov_time(lua_State *L);
/* governor.window(vertex) -> the metric window's samples of that vertex, oldest first
 * ({at, load, load_avg, load_max, busy_ms, records_in, records_out, records_in_per_s, lag,
 * observed_tpr}, absent figures nil); {} outside a decision. */
int libgov_window(lua_State *L);

/*
 * governor.log(...), print(...) and ctx.log(msg): one log line of the arguments joined by
 * blanks (each cut at 1 KB, the line at 4 KB), charged by its size and subject to the log
 * rate. Upvalue 1, when a string, names who logs (print in a plugin's environment), else the
 * running call's label; upvalue 2, when a light userdata, is the struct vm_owner whose rate
 * applies, else the running call's.
 */
int libgov_log(lua_State *L);

#endif
