/* The library's inert failure-injection hooks (see fault.h): nothing fails, nothing
 * is counted, no environment is read. Test executables link working versions
 * (tests/util/fault_hooks.c) that define exactly these symbols. */
#include "quant/fault.h"

bool loom_fault_injection_enabled(void) { return false; }
void loom_alloc_fail_at(long n) { (void)n; }
long loom_alloc_count(void) { return 0; }
bool loom_alloc_should_fail(void) { return false; }
void loom_thread_fail_at(long n) { (void)n; }
bool loom_thread_should_fail(void) { return false; }
void loom_read_fail_at(long n) { (void)n; }
long loom_read_count(void) { return 0; }
bool loom_read_should_fail(void) { return false; }
