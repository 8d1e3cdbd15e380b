/*
 * kernels_amx.c - AMX-BF16 (TDPBF16PS) gemm tiles for F16 and BF16 weights x F16 / BF16
 * activations (the kernels.h loom_gemm_fn contract), level "amx".
 *
 * Shapes: with at least AMX_MIN_COLS_BF16 (16) / AMX_MIN_COLS_F16 (64) activation
 * columns per call (prompt shapes) the tile is computed with AMX; fewer columns (decode:
 * memory bound; small batches) go to the avx512vnni table's gemm (the AVX-512 tile,
 * loom_gemm_float_avx512), as does every other weight type.
 *
 * Operands. One TDPBF16PS computes C[16 x 16] += A[16 x 32] B[32 x 16] with BF16 inputs
 * and FP32 accumulation. Here a C tile row is an activation column j and a C tile column
 * a weight row i, so a C tile row is 16 consecutive outputs C[j*ldc + i .. i+15] and
 * full tiles are loaded / stored in place (stride ldc floats). The A operand is the
 * activation rows as they are (K contiguous); the B operand is the weight rows in the
 * "VNNI" layout: B row r holds the k-pair (2r, 2r+1) of each of the 16 weight rows, i.e.
 * a 16 x 16 transpose of 32-bit pairs, done per call into a stack scratch (packed once
 * per k chunk and 32-row block, reused for every column of the call).
 *
 * Loops: column blocks of NB, k chunks of KC (BF16 1024, F16 128), row blocks of 32
 * (packed), then pairs of column tiles: 2 x 2 C tiles (tmm0-3), two A tiles (tmm4-5)
 * and two B tiles (tmm6-7) per step of 32 k-values: 4 loads per 4 TDPBF16PS (BF16),
 * 10 loads per 16 (F16). C tiles live in the output between chunks. Scratch on the
 * stack: BF16 116 KiB, F16 148 KiB. The engine gives this level tiles of up to
 * AMX_TILE_ROWS x AMX_TILE_COLS (kernels.h gemm_float_rows / _cols; ops_matmul.c
 * halves them while that leaves < 16 tiles): per call the weight packing is
 * amortised over the columns and the F16 activation split over the rows (64 x 128 ->
 * 128 x 256 measured +10-20%; BF16 per-call GFLOP/s 32 x 64: ~280, 32 x 128: ~540).
 * Weight rows are read 16 at a time 2 KiB or more apart, so they are prefetched
 * PF_STEPS steps ahead; activation rows are split row by row (sequential reads).
 *
 * BF16: products of BF16 values are exact in FP32, so the only rounding is the FP32
 * accumulation (per C element a sequence of fused pair additions in k order), the same
 * order of error as a float dot product. Activation tiles are loaded straight from the
 * activation rows; only a k tail (< 32 values) and a column remainder (< 16 columns)
 * are copied zero-padded into scratch tiles.
 * F16: AMX on this CPU has no FP16 input. Each F16 value v is split EXACTLY into
 * v = hi + lo, hi = v truncated to BF16 (8 significant bits), lo = v - hi: F16 has 11
 * significant bits, so lo has at most 3 and is a BF16 value too, and every F16 value
 * and part is a normal FP32 / BF16 number (exponent range). All four products
 * wh.ah + wh.al + wl.ah + wl.al are computed, each exact in FP32, so w.a is exact
 * before the FP32 accumulation: the error bound is the BF16 one (a float sum of k
 * exact products). Dropping wl.al (3 products) would save a quarter of the TDPBF16PS
 * work but add up to 2^-14 sum_k |w_k a_k| with truncation (2^-16 with a rounded hi,
 * which costs more conversion work), and the saving is small: a step needs 10 tile
 * loads for 3 products as for 4 (each product changes one operand pair), and a perf
 * profile of 128 x 256 tiles (K = 4096) puts TDPBF16PS at ~30% of the time, tile loads
 * ~25%, the operand loads and splits ~45%; 3 vs 4 products measured the same within
 * the noise of the shared VM (1.1-1.8e2 GFLOP/s both, 64 x 128 tiles, K = 2048). So all
 * 4: F16 results have the BF16 error bound. Both F16 operands are split per call
 * (activations once per k chunk for the call's columns, weights with the transpose).
 * Denormals: TDPBF16PS treats BF16 denormal inputs as zero and flushes denormal FP32
 * results (and VCVTNE2PS2BF16 does the same for the splits). No F16 value or split part
 * is a BF16 denormal (the smallest F16 magnitude, 2^-24, is a normal BF16), and a BF16
 * weight or activation below 2^-126 is irrelevant in practice; results differ from the
 * reference only in such denormal corners, which the tests do not assert.
 *
 * Order of summation per output: k steps of 32 in order (within one, the hardware's
 * pair order); for F16 within a step hh, lh, ll, hl. Chunks of k are accumulated
 * by storing the C tile to the output and loading it back (exact), so a result depends
 * only on its row, its column and K: not on the tiling, the call's ranges or the thread
 * count. Tile state is per thread: each call loads the tile configuration and releases
 * it at the end. The OS must have granted XTILEDATA (kernels_dispatch.c asks once).
 */
