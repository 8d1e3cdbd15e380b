/* Reference dequantization of one row (backend contract §9.2/§9.3). The float
 * operations follow the published formulas in the same order so that results are
 * bit-identical with other readers of the format. */
#include "loom_base.h"
#include "quant/blocks.h"
#include "quant/iq_tables.h"

#include <string.h>

#define H2F loom_fp16_to_fp32

static void dq_q4_0(const uint8_t *src, float *y, int64_t nb) {
    for (int64_t i = 0; i < nb; i++, y += 32) {
        block_q4_0 b;
        memcpy(&b, src + i * (int64_t)sizeof b, sizeof b);
        const float d = H2F(b.d);
        for (int l = 0; l < 16; l++) {
            y[l] = (float)((b.qs[l] & 0xF) - 8) * d;
            y[l + 16] = (float)((b.qs[l] >> 4) - 8) * d;
        }
    }
}

static void dq_q4_1(const uint8_t *src, float *y, int64_t nb) {
    for (int64_t i = 0; i < nb; i++, y += 32) {
        block_q4_1 b;
        memcpy(&b, src + i * (int64_t)sizeof b, sizeof b);
        const float d = H2F(b.d), m = H2F(b.m);
        for (int l = 0; l < 16; l++) {
            y[l] = (float)(b.qs[l] & 0xF) * d + m;
            y[l + 16] = (float)(b.qs[l] >> 4) * d + m;
        }
    }
}

static void dq_q5_0(const uint8_t *src, float *y, int64_t nb) {
    for (int64_t i = 0; i < nb; i++, y += 32) {
        block_q5_0 b;
        memcpy(&b, src + i * (int64_t)sizeof b, sizeof b);
        const float d = H2F(b.d);
        uint32_t h;
        memcpy(&h, b.qh, 4);
        for (int l = 0; l < 16; l++) {
            int q0 = (b.qs[l] & 0xF) | (int)(((h >> l) & 1u) << 4);
            int q1 = (b.qs[l] >> 4) | (int)(((h >> (l + 16)) & 1u) << 4);
            y[l] = (float)(q0 - 16) * d;
            y[l + 16] = (float)(q1 - 16) * d;
        }
    }
}

static void dq_q5_1(const uint8_t *src, float *y, int64_t nb) {
    for (int64_t i = 0; i < nb; i++, y += 32) {
        block_q5_1 b;
        memcpy(&b, src + i * (int64_t)sizeof b, sizeof b);
        const float d = H2F(b.d), m = H2F(b.m);
        uint32_t h;
        memcpy(&h, b.qh, 4);
        for (int l = 0; l < 16; l++) {
            int q0 = (b.qs[l] & 0xF) | (int)(((h >> l) & 1u) << 4);
            int q1 = (b.qs[l] >> 4) | (int)(((h >> (l + 16)) & 1u) << 4);
            y[l] = (float)q0 * d + m;
            y[l + 16] = (float)q1 * d + m;
        }
    }
}

static void dq_q8_0(const uint8_t *src, float *y, int64_t nb) {
    for (int64_t i = 0; i < nb; i++, y += 32) {
        block_q8_0 b;
        memcpy(&b, src + i * (int64_t)sizeof b, sizeof b);
        const float d = H2F(b.d);
        for (int l = 0; l < 32; l++) y[l] = (float)b.qs[l] * d;
    }
}

static void dq_q8_1(const uint8_t *src, float *y, int64_t nb) {
    for (int64_t i = 0; i < nb; i++, y += 32) {
        block_q8_1 b;
        memcpy(&b, src + i * (int64_t)sizeof b, sizeof b);
        const float d = H2F(b.d);
        for (int l = 0; l < 32; l++) y[l] = (float)b.qs[l] * d;
    }
}

static void dq_q2_K(const uint8_t *src, float *y, int64_t nb) {
    for (int64_t i = 0; i < nb; i++, y += QK_K) {
        block_q2_K b;
        memcpy(&b, src + i * (int64_t)sizeof b, sizeof b);
        const float d = H2F(b.d), dmin = H2F(b.dmin);
        for (int e = 0; e < QK_K; e++) {
            int h = e / 128, r = e % 128, j = r / 32, s = (r % 32) / 16, l = r % 16;
            int q = (b.qs[32 * h + 16 * s + l] >> (2 * j)) & 3;
            uint8_t sc = b.scales[8 * h + 2 * j + s];
            float dl = d * (float)(sc & 0xF), ml = dmin * (float)(sc >> 4);
            y[e] = dl * (float)q - ml;
        }
    }
}

