/* AVX2 kernels for IQ2_XXS, IQ2_XS and IQ2_S (x Q8_K); references in kernels_iq_scalar.c.
 *
 * Per 32-value sub-block: the four 8-value groups are four 64-bit grid loads (grid bytes
 * are unsigned, at most 43), broadcast and blended into one vector; the four sign bytes
 * (one per group, bit j = value j) are spread to one byte per value by one in-lane
 * shuffle of the block's sign vector (sgv below) and turned into a 0/-1 byte mask by
 * and+compare; the activation bytes take the signs (sign_epi8), and maddubs(grid,
 * signed activations) makes exact int16 pair sums (|.| <= 2 * 43 * 127). madd with the
 * odd scales 2s+1 (one per 32 values for IQ2_XXS, one per 16 for IQ2_XS / IQ2_S) gives
 * int32 lanes. Each lane sums 32 values of a block (|.| <= 32 * 43 * 127 * 31 < 2^23),
 * so its float conversion is exact; then one FMA per block and lane, the 8 lanes summed
 * at the end and a final exact 1/8: no more float roundings than the scalar reference's
 * one product and one sum per block (test_cpu_kernels' bound).
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

/* Block side data, decoded once per block with whole-block vector steps:
 *  - sgv: the 32 sign bytes (one per 8-value group, bit j = value j), lane 0 holding the
 *    bytes of groups 4ib, 4ib+1 at bytes 2ib, 2ib+1 and lane 1 those of groups 4ib+2,
 *    4ib+3 (iq2_sg_lanes), so one in-lane shuffle spreads a sub-block's four;
 *  - sc16: the 16 odd scales 2s+1 (one per 16 values), scale 2ib then 2ib+1 for
 *    sub-block ib, in both lanes;
 *  - the 32 grid indices: IQ2_XXS reads its index bytes in place, the others a uint16
 *    array. */

/* 32 sign bytes in group order -> the sgv layout */
AI __m256i iq2_sg_lanes(__m256i s) {
    const __m256i ctl = _mm256_broadcastsi128_si256(_mm_setr_epi8(0, 1, 4, 5, 8, 9, 12, 13, 2, 3, 6, 7, 10, 11, 14, 15));
    return _mm256_permute4x64_epi64(_mm256_shuffle_epi8(s, ctl), 0xD8);
}

/* int32 lanes of sum over sub-block ib (32 values) of grid * sign * a * scale; q the four
 * grid entries of its groups. */
AI __m256i iq2_step(__m256i q, __m256i sgv, __m256i sc16, const int8_t *a, int ib) {
    const long long b0 = 0x0101010101010101LL * (2 * ib), b1 = 0x0101010101010101LL * (2 * ib + 1);
    const __m256i bits = _mm256_set1_epi64x((long long)0x8040201008040201ULL); /* 1, 2, 4, ..., 128 */
    const __m256i sb = _mm256_and_si256(_mm256_shuffle_epi8(sgv, _mm256_set_epi64x(b1, b0, b1, b0)), bits);
    const __m256i neg = _mm256_cmpeq_epi8(sb, bits); /* -1 where the sign bit is set */
    const __m256i av = _mm256_sign_epi8(_mm256_loadu_si256((const __m256i *)(a + 32 * ib)),
                                        _mm256_or_si256(neg, _mm256_set1_epi8(1)));
    const __m256i lctl = _mm256_set_m128i(_mm_set1_epi16((short)(0x8000 | (2 * ib + 1))), _mm_set1_epi16((short)(0x8000 | (2 * ib))));
    return _mm256_madd_epi16(_mm256_maddubs_epi16(q, av), _mm256_shuffle_epi8(sc16, lctl));
}

/* where the grid indices are: bytes 8ib..8ib+3 (IQ2_XXS, in place), uint16 4ib..4ib+3
 * (IQ2_XS / IQ2_S: an array decoded per block) */
enum { IQ2_IDX8, IQ2_IDX16 };

