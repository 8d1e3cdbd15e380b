/*
 * kernels_int8_amx.c - AMX-INT8 (TDPBSSD) prompt-shape tiles for repacked weights (the
 * kernels.h gemm_repacked contract), level "amx" on CPUs with AMX-INT8: Q8_0, Q4_0 and
 * IQ4_NL x Q8_0 activations (below), and Q4_K, Q5_K, Q6_K and IQ4_XS x Q8_K (the
 * K-quant part further down: one product per sub-block of 32 values, per group of 16
 * for Q6_K, folded with integer scales), and Q4_1, Q5_0, Q5_1 (amx_legacy, shared with
 * their plain-row gemm). Q2_K stays on the avx512vnni tile.
 *
 * One TDPBSSD computes C[16 x 16] += A[16 x 64] B[64 x 16] in int8 x int8 -> int32. These
 * types carry one scale per 32 weights (and per 32 activations), so each block is its
 * own product with K = 32: A = the 32 activation quants of block b for 16 columns (a
 * tile row is an activation row: loaded straight from the Q8_0 rows, stride a_stride),
 * B = the 32 weight quants of block b for 16 rows in the "VNNI" order (B row kk holds
 * quants 4kk..4kk+3 of each of the 16 rows). The repacked layout (quant/repack.h) already
 * stores a block's quants in that order (chunk c = bytes 4c..4c+3 of rows 0..15); here
 * they are made signed int8 once per call and row group (Q8_0: stored as q + 128, so
 * XOR 0x80; Q4_0: nibble - 8; IQ4_NL: the table value), for a k chunk of AI_KC blocks,
 * and reused by every column tile of the call.
 *
 * The C tile of block b (C[t][r] = sum over the block of a[t] w[r], the exact int32 the
 * avx512vnni tile and the scalar reference form) goes through memory into the float
 * accumulators: acc[t] = fma(dw[r] * da[t], float(C[t][r]), acc[t]), with dw the row
 * group's 16 block scales and da the column's: the avx512vnni tile's per-lane
 * arithmetic in the same block order, so results are bit-identical to it (and do not
 * depend on the tiling). Four blocks are in flight per step (C tiles 0-3; A and B tiles
 * alternate between 4/5 and 6/7) so the tile unit works while the vector unit converts.
 *
 * Columns come in tiles of 16; a remainder of fewer (and calls with fewer than
 * AI_MIN_COLS columns: decode, small batches) go to the avx512vnni table's
 * gemm_repacked, which computes the same values. Other types go there too.
 * Tile state is per thread: each call loads the configuration and releases it. The OS
 * must have granted XTILEDATA (kernels_dispatch.c asks once).
 */
#include "cpu/amx_tile.h"
#include "cpu/kernels_internal.h"
#include "quant/iq_tables.h"
#include "quant/repack.h"

#include <immintrin.h>
#include <stddef.h>
#include <string.h>

#define AI_KC 32        /* blocks (of 32) per k chunk: weight scratch AI_KC x 512 bytes */
#define AI_JC 64        /* columns per column block: activation scales AI_JC x AI_KC */
#define AI_MIN_COLS 16  /* fewer columns per call: the avx512vnni tile */
#define AI_QUAD 4       /* blocks in flight (C tiles 0-3) */


/* tiles 0-3: C (16 x 16 int32); 4, 5: A (16 columns x 32 quants); 6, 7: B (8 rows of
 * 16 x 4 quants) */
static const amx_cfg k_cfg = {1, 0, {0}, {64, 64, 64, 64, 32, 32, 64, 64}, {16, 16, 16, 16, 16, 16, 8, 8}};
/* the same with K = 16 (the IQ tile's groups of 16: IQ2_XS, IQ2_S, IQ1_M, Q3_K): A 16
 * columns x 16 quants, B 4 rows */
static const amx_cfg k_cfg16 = {1, 0, {0}, {64, 64, 64, 64, 16, 16, 64, 64}, {16, 16, 16, 16, 16, 16, 4, 4}};
/* K = 64 (two sub-blocks per product; Q4_K / Q5_K with the scales in B): A 16 columns x
 * 64 quants, B 16 rows */
static const amx_cfg k_cfg64 = {1, 0, {0}, {64, 64, 64, 64, 64, 64, 64, 64}, {16, 16, 16, 16, 16, 16, 16, 16}};


enum { AK_Q8, AK_Q4, AK_IQ4 };

/* Signed quants and float scales of blocks [s0, s1) of row group g into bq (512 bytes
 * per block, B-tile order) and dw (16 floats per block). */
static void prep_weights(int kind, const uint8_t *w, size_t ws, int64_t g, int64_t s0, int64_t s1, int8_t *bq,
                         float *dw) {
    const size_t bb = kind == AK_Q8 ? sizeof(block_q8_0) : sizeof(block_q4_0);
    const uint8_t *p = w + (size_t)g * ws * LOOM_REPACK_ROWS + (size_t)s0 * bb * LOOM_REPACK_ROWS;
    const __m512i x80 = _mm512_set1_epi8((char)0x80), m4 = _mm512_set1_epi8(0x0F), eight = _mm512_set1_epi8(8);
    const __m512i lut = _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)loom_iq4nl_kv));
    for (int64_t b = s0; b < s1; b++, p += bb * LOOM_REPACK_ROWS, bq += 512, dw += 16) {
        _mm512_store_ps(dw, _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)p)));
        if (kind == AK_Q8) {
            for (int ch = 0; ch < 8; ch++)
                _mm512_store_si512((void *)(bq + 64 * ch),
                                   _mm512_xor_si512(_mm512_loadu_si512((const void *)(p + 32 + 64 * ch)), x80));
            continue;
        }
        for (int ch = 0; ch < 4; ch++) { /* chunk ch: quants 4ch.. (low nibbles), 16 + 4ch.. (high) */
            const __m512i v = _mm512_loadu_si512((const void *)(p + 32 + 64 * ch));
            __m512i lo = _mm512_and_si512(v, m4), hi = _mm512_and_si512(_mm512_srli_epi16(v, 4), m4);
            if (kind == AK_IQ4) {
                lo = _mm512_shuffle_epi8(lut, lo);
                hi = _mm512_shuffle_epi8(lut, hi);
            } else {
                lo = _mm512_sub_epi8(lo, eight);
                hi = _mm512_sub_epi8(hi, eight);
            }
            _mm512_store_si512((void *)(bq + 64 * ch), lo);
            _mm512_store_si512((void *)(bq + 64 * (ch + 4)), hi);
        }
    }
}

/* acc[t] += (dw * da[t][q]) * float(C[q][t]) for the nq blocks of a step, in block order;
 * with mins (Q4_1 / Q5_1) also + mw * sa[t][q] (sa: the activation block's d x sum) */
