/* A minimal unit-test harness. Each test is a function; TEST_RUN runs it and prints
 *   PASS <name>            or
 *   FAIL <name>: file:line: what
 * TEST_MAIN_END returns non-zero if anything failed. tests/run-tests.sh counts these lines. */
#ifndef PARNET_TESTS_TEST_H
#define PARNET_TESTS_TEST_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int test_failures_total, test_failed_now;
static const char *test_name_now;

#define CHECK(c) \
    do { \
        if (!(c)) { \
            printf("FAIL %s: %s:%d: %s\n", test_name_now, __FILE__, __LINE__, #c); \
            test_failed_now = 1; \
            return; \
        } \
    } while (0)

/* |a - b| <= tol * max(1, |b|) */
#define CHECK_NEAR(a, b, tol) \
    do { \
        double a_ = (a), b_ = (b), t_ = (tol) * (fabs(b_) > 1 ? fabs(b_) : 1); \
        if (!(fabs(a_ - b_) <= t_)) { \
            printf("FAIL %s: %s:%d: %s = %.9g, expected %s = %.9g (tol %g)\n", test_name_now, \
                   __FILE__, __LINE__, #a, a_, #b, b_, (double)(tol)); \
            test_failed_now = 1; \
            return; \
        } \
    } while (0)

#define TEST_RUN(fn) \
    do { \
        test_name_now = #fn; \
        test_failed_now = 0; \
        fn(); \
        if (test_failed_now) test_failures_total++; \
        else printf("PASS %s\n", #fn); \
        fflush(stdout); \
    } while (0)

#define TEST_MAIN_END() return test_failures_total ? 1 : 0

/* A test program's scratch directory: test_tmpdir makes /tmp/<name>.XXXXXX into dir (size bytes):
 * 0, or -1 after a FAIL line; test_tmpdir_remove removes it with everything inside: 0, or -1 after
 * a warning. */
static inline int test_tmpdir(char *dir, size_t size, const char *name) {
    snprintf(dir, size, "/tmp/%s.XXXXXX", name);
    if (mkdtemp(dir)) return 0;
    printf("FAIL setup: mkdtemp %s\n", dir);
    return -1;
}
static inline int test_tmpdir_remove(const char *dir) {
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) == 0) return 0;
    printf("warning: could not remove %s\n", dir);
    return -1;
}

#endif
