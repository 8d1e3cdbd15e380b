/* Core ops on the standalone CPU engine against float64 references written here.
 * Outputs are computed into a compute buffer pre-filled with NaN (0xFF bytes), inputs
 * come contiguous, transposed (dims 0/1 swapped) and permuted (dims 1/2 swapped). */
#include "core/ctx.h"
#include "cpu/exec.h"
#include "loom.h"
#include "test_util.h"

#include <math.h>
#include <stdint.h>

static uint64_t g_rng = 0x1234567ULL;
static double rnd(void) { /* uniform [-1, 1) */
    g_rng = g_rng * 6364136223846793005ULL + 1442695040888963407ULL;
    return (double)(g_rng >> 11) / (double)(1ULL << 53) * 2.0 - 1.0;
}

static int g_threads = 2;

static loom_ctx *new_ctx(int nth) {
    loom_ctx_params p = loom_ctx_default_params();
    p.n_threads = nth;
    p.max_nodes = 256;
    loom_ctx *ctx = NULL;
    loom_error err = {0};
    if (loom_ctx_new(&p, &ctx, &err) != LOOM_OK) {
        fprintf(stderr, "ctx: %s\n", err.msg);
        exit(1);
    }
    loom_cpu_ctx_set_fill(ctx, 0xFF);
    return ctx;
}

static int64_t nel(const int64_t ne[4]) { return ne[0] * ne[1] * ne[2] * ne[3]; }
static int64_t lin(const int64_t ne[4], int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
    return ((i3 * ne[2] + i2) * ne[1] + i1) * ne[0] + i0;
}

enum { L_CONT = 0, L_T01 = 1, L_P12 = 2 };

/* A logical F32 tensor of shape ne (logical data x) presented in the given layout. */
static loom_tensor *make_f32(loom_ctx *ctx, int layout, const int64_t ne[4], const float *x) {
    int64_t n = nel(ne);
    float *buf = malloc((size_t)n * sizeof(float) + 4);
    int64_t le[4];
    for (int64_t i3 = 0; i3 < ne[3]; i3++)
        for (int64_t i2 = 0; i2 < ne[2]; i2++)
            for (int64_t i1 = 0; i1 < ne[1]; i1++)
                for (int64_t i0 = 0; i0 < ne[0]; i0++) {
                    float v = x[lin(ne, i0, i1, i2, i3)];
                    if (layout == L_CONT) {
                        buf[lin(ne, i0, i1, i2, i3)] = v;
                    } else if (layout == L_T01) {
                        int64_t e[4] = {ne[1], ne[0], ne[2], ne[3]};
                        buf[lin(e, i1, i0, i2, i3)] = v;
                    } else {
                        int64_t e[4] = {ne[0], ne[2], ne[1], ne[3]};
                        buf[lin(e, i0, i2, i1, i3)] = v;
                    }
                }
    loom_tensor *t;
    if (layout == L_CONT) {
        t = loom_from_f32(loom_ctx_input(ctx), buf, (size_t)n, 4, ne);
    } else if (layout == L_T01) {
        le[0] = ne[1], le[1] = ne[0], le[2] = ne[2], le[3] = ne[3];
        t = loom_transpose(ctx, loom_from_f32(loom_ctx_input(ctx), buf, (size_t)n, 4, le));
    } else {
        le[0] = ne[0], le[1] = ne[2], le[2] = ne[1], le[3] = ne[3];
        t = loom_permute(ctx, loom_from_f32(loom_ctx_input(ctx), buf, (size_t)n, 4, le), 0, 2, 1, 3);
    }
    free(buf);
    return t;
}

static float *rand_vec(int64_t n, double scale) {
    float *v = malloc((size_t)(n ? n : 1) * sizeof(float));
    for (int64_t i = 0; i < n; i++) v[i] = (float)(rnd() * scale);
    return v;
}

/* Compute t (forward + compute), read it (F32), compare against ref by normalised MSE. */
static double g_last_nmse;
static bool run_check(loom_ctx *ctx, loom_tensor *t, const double *ref, int64_t n, double bound, const char *what) {
    CHECK_MSG(loom_ctx_status(ctx) == LOOM_OK, "%s: %s", what, loom_ctx_error(ctx));
    if (loom_ctx_status(ctx)) return false;
    CHECK_EQ_INT(loom_tensor_nelements(t), n);
    loom_status s = loom_ctx_forward(ctx, t);
    if (s == LOOM_OK) s = loom_ctx_compute(ctx, 1, &t);
    CHECK_MSG(s == LOOM_OK, "%s: compute %s: %s", what, loom_status_name(s), loom_ctx_error(ctx));
    if (s) return false;
    float *out = malloc((size_t)(n ? n : 1) * sizeof(float));
    if (loom_tensor_read_f32(t, out, (size_t)n) != LOOM_OK) {
        CHECK_MSG(0, "%s: read failed", what);
        free(out);
        return false;
    }
    double num = 0, den = 0;
    int nan_bad = 0;
    for (int64_t i = 0; i < n; i++) {
        if (isnan(out[i]) != isnan(ref[i])) nan_bad++;
        if (isnan(ref[i])) continue;
        if (isinf(ref[i]) && out[i] == ref[i]) continue;
        double d = out[i] - ref[i];
        num += d * d;
        den += ref[i] * ref[i];
    }
    double nmse = den > 0 ? num / den : num;
    g_last_nmse = nmse;
    CHECK_MSG(nan_bad == 0, "%s: %d NaN mismatches (unwritten outputs?)", what, nan_bad);
    CHECK_MSG(nmse <= bound, "%s: nmse %.3g > %.3g", what, nmse, bound);
    free(out);
    return nan_bad == 0 && nmse <= bound;
}

static const int64_t g_shapes[][4] = {
    {1, 1, 1, 1}, {7, 3, 1, 1}, {33, 2, 3, 1}, {257, 3, 2, 2}, {16, 5, 3, 1},
};
#define N_SHAPES ((int)(sizeof g_shapes / sizeof g_shapes[0]))

/* ------------------------------------------------------------------ binary */

