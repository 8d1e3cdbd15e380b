/*
 * kernels_gemm_packed_avx2.c - AVX2 (+ FMA, F16C) F16 / BF16 prompt products on packed
 * activations (kernels.h gemm_float_pack / gemm_float_packed; references in
 * kernels_scalar.c, bit-identical). The AVX-512 version (kernels_gemm_packed_avx512.c)
 * explains the design; this one has 16 ymm registers, so its micro-kernel is the
 * classic 6 x 16: 6 weight rows x one half panel (16 columns, two ymm) = 12
 * accumulators; per k-value 2 panel loads, 6 broadcasts, 12 FMAs. Without it the avx2
 * level computed F16 / BF16 prompts one vec_dot per output (both operands widened per
 * product).
 * Each output is one FMA per k-value of its LOOM_GEMM_PACKED_KC chunk in order from
 * 0.0f, chunk sums added in order: the same arithmetic as the reference and the
 * AVX-512 kernel, whatever the tiling.
 */
#include "cpu/kernels_internal.h"

#include <immintrin.h>

#define ALWAYS_INLINE LOOM_ALWAYS_INLINE
#if defined(__clang__)
#define UNROLL_ALL _Pragma("unroll")
#else
#define UNROLL_ALL _Pragma("GCC unroll 32")
#endif

#define PW LOOM_GEMM_PANEL     /* columns per packed panel (32: four ymm) */
#define KC LOOM_GEMM_PACKED_KC /* k-values per chunk */
#define MR 6                   /* weight rows per micro-kernel */
#define TB 60                  /* rows per block */
#define TC 128                 /* columns per block (four panels) */

/* 8 floats from 8 halves (F16) or bfloat16s (BF16). */
static ALWAYS_INLINE __m256 cvt8(int bf, __m128i v) {
    if (!bf) return _mm256_cvtph_ps(v);
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(v), 16));
}

/* 8 values at p, the first n (1..8) of them, as floats (zeros after). */
static ALWAYS_INLINE __m256 load8(int bf, const uint16_t *p, int64_t n) {
    if (n >= 8) return cvt8(bf, _mm_loadu_si128((const __m128i *)p));
    uint16_t t[8] = {0};
    for (int64_t i = 0; i < n; i++) t[i] = p[i];
    return cvt8(bf, _mm_loadu_si128((const __m128i *)t));
}

/* r[x] := column x of the 8 x 8 matrix whose rows are r[0..7]. */
static ALWAYS_INLINE void transpose8(__m256 r[8]) {
    __m256 t[8];
    UNROLL_ALL for (int i = 0; i < 8; i += 2) {
        t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
        t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
    }
    UNROLL_ALL for (int i = 0; i < 8; i += 4) {
        r[i] = _mm256_shuffle_ps(t[i], t[i + 2], _MM_SHUFFLE(1, 0, 1, 0));
        r[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], _MM_SHUFFLE(3, 2, 3, 2));
        r[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], _MM_SHUFFLE(1, 0, 1, 0));
        r[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], _MM_SHUFFLE(3, 2, 3, 2));
    }
    /* r[4q + m], 128-bit lane L: rows 4q..4q+3 at column 4L + m */
    UNROLL_ALL for (int m = 0; m < 4; m++) {
        t[m] = _mm256_permute2f128_ps(r[m], r[4 + m], 0x20);
        t[4 + m] = _mm256_permute2f128_ps(r[m], r[4 + m], 0x31);
    }
    UNROLL_ALL for (int i = 0; i < 8; i++) r[i] = t[i];
}

/* dst[kk*PW + c] = element k0 + kk of activation row col0 + c as float (0 for rows
 * >= nv), kk < kl, c < PW: one panel's chunk, 8 x 8 blocks converted and transposed. */
static ALWAYS_INLINE void pack_panel(int bf, const uint8_t *a, size_t as, int64_t col0, int64_t nv, int64_t k0,
                                     int64_t kl, float *dst) {
    for (int64_t kb = 0; kb < kl; kb += 8) {
        const int64_t kn = kl - kb < 8 ? kl - kb : 8;
        for (int h = 0; h < PW / 8; h++) {
            __m256 r[8];
            UNROLL_ALL for (int x = 0; x < 8; x++) {
                const int64_t col = col0 + 8 * h + x;
                r[x] = col < nv ? load8(bf, (const uint16_t *)(a + (size_t)col * as) + k0 + kb, kn) : _mm256_setzero_ps();
            }
            transpose8(r);
            for (int64_t x = 0; x < kn; x++) _mm256_storeu_ps(dst + (size_t)(kb + x) * PW + 8 * h, r[x]);
        }
    }
}