static LOOM_ALWAYS_INLINE void fold(bool mins, __m512 acc[16], const int32_t *cb, const float *dw, const float *mw,
                                    const float *da, const float *sa, int64_t da_stride, int nq) {
    for (int q = 0; q < nq; q++) {
        const __m512 d = _mm512_load_ps(dw + 16 * q);
        const __m512 m = mins ? _mm512_load_ps(mw + 16 * q) : d;
        LOOM_UNROLL_ALL
        for (int t = 0; t < 16; t++) {
            acc[t] = _mm512_fmadd_ps(_mm512_mul_ps(d, _mm512_set1_ps(da[t * da_stride + q])),
                                     _mm512_cvtepi32_ps(_mm512_load_si512((const void *)(cb + 256 * q + 16 * t))),
                                     acc[t]);
            if (mins) acc[t] = _mm512_fmadd_ps(m, _mm512_set1_ps(sa[t * da_stride + q]), acc[t]);
        }
    }
}

/* 16 columns [j, j + 16) x rows [row0, row0 + 16) (rm: the real ones) over the prepared
 * blocks [s0, s1) (bq, dw, mw: block s0 first; ap, da, sa: the column tile's). Software
 * pipelined: the products of step n are issued (and stored to one half of cb) before
 * the accumulators take step n - 1 from the other half. */
static LOOM_ALWAYS_INLINE void tile16_body(bool mins, const int8_t *ap, size_t ablk, size_t astr, const int8_t *bq, const float *dw,
                                           const float *mw, const float *da, const float *sa, int64_t da_stride,
                                           float *c, size_t ldc, int64_t row0, __mmask16 rm, int64_t j, int64_t s0,
                                           int64_t s1) {
    _Alignas(64) int32_t cb[2][AI_QUAD * 256];
    __m512 acc[16];
    float *cp = c + (size_t)j * ldc + (size_t)row0;
    LOOM_UNROLL_ALL
    for (int t = 0; t < 16; t++) acc[t] = s0 == 0 ? _mm512_setzero_ps() : _mm512_maskz_loadu_ps(rm, cp + (size_t)t * ldc);
    int64_t prev = -1; /* the step (its first block, relative to s0) waiting in cb[half ^ 1] */
    int prev_n = 0, half = 0;
    for (int64_t b = s0; b < s1; b += AI_QUAD, half ^= 1) {
        const int nq = s1 - b < AI_QUAD ? (int)(s1 - b) : AI_QUAD;
        const int64_t l = b - s0;
        const int8_t *a0 = ap + ablk * (size_t)l;
        const int8_t *b0 = bq + 512 * l;
        int32_t *out = cb[half];
#define AI_STEP(Q, TA, TB)                            \
    do {                                              \
        TLOAD(TA, a0 + ablk * (Q), astr);             \
        TLOAD(TB, b0 + 512 * (Q), 64);                \
        _tile_zero(Q);                                \
        _tile_dpbssd(Q, TA, TB);                      \
    } while (0)
        if (nq == AI_QUAD) {
            AI_STEP(0, 4, 6);
            AI_STEP(1, 5, 7);
            AI_STEP(2, 4, 6);
            AI_STEP(3, 5, 7);
            _tile_stored(0, out, 64);
            _tile_stored(1, out + 256, 64);
            _tile_stored(2, out + 512, 64);
            _tile_stored(3, out + 768, 64);
        } else {
            AI_STEP(0, 4, 6);
            _tile_stored(0, out, 64);
            if (nq > 1) {
                AI_STEP(1, 5, 7);
                _tile_stored(1, out + 256, 64);
            }
            if (nq > 2) {
                AI_STEP(2, 4, 6);
                _tile_stored(2, out + 512, 64);
            }
        }
#undef AI_STEP
        if (prev >= 0)
            fold(mins, acc, cb[half ^ 1], dw + 16 * prev, mw + 16 * prev, da + prev, sa + prev, da_stride, prev_n);
        prev = l;
        prev_n = nq;
    }
    if (prev >= 0) fold(mins, acc, cb[half ^ 1], dw + 16 * prev, mw + 16 * prev, da + prev, sa + prev, da_stride, prev_n);
    LOOM_UNROLL_ALL
    for (int t = 0; t < 16; t++) _mm512_mask_storeu_ps(cp + (size_t)t * ldc, rm, acc[t]);
}

/* the repacked Q8_0 / Q4_0 / IQ4_NL groups (16 real rows, no mins) */
static void tile16(const int8_t *ap, const int8_t *bq, const float *dw, const float *da, int64_t da_stride, float *c,
                   size_t ldc, int64_t g, int64_t j, int64_t s0, int64_t s1) {
    tile16_body(false, ap, 512, 32, bq, dw, dw, da, da, da_stride, c, ldc, g * LOOM_REPACK_ROWS, 0xFFFF, j, s0, s1);
}

/* ---- the K-quants x Q8_K: IQ4_XS and the grid IQ types (below; Q4_K, Q5_K and Q6_K
 * further down, with their scales in the B tiles). Per sub-block (or group of 16) one
 * TDPBSSD; per column and super-block the integer sum sum_s sc[s] C_s (vpmulld), then the
 * fma of the scalar reference and the avx512vnni tile (bit-identical to both). */
#define AQ_KC 8 /* super-blocks per k chunk: weight scratch AQ_KC x 4 KiB */

typedef loom_sb16 aq_sb; /* kernels_internal.h */

static LOOM_ALWAYS_INLINE __m512i aq_bytes(const uint8_t *p) {
    return _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)p));
}

/* IQ4_XS: sub-block s = chunks 4s..4s+3 (low nibbles: B rows 0..3, high: 4..7), table
 * values; scales (6 bits) - 32 */
static void prep_iq4xs(const uint8_t *w, size_t ws, int64_t g, int64_t s0, int64_t s1, aq_sb *o) {
    const size_t bstep = sizeof(block_iq4_xs) * LOOM_REPACK_ROWS;
    const uint8_t *p = w + (size_t)g * ws * LOOM_REPACK_ROWS + (size_t)s0 * bstep;
    const __m512i m4 = _mm512_set1_epi8(0x0F);
    const __m512i lut = _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)loom_iq4nl_kv));
    for (int64_t b = s0; b < s1; b++, p += bstep, o++) {
        const __m512i sl = _mm512_loadu_si512((const void *)(p + 64));
        const __m512i sh = _mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)(p + 32)));
        for (int sb = 0; sb < 8; sb++)
            _mm512_storeu_si512((void *)o->sc[sb],
                                _mm512_sub_epi32(_mm512_or_si512(_mm512_and_si512(_mm512_srli_epi32(sl, 8 * (sb / 2) + 4 * (sb % 2)),
                                                                                  _mm512_set1_epi32(15)),
                                                                 _mm512_slli_epi32(_mm512_and_si512(_mm512_srli_epi32(sh, 2 * sb),
                                                                                                    _mm512_set1_epi32(3)),
                                                                                   4)),
                                                 _mm512_set1_epi32(32)));
        _mm512_storeu_ps(o->dx, _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)p)));
        for (int sb = 0; sb < 8; sb++)
            for (int ch = 0; ch < 4; ch++) {
                const __m512i v = _mm512_loadu_si512((const void *)(p + 128 + 64 * (4 * sb + ch)));
                _mm512_store_si512((void *)(o->q + 512 * sb + 64 * ch), _mm512_shuffle_epi8(lut, _mm512_and_si512(v, m4)));
                _mm512_store_si512((void *)(o->q + 512 * sb + 64 * (ch + 4)),
                                   _mm512_shuffle_epi8(lut, _mm512_and_si512(_mm512_srli_epi16(v, 4), m4)));
            }
    }
}

