/* AVX2 prompt-shape gemm for the grid and ternary IQ / TQ types (IQ2_XXS, IQ2_XS, IQ2_S,
 * IQ3_XXS, IQ3_S, IQ1_S, IQ1_M, TQ1_0, TQ2_0) times Q8_K activations (kernels.h gemm
 * contract), and the super-block preparation it shares with the avx512vnni tile
 * (kernels_iq_gemm_avx512vnni.c; loom_iqg_prep in kernels_internal.h).
 *
 * Their vec_dots (kernels_iq{1tq,2,3}_avx2.c) rebuild each weight from grid tables, sign
 * bits and scale fields for every (row, column) pair, so a prompt pays that decoding
 * once per column. Here each super-block of a weight row is decoded once per call and
 * column chunk into plain int8 values (sign applied: grid * sign, 8g +- 1 for IQ1,
 * t - 1 for TQ; all within [-62, 62]) and one integer scale per 16 values.
 *
 * The dot takes IQG_R rows x 2 columns per pass. The activation bytes a (in [-127, 127],
 * all Q8_K from_float writes) are offset once per column to the unsigned a + 128
 * (a ^ 0x80), the unsigned operand of vpmaddubsw for every row: pair sums
 * <= 2 * 255 * 62 < 2^15, exact; vpmaddwd with the scale pair. That adds 128 * (the
 * scaled weight sums of the lane) to each int32 lane, a property of the weight row alone
 * (loom_iqg_prep.ncorr, the same vpmaddubsw / vpmaddwd on 0x80 bytes), which starts the
 * lane's sum. Every int32 lane ends up with exactly the sum the previous sign-trick tile
 * had (lane l: bytes 4l..4l+3 of each 32-byte step), so the float result is unchanged:
 * one float FMA per super-block and lane, (d * dy) * lane sum, then the 8-lane sum times
 * the type's power-of-two factor. The int32 super-block sum is the one of the scalar
 * reference (kernels_iq_scalar.c). TQ1_0 / TQ2_0 (every scale 1, |w| <= 1) add the
 * vpmaddubsw pair sums of the 8 steps in int16 (<= 8 * 2 * 255) and widen them once
 * (vpmaddwd by 1): the same lane integers.
 *
 * Q3_K takes the same tiles (dec_q3_K: values q - 4 in [-4, 3], its 16 signed 6-bit
 * scales): loom_iqg_type lists it, so every level's IQ tile serves its prompts too.
 *
 * kernels_iq_gemm_avxvnni.c includes this file with LOOM_IQG_AVXVNNI (vpdpwssd / vpdpbusd
 * in dp_scaled / dp_unit; the preparation stays in this object).
 *
 * Declines (returns false) for other types and for fewer than IQG_MIN_COLS columns,
 * where the decoding is not amortized (the caller then uses vec_dot). */
#include "cpu/kernels_internal.h"
#include "quant/iq_tables.h"

#include <immintrin.h>
#include <string.h>

#include "cpu/kernels_x86_q3k.h"

#define IQG_MIN_COLS 4
#define IQG_CHUNK 64 /* columns whose float accumulators are live at once */
#define IQG_R 4      /* weight rows per pass */

#ifndef LOOM_IQG_AVXVNNI /* the preparation: once, in the AVX2 object */
/* 7 stored sign bits -> 8 (bit 7: even parity), built at compile time */
#define SG_P(x) (((x) ^ ((x) >> 1) ^ ((x) >> 2) ^ ((x) >> 3) ^ ((x) >> 4) ^ ((x) >> 5) ^ ((x) >> 6)) & 1)
#define SG(x) (uint8_t)((x) | (SG_P(x) << 7))
#define SG4(x) SG(x), SG((x) + 1), SG((x) + 2), SG((x) + 3)
#define SG16(x) SG4(x), SG4((x) + 4), SG4((x) + 8), SG4((x) + 12)
static const uint8_t k_signs8[128] = {SG16(0),  SG16(16), SG16(32), SG16(48),
                                      SG16(64), SG16(80), SG16(96), SG16(112)};
