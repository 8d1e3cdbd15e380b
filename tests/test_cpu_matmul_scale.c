/*
 * test_cpu_matmul_scale.c - a weight's output scale (loom_tensor_set_matmul_scale: the
 * "<name>.scale" tensors of NVFP4 and BitNet files) against float64 references:
 *   - loom_mul_mat of a 2-D weight with one scale, and of a weight whose scale is cleared;
 *   - loom_mul_mat_id with one scale for all experts and with one per expert, the expert
 *     ids given contiguous and as a strided view (the top-k columns of a wider table),
 *     activations shared by the slots (gate/up) and one per slot (down);
 *   - the scale is read when the graph runs: changing its value between two computes of
 *     the same graph changes the product;
 *   - the documented argument errors.
 */
#include "nn_test_common.h"

enum { K = 32, M = 12, E = 5, S = 3, T = 4 };

static double g_worst;

static void check(const float *y, const double *r, size_t n, const char *what) {
    double e = 0, m = 0;
    for (size_t i = 0; i < n; i++) {
        if (fabs(y[i] - r[i]) > e) e = fabs(y[i] - r[i]);
        if (fabs(r[i]) > m) m = fabs(r[i]);
    }
    e /= m;
    if (e > g_worst) g_worst = e;
    /* F32 dot products of 32 terms, one product by the scale: measured 1.1e-7 */
    CHECK_MSG(e < 5e-7, "%s: max relative error %g", what, e);
}

static void test_mul_mat(void) {
    loom_ctx *ctx = nn_ctx(2, false);
    float w[M * K], x[K * T], sc = -0.37f, y[M * T];
    fill_rnd(w, M * K, 1.0f);
    fill_rnd(x, K * T, 1.0f);
    loom_tensor *tw = nn_f32(ctx, w, K, M, 1, 1), *tx = nn_f32(ctx, x, K, T, 1, 1);
    loom_tensor *ts = nn_f32(ctx, &sc, 1, 1, 1, 1);
    CHECK_EQ_INT(loom_tensor_set_matmul_scale(tw, ts), LOOM_OK);
    loom_status s = nn_run(ctx, loom_mul_mat(ctx, tw, tx), y, M * T);
    CHECK_MSG(s == LOOM_OK, "mul_mat: %s", loom_ctx_error(ctx));
    double r[M * T];
    for (int t = 0; t < T; t++)
        for (int m = 0; m < M; m++) {
            double acc = 0;
            for (int k = 0; k < K; k++) acc += (double)w[m * K + k] * x[t * K + k];
            r[t * M + m] = acc * sc;
        }
    check(y, r, M * T, "mul_mat with a scale");
    loom_ctx_free(ctx);

    /* cleared: the plain product */
    ctx = nn_ctx(1, false);
    tw = nn_f32(ctx, w, K, M, 1, 1);
    tx = nn_f32(ctx, x, K, T, 1, 1);
    ts = nn_f32(ctx, &sc, 1, 1, 1, 1);
    CHECK_EQ_INT(loom_tensor_set_matmul_scale(tw, ts), LOOM_OK);
    CHECK_EQ_INT(loom_tensor_set_matmul_scale(tw, NULL), LOOM_OK);
    s = nn_run(ctx, loom_mul_mat(ctx, tw, tx), y, M * T);
    CHECK(s == LOOM_OK);
    for (int i = 0; i < M * T; i++) r[i] /= sc;
    check(y, r, M * T, "mul_mat, scale cleared");
    loom_ctx_free(ctx);
}

/* ids [S, T] of experts (each token its S distinct experts), as given or as the first S
 * columns of an [S + 2, T] table (a strided view); B1 = 1 or S activations per token;
 * per_expert: E scales, else one. */
