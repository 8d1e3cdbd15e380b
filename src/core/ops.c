/* Constructors of the core ops (shape checks, node creation). Kernels: src/cpu/ops_basic.c, ops_copy.c.
 *
 * op_params layouts (read by the kernels):
 *   SCALE      f32[0] = s
 *   CLAMP      f32[0] = lo, f32[1] = hi
 *   SOFT_MAX   f32[0] = scale                         (src[1] = optional mask)
 *   NORM, RMS_NORM f32[0] = eps                  (RMS_NORM: src[1] = optional F32 weight row)
 *   SILU       src[1] = optional F32 multiplier of the same shape (loom_swiglu)
 *   ARANGE     f32[0] = start, f32[1] = step
 *   SET        i32[0..1] = offset (lo, hi 32 bits), i32[2..3] = nb1, i32[4..5] = nb2, i32[6..7] = nb3
 *   CONCAT     i32[0] = dim
 *   PAD        i32[0..3] = p0..p3 (may be negative)
 *   REPEAT     (none: shapes say everything)
 */
#include "core/ctx.h"

#include <math.h>
#include <stdio.h>

static bool is_float_type(loom_type t) { return t == LOOM_TYPE_F32 || t == LOOM_TYPE_F16 || t == LOOM_TYPE_BF16; }
static bool is_plain_type(loom_type t) { return !loom_type_is_quantized(t) && loom_type_size(t) > 0; }

static void set_param_size(loom_tensor *t, int i, size_t v) {
    uint64_t x = (uint64_t)v;
    loom_set_op_param_i32(t, i, (int32_t)(uint32_t)(x & 0xffffffffu));
    loom_set_op_param_i32(t, i + 1, (int32_t)(uint32_t)(x >> 32));
}

/* ------------------------------------------------------------------ binary */

static loom_tensor *binary(loom_ctx *ctx, loom_op op, loom_tensor *a, loom_tensor *b) {
    loom_tensor *args[2] = {a, b};
    if (!loom_op_check(ctx, op, 2, args)) return loom_ctx_poison(ctx);
    if (!(a->type == LOOM_TYPE_F32 || a->type == LOOM_TYPE_F16) ||
        !(b->type == LOOM_TYPE_F32 || b->type == LOOM_TYPE_F16))
        return loom_ctx_fail(ctx, LOOM_ERR_TYPE, op, a, b, "unsupported types (F32/F16 only)");
    for (int i = 0; i < 4; i++) {
        if (b->ne[i] < 1 || a->ne[i] % b->ne[i] != 0) {
            if (loom_nelements(a) == 0 && loom_nelements(b) == 0) continue;
            return loom_ctx_fail(ctx, LOOM_ERR_SHAPE, op, a, b, "b.ne[%d] = %lld does not divide a.ne[%d] = %lld", i,
                                 (long long)b->ne[i], i, (long long)a->ne[i]);
        }
    }
    return loom_new_node(ctx, op, a->type, a->ne, 2, args);
}

loom_tensor *loom_add(loom_ctx *ctx, loom_tensor *a, loom_tensor *b) { return binary(ctx, LOOM_OP_ADD, a, b); }
loom_tensor *loom_sub(loom_ctx *ctx, loom_tensor *a, loom_tensor *b) { return binary(ctx, LOOM_OP_SUB, a, b); }
loom_tensor *loom_mul(loom_ctx *ctx, loom_tensor *a, loom_tensor *b) { return binary(ctx, LOOM_OP_MUL, a, b); }
loom_tensor *loom_div(loom_ctx *ctx, loom_tensor *a, loom_tensor *b) { return binary(ctx, LOOM_OP_DIV, a, b); }

/* ------------------------------------------------------------------ unary */

static loom_tensor *unary(loom_ctx *ctx, loom_op op, loom_tensor *a) {
    if (!loom_op_check(ctx, op, 1, &a)) return loom_ctx_poison(ctx);
    if (a->type != LOOM_TYPE_F32 && a->type != LOOM_TYPE_F16)
        return loom_ctx_fail(ctx, LOOM_ERR_TYPE, op, a, NULL, "unsupported type (F32/F16 only)");
    return loom_new_node(ctx, op, a->type, a->ne, 1, &a);
}

loom_tensor *loom_neg(loom_ctx *ctx, loom_tensor *a) { return unary(ctx, LOOM_OP_NEG, a); }
loom_tensor *loom_sqr(loom_ctx *ctx, loom_tensor *a) { return unary(ctx, LOOM_OP_SQR, a); }
loom_tensor *loom_sqrt(loom_ctx *ctx, loom_tensor *a) { return unary(ctx, LOOM_OP_SQRT, a); }
loom_tensor *loom_sin(loom_ctx *ctx, loom_tensor *a) { return unary(ctx, LOOM_OP_SIN, a); }
loom_tensor *loom_cos(loom_ctx *ctx, loom_tensor *a) { return unary(ctx, LOOM_OP_COS, a); }
loom_tensor *loom_tanh(loom_ctx *ctx, loom_tensor *a) { return unary(ctx, LOOM_OP_TANH, a); }
loom_tensor *loom_sigmoid(loom_ctx *ctx, loom_tensor *a) { return unary(ctx, LOOM_OP_SIGMOID, a); }
loom_tensor *loom_silu(loom_ctx *ctx, loom_tensor *a) { return unary(ctx, LOOM_OP_SILU, a); }