#include "cpu/amx_tile.h"
#include "cpu/x86_transpose.h"
#include "cpu/kernels_internal.h"

#include <immintrin.h>
#include <string.h>

#define ALWAYS_INLINE LOOM_ALWAYS_INLINE

/* Fewer activation columns per call: the AVX-512 tile. Per call the weight packing
 * (F16: with the split) is amortised over the columns; GFLOP/s of 128-row calls with
 * P columns, K = 2048, AMX vs AVX-512 (32-row calls), one thread, best of 15, three
 * interleaved rounds on the shared VM: BF16 P = 8: 76 vs 76, 12: 110 vs 92, 16: 160 vs
 * 96; F16 P = 16: 49-54 vs 69-76, 32: 69-75 vs 79-101, 64: 136-141 vs 71-110, 128:
 * 137-159 vs 83-107. */
#define AMX_MIN_COLS_BF16 16
#define AMX_MIN_COLS_F16 64
/* Prompt tiles the engine gives this gemm (kernels.h gemm_float_rows / _cols): the
 * weight packing is amortised over the columns of a call, the F16 activation split
 * over its rows */
#define AMX_TILE_ROWS 128
#define AMX_TILE_COLS 256
#define KS 32           /* k-values per TDPBF16PS step */
#define RB 32           /* weight rows per packed block (2 row tiles) */
#define NB 256          /* activation columns per converted block (F16) / tail block (BF16) */
#define KC_BF16 1024    /* k-values per chunk, BF16 (weight scratch RB x KC_BF16 x 2 B) */
#define KC_F16 128      /* k-values per chunk, F16 (activation scratch NB x KC_F16 x 4 B) */
#define TILE_U16 (16 * KS) /* uint16 per 16 x 32 operand tile (1 KiB) */
#define PF_STEPS 4         /* weight prefetch distance in k steps (of 64 bytes per row) */

/* tiles 0-3: C (jt, t) = (0,0), (0,1), (1,0), (1,1); 4, 5: A of column tile 0, 1;
 * 6, 7: B of row tile 0, 1; all 16 rows x 64 bytes */
static const amx_cfg k_cfg = {1, 0, {0}, {64, 64, 64, 64, 64, 64, 64, 64}, {16, 16, 16, 16, 16, 16, 16, 16}};

/* ---- operand preparation ---- */

/* 32 F16 -> hi, lo BF16 with v = hi + lo exactly: hi = v truncated to 8 significant bits
 * (as float: the low 16 bits cleared), lo = v - hi (exact: same binade; at most 3
 * significant bits, so a BF16 value); lo = 0 where v == hi (also for infinities, where
 * the difference would be NaN). Both packed by VCVTNE2PS2BF16, exact here. */
static ALWAYS_INLINE void split_f16(__m512i v, __m512i *hi, __m512i *lo) {
    const __m512i top = _mm512_set1_epi32((int)0xFFFF0000u);
    const __m512 f0 = _mm512_cvtph_ps(_mm512_castsi512_si256(v));
    const __m512 f1 = _mm512_cvtph_ps(_mm512_extracti64x4_epi64(v, 1));
    const __m512 h0 = _mm512_castsi512_ps(_mm512_and_si512(_mm512_castps_si512(f0), top));
    const __m512 h1 = _mm512_castsi512_ps(_mm512_and_si512(_mm512_castps_si512(f1), top));
    const __mmask16 d0 = _mm512_cmp_ps_mask(f0, h0, _CMP_NEQ_UQ), d1 = _mm512_cmp_ps_mask(f1, h1, _CMP_NEQ_UQ);
    *hi = (__m512i)_mm512_cvtne2ps_pbh(h1, h0);
    *lo = (__m512i)_mm512_cvtne2ps_pbh(_mm512_maskz_sub_ps(d1, f1, h1), _mm512_maskz_sub_ps(d0, f0, h0));
}


