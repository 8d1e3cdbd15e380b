/* fuzz_memfd.h - shared pieces of the fuzz targets that open a model file from the
 * fuzzed bytes: one reused memfd reachable as /proc/self/fd/N (no disk I/O), and
 * the check that a failure carries a message and is never LOOM_ERR_INTERNAL.
 * Header-only (static functions): each fuzz_<name>.c is its own executable. */
#ifndef LOOM_FUZZ_MEMFD_H
#define LOOM_FUZZ_MEMFD_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/types.h>
#include <unistd.h>

#include "loom_base.h"

static int g_fd = -1;
static char g_path[64];

/* Creates the memfd (once, from LLVMFuzzerInitialize); aborts if it cannot. */
static void fuzz_memfd_init(const char *name) {
    g_fd = memfd_create(name, 0);
    if (g_fd < 0) {
        perror("memfd_create");
        abort();
    }
    snprintf(g_path, sizeof g_path, "/proc/self/fd/%d", g_fd);
}

/* Replaces the memfd's contents with data[0..size). */
static void fuzz_memfd_write(const uint8_t *data, size_t size) {
    if (ftruncate(g_fd, 0) != 0) abort();
    size_t off = 0;
    while (off < size) {
        ssize_t w = pwrite(g_fd, data + off, size - off, (off_t)off);
        if (w <= 0) abort();
        off += (size_t)w;
    }
}

/* A failed call must say why, and an input must never reach an internal error. */
static void fuzz_check_error(const char *target, loom_status s, const loom_error *e) {
    if (s == LOOM_OK) return;
    if (e->msg[0] == '\0' || s == LOOM_ERR_INTERNAL) {
        fprintf(stderr, "%s: status %s, message '%s'\n", target, loom_status_name(s), e->msg);
        abort();
    }
}

#endif