loom_tensor *loom_swiglu(loom_ctx *ctx, loom_tensor *g, loom_tensor *u) {
    bool same = g && u && !(g->flags & LOOM_TF_POISON) && !(u->flags & LOOM_TF_POISON) &&
                g->type == LOOM_TYPE_F32 && u->type == LOOM_TYPE_F32 && loom_tensor_is_contiguous(g) &&
                loom_tensor_is_contiguous(u) && !(u->flags & LOOM_TF_REPACKED);
    for (int i = 0; same && i < 4; i++) same = g->ne[i] == u->ne[i];
    if (!same) return loom_mul(ctx, loom_silu(ctx, g), u);
    loom_tensor *t = unary(ctx, LOOM_OP_SILU, g);
    if (!(t->flags & LOOM_TF_POISON)) t->src[1] = u; /* the kernel multiplies by u */
    return t;
}
loom_tensor *loom_relu(loom_ctx *ctx, loom_tensor *a) { return unary(ctx, LOOM_OP_RELU, a); }
loom_tensor *loom_gelu(loom_ctx *ctx, loom_tensor *a) { return unary(ctx, LOOM_OP_GELU, a); }
loom_tensor *loom_gelu_f16(loom_ctx *ctx, loom_tensor *a) {
    loom_tensor *t = unary(ctx, LOOM_OP_GELU, a);
    loom_set_op_param_f32(t, 0, 1.0f);
    return t;
}
loom_tensor *loom_quick_gelu(loom_ctx *ctx, loom_tensor *a) { return unary(ctx, LOOM_OP_QUICK_GELU, a); }

loom_tensor *loom_scale(loom_ctx *ctx, loom_tensor *a, float s) {
    loom_tensor *t = unary(ctx, LOOM_OP_SCALE, a);
    loom_set_op_param_f32(t, 0, s);
    return t;
}

loom_tensor *loom_clamp(loom_ctx *ctx, loom_tensor *a, float lo, float hi) {
    if (ctx && !loom_ctx_status(ctx) && (isnan(lo) || isnan(hi) || lo > hi))
        return loom_ctx_fail(ctx, LOOM_ERR_INVALID_ARG, LOOM_OP_CLAMP, a, NULL, "bad bounds [%g, %g]", (double)lo,
                             (double)hi);
    loom_tensor *t = unary(ctx, LOOM_OP_CLAMP, a);
    loom_set_op_param_f32(t, 0, lo);
    loom_set_op_param_f32(t, 1, hi);
    return t;
}

/* ------------------------------------------------------------------ reductions / norms */

static loom_tensor *reduce(loom_ctx *ctx, loom_op op, loom_tensor *a, loom_type out) {
    if (!loom_op_check(ctx, op, 1, &a)) return loom_ctx_poison(ctx);
    if (a->type != LOOM_TYPE_F32 && a->type != LOOM_TYPE_F16)
        return loom_ctx_fail(ctx, LOOM_ERR_TYPE, op, a, NULL, "unsupported type (F32/F16 only)");
    if (a->ne[0] < 1) return loom_ctx_fail(ctx, LOOM_ERR_SHAPE, op, a, NULL, "empty rows");
    int64_t ne[4] = {1, a->ne[1], a->ne[2], a->ne[3]};
    return loom_new_node(ctx, op, out == LOOM_TYPE_COUNT ? a->type : out, ne, 1, &a);
}

loom_tensor *loom_sum_rows(loom_ctx *ctx, loom_tensor *a) { return reduce(ctx, LOOM_OP_SUM_ROWS, a, LOOM_TYPE_COUNT); }
loom_tensor *loom_mean(loom_ctx *ctx, loom_tensor *a) { return reduce(ctx, LOOM_OP_MEAN, a, LOOM_TYPE_F32); }

loom_tensor *loom_variance(loom_ctx *ctx, loom_tensor *a) {
    /* population variance: mean((a - mean(a))^2) */
    loom_tensor *m = loom_mean(ctx, a);
    if (m->flags & LOOM_TF_POISON) return m;
    return loom_mean(ctx, loom_sqr(ctx, loom_sub(ctx, a, m)));
}

loom_tensor *loom_stddev(loom_ctx *ctx, loom_tensor *a) { return loom_sqrt(ctx, loom_variance(ctx, a)); }

