/* Reference dequantization of the IQ and TQ block formats (GGUF types 16..23, 29,
 * 34, 35). The float operations follow the published formulas in the same order
 * (scale first, then code value, then sign), so results are bit-identical with
 * other readers of the format. */
#include "loom_base.h"
#include "quant/blocks.h"
#include "quant/iq_tables.h"

#include <string.h>

#define H2F loom_fp16_to_fp32
#define IQ1S_DELTA 0.125f

/* The 7 stored sign bits of 8 values; the 8th makes the count of minus signs even. */
static inline uint8_t signs8(uint32_t s7) {
    s7 &= 127;
    return (uint8_t)(s7 | ((uint32_t)(__builtin_popcount(s7) & 1) << 7));
}

static inline float sgn(uint8_t signs, int j) { return (signs >> j) & 1 ? -1.f : 1.f; }

/* byte j of codebook entry g (little-endian packing) */
static inline uint8_t g64(uint64_t g, int j) { return (uint8_t)(g >> (8 * j)); }
static inline uint8_t g32(uint32_t g, int j) { return (uint8_t)(g >> (8 * j)); }

static void dq_iq2_xxs(const uint8_t *src, float *y, int64_t nb) {
    for (int64_t i = 0; i < nb; i++) {
        block_iq2_xxs b;
        memcpy(&b, src + i * (int64_t)sizeof b, sizeof b);
        const float d = H2F(b.d);
        const uint8_t *qs = (const uint8_t *)b.qs;
        for (int ib = 0; ib < 8; ib++) {
            uint32_t a0, a1;
            memcpy(&a0, qs + 8 * ib, 4);
            memcpy(&a1, qs + 8 * ib + 4, 4);
            const float db = d * (0.5f + (float)(a1 >> 28)) * 0.25f;
            for (int l = 0; l < 4; l++) {
                const uint64_t g = loom_iq2xxs_grid[(a0 >> (8 * l)) & 255];
                const uint8_t s = signs8(a1 >> (7 * l));
                for (int j = 0; j < 8; j++) y[j] = db * (float)g64(g, j) * sgn(s, j);
                y += 8;
            }
        }
    }
}

static void dq_iq2_xs(const uint8_t *src, float *y, int64_t nb) {
    for (int64_t i = 0; i < nb; i++) {
        block_iq2_xs b;
        memcpy(&b, src + i * (int64_t)sizeof b, sizeof b);
        const float d = H2F(b.d);
        for (int ib = 0; ib < 8; ib++) {
            const float db[2] = {d * (0.5f + (float)(b.scales[ib] & 0xF)) * 0.25f,
                                 d * (0.5f + (float)(b.scales[ib] >> 4)) * 0.25f};
            for (int l = 0; l < 4; l++) {
                const uint16_t q = b.qs[4 * ib + l];
                const uint64_t g = loom_iq2xs_grid[q & 511];
                const uint8_t s = signs8(q >> 9);
                for (int j = 0; j < 8; j++) y[j] = db[l / 2] * (float)g64(g, j) * sgn(s, j);
                y += 8;
            }
        }
    }
}

static void dq_iq2_s(const uint8_t *src, float *y, int64_t nb) {
    for (int64_t i = 0; i < nb; i++) {
        block_iq2_s b;
        memcpy(&b, src + i * (int64_t)sizeof b, sizeof b);
        const float d = H2F(b.d);
        const uint8_t *qs = b.qs, *signs = b.qs + 32;
        for (int ib = 0; ib < 8; ib++) {
            const float db[2] = {d * (0.5f + (float)(b.scales[ib] & 0xF)) * 0.25f,
                                 d * (0.5f + (float)(b.scales[ib] >> 4)) * 0.25f};
            for (int l = 0; l < 4; l++) {
                const uint64_t g = loom_iq2s_grid[qs[l] | ((b.qh[ib] << (8 - 2 * l)) & 0x300)];
                for (int j = 0; j < 8; j++) y[j] = db[l / 2] * (float)g64(g, j) * sgn(signs[l], j);
                y += 8;
            }
            qs += 4;
            signs += 4;
        }
    }
}

