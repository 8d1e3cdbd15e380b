/* loom bench kernels [--json] [-t N] [--quick] [--types Q4_0,Q8_0]
 *
 * Matmul throughput per weight type with the process kernel table at decode shape
 * (4096x4096 x 1 column, cycling over distinct matrices so the working set is
 * >= 2x the last-level cache, capped at ~1.5 GiB) and prompt shape (4096x4096 x 512),
 * with 1 and N threads; plus machine limits: streaming read bandwidth, peak FMA
 * GFLOP/s, peak int8 dot GOP/s and, on the avx512bf16 level, peak VDPBF16PS GFLOP/s.
 * Fraction = GB/s / bandwidth (decode) or GFLOP/s / peak (prompt; int8 peak for
 * quantized types, VDPBF16PS peak for BF16 on pair panels, FMA peak for other float
 * types). Prompt rows take the engine's path: repacked weights, F16 / BF16 on packed
 * activation panels (packed once, outside the timing), tiles of the engine's shape. */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "cpu/kernels_internal.h"
#include "quant/repack.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static size_t llc_bytes(void) {
    long v = -1;
#ifdef _SC_LEVEL3_CACHE_SIZE
    v = sysconf(_SC_LEVEL3_CACHE_SIZE);
#endif
    if (v <= 0) {
        FILE *f = fopen("/sys/devices/system/cpu/cpu0/cache/index3/size", "r");
        if (f) {
            long kb = 0;
            char unit = 0;
            if (fscanf(f, "%ld%c", &kb, &unit) >= 1) v = kb * (unit == 'M' ? 1024 * 1024 : 1024);
            fclose(f);
        }
    }
    return v > 0 ? (size_t)v : (size_t)256 << 20;
}

/* ---------------------------------------------------------------- threading */

typedef struct job {
    void (*fn)(struct job *, int ith, int nth);
    int nth;
    /* matmul */
    const loom_kernels *k;
    loom_type wt, at;
    int64_t rows, kdim, cols, nmat, reps;
    const uint8_t *w;
    bool repacked; /* w is in the row-interleaved layout (quant/repack.h) */
    size_t wrb, mat_bytes, arb;
    const uint8_t *act;
    /* F16 / BF16 activations packed as the engine packs them (ops_matmul.c mm_packed:
     * float panels, or BF16 pair panels where the level has gemm_bf16_pack); NULL:
     * none. Packed once before timing: rows are the product alone. */
    const void *packed;
    bool pairs;
    float *out;
    /* peaks */
    double result[256];
} job;

typedef struct { job *j; int ith; } targ;
static void *thread_main(void *p) {
    targ *t = p;
    t->j->fn(t->j, t->ith, t->j->nth);
    return NULL;
}
static double run_threads(job *j, int nth) {
    pthread_t th[256];
    targ ta[256];
    if (nth > 256) nth = 256;
    j->nth = nth;
    double t0 = now_s();
    int started = 0;
    for (int i = 1; i < nth; i++) {
        ta[i] = (targ){j, i};
        if (pthread_create(&th[i], NULL, thread_main, &ta[i]) != 0) break;
        started = i;
    }
    j->fn(j, 0, nth);
    for (int i = 1; i <= started; i++) pthread_join(th[i], NULL);
    if (started != nth - 1) { /* rows of threads that failed to start */
        for (int i = started + 1; i < nth; i++) j->fn(j, i, nth);
    }
    return now_s() - t0;
}

/* ------------------------------------------------------------------ kernels */

static bool g_no_gemm; /* --no-gemm: vec_dot only (GGUF layout) */

/* The engine's tile function for this job's weights. */
static bool job_gemm(job *j, const uint8_t *w, float *c, int64_t i0, int64_t i1, int64_t c0, int64_t c1) {
    if (g_no_gemm) return false;
    if (j->packed && c1 - c0 > 4)
        return j->pairs ? j->k->gemm_bf16_packed(j->wt, j->kdim, w, j->wrb, j->packed, c, (size_t)j->rows, i0, i1, c0, c1)
                        : j->k->gemm_float_packed(j->wt, j->kdim, w, j->wrb, j->packed, c, (size_t)j->rows, i0, i1, c0,
                                                  c1);
    if (j->repacked)
        return j->k->gemm_repacked(j->wt, j->kdim, w, j->wrb, j->act, j->arb, c, (size_t)j->rows, i0, i1, c0, c1);
    return j->k->gemm && j->k->gemm(j->wt, j->kdim, w, j->wrb, j->act, j->arb, c, (size_t)j->rows, i0, i1, c0, c1);
}

