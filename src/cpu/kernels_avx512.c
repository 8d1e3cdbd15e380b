/* AVX-512 (F/BW/VL/DQ) kernels: 512-bit float dot products. Quantized types keep
 * the AVX2 kernels at this level (the avx512vnni level has the integer kernels). */
#include "cpu/kernels_internal.h"

#include <immintrin.h>
#include <math.h>

#include "cpu/kernels_avx512_exp.h"

static void vd_f32(int64_t n, float *s, const void *vx, const void *vy) {
    const float *x = vx, *y = vy;
    __m512 a0 = _mm512_setzero_ps(), a1 = _mm512_setzero_ps();
    int64_t i = 0;
    for (; i + 32 <= n; i += 32) {
        a0 = _mm512_fmadd_ps(_mm512_loadu_ps(x + i), _mm512_loadu_ps(y + i), a0);
        a1 = _mm512_fmadd_ps(_mm512_loadu_ps(x + i + 16), _mm512_loadu_ps(y + i + 16), a1);
    }
    if (i < n) {
        __mmask16 m0 = (__mmask16)(n - i >= 16 ? 0xFFFF : ((1u << (n - i)) - 1));
        a0 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m0, x + i), _mm512_maskz_loadu_ps(m0, y + i), a0);
        if (n - i > 16) {
            __mmask16 m1 = (__mmask16)((1u << (n - i - 16)) - 1);
            a1 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m1, x + i + 16), _mm512_maskz_loadu_ps(m1, y + i + 16), a1);
        }
    }
    *s = _mm512_reduce_add_ps(_mm512_add_ps(a0, a1));
}

static void vd_f16(int64_t n, float *s, const void *vx, const void *vy) {
    const uint16_t *x = vx, *y = vy;
    __m512 a0 = _mm512_setzero_ps(), a1 = _mm512_setzero_ps();
    int64_t i = 0;
    for (; i + 32 <= n; i += 32) {
        a0 = _mm512_fmadd_ps(_mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(x + i))),
                             _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(y + i))), a0);
        a1 = _mm512_fmadd_ps(_mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(x + i + 16))),
                             _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(y + i + 16))), a1);
    }
    for (; i < n; i += 16) {
        __mmask16 m = (__mmask16)(n - i >= 16 ? 0xFFFF : ((1u << (n - i)) - 1));
        a0 = _mm512_fmadd_ps(_mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, x + i)),
                             _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, y + i)), a0);
    }
    *s = _mm512_reduce_add_ps(_mm512_add_ps(a0, a1));
}

static inline __m512 bf16x16(__m256i v) { return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(v), 16)); }

static void vd_bf16(int64_t n, float *s, const void *vx, const void *vy) {
    const uint16_t *x = vx, *y = vy;
    __m512 a0 = _mm512_setzero_ps(), a1 = _mm512_setzero_ps();
    int64_t i = 0;
    for (; i + 32 <= n; i += 32) {
        a0 = _mm512_fmadd_ps(bf16x16(_mm256_loadu_si256((const __m256i *)(x + i))),
                             bf16x16(_mm256_loadu_si256((const __m256i *)(y + i))), a0);
        a1 = _mm512_fmadd_ps(bf16x16(_mm256_loadu_si256((const __m256i *)(x + i + 16))),
                             bf16x16(_mm256_loadu_si256((const __m256i *)(y + i + 16))), a1);
    }
    for (; i < n; i += 16) {
        __mmask16 m = (__mmask16)(n - i >= 16 ? 0xFFFF : ((1u << (n - i)) - 1));
        a0 = _mm512_fmadd_ps(bf16x16(_mm256_maskz_loadu_epi16(m, x + i)), bf16x16(_mm256_maskz_loadu_epi16(m, y + i)), a0);
    }
    *s = _mm512_reduce_add_ps(_mm512_add_ps(a0, a1));
}

static float dot_f32(int64_t n, const float *x, const float *y) {
    float s;
    vd_f32(n, &s, x, y);
    return s;
}

