/* kernels_x86_q3k.h (internal, x86 only) - Q3_K scale decoding shared by the AVX2
 * vec_dot (kernels_x86_kquant_avx2.c) and the AVX-512 VNNI gemm tile
 * (kernels_avx512vnni.c). Include after <immintrin.h>, in a file compiled for AVX2. */
#ifndef LOOM_CPU_KERNELS_X86_Q3K_H
#define LOOM_CPU_KERNELS_X86_Q3K_H

#include <stdint.h>
#include <string.h>

/* The 16 signed 6-bit scales (backend contract 9.2) as int8, from the 12 packed bytes:
 * lo4 = k<8 ? s[k]&15 : s[k-8]>>4, hi2 = (s[8+k%4] >> 2*(k/4)) & 3, sc = lo4|hi2<<4 - 32. */
static inline __attribute__((always_inline)) __m128i loom_q3k_scales(const uint8_t *p) {
    uint64_t lo8;
    uint32_t hi4;
    memcpy(&lo8, p, 8);
    memcpy(&hi4, p + 8, 4);
    const __m128i m4 = _mm_set1_epi8(0x0F);
    const __m128i v = _mm_cvtsi64_si128((long long)lo8);
    const __m128i lo = _mm_unpacklo_epi64(_mm_and_si128(v, m4), _mm_and_si128(_mm_srli_epi16(v, 4), m4));
    const __m128i hi = _mm_srlv_epi32(_mm_set1_epi32((int)hi4), _mm_setr_epi32(0, 2, 4, 6));
    const __m128i h2 = _mm_slli_epi16(_mm_and_si128(hi, _mm_set1_epi8(3)), 4);
    return _mm_sub_epi8(_mm_or_si128(lo, h2), _mm_set1_epi8(32));
}

#endif
