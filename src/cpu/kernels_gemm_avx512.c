/*
 * kernels_gemm_avx512.c - AVX-512 (F/BW/VL/DQ + F16C) gemm tiles for F16 and BF16
 * weights x F16 / BF16 activations (the kernels.h loom_gemm_fn contract).
 *
 * LOOM_GEMM_PACKED_MIN_COLS (16) columns or more go to the outer-product kernel of
 * kernels_gemm_packed_avx512.c (panels packed per chunk inside the call; the engine packs
 * single-slice products once instead). What follows is the path for 3 to 15 columns
 * (small batches, e.g. a few sequences decoding together).
 * Design (3 to 15 columns): per block of up to PC = 64 activation
 * columns and chunk of up to KC = 512 k-values, the activation block is converted to
 * float ONCE into a stack scratch, then per 4-row group the 4 weight rows once, and a
 * register-tiled float micro-kernel computes MR = 4 rows x NC <= 6 columns: 4*NC zmm
 * accumulators, 4 + NC aligned loads and 4*NC FMAs per 16 k-values, no conversion in
 * the inner loop. (The previous kernel converted both operands inside the micro-kernel,
 * 10 vcvtph2ps per 24 FMAs, each conversion taking an FMA port slot: 1.1B F16 pp512
 * tiles (32 x 64, best of 100-200 calls, one thread, three interleaved rounds on the busy
 * VM) went from 72-93 to 97-122 GFLOP/s, BF16 about even at 82-119; VDPBF16PS
 * measured 4x slower than VFMADD231PS per instruction on this Xeon, so BF16 uses the same
 * float path.) Conversions: F16 by vcvtph2ps, BF16 by zero-extension and a shift; k tails
 * are zero-filled masked loads, so the scratch rows are zero-padded to 16 values. Chunk
 * sums are added into C (first chunk stores): a row's k-chunking is the same whatever the
 * tile, so results do not depend on the tiling or thread count. The 4 accumulators of a
 * column are reduced together (unpack/shuffle adds, then the 128-bit lanes) into the 4
 * consecutive outputs C[j*ldc + i .. i+3]: one (masked) 128-bit store. Row remainders
 * (< 4 rows) repeat the last valid row's pointer and mask the store; column remainders
 * use the NC = 1..5 instances.
 * One or two columns (decode; j1 - j0 <= SMALL_N) are memory bound: rows are taken
 * ONE at a time, i.e. a single sequential stream through the row-major matrix (here
 * 2 or 4 interleaved row streams measured 15-25% below it), 4 accumulator chains per
 * column, F16 by 256-bit loads and vcvtph2ps (512-bit loads measured slower on this
 * streaming path on the Xeon), BF16 by 512-bit loads split into even and odd values
 * (row_bf16). Both the weight row and the 16-bit activation
 * row are widened in the loop, and (where loom_cpu_prefetch is on: not on AMD CPUs,
 * kernels_internal.h) the next weight row is prefetched while one streams
 * (each 64-byte line its own prefetch, eight lines per step, with the line LOOM_PF_L2
 * ahead into L2): the next row's misses in flight. Until the twenty-third session the
 * activations were converted to float once per call into a stack copy (on the Xeon, an
 * older loop without the prefetches measured 6.3-8.7 GB/s widening both against
 * 12.4-13.2 with the copy and the prefetches); on a Zen 4 (32 KiB L1D) the float copy,
 * twice the activation bytes read from L1 per weight, cost a third of the single-thread
 * F16 decode rate: 1.1B F16 tg32, one thread, three interleaved pairs, 9.4-10.1 t/s with
 * the copy against 11.5-15.1 widening both (the copy's 22 KiB for ffn_down's 5632 values
 * next to two 11 KiB weight rows does not fit that L1 at all).
 * From 3 columns on the conversions bound the single-row loop and the 4-row
 * micro-kernel is faster.
 * Results are float sums in another order than the scalar reference (per-lane partial
 * sums, then a tree reduction); the tests bound the difference.
 */
#include "cpu/kernels_internal.h"

#include <immintrin.h>

#define ALWAYS_INLINE LOOM_ALWAYS_INLINE

