/*
 * kernels_gemm_bf16dp_avx512vnni.c - BF16 prompt products on VDPBF16PS: the "avx512bf16"
 * level's kernels.h gemm_bf16_pack / gemm_bf16_packed (the pair-panel layout and its
 * reference pack, loom_gemm_bf16_pack_ref, in kernels_scalar.c).
 *
 * Why: the float path (kernels_gemm_packed_avx512.c) widens BF16 to float and does one
 * FMA per product; VDPBF16PS does two products per 32-bit lane per instruction. On AMD
 * Zen 5 (2-vCPU VM, 12 independent chains, one thread) it retires 6.5 G instructions/s
 * against 7.1 G for VFMADD231PS: 415-423 against 227-228 GFLOP/s. On the Intel Xeon of
 * the earlier sessions it measured 4x slower than the FMA per instruction, so the level
 * is the default on AMD CPUs only (kernels_dispatch.c) and forceable anywhere it runs.
 *
 * Arithmetic: the activations are already BF16 (the weights' vec_dot_type), so every
 * product is the float path's product, exact in FP32; the sums differ in order only
 * (pairs, and VDPBF16PS treats denormal inputs as 0 and flushes denormal results:
 * values below 1.2e-38). Each output is the sum of its LOOM_GEMM_PACKED_KC-chunk sums in
 * chunk order, a chunk's sum one VDPBF16PS lane from 0.0f over its pairs in order, so the
 * result does not depend on the tiling or the thread count.
 *
 * Layout (kernels.h): panel q holds columns [32q, 32q + 32) as k-pairs, pair-major: the
 * 32-bit word ((q*kp + t)*32 + c) of the panels is {element 2t, element 2t + 1} of
 * activation row 32q + c (kp = (k + 1) / 2; zero halves past k and for rows >= n): one
 * 512-bit load is one pair of 16 columns, the operand VDPBF16PS takes.
 * Micro-kernel: 12 weight rows x 32 columns = 24 zmm accumulators; per pair two panel
 * loads, 12 broadcast 32-bit weight pairs, 24 VDPBF16PS. The weight rows of a chunk are
 * copied (zero-padded to an even length) into a 12 x 128-word scratch, so every
 * broadcast is a constant offset from one base and the odd-k tail never reads past a row.
 * Blocks of 48 rows x 512 columns, sums in a block scratch transposed into C at the end
 * (x86_transpose.h), the next row group's weights prefetched as one computes. The engine
 * gives this level's BF16 products tiles of that shape (kernels.h gemm_tile_rows / _cols),
 * so a prompt of 512 reads each weight once per product; with the float path's 120 x 128
 * tiles each weight row was read (and its page walked) once per 128 columns: 1.1B BF16
 * pp512, 2 threads, 4 alternating pairs on the Zen 5 VM: 213-227 (120 x 128) -> 231-245
 * t/s.
 */
#include "cpu/x86_transpose.h"
#include "cpu/kernels_internal.h"

#include <immintrin.h>

#define ALWAYS_INLINE LOOM_ALWAYS_INLINE

#define PW LOOM_GEMM_PANEL          /* columns per panel */
#define KC LOOM_GEMM_PACKED_KC      /* k-values per chunk */
#define KP (LOOM_GEMM_PACKED_KC / 2) /* pairs per chunk */
#define MR 12                       /* weight rows per micro-kernel */
#define TB 48                       /* rows per block (and per tile: loom_kernels_fill_bf16dp_avx512vnni) */
#define TC 512                      /* columns per block (a multiple of PW; the tile's width) */

/* kernels.h gemm_bf16_pack: per 16 columns and 16 pairs, 16 masked 512-bit row loads (32
 * values each) and one 16 x 16 dword transpose. */
