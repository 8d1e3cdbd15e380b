/*
 * kernels_avx512_exp.h - the AVX-512 polynomial exp shared by kernels_avx512.c
 * (exp_sum_f32, silu, gelu) and kernels_fa_avx512.c (fa_softmax). Include after
 * <immintrin.h> in a file compiled with AVX-512 F.
 */
#ifndef LOOM_KERNELS_AVX512_EXP_H
#define LOOM_KERNELS_AVX512_EXP_H

/* exp(x) for x already clamped to [-87.3, 88.7]: x = n ln2 + r, |r| <= ln2/2, exp(r) by
 * its degree-6 Taylor polynomial (relative error < 2e-7), scaled by 2^n with vscalefps.
 * NaN stays NaN. */
static inline __m512 exp_clamped(__m512 x) {
    const __m512 log2e = _mm512_set1_ps(1.44269504f), ln2_hi = _mm512_set1_ps(0.693145752f),
                 ln2_lo = _mm512_set1_ps(1.42860677e-6f), one = _mm512_set1_ps(1.0f);
    __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, log2e), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512 r = _mm512_fnmadd_ps(n, ln2_hi, x);
    r = _mm512_fnmadd_ps(n, ln2_lo, r);
    __m512 p = _mm512_set1_ps(1.0f / 720.0f);
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 120.0f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 24.0f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 6.0f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0.5f));
    p = _mm512_fmadd_ps(p, r, one);
    p = _mm512_fmadd_ps(p, r, one);
    return _mm512_scalef_ps(p, n);
}

/* exp(x) for x <= 0 (softmax arguments); below -87.3 (including -inf) gives 0. */
static inline __m512 exp_neg(__m512 x) {
    __mmask16 tiny = _mm512_cmp_ps_mask(x, _mm512_set1_ps(-87.3f), _CMP_LT_OQ);
    x = _mm512_max_ps(_mm512_set1_ps(-87.3f), x); /* NaN stays NaN */
    return _mm512_maskz_mov_ps((__mmask16)~tiny, exp_clamped(x));
}

#endif /* LOOM_KERNELS_AVX512_EXP_H */
