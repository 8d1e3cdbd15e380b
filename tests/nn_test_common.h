/* Shared helpers for the nn-op tests (tests/test_cpu_ops_nn*.c, test_cpu_block.c):
 * random data, float64 comparison metrics and a compute wrapper that NaN-poisons
 * the memory of every computing node right before it runs (so a kernel that
 * leaves an output element unwritten is caught). */
#ifndef LOOM_NN_TEST_COMMON_H
#define LOOM_NN_TEST_COMMON_H

#include "core/ctx.h"
#include "core/tensor.h"
#include "loom.h"
#include "test_util.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static uint64_t g_rng = 0x9E3779B97F4A7C15ull;
static inline double rnd_u(void) { /* [0,1) */
    g_rng ^= g_rng << 13;
    g_rng ^= g_rng >> 7;
    g_rng ^= g_rng << 17;
    return (double)(g_rng >> 11) * (1.0 / 9007199254740992.0);
}
static inline float rnd(void) { return (float)(2.0 * rnd_u() - 1.0); }
static inline void fill_rnd(float *x, size_t n, float scale) {
    for (size_t i = 0; i < n; i++) x[i] = rnd() * scale;
}
static inline float *fmalloc(size_t n) { return (float *)malloc((n ? n : 1) * sizeof(float)); }
static inline double *dmalloc(size_t n) { return (double *)calloc(n ? n : 1, sizeof(double)); }

/* Normalised mean squared error sum((x-r)^2)/sum(r^2); 1e30 if x has a NaN. */
static inline double nmse(const float *x, const double *r, size_t n) {
    double e = 0, s = 0;
    for (size_t i = 0; i < n; i++) {
        if (isnan(x[i]) || isinf(x[i])) return 1e30;
        double d = (double)x[i] - r[i];
        e += d * d;
        s += r[i] * r[i];
    }
    return s > 0 ? e / s : e;
}
/* Max |x-r| / (max |r|); 1e30 on NaN. */
static inline double max_rel(const float *x, const double *r, size_t n) {
    double e = 0, m = 0;
    for (size_t i = 0; i < n; i++) {
        if (isnan(x[i]) || isinf(x[i])) return 1e30;
        double d = fabs((double)x[i] - r[i]);
        if (d > e) e = d;
        if (fabs(r[i]) > m) m = fabs(r[i]);
    }
    return m > 0 ? e / m : e;
}

static inline loom_ctx *nn_ctx(int nth, bool flash) {
    loom_ctx_params p = loom_ctx_default_params();
    p.n_threads = nth;
    p.flash_attn = flash;
    p.max_nodes = 4096;
    loom_ctx *ctx = NULL;
    loom_error err = {0};
    if (loom_ctx_new(&p, &ctx, &err) != LOOM_OK) {
        fprintf(stderr, "loom_ctx_new: %s\n", err.msg);
        exit(1);
    }
    return ctx;
}

/* Eval callback: poison the next node that computes into its own memory. */
static bool nn_poison_cb(loom_tensor *t, void *user) {
    loom_ctx *ctx = (loom_ctx *)user;
    loom_graph *g = loom_ctx_graph(ctx);
    for (int64_t i = t->graph_idx + 1; i >= 1 && i < g->n_nodes; i++) {
        loom_tensor *n = g->nodes[i];
        if (n->op == LOOM_OP_VIEW || n->view_src) continue;
        if (n->data && !(n->flags & LOOM_TF_POISON)) {
            size_t nb = loom_tensor_nbytes(n);
            if (n->type == LOOM_TYPE_F32) {
                float *f = (float *)n->data;
                for (size_t k = 0; k < nb / 4; k++) f[k] = NAN;
            } else {
                memset(n->data, 0xFF, nb); /* F16 NaN / I32 -1 */
            }
        }
        break;
    }
    return true;
}

/* Forward a dummy node (so the first real node is poisoned too), then out;
 * compute; read n floats (out must be contiguous F32). Returns the status. */
