/*
 * fault.h (internal) - failure injection for the backend's allocations and reads.
 *
 * Every device/host allocation of the backend (weights, cache, graph, staging)
 * goes through loom_device_alloc (device.h), and every chunk the loader reads goes
 * through the load worker's read; both consult these hooks. In builds with
 * LOOM_FAULT_INJECTION (the CMake default) a test can make the N-th allocation or
 * the N-th chunk read from now fail:
 *   - API: loom_fault_alloc_fail_at(n) / loom_fault_read_fail_at(n)  (n >= 1; 0 = off)
 *   - env: LOOM_FAIL_ALLOC_AT=N, LOOM_FAIL_READ_AT=N (read once, at the first check)
 * Counting is process-wide and thread-safe; the hook fires once, then turns off.
 * The allocation hook is the library-wide one of quant/alloc.h (loom_alloc_fail_at,
 * env LOOM_FAIL_ALLOC_AT): device buffers and host allocations count in ONE sequence;
 * the loom_fault_alloc_* names are kept as aliases.
 * Without LOOM_FAULT_INJECTION the checks compile to `false`.
 */
#ifndef LOOM_BACKEND_FAULT_H
#define LOOM_BACKEND_FAULT_H

#include <stdbool.h>

#ifdef LOOM_FAULT_INJECTION
void loom_fault_alloc_fail_at(long n);
void loom_fault_read_fail_at(long n);
/* Allocations / reads checked since the process started (for tests that want to
 * target "the k-th allocation of an operation"). */
long loom_fault_alloc_count(void);
long loom_fault_read_count(void);
bool loom_fault_alloc_should_fail(void);
bool loom_fault_read_should_fail(void);
#else
static inline bool loom_fault_alloc_should_fail(void) { return false; }
static inline bool loom_fault_read_should_fail(void) { return false; }
#endif

#endif
