/*
 * kernels_gemm_packed_avx512.c - AVX-512 F16 / BF16 prompt products on packed
 * activations (kernels.h gemm_float_pack / gemm_float_packed; references in
 * kernels_scalar.c, bit-identical).
 *
 * Why: the row-pair tiles of kernels_gemm_avx512.c convert the activation block to
 * float once per call and reduce four accumulators horizontally per output; on a host
 * without AMX (2 threads, 1.1B F16, prompt of 512) that conversion, repeated for every
 * 32-row tile, and the reductions cost about a fifth of the product. Here the engine
 * packs the activations ONCE per product into k-major float panels of 32 columns, so
 * a tile only converts its weight rows (amortised over the tile's columns) and the
 * micro-kernel is an outer product without any reduction:
 *   12 weight rows x 32 columns = 24 zmm accumulators; per k-value two panel loads, 12
 *   broadcast weights, 24 FMAs (the FMA ports are the bound: measured at the FMA peak
 *   of this Xeon with L1-resident operands).
 * Order of work in a tile (rows [i0, i1) x columns [j0, j1), j0 a multiple of 32):
 * per block of up to TB rows x TC columns, per chunk of LOOM_GEMM_PACKED_KC k-values,
 * per 12-row group: convert the group's rows of the chunk to float (wf, 12 KiB, stays
 * in L1), then the micro-kernel over the block's panels, its sums stored (first
 * chunk) or added into the block scratch T[r][col]; at the end T is transposed into C
 * (16 x 16 transposes, masked stores). Each output is therefore a sequence of fused
 * multiply-adds over its chunk's k-values in order from 0.0f, the chunk sums added in
 * chunk order: exactly the reference's arithmetic, whatever the tiling.
 */
#include "cpu/kernels_internal.h"

#include <immintrin.h>

#define ALWAYS_INLINE LOOM_ALWAYS_INLINE
#if defined(__clang__)
#define UNROLL_ALL _Pragma("unroll")
#else
#define UNROLL_ALL _Pragma("GCC unroll 32")
#endif

#define PW LOOM_GEMM_PANEL      /* columns per packed panel (32: two zmm) */
#define KC LOOM_GEMM_PACKED_KC  /* k-values per chunk */
#define MR 12                   /* weight rows per micro-kernel */
#define TB 120                  /* rows per block (ten micro row groups) */
#define TC 128                  /* columns per block (four panels) */

/* 16 floats from 16 halves (F16) or bfloat16s (BF16). */
static ALWAYS_INLINE __m512 cvt16(int bf, __m256i v) {
    if (!bf) return _mm512_cvtph_ps(v);
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(v), 16));
}

/* r[x] := column x of the 16 x 16 matrix whose rows are r[0..15]. */
static ALWAYS_INLINE void transpose16(__m512 r[16]) {
    __m512 t[16];
    UNROLL_ALL for (int i = 0; i < 16; i += 2) {
        t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
        t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
    }
    UNROLL_ALL for (int i = 0; i < 16; i += 4) {
        const __m512d a = _mm512_castps_pd(t[i]), b = _mm512_castps_pd(t[i + 1]);
        const __m512d c = _mm512_castps_pd(t[i + 2]), d = _mm512_castps_pd(t[i + 3]);
        r[i] = _mm512_castpd_ps(_mm512_unpacklo_pd(a, c));
        r[i + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(a, c));
        r[i + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(b, d));
        r[i + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(b, d));
    }
    /* r[4q + m], 128-bit lane L: rows 4q..4q+3 at column 4L + m */
    UNROLL_ALL for (int q = 0; q < 2; q++) UNROLL_ALL for (int m = 0; m < 4; m++) {
        t[8 * q + m] = _mm512_shuffle_f32x4(r[8 * q + m], r[8 * q + 4 + m], 0x88);
        t[8 * q + 4 + m] = _mm512_shuffle_f32x4(r[8 * q + m], r[8 * q + 4 + m], 0xdd);
    }
    UNROLL_ALL for (int m = 0; m < 8; m++) {
        r[m] = _mm512_shuffle_f32x4(t[m], t[8 + m], 0x88);
        r[8 + m] = _mm512_shuffle_f32x4(t[m], t[8 + m], 0xdd);
    }
}

