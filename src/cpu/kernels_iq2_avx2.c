/* AVX2 kernels for IQ2_XXS, IQ2_XS and IQ2_S (x Q8_K); references in kernels_iq_scalar.c.
 *
 * Per 32-value sub-block: the four 8-value groups are four 64-bit grid loads (grid bytes
 * are unsigned, at most 43); the four sign bytes (one per group, bit j = value j) are
 * broadcast, spread to one byte per value by a shuffle and turned into a 0/-1 byte mask
 * by and+compare; the activation bytes take the signs (sign_epi8), and maddubs(grid,
 * signed activations) makes exact int16 pair sums (|.| <= 2 * 43 * 127). madd with the
 * odd scales 2s+1 (one per 32 values for IQ2_XXS, one per 16 for IQ2_XS / IQ2_S) gives
 * int32 lanes; exact int32 per block, one float FMA per block, a final exact 1/8 -- the
 * scalar reference's integers and float steps, with the 8 lanes summed at the end.
 *
 * Negating the activation is exact for bytes in [-127, 127], which is what every Q8_K
 * from_float produces (its scale maps the largest magnitude to 127); a -128 byte would
 * stay -128 (the same holds for the IQ4 kernels' sign trick). The avx512 levels inherit
 * these (their tables start from the avx2 one). */
#include "cpu/kernels_internal.h"
#include "quant/iq_tables.h"

#include <immintrin.h>
#include <string.h>

#define H2F(h) _cvtsh_ss(h)
#define AI static inline __attribute__((always_inline))

static inline float hsum8(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

/* constants shared by the three kernels */
typedef struct {
    __m256i spread; /* shuffle: byte k of the broadcast sign word to bytes 8k..8k+7 */
    __m256i bits;   /* 1, 2, 4, ..., 128 repeated */
    __m256i one8;
} iq2_consts;

AI iq2_consts iq2_consts_make(void) {
    iq2_consts c;
    c.spread = _mm256_set_epi64x(0x0303030303030303LL, 0x0202020202020202LL, 0x0101010101010101LL, 0);
    c.bits = _mm256_set1_epi64x((long long)0x8040201008040201ULL);
    c.one8 = _mm256_set1_epi8(1);
    return c;
}

/* int32 lanes of sum (grid * sign * a) * scale over 32 values: g0..g3 the grid entries of
 * the four groups, sw their four sign bytes (group l in byte l), ls16 the int16 scale per
 * lane (lanes 0..7: values 0..15, lanes 8..15: values 16..31). */
AI __m256i iq2_sub32(const iq2_consts *c, uint64_t g0, uint64_t g1, uint64_t g2, uint64_t g3, uint32_t sw,
                     const int8_t *a, __m256i ls16) {
    const __m256i q = _mm256_set_epi64x((long long)g3, (long long)g2, (long long)g1, (long long)g0);
    const __m256i sb = _mm256_and_si256(_mm256_shuffle_epi8(_mm256_set1_epi32((int)sw), c->spread), c->bits);
    const __m256i neg = _mm256_cmpeq_epi8(sb, c->bits); /* -1 where the sign bit is set */
    const __m256i av = _mm256_sign_epi8(_mm256_loadu_si256((const __m256i *)a), _mm256_or_si256(neg, c->one8));
    return _mm256_madd_epi16(_mm256_maddubs_epi16(q, av), ls16);
}

/* four 7-bit sign fields (bits 0..27 of w) to four sign bytes, bit 7 of each the parity
 * of its 7 bits (the format's even count of minus signs) */
AI uint32_t iq2_signs4(uint32_t w) {
    uint32_t s = (w & 0x7Fu) | ((w << 1) & 0x7F00u) | ((w << 2) & 0x7F0000u) | ((w << 3) & 0x7F000000u);
    uint32_t t = s ^ (s >> 4); /* bits 0..3 of each byte stay within the byte */
    t ^= t >> 2;
    t ^= t >> 1;
    return s | ((t & 0x01010101u) << 7);
}

static void vd_iq2_xxs(int64_t n, float *s, const void *vx, const void *vy) {
    const block_iq2_xxs *x = vx;
    const block_q8_K *y = vy;
    const iq2_consts c = iq2_consts_make();
    __m256 acc = _mm256_setzero_ps();
    for (int64_t i = 0; i < n / QK_K; i++) {
        const uint8_t *qs = (const uint8_t *)x[i].qs;
        const int8_t *a = y[i].qs;
        __m256i isum = _mm256_setzero_si256();
        for (int ib = 0; ib < 8; ib++) {
            uint32_t a0, a1;
            memcpy(&a0, qs + 8 * ib, 4);
            memcpy(&a1, qs + 8 * ib + 4, 4);
            const __m256i ls = _mm256_set1_epi16((short)(2 * (a1 >> 28) + 1));
            isum = _mm256_add_epi32(isum, iq2_sub32(&c, loom_iq2xxs_grid[a0 & 255], loom_iq2xxs_grid[(a0 >> 8) & 255],
                                                    loom_iq2xxs_grid[(a0 >> 16) & 255], loom_iq2xxs_grid[a0 >> 24],
                                                    iq2_signs4(a1), a + 32 * ib, ls));
        }
        const __m256 d = _mm256_set1_ps(H2F(x[i].d) * y[i].d);
        acc = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(isum), acc);
    }
    *s = 0.125f * hsum8(acc);
}

