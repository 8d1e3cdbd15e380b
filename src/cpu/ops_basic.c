/* Scalar reference kernels: elementwise binary/unary, reductions, softmax, norms, arange.
 *
 * Numerics (documented deviations from ggml-CPU):
 *  - GELU and QUICK_GELU are computed exactly in f32 (tanhf / expf), not through
 *    ggml's 64K-entry f16 lookup table; differences are ~1e-3 relative.
 *  - SOFT_MAX: a row whose every (scaled + masked) value is -inf yields zeros
 *    instead of NaN.
 *  - Row sums (SUM_ROWS, MEAN, NORM, RMS_NORM, SOFT_MAX) accumulate in double.
 */
#include "cpu/kernels.h"
#include "cpu/ops.h"

#include <math.h>
#include <pthread.h>
#include <string.h>

/* ------------------------------------------------------------------ binary */

enum { BIN_ADD, BIN_SUB, BIN_MUL, BIN_DIV };

static inline float bin_apply(int k, float x, float y) {
    switch (k) {
    case BIN_ADD: return x + y;
    case BIN_SUB: return x - y;
    case BIN_MUL: return x * y;
    default: return x / y;
    }
}

static void binary_kernel(const loom_compute_params *p, loom_tensor *dst, int kind) {
    const loom_tensor *a = dst->src[0], *b = dst->src[1];
    int64_t ne0 = dst->ne[0], ne1 = dst->ne[1], ne2 = dst->ne[2];
    int64_t r0, r1;
    loom_cpu_split(loom_nrows(dst), p->ith, p->nth, &r0, &r1);
    bool fast = a->type == LOOM_TYPE_F32 && b->type == LOOM_TYPE_F32 && a->nb[0] == 4 && b->nb[0] == 4;
    for (int64_t r = r0; r < r1; r++) {
        int64_t i3 = r / (ne1 * ne2), i2 = (r / ne1) % ne2, i1 = r % ne1;
        const char *ra = loom_row_ptr(a, i1, i2, i3);
        const char *rb = loom_row_ptr(b, i1 % b->ne[1], i2 % b->ne[2], i3 % b->ne[3]);
        char *rd = loom_row_ptr(dst, i1, i2, i3);
        if (fast && dst->type == LOOM_TYPE_F32) {
            const float *x = (const float *)ra, *y = (const float *)rb;
            float *d = (float *)rd;
            int64_t nb0 = b->ne[0];
            if (nb0 == ne0) {
                switch (kind) {
                case BIN_ADD: for (int64_t i = 0; i < ne0; i++) d[i] = x[i] + y[i]; break;
                case BIN_SUB: for (int64_t i = 0; i < ne0; i++) d[i] = x[i] - y[i]; break;
                case BIN_MUL: for (int64_t i = 0; i < ne0; i++) d[i] = x[i] * y[i]; break;
                default: for (int64_t i = 0; i < ne0; i++) d[i] = x[i] / y[i]; break;
                }
            } else {
                for (int64_t i = 0; i < ne0; i++) d[i] = bin_apply(kind, x[i], y[i % nb0]);
            }
            continue;
        }
        for (int64_t i = 0; i < ne0; i++) {
            float x = loom_ld_f(ra + i * a->nb[0], a->type);
            float y = loom_ld_f(rb + (i % b->ne[0]) * b->nb[0], b->type);
            loom_st_f(rd + i * dst->nb[0], dst->type, bin_apply(kind, x, y));
        }
    }
}

void loom_cpu_op_add(const loom_compute_params *p, loom_tensor *dst) { binary_kernel(p, dst, BIN_ADD); }
void loom_cpu_op_sub(const loom_compute_params *p, loom_tensor *dst) { binary_kernel(p, dst, BIN_SUB); }
void loom_cpu_op_mul(const loom_compute_params *p, loom_tensor *dst) { binary_kernel(p, dst, BIN_MUL); }
void loom_cpu_op_div(const loom_compute_params *p, loom_tensor *dst) { binary_kernel(p, dst, BIN_DIV); }

/* ------------------------------------------------------------------ unary */

static inline float u_neg(float x, float p0, float p1) { (void)p0; (void)p1; return -x; }
static inline float u_scale(float x, float p0, float p1) { (void)p1; return x * p0; }
static inline float u_sqr(float x, float p0, float p1) { (void)p0; (void)p1; return x * x; }
static inline float u_sqrt(float x, float p0, float p1) { (void)p0; (void)p1; return sqrtf(x); }
static inline float u_sin(float x, float p0, float p1) { (void)p0; (void)p1; return sinf(x); }
static inline float u_cos(float x, float p0, float p1) { (void)p0; (void)p1; return cosf(x); }
static inline float u_tanh(float x, float p0, float p1) { (void)p0; (void)p1; return tanhf(x); }