/* Weight rows [i, i + nr) (nr <= 16; missing rows zero) x k-values [k0, k0 + kl) into
 * nst = ceil(kl / 32) B tiles (VNNI pairs, zero-padded k): bh[s * TILE_U16 ..]; F16
 * also the lo parts into bl. */
static ALWAYS_INLINE void pack_w(int bf, const uint8_t *W, size_t ws, int64_t i, int nr, int64_t k0, int64_t kl,
                                 uint16_t *bh, uint16_t *bl) {
    const int64_t nst = (kl + KS - 1) / KS;
    for (int64_t s = 0; s < nst; s++) {
        const int64_t kv = kl - s * KS < KS ? kl - s * KS : KS;
        const __mmask32 m = kv == KS ? ~(__mmask32)0 : (((__mmask32)1 << kv) - 1);
        __m512i x[16];
        for (int r = 0; r < 16; r++) {
            const uint16_t *src = (const uint16_t *)(W + (size_t)(i + r) * ws) + k0 + s * KS;
            x[r] = r < nr ? _mm512_maskz_loadu_epi16(m, src) : _mm512_setzero_si512();
            /* 16 rows 2 KiB or more apart: the hardware prefetcher does not follow */
            if (r < nr && s + PF_STEPS < nst) LOOM_PF0((const char *)(src + PF_STEPS * KS));
        }
        loom_transpose16_epi32(x);
        uint16_t *dh = bh + s * TILE_U16;
        if (bf) {
            for (int r = 0; r < 16; r++) _mm512_store_si512((void *)(dh + r * KS), x[r]);
        } else {
            uint16_t *dl = bl + s * TILE_U16;
            for (int r = 0; r < 16; r++) {
                __m512i h, l;
                split_f16(x[r], &h, &l);
                _mm512_store_si512((void *)(dh + r * KS), h);
                _mm512_store_si512((void *)(dl + r * KS), l);
            }
        }
    }
}

/* Activation rows [j, j + nc) (nc <= 16; missing rows zero) x k-values [k0, k0 + kl)
 * into nst A tiles: BF16 copied, F16 split into ah / al. */
static ALWAYS_INLINE void pack_a(int bf, const uint8_t *A, size_t as, int64_t j, int nc, int64_t k0, int64_t kl,
                                 uint16_t *ah, uint16_t *al) {
    const int64_t nst = (kl + KS - 1) / KS;
    for (int r = 0; r < 16; r++) { /* row by row: sequential reads */
        const uint16_t *src = r < nc ? (const uint16_t *)(A + (size_t)(j + r) * as) + k0 : NULL;
        for (int64_t s = 0; s < nst; s++) {
            const int64_t kv = kl - s * KS < KS ? kl - s * KS : KS;
            const __mmask32 m = kv == KS ? ~(__mmask32)0 : (((__mmask32)1 << kv) - 1);
            const __m512i x = src ? _mm512_maskz_loadu_epi16(m, src + s * KS) : _mm512_setzero_si512();
            uint16_t *dh = ah + s * TILE_U16 + r * KS;
            if (bf) {
                _mm512_store_si512((void *)dh, x);
            } else {
                __m512i h, l;
                split_f16(x, &h, &l);
                _mm512_store_si512((void *)dh, h);
                _mm512_store_si512((void *)(al + s * TILE_U16 + r * KS), l);
            }
        }
    }
}

/* ---- C tiles ---- */

typedef struct {
    float *p;      /* output of the tile's first element (row jt, column t) */
    int nc, nr;    /* valid activation columns (tile rows) and weight rows (tile columns) */
    float *tmp;    /* 16 x 16 scratch for partial tiles */
} ctile;

