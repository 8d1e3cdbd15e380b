/* Failure injection hooks (see fault.h). */
#include "backend/fault.h"
#include "quant/alloc.h"

#ifdef LOOM_FAULT_INJECTION
#include <stdatomic.h>
#include <stdlib.h>

typedef struct fault_hook {
    const char *env;
    atomic_long count;   /* checks so far */
    atomic_long fire_at; /* absolute check number that fails; 0 = off */
    atomic_int env_read;
} fault_hook;

static fault_hook g_read = {"LOOM_FAIL_READ_AT", 0, 0, 0};

static void hook_env(fault_hook *h) {
    int expected = 0;
    if (!atomic_compare_exchange_strong(&h->env_read, &expected, 1)) return;
    const char *s = getenv(h->env);
    if (s && *s) {
        long n = strtol(s, NULL, 10);
        if (n > 0) atomic_store(&h->fire_at, atomic_load(&h->count) + n);
    }
}

static void hook_set(fault_hook *h, long n) {
    atomic_store(&h->env_read, 1); /* the API overrides the environment */
    atomic_store(&h->fire_at, n > 0 ? atomic_load(&h->count) + n : 0);
}

static bool hook_check(fault_hook *h) {
    hook_env(h);
    long c = atomic_fetch_add(&h->count, 1) + 1;
    long at = atomic_load(&h->fire_at);
    if (at > 0 && c == at) {
        atomic_store(&h->fire_at, 0);
        return true;
    }
    return false;
}

/* Allocations share the library-wide counter of quant/alloc.c, so "the N-th
 * allocation" covers host and (simulated) device memory in one sequence. */
void loom_fault_alloc_fail_at(long n) { loom_alloc_fail_at(n); }
void loom_fault_read_fail_at(long n) { hook_set(&g_read, n); }
long loom_fault_alloc_count(void) { return loom_alloc_count(); }
long loom_fault_read_count(void) { return atomic_load(&g_read.count); }
bool loom_fault_alloc_should_fail(void) { return loom_alloc_should_fail(); }
bool loom_fault_read_should_fail(void) { return hook_check(&g_read); }
#else
typedef int loom_fault_unused;
#endif
