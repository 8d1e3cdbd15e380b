/*
 * test_cpu_ops_alibi.c - ALiBi (attention with linear biases) against float64 references:
 *   - loom_alibi_slope against the formula in float64 (2^(-b (h+1) / n) for h < n, else
 *     2^(-b/2 (2 (h-n) + 1) / n), n = 2^floor(log2 H)), powers of two and not;
 *   - loom_softmax_ext_alibi: softmax(s x + slope(h) m), m = -|distance| or -inf, F32 and
 *     F16 masks, causal and symmetric (encoder) masks;
 *   - loom_sdpa_opts with max_bias: flash attention (prompt blocks, decode with L split
 *     in chunks, 2 and 3 threads bit-identical), the explicit nodes, and the fused
 *     one-query path, F32 and F16 K/V, grouped heads, with soft-capping;
 *   - the documented errors (max_bias negative, not finite, or without a mask).
 */
#include "nn_test_common.h"

static double slope64(double b, int h, int H) {
    int n = 1;
    while (n * 2 <= H) n *= 2;
    return h < n ? pow(2.0, -b * (h + 1) / n) : pow(2.0, -(b / 2.0) * (2 * (h - n) + 1) / n);
}

static void test_slopes(void) {
    const float bias[] = {8.0f, 8.0f, 8.0f, 8.0f, 8.0f, 4.5f, 16.0f};
    const int heads[] = {1, 8, 12, 32, 40, 6, 71};
    double worst = 0;
    for (size_t c = 0; c < sizeof heads / sizeof heads[0]; c++)
        for (int h = 0; h < heads[c]; h++) {
            double r = slope64(bias[c], h, heads[c]);
            double e = fabs(loom_alibi_slope(bias[c], h, heads[c]) - r) / r;
            if (e > worst) worst = e;
        }
    /* measured 9.7e-7 (71 heads, bias 16: powf of a rounded base to the 141st power) */
    CHECK_MSG(worst < 2e-6, "alibi slopes: max relative error %g", worst);
    CHECK(loom_alibi_slope(0.0f, 3, 8) == 1.0f);
}

/* mask [L, tpad]: token t at position L - T + t (causal) sees keys j <= its position, or
 * every key (symmetric: token t at position t, T == L); values -|pos - j| or -inf; one
 * hole (another sequence's cell) at key 1 of token 0. */
static float *alibi_mask(int L, int T, int64_t tpad, bool causal) {
    float *m = fmalloc((size_t)(L * tpad));
    for (int64_t t = 0; t < tpad; t++)
        for (int j = 0; j < L; j++) {
            const int p = causal ? L - T + (int)t : (int)t;
            const bool vis = t < T && (!causal || j <= p);
            m[t * L + j] = vis ? -(float)abs(p - j) : -INFINITY;
        }
    if (L > 3) m[1] = -INFINITY;
    return m;
}

static void test_softmax(int L, int T, int H, bool f16, bool causal, int nth) {
    loom_ctx *ctx = nn_ctx(nth, false);
    const float scale = 0.3f, bias = 8.0f;
    const size_t n = (size_t)L * T * H;
    float *x = fmalloc(n), *y = fmalloc(n), *m = alibi_mask(L, T, T, causal);
    fill_rnd(x, n, 4.0f);
    loom_tensor *tx = nn_f32(ctx, x, L, T, H, 1);
    loom_tensor *tm = f16 ? nn_f16(ctx, m, L, T, 1, 1) : nn_f32(ctx, m, L, T, 1, 1);
    loom_tensor *out = loom_softmax_ext_alibi(ctx, tx, tm, scale, bias);
    loom_status s = nn_run(ctx, out, y, n);
    CHECK_MSG(s == LOOM_OK, "softmax alibi: %s", loom_ctx_error(ctx));
    double worst = 0;
    for (int h = 0; h < H && !s; h++)
        for (int t = 0; t < T; t++) {
            const double sl = slope64(bias, h, H);
            double mx = -INFINITY, z = 0;
            const float *xr = x + ((size_t)h * T + t) * L, *mr = m + (size_t)t * L;
            for (int j = 0; j < L; j++)
                if (mr[j] != -INFINITY) mx = fmax(mx, (double)scale * xr[j] + sl * mr[j]);
            for (int j = 0; j < L; j++)
                if (mr[j] != -INFINITY) z += exp((double)scale * xr[j] + sl * mr[j] - mx);
            for (int j = 0; j < L; j++) {
                double r = mr[j] == -INFINITY ? 0.0 : exp((double)scale * xr[j] + sl * mr[j] - mx) / z;
                worst = fmax(worst, fabs(r - y[((size_t)h * T + t) * L + j]));
            }
        }
    /* measured 2e-8 .. 6.7e-8 (float exp and sums) */
    CHECK_MSG(worst < 2e-7, "softmax alibi L %d T %d H %d %s %s: max error %g", L, T, H, f16 ? "F16" : "F32",
              causal ? "causal" : "symmetric", worst);
    free(x), free(y), free(m);
    loom_ctx_free(ctx);
}