static void axpy_f32(int64_t n, float a, const float *x, float *y) {
    const __m512 va = _mm512_set1_ps(a);
    for (int64_t i = 0; i < n; i += 16) {
        __mmask16 m = (__mmask16)(n - i >= 16 ? 0xFFFF : ((1u << (n - i)) - 1));
        __m512 v = _mm512_add_ps(_mm512_maskz_loadu_ps(m, y + i), _mm512_mul_ps(va, _mm512_maskz_loadu_ps(m, x + i)));
        _mm512_mask_storeu_ps(y + i, m, v);
    }
}

static void scale_f32(int64_t n, float *x, float a) {
    const __m512 va = _mm512_set1_ps(a);
    for (int64_t i = 0; i < n; i += 16) {
        __mmask16 m = (__mmask16)(n - i >= 16 ? 0xFFFF : ((1u << (n - i)) - 1));
        _mm512_mask_storeu_ps(x + i, m, _mm512_mul_ps(_mm512_maskz_loadu_ps(m, x + i), va));
    }
}

/* VMAXPS(x, m) gives m where x is NaN: NaN values are skipped as in the reference;
 * the masked tail keeps m in its idle lanes */
static float max_f32(int64_t n, const float *x, float init) {
    __m512 m0 = _mm512_set1_ps(init), m1 = m0;
    int64_t i = 0;
    for (; i + 32 <= n; i += 32) {
        m0 = _mm512_max_ps(_mm512_loadu_ps(x + i), m0);
        m1 = _mm512_max_ps(_mm512_loadu_ps(x + i + 16), m1);
    }
    for (; i < n; i += 16) {
        __mmask16 k = (__mmask16)(n - i >= 16 ? 0xFFFF : ((1u << (n - i)) - 1));
        m0 = _mm512_mask_max_ps(m0, k, _mm512_maskz_loadu_ps(k, x + i), m0);
    }
    return _mm512_reduce_max_ps(_mm512_max_ps(m0, m1));
}

/* F32 -> F16 rows (activations for F16 weights / the F16 KV cache): vcvtps2ph with
 * round-to-nearest-even, as the scalar conversion. */
static void ff_f16(const float *x, void *vy, int64_t n) {
    uint16_t *y = vy;
    for (int64_t i = 0; i < n; i += 16) {
        __mmask16 m = (__mmask16)(n - i >= 16 ? 0xFFFF : ((1u << (n - i)) - 1));
        __m256i h = _mm512_cvtps_ph(_mm512_maskz_loadu_ps(m, x + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        _mm256_mask_storeu_epi16(y + i, m, h);
    }
}

/* F32 -> BF16 rows (activations for BF16 weights): the scalar conversion's integer
 * arithmetic (round to nearest even, NaN kept quiet: top half | 0x40), 16 at a time, so
 * the bytes are the scalar ones for every input, denormals included (VCVTNEPS2BF16 would
 * flush those). */
static void ff_bf16(const float *x, void *vy, int64_t n) {
    uint16_t *y = vy;
    const __m512i abs = _mm512_set1_epi32(0x7FFFFFFF), inf = _mm512_set1_epi32(0x7F800000);
    const __m512i bias = _mm512_set1_epi32(0x7FFF), one = _mm512_set1_epi32(1), qbit = _mm512_set1_epi32(0x40);
    for (int64_t i = 0; i < n; i += 16) {
        __mmask16 m = (__mmask16)(n - i >= 16 ? 0xFFFF : ((1u << (n - i)) - 1));
        const __m512i v = _mm512_castps_si512(_mm512_maskz_loadu_ps(m, x + i));
        const __m512i r = _mm512_srli_epi32(
            _mm512_add_epi32(_mm512_add_epi32(v, bias), _mm512_and_si512(_mm512_srli_epi32(v, 16), one)), 16);
        const __mmask16 nan = _mm512_cmpgt_epu32_mask(_mm512_and_si512(v, abs), inf);
        const __m512i q = _mm512_mask_or_epi32(r, nan, _mm512_srli_epi32(v, 16), qbit);
        _mm256_mask_storeu_epi16(y + i, m, _mm512_cvtepi32_epi16(q));
    }
}

static void f16_to_f32(int64_t n, const uint16_t *x, float *y) {
    for (int64_t i = 0; i < n; i += 16) {
        __mmask16 m = (__mmask16)(n - i >= 16 ? 0xFFFF : ((1u << (n - i)) - 1));
        _mm512_mask_storeu_ps(y + i, m, _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, x + i)));
    }
}

