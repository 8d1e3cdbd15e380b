/* A small llama-style transformer block built from the public ops (rms_norm,
 * mul_mat q/k/v/o, neox rope, causal GQA attention via sdpa with and without
 * flash attention, swiglu FFN, residuals), compared with a float64 reference of
 * the whole block written here. F32 weights: within 1.5e-6 relative (~10x measured). */
#include "nn_test_common.h"

enum { D = 64, HD = 16, NH = 4, NKV = 2, FF = 96, T = 6 };
static const float EPS = 1e-5f, BASE = 10000.0f;
#define BLOCK_TOL 1.5e-6 /* measured max relative error 1.14e-7 (avx2, avx512) .. 1.26e-7 (scalar) */

typedef struct weights {
    float an[D], fn[D];
    float wq[NH * HD * D], wk[NKV * HD * D], wv[NKV * HD * D], wo[D * NH * HD];
    float wg[FF * D], wu[FF * D], wd[D * FF];
} weights;

/* y[o, t] = sum_i W[o*in + i] x[i, t] (W stored as GGUF [in, out]: row o contiguous) */
static void dmatmul(const float *W, const double *x, double *y, int in, int out) {
    for (int t = 0; t < T; t++)
        for (int o = 0; o < out; o++) {
            double s = 0;
            for (int i = 0; i < in; i++) s += (double)W[o * in + i] * x[t * in + i];
            y[t * out + o] = s;
        }
}
static void drmsnorm(const double *x, const float *w, double *y) {
    for (int t = 0; t < T; t++) {
        double ss = 0;
        for (int i = 0; i < D; i++) ss += x[t * D + i] * x[t * D + i];
        double r = 1.0 / sqrt(ss / D + EPS);
        for (int i = 0; i < D; i++) y[t * D + i] = x[t * D + i] * r * w[i];
    }
}
static void drope(double *x, int heads, const int32_t *pos) { /* neox, full head */
    for (int t = 0; t < T; t++)
        for (int h = 0; h < heads; h++) {
            double *r = x + (t * heads + h) * HD;
            for (int p = 0; p < HD / 2; p++) {
                double th = pos[t] * pow((double)BASE, -2.0 * p / HD);
                double a = r[p], b = r[p + HD / 2];
                r[p] = a * cos(th) - b * sin(th);
                r[p + HD / 2] = a * sin(th) + b * cos(th);
            }
        }
}

static void reference(const weights *w, const float *x, const int32_t *pos, double *out) {
    static double xd[T * D], h[T * D], q[T * NH * HD], k[T * NKV * HD], v[T * NKV * HD], att[T * NH * HD],
        o[T * D], x1[T * D], g[T * FF], u[T * FF], dn[T * D];
    for (int i = 0; i < T * D; i++) xd[i] = x[i];
    drmsnorm(xd, w->an, h);
    dmatmul(w->wq, h, q, D, NH * HD);
    dmatmul(w->wk, h, k, D, NKV * HD);
    dmatmul(w->wv, h, v, D, NKV * HD);
    drope(q, NH, pos);
    drope(k, NKV, pos);
    const double scale = 1.0 / sqrt((double)HD);
    for (int t = 0; t < T; t++)
        for (int hh = 0; hh < NH; hh++) {
            int g2 = hh / (NH / NKV);
            double s[T], mx = -INFINITY, sum = 0;
            for (int j = 0; j <= t; j++) {
                double d = 0;
                for (int e = 0; e < HD; e++) d += q[(t * NH + hh) * HD + e] * k[(j * NKV + g2) * HD + e];
                s[j] = d * scale;
                if (s[j] > mx) mx = s[j];
            }
            for (int j = 0; j <= t; j++) sum += (s[j] = exp(s[j] - mx));
            for (int e = 0; e < HD; e++) {
                double a = 0;
                for (int j = 0; j <= t; j++) a += s[j] * v[(j * NKV + g2) * HD + e];
                att[(t * NH + hh) * HD + e] = a / sum;
            }
        }
    dmatmul(w->wo, att, o, NH * HD, D);
    for (int i = 0; i < T * D; i++) x1[i] = xd[i] + o[i];
    drmsnorm(x1, w->fn, h);
    dmatmul(w->wg, h, g, D, FF);
    dmatmul(w->wu, h, u, D, FF);
    for (int i = 0; i < T * FF; i++) g[i] = g[i] / (1.0 + exp(-g[i])) * u[i];
    dmatmul(w->wd, g, dn, FF, D);
    for (int i = 0; i < T * D; i++) out[i] = x1[i] + dn[i];
}

static loom_tensor *W2(loom_ctx *ctx, const float *d, int in, int out) { return nn_f32(ctx, d, in, out, 1, 1); }

