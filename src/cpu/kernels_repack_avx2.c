/* AVX2 matmul for weights in the row-interleaved layout (quant/repack.h).
 *
 * A 16-row group is two ymm halves: in every 64-byte chunk (and in the 32-byte
 * scale header) rows 0..7 are the first 32 bytes and rows 8..15 the next 32, so one
 * ymm holds one 4-byte chunk of 8 rows and a broadcast activation dword gives 8 row
 * partial sums in its dword lanes (lane = row, no horizontal reductions); the 8
 * block scales of a half convert with one vcvtph2ps. Per lane the arithmetic is the
 * scalar reference's (loom_gemm_repacked_ref): an exact int32 block sum, then
 * acc = fma(d_w * d_y, isum, acc) in block order, so results match it bit for bit.
 *
 * Exact integer sums without vpdpbusd (vpmaddubsw saturates to int16):
 *  - Q4_0: unsigned nibbles u (0..15) times signed activations: every vpmaddubsw
 *    pair is at most 2*15*128 = 3840 in magnitude, so the 8 products of a block
 *    (4 chunks x low/high nibbles) are added in int16 (<= 30720) and widened once
 *    with vpmaddwd; the offset is removed with -8 * sum(y) per block.
 *  - Q8_0: stored bytes are q ^ 0x80; q is recovered and the sign trick
 *    vpmaddubsw(|q|, sign(y, q)) gives pairs <= 2*128*127 < 32768, widened per
 *    chunk with vpmaddwd. This is exact whenever no activation byte is -128 (the
 *    Q8_0 quantizer clamps to [-127, 127]); a column that has one anyway is
 *    computed by the scalar reference, so results stay exact for any input.
 *
 * Activations are read per slab of RP_SLAB blocks: their scales (and for Q4_0 the
 * -8 * sum(y) corrections) are computed once per column tile and slab and reused by
 * every row group; partial sums between slabs stay in c (the fma chain continues
 * from the stored float). Decode (one column) streams each group sequentially (the
 * hardware prefetcher follows it; no software prefetch). Prompt shapes register-tile
 * up to RP_MAXCB columns per pass: the weight chunk is loaded and decoded once and
 * used for every column of the tile. */
#include "cpu/kernels_internal.h"
#include "quant/repack.h"

#include <immintrin.h>
#include <string.h>

#define ALWAYS_INLINE inline __attribute__((always_inline))
#define RP_SLAB 512 /* activation blocks per slab (whole common rows: one run per group) */
#define RP_MAXCB 4  /* columns per tile (16 ymm registers) */

static ALWAYS_INLINE __m256i bcast32(const int8_t *p) {
    int32_t v;
    memcpy(&v, p, 4);
    return _mm256_set1_epi32(v);
}

/* True when no quant of the nb activation blocks is -128 (the Q8_0 sign trick's
 * precondition). */
static bool col_clean(const block_q8_0 *y, int64_t nb) {
    const __m256i m128 = _mm256_set1_epi8((char)0x80);
    __m256i any = _mm256_setzero_si256();
    for (int64_t b = 0; b < nb; b++)
        any = _mm256_or_si256(any, _mm256_cmpeq_epi8(_mm256_loadu_si256((const __m256i *)y[b].qs), m128));
    return _mm256_testz_si256(any, any) != 0;
}