/* acc[t] of 16 columns += the super-block whose 8 C tiles are in cb */
static LOOM_ALWAYS_INLINE void fold_kq(int NS, __m512 acc[16], const int32_t *cb, const aq_sb *o, const float *dy,
                                       int64_t stride) {
    const __m512 dx = _mm512_loadu_ps(o->dx);
    LOOM_UNROLL_ALL
    for (int t = 0; t < 16; t++) {
        __m512i is = _mm512_mullo_epi32(_mm512_load_si512((const void *)(cb + 16 * t)), _mm512_loadu_si512((const void *)o->sc[0]));
        for (int sb = 1; sb < NS; sb++)
            is = _mm512_add_epi32(is, _mm512_mullo_epi32(_mm512_load_si512((const void *)(cb + 256 * sb + 16 * t)),
                                                         _mm512_loadu_si512((const void *)o->sc[sb])));
        acc[t] = _mm512_fmadd_ps(_mm512_mul_ps(dx, _mm512_set1_ps(dy[t * stride])), _mm512_cvtepi32_ps(is), acc[t]);
    }
}

/* 16 columns [j, j + 16) x row group g over the prepared super-blocks [s0, s1) (o[0] is
 * s0); dy: the columns' scales (stride per column). NS sub-blocks of 256 / NS values per
 * super-block (C tiles through cb, four at a time). */
static LOOM_ALWAYS_INLINE void tile16_kq_body(int NS, const uint8_t *a, size_t as, const aq_sb *o,
                                              const float *dy, int64_t stride, float *c,
                                              size_t ldc, int64_t row0, __mmask16 rm, int64_t j, int64_t s0,
                                              int64_t s1) {
    _Alignas(64) int32_t cb[2][16 * 256];
    const int KS = 256 / NS, BB = 4096 / NS; /* values and B-tile bytes per sub-block */
    __m512 acc[16];
    float *cp = c + (size_t)j * ldc + (size_t)row0;
    LOOM_UNROLL_ALL
    for (int t = 0; t < 16; t++) acc[t] = s0 == 0 ? _mm512_setzero_ps() : _mm512_maskz_loadu_ps(rm, cp + (size_t)t * ldc);
    const uint8_t *ab = a + (size_t)j * as + 4; /* qs of super-block 0 of column j */
    int half = 0;
    for (int64_t b = s0; b < s1; b++, half ^= 1) {
        const uint8_t *a0 = ab + (size_t)b * sizeof(block_q8_K);
        const aq_sb *ob = o + (b - s0);
        int32_t *out = cb[half];
#define AQ_STEP(Q, S, TA, TB)                  \
    do {                                       \
        TLOAD(TA, a0 + KS * (S), as);          \
        TLOAD(TB, ob->q + BB * (S), 64);       \
        _tile_zero(Q);                         \
        _tile_dpbssd(Q, TA, TB);               \
    } while (0)
        for (int s4 = 0; s4 < NS; s4 += 4) {
            AQ_STEP(0, s4, 4, 6);
            AQ_STEP(1, s4 + 1, 5, 7);
            AQ_STEP(2, s4 + 2, 4, 6);
            AQ_STEP(3, s4 + 3, 5, 7);
            _tile_stored(0, out + 256 * s4, 64);
            _tile_stored(1, out + 256 * (s4 + 1), 64);
            _tile_stored(2, out + 256 * (s4 + 2), 64);
            _tile_stored(3, out + 256 * (s4 + 3), 64);
        }
#undef AQ_STEP
        if (b > s0) fold_kq(NS, acc, cb[half ^ 1], ob - 1, dy + (b - 1 - s0), stride);
    }
    fold_kq(NS, acc, cb[half ^ 1], o + (s1 - 1 - s0), dy + (s1 - 1 - s0), stride);
    LOOM_UNROLL_ALL
    for (int t = 0; t < 16; t++) _mm512_mask_storeu_ps(cp + (size_t)t * ldc, rm, acc[t]);
}

static void tile16_x8(const uint8_t *a, size_t as, const aq_sb *o, const float *dy,
                      int64_t stride, float *c, size_t ldc, int64_t row0, __mmask16 rm, int64_t j, int64_t s0,
                      int64_t s1) {
    tile16_kq_body(8, a, as, o, dy, stride, c, ldc, row0, rm, j, s0, s1);
}
static void tile16_x16(const uint8_t *a, size_t as, const aq_sb *o, const float *dy,
                      int64_t stride, float *c, size_t ldc, int64_t row0, __mmask16 rm, int64_t j, int64_t s0,
                      int64_t s1) {
    tile16_kq_body(16, a, as, o, dy, stride, c, ldc, row0, rm, j, s0, s1);
}


/* ---- Q4_K and Q5_K with the sub-block scales inside the B tiles. Each 6-bit scale is
 * split sc = sl + 8 sh (sl, sh in [0, 7]) and the codes (0..15 / 0..31) are stored twice,
 * times sl and times sh: at most 31 x 7 = 217, an unsigned byte (one vpmullw per vector
 * does it: per 16-bit word c0 + 256 c1, c0 s < 256, so the bytes cannot carry). TDPBSUD
 * (signed activations x unsigned weights) then sums the whole super-block in the tile
 * unit, two sub-blocks per product (K = 64): C_l = sum_s sl_s C_s, C_h = sum_s sh_s C_s,
 * and C_l + 8 C_h is exactly the integer sum sum_s sc_s C_s of the tile above (no
 * overflow: |C_l| <= 256 x 128 x 217). Two C tiles per super-block go through memory
 * instead of eight, and the fold has no vpmulld. Per column and super-block the mins
 * term sum_s m[s] bsum_s (vpdpwssd of (m[2t], m[2t+1]) word pairs) and the two fmas of
 * the scalar reference and the avx512vnni tile: results bit-identical to both. Measured
 * (bench kernels prompt, one thread, 2-vCPU AMX VM): Q4_K 405 -> 530, Q5_K 370 -> 520
 * GFLOP/s against the previous tile (one TDPBSSD per sub-block, vpmulld in the fold). */
typedef struct { /* a prepared super-block of 16 rows for these tiles and Q6_K's below */
    _Alignas(64) uint8_t q[3][4096]; /* B-tile order: Q4_K / Q5_K codes x sl, x sh; Q6_K digits */
    int32_t mp[4][16];               /* Q4_K / Q5_K: mins pairs (m[2t], m[2t+1]) */
    float dx[16], dm[16];
} aq_sbs;

