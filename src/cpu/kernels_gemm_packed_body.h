/*
 * kernels_gemm_packed_body.h (internal to kernels_gemm_packed_*.c) - the ISA-generic part
 * of the packed-activation F16 / BF16 prompt products (kernels.h gemm_float_pack /
 * gemm_float_packed; references in kernels_scalar.c, bit-identical at every level).
 *
 * Design (kernels_gemm_packed_avx512.c says why): the activations are k-major float
 * panels of PW = 32 columns, packed once per product by the engine (or per chunk inside
 * a tile: the "local" gemm entry). A tile converts its weight rows per chunk of KC
 * k-values and MR-row group (wf, stays in L1), and an outer-product micro-kernel
 * computes MR rows x up to 2 vectors of columns: per k-value 1-2 panel loads, MR
 * broadcast weights, up to 2*MR FMAs, no reduction. Sums go to a block scratch
 * T[r][col] (stored for the first chunk, added after), transposed into C at the end. So
 * each output is one FMA per k-value in order from 0.0f within its chunk, the chunk sums
 * added in chunk order: the reference's arithmetic, whatever the tiling or thread count.
 * While a group computes, the next group's weight rows are prefetched into L2 (a group
 * reads MR runs of KC halves, too short for the hardware prefetcher; 1.1B F16 pp512, 2
 * threads, AVX-512, 5 alternating runs: median 87 -> 95 t/s).
 *
 * The including file defines, before including this header:
 *   GP_VEC, GP_VW               the float vector type and its width (floats)
 *   GP_MR, GP_TB, GP_TC         rows per micro-kernel (12 or 6), rows and columns per
 *                               block (GP_TC a multiple of PW)
 *   GP_ZERO(), GP_LOADU(p), GP_LOAD(p) / GP_STORE(p, v) (aligned), GP_BCAST(p),
 *   GP_FMA(a, b, c) = a*b + c fused, GP_ADD(a, b), GP_PREFETCH_L2(p) (a read hint)
 *   GP_LOCAL, GP_FILL           the names of the local-pack gemm entry and of the fill
 * and these functions (ALWAYS_INLINE):
 *   gp_pack_panel(bf, a, as, col0, nv, k0, kl, dst): dst[kk*PW + c] = element k0 + kk of
 *       activation row col0 + c as float (0 for rows >= nv), kk < kl, c < PW;
 *   gp_cvt_row(bf, src, kl, dst): dst[0..kl) = kl halves / bfloat16s as floats, zeros
 *       up to the next multiple of GP_VW;
 *   gp_store_t(T, c, ldc, i0, nrow, j0, ncol): C[(j0 + col)*ldc + i0 + r] =
 *       T[r*GP_TC + col] for r < nrow, col < ncol.
 */
#define PW LOOM_GEMM_PANEL     /* columns per packed panel */
#define KC LOOM_GEMM_PACKED_KC /* k-values per chunk */
#define GP_MW (2 * GP_VW)      /* columns of one micro-kernel call (two vectors) */

static ALWAYS_INLINE void gp_pack_body(int bf, int64_t k, const uint8_t *a, size_t as, int64_t n, float *p, int64_t q0,
                                       int64_t q1) {
    for (int64_t q = q0; q < q1; q++) gp_pack_panel(bf, a, as, PW * q, n, 0, k, p + (size_t)q * (size_t)k * PW);
}

/* T[r*GP_TC + GP_VW*v + c] (+)= sum over kk < kl of wf[r*KC + kk] * pp[kk*PW + GP_VW*v + c]
 * for r < nr, v < nv, c < GP_VW: one FMA per k-value in order from 0.0f. */
static ALWAYS_INLINE void gp_micro(int nr, int nv, int64_t kl, const float *wf, const float *pp, float *T, int add) {
    GP_VEC acc[GP_MR][2];
    LOOM_UNROLL_ALL for (int r = 0; r < nr; r++) LOOM_UNROLL_ALL for (int v = 0; v < nv; v++) acc[r][v] = GP_ZERO();
    for (int64_t kk = 0; kk < kl; kk++) {
        GP_VEC pv[2];
        LOOM_UNROLL_ALL for (int v = 0; v < nv; v++) pv[v] = GP_LOADU(pp + kk * PW + GP_VW * v);
        LOOM_UNROLL_ALL for (int r = 0; r < nr; r++) {
            const GP_VEC b = GP_BCAST(wf + (size_t)r * KC + kk);
            LOOM_UNROLL_ALL for (int v = 0; v < nv; v++) acc[r][v] = GP_FMA(b, pv[v], acc[r][v]);
        }
    }
    LOOM_UNROLL_ALL for (int r = 0; r < nr; r++) LOOM_UNROLL_ALL for (int v = 0; v < nv; v++) {
        float *t = T + (size_t)r * GP_TC + GP_VW * v;
        GP_STORE(t, add ? GP_ADD(GP_LOAD(t), acc[r][v]) : acc[r][v]);
    }
}