static void dq_q3_K(const uint8_t *src, float *y, int64_t nb) {
    for (int64_t i = 0; i < nb; i++, y += QK_K) {
        block_q3_K b;
        memcpy(&b, src + i * (int64_t)sizeof b, sizeof b);
        const float d = H2F(b.d);
        for (int e = 0; e < QK_K; e++) {
            int h = e / 128, r = e % 128, j = r / 32, s = (r % 32) / 16, l = r % 16;
            int low = (b.qs[32 * h + 16 * s + l] >> (2 * j)) & 3;
            int hi = (b.hmask[16 * s + l] >> (4 * h + j)) & 1;
            int q = low - (hi ? 0 : 4);
            float dl = d * (float)loom_k3_scale(8 * h + 2 * j + s, b.scales);
            y[e] = dl * (float)q;
        }
    }
}

static void dq_q4_K(const uint8_t *src, float *y, int64_t nb) {
    for (int64_t i = 0; i < nb; i++, y += QK_K) {
        block_q4_K b;
        memcpy(&b, src + i * (int64_t)sizeof b, sizeof b);
        const float d = H2F(b.d), dmin = H2F(b.dmin);
        for (int c = 0; c < 4; c++) {
            uint8_t sc, m;
            loom_k4_scale_min(2 * c, b.scales, &sc, &m);
            const float d1 = d * (float)sc, m1 = dmin * (float)m;
            loom_k4_scale_min(2 * c + 1, b.scales, &sc, &m);
            const float d2 = d * (float)sc, m2 = dmin * (float)m;
            const uint8_t *q = b.qs + 32 * c;
            for (int l = 0; l < 32; l++) {
                y[64 * c + l] = d1 * (float)(q[l] & 0xF) - m1;
                y[64 * c + 32 + l] = d2 * (float)(q[l] >> 4) - m2;
            }
        }
    }
}

static void dq_q5_K(const uint8_t *src, float *y, int64_t nb) {
    for (int64_t i = 0; i < nb; i++, y += QK_K) {
        block_q5_K b;
        memcpy(&b, src + i * (int64_t)sizeof b, sizeof b);
        const float d = H2F(b.d), dmin = H2F(b.dmin);
        for (int c = 0; c < 4; c++) {
            uint8_t sc, m;
            loom_k4_scale_min(2 * c, b.scales, &sc, &m);
            const float d1 = d * (float)sc, m1 = dmin * (float)m;
            loom_k4_scale_min(2 * c + 1, b.scales, &sc, &m);
            const float d2 = d * (float)sc, m2 = dmin * (float)m;
            const uint8_t *q = b.qs + 32 * c;
            for (int l = 0; l < 32; l++) {
                int q0 = (q[l] & 0xF) + (((b.qh[l] >> (2 * c)) & 1) ? 16 : 0);
                int q1 = (q[l] >> 4) + (((b.qh[l] >> (2 * c + 1)) & 1) ? 16 : 0);
                y[64 * c + l] = d1 * (float)q0 - m1;
                y[64 * c + 32 + l] = d2 * (float)q1 - m2;
            }
        }
    }
}