#define C_LOAD(T, ct, ldc, add)                                                                       \
    do {                                                                                              \
        if (!(add)) {                                                                                 \
            _tile_zero(T);                                                                            \
        } else if ((ct).nc == 16 && (ct).nr == 16) {                                                  \
            TLOAD(T, (ct).p, (ldc) * sizeof(float));                                            \
        } else {                                                                                      \
            memset((ct).tmp, 0, 16 * 16 * sizeof(float));                                            \
            for (int q_ = 0; q_ < (ct).nc; q_++)                                                      \
                memcpy((ct).tmp + 16 * q_, (ct).p + (size_t)q_ * (ldc), (size_t)(ct).nr * sizeof(float)); \
            TLOAD(T, (ct).tmp, 64);                                                             \
        }                                                                                             \
    } while (0)

#define C_STORE(T, ct, ldc)                                                                           \
    do {                                                                                              \
        if ((ct).nc == 16 && (ct).nr == 16) {                                                         \
            _tile_stored(T, (ct).p, (ldc) * sizeof(float));                                           \
        } else {                                                                                      \
            _tile_stored(T, (ct).tmp, 64);                                                            \
            for (int q_ = 0; q_ < (ct).nc; q_++)                                                      \
                memcpy((ct).p + (size_t)q_ * (ldc), (ct).tmp + 16 * q_, (size_t)(ct).nr * sizeof(float)); \
        }                                                                                             \
    } while (0)

/* Where the A tile of one column tile and k step is: pointer and byte stride. */
typedef struct {
    const uint16_t *h, *l; /* l: F16 only */
    size_t stride;
} atile;

/* C tiles 0..3 (+)= A tiles 4/5 x B tiles 6/7 for the present rows (ni) and columns (nj)
 * (tile numbers must be constants: a macro, not a function) */
#define DP_2X2()                                                                         \
    do {                                                                                 \
        _tile_dpbf16ps(0, 4, 6);                                                         \
        if (ni > 1) _tile_dpbf16ps(1, 4, 7);                                             \
        if (nj > 1) _tile_dpbf16ps(2, 5, 6);                                             \
        if (nj > 1 && ni > 1) _tile_dpbf16ps(3, 5, 7);                                   \
    } while (0)

/* One block of nj (1, 2) column tiles x ni (1, 2) row tiles over nst k steps:
 * a[jt](s) gives the A tiles, bh/bl[t] the packed B tiles of row tile t. */
static ALWAYS_INLINE void block(int bf, int nj, int ni, int64_t nst, const atile *a0, const atile *a1, int64_t a_step,
                                const uint16_t *bh0, const uint16_t *bh1, const uint16_t *bl0, const uint16_t *bl1) {
    (void)bl0, (void)bl1;
    for (int64_t s = 0; s < nst; s++) {
        const size_t ao = (size_t)(s * a_step);
        const size_t bo = (size_t)(s * TILE_U16);
        /* hh (BF16: the only product) */
        TLOAD(4, a0->h + ao, a0->stride);
        if (nj > 1) TLOAD(5, a1->h + ao, a1->stride);
        TLOAD(6, bh0 + bo, 64);
        if (ni > 1) TLOAD(7, bh1 + bo, 64);
        DP_2X2();
        if (bf) continue;
        /* lh */
        TLOAD(4, a0->l + ao, a0->stride);
        if (nj > 1) TLOAD(5, a1->l + ao, a1->stride);
        DP_2X2();
        /* ll */
        TLOAD(6, bl0 + bo, 64);
        if (ni > 1) TLOAD(7, bl1 + bo, 64);
        DP_2X2();
        /* hl */
        TLOAD(4, a0->h + ao, a0->stride);
        if (nj > 1) TLOAD(5, a1->h + ao, a1->stride);
        DP_2X2();
    }
}

/* C tiles of column tiles (jt, jt + nj) x row tiles (0, ni) of a row block: load (or
 * zero), accumulate nst steps, store. */