loom_tensor *loom_softmax_ext(loom_ctx *ctx, loom_tensor *a, loom_tensor *mask, float scale) {
    loom_tensor *args[2] = {a, mask};
    if (!loom_op_check(ctx, LOOM_OP_SOFT_MAX, mask ? 2 : 1, args)) return loom_ctx_poison(ctx);
    if (a->type != LOOM_TYPE_F32)
        return loom_ctx_fail(ctx, LOOM_ERR_TYPE, LOOM_OP_SOFT_MAX, a, mask, "input must be F32");
    if (!isfinite(scale))
        return loom_ctx_fail(ctx, LOOM_ERR_INVALID_ARG, LOOM_OP_SOFT_MAX, a, mask, "scale %g is not finite",
                             (double)scale);
    if (mask) {
        if (mask->type != LOOM_TYPE_F32 && mask->type != LOOM_TYPE_F16)
            return loom_ctx_fail(ctx, LOOM_ERR_TYPE, LOOM_OP_SOFT_MAX, a, mask, "mask must be F32 or F16");
        if (mask->ne[0] != a->ne[0] || mask->ne[1] < a->ne[1] || a->ne[2] % mask->ne[2] != 0 ||
            a->ne[3] % mask->ne[3] != 0)
            return loom_ctx_fail(ctx, LOOM_ERR_SHAPE, LOOM_OP_SOFT_MAX, a, mask,
                                 "mask must be [ne0, >= ne1] and broadcast over dims 2,3");
        if (!loom_tensor_is_contiguous_rows(mask))
            return loom_ctx_fail(ctx, LOOM_ERR_SHAPE, LOOM_OP_SOFT_MAX, a, mask, "mask rows must be contiguous");
    }
    loom_tensor *t = loom_new_node(ctx, LOOM_OP_SOFT_MAX, LOOM_TYPE_F32, a->ne, 2, args);
    loom_set_op_param_f32(t, 0, scale);
    return t;
}

loom_tensor *loom_softmax(loom_ctx *ctx, loom_tensor *a) { return loom_softmax_ext(ctx, a, NULL, 1.0f); }

float loom_alibi_slope(float max_bias, int64_t h, int64_t n_head) {
    if (!(max_bias > 0.0f) || n_head < 1) return 1.0f;
    const int64_t n = (int64_t)1 << (int)floor(log2((double)n_head));
    const float m0 = powf(2.0f, -max_bias / (float)n), m1 = powf(2.0f, -(max_bias / 2.0f) / (float)n);
    return h < n ? powf(m0, (float)(h + 1)) : powf(m1, (float)(2 * (h - n) + 1));
}

loom_tensor *loom_softmax_ext_alibi(loom_ctx *ctx, loom_tensor *a, loom_tensor *mask, float scale, float max_bias) {
    if (!(max_bias >= 0.0f) || !isfinite(max_bias) || (max_bias > 0.0f && !mask)) {
        loom_tensor *args[2] = {a, mask};
        if (!loom_op_check(ctx, LOOM_OP_SOFT_MAX, mask ? 2 : 1, args)) return loom_ctx_poison(ctx);
        return loom_ctx_fail(ctx, LOOM_ERR_INVALID_ARG, LOOM_OP_SOFT_MAX, a, mask,
                             "ALiBi max_bias %g must be finite and >= 0, and > 0 only with a mask", (double)max_bias);
    }
    loom_tensor *t = loom_softmax_ext(ctx, a, mask, scale);
    if (!loom_tensor_is_poison(t)) loom_set_op_param_f32(t, 1, max_bias);
    return t;
}

loom_tensor *loom_softmax_ext_sinks(loom_ctx *ctx, loom_tensor *a, loom_tensor *mask, float scale,
                                    loom_tensor *sinks) {
    loom_tensor *t = loom_softmax_ext(ctx, a, mask, scale);
    if (!sinks || loom_tensor_is_poison(t)) return t;
    loom_tensor *args[1] = {sinks};
    if (!loom_op_check(ctx, LOOM_OP_SOFT_MAX, 1, args)) return loom_ctx_poison(ctx);
    if (sinks->type != LOOM_TYPE_F32 || !loom_tensor_is_contiguous(sinks) ||
        loom_tensor_nelements(sinks) != a->ne[2])
        return loom_ctx_fail(ctx, LOOM_ERR_SHAPE, LOOM_OP_SOFT_MAX, a, sinks,
                             "sinks must be contiguous F32 with a.ne2 = %lld values", (long long)a->ne[2]);
    t->src[2] = sinks;
    return t;
}

