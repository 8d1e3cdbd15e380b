/*
 * kernels_legacy8_avx2.c - the prompt-shape gemm for Q5_0, Q4_1 and Q5_1 (plain rows)
 * times Q8_0 / Q8_1 on 256-bit vectors (kernels.h gemm contract): the 16-row tile of
 * kernels_legacy_avx512vnni.c on 8-row groups, for the avx2 and avx512 levels
 * (loom_gemm_lg8_avx2) and, compiled again from kernels_legacy8_avxvnni.c with
 * LOOM_LG8_VNNI, the avxvnni level (loom_gemm_lg8_avxvnni).
 *
 * Preparation: per call, 8-row group and k chunk, each block is decoded once to its
 * unsigned codes (0..15 / 0..31: the nibbles, the fifth bits of qh expanded to bytes by a
 * shuffle and compare) and the 8 rows are transposed by dwords, so one 32-byte vector
 * holds 4 consecutive codes of each of the 8 rows. The engine gives these types 64 x 256
 * tiles, so a block is decoded once per 256 columns instead of once per column.
 *
 * Product, per column and block: codes (unsigned) times the column's activation bytes
 * (signed) over the 8 vectors of the block. avxvnni: 8 VEX vpdpbusd in two chains.
 * avx2: vpmaddubsw per vector (a pair sum <= 2 x 31 x 128 in magnitude), four of them
 * added as int16 (<= 31744: no overflow), then one vpmaddwd by ones per four vectors.
 * Both give the exact int32 block sum of codes x activations; Q5_0 adds -16 x the
 * block's activation sum (computed once per call and column). Then acc += (d_w d_a) x
 * isum and, for Q4_1 / Q5_1, acc += m_w s_a (s_a the activation block's stored d x sum):
 * the scalar reference's terms. Four columns at a time.
 */
#include "cpu/kernels_internal.h"
#include "cpu/x86_transpose.h"

#include <immintrin.h>
#include <stddef.h>
#include <string.h>

#define LG8_KC 32  /* blocks per k chunk */
#define LG8_JC 256 /* columns per column chunk (their activation scales and sums: stack) */
#define LG8_CB 4   /* columns per pass */

/* the unsigned codes of the block at p */
static LOOM_ALWAYS_INLINE __m256i lg8_codes(loom_type wt, const uint8_t *p) {
    const __m256i m4 = _mm256_set1_epi8(0x0F);
    const size_t oq = wt == LOOM_TYPE_Q4_1 ? 4 : wt == LOOM_TYPE_Q5_0 ? 6 : 8;
    const __m128i q = _mm_loadu_si128((const __m128i *)(p + oq));
    const __m256i v = _mm256_and_si256(_mm256_inserti128_si256(_mm256_castsi128_si256(q), _mm_srli_epi16(q, 4), 1), m4);
    if (wt == LOOM_TYPE_Q4_1) return v;
    int32_t qh;
    memcpy(&qh, p + (wt == LOOM_TYPE_Q5_0 ? 2 : 4), 4);
    /* byte j <- byte j / 8 of qh, then bit j % 8 of it */
    const __m256i sel = _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3,
                                         3, 3, 3, 3, 3);
    const __m256i bit = _mm256_set1_epi64x((long long)0x8040201008040201ULL);
    const __m256i h = _mm256_cmpeq_epi8(_mm256_and_si256(_mm256_shuffle_epi8(_mm256_set1_epi32(qh), sel), bit), bit);
    return _mm256_or_si256(v, _mm256_and_si256(h, _mm256_set1_epi8(16)));
}

