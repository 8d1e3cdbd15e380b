/*
 * kernels_fa_avx512.c - AVX-512 flash-attention tile kernels (kernels.h fa_qk,
 * fa_softmax, fa_pv).
 *
 * fa_qk: the lanes are 16 query rows; per d, 4 row vectors of the transposed queries
 * and 6 broadcast key values give 24 accumulators (a 6-key x 64-row block), no
 * horizontal sums; a single row vector (decode, <= 16 rows) takes 8 keys, and <= 8
 * rows take key pairs in the lanes (fa_qk_pairs). fa_pv: the lanes are 16 values of
 * Dv; per live key, 4 vectors of the V row and 6 broadcast probabilities (6 rows x 64
 * values of Dv; the rows past a multiple of 6 in pairs).
 * Both bit-identical to the references. fa_softmax: 16 rows per vector, each row's
 * mask value picked from the token's column with a lane permutation, the polynomial
 * exp of kernels_avx512_exp.h, probabilities summed key by key (vector adds across rows).
 */
#include "cpu/kernels_internal.h"

#include <immintrin.h>
#include <math.h>
#include <string.h>

#include "cpu/kernels_avx512_exp.h"

#define ALWAYS_INLINE LOOM_ALWAYS_INLINE

#define FA_VEC __m512
#define FA_W 16
#define FA_LOADU _mm512_loadu_ps
#define FA_STOREU _mm512_storeu_ps
#define FA_SET1 _mm512_set1_ps
#define FA_ZERO _mm512_setzero_ps()
#define FA_FMADD _mm512_fmadd_ps
#define FA_MUL _mm512_mul_ps
#define FA_NZ(v) ((int)_mm512_cmp_ps_mask((v), _mm512_setzero_ps(), _CMP_NEQ_UQ))
#define QK_KEYS(NV) ((NV) == 1 ? 8 : QK_NK) /* enough accumulators for one or two row vectors */
#define QK_NKMAX 8
#define QK_NK 6
#define PV_NR 6
static bool fa_qk_pairs(int64_t Dk, int64_t R, int64_t Rp, int64_t nk, const float *qT, const float *kf, size_t ks,
                        float *sT);
#define FA_QK_SMALL fa_qk_pairs
#include "cpu/kernels_fa_body.h"

/* fa_qk for R <= 8 rows (decode: one token's GQA group), which would fill half of each
 * 16-lane vector: lane 2i + e holds row i of key 2p + e of a key pair, so every lane is
 * a product. Per d the pair's two key values are one 64-bit broadcast and the queries
 * come with each row duplicated; every output is the reference's fma chain over d.
 * The keys of 8 pairs are interleaved into kp first (8 accumulators cover the fma
 * latency); a tail of fewer than 16 keys takes the one-vector path. */