static loom_tensor *norm_node(loom_ctx *ctx, loom_op op, loom_tensor *a, float eps) {
    if (!loom_op_check(ctx, op, 1, &a)) return loom_ctx_poison(ctx);
    if (a->type != LOOM_TYPE_F32) return loom_ctx_fail(ctx, LOOM_ERR_TYPE, op, a, NULL, "input must be F32");
    if (!(eps >= 0.0f) || !isfinite(eps))
        return loom_ctx_fail(ctx, LOOM_ERR_INVALID_ARG, op, a, NULL, "eps %g must be finite and >= 0", (double)eps);
    loom_tensor *t = loom_new_node(ctx, op, LOOM_TYPE_F32, a->ne, 1, &a);
    loom_set_op_param_f32(t, 0, eps);
    return t;
}

loom_tensor *loom_layer_norm(loom_ctx *ctx, loom_tensor *a, loom_tensor *w, loom_tensor *b, float eps) {
    loom_tensor *t = norm_node(ctx, LOOM_OP_NORM, a, eps);
    if (w) {
        t = loom_mul(ctx, t, w);
        if (b) t = loom_add(ctx, t, b);
    }
    return t;
}

loom_tensor *loom_rms_norm(loom_ctx *ctx, loom_tensor *a, loom_tensor *w, float eps) {
    if (a && w && !(a->flags & LOOM_TF_POISON) && !(w->flags & LOOM_TF_POISON) && w->type == LOOM_TYPE_F32 &&
        w->ne[0] == a->ne[0] && loom_nelements(w) == w->ne[0] && w->nb[0] == sizeof(float) &&
        !(w->flags & LOOM_TF_REPACKED)) {
        /* the common case, an F32 weight vector per row: one node whose kernel
         * multiplies as it writes (src[1] = w), the same roundings as a separate MUL */
        loom_tensor *t = norm_node(ctx, LOOM_OP_RMS_NORM, a, eps);
        if (t->flags & LOOM_TF_POISON) return t;
        t->src[1] = w;
        return t;
    }
    loom_tensor *t = norm_node(ctx, LOOM_OP_RMS_NORM, a, eps);
    if (w) t = loom_mul(ctx, t, w);
    return t;
}

/* ------------------------------------------------------------------ views */

loom_tensor *loom_reshape(loom_ctx *ctx, loom_tensor *a, int n_dims, const int64_t *ne) {
    if (!loom_op_check(ctx, LOOM_OP_VIEW, 1, &a)) return loom_ctx_poison(ctx);
    if (n_dims < 1 || n_dims > 4 || !ne)
        return loom_ctx_fail(ctx, LOOM_ERR_SHAPE, LOOM_OP_VIEW, a, NULL, "reshape: n_dims %d not in 1..4", n_dims);
    if (!loom_tensor_is_contiguous(a))
        return loom_ctx_fail(ctx, LOOM_ERR_SHAPE, LOOM_OP_VIEW, a, NULL, "reshape: input is not contiguous");
    int64_t e[4] = {1, 1, 1, 1};
    uint64_t prod = 1;
    for (int i = 0; i < n_dims; i++) {
        if (ne[i] < 0 || (ne[i] > 0 && prod > UINT64_MAX / (uint64_t)ne[i]))
            return loom_ctx_fail(ctx, LOOM_ERR_SHAPE, LOOM_OP_VIEW, a, NULL, "reshape: bad extent %lld",
                                 (long long)ne[i]);
        e[i] = ne[i];
        prod *= (uint64_t)ne[i];
    }
    if (prod != (uint64_t)loom_nelements(a))
        return loom_ctx_fail(ctx, LOOM_ERR_SHAPE, LOOM_OP_VIEW, a, NULL,
                             "reshape: [%lld,%lld,%lld,%lld] has %llu elements, input has %lld", (long long)e[0],
                             (long long)e[1], (long long)e[2], (long long)e[3], (unsigned long long)prod,
                             (long long)loom_nelements(a));
    if (e[0] % loom_blck_size(a->type) != 0)
        return loom_ctx_fail(ctx, LOOM_ERR_SHAPE, LOOM_OP_VIEW, a, NULL, "reshape: ne0 not a multiple of the block");
    size_t nb[4];
    nb[0] = loom_type_size(a->type);
    nb[1] = nb[0] * (size_t)(e[0] / loom_blck_size(a->type));
    nb[2] = nb[1] * (size_t)e[1];
    nb[3] = nb[2] * (size_t)e[2];
    return loom_new_view(ctx, a, a->type, e, nb, 0);
}

