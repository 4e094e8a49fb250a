/*
 * spawn_shim.c - preloaded into `governor serve` when it runs under valgrind for the profile
 * (tests/bench/profile.py). The server starts its SQL query processes from /proc/self/exe,
 * which under valgrind is valgrind's tool binary, not governor: this posix_spawn starts the
 * file named by GOVERNOR_EXE instead, and passes every other call through.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>

int posix_spawn(pid_t *pid, const char *path, const posix_spawn_file_actions_t *fa,
                const posix_spawnattr_t *at, char *const argv[], char *const envp[])
{
    static int (*real)(pid_t *, const char *, const posix_spawn_file_actions_t *,
                       const posix_spawnattr_t *, char *const[], char *const[]);
    if (!real)
        *(void **)&real = dlsym(RTLD_NEXT, "posix_spawn");
    const char *exe = getenv("GOVERNOR_EXE");
    if (exe && strcmp(path, "/proc/self/exe") == 0)
        path = exe;
    return real(pid, path, fa, at, argv, envp);
}
