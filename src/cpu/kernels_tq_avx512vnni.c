/*
 * kernels_tq_avx512vnni.c - the TQ1_0 (ternary, 5 trits per byte) and TQ2_0 (2 bits per
 * value) vec_dots against Q8_K on AVX-512 VNNI (decode: one weight row times one
 * activation column).
 *
 * TQ2_0:
 * A super-block's 64 code bytes are one vector: shift 2l and mask give the codes (0..2)
 * of values 32l + m (low 256 bits, byte m) and 128 + 32l + m (high 256 bits); four
 * 64-bit-lane shuffles put them in value order, so each meets a plain 64-byte load of the
 * activations in one vpdpbusd (codes unsigned, activations signed: 4 products per lane
 * <= 4 x 2 x 128). The chain starts at minus the 16 bsums (one per lane: the code offset
 * 1 taken out, as in the scalar reference), then one horizontal sum gives the reference's
 * exact int32 per super-block and the same float operations follow: results equal the
 * scalar reference bit for bit. The AVX2 version needs 8 vpmaddubsw with their shifts and
 * int16 adds per super-block; this one 4 vpdpbusd.
 *
 * TQ1_0: trit n of byte b is (3 x (b x 3^n mod 256)) >> 8, computed per byte in 16-bit
 * lanes (the byte in the high half: vpmullw by 3^n, vpmulhuw by 3; the low and high
 * bytes of a lane separately). Four 64-byte vectors of bytes, each with its own 3^n per
 * 16-bit lane, give the 256 values in order: qs[0..31] twice (trits 0, 1: values 0..63;
 * 2, 3: 64..127), qs[0..31] with qs[32..47] twice (trit 4 of the first: 128..159, trits 0
 * and 1 of the second: 160..191), qs[32..47] three times with qh[0..3] four times
 * (trits 2, 3, 4: 192..239; qh byte m trit n: 240 + 4n + m). Each meets 64 activation
 * bytes in one vpdpbusd; the chain and the float operations are TQ2_0's (bit-identical to
 * the scalar reference). The AVX2 version computes 16 256-bit trit vectors per super-block
 * (32 multiplies), this one 4 512-bit (16 multiplies).
 */
#include "cpu/kernels_internal.h"

#include <immintrin.h>
#include <string.h>


static void vd_tq2_0(int64_t n, float *s, const void *vx, const void *vy) {
    const block_tq2_0 *x = vx;
    const block_q8_K *y = vy;
    const __m512i m3 = _mm512_set1_epi8(3);
    float sum = 0.f;
    for (int64_t i = 0; i < n / QK_K; i++) {
        LOOM_PF0((const char *)(x + i) + LOOM_VD_PF);
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

/* the trits of the bytes of x, 3^n per 16-bit lane in c (values 0..2, one per byte) */
static inline __attribute__((always_inline)) __m512i trits512(__m512i x, __m512i c) {
    const __m512i three = _mm512_set1_epi16(3);
    const __m512i tl = _mm512_mulhi_epu16(_mm512_mullo_epi16(_mm512_slli_epi16(x, 8), c), three);
    const __m512i th = _mm512_mulhi_epu16(_mm512_mullo_epi16(_mm512_and_si512(x, _mm512_set1_epi16((short)0xFF00)), c), three);
    return _mm512_or_si512(tl, _mm512_slli_epi16(th, 8));
}

/* 16-bit lanes: 3^n per 128-bit quarter (n0..n3), or per 32-bit pair of lanes in the last quarter (qh) */
#define P4(a, b, c, d)                                                                                                 \
    _mm512_inserti32x4(_mm512_inserti32x4(_mm512_inserti32x4(_mm512_castsi128_si512(_mm_set1_epi16(a)),               \
                                                             _mm_set1_epi16(b), 1),                                  \
                                          _mm_set1_epi16(c), 2),                                                     \
                       _mm_set1_epi16(d), 3)

static void vd_tq1_0(int64_t n, float *s, const void *vx, const void *vy) {
    const block_tq1_0 *x = vx;
    const block_q8_K *y = vy;
    const __m512i c0 = P4(1, 1, 3, 3), c1 = P4(9, 9, 27, 27), c2 = P4(81, 81, 1, 3);
    const __m512i c3 = _mm512_inserti32x4(P4(9, 27, 81, 1), _mm_setr_epi16(1, 1, 3, 3, 9, 9, 27, 27), 3);
    float sum = 0.f;
    for (int64_t i = 0; i < n / QK_K; i++) {
        LOOM_PF0((const char *)(x + i) + LOOM_VD_PF);
        const __m512i lo = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)x[i].qs)); /* qs[0..31] x 2 */
        const __m128i q2 = _mm_loadu_si128((const __m128i *)(x[i].qs + 32));
        uint32_t qh;
        memcpy(&qh, x[i].qh, 4);
        const __m512i mid = _mm512_inserti32x4(_mm512_inserti32x4(lo, q2, 2), q2, 3);
        const __m512i hi = _mm512_inserti32x4(_mm512_broadcast_i32x4(q2), _mm_set1_epi32((int)qh), 3);
        const int8_t *a = y[i].qs;
        __m512i t = _mm512_sub_epi32(_mm512_setzero_si512(),
                                     _mm512_cvtepi16_epi32(_mm256_loadu_si256((const __m256i *)y[i].bsums)));
        t = _mm512_dpbusd_epi32(t, trits512(lo, c0), _mm512_loadu_si512((const void *)a));
        t = _mm512_dpbusd_epi32(t, trits512(lo, c1), _mm512_loadu_si512((const void *)(a + 64)));
        t = _mm512_dpbusd_epi32(t, trits512(mid, c2), _mm512_loadu_si512((const void *)(a + 128)));
        t = _mm512_dpbusd_epi32(t, trits512(hi, c3), _mm512_loadu_si512((const void *)(a + 192)));
        sum += (_cvtsh_ss(x[i].d) * y[i].d) * (float)_mm512_reduce_add_epi32(t);
    }
    *s = sum;
}
#undef P4

void loom_kernels_fill_tq_avx512vnni(loom_kernels *k) {
    k->dot[LOOM_TYPE_TQ1_0].vec_dot = vd_tq1_0;
    k->dot[LOOM_TYPE_TQ2_0].vec_dot = vd_tq2_0;
}
