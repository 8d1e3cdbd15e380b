/* Reference quantizers for IQ4_NL and IQ4_XS (no importance matrix). The scale search
 * is the one llama.cpp's quantizer publishes for these formats: per 32-value block,
 * weights x^2, a first scale from the largest magnitude, then 15 candidate scales
 * (code of the largest value moved by -7..+7 around the table's end), each refitted
 * by weighted least squares, the best fit kept; IQ4_XS then quantizes the 8 block
 * scales to 6 bits against a shared f16 super-scale and re-picks the codes. The float
 * operations are done in that order, so the blocks match llama-quantize's output. */
#include "loom_base.h"
#include "quant/blocks.h"
#include "quant/iq_tables.h"

#include <math.h>
#include <string.h>

#define F2H loom_fp32_to_fp16

/* nearest code of the table to x (ties to the lower); NaN gives some valid code */
static inline int iq4_best(float x) {
    const int8_t *v = loom_iq4nl_kv;
    if (x <= v[0]) return 0;
    if (x >= v[15]) return 15;
    int lo = 0, hi = 15;
    while (hi - lo > 1) {
        int mid = (lo + hi) / 2;
        if (x < v[mid]) hi = mid;
        else lo = mid;
    }
    return x - v[hi - 1] < v[hi] - x ? hi - 1 : hi;
}

/* one 32-value block: codes into L, returns the fitted scale (0 for an all-~0 block) */
static float iq4_block(const float *x, uint8_t *L) {
    const int8_t *v = loom_iq4nl_kv;
    const int ntry = 7;
    float w[32], amax = 0.f, max = 0.f;
    for (int j = 0; j < 32; j++) {
        w[j] = x[j] * x[j];
        float ax = fabsf(x[j]);
        if (ax > amax) {
            amax = ax;
            max = x[j];
        }
    }
    if (!(amax >= 1e-15f)) return 0.f; /* the caller picks the codes */
    float d = -max / (float)v[0], id = 1.f / d, sumqx = 0.f, sumq2 = 0.f;
    for (int j = 0; j < 32; j++) {
        int l = iq4_best(id * x[j]);
        L[j] = (uint8_t)l;
        float q = (float)v[l];
        sumqx += w[j] * q * x[j];
        sumq2 += w[j] * q * q;
    }
    d = sumq2 > 0 ? sumqx / sumq2 : 0.f;
    float best = d * sumqx;
    for (int itry = -ntry; itry <= ntry; itry++) {
        id = (float)(itry + v[0]) / max;
        sumqx = sumq2 = 0.f;
        for (int j = 0; j < 32; j++) {
            float q = (float)v[iq4_best(id * x[j])];
            sumqx += w[j] * q * x[j];
            sumq2 += w[j] * q * q;
        }
        if (sumq2 > 0 && sumqx * sumqx > best * sumq2) {
            d = sumqx / sumq2;
            best = d * sumqx;
        }
    }
    return d;
}

static void pack_codes(const uint8_t *L, uint8_t *qs) {
    for (int j = 0; j < 16; j++) qs[j] = (uint8_t)(L[j] | (L[16 + j] << 4));
}

static void q_iq4_nl(const float *x, uint8_t *dst, int64_t nb) {
    for (int64_t i = 0; i < nb; i++, x += 32) {
        block_iq4_nl b;
        uint8_t L[32];
        const float d = iq4_block(x, L);
        b.d = F2H(d);
        /* re-pick the codes against the final scale (scale 0: the code nearest 0) */
        const float id = d != 0.f ? 1.f / d : 0.f;
        for (int j = 0; j < 32; j++) L[j] = (uint8_t)iq4_best(id * x[j]);
        pack_codes(L, b.qs);
        memcpy(dst + i * (int64_t)sizeof b, &b, sizeof b);
    }
}

static void q_iq4_xs(const float *x, uint8_t *dst, int64_t nb) {
    for (int64_t i = 0; i < nb; i++, x += QK_K) {
        block_iq4_xs b;
        memset(&b, 0, sizeof b);
        uint8_t L[QK_K] = {0};
        float sc[8], max_scale = 0.f, amax_scale = 0.f;
        for (int ib = 0; ib < 8; ib++) {
            sc[ib] = iq4_block(x + 32 * ib, L + 32 * ib);
            if (fabsf(sc[ib]) > amax_scale) {
                amax_scale = fabsf(sc[ib]);
                max_scale = sc[ib];
            }
        }
        const float d = -max_scale / 32;
        b.d = F2H(d);
        const float id = d != 0.f ? 1 / d : 0.f;
        for (int ib = 0; ib < 8; ib++) {
            /* round half to even, clamped to [-32, 31] (NaN -> -32) */
            float lv = fminf(fmaxf(id * sc[ib], -32.f), 31.f);
            int l = (int)lrintf(lv);
            const float dl = d * (float)l, idl = dl != 0.f ? 1 / dl : 0.f;
            for (int j = 0; j < 32; j++) L[32 * ib + j] = (uint8_t)iq4_best(idl * x[32 * ib + j]);
            l += 32;
            b.scales_l[ib / 2] |= (uint8_t)((l & 0xF) << (4 * (ib % 2)));
            b.scales_h |= (uint16_t)((l >> 4) << (2 * ib));
        }
        for (int ib = 0; ib < 8; ib++) pack_codes(L + 32 * ib, b.qs + 16 * ib);
        memcpy(dst + i * (int64_t)sizeof b, &b, sizeof b);
    }
}

bool loom_quantize_iq4(loom_type t, const float *x, uint8_t *dst, int64_t nb) {
    if (t == LOOM_TYPE_IQ4_NL) q_iq4_nl(x, dst, nb);
    else if (t == LOOM_TYPE_IQ4_XS) q_iq4_xs(x, dst, nb);
    else return false;
    return true;
}