static void test_binary(void) {
    loom_op ops[4] = {LOOM_OP_ADD, LOOM_OP_SUB, LOOM_OP_MUL, LOOM_OP_DIV};
    for (int si = 0; si < N_SHAPES; si++) {
        const int64_t *ne = g_shapes[si];
        for (int bshape = 0; bshape < 3; bshape++) {
            int64_t nb_[4] = {ne[0], ne[1], ne[2], ne[3]};
            if (bshape == 1) nb_[1] = 1, nb_[2] = 1;           /* row vector */
            if (bshape == 2) nb_[0] = 1, nb_[3] = 1;           /* column broadcast */
            for (int layout = 0; layout < 3; layout++)
                for (int oi = 0; oi < 4; oi++) {
                    loom_ctx *ctx = new_ctx(g_threads);
                    int64_t n = nel(ne), nbn = nel(nb_);
                    float *x = rand_vec(n, 2.0), *y = rand_vec(nbn, 2.0);
                    if (ops[oi] == LOOM_OP_DIV)
                        for (int64_t i = 0; i < nbn; i++) y[i] = y[i] >= 0 ? y[i] + 0.5f : y[i] - 0.5f;
                    loom_tensor *a = make_f32(ctx, layout, ne, x);
                    loom_tensor *b = make_f32(ctx, (layout + bshape) % 3, nb_, y);
                    loom_tensor *t = oi == 0 ? loom_add(ctx, a, b)
                                   : oi == 1 ? loom_sub(ctx, a, b)
                                   : oi == 2 ? loom_mul(ctx, a, b)
                                             : loom_div(ctx, a, b);
                    double *ref = malloc((size_t)n * sizeof(double));
                    for (int64_t i3 = 0; i3 < ne[3]; i3++)
                        for (int64_t i2 = 0; i2 < ne[2]; i2++)
                            for (int64_t i1 = 0; i1 < ne[1]; i1++)
                                for (int64_t i0 = 0; i0 < ne[0]; i0++) {
                                    double u = x[lin(ne, i0, i1, i2, i3)];
                                    double v = y[lin(nb_, i0 % nb_[0], i1 % nb_[1], i2 % nb_[2], i3 % nb_[3])];
                                    double r = oi == 0 ? u + v : oi == 1 ? u - v : oi == 2 ? u * v : u / v;
                                    ref[lin(ne, i0, i1, i2, i3)] = r;
                                }
                    char what[96];
                    snprintf(what, sizeof what, "%s shape %d b %d layout %d", loom_op_name(ops[oi]), si, bshape,
                             layout);
                    run_check(ctx, t, ref, n, 1e-12, what);
                    free(ref);
                    free(x);
                    free(y);
                    loom_ctx_free(ctx);
                }
        }
    }
}

/* F16 a + F32 b (result F16), and a softmax mask broadcast over dim 2 with mask.ne2 > 1 */
static void test_mixed(void) {
    loom_ctx *ctx = new_ctx(g_threads);
    int64_t ne[2] = {9, 4};
    uint16_t h[36];
    float y[9];
    for (int i = 0; i < 36; i++) h[i] = loom_fp32_to_fp16((float)(i - 18) / 4.0f);
    for (int i = 0; i < 9; i++) y[i] = (float)i * 0.5f;
    int64_t yne[1] = {9};
    loom_tensor *a = loom_from_bytes(loom_ctx_input(ctx), LOOM_TYPE_F16, h, sizeof h, 2, ne);
    loom_tensor *t = loom_mul(ctx, a, loom_from_f32(loom_ctx_input(ctx), y, 9, 1, yne));
    CHECK(loom_tensor_type(t) == LOOM_TYPE_F16);
    loom_ctx_forward(ctx, t);
    CHECK(loom_ctx_compute(ctx, 1, &t) == LOOM_OK);
    uint16_t o[36];
    CHECK(loom_tensor_read(t, o, sizeof o) == LOOM_OK);
    for (int i = 0; i < 36; i++)
        CHECK_NEAR(loom_fp16_to_fp32(o[i]), (double)loom_fp16_to_fp32(h[i]) * y[i % 9], 1e-2);
    loom_ctx_free(ctx);

    ctx = new_ctx(g_threads);
    int64_t ane[4] = {5, 3, 4, 2}, mne[4] = {5, 3, 2, 1};
    float *x = rand_vec(nel(ane), 2.0), *m = rand_vec(nel(mne), 2.0);
    loom_tensor *sa = make_f32(ctx, L_P12, ane, x);
    loom_tensor *sm = loom_from_f32(loom_ctx_input(ctx), m, (size_t)nel(mne), 4, mne);
    t = loom_softmax_ext(ctx, sa, sm, 0.5f);
    double *ref = malloc((size_t)nel(ane) * sizeof(double));
    for (int64_t i3 = 0; i3 < 2; i3++)
        for (int64_t i2 = 0; i2 < 4; i2++)
            for (int64_t i1 = 0; i1 < 3; i1++) {
                double s = 0, mx = -INFINITY, *rr = ref + lin(ane, 0, i1, i2, i3);
                for (int64_t i0 = 0; i0 < 5; i0++) {
                    rr[i0] = x[lin(ane, i0, i1, i2, i3)] * 0.5 + m[lin(mne, i0, i1, i2 % 2, 0)];
                    mx = fmax(mx, rr[i0]);
                }
                for (int64_t i0 = 0; i0 < 5; i0++) s += (rr[i0] = exp(rr[i0] - mx));
                for (int64_t i0 = 0; i0 < 5; i0++) rr[i0] /= s;
            }
    run_check(ctx, t, ref, nel(ane), 1e-11, "softmax mask broadcast dim 2");
    free(ref);
    free(x);
    free(m);
    loom_ctx_free(ctx);
}

/* ------------------------------------------------------------------ unary */

typedef loom_tensor *(*unary_fn)(loom_ctx *, loom_tensor *);
static loom_tensor *op_scale(loom_ctx *c, loom_tensor *a) { return loom_scale(c, a, -1.75f); }
static loom_tensor *op_clamp(loom_ctx *c, loom_tensor *a) { return loom_clamp(c, a, -0.5f, 0.25f); }

static double r_neg(double x) { return -x; }
static double r_scale(double x) { return x * -1.75; }
static double r_sqr(double x) { return x * x; }
static double r_sqrt(double x) { return sqrt(fabs(x)); }
static double r_sigmoid(double x) { return 1.0 / (1.0 + exp(-x)); }
static double r_silu(double x) { return x / (1.0 + exp(-x)); }
static double r_relu(double x) { return x > 0 ? x : 0; }
static double r_gelu(double x) { return 0.5 * x * (1.0 + tanh(sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x))); }
static double r_qgelu(double x) { return x / (1.0 + exp(-1.702 * x)); }
static double r_clamp(double x) { return x < -0.5 ? -0.5 : x > 0.25 ? 0.25 : x; }