static ALWAYS_INLINE void run_block(int bf, int nj, int ni, ctile ct[2][2], size_t ldc, int add, int64_t nst,
                                    const atile *a0, const atile *a1, int64_t a_step, const uint16_t *bh0,
                                    const uint16_t *bh1, const uint16_t *bl0, const uint16_t *bl1) {
    C_LOAD(0, ct[0][0], ldc, add);
    if (ni > 1) C_LOAD(1, ct[0][1], ldc, add);
    if (nj > 1) C_LOAD(2, ct[1][0], ldc, add);
    if (nj > 1 && ni > 1) C_LOAD(3, ct[1][1], ldc, add);
    block(bf, nj, ni, nst, a0, a1, a_step, bh0, bh1, bl0, bl1);
    C_STORE(0, ct[0][0], ldc);
    if (ni > 1) C_STORE(1, ct[0][1], ldc);
    if (nj > 1) C_STORE(2, ct[1][0], ldc);
    if (nj > 1 && ni > 1) C_STORE(3, ct[1][1], ldc);
}

/* ---- the tile function ---- */

/* Scratch (per call, on the stack): packed weights of one row block and k chunk; F16:
 * the split activations of NB columns x one chunk; BF16: zero-padded copies of the
 * column-remainder tile (one chunk) and of the k-tail step (NB columns). */

