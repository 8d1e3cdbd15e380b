/* The library's allocation wrapper with failure injection (see alloc.h). */
#include "quant/alloc.h"
#include "quant/fault.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>


void *loom_malloc(size_t size) {
    if (size && loom_alloc_should_fail()) return NULL;
    return malloc(size);
}

void *loom_calloc(size_t n, size_t size) {
    if (size && n > SIZE_MAX / size) return NULL;
    if (n && size && loom_alloc_should_fail()) return NULL;
    return calloc(n, size);
}

void *loom_realloc(void *p, size_t size) {
    if (size && loom_alloc_should_fail()) return NULL;
    return realloc(p, size);
}

void *loom_aligned_alloc(size_t align, size_t size) {
    if (align < sizeof(void *) || (align & (align - 1))) return NULL;
    if (size == 0) size = align;
    if (size > SIZE_MAX - (align - 1)) return NULL;
    size_t rounded = (size + align - 1) & ~(align - 1);
    if (loom_alloc_should_fail()) return NULL;
    return aligned_alloc(align, rounded);
}

char *loom_strdup(const char *s) {
    if (!s) return NULL;
    size_t n = strlen(s) + 1;
    char *d = loom_malloc(n);
    if (d) memcpy(d, s, n);
    return d;
}

void loom_free(void *p) { free(p); }