static LOOM_ALWAYS_INLINE void lg8_prep_body(loom_type wt, const uint8_t *w, size_t ws, int64_t i, int nr, int64_t s0,
                                             int64_t s1, uint8_t *bq, float *dw, float *mw) {
    const size_t bb = wt == LOOM_TYPE_Q4_1 ? sizeof(block_q4_1) : wt == LOOM_TYPE_Q5_0 ? sizeof(block_q5_0)
                                                                                       : sizeof(block_q5_1);
    for (int64_t b = s0; b < s1; b++, bq += 256, dw += 8, mw += 8) {
        __m256i v[8];
        LOOM_UNROLL_ALL
        for (int r = 0; r < 8; r++) {
            if (r >= nr) {
                v[r] = _mm256_setzero_si256();
                dw[r] = mw[r] = 0.f;
                continue;
            }
            const uint8_t *p = w + (size_t)(i + r) * ws + (size_t)b * bb;
            if (b + 8 < s1) LOOM_PF0((const char *)(p + 8 * bb));
            v[r] = lg8_codes(wt, p);
            uint16_t h[2] = {0, 0};
            memcpy(h, p, wt == LOOM_TYPE_Q5_0 ? 2 : 4);
            dw[r] = _cvtsh_ss(h[0]);
            mw[r] = _cvtsh_ss(h[1]);
        }
        loom_transpose8_epi32(v);
        LOOM_UNROLL_ALL
        for (int d = 0; d < 8; d++) _mm256_store_si256((__m256i *)(bq + 32 * d), v[d]);
    }
}

static void lg8_prep(loom_type wt, const uint8_t *w, size_t ws, int64_t i, int nr, int64_t s0, int64_t s1, uint8_t *bq,
                     float *dw, float *mw) {
    if (wt == LOOM_TYPE_Q5_0) lg8_prep_body(LOOM_TYPE_Q5_0, w, ws, i, nr, s0, s1, bq, dw, mw);
    else if (wt == LOOM_TYPE_Q4_1) lg8_prep_body(LOOM_TYPE_Q4_1, w, ws, i, nr, s0, s1, bq, dw, mw);
    else lg8_prep_body(LOOM_TYPE_Q5_1, w, ws, i, nr, s0, s1, bq, dw, mw);
}

static LOOM_ALWAYS_INLINE __m256i bc32(const uint8_t *p) {
    int32_t v;
    memcpy(&v, p, 4);
    return _mm256_set1_epi32(v);
}

/* the exact int32 sums (per row lane) of 4 code vectors w[0..3] times the activation
 * dwords at y, added to acc */
static LOOM_ALWAYS_INLINE __m256i dot4(__m256i acc, const __m256i *w, const uint8_t *y) {
#ifdef LOOM_LG8_VNNI
    LOOM_UNROLL_ALL
    for (int kk = 0; kk < 4; kk++) acc = _mm256_dpbusd_avx_epi32(acc, w[kk], bc32(y + 4 * kk));
    return acc;
#else
    __m256i p = _mm256_maddubs_epi16(w[0], bc32(y));
    LOOM_UNROLL_ALL
    for (int kk = 1; kk < 4; kk++) p = _mm256_add_epi16(p, _mm256_maddubs_epi16(w[kk], bc32(y + 4 * kk)));
    return _mm256_add_epi32(acc, _mm256_madd_epi16(p, _mm256_set1_epi16(1)));
#endif
}

/* CB columns [j, j + CB) x rows [row0, row0 + 8) (rm: all-ones lanes for the real rows,
 * full: all 8 real) over the prepared blocks [s0, s1); da / sa / nc: the columns'
 * activation scales, d x sums and Q5_0 corrections ([cc * LG8_KC + b - s0]) */