#undef SG16
#undef SG4
#undef SG
#undef SG_P

/* four 8-bit sign masks from four 7-bit fields of w (7 bits apart, from bit 0) */
static inline uint32_t signs4x7(uint32_t w) {
    return (uint32_t)k_signs8[w & 127] | (uint32_t)k_signs8[(w >> 7) & 127] << 8 |
           (uint32_t)k_signs8[(w >> 14) & 127] << 16 | (uint32_t)k_signs8[(w >> 21) & 127] << 24;
}

/* 32 unsigned grid bytes g with the sign bits s (byte l: values 8l..8l+7; bit j set:
 * value negative) applied: (g ^ m) - m with m = 0xFF bytes where negative */
static inline __m256i apply_signs(__m256i g, uint32_t s) {
    const __m256i sel = _mm256_set_epi64x(0x0303030303030303ll, 0x0202020202020202ll, 0x0101010101010101ll, 0);
    const __m256i bits = _mm256_set1_epi64x((long long)0x8040201008040201ull);
    const __m256i m = _mm256_cmpeq_epi8(_mm256_and_si256(_mm256_shuffle_epi8(_mm256_set1_epi32((int)s), sel), bits), bits);
    return _mm256_sub_epi8(_mm256_xor_si256(g, m), m);
}

static inline __m256i grid4x64(const uint64_t *t, unsigned i0, unsigned i1, unsigned i2, unsigned i3) {
    return _mm256_set_epi64x((long long)t[i3], (long long)t[i2], (long long)t[i1], (long long)t[i0]);
}

static inline __m256i grid8x32(const uint32_t *t, const unsigned *i) {
    return _mm256_set_epi32((int)t[i[7]], (int)t[i[6]], (int)t[i[5]], (int)t[i[4]], (int)t[i[3]], (int)t[i[2]],
                            (int)t[i[1]], (int)t[i[0]]);
}

static inline void st32(loom_iqg_prep *o, int ib, __m256i v) { _mm256_store_si256((__m256i *)(o->w + 32 * ib), v); }

/* scale-pair vectors, the offset correction and the block scale (w, sc set) */
static inline void finish(loom_iqg_prep *o, const int16_t *sc, uint16_t d) {
    const __m256i off = _mm256_set1_epi8((char)0x80);
    __m256i corr = _mm256_setzero_si256();
    for (int q = 0; q < 8; q++) {
        const __m256i s = _mm256_set_m128i(_mm_set1_epi16(sc[2 * q + 1]), _mm_set1_epi16(sc[2 * q]));
        _mm256_store_si256((__m256i *)(o->scv + 16 * q), s);
        const __m256i wv = _mm256_load_si256((const __m256i *)(o->w + 32 * q));
        corr = _mm256_add_epi32(corr, _mm256_madd_epi16(_mm256_maddubs_epi16(off, wv), s));
    }
    _mm256_store_si256((__m256i *)o->ncorr, _mm256_sub_epi32(_mm256_setzero_si256(), corr));
    o->dw = _cvtsh_ss(d);
}

static void dec_iq2_xxs(const void *p, loom_iqg_prep *o) {
    const block_iq2_xxs *x = p;
    const uint8_t *qs = (const uint8_t *)x->qs;
    int16_t sc[16];
    for (int ib = 0; ib < 8; ib++) {
        uint32_t a0, a1;
        memcpy(&a0, qs + 8 * ib, 4);
        memcpy(&a1, qs + 8 * ib + 4, 4);
        const __m256i g = grid4x64(loom_iq2xxs_grid, a0 & 255, (a0 >> 8) & 255, (a0 >> 16) & 255, a0 >> 24);
        st32(o, ib, apply_signs(g, signs4x7(a1)));
        sc[2 * ib] = sc[2 * ib + 1] = (int16_t)(2 * (a1 >> 28) + 1);
    }
    finish(o, sc, x->d);
}

