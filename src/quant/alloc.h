/*
 * alloc.h (internal) - the one allocation wrapper of the whole library.
 *
 * Every host allocation in src/ goes through these functions (the backend's device
 * allocations go through loom_aligned_alloc too), so one process-wide counter sees
 * them all. Semantics are those of the C library functions they wrap:
 *   - loom_malloc/loom_calloc/loom_realloc/loom_aligned_alloc/loom_strdup return NULL
 *     on failure (loom_realloc leaves the old block untouched then);
 *   - loom_free(NULL) is a no-op; memory from any of them is released with loom_free.
 * loom_calloc checks n * size for overflow; loom_aligned_alloc rounds size up to a
 * multiple of align (a power of two >= sizeof(void *)) and checks that for overflow.
 *
 * Failure injection (builds with LOOM_FAULT_INJECTION, the CMake default): the N-th
 * allocation counted from the call fails once, then injection turns off.
 *   - API: loom_alloc_fail_at(n) (n >= 1; 0 = off), loom_alloc_count() = allocations
 *     attempted since the process started (every call of the allocating functions
 *     above with a non-zero size, plus loom_alloc_should_fail() checks made by code
 *     that allocates by other means).
 *   - env: LOOM_FAIL_ALLOC_AT=N (read once, at the first allocation).
 * Counting is thread-safe (C11 atomics); with several threads allocating, which call
 * is the N-th depends on scheduling. Without LOOM_FAULT_INJECTION nothing is counted
 * and loom_alloc_count() returns 0.
 */
#ifndef LOOM_QUANT_ALLOC_H
#define LOOM_QUANT_ALLOC_H

#include <stdbool.h>
#include <stddef.h>

void *loom_malloc(size_t size);
void *loom_calloc(size_t n, size_t size);
void *loom_realloc(void *p, size_t size);
void *loom_aligned_alloc(size_t align, size_t size);
char *loom_strdup(const char *s);
void loom_free(void *p);

/* Failure injection (no-ops / 0 / false without LOOM_FAULT_INJECTION). */
void loom_alloc_fail_at(long n);
long loom_alloc_count(void);
/* Count one allocation; true when it must fail. For allocators outside this file. */
bool loom_alloc_should_fail(void);

#endif