#define MR 4      /* weight rows per micro-kernel */
#define NR 6      /* activation columns per micro-kernel (max) */
#define SMALL_N 2 /* at most this many columns: one row at a time */
#define KC 512    /* k-values per converted chunk (scratch: PC + MR rows of KC floats) */
#define PC 64     /* activation columns per converted block */

/* [sum(a), sum(b), sum(c), sum(d)] */
static ALWAYS_INLINE __m128 reduce4(__m512 a, __m512 b, __m512 c, __m512 d) {
    const __m512 ab = _mm512_add_ps(_mm512_unpacklo_ps(a, b), _mm512_unpackhi_ps(a, b));
    const __m512 cd = _mm512_add_ps(_mm512_unpacklo_ps(c, d), _mm512_unpackhi_ps(c, d));
    const __m512 s = _mm512_add_ps(_mm512_shuffle_ps(ab, cd, _MM_SHUFFLE(1, 0, 1, 0)),
                                   _mm512_shuffle_ps(ab, cd, _MM_SHUFFLE(3, 2, 3, 2)));
    const __m256 h = _mm256_add_ps(_mm512_castps512_ps256(s), _mm512_extractf32x8_ps(s, 1));
    return _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
}

/* 16 floats from 16 values (a 256-bit load). */
static ALWAYS_INLINE __m512 cvt16(int bf, __m256i v) {
    if (!bf) return _mm512_cvtph_ps(v);
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(v), 16));
}
static ALWAYS_INLINE __m512 cvt256(int bf, const uint16_t *p) { return cvt16(bf, _mm256_loadu_si256((const __m256i *)p)); }
static ALWAYS_INLINE __m512 cvt256m(int bf, const uint16_t *p, __mmask16 m) { return cvt16(bf, _mm256_maskz_loadu_epi16(m, p)); }

/* C[j*ldc] = dot(x[0..k), a[j][0..k)) for j < nc (<= SMALL_N), F16 rows (BF16: row_bf16):
 * the weight row and the F16 activation rows both widened here; 4 accumulator chains per
 * column; the next row (xn) is prefetched as this one streams. */
static ALWAYS_INLINE void row_f16(int nc, int64_t k, const uint16_t *x, uintptr_t xn,
                                    const uint16_t *const *a, float *c, size_t ldc) {
    __m512 acc[4][SMALL_N];
    LOOM_UNROLL for (int u = 0; u < 4; u++) LOOM_UNROLL for (int j = 0; j < nc; j++) acc[u][j] = _mm512_setzero_ps();
    int64_t kk = 0;
    /* 512 bytes of the row per step, each 64-byte line with its own two prefetches (the
     * next row's line into L1, the line LOOM_PF_L2 ahead in this stream into L2):
     * spread per line and eight lines per step, 1.1B-shaped F16 decode (a stand-alone
     * stream over its 22 layers' matrices, 2 threads) 25.5 -> 27.3 GB/s, against 64
     * values per step with the four prefetches at its top. */
    for (; kk + 256 <= k; kk += 256) {
        LOOM_UNROLL for (int u = 0; u < 8; u++) {
            LOOM_PFS0((const char *)(xn + 2 * (uintptr_t)kk + 64 * (uintptr_t)u));
            LOOM_PFS1((const char *)(x + kk + 32 * u) + LOOM_PF_L2);
            LOOM_UNROLL for (int h = 0; h < 2; h++) {
                const __m512 xv = cvt256(0, x + kk + 32 * u + 16 * h);
                LOOM_UNROLL for (int j = 0; j < nc; j++)
                    acc[u & 3][j] = _mm512_fmadd_ps(xv, cvt256(0, a[j] + kk + 32 * u + 16 * h), acc[u & 3][j]);
            }
        }
    }
    for (; kk + 64 <= k; kk += 64) {
        LOOM_PFS0((const char *)(xn + 2 * (uintptr_t)kk));
        LOOM_PFS0((const char *)(xn + 2 * (uintptr_t)kk + 64));
        LOOM_PFS1((const char *)(x + kk) + LOOM_PF_L2);
        LOOM_PFS1((const char *)(x + kk) + LOOM_PF_L2 + 64);
        LOOM_UNROLL for (int u = 0; u < 4; u++) {
            const __m512 xv = cvt256(0, x + kk + 16 * u);
            LOOM_UNROLL for (int j = 0; j < nc; j++)
                acc[u][j] = _mm512_fmadd_ps(xv, cvt256(0, a[j] + kk + 16 * u), acc[u][j]);
        }
    }
    for (; kk < k; kk += 16) { /* tail: masked pieces of 16 (zero-filled lanes add 0) */
        const __mmask16 m = (__mmask16)(k - kk >= 16 ? 0xFFFF : (1u << (k - kk)) - 1);
        const __m512 xv = cvt256m(0, x + kk, m);
        LOOM_UNROLL for (int j = 0; j < nc; j++) acc[0][j] = _mm512_fmadd_ps(xv, cvt256m(0, a[j] + kk, m), acc[0][j]);
    }
    LOOM_UNROLL for (int j = 0; j < nc; j++)
        c[(size_t)j * ldc] = _mm512_reduce_add_ps(
            _mm512_add_ps(_mm512_add_ps(acc[0][j], acc[1][j]), _mm512_add_ps(acc[2][j], acc[3][j])));
}

