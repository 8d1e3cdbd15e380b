/* AVX2 kernels for the ~1.6-bit types IQ1_S, IQ1_M and the ternary TQ1_0, TQ2_0, all
 * against Q8_K activations. Every code becomes an unsigned byte u that maddubs multiplies
 * with the signed activations (pair sums <= 2 * 18 * 128, far from int16 saturation, for
 * any activation byte, -128 included); the offset that makes u unsigned is taken off
 * through the Q8_K bsums. Each block's integer is reduced to one exact int32, the very
 * integer of the scalar reference (kernels_iq_scalar.c), and scaled by the same float
 * operations, so the results equal the reference bit for bit. The avx512 levels inherit
 * these (their tables start from the avx2 one). */
#include "cpu/kernels_internal.h"
#include "quant/iq_tables.h"

#include <immintrin.h>
#include <string.h>

#define H2F(h) _cvtsh_ss(h)
#define AI static inline __attribute__((always_inline))

AI int hsum8_i32(__m256i v) {
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(1, 0, 3, 2)));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(2, 3, 0, 1)));
    return _mm_cvtsi128_si32(s);
}

AI __m256i load256(const void *p) { return _mm256_loadu_si256((const __m256i *)p); }

/* the 8 int32 partial sums of the 16 bsums of a Q8_K block */
AI __m256i bsums_i32(const block_q8_K *y) { return _mm256_madd_epi16(load256(y->bsums), _mm256_set1_epi16(1)); }

/* Four 8-byte grid rows (codes -1, 0, 1) as 32 bytes, row l in bytes 8l..8l+7, from
 * their byte offsets 8 * index (16 bits each in off): broadcast loads and blends (no
 * shuffle-port work). */
AI __m256i grid4(uint64_t off) {
    const char *g = (const char *)loom_iq1s_grid;
#define G(j) _mm256_set1_epi64x((long long)*(const uint64_t *)(const void *)(g + (off >> (16 * (j)) & 0xFFFF)))
    const __m256i a = _mm256_blend_epi32(G(0), G(1), 0x0C), b = _mm256_blend_epi32(G(2), G(3), 0xC0);
#undef G
    return _mm256_blend_epi32(a, b, 0xF0);
}

/* bits 16l.. of off[ib] = 8 * (qs[4ib + l] | hi3(ib, l) << 8) for a block's 32 grid
 * rows (read as 64-bit words: 8 vector extracts, not 32), where
 * hc picks (per 16-bit lane) the byte or word holding hi3 and hm shifts hi3 to bits
 * 11..13 (so every shift is to the left). */
AI void grid_offsets(const uint8_t *qs, __m256i h, __m256i hc0, __m256i hc1, __m256i hm, uint64_t off[8]) {
    const __m256i m = _mm256_set1_epi16(0x3800);
    const __m256i lo0 = _mm256_slli_epi16(_mm256_cvtepu8_epi16(_mm_loadu_si128((const __m128i *)qs)), 3);
    const __m256i lo1 = _mm256_slli_epi16(_mm256_cvtepu8_epi16(_mm_loadu_si128((const __m128i *)(qs + 16))), 3);
    const __m256i hi0 = _mm256_and_si256(_mm256_mullo_epi16(_mm256_shuffle_epi8(h, hc0), hm), m);
    const __m256i hi1 = _mm256_and_si256(_mm256_mullo_epi16(_mm256_shuffle_epi8(h, hc1), hm), m);
    _mm256_storeu_si256((__m256i *)off, _mm256_or_si256(lo0, hi0));
    _mm256_storeu_si256((__m256i *)(off + 4), _mm256_or_si256(lo1, hi1));
}

/* shuffle control that fills the low 128-bit lane with int16 element j of the low lane
 * and the high lane with int16 element j of the high lane */
AI __m256i bcast16_ctl(int j) { return _mm256_set1_epi16((short)(((2 * j + 1) << 8) | (2 * j))); }

/* ------------------------------------------------------------------ IQ1_S */

/* Sub-block ib (32 elements, scale ls, delta sign sg): with u = g + 1 in {0, 1, 2},
 * ls * (8 * sum(g*q) + sg * sum(q)) = ls * (8 * sum(u*q) - (8 - sg) * sum(q)), and
 * sum(q) = bsums[2ib] + bsums[2ib+1]. */
