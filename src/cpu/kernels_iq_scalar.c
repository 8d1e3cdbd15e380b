/* Scalar kernels for the IQ / TQ weight types: the references of the SIMD versions
 * (kernels_iq4_*.c, kernels_iq2_avx2.c, kernels_iq3_avx2.c, kernels_iq1tq_avx2.c).
 * Every type dots its weight row with a Q8_0 (IQ4_NL) or Q8_K (all others) activation
 * row: an exact integer sum per block (codes or grid values times activation bytes,
 * signs and sub-block scales applied in integers), then one float scaling per block.
 *  - IQ4_NL / IQ4_XS: table codes; IQ4_XS 6-bit sub-block scales.
 *  - IQ2_XXS / IQ2_XS / IQ2_S: grid bytes times signed activations per 8 values, odd
 *    sub-block scales 2s+1 in integers, a final exact 1/8.
 *  - IQ3_XXS / IQ3_S: the same scheme with 4-value grid words.
 *  - IQ1_S / IQ1_M: 8 * sum(g * q) +- sum(q) per group (the delta), a final exact 1/8.
 *  - TQ1_0 / TQ2_0: sum(t * q) - sum(q) from the Q8_K group sums. */
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

/* The 7 stored sign bits of 8 values; the 8th makes the count of minus signs even. */
static inline uint8_t iq_signs8(uint32_t s7) {
    s7 &= 127;
    return (uint8_t)(s7 | ((uint32_t)(__builtin_popcount(s7) & 1) << 7));
}

/* IQ2 family. The dequantized value is d * (0.5 + s) * 0.25 * grid * sign
 * = d * (2s + 1) * grid * sign / 8, so the dot is d * dy / 8 * sum_sub (2s + 1) * isum.
 * Grid bytes are at most 43 and Q8_K bytes at most 127 in magnitude, so |bsum| <=
 * 8 * 31 * 32 * 43 * 127 < 2^26: exact in int32; its conversion to float may round
 * once, like the block sums of the other Q8_K kernels. */

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
                isum += iq2_dot8(loom_iq2xxs_grid[(a0 >> (8 * l)) & 255], iq_signs8(a1 >> (7 * l)), a + 8 * l);
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
                    isum += iq2_dot8(loom_iq2xs_grid[q & 511], iq_signs8(q >> 9), a + 8 * l);
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

/* IQ3_XXS / IQ3_S x Q8_K: exact int32 per block (grid values <= 62, sub-block scales
 * <= 31: |bsum| <= 8 * 31 * 32 * 62 * 128 < 2^26), one float scaling per block. The
 * dequantized value is d * (2 ls + 1) / 4 * grid * sign (IQ3_XXS) and d * (2 sc + 1) *
 * grid * sign (IQ3_S), so the integer scales are 2 ls + 1 and 2 sc + 1. */

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
                const unsigned sg = iq_signs8(w >> (7 * l));
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

void loom_kernels_fill_iq_scalar(loom_kernels *k) {
#define E(w, a, fn) k->dot[LOOM_TYPE_##w] = (loom_kernel_entry){LOOM_TYPE_##a, fn}
    E(IQ4_NL, Q8_0, loom_vd_iq4_nl_ref);
    E(IQ4_XS, Q8_K, loom_vd_iq4_xs_ref);
    E(IQ2_XXS, Q8_K, loom_vd_iq2_xxs_ref);
    E(IQ2_XS, Q8_K, loom_vd_iq2_xs_ref);
    E(IQ2_S, Q8_K, loom_vd_iq2_s_ref);
    E(IQ3_XXS, Q8_K, loom_vd_iq3_xxs_ref);
    E(IQ3_S, Q8_K, loom_vd_iq3_s_ref);
    E(IQ1_S, Q8_K, loom_vd_iq1_s_ref);
    E(IQ1_M, Q8_K, loom_vd_iq1_m_ref);
    E(TQ1_0, Q8_K, loom_vd_tq1_0_ref);
    E(TQ2_0, Q8_K, loom_vd_tq2_0_ref);
#undef E
}