static void dec_iq2_xs(const void *p, loom_iqg_prep *o) {
    const block_iq2_xs *x = p;
    int16_t sc[16];
    for (int ib = 0; ib < 8; ib++) {
        const uint16_t *q = x->qs + 4 * ib;
        const __m256i g = grid4x64(loom_iq2xs_grid, q[0] & 511, q[1] & 511, q[2] & 511, q[3] & 511);
        const uint32_t s = (uint32_t)k_signs8[q[0] >> 9] | (uint32_t)k_signs8[q[1] >> 9] << 8 |
                           (uint32_t)k_signs8[q[2] >> 9] << 16 | (uint32_t)k_signs8[q[3] >> 9] << 24;
        st32(o, ib, apply_signs(g, s));
    }
    for (int s = 0; s < 16; s++) sc[s] = (int16_t)(2 * ((x->scales[s / 2] >> (4 * (s % 2))) & 0xF) + 1);
    finish(o, sc, x->d);
}

static void dec_iq2_s(const void *p, loom_iqg_prep *o) {
    const block_iq2_s *x = p;
    int16_t sc[16];
    for (int ib = 0; ib < 8; ib++) {
        const uint8_t *q = x->qs + 4 * ib;
        const unsigned h = x->qh[ib];
        const __m256i g = grid4x64(loom_iq2s_grid, q[0] | ((h << 8) & 0x300), q[1] | ((h << 6) & 0x300),
                                   q[2] | ((h << 4) & 0x300), q[3] | ((h << 2) & 0x300));
        uint32_t s;
        memcpy(&s, x->qs + 32 + 4 * ib, 4);
        st32(o, ib, apply_signs(g, s));
    }
    for (int s = 0; s < 16; s++) sc[s] = (int16_t)(2 * ((x->scales[s / 2] >> (4 * (s % 2))) & 0xF) + 1);
    finish(o, sc, x->d);
}

static void dec_iq3_xxs(const void *p, loom_iqg_prep *o) {
    const block_iq3_xxs *x = p;
    int16_t sc[16];
    for (int ib = 0; ib < 8; ib++) {
        uint32_t w;
        memcpy(&w, x->qs + 64 + 4 * ib, 4);
        const uint8_t *q = x->qs + 8 * ib;
        const unsigned idx[8] = {q[0], q[1], q[2], q[3], q[4], q[5], q[6], q[7]};
        st32(o, ib, apply_signs(grid8x32(loom_iq3xxs_grid, idx), signs4x7(w)));
        sc[2 * ib] = sc[2 * ib + 1] = (int16_t)(2 * (w >> 28) + 1);
    }
    finish(o, sc, x->d);
}

static void dec_iq3_s(const void *p, loom_iqg_prep *o) {
    const block_iq3_s *x = p;
    int16_t sc[16];
    for (int ib = 0; ib < 8; ib++) {
        const unsigned qh = x->qh[ib];
        const uint8_t *q = x->qs + 8 * ib;
        unsigned idx[8];
        for (int l = 0; l < 8; l++) idx[l] = q[l] | (((qh >> l) & 1) << 8);
        uint32_t s;
        memcpy(&s, x->signs + 4 * ib, 4);
        st32(o, ib, apply_signs(grid8x32(loom_iq3s_grid, idx), s));
        sc[2 * ib] = sc[2 * ib + 1] = (int16_t)(2 * ((x->scales[ib / 2] >> (4 * (ib & 1))) & 0xF) + 1);
    }
    finish(o, sc, x->d);
}

/* IQ1: 8 * g + delta from 32 signed grid bytes g in {-1, 0, 1} (as 4 grid words) and
 * delta bytes (-1 / +1): 16-bit shifts by 3, the bits moved into the next byte masked */
static inline __m256i iq1_vals(__m256i g, __m256i delta) {
    return _mm256_add_epi8(_mm256_and_si256(_mm256_slli_epi16(g, 3), _mm256_set1_epi8((char)0xF8)), delta);
}

