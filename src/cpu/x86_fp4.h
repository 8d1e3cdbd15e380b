/*
 * x86_fp4.h (internal) - NVFP4 helpers the x86 files share: the four UE4M3 sub-block
 * scales of a block as floats, and a block half's 32 codes in Q8_0 value order.
 * Include only from files compiled with -mavx2 or more.
 */
#ifndef LOOM_CPU_X86_FP4_H
#define LOOM_CPU_X86_FP4_H

#include "cpu/kernels_internal.h"
#include "quant/blocks.h"

#include <immintrin.h>
#include <string.h>

/* loom_ue4m3_half of four scale bytes at once: (1 + m/8) 2^(e-8) as f32 bits, m 2^-10
 * for e == 0 (bit 7 ignored), 0 for the byte 0x7F (0xFF is not zero, as ggml) */
static LOOM_ALWAYS_INLINE __m128 loom_ue4m3_half_x4(const uint8_t *d) {
    uint32_t w;
    memcpy(&w, d, 4);
    const __m128i x = _mm_cvtepu8_epi32(_mm_cvtsi32_si128((int)w));
    /* e m (7 bits) << 20 is the f32 exponent and mantissa fields less the bias 119 */
    const __m128i em = _mm_and_si128(x, _mm_set1_epi32(0x7F));
    const __m128 nrm = _mm_castsi128_ps(_mm_add_epi32(_mm_slli_epi32(em, 20), _mm_set1_epi32(119 << 23)));
    const __m128 sub = _mm_mul_ps(_mm_cvtepi32_ps(em), _mm_set1_ps(1.0f / 1024)); /* e == 0: em = m */
    const __m128i e0 = _mm_cmpeq_epi32(_mm_and_si128(x, _mm_set1_epi32(0x78)), _mm_setzero_si128());
    const __m128 v = _mm_blendv_ps(nrm, sub, _mm_castsi128_ps(e0));
    return _mm_andnot_ps(_mm_castsi128_ps(_mm_cmpeq_epi32(x, _mm_set1_epi32(0x7F))), v);
}

/* Half h (values 32h..32h+31) of an NVFP4 block's codes mapped through lut (16 bytes),
 * in value order: sub-block 2h (bytes 16h..16h+7: low nibbles, then high), then 2h+1 */
static LOOM_ALWAYS_INLINE __m256i loom_nvfp4_half(const uint8_t *qs, int h, __m128i lut) {
    const __m128i m4 = _mm_set1_epi8(0x0F), t = _mm_loadu_si128((const __m128i *)(qs + 16 * h));
    const __m128i lo = _mm_shuffle_epi8(lut, _mm_and_si128(t, m4));
    const __m128i hi = _mm_shuffle_epi8(lut, _mm_and_si128(_mm_srli_epi16(t, 4), m4));
    return _mm256_set_m128i(_mm_unpackhi_epi64(lo, hi), _mm_unpacklo_epi64(lo, hi));
}

/* lanes 0-3 sc[2h], lanes 4-7 sc[2h + 1]: the scales of half h's two sub-blocks */
static LOOM_ALWAYS_INLINE __m256 loom_nvfp4_half_scales(__m128 sc, int h) {
    return h ? _mm256_set_m128(_mm_shuffle_ps(sc, sc, 0xFF), _mm_shuffle_ps(sc, sc, 0xAA))
             : _mm256_set_m128(_mm_shuffle_ps(sc, sc, 0x55), _mm_shuffle_ps(sc, sc, 0x00));
}

#endif