static void vd_iq1_s(int64_t n, float *s, const void *vx, const void *vy) {
    const block_iq1_s *x = vx;
    const block_q8_K *y = vy;
    const __m256i one8 = _mm256_set1_epi8(1), two8 = _mm256_set1_epi8(2);
    /* grid index bits 8..10 of row l of sub-block ib: bits 3l..3l+2 of word qh[ib] */
    const __m256i hc0 = _mm256_setr_epi8(0, 1, 0, 1, 0, 1, 0, 1, 2, 3, 2, 3, 2, 3, 2, 3, 4, 5, 4, 5, 4, 5, 4, 5, 6, 7, 6, 7,
                                         6, 7, 6, 7);
    const __m256i hc1 = _mm256_add_epi8(hc0, _mm256_set1_epi8(8));
    const __m256i hm = _mm256_setr_epi16(1 << 11, 1 << 8, 1 << 5, 1 << 2, 1 << 11, 1 << 8, 1 << 5, 1 << 2, 1 << 11, 1 << 8,
                                         1 << 5, 1 << 2, 1 << 11, 1 << 8, 1 << 5, 1 << 2);
    float sum = 0.f;
    for (int64_t i = 0; i < n / QK_K; i++) {
        LOOM_PF0((const char *)(x + i) + LOOM_VD_PF);
        const __m128i qh = _mm_loadu_si128((const __m128i *)x[i].qh);
        /* ls = 2 * (qh >> 12 & 7) + 1 and k = 8 - sg (7, or 9 where bit 15 is set) */
        const __m128i ls = _mm_or_si128(_mm_and_si128(_mm_srli_epi16(qh, 11), _mm_set1_epi16(0xE)), _mm_set1_epi16(1));
        const __m128i kk = _mm_add_epi16(_mm_and_si128(_mm_srli_epi16(qh, 14), _mm_set1_epi16(2)), _mm_set1_epi16(7));
        const __m128i c8 = _mm_mullo_epi16(ls, kk);
        const __m256i coef = _mm256_set_m128i(_mm_unpackhi_epi16(c8, c8), _mm_unpacklo_epi16(c8, c8));
        const __m256i corr = _mm256_madd_epi16(load256(y[i].bsums), coef);
        const __m256i ls2 = _mm256_broadcastsi128_si256(ls);
        uint64_t off[8];
        grid_offsets(x[i].qs, _mm256_broadcastsi128_si256(qh), hc0, hc1, hm, off);
        const int8_t *a = y[i].qs;
        __m256i acc = _mm256_setzero_si256(), ctl = bcast16_ctl(0);
        for (int ib = 0; ib < 8; ib++, a += 32) {
            const __m256i p = _mm256_maddubs_epi16(_mm256_add_epi8(grid4(off[ib]), one8), load256(a));
            acc = _mm256_add_epi32(acc, _mm256_madd_epi16(p, _mm256_shuffle_epi8(ls2, ctl)));
            ctl = _mm256_add_epi8(ctl, two8);
        }
        const int32_t isum = hsum8_i32(_mm256_sub_epi32(_mm256_slli_epi32(acc, 3), corr));
        sum += (H2F(x[i].d) * y[i].d) * ((float)isum * 0.125f);
    }
    *s = sum;
}

/* ------------------------------------------------------------------ IQ1_M */

/* Group of 8 (grid row g, delta sign sg) in the half of 16 with scale ls:
 * 8 * sum(g*q) + sg * sum(q) = sum((8g + sg) * q) = sum(u*q) - 9 * sum(q) with
 * u = 8(g + 1) + 1 + sg in {0, 2, 8, 10, 16, 18}; sum over the 16 of ls * 9 * sum(q) comes
 * from the bsums. */
