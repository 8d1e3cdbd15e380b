/* AVX2 prompt-shape gemm for the grid and ternary IQ / TQ types (IQ2_XXS, IQ2_XS, IQ2_S,
 * IQ3_XXS, IQ3_S, IQ1_S, IQ1_M, TQ1_0, TQ2_0) times Q8_K activations (kernels.h gemm
 * contract).
 *
 * Their vec_dots (kernels_iq{1tq,2,3}_avx2.c) rebuild each weight from grid tables, sign
 * bits and scale fields for every (row, column) pair, so a prompt pays that decoding
 * once per column. Here each super-block of a weight row is decoded once per call and
 * column chunk into plain int8 values (sign applied: grid * sign, 8g +- 1 for IQ1,
 * t - 1 for TQ; all within [-62, 62]) and one integer scale per 16 values; every column
 * of the chunk then takes an int8 x int8 dot from it (vpmaddubsw of |w| with the
 * activation given w's sign: pair sums <= 2 * 62 * 127, exact for activation bytes in
 * [-127, 127], which is all Q8_K from_float writes; vpmaddwd with the scale pair).
 * The super-block sum is the exact int32 the scalar reference (kernels_iq_scalar.c)
 * computes; one float FMA per super-block and lane, then the type's power-of-two factor.
 * Declines (returns false) for other types and for fewer than IQG_MIN_COLS columns,
 * where the decoding is not amortized (the caller then uses vec_dot). */
#include "cpu/kernels_internal.h"
#include "quant/iq_tables.h"

#include <immintrin.h>
#include <string.h>

#define IQG_MIN_COLS 4
#define IQG_CHUNK 64 /* columns whose float accumulators are live at once */

/* One decoded super-block: 256 int8 weights and 16 integer scales (one per 16 values). */
typedef struct {
    _Alignas(32) int8_t w[256];
    int16_t sc[16];
    uint16_t d; /* f16 block scale */
} iqg_block;

static inline uint8_t signs8(uint32_t s7) { /* 7 stored sign bits + even parity */
    s7 &= 127;
    return (uint8_t)(s7 | ((uint32_t)(__builtin_popcount(s7) & 1) << 7));
}

/* 8 values: unsigned grid bytes of g (all >= 4: IQ2 / IQ3 grids) with sign bits s (bit
 * j: value j negative), in 64-bit lanes: the sign bits spread to one 0/1 byte each,
 * then -b = (b ^ 0xFF) + 1 where set (no carry between bytes since b != 0). */
static inline void put8(int8_t *w, uint64_t g, unsigned s) {
    const uint64_t t = ((uint64_t)(s & 0xFF) * 0x0101010101010101ull) & 0x8040201008040201ull;
    const uint64_t one = ((t + 0x7F7F7F7F7F7F7F7Full) & 0x8080808080808080ull) >> 7;
    const uint64_t v = (g ^ (one * 0xFF)) + one;
    memcpy(w, &v, 8);
}

/* 8 values from two 4-value grid words (low: values 0..3) */
static inline void put4x2(int8_t *w, uint32_t g0, uint32_t g1, unsigned s) {
    put8(w, (uint64_t)g0 | (uint64_t)g1 << 32, s);
}

static void dec_iq2_xxs(const void *p, iqg_block *o) {
    const block_iq2_xxs *x = p;
    const uint8_t *qs = (const uint8_t *)x->qs;
    o->d = x->d;
    for (int ib = 0; ib < 8; ib++) {
        uint32_t a0, a1;
        memcpy(&a0, qs + 8 * ib, 4);
        memcpy(&a1, qs + 8 * ib + 4, 4);
        for (int l = 0; l < 4; l++)
            put8(o->w + 32 * ib + 8 * l, loom_iq2xxs_grid[(a0 >> (8 * l)) & 255], signs8(a1 >> (7 * l)));
        o->sc[2 * ib] = o->sc[2 * ib + 1] = (int16_t)(2 * (a1 >> 28) + 1);
    }
}

