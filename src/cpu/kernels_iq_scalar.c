/* Scalar kernels for the IQ / TQ weight types.
 *  - IQ4_NL x Q8_0 and IQ4_XS x Q8_K: exact integer dot per block (sub-block scales
 *    applied in integers), one float scaling per block; the references of the SIMD
 *    versions (kernels_iq4_*.c).
 *  - every other IQ/TQ type: no integer kernel; the weight row is dequantized block by
 *    block (loom_dequantize_row, bit-exact with the format's reference) into a stack
 *    buffer and dotted with an F32 activation row (vec_dot_type F32: no conversion). */
#include "cpu/kernels_internal.h"
#include "quant/iq_tables.h"

#include <string.h>

#define H2F loom_fp16_to_fp32

void loom_vd_iq4_nl_ref(int64_t n, float *s, const void *vx, const void *vy) {
    const block_iq4_nl *x = vx;
    const block_q8_0 *y = vy;
    float sum = 0.f;
    for (int64_t i = 0; i < n / 32; i++) {
        int isum = 0;
        for (int l = 0; l < 16; l++)
            isum += loom_iq4nl_kv[x[i].qs[l] & 0xF] * y[i].qs[l] + loom_iq4nl_kv[x[i].qs[l] >> 4] * y[i].qs[l + 16];
        sum += (H2F(x[i].d) * H2F(y[i].d)) * (float)isum;
    }
    *s = sum;
}

void loom_vd_iq4_xs_ref(int64_t n, float *s, const void *vx, const void *vy) {
    const block_iq4_xs *x = vx;
    const block_q8_K *y = vy;
    float sum = 0.f;
    for (int64_t i = 0; i < n / QK_K; i++) {
        int32_t bsum = 0; /* |bsum| <= 8 * 32 * 32 * 127 * 127 < 2^31 */
        for (int ib = 0; ib < 8; ib++) {
            const uint8_t *q = x[i].qs + 16 * ib;
            const int8_t *a = y[i].qs + 32 * ib;
            int isum = 0;
            for (int l = 0; l < 16; l++)
                isum += loom_iq4nl_kv[q[l] & 0xF] * a[l] + loom_iq4nl_kv[q[l] >> 4] * a[l + 16];
            bsum += (loom_iq4xs_scale(&x[i], ib) - 32) * isum;
        }
        sum += (H2F(x[i].d) * y[i].d) * (float)bsum;
    }
    *s = sum;
}

/* dequantize-and-dot for a 256-element block type T of bb bytes per block */
static inline void vd_deq_f32(loom_type t, size_t bb, int64_t n, float *s, const void *vx, const void *vy) {
    const uint8_t *x = vx;
    const float *y = vy;
    float buf[QK_K], sum = 0.f;
    for (int64_t i = 0; i < n / QK_K; i++) {
        loom_dequantize_row(t, x + (size_t)i * bb, buf, QK_K);
        for (int l = 0; l < QK_K; l++) sum += buf[l] * y[QK_K * i + l];
    }
    *s = sum;
}

#define DEQ_DOT(nm, T)                                                                   \
    static void vd_##nm##_f32(int64_t n, float *s, const void *vx, const void *vy) {     \
        vd_deq_f32(LOOM_TYPE_##T, sizeof(block_##nm), n, s, vx, vy);                    \
    }
DEQ_DOT(iq2_xxs, IQ2_XXS)
DEQ_DOT(iq2_xs, IQ2_XS)
DEQ_DOT(iq2_s, IQ2_S)
DEQ_DOT(iq3_xxs, IQ3_XXS)
DEQ_DOT(iq3_s, IQ3_S)
DEQ_DOT(iq1_s, IQ1_S)
DEQ_DOT(iq1_m, IQ1_M)
DEQ_DOT(tq1_0, TQ1_0)
DEQ_DOT(tq2_0, TQ2_0)
#undef DEQ_DOT

void loom_kernels_fill_iq_scalar(loom_kernels *k) {
#define E(w, a, fn) k->dot[LOOM_TYPE_##w] = (loom_kernel_entry){LOOM_TYPE_##a, fn}
    E(IQ4_NL, Q8_0, loom_vd_iq4_nl_ref);
    E(IQ4_XS, Q8_K, loom_vd_iq4_xs_ref);
    E(IQ2_XXS, F32, vd_iq2_xxs_f32);
    E(IQ2_XS, F32, vd_iq2_xs_f32);
    E(IQ2_S, F32, vd_iq2_s_f32);
    E(IQ3_XXS, F32, vd_iq3_xxs_f32);
    E(IQ3_S, F32, vd_iq3_s_f32);
    E(IQ1_S, F32, vd_iq1_s_f32);
    E(IQ1_M, F32, vd_iq1_m_f32);
    E(TQ1_0, F32, vd_tq1_0_f32);
    E(TQ2_0, F32, vd_tq2_0_f32);
#undef E
}