static void vd_iq1_m(int64_t n, float *s, const void *vx, const void *vy) {
    const block_iq1_m *x = vx;
    const block_q8_K *y = vy;
    const __m256i one8 = _mm256_set1_epi8(1), two8 = _mm256_set1_epi8(2);
    /* delta sign bits of the 4 groups of a sub-block in its 16 qh bits: 3, 7, 11, 15 */
    const __m256i dmask = _mm256_set_epi64x(0x8000800080008000LL, 0x0800080008000800LL, 0x0080008000800080LL,
                                            0x0008000800080008LL);
    /* scale of 16-group 2ib + hf: bits 6(ib % 2) + 3hf of scale word ib / 2; the 16
     * scales as int16, sub-block ib's first half in element ib of the low lane, its
     * second in element ib of the high lane */
    const __m256i wctl = _mm256_setr_epi8(0, 1, 0, 1, 2, 3, 2, 3, 4, 5, 4, 5, 6, 7, 6, 7, 0, 1, 0, 1, 2, 3, 2, 3, 4, 5, 4, 5,
                                          6, 7, 6, 7);
    const __m256i wmul = _mm256_setr_epi16(1 << 13, 1 << 7, 1 << 13, 1 << 7, 1 << 13, 1 << 7, 1 << 13, 1 << 7, 1 << 10,
                                           1 << 4, 1 << 10, 1 << 4, 1 << 10, 1 << 4, 1 << 10, 1 << 4);
    /* bsums into the same order: even 16-groups in the low lane, odd in the high one */
    const __m256i bctl = _mm256_setr_epi8(0, 1, 4, 5, 8, 9, 12, 13, 2, 3, 6, 7, 10, 11, 14, 15, 0, 1, 4, 5, 8, 9, 12, 13, 2,
                                          3, 6, 7, 10, 11, 14, 15);
    /* grid index bits 8..10 of row l of sub-block ib: low (l even) or high (l odd)
     * nibble of byte qh[2ib + l/2] */
    const __m256i hc0 = _mm256_setr_epi8(0, -1, 0, -1, 1, -1, 1, -1, 2, -1, 2, -1, 3, -1, 3, -1, 4, -1, 4, -1, 5, -1, 5, -1,
                                         6, -1, 6, -1, 7, -1, 7, -1);
    const __m256i hc1 = _mm256_setr_epi8(8, -1, 8, -1, 9, -1, 9, -1, 10, -1, 10, -1, 11, -1, 11, -1, 12, -1, 12, -1, 13,
                                         -1, 13, -1, 14, -1, 14, -1, 15, -1, 15, -1);
    const __m256i hm = _mm256_setr_epi16(1 << 11, 1 << 7, 1 << 11, 1 << 7, 1 << 11, 1 << 7, 1 << 11, 1 << 7, 1 << 11,
                                         1 << 7, 1 << 11, 1 << 7, 1 << 11, 1 << 7, 1 << 11, 1 << 7);
    float sum = 0.f;
    for (int64_t i = 0; i < n / QK_K; i++) {
        LOOM_PF0((const char *)(x + i) + LOOM_VD_PF);
        uint64_t sc;
        memcpy(&sc, x[i].scales, 8);
        const uint16_t dbits = (uint16_t)((sc >> 12 & 0x000F) | (sc >> 24 & 0x00F0) | (sc >> 36 & 0x0F00) |
                                          (sc >> 48 & 0xF000));
        const __m256i w = _mm256_shuffle_epi8(_mm256_set1_epi64x((long long)sc), wctl);
        const __m256i ls = _mm256_or_si256(_mm256_slli_epi16(_mm256_srli_epi16(_mm256_mullo_epi16(w, wmul), 13), 1),
                                           _mm256_set1_epi16(1));
        const __m256i bs = _mm256_permute4x64_epi64(_mm256_shuffle_epi8(load256(y[i].bsums), bctl), 0xD8);
        const __m256i corr = _mm256_madd_epi16(bs, ls);
        const __m256i qh = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)x[i].qh));
        uint64_t off[8];
        grid_offsets(x[i].qs, qh, hc0, hc1, hm, off);
        const int8_t *a = y[i].qs;
        __m256i acc = _mm256_setzero_si256(), ctl = bcast16_ctl(0);
        for (int ib = 0; ib < 8; ib++, a += 32) {
            /* 2 in the bytes of the groups whose delta bit is clear (delta +1/8) */
            const __m256i dpos = _mm256_and_si256(
                _mm256_cmpeq_epi16(_mm256_and_si256(_mm256_shuffle_epi8(qh, ctl), dmask), _mm256_setzero_si256()), two8);
            const __m256i u = _mm256_or_si256(_mm256_slli_epi16(_mm256_add_epi8(grid4(off[ib]), one8), 3), dpos);
            const __m256i p = _mm256_maddubs_epi16(u, load256(a));
            acc = _mm256_add_epi32(acc, _mm256_madd_epi16(p, _mm256_shuffle_epi8(ls, ctl)));
            ctl = _mm256_add_epi8(ctl, two8);
        }
        const int32_t isum = hsum8_i32(_mm256_sub_epi32(acc, _mm256_add_epi32(_mm256_slli_epi32(corr, 3), corr)));
        sum += (H2F(dbits) * y[i].d) * ((float)isum * 0.125f);
    }
    *s = sum;
}