loom_tensor *loom_view(loom_ctx *ctx, loom_tensor *a, size_t offset, int n_args, const int64_t *args) {
    if (!loom_op_check(ctx, LOOM_OP_VIEW, 1, &a)) return loom_ctx_poison(ctx);
    if ((n_args != 1 && n_args != 3 && n_args != 5 && n_args != 7) || !args)
        return loom_ctx_fail(ctx, LOOM_ERR_SHAPE, LOOM_OP_VIEW, a, NULL, "view: n_args %d must be 1, 3, 5 or 7",
                             n_args);
    int64_t ne[4] = {1, 1, 1, 1};
    size_t nb[4];
    ne[0] = args[0];
    nb[0] = loom_type_size(a->type);
    if (ne[0] < 0 || ne[0] % loom_blck_size(a->type) != 0)
        return loom_ctx_fail(ctx, LOOM_ERR_SHAPE, LOOM_OP_VIEW, a, NULL, "view: bad ne0 %lld", (long long)ne[0]);
    for (int d = 1; d < 4; d++) {
        if (2 * d - 1 < n_args) {
            if (args[2 * d - 1] < 0 || args[2 * d] < 0)
                return loom_ctx_fail(ctx, LOOM_ERR_SHAPE, LOOM_OP_VIEW, a, NULL, "view: negative stride/extent");
            nb[d] = (size_t)args[2 * d - 1];
            ne[d] = args[2 * d];
        } else {
            ne[d] = 1;
            if (d == 1) {
                nb[1] = nb[0] * (size_t)(ne[0] / loom_blck_size(a->type));
            } else {
                if (ne[d - 1] > 0 && nb[d - 1] > SIZE_MAX / 4 / (size_t)ne[d - 1])
                    return loom_ctx_fail(ctx, LOOM_ERR_SHAPE, LOOM_OP_VIEW, a, NULL, "view: stride overflow");
                nb[d] = nb[d - 1] * (size_t)ne[d - 1];
            }
        }
    }
    return loom_new_view(ctx, a, a->type, ne, nb, offset);
}

loom_tensor *loom_permute(loom_ctx *ctx, loom_tensor *a, int p0, int p1, int p2, int p3) {
    if (!loom_op_check(ctx, LOOM_OP_VIEW, 1, &a)) return loom_ctx_poison(ctx);
    int p[4] = {p0, p1, p2, p3};
    int seen = 0;
    for (int i = 0; i < 4; i++) {
        if (p[i] < 0 || p[i] > 3 || (seen & (1 << p[i])))
            return loom_ctx_fail(ctx, LOOM_ERR_SHAPE, LOOM_OP_VIEW, a, NULL, "permute: (%d,%d,%d,%d) is not a permutation",
                                 p0, p1, p2, p3);
        seen |= 1 << p[i];
    }
    if (loom_type_is_quantized(a->type) && p[0] != 0)
        return loom_ctx_fail(ctx, LOOM_ERR_SHAPE, LOOM_OP_VIEW, a, NULL, "permute: cannot move dim 0 of a quantized tensor");
    int64_t ne[4];
    size_t nb[4];
    for (int i = 0; i < 4; i++) {
        ne[p[i]] = a->ne[i];
        nb[p[i]] = a->nb[i];
    }
    return loom_new_view(ctx, a, a->type, ne, nb, 0);
}

loom_tensor *loom_transpose(loom_ctx *ctx, loom_tensor *a) { return loom_permute(ctx, a, 1, 0, 2, 3); }

/* ------------------------------------------------------------------ copies */

static loom_tensor *dup_shape(loom_ctx *ctx, loom_tensor *a, const int64_t ne[4]) {
    if (loom_type_is_quantized(a->type)) {
        if (!loom_tensor_is_contiguous_rows(a) || ne[0] != a->ne[0])
            return loom_ctx_fail(ctx, LOOM_ERR_SHAPE, LOOM_OP_DUP, a, NULL,
                                 "quantized copies need contiguous rows and the same ne0");
    } else if (!is_plain_type(a->type)) {
        return loom_ctx_fail(ctx, LOOM_ERR_TYPE, LOOM_OP_DUP, a, NULL, "unsupported type");
    }
    return loom_new_node(ctx, LOOM_OP_DUP, a->type, ne, 1, &a);
}

loom_tensor *loom_cont(loom_ctx *ctx, loom_tensor *a) {
    if (!loom_op_check(ctx, LOOM_OP_DUP, 1, &a)) return loom_ctx_poison(ctx);
    return dup_shape(ctx, a, a->ne);
}

loom_tensor *loom_dup(loom_ctx *ctx, loom_tensor *a) { return loom_cont(ctx, a); }

loom_tensor *loom_cont_nd(loom_ctx *ctx, loom_tensor *a, int n_dims, const int64_t *ne) {
    if (!loom_op_check(ctx, LOOM_OP_DUP, 1, &a)) return loom_ctx_poison(ctx);
    if (n_dims < 1 || n_dims > 4 || !ne)
        return loom_ctx_fail(ctx, LOOM_ERR_SHAPE, LOOM_OP_DUP, a, NULL, "cont_nd: n_dims %d not in 1..4", n_dims);
    int64_t e[4] = {1, 1, 1, 1};
    uint64_t prod = 1;
    for (int i = 0; i < n_dims; i++) {
        if (ne[i] < 0 || (ne[i] > 0 && prod > UINT64_MAX / (uint64_t)ne[i]))
            return loom_ctx_fail(ctx, LOOM_ERR_SHAPE, LOOM_OP_DUP, a, NULL, "cont_nd: bad extent");
        e[i] = ne[i];
        prod *= (uint64_t)ne[i];
    }
    if (prod != (uint64_t)loom_nelements(a))
        return loom_ctx_fail(ctx, LOOM_ERR_SHAPE, LOOM_OP_DUP, a, NULL, "cont_nd: element count %llu != %lld",
                             (unsigned long long)prod, (long long)loom_nelements(a));
    return dup_shape(ctx, a, e);
}

