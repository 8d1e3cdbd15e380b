/*
 * kernels_gemm_packed_avx512.c - AVX-512 F16 / BF16 prompt products on packed
 * activations (kernels.h gemm_float_pack / gemm_float_packed; references in
 * kernels_scalar.c, bit-identical).
 *
 * Why: the row-pair tiles of kernels_gemm_avx512.c convert the activation block to
 * float once per call and reduce four accumulators horizontally per output; on a host
 * without AMX (2 threads, 1.1B F16, prompt of 512) that conversion, repeated for every
 * 32-row tile, and the reductions cost about a fifth of the product. Here the engine
 * packs the activations ONCE per product into k-major float panels of 32 columns, so
 * a tile only converts its weight rows (amortised over the tile's columns) and the
 * micro-kernel is an outer product without any reduction:
 *   12 weight rows x 32 columns = 24 zmm accumulators; per k-value two panel loads, 12
 *   broadcast weights, 24 FMAs (the FMA ports are the bound: measured at the FMA peak
 *   of this Xeon with L1-resident operands).
 * The loops and the micro-kernel are ISA-generic (kernels_gemm_packed_body.h); this file
 * gives them 512-bit vectors, 12-row groups, 120 x 128 blocks, and its panel packing
 * (16 x 16 transposes), weight-row widening and block stores (16 x 16 transposes,
 * masked stores). Tiles of 16+ columns that the engine gives the gemm entry
 * (attention products over an F16 cache, MoE experts) pack their panels per chunk
 * inside the call (loom_gemm_float_local_avx512), with the same arithmetic.
 */
#include "cpu/x86_transpose.h"
#include "cpu/kernels_internal.h"

#include <immintrin.h>

#define ALWAYS_INLINE LOOM_ALWAYS_INLINE

#define GP_VEC __m512
#define GP_VW 16
#define GP_MR 12
#define GP_TB 120
#define GP_TC 128
#define GP_ZERO() _mm512_setzero_ps()
#define GP_LOADU(p) _mm512_loadu_ps(p)
#define GP_LOAD(p) _mm512_load_ps(p)
#define GP_STORE(p, v) _mm512_store_ps(p, v)
#define GP_BCAST(p) _mm512_set1_ps(*(p))
#define GP_FMA(a, b, c) _mm512_fmadd_ps(a, b, c)
#define GP_ADD(a, b) _mm512_add_ps(a, b)
#define GP_PREFETCH_L2(p) LOOM_PF1((p))
#define GP_LOCAL loom_gemm_float_local_avx512
#define GP_FILL loom_kernels_fill_gemm_packed_avx512

/* 16 floats from 16 halves (F16) or bfloat16s (BF16). */
static ALWAYS_INLINE __m512 cvt16(int bf, __m256i v) {
    if (!bf) return _mm512_cvtph_ps(v);
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(v), 16));
}


/* kernels_gemm_packed_body.h's gp_pack_panel: 16 x 16 blocks converted and transposed. */
static ALWAYS_INLINE void gp_pack_panel(int bf, const uint8_t *a, size_t as, int64_t col0, int64_t nv, int64_t k0,
                                        int64_t kl, float *dst) {
    for (int64_t kb = 0; kb < kl; kb += 16) {
        const int64_t kn = kl - kb < 16 ? kl - kb : 16;
        const __mmask16 m = (__mmask16)(kn == 16 ? 0xFFFF : (1u << kn) - 1);
        for (int h = 0; h < LOOM_GEMM_PANEL / 16; h++) {
            __m512 r[16];
            LOOM_UNROLL_ALL for (int x = 0; x < 16; x++) {
                const int64_t col = col0 + 16 * h + x;
                r[x] = col < nv ? cvt16(bf, _mm256_maskz_loadu_epi16(m, (const uint16_t *)(a + (size_t)col * as) + k0 + kb))
                                : _mm512_setzero_ps();
            }
            loom_transpose16_ps(r);
            for (int64_t x = 0; x < kn; x++) _mm512_storeu_ps(dst + (size_t)(kb + x) * LOOM_GEMM_PANEL + 16 * h, r[x]);
        }
    }
}

/* gp_cvt_row: kl values as floats, the last 16 zero-padded (masked load). */
static ALWAYS_INLINE void gp_cvt_row(int bf, const uint16_t *src, int64_t kl, float *dst) {
    int64_t kk = 0;
    for (; kk + 16 <= kl; kk += 16) _mm512_store_ps(dst + kk, cvt16(bf, _mm256_loadu_si256((const __m256i *)(src + kk))));
    if (kk < kl)
        _mm512_store_ps(dst + kk, cvt16(bf, _mm256_maskz_loadu_epi16((__mmask16)((1u << (kl - kk)) - 1), src + kk)));
}

/* gp_store_t: x86_transpose.h's 16 x 16 transposes and masked stores. */
static ALWAYS_INLINE void gp_store_t(const float *T, float *c, size_t ldc, int64_t i0, int64_t nrow, int64_t j0,
                                     int64_t ncol) {
    loom_store_t16(T, GP_TC, c, ldc, i0, nrow, j0, ncol);
}

#include "cpu/kernels_gemm_packed_body.h"
