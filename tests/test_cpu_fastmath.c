/* The kernel table's softmax/attention helpers at every compiled-in level:
 * exp_sum_f32 against float64 exp (relative error, -inf -> 0, NaN stays NaN, the
 * returned sum), f16_to_f32 against the reference conversion for all 65536 halves,
 * silu_f32, gelu_f32 and tanh_f32 against float64; scale_f32 (the exact float product
 * per value) and max_f32 (the largest non-NaN value) at every length and offset up to
 * 70, against the float64 product and a plain maximum. */
#include "cpu/kernels.h"
#include "test_util.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

static void test_exp_sum(const loom_kernels *k, const char *lv) {
    enum { N = 1000 };
    static float x[N], y[N];
    uint32_t seed = 12345;
    for (int i = 0; i < N; i++) {
        seed = seed * 1664525u + 1013904223u;
        x[i] = -90.0f * (float)(seed >> 8) / (float)(1u << 24); /* [-90, 0] */
    }
    x[3] = -INFINITY;
    x[10] = 0.0f;
    x[11] = -1e-30f;
    x[12] = -87.0f;
    const float mx = 0.5f; /* all arguments x - mx <= -0.5 */
    memcpy(y, x, sizeof y);
    float sum = k->exp_sum_f32(N, y, mx);
    double ref_sum = 0.0, max_rel = 0.0;
    for (int i = 0; i < N; i++) {
        double r = x[i] == -INFINITY ? 0.0 : exp((double)(x[i] - mx)); /* the float difference */
        ref_sum += r;
        if (r > 1e-30) {
            double rel = fabs((double)y[i] - r) / r;
            if (rel > max_rel) max_rel = rel;
        } else {
            CHECK_MSG(y[i] >= 0.0f && y[i] < 1e-30f, "%s: exp(%g) = %g", lv, (double)x[i] - mx, (double)y[i]);
        }
    }
    CHECK_MSG(max_rel < 1e-6, "%s: exp relative error %g", lv, max_rel);
    CHECK_MSG(y[3] == 0.0f, "%s: exp(-inf) = %g", lv, (double)y[3]);
    CHECK_MSG(fabs((double)sum - ref_sum) / ref_sum < 1e-5, "%s: sum %g vs %g", lv, (double)sum, ref_sum);
    /* short rows (tails) and NaN */
    float z[3] = {0.0f, NAN, -1.0f};
    (void)k->exp_sum_f32(3, z, 0.0f);
    CHECK_MSG(fabs(z[0] - 1.0f) < 1e-6f && isnan(z[1]) && fabs(z[2] - 0.36787944f) < 1e-6f, "%s: short row", lv);
}

static void test_f16(const loom_kernels *k, const char *lv) {
    static uint16_t h[65536];
    static float f[65536];
    for (int i = 0; i < 65536; i++) h[i] = (uint16_t)i;
    k->f16_to_f32(65536, h, f);
    int bad = 0;
    for (int i = 0; i < 65536; i++) {
        float r = loom_fp16_to_fp32((uint16_t)i);
        bool ok = isnan(r) ? isnan(f[i]) : memcmp(&r, &f[i], 4) == 0;
        bad += !ok;
    }
    CHECK_MSG(bad == 0, "%s: %d halves convert differently", lv, bad);
    float t[5] = {9, 9, 9, 9, 9};
    k->f16_to_f32(3, h + 0x3C00, t); /* 1.0 and the next two; t[3..4] untouched */
    CHECK(t[0] == 1.0f && t[3] == 9.0f && t[4] == 9.0f);
}

/* SiLU against float64 x / (1 + exp(-x)) over [-100, 100] plus special values, in
 * place and out of place, odd lengths (vector tails). */
