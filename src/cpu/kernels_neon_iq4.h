/*
 * kernels_neon_iq4.h (internal to kernels_neon_body.h) - AArch64 kernels for IQ4_NL
 * (x Q8_0) and IQ4_XS (x Q8_K), compiled with the body's ndot() (SMULL/SADALP or SDOT)
 * and h2f(). The 4-bit codes index the 16-entry code table with TBL; exact int32 per
 * block (IQ4_XS: sub-block scales applied in int32), one float scaling per block, as
 * in the scalar reference (kernels_iq_scalar.c).
 */
#include "quant/iq_tables.h"

static inline int32_t iq4_dot32(const uint8_t *qs, const int8_t *a, int8x16_t lut) {
    uint8x16_t lo, hi;
    unpack_nibbles(qs, &lo, &hi);
    int32x4_t acc = ndot(vdupq_n_s32(0), vqtbl1q_s8(lut, lo), vld1q_s8(a));
    acc = ndot(acc, vqtbl1q_s8(lut, hi), vld1q_s8(a + 16));
    return vaddvq_s32(acc);
}

static void vd_iq4_nl(int64_t n, float *s, const void *vx, const void *vy) {
    const block_iq4_nl *x = vx;
    const block_q8_0 *y = vy;
    const int8x16_t lut = vld1q_s8(loom_iq4nl_kv);
    float sum = 0.f;
    for (int64_t i = 0; i < n / 32; i++)
        sum += (h2f(x[i].d) * h2f(y[i].d)) * (float)iq4_dot32(x[i].qs, y[i].qs, lut);
    *s = sum;
}

static void vd_iq4_xs(int64_t n, float *s, const void *vx, const void *vy) {
    const block_iq4_xs *x = vx;
    const block_q8_K *y = vy;
    const int8x16_t lut = vld1q_s8(loom_iq4nl_kv);
    float sum = 0.f;
    for (int64_t i = 0; i < n / QK_K; i++) {
        int32_t bsum = 0;
        for (int ib = 0; ib < 8; ib++)
            bsum += (loom_iq4xs_scale(&x[i], ib) - 32) * iq4_dot32(x[i].qs + 16 * ib, y[i].qs + 32 * ib, lut);
        sum += (h2f(x[i].d) * y[i].d) * (float)bsum;
    }
    *s = sum;
}

static void neon_fill_iq4(loom_kernels *k) {
    k->dot[LOOM_TYPE_IQ4_NL].vec_dot = vd_iq4_nl;
    k->dot[LOOM_TYPE_IQ4_XS].vec_dot = vd_iq4_xs;
}
