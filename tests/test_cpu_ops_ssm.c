/* The recurrent-layer ops (loom_softplus, loom_ssm_conv, loom_gated_delta, loom_ssm_scan,
 * loom_rwkv_wkv6, loom_rwkv_wkv7, and the xIELU activation) on the CPU
 * engine against float64 references written here: several state slots, tokens of the
 * slots interleaved, a slot without tokens (its state must come back unchanged), one and
 * two threads, GQA-style head sharing, and the errors (shapes, a token's slot out of
 * range). */
#include "nn_test_common.h"

static void test_softplus(int nth) {
    loom_ctx *ctx = nn_ctx(nth, false);
    const int64_t n = 37;
    float x[37];
    for (int i = 0; i < n; i++) x[i] = (float)(i - 18) * 1.7f; /* -30.6 .. 30.6: both branches */
    int64_t ne[1] = {n};
    loom_tensor *y = loom_softplus(ctx, loom_from_f32(loom_ctx_input(ctx), x, (size_t)n, 1, ne));
    float out[37];
    CHECK(nn_run(ctx, y, out, (size_t)n) == LOOM_OK);
    double worst = 0;
    for (int i = 0; i < n; i++) {
        double r = x[i] > 20.0f ? (double)x[i] : log1p(exp((double)x[i]));
        /* relative above 1, absolute below (log(1 + e^x) in float loses e^x < 6e-8) */
        double e = fabs(out[i] - r) / fmax(fabs(r), 1.0);
        if (e > worst) worst = e;
    }
    CHECK_MSG(worst < 2e-6, "softplus rel error %g", worst);
    loom_ctx_free(ctx);
}

/* e^x against float64 over [-80, 80] on a strided (transposed) view, and its type error */
static void test_exp(int nth) {
    loom_ctx *ctx = nn_ctx(nth, false);
    enum { R = 6, C = 7 };
    float x[R * C];
    for (int i = 0; i < R * C; i++) x[i] = -80.0f + 160.0f * (float)i / (R * C - 1);
    int64_t ne[2] = {C, R};
    loom_tensor *xt = loom_transpose(ctx, loom_from_f32(loom_ctx_input(ctx), x, R * C, 2, ne)); /* [R, C] */
    loom_tensor *y = loom_exp(ctx, xt);
    float out[R * C];
    CHECK(nn_run(ctx, y, out, R * C) == LOOM_OK);
    double worst = 0;
    for (int c = 0; c < C; c++)
        for (int r = 0; r < R; r++) {
            const double ref = exp((double)x[r * C + c]);
            const double e = fabs(out[c * R + r] - ref) / ref;
            if (e > worst) worst = e;
        }
    CHECK_MSG(worst < 1e-6, "exp rel error %g", worst);
    int64_t n1[1] = {4};
    static const int32_t ints[4] = {1, 2, 3, 4};
    CHECK(loom_tensor_is_poison(loom_exp(ctx, loom_from_i32(loom_ctx_input(ctx), ints, 4, 1, n1))));
    CHECK(loom_ctx_status(ctx) == LOOM_ERR_TYPE);
    loom_ctx_free(ctx);
}

/* xIELU against float64 with the parameters transformed as ggml_xielu does */
static void test_xielu(int nth) {
    loom_ctx *ctx = nn_ctx(nth, false);
    enum { N = 41 };
    float x[N];
    for (int i = 0; i < N; i++) x[i] = (float)(i - 25) * 0.37f; /* both branches, the eps clamp */
    const float an0 = 0.8f, ap0 = -0.3f, beta = 0.5f, eps = -1e-6f;
    int64_t ne[1] = {N};
    loom_tensor *y = loom_xielu(ctx, loom_from_f32(loom_ctx_input(ctx), x, N, 1, ne), an0, ap0, beta, eps);
    float out[N];
    CHECK(nn_run(ctx, y, out, N) == LOOM_OK);
    const double an = beta + log1p(exp((double)an0)), ap = log1p(exp((double)ap0));
    double ref[N];
    for (int i = 0; i < N; i++) {
        const double v = x[i];
        ref[i] = v > 0 ? ap * v * v + beta * v : (expm1(fmin(v, (double)eps)) - v) * an + beta * v;
    }
    CHECK_MSG(max_rel(out, ref, N) < 1e-6, "xielu (%d threads): max rel %g", nth, max_rel(out, ref, N));
    loom_ctx_free(ctx);
    ctx = nn_ctx(1, false);
    CHECK(loom_tensor_is_poison(loom_xielu(ctx, loom_from_f32(loom_ctx_input(ctx), x, N, 1, ne), NAN, ap0, beta, eps)));
    CHECK(loom_ctx_status(ctx) == LOOM_ERR_INVALID_ARG);
    loom_ctx_free(ctx);
}

/* slots of the tokens: interleaved, slot 3 never used */
static const int32_t k_seq[9] = {0, 1, 0, 2, 0, 1, 1, 0, 2};

