/* Scalar kernels for the IQ / TQ weight types.
 *  - IQ4_NL x Q8_0 and IQ4_XS x Q8_K: exact integer dot per block (sub-block scales
 *    applied in integers), one float scaling per block; the references of the SIMD
 *    versions (kernels_iq4_*.c).
 *  - IQ1_S, IQ1_M, TQ1_0, TQ2_0 x Q8_K: the same, one exact int32 per block (the
 *    references of kernels_iq1tq_avx2.c).
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

/* IQ1_S / IQ1_M x Q8_K. A weight is dl * (g + delta) with g in {-1, 0, 1} from the
 * grid, dl = d * (2s + 1), delta = +-1/8 per 32 (IQ1_S) or per 8 (IQ1_M) elements.
 * Scaled by 8 the group sum is the integer 8 * sum(g * q) +- sum(q), so the block is one
 * exact int32 (|.| <= 8 * 15 * 9 * 32 * 128 < 2^23, exact as a float too) times
 * d * y.d / 8. IQ1_S takes sum(q) over its 32 elements from the Q8_K bsums. */
void loom_vd_iq1_s_ref(int64_t n, float *s, const void *vx, const void *vy) {
    const block_iq1_s *x = vx;
    const block_q8_K *y = vy;
    float sum = 0.f;
    for (int64_t i = 0; i < n / QK_K; i++) {
        int32_t bsum = 0;
        for (int ib = 0; ib < 8; ib++) {
            const int qh = x[i].qh[ib];
            const int8_t *a = y[i].qs + 32 * ib;
            int isum = 0;
            for (int l = 0; l < 4; l++) {
                const uint64_t g = loom_iq1s_grid[x[i].qs[4 * ib + l] | (((qh >> (3 * l)) & 7) << 8)];
                for (int j = 0; j < 8; j++) isum += (int8_t)(g >> (8 * j)) * a[8 * l + j];
            }
            const int asum = y[i].bsums[2 * ib] + y[i].bsums[2 * ib + 1];
            bsum += (2 * ((qh >> 12) & 7) + 1) * (8 * isum + (qh & 0x8000 ? -asum : asum));
        }
        sum += (H2F(x[i].d) * y[i].d) * ((float)bsum * 0.125f);
    }
    *s = sum;
}

/* the f16 block scale of IQ1_M: the top nibbles of its 4 little-endian scale words */
static inline uint16_t iq1m_d(const block_iq1_m *b) {
    uint16_t sc[4];
    memcpy(sc, b->scales, 8);
    return (uint16_t)((sc[0] >> 12) | ((sc[1] >> 8) & 0x00F0) | ((sc[2] >> 4) & 0x0F00) | (sc[3] & 0xF000));
}

void loom_vd_iq1_m_ref(int64_t n, float *s, const void *vx, const void *vy) {
    const block_iq1_m *x = vx;
    const block_q8_K *y = vy;
    float sum = 0.f;
    for (int64_t i = 0; i < n / QK_K; i++) {
        uint16_t sc[4];
        memcpy(sc, x[i].scales, 8);
        int32_t bsum = 0;
        for (int ib = 0; ib < 8; ib++) {
            const uint8_t *qs = x[i].qs + 4 * ib, *qh = x[i].qh + 2 * ib;
            const int8_t *a = y[i].qs + 32 * ib;
            for (int l = 0; l < 4; l++) { /* 8 elements: grid index bits 8..10 and delta sign from qh */
                const int h = qh[l / 2] >> (4 * (l % 2));
                const uint64_t g = loom_iq1s_grid[qs[l] | ((h & 7) << 8)];
                const int ls = 2 * ((sc[ib / 2] >> (6 * (ib % 2) + 3 * (l / 2))) & 7) + 1;
                int isum = 0, asum = 0;
                for (int j = 0; j < 8; j++) {
                    isum += (int8_t)(g >> (8 * j)) * a[8 * l + j];
                    asum += a[8 * l + j];
                }
                bsum += ls * (8 * isum + (h & 8 ? -asum : asum));
            }
        }
        sum += (H2F(iq1m_d(&x[i])) * y[i].d) * ((float)bsum * 0.125f);
    }
    *s = sum;
}

/* TQ1_0 / TQ2_0 x Q8_K: ternary codes t in {0, 1, 2} stand for t - 1, so the block dot
 * is sum(t * q) - sum(q) (the latter from the bsums), one exact int32 per block. */
void loom_vd_tq1_0_ref(int64_t n, float *s, const void *vx, const void *vy) {
    static const uint8_t pow3[5] = {1, 3, 9, 27, 81};
    const block_tq1_0 *x = vx;
    const block_q8_K *y = vy;
    float sum = 0.f;
    for (int64_t i = 0; i < n / QK_K; i++) {
        const int8_t *a = y[i].qs;
        int32_t isum = 0;
        /* byte m of qs[0..31] holds elements m + 32n (n = 0..4), of qs[32..47] elements
         * 160 + m + 16n, of qh[0..3] elements 240 + m + 4n (n = 0..3); trit n of byte b is
         * the top of (uint8_t)(b * 3^n) * 3 */
        for (int n3 = 0; n3 < 5; n3++) {
            for (int m = 0; m < 32; m++)
                isum += ((((uint8_t)(x[i].qs[m] * pow3[n3])) * 3) >> 8) * a[32 * n3 + m];
            for (int m = 0; m < 16; m++)
                isum += ((((uint8_t)(x[i].qs[32 + m] * pow3[n3])) * 3) >> 8) * a[160 + 16 * n3 + m];
        }
        for (int n3 = 0; n3 < 4; n3++)
            for (int m = 0; m < 4; m++) isum += ((((uint8_t)(x[i].qh[m] * pow3[n3])) * 3) >> 8) * a[240 + 4 * n3 + m];
        for (int g = 0; g < 16; g++) isum -= y[i].bsums[g];
        sum += (H2F(x[i].d) * y[i].d) * (float)isum;
    }
    *s = sum;
}

void loom_vd_tq2_0_ref(int64_t n, float *s, const void *vx, const void *vy) {
    const block_tq2_0 *x = vx;
    const block_q8_K *y = vy;
    float sum = 0.f;
    for (int64_t i = 0; i < n / QK_K; i++) {
        int32_t isum = 0;
        /* byte m of qs[32h..32h+31], bits 2l..2l+1: element 128h + 32l + m */
        for (int h = 0; h < 2; h++)
            for (int l = 0; l < 4; l++)
                for (int m = 0; m < 32; m++) isum += ((x[i].qs[32 * h + m] >> (2 * l)) & 3) * y[i].qs[128 * h + 32 * l + m];
        for (int g = 0; g < 16; g++) isum -= y[i].bsums[g];
        sum += (H2F(x[i].d) * y[i].d) * (float)isum;
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
    E(IQ1_S, Q8_K, loom_vd_iq1_s_ref);
    E(IQ1_M, Q8_K, loom_vd_iq1_m_ref);
    E(TQ1_0, Q8_K, loom_vd_tq1_0_ref);
    E(TQ2_0, Q8_K, loom_vd_tq2_0_ref);
#undef E
}