#define FA_PAIR_DMAX 256
static bool fa_qk_pairs(int64_t Dk, int64_t R, int64_t Rp, int64_t nk, const float *qT, const float *kf, size_t ks,
                        float *sT) {
    if (R > 8 || Rp != 16 || Dk % 16 || Dk > FA_PAIR_DMAX || nk < 16) return false;
    _Alignas(64) float qd[FA_PAIR_DMAX * 16];
    _Alignas(64) float kp[16 * FA_PAIR_DMAX];
    const __m512i dup = _mm512_set_epi32(7, 7, 6, 6, 5, 5, 4, 4, 3, 3, 2, 2, 1, 1, 0, 0);
    const __m512i ilo = _mm512_set_epi32(23, 7, 22, 6, 21, 5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
    const __m512i ihi = _mm512_set_epi32(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9, 24, 8);
    const __m512i deint = _mm512_set_epi32(15, 13, 11, 9, 7, 5, 3, 1, 14, 12, 10, 8, 6, 4, 2, 0);
    const __m256 z = _mm256_setzero_ps();
    for (int64_t d = 0; d < Dk; d++)
        _mm512_store_ps(qd + d * 16, _mm512_permutexvar_ps(dup, _mm512_castps256_ps512(_mm256_loadu_ps(qT + d * 16))));
    int64_t j = 0;
    for (; j + 16 <= nk; j += 16) {
        for (int p = 0; p < 8; p++) {
            const float *a = kf + (size_t)(j + 2 * p) * ks, *b = a + ks;
            float *o = kp + (size_t)p * 2 * (size_t)Dk;
            for (int64_t d0 = 0; d0 < Dk; d0 += 16) {
                const __m512 A = _mm512_loadu_ps(a + d0), B = _mm512_loadu_ps(b + d0);
                _mm512_store_ps(o + 2 * d0, _mm512_permutex2var_ps(A, ilo, B));
                _mm512_store_ps(o + 2 * d0 + 16, _mm512_permutex2var_ps(A, ihi, B));
            }
        }
        __m512 acc[8];
        LOOM_UNROLL for (int p = 0; p < 8; p++) acc[p] = _mm512_setzero_ps();
        for (int64_t d = 0; d < Dk; d++) {
            const __m512 q = _mm512_load_ps(qd + d * 16);
            LOOM_UNROLL for (int p = 0; p < 8; p++) {
                double kv;
                memcpy(&kv, kp + (size_t)p * 2 * (size_t)Dk + 2 * (size_t)d, sizeof kv);
                acc[p] = _mm512_fmadd_ps(_mm512_castpd_ps(_mm512_set1_pd(kv)), q, acc[p]);
            }
        }
        LOOM_UNROLL for (int p = 0; p < 8; p++) {
            const __m512 v = _mm512_permutexvar_ps(deint, acc[p]);
            float *o = sT + (size_t)(j + 2 * p) * 16;
            _mm256_storeu_ps(o, _mm512_castps512_ps256(v));
            _mm256_storeu_ps(o + 8, z);
            _mm256_storeu_ps(o + 16, _mm512_extractf32x8_ps(v, 1));
            _mm256_storeu_ps(o + 24, z);
        }
    }
    if (j < nk) qk_rows(1, Dk, 16, nk - j, qT, kf + (size_t)j * ks, ks, sT + (size_t)j * 16, 0);
    return true;
}

static void fa_softmax(int64_t nk, int64_t Rp, int64_t G, float scale, const float *mT, size_t ms, float *sT, float *M,
                       float *S, float *f) {
    const __m512 vs = _mm512_set1_ps(scale), ninf = _mm512_set1_ps(-INFINITY), one = _mm512_set1_ps(1.0f);
    for (int64_t r0 = 0; r0 < Rp; r0 += 16) {
        const int64_t t0 = r0 / G; /* token of lane 0; lane i's is (r0 + i) / G, at most t0 + 15 */
        int32_t ix[16];
        for (int i = 0; i < 16; i++) ix[i] = (int32_t)((r0 + i) / G - t0);
        const __m512i idx = _mm512_loadu_si512(ix);
        const __m512 m0 = _mm512_loadu_ps(M + r0);
        __m512 mx = m0;
        for (int64_t j = 0; j < nk; j++) {
            float *xp = sT + (size_t)j * (size_t)Rp + (size_t)r0;
            const __m512 m = _mm512_permutexvar_ps(idx, _mm512_loadu_ps(mT + (size_t)j * ms + (size_t)t0));
            __m512 x = _mm512_add_ps(_mm512_mul_ps(_mm512_loadu_ps(xp), vs), m);
            x = _mm512_mask_mov_ps(x, _mm512_cmp_ps_mask(m, ninf, _CMP_EQ_OQ), ninf);
            _mm512_storeu_ps(xp, x);
            mx = _mm512_max_ps(x, mx); /* a NaN score leaves the max as it was */
        }
        const __mmask16 same = _mm512_cmp_ps_mask(mx, m0, _CMP_EQ_OQ);
        const __m512 fr = _mm512_mask_mov_ps(exp_neg(_mm512_sub_ps(m0, mx)), same, one);
        __m512 s = _mm512_mul_ps(_mm512_loadu_ps(S + r0), fr);
        for (int64_t j = 0; j < nk; j++) {
            float *xp = sT + (size_t)j * (size_t)Rp + (size_t)r0;
            const __m512 x = _mm512_loadu_ps(xp);
            const __mmask16 masked = _mm512_cmp_ps_mask(x, ninf, _CMP_EQ_OQ);
            const __m512 p = _mm512_maskz_mov_ps((__mmask16)~masked, exp_neg(_mm512_sub_ps(x, mx)));
            _mm512_storeu_ps(xp, p);
            s = _mm512_add_ps(s, p);
        }
        _mm512_storeu_ps(S + r0, s);
        _mm512_storeu_ps(M + r0, mx);
        _mm512_storeu_ps(f + r0, fr);
    }
}

static bool fa_rows(loom_type t, int64_t n, int64_t D, const void *src, size_t ss, float *dst, size_t ds) {
    if (t == LOOM_TYPE_F16 ? D % 16 != 0 : (D % 32 || (t != LOOM_TYPE_Q8_0 && t != LOOM_TYPE_Q4_0)))
        return loom_fa_rows_ref(t, n, D, src, ss, dst, ds);
    for (int64_t i = 0; i < n; i++) {
        const uint8_t *r = (const uint8_t *)src + (size_t)i * ss;
        float *y = dst + (size_t)i * ds;
        if (t == LOOM_TYPE_F16) {
            for (int64_t d = 0; d < D; d += 16)
                _mm512_storeu_ps(y + d, _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(r + 2 * d))));
        } else if (t == LOOM_TYPE_Q8_0) {
            for (int64_t b = 0; b < D / 32; b++, y += 32) {
                const block_q8_0 *q = (const block_q8_0 *)r + b;
                const __m512 sc = _mm512_set1_ps(_cvtsh_ss(q->d));
                const __m128i x = _mm_loadu_si128((const __m128i *)q->qs), z = _mm_loadu_si128((const __m128i *)(q->qs + 16));
                _mm512_storeu_ps(y, _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(x)), sc));
                _mm512_storeu_ps(y + 16, _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(z)), sc));
            }
        } else { /* Q4_0: elements 0..15 are the low nibbles of qs, 16..31 the high ones, minus 8 */
            for (int64_t b = 0; b < D / 32; b++, y += 32) {
                const block_q4_0 *q = (const block_q4_0 *)r + b;
                const __m512 sc = _mm512_set1_ps(_cvtsh_ss(q->d));
                const __m512i u = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)q->qs)), e = _mm512_set1_epi32(8);
                const __m512i lo = _mm512_sub_epi32(_mm512_and_si512(u, _mm512_set1_epi32(15)), e);
                const __m512i hi = _mm512_sub_epi32(_mm512_srli_epi32(u, 4), e);
                _mm512_storeu_ps(y, _mm512_mul_ps(_mm512_cvtepi32_ps(lo), sc));
                _mm512_storeu_ps(y + 16, _mm512_mul_ps(_mm512_cvtepi32_ps(hi), sc));
            }
        }
    }
    return true;
}

void loom_kernels_fill_fa_avx512(loom_kernels *k) {
    k->fa_qk = fa_qk;
    k->fa_softmax = fa_softmax;
    k->fa_pv = fa_pv;
    k->fa_rows = fa_rows;
}