static void tanh_row(int64_t n, const float *x, float *y) { loom_kernels_get()->tanh_f32(n, x, y, 1.0f, 1.0f); }
static inline float u_sigmoid(float x, float p0, float p1) { (void)p0; (void)p1; return 1.0f / (1.0f + expf(-x)); }
static inline float u_silu(float x, float p0, float p1) { (void)p0; (void)p1; return x / (1.0f + expf(-x)); }
static inline float u_relu(float x, float p0, float p1) { (void)p0; (void)p1; return x > 0.0f ? x : 0.0f; }
static inline float u_gelu(float x, float p0, float p1) {
    (void)p1;
    const float k = 0.7978845608028654f; /* sqrt(2/pi) */
    if (p0 != 0.0f) {
        /* loom_gelu_f16: ggml's CPU table (input and result rounded to F16, saturating
         * outside (-10, 10)) */
        if (x <= -10.0f) return 0.0f;
        if (x >= 10.0f) return x;
        x = loom_fp16_to_fp32(loom_fp32_to_fp16(x));
        return loom_fp16_to_fp32(loom_fp32_to_fp16(0.5f * x * (1.0f + tanhf(k * x * (1.0f + 0.044715f * x * x)))));
    }
    return 0.5f * x * (1.0f + tanhf(k * (x + 0.044715f * x * x * x)));
}
/* loom_gelu_f16 on contiguous rows: its input is rounded to F16 before the formula, so
 * the result is a function of 65536 values: a table of u_gelu's F16 results, built
 * once (pthread_once) from the same expression, makes the op bit-identical to the
 * scalar path at a lookup per element (the conversions go through the level's row
 * kernels). The saturation tests stay on the unrounded input, as in u_gelu. */
static uint16_t g_gelu_f16[1 << 16];
static pthread_once_t g_gelu_f16_once = PTHREAD_ONCE_INIT;

static void gelu_f16_init(void) {
    const float k = 0.7978845608028654f;
    for (uint32_t i = 0; i < (1u << 16); i++) {
        const float x = loom_fp16_to_fp32((uint16_t)i);
        g_gelu_f16[i] = loom_fp32_to_fp16(0.5f * x * (1.0f + tanhf(k * x * (1.0f + 0.044715f * x * x))));
    }
}

static void gelu_f16_row(int64_t n, const float *x, float *y) {
    const loom_kernels *kt = loom_kernels_get();
    uint16_t h[256];
    float v[256]; /* the inputs (y may be x) */
    for (int64_t i0 = 0; i0 < n; i0 += 256) {
        const int64_t m = n - i0 < 256 ? n - i0 : 256;
        memcpy(v, x + i0, (size_t)m * sizeof(float));
        kt->from_float[LOOM_TYPE_F16](v, h, m);
        for (int64_t i = 0; i < m; i++) h[i] = g_gelu_f16[h[i]];
        kt->f16_to_f32(m, h, y + i0);
        for (int64_t i = 0; i < m; i++) {
            if (v[i] <= -10.0f) y[i0 + i] = 0.0f;
            else if (v[i] >= 10.0f) y[i0 + i] = v[i];
        }
    }
}

static void (*gelu_f16_rows(void))(int64_t, const float *, float *) {
    if (pthread_once(&g_gelu_f16_once, gelu_f16_init) != 0) return NULL; /* the scalar path then */
    return gelu_f16_row;
}

static inline float u_quick_gelu(float x, float p0, float p1) {
    (void)p0;
    (void)p1;
    return x / (1.0f + expf(-1.702f * x));
}
static inline float u_clamp(float x, float lo, float hi) { return x < lo ? lo : (x > hi ? hi : x); }

/* ROWFN: NULL, or a function(n, x, y) that computes a contiguous F32 row at once
 * (the kernel table's vectorised version of fn). */
