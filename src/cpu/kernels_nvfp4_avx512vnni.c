/*
 * kernels_nvfp4_avx512vnni.c - NVFP4 weights x Q8_0 activations with 512-bit vpdpbusd
 * (kernels.h gemm contract), the avx512vnni level's NVFP4 gemm (decode and prompt).
 *
 * One NVFP4 block (64 values, four 16-value sub-blocks with UE4M3 scales) spans two Q8_0
 * blocks and fills one zmm: its codes map through vpshufb to u = 2 * value + 12 (0..24)
 * and are put in value order (sub-block s in dwords 4s..4s+3), so vpdpbusd(u, y) gives
 * each dword the sum of 4 products and dword group s sub-block s's part. The offset's
 * 12 * sum y per dword is computed once per column and block and shared by the tile's
 * rows; each group's exact int32 sum is scaled by its sub-block scale times its Q8_0
 * block's scale and accumulated with one FMA per block (16 lanes, summed at the end):
 * the scalar reference's terms, in another float order. Tiles of 4 rows x 1-2 columns;
 * decode (one column) prefetches the rows of the next tile like the other VNNI tiles.
 */
#include "cpu/kernels_internal.h"
#include "cpu/x86_fp4.h"

#include <immintrin.h>

#define NV_PF_ROWS 4

static const int8_t k_lut12[16] = {12, 13, 14, 15, 16, 18, 20, 24, 12, 11, 10, 9, 8, 6, 4, 0};

/* the block's 64 codes as u = 2 value + 12, sub-block s in bytes 16s..16s+15 */
static LOOM_ALWAYS_INLINE __m512i nv_codes(const uint8_t *qs, __m256i lut) {
    const __m256i m4 = _mm256_set1_epi8(0x0F), t = _mm256_loadu_si256((const __m256i *)qs);
    const __m256i lo = _mm256_shuffle_epi8(lut, _mm256_and_si256(t, m4));
    const __m256i hi = _mm256_shuffle_epi8(lut, _mm256_and_si256(_mm256_srli_epi16(t, 4), m4));
    /* per 128-bit lane: unpacklo -> sub-blocks 0 | 2, unpackhi -> 1 | 3 (as qword pairs) */
    const __m512i z = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_unpacklo_epi64(lo, hi)),
                                         _mm256_unpackhi_epi64(lo, hi), 1);
    return _mm512_permutexvar_epi64(_mm512_setr_epi64(0, 1, 4, 5, 2, 3, 6, 7), z);
}

static LOOM_ALWAYS_INLINE void tile(int RB, int CB, int64_t nbw, const uint8_t *w, size_t ws, const uint8_t *a,
                                    size_t as, float *c, size_t ldc, int64_t i, int64_t j) {
    __m512 acc[4][2];
    LOOM_UNROLL
    for (int r = 0; r < RB; r++)
        LOOM_UNROLL
        for (int cc = 0; cc < CB; cc++) acc[r][cc] = _mm512_setzero_ps();
    const __m256i lut = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)k_lut12));
    const __m512i twelve = _mm512_set1_epi8(12);
    const __m512i sidx = _mm512_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3);
    for (int64_t b = 0; b < nbw; b++) {
        __m512i u[4];
        __m512 sc[4]; /* the four sub-block scales, each over its 4 dwords */
        LOOM_UNROLL
        for (int r = 0; r < RB; r++) {
            const block_nvfp4 *xb = (const block_nvfp4 *)(w + (size_t)(i + r) * ws) + b;
            if (CB == 1) LOOM_PF0((const char *)(xb + 2) + (size_t)NV_PF_ROWS * ws);
            u[r] = nv_codes(xb->qs, lut);
            sc[r] = _mm512_permutexvar_ps(sidx, _mm512_castps128_ps512(loom_ue4m3_half_x4(xb->d)));
        }
        LOOM_UNROLL
        for (int cc = 0; cc < CB; cc++) {
            const block_q8_0 *yb = (const block_q8_0 *)(a + (size_t)(j + cc) * as) + 2 * b;
            const __m512i yv = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)yb[0].qs)),
                                                  _mm256_loadu_si256((const __m256i *)yb[1].qs), 1);
            const __m512i corr = _mm512_dpbusd_epi32(_mm512_setzero_si512(), twelve, yv);
            const __m512 dy = _mm512_insertf32x8(_mm512_set1_ps(_cvtsh_ss(yb[0].d)), _mm256_set1_ps(_cvtsh_ss(yb[1].d)), 1);
            LOOM_UNROLL
            for (int r = 0; r < RB; r++) {
                const __m512i p = _mm512_sub_epi32(_mm512_dpbusd_epi32(_mm512_setzero_si512(), u[r], yv), corr);
                acc[r][cc] = _mm512_fmadd_ps(_mm512_mul_ps(sc[r], dy), _mm512_cvtepi32_ps(p), acc[r][cc]);
            }
        }
    }
    LOOM_UNROLL
    for (int r = 0; r < RB; r++)
        LOOM_UNROLL
        for (int cc = 0; cc < CB; cc++) c[(size_t)(j + cc) * ldc + (size_t)(i + r)] = _mm512_reduce_add_ps(acc[r][cc]);
}

bool loom_gemm_nvfp4_avx512vnni(loom_type wt, int64_t k, const void *w, size_t ws, const void *a, size_t as, float *c,
                                size_t ldc, int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
    if (wt != LOOM_TYPE_NVFP4) return false;
    const uint8_t *W = w, *A = a;
    const int64_t nbw = k / QK_NVFP4;
#define NV_T(RB, CB, ii) tile(RB, CB, nbw, W, ws, A, as, c, ldc, ii, j)
    for (int64_t j = j0; j < j1; j += 2) {
        const bool two = j1 - j >= 2;
        int64_t i = i0;
        for (; i + 4 <= i1; i += 4) {
            if (two) NV_T(4, 2, i);
            else NV_T(4, 1, i);
        }
        for (; i < i1; i++) {
            if (two) NV_T(1, 2, i);
            else NV_T(1, 1, i);
        }
    }
#undef NV_T
    return true;
}
