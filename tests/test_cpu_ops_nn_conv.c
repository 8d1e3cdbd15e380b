/* im2col, conv2d and avg_pool2d against direct float64 loops written here. */
#include "nn_test_common.h"

typedef struct conv_case {
    int W, H, IC, N, KW, KH, OC, s0, s1, p0, p1, d0, d1;
    loom_type ktype;
} conv_case;

static int out_dim(int in, int k, int s, int p, int d) { return (in + 2 * p - d * (k - 1) - 1) / s + 1; }

static double in_at(const conv_case *c, const float *in, int x, int y, int ic, int n) {
    if (x < 0 || x >= c->W || y < 0 || y >= c->H) return 0.0;
    return in[(((size_t)n * c->IC + ic) * c->H + y) * c->W + x];
}

static void run_conv(const conv_case *c, int nth) {
    const int OW = out_dim(c->W, c->KW, c->s0, c->p0, c->d0), OH = out_dim(c->H, c->KH, c->s1, c->p1, c->d1);
    size_t nin = (size_t)c->W * c->H * c->IC * c->N, nk = (size_t)c->KW * c->KH * c->IC * c->OC;
    size_t K = (size_t)c->KW * c->KH * c->IC;
    float *in = fmalloc(nin), *ker = fmalloc(nk);
    fill_rnd(in, nin, 1.0f);
    fill_rnd(ker, nk, 1.0f);
    if (c->ktype == LOOM_TYPE_F16) round_f16(ker, nk);

    /* im2col (F32 and F16 destinations) */
    for (int f16 = 0; f16 < 2; f16++) {
        loom_ctx *ctx = nn_ctx(nth, false);
        loom_tensor *kt = nn_f32(ctx, ker, c->KW, c->KH, c->IC, c->OC);
        loom_tensor *it = nn_f32(ctx, in, c->W, c->H, c->IC, c->N);
        loom_tensor *y = loom_im2col(ctx, kt, it, c->s0, c->s1, c->p0, c->p1, c->d0, c->d1,
                                     f16 ? LOOM_TYPE_F16 : LOOM_TYPE_F32);
        CHECK_EQ_INT(loom_tensor_ne(y, 0), (int64_t)K);
        CHECK_EQ_INT(loom_tensor_ne(y, 1), OW);
        CHECK_EQ_INT(loom_tensor_ne(y, 2), OH);
        CHECK_EQ_INT(loom_tensor_ne(y, 3), c->N);
        size_t no = K * OW * OH * c->N;
        if (f16) {
            int64_t ne[4] = {(int64_t)K, OW, OH, c->N};
            y = loom_cpy(ctx, y, loom_empty(ctx, LOOM_TYPE_F32, 4, ne));
        }
        float *out = fmalloc(no);
        CHECK_MSG(nn_run(ctx, y, out, no) == LOOM_OK, "im2col: %s", loom_ctx_error(ctx));
        int bad = 0;
        for (int n = 0; n < c->N; n++)
            for (int oh = 0; oh < OH; oh++)
                for (int ow = 0; ow < OW; ow++)
                    for (int ic = 0; ic < c->IC; ic++)
                        for (int kh = 0; kh < c->KH; kh++)
                            for (int kw = 0; kw < c->KW; kw++) {
                                float r = (float)in_at(c, in, ow * c->s0 + kw * c->d0 - c->p0,
                                                       oh * c->s1 + kh * c->d1 - c->p1, ic, n);
                                if (f16) r = loom_fp16_to_fp32(loom_fp32_to_fp16(r));
                                size_t e = (size_t)(ic * c->KH + kh) * c->KW + kw;
                                size_t at = (((size_t)n * OH + oh) * OW + ow) * K + e;
                                if (!(out[at] == r)) bad++;
                            }
        CHECK_MSG(bad == 0, "im2col f16=%d: %d wrong", f16, bad);
        free(out);
        loom_ctx_free(ctx);
    }

    /* conv2d */
    loom_ctx *ctx = nn_ctx(nth, false);
    loom_tensor *kt = c->ktype == LOOM_TYPE_F16 ? nn_f16(ctx, ker, c->KW, c->KH, c->IC, c->OC)
                                                : nn_f32(ctx, ker, c->KW, c->KH, c->IC, c->OC);
    loom_tensor *it = nn_f32(ctx, in, c->W, c->H, c->IC, c->N);
    loom_tensor *y = loom_conv2d(ctx, kt, it, c->s0, c->s1, c->p0, c->p1, c->d0, c->d1);
    CHECK_EQ_INT(loom_tensor_ne(y, 0), OW);
    CHECK_EQ_INT(loom_tensor_ne(y, 1), OH);
    CHECK_EQ_INT(loom_tensor_ne(y, 2), c->OC);
    CHECK_EQ_INT(loom_tensor_ne(y, 3), c->N);
    size_t no = (size_t)OW * OH * c->OC * c->N;
    float *out = fmalloc(no);
    double *ref = dmalloc(no);
    CHECK_MSG(nn_run(ctx, y, out, no) == LOOM_OK, "conv2d: %s", loom_ctx_error(ctx));
    for (int n = 0; n < c->N; n++)
        for (int oc = 0; oc < c->OC; oc++)
            for (int oh = 0; oh < OH; oh++)
                for (int ow = 0; ow < OW; ow++) {
                    double s = 0;
                    for (int ic = 0; ic < c->IC; ic++)
                        for (int kh = 0; kh < c->KH; kh++)
                            for (int kw = 0; kw < c->KW; kw++)
                                s += (double)ker[(((size_t)oc * c->IC + ic) * c->KH + kh) * c->KW + kw] *
                                     in_at(c, in, ow * c->s0 + kw * c->d0 - c->p0, oh * c->s1 + kh * c->d1 - c->p1,
                                           ic, n);
                    ref[(((size_t)n * c->OC + oc) * OH + oh) * OW + ow] = s;
                }
    double e = nmse(out, ref, no), tol = c->ktype == LOOM_TYPE_F16 ? 1e-6 : 1e-11;
    CHECK_MSG(e <= tol, "conv2d %s: nmse %g > %g", loom_type_name(c->ktype), e, tol);
    loom_ctx_free(ctx);
    free(out);
    free(ref);
    free(in);
    free(ker);
}

