/*
 * Runs `governor test` (plugin_test_main) over the shipped policies and over the hostile
 * plugins of tests/policy, as the ctest of the sub-command until main.c wires it: every
 * policy test must pass, and a directory whose plugins do not load must fail.
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "test.h"

#include "plugin/plugin.h"

static int run(const char *dir)
{
    char *argv[] = {"test", (char *)dir, NULL};
    return plugin_test_main(2, argv);
}

static void test_shipped_policies(void)
{
    ASSERT_EQ(run("policies"), 0);
}

static void test_hostile_policies(void)
{
    ASSERT_EQ(run("tests/policy"), 0);
}

static void test_broken_dir_fails(void)
{
    char dir[] = "/tmp/governor-runner-XXXXXX";
    ASSERT(mkdtemp(dir));
    char path[256];
    snprintf(path, sizeof path, "%s/bad.lua", dir);
    FILE *f = fopen(path, "w");
    ASSERT(f);
    fputs("return { kind = 'nonsense' }\n", f);
    fclose(f);
    int rc = run(dir);
    unlink(path);
    rmdir(dir);
    ASSERT_EQ(rc, 1);
}

static void test_missing_dir_fails(void)
{
    ASSERT_EQ(run("/nonexistent/policies"), 1);
}

TEST_MAIN(TEST_ENTRY(test_shipped_policies), TEST_ENTRY(test_hostile_policies),
          TEST_ENTRY(test_broken_dir_fails), TEST_ENTRY(test_missing_dir_fails))
