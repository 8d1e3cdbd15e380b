/* Minimal test harness: CHECK macros count failures; main returns test_finish(). */
#ifndef LOOM_TEST_UTIL_H
#define LOOM_TEST_UTIL_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

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

/* Exit status of a test that could not run (ctest SKIP_RETURN_CODE, set by CMake
 * for every test): ctest reports it as skipped, and CI fails on any skip it does not
 * expect (.ci/check-skips). A skip always says why. */
#define TEST_SKIP_CODE 77

/* Skip the whole test: prints "<name>: SKIPPED: <why>" and returns TEST_SKIP_CODE
 * (use as `return test_skip(...)` from main). */
static inline int test_skip(const char *name, const char *why) {
    printf("%s: SKIPPED: %s\n", name, why);
    fflush(stdout);
    return TEST_SKIP_CODE;
}

/* Like test_finish, for a test a part of which could not run: failures still fail
 * it; otherwise, when skipped_why is non-NULL, the test reports a skip (it did not
 * prove everything it is meant to) instead of passing. */
static inline int test_finish_part(const char *name, const char *skipped_why) {
    int rc = test_finish(name);
    if (rc || !skipped_why) return rc;
    return test_skip(name, skipped_why);
}

/* Why failure-injection tests cannot run in this build (NULL when they can). */
#define TEST_NO_FAULT_INJECTION                                                           \
    "failure injection is not linked in (configure with -DLOOM_FAULT_INJECTION=ON)"

#define TEST_NO_CLI "the loom CLI binary is not available (LOOM_BIN unset or not executable)"

/* Environment isolation: the LOOM_* variables the CLI honours (LOOM_SIM_DEVICES,
 * LOOM_REPACK, LOOM_MODEL, LOOM_KV_ROTATE) are removed so a developer's or CI's
 * environment cannot change what a test checks. LOOM_CPU_ISA is kept on purpose: CI runs
 * tests under forced kernel levels. LOOM_BIN (set by ctest) is the CLI under test. */
static inline void test_clean_env(void) {
    unsetenv("LOOM_SIM_DEVICES");
    unsetenv("LOOM_REPACK");
    unsetenv("LOOM_MODEL");
    unsetenv("LOOM_KV_ROTATE");
}

/* The `loom` binary to test (after test_clean_env), or NULL: then the caller
 * returns test_skip(name, TEST_NO_CLI). */
static inline const char *test_cli(void) {
    test_clean_env();
    const char *b = getenv("LOOM_BIN");
    return b && *b && access(b, X_OK) == 0 ? b : NULL;
}

/* Run a shell command; its stdout (at most cap-1 bytes, the rest drained) goes to
 * out. Returns the exit status, or -1 when it did not exit normally. */
static inline int test_run(const char *cmd, char *out, size_t cap) {
    FILE *p = popen(cmd, "r");
    if (!p) return -1;
    size_t n = 0, k;
    while (n + 1 < cap && (k = fread(out + n, 1, cap - 1 - n, p)) > 0) n += k;
    out[n] = 0;
    char sink[4096];
    while (fread(sink, 1, sizeof sink, p) > 0) {}
    int st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* Value of "key": number in a JSON text printed by the CLI (`"key": value`), NAN if
 * absent. */
static inline double test_json_num(const char *json, const char *key) {
    char pat[128];
    snprintf(pat, sizeof pat, "\"%s\": ", key);
    const char *s = strstr(json, pat);
    return s ? strtod(s + strlen(pat), NULL) : NAN;
}

#endif