/* dst[0..round_up(n, 16)) = n values at src as floats, zero-padded. */
static ALWAYS_INLINE void cvt_row(int bf, const uint16_t *src, int64_t n, float *dst) {
    int64_t kk = 0;
    for (; kk + 16 <= n; kk += 16) _mm512_store_ps(dst + kk, cvt256(bf, src + kk));
    if (kk < n) _mm512_store_ps(dst + kk, cvt256m(bf, src + kk, (__mmask16)((1u << (n - kk)) - 1)));
}

/* C[j*ldc + r] (+)= dot(w[r][0..16 nv), a[j*KC ..]) for r < MR (stored where rm has bit
 * r), j < nc, float operands (KC-strided activation rows); add: accumulate into C. */
static ALWAYS_INLINE void micro_f32(int nc, int64_t nv, const float *const *w, const float *a, float *c, size_t ldc,
                                   __mmask8 rm, int add) {
    __m512 acc[MR][NR];
    LOOM_UNROLL for (int r = 0; r < MR; r++) LOOM_UNROLL for (int j = 0; j < nc; j++) acc[r][j] = _mm512_setzero_ps();
    for (int64_t v = 0; v < nv; v++) {
        __m512 wv[MR];
        LOOM_UNROLL for (int r = 0; r < MR; r++) wv[r] = _mm512_load_ps(w[r] + 16 * v);
        LOOM_UNROLL for (int j = 0; j < nc; j++) {
            const __m512 av = _mm512_load_ps(a + (size_t)j * KC + 16 * v);
            LOOM_UNROLL for (int r = 0; r < MR; r++) acc[r][j] = _mm512_fmadd_ps(wv[r], av, acc[r][j]);
        }
    }
    LOOM_UNROLL for (int j = 0; j < nc; j++) {
        float *cp = c + (size_t)j * ldc;
        __m128 s = reduce4(acc[0][j], acc[1][j], acc[2][j], acc[3][j]);
        if (rm == 0xF) {
            if (add) s = _mm_add_ps(s, _mm_loadu_ps(cp));
            _mm_storeu_ps(cp, s);
        } else {
            if (add) s = _mm_add_ps(s, _mm_maskz_loadu_ps(rm, cp));
            _mm_mask_storeu_ps(cp, rm, s);
        }
    }
}

/* Three or more columns: per block of up to PC columns and chunk of up to KC k-values,
 * the activation block is converted to float once (scratch af), then per 4-row group the
 * weight rows once (scratch wf), and the float micro-kernel runs over the block's
 * columns: 4 + NC loads and 4 NC FMAs per 16 k-values, no conversion in the inner loop.
 * A row's sum over k is chunked at the same KC boundaries whatever the tile, so results
 * do not depend on the tiling. */
