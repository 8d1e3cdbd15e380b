/* Reference quantizers (float -> GGUF blocks). Weight formats use a small scale
 * search (least-squares refit over candidate scales); activation formats (Q8_0,
 * Q8_1, Q8_K) use the plain absmax scale so they are fast and deterministic. */
#include "loom_base.h"
#include "quant/blocks.h"
#include "quant/iq_tables.h"

#include <math.h>
#include <string.h>

#define F2H loom_fp32_to_fp16
#define H2F loom_fp16_to_fp32

/* round-half-even of v clamped to [lo, hi]; NaN maps to lo (no UB). */
static inline int qclamp(float v, int lo, int hi) {
    v = fmaxf(v, (float)lo);
    v = fminf(v, (float)hi);
    return (int)lrintf(v);
}

/* Symmetric: x ~= d*q, q in [nmin, nmax] (nmin < 0 < nmax). Returns d (may be < 0). */
static float sym_quant(const float *x, int n, int nmin, int nmax, int *q) {
    float amax = 0.f, vmax = 0.f;
    for (int i = 0; i < n; i++) {
        float a = fabsf(x[i]);
        if (a > amax) { amax = a; vmax = x[i]; }
    }
    if (!(amax > 1e-30f) || !isfinite(amax)) {
        for (int i = 0; i < n; i++) q[i] = 0;
        return 0.f;
    }
    float best_d = 0.f, best_score = -1.f;
    int tmp[QK_K];
    for (int k = -10; k <= 10; k++) {
        float iscale = ((float)-nmin + 0.1f * (float)k) / -vmax;
        double sxq = 0, sqq = 0;
        for (int i = 0; i < n; i++) {
            tmp[i] = qclamp(x[i] * iscale, nmin, nmax);
            sxq += (double)x[i] * tmp[i];
            sqq += (double)tmp[i] * tmp[i];
        }
        if (sqq <= 0) continue;
        double score = sxq * sxq / sqq; /* SSE = sum x^2 - score */
        if (score > best_score) {
            best_score = (float)score;
            best_d = (float)(sxq / sqq);
        }
    }
    if (best_d == 0.f) best_d = vmax / (float)nmin;
    float id = 1.f / best_d;
    for (int i = 0; i < n; i++) q[i] = qclamp(x[i] * id, nmin, nmax);
    return best_d;
}

/* Asymmetric: x ~= s*q + m, q in [0, nmax], s >= 0. With nonpos_min, m <= 0. */
static void asym_quant(const float *x, int n, int nmax, bool nonpos_min, float *s_out, float *m_out) {
    float mn = x[0], mx = x[0];
    for (int i = 1; i < n; i++) {
        mn = fminf(mn, x[i]);
        mx = fmaxf(mx, x[i]);
    }
    if (nonpos_min && mn > 0.f) mn = 0.f;
    if (!(mx > mn) || !isfinite(mx - mn)) {
        *s_out = 0.f;
        *m_out = isfinite(mn) ? mn : 0.f;
        return;
    }
    float best_s = (mx - mn) / (float)nmax, best_m = mn;
    double best_err = 0;
    for (int i = 0; i < n; i++) {
        int q = qclamp((x[i] - mn) / best_s, 0, nmax);
        double e = (double)best_s * q + best_m - x[i];
        best_err += e * e;
    }
    int q[QK_K];
    for (int k = -10; k <= 10; k++) {
        float iscale = ((float)nmax + 0.1f * (float)k) / (mx - mn);
        double sq = 0, sqq = 0, sx = 0, sxq = 0;
        for (int i = 0; i < n; i++) {
            q[i] = qclamp((x[i] - mn) * iscale, 0, nmax);
            sq += q[i];
            sqq += (double)q[i] * q[i];
            sx += x[i];
            sxq += (double)x[i] * q[i];
        }
        double D = n * sqq - sq * sq;
        if (D <= 0) continue;
        double s = (n * sxq - sq * sx) / D;
        double m = (sqq * sx - sq * sxq) / D;
        if (nonpos_min && m > 0) {
            m = 0;
            s = sxq / sqq;
        }
        if (!(s > 0)) continue;
        double err = 0;
        for (int i = 0; i < n; i++) {
            double e = s * q[i] + m - x[i];
            err += e * e;
        }
        if (err < best_err) {
            best_err = err;
            best_s = (float)s;
            best_m = (float)m;
        }
    }
    *s_out = best_s;
    *m_out = best_m;
}

/* ------------------------------------------------------------ 32-element types */