static bool bp_pack(loom_type at, int64_t k, const void *a, size_t as, int64_t n, uint32_t *p, int64_t q0,
                    int64_t q1) {
    if (at != LOOM_TYPE_BF16) return false;
    const int64_t kp = (k + 1) / 2;
    for (int64_t q = q0; q < q1; q++) {
        uint32_t *dst = p + (size_t)q * (size_t)kp * PW;
        for (int64_t tb = 0; tb < kp; tb += 16) {
            const int64_t tn = kp - tb < 16 ? kp - tb : 16, vals = k - 2 * tb < 32 ? k - 2 * tb : 32;
            const __mmask32 m = vals == 32 ? 0xFFFFFFFFu : (__mmask32)((1u << vals) - 1);
            for (int h = 0; h < PW / 16; h++) {
                __m512 r[16];
                LOOM_UNROLL_ALL for (int x = 0; x < 16; x++) {
                    const int64_t col = q * PW + 16 * h + x;
                    r[x] = col < n ? _mm512_castsi512_ps(_mm512_maskz_loadu_epi16(
                                         m, (const uint16_t *)((const uint8_t *)a + (size_t)col * as) + 2 * tb))
                                   : _mm512_setzero_ps();
                }
                loom_transpose16_ps(r);
                for (int64_t x = 0; x < tn; x++) _mm512_storeu_ps((float *)(dst + (size_t)(tb + x) * PW + 16 * h), r[x]);
            }
        }
    }
    return true;
}

/* T[r*TC + 16v + c] (+)= chunk sums over the tl pairs of wb (row r at wb + r*KP) and the
 * panel pp, for r < nr, v < nv, c < 16. */
static ALWAYS_INLINE void bp_micro(int nr, int nv, int64_t tl, const uint32_t *wb, const uint32_t *pp, float *T,
                                   int add) {
    __m512 acc[MR][2];
    LOOM_UNROLL_ALL for (int r = 0; r < nr; r++) LOOM_UNROLL_ALL for (int v = 0; v < nv; v++) acc[r][v] = _mm512_setzero_ps();
    for (int64_t t = 0; t < tl; t++) {
        __m512bh pv[2];
        LOOM_UNROLL_ALL for (int v = 0; v < nv; v++) pv[v] = (__m512bh)_mm512_loadu_si512((const void *)(pp + t * PW + 16 * v));
        LOOM_UNROLL_ALL for (int r = 0; r < nr; r++) {
            const __m512bh b = (__m512bh)_mm512_set1_epi32((int)wb[(size_t)r * KP + (size_t)t]);
            LOOM_UNROLL_ALL for (int v = 0; v < nv; v++) acc[r][v] = _mm512_dpbf16_ps(acc[r][v], b, pv[v]);
        }
    }
    LOOM_UNROLL_ALL for (int r = 0; r < nr; r++) LOOM_UNROLL_ALL for (int v = 0; v < nv; v++) {
        float *t = T + (size_t)r * TC + 16 * v;
        _mm512_store_ps(t, add ? _mm512_add_ps(_mm512_load_ps(t), acc[r][v]) : acc[r][v]);
    }
}

static ALWAYS_INLINE void bp_micro_any(int nr, int nv, int64_t tl, const uint32_t *wb, const uint32_t *pp, float *T,
                                       int add) {
#define BP_MICRO_NR(R)                                                                                                 \
    case R:                                                                                                            \
        if (nv == 2) bp_micro(R, 2, tl, wb, pp, T, add);                                                               \
        else bp_micro(R, 1, tl, wb, pp, T, add);                                                                       \
        break;
    switch (nr) {
        BP_MICRO_NR(12) BP_MICRO_NR(11) BP_MICRO_NR(10) BP_MICRO_NR(9) BP_MICRO_NR(8) BP_MICRO_NR(7)
        BP_MICRO_NR(6) BP_MICRO_NR(5) BP_MICRO_NR(4) BP_MICRO_NR(3) BP_MICRO_NR(2) BP_MICRO_NR(1)
    default: break;
    }
#undef BP_MICRO_NR
}

/* wb[0 .. 2*ceil(kl/2)) := the kl values at src, zero-padded to a pair (masked loads:
 * nothing past src + kl is read). */
static ALWAYS_INLINE void bp_copy_row(const uint16_t *src, int64_t kl, uint32_t *wb) {
    for (int64_t kk = 0; kk < kl; kk += 32) {
        const int64_t vals = kl - kk < 32 ? kl - kk : 32;
        const __mmask32 m = vals == 32 ? 0xFFFFFFFFu : (__mmask32)((1u << vals) - 1);
        _mm512_store_si512((void *)(wb + kk / 2), _mm512_maskz_loadu_epi16(m, src + kk));
    }
}