/* The 16 scale nibbles of a block as odd bytes 2s+1, ordered sub-block by sub-block
 * (low nibble first) and broadcast to both lanes; lsctl(ib) picks sub-block ib's pair
 * as int16: low nibble's in lanes 0..7, high nibble's in lanes 8..15. */
AI __m256i iq2_scales16(const uint8_t *scales) {
    const __m128i sc = _mm_loadl_epi64((const __m128i *)scales);
    const __m128i m4 = _mm_set1_epi8(0x0F);
    const __m128i nib = _mm_unpacklo_epi8(_mm_and_si128(sc, m4), _mm_and_si128(_mm_srli_epi16(sc, 4), m4));
    const __m128i odd = _mm_add_epi8(_mm_add_epi8(nib, nib), _mm_set1_epi8(1));
    return _mm256_broadcastsi128_si256(odd);
}

AI __m256i iq2_lsctl(int ib) { /* byte 2ib then zero (0x80) in lane 0; 2ib+1 then zero in lane 1 */
    return _mm256_set_m128i(_mm_set1_epi16((short)(0x8000 | (2 * ib + 1))), _mm_set1_epi16((short)(0x8000 | (2 * ib))));
}

static void vd_iq2_xs(int64_t n, float *s, const void *vx, const void *vy) {
    const block_iq2_xs *x = vx;
    const block_q8_K *y = vy;
    const iq2_consts c = iq2_consts_make();
    const __m256i m7 = _mm256_set1_epi16(0x7F);
    __m256 acc = _mm256_setzero_ps();
    for (int64_t i = 0; i < n / QK_K; i++) {
        const uint16_t *qs = x[i].qs;
        const int8_t *a = y[i].qs;
        /* the 32 sign bytes: bits 9..15 of each code plus their parity as bit 7 */
        uint8_t sg[32];
        {
            const __m256i q0 = _mm256_loadu_si256((const __m256i *)qs), q1 = _mm256_loadu_si256((const __m256i *)(qs + 16));
            __m256i s0 = _mm256_and_si256(_mm256_srli_epi16(q0, 9), m7), s1 = _mm256_and_si256(_mm256_srli_epi16(q1, 9), m7);
            __m256i t0 = _mm256_xor_si256(s0, _mm256_srli_epi16(s0, 4)), t1 = _mm256_xor_si256(s1, _mm256_srli_epi16(s1, 4));
            t0 = _mm256_xor_si256(t0, _mm256_srli_epi16(t0, 2)), t1 = _mm256_xor_si256(t1, _mm256_srli_epi16(t1, 2));
            t0 = _mm256_xor_si256(t0, _mm256_srli_epi16(t0, 1)), t1 = _mm256_xor_si256(t1, _mm256_srli_epi16(t1, 1));
            const __m256i one16 = _mm256_set1_epi16(1);
            s0 = _mm256_or_si256(s0, _mm256_slli_epi16(_mm256_and_si256(t0, one16), 7));
            s1 = _mm256_or_si256(s1, _mm256_slli_epi16(_mm256_and_si256(t1, one16), 7));
            /* packus per lane gives groups 0-7, 16-23, 8-15, 24-31; the permute restores order */
            _mm256_storeu_si256((__m256i *)sg, _mm256_permute4x64_epi64(_mm256_packus_epi16(s0, s1), 0xD8));
        }
        const __m256i sc = iq2_scales16(x[i].scales);
        __m256i isum = _mm256_setzero_si256();
        for (int ib = 0; ib < 8; ib++) {
            uint32_t sw;
            memcpy(&sw, sg + 4 * ib, 4);
            const uint16_t *q = qs + 4 * ib;
            const __m256i ls = _mm256_shuffle_epi8(sc, iq2_lsctl(ib));
            isum = _mm256_add_epi32(isum, iq2_sub32(&c, loom_iq2xs_grid[q[0] & 511], loom_iq2xs_grid[q[1] & 511],
                                                    loom_iq2xs_grid[q[2] & 511], loom_iq2xs_grid[q[3] & 511], sw,
                                                    a + 32 * ib, ls));
        }
        const __m256 d = _mm256_set1_ps(H2F(x[i].d) * y[i].d);
        acc = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(isum), acc);
    }
    *s = 0.125f * hsum8(acc);
}

