/* Scalar reference kernels. Integer formats: exact integer dot product inside each
 * block (or sub-block), then one float scaling per block. */
#include "cpu/kernels_internal.h"
#include "quant/iq_tables.h"
#include "quant/repack.h"

#include <math.h>
#include <string.h>

#define H2F loom_fp16_to_fp32

void loom_vd_f32_ref(int64_t n, float *s, const void *vx, const void *vy) {
    const float *x = vx, *y = vy;
    float sum = 0.f;
    for (int64_t i = 0; i < n; i++) sum += x[i] * y[i];
    *s = sum;
}

void loom_vd_f16_ref(int64_t n, float *s, const void *vx, const void *vy) {
    const uint16_t *x = vx, *y = vy;
    float sum = 0.f;
    for (int64_t i = 0; i < n; i++) sum += H2F(x[i]) * H2F(y[i]);
    *s = sum;
}

void loom_vd_bf16_ref(int64_t n, float *s, const void *vx, const void *vy) {
    const uint16_t *x = vx, *y = vy;
    float sum = 0.f;
    for (int64_t i = 0; i < n; i++) sum += loom_bf16_to_fp32(x[i]) * loom_bf16_to_fp32(y[i]);
    *s = sum;
}

void loom_vd_q4_0_ref(int64_t n, float *s, const void *vx, const void *vy) {
    const block_q4_0 *x = vx;
    const block_q8_0 *y = vy;
    float sum = 0.f;
    for (int64_t i = 0; i < n / 32; i++) {
        int isum = 0;
        for (int l = 0; l < 16; l++)
            isum += ((x[i].qs[l] & 0xF) - 8) * y[i].qs[l] + ((x[i].qs[l] >> 4) - 8) * y[i].qs[l + 16];
        sum += (H2F(x[i].d) * H2F(y[i].d)) * (float)isum;
    }
    *s = sum;
}

void loom_vd_q4_1_ref(int64_t n, float *s, const void *vx, const void *vy) {
    const block_q4_1 *x = vx;
    const block_q8_1 *y = vy;
    float sum = 0.f;
    for (int64_t i = 0; i < n / 32; i++) {
        int isum = 0;
        for (int l = 0; l < 16; l++)
            isum += (x[i].qs[l] & 0xF) * y[i].qs[l] + (x[i].qs[l] >> 4) * y[i].qs[l + 16];
        sum += (H2F(x[i].d) * H2F(y[i].d)) * (float)isum + H2F(x[i].m) * H2F(y[i].s);
    }
    *s = sum;
}

void loom_vd_q5_0_ref(int64_t n, float *s, const void *vx, const void *vy) {
    const block_q5_0 *x = vx;
    const block_q8_0 *y = vy;
    float sum = 0.f;
    for (int64_t i = 0; i < n / 32; i++) {
        uint32_t h;
        memcpy(&h, x[i].qh, 4);
        int isum = 0;
        for (int l = 0; l < 16; l++) {
            int q0 = ((x[i].qs[l] & 0xF) | (int)(((h >> l) & 1u) << 4)) - 16;
            int q1 = ((x[i].qs[l] >> 4) | (int)(((h >> (l + 16)) & 1u) << 4)) - 16;
            isum += q0 * y[i].qs[l] + q1 * y[i].qs[l + 16];
        }
        sum += (H2F(x[i].d) * H2F(y[i].d)) * (float)isum;
    }
    *s = sum;
}

void loom_vd_q5_1_ref(int64_t n, float *s, const void *vx, const void *vy) {
    const block_q5_1 *x = vx;
    const block_q8_1 *y = vy;
    float sum = 0.f;
    for (int64_t i = 0; i < n / 32; i++) {
        uint32_t h;
        memcpy(&h, x[i].qh, 4);
        int isum = 0;
        for (int l = 0; l < 16; l++) {
            int q0 = (x[i].qs[l] & 0xF) | (int)(((h >> l) & 1u) << 4);
            int q1 = (x[i].qs[l] >> 4) | (int)(((h >> (l + 16)) & 1u) << 4);
            isum += q0 * y[i].qs[l] + q1 * y[i].qs[l + 16];
        }
        sum += (H2F(x[i].d) * H2F(y[i].d)) * (float)isum + H2F(x[i].m) * H2F(y[i].s);
    }
    *s = sum;
}

void loom_vd_q8_0_ref(int64_t n, float *s, const void *vx, const void *vy) {
    const block_q8_0 *x = vx;
    const block_q8_0 *y = vy;
    float sum = 0.f;
    for (int64_t i = 0; i < n / 32; i++) {
        int isum = 0;
        for (int l = 0; l < 32; l++) isum += x[i].qs[l] * y[i].qs[l];
        sum += (H2F(x[i].d) * H2F(y[i].d)) * (float)isum;
    }
    *s = sum;
}