/* wtype: the kernel's type (F32, F16 or BF16: the reference takes the rounded taps) */
static void test_conv(int nth, loom_type wtype) {
    enum { C = 7, T = 9, K = 4, S = 4 };
    float x[C * T], w[K * C], st[(K - 1) * C * S];
    uint16_t w16[K * C];
    fill_rnd(x, C * T, 1.0f);
    fill_rnd(w, K * C, 1.0f);
    fill_rnd(st, (K - 1) * C * S, 1.0f);
    for (int i = 0; i < K * C && wtype != LOOM_TYPE_F32; i++) {
        w16[i] = wtype == LOOM_TYPE_F16 ? loom_fp32_to_fp16(w[i]) : loom_fp32_to_bf16(w[i]);
        w[i] = wtype == LOOM_TYPE_F16 ? loom_fp16_to_fp32(w16[i]) : loom_bf16_to_fp32(w16[i]);
    }
    /* reference */
    double y[C * T], ns[(K - 1) * C * S];
    for (int i = 0; i < (K - 1) * C * S; i++) ns[i] = st[i];
    for (int t = 0; t < T; t++)
        for (int c = 0; c < C; c++) {
            double *h = ns + (k_seq[t] * C + c) * (K - 1), win[K];
            for (int k = 0; k < K - 1; k++) win[k] = h[k];
            win[K - 1] = x[t * C + c];
            double acc = 0;
            for (int k = 0; k < K; k++) acc += (double)w[c * K + k] * win[k];
            y[t * C + c] = acc;
            for (int k = 0; k < K - 1; k++) h[k] = win[k + 1];
        }
    loom_ctx *ctx = nn_ctx(nth, false);
    loom_ctx *in = loom_ctx_input(ctx);
    int64_t nx[2] = {C, T}, nw[2] = {K, C}, ns2[2] = {(K - 1) * C, S}, nq[1] = {T};
    loom_tensor *wt = wtype == LOOM_TYPE_F32 ? loom_from_f32(in, w, K * C, 2, nw)
                                             : loom_from_bytes(in, wtype, w16, sizeof w16, 2, nw);
    loom_tensor *r = loom_ssm_conv(ctx, loom_from_f32(in, x, C * T, 2, nx), wt,
                                   loom_from_f32(in, st, (K - 1) * C * S, 2, ns2), loom_from_i32(in, k_seq, T, 1, nq));
    CHECK_EQ_INT(loom_tensor_ne(r, 0), C);
    CHECK_EQ_INT(loom_tensor_ne(r, 1), T + (K - 1) * S);
    float out[C * (T + (K - 1) * S)];
    CHECK(nn_run(ctx, r, out, sizeof out / sizeof out[0]) == LOOM_OK);
    double ref[C * (T + (K - 1) * S)];
    for (int i = 0; i < C * T; i++) ref[i] = y[i];
    for (int i = 0; i < (K - 1) * C * S; i++) ref[C * T + i] = ns[i];
    CHECK_MSG(max_rel(out, ref, sizeof ref / sizeof ref[0]) < 1e-6, "ssm_conv (%s taps, %d threads): max rel %g",
              loom_type_name(wtype), nth, max_rel(out, ref, sizeof ref / sizeof ref[0]));
    /* slot 3 had no token: its state is the input's, bit for bit */
    CHECK(!memcmp(out + C * T + 3 * (K - 1) * C, st + 3 * (K - 1) * C, (K - 1) * C * sizeof(float)));
    loom_ctx_free(ctx);
}