static LOOM_ALWAYS_INLINE void lg8_tile(int CB, bool mins, bool q50, const uint8_t *a, size_t as, size_t ab,
                                        size_t oq, const uint8_t *bq, const float *dw, const float *mw,
                                        const float *da, const float *sa, const int32_t *nc, float *c, size_t ldc,
                                        int64_t row0, bool full, __m256i rm, int64_t j, int64_t s0, int64_t s1) {
    __m256 acc[LG8_CB];
    float *cp = c + (size_t)j * ldc + (size_t)row0;
    LOOM_UNROLL_ALL
    for (int cc = 0; cc < CB; cc++)
        acc[cc] = s0 == 0 ? _mm256_setzero_ps()
                  : full  ? _mm256_loadu_ps(cp + (size_t)cc * ldc)
                          : _mm256_maskload_ps(cp + (size_t)cc * ldc, rm);
    for (int64_t b = s0; b < s1; b++) {
        const int64_t l = b - s0;
        __m256i wv[8];
        LOOM_UNROLL_ALL
        for (int kk = 0; kk < 8; kk++) wv[kk] = _mm256_load_si256((const __m256i *)(bq + 256 * l + 32 * kk));
        const __m256 d = _mm256_load_ps(dw + 8 * l);
        LOOM_UNROLL_ALL
        for (int cc = 0; cc < CB; cc++) {
            const uint8_t *y = a + (size_t)(j + cc) * as + (size_t)b * ab + oq;
            __m256i d0 = q50 ? _mm256_set1_epi32(nc[cc * LG8_KC + l]) : _mm256_setzero_si256();
            d0 = dot4(d0, wv, y);
            const __m256i d1 = dot4(_mm256_setzero_si256(), wv + 4, y + 16);
            acc[cc] = _mm256_fmadd_ps(_mm256_mul_ps(d, _mm256_set1_ps(da[cc * LG8_KC + l])),
                                      _mm256_cvtepi32_ps(_mm256_add_epi32(d0, d1)), acc[cc]);
            if (mins) acc[cc] = _mm256_fmadd_ps(_mm256_load_ps(mw + 8 * l), _mm256_set1_ps(sa[cc * LG8_KC + l]), acc[cc]);
        }
    }
    LOOM_UNROLL_ALL
    for (int cc = 0; cc < CB; cc++) {
        if (full) _mm256_storeu_ps(cp + (size_t)cc * ldc, acc[cc]);
        else _mm256_maskstore_ps(cp + (size_t)cc * ldc, rm, acc[cc]);
    }
}

#define LG8_TILES(MINS, Q50)                                                                                        \
    do {                                                                                                            \
        int64_t jj = 0;                                                                                             \
        for (; jj + LG8_CB <= jn; jj += LG8_CB)                                                                     \
            lg8_tile(LG8_CB, MINS, Q50, A, as, ab, oq, bq, dw, mw, da + jj * LG8_KC, sa + jj * LG8_KC,            \
                     nc + jj * LG8_KC, c, ldc, i, full, rm, jc + jj, s0, s1);                                       \
        for (; jj < jn; jj++)                                                                                       \
            lg8_tile(1, MINS, Q50, A, as, ab, oq, bq, dw, mw, da + jj * LG8_KC, sa + jj * LG8_KC, nc + jj * LG8_KC, \
                     c, ldc, i, full, rm, jc + jj, s0, s1);                                                         \
    } while (0)