static void test_unary(void) {
    struct {
        const char *name;
        unary_fn fn;
        double (*ref)(double);
        bool positive;
    } ops[] = {
        {"neg", loom_neg, r_neg, false},        {"scale", op_scale, r_scale, false},
        {"sqr", loom_sqr, r_sqr, false},        {"sqrt", loom_sqrt, r_sqrt, true},
        {"sin", loom_sin, sin, false},          {"cos", loom_cos, cos, false},
        {"tanh", loom_tanh, tanh, false},       {"sigmoid", loom_sigmoid, r_sigmoid, false},
        {"silu", loom_silu, r_silu, false},     {"relu", loom_relu, r_relu, false},
        {"gelu", loom_gelu, r_gelu, false},     {"quick_gelu", loom_quick_gelu, r_qgelu, false},
        {"clamp", op_clamp, r_clamp, false},
    };
    for (size_t oi = 0; oi < sizeof ops / sizeof ops[0]; oi++)
        for (int si = 0; si < N_SHAPES; si++)
            for (int layout = 0; layout < 3; layout++) {
                const int64_t *ne = g_shapes[si];
                int64_t n = nel(ne);
                loom_ctx *ctx = new_ctx(g_threads);
                float *x = rand_vec(n, 4.0);
                if (ops[oi].positive)
                    for (int64_t i = 0; i < n; i++) x[i] = fabsf(x[i]);
                loom_tensor *t = ops[oi].fn(ctx, make_f32(ctx, layout, ne, x));
                double *ref = malloc((size_t)n * sizeof(double));
                for (int64_t i = 0; i < n; i++) ref[i] = ops[oi].ref(x[i]);
                char what[64];
                snprintf(what, sizeof what, "%s shape %d layout %d", ops[oi].name, si, layout);
                run_check(ctx, t, ref, n, 1e-11, what);
                free(ref);
                free(x);
                loom_ctx_free(ctx);
            }
    /* F16 input: result F16 */
    {
        loom_ctx *ctx = new_ctx(g_threads);
        int64_t ne[1] = {40};
        uint16_t h[40];
        double ref[40];
        for (int i = 0; i < 40; i++) {
            h[i] = loom_fp32_to_fp16((float)(i - 20) / 8.0f);
            ref[i] = r_silu(loom_fp16_to_fp32(h[i]));
        }
        loom_tensor *a = loom_from_bytes(loom_ctx_input(ctx), LOOM_TYPE_F16, h, sizeof h, 1, ne);
        loom_tensor *t = loom_silu(ctx, a);
        CHECK(loom_tensor_type(t) == LOOM_TYPE_F16);
        loom_ctx_forward(ctx, t);
        CHECK(loom_ctx_compute(ctx, 1, &t) == LOOM_OK);
        uint16_t o[40];
        CHECK(loom_tensor_read(t, o, sizeof o) == LOOM_OK);
        double err = 0;
        for (int i = 0; i < 40; i++) err = fmax(err, fabs(loom_fp16_to_fp32(o[i]) - ref[i]));
        CHECK_MSG(err < 2e-3, "silu f16 max err %g", err);
        loom_ctx_free(ctx);
    }
}

/* TANH on contiguous rows (the kernel table's tanh_f32: the level's exp, a series near 0) over
 * magnitudes 1e-8 .. 30 of both signs, and through ±inf / NaN: max relative error
 * against float64 (the bound: the exp's ~2e-7 doubled near |u| = 0.25, see ops.h). */
static void test_tanh_range(void) {
    enum { N = 4000 };
    float x[N];
    for (int i = 0; i < N - 4; i++) {
        const double mag = pow(10.0, -8.0 + 9.5 * (double)(i / 2) / (N / 2));
        x[i] = (float)(i % 2 ? -mag : mag);
    }
    x[N - 4] = INFINITY, x[N - 3] = -INFINITY, x[N - 2] = NAN, x[N - 1] = 0.0f;
    loom_ctx *ctx = new_ctx(g_threads);
    const int64_t ne[1] = {N};
    loom_tensor *t = loom_tanh(ctx, loom_from_f32(loom_ctx_input(ctx), x, N, 1, ne));
    loom_ctx_forward(ctx, t);
    CHECK(loom_ctx_compute(ctx, 1, &t) == LOOM_OK);
    float y[N];
    CHECK(loom_tensor_read_f32(t, y, N) == LOOM_OK);
    double worst = 0;
    int worst_i = 0;
    for (int i = 0; i < N - 4; i++) {
        const double want = tanh((double)x[i]), e = fabs(y[i] - want) / fabs(want);
        if (!(e <= worst)) worst = e, worst_i = i;
    }
    printf("tanh: max relative error %.3g at %.6g\n", worst, (double)x[worst_i]);
    CHECK_MSG(worst <= 6e-7, "tanh: relative error %g at %g", worst, (double)x[worst_i]);
    CHECK(y[N - 4] == 1.0f && y[N - 3] == -1.0f && isnan(y[N - 2]) && y[N - 1] == 0.0f);
    loom_ctx_free(ctx);
}

/* loom_gelu_f16 (llama.cpp's table semantics: input and result rounded to F16,
 * saturating outside (-10, 10)): every F16 value, values around the saturation edges and
 * random ones, on contiguous rows (the table path) and transposed (the per-element
 * formula): bit-identical to each other, and within one F16 step of a float64 reference. */
static void test_gelu_f16(void) {
    const int64_t ne[4] = {256, 300, 1, 1}, n = 256 * 300;
    float *x = malloc((size_t)n * sizeof *x);
    uint32_t lcg = 12345u; /* its own generator: the shared rnd() stream of the other tests stays as it was */
    for (int64_t i = 0; i < n; i++) {
        lcg = lcg * 1664525u + 1013904223u;
        x[i] = i < 65536 ? loom_fp16_to_fp32((uint16_t)i) : 24.0f * (float)(lcg >> 8) / 16777216.0f - 12.0f;
    }
    const float edges[] = {-10.0f, 10.0f, -9.999999f, 9.999999f, -9.996f, 9.996f, -10.000001f, 10.000001f, 0.0f, -0.0f};
    for (size_t i = 0; i < sizeof edges / sizeof edges[0]; i++) x[65536 + (int64_t)i] = edges[i];
    float *out[2] = {malloc((size_t)n * sizeof(float)), malloc((size_t)n * sizeof(float))};
    for (int layout = 0; layout < 2; layout++) {
        loom_ctx *ctx = new_ctx(g_threads);
        loom_tensor *t = loom_gelu_f16(ctx, make_f32(ctx, layout == 0 ? L_CONT : L_T01, ne, x));
        loom_ctx_forward(ctx, t);
        CHECK(loom_ctx_compute(ctx, 1, &t) == LOOM_OK);
        CHECK(loom_tensor_read_f32(t, out[layout], (size_t)n) == LOOM_OK);
        loom_ctx_free(ctx);
    }
    int64_t differ = 0, bad = 0;
    for (int64_t i = 0; i < n; i++) {
        const float a = out[0][i], b = out[1][i];
        if (isnan(x[i])) {
            bad += !isnan(a) || !isnan(b);
            continue;
        }
        differ += memcmp(&a, &b, sizeof a) != 0;
        double want;
        if (x[i] <= -10.0f) want = 0.0;
        else if (x[i] >= 10.0f) want = x[i];
        else {
            const double h = loom_fp16_to_fp32(loom_fp32_to_fp16(x[i]));
            want = loom_fp16_to_fp32(loom_fp32_to_fp16((float)r_gelu(h)));
        }
        /* one F16 step at want (the float formula may round to the other neighbour), or
         * where the result is tiny, float's 1 + tanh(u) cancelling for negative inputs:
         * an absolute |x| 2^-22 (two float ulps of 1 times x / 2) */
        const double step = fmax(ldexp(fabs(want), -10), fabs((double)x[i]) * ldexp(1.0, -22));
        if (!(fabs(a - want) <= step) && !(isinf(want) && a == want)) {
            if (bad < 5) printf("gelu_f16(%.9g) = %.9g, want %.9g\n", (double)x[i], (double)a, want);
            bad++;
        }
    }
    CHECK_MSG(differ == 0, "gelu_f16: %lld values differ between contiguous and transposed rows", (long long)differ);
    CHECK_MSG(bad == 0, "gelu_f16: %lld values off the float64 reference by more than one F16 step", (long long)bad);
    free(out[0]);
    free(out[1]);
    free(x);
}