/* dst[kk*PW + c] = element k0 + kk of activation row col0 + c as float (0 for rows
 * >= nv), kk < kl, c < PW: one panel's chunk, 16 x 16 blocks converted and transposed. */
static ALWAYS_INLINE void pack_panel(int bf, const uint8_t *a, size_t as, int64_t col0, int64_t nv, int64_t k0,
                                     int64_t kl, float *dst) {
    for (int64_t kb = 0; kb < kl; kb += 16) {
        const int64_t kn = kl - kb < 16 ? kl - kb : 16;
        const __mmask16 m = (__mmask16)(kn == 16 ? 0xFFFF : (1u << kn) - 1);
        for (int h = 0; h < PW / 16; h++) {
            __m512 r[16];
            UNROLL_ALL for (int x = 0; x < 16; x++) {
                const int64_t col = col0 + 16 * h + x;
                r[x] = col < nv ? cvt16(bf, _mm256_maskz_loadu_epi16(m, (const uint16_t *)(a + (size_t)col * as) + k0 + kb))
                                : _mm512_setzero_ps();
            }
            transpose16(r);
            for (int64_t x = 0; x < kn; x++) _mm512_storeu_ps(dst + (size_t)(kb + x) * PW + 16 * h, r[x]);
        }
    }
}

static ALWAYS_INLINE void pack_body(int bf, int64_t k, const uint8_t *a, size_t as, int64_t n, float *p, int64_t q0,
                                    int64_t q1) {
    for (int64_t q = q0; q < q1; q++) pack_panel(bf, a, as, PW * q, n, 0, k, p + (size_t)q * (size_t)k * PW);
}

static void pack_f16(int64_t k, const void *a, size_t as, int64_t n, float *p, int64_t q0, int64_t q1) {
    pack_body(0, k, a, as, n, p, q0, q1);
}
static void pack_bf16(int64_t k, const void *a, size_t as, int64_t n, float *p, int64_t q0, int64_t q1) {
    pack_body(1, k, a, as, n, p, q0, q1);
}

/* T[r*TC + 16v + c] (+)= sum over kk < kl of wf[r*KC + kk] * pp[kk*PW + 16v + c] for
 * r < nr, v < NV, c < 16: one FMA per k-value in order from 0.0f. */
static ALWAYS_INLINE void micro(int nr, int nv, int64_t kl, const float *wf, const float *pp, float *T, int add) {
    __m512 acc[MR][2];
    UNROLL_ALL for (int r = 0; r < nr; r++) UNROLL_ALL for (int v = 0; v < nv; v++) acc[r][v] = _mm512_setzero_ps();
    for (int64_t kk = 0; kk < kl; kk++) {
        __m512 pv[2];
        UNROLL_ALL for (int v = 0; v < nv; v++) pv[v] = _mm512_loadu_ps(pp + kk * PW + 16 * v);
        UNROLL_ALL for (int r = 0; r < nr; r++) {
            const __m512 b = _mm512_set1_ps(wf[(size_t)r * KC + kk]);
            UNROLL_ALL for (int v = 0; v < nv; v++) acc[r][v] = _mm512_fmadd_ps(b, pv[v], acc[r][v]);
        }
    }
    UNROLL_ALL for (int r = 0; r < nr; r++) UNROLL_ALL for (int v = 0; v < nv; v++) {
        float *t = T + (size_t)r * TC + 16 * v;
        _mm512_store_ps(t, add ? _mm512_add_ps(_mm512_load_ps(t), acc[r][v]) : acc[r][v]);
    }
}

/* nr (1..12) rows x nv (1..2) vectors: constant instances keep the accumulators in registers. */
static ALWAYS_INLINE void micro_any(int nr, int nv, int64_t kl, const float *wf, const float *pp, float *T, int add) {
#define MICRO_NR(R)                                                                                                    \
    case R:                                                                                                            \
        if (nv == 2) micro(R, 2, kl, wf, pp, T, add);                                                                  \
        else micro(R, 1, kl, wf, pp, T, add);                                                                          \
        break;
    switch (nr) {
        MICRO_NR(12) MICRO_NR(11) MICRO_NR(10) MICRO_NR(9) MICRO_NR(8) MICRO_NR(7)
        MICRO_NR(6) MICRO_NR(5) MICRO_NR(4) MICRO_NR(3) MICRO_NR(2) MICRO_NR(1)
    default: break;
    }
#undef MICRO_NR
}

