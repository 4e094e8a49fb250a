/*
 * pattern.h - the pattern-cost dry run (prefix pattern_), private to server/plugin/. Lua's
 * pattern matcher (string.find, match, gmatch, gsub) runs no VM instructions, so the count
 * hook cannot see a pathological pattern such as "(.-)(.-)(.-)x" on a long subject. Before
 * the real function runs, a step-counting copy of the same matching rules goes over the
 * same arguments: its steps are charged to the call, and a call whose steps exceed what is
 * left of the budget is refused with a message naming the pattern.
 *
 * May call: vm (charging), Lua.
 */
#ifndef GOVERNOR_PLUGIN_PATTERN_H
#define GOVERNOR_PLUGIN_PATTERN_H

#include <lua.h>

enum pattern_fn { PATTERN_FIND, PATTERN_MATCH, PATTERN_GMATCH, PATTERN_GSUB };

/* "find" | "match" | "gmatch" | "gsub". */
const char *pattern_fn_name(enum pattern_fn fn);

/*
 * Simulates what Lua's string.<fn> would do with the arguments at 1.. of L (the subject,
 * the pattern, and init or gsub's replacement and count), counting steps; charges the steps
 * (and gsub's replacements) to the running call, and stops the call (uncatchable, the
 * host's VM_KILL_PATTERN with a message naming the pattern and the subject's size) when
 * they exceed what is left of the budget or the deadline passes. A malformed pattern is
 * left to Lua's own function to report.
 */
void pattern_charge(lua_State *L, enum pattern_fn fn);

#endif