/* nr (1..GP_MR) rows x nv (1..2) vectors: constant instances keep the accumulators in registers. */
static ALWAYS_INLINE void gp_micro_any(int nr, int nv, int64_t kl, const float *wf, const float *pp, float *T,
                                       int add) {
#define GP_MICRO_NR(R)                                                                                                 \
    case R:                                                                                                            \
        if (nv == 2) gp_micro(R, 2, kl, wf, pp, T, add);                                                               \
        else gp_micro(R, 1, kl, wf, pp, T, add);                                                                       \
        break;
    switch (nr) {
#if GP_MR >= 12
        GP_MICRO_NR(12) GP_MICRO_NR(11) GP_MICRO_NR(10) GP_MICRO_NR(9) GP_MICRO_NR(8) GP_MICRO_NR(7)
#endif
        GP_MICRO_NR(6) GP_MICRO_NR(5) GP_MICRO_NR(4) GP_MICRO_NR(3) GP_MICRO_NR(2) GP_MICRO_NR(1)
    default: break;
    }
#undef GP_MICRO_NR
}

/* Prefetch into L2 the weight rows of the group after [r0, r0 + GP_MR) of chunk k0 (or the
 * first group of the next chunk). */
static ALWAYS_INLINE void gp_prefetch_next(const uint8_t *w, size_t ws, int64_t i0, int64_t nrow, int64_t r0, int64_t k0,
                                           int64_t k) {
    int64_t nr0 = r0 + GP_MR, nk0 = k0;
    if (nr0 >= nrow) {
        nr0 = 0;
        nk0 = k0 + KC;
    }
    if (nk0 >= k) return;
    const int64_t nn = nrow - nr0 < GP_MR ? nrow - nr0 : GP_MR, nkl = k - nk0 < KC ? k - nk0 : KC;
    for (int64_t r = 0; r < nn; r++) {
        const char *src = (const char *)(w + (size_t)(i0 + nr0 + r) * ws + (size_t)nk0 * 2);
        for (int64_t b = 0; b < 2 * nkl; b += 64) GP_PREFETCH_L2(src + b);
    }
}

/* Rows [i0, i0 + nrow) (<= GP_TB) x columns [j0, j0 + ncol) (<= GP_TC) of C, from the
 * product's panels p (j0 a multiple of PW) or, p NULL, from the activation rows at a (as
 * bytes apart, the first j0 + ncol of them valid) packed here per chunk into lp
 * (GP_TC x KC floats). */
static ALWAYS_INLINE void gp_block(int bf, int64_t k, const uint8_t *w, size_t ws, const float *p, const uint8_t *a,
                                   size_t as, float *lp, float *c, size_t ldc, int64_t i0, int64_t nrow, int64_t j0,
                                   int64_t ncol) {
    _Alignas(64) float wf[GP_MR * KC];
    _Alignas(64) float T[GP_TB * GP_TC];
    const int64_t npan = (ncol + PW - 1) / PW;
    for (int64_t k0 = 0; k0 < k; k0 += KC) {
        const int64_t kl = k - k0 < KC ? k - k0 : KC;
        if (!p)
            for (int64_t q = 0; q < npan; q++)
                gp_pack_panel(bf, a, as, j0 + q * PW, j0 + ncol, k0, kl, lp + (size_t)q * KC * PW);
        for (int64_t r0 = 0; r0 < nrow; r0 += GP_MR) {
            const int nr = nrow - r0 < GP_MR ? (int)(nrow - r0) : GP_MR;
            for (int r = 0; r < nr; r++) /* the group's weight rows of this chunk as floats */
                gp_cvt_row(bf, (const uint16_t *)(w + (size_t)(i0 + r0 + r) * ws) + k0, kl, wf + (size_t)r * KC);
            gp_prefetch_next(w, ws, i0, nrow, r0, k0, k);
            for (int64_t q = 0; q < npan; q++) {
                const float *pp = p ? p + ((size_t)(j0 / PW + q) * (size_t)k + (size_t)k0) * PW : lp + (size_t)q * KC * PW;
                for (int h = 0; h < PW / GP_MW; h++) {
                    const int64_t cols = ncol - q * PW - h * GP_MW;
                    if (cols <= 0) break;
                    gp_micro_any(nr, cols > GP_VW ? 2 : 1, kl, wf, pp + h * GP_MW,
                                 T + (size_t)r0 * GP_TC + q * PW + h * GP_MW, k0 > 0);
                }
            }
        }
    }
    gp_store_t(T, c, ldc, i0, nrow, j0, ncol);
}

