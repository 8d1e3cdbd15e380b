/* AVX2 kernels for IQ4_NL (x Q8_0) and IQ4_XS (x Q8_K): the 4-bit codes index the
 * 16-entry code table by a byte shuffle, then the signed int8 dot of kernels_avx2.c
 * (abs/sign + maddubs: |code| <= 127, so no int16 saturation). Exact int32 per block
 * (IQ4_XS: sub-block scales applied in int32), one float FMA per block. The avx512
 * levels inherit these (their tables start from the avx2 one). */
#include "cpu/kernels_internal.h"
#include "quant/iq_tables.h"

#include <immintrin.h>

#define H2F(h) _cvtsh_ss(h)

static inline float hsum8(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

static inline __m256i dot_s8(__m256i x, __m256i y) {
    const __m256i p = _mm256_maddubs_epi16(_mm256_sign_epi8(x, x), _mm256_sign_epi8(y, x));
    return _mm256_madd_epi16(p, _mm256_set1_epi16(1));
}

/* 16 packed nibbles -> the 32 code values (low nibbles: elements 0..15, high: 16..31) */
static inline __m256i iq4_codes(const uint8_t *qs, __m256i lut) {
    const __m128i t = _mm_loadu_si128((const __m128i *)qs);
    const __m256i v = _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(t, 4), t), _mm256_set1_epi8(0x0F));
    return _mm256_shuffle_epi8(lut, v);
}

static void vd_iq4_nl(int64_t n, float *s, const void *vx, const void *vy) {
    const block_iq4_nl *x = vx;
    const block_q8_0 *y = vy;
    const __m256i lut = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)loom_iq4nl_kv));
    __m256 acc = _mm256_setzero_ps();
    for (int64_t i = 0; i < n / 32; i++) {
        LOOM_PF0((const char *)(x + i) + LOOM_VD_PF);
        const __m256i q = iq4_codes(x[i].qs, lut);
        const __m256i a = _mm256_loadu_si256((const __m256i *)y[i].qs);
        const __m256 d = _mm256_set1_ps(H2F(x[i].d) * H2F(y[i].d));
        acc = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(dot_s8(q, a)), acc);
    }
    *s = hsum8(acc);
}

static void vd_iq4_xs(int64_t n, float *s, const void *vx, const void *vy) {
    const block_iq4_xs *x = vx;
    const block_q8_K *y = vy;
    const __m256i lut = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)loom_iq4nl_kv));
    __m256 acc = _mm256_setzero_ps();
    for (int64_t i = 0; i < n / QK_K; i++) {
        LOOM_PF0((const char *)(x + i) + LOOM_VD_PF);
        __m256i isum = _mm256_setzero_si256();
        for (int ib = 0; ib < 8; ib++) {
            const __m256i q = iq4_codes(x[i].qs + 16 * ib, lut);
            const __m256i a = _mm256_loadu_si256((const __m256i *)(y[i].qs + 32 * ib));
            const __m256i ls = _mm256_set1_epi32(loom_iq4xs_scale(&x[i], ib) - 32);
            isum = _mm256_add_epi32(isum, _mm256_mullo_epi32(dot_s8(q, a), ls));
        }
        const __m256 d = _mm256_set1_ps(H2F(x[i].d) * y[i].d);
        acc = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(isum), acc);
    }
    *s = hsum8(acc);
}

void loom_kernels_fill_iq4_avx2(loom_kernels *k) {
    k->dot[LOOM_TYPE_IQ4_NL].vec_dot = vd_iq4_nl;
    k->dot[LOOM_TYPE_IQ4_XS].vec_dot = vd_iq4_xs;
}
