/* Persistent thread pool: C11 atomics, spin-then-futex waits, sense-free generation barrier. */
#include "cpu/pool.h"
#include "quant/alloc.h"
#include "quant/fault.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__linux__)
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>
#define LOOM_HAVE_FUTEX 1
#endif

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define LOOM_PAUSE() _mm_pause()
#elif defined(__aarch64__)
#define LOOM_PAUSE() __asm__ __volatile__("yield")
#else
#define LOOM_PAUSE() ((void)0)
#endif

/* Spin about 0.1-0.4 ms (a pause is 10-140 cycles depending on the CPU) before
 * sleeping: waits inside a compute are usually shorter than a futex round trip.
 * Yield now and then so a preempted partner thread can get the core back. */
#define SPIN_ITERS 16384
#define SPIN_YIELD_EVERY 2048
/* More threads than CPUs (oversubscription, e.g. -t 4 on 2 vCPUs): a spinning waiter
 * holds a CPU that the thread it waits for needs, so spin briefly, yield often, then
 * sleep. Measured on the 2-vCPU VM (1.1B Q4_0, -p 64 -n 16, loaded by other jobs):
 * with the long spin, -t 4 / -t 8 tg fell to 0.8-1.0 t/s against 1.6-3.0 at -t 2. */
#define SPIN_ITERS_OVERSUB 256
#define SPIN_YIELD_EVERY_OVERSUB 32

/* Wait while *word == val (spurious returns allowed). */
static void word_wait(_Atomic uint32_t *word, uint32_t val) {
#ifdef LOOM_HAVE_FUTEX
    syscall(SYS_futex, (uint32_t *)word, FUTEX_WAIT_PRIVATE, val, NULL, NULL, 0);
#else
    (void)word;
    (void)val;
    sched_yield();
#endif
}

static void word_wake_all(_Atomic uint32_t *word) {
#ifdef LOOM_HAVE_FUTEX
    syscall(SYS_futex, (uint32_t *)word, FUTEX_WAKE_PRIVATE, 0x7fffffff, NULL, NULL, 0);
#else
    (void)word;
#endif
}

/* Block until *word != val: spin `spins` pauses, then sleep (sleepers counted so wakers
 * can skip the syscall). */
static uint32_t wait_change(_Atomic uint32_t *word, uint32_t val, _Atomic int *sleepers, int spins, int yield_every) {
    uint32_t cur;
    for (int i = 0; i < spins; i++) {
        cur = atomic_load_explicit(word, memory_order_acquire);
        if (cur != val) return cur;
        LOOM_PAUSE();
        if ((i + 1) % yield_every == 0) sched_yield();
    }
    for (;;) {
        atomic_fetch_add_explicit(sleepers, 1, memory_order_seq_cst);
        cur = atomic_load_explicit(word, memory_order_seq_cst);
        if (cur == val) word_wait(word, val);
        atomic_fetch_sub_explicit(sleepers, 1, memory_order_seq_cst);
        cur = atomic_load_explicit(word, memory_order_acquire);
        if (cur != val) return cur;
    }
}

#define RUN_NTH_MASK 1023u
/* A run word whose nth field is RUN_WARM starts no run: sleeping workers wake up and
 * spin for WARM_SPINS pauses, expecting a run soon (loom_pool_warm). Pools have at
 * most 1000 threads, so it is never a real nth. */
#define RUN_WARM RUN_NTH_MASK
#define WARM_SPINS (SPIN_ITERS * 16)

static void bump_and_wake(_Atomic uint32_t *word, _Atomic int *sleepers) {
    atomic_fetch_add_explicit(word, 1, memory_order_seq_cst);
    if (atomic_load_explicit(sleepers, memory_order_seq_cst) > 0) word_wake_all(word);
}

/* Publish a new run word (next generation, given nth; 0 = stop) and wake sleepers. */
static void publish_run(_Atomic uint32_t *word, uint32_t nth, _Atomic int *sleepers) {
    uint32_t old = atomic_load_explicit(word, memory_order_relaxed);
    uint32_t next = (((old >> 10) + 1) << 10) | (nth & RUN_NTH_MASK);
    atomic_store_explicit(word, next, memory_order_seq_cst);
    if (atomic_load_explicit(sleepers, memory_order_seq_cst) > 0) word_wake_all(word);
}

typedef struct worker {
    struct loom_pool *pool;
    int ith;
    pthread_t tid;
} worker;