static void dec_iq1_s(const void *p, loom_iqg_prep *o) {
    const block_iq1_s *x = p;
    int16_t sc[16];
    for (int ib = 0; ib < 8; ib++) {
        const unsigned qh = x->qh[ib];
        const uint8_t *q = x->qs + 4 * ib;
        const __m256i g = grid4x64(loom_iq1s_grid, q[0] | ((qh << 8) & 0x700), q[1] | ((qh << 5) & 0x700),
                                   q[2] | ((qh << 2) & 0x700), q[3] | ((qh >> 1) & 0x700));
        st32(o, ib, iq1_vals(g, _mm256_set1_epi8(qh & 0x8000 ? -1 : 1)));
        sc[2 * ib] = sc[2 * ib + 1] = (int16_t)(2 * ((qh >> 12) & 7) + 1);
    }
    finish(o, sc, x->d);
}

static void dec_iq1_m(const void *p, loom_iqg_prep *o) {
    const block_iq1_m *x = p;
    uint16_t s4[4];
    memcpy(s4, x->scales, 8);
    int16_t sc[16];
    for (int ib = 0; ib < 8; ib++) {
        const unsigned h0 = x->qh[2 * ib], h1 = x->qh[2 * ib + 1];
        const uint8_t *q = x->qs + 4 * ib;
        const __m256i g = grid4x64(loom_iq1s_grid, q[0] | ((h0 << 8) & 0x700), q[1] | ((h0 << 4) & 0x700),
                                   q[2] | ((h1 << 8) & 0x700), q[3] | ((h1 << 4) & 0x700));
        const long long m = 0x0101010101010101ll, n = -1ll;
        const __m256i delta = _mm256_set_epi64x(h1 & 0x80 ? n : m, h1 & 0x08 ? n : m, h0 & 0x80 ? n : m,
                                                h0 & 0x08 ? n : m);
        st32(o, ib, iq1_vals(g, delta));
        for (int hh = 0; hh < 2; hh++) /* 3-bit scale per 16 values */
            sc[2 * ib + hh] = (int16_t)(2 * ((s4[ib / 2] >> (6 * (ib % 2) + 3 * hh)) & 7) + 1);
    }
    finish(o, sc,
           (uint16_t)((s4[0] >> 12) | ((s4[1] >> 8) & 0x00F0) | ((s4[2] >> 4) & 0x0F00) | (s4[3] & 0xF000)));
}