static void dec_iq2_xs(const void *p, iqg_block *o) {
    const block_iq2_xs *x = p;
    o->d = x->d;
    for (int g = 0; g < 32; g++) put8(o->w + 8 * g, loom_iq2xs_grid[x->qs[g] & 511], signs8(x->qs[g] >> 9));
    for (int s = 0; s < 16; s++) o->sc[s] = (int16_t)(2 * ((x->scales[s / 2] >> (4 * (s % 2))) & 0xF) + 1);
}

static void dec_iq2_s(const void *p, iqg_block *o) {
    const block_iq2_s *x = p;
    o->d = x->d;
    for (int g = 0; g < 32; g++) {
        const int ib = g / 4, l = g % 4;
        const int idx = x->qs[g] | ((x->qh[ib] << (8 - 2 * l)) & 0x300);
        put8(o->w + 8 * g, loom_iq2s_grid[idx], x->qs[32 + g]);
    }
    for (int s = 0; s < 16; s++) o->sc[s] = (int16_t)(2 * ((x->scales[s / 2] >> (4 * (s % 2))) & 0xF) + 1);
}

static void dec_iq3_xxs(const void *p, iqg_block *o) {
    const block_iq3_xxs *x = p;
    o->d = x->d;
    for (int ib = 0; ib < 8; ib++) {
        uint32_t w;
        memcpy(&w, x->qs + 64 + 4 * ib, 4);
        for (int l = 0; l < 4; l++) {
            put4x2(o->w + 32 * ib + 8 * l, loom_iq3xxs_grid[x->qs[8 * ib + 2 * l]],
                   loom_iq3xxs_grid[x->qs[8 * ib + 2 * l + 1]], signs8(w >> (7 * l)));
        }
        o->sc[2 * ib] = o->sc[2 * ib + 1] = (int16_t)(2 * (w >> 28) + 1);
    }
}

static void dec_iq3_s(const void *p, iqg_block *o) {
    const block_iq3_s *x = p;
    o->d = x->d;
    for (int ib = 0; ib < 8; ib++) {
        const int qh = x->qh[ib];
        for (int l = 0; l < 4; l++) {
            const int i1 = x->qs[8 * ib + 2 * l] | (((qh >> (2 * l)) & 1) << 8);
            const int i2 = x->qs[8 * ib + 2 * l + 1] | (((qh >> (2 * l + 1)) & 1) << 8);
            put4x2(o->w + 32 * ib + 8 * l, loom_iq3s_grid[i1], loom_iq3s_grid[i2], x->signs[4 * ib + l]);
        }
        o->sc[2 * ib] = o->sc[2 * ib + 1] = (int16_t)(2 * ((x->scales[ib / 2] >> (4 * (ib & 1))) & 0xF) + 1);
    }
}

/* IQ1: 8 * g + delta with g in {-1, 0, 1} (signed grid bytes), delta = -1 / +1 */
static inline void put8_iq1(int8_t *w, uint64_t g, int delta) {
    for (int j = 0; j < 8; j++) w[j] = (int8_t)(8 * (int8_t)(g >> (8 * j)) + delta);
}

static void dec_iq1_s(const void *p, iqg_block *o) {
    const block_iq1_s *x = p;
    o->d = x->d;
    for (int ib = 0; ib < 8; ib++) {
        const int qh = x->qh[ib], delta = qh & 0x8000 ? -1 : 1;
        for (int l = 0; l < 4; l++)
            put8_iq1(o->w + 32 * ib + 8 * l, loom_iq1s_grid[x->qs[4 * ib + l] | (((qh >> (3 * l)) & 7) << 8)], delta);
        o->sc[2 * ib] = o->sc[2 * ib + 1] = (int16_t)(2 * ((qh >> 12) & 7) + 1);
    }
}

