/*
 * main.c - wires the modules: argv -> the sub-command. It holds no logic of its own.
 */
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "--version") == 0) {
        printf("governor %s\n", GOVERNOR_VERSION);
        return 0;
    }
    fprintf(stderr, "usage: governor --version\n");
    return 2;
}
