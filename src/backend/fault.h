/*
 * fault.h (internal) - the backend's names for the failure-injection hooks of
 * quant/fault.h (one allocation sequence for host and device memory; the loader's
 * chunk reads). Working only in test executables (LOOM_FAULT_INJECTION).
 */
#ifndef LOOM_BACKEND_FAULT_H
#define LOOM_BACKEND_FAULT_H

#include "quant/fault.h"

static inline void loom_fault_alloc_fail_at(long n) { loom_alloc_fail_at(n); }
static inline void loom_fault_read_fail_at(long n) { loom_read_fail_at(n); }
static inline long loom_fault_alloc_count(void) { return loom_alloc_count(); }
static inline long loom_fault_read_count(void) { return loom_read_count(); }
static inline bool loom_fault_alloc_should_fail(void) { return loom_alloc_should_fail(); }
static inline bool loom_fault_read_should_fail(void) { return loom_read_should_fail(); }

#endif