struct loom_pool {
    int n;
    /* pause budget of a wait before sleeping, and pauses between sched_yield calls:
     * SPIN_ITERS / SPIN_YIELD_EVERY, or the _OVERSUB values with more threads than CPUs */
    int spins, yield_every;
    worker *workers; /* [n-1] */
    /* run state: fn/arg written by thread 0 before run_word is published (release);
     * run_word = generation << 10 | nth (nth 0 = stop). nth is read only by thread 0
     * and the run's participants. */
    loom_pool_fn fn;
    void *arg;
    int nth;
    _Atomic uint32_t run_gen;
    _Atomic int run_sleepers;
    /* barrier */
    _Atomic uint32_t bar_count;
    _Atomic uint32_t bar_gen;
    _Atomic int bar_sleepers;
};

void loom_pool_barrier(loom_pool *pool) {
    int nth = pool->nth; /* stable during a run (written before it is published) */
    if (nth <= 1) return;
    uint32_t gen = atomic_load_explicit(&pool->bar_gen, memory_order_acquire);
    if (atomic_fetch_add_explicit(&pool->bar_count, 1, memory_order_acq_rel) == (uint32_t)nth - 1) {
        atomic_store_explicit(&pool->bar_count, 0, memory_order_relaxed);
        bump_and_wake(&pool->bar_gen, &pool->bar_sleepers);
        return;
    }
    wait_change(&pool->bar_gen, gen, &pool->bar_sleepers, pool->spins, pool->yield_every);
}


static void *worker_main(void *p) {
    worker *w = p;
    loom_pool *pool = w->pool;
    uint32_t seen = 0;
    int spins = pool->spins;
    for (;;) {
        seen = wait_change(&pool->run_gen, seen, &pool->run_sleepers, spins, pool->yield_every);
        int nth = (int)(seen & RUN_NTH_MASK);
        if (nth == 0) break;
        spins = nth == (int)RUN_WARM ? pool->spins * (WARM_SPINS / SPIN_ITERS) : pool->spins;
        if (nth == (int)RUN_WARM) continue;
        if (w->ith < nth) {
            pool->fn(pool->arg, w->ith, nth);
            loom_pool_barrier(pool); /* end of run */
        }
    }
    return NULL;
}

static int count_list(const char *s, cpu_set_t *set) {
    /* parse "0-3,8,10-11" into set; returns count or -1 */
    int n = 0;
    while (*s && *s != '\n') {
        char *e;
        long a = strtol(s, &e, 10);
        if (e == s || a < 0 || a >= CPU_SETSIZE) return -1;
        long b = a;
        s = e;
        if (*s == '-') {
            s++;
            b = strtol(s, &e, 10);
            if (e == s || b < a || b >= CPU_SETSIZE) return -1;
            s = e;
        }
        for (long c = a; c <= b; c++) {
            CPU_SET((int)c, set);
            n++;
        }
        if (*s == ',') s++;
    }
    return n;
}

int loom_cpu_default_threads(void) {
#if defined(__linux__)
    cpu_set_t mask;
    CPU_ZERO(&mask);
    if (sched_getaffinity(0, sizeof mask, &mask) != 0) {
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        return n > 0 ? (int)n : 1;
    }
    int total = CPU_COUNT(&mask);
    if (total < 1) return 1;
    /* one thread per physical core: count CPUs that are the lowest in-mask sibling */
    int cores = 0;
    bool ok = true;
    for (int c = 0; c < CPU_SETSIZE && ok; c++) {
        if (!CPU_ISSET(c, &mask)) continue;
        char path[128], buf[256];
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu%d/topology/thread_siblings_list", c);
        FILE *f = fopen(path, "r");
        if (!f) {
            ok = false;
            break;
        }
        size_t k = fread(buf, 1, sizeof buf - 1, f);
        fclose(f);
        buf[k] = '\0';
        cpu_set_t sib;
        CPU_ZERO(&sib);
        if (count_list(buf, &sib) < 1) {
            ok = false;
            break;
        }
        bool lowest = true;
        for (int d = 0; d < c; d++)
            if (CPU_ISSET(d, &sib) && CPU_ISSET(d, &mask)) {
                lowest = false;
                break;
            }
        cores += lowest;
    }
    if (!ok || cores < 1) return total;
    return cores;
#else
    return 1;
#endif
}

