/* Vulkan kernels against the CPU reference engine, one op at a time, over odd shapes,
 * strided views, broadcasting and every type each kernel takes: the same graph is
 * built on a backend context whose inputs live on the Vulkan device (layer 0) and on
 * a standalone CPU context, and the outputs compared with the tolerance stated per op
 * (near the error measured on lavapipe). Each op is also checked to have run on the
 * device (not fallen back to the CPU). Skips (77) without a Vulkan device. */
#include "vk_test_util.h"

#include "loom.h"

#define NAME "test_backend_vk_ops"

static loom_backend *g_be;

typedef loom_tensor *(*build_fn)(loom_ctx *ctx, loom_tensor **in, const void *arg);

typedef struct leaf_spec {
    loom_type type;
    int nd;
    int64_t ne[4];
    const void *bytes; /* NULL: random F32 converted to type (plain types only) */
    float lo, hi;      /* random range */
} leaf_spec;

/* Random bytes for a plain-typed leaf. */
static void *rand_bytes(const leaf_spec *s, size_t *nb) {
    int64_t n = 1;
    for (int i = 0; i < s->nd; i++) n *= s->ne[i];
    size_t es = loom_type_get((uint32_t)s->type)->block_bytes;
    *nb = (size_t)n * es;
    unsigned char *b = malloc(*nb);
    for (int64_t i = 0; i < n; i++) {
        float v = s->lo + (s->hi - s->lo) * (0.5f + 0.5f * vk_rnd());
        if (s->type == LOOM_TYPE_F32) memcpy(b + 4 * i, &v, 4);
        else if (s->type == LOOM_TYPE_F16) {
            uint16_t h = loom_fp32_to_fp16(v);
            memcpy(b + 2 * i, &h, 2);
        } else if (s->type == LOOM_TYPE_BF16) {
            uint16_t h = loom_fp32_to_bf16(v);
            memcpy(b + 2 * i, &h, 2);
        } else {
            int32_t x = (int32_t)floorf(v);
            memcpy(b + 4 * i, &x, 4);
        }
    }
    return b;
}

/* Build on both engines, compute, compare. Returns the max abs difference (or INFINITY
 * on a failure); *on_dev tells whether the output node ran on the Vulkan device. */
static double run_both(const char *what, build_fn fn, const void *arg, int n_in, const leaf_spec *spec, double tol,
                       bool rel) {
    loom_ctx *g = NULL, *c = NULL;
    loom_error e = {0};
    if (loom_backend_ctx_new(g_be, 0, &g, &e) || loom_ctx_new(NULL, &c, &e)) {
        CHECK_MSG(0, "%s: contexts: %s", what, e.msg);
        loom_ctx_free(g);
        loom_ctx_free(c);
        return INFINITY;
    }
    loom_tensor *gin[8], *cin[8];
    void *bufs[8];
    for (int i = 0; i < n_in; i++) {
        size_t nb = 0;
        const void *src = spec[i].bytes;
        bufs[i] = NULL;
        if (!src) {
            bufs[i] = rand_bytes(&spec[i], &nb);
            src = bufs[i];
        } else {
            loom_type_row_bytes(spec[i].type, spec[i].ne[0], &nb);
            for (int k = 1; k < spec[i].nd; k++) nb *= (size_t)spec[i].ne[k];
        }
        gin[i] = loom_from_bytes(loom_ctx_layer(g, 0), spec[i].type, src, nb, spec[i].nd, spec[i].ne);
        cin[i] = loom_from_bytes(loom_ctx_input(c), spec[i].type, src, nb, spec[i].nd, spec[i].ne);
    }
    loom_tensor *go = fn(g, gin, arg), *co = fn(c, cin, arg);
    loom_ctx_forward(g, go);
    loom_ctx_forward(c, co);
    loom_status sg = loom_ctx_status(g) ? loom_ctx_status(g) : loom_ctx_compute(g, 1, &go);
    loom_status sc = loom_ctx_status(c) ? loom_ctx_status(c) : loom_ctx_compute(c, 1, &co);
    double md = INFINITY;
    CHECK_MSG(sg == LOOM_OK && sc == LOOM_OK, "%s: compute gpu %s (%s) cpu %s (%s)", what, loom_status_name(sg),
              loom_ctx_error(g), loom_status_name(sc), loom_ctx_error(c));
    if (sg == LOOM_OK && sc == LOOM_OK) {
        const loom_tensor *ob = loom_tensor_base(go);
        int dev = ob->op == LOOM_OP_NONE ? ob->device : ob->sched_dev;
        CHECK_MSG(dev > 0 && g_be->devices[dev].vk, "%s: ran on device %d, not the Vulkan device", what, dev);
        size_t n = (size_t)loom_tensor_nelements(co);
        float *a = malloc(n * sizeof *a), *b = malloc(n * sizeof *b);
        bool f32 = co->type == LOOM_TYPE_F32;
        if (f32) {
            CHECK(loom_tensor_read_f32(go, a, n) == LOOM_OK);
            CHECK(loom_tensor_read_f32(co, b, n) == LOOM_OK);
        } else { /* compare as float through dequantization */
            size_t nb = loom_tensor_nbytes(co);
            unsigned char *ra = malloc(nb), *rb = malloc(nb);
            CHECK(loom_tensor_read(go, ra, nb) == LOOM_OK);
            CHECK(loom_tensor_read(co, rb, nb) == LOOM_OK);
            if (co->type == LOOM_TYPE_I32) {
                for (size_t i = 0; i < n; i++) {
                    int32_t x, y;
                    memcpy(&x, ra + 4 * i, 4);
                    memcpy(&y, rb + 4 * i, 4);
                    a[i] = (float)x;
                    b[i] = (float)y;
                }
            } else {
                loom_dequantize_row(co->type, ra, a, (int64_t)n);
                loom_dequantize_row(co->type, rb, b, (int64_t)n);
            }
            free(ra);
            free(rb);
        }
        md = 0;
        double mref = 0;
        for (size_t i = 0; i < n; i++) {
            if (isnan(a[i]) != isnan(b[i]) || isinf(a[i]) != isinf(b[i])) {
                md = INFINITY;
                break;
            }
            if (isnan(a[i]) || isinf(a[i])) continue;
            double d = fabs((double)a[i] - (double)b[i]);
            if (d > md) md = d;
            if (fabs(b[i]) > mref) mref = fabs(b[i]);
        }
        double err = rel && mref > 0 ? md / mref : md;
        printf("  %-44s max %s diff %.3g (tol %.3g)\n", what, rel ? "rel" : "abs", err, tol);
        CHECK_MSG(err <= tol, "%s: diff %.3g > tol %.3g", what, err, tol);
        free(a);
        free(b);
        md = err;
    }
    for (int i = 0; i < n_in; i++) free(bufs[i]);
    loom_ctx_free(g);
    loom_ctx_free(c);
    return md;
}