typedef struct alibi_case {
    int Dk, Dv, H, Hkv, T, L;
    loom_type kv; /* F32 or F16 */
    bool causal;
    float softcap;
} alibi_case;

/* float64 attention with per-head slopes times the mask (q, k, v: the stored values) */
static void ref_attn(const alibi_case *c, const float *q, const float *k, const float *v, const float *mask, float scale,
                     float bias, double *out) {
    double *s = dmalloc((size_t)c->L);
    for (int t = 0; t < c->T; t++)
        for (int h = 0; h < c->H; h++) {
            const int g = h / (c->H / c->Hkv);
            const double sl = slope64(bias, h, c->H);
            double mx = -INFINITY, sum = 0;
            for (int j = 0; j < c->L; j++) {
                const float m = mask[(size_t)t * c->L + j];
                double d = 0;
                for (int e = 0; e < c->Dk; e++)
                    d += (double)q[((size_t)t * c->H + h) * c->Dk + e] * k[((size_t)j * c->Hkv + g) * c->Dk + e];
                double x = scale * d;
                if (c->softcap > 0) x = c->softcap * tanh(x / c->softcap);
                s[j] = m == -INFINITY ? -INFINITY : x + sl * m;
                mx = fmax(mx, s[j]);
            }
            for (int j = 0; j < c->L; j++) sum += (s[j] = s[j] == -INFINITY ? 0.0 : exp(s[j] - mx));
            for (int d = 0; d < c->Dv; d++) {
                double acc = 0;
                for (int j = 0; j < c->L; j++) acc += s[j] * v[((size_t)j * c->Hkv + g) * c->Dv + d];
                out[((size_t)t * c->H + h) * c->Dv + d] = acc / sum;
            }
        }
    free(s);
}

static loom_tensor *kv_tensor(loom_ctx *ctx, loom_type t, float *data, int64_t ne0, int64_t ne1, int64_t ne2) {
    if (t == LOOM_TYPE_F16) {
        round_f16(data, (size_t)(ne0 * ne1 * ne2)); /* the reference sees the stored values */
        return nn_f16(ctx, data, ne0, ne1, ne2, 1);
    }
    return nn_f32(ctx, data, ne0, ne1, ne2, 1);
}