/* ------------------------------------------------------------------ reductions, norms, softmax */

static void test_reductions(void) {
    for (int si = 0; si < N_SHAPES; si++)
        for (int layout = 0; layout < 3; layout++)
            for (int k = 0; k < 6; k++) {
                const int64_t *ne = g_shapes[si];
                int64_t n = nel(ne), rows = ne[1] * ne[2] * ne[3];
                loom_ctx *ctx = new_ctx(g_threads);
                float *x = rand_vec(n, 3.0);
                for (int64_t i = 0; i < n; i++) x[i] += 0.5f;
                loom_tensor *a = make_f32(ctx, layout, ne, x);
                loom_tensor *w = NULL, *b = NULL;
                float *wv = rand_vec(ne[0], 1.0), *bv = rand_vec(ne[0], 1.0);
                int64_t wne[4] = {ne[0], 1, 1, 1};
                if (k >= 4) {
                    w = loom_from_f32(loom_ctx_input(ctx), wv, (size_t)ne[0], 1, wne);
                    b = loom_from_f32(loom_ctx_input(ctx), bv, (size_t)ne[0], 1, wne);
                }
                loom_tensor *t = k == 0 ? loom_sum_rows(ctx, a)
                               : k == 1 ? loom_mean(ctx, a)
                               : k == 2 ? loom_variance(ctx, a)
                               : k == 3 ? loom_stddev(ctx, a)
                               : k == 4 ? loom_layer_norm(ctx, a, w, b, 1e-5f)
                                        : loom_rms_norm(ctx, a, w, 1e-6f);
                int64_t on = k < 4 ? rows : n;
                double *ref = malloc((size_t)on * sizeof(double));
                for (int64_t r = 0; r < rows; r++) {
                    const float *row = x + r * ne[0];
                    double s = 0, ss = 0;
                    for (int64_t i = 0; i < ne[0]; i++) s += row[i];
                    double mean = s / (double)ne[0];
                    for (int64_t i = 0; i < ne[0]; i++) ss += (row[i] - mean) * (row[i] - mean);
                    double var = ss / (double)ne[0];
                    if (k == 0) ref[r] = s;
                    if (k == 1) ref[r] = mean;
                    if (k == 2) ref[r] = var;
                    if (k == 3) ref[r] = sqrt(var);
                    if (k == 4)
                        for (int64_t i = 0; i < ne[0]; i++)
                            ref[r * ne[0] + i] = (row[i] - mean) / sqrt(var + 1e-5) * wv[i] + bv[i];
                    if (k == 5) {
                        double ms = 0;
                        for (int64_t i = 0; i < ne[0]; i++) ms += (double)row[i] * row[i];
                        ms /= (double)ne[0];
                        for (int64_t i = 0; i < ne[0]; i++) ref[r * ne[0] + i] = row[i] / sqrt(ms + 1e-6) * wv[i];
                    }
                }
                char what[64];
                snprintf(what, sizeof what, "reduce %d shape %d layout %d", k, si, layout);
                run_check(ctx, t, ref, on, (k == 2 || k == 3) && ne[0] == 1 ? 1e-10 : 1e-10, what);
                free(ref);
                free(x);
                free(wv);
                free(bv);
                loom_ctx_free(ctx);
            }
}

static void test_softmax(void) {
    for (int si = 0; si < N_SHAPES; si++)
        for (int layout = 0; layout < 3; layout++)
            for (int mk = 0; mk < 3; mk++) { /* 0 none, 1 F32 mask, 2 F16 mask */
                const int64_t *ne = g_shapes[si];
                int64_t n = nel(ne);
                loom_ctx *ctx = new_ctx(g_threads);
                float *x = rand_vec(n, 5.0);
                loom_tensor *a = make_f32(ctx, layout, ne, x);
                int64_t mrows = ne[1] + 2; /* mask has extra rows (padding) */
                int64_t mne[4] = {ne[0], mrows, ne[2] > 1 ? 1 : 1, 1};
                float *m = rand_vec(ne[0] * mrows, 2.0);
                for (int64_t i = 0; i < ne[0] * mrows; i++)
                    if ((i * 7) % 5 == 0) m[i] = -INFINITY;
                /* row 0 of the mask fully masked -> output zeros */
                for (int64_t i = 0; i < ne[0]; i++) m[i] = -INFINITY;
                loom_tensor *mask = NULL;
                if (mk == 1) mask = loom_from_f32(loom_ctx_input(ctx), m, (size_t)(ne[0] * mrows), 2, mne);
                if (mk == 2) {
                    uint16_t *h = malloc((size_t)(ne[0] * mrows) * 2);
                    for (int64_t i = 0; i < ne[0] * mrows; i++) {
                        h[i] = loom_fp32_to_fp16(m[i]);
                        m[i] = loom_fp16_to_fp32(h[i]);
                    }
                    mask = loom_from_bytes(loom_ctx_input(ctx), LOOM_TYPE_F16, h, (size_t)(ne[0] * mrows) * 2, 2, mne);
                    free(h);
                }
                float scale = mk ? 0.37f : 1.0f;
                loom_tensor *t = mk ? loom_softmax_ext(ctx, a, mask, scale) : loom_softmax(ctx, a);
                double *ref = malloc((size_t)n * sizeof(double));
                for (int64_t i3 = 0; i3 < ne[3]; i3++)
                    for (int64_t i2 = 0; i2 < ne[2]; i2++)
                        for (int64_t i1 = 0; i1 < ne[1]; i1++) {
                            double mx = -INFINITY, s = 0;
                            double *rr = ref + lin(ne, 0, i1, i2, i3);
                            for (int64_t i0 = 0; i0 < ne[0]; i0++) {
                                double v = (double)x[lin(ne, i0, i1, i2, i3)] * scale;
                                if (mk) v += m[i1 * ne[0] + i0];
                                rr[i0] = v;
                                if (v > mx) mx = v;
                            }
                            for (int64_t i0 = 0; i0 < ne[0]; i0++) {
                                rr[i0] = mx == -INFINITY ? 0 : exp(rr[i0] - mx);
                                s += rr[i0];
                            }
                            for (int64_t i0 = 0; i0 < ne[0]; i0++) rr[i0] = s > 0 ? rr[i0] / s : 0;
                        }
                char what[64];
                snprintf(what, sizeof what, "softmax mask %d shape %d layout %d", mk, si, layout);
                run_check(ctx, t, ref, n, 1e-11, what);
                free(ref);
                free(x);
                free(m);
                loom_ctx_free(ctx);
            }
}

/* ------------------------------------------------------------------ views and copies */

