/*
 * pool.h (internal) - the persistent CPU thread pool.
 *
 * A pool has n threads in total: the calling thread is thread 0, n-1 workers are
 * created once (loom_pool_new) and sleep (spin, then futex) between runs. A run
 * executes fn(arg, ith, nth) on threads 0..nth-1 (nth <= n) and returns when all
 * have finished. Inside a run, loom_pool_barrier synchronises the nth participants
 * (C11 atomics; spin then futex wait). No allocation per run or barrier.
 *
 * Threading: one thread drives a pool at a time (runs are not reentrant).
 */
#ifndef LOOM_CPU_POOL_H
#define LOOM_CPU_POOL_H

#include "loom_base.h"

#include <pthread.h>

typedef struct loom_pool loom_pool;
typedef void (*loom_pool_fn)(void *arg, int ith, int nth);

/* Threads for n_threads == 0: CPUs in the affinity mask, counting one per physical
 * core when SMT siblings can be read from /sys (>= 1). */
int loom_cpu_default_threads(void);

/* Stack of the pool's workers (and of Loom's other compute threads, server engine):
 * the kernels keep tiles of up to ~0.3 MiB on the stack (kernels_gemm_*.c), so threads
 * get at least this much whatever the platform's default (musl: 128 KiB). */
#define LOOM_THREAD_STACK_MIN ((size_t)4 << 20)
/* attr for pthread_create with a stack of at least LOOM_THREAD_STACK_MIN (the
 * platform default when larger); false when attr cannot be initialised. */
bool loom_thread_attr_init(pthread_attr_t *attr);

/* n_threads <= 0 = loom_cpu_default_threads(). LOOM_ERR_NOMEM, or LOOM_ERR_RESOURCE
 * when a worker thread cannot be started (err names the limit and suggests fewer
 * threads); *out NULL then. */
loom_status loom_pool_new(int n_threads, loom_pool **out, loom_error *err);
void loom_pool_free(loom_pool *pool); /* joins workers; NULL is a no-op */
int loom_pool_size(const loom_pool *pool);
/* A run is coming soon (e.g. the caller starts building the next graph): sleeping
 * workers are woken now and spin for a few milliseconds, so the run does not pay
 * their futex wake-up (measured 150-280 us on a 2-vCPU VM). Does not block; a no-op
 * when every worker is awake already or the pool has one thread. Same thread as
 * loom_pool_run, never during a run. */
void loom_pool_warm(loom_pool *pool);
/* Run fn on nth threads (clamped to 1..size); blocks until all return. */
void loom_pool_run(loom_pool *pool, loom_pool_fn fn, void *arg, int nth);
/* Barrier among the current run's participants. Call only inside fn. */
void loom_pool_barrier(loom_pool *pool);

#endif