/* ------------------------------------------------------------------ element-wise */

static loom_tensor *b_binary(loom_ctx *ctx, loom_tensor **in, const void *arg) {
    int op = *(const int *)arg;
    loom_tensor *a = in[0], *b = in[1];
    switch (op) {
    case 0: return loom_add(ctx, a, b);
    case 1: return loom_sub(ctx, a, b);
    case 2: return loom_mul(ctx, a, b);
    default: return loom_div(ctx, a, b);
    }
}

/* a transposed view as the first operand: strides in every dim */
static loom_tensor *b_binary_view(loom_ctx *ctx, loom_tensor **in, const void *arg) {
    (void)arg;
    loom_tensor *a = loom_permute(ctx, in[0], 1, 0, 2, 3);
    return loom_cont(ctx, loom_mul(ctx, loom_cont(ctx, a), in[1]));
}

static void test_binary(void) {
    for (int op = 0; op < 4; op++) {
        leaf_spec s[2] = {{LOOM_TYPE_F32, 4, {37, 5, 3, 2}, NULL, -2, 2}, {LOOM_TYPE_F32, 4, {37, 1, 3, 1}, NULL, 0.5f, 2}};
        char w[64];
        snprintf(w, sizeof w, "binary op %d f32 broadcast", op);
        run_both(w, b_binary, &op, 2, s, 0, false);
    }
    int op = 0;
    leaf_spec h[2] = {{LOOM_TYPE_F16, 3, {64, 7, 3}, NULL, -2, 2}, {LOOM_TYPE_F32, 1, {64}, NULL, -1, 1}};
    run_both("add f16 + f32 row", b_binary, &op, 2, h, 0, false);
    leaf_spec v[2] = {{LOOM_TYPE_F32, 2, {9, 13}, NULL, -2, 2}, {LOOM_TYPE_F32, 2, {13, 9}, NULL, -2, 2}};
    run_both("mul of a transposed copy", b_binary_view, NULL, 2, v, 0, false);
}

typedef struct un_arg {
    loom_op op;
    float p0, p1;
} un_arg;

static loom_tensor *b_unary(loom_ctx *ctx, loom_tensor **in, const void *arg) {
    const un_arg *u = arg;
    loom_tensor *a = in[0];
    switch (u->op) {
    case LOOM_OP_NEG: return loom_neg(ctx, a);
    case LOOM_OP_SCALE: return loom_scale(ctx, a, u->p0);
    case LOOM_OP_SQR: return loom_sqr(ctx, a);
    case LOOM_OP_SQRT: return loom_sqrt(ctx, loom_sqr(ctx, a));
    case LOOM_OP_SIN: return loom_sin(ctx, a);
    case LOOM_OP_COS: return loom_cos(ctx, a);
    case LOOM_OP_TANH: return loom_tanh(ctx, a);
    case LOOM_OP_SIGMOID: return loom_sigmoid(ctx, a);
    case LOOM_OP_SILU: return loom_silu(ctx, a);
    case LOOM_OP_RELU: return loom_relu(ctx, a);
    case LOOM_OP_GELU: return loom_gelu(ctx, a);
    case LOOM_OP_QUICK_GELU: return loom_quick_gelu(ctx, a);
    default: return loom_clamp(ctx, loom_cont(ctx, a), u->p0, u->p1);
    }
}

static loom_tensor *b_swiglu(loom_ctx *ctx, loom_tensor **in, const void *arg) {
    (void)arg;
    return loom_swiglu(ctx, in[0], in[1]);
}