void loom_vd_mxfp4_ref(int64_t n, float *s, const void *vx, const void *vy) {
    const block_mxfp4 *x = vx;
    const block_q8_0 *y = vy;
    float sum = 0.f;
    for (int64_t i = 0; i < n / 32; i++) {
        int isum = 0;
        for (int l = 0; l < 16; l++)
            isum += loom_mxfp4_kv[x[i].qs[l] & 0xF] * y[i].qs[l] + loom_mxfp4_kv[x[i].qs[l] >> 4] * y[i].qs[l + 16];
        sum += (loom_e8m0_half(x[i].e) * H2F(y[i].d)) * (float)isum;
    }
    *s = sum;
}

/* NVFP4 x Q8_0: a Q8_0 block covers two 16-element sub-blocks */
void loom_vd_nvfp4_ref(int64_t n, float *s, const void *vx, const void *vy) {
    const block_nvfp4 *x = vx;
    const block_q8_0 *y = vy;
    float sum = 0.f;
    for (int64_t i = 0; i < n / QK_NVFP4; i++) {
        for (int sb = 0; sb < 4; sb++) {
            const block_q8_0 *yb = &y[2 * i + sb / 2];
            const int8_t *a = yb->qs + 16 * (sb % 2);
            int isum = 0;
            for (int j = 0; j < 8; j++)
                isum += loom_mxfp4_kv[x[i].qs[8 * sb + j] & 0xF] * a[j] + loom_mxfp4_kv[x[i].qs[8 * sb + j] >> 4] * a[j + 8];
            sum += (loom_ue4m3_half(x[i].d[sb]) * H2F(yb->d)) * (float)isum;
        }
    }
    *s = sum;
}

/* Q1_0 x Q8_0: four Q8_0 blocks per Q1_0 block; a set bit is +d, a clear one -d */
void loom_vd_q1_0_ref(int64_t n, float *s, const void *vx, const void *vy) {
    const block_q1_0 *x = vx;
    const block_q8_0 *y = vy;
    float sum = 0.f;
    for (int64_t i = 0; i < n / QK1_0; i++) {
        float bs = 0.f;
        for (int k = 0; k < 4; k++) {
            const block_q8_0 *yb = &y[4 * i + k];
            int isum = 0;
            for (int l = 0; l < 32; l++) {
                const int j = 32 * k + l;
                isum += ((x[i].qs[j / 8] >> (j % 8)) & 1) ? yb->qs[l] : -yb->qs[l];
            }
            bs += H2F(yb->d) * (float)isum;
        }
        sum += H2F(x[i].d) * bs;
    }
    *s = sum;
}

/* Q2_0 x Q8_0: two Q8_0 blocks per Q2_0 block; codes 0..3 are -1, 0, +1, +2 */
void loom_vd_q2_0_ref(int64_t n, float *s, const void *vx, const void *vy) {
    const block_q2_0 *x = vx;
    const block_q8_0 *y = vy;
    float sum = 0.f;
    for (int64_t i = 0; i < n / QK2_0; i++) {
        float bs = 0.f;
        for (int k = 0; k < 2; k++) {
            const block_q8_0 *yb = &y[2 * i + k];
            int isum = 0;
            for (int l = 0; l < 32; l++) {
                const int j = 32 * k + l;
                isum += ((int)((x[i].qs[j / 4] >> (2 * (j % 4))) & 3) - 1) * yb->qs[l];
            }
            bs += H2F(yb->d) * (float)isum;
        }
        sum += H2F(x[i].d) * bs;
    }
    *s = sum;
}

void loom_vd_q2_K_ref(int64_t n, float *s, const void *vx, const void *vy) {
    const block_q2_K *x = vx;
    const block_q8_K *y = vy;
    float sum = 0.f;
    for (int64_t i = 0; i < n / QK_K; i++) {
        const int8_t *a = y[i].qs;
        int isum = 0, summ = 0;
        for (int h = 0; h < 2; h++)
            for (int j = 0; j < 4; j++)
                for (int sb = 0; sb < 2; sb++) {
                    int g = 8 * h + 2 * j + sb;
                    const uint8_t *q = x[i].qs + 32 * h + 16 * sb;
                    const int8_t *aa = a + 16 * g;
                    int t = 0;
                    for (int l = 0; l < 16; l++) t += ((q[l] >> (2 * j)) & 3) * aa[l];
                    isum += (x[i].scales[g] & 0xF) * t;
                    summ += (x[i].scales[g] >> 4) * y[i].bsums[g];
                }
        sum += (y[i].d * H2F(x[i].d)) * (float)isum - (y[i].d * H2F(x[i].dmin)) * (float)summ;
    }
    *s = sum;
}