/* Rows [i0, i0 + nrow) (<= TB) x columns [j0, j0 + ncol) (<= TC) of C. p: the
 * product's packed panels (j0 a multiple of PW); NULL: the activation rows at a (as
 * bytes apart, the first j0 + ncol of them valid) are packed here per chunk into lp
 * (TC x KC floats), with the same arithmetic. */
static ALWAYS_INLINE void block(int bf, int64_t k, const uint8_t *w, size_t ws, const float *p, const uint8_t *a,
                                size_t as, float *lp, float *c, size_t ldc, int64_t i0, int64_t nrow, int64_t j0,
                                int64_t ncol) {
    _Alignas(64) float wf[MR * KC];
    _Alignas(64) float T[TB * TC];
    const int64_t npan = (ncol + PW - 1) / PW;
    for (int64_t k0 = 0; k0 < k; k0 += KC) {
        const int64_t kl = k - k0 < KC ? k - k0 : KC;
        if (!p)
            for (int64_t q = 0; q < npan; q++) pack_panel(bf, a, as, j0 + q * PW, j0 + ncol, k0, kl, lp + (size_t)q * KC * PW);
        for (int64_t r0 = 0; r0 < nrow; r0 += MR) {
            const int nr = nrow - r0 < MR ? (int)(nrow - r0) : MR;
            for (int r = 0; r < nr; r++) { /* the group's weight rows of this chunk as floats */
                const uint16_t *src = (const uint16_t *)(w + (size_t)(i0 + r0 + r) * ws) + k0;
                float *dst = wf + (size_t)r * KC;
                int64_t kk = 0;
                for (; kk + 16 <= kl; kk += 16) _mm512_store_ps(dst + kk, cvt16(bf, _mm256_loadu_si256((const __m256i *)(src + kk))));
                if (kk < kl)
                    _mm512_store_ps(dst + kk, cvt16(bf, _mm256_maskz_loadu_epi16((__mmask16)((1u << (kl - kk)) - 1), src + kk)));
            }
            { /* the next group's weight rows (or the first group's of the next chunk) into L2
               * while this group computes: a group reads 12 runs of KC halves, too short for
               * the hardware prefetcher (1.1B F16 pp512, 2 threads, 5 alternating runs:
               * median 87 -> 95 t/s; the conversion's loads were ~9% of the kernel's
               * samples, 5% after). Prefetching the next chunk's panels the same way
               * cost as much as it saved (the burst of prefetches stalls). */
                int64_t nr0 = r0 + MR, nk0 = k0;
                if (nr0 >= nrow) { nr0 = 0; nk0 = k0 + KC; }
                if (nk0 < k) {
                    const int64_t nn = nrow - nr0 < MR ? nrow - nr0 : MR, nkl = k - nk0 < KC ? k - nk0 : KC;
                    for (int64_t r = 0; r < nn; r++) {
                        const char *src = (const char *)(w + (size_t)(i0 + nr0 + r) * ws + (size_t)nk0 * 2);
                        for (int64_t b = 0; b < 2 * nkl; b += 64) _mm_prefetch(src + b, _MM_HINT_T1);
                    }
                }
            }
            for (int64_t q = 0; q < npan; q++) {
                const float *pp = p ? p + ((size_t)(j0 / PW + q) * (size_t)k + (size_t)k0) * PW : lp + (size_t)q * KC * PW;
                const int64_t cols = ncol - q * PW < PW ? ncol - q * PW : PW;
                micro_any(nr, cols > 16 ? 2 : 1, kl, wf, pp, T + (size_t)r0 * TC + q * PW, k0 > 0);
            }
        }
    }
    /* C[(j0 + col)*ldc + i0 + r] = T[r*TC + col] */
    for (int64_t rb = 0; rb < nrow; rb += 16) {
        const int64_t rn = nrow - rb < 16 ? nrow - rb : 16;
        const __mmask16 rm = (__mmask16)(rn == 16 ? 0xFFFF : (1u << rn) - 1);
        for (int64_t cb = 0; cb < ncol; cb += 16) {
            __m512 v[16];
            UNROLL_ALL for (int x = 0; x < 16; x++) v[x] = x < rn ? _mm512_load_ps(T + (size_t)(rb + x) * TC + cb) : _mm512_setzero_ps();
            transpose16(v);
            const int64_t cn = ncol - cb < 16 ? ncol - cb : 16;
            for (int64_t x = 0; x < cn; x++) _mm512_mask_storeu_ps(c + (size_t)(j0 + cb + x) * ldc + i0 + rb, rm, v[x]);
        }
    }
}