static void test_silu(const loom_kernels *k, const char *lv) {
    enum { N = 1003 };
    static float x[N], y[N], z[N];
    uint32_t seed = 777;
    for (int i = 0; i < N; i++) {
        seed = seed * 1664525u + 1013904223u;
        double u = (double)(seed >> 8) / (double)(1u << 24);
        x[i] = (float)(i % 2 ? 200.0 * u - 100.0 : 16.0 * u - 8.0);
    }
    x[0] = 0.0f; x[1] = -0.0f; x[2] = 1e-30f; x[3] = 88.0f; x[4] = -88.0f; x[5] = -89.0f;
    x[6] = -200.0f; x[7] = INFINITY; x[8] = -INFINITY; x[9] = NAN; x[10] = 1e30f; x[11] = -1e30f;
    k->silu_f32(N, x, y);
    memcpy(z, x, sizeof z);
    k->silu_f32(N, z, z);
    CHECK_MSG(memcmp(y, z, sizeof y) == 0, "%s: silu in place differs", lv);
    double worst = 0;
    for (int i = 0; i < N; i++) {
        if (isnan(x[i])) {
            CHECK_MSG(isnan(y[i]), "%s: silu(NaN) = %g", lv, (double)y[i]);
            continue;
        }
        double xd = x[i];
        double r = isinf(xd) ? (xd > 0 ? xd : 0.0) : xd / (1.0 + exp(-xd));
        if (isinf(r)) {
            CHECK_MSG(y[i] == (float)r, "%s: silu(%g) = %g", lv, xd, (double)y[i]);
            continue;
        }
        /* relative error; absolute below 1e-30 (exp(-x) overflows a float for x < -88.7) */
        double err = fabs((double)y[i] - r) / (fabs(r) > 1e-30 ? fabs(r) : 1e-30);
        if (err > worst) worst = err;
    }
    CHECK_MSG(worst < 2e-6, "%s: silu relative error %g", lv, worst);
    float t[5] = {1.0f, 2.0f, 3.0f, 9.0f, 9.0f};
    k->silu_f32(3, t, t);
    CHECK_MSG(t[3] == 9.0f && t[4] == 9.0f && fabsf(t[0] - 0.7310586f) < 1e-6f, "%s: short row", lv);
}

/* GELU (tanh form) against float64 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))):
 * within 2e-6 relative or 1e-6 absolute (the reference level's 1 + tanhf loses the
 * low bits of the tiny negative tail), NaN and infinities, in place, tails. */
static void test_gelu(const loom_kernels *k, const char *lv) {
    enum { N = 1003 };
    static float x[N], y[N], z[N];
    uint32_t seed = 4242;
    for (int i = 0; i < N; i++) {
        seed = seed * 1664525u + 1013904223u;
        double u = (double)(seed >> 8) / (double)(1u << 24);
        x[i] = (float)(i % 2 ? 200.0 * u - 100.0 : 12.0 * u - 6.0);
    }
    x[0] = 0.0f; x[1] = -0.0f; x[2] = 1e-30f; x[3] = 50.0f; x[4] = -50.0f; x[5] = -3.0f;
    x[6] = INFINITY; x[7] = -INFINITY; x[8] = NAN; x[9] = 1e15f; x[10] = -1e15f;
    k->gelu_f32(N, x, y);
    memcpy(z, x, sizeof z);
    k->gelu_f32(N, z, z);
    CHECK_MSG(memcmp(y, z, sizeof y) == 0, "%s: gelu in place differs", lv);
    double worst = 0;
    for (int i = 0; i < N; i++) {
        if (isnan(x[i])) {
            CHECK_MSG(isnan(y[i]), "%s: gelu(NaN) = %g", lv, (double)y[i]);
            continue;
        }
        double xd = x[i];
        if (isinf(xd)) {
            CHECK_MSG(xd > 0 ? y[i] == INFINITY : (y[i] == 0.0f || isnan(y[i])), "%s: gelu(%g) = %g", lv, xd,
                      (double)y[i]);
            continue;
        }
        double r = 0.5 * xd * (1.0 + tanh(0.7978845608028654 * (xd + 0.044715 * xd * xd * xd)));
        double err = fabs((double)y[i] - r) / fmax(fabs(r) * 2e-6, 1e-6);
        if (err > worst) worst = err;
    }
    CHECK_MSG(worst <= 1.0, "%s: gelu error %g x tolerance", lv, worst);
    float t[5] = {1.0f, 2.0f, -1.0f, 9.0f, 9.0f};
    k->gelu_f32(3, t, t);
    CHECK_MSG(t[3] == 9.0f && t[4] == 9.0f && fabsf(t[0] - 0.8411920f) < 1e-6f && fabsf(t[2] + 0.1588080f) < 1e-6f,
              "%s: short row %.9g %.9g", lv, (double)t[0], (double)t[2]);
}

/* b tanh(a x) against float64 over magnitudes 1e-8 .. 60 of both signs (a = 0.7, b =
 * 2.5, then a = 1, b = 1): relative error within 4e-7 (the reference level's tanhf:
 * an ulp or two), +-0, +-inf to +-b, NaN, in place, a short row's tail untouched. */