/* Software prefetch of the weight row IQ2_PF bytes ahead (two lines per block: blocks are
 * 66..82 bytes). A block costs ~280 uops, so the out-of-order window holds only about two
 * blocks, and with the hardware prefetcher alone the kernel ran at ~40 % of its in-cache
 * speed on rows streamed from DRAM (one thread; Q2_K keeps ~50 %); 768 bytes measured
 * best of 384 / 768 / 1536 on a shared, noisy machine. */
#ifndef IQ2_PF
#define IQ2_PF 768
#endif
AI void iq2_prefetch(const void *blk) {
    LOOM_PF0((const char *)blk + IQ2_PF);
    LOOM_PF0((const char *)blk + IQ2_PF + 64);
}

/* one sub-block: the four grid entries as broadcast loads (load ports only) blended
 * together -- set_epi64x's inserts all went to the shuffle port, already the busiest --
 * then iq2_step */
AI __m256i iq2_sub(const uint64_t *grid, int kind, const void *idxp, __m256i sgv, __m256i sc16, const int8_t *a, int ib) {
#define IQ2_IDX(l) (kind == IQ2_IDX8 ? ((const uint8_t *)idxp)[8 * ib + (l)] : ((const uint16_t *)idxp)[4 * ib + (l)])
#define IQ2_G(l) _mm256_castpd_si256(_mm256_broadcast_sd((const double *)(grid + IQ2_IDX(l))))
    const __m256i q = _mm256_blend_epi32(_mm256_blend_epi32(IQ2_G(0), IQ2_G(1), 0x0C),
                                         _mm256_blend_epi32(IQ2_G(2), IQ2_G(3), 0xC0), 0xF0);
#undef IQ2_G
#undef IQ2_IDX
    return iq2_step(q, sgv, sc16, a, ib);
}

/* the int32 lanes of a block's sum; the 8 sub-blocks written out so that every shuffle
 * control is a constant (a loop into a grid array made GCC store and reload it) */
AI __m256i iq2_block(const uint64_t *grid, int kind, const void *idxp, __m256i sgv, __m256i sc16, const int8_t *a) {
    const __m256i s01 = _mm256_add_epi32(iq2_sub(grid, kind, idxp, sgv, sc16, a, 0), iq2_sub(grid, kind, idxp, sgv, sc16, a, 1));
    const __m256i s23 = _mm256_add_epi32(iq2_sub(grid, kind, idxp, sgv, sc16, a, 2), iq2_sub(grid, kind, idxp, sgv, sc16, a, 3));
    const __m256i s45 = _mm256_add_epi32(iq2_sub(grid, kind, idxp, sgv, sc16, a, 4), iq2_sub(grid, kind, idxp, sgv, sc16, a, 5));
    const __m256i s67 = _mm256_add_epi32(iq2_sub(grid, kind, idxp, sgv, sc16, a, 6), iq2_sub(grid, kind, idxp, sgv, sc16, a, 7));
    return _mm256_add_epi32(_mm256_add_epi32(s01, s23), _mm256_add_epi32(s45, s67));
}

/* sign fields of 7 bits in uint16 lanes (values < 128) -> sign bytes: bit 7 := the
 * parity of the 7 (the format's even count of minus signs) */
AI __m256i iq2_parity7_16(__m256i s) {
    __m256i t = _mm256_xor_si256(s, _mm256_srli_epi16(s, 4));
    t = _mm256_xor_si256(t, _mm256_srli_epi16(t, 2));
    t = _mm256_xor_si256(t, _mm256_srli_epi16(t, 1));
    return _mm256_or_si256(s, _mm256_slli_epi16(_mm256_and_si256(t, _mm256_set1_epi16(1)), 7));
}

/* The 16 scale nibbles of a block (IQ2_XS / IQ2_S) -> sc16: odd bytes 2s+1, sub-block
 * by sub-block, low nibble first (its 16 values come first), in both lanes. */
