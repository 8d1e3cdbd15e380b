/*
 * kernels_gemm_avx512.c - AVX-512 (F/BW/VL/DQ + F16C) gemm tiles for F16 and BF16
 * weights x F16 / BF16 activations (the kernels.h loom_gemm_fn contract).
 *
 * Design: a register-tiled micro-kernel computes MR = 4 weight rows x NC <= 6
 * activation columns over the whole k: 4*NC zmm float accumulators. Per k-step each
 * of the 4 weight vectors and each activation vector is loaded and converted to float
 * ONCE, then every (row, column) pair gets one FMA: 4 + NC conversions for 4*NC FMAs
 * (24 FMAs per 10 conversions at NC = 6) instead of two conversions per FMA in a
 * vec_dot. Rows outer, column groups inner: the 4 weight rows are reused from L1/L2
 * across the tile's columns. (Chunking k to stay in L1 measured slower: the chunk
 * reductions and C read-modify-writes cost more than the L2 traffic they save.)
 *   F16:  16 halves per vector, vcvtph2ps with the load folded in.
 *   BF16: 32 values per 512-bit step, split without shuffles into the even elements
 *         (dword << 16) and the odd ones (a zero-masking load of the odd words, which
 *         leaves each as the high half of a dword: no ALU op at all); weight and
 *         activation are split alike, so the halves are two ordinary FMAs. No
 *         AVX512-BF16 instruction is used (this level does not guarantee it).
 * k tails (k need not be a multiple of 16 / 32) use zero-filling masked loads on both
 * operands, so the extra lanes add exact zeros. The 4 accumulators of a column are
 * reduced together (unpack/shuffle adds, then the 128-bit lanes) into the 4
 * consecutive outputs C[j*ldc + i .. i+3]: one (masked) 128-bit store. Row remainders
 * (< 4 rows) repeat the last valid row's pointer and mask the store; column
 * remainders use the NC = 1..5 instances.
 * One or two columns (decode; j1 - j0 <= SMALL_N) are memory bound: rows are taken
 * ONE at a time, i.e. a single sequential stream through the row-major matrix (here
 * 2 or 4 interleaved row streams measured 15-25% below it), 4 accumulator chains per
 * column, 256-bit loads (BF16 widened by zero-extension and a shift: 512-bit loads
 * measured slower on this streaming path). From 3 columns on the conversions bound
 * the single-row loop and the 4-row micro-kernel is faster.
 * Results are float sums in another order than the scalar reference (per-lane partial
 * sums, then a tree reduction); the tests bound the difference.
 */
#include "cpu/kernels_internal.h"

#include <immintrin.h>

#define ALWAYS_INLINE LOOM_ALWAYS_INLINE

#define MR 4      /* weight rows per micro-kernel */
#define NR 6      /* activation columns per micro-kernel (max) */
#define SMALL_N 2 /* at most this many columns: one row at a time */

/* 16 floats from 16-bit values at p. bf: BF16 (else F16); half picks the even (0) or
 * odd (1) elements of a 32-value BF16 step; an F16 step is 16 values. */
static ALWAYS_INLINE __m512 cvt_full(int bf, const uint16_t *p, int half) {
    if (!bf) return _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)p));
    if (half) return _mm512_castsi512_ps(_mm512_maskz_loadu_epi16(0xAAAAAAAAu, p));
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_loadu_si512((const void *)p), 16));
}

/* The same for a tail: m selects the valid 16-bit values (zero-filled elsewhere). */
static ALWAYS_INLINE __m512 cvt_mask(int bf, const uint16_t *p, int half, __mmask32 m) {
    if (!bf) return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16((__mmask16)m, p));
    if (half) return _mm512_castsi512_ps(_mm512_maskz_loadu_epi16(m & 0xAAAAAAAAu, p));
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_maskz_loadu_epi16(m, p), 16));
}