static ALWAYS_INLINE void gemm_panel(int bf, int64_t k, const uint8_t *W, size_t ws, const uint8_t *A, size_t as,
                                     float *c, size_t ldc, int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
    _Alignas(64) float af[PC * KC];
    _Alignas(64) float wf[MR * KC];
    for (int64_t jb = j0; jb < j1; jb += PC) {
        const int64_t jn = j1 - jb < PC ? j1 - jb : PC;
        for (int64_t k0 = 0; k0 < k; k0 += KC) {
            const int64_t kl = k - k0 < KC ? k - k0 : KC, nv = (kl + 15) / 16;
            for (int64_t q = 0; q < jn; q++)
                cvt_row(bf, (const uint16_t *)(A + (size_t)(jb + q) * as) + k0, kl, af + (size_t)q * KC);
            for (int64_t i = i0; i < i1; i += MR) {
                const int64_t nr = i1 - i < MR ? i1 - i : MR;
                const float *w[MR];
                for (int r = 0; r < MR; r++) {
                    if (r < nr) cvt_row(bf, (const uint16_t *)(W + (size_t)(i + r) * ws) + k0, kl, wf + (size_t)r * KC);
                    w[r] = wf + (size_t)(r < nr ? r : nr - 1) * KC;
                }
                const __mmask8 rm = (__mmask8)((1u << nr) - 1);
                const int add = k0 > 0;
                for (int64_t j = 0; j < jn; j += NR) {
                    const int nc = jn - j < NR ? (int)(jn - j) : NR;
                    const float *ap = af + (size_t)j * KC;
                    float *cp = c + (size_t)(jb + j) * ldc + (size_t)i;
                    switch (nc) { /* a constant NC per instance keeps the accumulators in registers */
                    case 6: micro_f32(6, nv, w, ap, cp, ldc, rm, add); break;
                    case 5: micro_f32(5, nv, w, ap, cp, ldc, rm, add); break;
                    case 4: micro_f32(4, nv, w, ap, cp, ldc, rm, add); break;
                    case 3: micro_f32(3, nv, w, ap, cp, ldc, rm, add); break;
                    case 2: micro_f32(2, nv, w, ap, cp, ldc, rm, add); break;
                    default: micro_f32(1, nv, w, ap, cp, ldc, rm, add); break;
                    }
                }
            }
        }
    }
}

/* row_f16 for BF16 rows: one 512-bit load holds 32 values; the even ones become floats
 * by a shift, the odd ones by masking off the low halves, for the weights and the
 * activations alike, so each pair of lanes multiplies the values of one index: the same
 * products as widening 16 at a time, two FMAs per 32 values and no cross-lane
 * zero-extension. 1.1B-shaped BF16 rows (a stand-alone stream over the 22 layers' matrices
 * and the output, one thread, Zen 4, three rounds): 25.4-27.4 GB/s against 24.6-25.9 for
 * the zero-extension and 22.7-23.7 for VDPBF16PS on the same bytes. */
static ALWAYS_INLINE void row_bf16(int nc, int64_t k, const uint16_t *x, uintptr_t xn, const uint16_t *const *a,
                                   float *c, size_t ldc) {
    const __m512i hm = _mm512_set1_epi32((int)0xFFFF0000u);
    __m512 acc[4][SMALL_N];
    LOOM_UNROLL for (int u = 0; u < 4; u++) LOOM_UNROLL for (int j = 0; j < nc; j++) acc[u][j] = _mm512_setzero_ps();
#define BF_STEP(u, w, LOADA)                                                                                 \
    do {                                                                                                     \
        const __m512 we = _mm512_castsi512_ps(_mm512_slli_epi32(w, 16));                                     \
        const __m512 wo = _mm512_castsi512_ps(_mm512_and_si512(w, hm));                                      \
        LOOM_UNROLL for (int j = 0; j < nc; j++) {                                                           \
            const __m512i av = LOADA;                                                                        \
            acc[u][j] = _mm512_fmadd_ps(we, _mm512_castsi512_ps(_mm512_slli_epi32(av, 16)), acc[u][j]);      \
            acc[u][j] = _mm512_fmadd_ps(wo, _mm512_castsi512_ps(_mm512_and_si512(av, hm)), acc[u][j]);       \
        }                                                                                                    \
    } while (0)
    int64_t kk = 0;
    for (; kk + 256 <= k; kk += 256) { /* 512 bytes per step, a prefetch pair per line (row_f16) */
        LOOM_UNROLL for (int u = 0; u < 8; u++) {
            LOOM_PFS0((const char *)(xn + 2 * (uintptr_t)kk + 64 * (uintptr_t)u));
            LOOM_PFS1((const char *)(x + kk + 32 * u) + LOOM_PF_L2);
            const __m512i w = _mm512_loadu_si512((const void *)(x + kk + 32 * u));
            BF_STEP(u & 3, w, _mm512_loadu_si512((const void *)(a[j] + kk + 32 * u)));
        }
    }
    for (; kk + 32 <= k; kk += 32) { /* (constant accumulator indices keep acc in registers) */
        LOOM_PFS0((const char *)(xn + 2 * (uintptr_t)kk));
        const __m512i w = _mm512_loadu_si512((const void *)(x + kk));
        BF_STEP(1, w, _mm512_loadu_si512((const void *)(a[j] + kk)));
    }
    if (kk < k) { /* tail: zero-filled lanes add 0 */
        const __mmask32 m = (__mmask32)((1u << (k - kk)) - 1);
        const __m512i w = _mm512_maskz_loadu_epi16(m, x + kk);
        BF_STEP(0, w, _mm512_maskz_loadu_epi16(m, a[j] + kk));
    }
#undef BF_STEP
    LOOM_UNROLL for (int j = 0; j < nc; j++)
        c[(size_t)j * ldc] = _mm512_reduce_add_ps(
            _mm512_add_ps(_mm512_add_ps(acc[0][j], acc[1][j]), _mm512_add_ps(acc[2][j], acc[3][j])));
}