static void prep_kqs(bool q5, const uint8_t *w, size_t ws, int64_t g, int64_t s0, int64_t s1, aq_sbs *o) {
    const size_t bstep = (q5 ? sizeof(block_q5_K) : sizeof(block_q4_K)) * LOOM_REPACK_ROWS;
    const uint8_t *p = w + (size_t)g * ws * LOOM_REPACK_ROWS + (size_t)s0 * bstep;
    const __m512i m4 = _mm512_set1_epi8(0x0F), m3 = _mm512_set1_epi8(0x03), m16 = _mm512_set1_epi8(0x10);
    const __m512i seven = _mm512_set1_epi32(7);
    for (int64_t b = s0; b < s1; b++, p += bstep, o++) {
        _Alignas(64) uint8_t scm[256]; /* sc of sub-blocks 0..7 (16 rows each), then m */
        const __m512i lo0 = _mm512_loadu_si512((const void *)(p + 64)), lo1 = _mm512_loadu_si512((const void *)(p + 128));
        const __m512i hi = _mm512_loadu_si512((const void *)(p + 192));
        const __m512i h1 = _mm512_srli_epi16(hi, 2), h2 = _mm512_srli_epi16(hi, 4), h3 = _mm512_srli_epi16(hi, 6);
        _mm512_store_si512((void *)scm, _mm512_or_si512(_mm512_and_si512(lo0, m4), _mm512_slli_epi16(_mm512_and_si512(hi, m3), 4)));
        _mm512_store_si512((void *)(scm + 64),
                           _mm512_or_si512(_mm512_and_si512(lo1, m4), _mm512_slli_epi16(_mm512_and_si512(h1, m3), 4)));
        _mm512_store_si512((void *)(scm + 128), _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(lo0, 4), m4),
                                                                 _mm512_slli_epi16(_mm512_and_si512(h2, m3), 4)));
        _mm512_store_si512((void *)(scm + 192), _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(lo1, 4), m4),
                                                                 _mm512_slli_epi16(_mm512_and_si512(h3, m3), 4)));
        __m512i sl[8], sh[8]; /* per row (dword): the scale part in both 16-bit words */
        LOOM_UNROLL_ALL
        for (int sb = 0; sb < 8; sb++) {
            const __m512i sc = aq_bytes(scm + 16 * sb);
            const __m512i l = _mm512_and_si512(sc, seven), h = _mm512_srli_epi32(sc, 3);
            sl[sb] = _mm512_or_si512(l, _mm512_slli_epi32(l, 16));
            sh[sb] = _mm512_or_si512(h, _mm512_slli_epi32(h, 16));
        }
        for (int t = 0; t < 4; t++)
            _mm512_storeu_si512((void *)o->mp[t], _mm512_or_si512(aq_bytes(scm + 128 + 32 * t),
                                                                  _mm512_slli_epi32(aq_bytes(scm + 128 + 32 * t + 16), 16)));
        _mm512_storeu_ps(o->dx, _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)p)));
        _mm512_storeu_ps(o->dm, _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(p + 32))));
        /* sub-block 2j + h: nibble h of chunks 8j + kk (B row kk), fifth bit 2j + h of qh chunk kk */
        LOOM_UNROLL_ALL
        for (int j = 0; j < 4; j++)
            for (int kk = 0; kk < 8; kk++) {
                const __m512i v = _mm512_loadu_si512((const void *)(p + loom_repack_kq_qs(q5, (size_t)(8 * j + kk))));
                __m512i lo = _mm512_and_si512(v, m4), hn = _mm512_and_si512(_mm512_srli_epi16(v, 4), m4);
                if (q5) {
                    const __m512i qh = _mm512_loadu_si512((const void *)(p + loom_repack_q5k_qh((size_t)kk)));
                    const int b0 = 2 * j, b1 = 2 * j + 1;
                    const __m512i f0 = b0 < 4 ? _mm512_slli_epi16(qh, (unsigned)(4 - b0)) : b0 > 4 ? _mm512_srli_epi16(qh, (unsigned)(b0 - 4)) : qh;
                    const __m512i f1 = b1 < 4 ? _mm512_slli_epi16(qh, (unsigned)(4 - b1)) : _mm512_srli_epi16(qh, (unsigned)(b1 - 4));
                    lo = _mm512_or_si512(lo, _mm512_and_si512(f0, m16));
                    hn = _mm512_or_si512(hn, _mm512_and_si512(f1, m16));
                }
                const size_t e0 = 512 * (2 * j) + 64 * kk, e1 = e0 + 512;
                _mm512_store_si512((void *)(o->q[0] + e0), _mm512_mullo_epi16(lo, sl[2 * j]));
                _mm512_store_si512((void *)(o->q[1] + e0), _mm512_mullo_epi16(lo, sh[2 * j]));
                _mm512_store_si512((void *)(o->q[0] + e1), _mm512_mullo_epi16(hn, sl[2 * j + 1]));
                _mm512_store_si512((void *)(o->q[1] + e1), _mm512_mullo_epi16(hn, sh[2 * j + 1]));
            }
    }
}

/* acc[t] of 16 columns += the super-block whose C_l / C_h tiles are in cb (integer sum
 * C_l + 8 C_h) */
static LOOM_ALWAYS_INLINE void fold_kqs(__m512 acc[16], const int32_t *cb, const aq_sbs *o, const float *dy,
                                        const int32_t *bs, int64_t stride) {
    const __m512 dx = _mm512_loadu_ps(o->dx), dm = _mm512_loadu_ps(o->dm);
    LOOM_UNROLL_ALL
    for (int t = 0; t < 16; t++) {
        const __m512i is = _mm512_add_epi32(_mm512_load_si512((const void *)(cb + 16 * t)),
                                            _mm512_slli_epi32(_mm512_load_si512((const void *)(cb + 256 + 16 * t)), 3));
        const int32_t *bt = bs + 4 * t * stride;
        __m512i ms = _mm512_dpwssd_epi32(_mm512_setzero_si512(), _mm512_loadu_si512((const void *)o->mp[0]), _mm512_set1_epi32(bt[0]));
        ms = _mm512_dpwssd_epi32(ms, _mm512_loadu_si512((const void *)o->mp[1]), _mm512_set1_epi32(bt[1]));
        ms = _mm512_dpwssd_epi32(ms, _mm512_loadu_si512((const void *)o->mp[2]), _mm512_set1_epi32(bt[2]));
        ms = _mm512_dpwssd_epi32(ms, _mm512_loadu_si512((const void *)o->mp[3]), _mm512_set1_epi32(bt[3]));
        const __m512 dyv = _mm512_set1_ps(dy[t * stride]);
        acc[t] = _mm512_fmadd_ps(_mm512_mul_ps(dx, dyv), _mm512_cvtepi32_ps(is), acc[t]);
        acc[t] = _mm512_fnmadd_ps(_mm512_mul_ps(dm, dyv), _mm512_cvtepi32_ps(ms), acc[t]);
    }
}