static void decode_fn(job *j, int ith, int nth) {
    /* contiguous row ranges, multiples of 16 rows (the repacked group) */
    int64_t ng = (j->rows + 15) / 16;
    int64_t r0 = ng * ith / nth * 16, r1 = ng * (ith + 1) / nth * 16;
    if (r1 > j->rows) r1 = j->rows;
    loom_vec_dot_fn vd = j->k->dot[j->wt].vec_dot;
    float *out = j->out + (size_t)ith * 64; /* per-thread scratch, avoid false sharing */
    for (int64_t rep = 0; rep < j->reps; rep++)
        for (int64_t m = 0; m < j->nmat; m++) {
            const uint8_t *w = j->w + (size_t)m * j->mat_bytes;
            /* the engine's path for one column: the gemm tile when the table has one */
            if (job_gemm(j, w, j->out + 256 * 64, r0, r1, 0, 1)) continue;
            float acc = 0.f;
            for (int64_t r = r0; r < r1; r++) {
                float s;
                vd(j->kdim, &s, w + (size_t)r * j->wrb, j->act);
                acc += s;
            }
            out[0] += acc;
        }
}

static void prompt_fn(job *j, int ith, int nth) {
    /* rows split in multiples of 16 */
    int64_t nblk = (j->rows + 15) / 16;
    int64_t b0 = nblk * ith / nth, b1 = nblk * (ith + 1) / nth;
    int64_t r0 = b0 * 16, r1 = b1 * 16 < j->rows ? b1 * 16 : j->rows;
    if (r0 >= r1) return;
    loom_vec_dot_fn vd = j->k->dot[j->wt].vec_dot;
    /* the engine's prompt tiles (ops_matmul.c): 64 columns; 16 rows, or
     * LOOM_MM_REPACKED_ROWS for repacked weights (activation preparation per call) */
    int64_t RB = j->repacked ? LOOM_MM_REPACKED_ROWS : 16, CB = 64;
    /* F16 / BF16: 32-row tiles (ops_matmul.c mm_prepare) */
    if (!j->repacked && (j->wt == LOOM_TYPE_F16 || j->wt == LOOM_TYPE_BF16)) RB = 32;
    /* levels asking for larger F16 / BF16 tiles (amx: kernels.h gemm_float_rows) get them */
    if (!j->repacked && (j->wt == LOOM_TYPE_F16 || j->wt == LOOM_TYPE_BF16) && j->k->gemm_float_rows > 0 &&
        j->k->gemm_float_cols > 0)
        RB = j->k->gemm_float_rows, CB = j->k->gemm_float_cols;
    /* and for the types whose gemm decodes the weights once per call (kernels.h gemm_tile_rows) */
    if (!j->repacked && j->k->gemm_tile_rows[j->wt] > 0 && j->k->gemm_tile_cols[j->wt] > 0)
        RB = j->k->gemm_tile_rows[j->wt], CB = j->k->gemm_tile_cols[j->wt];
    for (int64_t rep = 0; rep < j->reps; rep++)
        for (int64_t c0 = 0; c0 < j->cols; c0 += CB) {
            int64_t c1 = c0 + CB < j->cols ? c0 + CB : j->cols;
            for (int64_t i = r0; i < r1; i += RB) {
                int64_t i1 = i + RB < r1 ? i + RB : r1;
                if (job_gemm(j, j->w, j->out, i, i1, c0, c1)) continue;
                for (int64_t c = c0; c < c1; c++)
                    for (int64_t r = i; r < i1; r++)
                        vd(j->kdim, &j->out[(size_t)c * j->rows + r], j->w + (size_t)r * j->wrb, j->act + (size_t)c * j->arb);
            }
        }
}