static void test_tanh(const loom_kernels *k, const char *lv) {
    enum { N = 2003 };
    static float x[N], y[N], z[N];
    for (int i = 0; i < N; i++) {
        const double mag = pow(10.0, -8.0 + 9.8 * (double)(i / 2) / (N / 2));
        x[i] = (float)(i % 2 ? -mag : mag);
    }
    x[0] = 0.0f; x[1] = -0.0f; x[2] = INFINITY; x[3] = -INFINITY; x[4] = NAN; x[5] = 0.2499f; x[6] = 0.25f;
    const float ab[2][2] = {{0.7f, 2.5f}, {1.0f, 1.0f}};
    for (int c = 0; c < 2; c++) {
        const float a = ab[c][0], b = ab[c][1];
        k->tanh_f32(N, x, y, a, b);
        memcpy(z, x, sizeof z);
        k->tanh_f32(N, z, z, a, b);
        CHECK_MSG(memcmp(y, z, sizeof y) == 0, "%s: tanh in place differs", lv);
        double worst = 0;
        int wi = 0;
        for (int i = 0; i < N; i++) {
            if (isnan(x[i])) {
                CHECK_MSG(isnan(y[i]), "%s: tanh(NaN) = %g", lv, (double)y[i]);
                continue;
            }
            const double r = (double)b * tanh((double)(a * x[i]));
            if (r == 0.0) {
                CHECK_MSG(y[i] == 0.0f && signbit(y[i]) == signbit(x[i]), "%s: tanh(%g) = %g", lv, (double)x[i],
                          (double)y[i]);
                continue;
            }
            const double e = fabs((double)y[i] - r) / fabs(r);
            if (!(e <= worst)) worst = e, wi = i;
        }
        printf("%s: tanh a=%g b=%g max relative error %.3g\n", lv, (double)a, (double)b, worst);
        CHECK_MSG(worst <= 4e-7, "%s: tanh relative error %g at %g", lv, worst, (double)x[wi]);
    }
    float t[5] = {0.1f, -1.0f, 3.0f, 9.0f, 9.0f};
    k->tanh_f32(3, t, t, 1.0f, 1.0f);
    CHECK_MSG(t[3] == 9.0f && t[4] == 9.0f && fabsf(t[1] + 0.7615942f) < 1e-6f, "%s: short row", lv);
}

static void test_scale_max(const loom_kernels *k, const char *lv) {
    enum { N = 70 };
    float x[N + 3], y[N + 3];
    uint32_t seed = 777;
    for (int i = 0; i < N + 3; i++) {
        seed = seed * 1664525u + 1013904223u;
        x[i] = (float)((int32_t)seed >> 4) * 0x1p-20f; /* [-2048, 2048) */
    }
    const float a = 0.3183099f;
    for (int off = 0; off < 3; off++)
        for (int n = 0; n <= N; n++) {
            memcpy(y, x, sizeof y);
            k->scale_f32(n, y + off, a);
            for (int i = 0; i < N + 3; i++) { /* float(x * a): the double product rounded once */
                const float want = i >= off && i < off + n ? (float)((double)x[i] * (double)a) : x[i];
                CHECK_MSG(memcmp(&y[i], &want, 4) == 0, "%s: scale n %d off %d [%d] %a vs %a", lv, n, off, i,
                          (double)y[i], (double)want);
            }
            float want = -INFINITY;
            for (int i = 0; i < n; i++) want = x[off + i] > want ? x[off + i] : want;
            CHECK_MSG(k->max_f32(n, x + off, -INFINITY) == want, "%s: max n %d off %d", lv, n, off);
            CHECK_MSG(k->max_f32(n, x + off, 5000.0f) == 5000.0f, "%s: max above all n %d", lv, n);
            if (n > 0) { /* a NaN anywhere is skipped; the largest value placed anywhere is found */
                memcpy(y, x, sizeof y);
                y[off + n / 3] = NAN;
                if (n > 1) y[off + n - 1 - n / 4] = 4096.0f;
                float w2 = -INFINITY;
                for (int i = 0; i < n; i++) w2 = y[off + i] > w2 ? y[off + i] : w2;
                CHECK_MSG(k->max_f32(n, y + off, -INFINITY) == w2, "%s: max with NaN n %d off %d: %g vs %g", lv, n,
                          off, (double)k->max_f32(n, y + off, -INFINITY), (double)w2);
            }
        }
}

int main(void) {
    const char *const *lv = loom_kernels_levels();
    for (int i = 0; lv[i]; i++) {
        const loom_kernels *k = loom_kernels_for(lv[i]);
        if (!k) continue;
        CHECK(k->exp_sum_f32 != NULL && k->f16_to_f32 != NULL);
        if (!k->exp_sum_f32 || !k->f16_to_f32) continue;
        test_exp_sum(k, lv[i]);
        test_f16(k, lv[i]);
        CHECK(k->silu_f32 != NULL);
        if (k->silu_f32) test_silu(k, lv[i]);
        CHECK(k->gelu_f32 != NULL);
        if (k->gelu_f32) test_gelu(k, lv[i]);
        CHECK(k->tanh_f32 != NULL);
        if (k->tanh_f32) test_tanh(k, lv[i]);
        CHECK(k->scale_f32 != NULL && k->max_f32 != NULL);
        if (k->scale_f32 && k->max_f32) test_scale_max(k, lv[i]);
    }
    return test_finish("test_cpu_fastmath");
}