/* ------------------------------------------------------------------ TQ1_0, TQ2_0 */

/* Trit n of byte b is (3 * (b * 3^n mod 256)) >> 8. In 16-bit lanes, with the byte moved
 * to the high half (low half zero), mullo by 3^n leaves b * 3^n mod 256 in the high half
 * and mulhi_epu16 by 3 gives the trit. lo = x << 8 and hi = x & 0xFF00 are the two
 * bytes of each lane so prepared; c holds 3^n per 16-bit lane. */
AI __m256i trits(__m256i lo, __m256i hi, __m256i c) {
    const __m256i three = _mm256_set1_epi16(3);
    const __m256i tl = _mm256_mulhi_epu16(_mm256_mullo_epi16(lo, c), three);
    const __m256i th = _mm256_mulhi_epu16(_mm256_mullo_epi16(hi, c), three);
    return _mm256_or_si256(tl, _mm256_slli_epi16(th, 8));
}

/* Codes t in {0, 1, 2} (TQ2_0: also 3) stand for t - 1: the block's integer is
 * sum(t*q) - sum(bsums). */
static void vd_tq1_0(int64_t n, float *s, const void *vx, const void *vy) {
    const block_tq1_0 *x = vx;
    const block_q8_K *y = vy;
    const __m256i ff00 = _mm256_set1_epi16((short)0xFF00);
    const __m256i p1 = _mm256_set1_epi16(1), p3 = _mm256_set1_epi16(3), p9 = _mm256_set1_epi16(9);
    const __m256i p27 = _mm256_set1_epi16(27), p81 = _mm256_set1_epi16(81);
    const __m256i p1_3 = _mm256_setr_epi16(1, 1, 1, 1, 1, 1, 1, 1, 3, 3, 3, 3, 3, 3, 3, 3);
    const __m256i p9_27 = _mm256_setr_epi16(9, 9, 9, 9, 9, 9, 9, 9, 27, 27, 27, 27, 27, 27, 27, 27);
    /* qs[32..47] by 81 (elements 224..239), then qh (4 bytes, repeated) by 1, 3, 9, 27
     * (elements 240..255: byte m, trit n is element 240 + 4n + m) */
    const __m256i p81_q = _mm256_setr_epi16(81, 81, 81, 81, 81, 81, 81, 81, 1, 1, 3, 3, 9, 9, 27, 27);
    float sum = 0.f;
    for (int64_t i = 0; i < n / QK_K; i++) {
        LOOM_PF0((const char *)(x + i) + LOOM_VD_PF);
        const int8_t *a = y[i].qs;
        /* bytes m of qs[0..31]: trit n is element 32n + m */
        const __m256i x0 = load256(x[i].qs);
        const __m256i l0 = _mm256_slli_epi16(x0, 8), h0 = _mm256_and_si256(x0, ff00);
        __m256i p = _mm256_maddubs_epi16(trits(l0, h0, p1), load256(a));
        p = _mm256_add_epi16(p, _mm256_maddubs_epi16(trits(l0, h0, p3), load256(a + 32)));
        p = _mm256_add_epi16(p, _mm256_maddubs_epi16(trits(l0, h0, p9), load256(a + 64)));
        p = _mm256_add_epi16(p, _mm256_maddubs_epi16(trits(l0, h0, p27), load256(a + 96)));
        p = _mm256_add_epi16(p, _mm256_maddubs_epi16(trits(l0, h0, p81), load256(a + 128)));
        /* bytes m of qs[32..47] in both lanes: trit n is element 160 + 16n + m */
        const __m256i x1 = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)(x[i].qs + 32)));
        const __m256i l1 = _mm256_slli_epi16(x1, 8), h1 = _mm256_and_si256(x1, ff00);
        p = _mm256_add_epi16(p, _mm256_maddubs_epi16(trits(l1, h1, p1_3), load256(a + 160)));
        p = _mm256_add_epi16(p, _mm256_maddubs_epi16(trits(l1, h1, p9_27), load256(a + 192)));
        uint32_t qh;
        memcpy(&qh, x[i].qh, 4);
        const __m256i x2 = _mm256_inserti128_si256(x1, _mm_set1_epi32((int)qh), 1);
        const __m256i l2 = _mm256_slli_epi16(x2, 8), h2 = _mm256_and_si256(x2, ff00);
        p = _mm256_add_epi16(p, _mm256_maddubs_epi16(trits(l2, h2, p81_q), load256(a + 224)));
        /* int16 p: 8 terms of |pair| <= 2 * 2 * 128 */
        const __m256i t = _mm256_sub_epi32(_mm256_madd_epi16(p, _mm256_set1_epi16(1)), bsums_i32(&y[i]));
        sum += (H2F(x[i].d) * y[i].d) * (float)hsum8_i32(t);
    }
    *s = sum;
}