static bool cpy_supported(loom_type s, loom_type d) {
    if (is_float_type(s) && is_float_type(d)) return true;
    if (s == LOOM_TYPE_I32 && d == LOOM_TYPE_I32) return true;
    if (s == LOOM_TYPE_F32 && loom_type_is_quantized(d)) {
        const loom_type_info *ti = loom_type_get((uint32_t)d);
        return ti && ti->can_quantize;
    }
    return loom_type_is_quantized(s) && d == LOOM_TYPE_F32; /* dequantization: same shapes, whole blocks */
}

loom_tensor *loom_cpy(loom_ctx *ctx, loom_tensor *a, loom_tensor *b) {
    loom_tensor *args[2] = {a, b};
    if (!loom_op_check(ctx, LOOM_OP_CPY, 2, args)) return loom_ctx_poison(ctx);
    if (loom_nelements(a) != loom_nelements(b))
        return loom_ctx_fail(ctx, LOOM_ERR_SHAPE, LOOM_OP_CPY, a, b, "element counts differ");
    if (!cpy_supported(a->type, b->type))
        return loom_ctx_fail(ctx, LOOM_ERR_TYPE, LOOM_OP_CPY, a, b, "conversion %s -> %s not supported",
                             loom_type_name(a->type), loom_type_name(b->type));
    if (loom_type_is_quantized(b->type) && !loom_tensor_is_contiguous_rows(b))
        return loom_ctx_fail(ctx, LOOM_ERR_SHAPE, LOOM_OP_CPY, a, b, "quantized destination rows must be contiguous");
    if (loom_type_is_quantized(a->type)) {
        bool same = true;
        for (int i = 0; i < 4; i++) same = same && a->ne[i] == b->ne[i];
        const loom_type_info *ti = loom_type_get((uint32_t)a->type);
        if (!same || !ti || a->ne[0] % ti->block_size || a->nb[0] != loom_type_size(a->type) ||
            b->nb[0] != sizeof(float))
            return loom_ctx_fail(ctx, LOOM_ERR_SHAPE, LOOM_OP_CPY, a, b,
                                 "dequantizing copy: same shapes, whole blocks per row, contiguous rows");
    }
    if (!loom_tensor_base(b)->data && loom_tensor_base(b)->op == LOOM_OP_NONE && loom_nelements(b) > 0)
        return loom_ctx_fail(ctx, LOOM_ERR_INVALID_ARG, LOOM_OP_CPY, a, b, "destination has no memory");
    loom_tensor *t = loom_new_view(ctx, b, b->type, b->ne, b->nb, 0);
    if (t->flags & LOOM_TF_POISON) return t;
    t->op = LOOM_OP_CPY;
    t->src[0] = a;
    t->src[1] = b;
    if (b->name[0]) snprintf(t->name, sizeof t->name, "%.48s (copy)", b->name);
    return t;
}

static loom_tensor *set_impl(loom_ctx *ctx, loom_tensor *a, loom_tensor *b, size_t offset, size_t nb1, bool two_d) {
    loom_tensor *args[2] = {a, b};
    if (!loom_op_check(ctx, LOOM_OP_SET, 2, args)) return loom_ctx_poison(ctx);
    if (a->type != b->type || !is_plain_type(a->type))
        return loom_ctx_fail(ctx, LOOM_ERR_TYPE, LOOM_OP_SET, a, b, "types must match and be unquantized");
    if (!loom_tensor_is_contiguous(a))
        return loom_ctx_fail(ctx, LOOM_ERR_SHAPE, LOOM_OP_SET, a, b, "a must be contiguous");
    size_t nb[4] = {loom_type_size(a->type), two_d ? nb1 : a->nb[1], a->nb[2], a->nb[3]};
    /* bounds of b's elements inside the result (same layout as a) */
    size_t total = loom_tensor_nbytes(a);
    if (loom_nelements(b) > 0) {
        size_t span = nb[0] * (size_t)b->ne[0];
        for (int i = 1; i < 4; i++) {
            size_t k = (size_t)(b->ne[i] - 1);
            if (k && nb[i] > (SIZE_MAX / 4) / k)
                return loom_ctx_fail(ctx, LOOM_ERR_SHAPE, LOOM_OP_SET, a, b, "stride overflow");
            span += k * nb[i];
        }
        if (offset > total || span > total - offset)
            return loom_ctx_fail(ctx, LOOM_ERR_SHAPE, LOOM_OP_SET, a, b,
                                 "b (%zu bytes at offset %zu) does not fit in a (%zu bytes)", span, offset, total);
        if (offset % nb[0] != 0 || nb[1] % nb[0] != 0)
            return loom_ctx_fail(ctx, LOOM_ERR_SHAPE, LOOM_OP_SET, a, b, "offset/stride not element aligned");
    }
    loom_tensor *t = loom_new_node(ctx, LOOM_OP_SET, a->type, a->ne, 2, args);
    set_param_size(t, 0, offset);
    set_param_size(t, 2, nb[1]);
    set_param_size(t, 4, nb[2]);
    set_param_size(t, 6, nb[3]);
    return t;
}