#define PEAK_ITERS 20000000LL
/* The peak loops must keep their accumulators in registers: rolled, GCC keeps the
 * array in memory and every step becomes load + op + store (a latency chain through
 * memory that halves the measured "peak"). */
#define PEAK_UNROLL _Pragma("GCC unroll 16")

#if defined(__x86_64__)
__attribute__((target("avx512f"))) static double fma512(int64_t iters) {
    __m512 a[12];
    const __m512 m = _mm512_set1_ps(0.999999f), c = _mm512_set1_ps(1e-7f);
    for (int i = 0; i < 12; i++) a[i] = _mm512_set1_ps((float)i);
    for (int64_t it = 0; it < iters; it++)
        PEAK_UNROLL
        for (int i = 0; i < 12; i++) a[i] = _mm512_fmadd_ps(a[i], m, c);
    __m512 s = a[0];
    for (int i = 1; i < 12; i++) s = _mm512_add_ps(s, a[i]);
    return (double)_mm512_reduce_add_ps(s);
}
__attribute__((target("avx2,fma"))) static double fma256(int64_t iters) {
    __m256 a[12];
    const __m256 m = _mm256_set1_ps(0.999999f), c = _mm256_set1_ps(1e-7f);
    for (int i = 0; i < 12; i++) a[i] = _mm256_set1_ps((float)i);
    for (int64_t it = 0; it < iters; it++)
        PEAK_UNROLL
        for (int i = 0; i < 12; i++) a[i] = _mm256_fmadd_ps(a[i], m, c);
    float t[8];
    __m256 s = a[0];
    for (int i = 1; i < 12; i++) s = _mm256_add_ps(s, a[i]);
    _mm256_storeu_ps(t, s);
    return t[0] + t[7];
}
__attribute__((target("avx512f,avx512vnni"))) static double dp512(int64_t iters) {
    __m512i a[12];
    const __m512i u = _mm512_set1_epi8(3), v = _mm512_set1_epi8(-2);
    for (int i = 0; i < 12; i++) a[i] = _mm512_set1_epi32(i);
    for (int64_t it = 0; it < iters; it++)
        PEAK_UNROLL
        for (int i = 0; i < 12; i++) a[i] = _mm512_dpbusd_epi32(a[i], u, v);
    __m512i s = a[0];
    for (int i = 1; i < 12; i++) s = _mm512_add_epi32(s, a[i]);
    int32_t t[16];
    _mm512_storeu_si512((void *)t, s);
    return (double)t[0] + (double)t[15];
}
__attribute__((target("avx2"))) static double madd256(int64_t iters) {
    /* the asm barrier makes u opaque each iteration, so the products are not hoisted out
     * of the loop (they were: the loop measured vpaddd); 8 distinct v keep the 8 products
     * of an iteration distinct */
    __m256i a[8], v[8];
    __m256i u = _mm256_set1_epi8(3);
    const __m256i one = _mm256_set1_epi16(1);
    for (int i = 0; i < 8; i++) a[i] = _mm256_set1_epi32(i), v[i] = _mm256_set1_epi8((char)(-2 - i));
    for (int64_t it = 0; it < iters; it++) {
        __asm__ volatile("" : "+x"(u));
        PEAK_UNROLL
        for (int i = 0; i < 8; i++) a[i] = _mm256_add_epi32(a[i], _mm256_madd_epi16(_mm256_maddubs_epi16(u, v[i]), one));
    }
    __m256i s = a[0];
    for (int i = 1; i < 8; i++) s = _mm256_add_epi32(s, a[i]);
    return (double)_mm256_extract_epi32(s, 0);
}
__attribute__((target("avx2,avxvnni"))) static double dp256(int64_t iters) {
    __m256i a[12];
    const __m256i u = _mm256_set1_epi8(3), v = _mm256_set1_epi8(-2);
    for (int i = 0; i < 12; i++) a[i] = _mm256_set1_epi32(i);
    for (int64_t it = 0; it < iters; it++)
        PEAK_UNROLL
        for (int i = 0; i < 12; i++) a[i] = _mm256_dpbusd_avx_epi32(a[i], u, v);
    __m256i s = a[0];
    for (int i = 1; i < 12; i++) s = _mm256_add_epi32(s, a[i]);
    return (double)_mm256_extract_epi32(s, 0);
}
__attribute__((target("avx512f,avx512bf16"))) static double bf16dp512(int64_t iters) {
    __m512 a[12];
    const __m512bh u = (__m512bh)_mm512_set1_epi32(0x3F803F80), v = (__m512bh)_mm512_set1_epi32(0x3A803A80);
    for (int i = 0; i < 12; i++) a[i] = _mm512_set1_ps((float)i);
    for (int64_t it = 0; it < iters; it++)
        PEAK_UNROLL
        for (int i = 0; i < 12; i++) a[i] = _mm512_dpbf16_ps(a[i], u, v);
    __m512 s = a[0];
    for (int i = 1; i < 12; i++) s = _mm512_add_ps(s, a[i]);
    return (double)_mm512_reduce_add_ps(s);
}
#endif

