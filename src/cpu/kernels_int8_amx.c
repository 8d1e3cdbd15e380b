/*
 * kernels_int8_amx.c - AMX-INT8 (TDPBSSD) prompt-shape tiles for repacked Q8_0, Q4_0 and
 * IQ4_NL weights x Q8_0 activations (the kernels.h gemm_repacked contract), level "amx"
 * on CPUs with AMX-INT8.
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
#include "cpu/kernels_internal.h"
#include "quant/iq_tables.h"
#include "quant/repack.h"

#include <immintrin.h>
#include <string.h>

#define AI_KC 64        /* blocks (of 32) per k chunk: weight scratch AI_KC x 512 bytes */
#define AI_JC 64        /* columns per column block: activation scales AI_JC x AI_KC */
#define AI_MIN_COLS 16  /* fewer columns per call: the avx512vnni tile */
#define AI_QUAD 4       /* blocks in flight (C tiles 0-3) */
#define AI_TILE_COLS 256 /* columns per prompt tile the engine gives (ops_matmul.c) */

typedef struct {
    uint8_t palette, start_row;
    uint8_t reserved[14];
    uint16_t colsb[16];
    uint8_t rows[16];
} ai_cfg;

/* tiles 0-3: C (16 x 16 int32); 4, 5: A (16 columns x 32 quants); 6, 7: B (8 rows of
 * 16 x 4 quants) */
static const ai_cfg k_cfg = {1, 0, {0}, {64, 64, 64, 64, 32, 32, 64, 64}, {16, 16, 16, 16, 16, 16, 8, 8}};

/* GCC's _tile_loadd asm names no memory operand: a compiler barrier first, so scratch
 * stores made before a tile load are not moved after it. */
#define TLOAD(T, p, s)                     \
    do {                                   \
        __asm__ volatile("" ::: "memory"); \
        _tile_loadd(T, (p), (s));          \
    } while (0)

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

/* acc[t] += (dw * da[t][q]) * float(C[q][t]) for the nq blocks of a step, in block order */
static LOOM_ALWAYS_INLINE void fold(__m512 acc[16], const int32_t *cb, const float *dw, const float *da, int64_t da_stride,
                        int nq) {
    for (int q = 0; q < nq; q++) {
        const __m512 d = _mm512_load_ps(dw + 16 * q);
        LOOM_UNROLL_ALL
        for (int t = 0; t < 16; t++)
            acc[t] = _mm512_fmadd_ps(_mm512_mul_ps(d, _mm512_set1_ps(da[t * da_stride + q])),
                                     _mm512_cvtepi32_ps(_mm512_load_si512((const void *)(cb + 256 * q + 16 * t))),
                                     acc[t]);
    }
}

/* 16 columns [j, j + 16) x row group g over the prepared blocks [s0, s1). Software
 * pipelined: the products of step n are issued (and stored to one half of cb) before
 * the accumulators take step n - 1 from the other half. */
