/* AVX2 kernels for IQ3_XXS and IQ3_S against Q8_K activations (references:
 * loom_vd_iq3_xxs_ref / loom_vd_iq3_s_ref in kernels_iq_scalar.c).
 *
 * Per 32-value sub-block: the 8 grid entries (4 unsigned values <= 62 each) are loaded
 * one 32-bit word apiece into a vector; the 32 sign bits (IQ3_S: 4 stored bytes;
 * IQ3_XXS: 4 x 7 stored bits, the 8th of each byte the even-parity bit, through a
 * 128-entry byte table) become a byte mask by a byte broadcast and a bit test. The
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

/* 7 stored sign bits -> the sign byte of 8 values (bit 7: even count of minus signs) */
static const uint8_t k_signs7[128] = {
    0x00, 0x81, 0x82, 0x03, 0x84, 0x05, 0x06, 0x87, 0x88, 0x09, 0x0a, 0x8b, 0x0c, 0x8d, 0x8e, 0x0f,
    0x90, 0x11, 0x12, 0x93, 0x14, 0x95, 0x96, 0x17, 0x18, 0x99, 0x9a, 0x1b, 0x9c, 0x1d, 0x1e, 0x9f,
    0xa0, 0x21, 0x22, 0xa3, 0x24, 0xa5, 0xa6, 0x27, 0x28, 0xa9, 0xaa, 0x2b, 0xac, 0x2d, 0x2e, 0xaf,
    0x30, 0xb1, 0xb2, 0x33, 0xb4, 0x35, 0x36, 0xb7, 0xb8, 0x39, 0x3a, 0xbb, 0x3c, 0xbd, 0xbe, 0x3f,
    0xc0, 0x41, 0x42, 0xc3, 0x44, 0xc5, 0xc6, 0x47, 0x48, 0xc9, 0xca, 0x4b, 0xcc, 0x4d, 0x4e, 0xcf,
    0x50, 0xd1, 0xd2, 0x53, 0xd4, 0x55, 0x56, 0xd7, 0xd8, 0x59, 0x5a, 0xdb, 0x5c, 0xdd, 0xde, 0x5f,
    0x60, 0xe1, 0xe2, 0x63, 0xe4, 0x65, 0x66, 0xe7, 0xe8, 0x69, 0x6a, 0xeb, 0x6c, 0xed, 0xee, 0x6f,
    0xf0, 0x71, 0x72, 0xf3, 0x74, 0xf5, 0xf6, 0x77, 0x78, 0xf9, 0xfa, 0x7b, 0xfc, 0x7d, 0x7e, 0xff,
};

/* byte k of the result: 0xFF where bit k % 8 of byte k / 8 of s4 is set */
static inline __m256i sign_mask(uint32_t s4) {
    const __m256i spread = _mm256_set_epi64x(0x0303030303030303, 0x0202020202020202, 0x0101010101010101, 0);
    const __m256i bits = _mm256_set1_epi64x((long long)0x8040201008040201ull);
    const __m256i v = _mm256_shuffle_epi8(_mm256_set1_epi32((int)s4), spread);
    return _mm256_cmpeq_epi8(_mm256_and_si256(v, bits), bits);
}

/* 32 grid values g (unsigned bytes), their minus-sign mask m, activations a, integer
 * sub-block scale ls: 8 int32 lanes summing to ls * sum(+-g * a) */
static inline __m256i sub_dot(__m256i g, __m256i m, __m256i a, int ls) {
    const __m256i gs = _mm256_sub_epi8(_mm256_xor_si256(g, m), m);
    const __m256i p = _mm256_maddubs_epi16(_mm256_sign_epi8(a, a), _mm256_sign_epi8(gs, a));
    return _mm256_madd_epi16(p, _mm256_set1_epi16((short)ls));
}

static void vd_iq3_xxs(int64_t n, float *s, const void *vx, const void *vy) {
    const block_iq3_xxs *x = vx;
    const block_q8_K *y = vy;
    __m256 acc = _mm256_setzero_ps();
    for (int64_t i = 0; i < n / QK_K; i++) {
        const uint8_t *q = x[i].qs, *ss = x[i].qs + 64;
        const int8_t *a = y[i].qs;
        __m256i isum = _mm256_setzero_si256();
        for (int ib = 0; ib < 8; ib++) {
            uint32_t w;
            memcpy(&w, ss + 4 * ib, 4);
            const uint32_t s4 = (uint32_t)k_signs7[w & 127] | (uint32_t)k_signs7[(w >> 7) & 127] << 8 |
                                (uint32_t)k_signs7[(w >> 14) & 127] << 16 | (uint32_t)k_signs7[(w >> 21) & 127] << 24;
            const __m256i g = _mm256_set_epi32(
                (int)loom_iq3xxs_grid[q[7]], (int)loom_iq3xxs_grid[q[6]], (int)loom_iq3xxs_grid[q[5]],
                (int)loom_iq3xxs_grid[q[4]], (int)loom_iq3xxs_grid[q[3]], (int)loom_iq3xxs_grid[q[2]],
                (int)loom_iq3xxs_grid[q[1]], (int)loom_iq3xxs_grid[q[0]]);
            const __m256i av = _mm256_loadu_si256((const __m256i *)(a + 32 * ib));
            isum = _mm256_add_epi32(isum, sub_dot(g, sign_mask(s4), av, (int)(2 * (w >> 28) + 1)));
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
        const uint8_t *q = x[i].qs;
        const int8_t *a = y[i].qs;
        __m256i isum = _mm256_setzero_si256();
        for (int ib = 0; ib < 8; ib++) {
            const uint32_t h = x[i].qh[ib];
            uint32_t s4;
            memcpy(&s4, x[i].signs + 4 * ib, 4);
#define G(j) (int)loom_iq3s_grid[q[j] | ((h << (8 - (j))) & 256)]
            const __m256i g = _mm256_set_epi32(G(7), G(6), G(5), G(4), G(3), G(2), G(1), G(0));
#undef G
            const __m256i av = _mm256_loadu_si256((const __m256i *)(a + 32 * ib));
            const int sc = (x[i].scales[ib / 2] >> (4 * (ib & 1))) & 0xF;
            isum = _mm256_add_epi32(isum, sub_dot(g, sign_mask(s4), av, 2 * sc + 1));
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