/* per_key: g [Dk, Hv, T], a log decay per key dim (Kimi's KDA) */
static void test_delta(int nth, bool per_key) {
    enum { Dk = 5, Dv = 4, Hk = 2, Hv = 4, T = 9, S = 4 };
    const float eps = 1e-6f;
    float qk[Dk * 2 * Hk * T], v[Dv * Hv * T], g[Dk * Hv * T], b[Hv * T], st[Dv * Dk * Hv * S];
    fill_rnd(qk, sizeof qk / sizeof qk[0], 1.0f);
    fill_rnd(v, sizeof v / sizeof v[0], 1.0f);
    fill_rnd(st, sizeof st / sizeof st[0], 0.5f);
    for (int i = 0; i < Dk * Hv * T; i++) g[i] = -0.5f * (float)rnd_u(); /* log decay in (-0.5, 0] */
    for (int i = 0; i < Hv * T; i++) b[i] = (float)rnd_u();              /* beta in [0, 1) */
    qk[0] = qk[1] = qk[2] = qk[3] = qk[4] = 0.0f; /* a zero query: the eps branch */
    double M[Dv * Dk * Hv * S], out[Dv * Hv * T];
    for (int i = 0; i < Dv * Dk * Hv * S; i++) M[i] = st[i];
    for (int t = 0; t < T; t++)
        for (int h = 0; h < Hv; h++) {
            const int s = k_seq[t], hk = h % Hk;
            double q[Dk], k[Dk], nq = 0, nk = 0;
            for (int i = 0; i < Dk; i++) {
                q[i] = qk[(t * 2 * Hk + hk) * Dk + i];
                k[i] = qk[(t * 2 * Hk + Hk + hk) * Dk + i];
                nq += q[i] * q[i];
                nk += k[i] * k[i];
            }
            nq = 1.0 / fmax(sqrt(nq), eps);
            nk = 1.0 / fmax(sqrt(nk), eps);
            double *m = M + (s * Hv + h) * Dv * Dk;
            const double beta = b[t * Hv + h];
            for (int j = 0; j < Dv; j++) {
                double mk = 0;
                for (int i = 0; i < Dk; i++) {
                    m[j * Dk + i] *= exp((double)(per_key ? g[(t * Hv + h) * Dk + i] : g[t * Hv + h]));
                    mk += m[j * Dk + i] * k[i] * nk;
                }
                const double d = (v[(t * Hv + h) * Dv + j] - mk) * beta;
                double mq = 0;
                for (int i = 0; i < Dk; i++) {
                    m[j * Dk + i] += d * k[i] * nk;
                    mq += m[j * Dk + i] * q[i] * nq;
                }
                out[(t * Hv + h) * Dv + j] = mq / sqrt((double)Dk);
            }
        }
    loom_ctx *ctx = nn_ctx(nth, false);
    loom_ctx *in = loom_ctx_input(ctx);
    int64_t nqk[3] = {Dk, 2 * Hk, T}, nv[3] = {Dv, Hv, T}, ng[2] = {Hv, T}, nst[2] = {Dv * Dk * Hv, S}, nq1[1] = {T};
    int64_t ngk[3] = {Dk, Hv, T};
    loom_tensor *gt = per_key ? loom_from_f32(in, g, Dk * Hv * T, 3, ngk) : loom_from_f32(in, g, Hv * T, 2, ng);
    loom_tensor *r = loom_gated_delta(ctx, loom_from_f32(in, qk, sizeof qk / 4, 3, nqk),
                                      loom_from_f32(in, v, sizeof v / 4, 3, nv), gt,
                                      loom_from_f32(in, b, Hv * T, 2, ng), loom_from_f32(in, st, sizeof st / 4, 2, nst),
                                      loom_from_i32(in, k_seq, T, 1, nq1), eps);
    enum { N = Dv * Hv * (T + Dk * S) };
    float got[N];
    CHECK(nn_run(ctx, r, got, N) == LOOM_OK);
    double ref[N];
    for (int i = 0; i < Dv * Hv * T; i++) ref[i] = out[i];
    for (int i = 0; i < Dv * Dk * Hv * S; i++) ref[Dv * Hv * T + i] = M[i];
    CHECK_MSG(max_rel(got, ref, N) < 2e-6, "gated_delta (%s, %d threads): max rel %g", per_key ? "per key" : "per head",
              nth, max_rel(got, ref, N));
    CHECK(!memcmp(got + Dv * Hv * T + 3 * Dv * Dk * Hv, st + 3 * Dv * Dk * Hv, Dv * Dk * Hv * sizeof(float)));
    loom_ctx_free(ctx);
}

/* Mamba-2 scan: 4 heads in 2 groups (head h reads group h / 2), slots interleaved;
 * per_state: A [N, H] (Mamba-1's one rate per head and state) */