/* ---- Q6_K with the group scales inside the B tiles. Each signed 8-bit scale is written
 * in balanced base 7, sc = d0 + 7 d1 + 49 d2 with digits in [-3, 3] (the base-7 digits of
 * sc + 171, minus 3 each), and the values q - 32 (in [-32, 31]) are stored once per digit,
 * times it: |(q - 32) d| <= 96, a signed byte. TDPBSSD then sums the super-block per digit
 * in the tile unit, 64 values per product: C_i = sum_g d_i,g C_g, and C0 + 7 (C1 + 7 C2)
 * is exactly sum_g sc_g C_g (|C_i| <= 256 x 127 x 96: no overflow), the integer sum that
 * Q6_K's former tile (tile16_x16's: one K = 16 product per group of 16, a vpmulld per
 * group in the fold) formed: three products and three C tiles per 64 values instead of
 * four and four, no vpmulld, results bit-identical to the scalar reference and the
 * avx512vnni tile. Kernel bench prompt, one thread: 235-249 -> 352-360 GFLOP/s. */

/* (q - 32) |d| for unsigned bytes q (0..63) and a per-row digit d, negated where d < 0:
 * mag = |d| in both 16-bit words of the row's dword (q |d| <= 189 fits a byte, so one
 * vpmullw makes both bytes of a word), m32 = 32 |d| in each byte, neg = all ones where
 * d < 0 (bytes wrap: the true values fit a signed byte) */
static LOOM_ALWAYS_INLINE __m512i q6_times(__m512i q, const __m512i dg[3]) {
    const __m512i x = _mm512_sub_epi8(_mm512_mullo_epi16(q, dg[0]), dg[1]);
    return _mm512_sub_epi8(_mm512_xor_si512(x, dg[2]), dg[2]);
}

static void prep_q6ks(const uint8_t *w, size_t ws, int64_t g, int64_t s0, int64_t s1, aq_sbs *o) {
    const size_t bstep = sizeof(block_q6_K) * LOOM_REPACK_ROWS;
    const uint8_t *p = w + (size_t)g * ws * LOOM_REPACK_ROWS + (size_t)s0 * bstep;
    const __m512i m4 = _mm512_set1_epi8(0x0F), m30 = _mm512_set1_epi8(0x30);
    for (int64_t b = s0; b < s1; b++, p += bstep, o++) {
        __m512i dg[16][3][3]; /* group, digit: mag, m32, neg (q6_times) */
        for (int q = 0; q < 16; q++) {
            __m512i x = _mm512_add_epi32(_mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)(p + 32 + 16 * q))),
                                         _mm512_set1_epi32(171));
            for (int i = 0; i < 3; i++) { /* x < 343: floor(x / 7) = (x * 9363) >> 16 */
                const __m512i x7 = _mm512_srli_epi32(_mm512_mullo_epi32(x, _mm512_set1_epi32(9363)), 16);
                const __m512i d = _mm512_sub_epi32(_mm512_sub_epi32(x, _mm512_mullo_epi32(x7, _mm512_set1_epi32(7))),
                                                   _mm512_set1_epi32(3));
                const __m512i m = _mm512_abs_epi32(d);
                x = x7;
                dg[q][i][0] = _mm512_or_si512(m, _mm512_slli_epi32(m, 16));
                dg[q][i][1] = _mm512_mullo_epi32(m, _mm512_set1_epi32(0x20202020));
                dg[q][i][2] = _mm512_srai_epi32(d, 31);
            }
        }
        _mm512_storeu_ps(o->dx, _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)p)));
        for (int h = 0; h < 2; h++)
            for (int ci = 0; ci < 8; ci++) { /* u1..u4 of chunk ci (values 128h + 4ci + {0, 32, 64,
                                             * 96}, unsigned 0..63): groups 8h + {0, 2, 4, 6} +
                                             * (ci >= 4), B row ci % 4 */
                const uint8_t *pa = p + loom_repack_q6k_ql((size_t)(16 * h + ci));
                const uint8_t *pb = p + loom_repack_q6k_ql((size_t)(16 * h + 8 + ci));
                const __m512i qa = _mm512_loadu_si512((const void *)pa), qb = _mm512_loadu_si512((const void *)pb);
                const __m512i qv = _mm512_loadu_si512((const void *)(p + loom_repack_q6k_qh((size_t)(8 * h + ci))));
                const __m512i u[4] = {
                    _mm512_or_si512(_mm512_and_si512(qa, m4), _mm512_and_si512(_mm512_slli_epi16(qv, 4), m30)),
                    _mm512_or_si512(_mm512_and_si512(qb, m4), _mm512_and_si512(_mm512_slli_epi16(qv, 2), m30)),
                    _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(qa, 4), m4), _mm512_and_si512(qv, m30)),
                    _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(qb, 4), m4),
                                    _mm512_and_si512(_mm512_srli_epi16(qv, 2), m30))};
                for (int v = 0; v < 4; v++) {
                    const int grp = 8 * h + 2 * v + (ci >= 4);
                    const size_t off = 256 * (size_t)grp + 64 * (size_t)(ci % 4);
                    for (int i = 0; i < 3; i++)
                        _mm512_store_si512((void *)(o->q[i] + off), q6_times(u[v], dg[grp][i]));
                }
            }
    }
}

/* acc[t] of 16 columns += the super-block whose digit tiles C0, C1, C2 are in cb */
static LOOM_ALWAYS_INLINE void fold_q6ks(__m512 acc[16], const int32_t *cb, const aq_sbs *o, const float *dy,
                                         int64_t stride) {
    const __m512 dx = _mm512_loadu_ps(o->dx);
    LOOM_UNROLL_ALL
    for (int t = 0; t < 16; t++) {
        const __m512i c2 = _mm512_load_si512((const void *)(cb + 512 + 16 * t));
        const __m512i t1 = _mm512_add_epi32(_mm512_load_si512((const void *)(cb + 256 + 16 * t)),
                                            _mm512_sub_epi32(_mm512_slli_epi32(c2, 3), c2));
        const __m512i is = _mm512_add_epi32(_mm512_load_si512((const void *)(cb + 16 * t)),
                                            _mm512_sub_epi32(_mm512_slli_epi32(t1, 3), t1));
        acc[t] = _mm512_fmadd_ps(_mm512_mul_ps(dx, _mm512_set1_ps(dy[t * stride])), _mm512_cvtepi32_ps(is), acc[t]);
    }
}

/* 16 columns [j, j + 16) x row group g over the prepared super-blocks [s0, s1) (o[0] is
 * s0), k_cfg64, for Q4_K / Q5_K (q6 false: TDPBSUD into C_l, C_h; fold_kqs) and Q6_K (q6:
 * TDPBSSD into C0..C2; fold_q6ks): per 64 values one A tile (4, 5 alternating) times each
 * B plane (6, 7, 6) into C tiles 0..2; the products of super-block b run while the vector
 * unit folds b - 1, then the C tiles go to cb[half]. */