static ALWAYS_INLINE void gemm_amx(int bf, int64_t k, const uint8_t *W, size_t ws, const uint8_t *A, size_t as,
                                   float *c, size_t ldc, int64_t i0, int64_t i1, int64_t j0, int64_t j1,
                                   uint16_t *bw_h, uint16_t *bw_l, uint16_t *a_h, uint16_t *a_l) {
    const int64_t KC = bf ? KC_BF16 : KC_F16, nst_max = KC / KS;
    _Alignas(64) float tmp[4][256];
    _tile_loadconfig(&k_cfg);
    for (int64_t jb = j0; jb < j1; jb += NB) {
        const int64_t jn = j1 - jb < NB ? j1 - jb : NB, ntj = (jn + 15) / 16, jfull = jn / 16;
        for (int64_t k0 = 0; k0 < k; k0 += KC) {
            const int64_t kl = k - k0 < KC ? k - k0 : KC, nst = (kl + KS - 1) / KS, sfull = kl / KS;
            if (!bf) {
                for (int64_t jt = 0; jt < ntj; jt++) {
                    const int nc = (int)(jn - 16 * jt < 16 ? jn - 16 * jt : 16);
                    pack_a(0, A, as, jb + 16 * jt, nc, k0, kl, a_h + (size_t)(jt * nst_max) * TILE_U16,
                           a_l + (size_t)(jt * nst_max) * TILE_U16);
                }
            } else {
                if (jfull < ntj) /* column remainder: whole chunk */
                    pack_a(1, A, as, jb + 16 * jfull, (int)(jn - 16 * jfull), k0, kl, a_h, NULL);
                if (sfull < nst) /* k tail of the full column tiles */
                    for (int64_t jt = 0; jt < jfull; jt++)
                        pack_a(1, A, as, jb + 16 * jt, 16, k0 + sfull * KS, kl - sfull * KS,
                               a_h + (size_t)(nst_max + jt) * TILE_U16, NULL);
            }
            for (int64_t ib = i0; ib < i1; ib += RB) {
                const int64_t nr = i1 - ib < RB ? i1 - ib : RB;
                const int ni = nr > 16 ? 2 : 1;
                for (int t = 0; t < ni; t++) {
                    const int nrt = (int)(nr - 16 * t < 16 ? nr - 16 * t : 16);
                    pack_w(bf, W, ws, ib + 16 * t, nrt, k0, kl, bw_h + (size_t)(t * nst_max) * TILE_U16,
                           bf ? NULL : bw_l + (size_t)(t * nst_max) * TILE_U16);
                }
                const uint16_t *bh0 = bw_h, *bh1 = bw_h + (size_t)nst_max * TILE_U16;
                const uint16_t *bl0 = bf ? NULL : bw_l, *bl1 = bf ? NULL : bw_l + (size_t)nst_max * TILE_U16;
                for (int64_t jt = 0; jt < ntj; jt += 2) {
                    const int nj = ntj - jt > 1 ? 2 : 1;
                    ctile ct[2][2];
                    for (int u = 0; u < nj; u++)
                        for (int t = 0; t < ni; t++) {
                            const int64_t jj = jt + u;
                            ct[u][t].p = c + (size_t)(jb + 16 * jj) * ldc + (size_t)(ib + 16 * t);
                            ct[u][t].nc = (int)(jn - 16 * jj < 16 ? jn - 16 * jj : 16);
                            ct[u][t].nr = (int)(nr - 16 * t < 16 ? nr - 16 * t : 16);
                            ct[u][t].tmp = tmp[2 * u + t];
                        }
                    const int add = k0 > 0;
                    if (!bf) {
                        atile a[2];
                        for (int u = 0; u < nj; u++) {
                            a[u].h = a_h + (size_t)((jt + u) * nst_max) * TILE_U16;
                            a[u].l = a_l + (size_t)((jt + u) * nst_max) * TILE_U16;
                            a[u].stride = 64;
                        }
                        if (nj == 2 && ni == 2) run_block(0, 2, 2, ct, ldc, add, nst, &a[0], &a[1], TILE_U16, bh0, bh1, bl0, bl1);
                        else if (nj == 2) run_block(0, 2, 1, ct, ldc, add, nst, &a[0], &a[1], TILE_U16, bh0, bh1, bl0, bl1);
                        else if (ni == 2) run_block(0, 1, 2, ct, ldc, add, nst, &a[0], &a[0], TILE_U16, bh0, bh1, bl0, bl1);
                        else run_block(0, 1, 1, ct, ldc, add, nst, &a[0], &a[0], TILE_U16, bh0, bh1, bl0, bl1);
                        continue;
                    }
                    /* BF16: the full steps straight from the activation rows (or the packed
                     * remainder tile), then the packed tail step */
                    atile a[2], at[2];
                    for (int u = 0; u < nj; u++) {
                        const int64_t jj = jt + u;
                        if (jj < jfull) {
                            a[u].h = (const uint16_t *)(A + (size_t)(jb + 16 * jj) * as) + k0;
                            a[u].stride = as;
                            at[u].h = a_h + (size_t)(nst_max + jj) * TILE_U16;
                        } else {
                            a[u].h = a_h;
                            a[u].stride = 64;
                            at[u].h = a_h + (size_t)sfull * TILE_U16;
                        }
                        a[u].l = at[u].l = NULL;
                        at[u].stride = 64;
                    }
                    /* the direct tiles step by KS values; the packed remainder by a tile */
                    const int64_t step_direct = KS, step_packed = TILE_U16;
                    if (nj == 2 && (jt + 1 < jfull) != (jt < jfull)) {
                        /* mixed pair (a full tile and the remainder): steps differ; split */
                        ctile c1[2][2] = {{ct[0][0], ct[0][1]}, {ct[0][0], ct[0][1]}};
                        ctile c2[2][2] = {{ct[1][0], ct[1][1]}, {ct[1][0], ct[1][1]}};
                        for (int pass = 0; pass < 2; pass++) {
                            ctile(*cc)[2] = pass ? c2 : c1;
                            const atile *ap = &a[pass], *tp = &at[pass];
                            const int64_t st = pass ? step_packed : step_direct;
                            if (ni == 2) run_block(1, 1, 2, cc, ldc, add, sfull, ap, ap, st, bh0, bh1, NULL, NULL);
                            else run_block(1, 1, 1, cc, ldc, add, sfull, ap, ap, st, bh0, bh1, NULL, NULL);
                            if (sfull < nst) {
                                const uint16_t *t0 = bh0 + (size_t)sfull * TILE_U16, *t1 = bh1 + (size_t)sfull * TILE_U16;
                                const int add2 = add || sfull > 0;
                                if (ni == 2) run_block(1, 1, 2, cc, ldc, add2, 1, tp, tp, 0, t0, t1, NULL, NULL);
                                else run_block(1, 1, 1, cc, ldc, add2, 1, tp, tp, 0, t0, t1, NULL, NULL);
                            }
                        }
                        continue;
                    }
                    const int64_t st = jt < jfull ? step_direct : step_packed;
                    if (sfull > 0) {
                        if (nj == 2 && ni == 2) run_block(1, 2, 2, ct, ldc, add, sfull, &a[0], &a[1], st, bh0, bh1, NULL, NULL);
                        else if (nj == 2) run_block(1, 2, 1, ct, ldc, add, sfull, &a[0], &a[1], st, bh0, bh1, NULL, NULL);
                        else if (ni == 2) run_block(1, 1, 2, ct, ldc, add, sfull, &a[0], &a[0], st, bh0, bh1, NULL, NULL);
                        else run_block(1, 1, 1, ct, ldc, add, sfull, &a[0], &a[0], st, bh0, bh1, NULL, NULL);
                    }
                    if (sfull < nst) {
                        const uint16_t *t0 = bh0 + (size_t)sfull * TILE_U16, *t1 = bh1 + (size_t)sfull * TILE_U16;
                        const int add2 = add || sfull > 0;
                        if (nj == 2 && ni == 2) run_block(1, 2, 2, ct, ldc, add2, 1, &at[0], &at[1], 0, t0, t1, NULL, NULL);
                        else if (nj == 2) run_block(1, 2, 1, ct, ldc, add2, 1, &at[0], &at[1], 0, t0, t1, NULL, NULL);
                        else if (ni == 2) run_block(1, 1, 2, ct, ldc, add2, 1, &at[0], &at[0], 0, t0, t1, NULL, NULL);
                        else run_block(1, 1, 1, ct, ldc, add2, 1, &at[0], &at[0], 0, t0, t1, NULL, NULL);
                    }
                }
            }
        }
    }
    _tile_release();
}