static void dq_q6_K(const uint8_t *src, float *y, int64_t nb) {
    for (int64_t i = 0; i < nb; i++, y += QK_K) {
        block_q6_K b;
        memcpy(&b, src + i * (int64_t)sizeof b, sizeof b);
        const float d = H2F(b.d);
        for (int h = 0; h < 2; h++) {
            const uint8_t *ql = b.ql + 64 * h, *qh = b.qh + 32 * h;
            const int8_t *sc = b.scales + 8 * h;
            float *yy = y + 128 * h;
            for (int l = 0; l < 32; l++) {
                int is = l / 16;
                int q1 = ((ql[l] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - 32;
                int q2 = ((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32;
                int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
                int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
                yy[l] = d * (float)sc[is] * (float)q1;
                yy[l + 32] = d * (float)sc[is + 2] * (float)q2;
                yy[l + 64] = d * (float)sc[is + 4] * (float)q3;
                yy[l + 96] = d * (float)sc[is + 6] * (float)q4;
            }
        }
    }
}

static void dq_q8_K(const uint8_t *src, float *y, int64_t nb) {
    for (int64_t i = 0; i < nb; i++, y += QK_K) {
        block_q8_K b;
        memcpy(&b, src + i * (int64_t)sizeof b, sizeof b);
        for (int l = 0; l < QK_K; l++) y[l] = b.d * (float)b.qs[l];
    }
}

static void dq_mxfp4(const uint8_t *src, float *y, int64_t nb) {
    for (int64_t i = 0; i < nb; i++, y += 32) {
        block_mxfp4 b;
        memcpy(&b, src + i * (int64_t)sizeof b, sizeof b);
        const float d = loom_e8m0_half(b.e);
        for (int l = 0; l < 16; l++) {
            y[l] = (float)loom_mxfp4_kv[b.qs[l] & 0xF] * d;
            y[l + 16] = (float)loom_mxfp4_kv[b.qs[l] >> 4] * d;
        }
    }
}

static void dq_nvfp4(const uint8_t *src, float *y, int64_t nb) {
    for (int64_t i = 0; i < nb; i++, y += QK_NVFP4) {
        block_nvfp4 b;
        memcpy(&b, src + i * (int64_t)sizeof b, sizeof b);
        for (int s = 0; s < 4; s++) {
            const float d = loom_ue4m3_half(b.d[s]);
            for (int j = 0; j < 8; j++) {
                y[16 * s + j] = (float)loom_mxfp4_kv[b.qs[8 * s + j] & 0xF] * d;
                y[16 * s + j + 8] = (float)loom_mxfp4_kv[b.qs[8 * s + j] >> 4] * d;
            }
        }
    }
}

static void dq_q1_0(const uint8_t *src, float *y, int64_t nb) {
    for (int64_t i = 0; i < nb; i++, y += QK1_0) {
        block_q1_0 b;
        memcpy(&b, src + i * (int64_t)sizeof b, sizeof b);
        const float d = loom_fp16_to_fp32(b.d);
        for (int j = 0; j < QK1_0; j++) y[j] = (b.qs[j / 8] >> (j % 8)) & 1 ? d : -d;
    }
}

static void dq_q2_0(const uint8_t *src, float *y, int64_t nb) {
    for (int64_t i = 0; i < nb; i++, y += QK2_0) {
        block_q2_0 b;
        memcpy(&b, src + i * (int64_t)sizeof b, sizeof b);
        const float d = loom_fp16_to_fp32(b.d);
        for (int j = 0; j < QK2_0; j++) y[j] = (float)((int)((b.qs[j / 4] >> (2 * (j % 4))) & 3) - 1) * d;
    }
}

loom_status loom_dequantize_row(loom_type t, const void *src, float *dst, int64_t n) {
    const loom_type_info *ti = loom_type_get((uint32_t)t);
    if (!ti || !ti->can_dequantize) return LOOM_ERR_TYPE;
    if (n < 0 || n % ti->block_size != 0) return LOOM_ERR_SHAPE;
    if (n == 0) return LOOM_OK;
    if (!src || !dst) return LOOM_ERR_INVALID_ARG;
    const uint8_t *s = (const uint8_t *)src;
    const int64_t nb = n / ti->block_size;
    switch (t) {
    case LOOM_TYPE_F32: memcpy(dst, src, (size_t)n * sizeof(float)); break;
    case LOOM_TYPE_F16:
        for (int64_t i = 0; i < n; i++) {
            uint16_t h;
            memcpy(&h, s + 2 * i, 2);
            dst[i] = loom_fp16_to_fp32(h);
        }
        break;
    case LOOM_TYPE_BF16:
        for (int64_t i = 0; i < n; i++) {
            uint16_t h;
            memcpy(&h, s + 2 * i, 2);
            dst[i] = loom_bf16_to_fp32(h);
        }
        break;
    case LOOM_TYPE_Q4_0: dq_q4_0(s, dst, nb); break;
    case LOOM_TYPE_Q4_1: dq_q4_1(s, dst, nb); break;
    case LOOM_TYPE_Q5_0: dq_q5_0(s, dst, nb); break;
    case LOOM_TYPE_Q5_1: dq_q5_1(s, dst, nb); break;
    case LOOM_TYPE_Q8_0: dq_q8_0(s, dst, nb); break;
    case LOOM_TYPE_Q8_1: dq_q8_1(s, dst, nb); break;
    case LOOM_TYPE_Q2_K: dq_q2_K(s, dst, nb); break;
    case LOOM_TYPE_Q3_K: dq_q3_K(s, dst, nb); break;
    case LOOM_TYPE_Q4_K: dq_q4_K(s, dst, nb); break;
    case LOOM_TYPE_Q5_K: dq_q5_K(s, dst, nb); break;
    case LOOM_TYPE_Q6_K: dq_q6_K(s, dst, nb); break;
    case LOOM_TYPE_Q8_K: dq_q8_K(s, dst, nb); break;
    case LOOM_TYPE_MXFP4: dq_mxfp4(s, dst, nb); break;
    case LOOM_TYPE_NVFP4: dq_nvfp4(s, dst, nb); break;
    case LOOM_TYPE_Q1_0: dq_q1_0(s, dst, nb); break;
    case LOOM_TYPE_Q2_0: dq_q2_0(s, dst, nb); break;
    default:
        if (!loom_dequant_iq(t, s, dst, nb)) return LOOM_ERR_TYPE;
    }
    return LOOM_OK;
}