static void dec_iq1_m(const void *p, iqg_block *o) {
    const block_iq1_m *x = p;
    uint16_t sc[4];
    memcpy(sc, x->scales, 8);
    o->d = (uint16_t)((sc[0] >> 12) | ((sc[1] >> 8) & 0x00F0) | ((sc[2] >> 4) & 0x0F00) | (sc[3] & 0xF000));
    for (int ib = 0; ib < 8; ib++) {
        for (int l = 0; l < 4; l++) {
            const int h = x->qh[2 * ib + l / 2] >> (4 * (l % 2));
            put8_iq1(o->w + 32 * ib + 8 * l, loom_iq1s_grid[x->qs[4 * ib + l] | ((h & 7) << 8)], h & 8 ? -1 : 1);
        }
        for (int hh = 0; hh < 2; hh++) /* 3-bit scale per 16 values */
            o->sc[2 * ib + hh] = (int16_t)(2 * ((sc[ib / 2] >> (6 * (ib % 2) + 3 * hh)) & 7) + 1);
    }
}

static void dec_tq1_0(const void *p, iqg_block *o) {
    static const uint8_t pow3[5] = {1, 3, 9, 27, 81};
    const block_tq1_0 *x = p;
    o->d = x->d;
#define TRIT(b, n) ((int8_t)(((((uint8_t)((b) * pow3[n])) * 3) >> 8) - 1))
    for (int n3 = 0; n3 < 5; n3++) {
        for (int m = 0; m < 32; m++) o->w[32 * n3 + m] = TRIT(x->qs[m], n3);
        for (int m = 0; m < 16; m++) o->w[160 + 16 * n3 + m] = TRIT(x->qs[32 + m], n3);
    }
    for (int n3 = 0; n3 < 4; n3++)
        for (int m = 0; m < 4; m++) o->w[240 + 4 * n3 + m] = TRIT(x->qh[m], n3);
#undef TRIT
    for (int s = 0; s < 16; s++) o->sc[s] = 1;
}

static void dec_tq2_0(const void *p, iqg_block *o) {
    const block_tq2_0 *x = p;
    o->d = x->d;
    for (int h = 0; h < 2; h++)
        for (int l = 0; l < 4; l++)
            for (int m = 0; m < 32; m++) o->w[128 * h + 32 * l + m] = (int8_t)(((x->qs[32 * h + m] >> (2 * l)) & 3) - 1);
    for (int s = 0; s < 16; s++) o->sc[s] = 1;
}

typedef void (*iqg_dec_fn)(const void *p, iqg_block *o);

/* decoder, GGUF block bytes, and the power-of-two factor of the scalar reference */
static bool iqg_type(loom_type t, iqg_dec_fn *dec, size_t *bb, float *post) {
    switch (t) {
    case LOOM_TYPE_IQ2_XXS: *dec = dec_iq2_xxs, *bb = sizeof(block_iq2_xxs), *post = 0.125f; return true;
    case LOOM_TYPE_IQ2_XS: *dec = dec_iq2_xs, *bb = sizeof(block_iq2_xs), *post = 0.125f; return true;
    case LOOM_TYPE_IQ2_S: *dec = dec_iq2_s, *bb = sizeof(block_iq2_s), *post = 0.125f; return true;
    case LOOM_TYPE_IQ3_XXS: *dec = dec_iq3_xxs, *bb = sizeof(block_iq3_xxs), *post = 0.25f; return true;
    case LOOM_TYPE_IQ3_S: *dec = dec_iq3_s, *bb = sizeof(block_iq3_s), *post = 1.f; return true;
    case LOOM_TYPE_IQ1_S: *dec = dec_iq1_s, *bb = sizeof(block_iq1_s), *post = 0.125f; return true;
    case LOOM_TYPE_IQ1_M: *dec = dec_iq1_m, *bb = sizeof(block_iq1_m), *post = 0.125f; return true;
    case LOOM_TYPE_TQ1_0: *dec = dec_tq1_0, *bb = sizeof(block_tq1_0), *post = 1.f; return true;
    case LOOM_TYPE_TQ2_0: *dec = dec_tq2_0, *bb = sizeof(block_tq2_0), *post = 1.f; return true;
    default: return false;
    }
}

