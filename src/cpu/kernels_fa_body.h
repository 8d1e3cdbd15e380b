/*
 * kernels_fa_body.h - the flash-attention tile kernels fa_qk and fa_pv (kernels.h)
 * shared by kernels_fa_avx2.c and kernels_fa_avx512.c: included once by each, after
 * it defines
 *   FA_VEC            the float vector type, FA_W its width (floats; divides 16)
 *   FA_LOADU/STOREU   unaligned float load / store, FA_SET1 broadcast, FA_ZERO
 *   FA_FMADD(a, b, c) = a * b + c fused, FA_MUL(a, b)
 *   FA_NZ(v)          bit i set where lane i of v is not 0.0 (int)
 *   QK_NK, PV_NR      keys (fa_qk) and rows (fa_pv) per register block
 *   QK_KEYS(NV)       (optional, default QK_NK) keys per block for NV row vectors: a
 *                     decode block is one or two vectors (a GQA group of heads), and
 *                     QK_NK keys would leave too few independent accumulators to
 *                     cover the fused multiply-add's latency; QK_NKMAX its largest value
 * Both keep every row's arithmetic that of the references (kernels_fa_scalar.c):
 * the lanes of a vector are rows (fa_qk) or Dv values (fa_pv), so each output is the
 * same chain of fused multiply-adds in the same order.
 */
#ifndef LOOM_KERNELS_FA_BODY_H
#define LOOM_KERNELS_FA_BODY_H

#define FA_NV 4 /* row vectors (fa_qk) / Dv vectors (fa_pv) per register block */
#ifndef QK_KEYS
#define QK_KEYS(NV) QK_NK
#define QK_NKMAX QK_NK
#endif

/* sT[j][r] for NK keys from j and NV row vectors from r0: per d, NV rows of qT and
 * NK broadcast key values. */
static ALWAYS_INLINE void qk_block(const int NK, const int NV, int64_t Dk, int64_t Rp, const float *qT,
                                   const float *kf, size_t ks, float *sT, int64_t j, int64_t r0) {
    FA_VEC a[QK_NKMAX][FA_NV];
    LOOM_UNROLL for (int k = 0; k < NK; k++) LOOM_UNROLL for (int v = 0; v < NV; v++) a[k][v] = FA_ZERO;
    const float *kr = kf + (size_t)j * ks;
    for (int64_t d = 0; d < Dk; d++) {
        FA_VEC q[FA_NV];
        LOOM_UNROLL for (int v = 0; v < NV; v++) q[v] = FA_LOADU(qT + (size_t)d * (size_t)Rp + (size_t)r0 + (size_t)v * FA_W);
        LOOM_UNROLL for (int k = 0; k < NK; k++) {
            const FA_VEC b = FA_SET1(kr[(size_t)k * ks + (size_t)d]);
            LOOM_UNROLL for (int v = 0; v < NV; v++) a[k][v] = FA_FMADD(b, q[v], a[k][v]);
        }
    }
    LOOM_UNROLL for (int k = 0; k < NK; k++) LOOM_UNROLL for (int v = 0; v < NV; v++)
        FA_STOREU(sT + (size_t)(j + k) * (size_t)Rp + (size_t)r0 + (size_t)v * FA_W, a[k][v]);
}

static ALWAYS_INLINE void qk_rows(const int NV, int64_t Dk, int64_t Rp, int64_t nk, const float *qT, const float *kf,
                                  size_t ks, float *sT, int64_t r0) {
    const int NKB = QK_KEYS(NV);
    int64_t j = 0;
    for (; j + NKB <= nk; j += NKB) qk_block(NKB, NV, Dk, Rp, qT, kf, ks, sT, j, r0);
    if (NKB > QK_NK) /* a partial tile's tail */
        for (; j + QK_NK <= nk; j += QK_NK) qk_block(QK_NK, NV, Dk, Rp, qT, kf, ks, sT, j, r0);
    for (; j < nk; j++) qk_block(1, NV, Dk, Rp, qT, kf, ks, sT, j, r0);
}

/* The row vectors holding a row < R are computed; the ones past them are padding,
 * written 0. A level may define FA_QK_SMALL(Dk, R, Rp, nk, qT, kf, ks, sT) (true when
 * it took the call) for blocks of few rows. */
static void fa_qk(int64_t Dk, int64_t R, int64_t Rp, int64_t nk, const float *qT, const float *kf, size_t ks,
                  float *sT) {
#ifdef FA_QK_SMALL
    if (FA_QK_SMALL(Dk, R, Rp, nk, qT, kf, ks, sT)) return;
#endif
    const int64_t nv = (R + FA_W - 1) / FA_W;
    for (int64_t v0 = 0; v0 < nv; v0 += FA_NV) {
        const int64_t r0 = v0 * FA_W;
        switch (nv - v0 < FA_NV ? nv - v0 : FA_NV) {
        case 1: qk_rows(1, Dk, Rp, nk, qT, kf, ks, sT, r0); break;
        case 2: qk_rows(2, Dk, Rp, nk, qT, kf, ks, sT, r0); break;
        case 3: qk_rows(3, Dk, Rp, nk, qT, kf, ks, sT, r0); break;
        default: qk_rows(4, Dk, Rp, nk, qT, kf, ks, sT, r0); break;
        }
    }
    for (int64_t j = 0; j < nk && nv * FA_W < Rp; j++)
        for (int64_t r = nv * FA_W; r < Rp; r += FA_W) FA_STOREU(sT + (size_t)j * (size_t)Rp + (size_t)r, FA_ZERO);
}