loom_tensor *loom_set(loom_ctx *ctx, loom_tensor *a, loom_tensor *b, size_t offset) {
    return set_impl(ctx, a, b, offset, 0, false);
}
loom_tensor *loom_set_2d(loom_ctx *ctx, loom_tensor *a, loom_tensor *b, size_t offset, size_t nb1) {
    return set_impl(ctx, a, b, offset, nb1, true);
}

loom_tensor *loom_pad(loom_ctx *ctx, loom_tensor *a, int p0, int p1, int p2, int p3) {
    if (!loom_op_check(ctx, LOOM_OP_PAD, 1, &a)) return loom_ctx_poison(ctx);
    if (a->type != LOOM_TYPE_F32) return loom_ctx_fail(ctx, LOOM_ERR_TYPE, LOOM_OP_PAD, a, NULL, "F32 only");
    if (p3 != 0) return loom_ctx_fail(ctx, LOOM_ERR_SHAPE, LOOM_OP_PAD, a, NULL, "p3 must be 0 (got %d)", p3);
    int p[4] = {p0, p1, p2, p3};
    int64_t ne[4];
    for (int i = 0; i < 4; i++) {
        ne[i] = a->ne[i] + p[i];
        if (ne[i] < 1)
            return loom_ctx_fail(ctx, LOOM_ERR_SHAPE, LOOM_OP_PAD, a, NULL, "padding %d leaves dim %d empty", p[i], i);
    }
    loom_tensor *t = loom_new_node(ctx, LOOM_OP_PAD, LOOM_TYPE_F32, ne, 1, &a);
    for (int i = 0; i < 4; i++) loom_set_op_param_i32(t, i, p[i]);
    return t;
}

loom_tensor *loom_concat(loom_ctx *ctx, loom_tensor *a, loom_tensor *b, int dim) {
    loom_tensor *args[2] = {a, b};
    if (!loom_op_check(ctx, LOOM_OP_CONCAT, 2, args)) return loom_ctx_poison(ctx);
    if (dim < 0 || dim > 3) return loom_ctx_fail(ctx, LOOM_ERR_SHAPE, LOOM_OP_CONCAT, a, b, "dim %d not in 0..3", dim);
    if (a->type != b->type || !is_plain_type(a->type))
        return loom_ctx_fail(ctx, LOOM_ERR_TYPE, LOOM_OP_CONCAT, a, b, "types must match and be unquantized");
    int64_t ne[4];
    for (int i = 0; i < 4; i++) {
        if (i != dim && a->ne[i] != b->ne[i])
            return loom_ctx_fail(ctx, LOOM_ERR_SHAPE, LOOM_OP_CONCAT, a, b, "dim %d differs", i);
        ne[i] = a->ne[i];
    }
    ne[dim] = a->ne[dim] + b->ne[dim];
    loom_tensor *t = loom_new_node(ctx, LOOM_OP_CONCAT, a->type, ne, 2, args);
    loom_set_op_param_i32(t, 0, dim);
    return t;
}

loom_tensor *loom_stack(loom_ctx *ctx, loom_tensor *a, int dim, int n, loom_tensor *const *s) {
    if (!loom_op_check(ctx, LOOM_OP_CONCAT, 1, &a)) return loom_ctx_poison(ctx);
    if (n < 0 || (n > 0 && !s))
        return loom_ctx_fail(ctx, LOOM_ERR_INVALID_ARG, LOOM_OP_CONCAT, a, NULL, "stack: bad list (n %d)", n);
    if (n == 0) return a;
    loom_tensor *acc = s[n - 1];
    for (int i = n - 2; i >= 0; i--) acc = loom_concat(ctx, s[i], acc, dim);
    return loom_concat(ctx, a, acc, dim);
}

