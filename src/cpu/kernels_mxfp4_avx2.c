/* AVX2 gemm tiles for MXFP4 and NVFP4 weights x Q8_0 activations (kernels.h gemm
 * contract). NVFP4 (below): the same codes and offset, a Q8_0 block spanning half an
 * NVFP4 block, its two 16-value sub-blocks' UE4M3 scales in lanes 0-3 and 4-7.
 *
 *
 * A block's 32 E2M1 codes map through vpshufb to u = 2 * value + 12 (0..24, the
 * integers of loom_mxfp4_kv plus 12), so vpmaddubsw(u, y) is exact (pairs at most
 * 2 * 24 * 128 = 6144 < 2^15) and vpmaddwd widens to int32; sum q*y = sum u*y -
 * 12 * sum y, with 12 * sum y per column and block computed once and shared by the
 * tile's rows. Each block's integer sum is exact; it is scaled by 2^(e-128) * d_y
 * in float and accumulated with one FMA per block, as the scalar reference does
 * (only the order of the float additions differs: 8 lanes, summed at the end).
 * Tiles are 4 rows x 1-2 columns (the accumulators, decoded rows and one column's
 * activations fit the 16 ymm registers); decode (one column) prefetches the next
 * tile's rows like the VNNI tiles (kernels_avx512vnni.c). */
#include "cpu/kernels_internal.h"
#include "cpu/x86_fp4.h"

#include <immintrin.h>

#define ALWAYS_INLINE LOOM_ALWAYS_INLINE
#define MX_PF_ROWS 4

static const int8_t k_lut12[16] = {12, 13, 14, 15, 16, 18, 20, 24, 12, 11, 10, 9, 8, 6, 4, 0};

static ALWAYS_INLINE float hsum8(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

static ALWAYS_INLINE void tile_mx(int RB, int CB, int64_t nb, const uint8_t *w, size_t ws, const uint8_t *a,
                                  size_t as, float *c, size_t ldc, int64_t i, int64_t j) {
    __m256 acc[4][2];
    LOOM_UNROLL
    for (int r = 0; r < RB; r++)
        LOOM_UNROLL
        for (int cc = 0; cc < CB; cc++) acc[r][cc] = _mm256_setzero_ps();
    const __m256i lut = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)k_lut12));
    const __m256i m4 = _mm256_set1_epi8(0x0F), twelve = _mm256_set1_epi8(12), ones16 = _mm256_set1_epi16(1);
    for (int64_t b = 0; b < nb; b++) {
        __m256i u[4];
        float dx[4];
        LOOM_UNROLL
        for (int r = 0; r < RB; r++) {
            const block_mxfp4 *xb = (const block_mxfp4 *)(w + (size_t)(i + r) * ws) + b;
            if (CB == 1) LOOM_PF0((const char *)(xb + 4) + (size_t)MX_PF_ROWS * ws);
            const __m128i t = _mm_loadu_si128((const __m128i *)xb->qs);
            const __m256i nib = _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(t, 4), t), m4);
            u[r] = _mm256_shuffle_epi8(lut, nib);
            dx[r] = loom_e8m0_half(xb->e);
        }
        LOOM_UNROLL
        for (int cc = 0; cc < CB; cc++) {
            const block_q8_0 *yb = (const block_q8_0 *)(a + (size_t)(j + cc) * as) + b;
            const __m256i yv = _mm256_loadu_si256((const __m256i *)yb->qs);
            const __m256i corr = _mm256_madd_epi16(_mm256_maddubs_epi16(twelve, yv), ones16);
            const float dy = _cvtsh_ss(yb->d);
            LOOM_UNROLL
            for (int r = 0; r < RB; r++) {
                const __m256i p = _mm256_sub_epi32(_mm256_madd_epi16(_mm256_maddubs_epi16(u[r], yv), ones16), corr);
                acc[r][cc] = _mm256_fmadd_ps(_mm256_set1_ps(dx[r] * dy), _mm256_cvtepi32_ps(p), acc[r][cc]);
            }
        }
    }
    LOOM_UNROLL
    for (int r = 0; r < RB; r++)
        LOOM_UNROLL
        for (int cc = 0; cc < CB; cc++) c[(size_t)(j + cc) * ldc + (size_t)(i + r)] = hsum8(acc[r][cc]);
}