/* CPUs this process may run on (the affinity mask), at least 1. */
static int online_cpus(void) {
#if defined(__linux__)
    cpu_set_t mask;
    CPU_ZERO(&mask);
    if (sched_getaffinity(0, sizeof mask, &mask) == 0 && CPU_COUNT(&mask) > 0) return CPU_COUNT(&mask);
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
#else
    return 1 << 20; /* unknown: never treated as oversubscribed */
#endif
}

bool loom_thread_attr_init(pthread_attr_t *attr) {
    if (pthread_attr_init(attr) != 0) return false;
    size_t have = 0;
    if (pthread_attr_getstacksize(attr, &have) != 0 || have < LOOM_THREAD_STACK_MIN)
        (void)pthread_attr_setstacksize(attr, LOOM_THREAD_STACK_MIN);
    return true;
}

loom_status loom_pool_new(int n_threads, loom_pool **out, loom_error *err) {
    *out = NULL;
    if (n_threads <= 0) n_threads = loom_cpu_default_threads();
    if (n_threads > 1000) n_threads = 1000;
    loom_pool *p = loom_calloc(1, sizeof *p);
    if (!p) return loom_error_set(err, LOOM_ERR_NOMEM, "thread pool: out of memory");
    p->n = n_threads;
    p->nth = 1;
    p->spins = SPIN_ITERS;
    p->yield_every = SPIN_YIELD_EVERY;
    if (n_threads > online_cpus()) {
        p->spins = SPIN_ITERS_OVERSUB;
        p->yield_every = SPIN_YIELD_EVERY_OVERSUB;
    }
    atomic_init(&p->run_gen, 0);
    atomic_init(&p->run_sleepers, 0);
    atomic_init(&p->bar_count, 0);
    atomic_init(&p->bar_gen, 0);
    atomic_init(&p->bar_sleepers, 0);
    if (n_threads > 1) {
        p->workers = loom_calloc((size_t)n_threads - 1, sizeof *p->workers);
        if (!p->workers) {
            loom_free(p);
            return loom_error_set(err, LOOM_ERR_NOMEM, "thread pool: out of memory");
        }
        pthread_attr_t attr;
        const bool have_attr = loom_thread_attr_init(&attr);
        for (int i = 0; i < n_threads - 1; i++) {
            p->workers[i].pool = p;
            p->workers[i].ith = i + 1;
            int e = loom_thread_should_fail()
                        ? EAGAIN
                        : pthread_create(&p->workers[i].tid, have_attr ? &attr : NULL, worker_main, &p->workers[i]);
            if (e != 0) {
                p->n = i + 1; /* threads created so far + caller */
                if (have_attr) pthread_attr_destroy(&attr);
                loom_pool_free(p);
                return loom_error_set(err, LOOM_ERR_RESOURCE,
                                      "cannot start CPU worker thread %d of %d (%s): the system's thread "
                                      "limit (ulimit -u / RLIMIT_NPROC, pids cgroup) or the memory for thread "
                                      "stacks is exhausted; use fewer threads (n_threads, -t)",
                                      i + 2, n_threads, strerror(e));
            }
        }
        if (have_attr) pthread_attr_destroy(&attr);
    }
    *out = p;
    return LOOM_OK;
}

void loom_pool_free(loom_pool *pool) {
    if (!pool) return;
    if (pool->n > 1) {
        publish_run(&pool->run_gen, 0, &pool->run_sleepers);
        for (int i = 0; i < pool->n - 1; i++) pthread_join(pool->workers[i].tid, NULL);
    }
    loom_free(pool->workers);
    loom_free(pool);
}

int loom_pool_size(const loom_pool *pool) { return pool ? pool->n : 1; }

void loom_pool_warm(loom_pool *pool) {
    if (!pool || pool->n <= 1) return;
    /* spinning workers see the new word too and restart their spin with WARM_SPINS,
     * so they do not fall asleep just before the run */
    publish_run(&pool->run_gen, RUN_WARM, &pool->run_sleepers);
}

void loom_pool_run(loom_pool *pool, loom_pool_fn fn, void *arg, int nth) {
    if (nth < 1) nth = 1;
    if (nth > pool->n) nth = pool->n;
    pool->fn = fn;
    pool->arg = arg;
    pool->nth = nth;
    if (nth > 1) publish_run(&pool->run_gen, (uint32_t)nth, &pool->run_sleepers);
    fn(arg, 0, nth);
    loom_pool_barrier(pool); /* all participants finished */
}
