/*
 * kernels_avx2_exp.h - the AVX2 (+FMA) polynomial exp shared by kernels_avx2.c
 * (exp_sum_f32, silu, gelu, tanh) and kernels_fa_avx2.c (fa_softmax): the AVX-512
 * one (kernels_avx512_exp.h) on 8 lanes, with 2^n built in the exponent field (no
 * vscalefps). Include after <immintrin.h> in a file compiled with -mavx2 -mfma.
 */
#ifndef LOOM_KERNELS_AVX2_EXP_H
#define LOOM_KERNELS_AVX2_EXP_H

/* Clamp bounds of exp8_clamped's argument: n = round(x log2(e)) stays in [-126, 127],
 * so 2^n is a normal float. */
#define EXP8_LO (-87.3f)
#define EXP8_HI 88.3f

/* exp(x) for x already clamped to [EXP8_LO, EXP8_HI]: x = n ln2 + r, |r| <= ln2/2 (two-part
 * ln2), exp(r) by its degree-6 Taylor polynomial (relative error < 2e-7), times 2^n.
 * NaN stays NaN. */
static inline __m256 exp8_clamped(__m256 x) {
    const __m256 one = _mm256_set1_ps(1.0f);
    const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504f)),
                                     _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693145752f), x);
    r = _mm256_fnmadd_ps(n, _mm256_set1_ps(1.42860677e-6f), r);
    __m256 p = _mm256_set1_ps(1.0f / 720.0f);
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 120.0f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 24.0f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 6.0f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(0.5f));
    p = _mm256_fmadd_ps(p, r, one);
    p = _mm256_fmadd_ps(p, r, one);
    const __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
    return _mm256_mul_ps(p, _mm256_castsi256_ps(e));
}

/* exp(x) for x <= 0 (softmax arguments); below EXP8_LO (including -inf) gives 0; NaN
 * stays NaN (max returns its second operand when one is NaN). */
static inline __m256 exp8_neg(__m256 x) {
    const __m256 tiny = _mm256_cmp_ps(x, _mm256_set1_ps(EXP8_LO), _CMP_LT_OQ);
    x = _mm256_max_ps(_mm256_set1_ps(EXP8_LO), x);
    x = _mm256_min_ps(_mm256_set1_ps(EXP8_HI), x);
    return _mm256_andnot_ps(tiny, exp8_clamped(x));
}

#endif /* LOOM_KERNELS_AVX2_EXP_H */
