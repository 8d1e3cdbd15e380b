/*
 * kernels_gemm_packed_avx2.c - AVX2 (+ FMA, F16C) F16 / BF16 prompt products on packed
 * activations (kernels.h gemm_float_pack / gemm_float_packed; references in
 * kernels_scalar.c, bit-identical). The AVX-512 version (kernels_gemm_packed_avx512.c)
 * explains the design; this one has 16 ymm registers, so its micro-kernel is the
 * classic 6 x 16: 6 weight rows x one half panel (16 columns, two ymm) = 12
 * accumulators; per k-value 2 panel loads, 6 broadcasts, 12 FMAs. Without it the avx2
 * level computed F16 / BF16 prompts one vec_dot per output (both operands widened per
 * product).
 * The loops and the micro-kernel are ISA-generic (kernels_gemm_packed_body.h): the
 * same arithmetic as the reference and the AVX-512 kernel, whatever the tiling.
 */
#include "cpu/kernels_internal.h"

#include <immintrin.h>

#define ALWAYS_INLINE LOOM_ALWAYS_INLINE

#define GP_VEC __m256
#define GP_VW 8
#define GP_MR 6
#define GP_TB 60
#define GP_TC 128
#define GP_ZERO() _mm256_setzero_ps()
#define GP_LOADU(p) _mm256_loadu_ps(p)
#define GP_LOAD(p) _mm256_load_ps(p)
#define GP_STORE(p, v) _mm256_store_ps(p, v)
#define GP_BCAST(p) _mm256_broadcast_ss(p)
#define GP_FMA(a, b, c) _mm256_fmadd_ps(a, b, c)
#define GP_ADD(a, b) _mm256_add_ps(a, b)
#define GP_PREFETCH_L2(p) LOOM_PF1((p))
#define GP_LOCAL loom_gemm_float_local_avx2
#define GP_FILL loom_kernels_fill_gemm_packed_avx2

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
    LOOM_UNROLL_ALL for (int i = 0; i < 8; i += 2) {
        t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
        t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
    }
    LOOM_UNROLL_ALL for (int i = 0; i < 8; i += 4) {
        r[i] = _mm256_shuffle_ps(t[i], t[i + 2], _MM_SHUFFLE(1, 0, 1, 0));
        r[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], _MM_SHUFFLE(3, 2, 3, 2));
        r[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], _MM_SHUFFLE(1, 0, 1, 0));
        r[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], _MM_SHUFFLE(3, 2, 3, 2));
    }
    /* r[4q + m], 128-bit lane L: rows 4q..4q+3 at column 4L + m */
    LOOM_UNROLL_ALL for (int m = 0; m < 4; m++) {
        t[m] = _mm256_permute2f128_ps(r[m], r[4 + m], 0x20);
        t[4 + m] = _mm256_permute2f128_ps(r[m], r[4 + m], 0x31);
    }
    LOOM_UNROLL_ALL for (int i = 0; i < 8; i++) r[i] = t[i];
}

/* kernels_gemm_packed_body.h's gp_pack_panel: 8 x 8 blocks converted and transposed. */
static ALWAYS_INLINE void gp_pack_panel(int bf, const uint8_t *a, size_t as, int64_t col0, int64_t nv, int64_t k0,
                                     int64_t kl, float *dst) {
    for (int64_t kb = 0; kb < kl; kb += 8) {
        const int64_t kn = kl - kb < 8 ? kl - kb : 8;
        for (int h = 0; h < LOOM_GEMM_PANEL / 8; h++) {
            __m256 r[8];
            LOOM_UNROLL_ALL for (int x = 0; x < 8; x++) {
                const int64_t col = col0 + 8 * h + x;
                r[x] = col < nv ? load8(bf, (const uint16_t *)(a + (size_t)col * as) + k0 + kb, kn) : _mm256_setzero_ps();
            }
            transpose8(r);
            for (int64_t x = 0; x < kn; x++) _mm256_storeu_ps(dst + (size_t)(kb + x) * LOOM_GEMM_PANEL + 8 * h, r[x]);
        }
    }
}

/* gp_cvt_row: kl values as floats, zero-padded to a multiple of 8. */
static ALWAYS_INLINE void gp_cvt_row(int bf, const uint16_t *src, int64_t kl, float *dst) {
    for (int64_t kk = 0; kk < kl; kk += 8) _mm256_store_ps(dst + kk, load8(bf, src + kk, kl - kk));
}

/* gp_store_t: one output at a time (the block's stores are few next to its FMAs). */
static ALWAYS_INLINE void gp_store_t(const float *T, float *c, size_t ldc, int64_t i0, int64_t nrow, int64_t j0,
                                     int64_t ncol) {
    for (int64_t col = 0; col < ncol; col++) {
        float *cc = c + (size_t)(j0 + col) * ldc + i0;
        for (int64_t r = 0; r < nrow; r++) cc[r] = T[(size_t)r * GP_TC + (size_t)col];
    }
}

#include "cpu/kernels_gemm_packed_body.h"
