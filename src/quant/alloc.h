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
 * Every allocation consults the failure-injection hook loom_alloc_should_fail
 * (quant/fault.h): inert in the library, working in test executables.
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

/* The failure-injection hooks (loom_alloc_fail_at, loom_alloc_count, ...). */
#include "quant/fault.h"

#endif