loom_tensor *loom_repeat(loom_ctx *ctx, loom_tensor *a, int dim, int n) {
    if (!loom_op_check(ctx, LOOM_OP_REPEAT, 1, &a)) return loom_ctx_poison(ctx);
    if (dim < 0 || dim > 3 || n < 1)
        return loom_ctx_fail(ctx, LOOM_ERR_SHAPE, LOOM_OP_REPEAT, a, NULL, "dim %d / count %d invalid", dim, n);
    if (!is_plain_type(a->type)) return loom_ctx_fail(ctx, LOOM_ERR_TYPE, LOOM_OP_REPEAT, a, NULL, "unquantized only");
    int64_t ne[4] = {a->ne[0], a->ne[1], a->ne[2], a->ne[3]};
    if (ne[dim] > INT64_MAX / n) return loom_ctx_fail(ctx, LOOM_ERR_SHAPE, LOOM_OP_REPEAT, a, NULL, "overflow");
    ne[dim] *= n;
    return loom_new_node(ctx, LOOM_OP_REPEAT, a->type, ne, 1, &a);
}

loom_tensor *loom_get_rows(loom_ctx *ctx, loom_tensor *a, loom_tensor *ids) {
    loom_tensor *args[2] = {a, ids};
    if (!loom_op_check(ctx, LOOM_OP_GET_ROWS, 2, args)) return loom_ctx_poison(ctx);
    if (ids->type != LOOM_TYPE_I32)
        return loom_ctx_fail(ctx, LOOM_ERR_TYPE, LOOM_OP_GET_ROWS, a, ids, "ids must be I32");
    if (ids->ne[3] != 1 || a->ne[2] != ids->ne[1] || a->ne[3] != ids->ne[2])
        return loom_ctx_fail(ctx, LOOM_ERR_SHAPE, LOOM_OP_GET_ROWS, a, ids,
                             "need a.ne2 == ids.ne1, a.ne3 == ids.ne2, ids at most 3-D");
    if (!loom_tensor_is_contiguous_rows(a))
        return loom_ctx_fail(ctx, LOOM_ERR_SHAPE, LOOM_OP_GET_ROWS, a, ids, "rows of a must be contiguous");
    loom_type out = LOOM_TYPE_F32;
    if (a->type == LOOM_TYPE_I32) {
        out = LOOM_TYPE_I32;
    } else if (!is_float_type(a->type)) {
        const loom_type_info *ti = loom_type_get((uint32_t)a->type);
        if (!ti || !ti->can_dequantize)
            return loom_ctx_fail(ctx, LOOM_ERR_TYPE, LOOM_OP_GET_ROWS, a, ids, "type %s cannot be dequantized",
                                 loom_type_name(a->type));
    }
    int64_t ne[4] = {a->ne[0], ids->ne[0], ids->ne[1], ids->ne[2]};
    return loom_new_node(ctx, LOOM_OP_GET_ROWS, out, ne, 2, args);
}

loom_tensor *loom_arange(loom_ctx *ctx, float start, float stop, float step, loom_type type) {
    if (!ctx) return NULL;
    if (loom_ctx_status(ctx)) return loom_ctx_poison(ctx);
    if (!isfinite(start) || !isfinite(stop) || !isfinite(step) || step <= 0.0f || !(stop > start))
        return loom_ctx_fail(ctx, LOOM_ERR_INVALID_ARG, LOOM_OP_ARANGE, NULL, NULL,
                             "need finite start < stop and step > 0 (got %g, %g, %g)", (double)start, (double)stop,
                             (double)step);
    double cnt = ceil(((double)stop - (double)start) / (double)step);
    if (!(cnt >= 1.0) || cnt > (double)(1 << 30))
        return loom_ctx_fail(ctx, LOOM_ERR_RANGE, LOOM_OP_ARANGE, NULL, NULL, "%g elements is out of range", cnt);
    int64_t n = (int64_t)cnt;
    if (type == LOOM_TYPE_F32) {
        int64_t ne[4] = {n, 1, 1, 1};
        loom_tensor *t = loom_new_node(ctx, LOOM_OP_ARANGE, LOOM_TYPE_F32, ne, 0, NULL);
        loom_set_op_param_f32(t, 0, start);
        loom_set_op_param_f32(t, 1, step);
        return t;
    }
    if (type != LOOM_TYPE_I32)
        return loom_ctx_fail(ctx, LOOM_ERR_TYPE, LOOM_OP_ARANGE, NULL, NULL, "type %s (F32/I32 only)",
                             loom_type_name(type));
    /* I32: eager host loop (for v = start; v < stop; v += step), bounded by n */
    int64_t ne[1] = {n};
    loom_tensor *t = loom_empty(loom_ctx_input(ctx), LOOM_TYPE_I32, 1, ne);
    if (t->flags & LOOM_TF_POISON) return t;
    int32_t *d = t->data;
    int64_t k = 0;
    for (float v = start; v < stop && k < n; v += step) d[k++] = (int32_t)v;
    for (; k < n; k++) d[k] = (int32_t)((double)start + (double)k * (double)step);
    return t;
}
