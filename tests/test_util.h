/* Minimal test harness: CHECK macros count failures; main returns test_finish(). */
#ifndef LOOM_TEST_UTIL_H
#define LOOM_TEST_UTIL_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int g_test_checks = 0, g_test_failures = 0;

#define CHECK(cond)                                                                     \
    do {                                                                                \
        g_test_checks++;                                                                \
        if (!(cond)) {                                                                  \
            g_test_failures++;                                                          \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);    \
        }                                                                               \
    } while (0)

#define CHECK_MSG(cond, ...)                                                            \
    do {                                                                                \
        g_test_checks++;                                                                \
        if (!(cond)) {                                                                  \
            g_test_failures++;                                                          \
            fprintf(stderr, "%s:%d: CHECK failed: %s: ", __FILE__, __LINE__, #cond);    \
            fprintf(stderr, __VA_ARGS__);                                               \
            fputc('\n', stderr);                                                        \
        }                                                                               \
    } while (0)

#define CHECK_EQ_INT(a, b)                                                              \
    do {                                                                                \
        long long va_ = (long long)(a), vb_ = (long long)(b);                           \
        CHECK_MSG(va_ == vb_, "%s = %lld, %s = %lld", #a, va_, #b, vb_);                \
    } while (0)

#define CHECK_NEAR(a, b, tol)                                                           \
    do {                                                                                \
        double va_ = (double)(a), vb_ = (double)(b);                                    \
        CHECK_MSG(fabs(va_ - vb_) <= (tol), "%s = %.9g, %s = %.9g (tol %g)", #a, va_,   \
                  #b, vb_, (double)(tol));                                              \
    } while (0)

/* Path of a file in the source tree (tests run with the source dir as cwd). */
static inline const char *test_path(const char *rel) {
    static char buf[4096];
#ifdef LOOM_SOURCE_DIR
    snprintf(buf, sizeof buf, "%s/%s", LOOM_SOURCE_DIR, rel);
#else
    snprintf(buf, sizeof buf, "%s", rel);
#endif
    return buf;
}

/* Prints "<name>: N passed, M failed" and returns the exit status. */
static inline int test_finish(const char *name) {
    printf("%s: %d passed, %d failed\n", name, g_test_checks - g_test_failures, g_test_failures);
    return g_test_failures ? 1 : 0;
}

#endif
