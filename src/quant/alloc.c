/* The library's allocation wrapper with failure injection (see alloc.h). */
#include "quant/alloc.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#ifdef LOOM_FAULT_INJECTION
#include <stdatomic.h>

static atomic_long g_count;    /* allocations counted so far */
static atomic_long g_fire_at;  /* absolute count that fails; 0 = off */
static atomic_int g_env_read;

static void read_env(void) {
    if (atomic_load_explicit(&g_env_read, memory_order_acquire)) return;
    int expected = 0;
    if (!atomic_compare_exchange_strong(&g_env_read, &expected, 1)) return;
    const char *s = getenv("LOOM_FAIL_ALLOC_AT");
    if (s && *s) {
        long n = strtol(s, NULL, 10);
        if (n > 0) atomic_store(&g_fire_at, atomic_load(&g_count) + n);
    }
}

void loom_alloc_fail_at(long n) {
    atomic_store(&g_env_read, 1); /* the API overrides the environment */
    atomic_store(&g_fire_at, n > 0 ? atomic_load(&g_count) + n : 0);
}

long loom_alloc_count(void) { return atomic_load(&g_count); }

bool loom_alloc_should_fail(void) {
    read_env();
    long c = atomic_fetch_add(&g_count, 1) + 1;
    long at = atomic_load(&g_fire_at);
    if (at > 0 && c == at) {
        long expect = at;
        /* fire once even if two threads race past the same count */
        return atomic_compare_exchange_strong(&g_fire_at, &expect, 0);
    }
    return false;
}
#else
void loom_alloc_fail_at(long n) { (void)n; }
long loom_alloc_count(void) { return 0; }
bool loom_alloc_should_fail(void) { return false; }
#endif

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
