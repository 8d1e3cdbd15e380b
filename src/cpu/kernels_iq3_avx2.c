/* AVX2 kernels for IQ3_XXS and IQ3_S against Q8_K activations (references:
 * loom_vd_iq3_xxs_ref / loom_vd_iq3_s_ref in kernels_iq_scalar.c).
 *
 * Per 32-value sub-block: the 8 grid entries (4 unsigned values <= 62 each) come with
 * one 8-lane gather (measured on this machine against 8 scalar loads + inserts: ~16 vs
 * ~11-15 GFLOP/s, noisy); the 32 sign bits become a byte mask by a byte shuffle of the
 * broadcast sign word and a bit test. The sign words (IQ3_S: stored; IQ3_XXS: 4 x 7
 * stored bits spread to bytes, bit 7 of each the even-parity sign from a nibble parity
 * shuffle) and the integer scales are made once per block, 8 sub-blocks at a time. The
 * sign goes on the grid value (signed, |g| <= 62), and the dot with the activations is
 * maddubs(|a|, sign(g, a)): exact for every activation byte, -128 included (|a| = 128
 * as an unsigned byte; pair sums <= 2 * 62 * 128, no int16 saturation). One madd with
 * the sub-block's integer scale (2 ls + 1 <= 31) widens to int32 (<= 2^20 per lane);
 * exact int32 per block, one float FMA per block. The avx512 / avxvnni levels inherit
 * these (their tables start from the avx2 one). */
#include "cpu/kernels_internal.h"
#include "quant/iq_tables.h"

#include <immintrin.h>
#include <string.h>

#define H2F(h) _cvtsh_ss(h)

static inline float hsum8(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

/* byte k of the result: 0xFF where bit k % 8 of byte k / 8 of s4 is set */
static inline __m256i sign_mask(uint32_t s4) {
    const __m256i spread = _mm256_set_epi64x(0x0303030303030303, 0x0202020202020202, 0x0101010101010101, 0);
    const __m256i bits = _mm256_set1_epi64x((long long)0x8040201008040201ull);
    const __m256i v = _mm256_shuffle_epi8(_mm256_set1_epi32((int)s4), spread);
    return _mm256_cmpeq_epi8(_mm256_and_si256(v, bits), bits);
}

/* IQ3_XXS, the 8 sign/scale words of a block at once: word ib (bits 7l .. 7l+6: the
 * stored signs of values 8l .. 8l+6; bits 28..31: the sub-block scale ls) -> the 4
 * sign bytes of sub-block ib (bit 7 of each: the even-parity sign, from a nibble
 * parity table) in s4[ib], and 2 ls + 1 in both 16-bit halves of sc[ib]. */
static inline void xxs_block_words(const uint8_t *ss, uint32_t s4[8], uint32_t sc[8]) {
    const __m256i w = _mm256_loadu_si256((const __m256i *)ss);
    const __m256i b7 = _mm256_set1_epi32(0x7F);
    __m256i p = _mm256_and_si256(w, b7);
    p = _mm256_or_si256(p, _mm256_and_si256(_mm256_slli_epi32(w, 1), _mm256_slli_epi32(b7, 8)));
    p = _mm256_or_si256(p, _mm256_and_si256(_mm256_slli_epi32(w, 2), _mm256_slli_epi32(b7, 16)));
    p = _mm256_or_si256(p, _mm256_and_si256(_mm256_slli_epi32(w, 3), _mm256_slli_epi32(b7, 24)));
    const __m256i par = _mm256_setr_epi8(0, -128, -128, 0, -128, 0, 0, -128, -128, 0, 0, -128, 0, -128, -128, 0,
                                         0, -128, -128, 0, -128, 0, 0, -128, -128, 0, 0, -128, 0, -128, -128, 0);
    const __m256i lo = _mm256_set1_epi8(0x0F);
    const __m256i odd = _mm256_xor_si256(_mm256_shuffle_epi8(par, _mm256_and_si256(p, lo)),
                                         _mm256_shuffle_epi8(par, _mm256_and_si256(_mm256_srli_epi16(p, 4), lo)));
    _mm256_storeu_si256((__m256i *)s4, _mm256_or_si256(p, odd));
    const __m256i ls = _mm256_add_epi32(_mm256_slli_epi32(_mm256_srli_epi32(w, 28), 1), _mm256_set1_epi32(1));
    _mm256_storeu_si256((__m256i *)sc, _mm256_or_si256(ls, _mm256_slli_epi32(ls, 16)));
}

/* 32 grid values g (unsigned bytes), their minus-sign mask m, activations a, integer
 * sub-block scale ls in both halves of ls2: 8 int32 lanes summing to ls * sum(+-g * a) */
static inline __m256i sub_dot(__m256i g, __m256i m, __m256i a, uint32_t ls2) {
    const __m256i gs = _mm256_sub_epi8(_mm256_xor_si256(g, m), m);
    const __m256i p = _mm256_maddubs_epi16(_mm256_sign_epi8(a, a), _mm256_sign_epi8(gs, a));
    return _mm256_madd_epi16(p, _mm256_set1_epi32((int)ls2));
}

/* 8 bytes -> 8 int32 lanes (grid indices) */
static inline __m256i bytes8(const uint8_t *q) { return _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)q)); }