static float *run(const alibi_case *c, bool flash, int nth, const float *q, float *k, float *v, const float *mask,
                  float scale, float bias) {
    loom_ctx *ctx = nn_ctx(nth, flash);
    const size_t no = (size_t)c->Dv * c->H * c->T;
    float *out = fmalloc(no);
    loom_tensor *qt = nn_f32(ctx, q, c->Dk, c->H, c->T, 1);
    loom_tensor *kt = kv_tensor(ctx, c->kv, k, c->Dk, c->Hkv, c->L), *vt;
    if (flash) {
        vt = kv_tensor(ctx, c->kv, v, c->Dv, c->Hkv, c->L);
    } else { /* PermutedV [L, Dv, Hkv] */
        float *vp = fmalloc((size_t)c->L * c->Dv * c->Hkv);
        for (int j = 0; j < c->L; j++)
            for (int g = 0; g < c->Hkv; g++)
                for (int d = 0; d < c->Dv; d++)
                    vp[((size_t)g * c->Dv + d) * c->L + j] = v[((size_t)j * c->Hkv + g) * c->Dv + d];
        vt = kv_tensor(ctx, c->kv, vp, c->L, c->Dv, c->Hkv);
        for (int j = 0; j < c->L; j++) /* the stored values back for the reference */
            for (int g = 0; g < c->Hkv; g++)
                for (int d = 0; d < c->Dv; d++)
                    v[((size_t)j * c->Hkv + g) * c->Dv + d] = vp[((size_t)g * c->Dv + d) * c->L + j];
        free(vp);
    }
    const int64_t tpad = ((c->T + 63) / 64) * 64;
    loom_tensor *mt = flash ? nn_f16(ctx, mask, c->L, tpad, 1, 1) : nn_f32(ctx, mask, c->L, tpad, 1, 1);
    const loom_attn_opts o = {.softcap = c->softcap, .max_bias = bias};
    loom_tensor *y = loom_sdpa_opts(ctx, qt, kt, vt, mt, scale, &o);
    loom_status s = nn_run(ctx, y, out, no);
    CHECK_MSG(s == LOOM_OK, "sdpa alibi flash=%d: %s", flash, loom_ctx_error(ctx));
    loom_ctx_free(ctx);
    if (s) {
        free(out);
        return NULL;
    }
    return out;
}

static void test_attn(const alibi_case *c) {
    const size_t nq = (size_t)c->Dk * c->H * c->T, nk = (size_t)c->Dk * c->Hkv * c->L,
                 nv = (size_t)c->Dv * c->Hkv * c->L, no = (size_t)c->Dv * c->H * c->T;
    const float scale = 1.0f / sqrtf((float)c->Dk), bias = 8.0f;
    float *q = fmalloc(nq), *k = fmalloc(nk), *v = fmalloc(nv), *kk = fmalloc(nk), *vv = fmalloc(nv);
    fill_rnd(q, nq, 1.0f);
    fill_rnd(k, nk, 1.0f);
    fill_rnd(v, nv, 1.0f);
    float *mask = alibi_mask(c->L, c->T, ((c->T + 63) / 64) * 64, c->causal);
    float *res[3] = {NULL, NULL, NULL}; /* flash 2 threads, flash 3 threads, explicit */
    for (int i = 0; i < 3; i++) {
        memcpy(kk, k, nk * 4);
        memcpy(vv, v, nv * 4);
        res[i] = run(c, i < 2, i == 0 ? 2 : 3, q, kk, vv, mask, scale, bias);
    }
    /* kk / vv: the stored values; flash rounds q through k's vec_dot_type (F16 here) */
    double *ref = dmalloc(no), *refq = dmalloc(no);
    ref_attn(c, q, kk, vv, mask, scale, bias, ref);
    float *qr = fmalloc(nq);
    memcpy(qr, q, nq * 4);
    if (c->kv == LOOM_TYPE_F16) round_f16(qr, nq);
    ref_attn(c, qr, kk, vv, mask, scale, bias, refq);
    /* measured nmse (every ISA level): flash 7e-15 .. 3e-14 against refq (its F16 mask
     * holds distances below 2048 exactly); explicit nodes 7e-15 .. 1e-14 with F32 K/V,
     * 2e-8 .. 4.8e-8 with F16 K/V (an F32 q against F16 keys) */
    const double tol = c->kv == LOOM_TYPE_F32 ? 1e-13 : 2e-7;
    if (res[0]) {
        double e = nmse(res[0], refq, no);
        CHECK_MSG(e <= 1e-13, "flash alibi %s T=%d L=%d H=%d/%d cap %g: nmse %g", loom_type_name(c->kv), c->T, c->L,
                  c->H, c->Hkv, (double)c->softcap, e);
    }
    if (res[0] && res[1]) CHECK_MSG(memcmp(res[0], res[1], no * 4) == 0, "flash alibi: 2 vs 3 threads differ");
    if (res[2]) {
        double e = nmse(res[2], ref, no);
        CHECK_MSG(e <= tol, "sdpa alibi %s T=%d L=%d H=%d/%d cap %g: nmse %g", loom_type_name(c->kv), c->T, c->L, c->H,
                  c->Hkv, (double)c->softcap, e);
    }
    for (int i = 0; i < 3; i++) free(res[i]);
    free(q), free(k), free(v), free(kk), free(vv), free(mask), free(ref), free(refq), free(qr);
}

