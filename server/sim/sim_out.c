/*
 * sim_out.c - the files governor simulate writes, never one of its inputs (sim_out.h).
 */
#include <errno.h>
#include <string.h>
#include <sys/stat.h>

#include "sim/sim_out.h"
#include "base/xmem.h"

FILE *sim_out_open(const char *dir, const char *name, const char *ext, const char *const *inputs,
                   int n, char **errp)
{
    char *path = xasprintf("%s/%s%s", dir, name, ext);
    struct stat out, in;
    if (stat(path, &out) == 0)
        for (int i = 0; i < n; i++)
            if (stat(inputs[i], &in) == 0 && in.st_dev == out.st_dev && in.st_ino == out.st_ino) {
                *errp = xasprintf("%s would be written over the scenario %s: choose another "
                                  "--out (default ./" SIM_OUT_DEFAULT ")",
                                  path, inputs[i]);
                free(path);
                return NULL;
            }
    FILE *f = fopen(path, "w");
    if (!f)
        *errp = xasprintf("cannot write %s: %s", path, strerror(errno));
    free(path);
    return f;
}
