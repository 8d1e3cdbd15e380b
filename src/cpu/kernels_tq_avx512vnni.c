/*
 * kernels_tq_avx512vnni.c - the TQ2_0 (ternary, 2 bits per value) vec_dot against Q8_K on
 * AVX-512 VNNI (decode: one weight row times one activation column).
 *
 * A super-block's 64 code bytes are one vector: shift 2l and mask give the codes (0..2)
 * of values 32l + m (low 256 bits, byte m) and 128 + 32l + m (high 256 bits); four
 * 64-bit-lane shuffles put them in value order, so each meets a plain 64-byte load of the
 * activations in one vpdpbusd (codes unsigned, activations signed: 4 products per lane
 * <= 4 x 2 x 128). The chain starts at minus the 16 bsums (one per lane: the code offset
 * 1 taken out, as in the scalar reference), then one horizontal sum gives the reference's
 * exact int32 per super-block and the same float operations follow: results equal the
 * scalar reference bit for bit. The AVX2 version needs 8 vpmaddubsw with their shifts and
 * int16 adds per super-block; this one 4 vpdpbusd.
 */
#include "cpu/kernels_internal.h"

#include <immintrin.h>

static void vd_tq2_0(int64_t n, float *s, const void *vx, const void *vy) {
    const block_tq2_0 *x = vx;
    const block_q8_K *y = vy;
    const __m512i m3 = _mm512_set1_epi8(3);
    float sum = 0.f;
    for (int64_t i = 0; i < n / QK_K; i++) {
        const __m512i q = _mm512_loadu_si512((const void *)x[i].qs);
        const __m512i c0 = _mm512_and_si512(q, m3), c1 = _mm512_and_si512(_mm512_srli_epi16(q, 2), m3);
        const __m512i c2 = _mm512_and_si512(_mm512_srli_epi16(q, 4), m3), c3 = _mm512_and_si512(_mm512_srli_epi16(q, 6), m3);
        const int8_t *a = y[i].qs;
        __m512i t = _mm512_sub_epi32(_mm512_setzero_si512(),
                                     _mm512_cvtepi16_epi32(_mm256_loadu_si256((const __m256i *)y[i].bsums)));
        t = _mm512_dpbusd_epi32(t, _mm512_shuffle_i64x2(c0, c1, 0x44), _mm512_loadu_si512((const void *)a));
        t = _mm512_dpbusd_epi32(t, _mm512_shuffle_i64x2(c2, c3, 0x44), _mm512_loadu_si512((const void *)(a + 64)));
        t = _mm512_dpbusd_epi32(t, _mm512_shuffle_i64x2(c0, c1, 0xEE), _mm512_loadu_si512((const void *)(a + 128)));
        t = _mm512_dpbusd_epi32(t, _mm512_shuffle_i64x2(c2, c3, 0xEE), _mm512_loadu_si512((const void *)(a + 192)));
        sum += (_cvtsh_ss(x[i].d) * y[i].d) * (float)_mm512_reduce_add_epi32(t);
    }
    *s = sum;
}

void loom_kernels_fill_tq_avx512vnni(loom_kernels *k) { k->dot[LOOM_TYPE_TQ2_0].vec_dot = vd_tq2_0; }