static void q_q4_0(const float *x, uint8_t *dst, int64_t nb) {
    for (int64_t i = 0; i < nb; i++, x += 32) {
        block_q4_0 b;
        int q[32];
        float d = sym_quant(x, 32, -8, 7, q);
        b.d = F2H(d);
        float dh = H2F(b.d), id = dh != 0.f ? 1.f / dh : 0.f;
        for (int l = 0; l < 32; l++) q[l] = qclamp(x[l] * id, -8, 7) + 8;
        for (int l = 0; l < 16; l++) b.qs[l] = (uint8_t)(q[l] | (q[l + 16] << 4));
        memcpy(dst + i * (int64_t)sizeof b, &b, sizeof b);
    }
}

static void q_q5_0(const float *x, uint8_t *dst, int64_t nb) {
    for (int64_t i = 0; i < nb; i++, x += 32) {
        block_q5_0 b;
        int q[32];
        float d = sym_quant(x, 32, -16, 15, q);
        b.d = F2H(d);
        float dh = H2F(b.d), id = dh != 0.f ? 1.f / dh : 0.f;
        uint32_t h = 0;
        for (int l = 0; l < 32; l++) {
            q[l] = qclamp(x[l] * id, -16, 15) + 16;
            h |= (uint32_t)(q[l] >> 4) << l;
        }
        for (int l = 0; l < 16; l++) b.qs[l] = (uint8_t)((q[l] & 0xF) | ((q[l + 16] & 0xF) << 4));
        memcpy(b.qh, &h, 4);
        memcpy(dst + i * (int64_t)sizeof b, &b, sizeof b);
    }
}

/* shared by Q4_1 (nmax 15) and Q5_1 (nmax 31): fills d, m and q[32] */
static void asym32(const float *x, int nmax, uint16_t *d, uint16_t *m, int *q) {
    float s, mn;
    asym_quant(x, 32, nmax, false, &s, &mn);
    *d = F2H(s);
    *m = F2H(mn);
    float dh = H2F(*d), mh = H2F(*m), id = dh != 0.f ? 1.f / dh : 0.f;
    for (int l = 0; l < 32; l++) q[l] = qclamp((x[l] - mh) * id, 0, nmax);
}

static void q_q4_1(const float *x, uint8_t *dst, int64_t nb) {
    for (int64_t i = 0; i < nb; i++, x += 32) {
        block_q4_1 b;
        int q[32];
        asym32(x, 15, &b.d, &b.m, q);
        for (int l = 0; l < 16; l++) b.qs[l] = (uint8_t)(q[l] | (q[l + 16] << 4));
        memcpy(dst + i * (int64_t)sizeof b, &b, sizeof b);
    }
}

static void q_q5_1(const float *x, uint8_t *dst, int64_t nb) {
    for (int64_t i = 0; i < nb; i++, x += 32) {
        block_q5_1 b;
        int q[32];
        asym32(x, 31, &b.d, &b.m, q);
        uint32_t h = 0;
        for (int l = 0; l < 32; l++) h |= (uint32_t)(q[l] >> 4) << l;
        for (int l = 0; l < 16; l++) b.qs[l] = (uint8_t)((q[l] & 0xF) | ((q[l + 16] & 0xF) << 4));
        memcpy(b.qh, &h, 4);
        memcpy(dst + i * (int64_t)sizeof b, &b, sizeof b);
    }
}

/* absmax quantization of 32 values to int8; returns the (unrounded) scale */
static float absmax8(const float *x, int8_t *q, int n) {
    float amax = 0.f;
    for (int l = 0; l < n; l++) amax = fmaxf(amax, fabsf(x[l]));
    float d = amax / 127.f, id = d != 0.f ? 1.f / d : 0.f;
    for (int l = 0; l < n; l++) q[l] = (int8_t)qclamp(x[l] * id, -127, 127);
    return d;
}

static void q_q8_0(const float *x, uint8_t *dst, int64_t nb) {
    for (int64_t i = 0; i < nb; i++, x += 32) {
        block_q8_0 b;
        b.d = F2H(absmax8(x, b.qs, 32));
        memcpy(dst + i * (int64_t)sizeof b, &b, sizeof b);
    }
}

static void q_q8_1(const float *x, uint8_t *dst, int64_t nb) {
    for (int64_t i = 0; i < nb; i++, x += 32) {
        block_q8_1 b;
        float d = absmax8(x, b.qs, 32);
        int sum = 0;
        for (int l = 0; l < 32; l++) sum += b.qs[l];
        b.d = F2H(d);
        b.s = F2H(d * (float)sum);
        memcpy(dst + i * (int64_t)sizeof b, &b, sizeof b);
    }
}

