#include <string.h>
/* Small helpers shared by the CLI sub-commands. */
#include "cli_util.h"
#include "loom_backend.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool cli_parse_ll(const char *s, long long lo, long long hi, long long *out) {
    if (!s || !*s) return false;
    char *end = NULL;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || *end || v < lo || v > hi) return false;
    *out = v;
    return true;
}

bool cli_parse_double(const char *s, double *out) {
    if (!s || !*s) return false;
    char *end = NULL;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || *end || !isfinite(v)) return false;
    *out = v;
    return true;
}

void cli_vk_env(const char **devices, unsigned *flags) {
    const char *d = getenv("LOOM_VK_DEVICES");
    if (d && *d) *devices = d;
    const char *v = getenv("LOOM_VK_VALIDATE");
    if (v && !strcmp(v, "1")) *flags |= LOOM_VK_VALIDATE;
    const char *i8 = getenv("LOOM_VK_INT8");
    if (i8 && !strcmp(i8, "force")) *flags |= LOOM_VK_FORCE_INT8;
    if (i8 && !strcmp(i8, "off")) *flags |= LOOM_VK_NO_INT8;
    const char *st = getenv("LOOM_VK_STAGING");
    if (st && !strcmp(st, "1")) *flags |= LOOM_VK_FORCE_STAGING;
}

const char *cli_vk_loader(void) {
    const char *l = getenv("LOOM_VK_LOADER");
    return l && *l ? l : NULL;
}

bool cli_stdout_failed(void) { return ferror(stdout) != 0; }

int cli_close_stdout(const char *cmd, int rc) {
    errno = 0;
    bool bad = fflush(stdout) != 0 || ferror(stdout);
    int e = errno;
    if (fclose(stdout) != 0 && !bad) {
        bad = true;
        e = errno;
    }
    if (bad && rc == CLI_EXIT_OK) { /* a failed command has said why already */
        fprintf(stderr, "loom %s: error writing standard output: %s\n", cmd, e ? strerror(e) : "write error");
        rc = CLI_EXIT_ERROR;
    }
    return rc;
}

void cli_format_count(char *buf, size_t size, uint64_t n) {
    if (n >= 1000000000ull) snprintf(buf, size, "%.2f B", (double)n / 1e9);
    else if (n >= 1000000ull) snprintf(buf, size, "%.2f M", (double)n / 1e6);
    else if (n >= 1000ull) snprintf(buf, size, "%.1f K", (double)n / 1e3);
    else snprintf(buf, size, "%llu", (unsigned long long)n);
}

void cli_format_bytes(char *buf, size_t size, uint64_t n) {
    if (n >= (1ull << 30)) snprintf(buf, size, "%.2f GiB", (double)n / (double)(1ull << 30));
    else if (n >= (1ull << 20)) snprintf(buf, size, "%.1f MiB", (double)n / (double)(1ull << 20));
    else if (n >= 1024ull) snprintf(buf, size, "%.1f KiB", (double)n / 1024.0);
    else snprintf(buf, size, "%llu B", (unsigned long long)n);
}

bool cli_parse_u64(const char *s, uint64_t *out) {
    if (!s || !*s) return false;
    uint64_t v = 0;
    for (const char *p = s; *p; p++) {
        if (*p < '0' || *p > '9') return false;
        uint64_t d = (uint64_t)(*p - '0');
        if (v > (UINT64_MAX - d) / 10) return false;
        v = v * 10 + d;
    }
    *out = v;
    return true;
}

bool cli_parse_seed(const char *s, uint64_t *seed, bool *random) {
    *random = false;
    if (s && !strcmp(s, "-1")) {
        *random = true;
        return true;
    }
    return cli_parse_u64(s, seed);
}

bool cli_parse_flash_attn(const char *v, bool *on) {
    static const char *const yes[] = {"on", "enabled", "true", "1", "auto", "-1"};
    static const char *const no[] = {"off", "disabled", "false", "0"};
    if (!v) return false;
    for (size_t i = 0; i < sizeof yes / sizeof *yes; i++)
        if (!strcmp(v, yes[i])) return *on = true, true;
    for (size_t i = 0; i < sizeof no / sizeof *no; i++)
        if (!strcmp(v, no[i])) return *on = false, true;
    return false;
}

char *cli_read_file(const char *path, size_t max, size_t *len, char *why, size_t why_cap) {
    *len = 0;
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(why, why_cap, "cannot open '%s': %s", path, strerror(errno));
        return NULL;
    }
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap + 1);
    while (buf) {
        if (n == cap) {
            if (cap >= max) {
                snprintf(why, why_cap, "'%s' is larger than %zu bytes", path, max);
                free(buf);
                buf = NULL;
                break;
            }
            cap = cap * 2 > max ? max : cap * 2;
            char *nb = realloc(buf, cap + 1);
            if (!nb) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = nb;
        }
        size_t r = fread(buf + n, 1, cap - n, f);
        n += r;
        if (r == 0) {
            if (ferror(f)) {
                snprintf(why, why_cap, "reading '%s': %s", path, strerror(errno));
                free(buf);
                buf = NULL;
            }
            break;
        }
    }
    if (!buf && !why[0]) snprintf(why, why_cap, "out of memory reading '%s'", path);
    fclose(f);
    if (buf) {
        buf[n] = 0;
        *len = n;
    }
    return buf;
}