static void vd_iq2_s(int64_t n, float *s, const void *vx, const void *vy) {
    const block_iq2_s *x = vx;
    const block_q8_K *y = vy;
    const iq2_consts c = iq2_consts_make();
    __m256 acc = _mm256_setzero_ps();
    for (int64_t i = 0; i < n / QK_K; i++) {
        const uint8_t *qs = x[i].qs, *sg = x[i].qs + 32;
        const int8_t *a = y[i].qs;
        const __m256i sc = iq2_scales16(x[i].scales);
        __m256i isum = _mm256_setzero_si256();
        for (int ib = 0; ib < 8; ib++) {
            uint32_t sw;
            memcpy(&sw, sg + 4 * ib, 4);
            const uint32_t h = x[i].qh[ib];
            const uint8_t *q = qs + 4 * ib;
            const __m256i ls = _mm256_shuffle_epi8(sc, iq2_lsctl(ib));
            isum = _mm256_add_epi32(isum, iq2_sub32(&c, loom_iq2s_grid[q[0] | ((h << 8) & 0x300)],
                                                    loom_iq2s_grid[q[1] | ((h << 6) & 0x300)],
                                                    loom_iq2s_grid[q[2] | ((h << 4) & 0x300)],
                                                    loom_iq2s_grid[q[3] | ((h << 2) & 0x300)], sw, a + 32 * ib, ls));
        }
        const __m256 d = _mm256_set1_ps(H2F(x[i].d) * y[i].d);
        acc = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(isum), acc);
    }
    *s = 0.125f * hsum8(acc);
}

void loom_kernels_fill_iq2_avx2(loom_kernels *k) {
    k->dot[LOOM_TYPE_IQ2_XXS].vec_dot = vd_iq2_xxs;
    k->dot[LOOM_TYPE_IQ2_XS].vec_dot = vd_iq2_xs;
    k->dot[LOOM_TYPE_IQ2_S].vec_dot = vd_iq2_s;
}