static void q_mxfp4(const float *x, uint8_t *dst, int64_t nb) {
    for (int64_t i = 0; i < nb; i++, x += 32) {
        block_mxfp4 b;
        float amax = 0.f;
        for (int l = 0; l < 32; l++) amax = fmaxf(amax, fabsf(x[l]));
        memset(&b, 0, sizeof b);
        if (amax > 0.f && isfinite(amax)) {
            int ex;
            (void)frexpf(amax, &ex); /* amax in [2^(ex-1), 2^ex) */
            int e0 = (ex - 1) - 2 + 127;
            double best_err = INFINITY;
            for (int e = e0 - 1; e <= e0 + 1; e++) {
                if (e < 0 || e > 255) continue;
                float d = loom_e8m0_half((uint8_t)e);
                uint8_t codes[32];
                double err = 0;
                for (int l = 0; l < 32; l++) {
                    int bc = 0;
                    float be = INFINITY;
                    for (int c = 0; c < 16; c++) {
                        if (c == 8) continue; /* -0 duplicates +0 */
                        float er = fabsf(x[l] - (float)loom_mxfp4_kv[c] * d);
                        if (er < be) { be = er; bc = c; }
                    }
                    codes[l] = (uint8_t)bc;
                    err += (double)be * be;
                }
                if (err < best_err) {
                    best_err = err;
                    b.e = (uint8_t)e;
                    for (int l = 0; l < 16; l++) b.qs[l] = (uint8_t)(codes[l] | (codes[l + 16] << 4));
                }
            }
        }
        memcpy(dst + i * (int64_t)sizeof b, &b, sizeof b);
    }
}

/* ------------------------------------------------------------------- K-quants */

static void q_q2_K(const float *x, uint8_t *dst, int64_t nb) {
    for (int64_t i = 0; i < nb; i++, x += QK_K) {
        block_q2_K b;
        memset(&b, 0, sizeof b);
        float sc[16], mn[16], maxs = 0.f, maxm = 0.f;
        for (int g = 0; g < 16; g++) {
            float s, m;
            asym_quant(x + 16 * g, 16, 3, true, &s, &m);
            sc[g] = s;
            mn[g] = -m;
            maxs = fmaxf(maxs, s);
            maxm = fmaxf(maxm, -m);
        }
        b.d = F2H(maxs / 15.f);
        b.dmin = F2H(maxm / 15.f);
        float d = H2F(b.d), dmin = H2F(b.dmin);
        int L[QK_K];
        for (int g = 0; g < 16; g++) {
            int isc = d > 0.f ? qclamp(sc[g] / d, 0, 15) : 0;
            int im = dmin > 0.f ? qclamp(mn[g] / dmin, 0, 15) : 0;
            b.scales[g] = (uint8_t)(isc | (im << 4));
            float ds = d * (float)isc, dm = dmin * (float)im;
            for (int l = 0; l < 16; l++)
                L[16 * g + l] = ds > 0.f ? qclamp((x[16 * g + l] + dm) / ds, 0, 3) : 0;
        }
        for (int e = 0; e < QK_K; e++) {
            int h = e / 128, r = e % 128, j = r / 32, s = (r % 32) / 16, l = r % 16;
            b.qs[32 * h + 16 * s + l] |= (uint8_t)(L[e] << (2 * j));
        }
        memcpy(dst + i * (int64_t)sizeof b, &b, sizeof b);
    }
}

static void q_q3_K(const float *x, uint8_t *dst, int64_t nb) {
    for (int64_t i = 0; i < nb; i++, x += QK_K) {
        block_q3_K b;
        memset(&b, 0, sizeof b);
        float sc[16], amax = 0.f, vmax = 0.f;
        int q[16];
        for (int g = 0; g < 16; g++) {
            sc[g] = sym_quant(x + 16 * g, 16, -4, 3, q);
            if (fabsf(sc[g]) > amax) { amax = fabsf(sc[g]); vmax = sc[g]; }
        }
        b.d = F2H(vmax / -32.f);
        float d = H2F(b.d);
        for (int g = 0; g < 16; g++) {
            int isc = d != 0.f ? qclamp(sc[g] / d, -32, 31) : 0;
            int v = isc + 32;
            if (g < 8) b.scales[g] |= (uint8_t)(v & 0xF);
            else b.scales[g - 8] |= (uint8_t)((v & 0xF) << 4);
            b.scales[8 + (g & 3)] |= (uint8_t)((v >> 4) << (2 * (g >> 2)));
            float ds = d * (float)isc;
            for (int l = 0; l < 16; l++) {
                int e = 16 * g + l;
                int qq = ds != 0.f ? qclamp(x[e] / ds, -4, 3) + 4 : 4;
                int h = e / 128, r = e % 128, j = r / 32, s = (r % 32) / 16, ll = r % 16;
                b.qs[32 * h + 16 * s + ll] |= (uint8_t)((qq & 3) << (2 * j));
                if (qq & 4) b.hmask[16 * s + ll] |= (uint8_t)(1u << (4 * h + j));
            }
        }
        memcpy(dst + i * (int64_t)sizeof b, &b, sizeof b);
    }
}