/* [sum(a), sum(b), sum(c), sum(d)] */
static ALWAYS_INLINE __m128 reduce4(__m512 a, __m512 b, __m512 c, __m512 d) {
    const __m512 ab = _mm512_add_ps(_mm512_unpacklo_ps(a, b), _mm512_unpackhi_ps(a, b));
    const __m512 cd = _mm512_add_ps(_mm512_unpacklo_ps(c, d), _mm512_unpackhi_ps(c, d));
    const __m512 s = _mm512_add_ps(_mm512_shuffle_ps(ab, cd, _MM_SHUFFLE(1, 0, 1, 0)),
                                   _mm512_shuffle_ps(ab, cd, _MM_SHUFFLE(3, 2, 3, 2)));
    const __m256 h = _mm256_add_ps(_mm512_castps512_ps256(s), _mm512_extractf32x8_ps(s, 1));
    return _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
}

/* C[j*ldc + r] = dot(w[r][0..k), a[j][0..k)) for r < MR (stored where rm has bit r),
 * j < nc. */
static ALWAYS_INLINE void micro(int bf, int nc, int64_t k, const uint16_t *const *w,
                                const uint16_t *const *a, float *c, size_t ldc, __mmask8 rm) {
    __m512 acc[MR][NR];
    LOOM_UNROLL for (int r = 0; r < MR; r++) LOOM_UNROLL for (int j = 0; j < nc; j++) acc[r][j] = _mm512_setzero_ps();
    const int64_t step = bf ? 32 : 16;
    const int nh = bf ? 2 : 1; /* BF16: even and odd halves */
    int64_t kk = 0;
    for (; kk + step <= k; kk += step) {
        LOOM_UNROLL for (int h = 0; h < nh; h++) {
            __m512 wv[MR];
            LOOM_UNROLL for (int r = 0; r < MR; r++) wv[r] = cvt_full(bf, w[r] + kk, h);
            LOOM_UNROLL for (int j = 0; j < nc; j++) {
                const __m512 av = cvt_full(bf, a[j] + kk, h);
                LOOM_UNROLL for (int r = 0; r < MR; r++) acc[r][j] = _mm512_fmadd_ps(wv[r], av, acc[r][j]);
            }
        }
    }
    if (kk < k) {
        const __mmask32 m = (__mmask32)(((uint64_t)1 << (k - kk)) - 1); /* k - kk < step */
        LOOM_UNROLL for (int h = 0; h < nh; h++) {
            __m512 wv[MR];
            LOOM_UNROLL for (int r = 0; r < MR; r++) wv[r] = cvt_mask(bf, w[r] + kk, h, m);
            LOOM_UNROLL for (int j = 0; j < nc; j++) {
                const __m512 av = cvt_mask(bf, a[j] + kk, h, m);
                LOOM_UNROLL for (int r = 0; r < MR; r++) acc[r][j] = _mm512_fmadd_ps(wv[r], av, acc[r][j]);
            }
        }
    }
    LOOM_UNROLL for (int j = 0; j < nc; j++) {
        float *cp = c + (size_t)j * ldc;
        const __m128 s = reduce4(acc[0][j], acc[1][j], acc[2][j], acc[3][j]);
        if (rm == 0xF) _mm_storeu_ps(cp, s);
        else _mm_mask_storeu_ps(cp, rm, s);
    }
}

/* 16 floats from 16 values (a 256-bit load) for the few-column path. */
static ALWAYS_INLINE __m512 cvt16(int bf, __m256i v) {
    if (!bf) return _mm512_cvtph_ps(v);
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(v), 16));
}
static ALWAYS_INLINE __m512 cvt256(int bf, const uint16_t *p) { return cvt16(bf, _mm256_loadu_si256((const __m256i *)p)); }
static ALWAYS_INLINE __m512 cvt256m(int bf, const uint16_t *p, __mmask16 m) { return cvt16(bf, _mm256_maskz_loadu_epi16(m, p)); }