static ALWAYS_INLINE void gemm_body(int bf, int64_t k, const uint8_t *W, size_t ws, const uint8_t *A, size_t as,
                                    float *c, size_t ldc, int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
    const int64_t n = j1 - j0;
    if (n <= SMALL_N) { /* decode-like: one sequential weight stream */
        const uint16_t *a[SMALL_N] = {(const uint16_t *)(A + (size_t)j0 * as),
                                      (const uint16_t *)(A + (size_t)(j1 - 1) * as)};
        float *cj = c + (size_t)j0 * ldc;
        for (int64_t i = i0; i < i1; i++) {
            const uint16_t *x = (const uint16_t *)(W + (size_t)i * ws);
            const uintptr_t xn = (uintptr_t)x + ws; /* prefetched only: may lie past the matrix */
            if (bf) {
                if (n == 2) row_bf16(2, k, x, xn, a, cj + i, ldc);
                else row_bf16(1, k, x, xn, a, cj + i, ldc);
            } else {
                if (n == 2) row_f16(2, k, x, xn, a, cj + i, ldc);
                else row_f16(1, k, x, xn, a, cj + i, ldc);
            }
        }
        return;
    }
    /* prompt shapes: outer products on panels packed per chunk (16+ columns) */
    if (loom_gemm_float_local_avx512(bf ? LOOM_TYPE_BF16 : LOOM_TYPE_F16, k, W, ws, A, as, c, ldc, i0, i1, j0, j1))
        return;
    gemm_panel(bf, k, W, ws, A, as, c, ldc, i0, i1, j0, j1);
}

static void gemm_f16(int64_t k, const uint8_t *W, size_t ws, const uint8_t *A, size_t as, float *c, size_t ldc,
                     int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
    gemm_body(0, k, W, ws, A, as, c, ldc, i0, i1, j0, j1);
}

static void gemm_bf16(int64_t k, const uint8_t *W, size_t ws, const uint8_t *A, size_t as, float *c, size_t ldc,
                      int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
    gemm_body(1, k, W, ws, A, as, c, ldc, i0, i1, j0, j1);
}

bool loom_gemm_float_avx512(loom_type wt, int64_t k, const void *w, size_t ws, const void *a, size_t as, float *c,
                            size_t ldc, int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
    if (wt != LOOM_TYPE_F16 && wt != LOOM_TYPE_BF16) return false;
    if (i0 >= i1 || j0 >= j1) return true;
    if (k <= 0) { /* empty dot products */
        for (int64_t j = j0; j < j1; j++)
            for (int64_t i = i0; i < i1; i++) c[(size_t)j * ldc + (size_t)i] = 0.0f;
        return true;
    }
    if (wt == LOOM_TYPE_F16) gemm_f16(k, w, ws, a, as, c, ldc, i0, i1, j0, j1);
    else gemm_bf16(k, w, ws, a, as, c, ldc, i0, i1, j0, j1);
    return true;
}