static void tile16(const uint8_t *a, size_t as, const int8_t *bq, const float *dw, const float *da,
                   int64_t da_stride, float *c, size_t ldc, int64_t g, int64_t j, int64_t s0, int64_t s1) {
    _Alignas(64) int32_t cb[2][AI_QUAD * 256];
    __m512 acc[16];
    float *cp = c + (size_t)j * ldc + (size_t)g * LOOM_REPACK_ROWS;
    LOOM_UNROLL_ALL
    for (int t = 0; t < 16; t++) acc[t] = s0 == 0 ? _mm512_setzero_ps() : _mm512_loadu_ps(cp + (size_t)t * ldc);
    const uint8_t *ab = a + (size_t)j * as + 2; /* qs of block 0 of column j */
    int64_t prev = -1; /* the step (its first block, relative to s0) waiting in cb[half ^ 1] */
    int prev_n = 0, half = 0;
    for (int64_t b = s0; b < s1; b += AI_QUAD, half ^= 1) {
        const int nq = s1 - b < AI_QUAD ? (int)(s1 - b) : AI_QUAD;
        const int64_t l = b - s0;
        const uint8_t *a0 = ab + (size_t)b * sizeof(block_q8_0);
        const int8_t *b0 = bq + 512 * l;
        int32_t *out = cb[half];
#define AI_STEP(Q, TA, TB)                            \
    do {                                              \
        TLOAD(TA, a0 + (Q) * sizeof(block_q8_0), as); \
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
        if (prev >= 0) fold(acc, cb[half ^ 1], dw + 16 * prev, da + prev, da_stride, prev_n);
        prev = l;
        prev_n = nq;
    }
    if (prev >= 0) fold(acc, cb[half ^ 1], dw + 16 * prev, da + prev, da_stride, prev_n);
    LOOM_UNROLL_ALL
    for (int t = 0; t < 16; t++) _mm512_storeu_ps(cp + (size_t)t * ldc, acc[t]);
}

/* the avx512vnni table's gemm_repacked (set once by loom_kernels_fill_amx_int8, inside
 * the dispatcher's pthread_once, before any use) */
static loom_gemm_fn g_below;

static bool gemm_repacked_amx(loom_type wt, int64_t k, const void *w, size_t ws, const void *a, size_t as, float *c,
                              size_t ldc, int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
    const int kind = wt == LOOM_TYPE_Q8_0 ? AK_Q8 : wt == LOOM_TYPE_Q4_0 ? AK_Q4 : wt == LOOM_TYPE_IQ4_NL ? AK_IQ4 : -1;
    const int64_t full = (j1 - j0) / 16 * 16; /* columns in whole 16-column tiles */
    if (kind < 0 || j1 - j0 < AI_MIN_COLS || k <= 0 || k % 32 != 0 || i0 >= i1)
        return g_below(wt, k, w, ws, a, as, c, ldc, i0, i1, j0, j1);
    const int64_t nb = k / 32;
    _Alignas(64) int8_t bq[AI_KC * 512];
    _Alignas(64) float dw[AI_KC * 16];
    float da[AI_JC * AI_KC];
    _tile_loadconfig(&k_cfg);
    for (int64_t jc = j0; jc < j0 + full; jc += AI_JC) {
        const int64_t jn = j0 + full - jc < AI_JC ? j0 + full - jc : AI_JC;
        for (int64_t s0 = 0; s0 < nb; s0 += AI_KC) {
            const int64_t s1 = s0 + AI_KC < nb ? s0 + AI_KC : nb;
            for (int64_t jj = 0; jj < jn; jj++) {
                const block_q8_0 *y = (const block_q8_0 *)((const uint8_t *)a + (size_t)(jc + jj) * as);
                for (int64_t b = s0; b < s1; b++) da[jj * AI_KC + (b - s0)] = _cvtsh_ss(y[b].d);
            }
            for (int64_t g = i0 / LOOM_REPACK_ROWS; g < i1 / LOOM_REPACK_ROWS; g++) {
                prep_weights(kind, w, ws, g, s0, s1, bq, dw);
                for (int64_t jj = 0; jj < jn; jj += 16)
                    tile16(a, as, bq, dw, da + jj * AI_KC, AI_KC, c, ldc, g, jc + jj, s0, s1);
            }
        }
    }
    _tile_release();
    if (full < j1 - j0) return g_below(wt, k, w, ws, a, as, c, ldc, i0, i1, j0 + full, j1);
    return true;
}

/* k: the amx table (a copy of the avx512vnni one). Its gemm_repacked stays in charge of
 * the other repacked types and of calls with few columns. */
void loom_kernels_fill_amx_int8(loom_kernels *k) {
    g_below = k->gemm_repacked;
    k->gemm_repacked = gemm_repacked_amx;
    k->gemm_repacked_cols[LOOM_TYPE_Q8_0] = AI_TILE_COLS;
    k->gemm_repacked_cols[LOOM_TYPE_Q4_0] = AI_TILE_COLS;
    k->gemm_repacked_cols[LOOM_TYPE_IQ4_NL] = AI_TILE_COLS;
}