void loom_vd_q3_K_ref(int64_t n, float *s, const void *vx, const void *vy) {
    const block_q3_K *x = vx;
    const block_q8_K *y = vy;
    float sum = 0.f;
    for (int64_t i = 0; i < n / QK_K; i++) {
        const int8_t *a = y[i].qs;
        int isum = 0;
        for (int h = 0; h < 2; h++)
            for (int j = 0; j < 4; j++)
                for (int sb = 0; sb < 2; sb++) {
                    int g = 8 * h + 2 * j + sb;
                    const uint8_t *q = x[i].qs + 32 * h + 16 * sb;
                    const uint8_t *hm = x[i].hmask + 16 * sb;
                    const int8_t *aa = a + 16 * g;
                    int t = 0;
                    for (int l = 0; l < 16; l++) {
                        int v = ((q[l] >> (2 * j)) & 3) - (((hm[l] >> (4 * h + j)) & 1) ? 0 : 4);
                        t += v * aa[l];
                    }
                    isum += loom_k3_scale(g, x[i].scales) * t;
                }
        sum += (y[i].d * H2F(x[i].d)) * (float)isum;
    }
    *s = sum;
}

void loom_vd_q4_K_ref(int64_t n, float *s, const void *vx, const void *vy) {
    const block_q4_K *x = vx;
    const block_q8_K *y = vy;
    float sum = 0.f;
    for (int64_t i = 0; i < n / QK_K; i++) {
        const int8_t *a = y[i].qs;
        int isum = 0, summ = 0;
        for (int c = 0; c < 4; c++) {
            uint8_t sc0, m0, sc1, m1;
            loom_k4_scale_min(2 * c, x[i].scales, &sc0, &m0);
            loom_k4_scale_min(2 * c + 1, x[i].scales, &sc1, &m1);
            const uint8_t *q = x[i].qs + 32 * c;
            int t0 = 0, t1 = 0;
            for (int l = 0; l < 32; l++) {
                t0 += (q[l] & 0xF) * a[64 * c + l];
                t1 += (q[l] >> 4) * a[64 * c + 32 + l];
            }
            isum += sc0 * t0 + sc1 * t1;
            summ += m0 * (y[i].bsums[4 * c] + y[i].bsums[4 * c + 1]) + m1 * (y[i].bsums[4 * c + 2] + y[i].bsums[4 * c + 3]);
        }
        sum += (y[i].d * H2F(x[i].d)) * (float)isum - (y[i].d * H2F(x[i].dmin)) * (float)summ;
    }
    *s = sum;
}

void loom_vd_q5_K_ref(int64_t n, float *s, const void *vx, const void *vy) {
    const block_q5_K *x = vx;
    const block_q8_K *y = vy;
    float sum = 0.f;
    for (int64_t i = 0; i < n / QK_K; i++) {
        const int8_t *a = y[i].qs;
        int isum = 0, summ = 0;
        for (int c = 0; c < 4; c++) {
            uint8_t sc0, m0, sc1, m1;
            loom_k4_scale_min(2 * c, x[i].scales, &sc0, &m0);
            loom_k4_scale_min(2 * c + 1, x[i].scales, &sc1, &m1);
            const uint8_t *q = x[i].qs + 32 * c;
            int t0 = 0, t1 = 0;
            for (int l = 0; l < 32; l++) {
                int q0 = (q[l] & 0xF) | (((x[i].qh[l] >> (2 * c)) & 1) << 4);
                int q1 = (q[l] >> 4) | (((x[i].qh[l] >> (2 * c + 1)) & 1) << 4);
                t0 += q0 * a[64 * c + l];
                t1 += q1 * a[64 * c + 32 + l];
            }
            isum += sc0 * t0 + sc1 * t1;
            summ += m0 * (y[i].bsums[4 * c] + y[i].bsums[4 * c + 1]) + m1 * (y[i].bsums[4 * c + 2] + y[i].bsums[4 * c + 3]);
        }
        sum += (y[i].d * H2F(x[i].d)) * (float)isum - (y[i].d * H2F(x[i].dmin)) * (float)summ;
    }
    *s = sum;
}