static void test_views(void) {
    int64_t ne[4] = {6, 5, 4, 3};
    int64_t n = nel(ne);
    for (int k = 0; k < 8; k++) {
        loom_ctx *ctx = new_ctx(g_threads);
        float *x = rand_vec(n, 1.0);
        loom_tensor *a = loom_from_f32(loom_ctx_input(ctx), x, (size_t)n, 4, ne);
        double *ref = malloc((size_t)n * sizeof(double));
        loom_tensor *t = NULL;
        int64_t on = n;
        if (k == 0) { /* permute (1,2,0,3): out.ne = [ne2, ne0, ne1, ne3] */
            t = loom_cont(ctx, loom_permute(ctx, a, 1, 2, 0, 3));
            int64_t oe[4] = {ne[2], ne[0], ne[1], ne[3]};
            CHECK_EQ_INT(loom_tensor_ne(t, 0), 4);
            CHECK_EQ_INT(loom_tensor_ne(t, 1), 6);
            for (int64_t i3 = 0; i3 < ne[3]; i3++)
                for (int64_t i2 = 0; i2 < ne[2]; i2++)
                    for (int64_t i1 = 0; i1 < ne[1]; i1++)
                        for (int64_t i0 = 0; i0 < ne[0]; i0++)
                            ref[lin(oe, i2, i0, i1, i3)] = x[lin(ne, i0, i1, i2, i3)];
        } else if (k == 1) { /* transpose + cont_nd to 2-D */
            int64_t cn[2] = {ne[1] * ne[0], ne[2] * ne[3]};
            t = loom_cont_nd(ctx, loom_transpose(ctx, a), 2, cn);
            int64_t oe[4] = {ne[1], ne[0], ne[2], ne[3]};
            for (int64_t i3 = 0; i3 < ne[3]; i3++)
                for (int64_t i2 = 0; i2 < ne[2]; i2++)
                    for (int64_t i1 = 0; i1 < ne[1]; i1++)
                        for (int64_t i0 = 0; i0 < ne[0]; i0++)
                            ref[lin(oe, i1, i0, i2, i3)] = x[lin(ne, i0, i1, i2, i3)];
        } else if (k == 2) { /* reshape then view with strides [ne0=3, nb1, ne1=2, nb2, ne2=2] at offset */
            int64_t rs[2] = {30, 12};
            loom_tensor *r = loom_reshape(ctx, a, 2, rs);
            int64_t args[5] = {3, 30 * 4, 2, 60 * 4, 2};
            t = loom_cont(ctx, loom_view(ctx, r, 4 * 4, 5, args));
            on = 12;
            for (int64_t i2 = 0; i2 < 2; i2++)
                for (int64_t i1 = 0; i1 < 2; i1++)
                    for (int64_t i0 = 0; i0 < 3; i0++) ref[(i2 * 2 + i1) * 3 + i0] = x[4 + i0 + 30 * i1 + 60 * i2];
        } else if (k == 3) { /* dup of a permuted (0,2,1,3) view */
            t = loom_dup(ctx, loom_permute(ctx, a, 0, 2, 1, 3));
            int64_t oe[4] = {ne[0], ne[2], ne[1], ne[3]};
            for (int64_t i3 = 0; i3 < ne[3]; i3++)
                for (int64_t i2 = 0; i2 < ne[2]; i2++)
                    for (int64_t i1 = 0; i1 < ne[1]; i1++)
                        for (int64_t i0 = 0; i0 < ne[0]; i0++)
                            ref[lin(oe, i0, i2, i1, i3)] = x[lin(ne, i0, i1, i2, i3)];
        } else if (k == 4) { /* concat along each dim via stack */
            for (int dim = 0; dim < 4; dim++) {
                loom_ctx *c2 = new_ctx(g_threads);
                loom_tensor *aa = make_f32(c2, L_T01, ne, x);
                loom_tensor *bb = loom_from_f32(loom_ctx_input(c2), x, (size_t)n, 4, ne);
                loom_tensor *s[2] = {bb, aa};
                loom_tensor *o = loom_stack(c2, aa, dim, 2, s);
                int64_t oe[4] = {ne[0], ne[1], ne[2], ne[3]};
                oe[dim] *= 3;
                double *r3 = malloc((size_t)(3 * n) * sizeof(double));
                for (int64_t i3 = 0; i3 < oe[3]; i3++)
                    for (int64_t i2 = 0; i2 < oe[2]; i2++)
                        for (int64_t i1 = 0; i1 < oe[1]; i1++)
                            for (int64_t i0 = 0; i0 < oe[0]; i0++) {
                                int64_t j[4] = {i0, i1, i2, i3};
                                j[dim] %= ne[dim];
                                r3[lin(oe, i0, i1, i2, i3)] = x[lin(ne, j[0], j[1], j[2], j[3])];
                            }
                char what[32];
                snprintf(what, sizeof what, "stack dim %d", dim);
                run_check(c2, o, r3, 3 * n, 0, what);
                free(r3);
                loom_ctx_free(c2);
            }
            t = loom_cont(ctx, a);
            for (int64_t i = 0; i < n; i++) ref[i] = x[i];
        } else if (k == 5) { /* repeat along dim 1 x3 then dim 3 x2 */
            t = loom_repeat(ctx, loom_repeat(ctx, make_f32(ctx, L_P12, ne, x), 1, 3), 3, 2);
            int64_t oe[4] = {ne[0], 3 * ne[1], ne[2], 2 * ne[3]};
            on = nel(oe);
            free(ref);
            ref = malloc((size_t)on * sizeof(double));
            for (int64_t i3 = 0; i3 < oe[3]; i3++)
                for (int64_t i2 = 0; i2 < oe[2]; i2++)
                    for (int64_t i1 = 0; i1 < oe[1]; i1++)
                        for (int64_t i0 = 0; i0 < oe[0]; i0++)
                            ref[lin(oe, i0, i1, i2, i3)] = x[lin(ne, i0, i1 % ne[1], i2, i3 % ne[3])];
        } else if (k == 6) { /* pad (+2, -1, +1, 0) */
            t = loom_pad(ctx, make_f32(ctx, L_T01, ne, x), 2, -1, 1, 0);
            int64_t oe[4] = {ne[0] + 2, ne[1] - 1, ne[2] + 1, ne[3]};
            on = nel(oe);
            free(ref);
            ref = malloc((size_t)on * sizeof(double));
            for (int64_t i3 = 0; i3 < oe[3]; i3++)
                for (int64_t i2 = 0; i2 < oe[2]; i2++)
                    for (int64_t i1 = 0; i1 < oe[1]; i1++)
                        for (int64_t i0 = 0; i0 < oe[0]; i0++)
                            ref[lin(oe, i0, i1, i2, i3)] =
                                (i0 < ne[0] && i2 < ne[2]) ? x[lin(ne, i0, i1, i2, i3)] : 0.0;
        } else { /* set_1d and set_2d */
            int64_t bne[2] = {4, 3};
            float bv[12];
            for (int i = 0; i < 12; i++) bv[i] = 100.0f + (float)i;
            loom_tensor *b = loom_from_f32(loom_ctx_input(ctx), bv, 12, 2, bne);
            size_t off = (size_t)(1 * 6 + 1) * 4; /* element (1,1) of a */
            loom_tensor *s1 = loom_set(ctx, a, b, off);     /* rows of stride a.nb1 = 6 floats */
            t = loom_set_2d(ctx, s1, b, 40 * 4, 8 * 4);     /* rows of stride 8 floats at elem 40 */
            for (int64_t i = 0; i < n; i++) ref[i] = x[i];
            for (int r = 0; r < 3; r++)
                for (int c = 0; c < 4; c++) ref[7 + r * 6 + c] = bv[r * 4 + c];
            for (int r = 0; r < 3; r++)
                for (int c = 0; c < 4; c++) ref[40 + r * 8 + c] = bv[r * 4 + c];
        }
        char what[32];
        snprintf(what, sizeof what, "view/copy case %d", k);
        run_check(ctx, t, ref, on, 0, what);
        free(ref);
        free(x);
        loom_ctx_free(ctx);
    }
    /* arange F32 (graph op) and I32 (eager) */
    {
        loom_ctx *ctx = new_ctx(g_threads);
        loom_tensor *t = loom_arange(ctx, 1.5f, 9.0f, 2.0f, LOOM_TYPE_F32);
        double ref[4] = {1.5, 3.5, 5.5, 7.5};
        run_check(ctx, t, ref, 4, 0, "arange f32");
        loom_tensor *i = loom_arange(ctx, 0.0f, 5.0f, 1.0f, LOOM_TYPE_I32);
        int32_t iv[5];
        CHECK(loom_tensor_read(i, iv, sizeof iv) == LOOM_OK);
        for (int k = 0; k < 5; k++) CHECK_EQ_INT(iv[k], k);
        loom_ctx_free(ctx);
    }
}