static void test_scan(int nth, bool per_state) {
    enum { Dh = 3, H = 4, G = 2, N = 5, T = 9, S = 4 };
    float x[Dh * H * T], dt[H * T], A[N * H], bc[N * 2 * G * T], st[N * Dh * H * S];
    fill_rnd(x, sizeof x / sizeof x[0], 1.0f);
    fill_rnd(dt, sizeof dt / sizeof dt[0], 3.0f);
    dt[5] = 25.0f; /* the softplus's linear branch */
    for (int i = 0; i < N * H; i++) A[i] = -(float)(0.2 + 2.0 * rnd_u());
    fill_rnd(bc, sizeof bc / sizeof bc[0], 1.0f);
    fill_rnd(st, sizeof st / sizeof st[0], 0.5f);
    double y[Dh * H * T], ns[N * Dh * H * S];
    for (int i = 0; i < N * Dh * H * S; i++) ns[i] = st[i];
    for (int t = 0; t < T; t++)
        for (int h = 0; h < H; h++) {
            const int g = h / (H / G), s = k_seq[t];
            const double d = dt[t * H + h] > 20.0f ? dt[t * H + h] : log1p(exp((double)dt[t * H + h]));
            for (int i = 0; i < Dh; i++) {
                double *si = ns + ((s * H + h) * Dh + i) * N, acc = 0;
                for (int n = 0; n < N; n++) {
                    const double dA = exp(d * (per_state ? A[h * N + n] : A[h]));
                    si[n] = si[n] * dA + (double)bc[(t * 2 * G + g) * N + n] * x[(t * H + h) * Dh + i] * d;
                    acc += si[n] * bc[(t * 2 * G + G + g) * N + n];
                }
                y[(t * H + h) * Dh + i] = acc;
            }
        }
    loom_ctx *ctx = nn_ctx(nth, false);
    loom_ctx *in = loom_ctx_input(ctx);
    int64_t nx[3] = {Dh, H, T}, ndt[2] = {H, T}, na[2] = {per_state ? N : 1, H}, nbc[3] = {N, 2 * G, T}, nst[2] = {N * Dh * H, S},
            nq[1] = {T};
    loom_tensor *r = loom_ssm_scan(ctx, loom_from_f32(in, x, Dh * H * T, 3, nx), loom_from_f32(in, dt, H * T, 2, ndt),
                                   loom_from_f32(in, A, per_state ? N * H : H, 2, na),
                                   loom_from_f32(in, bc, N * 2 * G * T, 3, nbc),
                                   loom_from_f32(in, st, N * Dh * H * S, 2, nst), loom_from_i32(in, k_seq, T, 1, nq));
    CHECK_EQ_INT(loom_tensor_ne(r, 0), Dh * H);
    CHECK_EQ_INT(loom_tensor_ne(r, 1), T + N * S);
    enum { NOUT = Dh * H * (T + N * S) };
    float out[NOUT];
    CHECK(nn_run(ctx, r, out, NOUT) == LOOM_OK);
    double ref[NOUT];
    for (int i = 0; i < Dh * H * T; i++) ref[i] = y[i];
    for (int i = 0; i < N * Dh * H * S; i++) ref[Dh * H * T + i] = ns[i];
    CHECK_MSG(max_rel(out, ref, NOUT) < 5e-7, "ssm_scan (%d threads, A %s): max rel %g", nth,
              per_state ? "[N, H]" : "[H]", max_rel(out, ref, NOUT));
    CHECK(!memcmp(out + Dh * H * T + 3 * N * Dh * H, st + 3 * N * Dh * H, N * Dh * H * sizeof(float)));
    loom_ctx_free(ctx);
    if (per_state) return;
    /* shape errors: an odd B|C row count, heads not a multiple of the groups, A of 3 values */
    ctx = nn_ctx(1, false);
    in = loom_ctx_input(ctx);
    int64_t nbc3[3] = {N, 3, T}, na3[1] = {3};
    CHECK(loom_tensor_is_poison(loom_ssm_scan(ctx, loom_from_f32(in, x, Dh * H * T, 3, nx),
                                              loom_from_f32(in, dt, H * T, 2, ndt), loom_from_f32(in, A, H, 2, na),
                                              loom_from_f32(in, bc, N * 3 * T, 3, nbc3),
                                              loom_from_f32(in, st, N * Dh * H * S, 2, nst),
                                              loom_from_i32(in, k_seq, T, 1, nq))));
    CHECK(loom_ctx_status(ctx) == LOOM_ERR_SHAPE);
    loom_ctx_free(ctx);
    ctx = nn_ctx(1, false);
    in = loom_ctx_input(ctx);
    CHECK(loom_tensor_is_poison(loom_ssm_scan(ctx, loom_from_f32(in, x, Dh * H * T, 3, nx),
                                              loom_from_f32(in, dt, H * T, 2, ndt), loom_from_f32(in, A, 3, 1, na3),
                                              loom_from_f32(in, bc, N * 2 * G * T, 3, nbc),
                                              loom_from_f32(in, st, N * Dh * H * S, 2, nst),
                                              loom_from_i32(in, k_seq, T, 1, nq))));
    CHECK(loom_ctx_status(ctx) == LOOM_ERR_SHAPE);
    loom_ctx_free(ctx);
}