static ALWAYS_INLINE void tile_nv(int RB, int CB, int64_t nb, const uint8_t *w, size_t ws, const uint8_t *a,
                                  size_t as, float *c, size_t ldc, int64_t i, int64_t j) {
    __m256 acc[4][2];
    LOOM_UNROLL
    for (int r = 0; r < RB; r++)
        LOOM_UNROLL
        for (int cc = 0; cc < CB; cc++) acc[r][cc] = _mm256_setzero_ps();
    const __m128i lut = _mm_loadu_si128((const __m128i *)k_lut12);
    const __m256i twelve = _mm256_set1_epi8(12), ones16 = _mm256_set1_epi16(1);
    for (int64_t bw = 0; bw < nb / 2; bw++) { /* NVFP4 blocks; Q8_0 blocks 2 bw + h */
        __m128 sc[4]; /* each row's four sub-block scales, converted once per block */
        LOOM_UNROLL
        for (int r = 0; r < RB; r++) {
            const block_nvfp4 *xb = (const block_nvfp4 *)(w + (size_t)(i + r) * ws) + bw;
            if (CB == 1) LOOM_PF0((const char *)(xb + 2) + (size_t)MX_PF_ROWS * ws);
            sc[r] = loom_ue4m3_half_x4(xb->d);
        }
        for (int h = 0; h < 2; h++) {
            const int64_t b = 2 * bw + h;
            __m256i u[4];
            LOOM_UNROLL
            for (int r = 0; r < RB; r++)
                u[r] = loom_nvfp4_half(((const block_nvfp4 *)(w + (size_t)(i + r) * ws) + bw)->qs, h, lut);
            LOOM_UNROLL
            for (int cc = 0; cc < CB; cc++) {
                const block_q8_0 *yb = (const block_q8_0 *)(a + (size_t)(j + cc) * as) + b;
                const __m256i yv = _mm256_loadu_si256((const __m256i *)yb->qs);
                const __m256i corr = _mm256_madd_epi16(_mm256_maddubs_epi16(twelve, yv), ones16);
                const __m128 dy = _mm_set1_ps(_cvtsh_ss(yb->d));
                LOOM_UNROLL
                for (int r = 0; r < RB; r++) {
                    const __m256i p = _mm256_sub_epi32(_mm256_madd_epi16(_mm256_maddubs_epi16(u[r], yv), ones16), corr);
                    const __m256 d = loom_nvfp4_half_scales(_mm_mul_ps(sc[r], dy), h);
                    acc[r][cc] = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(p), acc[r][cc]);
                }
            }
        }
    }
    LOOM_UNROLL
    for (int r = 0; r < RB; r++)
        LOOM_UNROLL
        for (int cc = 0; cc < CB; cc++) c[(size_t)(j + cc) * ldc + (size_t)(i + r)] = hsum8(acc[r][cc]);
}

bool loom_gemm_mxfp4_avx2(loom_type wt, int64_t k, const void *w, size_t ws, const void *a, size_t as, float *c,
                          size_t ldc, int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
    if (wt != LOOM_TYPE_MXFP4 && wt != LOOM_TYPE_NVFP4) return false;
    const bool nv = wt == LOOM_TYPE_NVFP4;
    const uint8_t *W = w, *A = a;
    const int64_t nb = k / 32; /* Q8_0 blocks */
#define FP4_TILE(RB, CB, ii)                                                                          \
    (nv ? tile_nv(RB, CB, nb, W, ws, A, as, c, ldc, ii, j) : tile_mx(RB, CB, nb, W, ws, A, as, c, ldc, ii, j))
    for (int64_t j = j0; j < j1; j += 2) {
        const bool two = j1 - j >= 2;
        int64_t i = i0;
        for (; i + 4 <= i1; i += 4) {
            if (two) FP4_TILE(4, 2, i);
            else FP4_TILE(4, 1, i);
        }
        for (; i < i1; i++) {
            if (two) FP4_TILE(1, 2, i);
            else FP4_TILE(1, 1, i);
        }
    }
#undef FP4_TILE
    return true;
}