static void run_pool(int W, int H, int C, int N, int k, int s, int p, int nth) {
    const int OW = (W + 2 * p - k) / s + 1, OH = (H + 2 * p - k) / s + 1;
    size_t nin = (size_t)W * H * C * N, no = (size_t)OW * OH * C * N;
    float *in = fmalloc(nin), *out = fmalloc(no);
    double *ref = dmalloc(no);
    fill_rnd(in, nin, 1.0f);
    loom_ctx *ctx = nn_ctx(nth, false);
    loom_tensor *y = loom_avg_pool2d(ctx, nn_f32(ctx, in, W, H, C, N), k, s, p);
    CHECK_EQ_INT(loom_tensor_ne(y, 0), OW);
    CHECK_EQ_INT(loom_tensor_ne(y, 1), OH);
    CHECK_MSG(nn_run(ctx, y, out, no) == LOOM_OK, "pool: %s", loom_ctx_error(ctx));
    for (int n = 0; n < N; n++)
        for (int c = 0; c < C; c++)
            for (int oh = 0; oh < OH; oh++)
                for (int ow = 0; ow < OW; ow++) {
                    double sum = 0;
                    for (int ky = 0; ky < k; ky++)
                        for (int kx = 0; kx < k; kx++) {
                            int x = ow * s + kx - p, yy = oh * s + ky - p;
                            if (x >= 0 && x < W && yy >= 0 && yy < H) sum += in[(((size_t)n * C + c) * H + yy) * W + x];
                        }
                    ref[(((size_t)n * C + c) * OH + oh) * OW + ow] = sum / (k * k);
                }
    double e = max_rel(out, ref, no);
    CHECK_MSG(e <= 1e-6, "avg_pool2d k=%d s=%d p=%d: max rel %g", k, s, p, e);
    loom_ctx_free(ctx);
    free(in);
    free(out);
    free(ref);
}

int main(void) {
    const conv_case cases[] = {
        {9, 7, 3, 2, 3, 2, 4, 1, 2, 1, 0, 1, 2, LOOM_TYPE_F32},
        {8, 8, 2, 1, 3, 3, 5, 2, 2, 1, 1, 1, 1, LOOM_TYPE_F16},
        {5, 6, 1, 3, 1, 1, 2, 1, 1, 0, 0, 1, 1, LOOM_TYPE_F32},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) run_conv(&cases[i], (int)(i % 3) + 1);
    run_pool(7, 6, 3, 2, 3, 2, 1, 2);
    run_pool(8, 8, 2, 1, 2, 2, 0, 1);
    run_pool(5, 5, 1, 1, 3, 1, 1, 3);
    return test_finish("test_cpu_ops_nn_conv");
}