/* RWKV-7: 3 heads of 4, slots interleaved, decays both near 1 and small */
static void test_wkv7(int nth) {
    enum { D = 4, H = 3, T = 9, S = 4, E = D * H };
    float in6[6][E * T], st[D * D * H * S];
    for (int i = 0; i < 6; i++) fill_rnd(in6[i], E * T, 1.0f);
    for (int i = 0; i < E * T; i++) in6[1][i] = -0.6065306f / (1.0f + expf(-2.0f * in6[1][i])); /* log decay */
    fill_rnd(st, sizeof st / sizeof st[0], 0.5f);
    double y[E * T], M[D * D * H * S];
    for (int i = 0; i < D * D * H * S; i++) M[i] = st[i];
    for (int t = 0; t < T; t++)
        for (int h = 0; h < H; h++) {
            const float *r = in6[0] + t * E + h * D, *w = in6[1] + t * E + h * D, *k = in6[2] + t * E + h * D;
            const float *v = in6[3] + t * E + h * D, *a = in6[4] + t * E + h * D, *b = in6[5] + t * E + h * D;
            double *m = M + (k_seq[t] * H + h) * D * D;
            for (int i = 0; i < D; i++) {
                double sa = 0, acc = 0;
                for (int j = 0; j < D; j++) sa += (double)a[j] * m[i * D + j];
                for (int j = 0; j < D; j++) {
                    m[i * D + j] = m[i * D + j] * exp((double)w[j]) + (double)v[i] * k[j] + sa * b[j];
                    acc += m[i * D + j] * r[j];
                }
                y[t * E + h * D + i] = acc;
            }
        }
    loom_ctx *ctx = nn_ctx(nth, false);
    loom_ctx *in = loom_ctx_input(ctx);
    int64_t n3[3] = {D, H, T}, nst[2] = {D * D * H, S}, nq[1] = {T};
    loom_tensor *x6[6];
    for (int i = 0; i < 6; i++) x6[i] = loom_from_f32(in, in6[i], E * T, 3, n3);
    loom_tensor *res = loom_rwkv_wkv7(ctx, x6[0], x6[1], x6[2], x6[3], x6[4], x6[5],
                                      loom_from_f32(in, st, D * D * H * S, 2, nst), loom_from_i32(in, k_seq, T, 1, nq));
    CHECK_EQ_INT(loom_tensor_ne(res, 0), E);
    CHECK_EQ_INT(loom_tensor_ne(res, 1), T + D * S);
    enum { NOUT = E * (T + D * S) };
    float out[NOUT];
    CHECK(nn_run(ctx, res, out, NOUT) == LOOM_OK);
    double ref[NOUT];
    for (int i = 0; i < E * T; i++) ref[i] = y[i];
    for (int i = 0; i < D * D * H * S; i++) ref[E * T + i] = M[i];
    CHECK_MSG(max_rel(out, ref, NOUT) < 1e-6, "rwkv_wkv7 (%d threads): max rel %g", nth, max_rel(out, ref, NOUT));
    CHECK(!memcmp(out + E * T + 3 * D * D * H, st + 3 * D * D * H, D * D * H * sizeof(float)));
    loom_ctx_free(ctx);
    /* a k of another head count */
    ctx = nn_ctx(1, false);
    in = loom_ctx_input(ctx);
    int64_t n3b[3] = {D, 2, T};
    CHECK(loom_tensor_is_poison(loom_rwkv_wkv7(ctx, loom_from_f32(in, in6[0], E * T, 3, n3),
                                               loom_from_f32(in, in6[1], E * T, 3, n3),
                                               loom_from_f32(in, in6[2], D * 2 * T, 3, n3b),
                                               loom_from_f32(in, in6[3], E * T, 3, n3),
                                               loom_from_f32(in, in6[4], E * T, 3, n3),
                                               loom_from_f32(in, in6[5], E * T, 3, n3),
                                               loom_from_f32(in, st, D * D * H * S, 2, nst),
                                               loom_from_i32(in, k_seq, T, 1, nq))));
    CHECK(loom_ctx_status(ctx) == LOOM_ERR_SHAPE);
    loom_ctx_free(ctx);
}

/* RWKV-6: 3 heads of 4, slots interleaved, the bonus u per head */
static void test_wkv6(int nth) {
    enum { D = 4, H = 3, T = 9, S = 4, E = D * H };
    float kvrw[4][E * T], u[E], st[D * D * H * S];
    for (int i = 0; i < 4; i++) fill_rnd(kvrw[i], E * T, 1.0f);
    fill_rnd(u, E, 1.0f);
    fill_rnd(st, sizeof st / sizeof st[0], 0.5f);
    double y[E * T], M[D * D * H * S];
    for (int i = 0; i < D * D * H * S; i++) M[i] = st[i];
    for (int t = 0; t < T; t++)
        for (int h = 0; h < H; h++) {
            const float *k = kvrw[0] + t * E + h * D, *v = kvrw[1] + t * E + h * D, *r = kvrw[2] + t * E + h * D;
            const float *w = kvrw[3] + t * E + h * D;
            double *m = M + (k_seq[t] * H + h) * D * D;
            for (int j = 0; j < D; j++) {
                double acc = 0;
                for (int i = 0; i < D; i++) acc += (double)r[i] * ((double)u[h * D + i] * k[i] * v[j] + m[i * D + j]);
                y[t * E + h * D + j] = acc;
            }
            for (int i = 0; i < D; i++)
                for (int j = 0; j < D; j++)
                    m[i * D + j] = m[i * D + j] * exp(-exp((double)w[i])) + (double)k[i] * v[j];
        }
    loom_ctx *ctx = nn_ctx(nth, false);
    loom_ctx *in = loom_ctx_input(ctx);
    int64_t n3[3] = {D, H, T}, nu[2] = {D, H}, nst[2] = {D * D * H, S}, nq[1] = {T};
    loom_tensor *x4[4];
    for (int i = 0; i < 4; i++) x4[i] = loom_from_f32(in, kvrw[i], E * T, 3, n3);
    loom_tensor *res = loom_rwkv_wkv6(ctx, x4[0], x4[1], x4[2], loom_from_f32(in, u, E, 2, nu), x4[3],
                                      loom_from_f32(in, st, D * D * H * S, 2, nst), loom_from_i32(in, k_seq, T, 1, nq));
    enum { NOUT = E * (T + D * S) };
    float out[NOUT];
    CHECK(nn_run(ctx, res, out, NOUT) == LOOM_OK);
    double ref[NOUT];
    for (int i = 0; i < E * T; i++) ref[i] = y[i];
    for (int i = 0; i < D * D * H * S; i++) ref[E * T + i] = M[i];
    CHECK_MSG(max_rel(out, ref, NOUT) < 1e-6, "rwkv_wkv6 (%d threads): max rel %g", nth, max_rel(out, ref, NOUT));
    CHECK(!memcmp(out + E * T + 3 * D * D * H, st + 3 * D * D * H, D * D * H * sizeof(float)));
    loom_ctx_free(ctx);
    /* a bonus of another size */
    ctx = nn_ctx(1, false);
    in = loom_ctx_input(ctx);
    int64_t nu1[1] = {D};
    CHECK(loom_tensor_is_poison(loom_rwkv_wkv6(ctx, loom_from_f32(in, kvrw[0], E * T, 3, n3),
                                               loom_from_f32(in, kvrw[1], E * T, 3, n3),
                                               loom_from_f32(in, kvrw[2], E * T, 3, n3), loom_from_f32(in, u, D, 1, nu1),
                                               loom_from_f32(in, kvrw[3], E * T, 3, n3),
                                               loom_from_f32(in, st, D * D * H * S, 2, nst),
                                               loom_from_i32(in, k_seq, T, 1, nq))));
    CHECK(loom_ctx_status(ctx) == LOOM_ERR_SHAPE);
    loom_ctx_free(ctx);
}

