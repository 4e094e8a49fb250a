/*
 * sandbox.h - what a plugin's code can reach (prefix sandbox_), private to server/plugin/:
 * the allow list of the globals and libraries every environment gets, kept as data (a
 * table of what each library exposes and how each function is charged or wrapped), the
 * environment of one file, and loading a file's text as a chunk in it (text only,
 * `require` of policies/lib only).
 *
 * May call: vm (charging), pattern, proxy, libstd, libgov, Lua.
 */
#ifndef GOVERNOR_PLUGIN_SANDBOX_H
#define GOVERNOR_PLUGIN_SANDBOX_H

#include <lua.h>
#include <stddef.h>

struct vm_owner;

/* One .lua file of a policies directory, as read (its owner keeps it for the state's life). */
struct sandbox_file {
    char *path; /* relative: "freeze.lua", "lib/util.lua" */
    char *text;
    size_t len;
    char hash[17]; /* FNV-1a 64 of the text, 16 hex digits */
};

/*
 * Builds the shared part of the sandbox in L's registry, from the allow list: read-only
 * proxies of the libraries, the wrapped functions, the string metatable locked. files (n of
 * them, borrowed: they must outlive L) are what `require` may load (their lib/ entries).
 * Runs inside a protected call (it allocates).
 */
void sandbox_open(lua_State *L, const struct sandbox_file *files, int n);

/*
 * Pushes a new environment for a file of plugin `owner`: the allow list's globals, _G,
 * `require` (whose module cache is per owner) and `print` naming owner. own (may be NULL:
 * not a plugin) is whose log rate print is charged to. Runs inside a protected call.
 */
void sandbox_env(lua_State *L, const char *owner, struct vm_owner *own);

/* Loads f's text (text only) as a chunk in a new environment of owner (see sandbox_env)
 * and pushes it; a syntax error or a binary chunk raises. Returns 1. */
int sandbox_load_chunk(lua_State *L, const struct sandbox_file *f, const char *owner,
                       struct vm_owner *own);

#endif
