/* Run a test's cases under every CPU kernel level this machine has: the binary runs
 * itself as a child per level with LOOM_CPU_ISA set (LOOM_TEST_EXEC_WRAPPER, e.g. a
 * user-mode emulator, prefixes the command), the parent checks that each child
 * reports the level it was given and exits 0. ThreadSanitizer builds (LOOM_TSAN) run
 * the default level only, in process: the threading does not depend on the level.
 *
 *   int main(int argc, char **argv) { return test_levels_main(argc, argv, "test_x", run_level); }
 */
#ifndef LOOM_LEVEL_TEST_UTIL_H
#define LOOM_LEVEL_TEST_UTIL_H

#include "cpu/kernels.h"
#include "test_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static inline int test_levels_main(int argc, char **argv, const char *name, void (*run_level)(void)) {
    char child[256];
    snprintf(child, sizeof child, "%s (child)", name);
    if (argc > 1 && strcmp(argv[1], "--level") == 0) { /* child: the level LOOM_CPU_ISA selected */
        printf("level %s\n", loom_kernels_get()->name);
        run_level();
        return test_finish(child);
    }
#ifdef LOOM_TSAN
    printf("level %s (TSan build: this level only)\n", loom_kernels_get()->name);
    run_level();
    return test_finish(name);
#endif
    char self[4096];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n > 0) self[n] = 0;
    else snprintf(self, sizeof self, "%s", argv[0]);
    const char *wrap = getenv("LOOM_TEST_EXEC_WRAPPER");
    if (!wrap) wrap = "";
    const char *const *lv = loom_kernels_levels();
    int ran = 0;
    for (int li = 0; lv[li]; li++) {
        if (!loom_kernels_for(lv[li])) continue; /* this CPU lacks it */
        char cmd[8800];
        snprintf(cmd, sizeof cmd, "LOOM_CPU_ISA=%s %s '%s' --level 2>&1", lv[li], wrap, self);
        FILE *p = popen(cmd, "r");
        CHECK_MSG(p != NULL, "popen %s", cmd);
        if (!p) continue;
        char line[512], first[512] = "";
        while (fgets(line, sizeof line, p)) {
            fputs(line, stdout);
            if (!first[0]) snprintf(first, sizeof first, "%s", line);
        }
        int rc = pclose(p);
        first[strcspn(first, "\n")] = 0;
        CHECK_MSG(strncmp(first, "level ", 6) == 0 && strcmp(first + 6, lv[li]) == 0, "forced %s ran '%s'", lv[li],
                  first);
        CHECK_MSG(rc == 0, "level %s failed (status %d)", lv[li], rc);
        ran++;
    }
    CHECK(ran >= 1);
    return test_finish(name);
}

#endif