#define UNARY_KERNEL_ROWS(name, fn, ROWFN)                                                           \
    void loom_cpu_op_##name(const loom_compute_params *p, loom_tensor *dst) {                        \
        const loom_tensor *a = dst->src[0];                                                         \
        void (*rowfn)(int64_t, const float *, float *) = ROWFN;                                     \
        const loom_tensor *gm = dst->src[1]; /* only loom_swiglu's SILU has one */                  \
        float p0 = loom_get_op_param_f32(dst, 0), p1 = loom_get_op_param_f32(dst, 1);               \
        int64_t ne0 = dst->ne[0], ne1 = dst->ne[1], ne2 = dst->ne[2];                               \
        const bool f32 = a->type == LOOM_TYPE_F32 && a->nb[0] == 4 && dst->type == LOOM_TYPE_F32 &&  \
                         dst->nb[0] == 4;                                                           \
        int64_t r0, r1, e0 = 0, e1 = ne0;                                                           \
        if (f32 && loom_nrows(dst) < p->nth) {                                                      \
            /* fewer rows than threads (decode): every thread takes a part of each row, \
             * in whole cache lines */                                                             \
            int64_t l0, l1;                                                                         \
            loom_cpu_split((ne0 + 15) / 16, p->ith, p->nth, &l0, &l1);                              \
            e0 = l0 * 16 < ne0 ? l0 * 16 : ne0;                                                     \
            e1 = l1 * 16 < ne0 ? l1 * 16 : ne0;                                                     \
            r0 = 0;                                                                                 \
            r1 = loom_nrows(dst);                                                                   \
        } else {                                                                                    \
            loom_cpu_split(loom_nrows(dst), p->ith, p->nth, &r0, &r1);                              \
        }                                                                                           \
        for (int64_t r = r0; r < r1; r++) {                                                         \
            int64_t i3 = r / (ne1 * ne2), i2 = (r / ne1) % ne2, i1 = r % ne1;                       \
            const char *ra = loom_row_ptr(a, i1, i2, i3);                                           \
            char *rd = loom_row_ptr(dst, i1, i2, i3);                                               \
            if (f32) {                                                                              \
                const float *x = (const float *)ra + e0;                                            \
                float *d = (float *)rd + e0;                                                        \
                const int64_t ne = e1 - e0;                                                         \
                if (rowfn) rowfn(ne, x, d);                                                         \
                else                                                                                \
                    for (int64_t i = 0; i < ne; i++) d[i] = fn(x[i], p0, p1);                       \
                if (gm) { /* fused multiplier (loom_swiglu): contiguous F32, same shape */           \
                    const float *m = (const float *)loom_row_ptr(gm, i1, i2, i3) + e0;              \
                    for (int64_t i = 0; i < ne; i++) d[i] = d[i] * m[i];                            \
                }                                                                                   \
            } else {                                                                                \
                for (int64_t i = 0; i < ne0; i++)                                                   \
                    loom_st_f(rd + i * dst->nb[0], dst->type,                                       \
                              fn(loom_ld_f(ra + i * a->nb[0], a->type), p0, p1));                   \
            }                                                                                       \
        }                                                                                           \
    }
#define UNARY_KERNEL(name, fn) UNARY_KERNEL_ROWS(name, fn, NULL)

UNARY_KERNEL(neg, u_neg)
UNARY_KERNEL(scale, u_scale)
UNARY_KERNEL(sqr, u_sqr)
UNARY_KERNEL(sqrt, u_sqrt)
UNARY_KERNEL(sin, u_sin)
UNARY_KERNEL(cos, u_cos)
/* TANH: contiguous F32 rows through the kernel table (the level's exp at SIMD levels) */
UNARY_KERNEL_ROWS(tanh, u_tanh, tanh_row)
UNARY_KERNEL(sigmoid, u_sigmoid)
/* SiLU: contiguous F32 rows through the kernel table (vectorised exp) */
UNARY_KERNEL_ROWS(silu, u_silu, loom_kernels_get()->silu_f32)
UNARY_KERNEL(relu, u_relu)
/* GELU: contiguous F32 rows through the kernel table (vectorised exp at SIMD levels)
 * when the op has no parameter; the F16 variant (op param 0) through its table */
UNARY_KERNEL_ROWS(gelu, u_gelu,
                  (loom_get_op_param_f32(dst, 0) == 0.0f ? loom_kernels_get()->gelu_f32 : gelu_f16_rows()))
UNARY_KERNEL(quick_gelu, u_quick_gelu)
UNARY_KERNEL(clamp, u_clamp)

/* ------------------------------------------------------------------ reductions */

static double row_sum(const loom_tensor *a, const char *ra) {
    double s = 0.0;
    if (a->type == LOOM_TYPE_F32 && a->nb[0] == 4) {
        const float *x = (const float *)ra;
        for (int64_t i = 0; i < a->ne[0]; i++) s += x[i];
    } else {
        for (int64_t i = 0; i < a->ne[0]; i++) s += loom_ld_f(ra + i * a->nb[0], a->type);
    }
    return s;
}