/* Q4_K / Q5_K common part: 8 sub-blocks of 32, 6-bit scales/mins. L gets q values. */
static void k45_quant(const float *x, int nmax, uint16_t *dd, uint16_t *dmn, uint8_t *scales, int *L) {
    float sc[8], mn[8], maxs = 0.f, maxm = 0.f;
    for (int j = 0; j < 8; j++) {
        float s, m;
        asym_quant(x + 32 * j, 32, nmax, true, &s, &m);
        sc[j] = s;
        mn[j] = -m;
        maxs = fmaxf(maxs, s);
        maxm = fmaxf(maxm, -m);
    }
    *dd = F2H(maxs / 63.f);
    *dmn = F2H(maxm / 63.f);
    float d = H2F(*dd), dmin = H2F(*dmn);
    uint8_t is[8], im[8];
    for (int j = 0; j < 8; j++) {
        is[j] = (uint8_t)(d > 0.f ? qclamp(sc[j] / d, 0, 63) : 0);
        im[j] = (uint8_t)(dmin > 0.f ? qclamp(mn[j] / dmin, 0, 63) : 0);
    }
    for (int j = 0; j < 4; j++) {
        scales[j] = (uint8_t)(is[j] | ((is[j + 4] >> 4) << 6));
        scales[j + 4] = (uint8_t)(im[j] | ((im[j + 4] >> 4) << 6));
        scales[j + 8] = (uint8_t)((is[j + 4] & 0xF) | ((im[j + 4] & 0xF) << 4));
    }
    for (int j = 0; j < 8; j++) {
        float ds = d * (float)is[j], dm = dmin * (float)im[j];
        for (int l = 0; l < 32; l++)
            L[32 * j + l] = ds > 0.f ? qclamp((x[32 * j + l] + dm) / ds, 0, nmax) : 0;
    }
}

static void q_q4_K(const float *x, uint8_t *dst, int64_t nb) {
    for (int64_t i = 0; i < nb; i++, x += QK_K) {
        block_q4_K b;
        int L[QK_K];
        k45_quant(x, 15, &b.d, &b.dmin, b.scales, L);
        for (int c = 0; c < 4; c++)
            for (int l = 0; l < 32; l++)
                b.qs[32 * c + l] = (uint8_t)(L[64 * c + l] | (L[64 * c + 32 + l] << 4));
        memcpy(dst + i * (int64_t)sizeof b, &b, sizeof b);
    }
}

static void q_q5_K(const float *x, uint8_t *dst, int64_t nb) {
    for (int64_t i = 0; i < nb; i++, x += QK_K) {
        block_q5_K b;
        int L[QK_K];
        k45_quant(x, 31, &b.d, &b.dmin, b.scales, L);
        memset(b.qh, 0, sizeof b.qh);
        for (int c = 0; c < 4; c++)
            for (int l = 0; l < 32; l++) {
                int q0 = L[64 * c + l], q1 = L[64 * c + 32 + l];
                b.qs[32 * c + l] = (uint8_t)((q0 & 0xF) | ((q1 & 0xF) << 4));
                b.qh[l] |= (uint8_t)(((q0 >> 4) << (2 * c)) | ((q1 >> 4) << (2 * c + 1)));
            }
        memcpy(dst + i * (int64_t)sizeof b, &b, sizeof b);
    }
}