static void test_unary(void) {
    const loom_op ops[] = {LOOM_OP_NEG, LOOM_OP_SCALE, LOOM_OP_SQR, LOOM_OP_SQRT, LOOM_OP_SIN,
                           LOOM_OP_COS, LOOM_OP_TANH, LOOM_OP_SIGMOID, LOOM_OP_SILU, LOOM_OP_RELU,
                           LOOM_OP_GELU, LOOM_OP_QUICK_GELU, LOOM_OP_CLAMP};
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) {
        un_arg u = {ops[i], 0.37f, 0.8f};
        if (ops[i] == LOOM_OP_CLAMP) u.p0 = -0.4f;
        leaf_spec s = {LOOM_TYPE_F32, 3, {77, 3, 5}, NULL, -6, 6};
        char w[64];
        snprintf(w, sizeof w, "unary %s f32", loom_op_name(ops[i]));
        /* transcendental functions: the device's exp/tanh/sin differ from libm by ulps */
        run_both(w, b_unary, &u, 1, &s, 2e-6, true);
    }
    un_arg u = {LOOM_OP_SILU, 0, 0};
    leaf_spec h = {LOOM_TYPE_F16, 2, {300, 3}, NULL, -5, 5};
    run_both("unary SILU f16 -> f16", b_unary, &u, 1, &h, 1e-3, true);
    leaf_spec sw[2] = {{LOOM_TYPE_F32, 2, {5000, 2}, NULL, -6, 6}, {LOOM_TYPE_F32, 2, {5000, 2}, NULL, -2, 2}};
    run_both("swiglu (fused SILU * up)", b_swiglu, NULL, 2, sw, 2e-6, true);
}

/* ------------------------------------------------------------------ rows */

typedef struct norm_arg {
    int kind; /* 0 rms, 1 rms + weight, 2 norm, 3 rms on a strided view */
    float eps;
} norm_arg;

static loom_tensor *b_norm(loom_ctx *ctx, loom_tensor **in, const void *arg) {
    const norm_arg *n = arg;
    switch (n->kind) {
    case 0: return loom_rms_norm(ctx, in[0], NULL, n->eps);
    case 1: return loom_rms_norm(ctx, in[0], in[1], n->eps);
    case 2: return loom_layer_norm(ctx, in[0], NULL, NULL, n->eps);
    default: {
        int64_t args[5] = {40, (int64_t)loom_tensor_nb(in[0], 1), 3, (int64_t)loom_tensor_nb(in[0], 2), 2};
        loom_tensor *v = loom_view(ctx, in[0], 8, 5, args);
        return loom_rms_norm(ctx, v, NULL, n->eps);
    }
    }
}

static loom_tensor *b_sum(loom_ctx *ctx, loom_tensor **in, const void *arg) {
    return *(const int *)arg ? loom_mean(ctx, in[0]) : loom_sum_rows(ctx, in[0]);
}

static void test_rows(void) {
    leaf_spec s[2] = {{LOOM_TYPE_F32, 3, {4100, 3, 2}, NULL, -3, 3}, {LOOM_TYPE_F32, 1, {4100}, NULL, 0, 2}};
    for (int k = 0; k < 3; k++) {
        norm_arg n = {k, 1e-5f};
        char w[64];
        snprintf(w, sizeof w, "%s", k == 0 ? "rms_norm" : k == 1 ? "rms_norm * weight" : "norm");
        /* F32 sums on the device against double sums on the CPU */
        run_both(w, b_norm, &n, 2, s, 2e-6, true);
    }
    norm_arg nv = {3, 1e-6f};
    leaf_spec sv = {LOOM_TYPE_F32, 3, {50, 3, 2}, NULL, -3, 3};
    run_both("rms_norm on a strided view", b_norm, &nv, 1, &sv, 2e-6, true);
    for (int m = 0; m < 2; m++) {
        leaf_spec ss = {m ? LOOM_TYPE_F16 : LOOM_TYPE_F32, 3, {333, 4, 3}, NULL, -3, 3};
        run_both(m ? "mean f16" : "sum_rows f32", b_sum, &m, 1, &ss, 1e-5, true);
    }
}

/* HADAMARD: block sizes 4 to 1024 (the device's limit), several blocks per row, a strided
 * view (every other row of a [2 * ne0, rows] tensor) */
static loom_tensor *b_hadamard(loom_ctx *ctx, loom_tensor **in, const void *arg) {
    const int n = *(const int *)arg;
    loom_tensor *x = in[0];
    if (n < 0) {
        const int64_t args[3] = {x->ne[0] / 2, (int64_t)x->nb[1], x->ne[1]};
        x = loom_view(ctx, x, 0, 3, args);
    }
    return loom_hadamard(ctx, x, n < 0 ? -n : n);
}

static void test_hadamard(void) {
    static const int ns[] = {4, 64, 128, 512, 1024, -64};
    for (size_t k = 0; k < sizeof ns / sizeof ns[0]; k++) {
        const int n = ns[k], w = n < 0 ? -n : n;
        leaf_spec sp = {LOOM_TYPE_F32, 3, {n < 0 ? 4 * w : 3 * w, 5, 3}, NULL, -3, 3};
        char what[64];
        snprintf(what, sizeof what, "hadamard n=%d%s", w, n < 0 ? " (strided rows)" : "");
        /* the same IEEE additions in the same order, then one product: bit-identical
         * (measured 0 on lavapipe) */
        run_both(what, b_hadamard, &ns[k], 1, &sp, 0.0, true);
    }
}

typedef struct sm_arg {
    float scale;
    bool mask, mask16, neg_row;
    float max_bias; /* > 0: ALiBi (the mask holds -distance) */
} sm_arg;

static loom_tensor *b_softmax(loom_ctx *ctx, loom_tensor **in, const void *arg) {
    const sm_arg *s = arg;
    loom_tensor *m = NULL;
    if (s->mask) {
        m = in[1];
        if (s->mask16) {
            loom_tensor *m16 = loom_empty(loom_ctx_input(ctx), LOOM_TYPE_F16, 2, m->ne);
            m = loom_cpy(ctx, m, m16);
        }
    }
    return s->max_bias > 0.0f ? loom_softmax_ext_alibi(ctx, in[0], m, s->scale, s->max_bias)
                              : loom_softmax_ext(ctx, in[0], m, s->scale);
}

