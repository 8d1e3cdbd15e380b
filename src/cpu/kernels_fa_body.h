/*
 * kernels_fa_body.h - the flash-attention p.V driver shared by kernels_fa_avx2.c and
 * kernels_fa_avx512.c (kernels.h fa_pv): included once by each, after it defines
 *   FA_VEC            the float vector type, FA_W its width (floats)
 *   FA_LOADU/STOREU   unaligned float load / store, FA_SET1 broadcast, FA_FMADD(a, b, c) = a * b + c
 *   pv_load(vt, row, d0)  FA_W values of a V row from element d0 as floats
 * and PV_TILE (keys per pass). The tile's live keys (any head's p != 0) are the inner
 * loop; up to 8 heads' accumulators for one FA_W-float slice of Dv stay in registers.
 */
#ifndef LOOM_KERNELS_FA_BODY_H
#define LOOM_KERNELS_FA_BODY_H

/* Heads [0, H) (H <= 8, a constant after inlining) over the live keys, one Dv slice. */
static ALWAYS_INLINE void pv_slice(const int H, loom_type vt, const int32_t *live, int nl, const float *p, size_t ps,
                                   const uint8_t *v, size_t vs, float *acc, size_t as, int64_t d0) {
    FA_VEC a[8];
    LOOM_UNROLL
    for (int h = 0; h < H; h++) a[h] = FA_LOADU(acc + (size_t)h * as + d0);
    for (int i = 0; i < nl; i++) {
        const int32_t j = live[i];
        const FA_VEC x = pv_load(vt, v + (size_t)j * vs, d0);
        LOOM_UNROLL
        for (int h = 0; h < H; h++)
            a[h] = FA_FMADD(FA_SET1(p[(size_t)h * ps + (size_t)j]), x, a[h]);
    }
    LOOM_UNROLL
    for (int h = 0; h < H; h++) FA_STOREU(acc + (size_t)h * as + d0, a[h]);
}

static ALWAYS_INLINE void pv_heads(loom_type vt, int H, const int32_t *live, int nl, const float *p, size_t ps,
                                   const uint8_t *v, size_t vs, float *acc, size_t as, int64_t Dv) {
    for (int64_t d0 = 0; d0 < Dv; d0 += FA_W) {
        switch (H) {
#define PV_CASE(N) \
    case N: pv_slice(N, vt, live, nl, p, ps, v, vs, acc, as, d0); break;
            PV_CASE(1) PV_CASE(2) PV_CASE(3) PV_CASE(4) PV_CASE(5) PV_CASE(6) PV_CASE(7) PV_CASE(8)
#undef PV_CASE
        default: break;
        }
    }
}

static ALWAYS_INLINE void pv_type(loom_type vt, int64_t n, int64_t G, int64_t Dv, const float *p, size_t ps,
                                  const uint8_t *v, size_t vs, float *acc, size_t as) {
    int32_t live[PV_TILE];
    for (int64_t j0 = 0; j0 < n; j0 += PV_TILE) {
        const int64_t j1 = j0 + PV_TILE < n ? j0 + PV_TILE : n;
        int nl = 0;
        for (int64_t j = j0; j < j1; j++) {
            bool any = false;
            for (int64_t h = 0; h < G && !any; h++) any = p[(size_t)h * ps + (size_t)j] != 0.0f;
            if (any) live[nl++] = (int32_t)j;
        }
        if (!nl) continue;
        for (int64_t h0 = 0; h0 < G; h0 += 8) {
            const int H = (int)(G - h0 < 8 ? G - h0 : 8);
            pv_heads(vt, H, live, nl, p + (size_t)h0 * ps, ps, v, vs, acc + (size_t)h0 * as, as, Dv);
        }
    }
}

static bool fa_pv(loom_type vt, int64_t n, int64_t G, int64_t Dv, const float *p, size_t ps, const void *v, size_t vs,
                  float *acc, size_t as) {
    if (Dv % FA_W || ((vt == LOOM_TYPE_Q8_0 || vt == LOOM_TYPE_Q4_0) && Dv % 32)) return false;
    switch (vt) {
    case LOOM_TYPE_F32: pv_type(LOOM_TYPE_F32, n, G, Dv, p, ps, v, vs, acc, as); return true;
    case LOOM_TYPE_F16: pv_type(LOOM_TYPE_F16, n, G, Dv, p, ps, v, vs, acc, as); return true;
    case LOOM_TYPE_Q8_0: pv_type(LOOM_TYPE_Q8_0, n, G, Dv, p, ps, v, vs, acc, as); return true;
    case LOOM_TYPE_Q4_0: pv_type(LOOM_TYPE_Q4_0, n, G, Dv, p, ps, v, vs, acc, as); return true;
    default: return false;
    }
}

#endif /* LOOM_KERNELS_FA_BODY_H */