static void q_q6_K(const float *x, uint8_t *dst, int64_t nb) {
    for (int64_t i = 0; i < nb; i++, x += QK_K) {
        block_q6_K b;
        memset(&b, 0, sizeof b);
        float sc[16], amax = 0.f, vmax = 0.f;
        int q[16];
        for (int g = 0; g < 16; g++) {
            sc[g] = sym_quant(x + 16 * g, 16, -32, 31, q);
            if (fabsf(sc[g]) > amax) { amax = fabsf(sc[g]); vmax = sc[g]; }
        }
        b.d = F2H(vmax / -128.f);
        float d = H2F(b.d);
        int L[QK_K];
        for (int g = 0; g < 16; g++) {
            int isc = d != 0.f ? qclamp(sc[g] / d, -128, 127) : 0;
            b.scales[g] = (int8_t)isc;
            float ds = d * (float)isc;
            for (int l = 0; l < 16; l++)
                L[16 * g + l] = ds != 0.f ? qclamp(x[16 * g + l] / ds, -32, 31) + 32 : 32;
        }
        for (int h = 0; h < 2; h++)
            for (int l = 0; l < 32; l++) {
                const int *LL = L + 128 * h;
                int q1 = LL[l], q2 = LL[l + 32], q3 = LL[l + 64], q4 = LL[l + 96];
                b.ql[64 * h + l] = (uint8_t)((q1 & 0xF) | ((q3 & 0xF) << 4));
                b.ql[64 * h + l + 32] = (uint8_t)((q2 & 0xF) | ((q4 & 0xF) << 4));
                b.qh[32 * h + l] = (uint8_t)((q1 >> 4) | ((q2 >> 4) << 2) | ((q3 >> 4) << 4) | ((q4 >> 4) << 6));
            }
        memcpy(dst + i * (int64_t)sizeof b, &b, sizeof b);
    }
}

static void q_q8_K(const float *x, uint8_t *dst, int64_t nb) {
    for (int64_t i = 0; i < nb; i++, x += QK_K) {
        block_q8_K b;
        float amax = 0.f, vmax = 0.f;
        for (int l = 0; l < QK_K; l++)
            if (fabsf(x[l]) > amax) { amax = fabsf(x[l]); vmax = x[l]; }
        if (!(amax > 0.f) || !isfinite(amax)) {
            memset(&b, 0, sizeof b);
        } else {
            float iscale = -127.f / vmax;
            for (int l = 0; l < QK_K; l++) b.qs[l] = (int8_t)qclamp(iscale * x[l], -127, 127);
            for (int g = 0; g < 16; g++) {
                int s = 0;
                for (int l = 0; l < 16; l++) s += b.qs[16 * g + l];
                b.bsums[g] = (int16_t)s;
            }
            b.d = 1.f / iscale;
        }
        memcpy(dst + i * (int64_t)sizeof b, &b, sizeof b);
    }
}

loom_status loom_quantize_row(loom_type t, const float *src, void *dst, int64_t n) {
    const loom_type_info *ti = loom_type_get((uint32_t)t);
    if (!ti || !ti->can_quantize) return LOOM_ERR_TYPE;
    if (n < 0 || n % ti->block_size != 0) return LOOM_ERR_SHAPE;
    if (n == 0) return LOOM_OK;
    if (!src || !dst) return LOOM_ERR_INVALID_ARG;
    uint8_t *d = (uint8_t *)dst;
    const int64_t nb = n / ti->block_size;
    switch (t) {
    case LOOM_TYPE_F32: memcpy(dst, src, (size_t)n * sizeof(float)); break;
    case LOOM_TYPE_F16:
        for (int64_t i = 0; i < n; i++) {
            uint16_t h = loom_fp32_to_fp16(src[i]);
            memcpy(d + 2 * i, &h, 2);
        }
        break;
    case LOOM_TYPE_BF16:
        for (int64_t i = 0; i < n; i++) {
            uint16_t h = loom_fp32_to_bf16(src[i]);
            memcpy(d + 2 * i, &h, 2);
        }
        break;
    case LOOM_TYPE_Q4_0: q_q4_0(src, d, nb); break;
    case LOOM_TYPE_Q4_1: q_q4_1(src, d, nb); break;
    case LOOM_TYPE_Q5_0: q_q5_0(src, d, nb); break;
    case LOOM_TYPE_Q5_1: q_q5_1(src, d, nb); break;
    case LOOM_TYPE_Q8_0: q_q8_0(src, d, nb); break;
    case LOOM_TYPE_Q8_1: q_q8_1(src, d, nb); break;
    case LOOM_TYPE_Q2_K: q_q2_K(src, d, nb); break;
    case LOOM_TYPE_Q3_K: q_q3_K(src, d, nb); break;
    case LOOM_TYPE_Q4_K: q_q4_K(src, d, nb); break;
    case LOOM_TYPE_Q5_K: q_q5_K(src, d, nb); break;
    case LOOM_TYPE_Q6_K: q_q6_K(src, d, nb); break;
    case LOOM_TYPE_Q8_K: q_q8_K(src, d, nb); break;
    case LOOM_TYPE_MXFP4: q_mxfp4(src, d, nb); break;
    default:
        if (!loom_quantize_iq4(t, src, d, nb)) return LOOM_ERR_TYPE;
    }
    return LOOM_OK;
}