static void test_softmax(void) {
    /* a causal mask over L = 70 keys, T = 9 rows; row 0 of the second variant all -inf */
    enum { L = 70, T = 9 };
    static float mask[L * T];
    for (int t = 0; t < T; t++)
        for (int j = 0; j < L; j++) mask[t * L + j] = j <= 50 + t ? 0.0f : -INFINITY;
    for (int v = 0; v < 3; v++) {
        sm_arg a = {0.125f, v > 0, v == 2, false, 0.0f};
        leaf_spec s[2] = {{LOOM_TYPE_F32, 3, {L, T, 4}, NULL, -8, 8}, {LOOM_TYPE_F32, 2, {L, T}, mask, 0, 0}};
        run_both(v == 0 ? "softmax scale" : v == 1 ? "softmax + f32 mask" : "softmax + f16 mask", b_softmax, &a, 2, s,
                 1e-6, false);
    }
    static float dead[L * T];
    for (int i = 0; i < L * T; i++) dead[i] = i < L ? -INFINITY : 0.0f;
    sm_arg a = {1.0f, true, false, true, 0.0f};
    leaf_spec s[2] = {{LOOM_TYPE_F32, 2, {L, T}, NULL, -8, 8}, {LOOM_TYPE_F32, 2, {L, T}, dead, 0, 0}};
    run_both("softmax with an all -inf row (zeros)", b_softmax, &a, 2, s, 1e-6, false);
    /* ALiBi: 12 heads (both slope series), distances in the mask; F32 and F16 masks
     * (the GPU's pow against the CPU's powf: a few ulps of a slope) */
    static float dist[L * T];
    for (int t = 0; t < T; t++)
        for (int j = 0; j < L; j++) dist[t * L + j] = j <= 50 + t ? -(float)(50 + t - j) : -INFINITY;
    for (int v = 0; v < 2; v++) {
        sm_arg al = {0.125f, true, v == 1, false, 8.0f};
        leaf_spec sa[2] = {{LOOM_TYPE_F32, 3, {L, T, 12}, NULL, -8, 8}, {LOOM_TYPE_F32, 2, {L, T}, dist, 0, 0}};
        run_both(v ? "softmax ALiBi, f16 mask" : "softmax ALiBi, f32 mask", b_softmax, &al, 2, sa, 1e-6, false);
    }
}

typedef struct rope_arg {
    loom_rope_mode mode;
    int n_dims;
    bool factors, yarn;
    float base, freq_scale;
} rope_arg;

static loom_tensor *b_rope(loom_ctx *ctx, loom_tensor **in, const void *arg) {
    const rope_arg *r = arg;
    loom_rope_opts o = loom_rope_default_opts();
    o.mode = r->mode;
    if (r->factors) o.factors = in[2];
    if (r->yarn) {
        o.ext_factor = 1.0f;
        o.orig_ctx = 4096;
        o.attn_factor = 1.0f;
    }
    return loom_rope(ctx, in[0], in[1], r->n_dims, r->base, r->freq_scale, &o);
}

static void test_rope(void) {
    enum { D = 64, H = 5, T = 11 };
    static int32_t pos[T];
    for (int i = 0; i < T; i++) pos[i] = 3 + 97 * i; /* up to ~1000 */
    static float ff[D / 2];
    for (int i = 0; i < D / 2; i++) ff[i] = 1.0f + 0.25f * (float)i;
    const rope_arg cases[] = {
        {LOOM_ROPE_NORMAL, D, false, false, 10000.0f, 1.0f},  {LOOM_ROPE_NEOX, D, false, false, 1e6f, 1.0f},
        {LOOM_ROPE_NORMAL, 48, false, false, 10000.0f, 0.5f}, {LOOM_ROPE_NEOX, D, true, false, 500000.0f, 1.0f},
        {LOOM_ROPE_NORMAL, D, false, true, 10000.0f, 0.25f},
    };
    const char *names[] = {"rope normal", "rope neox base 1e6", "rope partial dims, linear scale",
                           "rope neox + frequency factors", "rope yarn"};
    for (int i = 0; i < 5; i++) {
        leaf_spec s[3] = {{LOOM_TYPE_F32, 3, {D, H, T}, NULL, -2, 2},
                          {LOOM_TYPE_I32, 1, {T}, pos, 0, 0},
                          {LOOM_TYPE_F32, 1, {D / 2}, ff, 0, 0}};
        /* theta = pos * f in F32 on the device (double on the CPU): |error| ~ pos * 2^-24
         * radians, about 6e-5 at pos 1000 */
        run_both(names[i], b_rope, &cases[i], 3, s, 2e-4, false);
    }
    leaf_spec s[3] = {{LOOM_TYPE_F16, 3, {D, H, T}, NULL, -2, 2}, {LOOM_TYPE_I32, 1, {T}, pos, 0, 0}, {0}};
    run_both("rope f16", b_rope, &cases[0], 2, s, 4e-3, false);
}

/* ------------------------------------------------------------------ copies / get_rows */

typedef struct cpy_arg {
    int kind;
    loom_type dst;
} cpy_arg;