void loom_vd_q6_K_ref(int64_t n, float *s, const void *vx, const void *vy) {
    const block_q6_K *x = vx;
    const block_q8_K *y = vy;
    float sum = 0.f;
    for (int64_t i = 0; i < n / QK_K; i++) {
        int isum = 0;
        for (int h = 0; h < 2; h++) {
            const uint8_t *ql = x[i].ql + 64 * h, *qh = x[i].qh + 32 * h;
            const int8_t *a = y[i].qs + 128 * h;
            const int8_t *sc = x[i].scales + 8 * h;
            for (int half = 0; half < 2; half++) { /* l in [16*half, 16*half+16) */
                int t1 = 0, t2 = 0, t3 = 0, t4 = 0;
                for (int l = 16 * half; l < 16 * half + 16; l++) {
                    t1 += (((ql[l] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - 32) * a[l];
                    t2 += (((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32) * a[l + 32];
                    t3 += (((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32) * a[l + 64];
                    t4 += (((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32) * a[l + 96];
                }
                isum += sc[half] * t1 + sc[half + 2] * t2 + sc[half + 4] * t3 + sc[half + 6] * t4;
            }
        }
        sum += (y[i].d * H2F(x[i].d)) * (float)isum;
    }
    *s = sum;
}

/* ------------------------------------------------------------ activations */

static void ff_f32(const float *x, void *y, int64_t n) { memcpy(y, x, (size_t)n * sizeof(float)); }
static void ff_f16(const float *x, void *y, int64_t n) { (void)loom_quantize_row(LOOM_TYPE_F16, x, y, n); }
static void ff_bf16(const float *x, void *y, int64_t n) { (void)loom_quantize_row(LOOM_TYPE_BF16, x, y, n); }
static void ff_q8_0(const float *x, void *y, int64_t n) { (void)loom_quantize_row(LOOM_TYPE_Q8_0, x, y, n); }
static void ff_q8_1(const float *x, void *y, int64_t n) { (void)loom_quantize_row(LOOM_TYPE_Q8_1, x, y, n); }
static void ff_q8_K(const float *x, void *y, int64_t n) { (void)loom_quantize_row(LOOM_TYPE_Q8_K, x, y, n); }

static float dot_f32_ref(int64_t n, const float *x, const float *y) {
    float s;
    loom_vd_f32_ref(n, &s, x, y);
    return s;
}

static void f16_to_f32_ref(int64_t n, const uint16_t *x, float *y) {
    for (int64_t i = 0; i < n; i++) y[i] = loom_fp16_to_fp32(x[i]);
}

static float exp_sum_f32_ref(int64_t n, float *x, float max) {
    double sum = 0.0;
    for (int64_t i = 0; i < n; i++) {
        float e = x[i] == -INFINITY ? 0.0f : expf(x[i] - max);
        x[i] = e;
        sum += e;
    }
    return (float)sum;
}

static void silu_f32_ref(int64_t n, const float *x, float *y) {
    for (int64_t i = 0; i < n; i++) y[i] = x[i] / (1.0f + expf(-x[i]));
}

static void gelu_f32_ref(int64_t n, const float *x, float *y) {
    const float k = 0.7978845608028654f; /* sqrt(2/pi) */
    for (int64_t i = 0; i < n; i++) {
        const float v = x[i];
        y[i] = 0.5f * v * (1.0f + tanhf(k * (v + 0.044715f * v * v * v)));
    }
}

static void tanh_f32_ref(int64_t n, const float *x, float *y, float a, float b) {
    for (int64_t i = 0; i < n; i++) y[i] = b * tanhf(a * x[i]);
}

static void axpy_f32_ref(int64_t n, float a, const float *x, float *y) {
    for (int64_t i = 0; i < n; i++) y[i] += a * x[i];
}

static void scale_f32_ref(int64_t n, float *x, float a) {
    for (int64_t i = 0; i < n; i++) x[i] *= a;
}

static float max_f32_ref(int64_t n, const float *x, float init) {
    float m = init;
    for (int64_t i = 0; i < n; i++) m = x[i] > m ? x[i] : m;
    return m;
}

/* Reference for the row-interleaved layout (quant/repack.h): per row, per block,
 * the exact integer sum sum(q * y) (Q4_0: u - 8 with nibble u; IQ4_NL: its table's
 * value for u; Q8_0: (u ^ 0x80) as int8), then acc = fma(d_w * d_y, isum, acc) in block order: the arithmetic the
 * SIMD versions perform per vector lane, so they match this bit for bit. */
/* K-quant super-blocks in the interleaved layout (quant/repack.h) times Q8_K rows:
 * one function per type folds super-block p (row r of its 16-row group) into acc. */
typedef float (*kq_block_fn)(const uint8_t *p, int r, const block_q8_K *y, float acc);

/* Q4_K: exact integer sums isum = sum_s sc[s] * dot_s and msum = sum_s m[s] * (sum of
 * the sub-block's activations), then acc = fma(dy*d, isum, acc) and
 * acc = fma(-(dy*dmin), msum, acc): the SIMD kernels do the same per lane and match
 * bit for bit. */
/* Q4_K (q5 false) or Q5_K (q5: with the super-block's fifth bits, layout of repack.h) */
static float q45k_block_ref(const uint8_t *p, bool q5, int r, const block_q8_K *y, float acc) {
    uint16_t hd, hm;
    memcpy(&hd, p + 2 * r, 2);
    memcpy(&hm, p + 32 + 2 * r, 2);
    int32_t isum = 0, msum = 0;
    for (int s = 0; s < 8; s++) {
        const uint8_t lo = p[64 + 16 * s + r], hi = p[192 + 16 * (s % 4) + r];
        const int sh = s < 4 ? 0 : 2;
        const int sc = (lo & 15) | ((hi >> sh) & 3) << 4, m = (lo >> 4) | ((hi >> (4 + sh)) & 3) << 4;
        int32_t dot = 0;
        for (int e = 0; e < 32; e++) {
            const int u = 8 * (s / 2) + e / 4;
            const uint8_t byte = p[loom_repack_kq_qs(q5, (size_t)u) + 4 * r + e % 4];
            /* qh byte e, bit s */
            const int hb = q5 ? (p[loom_repack_q5k_qh((size_t)e / 4) + 4 * r + e % 4] >> s) & 1 : 0;
            dot += ((s % 2 ? byte >> 4 : byte & 15) | hb << 4) * y->qs[32 * s + e];
        }
        isum += sc * dot;
        msum += m * (y->bsums[2 * s] + y->bsums[2 * s + 1]);
    }
    acc = fmaf(y->d * H2F(hd), (float)isum, acc);
    return fmaf(-(y->d * H2F(hm)), (float)msum, acc);
}

static float q4k_block_ref(const uint8_t *p, int r, const block_q8_K *y, float acc) {
    return q45k_block_ref(p, false, r, y, acc);
}

/* Q5_K: Q4_K's sums with the codes u | h << 4 (0..31); same two fmas per super-block. */
static float q5k_block_ref(const uint8_t *p, int r, const block_q8_K *y, float acc) {
    return q45k_block_ref(p, true, r, y, acc);
}

/* Q6_K: the exact integer isum = sum_g scale_g * (sum_{e in g} u_e * y_e - 32 * bsum_g)
 * over the 16 groups (u = the unsigned 6-bit code, q + 32), then acc = fma(dy*d, isum,
 * acc) (the SIMD kernels match it bit for bit). */
static float q6k_block_ref(const uint8_t *p, int r, const block_q8_K *y, float acc) {
    uint16_t hd;
    memcpy(&hd, p + 2 * r, 2);
    int32_t isum = 0;
    for (int gi = 0; gi < 16; gi++) {
        int32_t dot = 0;
        for (int e = 16 * gi; e < 16 * gi + 16; e++) {
            const int h = e / 128, kq = (e % 128) / 32, l = e % 32;
            const int qi = 64 * h + l + 32 * (kq & 1), hi = 32 * h + l;
            const uint8_t qlb = p[loom_repack_q6k_ql((size_t)qi / 4) + 4 * r + qi % 4];
            const uint8_t qhb = p[loom_repack_q6k_qh((size_t)hi / 4) + 4 * r + hi % 4];
            const int u = (kq >= 2 ? qlb >> 4 : qlb & 15) | ((qhb >> (2 * kq)) & 3) << 4;
            dot += u * y->qs[e];
        }
        isum += (int8_t)p[32 + 16 * gi + r] * (dot - 32 * y->bsums[gi]);
    }
    return fmaf(y->d * H2F(hd), (float)isum, acc);
}

/* Q2_K: exact integer sums isum = sum_s sc[s] * dot_s and msum = sum_s m[s] * bsum_s over
 * the 16 groups of 16 (sc, m: the low and high nibbles of scales[s]), then
 * acc = fma(dy*d, isum, acc) and acc = fma(-(dy*dmin), msum, acc), as for Q4_K. */
static float q2k_block_ref(const uint8_t *p, int r, const block_q8_K *y, float acc) {
    uint16_t hd, hm;
    memcpy(&hd, p + 2 * r, 2);
    memcpy(&hm, p + 32 + 2 * r, 2);
    int32_t isum = 0, msum = 0;
    for (int s = 0; s < 16; s++) {
        const uint8_t sc = p[64 + 16 * s + r];
        int32_t dot = 0;
        for (int e = 16 * s; e < 16 * s + 16; e++) {
            const int q = 32 * (e / 128) + e % 32, j = (e % 128) / 32; /* qs byte, shift 2j */
            dot += ((p[320 + 64 * (q / 4) + 4 * r + q % 4] >> (2 * j)) & 3) * y->qs[e];
        }
        isum += (sc & 15) * dot;
        msum += (sc >> 4) * y->bsums[s];
    }
    acc = fmaf(y->d * H2F(hd), (float)isum, acc);
    return fmaf(-(y->d * H2F(hm)), (float)msum, acc);
}

/* IQ4_XS: the exact integer isum = sum_s (ls_s - 32) * sum_{e in s} table[u_e] * y_e over
 * the 8 sub-blocks, then acc = fma(dy*d, isum, acc) (the SIMD kernels match it bit for
 * bit; they compute each sub-block sum as sum (table[u] + 128) y - 128 * bsum). */
static float iq4xs_block_ref(const uint8_t *p, int r, const block_q8_K *y, float acc) {
    uint16_t hd, sh;
    memcpy(&hd, p + 2 * r, 2);
    memcpy(&sh, p + 32 + 2 * r, 2);
    int32_t isum = 0;
    for (int s = 0; s < 8; s++) {
        const int ls = ((p[64 + 4 * r + s / 2] >> (4 * (s % 2))) & 0xF) | ((sh >> (2 * s)) & 3) << 4;
        int32_t dot = 0;
        for (int e = 0; e < 32; e++) {
            const int q = 16 * s + e % 16; /* qs byte of the element */
            const uint8_t byte = p[128 + 64 * (q / 4) + 4 * r + q % 4];
            dot += loom_iq4nl_kv[e < 16 ? byte & 0xF : byte >> 4] * y->qs[32 * s + e];
        }
        isum += (ls - 32) * dot;
    }
    return fmaf(y->d * H2F(hd), (float)isum, acc);
}

/* Rows [i0, i1) x columns [j0, j1) of a K-quant matrix in the interleaved layout: per
 * (row, column) the super-blocks folded in order. blk: GGUF bytes per super-block. */
static void gemm_repacked_kq_ref(kq_block_fn fold, size_t blk, int64_t k, const void *w, size_t ws, const void *a,
                                 size_t as, float *c, size_t ldc, int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
    const int64_t nb = k / 256;
    const size_t gbytes = ws * LOOM_REPACK_ROWS, bstep = blk * LOOM_REPACK_ROWS;
    for (int64_t j = j0; j < j1; j++) {
        const block_q8_K *y = (const block_q8_K *)((const char *)a + (size_t)j * as);
        for (int64_t i = i0; i < i1; i++) {
            const int64_t g = i / LOOM_REPACK_ROWS;
            const int r = (int)(i % LOOM_REPACK_ROWS);
            float acc = 0.f;
            for (int64_t b = 0; b < nb; b++)
                acc = fold((const uint8_t *)w + (size_t)g * gbytes + (size_t)b * bstep, r, &y[b], acc);
            c[(size_t)j * ldc + (size_t)i] = acc;
        }
    }
}

/* Q4_1 / Q5_0 / Q5_1 in the interleaved layout: per block the exact integer
 * isum = sum_e q_e y_e (q: the code 0..15 / 0..31, Q5_0's minus 16), then
 * acc = fma(d_w * d_y, isum, acc) and, for Q4_1 / Q5_1, acc = fma(m_w, s_y, acc) (s_y: the
 * Q8_1 block's stored d x sum), in block order; the plain-row tiles' arithmetic. */
static void gemm_repacked_lg_ref(loom_type wt, int64_t k, const void *w, size_t ws, const void *a, size_t as, float *c,
                                 size_t ldc, int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
    const bool mn = wt != LOOM_TYPE_Q5_0, hb = wt != LOOM_TYPE_Q4_1;
    const size_t bb = wt == LOOM_TYPE_Q4_1 ? sizeof(block_q4_1) : wt == LOOM_TYPE_Q5_0 ? sizeof(block_q5_0)
                                                                                       : sizeof(block_q5_1);
    const size_t ph = loom_repack_lg_qh(wt), pq = loom_repack_lg_qs(wt); /* qh, the nibble chunks */
    const size_t ab = mn ? sizeof(block_q8_1) : sizeof(block_q8_0), aq = mn ? 4 : 2;
    const int64_t nb = k / 32;
    for (int64_t j = j0; j < j1; j++) {
        const uint8_t *y = (const uint8_t *)a + (size_t)j * as;
        for (int64_t i = i0; i < i1; i++) {
            const int64_t g = i / LOOM_REPACK_ROWS, r = i % LOOM_REPACK_ROWS;
            float acc = 0.f;
            for (int64_t b = 0; b < nb; b++) {
                const uint8_t *p = (const uint8_t *)w + (size_t)g * ws * LOOM_REPACK_ROWS + (size_t)b * bb * LOOM_REPACK_ROWS;
                const uint8_t *yb = y + (size_t)b * ab;
                uint16_t hd, hm = 0, yd, ys = 0;
                uint32_t qh = 0;
                memcpy(&hd, p + 2 * r, 2);
                if (mn) memcpy(&hm, p + 32 + 2 * r, 2);
                if (hb) memcpy(&qh, p + ph + 4 * r, 4);
                memcpy(&yd, yb, 2);
                if (mn) memcpy(&ys, yb + 2, 2);
                int32_t isum = 0;
                for (int e = 0; e < 32; e++) {
                    const int l = e % 16;
                    const uint8_t byte = p[pq + 64 * (l / 4) + 4 * r + l % 4];
                    int q = (e < 16 ? byte & 0xF : byte >> 4) | (int)((qh >> e) & 1u) << 4;
                    if (!mn) q -= 16;
                    isum += q * (int8_t)yb[aq + e];
                }
                acc = fmaf(H2F(hd) * H2F(yd), (float)isum, acc);
                if (mn) acc = fmaf(H2F(hm), H2F(ys), acc);
            }
            c[(size_t)j * ldc + (size_t)i] = acc;
        }
    }
}

bool loom_gemm_repacked_ref(loom_type wt, int64_t k, const void *w, size_t ws, const void *a, size_t as, float *c,
                            size_t ldc, int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
    if (!loom_repack_type_ok(wt)) return false;
    if (wt == LOOM_TYPE_IQ4_XS) {
        gemm_repacked_kq_ref(iq4xs_block_ref, sizeof(block_iq4_xs), k, w, ws, a, as, c, ldc, i0, i1, j0, j1);
        return true;
    }
    if (wt == LOOM_TYPE_Q2_K) {
        gemm_repacked_kq_ref(q2k_block_ref, sizeof(block_q2_K), k, w, ws, a, as, c, ldc, i0, i1, j0, j1);
        return true;
    }
    if (wt == LOOM_TYPE_Q5_K) {
        gemm_repacked_kq_ref(q5k_block_ref, sizeof(block_q5_K), k, w, ws, a, as, c, ldc, i0, i1, j0, j1);
        return true;
    }
    if (wt == LOOM_TYPE_Q4_K || wt == LOOM_TYPE_Q6_K) {
        const bool k4 = wt == LOOM_TYPE_Q4_K;
        gemm_repacked_kq_ref(k4 ? q4k_block_ref : q6k_block_ref, k4 ? sizeof(block_q4_K) : sizeof(block_q6_K), k, w,
                             ws, a, as, c, ldc, i0, i1, j0, j1);
        return true;
    }
    if (wt == LOOM_TYPE_Q4_1 || wt == LOOM_TYPE_Q5_0 || wt == LOOM_TYPE_Q5_1) {
        gemm_repacked_lg_ref(wt, k, w, ws, a, as, c, ldc, i0, i1, j0, j1);
        return true;
    }
    const bool iq = wt == LOOM_TYPE_IQ4_NL, q4 = wt == LOOM_TYPE_Q4_0 || iq;
    const size_t bb = q4 ? sizeof(block_q4_0) : sizeof(block_q8_0);
    const int64_t nb = k / 32;
    const size_t gbytes = ws * LOOM_REPACK_ROWS;
    for (int64_t j = j0; j < j1; j++) {
        const block_q8_0 *y = (const block_q8_0 *)((const char *)a + (size_t)j * as);
        for (int64_t i = i0; i < i1; i++) {
            const int64_t g = i / LOOM_REPACK_ROWS, r = i % LOOM_REPACK_ROWS;
            float acc = 0.f;
            for (int64_t b = 0; b < nb; b++) {
                const uint8_t *p = (const uint8_t *)w + (size_t)g * gbytes + (size_t)b * bb * LOOM_REPACK_ROWS;
                uint16_t hd;
                memcpy(&hd, p + 2 * r, 2);
                int isum = 0;
                for (int e = 0; e < 32; e++) {
                    int q;
                    if (q4) {
                        const int l = e % 16, cc = l / 4;
                        const uint8_t byte = p[32 + 64 * cc + 4 * r + l % 4];
                        const int u = e < 16 ? (byte & 0xF) : (byte >> 4);
                        q = iq ? loom_iq4nl_kv[u] : u - 8;
                    } else {
                        const int cc = e / 4;
                        q = (int)(int8_t)(p[32 + 64 * cc + 4 * r + e % 4] ^ 0x80);
                    }
                    isum += q * y[b].qs[e];
                }
                acc = fmaf(H2F(hd) * H2F(y[b].d), (float)isum, acc);
            }
            c[(size_t)j * ldc + (size_t)i] = acc;
        }
    }
    return true;
}

/* kernels.h gemm_float_pack: panels [q0, q1) of n F16 / BF16 rows, k-major floats. */
bool loom_gemm_float_pack_ref(loom_type at, int64_t k, const void *a, size_t as, int64_t n, float *p, int64_t q0,
                              int64_t q1) {
    if (at != LOOM_TYPE_F16 && at != LOOM_TYPE_BF16) return false;
    for (int64_t q = q0; q < q1; q++)
        for (int64_t kk = 0; kk < k; kk++)
            for (int c = 0; c < LOOM_GEMM_PANEL; c++) {
                const int64_t j = q * LOOM_GEMM_PANEL + c;
                float v = 0.0f;
                if (j < n) {
                    const uint16_t h = ((const uint16_t *)((const uint8_t *)a + (size_t)j * as))[kk];
                    v = at == LOOM_TYPE_F16 ? H2F(h) : loom_bf16_to_fp32(h);
                }
                p[((size_t)q * (size_t)k + (size_t)kk) * LOOM_GEMM_PANEL + (size_t)c] = v;
            }
    return true;
}

/* kernels.h gemm_bf16_pack: panels [q0, q1) of n BF16 rows as k-pairs. */
bool loom_gemm_bf16_pack_ref(loom_type at, int64_t k, const void *a, size_t as, int64_t n, uint32_t *p, int64_t q0,
                             int64_t q1) {
    if (at != LOOM_TYPE_BF16) return false;
    const int64_t kp = (k + 1) / 2;
    for (int64_t q = q0; q < q1; q++)
        for (int64_t t = 0; t < kp; t++)
            for (int c = 0; c < LOOM_GEMM_PANEL; c++) {
                const int64_t j = q * LOOM_GEMM_PANEL + c;
                uint32_t v = 0;
                if (j < n) {
                    const uint16_t *x = (const uint16_t *)((const uint8_t *)a + (size_t)j * as);
                    v = x[2 * t];
                    if (2 * t + 1 < k) v |= (uint32_t)x[2 * t + 1] << 16;
                }
                p[((size_t)q * (size_t)kp + (size_t)t) * LOOM_GEMM_PANEL + (size_t)c] = v;
            }
    return true;
}

/* kernels.h gemm_float_packed: per output, per LOOM_GEMM_PACKED_KC chunk one fmaf per
 * k-value from 0.0f, the chunk sums added in order. */
bool loom_gemm_float_packed_ref(loom_type wt, int64_t k, const void *w, size_t ws, const float *p, float *c,
                                size_t ldc, int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
    if ((wt != LOOM_TYPE_F16 && wt != LOOM_TYPE_BF16) || j0 % LOOM_GEMM_PANEL != 0) return false;
    for (int64_t j = j0; j < j1; j++) {
        const float *pc = p + (size_t)(j / LOOM_GEMM_PANEL) * (size_t)k * LOOM_GEMM_PANEL + (size_t)(j % LOOM_GEMM_PANEL);
        for (int64_t i = i0; i < i1; i++) {
            const uint16_t *x = (const uint16_t *)((const uint8_t *)w + (size_t)i * ws);
            float total = 0.0f;
            for (int64_t k0 = 0; k0 < k; k0 += LOOM_GEMM_PACKED_KC) {
                const int64_t k1 = k - k0 < LOOM_GEMM_PACKED_KC ? k : k0 + LOOM_GEMM_PACKED_KC;
                float s = 0.0f;
                for (int64_t kk = k0; kk < k1; kk++)
                    s = fmaf(wt == LOOM_TYPE_F16 ? H2F(x[kk]) : loom_bf16_to_fp32(x[kk]), pc[(size_t)kk * LOOM_GEMM_PANEL], s);
                total = k0 == 0 ? s : total + s;
            }
            c[(size_t)j * ldc + (size_t)i] = total;
        }
    }
    return true;
}

void loom_kernels_fill_scalar(loom_kernels *k) {
    memset(k, 0, sizeof *k);
    k->name = "scalar";
#define E(w, a, fn) k->dot[LOOM_TYPE_##w] = (loom_kernel_entry){LOOM_TYPE_##a, fn}
    E(F32, F32, loom_vd_f32_ref);
    E(F16, F16, loom_vd_f16_ref);
    E(BF16, BF16, loom_vd_bf16_ref);
    E(Q4_0, Q8_0, loom_vd_q4_0_ref);
    E(Q4_1, Q8_1, loom_vd_q4_1_ref);
    E(Q5_0, Q8_0, loom_vd_q5_0_ref);
    E(Q5_1, Q8_1, loom_vd_q5_1_ref);
    E(Q8_0, Q8_0, loom_vd_q8_0_ref);
    E(MXFP4, Q8_0, loom_vd_mxfp4_ref);
    E(NVFP4, Q8_0, loom_vd_nvfp4_ref);
    E(Q1_0, Q8_0, loom_vd_q1_0_ref);
    E(Q2_0, Q8_0, loom_vd_q2_0_ref);
    E(Q2_K, Q8_K, loom_vd_q2_K_ref);
    E(Q3_K, Q8_K, loom_vd_q3_K_ref);
    E(Q4_K, Q8_K, loom_vd_q4_K_ref);
    E(Q5_K, Q8_K, loom_vd_q5_K_ref);
    E(Q6_K, Q8_K, loom_vd_q6_K_ref);
#undef E
    loom_kernels_fill_iq_scalar(k);
    k->from_float[LOOM_TYPE_F32] = ff_f32;
    k->from_float[LOOM_TYPE_F16] = ff_f16;
    k->from_float[LOOM_TYPE_BF16] = ff_bf16;
    k->from_float[LOOM_TYPE_Q8_0] = ff_q8_0;
    k->from_float[LOOM_TYPE_Q8_1] = ff_q8_1;
    k->from_float[LOOM_TYPE_Q8_K] = ff_q8_K;
    k->gemm = NULL;
    k->gemm_repacked = loom_gemm_repacked_ref;
    k->dot_f32 = dot_f32_ref;
    k->axpy_f32 = axpy_f32_ref;
    k->scale_f32 = scale_f32_ref;
    k->max_f32 = max_f32_ref;
    k->f16_to_f32 = f16_to_f32_ref;
    k->exp_sum_f32 = exp_sum_f32_ref;
    k->silu_f32 = silu_f32_ref;
    k->gelu_f32 = gelu_f32_ref;
    k->tanh_f32 = tanh_f32_ref;
    k->fa_qk = loom_fa_qk_ref;
    k->fa_softmax = loom_fa_softmax_ref;
    k->fa_pv = loom_fa_pv_ref;
    k->fa_rows = loom_fa_rows_ref;
}