/* Independent Q8_0 / Q4_0 decoders (block: f16 scale + 32 values). */
static void dec_q8_0(const uint8_t *blk, double *out) {
    uint16_t h = (uint16_t)(blk[0] | blk[1] << 8);
    double d = loom_fp16_to_fp32(h);
    for (int j = 0; j < 32; j++) out[j] = d * (int8_t)blk[2 + j];
}
static void dec_q4_0(const uint8_t *blk, double *out) {
    uint16_t h = (uint16_t)(blk[0] | blk[1] << 8);
    double d = loom_fp16_to_fp32(h);
    for (int j = 0; j < 16; j++) {
        out[j] = d * ((blk[2 + j] & 0x0F) - 8);
        out[j + 16] = d * ((blk[2 + j] >> 4) - 8);
    }
}

static void test_get_rows(void) {
    int64_t E = 64, R = 9;
    loom_type types[] = {LOOM_TYPE_F32, LOOM_TYPE_F16, LOOM_TYPE_BF16, LOOM_TYPE_Q8_0, LOOM_TYPE_Q4_0, LOOM_TYPE_I32};
    for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++)
        for (int idd = 1; idd <= 3; idd++) {
            loom_type ty = types[ti];
            int64_t A2 = idd >= 2 ? 2 : 1, A3 = idd == 3 ? 2 : 1;
            int64_t ane[4] = {E, R, A2, A3};
            int64_t an = nel(ane);
            loom_ctx *ctx = new_ctx(g_threads);
            float *x = rand_vec(an, 2.0);
            double *deq = malloc((size_t)an * sizeof(double));
            size_t rb;
            loom_type_row_bytes(ty, E, &rb);
            uint8_t *bytes = malloc(rb * (size_t)(an / E));
            for (int64_t r = 0; r < an / E; r++) {
                uint8_t *row = bytes + (size_t)r * rb;
                const float *xr = x + r * E;
                double *dr = deq + r * E;
                if (ty == LOOM_TYPE_F32) {
                    memcpy(row, xr, rb);
                    for (int64_t i = 0; i < E; i++) dr[i] = xr[i];
                } else if (ty == LOOM_TYPE_F16 || ty == LOOM_TYPE_BF16) {
                    for (int64_t i = 0; i < E; i++) {
                        uint16_t h = ty == LOOM_TYPE_F16 ? loom_fp32_to_fp16(xr[i]) : loom_fp32_to_bf16(xr[i]);
                        memcpy(row + 2 * i, &h, 2);
                        dr[i] = ty == LOOM_TYPE_F16 ? loom_fp16_to_fp32(h) : loom_bf16_to_fp32(h);
                    }
                } else if (ty == LOOM_TYPE_I32) {
                    for (int64_t i = 0; i < E; i++) {
                        int32_t v = (int32_t)(r * 1000 + i);
                        memcpy(row + 4 * i, &v, 4);
                        dr[i] = v;
                    }
                } else {
                    CHECK(loom_quantize_row(ty, xr, row, E) == LOOM_OK);
                    for (int64_t b = 0; b < E / 32; b++)
                        (ty == LOOM_TYPE_Q8_0 ? dec_q8_0 : dec_q4_0)(row + (size_t)b * (rb / (size_t)(E / 32)),
                                                                     dr + b * 32);
                }
            }
            loom_tensor *a = loom_from_bytes(loom_ctx_input(ctx), ty, bytes, rb * (size_t)(an / E), 4, ane);
            /* ids [n, A2, A3], as a strided view (every other element of a bigger I32 tensor) */
            int64_t nid = 5;
            int64_t big_ne[4] = {2 * nid, A2, A3, 1};
            int32_t *idv = malloc((size_t)nel(big_ne) * 4);
            for (int64_t i = 0; i < nel(big_ne); i++) idv[i] = (int32_t)((i * 5 + 3) % R);
            loom_tensor *big = loom_from_i32(loom_ctx_input(ctx), idv, (size_t)nel(big_ne), 3, big_ne);
            int64_t vargs[5] = {nid, (int64_t)big->nb[1], A2, (int64_t)big->nb[2], A3};
            /* view with nb0 = 4 but take elements 0..nid-1 of each row */
            loom_tensor *ids = loom_view(ctx, big, 0, 5, vargs);
            loom_tensor *t = loom_get_rows(ctx, a, ids);
            CHECK(loom_tensor_type(t) == (ty == LOOM_TYPE_I32 ? LOOM_TYPE_I32 : LOOM_TYPE_F32));
            int64_t one[4] = {E, nid, A2, A3};
            int64_t on = nel(one);
            double *ref = malloc((size_t)on * sizeof(double));
            for (int64_t k = 0; k < A3; k++)
                for (int64_t j = 0; j < A2; j++)
                    for (int64_t i = 0; i < nid; i++) {
                        int32_t id = idv[lin(big_ne, i, j, k, 0)];
                        for (int64_t e = 0; e < E; e++) ref[lin(one, e, i, j, k)] = deq[lin(ane, e, id, j, k)];
                    }
            char what[48];
            snprintf(what, sizeof what, "get_rows %s ids %dD", loom_type_name(ty), idd);
            if (ty == LOOM_TYPE_I32) {
                loom_ctx_forward(ctx, t);
                CHECK(loom_ctx_compute(ctx, 1, &t) == LOOM_OK);
                int32_t *o = malloc((size_t)on * 4);
                CHECK(loom_tensor_read(t, o, (size_t)on * 4) == LOOM_OK);
                int bad = 0;
                for (int64_t i = 0; i < on; i++) bad += o[i] != (int32_t)ref[i];
                CHECK_MSG(bad == 0, "%s: %d wrong", what, bad);
                free(o);
            } else {
                run_check(ctx, t, ref, on, 1e-14, what);
            }
            free(ref);
            free(idv);
            free(bytes);
            free(deq);
            free(x);
            loom_ctx_free(ctx);
        }
    /* out-of-range id: compute fails with RANGE, no crash */
    {
        loom_ctx *ctx = new_ctx(g_threads);
        int64_t ne[2] = {4, 3};
        float v[12] = {0};
        int32_t bad[2] = {1, 3};
        int64_t ine[1] = {2};
        loom_tensor *t = loom_get_rows(ctx, loom_from_f32(loom_ctx_input(ctx), v, 12, 2, ne),
                                       loom_from_i32(loom_ctx_input(ctx), bad, 2, 1, ine));
        loom_ctx_forward(ctx, t);
        CHECK(loom_ctx_compute(ctx, 1, &t) == LOOM_ERR_RANGE);
        CHECK(strstr(loom_ctx_error(ctx), "GET_ROWS") != NULL);
        loom_ctx_free(ctx);
    }
}