static ALWAYS_INLINE void pack_body(int bf, int64_t k, const uint8_t *a, size_t as, int64_t n, float *p, int64_t q0,
                                    int64_t q1) {
    for (int64_t q = q0; q < q1; q++) pack_panel(bf, a, as, PW * q, n, 0, k, p + (size_t)q * (size_t)k * PW);
}
static void pack_f16(int64_t k, const void *a, size_t as, int64_t n, float *p, int64_t q0, int64_t q1) {
    pack_body(0, k, a, as, n, p, q0, q1);
}
static void pack_bf16(int64_t k, const void *a, size_t as, int64_t n, float *p, int64_t q0, int64_t q1) {
    pack_body(1, k, a, as, n, p, q0, q1);
}

/* T[r*TC + 8v + c] (+)= sum over kk < kl of wf[r*KC + kk] * pp[kk*PW + 8v + c] for
 * r < nr, v < nv (ymm), c < 8: one FMA per k-value in order from 0.0f. */
static ALWAYS_INLINE void micro(int nr, int nv, int64_t kl, const float *wf, const float *pp, float *T, int add) {
    __m256 acc[MR][2];
    UNROLL_ALL for (int r = 0; r < nr; r++) UNROLL_ALL for (int v = 0; v < nv; v++) acc[r][v] = _mm256_setzero_ps();
    for (int64_t kk = 0; kk < kl; kk++) {
        __m256 pv[2];
        UNROLL_ALL for (int v = 0; v < nv; v++) pv[v] = _mm256_loadu_ps(pp + kk * PW + 8 * v);
        UNROLL_ALL for (int r = 0; r < nr; r++) {
            const __m256 b = _mm256_broadcast_ss(wf + (size_t)r * KC + kk);
            UNROLL_ALL for (int v = 0; v < nv; v++) acc[r][v] = _mm256_fmadd_ps(b, pv[v], acc[r][v]);
        }
    }
    UNROLL_ALL for (int r = 0; r < nr; r++) UNROLL_ALL for (int v = 0; v < nv; v++) {
        float *t = T + (size_t)r * TC + 8 * v;
        _mm256_storeu_ps(t, add ? _mm256_add_ps(_mm256_loadu_ps(t), acc[r][v]) : acc[r][v]);
    }
}

static ALWAYS_INLINE void micro_any(int nr, int nv, int64_t kl, const float *wf, const float *pp, float *T, int add) {
#define MICRO_NR(R)                                                                                                    \
    case R:                                                                                                            \
        if (nv == 2) micro(R, 2, kl, wf, pp, T, add);                                                                  \
        else micro(R, 1, kl, wf, pp, T, add);                                                                          \
        break;
    switch (nr) {
        MICRO_NR(6) MICRO_NR(5) MICRO_NR(4) MICRO_NR(3) MICRO_NR(2) MICRO_NR(1)
    default: break;
    }
#undef MICRO_NR
}

/* Rows [i0, i0 + nrow) (<= TB) x columns [j0, j0 + ncol) (<= TC) of C, from the
 * product's panels p (j0 a multiple of PW) or, p NULL, from activation rows at a packed
 * here per chunk into lp (TC x KC floats). */
static ALWAYS_INLINE void block(int bf, int64_t k, const uint8_t *w, size_t ws, const float *p, const uint8_t *a,
                                size_t as, float *lp, float *c, size_t ldc, int64_t i0, int64_t nrow, int64_t j0,
                                int64_t ncol) {
    _Alignas(32) float wf[MR * KC];
    _Alignas(32) float T[TB * TC];
    const int64_t npan = (ncol + PW - 1) / PW;
    for (int64_t k0 = 0; k0 < k; k0 += KC) {
        const int64_t kl = k - k0 < KC ? k - k0 : KC;
        if (!p)
            for (int64_t q = 0; q < npan; q++) pack_panel(bf, a, as, j0 + q * PW, j0 + ncol, k0, kl, lp + (size_t)q * KC * PW);
        for (int64_t r0 = 0; r0 < nrow; r0 += MR) {
            const int nr = nrow - r0 < MR ? (int)(nrow - r0) : MR;
            for (int r = 0; r < nr; r++) { /* the group's weight rows of this chunk as floats */
                const uint16_t *src = (const uint16_t *)(w + (size_t)(i0 + r0 + r) * ws) + k0;
                float *dst = wf + (size_t)r * KC;
                for (int64_t kk = 0; kk < kl; kk += 8) _mm256_store_ps(dst + kk, load8(bf, src + kk, kl - kk));
            }
            for (int64_t q = 0; q < npan; q++) {
                const float *pp = p ? p + ((size_t)(j0 / PW + q) * (size_t)k + (size_t)k0) * PW : lp + (size_t)q * KC * PW;
                for (int h = 0; h < 2; h++) { /* half panels of 16 columns */
                    const int64_t cols = ncol - q * PW - 16 * h;
                    if (cols <= 0) break;
                    micro_any(nr, cols > 8 ? 2 : 1, kl, wf, pp + 16 * h, T + (size_t)r0 * TC + q * PW + 16 * h, k0 > 0);
                }
            }
        }
    }
    for (int64_t col = 0; col < ncol; col++) { /* C[(j0 + col)*ldc + i0 + r] = T[r*TC + col] */
        float *cc = c + (size_t)(j0 + col) * ldc + i0;
        for (int64_t r = 0; r < nrow; r++) cc[r] = T[(size_t)r * TC + (size_t)col];
    }
}

