/*
 * ops_conv.c - CPU kernels for IM2COL and POOL_2D (backend contract §6.7).
 *
 * IM2COL: input [W,H,IC,N] (F32/F16, any strides) -> dst [IC*KH*KW, OW, OH, N]
 *   (F32/F16), element [(ic*KH+kh)*KW+kw, ow, oh, n] =
 *   input[ow*s0 + kw*d0 - p0, oh*s1 + kh*d1 - p1, ic, n], 0 outside.
 * POOL_2D (average): a [W,H,C,N] -> F32 [OW,OH,C,N]; the sum over the window's
 *   in-bounds elements is divided by k0*k1 (padding counts as zeros).
 * Both split output rows over the threads.
 */
#include "cpu/ops.h"

static inline float ld(const loom_tensor *t, int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
    const char *p = (const char *)t->data + (size_t)i0 * t->nb[0] + (size_t)i1 * t->nb[1] +
                    (size_t)i2 * t->nb[2] + (size_t)i3 * t->nb[3];
    if (t->type == LOOM_TYPE_F16) {
        uint16_t h;
        memcpy(&h, p, 2);
        return loom_fp16_to_fp32(h);
    }
    float f;
    memcpy(&f, p, 4);
    return f;
}

size_t loom_cpu_work_size_im2col(const loom_tensor *dst, int nth) {
    (void)dst;
    (void)nth;
    return 0;
}

size_t loom_cpu_work_size_pool_2d(const loom_tensor *dst, int nth) {
    (void)dst;
    (void)nth;
    return 0;
}

void loom_cpu_op_im2col(const loom_compute_params *p, loom_tensor *dst) {
    const loom_tensor *in = dst->src[0];
    const int s0 = loom_get_op_param_i32(dst, 0), s1 = loom_get_op_param_i32(dst, 1);
    const int p0 = loom_get_op_param_i32(dst, 2), p1 = loom_get_op_param_i32(dst, 3);
    const int d0 = loom_get_op_param_i32(dst, 4), d1 = loom_get_op_param_i32(dst, 5);
    const int64_t KW = loom_get_op_param_i32(dst, 6), KH = loom_get_op_param_i32(dst, 7);
    const int64_t W = in->ne[0], H = in->ne[1], IC = in->ne[2];
    const int64_t OW = dst->ne[1], OH = dst->ne[2], N = dst->ne[3];
    const bool f16 = dst->type == LOOM_TYPE_F16;
    if (loom_nelements(dst) == 0) return;
    if (dst->ne[0] != KW * KH * IC) {
        loom_cpu_fail(p, LOOM_ERR_INTERNAL);
        return;
    }
    int64_t r0, r1;
    loom_cpu_split(OW * OH * N, p->ith, p->nth, &r0, &r1);
    for (int64_t r = r0; r < r1; r++) {
        const int64_t ow = r % OW, oh = (r / OW) % OH, n = r / (OW * OH);
        char *row = (char *)loom_row_ptr(dst, ow, oh, n);
        int64_t e = 0;
        for (int64_t ic = 0; ic < IC; ic++) {
            for (int64_t kh = 0; kh < KH; kh++) {
                const int64_t ih = oh * s1 + kh * d1 - p1;
                for (int64_t kw = 0; kw < KW; kw++, e++) {
                    const int64_t iw = ow * s0 + kw * d0 - p0;
                    float v = (iw >= 0 && iw < W && ih >= 0 && ih < H) ? ld(in, iw, ih, ic, n) : 0.0f;
                    if (f16) {
                        uint16_t h = loom_fp32_to_fp16(v);
                        memcpy(row + 2 * e, &h, 2);
                    } else {
                        memcpy(row + 4 * e, &v, 4);
                    }
                }
            }
        }
    }
}

void loom_cpu_op_pool_2d(const loom_compute_params *p, loom_tensor *dst) {
    const loom_tensor *a = dst->src[0];
    const int kind = loom_get_op_param_i32(dst, 0);
    const int64_t k0 = loom_get_op_param_i32(dst, 1), k1 = loom_get_op_param_i32(dst, 2);
    const int64_t s0 = loom_get_op_param_i32(dst, 3), s1 = loom_get_op_param_i32(dst, 4);
    const int64_t p0 = loom_get_op_param_i32(dst, 5), p1 = loom_get_op_param_i32(dst, 6);
    const int64_t W = a->ne[0], H = a->ne[1];
    const int64_t OW = dst->ne[0], OH = dst->ne[1], C = dst->ne[2], N = dst->ne[3];
    if (loom_nelements(dst) == 0) return;
    if (kind != 0 || k0 < 1 || k1 < 1) {
        loom_cpu_fail(p, LOOM_ERR_UNSUPPORTED);
        return;
    }
    const double inv = 1.0 / (double)(k0 * k1);
    int64_t r0, r1;
    loom_cpu_split(OH * C * N, p->ith, p->nth, &r0, &r1);
    for (int64_t r = r0; r < r1; r++) {
        const int64_t oh = r % OH, c = (r / OH) % C, n = r / (OH * C);
        float *out = (float *)loom_row_ptr(dst, oh, c, n);
        for (int64_t ow = 0; ow < OW; ow++) {
            double sum = 0.0;
            for (int64_t kh = 0; kh < k1; kh++) {
                const int64_t ih = oh * s1 + kh - p1;
                if (ih < 0 || ih >= H) continue;
                for (int64_t kw = 0; kw < k0; kw++) {
                    const int64_t iw = ow * s0 + kw - p0;
                    if (iw < 0 || iw >= W) continue;
                    sum += ld(a, iw, ih, c, n);
                }
            }
            out[ow] = (float)(sum * inv);
        }
    }
}