static ALWAYS_INLINE void rp_tile(int CB, bool q4, int64_t nb, const uint8_t *w, size_t ws, const uint8_t *a,
                                  size_t as, float *c, size_t ldc, int64_t i0, int64_t i1, int64_t j) {
    const size_t bb = q4 ? sizeof(block_q4_0) : sizeof(block_q8_0);
    const size_t gbytes = ws * LOOM_REPACK_ROWS, bstep = bb * LOOM_REPACK_ROWS;
    const __m256i m4 = _mm256_set1_epi8(0x0F), flip = _mm256_set1_epi8((char)0x80);
    const __m256i ones16 = _mm256_set1_epi16(1), ones8 = _mm256_set1_epi8(1);
    const block_q8_0 *y[RP_MAXCB];
    for (int cc = 0; cc < CB; cc++) y[cc] = (const block_q8_0 *)(a + (size_t)(j + cc) * as);
    float dy[RP_MAXCB][RP_SLAB];
    int32_t ncorr[RP_MAXCB][RP_SLAB];
    for (int64_t s0 = 0; s0 < nb; s0 += RP_SLAB) {
        const int64_t s1 = s0 + RP_SLAB < nb ? s0 + RP_SLAB : nb;
        for (int cc = 0; cc < CB; cc++)
            for (int64_t b = s0; b < s1; b++) {
                dy[cc][b - s0] = _cvtsh_ss(y[cc][b].d);
                if (q4) {
                    const __m256i v = _mm256_loadu_si256((const __m256i *)y[cc][b].qs);
                    const __m256i s = _mm256_madd_epi16(_mm256_maddubs_epi16(ones8, v), ones16);
                    __m128i t = _mm_add_epi32(_mm256_castsi256_si128(s), _mm256_extracti128_si256(s, 1));
                    t = _mm_add_epi32(t, _mm_shuffle_epi32(t, 0x4E));
                    t = _mm_add_epi32(t, _mm_shuffle_epi32(t, 0xB1));
                    ncorr[cc][b - s0] = -8 * _mm_cvtsi128_si32(t);
                }
            }
        for (int64_t g = i0 / LOOM_REPACK_ROWS; g < i1 / LOOM_REPACK_ROWS; g++) {
            __m256 acc[RP_MAXCB][2];
            for (int cc = 0; cc < CB; cc++)
                for (int h = 0; h < 2; h++)
                    acc[cc][h] = s0 == 0 ? _mm256_setzero_ps()
                                         : _mm256_loadu_ps(c + (size_t)(j + cc) * ldc +
                                                           (size_t)g * LOOM_REPACK_ROWS + 8u * (size_t)h);
            const uint8_t *p = w + (size_t)g * gbytes + (size_t)s0 * bstep;
            for (int64_t b = s0; b < s1; b++, p += bstep) {
                for (int h = 0; h < 2; h++) {
                    const uint8_t *ph = p + 32 * h; /* this half's chunk bytes at ph + 32 + 64 * ch */
                    const __m256 dx = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(p + 16 * h)));
                    __m256i isum[RP_MAXCB];
                    if (q4) {
                        /* int16 lane sums: 16 products |u*y| <= 1920 each, <= 30720: exact */
                        __m256i s16[RP_MAXCB];
                        for (int cc = 0; cc < CB; cc++) s16[cc] = _mm256_setzero_si256();
                        for (int ch = 0; ch < 4; ch++) {
                            const __m256i v = _mm256_loadu_si256((const __m256i *)(ph + 32 + 64 * ch));
                            const __m256i lo = _mm256_and_si256(v, m4);
                            const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), m4);
                            for (int cc = 0; cc < CB; cc++) {
                                const int8_t *yq = y[cc][b].qs;
                                s16[cc] = _mm256_add_epi16(s16[cc], _mm256_maddubs_epi16(lo, bcast32(yq + 4 * ch)));
                                s16[cc] = _mm256_add_epi16(s16[cc],
                                                           _mm256_maddubs_epi16(hi, bcast32(yq + 16 + 4 * ch)));
                            }
                        }
                        for (int cc = 0; cc < CB; cc++)
                            isum[cc] = _mm256_add_epi32(_mm256_madd_epi16(s16[cc], ones16),
                                                        _mm256_set1_epi32(ncorr[cc][b - s0]));
                    } else {
                        for (int cc = 0; cc < CB; cc++) isum[cc] = _mm256_setzero_si256();
                        for (int ch = 0; ch < 8; ch++) {
                            const __m256i q =
                                _mm256_xor_si256(_mm256_loadu_si256((const __m256i *)(ph + 32 + 64 * ch)), flip);
                            const __m256i aq = _mm256_abs_epi8(q); /* -128 -> 0x80 = 128 as unsigned: fine */
                            for (int cc = 0; cc < CB; cc++) {
                                const __m256i sy = _mm256_sign_epi8(bcast32(y[cc][b].qs + 4 * ch), q);
                                isum[cc] = _mm256_add_epi32(
                                    isum[cc], _mm256_madd_epi16(_mm256_maddubs_epi16(aq, sy), ones16));
                            }
                        }
                    }
                    for (int cc = 0; cc < CB; cc++)
                        acc[cc][h] = _mm256_fmadd_ps(_mm256_mul_ps(dx, _mm256_set1_ps(dy[cc][b - s0])),
                                                     _mm256_cvtepi32_ps(isum[cc]), acc[cc][h]);
                }
            }
            for (int cc = 0; cc < CB; cc++)
                for (int h = 0; h < 2; h++)
                    _mm256_storeu_ps(c + (size_t)(j + cc) * ldc + (size_t)g * LOOM_REPACK_ROWS + 8u * (size_t)h,
                                     acc[cc][h]);
        }
    }
}

/* Columns [j, j + cb) of one type, in tiles of at most RP_MAXCB. */
static void rp_cols(bool q4, int64_t nb, const uint8_t *w, size_t ws, const uint8_t *a, size_t as, float *c,
                    size_t ldc, int64_t i0, int64_t i1, int64_t j, int64_t j1) {
    while (j < j1) {
        const int64_t left = j1 - j;
        const int cb = left >= 4 ? 4 : (int)left;
#define RP(CB)                                                                                          \
    do {                                                                                                \
        if (q4) rp_tile(CB, true, nb, w, ws, a, as, c, ldc, i0, i1, j);                                 \
        else rp_tile(CB, false, nb, w, ws, a, as, c, ldc, i0, i1, j);                                   \
    } while (0)
        switch (cb) {
        case 4: RP(4); break;
        case 3: RP(3); break;
        case 2: RP(2); break;
        default: RP(1); break;
        }
#undef RP
        j += cb;
    }
}

static bool gemm_repacked_avx2(loom_type wt, int64_t k, const void *w, size_t ws, const void *a, size_t as, float *c,
                               size_t ldc, int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
    if (!loom_repack_type_ok(wt)) return false;
    const bool q4 = wt == LOOM_TYPE_Q4_0;
    const int64_t nb = k / 32;
    const uint8_t *ab = a;
    if (q4) {
        rp_cols(true, nb, w, ws, ab, as, c, ldc, i0, i1, j0, j1);
        return true;
    }
    /* Q8_0: runs of columns without a -128 activation byte; the rest by the reference */
    for (int64_t j = j0; j < j1;) {
        if (!col_clean((const block_q8_0 *)(ab + (size_t)j * as), nb)) {
            (void)loom_gemm_repacked_ref(wt, k, w, ws, a, as, c, ldc, i0, i1, j, j + 1);
            j++;
            continue;
        }
        int64_t e = j + 1;
        while (e < j1 && col_clean((const block_q8_0 *)(ab + (size_t)e * as), nb)) e++;
        rp_cols(false, nb, w, ws, ab, as, c, ldc, i0, i1, j, e);
        j = e;
    }
    return true;
}

void loom_kernels_fill_repack_avx2(loom_kernels *k) {
    k->gemm_repacked = gemm_repacked_avx2;
    k->repack[LOOM_TYPE_Q4_0] = true;
    k->repack[LOOM_TYPE_Q8_0] = true;
}