static LOOM_ALWAYS_INLINE void tile16_sc(bool q6, const uint8_t *a, size_t as, const aq_sbs *o, const float *dy,
                                         const int32_t *bs, int64_t stride, float *c, size_t ldc, int64_t row0,
                                         int64_t j, int64_t s0, int64_t s1) {
    _Alignas(64) int32_t cb[2][768];
    __m512 acc[16];
    float *cp = c + (size_t)j * ldc + (size_t)row0;
    LOOM_UNROLL_ALL
    for (int t = 0; t < 16; t++) acc[t] = s0 == 0 ? _mm512_setzero_ps() : _mm512_loadu_ps(cp + (size_t)t * ldc);
    const uint8_t *ab = a + (size_t)j * as + 4; /* qs of super-block 0 of column j */
    int half = 0;
    for (int64_t b = s0; b < s1; b++, half ^= 1) {
        const uint8_t *a0 = ab + (size_t)b * sizeof(block_q8_K);
        const aq_sbs *ob = o + (b - s0);
        _tile_zero(0);
        _tile_zero(1);
        if (q6) _tile_zero(2);
#define SC_DP(C, TA, TB)                              \
    do {                                              \
        if (q6) _tile_dpbssd(C, TA, TB);              \
        else _tile_dpbsud(C, TA, TB);                 \
    } while (0)
#define SC_STEP(P, TA)                                \
    do {                                              \
        TLOAD(TA, a0 + 64 * (P), as);                 \
        TLOAD(6, ob->q[0] + 1024 * (P), 64);          \
        SC_DP(0, TA, 6);                              \
        TLOAD(7, ob->q[1] + 1024 * (P), 64);          \
        SC_DP(1, TA, 7);                              \
        if (q6) {                                     \
            TLOAD(6, ob->q[2] + 1024 * (P), 64);      \
            _tile_dpbssd(2, TA, 6);                   \
        }                                             \
    } while (0)
        SC_STEP(0, 4);
        SC_STEP(1, 5);
        SC_STEP(2, 4);
        SC_STEP(3, 5);
#undef SC_STEP
#undef SC_DP
        if (b > s0) {
            if (q6) fold_q6ks(acc, cb[half ^ 1], ob - 1, dy + (b - 1 - s0), stride);
            else fold_kqs(acc, cb[half ^ 1], ob - 1, dy + (b - 1 - s0), bs + 4 * (b - 1 - s0), stride);
        }
        __asm__ volatile("" ::: "memory"); /* the fold's loads of cb[half ^ 1] stay above */
        _tile_stored(0, cb[half], 64);
        _tile_stored(1, cb[half] + 256, 64);
        if (q6) _tile_stored(2, cb[half] + 512, 64);
        __asm__ volatile("" ::: "memory");
    }
    const aq_sbs *ol = o + (s1 - 1 - s0);
    if (q6) fold_q6ks(acc, cb[half ^ 1], ol, dy + (s1 - 1 - s0), stride);
    else fold_kqs(acc, cb[half ^ 1], ol, dy + (s1 - 1 - s0), bs + 4 * (s1 - 1 - s0), stride);
    LOOM_UNROLL_ALL
    for (int t = 0; t < 16; t++) _mm512_storeu_ps(cp + (size_t)t * ldc, acc[t]);
}

static void tile16_kqs(const uint8_t *a, size_t as, const aq_sbs *o, const float *dy, const int32_t *bs,
                       int64_t stride, float *c, size_t ldc, int64_t row0, int64_t j, int64_t s0, int64_t s1) {
    tile16_sc(false, a, as, o, dy, bs, stride, c, ldc, row0, j, s0, s1);
}
static void tile16_q6ks(const uint8_t *a, size_t as, const aq_sbs *o, const float *dy, int64_t stride, float *c,
                        size_t ldc, int64_t row0, int64_t j, int64_t s0, int64_t s1) {
    tile16_sc(true, a, as, o, dy, NULL, stride, c, ldc, row0, j, s0, s1);
}

enum { AQ_Q4K, AQ_Q5K, AQ_Q6K, AQ_IQ4XS };

static void amx_kq(int kind, int64_t k, const void *w, size_t ws, const void *a, size_t as, float *c, size_t ldc,
                   int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
    const int64_t nb = k / 256;
    union { /* prepared super-blocks of one 16-row group and k chunk */
        aq_sb u[AQ_KC];
        aq_sbs s[AQ_KC]; /* Q4_K, Q5_K, Q6_K */
    } o;
    float dy[AI_JC * AQ_KC];
    int32_t bs[AI_JC * AQ_KC * 4];
    for (int64_t jc = j0; jc < j1; jc += AI_JC) {
        const int64_t jn = j1 - jc < AI_JC ? j1 - jc : AI_JC;
        for (int64_t s0 = 0; s0 < nb; s0 += AQ_KC) {
            const int64_t s1 = s0 + AQ_KC < nb ? s0 + AQ_KC : nb;
            for (int64_t jj = 0; jj < jn; jj++) {
                const block_q8_K *y = (const block_q8_K *)((const uint8_t *)a + (size_t)(jc + jj) * as);
                for (int64_t b = s0; b < s1; b++) {
                    const int64_t e = jj * AQ_KC + (b - s0);
                    dy[e] = y[b].d;
                    for (int t = 0; t < 4; t++) {
                        const int lo = y[b].bsums[4 * t] + y[b].bsums[4 * t + 1];
                        const int hi = y[b].bsums[4 * t + 2] + y[b].bsums[4 * t + 3];
                        bs[4 * e + t] = (int32_t)(((uint32_t)hi << 16) | ((uint32_t)lo & 0xFFFFu));
                    }
                }
            }
            for (int64_t g = i0 / LOOM_REPACK_ROWS; g < i1 / LOOM_REPACK_ROWS; g++) {
                if (kind == AQ_Q6K) prep_q6ks(w, ws, g, s0, s1, o.s);
                else if (kind == AQ_IQ4XS) prep_iq4xs(w, ws, g, s0, s1, o.u);
                else prep_kqs(kind == AQ_Q5K, w, ws, g, s0, s1, o.s);
                for (int64_t jj = 0; jj < jn; jj += 16) {
                    const float *d = dy + jj * AQ_KC;
                    const int32_t *q = bs + 4 * jj * AQ_KC;
                    const int64_t r0 = g * LOOM_REPACK_ROWS;
                    if (kind == AQ_Q6K) tile16_q6ks(a, as, o.s, d, AQ_KC, c, ldc, r0, jc + jj, s0, s1);
                    else if (kind == AQ_IQ4XS) tile16_x8(a, as, o.u, d, AQ_KC, c, ldc, r0, 0xFFFF, jc + jj, s0, s1);
                    else tile16_kqs(a, as, o.s, d, q, AQ_KC, c, ldc, r0, jc + jj, s0, s1);
                }
            }
        }
    }
}