/* ssm_conv reading its state through a view with a wider slot stride (RWKV's token
 * shifts: two [C] states per slot, the second one viewed): K = 2, taps (1, 0) give the
 * previous token of the same slot */
static void test_conv_strided(void) {
    enum { C = 5, T = 9, S = 4 };
    float x[C * T], st[2 * C * S], w[2 * C];
    fill_rnd(x, C * T, 1.0f);
    fill_rnd(st, 2 * C * S, 1.0f);
    for (int c = 0; c < C; c++) {
        w[2 * c] = 1.0f;
        w[2 * c + 1] = 0.0f;
    }
    float want[C * T], last[C * S];
    for (int s = 0; s < S; s++) memcpy(last + s * C, st + s * 2 * C + C, C * sizeof(float));
    for (int t = 0; t < T; t++) {
        memcpy(want + t * C, last + k_seq[t] * C, C * sizeof(float));
        memcpy(last + k_seq[t] * C, x + t * C, C * sizeof(float));
    }
    loom_ctx *ctx = nn_ctx(1, false);
    loom_ctx *in = loom_ctx_input(ctx);
    int64_t nx[2] = {C, T}, nw[2] = {2, C}, nfull[2] = {2 * C, S}, nq[1] = {T};
    loom_tensor *full = loom_from_f32(in, st, 2 * C * S, 2, nfull);
    int64_t va[3] = {C, 2 * C * (int64_t)sizeof(float), S};
    loom_tensor *r = loom_ssm_conv(ctx, loom_from_f32(in, x, C * T, 2, nx), loom_from_f32(in, w, 2 * C, 2, nw),
                                   loom_view(ctx, full, C * sizeof(float), 3, va), loom_from_i32(in, k_seq, T, 1, nq));
    float out[C * (T + S)];
    CHECK(nn_run(ctx, r, out, C * (T + S)) == LOOM_OK);
    CHECK_MSG(!memcmp(out, want, sizeof want), "token shift through a strided state view");
    CHECK(!memcmp(out + C * T, last, sizeof last));
    loom_ctx_free(ctx);
}

static void test_errors(void) {
    {   /* gated delta: g neither [Hv, T] nor [Dk, Hv, T] (Dk + 1 rows) */
        loom_ctx *c = nn_ctx(1, false);
        loom_ctx *ci = loom_ctx_input(c);
        static float zz[256];
        int64_t nqk[3] = {4, 2, 3}, nv[3] = {4, 1, 3}, ng[3] = {5, 1, 3}, nb[2] = {1, 3}, ns[2] = {16, 1}, nq1[1] = {3};
        static const int32_t sq0[3] = {0, 0, 0};
        loom_tensor *r = loom_gated_delta(c, loom_from_f32(ci, zz, 24, 3, nqk), loom_from_f32(ci, zz, 12, 3, nv),
                                          loom_from_f32(ci, zz, 15, 3, ng), loom_from_f32(ci, zz, 3, 2, nb),
                                          loom_from_f32(ci, zz, 16, 2, ns), loom_from_i32(ci, sq0, 3, 1, nq1), 1e-6f);
        CHECK(loom_tensor_is_poison(r) && loom_ctx_status(c) == LOOM_ERR_SHAPE);
        CHECK(strstr(*loom_ctx_error(c) ? loom_ctx_error(c) : "", "[Dk = 4, Hv, T]") != NULL);
        loom_ctx_free(c);
    }
    loom_ctx *ctx = nn_ctx(1, false);
    loom_ctx *in = loom_ctx_input(ctx);
    int64_t nx[2] = {4, 3}, nw[2] = {3, 5}, nst[2] = {8, 2}, nq[1] = {3};
    float z[64] = {0};
    int32_t bad[3] = {0, 2, 1}; /* slot 2 of 2 */
    loom_tensor *x = loom_from_f32(in, z, 12, 2, nx), *w = loom_from_f32(in, z, 15, 2, nw);
    loom_tensor *st = loom_from_f32(in, z, 16, 2, nst), *sq = loom_from_i32(in, bad, 3, 1, nq);
    CHECK(loom_tensor_is_poison(loom_ssm_conv(ctx, x, w, st, sq))); /* kernel for 5 channels, x has 4 */
    CHECK(loom_ctx_status(ctx) == LOOM_ERR_SHAPE);
    loom_ctx_free(ctx);
    /* a kernel wider than 16 taps (a quantized one cannot be narrower than 32) */
    ctx = nn_ctx(1, false);
    in = loom_ctx_input(ctx);
    int64_t nx17[2] = {4, 3}, nw17[2] = {17, 4}, nst17[2] = {64, 1};
    static float z68[68 * 1];
    CHECK(loom_tensor_is_poison(loom_ssm_conv(ctx, loom_from_f32(in, z, 12, 2, nx17), loom_from_f32(in, z68, 68, 2, nw17),
                                              loom_from_f32(in, z, 64, 2, nst17), loom_from_i32(in, bad, 3, 1, nq))));
    CHECK(loom_ctx_status(ctx) == LOOM_ERR_SHAPE);
    loom_ctx_free(ctx);
    /* a slot out of range is a compute error */
    ctx = nn_ctx(1, false);
    in = loom_ctx_input(ctx);
    int64_t nw2[2] = {3, 4};
    x = loom_from_f32(in, z, 12, 2, nx);
    w = loom_from_f32(in, z, 12, 2, nw2);
    st = loom_from_f32(in, z, 16, 2, nst);
    sq = loom_from_i32(in, bad, 3, 1, nq);
    loom_tensor *r = loom_ssm_conv(ctx, x, w, st, sq);
    float out[4 * 7];
    CHECK(nn_run(ctx, r, out, 28) == LOOM_ERR_INVALID_ARG);
    loom_ctx_free(ctx);
}

