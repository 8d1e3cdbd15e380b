/* Corpus replay driver: runs a libFuzzer target's LLVMFuzzerTestOneInput over files,
 * without libFuzzer, so every seed and every saved crash reproducer is checked in an
 * ordinary ctest run (tests `corpus_<name>`, one per fuzz/fuzz_<name>.c; CMake builds
 * them for every fuzz target it finds, no per-target edits).
 *
 * usage: corpus_<name> [--optional] PATH...
 *   PATH is a file or a directory (its regular files, in name order; not recursive).
 *   A missing PATH is an error unless --optional precedes it (for
 *   tests/data/regress/<name>/, which exists only once a crash has been saved).
 * Exit 0 when every input ran (the target aborts on a failed property, which fails
 * the test, and sanitizer builds catch memory errors); 1 when no input was found at
 * all or a path is unreadable. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
/* optional in a target */
__attribute__((weak)) int LLVMFuzzerInitialize(int *argc, char ***argv);

static int run_file(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "replay: cannot open %s\n", path);
        return -1;
    }
    size_t cap = 1 << 16, n = 0;
    uint8_t *buf = malloc(cap);
    size_t k;
    while (buf && (k = fread(buf + n, 1, cap - n, f)) > 0) {
        n += k;
        if (n == cap) {
            uint8_t *nb = realloc(buf, cap * 2);
            if (!nb) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = nb;
            cap *= 2;
        }
    }
    int bad = ferror(f) || !buf;
    fclose(f);
    if (bad) {
        free(buf);
        fprintf(stderr, "replay: cannot read %s\n", path);
        return -1;
    }
    /* an exact-size copy, so reads past the end are caught under ASan */
    uint8_t *exact = malloc(n ? n : 1);
    if (!exact) {
        free(buf);
        return -1;
    }
    memcpy(exact, buf, n);
    free(buf);
    fprintf(stderr, "replay: %s (%zu bytes)\n", path, n);
    LLVMFuzzerTestOneInput(exact, n);
    free(exact);
    return 0;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* Returns the number of inputs run, -1 on an error. */
static long run_path(const char *path, int optional) {
    struct stat st;
    if (stat(path, &st) != 0) {
        if (optional) return 0;
        fprintf(stderr, "replay: %s does not exist\n", path);
        return -1;
    }
    if (!S_ISDIR(st.st_mode)) return run_file(path) == 0 ? 1 : -1;
    DIR *d = opendir(path);
    if (!d) return -1;
    char **names = NULL;
    size_t n = 0, cap = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 64;
            char **nn = realloc(names, cap * sizeof *names);
            if (!nn) break;
            names = nn;
        }
        names[n++] = strdup(e->d_name);
    }
    closedir(d);
    if (n) qsort(names, n, sizeof *names, cmp_str);
    long ran = 0;
    for (size_t i = 0; i < n; i++) {
        char full[4096];
        snprintf(full, sizeof full, "%s/%s", path, names[i]);
        struct stat fs;
        if (names[i] && stat(full, &fs) == 0 && S_ISREG(fs.st_mode)) {
            if (run_file(full) != 0) ran = -1000000;
            ran++;
        }
        free(names[i]);
    }
    free(names);
    return ran < 0 ? -1 : ran;
}

int main(int argc, char **argv) {
    if (LLVMFuzzerInitialize) LLVMFuzzerInitialize(&argc, &argv);
    long total = 0;
    int optional = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--optional")) {
            optional = 1;
            continue;
        }
        long r = run_path(argv[i], optional);
        optional = 0;
        if (r < 0) return 1;
        total += r;
    }
    if (total == 0) {
        fprintf(stderr, "replay: no inputs found\n");
        return 1;
    }
    printf("replayed %ld inputs\n", total);
    return 0;
}