/* Scratch sizes (uint16): packed weights of one row block and k chunk; F16: the split
 * activations of NB columns x one chunk; BF16: zero-padded copies of the column
 * remainder tile (one chunk) and of the k-tail step (one tile per column tile). Stack
 * (with the 4 KiB of partial C tiles): BF16 116 KiB, F16 148 KiB. */
#define BF16_BW ((RB / 16) * (KC_BF16 / KS) * TILE_U16)
#define BF16_A ((KC_BF16 / KS + NB / 16) * TILE_U16)
#define F16_BW ((RB / 16) * (KC_F16 / KS) * TILE_U16)
#define F16_A ((NB / 16) * (KC_F16 / KS) * TILE_U16)

static void amx_bf16(int64_t k, const uint8_t *W, size_t ws, const uint8_t *A, size_t as, float *c, size_t ldc,
                     int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
    _Alignas(64) uint16_t bw[BF16_BW];
    _Alignas(64) uint16_t a[BF16_A];
    gemm_amx(1, k, W, ws, A, as, c, ldc, i0, i1, j0, j1, bw, NULL, a, NULL);
}

static void amx_f16(int64_t k, const uint8_t *W, size_t ws, const uint8_t *A, size_t as, float *c, size_t ldc,
                    int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
    _Alignas(64) uint16_t bh[F16_BW], bl[F16_BW];
    _Alignas(64) uint16_t ah[F16_A], al[F16_A];
    gemm_amx(0, k, W, ws, A, as, c, ldc, i0, i1, j0, j1, bh, bl, ah, al);
}

/* the avx512vnni table's gemm (set once by loom_kernels_fill_amx, inside the
 * dispatcher's pthread_once, before any use) */
static loom_gemm_fn g_below;

static bool gemm_float_amx(loom_type wt, int64_t k, const void *w, size_t ws, const void *a, size_t as, float *c,
                           size_t ldc, int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
    if ((wt != LOOM_TYPE_F16 && wt != LOOM_TYPE_BF16) ||
        j1 - j0 < (wt == LOOM_TYPE_F16 ? AMX_MIN_COLS_F16 : AMX_MIN_COLS_BF16) || k <= 0 || i0 >= i1)
        return g_below && g_below(wt, k, w, ws, a, as, c, ldc, i0, i1, j0, j1);
    if (wt == LOOM_TYPE_BF16) amx_bf16(k, w, ws, a, as, c, ldc, i0, i1, j0, j1);
    else amx_f16(k, w, ws, a, as, c, ldc, i0, i1, j0, j1);
    return true;
}

/* k: a copy of the avx512vnni table. Its gemm stays in charge of every other type
 * and of F16 / BF16 tiles with fewer than AMX_MIN_COLS_F16 / _BF16 columns. */
void loom_kernels_fill_amx(loom_kernels *k) {
    g_below = k->gemm;
    k->gemm = gemm_float_amx;
    k->gemm_float_rows = AMX_TILE_ROWS;
    k->gemm_float_cols = AMX_TILE_COLS;
    /* F16 / BF16 prompt products go to the AMX tiles, not the packed AVX-512 path */
    k->gemm_float_pack = NULL;
    k->gemm_float_packed = NULL;
}
