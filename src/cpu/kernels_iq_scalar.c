/* Scalar kernels for the IQ / TQ weight types.
 *  - IQ4_NL x Q8_0 and IQ4_XS x Q8_K: exact integer dot per block (sub-block scales
 *    applied in integers), one float scaling per block; the references of the SIMD
 *    versions (kernels_iq4_*.c).
 *  - IQ3_XXS / IQ3_S x Q8_K: the same scheme (grid lookups, 8 sign bits per 8 values),
 *    references of kernels_iq3_avx2.c.
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

/* IQ3_XXS / IQ3_S x Q8_K: exact int32 per block (grid values <= 62, sub-block scales
 * <= 31: |bsum| <= 8 * 31 * 32 * 62 * 128 < 2^26), one float scaling per block. The
 * dequantized value is d * (2 ls + 1) / 4 * grid * sign (IQ3_XXS) and d * (2 sc + 1) *
 * grid * sign (IQ3_S), so the integer scales are 2 ls + 1 and 2 sc + 1. */
static inline uint8_t iq3_signs8(uint32_t s7) { /* 7 stored sign bits + even parity */
    s7 &= 127;
    return (uint8_t)(s7 | ((uint32_t)(__builtin_popcount(s7) & 1) << 7));
}

/* sum over 4 grid values (bytes of g) times activations, sign bit j of sg per value */
static inline int iq3_dot4(uint32_t g, unsigned sg, const int8_t *a) {
    int s = 0;
    for (int j = 0; j < 4; j++) {
        const int v = (int)((g >> (8 * j)) & 0xFF) * a[j];
        s += (sg >> j) & 1 ? -v : v;
    }
    return s;
}

void loom_vd_iq3_xxs_ref(int64_t n, float *s, const void *vx, const void *vy) {
    const block_iq3_xxs *x = vx;
    const block_q8_K *y = vy;
    float sum = 0.f;
    for (int64_t i = 0; i < n / QK_K; i++) {
        const uint8_t *qs = x[i].qs, *ss = x[i].qs + 64;
        const int8_t *a = y[i].qs;
        int32_t bsum = 0;
        for (int ib = 0; ib < 8; ib++) {
            uint32_t w;
            memcpy(&w, ss + 4 * ib, 4);
            int isum = 0;
            for (int l = 0; l < 4; l++) {
                const unsigned sg = iq3_signs8(w >> (7 * l));
                isum += iq3_dot4(loom_iq3xxs_grid[qs[2 * l]], sg, a);
                isum += iq3_dot4(loom_iq3xxs_grid[qs[2 * l + 1]], sg >> 4, a + 4);
                a += 8;
            }
            bsum += (int32_t)(2 * (w >> 28) + 1) * isum;
            qs += 8;
        }
        sum += (H2F(x[i].d) * y[i].d * 0.25f) * (float)bsum;
    }
    *s = sum;
}

void loom_vd_iq3_s_ref(int64_t n, float *s, const void *vx, const void *vy) {
    const block_iq3_s *x = vx;
    const block_q8_K *y = vy;
    float sum = 0.f;
    for (int64_t i = 0; i < n / QK_K; i++) {
        const uint8_t *qs = x[i].qs, *sg = x[i].signs;
        const int8_t *a = y[i].qs;
        int32_t bsum = 0;
        for (int ib = 0; ib < 8; ib++) {
            const int sc = (x[i].scales[ib / 2] >> (4 * (ib & 1))) & 0xF, qh = x[i].qh[ib];
            int isum = 0;
            for (int l = 0; l < 4; l++) { /* grid index: 8 bits of qs, 9th from qh */
                const int i1 = qs[2 * l] | (((qh >> (2 * l)) & 1) << 8);
                const int i2 = qs[2 * l + 1] | (((qh >> (2 * l + 1)) & 1) << 8);
                isum += iq3_dot4(loom_iq3s_grid[i1], sg[l], a);
                isum += iq3_dot4(loom_iq3s_grid[i2], sg[l] >> 4u, a + 4);
                a += 8;
            }
            bsum += (2 * sc + 1) * isum;
            qs += 8;
            sg += 4;
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
    E(IQ3_XXS, Q8_K, loom_vd_iq3_xxs_ref);
    E(IQ3_S, Q8_K, loom_vd_iq3_s_ref);
    E(IQ1_S, F32, vd_iq1_s_f32);
    E(IQ1_M, F32, vd_iq1_m_f32);
    E(TQ1_0, F32, vd_tq1_0_f32);
    E(TQ2_0, F32, vd_tq2_0_f32);
#undef E
}