static void test_cpy(void) {
    loom_type dts[] = {LOOM_TYPE_F32, LOOM_TYPE_F16, LOOM_TYPE_BF16, LOOM_TYPE_Q8_0, LOOM_TYPE_Q4_0};
    for (size_t di = 0; di < sizeof dts / sizeof dts[0]; di++)
        for (int layout = 0; layout < 3; layout++) {
            loom_type dt = dts[di];
            bool q = dt == LOOM_TYPE_Q8_0 || dt == LOOM_TYPE_Q4_0;
            loom_ctx *ctx = new_ctx(g_threads);
            /* source logical [32, 3, 2]; destination: a strided view [64, 3] (rows 64 of a 96-wide cache,
             * starting at row 1) -> flattened order regroups 2 source rows per destination row */
            int64_t sne[4] = {32, 3, 2, 1};
            int64_t n = nel(sne);
            float *x = rand_vec(n, 2.0);
            loom_tensor *a = make_f32(ctx, layout, sne, x);
            int64_t cne[2] = {q ? 128 : 96, 5};
            loom_tensor *cache = loom_empty(loom_ctx_input(ctx), dt, 2, cne);
            size_t rb = loom_tensor_nb(cache, 1);
            memset(cache->data, 0xFF, rb * 5); /* NaN-ish prefill */
            int64_t vargs[3] = {64, (int64_t)rb, 3};
            loom_tensor *dst = loom_view(ctx, cache, rb, 3, vargs);
            loom_tensor *c = loom_cpy(ctx, a, dst);
            CHECK(loom_ctx_status(ctx) == LOOM_OK);
            loom_ctx_forward(ctx, c);
            CHECK(loom_ctx_compute(ctx, 0, NULL) == LOOM_OK);
            double num = 0, den = 0;
            for (int r = 0; r < 3; r++) {
                const uint8_t *row = (const uint8_t *)cache->data + rb * (size_t)(r + 1);
                for (int e = 0; e < 64; e++) {
                    double got;
                    if (dt == LOOM_TYPE_F32) got = ((const float *)row)[e];
                    else if (dt == LOOM_TYPE_F16) got = loom_fp16_to_fp32(((const uint16_t *)row)[e]);
                    else if (dt == LOOM_TYPE_BF16) got = loom_bf16_to_fp32(((const uint16_t *)row)[e]);
                    else {
                        double blk[32];
                        size_t bb = dt == LOOM_TYPE_Q8_0 ? 34 : 18;
                        (dt == LOOM_TYPE_Q8_0 ? dec_q8_0 : dec_q4_0)(row + (size_t)(e / 32) * bb, blk);
                        got = blk[e % 32];
                    }
                    double want = x[r * 64 + e];
                    num += (got - want) * (got - want);
                    den += want * want;
                }
            }
            double bound = dt == LOOM_TYPE_F32 ? 0 : dt == LOOM_TYPE_F16 ? 1e-6 : dt == LOOM_TYPE_BF16 ? 1e-4
                         : dt == LOOM_TYPE_Q8_0 ? 1e-4 : 1e-2;
            CHECK_MSG(num / den <= bound, "cpy %s layout %d nmse %g", loom_type_name(dt), layout, num / den);
            /* rows 0 and 4 untouched */
            const uint8_t *r0 = cache->data, *r4 = (const uint8_t *)cache->data + 4 * rb;
            bool untouched = true;
            for (size_t i = 0; i < rb; i++) untouched &= r0[i] == 0xFF && r4[i] == 0xFF;
            CHECK_MSG(untouched, "cpy %s wrote outside its view", loom_type_name(dt));
            free(x);
            loom_ctx_free(ctx);
        }
    /* F16 -> F32 and I32 -> I32 */
    {
        loom_ctx *ctx = new_ctx(g_threads);
        int64_t ne[2] = {5, 2};
        uint16_t h[10];
        int32_t iv[10];
        for (int i = 0; i < 10; i++) h[i] = loom_fp32_to_fp16((float)i * 0.25f), iv[i] = i * 7 - 3;
        loom_tensor *hf = loom_from_bytes(loom_ctx_input(ctx), LOOM_TYPE_F16, h, sizeof h, 2, ne);
        loom_tensor *f = loom_zeros(loom_ctx_input(ctx), LOOM_TYPE_F32, 2, ne);
        loom_tensor *ii = loom_from_i32(loom_ctx_input(ctx), iv, 10, 2, ne);
        loom_tensor *io = loom_zeros(loom_ctx_input(ctx), LOOM_TYPE_I32, 2, ne);
        loom_ctx_forward(ctx, loom_cpy(ctx, hf, f));
        loom_ctx_forward(ctx, loom_cpy(ctx, loom_transpose(ctx, ii), io));
        CHECK(loom_ctx_compute(ctx, 0, NULL) == LOOM_OK);
        float fo[10];
        int32_t ioo[10];
        CHECK(loom_tensor_read_f32(f, fo, 10) == LOOM_OK);
        CHECK(loom_tensor_read(io, ioo, sizeof ioo) == LOOM_OK);
        for (int i = 0; i < 10; i++) CHECK_NEAR(fo[i], i * 0.25, 0);
        /* transposed [2,5] logical order: element (r,c) = iv[c*5 + r] */
        for (int k = 0; k < 10; k++) CHECK_EQ_INT(ioo[k], iv[(k % 2) * 5 + k / 2]);
        loom_ctx_free(ctx);
    }
}

/* Dequantizing copies (Q8_0 / Q4_0 -> F32; DSA reads its cached indexer keys so): rows
 * of a strided view (the last 64 of 96 elements of rows 1..3 of a cache) decoded block by
 * block as the format says (d * q), exactly; shapes that differ or split a block are refused */