/* ---- the grid / ternary IQ and TQ types (IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S, IQ1_S,
 * IQ1_M, TQ1_0, TQ2_0; plain rows, not repacked) x Q8_K, the kernels.h gemm contract.
 * Each super-block of 16 weight rows is decoded and transposed into B-tile order once per
 * call and k chunk (loom_iq16_prep, kernels_iq16_avx512vnni.c: signed values, integer
 * scales per group of 32 or 16 values) and multiplied by every column tile of the call
 * with the K-quant tile above (one product per group). The int32 super-block sum
 * sum_s sc[s] C_s is the scalar reference's; each super-block adds (d * dy) * sum to the
 * float accumulator and the type's power-of-two factor is applied at the end, as in the
 * reference (the avx512vnni level's 16-row tile computes the same values). */
#define IQ_JC 256  /* columns per column chunk (the decoded rows are reused by all of them) */
#define IQ_ROWS 64 /* rows per call asked of the planner (kernels.h gemm_tile_rows) */

static bool amx_iq(loom_type wt, int64_t k, const void *w, size_t ws, const void *a, size_t as, float *c, size_t ldc,
                   int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
    loom_iqg_prep_fn prep;
    size_t bb;
    float post;
    if (!loom_iqg_type(wt, &prep, &bb, &post)) return false;
    /* scales per 16 values: two groups of 16 per 32-value sub-block */
    const int NS = loom_iq16_groups(wt);
    const int64_t nb = k / 256;
    aq_sb o[AQ_KC];
    float dy[IQ_JC * AQ_KC];
    _tile_loadconfig(NS == 16 ? &k_cfg16 : &k_cfg);
    for (int64_t jc = j0; jc < j1; jc += IQ_JC) {
        const int64_t jn = j1 - jc < IQ_JC ? j1 - jc : IQ_JC;
        for (int64_t s0 = 0; s0 < nb; s0 += AQ_KC) {
            const int64_t s1 = s0 + AQ_KC < nb ? s0 + AQ_KC : nb;
            for (int64_t jj = 0; jj < jn; jj++) {
                const block_q8_K *y = (const block_q8_K *)((const uint8_t *)a + (size_t)(jc + jj) * as);
                for (int64_t b = s0; b < s1; b++) dy[jj * AQ_KC + (b - s0)] = y[b].d;
            }
            for (int64_t i = i0; i < i1; i += 16) {
                const int nr = i1 - i < 16 ? (int)(i1 - i) : 16;
                const __mmask16 rm = (__mmask16)((1u << nr) - 1);
                loom_iq16_prep(prep, bb, NS, false, w, ws, i, nr, s0, s1, o);
                for (int64_t jj = 0; jj < jn; jj += 16) {
                    if (NS == 16) tile16_x16(a, as, o, dy + jj * AQ_KC, AQ_KC, c, ldc, i, rm, jc + jj, s0, s1);
                    else tile16_x8(a, as, o, dy + jj * AQ_KC, AQ_KC, c, ldc, i, rm, jc + jj, s0, s1);
                }
            }
        }
        if (post != 1.f)
            for (int64_t j = jc; j < jc + jn; j++)
                for (int64_t i = i0; i < i1; i++) c[(size_t)j * ldc + (size_t)i] *= post;
    }
    _tile_release();
    return true;
}

/* ---- Q5_0, Q4_1 and Q5_1 (plain rows, not repacked) x Q8_0 / Q8_1, the kernels.h gemm
 * contract. Per call, set of up to LG_ROWS rows and k chunk of AI_KC blocks, the blocks of
 * each 16 rows are decoded once to signed int8 in B-tile order (loom_lg16_prep,
 * kernels_legacy_avx512vnni.c: Q5_0 q - 16, Q4_1 / Q5_1 the codes); then every 16-column
 * tile of the call runs tile16_body on them, its A tiles loaded straight from the
 * activation rows (stride: the row bytes). Per block acc += (d_w d_a) C, and for Q4_1 /
 * Q5_1 + m_w s_a, s_a the activation block's stored d x sum: the scalar reference's
 * terms. The engine gives these types 64 x 256 tiles (kernels.h gemm_tile_rows / _cols),
 * so a block is decoded once per 256 columns. */
#define LG_ROWS 64
static void tile16_lg(bool mins, const int8_t *ap, size_t ablk, size_t astr, const int8_t *bq, const float *dw,
                      const float *mw, const float *da, const float *sa, float *c, size_t ldc, int64_t row0,
                      __mmask16 rm, int64_t j, int64_t s0, int64_t s1) {
    if (mins) tile16_body(true, ap, ablk, astr, bq, dw, mw, da, sa, AI_KC, c, ldc, row0, rm, j, s0, s1);
    else tile16_body(false, ap, ablk, astr, bq, dw, mw, da, sa, AI_KC, c, ldc, row0, rm, j, s0, s1);
}

/* columns [j0, j1) (a multiple of 16); rp: the weights in the repacked layout
 * (quant/repack.h; i0, i1 multiples of 16), prepared by loom_lg16_prep_rp into the same
 * blocks (the kernels.h gemm_repacked contract, bit-identical to its reference) */
static bool amx_legacy(bool rp, loom_type wt, int64_t k, const void *w, size_t ws, const void *a, size_t as, float *c,
                       size_t ldc, int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
    if ((wt != LOOM_TYPE_Q5_0 && wt != LOOM_TYPE_Q4_1 && wt != LOOM_TYPE_Q5_1) || k % 32 != 0) return false;
    const bool mins = wt != LOOM_TYPE_Q5_0;
    const size_t oq = mins ? offsetof(block_q8_1, qs) : offsetof(block_q8_0, qs);
    const int64_t nb = k / 32;
    _Alignas(64) int8_t bq[LG_ROWS / 16][AI_KC * 512];
    _Alignas(64) float dw[LG_ROWS / 16][AI_KC * 16], mw[LG_ROWS / 16][AI_KC * 16];
    float da[AI_JC * AI_KC], sa[AI_JC * AI_KC];
    _tile_loadconfig(&k_cfg);
    for (int64_t r0 = i0; r0 < i1; r0 += LG_ROWS) {
        const int64_t r1 = i1 - r0 < LG_ROWS ? i1 : r0 + LG_ROWS;
        for (int64_t s0 = 0; s0 < nb; s0 += AI_KC) {
            const int64_t s1 = s0 + AI_KC < nb ? s0 + AI_KC : nb;
            for (int64_t i = r0; i < r1; i += 16)
                if (rp) /* rows in whole groups */
                    loom_lg16_prep_rp(wt, true, (const uint8_t *)w, ws, i / 16, s0, s1, bq[(i - r0) / 16],
                                      dw[(i - r0) / 16], mw[(i - r0) / 16]);
                else
                    loom_lg16_prep(wt, true, (const uint8_t *)w, ws, i, r1 - i < 16 ? (int)(r1 - i) : 16, s0, s1,
                                   bq[(i - r0) / 16], dw[(i - r0) / 16], mw[(i - r0) / 16]);
            for (int64_t jc = j0; jc < j1; jc += AI_JC) {
                const int64_t jn = j1 - jc < AI_JC ? j1 - jc : AI_JC;
                loom_lg_act_prep(!mins, (const uint8_t *)a, as, jc, jn, s0, s1, AI_KC, da, sa, NULL);
                for (int64_t i = r0; i < r1; i += 16) {
                    const int nr = r1 - i < 16 ? (int)(r1 - i) : 16;
                    const int64_t g = (i - r0) / 16;
                    for (int64_t jj = 0; jj < jn; jj += 16)
                        tile16_lg(mins, (const int8_t *)a + (size_t)(jc + jj) * as + oq + (size_t)s0 * (oq + 32), oq + 32, as, bq[g], dw[g], mw[g], da + jj * AI_KC,
                                  sa + jj * AI_KC, c, ldc, i, (__mmask16)((1u << nr) - 1), jc + jj, s0, s1);
                }
            }
        }
    }
    _tile_release();
    return true;
}