static void dq_iq3_xxs(const uint8_t *src, float *y, int64_t nb) {
    for (int64_t i = 0; i < nb; i++) {
        block_iq3_xxs b;
        memcpy(&b, src + i * (int64_t)sizeof b, sizeof b);
        const float d = H2F(b.d);
        const uint8_t *qs = b.qs, *ss = b.qs + 64;
        for (int ib = 0; ib < 8; ib++) {
            uint32_t a;
            memcpy(&a, ss + 4 * ib, 4);
            const float db = d * (0.5f + (float)(a >> 28)) * 0.5f;
            for (int l = 0; l < 4; l++) {
                const uint8_t s = signs8(a >> (7 * l));
                const uint32_t g1 = loom_iq3xxs_grid[qs[2 * l]], g2 = loom_iq3xxs_grid[qs[2 * l + 1]];
                for (int j = 0; j < 4; j++) {
                    y[j] = db * (float)g32(g1, j) * sgn(s, j);
                    y[j + 4] = db * (float)g32(g2, j) * sgn(s, j + 4);
                }
                y += 8;
            }
            qs += 8;
        }
    }
}

static void dq_iq3_s(const uint8_t *src, float *y, int64_t nb) {
    for (int64_t i = 0; i < nb; i++) {
        block_iq3_s b;
        memcpy(&b, src + i * (int64_t)sizeof b, sizeof b);
        const float d = H2F(b.d);
        const uint8_t *qs = b.qs, *signs = b.signs;
        for (int ib = 0; ib < 8; ib++) { /* 32 values; scale nibble ib&1 of byte ib/2 */
            const int sc = (b.scales[ib / 2] >> (4 * (ib & 1))) & 0xF;
            const float db = d * (float)(1 + 2 * sc);
            const int qh = b.qh[ib];
            for (int l = 0; l < 4; l++) {
                const uint32_t g1 = loom_iq3s_grid[qs[2 * l] | ((qh << (8 - 2 * l)) & 256)];
                const uint32_t g2 = loom_iq3s_grid[qs[2 * l + 1] | ((qh << (7 - 2 * l)) & 256)];
                for (int j = 0; j < 4; j++) {
                    y[j] = db * (float)g32(g1, j) * sgn(signs[l], j);
                    y[j + 4] = db * (float)g32(g2, j) * sgn(signs[l], j + 4);
                }
                y += 8;
            }
            qs += 8;
            signs += 4;
        }
    }
}

static void dq_iq1_s(const uint8_t *src, float *y, int64_t nb) {
    for (int64_t i = 0; i < nb; i++) {
        block_iq1_s b;
        memcpy(&b, src + i * (int64_t)sizeof b, sizeof b);
        const float d = H2F(b.d);
        for (int ib = 0; ib < 8; ib++) {
            const int qh = b.qh[ib];
            const float dl = d * (float)(2 * ((qh >> 12) & 7) + 1);
            const float delta = qh & 0x8000 ? -IQ1S_DELTA : IQ1S_DELTA;
            for (int l = 0; l < 4; l++) {
                const uint64_t g = loom_iq1s_grid[b.qs[4 * ib + l] | (((qh >> (3 * l)) & 7) << 8)];
                for (int j = 0; j < 8; j++) y[j] = dl * ((float)(int8_t)g64(g, j) + delta);
                y += 8;
            }
        }
    }
}

static void dq_iq1_m(const uint8_t *src, float *y, int64_t nb) {
    for (int64_t i = 0; i < nb; i++) {
        block_iq1_m b;
        memcpy(&b, src + i * (int64_t)sizeof b, sizeof b);
        uint16_t sc[4];
        memcpy(sc, b.scales, 8);
        /* the block's f16 scale is spread over the top nibbles of the 4 scale words */
        const uint16_t dbits = (uint16_t)((sc[0] >> 12) | ((sc[1] >> 8) & 0x00F0) | ((sc[2] >> 4) & 0x0F00) |
                                          (sc[3] & 0xF000));
        const float d = H2F(dbits);
        const uint8_t *qs = b.qs, *qh = b.qh;
        for (int ib = 0; ib < 8; ib++) {
            const float dl1 = d * (float)(2 * ((sc[ib / 2] >> (6 * (ib % 2) + 0)) & 7) + 1);
            const float dl2 = d * (float)(2 * ((sc[ib / 2] >> (6 * (ib % 2) + 3)) & 7) + 1);
            const int idx[4] = {qs[0] | ((qh[0] << 8) & 0x700), qs[1] | ((qh[0] << 4) & 0x700),
                                qs[2] | ((qh[1] << 8) & 0x700), qs[3] | ((qh[1] << 4) & 0x700)};
            const float delta[4] = {qh[0] & 0x08 ? -IQ1S_DELTA : IQ1S_DELTA, qh[0] & 0x80 ? -IQ1S_DELTA : IQ1S_DELTA,
                                    qh[1] & 0x08 ? -IQ1S_DELTA : IQ1S_DELTA, qh[1] & 0x80 ? -IQ1S_DELTA : IQ1S_DELTA};
            for (int l = 0; l < 4; l++) {
                const uint64_t g = loom_iq1s_grid[idx[l]];
                const float dl = l < 2 ? dl1 : dl2;
                for (int j = 0; j < 8; j++) y[j] = dl * ((float)(int8_t)g64(g, j) + delta[l]);
                y += 8;
            }
            qs += 4;
            qh += 2;
        }
    }
}