/* The in-place forms against the copy forms: the same outputs, bit for bit; the states
 * of the slots with a token updated where the state tensor holds them, equal to the copy
 * form's new states; the other slots untouched. 4 slots, tokens in slots 2 and 0 only. */
enum { IP_T = 5, IP_S = 4 };
static const int32_t k_ip_seq[IP_T] = {2, 0, 2, 2, 0};

typedef loom_tensor *(*ip_build)(loom_ctx *ctx, loom_tensor *state, loom_tensor *seq, bool ip);

static float g_ip_in[8][4096];

static loom_tensor *ip_in(loom_ctx *ctx, int i, int n, int nd, const int64_t *ne) {
    return loom_from_f32(loom_ctx_input(ctx), g_ip_in[i], (size_t)n, nd, ne);
}

static loom_tensor *ip_delta(loom_ctx *ctx, loom_tensor *st, loom_tensor *seq, bool ip) {
    const int64_t nqk[3] = {5, 4, IP_T}, nv[3] = {4, 4, IP_T}, ng[2] = {4, IP_T};
    loom_tensor *qk = ip_in(ctx, 0, 5 * 4 * IP_T, 3, nqk), *v = ip_in(ctx, 1, 16 * IP_T, 3, nv);
    loom_tensor *g = ip_in(ctx, 2, 4 * IP_T, 2, ng), *b = ip_in(ctx, 3, 4 * IP_T, 2, ng);
    return ip ? loom_gated_delta_inplace(ctx, qk, v, g, b, st, seq, 1e-6f) : loom_gated_delta(ctx, qk, v, g, b, st, seq, 1e-6f);
}

static loom_tensor *ip_scan(loom_ctx *ctx, loom_tensor *st, loom_tensor *seq, bool ip) {
    const int64_t nx[3] = {3, 4, IP_T}, ndt[2] = {4, IP_T}, na[2] = {6, 4}, nbc[3] = {6, 4, IP_T};
    loom_tensor *x = ip_in(ctx, 0, 12 * IP_T, 3, nx), *dt = ip_in(ctx, 1, 4 * IP_T, 2, ndt);
    loom_tensor *A = ip_in(ctx, 2, 24, 2, na), *bc = ip_in(ctx, 3, 24 * IP_T, 3, nbc);
    return ip ? loom_ssm_scan_inplace(ctx, x, dt, A, bc, st, seq) : loom_ssm_scan(ctx, x, dt, A, bc, st, seq);
}

static loom_tensor *ip_wkv7(loom_ctx *ctx, loom_tensor *st, loom_tensor *seq, bool ip) {
    const int64_t n3[3] = {4, 3, IP_T};
    loom_tensor *a[6];
    for (int i = 0; i < 6; i++) a[i] = ip_in(ctx, i, 12 * IP_T, 3, n3);
    return ip ? loom_rwkv_wkv7_inplace(ctx, a[0], a[1], a[2], a[3], a[4], a[5], st, seq)
              : loom_rwkv_wkv7(ctx, a[0], a[1], a[2], a[3], a[4], a[5], st, seq);
}

static loom_tensor *ip_wkv6(loom_ctx *ctx, loom_tensor *st, loom_tensor *seq, bool ip) {
    const int64_t n3[3] = {4, 3, IP_T}, nu[2] = {4, 3};
    loom_tensor *k = ip_in(ctx, 0, 12 * IP_T, 3, n3), *v = ip_in(ctx, 1, 12 * IP_T, 3, n3);
    loom_tensor *r = ip_in(ctx, 2, 12 * IP_T, 3, n3), *u = ip_in(ctx, 3, 12, 2, nu), *w = ip_in(ctx, 4, 12 * IP_T, 3, n3);
    return ip ? loom_rwkv_wkv6_inplace(ctx, k, v, r, u, w, st, seq) : loom_rwkv_wkv6(ctx, k, v, r, u, w, st, seq);
}