/* Blocks of the tile, column blocks outer (tiles the engine gives this path have <= GP_TB
 * rows, so local panels are packed once per tile). */
static ALWAYS_INLINE void gp_body(int bf, int64_t k, const uint8_t *w, size_t ws, const float *p, const uint8_t *a,
                                  size_t as, float *lp, float *c, size_t ldc, int64_t i0, int64_t i1, int64_t j0,
                                  int64_t j1) {
    for (int64_t jb = j0; jb < j1; jb += GP_TC) {
        const int64_t ncol = j1 - jb < GP_TC ? j1 - jb : GP_TC;
        for (int64_t ib = i0; ib < i1; ib += GP_TB)
            gp_block(bf, k, w, ws, p, a, as, lp, c, ldc, ib, i1 - ib < GP_TB ? i1 - ib : GP_TB, jb, ncol);
    }
}

static void gp_f16(int64_t k, const void *w, size_t ws, const float *p, const void *a, size_t as, float *lp, float *c,
                   size_t ldc, int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
    gp_body(0, k, w, ws, p, a, as, lp, c, ldc, i0, i1, j0, j1);
}
static void gp_bf16(int64_t k, const void *w, size_t ws, const float *p, const void *a, size_t as, float *lp, float *c,
                    size_t ldc, int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
    gp_body(1, k, w, ws, p, a, as, lp, c, ldc, i0, i1, j0, j1);
}

static bool gp_pack(loom_type at, int64_t k, const void *a, size_t as, int64_t n, float *p, int64_t q0, int64_t q1) {
    if (at == LOOM_TYPE_F16) gp_pack_body(0, k, a, as, n, p, q0, q1);
    else if (at == LOOM_TYPE_BF16) gp_pack_body(1, k, a, as, n, p, q0, q1);
    else return false;
    return true;
}

static bool gp_zero_k(int64_t k, float *c, size_t ldc, int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
    if (k > 0) return false;
    for (int64_t j = j0; j < j1; j++) /* empty dot products */
        for (int64_t i = i0; i < i1; i++) c[(size_t)j * ldc + (size_t)i] = 0.0f;
    return true;
}

static bool gp_packed(loom_type wt, int64_t k, const void *w, size_t ws, const float *p, float *c, size_t ldc,
                      int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
    if ((wt != LOOM_TYPE_F16 && wt != LOOM_TYPE_BF16) || j0 % PW != 0) return false;
    if (i0 >= i1 || j0 >= j1 || gp_zero_k(k, c, ldc, i0, i1, j0, j1)) return true;
    if (wt == LOOM_TYPE_F16) gp_f16(k, w, ws, p, NULL, 0, NULL, c, ldc, i0, i1, j0, j1);
    else gp_bf16(k, w, ws, p, NULL, 0, NULL, c, ldc, i0, i1, j0, j1);
    return true;
}

bool GP_LOCAL(loom_type wt, int64_t k, const void *w, size_t ws, const void *a, size_t as, float *c, size_t ldc,
              int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
    if ((wt != LOOM_TYPE_F16 && wt != LOOM_TYPE_BF16) || j1 - j0 < LOOM_GEMM_PACKED_MIN_COLS) return false;
    if (i0 >= i1 || gp_zero_k(k, c, ldc, i0, i1, j0, j1)) return true;
    _Alignas(64) float lp[GP_TC * KC];
    /* columns are relative to j0 in the local panels: a from row j0, C from column j0 */
    const uint8_t *a0 = (const uint8_t *)a + (size_t)j0 * as;
    float *c0 = c + (size_t)j0 * ldc;
    if (wt == LOOM_TYPE_F16) gp_f16(k, w, ws, NULL, a0, as, lp, c0, ldc, i0, i1, 0, j1 - j0);
    else gp_bf16(k, w, ws, NULL, a0, as, lp, c0, ldc, i0, i1, 0, j1 - j0);
    return true;
}

void GP_FILL(loom_kernels *k) {
    k->gemm_float_pack = gp_pack;
    k->gemm_float_packed = gp_packed;
    /* tiles of up to GP_TB rows x GP_TC columns (ops_matmul.c halves both while that
     * leaves fewer than 16 tiles) */
    k->gemm_float_rows = GP_TB;
    k->gemm_float_cols = GP_TC;
}