static void reduce_kernel(const loom_compute_params *p, loom_tensor *dst, bool mean) {
    const loom_tensor *a = dst->src[0];
    int64_t ne1 = dst->ne[1], ne2 = dst->ne[2];
    int64_t r0, r1;
    loom_cpu_split(loom_nrows(dst), p->ith, p->nth, &r0, &r1);
    for (int64_t r = r0; r < r1; r++) {
        int64_t i3 = r / (ne1 * ne2), i2 = (r / ne1) % ne2, i1 = r % ne1;
        double s = row_sum(a, loom_row_ptr(a, i1, i2, i3));
        if (mean) s /= (double)a->ne[0];
        loom_st_f(loom_row_ptr(dst, i1, i2, i3), dst->type, (float)s);
    }
}

void loom_cpu_op_sum_rows(const loom_compute_params *p, loom_tensor *dst) { reduce_kernel(p, dst, false); }
void loom_cpu_op_mean(const loom_compute_params *p, loom_tensor *dst) { reduce_kernel(p, dst, true); }

void loom_cpu_op_soft_max(const loom_compute_params *p, loom_tensor *dst) {
    const loom_tensor *a = dst->src[0], *m = dst->src[1];
    float scale = loom_get_op_param_f32(dst, 0);
    const float max_bias = loom_get_op_param_f32(dst, 1); /* ALiBi: the mask times the head's slope */
    int64_t ne0 = dst->ne[0], ne1 = dst->ne[1], ne2 = dst->ne[2];
    const loom_kernels *kt = loom_kernels_get();
    const bool fast = a->type == LOOM_TYPE_F32 && a->nb[0] == sizeof(float) &&
                      (!m || (m->type == LOOM_TYPE_F16 && m->nb[0] == 2) ||
                       (m->type == LOOM_TYPE_F32 && m->nb[0] == sizeof(float)));
    int64_t r0, r1;
    loom_cpu_split(loom_nrows(dst), p->ith, p->nth, &r0, &r1);
    for (int64_t r = r0; r < r1; r++) {
        int64_t i3 = r / (ne1 * ne2), i2 = (r / ne1) % ne2, i1 = r % ne1;
        const char *ra = loom_row_ptr(a, i1, i2, i3);
        float *d = (float *)loom_row_ptr(dst, i1, i2, i3);
        const char *rm = m ? loom_row_ptr(m, i1, i2 % m->ne[2], i3 % m->ne[3]) : NULL;
        /* attention sink: one more logit per head (dim 2) in the normaliser only */
        const float *snk = dst->src[2] ? (const float *)dst->src[2]->data + i2 : NULL;
        const float slope = rm && max_bias > 0.0f ? loom_alibi_slope(max_bias, i2, ne2) : 1.0f;
        float mx = snk ? *snk : -INFINITY;
        if (fast) {
            /* contiguous F32 row, F32/F16 mask: in chunks, the mask through the table's
             * f16_to_f32 into d (a local buffer when x is d: then a chunk of x is read
             * before that chunk of d is written), scale * x added by its axpy_f32, the
             * running maximum by its max_f32; 1 / sum applied by its scale_f32. (Computing
             * only the span between a mask row's first and last visible key, zeros
             * elsewhere, measured slower on a Zen 4: 1.1B Q4_0 pp2048, the softmax's samples
             * 13.0-14.2k against 10.9-12.1k for whole rows; the skips break the streams
             * through the score rows.) */
            const float *x = (const float *)ra;
            const bool inplace = x == d; /* else x and d do not overlap (distinct tensors) */
            float mk[256];
            for (int64_t i0 = 0; i0 < ne0; i0 += 256) {
                const int64_t n = ne0 - i0 < 256 ? ne0 - i0 : 256;
                float *dd = d + i0, *t = inplace ? mk : dd;
                const float *xx = x + i0;
                if (!rm) memset(t, 0, (size_t)n * sizeof(float));
                else if (m->type == LOOM_TYPE_F16) kt->f16_to_f32(n, (const uint16_t *)rm + i0, t);
                else memcpy(t, (const float *)rm + i0, (size_t)n * sizeof(float));
                if (slope != 1.0f) kt->scale_f32(n, t, slope); /* -inf stays -inf (slope > 0) */
                kt->axpy_f32(n, scale, xx, t); /* t += scale * x (SIMD levels: one rounding) */
                if (inplace) memcpy(dd, mk, (size_t)n * sizeof(float));
                mx = kt->max_f32(n, dd, mx);
            }
        } else {
            for (int64_t i = 0; i < ne0; i++) {
                float v = loom_ld_f(ra + i * a->nb[0], LOOM_TYPE_F32) * scale;
                if (rm) v += slope * loom_ld_f(rm + i * m->nb[0], m->type);
                d[i] = v;
                if (v > mx) mx = v;
            }
        }
        if (mx == -INFINITY) {
            for (int64_t i = 0; i < ne0; i++) d[i] = 0.0f;
            continue;
        }
        double sum = kt->exp_sum_f32(ne0, d, mx);
        if (snk) sum += exp((double)*snk - (double)mx);
        kt->scale_f32(ne0, d, (float)(1.0 / sum));
    }
}

