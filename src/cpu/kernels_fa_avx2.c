/*
 * kernels_fa_avx2.c - AVX2 flash-attention tile kernels (kernels.h fa_qk, fa_softmax,
 * fa_pv).
 *
 * fa_qk: the lanes are 8 query rows; per d, 4 row vectors of the transposed queries
 * and 2 broadcast key values (a 2-key x 32-row block of accumulators); one or two
 * row vectors (decode) take 8 or 6 keys, and row vectors past the block's rows are
 * skipped. fa_pv: the lanes are 8 values of Dv; per live key, 4 vectors of the V row
 * and 2 broadcast probabilities. Both bit-identical to the references. fa_softmax: as the AVX-512
 * level on 8 rows per vector (each row's mask value picked with a lane permutation,
 * the polynomial exp of kernels_avx2_exp.h).
 */
#include "cpu/kernels_internal.h"

#include <immintrin.h>
#include <math.h>

#include "cpu/kernels_avx2_exp.h"

#define ALWAYS_INLINE LOOM_ALWAYS_INLINE

#define FA_VEC __m256
#define FA_W 8
#define FA_LOADU _mm256_loadu_ps
#define FA_STOREU _mm256_storeu_ps
#define FA_SET1 _mm256_set1_ps
#define FA_ZERO _mm256_setzero_ps()
#define FA_FMADD _mm256_fmadd_ps
#define FA_MUL _mm256_mul_ps
#define FA_NZ(v) _mm256_movemask_ps(_mm256_cmp_ps((v), _mm256_setzero_ps(), _CMP_NEQ_UQ))
#define QK_KEYS(NV) ((NV) == 1 ? 8 : (NV) == 2 ? 6 : QK_NK) /* enough accumulators for one or two row vectors */
#define QK_NKMAX 8
#define QK_NK 2
#define PV_NR 2
#include "cpu/kernels_fa_body.h"

static void fa_softmax(int64_t nk, int64_t Rp, int64_t G, float scale, const float *mT, size_t ms, float *sT, float *M,
                       float *S, float *f) {
    const __m256 vs = _mm256_set1_ps(scale), ninf = _mm256_set1_ps(-INFINITY), one = _mm256_set1_ps(1.0f);
    for (int64_t r0 = 0; r0 < Rp; r0 += 8) {
        const int64_t t0 = r0 / G; /* token of lane 0; lane i's is (r0 + i) / G, at most t0 + 7 */
        int32_t ix[8];
        for (int i = 0; i < 8; i++) ix[i] = (int32_t)((r0 + i) / G - t0);
        const __m256i idx = _mm256_loadu_si256((const __m256i *)ix);
        const __m256 m0 = _mm256_loadu_ps(M + r0);
        __m256 mx = m0;
        for (int64_t j = 0; j < nk; j++) {
            float *xp = sT + (size_t)j * (size_t)Rp + (size_t)r0;
            const __m256 m = _mm256_permutevar8x32_ps(_mm256_loadu_ps(mT + (size_t)j * ms + (size_t)t0), idx);
            __m256 x = _mm256_add_ps(_mm256_mul_ps(_mm256_loadu_ps(xp), vs), m);
            x = _mm256_blendv_ps(x, ninf, _mm256_cmp_ps(m, ninf, _CMP_EQ_OQ));
            _mm256_storeu_ps(xp, x);
            mx = _mm256_max_ps(x, mx); /* a NaN score leaves the max as it was */
        }
        const __m256 same = _mm256_cmp_ps(mx, m0, _CMP_EQ_OQ);
        const __m256 fr = _mm256_blendv_ps(exp8_neg(_mm256_sub_ps(m0, mx)), one, same);
        __m256 s = _mm256_mul_ps(_mm256_loadu_ps(S + r0), fr);
        for (int64_t j = 0; j < nk; j++) {
            float *xp = sT + (size_t)j * (size_t)Rp + (size_t)r0;
            const __m256 x = _mm256_loadu_ps(xp);
            const __m256 p = _mm256_andnot_ps(_mm256_cmp_ps(x, ninf, _CMP_EQ_OQ), exp8_neg(_mm256_sub_ps(x, mx)));
            _mm256_storeu_ps(xp, p);
            s = _mm256_add_ps(s, p);
        }
        _mm256_storeu_ps(S + r0, s);
        _mm256_storeu_ps(M + r0, mx);
        _mm256_storeu_ps(f + r0, fr);
    }
}

static bool fa_rows(loom_type t, int64_t n, int64_t D, const void *src, size_t ss, float *dst, size_t ds) {
    if (t == LOOM_TYPE_F16 ? D % 8 != 0 : (D % 32 || (t != LOOM_TYPE_Q8_0 && t != LOOM_TYPE_Q4_0)))
        return loom_fa_rows_ref(t, n, D, src, ss, dst, ds);
    for (int64_t i = 0; i < n; i++) {
        const uint8_t *r = (const uint8_t *)src + (size_t)i * ss;
        float *y = dst + (size_t)i * ds;
        if (t == LOOM_TYPE_F16) {
            for (int64_t d = 0; d < D; d += 8)
                _mm256_storeu_ps(y + d, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(r + 2 * d))));
            continue;
        }
        for (int64_t b = 0; b < D / 32; b++, y += 32) {
            if (t == LOOM_TYPE_Q8_0) {
                const block_q8_0 *q = (const block_q8_0 *)r + b;
                const __m256 sc = _mm256_set1_ps(_cvtsh_ss(q->d));
                for (int h = 0; h < 4; h++) {
                    const __m256i x = _mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)(q->qs + 8 * h)));
                    _mm256_storeu_ps(y + 8 * h, _mm256_mul_ps(_mm256_cvtepi32_ps(x), sc));
                }
            } else { /* Q4_0: elements 0..15 are the low nibbles of qs, 16..31 the high ones, minus 8 */
                const block_q4_0 *q = (const block_q4_0 *)r + b;
                const __m256 sc = _mm256_set1_ps(_cvtsh_ss(q->d));
                for (int h = 0; h < 2; h++) {
                    const __m256i u = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(q->qs + 8 * h)));
                    const __m256i lo = _mm256_sub_epi32(_mm256_and_si256(u, _mm256_set1_epi32(15)), _mm256_set1_epi32(8));
                    const __m256i hi = _mm256_sub_epi32(_mm256_srli_epi32(u, 4), _mm256_set1_epi32(8));
                    _mm256_storeu_ps(y + 8 * h, _mm256_mul_ps(_mm256_cvtepi32_ps(lo), sc));
                    _mm256_storeu_ps(y + 16 + 8 * h, _mm256_mul_ps(_mm256_cvtepi32_ps(hi), sc));
                }
            }
        }
    }
    return true;
}

void loom_kernels_fill_fa_avx2(loom_kernels *k) {
    k->fa_qk = fa_qk;
    k->fa_softmax = fa_softmax;
    k->fa_pv = fa_pv;
    k->fa_rows = fa_rows;
}