static void test_errors(void) {
    float d[64 * 8] = {0};
    const float bad[3] = {-1.0f, NAN, INFINITY};
    for (int i = 0; i < 4; i++)
        for (int which = 0; which < 3; which++) { /* sdpa_opts, flash_attn_opts, softmax_ext_alibi */
            loom_ctx *ctx = nn_ctx(1, true);
            loom_tensor *q = nn_f32(ctx, d, 16, 4, 2, 1), *k = nn_f32(ctx, d, 16, 2, 8, 1),
                        *v = nn_f32(ctx, d, 16, 2, 8, 1);
            loom_tensor *m = i < 3 ? nn_f32(ctx, d, 8, 64, 1, 1) : NULL; /* case 3: a bias without a mask */
            loom_attn_opts o = {.max_bias = i < 3 ? bad[i] : 8.0f};
            loom_tensor *y;
            if (which == 0) y = loom_sdpa_opts(ctx, q, k, v, m, 0.25f, &o);
            else if (which == 1)
                y = loom_flash_attn_opts(ctx, loom_permute(ctx, q, 0, 2, 1, 3), loom_permute(ctx, k, 0, 2, 1, 3),
                                         loom_permute(ctx, v, 0, 2, 1, 3), m, 0.25f, &o);
            else y = loom_softmax_ext_alibi(ctx, nn_f32(ctx, d, 8, 4, 2, 1), m, 1.0f, o.max_bias);
            CHECK_MSG(loom_tensor_is_poison(y) && loom_ctx_status(ctx) == LOOM_ERR_INVALID_ARG &&
                          strstr(loom_ctx_error(ctx), "max_bias"),
                      "case %d, constructor %d: %s (%s)", i, which, loom_status_name(loom_ctx_status(ctx)),
                      loom_ctx_error(ctx));
            loom_ctx_free(ctx);
        }
}

int main(void) {
    test_slopes();
    test_softmax(40, 5, 12, false, true, 1);
    test_softmax(40, 5, 12, true, true, 2);
    test_softmax(33, 33, 8, false, false, 2);
    test_softmax(300, 1, 6, true, true, 3);
    const alibi_case cases[] = {
        {64, 64, 12, 12, 1, 70, LOOM_TYPE_F32, true, 0.0f},   /* decode (fused one-query path) */
        {64, 64, 12, 4, 1, 700, LOOM_TYPE_F16, true, 0.0f},   /* decode, L split, grouped heads */
        {64, 48, 8, 2, 5, 133, LOOM_TYPE_F32, true, 0.0f},    /* short prompt */
        {64, 64, 16, 2, 70, 150, LOOM_TYPE_F16, true, 0.0f},  /* prompt blocks, G 8 */
        {32, 32, 6, 6, 40, 40, LOOM_TYPE_F32, false, 0.0f},   /* encoder: symmetric, not a power of two */
        {64, 64, 12, 3, 30, 1030, LOOM_TYPE_F16, true, 0.0f}, /* long cache split in chunks */
        {64, 64, 4, 2, 5, 133, LOOM_TYPE_F32, true, 0.4f},    /* with soft-capping */
        {64, 64, 12, 12, 1, 90, LOOM_TYPE_F16, true, 0.5f},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) test_attn(&cases[i]);
    test_errors();
    return test_finish("test_cpu_ops_alibi");
}