AI __m256i iq2_scales16(const uint8_t *scales) {
    const __m128i sc = _mm_loadl_epi64((const __m128i *)scales);
    const __m128i m4 = _mm_set1_epi8(0x0F);
    const __m128i nib = _mm_unpacklo_epi8(_mm_and_si128(sc, m4), _mm_and_si128(_mm_srli_epi16(sc, 4), m4));
    const __m128i odd = _mm_add_epi8(_mm_add_epi8(nib, nib), _mm_set1_epi8(1));
    return _mm256_broadcastsi128_si256(odd);
}

static void vd_iq2_xxs(int64_t n, float *s, const void *vx, const void *vy) {
    const block_iq2_xxs *x = vx;
    const block_q8_K *y = vy;
    const __m256i m7 = _mm256_set1_epi32(0x7F);
    /* bytes 0, 1 of each dword twice in each lane's low 8 bytes (lsw below) */
    const __m256i lsctl = _mm256_broadcastsi128_si256(_mm_setr_epi8(0, 0, 4, 4, 8, 8, 12, 12, -1, -1, -1, -1, -1, -1, -1, -1));
    __m256 acc = _mm256_setzero_ps();
    for (int64_t i = 0; i < n / QK_K; i++) {
        LOOM_PF0((const char *)(x + i) + LOOM_VD_PF);
        iq2_prefetch(x + i);
        const uint8_t *qs = (const uint8_t *)x[i].qs;
        /* sub-block ib: bytes 8ib..8ib+3 the grid indices, then a word w: four 7-bit sign
         * fields and the 4-bit scale in bits 28..31 */
        const __m256 v0 = _mm256_castsi256_ps(_mm256_loadu_si256((const __m256i *)qs));
        const __m256 v1 = _mm256_castsi256_ps(_mm256_loadu_si256((const __m256i *)(qs + 32)));
        /* odd words of v0 then v1 per lane (sub-blocks 0 1 4 5 | 2 3 6 7), then in order */
        const __m256i w = _mm256_permute4x64_epi64(_mm256_castps_si256(_mm256_shuffle_ps(v0, v1, 0xDD)), 0xD8);
        /* fields 0 and 2 in the two uint16 halves of each word; fields 1 and 3 */
        const __m256i f02 = _mm256_or_si256(_mm256_and_si256(w, m7), _mm256_slli_epi32(_mm256_and_si256(_mm256_srli_epi32(w, 14), m7), 16));
        const __m256i f13 = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi32(w, 7), m7), _mm256_slli_epi32(_mm256_and_si256(_mm256_srli_epi32(w, 21), m7), 16));
        const __m256i sg = _mm256_or_si256(iq2_parity7_16(f02), _mm256_slli_epi16(iq2_parity7_16(f13), 8));
        /* scale 2s+1 of sub-block ib as bytes 2ib and 2ib+1 of sc16 */
        const __m256i lsw = _mm256_add_epi32(_mm256_slli_epi32(_mm256_srli_epi32(w, 28), 1), _mm256_set1_epi32(1));
        const __m256i sc16 = _mm256_permute4x64_epi64(_mm256_shuffle_epi8(lsw, lsctl), 0x88);
        const __m256i isum = iq2_block(loom_iq2xxs_grid, IQ2_IDX8, qs, iq2_sg_lanes(sg), sc16, y[i].qs);
        const __m256 d = _mm256_set1_ps(H2F(x[i].d) * y[i].d);
        acc = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(isum), acc);
    }
    *s = 0.125f * hsum8(acc);
}

