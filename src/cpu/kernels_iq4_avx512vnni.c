/* AVX-512 VNNI kernels for IQ4_NL (x Q8_0) and IQ4_XS (x Q8_K): two 32-value blocks
 * per 512-bit vector; codes by byte shuffle from the 16-entry table, then VPDPBUSD on
 * |code| and the activation with the code's sign (|code| <= 127 and activations in
 * [-127, 127]: no overflow). Exact int32 per block (IQ4_XS: sub-block scales applied
 * in int32), one float FMA per block, as in the scalar reference (kernels_iq_scalar.c). */
#include "cpu/kernels_internal.h"
#include "quant/iq_tables.h"

#include <immintrin.h>

#define H2F(h) _cvtsh_ss(h)

/* 16 packed nibbles -> 32 codes (low nibbles: elements 0..15, high: 16..31) */
static inline __m256i nib32(const uint8_t *qs) {
    const __m128i t = _mm_loadu_si128((const __m128i *)qs);
    return _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(t, 4), t), _mm256_set1_epi8(0x0F));
}

/* per-lane sums of 4 products code * activation (16 int32 lanes; lanes 0..7 from the
 * first 32 values, 8..15 from the second) */
static inline __m512i dot_codes(__m512i nib, __m512i a, __m512i lut) {
    const __m512i q = _mm512_shuffle_epi8(lut, nib);
    const __mmask64 neg = _mm512_movepi8_mask(q);
    const __m512i as = _mm512_mask_sub_epi8(a, neg, _mm512_setzero_si512(), a);
    return _mm512_dpbusd_epi32(_mm512_setzero_si512(), _mm512_abs_epi8(q), as);
}

static inline __m512i lut512(void) {
    return _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)loom_iq4nl_kv));
}

static void vd_iq4_nl(int64_t n, float *s, const void *vx, const void *vy) {
    const block_iq4_nl *x = vx;
    const block_q8_0 *y = vy;
    const __m512i lut = lut512();
    const int64_t nb = n / 32;
    __m512 acc = _mm512_setzero_ps();
    int64_t i = 0;
    for (; i + 1 < nb; i += 2) {
        LOOM_PF0((const char *)(x + i) + LOOM_VD_PF);
        const __m512i nib = _mm512_inserti64x4(_mm512_castsi256_si512(nib32(x[i].qs)), nib32(x[i + 1].qs), 1);
        const __m512i a = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)y[i].qs)),
                                             _mm256_loadu_si256((const __m256i *)y[i + 1].qs), 1);
        const __m512 d = _mm512_insertf32x8(_mm512_castps256_ps512(_mm256_set1_ps(H2F(x[i].d) * H2F(y[i].d))),
                                            _mm256_set1_ps(H2F(x[i + 1].d) * H2F(y[i + 1].d)), 1);
        acc = _mm512_fmadd_ps(d, _mm512_cvtepi32_ps(dot_codes(nib, a, lut)), acc);
    }
    float sum = _mm512_reduce_add_ps(acc);
    if (i < nb) { /* odd block count: the last block alone */
        const __m512i nib = _mm512_castsi256_si512(nib32(x[i].qs));
        const __m512i a = _mm512_zextsi256_si512(_mm256_loadu_si256((const __m256i *)y[i].qs));
        const int32_t isum = _mm512_reduce_add_epi32(dot_codes(nib, a, lut));
        sum += (H2F(x[i].d) * H2F(y[i].d)) * (float)isum;
    }
    *s = sum;
}

static void vd_iq4_xs(int64_t n, float *s, const void *vx, const void *vy) {
    const block_iq4_xs *x = vx;
    const block_q8_K *y = vy;
    const __m512i lut = lut512();
    __m512 acc = _mm512_setzero_ps();
    for (int64_t i = 0; i < n / QK_K; i++) {
        LOOM_PF0((const char *)(x + i) + LOOM_VD_PF);
        __m512i isum = _mm512_setzero_si512();
        for (int ib = 0; ib < 8; ib += 2) {
            const __m512i nib =
                _mm512_inserti64x4(_mm512_castsi256_si512(nib32(x[i].qs + 16 * ib)), nib32(x[i].qs + 16 * ib + 16), 1);
            const __m512i a = _mm512_loadu_si512((const void *)(y[i].qs + 32 * ib));
            const __m512i ls = _mm512_inserti64x4(_mm512_set1_epi32(loom_iq4xs_scale(&x[i], ib) - 32),
                                                  _mm256_set1_epi32(loom_iq4xs_scale(&x[i], ib + 1) - 32), 1);
            isum = _mm512_add_epi32(isum, _mm512_mullo_epi32(dot_codes(nib, a, lut), ls));
        }
        acc = _mm512_fmadd_ps(_mm512_set1_ps(H2F(x[i].d) * y[i].d), _mm512_cvtepi32_ps(isum), acc);
    }
    *s = _mm512_reduce_add_ps(acc);
}

void loom_kernels_fill_iq4_avx512vnni(loom_kernels *k) {
    k->dot[LOOM_TYPE_IQ4_NL].vec_dot = vd_iq4_nl;
    k->dot[LOOM_TYPE_IQ4_XS].vec_dot = vd_iq4_xs;
}