static void test_cpy_dequant(void) {
    const loom_type ts[] = {LOOM_TYPE_Q8_0, LOOM_TYPE_Q4_0};
    for (size_t ti = 0; ti < 2; ti++) {
        const loom_type t = ts[ti];
        const size_t bb = t == LOOM_TYPE_Q8_0 ? 34 : 18, rb = 3 * bb; /* a row: 96 elements */
        uint8_t raw[5 * 3 * 34];
        uint32_t lcg = 777u + (uint32_t)ti; /* its own generator: rnd()'s stream stays as it was */
        for (size_t i = 0; i < sizeof raw; i++) raw[i] = (uint8_t)((lcg = lcg * 1664525u + 1013904223u) >> 24);
        for (size_t b = 0; b < 15; b++) { /* finite scales */
            const uint16_t h = loom_fp32_to_fp16((float)(0.01 + 0.2 * (double)(b % 7)) * (b % 2 ? -1.0f : 1.0f));
            raw[b * bb] = (uint8_t)(h & 0xFF);
            raw[b * bb + 1] = (uint8_t)(h >> 8);
        }
        loom_ctx *ctx = new_ctx(g_threads);
        int64_t cne[2] = {96, 5};
        loom_tensor *cache = loom_from_bytes(loom_ctx_input(ctx), t, raw, 5 * rb, 2, cne);
        int64_t vargs[3] = {64, (int64_t)rb, 3};
        loom_tensor *v = loom_view(ctx, cache, rb + bb, 3, vargs); /* rows 1..3, elements 32..95 */
        int64_t one[2] = {64, 3};
        loom_tensor *y = loom_cpy(ctx, v, loom_empty(ctx, LOOM_TYPE_F32, 2, one));
        loom_ctx_forward(ctx, y);
        CHECK(loom_ctx_compute(ctx, 0, NULL) == LOOM_OK);
        float out[192];
        CHECK(loom_tensor_read_f32(y, out, 192) == LOOM_OK);
        int bad = 0;
        for (int r = 0; r < 3; r++)
            for (int b = 0; b < 2; b++) {
                double blk[32];
                (t == LOOM_TYPE_Q8_0 ? dec_q8_0 : dec_q4_0)(raw + (size_t)(r + 1) * rb + (size_t)(b + 1) * bb, blk);
                for (int j = 0; j < 32; j++) bad += out[r * 64 + b * 32 + j] != (float)blk[j];
            }
        CHECK_MSG(bad == 0, "dequantizing cpy %s: %d values differ from the format's d * q", loom_type_name(t), bad);
        loom_ctx_free(ctx);
        /* refused: another shape, a row that is not whole blocks */
        ctx = new_ctx(1);
        cache = loom_from_bytes(loom_ctx_input(ctx), t, raw, 5 * rb, 2, cne);
        int64_t other[2] = {96 * 5, 1};
        loom_cpy(ctx, cache, loom_empty(ctx, LOOM_TYPE_F32, 2, other));
        CHECK_EQ_INT(loom_ctx_status(ctx), LOOM_ERR_SHAPE);
        loom_ctx_free(ctx);
    }
}

/* ------------------------------------------------------------------ threads give identical results */

static void test_threads_identical(void) {
    float *outs[3] = {0};
    int64_t ne[4] = {257, 7, 3, 1};
    int64_t n = nel(ne);
    for (int nt = 1; nt <= 3; nt++) {
        g_rng = 42;
        loom_ctx *ctx = new_ctx(nt);
        float *x = rand_vec(n, 3.0), *w = rand_vec(ne[0], 1.0);
        int64_t wne[1] = {ne[0]};
        loom_tensor *a = make_f32(ctx, L_P12, ne, x);
        loom_tensor *wt = loom_from_f32(loom_ctx_input(ctx), w, (size_t)ne[0], 1, wne);
        loom_tensor *h = loom_rms_norm(ctx, a, wt, 1e-5f);
        h = loom_add(ctx, loom_silu(ctx, h), loom_gelu(ctx, a));
        h = loom_softmax_ext(ctx, loom_cont(ctx, h), NULL, 0.5f);
        h = loom_layer_norm(ctx, h, NULL, NULL, 1e-5f);
        loom_ctx_forward(ctx, h);
        CHECK(loom_ctx_compute(ctx, 1, &h) == LOOM_OK);
        outs[nt - 1] = malloc((size_t)n * 4);
        CHECK(loom_tensor_read_f32(h, outs[nt - 1], (size_t)n) == LOOM_OK);
        free(x);
        free(w);
        loom_ctx_free(ctx);
    }
    CHECK(memcmp(outs[0], outs[1], (size_t)n * 4) == 0);
    CHECK(memcmp(outs[0], outs[2], (size_t)n * 4) == 0);
    for (int i = 0; i < 3; i++) free(outs[i]);
}

/* loom_swiglu = silu(g) * u: one fused SILU node for contiguous F32 operands of one
 * shape (bit for bit the separate SILU then MUL), the two-node form otherwise; both
 * against float64. */
static void test_swiglu(void) {
    /* plus one long row (decode: the threads split it, in whole cache lines) */
    static const int64_t rows[2][4] = {{5632, 1, 1, 1}, {4099, 1, 1, 1}};
    for (int si = 0; si < N_SHAPES + 2; si++)
        for (int layout = 0; layout < 2; layout++) {
            const int64_t *ne = si < N_SHAPES ? g_shapes[si] : rows[si - N_SHAPES];
            const int64_t n = nel(ne);
            float *g = rand_vec(n, 4.0), *u = rand_vec(n, 2.0);
            double *ref = malloc((size_t)n * sizeof(double));
            for (int64_t i = 0; i < n; i++) ref[i] = (double)g[i] / (1.0 + exp(-(double)g[i])) * u[i];
            float *outs[2] = {NULL, NULL};
            for (int fused = 0; fused < 2; fused++) {
                loom_ctx *ctx = new_ctx(g_threads);
                loom_tensor *gt = make_f32(ctx, layout, ne, g), *ut = make_f32(ctx, L_CONT, ne, u);
                loom_tensor *t = fused ? loom_swiglu(ctx, gt, ut) : loom_mul(ctx, loom_silu(ctx, gt), ut);
                if (fused) {
                    const bool one = layout == L_CONT || ne[0] == 1 || (ne[1] == 1 && ne[2] == 1);
                    CHECK_MSG(one ? loom_tensor_op(t) == LOOM_OP_SILU && loom_tensor_src(t, 1) == ut
                                  : loom_tensor_op(t) == LOOM_OP_MUL,
                              "swiglu shape %d layout %d: node form", si, layout);
                }
                char what[64];
                snprintf(what, sizeof what, "swiglu %d shape %d layout %d", fused, si, layout);
                if (run_check(ctx, t, ref, n, 1e-10, what)) {
                    outs[fused] = malloc((size_t)n * sizeof(float));
                    CHECK_EQ_INT(loom_tensor_read_f32(t, outs[fused], (size_t)n), LOOM_OK);
                }
                loom_ctx_free(ctx);
            }
            if (outs[0] && outs[1])
                CHECK_MSG(memcmp(outs[0], outs[1], (size_t)n * sizeof(float)) == 0,
                          "swiglu shape %d layout %d: not bit-identical to silu then mul", si, layout);
            free(outs[0]);
            free(outs[1]);
            free(g);
            free(u);
            free(ref);
        }
}

int main(void) {
    for (g_threads = 1; g_threads <= 3; g_threads += 2) {
        test_swiglu();
        test_binary();
        test_unary();
        test_gelu_f16();
        test_tanh_range();
        test_reductions();
        test_softmax();
        test_views();
        test_get_rows();
        test_cpy();
    test_cpy_dequant();
        test_mixed();
    }
    test_threads_identical();
    return test_finish("test_cpu_ops_basic");
}