/* 16 trits t - 1 of 16 bytes b times multipliers m (powers of 3): ((b * m mod 256) * 3) >> 8 */
static inline __m128i trits16(__m128i b, __m256i m) {
    __m256i v = _mm256_and_si256(_mm256_mullo_epi16(_mm256_cvtepu8_epi16(b), m), _mm256_set1_epi16(0xFF));
    v = _mm256_srli_epi16(_mm256_mullo_epi16(v, _mm256_set1_epi16(3)), 8);
    const __m128i t = _mm_packus_epi16(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    return _mm_sub_epi8(t, _mm_set1_epi8(1));
}

static void dec_tq1_0(const void *p, loom_iqg_prep *o) {
    static const int16_t pow3[5] = {1, 3, 9, 27, 81};
    static const int16_t sc[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1};
    const block_tq1_0 *x = p;
    const __m128i b0 = _mm_loadu_si128((const __m128i *)x->qs), b1 = _mm_loadu_si128((const __m128i *)(x->qs + 16));
    const __m128i b2 = _mm_loadu_si128((const __m128i *)(x->qs + 32));
    for (int n3 = 0; n3 < 5; n3++) { /* element 32 n3 + m (qs[m]), 160 + 16 n3 + m (qs[32 + m]) */
        const __m256i m = _mm256_set1_epi16(pow3[n3]);
        _mm_store_si128((__m128i *)(o->w + 32 * n3), trits16(b0, m));
        _mm_store_si128((__m128i *)(o->w + 32 * n3 + 16), trits16(b1, m));
        _mm_store_si128((__m128i *)(o->w + 160 + 16 * n3), trits16(b2, m));
    }
    uint32_t h; /* element 240 + 4 n3 + m: qh[m], trit n3 */
    memcpy(&h, x->qh, 4);
    _mm_store_si128((__m128i *)(o->w + 240),
                    trits16(_mm_set1_epi32((int)h), _mm256_set_epi16(27, 27, 27, 27, 9, 9, 9, 9, 3, 3, 3, 3, 1, 1, 1, 1)));
    finish(o, sc, x->d);
}

static void dec_tq2_0(const void *p, loom_iqg_prep *o) {
    static const int16_t sc[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1};
    const block_tq2_0 *x = p;
    const __m256i three = _mm256_set1_epi8(3), one = _mm256_set1_epi8(1);
    for (int h = 0; h < 2; h++) { /* element 128 h + 32 l + m: bits 2l of qs[32 h + m] */
        const __m256i v = _mm256_loadu_si256((const __m256i *)(x->qs + 32 * h));
        for (int l = 0; l < 4; l++)
            st32(o, 4 * h + l, _mm256_sub_epi8(_mm256_and_si256(_mm256_srli_epi16(v, 2 * l), three), one));
    }
    finish(o, sc, x->d);
}

/* Q3_K (not an IQ type, but the same shape: values and one 6-bit signed scale per 16):
 * value 128 n + 32 j + m is bits 2j of qs[32 n + m] minus 4 unless bit 4 n + j of
 * hmask[m] is set, in [-4, 3]; scales in [-32, 31] */
static void dec_q3_K(const void *p, loom_iqg_prep *o) {
    const block_q3_K *x = p;
    const __m256i three = _mm256_set1_epi8(3), four = _mm256_set1_epi8(4);
    const __m256i hm = _mm256_loadu_si256((const __m256i *)x->hmask);
    for (int n = 0; n < 2; n++) {
        const __m256i q = _mm256_loadu_si256((const __m256i *)(x->qs + 32 * n));
        for (int j = 0; j < 4; j++) {
            const __m256i bit = _mm256_set1_epi8((char)(1u << (4 * n + j)));
            const __m256i miss = _mm256_cmpeq_epi8(_mm256_and_si256(hm, bit), _mm256_setzero_si256());
            st32(o, 4 * n + j, _mm256_sub_epi8(_mm256_and_si256(_mm256_srli_epi16(q, 2 * j), three),
                                               _mm256_and_si256(miss, four)));
        }
    }
    int8_t s8[16];
    int16_t sc[16];
    _mm_storeu_si128((__m128i *)s8, loom_q3k_scales(x->scales));
    for (int k = 0; k < 16; k++) sc[k] = s8[k];
    finish(o, sc, x->d);
}

/* preparation, GGUF block bytes, the power-of-two factor of the scalar reference */
bool loom_iqg_type(loom_type t, loom_iqg_prep_fn *prep, size_t *bb, float *post) {
    switch (t) {
    case LOOM_TYPE_IQ2_XXS: *prep = dec_iq2_xxs, *bb = sizeof(block_iq2_xxs), *post = 0.125f; return true;
    case LOOM_TYPE_IQ2_XS: *prep = dec_iq2_xs, *bb = sizeof(block_iq2_xs), *post = 0.125f; return true;
    case LOOM_TYPE_IQ2_S: *prep = dec_iq2_s, *bb = sizeof(block_iq2_s), *post = 0.125f; return true;
    case LOOM_TYPE_IQ3_XXS: *prep = dec_iq3_xxs, *bb = sizeof(block_iq3_xxs), *post = 0.25f; return true;
    case LOOM_TYPE_IQ3_S: *prep = dec_iq3_s, *bb = sizeof(block_iq3_s), *post = 1.f; return true;
    case LOOM_TYPE_IQ1_S: *prep = dec_iq1_s, *bb = sizeof(block_iq1_s), *post = 0.125f; return true;
    case LOOM_TYPE_IQ1_M: *prep = dec_iq1_m, *bb = sizeof(block_iq1_m), *post = 0.125f; return true;
    case LOOM_TYPE_TQ1_0: *prep = dec_tq1_0, *bb = sizeof(block_tq1_0), *post = 1.f; return true;
    case LOOM_TYPE_TQ2_0: *prep = dec_tq2_0, *bb = sizeof(block_tq2_0), *post = 1.f; return true;
    case LOOM_TYPE_Q3_K: *prep = dec_q3_K, *bb = sizeof(block_q3_K), *post = 1.f; return true;
    default: return false;
    }
}

/* kernels_internal.h */
void loom_iqg_wide_tiles(loom_kernels *k, bool tq, int rows, int cols) {
    loom_iqg_prep_fn prep;
    size_t bb;
    float post;
    for (int t = 0; t < LOOM_TYPE_COUNT; t++)
        if (loom_iqg_type((loom_type)t, &prep, &bb, &post) && (tq || (t != LOOM_TYPE_TQ1_0 && t != LOOM_TYPE_TQ2_0))) {
            k->gemm_tile_rows[t] = (int16_t)rows;
            k->gemm_tile_cols[t] = (int16_t)cols;
        }
}

/* kernels_internal.h; here (AVX2 object) since the avxvnni level's 8-row tile uses it too */
int loom_iq16_groups(loom_type t) {
    return t == LOOM_TYPE_IQ2_XS || t == LOOM_TYPE_IQ2_S || t == LOOM_TYPE_IQ1_M || t == LOOM_TYPE_Q3_K ? 16 : 8;
}

/* kernels_internal.h: a group dot of 16 values is at most 16 x 128 x max |w| in magnitude,
 * within int16 for IQ1_M (|w| <= 9: 8g +- 1) and Q3_K (|w| <= 4), not for IQ2_XS / IQ2_S
 * (grid values up to 43); groups of 32 (IQ1_S: 32 x 128 x 9) do not fit either */
bool loom_iq16_narrow(loom_type t) { return t == LOOM_TYPE_IQ1_M || t == LOOM_TYPE_Q3_K; }

#endif /* LOOM_IQG_AVXVNNI */

#ifdef LOOM_IQG_AVXVNNI
#define IQG_FN(name) name##_avxvnni
static inline __m256i dp_scaled(__m256i acc, __m256i p, __m256i s) { return _mm256_dpwssd_avx_epi32(acc, p, s); }
static inline __m256i dp_unit(__m256i acc, __m256i u, __m256i w) { return _mm256_dpbusd_avx_epi32(acc, u, w); }
static inline __m256i unit_widen(__m256i acc, __m256i n) { (void)n; return acc; }
#define IQG_UNIT_START(n) (n)
#else
#define IQG_FN(name) name##_avx2
static inline __m256i dp_scaled(__m256i acc, __m256i p, __m256i s) {
    return _mm256_add_epi32(acc, _mm256_madd_epi16(p, s));
}
static inline __m256i dp_unit(__m256i acc16, __m256i u, __m256i w) { /* <= 8 * 2 * 255 per int16 */
    return _mm256_add_epi16(acc16, _mm256_maddubs_epi16(u, w));
}
static inline __m256i unit_widen(__m256i acc16, __m256i n) {
    return _mm256_add_epi32(n, _mm256_madd_epi16(acc16, _mm256_set1_epi16(1)));
}
#define IQG_UNIT_START(n) _mm256_setzero_si256()
#endif

static inline float hsum8(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

/* R rows x C columns from j of super-block b: acc[r][j] += (dw * dy) * lane sums */
static LOOM_ALWAYS_INLINE void iqg_tile(int R, int C, bool unit, const loom_iqg_prep *pr, const void *a, size_t as,
                                        int64_t j, int64_t b, __m256 (*acc)[IQG_CHUNK], int64_t jj) {
    const block_q8_K *y[2];
    __m256i isum[IQG_R][2];
    const __m256i off = _mm256_set1_epi8((char)0x80);
    LOOM_UNROLL
    for (int c = 0; c < C; c++) y[c] = (const block_q8_K *)((const uint8_t *)a + (size_t)(j + c) * as) + b;
    LOOM_UNROLL
    for (int r = 0; r < R; r++) {
        const __m256i n = _mm256_load_si256((const __m256i *)pr[r].ncorr);
        LOOM_UNROLL
        for (int c = 0; c < C; c++) isum[r][c] = unit ? IQG_UNIT_START(n) : n;
    }
    LOOM_UNROLL
    for (int q = 0; q < 8; q++) {
        __m256i ax[2];
        LOOM_UNROLL
        for (int c = 0; c < C; c++) ax[c] = _mm256_xor_si256(_mm256_loadu_si256((const __m256i *)(y[c]->qs + 32 * q)), off);
        LOOM_UNROLL
        for (int r = 0; r < R; r++) {
            const __m256i wv = _mm256_load_si256((const __m256i *)(pr[r].w + 32 * q));
            if (unit) {
                LOOM_UNROLL
                for (int c = 0; c < C; c++) isum[r][c] = dp_unit(isum[r][c], ax[c], wv);
            } else {
                const __m256i sv = _mm256_load_si256((const __m256i *)(pr[r].scv + 16 * q));
                LOOM_UNROLL
                for (int c = 0; c < C; c++)
                    isum[r][c] = dp_scaled(isum[r][c], _mm256_maddubs_epi16(ax[c], wv), sv);
            }
        }
    }
    if (unit) {
        LOOM_UNROLL
        for (int r = 0; r < R; r++) {
            const __m256i n = _mm256_load_si256((const __m256i *)pr[r].ncorr);
            LOOM_UNROLL
            for (int c = 0; c < C; c++)
                isum[r][c] = unit_widen(isum[r][c], n);
        }
    }
    LOOM_UNROLL
    for (int r = 0; r < R; r++)
        LOOM_UNROLL
        for (int c = 0; c < C; c++)
            acc[r][jj + c] = _mm256_fmadd_ps(_mm256_set1_ps(pr[r].dw * y[c]->d), _mm256_cvtepi32_ps(isum[r][c]),
                                             b == 0 ? _mm256_setzero_ps() : acc[r][jj + c]);
}

static LOOM_ALWAYS_INLINE void iqg_rows(int R, bool unit, loom_iqg_prep_fn prep, size_t bb, float post, int64_t nb,
                                        const uint8_t *row, size_t ws, const void *a, size_t as, float *c,
                                        size_t ldc, int64_t i, int64_t jc, int64_t jn) {
    loom_iqg_prep pr[IQG_R];
    __m256 acc[IQG_R][IQG_CHUNK];
    for (int64_t b = 0; b < nb; b++) {
        for (int r = 0; r < R; r++) prep(row + (size_t)r * ws + (size_t)b * bb, &pr[r]);
        int64_t jj = 0;
        for (; jj + 2 <= jn; jj += 2) iqg_tile(R, 2, unit, pr, a, as, jc + jj, b, acc, jj);
        if (jj < jn) iqg_tile(R, 1, unit, pr, a, as, jc + jj, b, acc, jj);
    }
    for (int r = 0; r < R; r++)
        for (int64_t jj = 0; jj < jn; jj++) c[(size_t)(jc + jj) * ldc + (size_t)(i + r)] = nb ? post * hsum8(acc[r][jj]) : 0.f;
}

#define IQG_ROWS iqg_rows
#include "cpu/kernels_iq_gemm_driver.h"

#ifdef LOOM_IQG_AVXVNNI
static loom_gemm_fn g_below; /* the avx2 table's gemm */

static bool gemm_iq_first(loom_type wt, int64_t k, const void *w, size_t ws, const void *a, size_t as, float *c,
                          size_t ldc, int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
    return loom_gemm_lg8_avxvnni(wt, k, w, ws, a, as, c, ldc, i0, i1, j0, j1) ||
           loom_gemm_iq8_avxvnni(wt, k, w, ws, a, as, c, ldc, i0, i1, j0, j1) ||
           loom_gemm_iq_avxvnni(wt, k, w, ws, a, as, c, ldc, i0, i1, j0, j1) ||
           (g_below && g_below(wt, k, w, ws, a, as, c, ldc, i0, i1, j0, j1));
}

void loom_kernels_fill_iq_avxvnni(loom_kernels *k) {
    g_below = k->gemm;
    k->gemm = gemm_iq_first;
    loom_iqg_wide_tiles(k, false, 64, 256); /* 8-row tile: the decoding serves every column */
}
#endif