/* SiLU x / (1 + exp(-x)) with exp_clamped on -x clamped to [-87.3, 88.7]; exp(-x)
 * overflowing (x < -88.7) is +inf, giving x / inf = -0 like the scalar expression;
 * NaN stays NaN. */
static void silu_f32(int64_t n, const float *x, float *y) {
    const __m512 one = _mm512_set1_ps(1.0f);
    for (int64_t i = 0; i < n; i += 16) {
        __mmask16 m = (__mmask16)(n - i >= 16 ? 0xFFFF : ((1u << (n - i)) - 1));
        const __m512 xv = _mm512_maskz_loadu_ps(m, x + i);
        __m512 a = _mm512_sub_ps(_mm512_setzero_ps(), xv); /* -x */
        const __mmask16 big = _mm512_cmp_ps_mask(a, _mm512_set1_ps(88.7f), _CMP_GT_OQ);
        a = _mm512_min_ps(_mm512_max_ps(a, _mm512_set1_ps(-87.3f)), _mm512_set1_ps(88.7f));
        __m512 e = _mm512_mask_mov_ps(exp_clamped(a), big, _mm512_set1_ps(INFINITY));
        __m512 v = _mm512_div_ps(xv, _mm512_add_ps(one, e));
        /* NaN in: the clamps above dropped it, put it back */
        v = _mm512_mask_mov_ps(v, _mm512_cmp_ps_mask(xv, xv, _CMP_UNORD_Q), xv);
        _mm512_mask_storeu_ps(y + i, m, v);
    }
}

/* GELU (tanh form) as x / (1 + exp(-2k (x + 0.044715 x^3))), k = sqrt(2/pi): the
 * argument of exp clamped as in silu_f32 (overflow gives x / inf = -0 for very
 * negative x, the limit); NaN stays NaN. */
static void gelu_f32(int64_t n, const float *x, float *y) {
    const __m512 one = _mm512_set1_ps(1.0f), c1 = _mm512_set1_ps(-2.0f * 0.7978845608028654f),
                 c3 = _mm512_set1_ps(0.044715f);
    for (int64_t i = 0; i < n; i += 16) {
        __mmask16 m = (__mmask16)(n - i >= 16 ? 0xFFFF : ((1u << (n - i)) - 1));
        const __m512 xv = _mm512_maskz_loadu_ps(m, x + i);
        const __m512 x2 = _mm512_mul_ps(xv, xv);
        __m512 a = _mm512_mul_ps(_mm512_mul_ps(c1, xv), _mm512_fmadd_ps(c3, x2, one)); /* -2k(x + c x^3) */
        const __mmask16 big = _mm512_cmp_ps_mask(a, _mm512_set1_ps(88.7f), _CMP_GT_OQ);
        a = _mm512_min_ps(_mm512_max_ps(a, _mm512_set1_ps(-87.3f)), _mm512_set1_ps(88.7f));
        __m512 e = _mm512_mask_mov_ps(exp_clamped(a), big, _mm512_set1_ps(INFINITY));
        __m512 v = _mm512_div_ps(xv, _mm512_add_ps(one, e));
        v = _mm512_mask_mov_ps(v, _mm512_cmp_ps_mask(xv, xv, _CMP_UNORD_Q), xv);
        _mm512_mask_storeu_ps(y + i, m, v);
    }
}

/* tanh: see kernels.h. |u| through exp_neg(-2|u|) (0 past |u| = 43.6: tanh 1), the
 * series below 0.25, the sign put back from u (so -0 stays -0); NaN stays NaN. */