#ifndef LOOM_LG8_VNNI
void loom_lg_act_prep(bool q50, const uint8_t *a, size_t as, int64_t j0, int64_t n, int64_t s0, int64_t s1,
                      int64_t stride, float *da, float *sa, int32_t *nc) {
    const size_t oq = q50 ? offsetof(block_q8_0, qs) : offsetof(block_q8_1, qs), ab = oq + 32;
    /* the d (and s) halves of 8 blocks by one gather of their first dwords (Q8_0's
     * second half is a quant pair: its sa is garbage, as in the scalar loop below, and
     * unused), widened together: the AMX Q4_1 prompt tile spent 10% of its time here */
    const __m256i idx = _mm256_mullo_epi32(_mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7), _mm256_set1_epi32((int)ab));
    const __m256i lo16 = _mm256_set1_epi32(0xFFFF);
    for (int64_t jj = 0; jj < n; jj++)
        for (int64_t b = s0; b < s1; b++) {
            const uint8_t *yb = a + (size_t)(j0 + jj) * as + (size_t)b * ab;
            if (b + 8 <= s1 && !(q50 && nc)) {
                const __m256i v = _mm256_i32gather_epi32((const int *)yb, idx, 1);
                /* packus: [x0..3 x0..3 | x4..7 x4..7] as 16-bit; qwords 0, 2 = x0..7 */
                const __m256i pd = _mm256_permute4x64_epi64(_mm256_packus_epi32(_mm256_and_si256(v, lo16), v), 0x08);
                const __m256i ps = _mm256_permute4x64_epi64(
                    _mm256_packus_epi32(_mm256_srli_epi32(v, 16), v), 0x08);
                const int64_t e = jj * stride + (b - s0);
                _mm256_storeu_ps(da + e, _mm256_cvtph_ps(_mm256_castsi256_si128(pd)));
                _mm256_storeu_ps(sa + e, _mm256_cvtph_ps(_mm256_castsi256_si128(ps)));
                b += 7;
                continue;
            }
            uint16_t h[2];
            memcpy(h, yb, sizeof h);
            const int64_t e = jj * stride + (b - s0);
            da[e] = _cvtsh_ss(h[0]);
            sa[e] = _cvtsh_ss(h[1]);
            if (q50 && nc) { /* -16 x the block's activation sum */
                const __m256i v = _mm256_loadu_si256((const __m256i *)(yb + oq));
                const __m256i s = _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_set1_epi8(1), v), _mm256_set1_epi16(1));
                __m128i t = _mm_add_epi32(_mm256_castsi256_si128(s), _mm256_extracti128_si256(s, 1));
                t = _mm_add_epi32(t, _mm_shuffle_epi32(t, 0x4E));
                t = _mm_add_epi32(t, _mm_shuffle_epi32(t, 0xB1));
                nc[e] = -16 * _mm_cvtsi128_si32(t);
            }
        }
}
#endif

#ifdef LOOM_LG8_VNNI
bool loom_gemm_lg8_avxvnni(loom_type wt, int64_t k, const void *w, size_t ws, const void *a, size_t as, float *c,
                           size_t ldc, int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
#else
bool loom_gemm_lg8_avx2(loom_type wt, int64_t k, const void *w, size_t ws, const void *a, size_t as, float *c,
                        size_t ldc, int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
#endif
    if ((wt != LOOM_TYPE_Q5_0 && wt != LOOM_TYPE_Q4_1 && wt != LOOM_TYPE_Q5_1) || k <= 0 || k % 32 != 0 ||
        j1 - j0 < LG_MIN_COLS || i0 >= i1)
        return false;
    const bool q50 = wt == LOOM_TYPE_Q5_0;
    const size_t oq = q50 ? offsetof(block_q8_0, qs) : offsetof(block_q8_1, qs), ab = oq + 32;
    const uint8_t *A = (const uint8_t *)a;
    const int64_t nb = k / 32;
    _Alignas(32) uint8_t bq[LG8_KC * 256];
    _Alignas(32) float dw[LG8_KC * 8], mw[LG8_KC * 8];
    float da[LG8_JC * LG8_KC], sa[LG8_JC * LG8_KC];
    int32_t nc[LG8_JC * LG8_KC];
    for (int64_t jc = j0; jc < j1; jc += LG8_JC) {
        const int64_t jn = j1 - jc < LG8_JC ? j1 - jc : LG8_JC;
        for (int64_t s0 = 0; s0 < nb; s0 += LG8_KC) {
            const int64_t s1 = s0 + LG8_KC < nb ? s0 + LG8_KC : nb;
            loom_lg_act_prep(q50, A, as, jc, jn, s0, s1, LG8_KC, da, sa, nc);
            for (int64_t i = i0; i < i1; i += 8) {
                const int nr = i1 - i < 8 ? (int)(i1 - i) : 8;
                const bool full = nr == 8;
                const __m256i rm = _mm256_cmpgt_epi32(_mm256_set1_epi32(nr), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
                lg8_prep(wt, (const uint8_t *)w, ws, i, nr, s0, s1, bq, dw, mw);
                if (q50) LG8_TILES(false, true);
                else LG8_TILES(true, false);
            }
        }
    }
    return true;
}