static void vd_iq2_xs(int64_t n, float *s, const void *vx, const void *vy) {
    const block_iq2_xs *x = vx;
    const block_q8_K *y = vy;
    const __m256i m7 = _mm256_set1_epi16(0x7F), m9 = _mm256_set1_epi16(511);
    __m256 acc = _mm256_setzero_ps();
    for (int64_t i = 0; i < n / QK_K; i++) {
        LOOM_PF0((const char *)(x + i) + LOOM_VD_PF);
        iq2_prefetch(x + i);
        /* each code: bits 0..8 the grid index, 9..15 the sign field */
        uint16_t idx[32];
        const __m256i q0 = _mm256_loadu_si256((const __m256i *)x[i].qs);
        const __m256i q1 = _mm256_loadu_si256((const __m256i *)(x[i].qs + 16));
        _mm256_storeu_si256((__m256i *)idx, _mm256_and_si256(q0, m9));
        _mm256_storeu_si256((__m256i *)(idx + 16), _mm256_and_si256(q1, m9));
        __asm__ volatile("" ::: "memory"); /* see vd_iq2_s */
        const __m256i s0 = iq2_parity7_16(_mm256_and_si256(_mm256_srli_epi16(q0, 9), m7));
        const __m256i s1 = iq2_parity7_16(_mm256_and_si256(_mm256_srli_epi16(q1, 9), m7));
        /* packus per lane gives groups 0-7, 16-23, 8-15, 24-31; the permute restores order */
        const __m256i sg = _mm256_permute4x64_epi64(_mm256_packus_epi16(s0, s1), 0xD8);
        const __m256i isum = iq2_block(loom_iq2xs_grid, IQ2_IDX16, idx, iq2_sg_lanes(sg), iq2_scales16(x[i].scales), y[i].qs);
        const __m256 d = _mm256_set1_ps(H2F(x[i].d) * y[i].d);
        acc = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(isum), acc);
    }
    *s = 0.125f * hsum8(acc);
}

static void vd_iq2_s(int64_t n, float *s, const void *vx, const void *vy) {
    const block_iq2_s *x = vx;
    const block_q8_K *y = vy;
    /* group g = 4ib + l: index qs[g] | bits 2l..2l+1 of qh[ib] as bits 8..9; the shuffles
     * put qh[ib] in the uint16 lanes of groups 4ib..4ib+3, the multiply shifts by 8-2l */
    const __m256i hsel0 = _mm256_set_epi64x(0x8003800380038003LL, 0x8002800280028002LL, 0x8001800180018001LL, (long long)0x8000800080008000ULL);
    const __m256i hsel1 = _mm256_add_epi8(hsel0, _mm256_set1_epi16(4));
    const __m256i hmul = _mm256_set1_epi64x(0x0004001000400100LL); /* 256, 64, 16, 4 */
    const __m256i m3h = _mm256_set1_epi16(0x300);
    __m256 acc = _mm256_setzero_ps();
    for (int64_t i = 0; i < n / QK_K; i++) {
        LOOM_PF0((const char *)(x + i) + LOOM_VD_PF);
        iq2_prefetch(x + i);
        uint16_t idx[32];
        const __m256i qh = _mm256_broadcastsi128_si256(_mm_loadl_epi64((const __m128i *)x[i].qh));
        const __m256i h0 = _mm256_and_si256(_mm256_mullo_epi16(_mm256_shuffle_epi8(qh, hsel0), hmul), m3h);
        const __m256i h1 = _mm256_and_si256(_mm256_mullo_epi16(_mm256_shuffle_epi8(qh, hsel1), hmul), m3h);
        const __m256i l0 = _mm256_cvtepu8_epi16(_mm_loadu_si128((const __m128i *)x[i].qs));
        const __m256i l1 = _mm256_cvtepu8_epi16(_mm_loadu_si128((const __m128i *)(x[i].qs + 16)));
        _mm256_storeu_si256((__m256i *)idx, _mm256_or_si256(l0, h0));
        _mm256_storeu_si256((__m256i *)(idx + 16), _mm256_or_si256(l1, h1));
        __asm__ volatile("" ::: "memory"); /* read idx back from memory: GCC otherwise extracts
                                              each index with vpextrw (shuffle port) */
        const __m256i sg = _mm256_loadu_si256((const __m256i *)(x[i].qs + 32)); /* stored as is */
        const __m256i isum = iq2_block(loom_iq2s_grid, IQ2_IDX16, idx, iq2_sg_lanes(sg), iq2_scales16(x[i].scales), y[i].qs);
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