static ALWAYS_INLINE void packed_body(int bf, int64_t k, const uint8_t *w, size_t ws, const float *p, const uint8_t *a,
                                      size_t as, float *lp, float *c, size_t ldc, int64_t i0, int64_t i1, int64_t j0,
                                      int64_t j1) {
    for (int64_t jb = j0; jb < j1; jb += TC) {
        const int64_t ncol = j1 - jb < TC ? j1 - jb : TC;
        for (int64_t ib = i0; ib < i1; ib += TB)
            block(bf, k, w, ws, p, a, as, lp, c, ldc, ib, i1 - ib < TB ? i1 - ib : TB, jb, ncol);
    }
}
static void packed_f16(int64_t k, const void *w, size_t ws, const float *p, const void *a, size_t as, float *lp,
                       float *c, size_t ldc, int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
    packed_body(0, k, w, ws, p, a, as, lp, c, ldc, i0, i1, j0, j1);
}
static void packed_bf16(int64_t k, const void *w, size_t ws, const float *p, const void *a, size_t as, float *lp,
                        float *c, size_t ldc, int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
    packed_body(1, k, w, ws, p, a, as, lp, c, ldc, i0, i1, j0, j1);
}

static bool gemm_float_pack(loom_type at, int64_t k, const void *a, size_t as, int64_t n, float *p, int64_t q0,
                            int64_t q1) {
    if (at == LOOM_TYPE_F16) pack_f16(k, a, as, n, p, q0, q1);
    else if (at == LOOM_TYPE_BF16) pack_bf16(k, a, as, n, p, q0, q1);
    else return false;
    return true;
}

static bool gemm_float_packed(loom_type wt, int64_t k, const void *w, size_t ws, const float *p, float *c, size_t ldc,
                              int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
    if ((wt != LOOM_TYPE_F16 && wt != LOOM_TYPE_BF16) || j0 % PW != 0) return false;
    if (i0 >= i1 || j0 >= j1) return true;
    if (k <= 0) { /* empty dot products */
        for (int64_t j = j0; j < j1; j++)
            for (int64_t i = i0; i < i1; i++) c[(size_t)j * ldc + (size_t)i] = 0.0f;
        return true;
    }
    if (wt == LOOM_TYPE_F16) packed_f16(k, w, ws, p, NULL, 0, NULL, c, ldc, i0, i1, j0, j1);
    else packed_bf16(k, w, ws, p, NULL, 0, NULL, c, ldc, i0, i1, j0, j1);
    return true;
}

bool loom_gemm_float_local_avx2(loom_type wt, int64_t k, const void *w, size_t ws, const void *a, size_t as, float *c,
                                size_t ldc, int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
    if (wt != LOOM_TYPE_F16 && wt != LOOM_TYPE_BF16) return false;
    if (j1 - j0 < LOOM_GEMM_PACKED_MIN_COLS) return false; /* vec_dot serves small batches */
    if (i0 >= i1) return true;
    if (k <= 0) {
        for (int64_t j = j0; j < j1; j++)
            for (int64_t i = i0; i < i1; i++) c[(size_t)j * ldc + (size_t)i] = 0.0f;
        return true;
    }
    _Alignas(32) float lp[TC * KC];
    const uint8_t *a0 = (const uint8_t *)a + (size_t)j0 * as;
    float *c0 = c + (size_t)j0 * ldc;
    if (wt == LOOM_TYPE_F16) packed_f16(k, w, ws, NULL, a0, as, lp, c0, ldc, i0, i1, 0, j1 - j0);
    else packed_bf16(k, w, ws, NULL, a0, as, lp, c0, ldc, i0, i1, 0, j1 - j0);
    return true;
}

void loom_kernels_fill_gemm_packed_avx2(loom_kernels *k) {
    k->gemm_float_pack = gemm_float_pack;
    k->gemm_float_packed = gemm_float_packed;
    /* tiles of up to TB rows x TC columns (ops_matmul.c halves both while that leaves
     * fewer than 16 tiles) */
    k->gemm_float_rows = TB;
    k->gemm_float_cols = TC;
}