static inline loom_status nn_run(loom_ctx *ctx, loom_tensor *out, float *host, size_t n) {
    float one = 1.0f;
    int64_t ne1[1] = {1};
    loom_tensor *d = loom_scale(ctx, loom_from_f32(loom_ctx_input(ctx), &one, 1, 1, ne1), 1.0f);
    loom_ctx_forward(ctx, d);
    loom_status s = loom_ctx_forward(ctx, out);
    if (s) return s;
    loom_ctx_set_eval_callback(ctx, nn_poison_cb, ctx);
    s = loom_ctx_compute(ctx, 1, &out);
    if (s) return s;
    if (host) {
        if (loom_tensor_type(out) == LOOM_TYPE_F32) return loom_tensor_read_f32(out, host, n);
        return loom_tensor_read(out, host, n * 4);
    }
    return LOOM_OK;
}

static inline loom_tensor *nn_f32(loom_ctx *ctx, const float *data, int64_t ne0, int64_t ne1, int64_t ne2,
                                  int64_t ne3) {
    int64_t ne[4] = {ne0, ne1, ne2, ne3};
    return loom_from_f32(loom_ctx_input(ctx), data, (size_t)(ne0 * ne1 * ne2 * ne3), 4, ne);
}

/* F16 tensor from floats (values are rounded to half). */
static inline loom_tensor *nn_f16(loom_ctx *ctx, const float *data, int64_t ne0, int64_t ne1, int64_t ne2,
                                  int64_t ne3) {
    size_t n = (size_t)(ne0 * ne1 * ne2 * ne3);
    uint16_t *h = (uint16_t *)malloc(n * 2 + 2);
    for (size_t i = 0; i < n; i++) h[i] = loom_fp32_to_fp16(data[i]);
    int64_t ne[4] = {ne0, ne1, ne2, ne3};
    loom_tensor *t = loom_from_bytes(loom_ctx_input(ctx), LOOM_TYPE_F16, h, n * 2, 4, ne);
    free(h);
    return t;
}

/* Round floats through half precision in place (for references of F16 data). */
static inline void round_f16(float *x, size_t n) {
    for (size_t i = 0; i < n; i++) x[i] = loom_fp16_to_fp32(loom_fp32_to_fp16(x[i]));
}

/* Attention in float64 (the loom_sdpa / loom_flash_attn tests): out[(t*H + h)*Dv + d] =
 * sum_j softmax_j(x_j) v[(j*Hkv + g)*Dv + d], g = h / (H/Hkv), x_j = c(scale q.k_j) +
 * mask[t*mrow + j] (mask NULL: 0) with q = q[(t*H + h)*Dk ..], k_j = k[(j*Hkv + g)*Dk ..],
 * c(s) = softcap tanh(s / softcap) (softcap > 0) or s; sinks (NULL: none): sinks[h] joins
 * the normaliser (a row with no visible key is then 0; without sinks it is NaN). */
static inline void nn_ref_attn(int Dk, int Dv, int H, int Hkv, int T, int L, float softcap, const float *sinks,
                               const float *q, const float *k, const float *v, const float *mask, int64_t mrow,
                               float scale, double *out) {
    double *s = dmalloc((size_t)L);
    for (int t = 0; t < T; t++)
        for (int h = 0; h < H; h++) {
            const int g = h / (H / Hkv);
            double mx = -INFINITY;
            for (int j = 0; j < L; j++) {
                double d = 0;
                for (int e = 0; e < Dk; e++)
                    d += (double)q[((size_t)t * H + h) * Dk + e] * k[((size_t)j * Hkv + g) * Dk + e];
                double x = scale * d;
                if (softcap > 0) x = softcap * tanh(x / softcap);
                s[j] = x + (mask ? mask[(size_t)t * mrow + j] : 0.0);
                if (s[j] > mx) mx = s[j];
            }
            if (sinks && sinks[h] > mx) mx = sinks[h];
            double sum = sinks ? exp(sinks[h] - mx) : 0.0;
            for (int j = 0; j < L; j++) sum += (s[j] = exp(s[j] - mx));
            for (int d = 0; d < Dv; d++) {
                double acc = 0;
                for (int j = 0; j < L; j++) acc += s[j] * v[((size_t)j * Hkv + g) * Dv + d];
                out[((size_t)t * H + h) * Dv + d] = acc / sum;
            }
        }
    free(s);
}

#endif
