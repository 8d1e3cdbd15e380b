/*
 * fault.h (internal) - failure-injection hooks, compiled into TEST executables only.
 *
 * The library calls these hooks where it allocates (every host allocation through
 * alloc.h and every device buffer: loom_alloc_should_fail) and where the loader reads
 * a chunk of a weight file (loom_read_should_fail). The library itself contains only
 * the inert versions (fault_off.c: never fail, count nothing, read no environment),
 * so a Release library or the CLI cannot be made to fail by its environment.
 *
 * The working versions live in tests/util/fault_hooks.c, which CMake compiles into
 * every test executable when LOOM_FAULT_INJECTION is ON (the default; CI and `make
 * test` build with it). An object file given on the link line takes precedence over
 * the library's archive member, whose symbol set is identical, so the library's inert
 * member is then never linked. Tests that need injection check
 * loom_fault_injection_enabled() and exit with the skip status otherwise.
 *
 * Semantics of the working hooks: the N-th allocation / chunk read counted from the
 * *_fail_at(N) call fails once (N >= 1; 0 = off), then injection turns off. Counting
 * is process-wide and thread-safe (C11 atomics); with several threads allocating,
 * which call is the N-th depends on scheduling.
 */
#ifndef LOOM_QUANT_FAULT_H
#define LOOM_QUANT_FAULT_H

#include <stdbool.h>

/* True when the working hooks are linked in (a test build). */
bool loom_fault_injection_enabled(void);

/* Allocations (host and device, one sequence). */
void loom_alloc_fail_at(long n);
long loom_alloc_count(void); /* allocations counted since the process started */
/* Count one allocation; true when it must fail. */
bool loom_alloc_should_fail(void);

/* Thread creation (the CPU thread pool). */
void loom_thread_fail_at(long n);
bool loom_thread_should_fail(void);

/* Chunk reads of the weight loader. */
void loom_read_fail_at(long n);
long loom_read_count(void);
bool loom_read_should_fail(void);

#endif