static loom_tensor *b_cpy(loom_ctx *ctx, loom_tensor **in, const void *arg) {
    const cpy_arg *c = arg;
    loom_tensor *a = in[0];
    switch (c->kind) {
    case 0: { /* into a strided view of a bigger tensor (a KV-cache row block) */
        int64_t ne[3] = {a->ne[0] * a->ne[1], 40, 1};
        loom_tensor *cache = loom_zeros(loom_ctx_layer(ctx, 0), c->dst, 2, ne);
        if (loom_ctx_status(ctx)) cache = loom_zeros(loom_ctx_input(ctx), c->dst, 2, ne);
        int64_t n = a->ne[0] * a->ne[1] * a->ne[2];
        size_t rb = 0;
        loom_type_row_bytes(c->dst, ne[0], &rb);
        loom_tensor *v = loom_view(ctx, cache, rb * 7, 1, &n);
        return loom_cpy(ctx, a, v);
    }
    case 1: /* permuted source, contiguous destination */
        return loom_cont(ctx, loom_permute(ctx, a, 1, 2, 0, 3));
    default: { /* PermutedV store: [d, h, T] -> [T, d*h] with row stride cells */
        int64_t cells = 50;
        int64_t ne[3] = {cells, a->ne[0], a->ne[1]};
        loom_tensor *vc = loom_zeros(loom_ctx_layer(ctx, 0), c->dst, 3, ne);
        int64_t args[3] = {a->ne[2], (int64_t)loom_tensor_nb(vc, 1), a->ne[0] * a->ne[1]};
        loom_tensor *view = loom_view(ctx, vc, 5 * loom_tensor_nb(vc, 0), 3, args);
        return loom_cpy(ctx, loom_permute(ctx, a, 1, 2, 0, 3), view);
    }
    }
}

static void test_copies(void) {
    const loom_type dsts[] = {LOOM_TYPE_F32, LOOM_TYPE_F16, LOOM_TYPE_BF16, LOOM_TYPE_Q8_0, LOOM_TYPE_Q4_0};
    for (int i = 0; i < 5; i++) {
        cpy_arg c = {0, dsts[i]};
        leaf_spec s = {LOOM_TYPE_F32, 3, {64, 4, 3}, NULL, -3, 3};
        char w[64];
        snprintf(w, sizeof w, "cpy f32 -> %s into a cache view", loom_type_name(dsts[i]));
        /* Q4_0: the reference's scale search runs in F32 on the device (double on the
         * CPU); a different pick moves values by up to one quantization step */
        double tol = dsts[i] == LOOM_TYPE_Q4_0 ? 0.45 : 0.0;
        run_both(w, b_cpy, &c, 1, &s, tol, false);
    }
    for (int t = 0; t < 3; t++) {
        const loom_type ty[3] = {LOOM_TYPE_F32, LOOM_TYPE_F16, LOOM_TYPE_I32};
        cpy_arg c = {1, ty[t]};
        leaf_spec s = {ty[t], 3, {7, 5, 3}, NULL, -50, 50};
        char w[64];
        snprintf(w, sizeof w, "cont of a permuted %s", loom_type_name(ty[t]));
        run_both(w, b_cpy, &c, 1, &s, 0, false);
    }
    cpy_arg c = {2, LOOM_TYPE_F16};
    leaf_spec s = {LOOM_TYPE_F32, 3, {16, 3, 9}, NULL, -3, 3};
    run_both("cpy permuted V into a PermutedV f16 cache", b_cpy, &c, 1, &s, 0, false);
}

static loom_tensor *b_get_rows(loom_ctx *ctx, loom_tensor **in, const void *arg) {
    (void)arg;
    return loom_get_rows(ctx, in[0], in[1]);
}

static void test_get_rows(void) {
    const loom_type types[] = {LOOM_TYPE_F32, LOOM_TYPE_F16, LOOM_TYPE_BF16, LOOM_TYPE_I32, LOOM_TYPE_Q4_0,
                               LOOM_TYPE_Q4_1, LOOM_TYPE_Q5_0, LOOM_TYPE_Q5_1, LOOM_TYPE_Q8_0, LOOM_TYPE_Q2_K,
                               LOOM_TYPE_Q3_K, LOOM_TYPE_Q4_K, LOOM_TYPE_Q5_K, LOOM_TYPE_Q6_K, LOOM_TYPE_MXFP4};
    static int32_t ids[12] = {3, 0, 16, 7, 7, 1, 2, 9, 15, 4, 11, 5};
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
        loom_type t = types[i];
        /* a [E, R, 2]: ids [6, 2] pick rows of slice i11 = ids' column */
        const int64_t E = loom_type_is_quantized(t) ? 512 : 45, R = 17, RR = 2 * R;
        size_t rb = 0;
        loom_type_row_bytes(t, E, &rb);
        unsigned char *q = malloc(rb * RR);
        float *f = malloc((size_t)(E * RR) * sizeof *f);
        for (int64_t k = 0; k < E * RR; k++) f[k] = 3.0f * vk_rnd();
        if (loom_type_is_quantized(t)) {
            for (int64_t r = 0; r < RR; r++) loom_quantize_row(t, f + r * E, q + r * rb, E);
        } else {
            leaf_spec ls = {t, 2, {E, RR}, NULL, -20, 20};
            size_t nb;
            free(q);
            q = rand_bytes(&ls, &nb);
        }
        leaf_spec s[2] = {{t, 3, {E, R, 2}, q, 0, 0}, {LOOM_TYPE_I32, 2, {6, 2}, ids, 0, 0}};
        char w[64];
        snprintf(w, sizeof w, "get_rows %s", loom_type_name(t));
        run_both(w, b_get_rows, NULL, 2, s, 0, false);
        free(q);
        free(f);
    }
}