static void vd_iq3_xxs(int64_t n, float *s, const void *vx, const void *vy) {
    const block_iq3_xxs *x = vx;
    const block_q8_K *y = vy;
    __m256 acc = _mm256_setzero_ps();
    for (int64_t i = 0; i < n / QK_K; i++) {
        LOOM_PF0((const char *)(x + i) + LOOM_VD_PF);
        const uint8_t *q = x[i].qs, *ss = x[i].qs + 64;
        const int8_t *a = y[i].qs;
        uint32_t s4[8], sc[8];
        xxs_block_words(ss, s4, sc);
        __m256i isum = _mm256_setzero_si256();
        for (int ib = 0; ib < 8; ib++) {
            const __m256i g = _mm256_i32gather_epi32((const int *)loom_iq3xxs_grid, bytes8(q), 4);
            const __m256i av = _mm256_loadu_si256((const __m256i *)(a + 32 * ib));
            isum = _mm256_add_epi32(isum, sub_dot(g, sign_mask(s4[ib]), av, sc[ib]));
            q += 8;
        }
        const __m256 d = _mm256_set1_ps(H2F(x[i].d) * y[i].d * 0.25f);
        acc = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(isum), acc);
    }
    *s = hsum8(acc);
}

static void vd_iq3_s(int64_t n, float *s, const void *vx, const void *vy) {
    const block_iq3_s *x = vx;
    const block_q8_K *y = vy;
    __m256 acc = _mm256_setzero_ps();
    for (int64_t i = 0; i < n / QK_K; i++) {
        LOOM_PF0((const char *)(x + i) + LOOM_VD_PF);
        const uint8_t *q = x[i].qs;
        const int8_t *a = y[i].qs;
        /* 2 sc + 1 of sub-block ib (nibble ib of the scale bytes) in both halves of sc[ib] */
        uint32_t sc[8], s4, h;
        memcpy(&s4, x[i].scales, 4);
        const __m256i sh = _mm256_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28);
        const __m256i nib = _mm256_and_si256(_mm256_srlv_epi32(_mm256_set1_epi32((int)s4), sh), _mm256_set1_epi32(0xF));
        const __m256i ls = _mm256_add_epi32(_mm256_slli_epi32(nib, 1), _mm256_set1_epi32(1));
        _mm256_storeu_si256((__m256i *)sc, _mm256_or_si256(ls, _mm256_slli_epi32(ls, 16)));
        __m256i isum = _mm256_setzero_si256();
        for (int ib = 0; ib < 8; ib++) {
            memcpy(&s4, x[i].signs + 4 * ib, 4);
            memcpy(&h, x[i].qh + ib, 4); /* qh[ib] in the low byte (the rest: masked off) */
            /* grid index j: qs byte j, bit 8 from bit j of qh[ib] (shifted up by 8 - j) */
            const __m256i hi = _mm256_sllv_epi32(_mm256_set1_epi32((int)h), _mm256_set_epi32(1, 2, 3, 4, 5, 6, 7, 8));
            const __m256i idx = _mm256_or_si256(bytes8(q), _mm256_and_si256(hi, _mm256_set1_epi32(256)));
            const __m256i g = _mm256_i32gather_epi32((const int *)loom_iq3s_grid, idx, 4);
            const __m256i av = _mm256_loadu_si256((const __m256i *)(a + 32 * ib));
            isum = _mm256_add_epi32(isum, sub_dot(g, sign_mask(s4), av, sc[ib]));
            q += 8;
        }
        const __m256 d = _mm256_set1_ps(H2F(x[i].d) * y[i].d);
        acc = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(isum), acc);
    }
    *s = hsum8(acc);
}

void loom_kernels_fill_iq3_avx2(loom_kernels *k) {
    k->dot[LOOM_TYPE_IQ3_XXS].vec_dot = vd_iq3_xxs;
    k->dot[LOOM_TYPE_IQ3_S].vec_dot = vd_iq3_s;
}