static void test_inplace(int nth) {
    static const struct {
        const char *name;
        ip_build build;
        int64_t per, rows; /* state floats per slot, output rows */
    } ops[4] = {{"gated_delta", ip_delta, 4 * 5 * 4, 16}, {"ssm_scan", ip_scan, 6 * 3 * 4, 12},
                {"rwkv_wkv7", ip_wkv7, 4 * 4 * 3, 12}, {"rwkv_wkv6", ip_wkv6, 4 * 4 * 3, 12}};
    for (int o = 0; o < 4; o++) {
        for (int i = 0; i < 8; i++) fill_rnd(g_ip_in[i], 4096, 0.5f);
        if (o == 0)
            for (int i = 0; i < 4 * IP_T; i++) g_ip_in[2][i] = -0.5f * (float)rnd_u(); /* log decay */
        if (o == 1)
            for (int i = 0; i < 24; i++) g_ip_in[2][i] = -(float)rnd_u(); /* A < 0 */
        const int64_t per = ops[o].per, rows = ops[o].rows;
        float st0[4 * 96];
        fill_rnd(st0, (size_t)(per * IP_S), 0.5f);
        float copy[16 * IP_T + 4 * 96], ipo[16 * IP_T], ips[4 * 96];
        const int64_t nst[2] = {per, IP_S}, nq[1] = {IP_T};
        loom_status sc, si;
        { /* the copy form */
            loom_ctx *ctx = nn_ctx(nth, false);
            loom_tensor *st = loom_from_f32(loom_ctx_input(ctx), st0, (size_t)(per * IP_S), 2, nst);
            loom_tensor *r = ops[o].build(ctx, st, loom_from_i32(loom_ctx_input(ctx), k_ip_seq, IP_T, 1, nq), false);
            sc = nn_run(ctx, r, copy, (size_t)(rows * IP_T + per * IP_S));
            loom_ctx_free(ctx);
        }
        { /* in place */
            loom_ctx *ctx = nn_ctx(nth, false);
            loom_tensor *st = loom_from_f32(loom_ctx_input(ctx), st0, (size_t)(per * IP_S), 2, nst);
            loom_tensor *r = ops[o].build(ctx, st, loom_from_i32(loom_ctx_input(ctx), k_ip_seq, IP_T, 1, nq), true);
            CHECK_EQ_INT(loom_tensor_ne(r, 1), IP_T);
            si = nn_run(ctx, r, ipo, (size_t)(rows * IP_T));
            if (!si) si = loom_tensor_read_f32(st, ips, (size_t)(per * IP_S));
            loom_ctx_free(ctx);
        }
        CHECK_MSG(sc == LOOM_OK && si == LOOM_OK, "%s in place (%d threads): %s / %s", ops[o].name, nth,
                  loom_status_name(sc), loom_status_name(si));
        if (sc || si) continue;
        CHECK_MSG(!memcmp(copy, ipo, (size_t)(rows * IP_T) * sizeof(float)), "%s in place: outputs differ", ops[o].name);
        for (int s = 0; s < IP_S; s++) {
            const float *want = s == 0 || s == 2 ? copy + rows * IP_T + s * per : st0 + s * per;
            CHECK_MSG(!memcmp(ips + s * per, want, (size_t)per * sizeof(float)), "%s in place: slot %d's state %s",
                      ops[o].name, s, s == 0 || s == 2 ? "differs from the copy form's" : "was touched");
        }
    }
    /* more slots than the in-place kernels list: a shape error */
    loom_ctx *ctx = nn_ctx(1, false);
    static float big[48 * 300];
    const int64_t nst[2] = {48, 300}, nq[1] = {IP_T};
    loom_tensor *r = ip_wkv6(ctx, loom_from_f32(loom_ctx_input(ctx), big, 48 * 300, 2, nst),
                             loom_from_i32(loom_ctx_input(ctx), k_ip_seq, IP_T, 1, nq), true);
    CHECK(loom_tensor_is_poison(r) && loom_ctx_status(ctx) == LOOM_ERR_SHAPE);
    loom_ctx_free(ctx);
}

int main(void) {
    for (int nth = 1; nth <= 2; nth++) {
        test_softplus(nth);
        test_exp(nth);
        test_conv(nth, LOOM_TYPE_F32);
        test_conv(nth, LOOM_TYPE_F16);
        test_conv(nth, LOOM_TYPE_BF16);
        test_delta(nth, false);
        test_delta(nth, true);
        test_scan(nth, false);
        test_scan(nth, true);
        test_wkv7(nth);
        test_wkv6(nth);
        test_xielu(nth);
        test_inplace(nth);
    }
    test_conv_strided();
    test_errors();
    return test_finish("test_cpu_ops_ssm");
}