/* 0 scalar, 1 avx2, 2 avx512, 3 avx512vnni or amx, 4 avxvnni (256-bit FMA and VEX vpdpbusd) */
static int g_level;

static void fma_fn(job *j, int ith, int nth) {
    (void)nth;
    double ops = 0;
    int64_t it = j->reps;
#if defined(__x86_64__)
    if (g_level == 2 || g_level == 3) { j->result[128 + ith] = fma512(it); ops = (double)it * 12 * 16 * 2; }
    else if (g_level == 1 || g_level == 4) { j->result[128 + ith] = fma256(it); ops = (double)it * 12 * 8 * 2; }
    else
#endif
    {
        float a[8] = {0};
        for (int64_t i = 0; i < it; i++)
            for (int q = 0; q < 8; q++) a[q] = a[q] * 0.999999f + 1e-7f;
        j->result[128 + ith] = a[0] + a[7];
        ops = (double)it * 8 * 2;
    }
    j->result[ith] = ops;
}

static void int8_fn(job *j, int ith, int nth) {
    (void)nth;
    double ops = 0;
    int64_t it = j->reps;
#if defined(__x86_64__)
    if (g_level == 3) { j->result[128 + ith] = dp512(it); ops = (double)it * 12 * 64 * 2; }
    else if (g_level == 4) { j->result[128 + ith] = dp256(it); ops = (double)it * 12 * 32 * 2; }
    else if (g_level >= 1) { j->result[128 + ith] = madd256(it); ops = (double)it * 8 * 32 * 2; }
    else
#endif
    {
        int32_t a[8] = {0};
        for (int64_t i = 0; i < it; i++)
            for (int q = 0; q < 8; q++) a[q] += 3 * (int8_t)(i + q);
        j->result[128 + ith] = a[0];
        ops = (double)it * 8 * 2;
    }
    j->result[ith] = ops;
}

/* VDPBF16PS (the avx512bf16 level's BF16 prompt product): 2 products per float lane */
static void bf16_fn(job *j, int ith, int nth) {
    (void)nth;
#if defined(__x86_64__)
    j->result[128 + ith] = bf16dp512(j->reps);
    j->result[ith] = (double)j->reps * 12 * 32 * 2;
#else
    (void)j; (void)ith;
#endif
}

static double peak(void (*fn)(job *, int, int), int nth, bool quick) {
    job j;
    memset(&j, 0, sizeof j);
    j.fn = fn;
    j.reps = quick ? PEAK_ITERS / 20 : PEAK_ITERS / 4;
    double t = run_threads(&j, nth);
    double ops = 0;
    for (int i = 0; i < nth; i++) ops += j.result[i];
    return ops / t * 1e-9;
}

/* ------------------------------------------------------------------ main */

typedef struct {
    loom_type t;
    const char *shape;
    int threads;
    double gflops, gbs, fraction;
    bool repacked;
    const char *layout; /* gguf, repacked, packed, bf16-pairs */
} entry;

static void usage(void) {
    fprintf(stderr, "usage: loom bench kernels [--json] [-t N] [--quick] [--no-repack] [--no-gemm] [--types Q4_0,...]\n"
                    "  --no-repack  keep GGUF row layout even where the engine repacks weights at load\n"
                    "  --no-gemm    vec_dot per output element only (no gemm tiles; implies --no-repack)\n");
}