/* C[j*ldc] = dot(x[0..k), a[j][0..k)) for j < nc (<= SMALL_N): 4 accumulator chains
 * per column, each weight vector converted once for all columns. */
static ALWAYS_INLINE void row_multi(int bf, int nc, int64_t k, const uint16_t *x, const uint16_t *const *a, float *c,
                                    size_t ldc) {
    __m512 acc[4][SMALL_N];
    LOOM_UNROLL for (int u = 0; u < 4; u++) LOOM_UNROLL for (int j = 0; j < nc; j++) acc[u][j] = _mm512_setzero_ps();
    int64_t kk = 0;
    for (; kk + 64 <= k; kk += 64) {
        LOOM_UNROLL for (int u = 0; u < 4; u++) {
            const __m512 xv = cvt256(bf, x + kk + 16 * u);
            LOOM_UNROLL for (int j = 0; j < nc; j++) acc[u][j] = _mm512_fmadd_ps(xv, cvt256(bf, a[j] + kk + 16 * u), acc[u][j]);
        }
    }
    for (; kk < k; kk += 16) { /* tail: masked pieces of 16 */
        const __mmask16 m = (__mmask16)(k - kk >= 16 ? 0xFFFF : (1u << (k - kk)) - 1);
        const __m512 xv = cvt256m(bf, x + kk, m);
        LOOM_UNROLL for (int j = 0; j < nc; j++) acc[0][j] = _mm512_fmadd_ps(xv, cvt256m(bf, a[j] + kk, m), acc[0][j]);
    }
    LOOM_UNROLL for (int j = 0; j < nc; j++)
        c[(size_t)j * ldc] = _mm512_reduce_add_ps(
            _mm512_add_ps(_mm512_add_ps(acc[0][j], acc[1][j]), _mm512_add_ps(acc[2][j], acc[3][j])));
}

static ALWAYS_INLINE void gemm_body(int bf, int64_t k, const uint8_t *W, size_t ws, const uint8_t *A, size_t as,
                                    float *c, size_t ldc, int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
    const uint16_t *w[MR], *a[NR];
    const int64_t n = j1 - j0;
    if (n <= SMALL_N) { /* decode-like: one sequential weight stream */
        for (int q = 0; q < n; q++) a[q] = (const uint16_t *)(A + (size_t)(j0 + q) * as);
        float *cj = c + (size_t)j0 * ldc;
        for (int64_t i = i0; i < i1; i++) {
            const uint16_t *x = (const uint16_t *)(W + (size_t)i * ws);
            if (n == 2) row_multi(bf, 2, k, x, a, cj + i, ldc);
            else row_multi(bf, 1, k, x, a, cj + i, ldc);
        }
        return;
    }
    for (int64_t i = i0; i < i1; i += MR) {
        const int64_t nr = i1 - i < MR ? i1 - i : MR;
        for (int r = 0; r < MR; r++) w[r] = (const uint16_t *)(W + (size_t)(i + (r < nr ? r : nr - 1)) * ws);
        const __mmask8 rm = (__mmask8)((1u << nr) - 1);
        for (int64_t j = j0; j < j1; j += NR) {
            const int nc = j1 - j < NR ? (int)(j1 - j) : NR;
            for (int q = 0; q < nc; q++) a[q] = (const uint16_t *)(A + (size_t)(j + q) * as);
            float *cp = c + (size_t)j * ldc + (size_t)i;
            switch (nc) { /* a constant NC per instance keeps the accumulators in registers */
            case 6: micro(bf, 6, k, w, a, cp, ldc, rm); break;
            case 5: micro(bf, 5, k, w, a, cp, ldc, rm); break;
            case 4: micro(bf, 4, k, w, a, cp, ldc, rm); break;
            case 3: micro(bf, 3, k, w, a, cp, ldc, rm); break;
            case 2: micro(bf, 2, k, w, a, cp, ldc, rm); break;
            default: micro(bf, 1, k, w, a, cp, ldc, rm); break;
            }
        }
    }
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