/* an id out of range: LOOM_ERR_RANGE from the device, like the CPU */
static void test_get_rows_range(void) {
    loom_ctx *g = NULL;
    loom_error e = {0};
    CHECK(loom_backend_ctx_new(g_be, 0, &g, &e) == LOOM_OK);
    if (!g) return;
    float tab[4 * 5];
    for (int i = 0; i < 20; i++) tab[i] = (float)i;
    int32_t ids[3] = {1, 5, 0};
    int64_t ne[2] = {4, 5}, ni[1] = {3};
    loom_tensor *a = loom_from_f32(loom_ctx_layer(g, 0), tab, 20, 2, ne);
    loom_tensor *ix = loom_from_i32(loom_ctx_layer(g, 0), ids, 3, 1, ni);
    loom_tensor *o = loom_get_rows(g, a, ix);
    loom_ctx_forward(g, o);
    loom_status s = loom_ctx_compute(g, 1, &o);
    CHECK_MSG(s == LOOM_ERR_RANGE, "out-of-range id: %s (%s)", loom_status_name(s), loom_ctx_error(g));
    loom_ctx_free(g);
}

/* ------------------------------------------------------------------ attention */

typedef struct fa_arg {
    int T, L, H, Hkv, D;
    loom_type kv;
    bool mask, mask16, transposed_v;
    float softcap; /* > 0: soft-capped scores */
    bool sinks;    /* in[4]: one sink logit per head */
    float max_bias; /* > 0: ALiBi (the mask holds -distance) */
} fa_arg;

static loom_tensor *b_fa(loom_ctx *ctx, loom_tensor **in, const void *arg) {
    const fa_arg *f = arg;
    loom_tensor *q = in[0], *k = in[1], *v = in[2], *m = f->mask ? in[3] : NULL;
    if (m && f->mask16) {
        loom_tensor *m16 = loom_empty(loom_ctx_input(ctx), LOOM_TYPE_F16, 2, m->ne);
        m = loom_cpy(ctx, m, m16);
    }
    /* q [D, H, T] -> [D, T, H]; k [D, Hkv, L] -> [D, L, Hkv]; v the same or transposed */
    loom_tensor *qp = loom_permute(ctx, q, 0, 2, 1, 3);
    loom_tensor *kp = loom_permute(ctx, k, 0, 2, 1, 3);
    loom_tensor *vp = f->transposed_v ? loom_transpose(ctx, v) : loom_permute(ctx, v, 0, 2, 1, 3);
    const loom_attn_opts o = {.softcap = f->softcap, .sinks = f->sinks ? in[4] : NULL, .max_bias = f->max_bias};
    return loom_flash_attn_opts(ctx, qp, kp, vp, m, 1.0f / sqrtf((float)f->D), &o);
}