static void dq_iq4_nl(const uint8_t *src, float *y, int64_t nb) {
    for (int64_t i = 0; i < nb; i++, y += 32) {
        block_iq4_nl b;
        memcpy(&b, src + i * (int64_t)sizeof b, sizeof b);
        const float d = H2F(b.d);
        for (int j = 0; j < 16; j++) {
            y[j] = d * (float)loom_iq4nl_kv[b.qs[j] & 0xF];
            y[j + 16] = d * (float)loom_iq4nl_kv[b.qs[j] >> 4];
        }
    }
}

static void dq_iq4_xs(const uint8_t *src, float *y, int64_t nb) {
    for (int64_t i = 0; i < nb; i++) {
        block_iq4_xs b;
        memcpy(&b, src + i * (int64_t)sizeof b, sizeof b);
        const float d = H2F(b.d);
        for (int ib = 0; ib < 8; ib++, y += 32) {
            const int ls = loom_iq4xs_scale(&b, ib);
            const float dl = d * (float)(ls - 32);
            const uint8_t *qs = b.qs + 16 * ib;
            for (int j = 0; j < 16; j++) {
                y[j] = dl * (float)loom_iq4nl_kv[qs[j] & 0xF];
                y[j + 16] = dl * (float)loom_iq4nl_kv[qs[j] >> 4];
            }
        }
    }
}

static void dq_tq1_0(const uint8_t *src, float *y, int64_t nb) {
    static const uint8_t pow3[5] = {1, 3, 9, 27, 81};
    for (int64_t i = 0; i < nb; i++) {
        block_tq1_0 b;
        memcpy(&b, src + i * (int64_t)sizeof b, sizeof b);
        const float d = H2F(b.d);
        /* a byte holds 5 trits as a fraction of 243; trit n = top of (byte * 3^n) * 3 */
        for (int part = 0; part < 2; part++) { /* bytes 0..31, then 32..47 */
            const int j0 = part ? 32 : 0, w = part ? 16 : 32;
            for (int n = 0; n < 5; n++)
                for (int m = 0; m < w; m++) {
                    const uint8_t q = (uint8_t)(b.qs[j0 + m] * pow3[n]);
                    *y++ = (float)((((uint16_t)q * 3) >> 8) - 1) * d;
                }
        }
        for (int n = 0; n < 4; n++)
            for (int j = 0; j < 4; j++) {
                const uint8_t q = (uint8_t)(b.qh[j] * pow3[n]);
                *y++ = (float)((((uint16_t)q * 3) >> 8) - 1) * d;
            }
    }
}

static void dq_tq2_0(const uint8_t *src, float *y, int64_t nb) {
    for (int64_t i = 0; i < nb; i++) {
        block_tq2_0 b;
        memcpy(&b, src + i * (int64_t)sizeof b, sizeof b);
        const float d = H2F(b.d);
        for (int j = 0; j < 64; j += 32)
            for (int l = 0; l < 4; l++)
                for (int m = 0; m < 32; m++) *y++ = (float)(((b.qs[j + m] >> (2 * l)) & 3) - 1) * d;
    }
}

bool loom_dequant_iq(loom_type t, const uint8_t *src, float *y, int64_t nb) {
    switch (t) {
    case LOOM_TYPE_IQ2_XXS: dq_iq2_xxs(src, y, nb); return true;
    case LOOM_TYPE_IQ2_XS: dq_iq2_xs(src, y, nb); return true;
    case LOOM_TYPE_IQ2_S: dq_iq2_s(src, y, nb); return true;
    case LOOM_TYPE_IQ3_XXS: dq_iq3_xxs(src, y, nb); return true;
    case LOOM_TYPE_IQ3_S: dq_iq3_s(src, y, nb); return true;
    case LOOM_TYPE_IQ1_S: dq_iq1_s(src, y, nb); return true;
    case LOOM_TYPE_IQ1_M: dq_iq1_m(src, y, nb); return true;
    case LOOM_TYPE_IQ4_NL: dq_iq4_nl(src, y, nb); return true;
    case LOOM_TYPE_IQ4_XS: dq_iq4_xs(src, y, nb); return true;
    case LOOM_TYPE_TQ1_0: dq_tq1_0(src, y, nb); return true;
    case LOOM_TYPE_TQ2_0: dq_tq2_0(src, y, nb); return true;
    default: return false;
    }
}