/* the avx512vnni table's gemm_repacked (set once by loom_kernels_fill_amx_int8, inside
 * the dispatcher's pthread_once, before any use) */
static loom_gemm_fn g_below;

static bool gemm_repacked_amx(loom_type wt, int64_t k, const void *w, size_t ws, const void *a, size_t as, float *c,
                              size_t ldc, int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
    const int kind = wt == LOOM_TYPE_Q8_0 ? AK_Q8 : wt == LOOM_TYPE_Q4_0 ? AK_Q4 : wt == LOOM_TYPE_IQ4_NL ? AK_IQ4 : -1;
    const int64_t full = (j1 - j0) / 16 * 16; /* columns in whole 16-column tiles */
    const int kq = wt == LOOM_TYPE_Q4_K ? AQ_Q4K : wt == LOOM_TYPE_Q5_K ? AQ_Q5K : wt == LOOM_TYPE_Q6_K ? AQ_Q6K
                 : wt == LOOM_TYPE_IQ4_XS ? AQ_IQ4XS : -1;
    if (kq >= 0 && full >= AI_MIN_COLS && k > 0 && k % 256 == 0 && i0 < i1) {
        _tile_loadconfig(kq == AQ_IQ4XS ? &k_cfg : &k_cfg64);
        amx_kq(kq, k, w, ws, a, as, c, ldc, i0, i1, j0, j0 + full);
        _tile_release();
        return full == j1 - j0 || g_below(wt, k, w, ws, a, as, c, ldc, i0, i1, j0 + full, j1);
    }
    if ((wt == LOOM_TYPE_Q4_1 || wt == LOOM_TYPE_Q5_0 || wt == LOOM_TYPE_Q5_1) && full >= AI_MIN_COLS && k > 0 &&
        i0 < i1 && i0 % 16 == 0 && i1 % 16 == 0 && amx_legacy(true, wt, k, w, ws, a, as, c, ldc, i0, i1, j0, j0 + full))
        return full == j1 - j0 || g_below(wt, k, w, ws, a, as, c, ldc, i0, i1, j0 + full, j1);
    if (kind < 0 || j1 - j0 < AI_MIN_COLS || k <= 0 || k % 32 != 0 || i0 >= i1)
        return g_below(wt, k, w, ws, a, as, c, ldc, i0, i1, j0, j1);
    const int64_t nb = k / 32;
    _Alignas(64) int8_t bq[AI_KC * 512];
    _Alignas(64) float dw[AI_KC * 16];
    float da[AI_JC * AI_KC];
    _Alignas(64) int8_t ap[AI_JC * AI_KC * 32]; /* A tiles: [column tile][block][16 x 32] */
    _tile_loadconfig(&k_cfg);
    for (int64_t jc = j0; jc < j0 + full; jc += AI_JC) {
        const int64_t jn = j0 + full - jc < AI_JC ? j0 + full - jc : AI_JC;
        for (int64_t s0 = 0; s0 < nb; s0 += AI_KC) {
            const int64_t s1 = s0 + AI_KC < nb ? s0 + AI_KC : nb;
            for (int64_t jj = 0; jj < jn; jj++) {
                const block_q8_0 *y = (const block_q8_0 *)((const uint8_t *)a + (size_t)(jc + jj) * as);
                int8_t *dst = ap + (jj / 16) * (AI_KC * 512) + (jj % 16) * 32;
                for (int64_t b = s0; b < s1; b++) {
                    da[jj * AI_KC + (b - s0)] = _cvtsh_ss(y[b].d);
                    memcpy(dst + 512 * (b - s0), y[b].qs, 32);
                }
            }
            for (int64_t g = i0 / LOOM_REPACK_ROWS; g < i1 / LOOM_REPACK_ROWS; g++) {
                prep_weights(kind, w, ws, g, s0, s1, bq, dw);
                for (int64_t jj = 0; jj < jn; jj += 16)
                    tile16(ap + (jj / 16) * (AI_KC * 512), bq, dw, da + jj * AI_KC, AI_KC, c, ldc, g, jc + jj, s0, s1);
            }
        }
    }
    _tile_release();
    if (full < j1 - j0) return g_below(wt, k, w, ws, a, as, c, ldc, i0, i1, j0 + full, j1);
    return true;
}

/* the avx512vnni table's gemm (the IQ / TQ tile and the other types) and the amx table
 * itself (its vec_dots), set with g_below */
static loom_gemm_fn g_below_gemm;
static const loom_kernels *g_tab;

static bool gemm_amx(loom_type wt, int64_t k, const void *w, size_t ws, const void *a, size_t as, float *c,
                     size_t ldc, int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
    const int64_t full = (j1 - j0) / 16 * 16;
    if (full < AI_MIN_COLS || k <= 0 || i0 >= i1 ||
        !((k % 256 == 0 && amx_iq(wt, k, w, ws, a, as, c, ldc, i0, i1, j0, j0 + full)) ||
          amx_legacy(false, wt, k, w, ws, a, as, c, ldc, i0, i1, j0, j0 + full)))
        return g_below_gemm && g_below_gemm(wt, k, w, ws, a, as, c, ldc, i0, i1, j0, j1);
    if (full == j1 - j0 || (g_below_gemm && g_below_gemm(wt, k, w, ws, a, as, c, ldc, i0, i1, j0 + full, j1)))
        return true;
    for (int64_t j = j0 + full; j < j1; j++) /* a remainder the tile below declines: vec_dot */
        for (int64_t i = i0; i < i1; i++)
            g_tab->dot[wt].vec_dot(k, c + (size_t)j * ldc + (size_t)i, (const uint8_t *)w + (size_t)i * ws,
                                   (const uint8_t *)a + (size_t)j * as);
    return true;
}

/* k: the amx table (a copy of the avx512vnni one). Its gemm_repacked stays in charge of
 * the other repacked types and of calls with few columns; its gemm of the types the AMX
 * tiles do not take. */
void loom_kernels_fill_amx_int8(loom_kernels *k) {
    g_below = k->gemm_repacked;
    k->gemm_repacked = gemm_repacked_amx;
    g_below_gemm = k->gemm;
    g_tab = k;
    k->gemm = gemm_amx;
    loom_iqg_wide_tiles(k, true, IQ_ROWS, IQ_JC);
}
