/* Scalar kernels for the IQ / TQ weight types.
 *  - IQ4_NL x Q8_0 and IQ4_XS x Q8_K: exact integer dot per block (sub-block scales
 *    applied in integers), one float scaling per block; the references of the SIMD
 *    versions (kernels_iq4_*.c).
 *  - IQ2_XXS / IQ2_XS / IQ2_S x Q8_K: exact integer dot per block (grid bytes times
 *    signed activations per 8 values, odd sub-block scales 2s+1 applied in integers),
 *    one float scaling per block and a final exact 1/8; the references of
 *    kernels_iq2_avx2.c.
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

/* IQ2 family. The dequantized value is d * (0.5 + s) * 0.25 * grid * sign
 * = d * (2s + 1) * grid * sign / 8, so the dot is d * dy / 8 * sum_sub (2s + 1) * isum.
 * Grid bytes are at most 43 and Q8_K bytes at most 127 in magnitude, so |bsum| <=
 * 8 * 31 * 32 * 43 * 127 < 2^26: exact in int32; its conversion to float may round
 * once, like the block sums of the other Q8_K kernels. */

/* the 7 stored sign bits of 8 values; the 8th makes the count of minus signs even */
static inline uint8_t iq2_signs8(uint32_t s7) {
    s7 &= 127;
    return (uint8_t)(s7 | ((uint32_t)(__builtin_popcount(s7) & 1) << 7));
}

/* sum_j grid byte j * (+-1 by sign bit j) * a[j] over 8 values */
static inline int iq2_dot8(uint64_t g, uint8_t signs, const int8_t *a) {
    int s = 0;
    for (int j = 0; j < 8; j++) {
        const int v = (int)(uint8_t)(g >> (8 * j)) * a[j];
        s += (signs >> j) & 1 ? -v : v;
    }
    return s;
}

void loom_vd_iq2_xxs_ref(int64_t n, float *s, const void *vx, const void *vy) {
    const block_iq2_xxs *x = vx;
    const block_q8_K *y = vy;
    float sum = 0.f;
    for (int64_t i = 0; i < n / QK_K; i++) {
        const uint8_t *qs = (const uint8_t *)x[i].qs;
        const int8_t *a = y[i].qs;
        int32_t bsum = 0;
        for (int ib = 0; ib < 8; ib++, a += 32) {
            uint32_t a0, a1;
            memcpy(&a0, qs + 8 * ib, 4);
            memcpy(&a1, qs + 8 * ib + 4, 4);
            int isum = 0;
            for (int l = 0; l < 4; l++)
                isum += iq2_dot8(loom_iq2xxs_grid[(a0 >> (8 * l)) & 255], iq2_signs8(a1 >> (7 * l)), a + 8 * l);
            bsum += (int32_t)(2 * (a1 >> 28) + 1) * isum;
        }
        sum += (H2F(x[i].d) * y[i].d) * (float)bsum;
    }
    *s = 0.125f * sum;
}

void loom_vd_iq2_xs_ref(int64_t n, float *s, const void *vx, const void *vy) {
    const block_iq2_xs *x = vx;
    const block_q8_K *y = vy;
    float sum = 0.f;
    for (int64_t i = 0; i < n / QK_K; i++) {
        const int8_t *a = y[i].qs;
        int32_t bsum = 0;
        for (int ib = 0; ib < 8; ib++) {
            for (int h = 0; h < 2; h++, a += 16) { /* 16 values per 4-bit scale */
                int isum = 0;
                for (int l = 0; l < 2; l++) {
                    const uint16_t q = x[i].qs[4 * ib + 2 * h + l];
                    isum += iq2_dot8(loom_iq2xs_grid[q & 511], iq2_signs8(q >> 9), a + 8 * l);
                }
                bsum += (2 * ((x[i].scales[ib] >> (4 * h)) & 0xF) + 1) * isum;
            }
        }
        sum += (H2F(x[i].d) * y[i].d) * (float)bsum;
    }
    *s = 0.125f * sum;
}

void loom_vd_iq2_s_ref(int64_t n, float *s, const void *vx, const void *vy) {
    const block_iq2_s *x = vx;
    const block_q8_K *y = vy;
    float sum = 0.f;
    for (int64_t i = 0; i < n / QK_K; i++) {
        const uint8_t *qs = x[i].qs, *signs = x[i].qs + 32;
        const int8_t *a = y[i].qs;
        int32_t bsum = 0;
        for (int ib = 0; ib < 8; ib++) {
            for (int h = 0; h < 2; h++, a += 16) {
                int isum = 0;
                for (int l = 2 * h; l < 2 * h + 2; l++) {
                    const int idx = qs[4 * ib + l] | ((x[i].qh[ib] << (8 - 2 * l)) & 0x300);
                    isum += iq2_dot8(loom_iq2s_grid[idx], signs[4 * ib + l], a + 8 * (l - 2 * h));
                }
                bsum += (2 * ((x[i].scales[ib] >> (4 * h)) & 0xF) + 1) * isum;
            }
        }
        sum += (H2F(x[i].d) * y[i].d) * (float)bsum;
    }
    *s = 0.125f * sum;
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
    E(IQ2_XXS, Q8_K, loom_vd_iq2_xxs_ref);
    E(IQ2_XS, Q8_K, loom_vd_iq2_xs_ref);
    E(IQ2_S, Q8_K, loom_vd_iq2_s_ref);
    E(IQ3_XXS, F32, vd_iq3_xxs_f32);
    E(IQ3_S, F32, vd_iq3_s_f32);
    E(IQ1_S, F32, vd_iq1_s_f32);
    E(IQ1_M, F32, vd_iq1_m_f32);
    E(TQ1_0, F32, vd_tq1_0_f32);
    E(TQ2_0, F32, vd_tq2_0_f32);
#undef E
}