static inline float hsum8(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

/* CB columns from j (super-block b): acc[cc] += (d * dy) * the exact block sum, per lane */
static inline __attribute__((always_inline)) void iqg_cols(int CB, const iqg_block *blk, const int8_t *wabs,
                                                           const __m256i *scv, float dw, const void *a, size_t as,
                                                           int64_t j, int64_t b, __m256 *acc) {
    const block_q8_K *y[4];
    __m256i isum[4];
    LOOM_UNROLL
    for (int cc = 0; cc < CB; cc++) {
        y[cc] = (const block_q8_K *)((const uint8_t *)a + (size_t)(j + cc) * as) + b;
        isum[cc] = _mm256_setzero_si256();
    }
    LOOM_UNROLL
    for (int q = 0; q < 8; q++) {
        const __m256i wv = _mm256_load_si256((const __m256i *)(blk->w + 32 * q));
        const __m256i wa = _mm256_load_si256((const __m256i *)(wabs + 32 * q));
        LOOM_UNROLL
    for (int cc = 0; cc < CB; cc++) {
            const __m256i av = _mm256_loadu_si256((const __m256i *)(y[cc]->qs + 32 * q));
            const __m256i pr = _mm256_maddubs_epi16(wa, _mm256_sign_epi8(av, wv));
            isum[cc] = _mm256_add_epi32(isum[cc], _mm256_madd_epi16(pr, scv[q]));
        }
    }
    LOOM_UNROLL
    for (int cc = 0; cc < CB; cc++)
        acc[cc] = _mm256_fmadd_ps(_mm256_set1_ps(dw * y[cc]->d), _mm256_cvtepi32_ps(isum[cc]), acc[cc]);
}

bool loom_gemm_iq_avx2(loom_type wt, int64_t k, const void *w, size_t ws, const void *a, size_t as, float *c,
                       size_t ldc, int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
    iqg_dec_fn dec;
    size_t bb;
    float post;
    if (!iqg_type(wt, &dec, &bb, &post) || j1 - j0 < IQG_MIN_COLS || k % QK_K != 0) return false;
    const int64_t nb = k / QK_K;
    iqg_block blk;
    _Alignas(32) int8_t wabs[256];
    __m256i scv[8];
    __m256 acc[IQG_CHUNK];
    for (int64_t i = i0; i < i1; i++) {
        const uint8_t *row = (const uint8_t *)w + (size_t)i * ws;
        for (int64_t jc = j0; jc < j1; jc += IQG_CHUNK) {
            const int64_t jn = j1 - jc < IQG_CHUNK ? j1 - jc : IQG_CHUNK;
            for (int64_t jj = 0; jj < jn; jj++) acc[jj] = _mm256_setzero_ps();
            for (int64_t b = 0; b < nb; b++) {
                dec(row + (size_t)b * bb, &blk);
                for (int q = 0; q < 8; q++) {
                    const __m256i v = _mm256_load_si256((const __m256i *)(blk.w + 32 * q));
                    _mm256_store_si256((__m256i *)(wabs + 32 * q), _mm256_abs_epi8(v));
                    scv[q] = _mm256_set_m128i(_mm_set1_epi16(blk.sc[2 * q + 1]), _mm_set1_epi16(blk.sc[2 * q]));
                }
                const float dw = _cvtsh_ss(blk.d);
                int64_t jj = 0;
                for (; jj + 4 <= jn; jj += 4) /* 4 columns per pass: each weight vector loaded once */
                    iqg_cols(4, &blk, wabs, scv, dw, a, as, jc + jj, b, acc + jj);
                for (; jj < jn; jj++) iqg_cols(1, &blk, wabs, scv, dw, a, as, jc + jj, b, acc + jj);
            }
            for (int64_t jj = 0; jj < jn; jj++) c[(size_t)(jc + jj) * ldc + (size_t)i] = post * hsum8(acc[jj]);
        }
    }
    return true;
}
