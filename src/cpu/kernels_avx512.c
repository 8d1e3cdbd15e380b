/* AVX-512 (F/BW/VL/DQ) kernels: 512-bit float dot products. Quantized types keep
 * the AVX2 kernels at this level (the avx512vnni level has the integer kernels). */
#include "cpu/kernels_internal.h"

#include <immintrin.h>

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

void loom_kernels_fill_avx512(loom_kernels *k) {
    k->from_float[LOOM_TYPE_F16] = ff_f16;
    k->dot[LOOM_TYPE_F32].vec_dot = vd_f32;
    k->dot[LOOM_TYPE_F16].vec_dot = vd_f16;
    k->dot[LOOM_TYPE_BF16].vec_dot = vd_bf16;
    k->dot_f32 = dot_f32;
    k->axpy_f32 = axpy_f32;
}
