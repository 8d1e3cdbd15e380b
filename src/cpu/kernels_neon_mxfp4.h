/*
 * kernels_neon_mxfp4.h (internal to kernels_neon_body.h) - AArch64 gemm tiles for
 * MXFP4 and NVFP4 (nv_tile) weights x Q8_0 activations (kernels.h gemm contract), compiled with the body's
 * ndot() (SMULL/SADALP or SDOT) and h2f(). The E2M1 codes index loom_mxfp4_kv (the
 * values times 2, -12..12) with TBL; each block's int32 sum is exact and is scaled
 * once by 2^(e-128) * d_y with one FMA per block, as in the scalar reference (the
 * float additions are in 4 lanes, summed at the end). Tiles of 4 rows x 1-4 columns:
 * a block's decoded rows are reused for every column of the tile and a column's
 * activations for every row (16 accumulators + 8 decoded vectors fit the 32 q
 * registers).
 */

static LOOM_ALWAYS_INLINE void mx_tile(int RB, int CB, int64_t nb, const uint8_t *w, size_t ws, const uint8_t *a,
                                       size_t as, float *c, size_t ldc, int64_t i, int64_t j) {
    float32x4_t acc[4][4];
    LOOM_UNROLL
    for (int r = 0; r < RB; r++)
        LOOM_UNROLL
        for (int cc = 0; cc < CB; cc++) acc[r][cc] = vdupq_n_f32(0.f);
    const int8x16_t lut = vld1q_s8(loom_mxfp4_kv);
    for (int64_t b = 0; b < nb; b++) {
        int8x16_t q0[4], q1[4];
        float dx[4];
        LOOM_UNROLL
        for (int r = 0; r < RB; r++) {
            const block_mxfp4 *xb = (const block_mxfp4 *)(w + (size_t)(i + r) * ws) + b;
            uint8x16_t lo, hi;
            unpack_nibbles(xb->qs, &lo, &hi);
            q0[r] = vqtbl1q_s8(lut, lo);
            q1[r] = vqtbl1q_s8(lut, hi);
            dx[r] = loom_e8m0_half(xb->e);
        }
        LOOM_UNROLL
        for (int cc = 0; cc < CB; cc++) {
            const block_q8_0 *yb = (const block_q8_0 *)(a + (size_t)(j + cc) * as) + b;
            const int8x16_t y0 = vld1q_s8(yb->qs), y1 = vld1q_s8(yb->qs + 16);
            const float dy = h2f(yb->d);
            LOOM_UNROLL
            for (int r = 0; r < RB; r++) {
                const int32x4_t p = ndot(ndot(vdupq_n_s32(0), q0[r], y0), q1[r], y1);
                acc[r][cc] = vfmaq_n_f32(acc[r][cc], vcvtq_f32_s32(p), dx[r] * dy);
            }
        }
    }
    LOOM_UNROLL
    for (int r = 0; r < RB; r++)
        LOOM_UNROLL
        for (int cc = 0; cc < CB; cc++) c[(size_t)(j + cc) * ldc + (size_t)(i + r)] = vaddvq_f32(acc[r][cc]);
}

/* NVFP4: per Q8_0 block (half h of a weight block) two 16-value sub-blocks, each its
 * exact int32 sum scaled by its UE4M3 scale times d_y */
static LOOM_ALWAYS_INLINE void nv_tile(int RB, int CB, int64_t nb, const uint8_t *w, size_t ws, const uint8_t *a,
                                       size_t as, float *c, size_t ldc, int64_t i, int64_t j) {
    float32x4_t acc[4][4];
    LOOM_UNROLL
    for (int r = 0; r < RB; r++)
        LOOM_UNROLL
        for (int cc = 0; cc < CB; cc++) acc[r][cc] = vdupq_n_f32(0.f);
    const int8x16_t lut = vld1q_s8(loom_mxfp4_kv);
    for (int64_t b = 0; b < nb; b++) { /* Q8_0 blocks: half b % 2 of weight block b / 2 */
        const int h = (int)(b & 1);
        int8x16_t qa[4], qb[4];
        float sa[4], sb[4];
        LOOM_UNROLL
        for (int r = 0; r < RB; r++) {
            const block_nvfp4 *xb = (const block_nvfp4 *)(w + (size_t)(i + r) * ws) + (b >> 1);
            nvfp4_half(xb->qs, h, lut, &qa[r], &qb[r]);
            sa[r] = loom_ue4m3_half(xb->d[2 * h]);
            sb[r] = loom_ue4m3_half(xb->d[2 * h + 1]);
        }
        LOOM_UNROLL
        for (int cc = 0; cc < CB; cc++) {
            const block_q8_0 *yb = (const block_q8_0 *)(a + (size_t)(j + cc) * as) + b;
            const int8x16_t y0 = vld1q_s8(yb->qs), y1 = vld1q_s8(yb->qs + 16);
            const float dy = h2f(yb->d);
            LOOM_UNROLL
            for (int r = 0; r < RB; r++) {
                acc[r][cc] = vfmaq_n_f32(acc[r][cc], vcvtq_f32_s32(ndot(vdupq_n_s32(0), qa[r], y0)), sa[r] * dy);
                acc[r][cc] = vfmaq_n_f32(acc[r][cc], vcvtq_f32_s32(ndot(vdupq_n_s32(0), qb[r], y1)), sb[r] * dy);
            }
        }
    }
    LOOM_UNROLL
    for (int r = 0; r < RB; r++)
        LOOM_UNROLL
        for (int cc = 0; cc < CB; cc++) c[(size_t)(j + cc) * ldc + (size_t)(i + r)] = vaddvq_f32(acc[r][cc]);
}

static bool neon_gemm(loom_type wt, int64_t k, const void *w, size_t ws, const void *a, size_t as, float *c,
                      size_t ldc, int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
    if (wt == LOOM_TYPE_F16 || wt == LOOM_TYPE_BF16) /* packed per chunk (kernels_gemm_packed_neon.c) */
        return loom_gemm_float_local_neon(wt, k, w, ws, a, as, c, ldc, i0, i1, j0, j1);
    if (wt != LOOM_TYPE_MXFP4 && wt != LOOM_TYPE_NVFP4) return false;
    const bool nv = wt == LOOM_TYPE_NVFP4;
    const uint8_t *W = w, *A = a;
    const int64_t nb = k / 32; /* Q8_0 blocks */
#define MX_T(RB, CB) \
    (nv ? nv_tile(RB, CB, nb, W, ws, A, as, c, ldc, i, j) : mx_tile(RB, CB, nb, W, ws, A, as, c, ldc, i, j))
#define MX_CASES(RB)                                                                                    \
    switch (cb) {                                                                                       \
    case 1: MX_T(RB, 1); break;                                                                         \
    case 2: MX_T(RB, 2); break;                                                                         \
    case 3: MX_T(RB, 3); break;                                                                         \
    default: MX_T(RB, 4); break;                                                                        \
    }
    for (int64_t j = j0; j < j1; j += 4) {
        const int cb = (int)(j1 - j < 4 ? j1 - j : 4);
        int64_t i = i0;
        for (; i + 4 <= i1; i += 4) MX_CASES(4)
        for (; i < i1; i++) MX_CASES(1)
    }
#undef MX_CASES
#undef MX_T
    return true;
}