/* Prefetch of the weight rows of the group after [r0, r0 + MR) of chunk k0 (or of the
 * next chunk's first group): prefetcht0 (1.1B BF16 pp512 on the Zen 5 VM, two
 * alternating pairs: 167 / 176 with prefetcht1, 181 / 189 t/s with t0; a burst for the
 * whole next chunk of the block on top measured no better). */
static ALWAYS_INLINE void bp_prefetch_next(const uint8_t *w, size_t ws, int64_t i0, int64_t nrow, int64_t r0,
                                           int64_t k0, int64_t k) {
    int64_t nr0 = r0 + MR, nk0 = k0;
    if (nr0 >= nrow) {
        nr0 = 0;
        nk0 = k0 + KC;
    }
    if (nk0 >= k) return;
    const int64_t nn = nrow - nr0 < MR ? nrow - nr0 : MR, nkl = k - nk0 < KC ? k - nk0 : KC;
    for (int64_t r = 0; r < nn; r++) {
        const char *src = (const char *)(w + (size_t)(i0 + nr0 + r) * ws + (size_t)nk0 * 2);
        for (int64_t b = 0; b < 2 * nkl; b += 64) LOOM_PF0(src + b);
    }
}

/* Rows [i0, i0 + nrow) (<= TB) x columns [j0, j0 + ncol) (<= TC, j0 a multiple of PW). */
static void bp_block(int64_t k, const uint8_t *w, size_t ws, const uint32_t *p, float *c, size_t ldc, int64_t i0,
                     int64_t nrow, int64_t j0, int64_t ncol) {
    _Alignas(64) uint32_t wb[MR * KP];
    _Alignas(64) float T[TB * TC];
    const int64_t kp = (k + 1) / 2, npan = (ncol + PW - 1) / PW;
    for (int64_t k0 = 0; k0 < k; k0 += KC) {
        const int64_t kl = k - k0 < KC ? k - k0 : KC, tl = (kl + 1) / 2;
        for (int64_t r0 = 0; r0 < nrow; r0 += MR) {
            const int nr = nrow - r0 < MR ? (int)(nrow - r0) : MR;
            for (int r = 0; r < nr; r++)
                bp_copy_row((const uint16_t *)(w + (size_t)(i0 + r0 + r) * ws) + k0, kl, wb + (size_t)r * KP);
            bp_prefetch_next(w, ws, i0, nrow, r0, k0, k);
            for (int64_t q = 0; q < npan; q++) {
                const uint32_t *pp = p + ((size_t)(j0 / PW + q) * (size_t)kp + (size_t)(k0 / 2)) * PW;
                const int64_t cols = ncol - q * PW;
                bp_micro_any(nr, cols > 16 ? 2 : 1, tl, wb, pp, T + (size_t)r0 * TC + q * PW, k0 > 0);
            }
        }
    }
    loom_store_t16(T, TC, c, ldc, i0, nrow, j0, ncol);
}

/* kernels.h gemm_bf16_packed. */
static bool bp_packed(loom_type wt, int64_t k, const void *w, size_t ws, const uint32_t *p, float *c, size_t ldc,
                      int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
    if (wt != LOOM_TYPE_BF16 || j0 % PW != 0) return false;
    if (i0 >= i1 || j0 >= j1) return true;
    if (k <= 0) {
        for (int64_t j = j0; j < j1; j++) /* empty dot products */
            for (int64_t i = i0; i < i1; i++) c[(size_t)j * ldc + (size_t)i] = 0.0f;
        return true;
    }
    for (int64_t jb = j0; jb < j1; jb += TC) {
        const int64_t ncol = j1 - jb < TC ? j1 - jb : TC;
        for (int64_t ib = i0; ib < i1; ib += TB)
            bp_block(k, (const uint8_t *)w, ws, p, c, ldc, ib, i1 - ib < TB ? i1 - ib : TB, jb, ncol);
    }
    return true;
}

void loom_kernels_fill_bf16dp_avx512vnni(loom_kernels *k) {
    k->gemm_bf16_pack = bp_pack;
    k->gemm_bf16_packed = bp_packed;
    /* BF16 prompt tiles of TB rows x TC columns (ops_matmul.c halves both while that
     * leaves fewer than 16 tiles): each weight chunk a group copies serves every column
     * of the product, so a product reads its weights once */
    k->gemm_tile_rows[LOOM_TYPE_BF16] = TB;
    k->gemm_tile_cols[LOOM_TYPE_BF16] = TC;
}