/* acc rows [r0, r0 + NR) x Dv vectors [d0, d0 + NV): scaled by f, then the live keys. */
static ALWAYS_INLINE void pv_block(const int NR, const int NV, const int32_t *live, int nl, int64_t Rp,
                                   const float *sT, const float *f, const float *vf, size_t vs, float *acc, size_t as,
                                   int64_t r0, int64_t d0) {
    FA_VEC a[PV_NR][FA_NV];
    LOOM_UNROLL for (int r = 0; r < NR; r++) {
        const FA_VEC fr = FA_SET1(f[r0 + r]);
        LOOM_UNROLL for (int v = 0; v < NV; v++)
            a[r][v] = FA_MUL(FA_LOADU(acc + (size_t)(r0 + r) * as + (size_t)d0 + (size_t)v * FA_W), fr);
    }
    for (int i = 0; i < nl; i++) {
        const int32_t j = live[i];
        FA_VEC x[FA_NV];
        LOOM_UNROLL for (int v = 0; v < NV; v++) x[v] = FA_LOADU(vf + (size_t)j * vs + (size_t)d0 + (size_t)v * FA_W);
        const float *p = sT + (size_t)j * (size_t)Rp + (size_t)r0;
        LOOM_UNROLL for (int r = 0; r < NR; r++) {
            const FA_VEC b = FA_SET1(p[r]);
            LOOM_UNROLL for (int v = 0; v < NV; v++) a[r][v] = FA_FMADD(b, x[v], a[r][v]);
        }
    }
    LOOM_UNROLL for (int r = 0; r < NR; r++) LOOM_UNROLL for (int v = 0; v < NV; v++)
        FA_STOREU(acc + (size_t)(r0 + r) * as + (size_t)d0 + (size_t)v * FA_W, a[r][v]);
}

static ALWAYS_INLINE void pv_rows(const int NR, const int32_t *live, int nl, int64_t Rp, int64_t Dv, const float *sT,
                                  const float *f, const float *vf, size_t vs, float *acc, size_t as, int64_t r0) {
    const int64_t nv = Dv / FA_W;
    for (int64_t v0 = 0; v0 < nv; v0 += FA_NV) {
        const int64_t d0 = v0 * FA_W;
        switch (nv - v0 < FA_NV ? nv - v0 : FA_NV) {
        case 1: pv_block(NR, 1, live, nl, Rp, sT, f, vf, vs, acc, as, r0, d0); break;
        case 2: pv_block(NR, 2, live, nl, Rp, sT, f, vf, vs, acc, as, r0, d0); break;
        case 3: pv_block(NR, 3, live, nl, Rp, sT, f, vf, vs, acc, as, r0, d0); break;
        default: pv_block(NR, 4, live, nl, Rp, sT, f, vf, vs, acc, as, r0, d0); break;
        }
    }
}

static void fa_pv(int64_t nk, int64_t R, int64_t Rp, int64_t Dv, const float *sT, const float *f, const float *vf,
                  size_t vs, float *acc, size_t as) {
    if (Dv % FA_W || nk > 64) { /* the same arithmetic, unvectorised */
        loom_fa_pv_ref(nk, R, Rp, Dv, sT, f, vf, vs, acc, as);
        return;
    }
    int32_t live[64];
    int nl = 0;
    for (int64_t j = 0; j < nk; j++) { /* keys with p != 0 in some row r < R */
        const float *p = sT + (size_t)j * (size_t)Rp;
        bool any = false;
        for (int64_t r = 0; r < R && !any; r += FA_W) {
            int bits = FA_NZ(FA_LOADU(p + r));
            if (R - r < FA_W) bits &= (1 << (R - r)) - 1;
            any = bits != 0;
        }
        if (any) live[nl++] = (int32_t)j;
    }
    int64_t r = 0;
    for (; r + PV_NR <= R; r += PV_NR) pv_rows(PV_NR, live, nl, Rp, Dv, sT, f, vf, vs, acc, as, r);
    for (; r + 2 <= R; r += 2) pv_rows(2, live, nl, Rp, Dv, sT, f, vf, vs, acc, as, r); /* two chains per vector */
    for (; r < R; r++) pv_rows(1, live, nl, Rp, Dv, sT, f, vf, vs, acc, as, r);
}

#endif /* LOOM_KERNELS_FA_BODY_H */