static void test_flash_attn(void) {
    const fa_arg cases[] = {
        {1, 300, 8, 2, 64, LOOM_TYPE_F16, true, true, false, 0.0f, false, 0.0f},   /* decode, split-K */
        {37, 96, 4, 4, 32, LOOM_TYPE_F16, true, false, false, 0.0f, false, 0.0f},  /* prompt, f32 mask */
        {5, 40, 6, 3, 80, LOOM_TYPE_F32, false, false, false, 0.0f, false, 0.0f},  /* no mask, odd D */
        {3, 64, 4, 2, 64, LOOM_TYPE_BF16, true, true, false, 0.0f, false, 0.0f},
        {2, 300, 4, 1, 64, LOOM_TYPE_Q8_0, true, true, false, 0.0f, false, 0.0f},
        {9, 64, 2, 2, 128, LOOM_TYPE_Q4_0, true, true, false, 0.0f, false, 0.0f},
        {1, 128, 8, 4, 16, LOOM_TYPE_F16, true, false, true, 0.0f, false, 0.0f},   /* non-flash decode: PermutedV transposed */
        {1, 96, 4, 4, 8, LOOM_TYPE_F32, true, false, true, 0.0f, false, 0.0f},
        /* soft cap and sinks: decode split-K (sinks in the combine), prompt, v^T, and a
         * first token that sees no key (its rows: all sink, 0) */
        {1, 300, 8, 2, 64, LOOM_TYPE_F16, true, true, false, 0.5f, true, 0.0f},
        {37, 96, 4, 4, 32, LOOM_TYPE_F32, true, false, false, 0.3f, true, 0.0f},
        {9, 64, 2, 2, 128, LOOM_TYPE_Q8_0, true, true, false, 0.0f, true, 0.0f},
        {5, 40, 6, 3, 80, LOOM_TYPE_F32, false, false, false, 0.4f, false, 0.0f},
        {1, 128, 8, 4, 16, LOOM_TYPE_F32, true, false, true, 0.5f, true, 0.0f},
        /* ALiBi (12 heads: both slope series): decode split-K, prompt, v^T */
        {1, 300, 12, 4, 64, LOOM_TYPE_F16, true, true, false, 0.0f, false, 8.0f},
        {37, 96, 12, 3, 32, LOOM_TYPE_F32, true, false, false, 0.0f, false, 8.0f},
        {1, 128, 12, 12, 16, LOOM_TYPE_F16, true, false, true, 0.0f, false, 8.0f},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        const fa_arg *f = &cases[c];
        const int64_t L = f->L, T = f->T, D = f->D;
        float *mask = malloc((size_t)(L * T) * sizeof *mask);
        for (int64_t t = 0; t < T; t++)
            for (int64_t j = 0; j < L; j++)
                mask[t * L + j] = j <= L - T + t && !(f->sinks && t == 0 && T > 1)
                                      ? (f->max_bias > 0.0f ? -(float)(L - T + t - j) : 0.0f)
                                      : -INFINITY;
        /* K/V: random F32 converted (quantized through the reference quantizer) */
        size_t rb = 0;
        loom_type_row_bytes(f->kv, D, &rb);
        const int64_t kv_rows = (int64_t)f->Hkv * L;
        unsigned char *kb = malloc(rb * (size_t)kv_rows), *vb = malloc(rb * (size_t)kv_rows);
        float *tmp = malloc((size_t)D * sizeof *tmp);
        for (int64_t r = 0; r < kv_rows; r++) {
            for (int64_t i = 0; i < D; i++) tmp[i] = vk_rnd();
            loom_quantize_row(f->kv, tmp, kb + (size_t)r * rb, D);
            for (int64_t i = 0; i < D; i++) tmp[i] = vk_rnd();
            loom_quantize_row(f->kv, tmp, vb + (size_t)r * rb, D);
        }
        leaf_spec s[5] = {{LOOM_TYPE_F32, 3, {D, f->H, T}, NULL, -1, 1},
                          {f->kv, 3, {D, f->Hkv, L}, kb, 0, 0},
                          {f->kv, 3, {D, f->Hkv, L}, vb, 0, 0},
                          {LOOM_TYPE_F32, 2, {L, T}, mask, 0, 0},
                          {LOOM_TYPE_F32, 1, {f->H}, NULL, -1.5f, 2.5f}};
        if (f->transposed_v) { /* PermutedV layout [L, D, Hkv] */
            s[2].ne[0] = L;
            s[2].ne[1] = D;
            s[2].ne[2] = f->Hkv;
            loom_type_row_bytes(f->kv, L, &rb);
        }
        char w[80];
        snprintf(w, sizeof w, "flash_attn %s T%d L%d H%d/%d D%d%s%s%s%s", loom_type_name(f->kv), f->T, f->L, f->H,
                 f->Hkv, f->D, f->transposed_v ? " v^T" : "", f->softcap > 0.0f ? " softcap" : "",
                 f->sinks ? " sinks" : "", f->max_bias > 0.0f ? " ALiBi" : "");
        /* same conversions as the CPU (q to k's type, p to v's type for v^T); the
         * rest is summation order and exp, except that an F16 v^T rounds p = exp(s - m)
         * with m the running max of 128-key tiles here and 64-key tiles on the CPU */
        double tol = f->transposed_v && f->kv == LOOM_TYPE_F16 ? 4e-4 : 3e-6;
        run_both(w, b_fa, f, f->sinks ? 5 : f->mask ? 4 : 3, s, tol, true);
        free(mask);
        free(kb);
        free(vb);
        free(tmp);
    }
}

/* non-flash prompt attention as the model builds it: scores, softmax, V product */
static loom_tensor *b_sdpa(loom_ctx *ctx, loom_tensor **in, const void *arg) {
    (void)arg;
    loom_tensor *q = in[0], *k = in[1], *v = in[2], *m = in[3];
    loom_tensor *qp = loom_permute(ctx, q, 0, 2, 1, 3), *kp = loom_permute(ctx, k, 0, 2, 1, 3);
    loom_tensor *kq = loom_mul_mat_full_prec(ctx, kp, qp);
    kq = loom_softmax_ext(ctx, kq, m, 0.125f);
    loom_tensor *kqv = loom_mul_mat(ctx, v, kq);
    return loom_cont(ctx, loom_permute(ctx, kqv, 0, 2, 1, 3));
}

static void test_sdpa_prompt(void) {
    enum { D = 16, H = 4, HKV = 2, T = 35, L = 64 };
    static float mask[L * T];
    for (int t = 0; t < T; t++)
        for (int j = 0; j < L; j++) mask[t * L + j] = j <= t ? 0.0f : -INFINITY;
    leaf_spec s[4] = {{LOOM_TYPE_F32, 3, {D, H, T}, NULL, -1, 1},
                      {LOOM_TYPE_F16, 3, {D, HKV, L}, NULL, -1, 1},
                      {LOOM_TYPE_F16, 3, {L, D, HKV}, NULL, -1, 1},
                      {LOOM_TYPE_F32, 2, {L, T}, mask, 0, 0}};
    /* both engines round the activations of the F16 products to F16, the probabilities
     * included: where the two exps differ by an ulp, a probability can round to the
     * other F16 neighbour (2^-11 of one term). Over 30 draws: 0 in 26, 1.55e-5 to
     * 3.07e-5 in the other 4. Its own seed, so tests added before it change nothing. */
    g_vk_rng = 0x9E3779B97F4A7C15ull;
    run_both("sdpa prompt (matmul, softmax, matmul, cont)", b_sdpa, NULL, 4, s, 6e-5, true);
}

/* ------------------------------------------------------------------ scheduler */

/* A view of a host node read by 40 device nodes of one run: the scheduler stages the
 * node once and points each reader at its own view of the staged copy. Those views
 * must stay where the readers point while the run executes (they once lived in an array
 * that grew by realloc past 16, leaving the first readers on freed memory: a model's 40
 * attention layers reading a view of one mask made on the CPU). */