static void norm_kernel(const loom_compute_params *p, loom_tensor *dst, bool rms) {
    const loom_tensor *a = dst->src[0];
    const float *w = rms && dst->src[1] ? (const float *)dst->src[1]->data : NULL;
    float eps = loom_get_op_param_f32(dst, 0);
    int64_t ne0 = dst->ne[0], ne1 = dst->ne[1], ne2 = dst->ne[2];
    int64_t r0, r1;
    loom_cpu_split(loom_nrows(dst), p->ith, p->nth, &r0, &r1);
    for (int64_t r = r0; r < r1; r++) {
        int64_t i3 = r / (ne1 * ne2), i2 = (r / ne1) % ne2, i1 = r % ne1;
        const char *ra = loom_row_ptr(a, i1, i2, i3);
        float *d = (float *)loom_row_ptr(dst, i1, i2, i3);
        if (ne0 == 0) continue;
        double mean = 0.0;
        if (!rms) mean = row_sum(a, ra) / (double)ne0;
        double ss = 0.0;
        if (rms && a->nb[0] == sizeof(float)) {
            /* contiguous row: 8 independent double sums (the single chain was latency
             * bound), added pairwise at the end */
            const float *x = (const float *)ra;
            double s8[8] = {0};
            int64_t i = 0;
            for (; i + 8 <= ne0; i += 8)
                for (int k = 0; k < 8; k++) s8[k] += (double)x[i + k] * (double)x[i + k];
            for (; i < ne0; i++) s8[0] += (double)x[i] * (double)x[i];
            ss = ((s8[0] + s8[1]) + (s8[2] + s8[3])) + ((s8[4] + s8[5]) + (s8[6] + s8[7]));
        } else {
            for (int64_t i = 0; i < ne0; i++) {
                double v = (double)loom_ld_f(ra + i * a->nb[0], LOOM_TYPE_F32) - mean;
                ss += v * v;
            }
        }
        float sc = (float)(1.0 / sqrt(ss / (double)ne0 + (double)eps));
        if (w && a->nb[0] == sizeof(float)) { /* fused weight (RMS_NORM src[1]): (x * sc) * w, as NORM then MUL */
            const float *x = (const float *)ra;
            for (int64_t i = 0; i < ne0; i++) d[i] = (x[i] * sc) * w[i];
            continue;
        }
        if (w) {
            for (int64_t i = 0; i < ne0; i++) d[i] = ((float)loom_ld_f(ra + i * a->nb[0], LOOM_TYPE_F32) * sc) * w[i];
            continue;
        }
        for (int64_t i = 0; i < ne0; i++) d[i] = (float)(loom_ld_f(ra + i * a->nb[0], LOOM_TYPE_F32) - mean) * sc;
    }
}

void loom_cpu_op_norm(const loom_compute_params *p, loom_tensor *dst) { norm_kernel(p, dst, false); }
void loom_cpu_op_rms_norm(const loom_compute_params *p, loom_tensor *dst) { norm_kernel(p, dst, true); }

void loom_cpu_op_arange(const loom_compute_params *p, loom_tensor *dst) {
    float start = loom_get_op_param_f32(dst, 0), step = loom_get_op_param_f32(dst, 1);
    int64_t i0, i1;
    loom_cpu_split(dst->ne[0], p->ith, p->nth, &i0, &i1);
    float *d = dst->data;
    for (int64_t i = i0; i < i1; i++) d[i] = start + (float)i * step;
}

size_t loom_cpu_work_size_basic(const loom_tensor *dst, int nth) {
    if (dst->op == LOOM_OP_CPY && loom_type_is_quantized(dst->type)) {
        size_t per = ((size_t)dst->ne[0] * sizeof(float) + 63) & ~(size_t)63;
        if (per > SIZE_MAX / (size_t)(nth > 0 ? nth : 1)) return SIZE_MAX;
        return per * (size_t)nth;
    }
    return 0;
}