static void vd_tq2_0(int64_t n, float *s, const void *vx, const void *vy) {
    const block_tq2_0 *x = vx;
    const block_q8_K *y = vy;
    const __m256i m3 = _mm256_set1_epi8(3);
    float sum = 0.f;
    for (int64_t i = 0; i < n / QK_K; i++) {
        LOOM_PF0((const char *)(x + i) + LOOM_VD_PF);
        const int8_t *a = y[i].qs;
        /* byte m of qs[32h..], bits 2l..2l+1: element 128h + 32l + m */
        const __m256i q0 = load256(x[i].qs), q1 = load256(x[i].qs + 32);
        __m256i p = _mm256_maddubs_epi16(_mm256_and_si256(q0, m3), load256(a));
        p = _mm256_add_epi16(p, _mm256_maddubs_epi16(_mm256_and_si256(_mm256_srli_epi16(q0, 2), m3), load256(a + 32)));
        p = _mm256_add_epi16(p, _mm256_maddubs_epi16(_mm256_and_si256(_mm256_srli_epi16(q0, 4), m3), load256(a + 64)));
        p = _mm256_add_epi16(p, _mm256_maddubs_epi16(_mm256_and_si256(_mm256_srli_epi16(q0, 6), m3), load256(a + 96)));
        p = _mm256_add_epi16(p, _mm256_maddubs_epi16(_mm256_and_si256(q1, m3), load256(a + 128)));
        p = _mm256_add_epi16(p, _mm256_maddubs_epi16(_mm256_and_si256(_mm256_srli_epi16(q1, 2), m3), load256(a + 160)));
        p = _mm256_add_epi16(p, _mm256_maddubs_epi16(_mm256_and_si256(_mm256_srli_epi16(q1, 4), m3), load256(a + 192)));
        p = _mm256_add_epi16(p, _mm256_maddubs_epi16(_mm256_and_si256(_mm256_srli_epi16(q1, 6), m3), load256(a + 224)));
        /* int16 p: 8 terms of |pair| <= 2 * 3 * 128 */
        const __m256i t = _mm256_sub_epi32(_mm256_madd_epi16(p, _mm256_set1_epi16(1)), bsums_i32(&y[i]));
        sum += (H2F(x[i].d) * y[i].d) * (float)hsum8_i32(t);
    }
    *s = sum;
}
#undef AI

void loom_kernels_fill_iq1tq_avx2(loom_kernels *k) {
    k->dot[LOOM_TYPE_IQ1_S].vec_dot = vd_iq1_s;
    k->dot[LOOM_TYPE_IQ1_M].vec_dot = vd_iq1_m;
    k->dot[LOOM_TYPE_TQ1_0].vec_dot = vd_tq1_0;
    k->dot[LOOM_TYPE_TQ2_0].vec_dot = vd_tq2_0;
}