/* Blocks of the tile: column blocks outer, so a block's local panels (p == NULL) are
 * packed once per row block (tiles the engine gives this path have <= TB rows). */
static ALWAYS_INLINE void packed_body(int bf, int64_t k, const uint8_t *w, size_t ws, const float *p, const uint8_t *a,
                                      size_t as, float *lp, float *c, size_t ldc, int64_t i0, int64_t i1, int64_t j0,
                                      int64_t j1) {
    for (int64_t jb = j0; jb < j1; jb += TC) {
        const int64_t ncol = j1 - jb < TC ? j1 - jb : TC;
        for (int64_t ib = i0; ib < i1; ib += TB)
            block(bf, k, w, ws, p, a, as, lp, c, ldc, ib, i1 - ib < TB ? i1 - ib : TB, jb, ncol);
    }
}

static void packed_f16(int64_t k, const void *w, size_t ws, const float *p, const void *a, size_t as, float *lp,
                       float *c, size_t ldc, int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
    packed_body(0, k, w, ws, p, a, as, lp, c, ldc, i0, i1, j0, j1);
}
static void packed_bf16(int64_t k, const void *w, size_t ws, const float *p, const void *a, size_t as, float *lp,
                        float *c, size_t ldc, int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
    packed_body(1, k, w, ws, p, a, as, lp, c, ldc, i0, i1, j0, j1);
}

static bool gemm_float_pack(loom_type at, int64_t k, const void *a, size_t as, int64_t n, float *p, int64_t q0,
                            int64_t q1) {
    if (at == LOOM_TYPE_F16) pack_f16(k, a, as, n, p, q0, q1);
    else if (at == LOOM_TYPE_BF16) pack_bf16(k, a, as, n, p, q0, q1);
    else return false;
    return true;
}

static bool gemm_float_packed(loom_type wt, int64_t k, const void *w, size_t ws, const float *p, float *c, size_t ldc,
                              int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
    if ((wt != LOOM_TYPE_F16 && wt != LOOM_TYPE_BF16) || j0 % PW != 0) return false;
    if (i0 >= i1 || j0 >= j1) return true;
    if (k <= 0) { /* empty dot products */
        for (int64_t j = j0; j < j1; j++)
            for (int64_t i = i0; i < i1; i++) c[(size_t)j * ldc + (size_t)i] = 0.0f;
        return true;
    }
    if (wt == LOOM_TYPE_F16) packed_f16(k, w, ws, p, NULL, 0, NULL, c, ldc, i0, i1, j0, j1);
    else packed_bf16(k, w, ws, p, NULL, 0, NULL, c, ldc, i0, i1, j0, j1);
    return true;
}

void loom_gemm_float_local_avx512(loom_type wt, int64_t k, const void *w, size_t ws, const void *a, size_t as,
                                  float *c, size_t ldc, int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
    /* columns are relative to j0 in the local panels: a + j0 rows, C from column j0 */
    _Alignas(64) float lp[TC * KC];
    const uint8_t *a0 = (const uint8_t *)a + (size_t)j0 * as;
    float *c0 = c + (size_t)j0 * ldc;
    if (wt == LOOM_TYPE_F16) packed_f16(k, w, ws, NULL, a0, as, lp, c0, ldc, i0, i1, 0, j1 - j0);
    else packed_bf16(k, w, ws, NULL, a0, as, lp, c0, ldc, i0, i1, 0, j1 - j0);
}

void loom_kernels_fill_gemm_packed_avx512(loom_kernels *k) {
    k->gemm_float_pack = gemm_float_pack;
    k->gemm_float_packed = gemm_float_packed;
    /* tiles of up to TB rows x TC columns (ops_matmul.c halves both while that leaves
     * fewer than 16 tiles) */
    k->gemm_float_rows = TB;
    k->gemm_float_cols = TC;
}