static loom_status build_and_run(const weights *w, const float *x, const int32_t *pos, bool flash, int nth,
                                 float *out) {
    loom_ctx *ctx = nn_ctx(nth, flash);
    loom_tensor *xt = nn_f32(ctx, x, D, T, 1, 1);
    int64_t pne[1] = {T};
    loom_tensor *pt = loom_from_i32(loom_ctx_input(ctx), pos, T, 1, pne);
    int64_t d1[1] = {D};
    loom_tensor *an = loom_from_f32(ctx, w->an, D, 1, d1), *fn = loom_from_f32(ctx, w->fn, D, 1, d1);
    /* causal mask [T, Tpad]; flash wants F16 with rows padded to 64 */
    const int tpad = flash ? 64 : T;
    float *m = fmalloc((size_t)T * tpad);
    for (int i = 0; i < tpad; i++)
        for (int j = 0; j < T; j++) m[i * T + j] = (i < T && j <= i) ? 0.0f : -INFINITY;
    loom_tensor *mask = flash ? nn_f16(ctx, m, T, tpad, 1, 1) : nn_f32(ctx, m, T, tpad, 1, 1);
    free(m);

    loom_tensor *h = loom_rms_norm(ctx, xt, an, EPS);
    int64_t qs[3] = {HD, NH, T}, ks[3] = {HD, NKV, T};
    loom_tensor *q = loom_reshape(ctx, loom_mul_mat(ctx, W2(ctx, w->wq, D, NH * HD), h), 3, qs);
    loom_tensor *k = loom_reshape(ctx, loom_mul_mat(ctx, W2(ctx, w->wk, D, NKV * HD), h), 3, ks);
    loom_tensor *v = loom_reshape(ctx, loom_mul_mat(ctx, W2(ctx, w->wv, D, NKV * HD), h), 3, ks);
    loom_rope_opts ro = loom_rope_default_opts();
    ro.mode = LOOM_ROPE_NEOX;
    q = loom_rope(ctx, q, pt, HD, BASE, 1.0f, &ro);
    k = loom_rope(ctx, k, pt, HD, BASE, 1.0f, &ro);
    if (!flash) v = loom_cont(ctx, loom_permute(ctx, v, 1, 2, 0, 3)); /* PermutedV [T, HD, NKV] */
    loom_tensor *att = loom_sdpa(ctx, q, k, v, mask, 1.0f / sqrtf((float)HD));
    int64_t as[2] = {NH * HD, T};
    att = loom_reshape(ctx, att, 2, as);
    loom_tensor *x1 = loom_add(ctx, xt, loom_mul_mat(ctx, W2(ctx, w->wo, NH * HD, D), att));
    loom_tensor *h2 = loom_rms_norm(ctx, x1, fn, EPS);
    loom_tensor *g = loom_mul_mat(ctx, W2(ctx, w->wg, D, FF), h2);
    loom_tensor *u = loom_mul_mat(ctx, W2(ctx, w->wu, D, FF), h2);
    loom_tensor *y = loom_add(ctx, x1, loom_mul_mat(ctx, W2(ctx, w->wd, FF, D), loom_mul(ctx, loom_silu(ctx, g), u)));
    loom_status s = nn_run(ctx, y, out, (size_t)T * D);
    if (s) fprintf(stderr, "block (flash=%d): %s\n", flash, loom_ctx_error(ctx));
    loom_ctx_free(ctx);
    return s;
}

int main(void) {
    static weights w;
    fill_rnd(w.an, D, 1.0f);
    fill_rnd(w.fn, D, 1.0f);
    for (int i = 0; i < D; i++) w.an[i] += 1.0f, w.fn[i] += 1.0f;
    const float sd = 1.0f / sqrtf((float)D);
    fill_rnd(w.wq, sizeof w.wq / 4, sd);
    fill_rnd(w.wk, sizeof w.wk / 4, sd);
    fill_rnd(w.wv, sizeof w.wv / 4, sd);
    fill_rnd(w.wo, sizeof w.wo / 4, sd);
    fill_rnd(w.wg, sizeof w.wg / 4, sd);
    fill_rnd(w.wu, sizeof w.wu / 4, sd);
    fill_rnd(w.wd, sizeof w.wd / 4, 1.0f / sqrtf((float)FF));
    static float x[T * D], out[T * D];
    static double ref[T * D];
    fill_rnd(x, T * D, 1.0f);
    const int32_t pos[T] = {0, 1, 2, 3, 4, 5};
    reference(&w, x, pos, ref);
    for (int flash = 0; flash < 2; flash++)
        for (int nth = 1; nth <= 3; nth += 2) {
            CHECK_EQ_INT(build_and_run(&w, x, pos, flash, nth, out), LOOM_OK);
            double e = max_rel(out, ref, T * D);
            printf("  flash %d, %d threads: max relative error %.3g\n", flash, nth, e);
            CHECK_MSG(e <= BLOCK_TOL, "block flash=%d nth=%d: max rel err %g", flash, nth, e);
        }
    return test_finish("test_cpu_block");
}