static void tanh_f32(int64_t n, const float *x, float *y, float a, float b) {
    const __m512 one = _mm512_set1_ps(1.0f), va = _mm512_set1_ps(a), vb = _mm512_set1_ps(b);
    const __m512i sign = _mm512_set1_epi32((int)0x80000000u);
    for (int64_t i = 0; i < n; i += 16) {
        __mmask16 m = (__mmask16)(n - i >= 16 ? 0xFFFF : ((1u << (n - i)) - 1));
        const __m512 u = _mm512_mul_ps(va, _mm512_maskz_loadu_ps(m, x + i));
        const __m512 t = _mm512_abs_ps(u);
        const __m512 e = exp_neg(_mm512_mul_ps(_mm512_set1_ps(-2.0f), t));
        __m512 r = _mm512_div_ps(_mm512_sub_ps(one, e), _mm512_add_ps(one, e));
        const __m512 z = _mm512_mul_ps(t, t);
        __m512 p = _mm512_set1_ps(-1382.0f / 155925);
        p = _mm512_fmadd_ps(p, z, _mm512_set1_ps(62.0f / 2835));
        p = _mm512_fmadd_ps(p, z, _mm512_set1_ps(-17.0f / 315));
        p = _mm512_fmadd_ps(p, z, _mm512_set1_ps(2.0f / 15));
        p = _mm512_fmadd_ps(p, z, _mm512_set1_ps(-1.0f / 3));
        p = _mm512_fmadd_ps(p, z, one);
        p = _mm512_mul_ps(p, t);
        r = _mm512_mask_mov_ps(r, _mm512_cmp_ps_mask(t, _mm512_set1_ps(0.25f), _CMP_LT_OQ), p);
        r = _mm512_castsi512_ps(_mm512_or_si512(_mm512_castps_si512(r),
                                                _mm512_and_si512(_mm512_castps_si512(u), sign)));
        r = _mm512_mask_mov_ps(r, _mm512_cmp_ps_mask(u, u, _CMP_UNORD_Q), u); /* NaN */
        _mm512_mask_storeu_ps(y + i, m, _mm512_mul_ps(vb, r));
    }
}

static float exp_sum_f32(int64_t n, float *x, float max) {
    const __m512 vm = _mm512_set1_ps(max);
    __m512 acc = _mm512_setzero_ps();
    for (int64_t i = 0; i < n; i += 16) {
        __mmask16 m = (__mmask16)(n - i >= 16 ? 0xFFFF : ((1u << (n - i)) - 1));
        __m512 e = exp_neg(_mm512_sub_ps(_mm512_maskz_loadu_ps(m, x + i), vm));
        e = _mm512_maskz_mov_ps(m, e);
        _mm512_mask_storeu_ps(x + i, m, e);
        acc = _mm512_add_ps(acc, e);
    }
    return _mm512_reduce_add_ps(acc);
}

/* F16/BF16 tiles (kernels_gemm_avx512.c), the avx2 level's MXFP4 tile, then the IQ / TQ
 * tiles (kernels_iq_gemm_avx512.c) */
static bool gemm_avx512(loom_type wt, int64_t k, const void *w, size_t ws, const void *a, size_t as, float *c,
                        size_t ldc, int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
    return loom_gemm_float_avx512(wt, k, w, ws, a, as, c, ldc, i0, i1, j0, j1) ||
           loom_gemm_mxfp4_avx2(wt, k, w, ws, a, as, c, ldc, i0, i1, j0, j1) ||
           loom_gemm_iq_avx512(wt, k, w, ws, a, as, c, ldc, i0, i1, j0, j1) ||
           loom_gemm_lg8_avx2(wt, k, w, ws, a, as, c, ldc, i0, i1, j0, j1);
}

void loom_kernels_fill_avx512(loom_kernels *k) {
    k->f16_to_f32 = f16_to_f32;
    k->exp_sum_f32 = exp_sum_f32;
    k->silu_f32 = silu_f32;
    k->gelu_f32 = gelu_f32;
    k->tanh_f32 = tanh_f32;
    k->from_float[LOOM_TYPE_F16] = ff_f16;
    k->from_float[LOOM_TYPE_BF16] = ff_bf16;
    k->dot[LOOM_TYPE_F32].vec_dot = vd_f32;
    k->dot[LOOM_TYPE_F16].vec_dot = vd_f16;
    k->dot[LOOM_TYPE_BF16].vec_dot = vd_bf16;
    k->dot_f32 = dot_f32;
    k->axpy_f32 = axpy_f32;
    k->scale_f32 = scale_f32;
    k->max_f32 = max_f32;
    k->gemm = gemm_avx512; /* F16/BF16 tiles, then MXFP4 / NVFP4 (AVX2 tiles) */
    loom_kernels_fill_gemm_packed_avx512(k); /* F16/BF16 prompt products (kernels_gemm_packed_avx512.c) */
    loom_kernels_fill_fa_avx512(k); /* flash-attention p.V (kernels_fa_avx512.c) */
}
