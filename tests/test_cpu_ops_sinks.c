/*
 * test_cpu_ops_sinks.c - softmax with attention sinks (loom_softmax_ext_sinks) against a
 * float64 reference: y_i = exp(s*x_i + m_i) / (sum_j exp(s*x_j + m_j) + exp(sink_h)),
 * with masked rows, a sink larger than every score, rows wholly masked, and bad shapes.
 */
#include <math.h>
#include <stdint.h>

#include "loom.h"
#include "test_util.h"

static uint64_t g_s = 0x1234567;
static float rnd(void) {
    g_s = g_s * 6364136223846793005ull + 1442695040888963407ull;
    return (float)((double)(g_s >> 11) / 9007199254740992.0 * 2.0 - 1.0);
}

static void run(int L, int T, int H, float scale, float sink_bias, int n_threads) {
    loom_ctx_params cp = loom_ctx_default_params();
    cp.n_threads = n_threads;
    loom_ctx *ctx = NULL;
    loom_error e = {0};
    CHECK(loom_ctx_new(&cp, &ctx, &e) == LOOM_OK);
    if (!ctx) return;
    float *x = malloc(sizeof(float) * (size_t)(L * T * H)), *m = malloc(sizeof(float) * (size_t)(L * T));
    float sk[64], *y = malloc(sizeof(float) * (size_t)(L * T * H));
    for (int i = 0; i < L * T * H; i++) x[i] = 4.0f * rnd();
    for (int t = 0; t < T; t++)
        for (int j = 0; j < L; j++) m[t * L + j] = (j > t + L - T || (t == 1 && T > 2)) ? -INFINITY : 0.0f;
    for (int h = 0; h < H; h++) sk[h] = sink_bias + 2.0f * rnd();
    int64_t nex[3] = {L, T, H}, nem[2] = {L, T}, nes[1] = {H};
    loom_ctx *in = loom_ctx_input(ctx);
    loom_tensor *tx = loom_from_f32(in, x, (size_t)(L * T * H), 3, nex);
    loom_tensor *tm = loom_from_f32(in, m, (size_t)(L * T), 2, nem);
    loom_tensor *ts = loom_from_f32(in, sk, (size_t)H, 1, nes);
    loom_tensor *out = loom_softmax_ext_sinks(ctx, tx, tm, scale, ts);
    loom_ctx_forward(ctx, out);
    CHECK(loom_ctx_compute(ctx, 1, &out) == LOOM_OK);
    CHECK(loom_tensor_read_f32(out, y, (size_t)(L * T * H)) == LOOM_OK);
    double maxerr = 0;
    for (int h = 0; h < H; h++)
        for (int t = 0; t < T; t++) {
            double mx = sk[h], z = 0;
            for (int j = 0; j < L; j++) {
                double v = (double)scale * x[(h * T + t) * L + j] + m[t * L + j];
                if (v > mx) mx = v;
            }
            for (int j = 0; j < L; j++) z += exp((double)scale * x[(h * T + t) * L + j] + m[t * L + j] - mx);
            z += exp((double)sk[h] - mx);
            for (int j = 0; j < L; j++) {
                double r = exp((double)scale * x[(h * T + t) * L + j] + m[t * L + j] - mx) / z;
                double d = fabs(r - y[(h * T + t) * L + j]);
                if (d > maxerr) maxerr = d;
            }
        }
    CHECK_MSG(maxerr < 2e-6, "L %d T %d H %d: max error %g", L, T, H, maxerr);
    /* wrong number of sinks: a sticky shape error */
    loom_tensor *bad = loom_softmax_ext_sinks(ctx, tx, tm, scale, loom_from_f32(in, sk, (size_t)(H + 1), 1,
                                                                                   (int64_t[1]){H + 1}));
    CHECK(loom_tensor_is_poison(bad));
    CHECK(loom_ctx_status(ctx) == LOOM_ERR_SHAPE);
    free(x);
    free(m);
    free(y);
    loom_ctx_free(ctx);
}

int main(void) {
    run(7, 3, 4, 0.25f, 0.0f, 1);
    run(33, 5, 8, 1.0f, 10.0f, 2);   /* sink dominates */
    run(64, 1, 2, 0.125f, -20.0f, 3); /* sink negligible */
    return test_finish("test_cpu_ops_sinks");
}