static void test_staged_views(void) {
    enum { N = 40, W = 32 };
    loom_ctx *g = NULL, *c = NULL;
    loom_error e = {0};
    CHECK(loom_backend_ctx_new(g_be, 0, &g, &e) == LOOM_OK && loom_ctx_new(NULL, &c, &e) == LOOM_OK);
    if (!g || !c) {
        loom_ctx_free(g);
        loom_ctx_free(c);
        return;
    }
    static float x[2 * W], w[W];
    for (int i = 0; i < 2 * W; i++) x[i] = vk_rnd();
    for (int i = 0; i < W; i++) w[i] = vk_rnd();
    const int64_t nex[1] = {2 * W}, new_[1] = {W}, nv[1] = {W};
    loom_tensor *out[2];
    for (int k = 0; k < 2; k++) {
        loom_ctx *ctx = k ? c : g, *dev = k ? c : loom_ctx_layer(g, 0);
        /* a node computed on the CPU (as a model's mask: an F32 -> F16 copy), then a view */
        loom_ctx *in = loom_ctx_input(ctx);
        loom_tensor *hx = loom_scale(in, loom_from_f32(in, x, 2 * W, 1, nex), 1.0f);
        loom_tensor *row = loom_view(in, hx, W * sizeof(float), 1, nv);
        loom_tensor *acc = loom_from_f32(dev, w, W, 1, new_);
        for (int i = 0; i < N; i++) acc = loom_add(dev, loom_mul(dev, acc, row), acc); /* acc (1 + row), 40 reads */
        out[k] = acc;
        loom_ctx_forward(ctx, acc);
    }
    loom_status sg = loom_ctx_compute(g, 1, &out[0]), sc = loom_ctx_compute(c, 1, &out[1]);
    CHECK_MSG(sg == LOOM_OK && sc == LOOM_OK, "staged views: gpu %s (%s), cpu %s", loom_status_name(sg),
              loom_ctx_error(g), loom_status_name(sc));
    if (sg == LOOM_OK && sc == LOOM_OK) {
        float a[W], b[W];
        CHECK(loom_tensor_read_f32(out[0], a, W) == LOOM_OK && loom_tensor_read_f32(out[1], b, W) == LOOM_OK);
        double d = 0, mref = 0;
        for (int i = 0; i < W; i++) {
            d = fmax(d, fabs((double)a[i] - b[i]));
            mref = fmax(mref, fabs((double)b[i]));
        }
        const loom_tensor *ob = loom_tensor_base(out[0]);
        printf("  %-44s max rel diff %.3g (device %d)\n", "a staged view read by 40 device nodes", d / mref,
               ob->sched_dev);
        CHECK_MSG(d <= 1e-6 * mref && ob->sched_dev > 0, "staged views: diff %g, output on device %d", d, ob->sched_dev);
    }
    loom_ctx_free(g);
    loom_ctx_free(c);
}

/* ------------------------------------------------------------------ MoE */

static loom_tensor *b_mmid(loom_ctx *ctx, loom_tensor **in, const void *arg) {
    (void)arg;
    return loom_mul_mat_id(ctx, in[0], in[1], in[2]);
}

static void test_mul_mat_id(void) {
    enum { K = 64, N = 33, E = 5, B1 = 1, S = 3, T = 4 };
    static int32_t ids[S * T] = {0, 4, 2, 1, 1, 3, 4, 0, 2, 3, 3, 3};
    const loom_type types[] = {LOOM_TYPE_F32, LOOM_TYPE_F16, LOOM_TYPE_Q4_0, LOOM_TYPE_Q4_K, LOOM_TYPE_MXFP4,
                               LOOM_TYPE_BF16, LOOM_TYPE_Q8_0};
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
        loom_type t = types[i];
        const int64_t k = loom_type_get((uint32_t)t)->block_size > 32 ? 256 : K;
        size_t rb = 0;
        loom_type_row_bytes(t, k, &rb);
        unsigned char *a = malloc(rb * N * E);
        float *tmp = malloc((size_t)k * sizeof *tmp);
        for (int64_t r = 0; r < N * E; r++) {
            for (int64_t j = 0; j < k; j++) tmp[j] = vk_rnd();
            loom_quantize_row(t, tmp, a + (size_t)r * rb, k);
        }
        leaf_spec s[3] = {{t, 3, {k, N, E}, a, 0, 0},
                          {LOOM_TYPE_F32, 3, {k, B1, T}, NULL, -1, 1},
                          {LOOM_TYPE_I32, 2, {S, T}, ids, 0, 0}};
        char w[64];
        snprintf(w, sizeof w, "mul_mat_id %s", loom_type_name(t));
        /* the float path keeps F32 activations for quantized types, where the CPU
         * quantizes them to 8 bits (about 4e-3 relative here); F16/BF16 round them
         * the same way on both engines */
        double tol = loom_type_is_quantized(t) ? 1e-2 : 3e-6;
        run_both(w, b_mmid, NULL, 3, s, tol, true);
        free(a);
        free(tmp);
    }
}

int main(void) {
    g_be = vk_test_backend(NAME, NULL);
    test_binary();
    test_unary();
    test_rows();
    test_hadamard();
    test_softmax();
    test_rope();
    test_copies();
    test_get_rows();
    test_get_rows_range();
    test_flash_attn();
    test_sdpa_prompt();
    test_mul_mat_id();
    test_staged_views();
    int64_t rep = loom_backend_vk_reports(g_be);
    CHECK_MSG(rep == 0, "validation layers reported %lld messages", (long long)rep);
    loom_backend_close(g_be);
    return test_finish(NAME);
}
