/* Working failure-injection hooks for the test executables (see src/quant/fault.h).
 * Linked into every test when LOOM_FAULT_INJECTION is ON; they replace the library's
 * inert versions (src/quant/fault_off.c), which define the same symbols. */
#include "quant/fault.h"

#include <stdatomic.h>

typedef struct fault_hook {
    atomic_long count;   /* checks so far */
    atomic_long fire_at; /* absolute check number that fails; 0 = off */
} fault_hook;

static fault_hook g_alloc, g_read, g_thread;

static void hook_set(fault_hook *h, long n) { atomic_store(&h->fire_at, n > 0 ? atomic_load(&h->count) + n : 0); }

static bool hook_check(fault_hook *h) {
    long c = atomic_fetch_add(&h->count, 1) + 1;
    long at = atomic_load(&h->fire_at);
    if (at > 0 && c == at) {
        long expect = at;
        /* fire once even if two threads race past the same count */
        return atomic_compare_exchange_strong(&h->fire_at, &expect, 0);
    }
    return false;
}

bool loom_fault_injection_enabled(void) { return true; }
void loom_alloc_fail_at(long n) { hook_set(&g_alloc, n); }
long loom_alloc_count(void) { return atomic_load(&g_alloc.count); }
bool loom_alloc_should_fail(void) { return hook_check(&g_alloc); }
void loom_thread_fail_at(long n) { hook_set(&g_thread, n); }
bool loom_thread_should_fail(void) { return hook_check(&g_thread); }
void loom_read_fail_at(long n) { hook_set(&g_read, n); }
long loom_read_count(void) { return atomic_load(&g_read.count); }
bool loom_read_should_fail(void) { return hook_check(&g_read); }