int loom_bench_kernels(int argc, char **argv) {
    bool json = false, quick = false, no_repack = false;
    long nth = sysconf(_SC_NPROCESSORS_ONLN);
    if (nth < 1) nth = 1;
    const char *types = "Q4_0,Q8_0,Q4_K,Q6_K,MXFP4,F16,BF16,F32";
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--json")) json = true;
        else if (!strcmp(argv[i], "--quick")) quick = true;
        else if (!strcmp(argv[i], "--no-repack")) no_repack = true;
        else if (!strcmp(argv[i], "--no-gemm")) no_repack = g_no_gemm = true;
        else if (!strcmp(argv[i], "-t") && i + 1 < argc) {
            char *end;
            nth = strtol(argv[++i], &end, 10);
            if (*end || nth < 1 || nth > 256) { fprintf(stderr, "bench: bad -t\n"); return 2; }
        } else if (!strcmp(argv[i], "--types") && i + 1 < argc) types = argv[++i];
        else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) { usage(); return 0; }
        else { usage(); return 2; }
    }
    loom_type tl[LOOM_TYPE_COUNT];
    int ntypes = 0;
    {
        char buf[512];
        snprintf(buf, sizeof buf, "%s", types);
        for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
            loom_type t;
            if (!loom_type_from_name(tok, &t) || !loom_kernels_get()->dot[t].vec_dot) {
                fprintf(stderr, "bench: no matmul kernel for type '%s'\n", tok);
                return 2;
            }
            if (ntypes < LOOM_TYPE_COUNT) tl[ntypes++] = t;
        }
    }
    const loom_kernels *k = loom_kernels_get();
    g_level = !strcmp(k->name, "avx512vnni") || !strcmp(k->name, "avx512bf16") || !strcmp(k->name, "amx") ? 3 : !strcmp(k->name, "avx512") ? 2 : !strcmp(k->name, "avx2") ? 1
              : !strcmp(k->name, "avxvnni") ? 4 : 0;
    char desc[512];
    loom_kernels_describe(desc, sizeof desc);

    const int64_t N = quick ? 1024 : 4096, K = quick ? 1024 : 4096, P = quick ? 64 : 512;
    size_t llc = llc_bytes();
    size_t arena_bytes = quick ? ((size_t)64 << 20) : 2 * llc;
    if (arena_bytes > ((size_t)3 << 29)) arena_bytes = (size_t)3 << 29; /* 1.5 GiB */
    if (arena_bytes < ((size_t)64 << 20)) arena_bytes = (size_t)64 << 20;
    uint8_t *arena = aligned_alloc(64, arena_bytes);
    float *xf = malloc((size_t)(K > 256 ? K : 256) * P * sizeof(float));
    float *out = calloc((size_t)N * P + 256 * 64, sizeof(float));
    uint8_t *act = malloc((size_t)P * K * 4 + 4096);
    if (!arena || !xf || !out || !act) {
        fprintf(stderr, "bench: out of memory\n");
        free(arena); free(xf); free(out); free(act);
        return 1;
    }
    for (size_t i = 0; i < arena_bytes; i += 8) memcpy(arena + i, &(uint64_t){i * 0x9E3779B97F4A7C15ull}, 8);
    uint64_t rng = 88172645463325252ull;
    for (int64_t i = 0; i < K * P; i++) {
        rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17;
        xf[i] = (float)((double)(rng >> 11) / 9007199254740992.0 - 0.5);
    }

    /* machine limits */
    double bw[2], pf[2], pi[2], pb[2] = {0, 0};
    int tcount[2] = {1, (int)nth};
    const bool bf16dp = k->gemm_bf16_pack && k->gemm_bf16_packed; /* x86 avx512bf16 only */
    for (int ti = 0; ti < 2; ti++) {
        bw[ti] = loom_bench_read_bandwidth(arena, arena_bytes, tcount[ti], quick ? 2 : 5, false) * 1e-9;
        pf[ti] = peak(fma_fn, tcount[ti], quick);
        pi[ti] = peak(int8_fn, tcount[ti], quick);
        if (bf16dp) pb[ti] = peak(bf16_fn, tcount[ti], quick);
    }
    if (!json) {
        printf("%s\n", desc);
        printf("LLC %.0f MiB; read bandwidth %.1f GB/s (1 thread), %.1f GB/s (%d threads)\n", (double)llc / 1048576.0,
               bw[0], bw[1], (int)nth);
        printf("peak FMA %.1f GFLOP/s (1t), %.1f (%dt); peak int8 dot %.1f GOP/s (1t), %.1f (%dt)\n", pf[0], pf[1],
               (int)nth, pi[0], pi[1], (int)nth);
        if (bf16dp) printf("peak VDPBF16PS %.1f GFLOP/s (1t), %.1f (%dt): the BF16 prompt fraction's peak\n", pb[0], pb[1], (int)nth);
        printf("%-6s %-7s %4s %10s %9s %9s\n", "type", "shape", "thr", "GFLOP/s", "GB/s", "fraction");
    }

    entry *ents = calloc((size_t)ntypes * 4, sizeof *ents);
    int ne = 0;
    if (!ents) { free(arena); free(xf); free(out); free(act); return 1; }
    for (int ti = 0; ti < ntypes; ti++) {
        loom_type wt = tl[ti], at = k->dot[wt].vec_dot_type;
        size_t wrb = 0, arb = 0;
        if (loom_type_row_bytes(wt, K, &wrb) != LOOM_OK || loom_type_row_bytes(at, K, &arb) != LOOM_OK) continue;
        size_t mat_bytes = wrb * (size_t)N;
        int64_t nmat = (int64_t)(arena_bytes / mat_bytes);
        if (nmat < 1) continue;
        /* quantize 64 rows once and replicate them (content does not matter for timing) */
        uint8_t *w = arena;
        for (int64_t r = 0; r < 64 && r < N; r++) (void)loom_quantize_row(wt, xf + (size_t)r * K, w + (size_t)r * wrb, K);
        /* the engine's layout: weights the kernel table wants repacked are repacked at
         * load (groups of 16 rows are self-contained, so the 64-row copy still works) */
        const bool repacked = !no_repack && k->repack[wt] && N % 64 == 0;
        if (repacked) {
            uint8_t *tmp = malloc(64 * wrb);
            if (!tmp || loom_repack_rows(wt, K, 64, w, tmp) != LOOM_OK) {
                fprintf(stderr, "bench: repack failed\n");
                free(tmp); free(arena); free(xf); free(out); free(act); free(ents);
                return 1;
            }
            memcpy(w, tmp, 64 * wrb);
            free(tmp);
        }
        for (int64_t r = 64; r < N * nmat; r++) memcpy(w + (size_t)r * wrb, w + (size_t)(r % 64) * wrb, wrb);
        for (int64_t c = 0; c < P; c++) k->from_float[at](xf + (size_t)c * K, act + (size_t)c * arb, K);
        /* the engine's F16 / BF16 prompt path (ops_matmul.c mm_packed): panels packed once */
        void *packed = NULL;
        bool pairs = false;
        if (!g_no_gemm && !repacked && (wt == LOOM_TYPE_F16 || wt == LOOM_TYPE_BF16) && at == wt) {
            pairs = wt == LOOM_TYPE_BF16 && bf16dp;
            if (pairs || (k->gemm_float_pack && k->gemm_float_packed)) {
                const int64_t np = (P + LOOM_GEMM_PANEL - 1) / LOOM_GEMM_PANEL;
                packed = aligned_alloc(64, (size_t)np * LOOM_GEMM_PANEL * (size_t)K * sizeof(float));
                if (packed && !(pairs ? k->gemm_bf16_pack(at, K, act, arb, P, packed, 0, np)
                                      : k->gemm_float_pack(at, K, act, arb, P, packed, 0, np))) {
                    free(packed);
                    packed = NULL;
                }
            }
        }
        const char *layout = repacked ? "repacked" : pairs && packed ? "bf16-pairs" : packed ? "packed" : "gguf";
        const bool isint = loom_type_get(wt)->is_quantized;
        for (int shape = 0; shape < 2; shape++)
            for (int tt = 0; tt < 2; tt++) {
                if (tt == 1 && nth == 1) continue;
                job j;
                memset(&j, 0, sizeof j);
                j.k = k; j.wt = wt; j.at = at; j.rows = N; j.kdim = K; j.w = w; j.wrb = wrb; j.repacked = repacked;
                j.mat_bytes = mat_bytes; j.arb = arb; j.act = act; j.out = out;
                j.packed = packed; j.pairs = pairs;
                double flop, bytes, t;
                if (shape == 0) {
                    j.fn = decode_fn; j.cols = 1; j.nmat = nmat; j.reps = 1;
                    t = run_threads(&j, tcount[tt]);
                    double target = quick ? 0.2 : 1.5;
                    if (t < target) j.reps = (int64_t)ceil(target / (t > 1e-6 ? t : 1e-6));
                    if (j.reps > 1000) j.reps = 1000;
                    if (j.reps > 1) t = run_threads(&j, tcount[tt]);
                    flop = 2.0 * N * K * (double)nmat * (double)j.reps;
                    bytes = (double)mat_bytes * (double)nmat * (double)j.reps;
                } else {
                    j.fn = prompt_fn; j.cols = P; j.nmat = 1; j.reps = 1;
                    t = run_threads(&j, tcount[tt]);
                    double target = quick ? 0.2 : 1.0;
                    if (t < target) {
                        j.reps = (int64_t)ceil(target / (t > 1e-6 ? t : 1e-6));
                        if (j.reps > 100) j.reps = 100;
                        t = run_threads(&j, tcount[tt]);
                    }
                    flop = 2.0 * N * K * (double)P * (double)j.reps;
                    bytes = (double)mat_bytes * (double)j.reps;
                }
                entry *e = &ents[ne++];
                e->t = wt;
                e->shape = shape == 0 ? "decode" : "prompt";
                e->threads = tcount[tt];
                e->repacked = repacked;
                e->gflops = flop / t * 1e-9;
                e->gbs = bytes / t * 1e-9;
                e->layout = shape == 0 && !repacked ? "gguf" : layout; /* decode: one column, the rows */
                e->fraction = shape == 0             ? e->gbs / bw[tt]
                              : isint                ? e->gflops / pi[tt]
                              : pairs && packed      ? e->gflops / pb[tt]
                                                     : e->gflops / pf[tt];
                if (!json)
                    printf("%-6s %-7s %4d %10.1f %9.1f %8.1f%%%s%s%s\n", loom_type_name(wt), e->shape, e->threads,
                           e->gflops, e->gbs, 100 * e->fraction, strcmp(e->layout, "gguf") ? "  (" : "",
                           strcmp(e->layout, "gguf") ? e->layout : "", strcmp(e->layout, "gguf") ? ")" : "");
                fflush(stdout);
            }
        free(packed);
    }
    if (json) {
        printf("{\"isa\": \"%s\", \"threads\": %d, \"bandwidth_gbs\": %.2f, \"bandwidth_gbs_1t\": %.2f, "
               "\"peak_fma_gflops\": %.2f, \"peak_fma_gflops_1t\": %.2f, \"peak_int8_gops\": %.2f, "
               "\"peak_int8_gops_1t\": %.2f, \"peak_bf16dp_gflops\": %.2f, \"peak_bf16dp_gflops_1t\": %.2f, "
               "\"kernels\": [",
               k->name, (int)nth, bw[1], bw[0], pf[1], pf[0], pi[1], pi[0], pb[1], pb[0]);
        for (int i = 0; i < ne; i++)
            printf("%s{\"type\": \"%s\", \"shape\": \"%s\", \"threads\": %d, \"gflops\": %.3f, \"gbs\": %.3f, "
                   "\"fraction\": %.4f, \"layout\": \"%s\"}",
                   i ? ", " : "", loom_type_name(ents[i].t), ents[i].shape, ents[i].threads, ents[i].gflops, ents[i].gbs,
                   ents[i].fraction, ents[i].layout);
        printf("]}\n");
    }
    free(ents);
    free(arena);
    free(xf);
    free(out);
    free(act);
    return 0;
}
