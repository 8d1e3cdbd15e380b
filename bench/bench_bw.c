/* The streaming read-bandwidth probe shared by `loom bench` (bench_model.c) and
 * `loom bench kernels` (bench_kernels.c): nth threads each sum a contiguous slice
 * of the buffer with 8 independent 32-byte accumulators; best of `passes`. */
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "bench.h"

typedef uint64_t bw_vec __attribute__((vector_size(32)));
#define BW_MAX_THREADS 256

typedef struct bw_job {
    const uint8_t *p;
    size_t n; /* bytes, a multiple of 8 * sizeof(bw_vec) */
    bool write;
    uint64_t sum;
} bw_job;

static double bw_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void *bw_worker(void *arg) {
    bw_job *j = arg;
    if (j->write) {
        memset((void *)j->p, 0x5A, j->n);
        return NULL;
    }
    const bw_vec *v = (const bw_vec *)(const void *)j->p;
    size_t nv = j->n / sizeof(bw_vec);
    bw_vec a0 = {0}, a1 = {0}, a2 = {0}, a3 = {0}, a4 = {0}, a5 = {0}, a6 = {0}, a7 = {0};
    for (size_t i = 0; i + 8 <= nv; i += 8) {
        a0 += v[i];
        a1 += v[i + 1];
        a2 += v[i + 2];
        a3 += v[i + 3];
        a4 += v[i + 4];
        a5 += v[i + 5];
        a6 += v[i + 6];
        a7 += v[i + 7];
    }
    bw_vec s = a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7;
    uint64_t t = 0;
    for (size_t k = 0; k < sizeof(bw_vec) / 8; k++) t += s[k];
    j->sum = t;
    return NULL;
}

/* One pass of nth workers; seconds. */
static double bw_pass(uint8_t *buf, size_t bytes, int nth, bool write, uint64_t *sum) {
    bw_job jobs[BW_MAX_THREADS];
    pthread_t tid[BW_MAX_THREADS];
    bool started[BW_MAX_THREADS] = {false};
    size_t unit = 8 * sizeof(bw_vec), units = bytes / unit;
    for (int k = 0; k < nth; k++) {
        size_t u0 = units * (size_t)k / (size_t)nth, u1 = units * (size_t)(k + 1) / (size_t)nth;
        jobs[k] = (bw_job){buf + u0 * unit, (u1 - u0) * unit, write, 0};
    }
    double t0 = bw_now();
    for (int k = 1; k < nth; k++) started[k] = pthread_create(&tid[k], NULL, bw_worker, &jobs[k]) == 0;
    bw_worker(&jobs[0]);
    for (int k = 1; k < nth; k++) {
        if (started[k]) pthread_join(tid[k], NULL);
        else bw_worker(&jobs[k]);
    }
    double t1 = bw_now();
    for (int k = 0; k < nth; k++) *sum += jobs[k].sum;
    return t1 - t0;
}

double loom_bench_read_bandwidth(uint8_t *buf, size_t bytes, int nth, int passes, bool touch) {
    if (!buf || bytes == 0 || nth < 1 || passes < 1) return 0;
    if (nth > BW_MAX_THREADS) nth = BW_MAX_THREADS;
    uint64_t sum = 0;
    if (touch) bw_pass(buf, bytes, nth, true, &sum); /* fault pages in from the reading threads */
    else bw_pass(buf, bytes, nth, false, &sum);      /* warm-up pass */
    double best = 0;
    for (int r = 0; r < passes; r++) {
        double s = bw_pass(buf, bytes, nth, false, &sum);
        if (s > 0 && (double)bytes / s > best) best = (double)bytes / s;
    }
    volatile uint64_t sink = sum;
    (void)sink;
    return best;
}