static void test_mul_mat_id(int B1, bool strided, bool per_expert) {
    loom_ctx *ctx = nn_ctx(2, false);
    float w[E * M * K], x[K * S * T], sc[E], y[M * S * T];
    fill_rnd(w, E * M * K, 1.0f);
    fill_rnd(x, (size_t)K * B1 * T, 1.0f);
    for (int e = 0; e < E; e++) sc[e] = 0.25f + 0.5f * (float)e;
    int32_t ids[(S + 2) * T];
    const int W = strided ? S + 2 : S;
    for (int t = 0; t < T; t++)
        for (int i = 0; i < W; i++) ids[t * W + i] = (t * 2 + i * 3) % E; /* distinct for i < S (3 and 5 coprime) */
    loom_tensor *tw = nn_f32(ctx, w, K, M, E, 1), *tx = nn_f32(ctx, x, K, B1, T, 1);
    loom_tensor *ts = per_expert ? nn_f32(ctx, sc, E, 1, 1, 1) : nn_f32(ctx, sc + 3, 1, 1, 1, 1);
    int64_t ne_i[2] = {W, T};
    loom_tensor *ti = loom_from_i32(loom_ctx_input(ctx), ids, (size_t)(W * T), 2, ne_i);
    if (strided) {
        const int64_t args[3] = {S, (int64_t)loom_tensor_nb(ti, 1), T};
        ti = loom_view(ctx, ti, 0, 3, args);
    }
    CHECK_EQ_INT(loom_tensor_set_matmul_scale(tw, ts), LOOM_OK);
    loom_status s = nn_run(ctx, loom_mul_mat_id(ctx, tw, tx, ti), y, M * S * T);
    CHECK_MSG(s == LOOM_OK, "mul_mat_id: %s", loom_ctx_error(ctx));
    double r[M * S * T];
    for (int t = 0; t < T; t++)
        for (int i = 0; i < S; i++) {
            const int e = ids[t * W + i];
            const float *xv = x + ((size_t)t * B1 + (B1 == 1 ? 0 : i)) * K;
            for (int m = 0; m < M; m++) {
                double acc = 0;
                for (int k = 0; k < K; k++) acc += (double)w[((size_t)e * M + m) * K + k] * xv[k];
                r[((size_t)t * S + i) * M + m] = acc * (per_expert ? sc[e] : sc[3]);
            }
        }
    char what[96];
    snprintf(what, sizeof what, "mul_mat_id B1=%d %s ids, %s", B1, strided ? "strided" : "contiguous",
             per_expert ? "per-expert scales" : "one scale");
    check(y, r, M * S * T, what);
    loom_ctx_free(ctx);
}

/* the scale is an input read at compute time: a new value, the same graph */
static void test_read_at_compute(void) {
    loom_ctx *ctx = nn_ctx(1, false);
    float w[M * K], x[K], sc = 2.0f, y1[M], y2[M];
    fill_rnd(w, M * K, 1.0f);
    fill_rnd(x, K, 1.0f);
    loom_tensor *tw = nn_f32(ctx, w, K, M, 1, 1), *tx = nn_f32(ctx, x, K, 1, 1, 1);
    loom_tensor *ts = nn_f32(ctx, &sc, 1, 1, 1, 1);
    CHECK_EQ_INT(loom_tensor_set_matmul_scale(tw, ts), LOOM_OK);
    loom_tensor *out = loom_mul_mat(ctx, tw, tx);
    CHECK(nn_run(ctx, out, y1, M) == LOOM_OK);
    const float sc2 = -3.0f;
    CHECK(loom_tensor_write(ts, &sc2, sizeof sc2) == LOOM_OK);
    CHECK(loom_ctx_compute(ctx, 1, &out) == LOOM_OK);
    CHECK(loom_tensor_read_f32(out, y2, M) == LOOM_OK);
    double e = 0;
    for (int m = 0; m < M; m++) e = fmax(e, fabs(y2[m] - y1[m] * (sc2 / sc)) / (fabs(y1[m]) + 1e-6));
    CHECK_MSG(e < 1e-6, "scale rewritten between computes: %g", e);
    loom_ctx_free(ctx);
}

static void test_errors(void) {
    loom_ctx *ctx = nn_ctx(1, false);
    float w[M * K * E] = {0}, v[E] = {1, 1, 1, 1, 1};
    loom_tensor *w2 = nn_f32(ctx, w, K, M, 1, 1), *w3 = nn_f32(ctx, w, K, M, E, 1);
    loom_tensor *one = nn_f32(ctx, v, 1, 1, 1, 1), *five = nn_f32(ctx, v, E, 1, 1, 1);
    loom_tensor *four = nn_f32(ctx, v, 4, 1, 1, 1), *h = nn_f16(ctx, v, 1, 1, 1, 1);
    CHECK_EQ_INT(loom_tensor_set_matmul_scale(NULL, one), LOOM_ERR_INVALID_ARG);
    CHECK_EQ_INT(loom_tensor_set_matmul_scale(w2, five), LOOM_ERR_INVALID_ARG); /* per expert, 2-D weight */
    CHECK_EQ_INT(loom_tensor_set_matmul_scale(w3, four), LOOM_ERR_INVALID_ARG); /* 4 scales, 5 experts */
    CHECK_EQ_INT(loom_tensor_set_matmul_scale(w2, h), LOOM_ERR_INVALID_ARG);    /* F16 */
    CHECK_EQ_INT(loom_tensor_set_matmul_scale(w3, five), LOOM_OK);
    CHECK_EQ_INT(loom_tensor_set_matmul_scale(w3, one), LOOM_OK);
    loom_ctx_free(ctx);
}

int main(void) {
    test_mul_mat();
    for (int b = 0; b < 2; b++)
        for (int st = 0; st < 2; st++)
            for (int pe = 0; pe < 2; pe++) test_mul_mat_id(b ? S : 1, st, pe);
    test_read_at_compute();
    test_errors();
    printf("  worst relative error %.2g\n", g_worst);
    return test_finish("test_cpu_matmul_scale");
}
