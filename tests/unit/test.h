/*
 * test.h - the unit-test harness: a handful of assertion macros that print both sides on
 * failure, and a runner that calls each test function in a list and ends with the line
 * "N passed, N failed". A failed assertion ends the current test function only; the
 * process exits non-zero if any test failed. Header-only so every tests/unit/test_*.c is
 * one self-contained executable registered with CTest.
 */
#ifndef GOVERNOR_TEST_H
#define GOVERNOR_TEST_H

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

static int test__failed_asserts;

#define TEST__FAIL(...)                                                                            \
    do {                                                                                           \
        fprintf(stderr, "  %s:%d: ", __FILE__, __LINE__);                                          \
        fprintf(stderr, __VA_ARGS__);                                                              \
        fputc('\n', stderr);                                                                       \
        test__failed_asserts++;                                                                    \
        return;                                                                                    \
    } while (0)

#define ASSERT(c)                                                                                  \
    do {                                                                                           \
        if (!(c))                                                                                  \
            TEST__FAIL("assertion failed: %s", #c);                                                \
    } while (0)

#define ASSERT_EQ(a, b)                                                                            \
    do {                                                                                           \
        long long a__ = (long long)(a), b__ = (long long)(b);                                      \
        if (a__ != b__)                                                                            \
            TEST__FAIL("%s == %s: %lld != %lld", #a, #b, a__, b__);                                \
    } while (0)

/* Doubles: equal within an absolute tolerance; NaN equals NaN, inf equals inf of the same sign. */
#define ASSERT_NEAR(a, b, tol)                                                                     \
    do {                                                                                           \
        double a__ = (double)(a), b__ = (double)(b);                                               \
        int ok__ =                                                                                 \
            (isnan(a__) && isnan(b__)) || (isinf(a__) && a__ == b__) || fabs(a__ - b__) <= (tol);  \
        if (!ok__)                                                                                 \
            TEST__FAIL("%s ~= %s: %.17g != %.17g", #a, #b, a__, b__);                              \
    } while (0)

#define ASSERT_DEQ(a, b) ASSERT_NEAR(a, b, 0.0)

#define ASSERT_STR(a, b)                                                                           \
    do {                                                                                           \
        const char *a__ = (a), *b__ = (b);                                                         \
        if (!a__ || !b__ || strcmp(a__, b__) != 0)                                                 \
            TEST__FAIL("%s == %s: \"%s\" != \"%s\"", #a, #b, a__ ? a__ : "(null)",                 \
                       b__ ? b__ : "(null)");                                                      \
    } while (0)

/* Substring check, for error messages. */
#define ASSERT_CONTAINS(hay, needle)                                                               \
    do {                                                                                           \
        const char *h__ = (hay), *n__ = (needle);                                                  \
        if (!h__ || !strstr(h__, n__))                                                             \
            TEST__FAIL("%s contains \"%s\": got \"%s\"", #hay, n__, h__ ? h__ : "(null)");         \
    } while (0)

struct test_case {
    const char *name;
    void (*fn)(void);
};

#define TEST_ENTRY(f)                                                                              \
    {                                                                                              \
#f, f                                                                                      \
    }

/* Runs every test in the list, prints one line per failure and the closing count line. */
static inline int test_run(const struct test_case *tests, int n)
{
    int passed = 0, failed = 0;
    for (int i = 0; i < n; i++) {
        int before = test__failed_asserts;
        tests[i].fn();
        if (test__failed_asserts != before) {
            fprintf(stderr, "FAIL %s\n", tests[i].name);
            failed++;
        } else {
            passed++;
        }
    }
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}

#define TEST_MAIN(...)                                                                             \
    int main(void)                                                                                 \
    {                                                                                              \
        static const struct test_case tests__[] = {__VA_ARGS__};                                   \
        return test_run(tests__, (int)(sizeof tests__ / sizeof tests__[0]));                       \
    }

#endif
