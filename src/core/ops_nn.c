/*
 * ops_nn.c - constructors (shape/type checks) of the "nn" ops: matrix products,
 * sorting, RoPE, im2col/conv2d/pooling and attention (backend contract §6.4-§6.8).
 *
 * Op parameter layouts (read by the CPU kernels in src/cpu/ops_*.c and by any
 * other executor):
 *   MUL_MAT     i32[0] = 1 for mul_mat_full_prec (no effect on CPU)
 *   MUL_MAT_ID  src = {a [K,N,E], b [K,B1,T], ids I32 [S,T]}
 *   ARGSORT     i32[0] = 0 ascending, 1 descending
 *   ROPE        src = {a, pos I32 [T], factors F32 or NULL};
 *               i32[0] n_dims, i32[1] mode, i32[2] orig_ctx, f32[3] base,
 *               f32[4] freq_scale, f32[5] ext_factor, f32[6] attn_factor,
 *               f32[7] beta_fast, f32[8] beta_slow
 *   IM2COL      src = {input [W,H,IC,N]}; i32[0..5] = s0,s1,p0,p1,d0,d1,
 *               i32[6] KW, i32[7] KH (the kernel contributes only its shape)
 *   POOL_2D     src = {a [W,H,C,N]}; i32[0] = 0 (average), i32[1] k0, i32[2] k1,
 *               i32[3] s0, i32[4] s1, i32[5] p0, i32[6] p1
 *   FLASH_ATTN  src = {q [Dk,T,H], k [Dk,L,Hkv], v [Dv,L,Hkv], mask or NULL, sinks F32 [H]
 *               or NULL}; f32[0] scale, f32[1] softcap (0 = none)
 */
#include "core/ctx.h"
#include "core/tensor.h"

#include <limits.h>
#include <math.h>

/* Weight types mul_mat accepts (each has a CPU vec_dot kernel). */
static bool mm_weight_type_ok(loom_type t) {
    switch (t) {
    case LOOM_TYPE_F32: case LOOM_TYPE_F16: case LOOM_TYPE_BF16:
    case LOOM_TYPE_Q4_0: case LOOM_TYPE_Q4_1: case LOOM_TYPE_Q5_0: case LOOM_TYPE_Q5_1:
    case LOOM_TYPE_Q8_0: case LOOM_TYPE_Q2_K: case LOOM_TYPE_Q3_K: case LOOM_TYPE_Q4_K:
    case LOOM_TYPE_Q5_K: case LOOM_TYPE_Q6_K: case LOOM_TYPE_MXFP4:
    case LOOM_TYPE_IQ4_NL: case LOOM_TYPE_IQ4_XS:
    case LOOM_TYPE_IQ2_XXS: case LOOM_TYPE_IQ2_XS: case LOOM_TYPE_IQ2_S: case LOOM_TYPE_IQ3_XXS:
    case LOOM_TYPE_IQ3_S: case LOOM_TYPE_IQ1_S: case LOOM_TYPE_IQ1_M: case LOOM_TYPE_TQ1_0:
    case LOOM_TYPE_TQ2_0: case LOOM_TYPE_NVFP4: case LOOM_TYPE_Q1_0: case LOOM_TYPE_Q2_0:
        /* every one an integer kernel against Q8_0 / Q8_K activations */
        return true;
    default:
        return false;
    }
}

static bool is_float_type(loom_type t) { return t == LOOM_TYPE_F32 || t == LOOM_TYPE_F16; }

/* -------------------------------------------------------------------- mul_mat */

/* A mask MUL_MAT takes as a hint (core/tensor.h loom_mm_mask_role): F16 / F32, one
 * plane, contiguous rows (its shape is checked against the product's). */
static bool mm_hint_mask_ok(const loom_tensor *m) {
    return is_float_type(m->type) && m->ne[2] == 1 && m->ne[3] == 1 && m->nb[0] == loom_type_size(m->type);
}

/* mask / role: the optional hint of core/tensor.h (loom_mm_mask_role); NULL / NONE:
 * none. */
static loom_tensor *mul_mat_impl(loom_ctx *ctx, loom_tensor *a, loom_tensor *b, bool full_prec, loom_tensor *mask,
                                 int role) {
    loom_tensor *args[3] = {a, b, mask};
    const loom_op op = LOOM_OP_MUL_MAT;
    if (!loom_op_check(ctx, op, mask ? 3 : 2, args)) return loom_ctx_poison(ctx);
    if (!mm_weight_type_ok(a->type))
        return loom_ctx_fail(ctx, LOOM_ERR_TYPE, op, a, b, "weight type %s has no matmul kernel",
                             loom_type_name(a->type));
    if (b->type != LOOM_TYPE_F32)
        return loom_ctx_fail(ctx, LOOM_ERR_TYPE, op, a, b, "b must be F32, got %s", loom_type_name(b->type));
    if (a->ne[0] != b->ne[0])
        return loom_ctx_fail(ctx, LOOM_ERR_SHAPE, op, a, b, "a.ne0 %lld != b.ne0 %lld",
                             (long long)a->ne[0], (long long)b->ne[0]);
    if (a->ne[2] <= 0 || a->ne[3] <= 0 || b->ne[2] % a->ne[2] != 0 || b->ne[3] % a->ne[3] != 0)
        return loom_ctx_fail(ctx, LOOM_ERR_SHAPE, op, a, b, "b.ne2/ne3 must be multiples of a.ne2/ne3");
    if (!loom_tensor_is_contiguous_rows(a) || (a->ne[1] > 1 && a->nb[0] > a->nb[1]))
        return loom_ctx_fail(ctx, LOOM_ERR_SHAPE, op, a, b, "a rows must be contiguous (a not transposed)");
    if (b->nb[0] != sizeof(float))
        return loom_ctx_fail(ctx, LOOM_ERR_SHAPE, op, a, b, "b rows must be contiguous (nb0 == 4)");
    if (mask) {
        const int64_t L = role == LOOM_MM_MASK_ROWS ? a->ne[1] : a->ne[0];
        if ((role != LOOM_MM_MASK_ROWS && role != LOOM_MM_MASK_K) || !mm_hint_mask_ok(mask) || mask->ne[0] != L ||
            mask->ne[1] < b->ne[1])
            return loom_ctx_fail(ctx, LOOM_ERR_SHAPE, op, mask, b, "mask hint must be F16/F32 [%lld, >= %lld] with contiguous rows",
                                 (long long)L, (long long)b->ne[1]);
    }
    int64_t ne[4] = {a->ne[1], b->ne[1], b->ne[2], b->ne[3]};
    loom_tensor *t = loom_new_node(ctx, op, LOOM_TYPE_F32, ne, mask ? 3 : 2, args);
    loom_set_op_param_i32(t, 0, full_prec ? 1 : 0);
    loom_set_op_param_i32(t, 1, mask ? role : LOOM_MM_MASK_NONE);
    /* a weight with an output scale (loom_tensor_set_matmul_scale) */
    return a->mm_scale ? loom_mul(ctx, t, a->mm_scale) : t;
}

loom_tensor *loom_mul_mat(loom_ctx *ctx, loom_tensor *a, loom_tensor *b) {
    return mul_mat_impl(ctx, a, b, false, NULL, LOOM_MM_MASK_NONE);
}

loom_tensor *loom_mul_mat_full_prec(loom_ctx *ctx, loom_tensor *a, loom_tensor *b) {
    return mul_mat_impl(ctx, a, b, true, NULL, LOOM_MM_MASK_NONE);
}

loom_tensor *loom_mul_mat_id(loom_ctx *ctx, loom_tensor *a, loom_tensor *b, loom_tensor *ids) {
    loom_tensor *args[3] = {a, b, ids};
    const loom_op op = LOOM_OP_MUL_MAT_ID;
    if (!loom_op_check(ctx, op, 3, args)) return loom_ctx_poison(ctx);
    if (!mm_weight_type_ok(a->type))
        return loom_ctx_fail(ctx, LOOM_ERR_TYPE, op, a, b, "weight type %s has no matmul kernel",
                             loom_type_name(a->type));
    if (b->type != LOOM_TYPE_F32)
        return loom_ctx_fail(ctx, LOOM_ERR_TYPE, op, a, b, "b must be F32");
    if (ids->type != LOOM_TYPE_I32)
        return loom_ctx_fail(ctx, LOOM_ERR_TYPE, op, ids, NULL, "ids must be I32");
    if (a->ne[0] != b->ne[0])
        return loom_ctx_fail(ctx, LOOM_ERR_SHAPE, op, a, b, "a.ne0 != b.ne0");
    if (a->ne[3] != 1 || b->ne[3] != 1 || ids->ne[2] != 1 || ids->ne[3] != 1)
        return loom_ctx_fail(ctx, LOOM_ERR_SHAPE, op, a, b, "a and b must be 3-D, ids 2-D");
    if (ids->ne[1] != b->ne[2])
        return loom_ctx_fail(ctx, LOOM_ERR_SHAPE, op, ids, b, "ids.ne1 %lld != b.ne2 %lld",
                             (long long)ids->ne[1], (long long)b->ne[2]);
    if (b->ne[1] <= 0 || ids->ne[0] % b->ne[1] != 0)
        return loom_ctx_fail(ctx, LOOM_ERR_SHAPE, op, ids, b, "ids.ne0 must be a multiple of b.ne1");
    if (!loom_tensor_is_contiguous_rows(a) || b->nb[0] != sizeof(float) || ids->nb[0] != sizeof(int32_t))
        return loom_ctx_fail(ctx, LOOM_ERR_SHAPE, op, a, b, "rows of a, b and ids must be contiguous");
    if (a->ne[2] > INT32_MAX)
        return loom_ctx_fail(ctx, LOOM_ERR_SHAPE, op, a, NULL, "too many experts");
    int64_t ne[4] = {a->ne[1], ids->ne[0], ids->ne[1], 1};
    loom_tensor *t = loom_new_node(ctx, op, LOOM_TYPE_F32, ne, 3, args);
    if (a->mm_scale && loom_tensor_nelements(a->mm_scale) == 1) {
        t = loom_mul(ctx, t, a->mm_scale);
    } else if (a->mm_scale) { /* expert e's products times scale[e] (loom_tensor_set_matmul_scale) */
        const int64_t ne_s[2] = {1, a->ne[2]}, ne_i[1] = {ids->ne[0] * ids->ne[1]}, ne_k[3] = {1, ids->ne[0], ids->ne[1]};
        loom_tensor *sel = loom_reshape(ctx, loom_tensor_is_contiguous(ids) ? ids : loom_cont(ctx, ids), 1, ne_i);
        loom_tensor *sc = loom_get_rows(ctx, loom_reshape(ctx, a->mm_scale, 2, ne_s), sel);
        t = loom_mul(ctx, t, loom_reshape(ctx, sc, 3, ne_k));
    }
    return t;
}

loom_status loom_tensor_set_matmul_scale(loom_tensor *w, loom_tensor *scale) {
    if (!w || (w->flags & LOOM_TF_POISON)) return LOOM_ERR_INVALID_ARG;
    if (scale) {
        const int64_t n = loom_tensor_nelements(scale);
        if ((scale->flags & LOOM_TF_POISON) || scale->type != LOOM_TYPE_F32 || !loom_tensor_is_contiguous(scale) ||
            (n != 1 && (n != w->ne[2] || w->ne[3] != 1)))
            return LOOM_ERR_INVALID_ARG;
    }
    w->mm_scale = scale;
    return LOOM_OK;
}

/* -------------------------------------------------------------------- sorting */

loom_tensor *loom_argsort(loom_ctx *ctx, loom_tensor *a, bool descending) {
    loom_tensor *args[1] = {a};
    const loom_op op = LOOM_OP_ARGSORT;
    if (!loom_op_check(ctx, op, 1, args)) return loom_ctx_poison(ctx);
    if (a->type != LOOM_TYPE_F32 && a->type != LOOM_TYPE_I32)
        return loom_ctx_fail(ctx, LOOM_ERR_TYPE, op, a, NULL, "input must be F32 or I32");
    if (a->ne[0] > INT32_MAX)
        return loom_ctx_fail(ctx, LOOM_ERR_SHAPE, op, a, NULL, "rows longer than INT32_MAX");
    if (a->nb[0] != loom_type_size(a->type))
        return loom_ctx_fail(ctx, LOOM_ERR_SHAPE, op, a, NULL, "rows must be contiguous");
    loom_tensor *t = loom_new_node(ctx, op, LOOM_TYPE_I32, a->ne, 1, args);
    loom_set_op_param_i32(t, 0, descending ? 1 : 0);
    return t;
}

loom_tensor *loom_top_k(loom_ctx *ctx, loom_tensor *a, int k) {
    loom_tensor *args[1] = {a};
    const loom_op op = LOOM_OP_ARGSORT;
    if (!loom_op_check(ctx, op, 1, args)) return loom_ctx_poison(ctx);
    if (k < 1 || k > a->ne[0])
        return loom_ctx_fail(ctx, LOOM_ERR_SHAPE, op, a, NULL, "top_k: k = %d not in [1, ne0 = %lld]", k,
                             (long long)a->ne[0]);
    loom_tensor *s = loom_argsort(ctx, a, true);
    if (loom_tensor_is_poison(s)) return s;
    int64_t ne[4] = {k, s->ne[1], s->ne[2], s->ne[3]};
    return loom_new_view(ctx, s, LOOM_TYPE_I32, ne, s->nb, 0);
}

loom_tensor *loom_top_k_mask(loom_ctx *ctx, loom_tensor *scores, loom_tensor *mask, int k) {
    loom_tensor *args[2] = {scores, mask};
    const loom_op op = LOOM_OP_TOP_K_MASK;
    if (!loom_op_check(ctx, op, 2, args)) return loom_ctx_poison(ctx);
    if (scores->type != LOOM_TYPE_F32 || (mask->type != LOOM_TYPE_F32 && mask->type != LOOM_TYPE_F16))
        return loom_ctx_fail(ctx, LOOM_ERR_TYPE, op, scores, mask, "top_k_mask: scores F32, mask F32 or F16");
    if (k < 1)
        return loom_ctx_fail(ctx, LOOM_ERR_SHAPE, op, scores, mask, "top_k_mask: k = %d < 1", k);
    if (scores->ne[0] != mask->ne[0] || scores->ne[1] > mask->ne[1] || scores->ne[2] != 1 || scores->ne[3] != 1 ||
        mask->ne[2] != 1 || mask->ne[3] != 1 || scores->ne[0] > INT32_MAX)
        return loom_ctx_fail(ctx, LOOM_ERR_SHAPE, op, scores, mask,
                             "top_k_mask: scores [L, T] and mask [L, >= T] (2-D) expected");
    if (scores->nb[0] != sizeof(float) || mask->nb[0] != loom_type_size(mask->type))
        return loom_ctx_fail(ctx, LOOM_ERR_SHAPE, op, scores, mask, "top_k_mask: rows must be contiguous");
    loom_tensor *t = loom_new_node(ctx, op, mask->type, mask->ne, 2, args);
    loom_set_op_param_i32(t, 0, k);
    return t;
}

loom_tensor *loom_hadamard(loom_ctx *ctx, loom_tensor *a, int n) {
    loom_tensor *args[1] = {a};
    const loom_op op = LOOM_OP_HADAMARD;
    if (!loom_op_check(ctx, op, 1, args)) return loom_ctx_poison(ctx);
    if (a->type != LOOM_TYPE_F32) return loom_ctx_fail(ctx, LOOM_ERR_TYPE, op, a, NULL, "hadamard: input must be F32");
    if (n < 2 || n > 4096 || (n & (n - 1)) || a->ne[0] % n)
        return loom_ctx_fail(ctx, LOOM_ERR_SHAPE, op, a, NULL,
                             "hadamard: block %d is not a power of two in [2, 4096] dividing ne0 = %lld", n,
                             (long long)a->ne[0]);
    if (a->nb[0] != sizeof(float))
        return loom_ctx_fail(ctx, LOOM_ERR_SHAPE, op, a, NULL, "hadamard: rows must be contiguous");
    loom_tensor *t = loom_new_node(ctx, op, LOOM_TYPE_F32, a->ne, 1, args);
    loom_set_op_param_i32(t, 0, n);
    return t;
}

/* -------------------------------------------------------------------- rope */

/* loom_rope_default_opts is defined in ctx.c */

loom_tensor *loom_rope(loom_ctx *ctx, loom_tensor *a, loom_tensor *pos, int n_dims, float base,
                       float freq_scale, const loom_rope_opts *opts) {
    const loom_op op = LOOM_OP_ROPE;
    loom_rope_opts o = opts ? *opts : loom_rope_default_opts();
    loom_tensor *args[3] = {a, pos, o.factors};
    if (!loom_op_check(ctx, op, o.factors ? 3 : 2, args)) return loom_ctx_poison(ctx);
    if (!is_float_type(a->type))
        return loom_ctx_fail(ctx, LOOM_ERR_TYPE, op, a, NULL, "input must be F32 or F16 (cast quantized first)");
    if (pos->type != LOOM_TYPE_I32)
        return loom_ctx_fail(ctx, LOOM_ERR_TYPE, op, pos, NULL, "positions must be I32");
    if (pos->ne[0] != a->ne[2] || pos->ne[1] != 1 || pos->ne[2] != 1 || pos->ne[3] != 1)
        return loom_ctx_fail(ctx, LOOM_ERR_SHAPE, op, a, pos, "positions must be a vector of length a.ne2");
    if (a->ne[3] != 1)
        return loom_ctx_fail(ctx, LOOM_ERR_SHAPE, op, a, NULL, "input must be [head_dim, heads, T, 1]");
    if (n_dims <= 0 || (n_dims & 1) || n_dims > a->ne[0])
        return loom_ctx_fail(ctx, LOOM_ERR_SHAPE, op, a, NULL, "n_dims %d must be even, > 0 and <= ne0", n_dims);
    if (o.mode != LOOM_ROPE_NORMAL && o.mode != LOOM_ROPE_NEOX)
        return loom_ctx_fail(ctx, LOOM_ERR_INVALID_ARG, op, a, NULL, "unknown rope mode %d", (int)o.mode);
    if (!(base > 0.0f) || !(freq_scale > 0.0f) || !(o.orig_ctx > 0))
        return loom_ctx_fail(ctx, LOOM_ERR_INVALID_ARG, op, a, NULL, "base, freq_scale and orig_ctx must be > 0");
    if (o.ext_factor != 0.0f && (!(o.beta_fast > 0.0f) || !(o.beta_slow > 0.0f)))
        return loom_ctx_fail(ctx, LOOM_ERR_INVALID_ARG, op, a, NULL, "YaRN betas must be > 0");
    if (o.factors) {
        const loom_tensor *f = o.factors;
        if (f->type != LOOM_TYPE_F32 || f->nb[0] != sizeof(float) || f->ne[0] < n_dims / 2)
            return loom_ctx_fail(ctx, LOOM_ERR_SHAPE, op, f, NULL, "factors must be F32 with >= n_dims/2 elements");
    }
    if (a->nb[0] != loom_type_size(a->type))
        return loom_ctx_fail(ctx, LOOM_ERR_SHAPE, op, a, NULL, "rows must be contiguous");
    loom_tensor *t = loom_new_node(ctx, op, a->type, a->ne, 3, args);
    loom_set_op_param_i32(t, 0, n_dims);
    loom_set_op_param_i32(t, 1, (int32_t)o.mode);
    loom_set_op_param_i32(t, 2, o.orig_ctx);
    loom_set_op_param_f32(t, 3, base);
    loom_set_op_param_f32(t, 4, freq_scale);
    loom_set_op_param_f32(t, 5, o.ext_factor);
    loom_set_op_param_f32(t, 6, o.attn_factor);
    loom_set_op_param_f32(t, 7, o.beta_fast);
    loom_set_op_param_f32(t, 8, o.beta_slow);
    return t;
}

/* -------------------------------------------------------------------- conv / pool */

/* Output extent of a convolution axis; -1 when it would be < 1 or arguments are bad. */
static int64_t conv_out(int64_t in, int64_t k, int s, int p, int d) {
    if (s < 1 || p < 0 || d < 1 || k < 1 || in < 1) return -1;
    if (p > INT32_MAX / 4 || k > INT32_MAX / 4 || d > INT32_MAX / 4) return -1;
    int64_t span = (int64_t)d * (k - 1) + 1;
    int64_t room = in + 2 * (int64_t)p - span;
    if (room < 0) return -1;
    return room / s + 1;
}

static loom_tensor *im2col_node(loom_ctx *ctx, const loom_tensor *kernel, loom_tensor *input, int s0, int s1,
                                int p0, int p1, int d0, int d1, loom_type dst_type) {
    const loom_op op = LOOM_OP_IM2COL;
    loom_tensor *args[1] = {input};
    if (!is_float_type(input->type))
        return loom_ctx_fail(ctx, LOOM_ERR_TYPE, op, input, NULL, "input must be F32 or F16");
    if (!is_float_type(dst_type))
        return loom_ctx_fail(ctx, LOOM_ERR_TYPE, op, input, NULL, "dst type must be F32 or F16");
    if (kernel->ne[2] != input->ne[2])
        return loom_ctx_fail(ctx, LOOM_ERR_SHAPE, op, kernel, input, "kernel IC %lld != input IC %lld",
                             (long long)kernel->ne[2], (long long)input->ne[2]);
    if (kernel->ne[0] > INT32_MAX || kernel->ne[1] > INT32_MAX)
        return loom_ctx_fail(ctx, LOOM_ERR_SHAPE, op, kernel, input, "kernel too large");
    int64_t ow = conv_out(input->ne[0], kernel->ne[0], s0, p0, d0);
    int64_t oh = conv_out(input->ne[1], kernel->ne[1], s1, p1, d1);
    if (ow < 1 || oh < 1)
        return loom_ctx_fail(ctx, LOOM_ERR_SHAPE, op, kernel, input,
                             "bad stride/padding/dilation or kernel larger than the padded input");
    int64_t kk = kernel->ne[0] * kernel->ne[1];
    if (kk > INT64_MAX / input->ne[2])
        return loom_ctx_fail(ctx, LOOM_ERR_SHAPE, op, kernel, input, "size overflow");
    int64_t ne[4] = {kk * input->ne[2], ow, oh, input->ne[3]};
    loom_tensor *t = loom_new_node(ctx, op, dst_type, ne, 1, args);
    const int32_t prm[8] = {s0, s1, p0, p1, d0, d1, (int32_t)kernel->ne[0], (int32_t)kernel->ne[1]};
    for (int i = 0; i < 8; i++) loom_set_op_param_i32(t, i, prm[i]);
    return t;
}

loom_tensor *loom_im2col(loom_ctx *ctx, loom_tensor *kernel, loom_tensor *input, int s0, int s1, int p0, int p1,
                         int d0, int d1, loom_type dst_type) {
    loom_tensor *args[2] = {kernel, input};
    if (!loom_op_check(ctx, LOOM_OP_IM2COL, 2, args)) return loom_ctx_poison(ctx);
    return im2col_node(ctx, kernel, input, s0, s1, p0, p1, d0, d1, dst_type);
}

/* im2col in F32 (mul_mat's activations are F32; for an F16 kernel the matmul
 * converts them to F16 rows, so this equals im2col in the kernel's type), then
 * kernel[K,OC] x cols[K, OW*OH*N] -> [OC,OW,OH,N] -> permute -> [OW,OH,OC,N]. */
loom_tensor *loom_conv2d(loom_ctx *ctx, loom_tensor *kernel, loom_tensor *input, int s0, int s1, int p0, int p1,
                         int d0, int d1) {
    const loom_op op = LOOM_OP_IM2COL;
    loom_tensor *args[2] = {kernel, input};
    if (!loom_op_check(ctx, op, 2, args)) return loom_ctx_poison(ctx);
    if (loom_blck_size(kernel->type) != 1 || !mm_weight_type_ok(kernel->type))
        return loom_ctx_fail(ctx, LOOM_ERR_TYPE, op, kernel, NULL, "conv2d kernel must be F32, F16 or BF16");
    if (!loom_tensor_is_contiguous(kernel))
        return loom_ctx_fail(ctx, LOOM_ERR_SHAPE, op, kernel, NULL, "conv2d kernel must be contiguous");
    loom_tensor *cols = im2col_node(ctx, kernel, input, s0, s1, p0, p1, d0, d1, LOOM_TYPE_F32);
    if (loom_tensor_is_poison(cols)) return cols;
    const int64_t K = cols->ne[0], OW = cols->ne[1], OH = cols->ne[2], N = cols->ne[3];
    const int64_t OC = kernel->ne[3];
    int64_t kne[2] = {K, OC};
    int64_t cne[2] = {K, OW * OH * N};
    loom_tensor *w = loom_reshape(ctx, kernel, 2, kne);
    loom_tensor *c2 = loom_reshape(ctx, cols, 2, cne);
    loom_tensor *r = loom_mul_mat(ctx, w, c2); /* [OC, OW*OH*N] */
    int64_t rne[4] = {OC, OW, OH, N};
    r = loom_reshape(ctx, r, 4, rne);
    r = loom_permute(ctx, r, 2, 0, 1, 3); /* [OW, OH, OC, N] */
    return loom_cont(ctx, r);
}

loom_tensor *loom_avg_pool2d(loom_ctx *ctx, loom_tensor *a, int k, int s, int p) {
    const loom_op op = LOOM_OP_POOL_2D;
    loom_tensor *args[1] = {a};
    if (!loom_op_check(ctx, op, 1, args)) return loom_ctx_poison(ctx);
    if (!is_float_type(a->type))
        return loom_ctx_fail(ctx, LOOM_ERR_TYPE, op, a, NULL, "input must be F32 or F16");
    if (k < 1 || s < 1 || p < 0)
        return loom_ctx_fail(ctx, LOOM_ERR_INVALID_ARG, op, a, NULL, "bad k=%d s=%d p=%d", k, s, p);
    int64_t ow = conv_out(a->ne[0], k, s, p, 1), oh = conv_out(a->ne[1], k, s, p, 1);
    if (ow < 1 || oh < 1)
        return loom_ctx_fail(ctx, LOOM_ERR_SHAPE, op, a, NULL, "window %d larger than the padded input", k);
    int64_t ne[4] = {ow, oh, a->ne[2], a->ne[3]};
    loom_tensor *t = loom_new_node(ctx, op, LOOM_TYPE_F32, ne, 1, args);
    const int32_t prm[7] = {0, k, k, s, s, p, p};
    for (int i = 0; i < 7; i++) loom_set_op_param_i32(t, i, prm[i]);
    return t;
}

/* -------------------------------------------------------------------- attention */

/* Key/value types the fused kernel reads (rows converted per row). */
static bool fa_kv_type_ok(loom_type t) {
    return t == LOOM_TYPE_F32 || t == LOOM_TYPE_F16 || t == LOOM_TYPE_Q8_0 || t == LOOM_TYPE_Q4_0 ||
           t == LOOM_TYPE_BF16;
}

/* softcap >= 0 and finite; sinks NULL or contiguous F32 with H values; max_bias >= 0,
 * finite, > 0 only with a mask. */
static loom_tensor *attn_extras_check(loom_ctx *ctx, loom_tensor *q, int64_t H, float softcap, loom_tensor *sinks,
                                      float max_bias, const loom_tensor *mask) {
    const loom_op op = LOOM_OP_FLASH_ATTN;
    if (!(softcap >= 0.0f) || !isfinite(softcap))
        return loom_ctx_fail(ctx, LOOM_ERR_INVALID_ARG, op, q, NULL, "softcap %g must be finite and >= 0 (0 = none)",
                             (double)softcap);
    if (!(max_bias >= 0.0f) || !isfinite(max_bias) || (max_bias > 0.0f && !mask))
        return loom_ctx_fail(ctx, LOOM_ERR_INVALID_ARG, op, q, NULL,
                             "ALiBi max_bias %g must be finite and >= 0 (0 = none), and > 0 only with a mask",
                             (double)max_bias);
    if (sinks) {
        if (!loom_op_check(ctx, op, 1, &sinks)) return loom_ctx_poison(ctx);
        if (sinks->type != LOOM_TYPE_F32 || !loom_tensor_is_contiguous(sinks) || loom_tensor_nelements(sinks) != H)
            return loom_ctx_fail(ctx, LOOM_ERR_SHAPE, op, q, sinks,
                                 "sinks must be contiguous F32 with one value per query head (%lld)", (long long)H);
    }
    return q;
}

loom_tensor *loom_flash_attn(loom_ctx *ctx, loom_tensor *q, loom_tensor *k, loom_tensor *v, loom_tensor *mask,
                             float scale) {
    return loom_flash_attn_ext(ctx, q, k, v, mask, scale, 0.0f, NULL);
}

loom_tensor *loom_flash_attn_ext(loom_ctx *ctx, loom_tensor *q, loom_tensor *k, loom_tensor *v, loom_tensor *mask,
                                 float scale, float softcap, loom_tensor *sinks) {
    const loom_attn_opts o = {.softcap = softcap, .sinks = sinks};
    return loom_flash_attn_opts(ctx, q, k, v, mask, scale, &o);
}

loom_tensor *loom_flash_attn_opts(loom_ctx *ctx, loom_tensor *q, loom_tensor *k, loom_tensor *v, loom_tensor *mask,
                                  float scale, const loom_attn_opts *opts) {
    const loom_op op = LOOM_OP_FLASH_ATTN;
    const loom_attn_opts none = {0};
    if (!opts) opts = &none;
    const float softcap = opts->softcap, max_bias = opts->max_bias;
    loom_tensor *sinks = opts->sinks;
    loom_tensor *args[4] = {q, k, v, mask};
    if (!loom_op_check(ctx, op, mask ? 4 : 3, args)) return loom_ctx_poison(ctx);
    if (attn_extras_check(ctx, q, q->ne[2], softcap, sinks, max_bias, mask) != q) return loom_ctx_poison(ctx);
    if (q->type != LOOM_TYPE_F32)
        return loom_ctx_fail(ctx, LOOM_ERR_TYPE, op, q, NULL, "q must be F32");
    if (!fa_kv_type_ok(k->type) || !fa_kv_type_ok(v->type))
        return loom_ctx_fail(ctx, LOOM_ERR_TYPE, op, k, v, "k/v must be F32, F16, BF16, Q8_0 or Q4_0");
    const int64_t Dk = q->ne[0], T = q->ne[1], H = q->ne[2], L = k->ne[1], Hkv = k->ne[2], Dv = v->ne[0];
    if (k->ne[0] != Dk)
        return loom_ctx_fail(ctx, LOOM_ERR_SHAPE, op, q, k, "k.ne0 != q.ne0");
    if (v->ne[1] != L || v->ne[2] != Hkv)
        return loom_ctx_fail(ctx, LOOM_ERR_SHAPE, op, k, v, "v must be [Dv, L, Hkv] matching k");
    if (Hkv <= 0 || H % Hkv != 0)
        return loom_ctx_fail(ctx, LOOM_ERR_SHAPE, op, q, k, "heads %lld not a multiple of kv heads %lld",
                             (long long)H, (long long)Hkv);
    if (q->ne[3] != 1 || k->ne[3] != 1 || v->ne[3] != 1)
        return loom_ctx_fail(ctx, LOOM_ERR_SHAPE, op, q, k, "q, k, v must be 3-D");
    if (q->nb[0] != sizeof(float) || !loom_tensor_is_contiguous_rows(k) ||
        (!loom_tensor_is_contiguous_rows(v) && !loom_tensor_is_transposed(v)))
        return loom_ctx_fail(ctx, LOOM_ERR_SHAPE, op, k, v,
                             "rows of q, k and v must be contiguous (v may be transposed: nb1 = element size)");
    if (mask) {
        if (!is_float_type(mask->type))
            return loom_ctx_fail(ctx, LOOM_ERR_TYPE, op, mask, NULL, "mask must be F16 or F32");
        if (mask->ne[0] != L || mask->ne[1] < T || mask->ne[2] != 1 || mask->ne[3] != 1)
            return loom_ctx_fail(ctx, LOOM_ERR_SHAPE, op, mask, k, "mask must be [L, >= T] with L = %lld, T = %lld",
                                 (long long)L, (long long)T);
    }
    int64_t ne[4] = {Dv, H, T, 1};
    loom_tensor *t = loom_new_node(ctx, op, LOOM_TYPE_F32, ne, 4, args);
    if (loom_tensor_is_poison(t)) return t;
    loom_set_op_param_f32(t, 0, scale);
    loom_set_op_param_f32(t, 1, softcap);
    loom_set_op_param_f32(t, 2, max_bias);
    t->src[4] = sinks;
    return t;
}

loom_tensor *loom_sdpa(loom_ctx *ctx, loom_tensor *q, loom_tensor *k, loom_tensor *v, loom_tensor *mask,
                       float scale) {
    return loom_sdpa_ext(ctx, q, k, v, mask, scale, 0.0f, NULL);
}

loom_tensor *loom_sdpa_ext(loom_ctx *ctx, loom_tensor *q, loom_tensor *k, loom_tensor *v, loom_tensor *mask,
                           float scale, float softcap, loom_tensor *sinks) {
    const loom_attn_opts o = {.softcap = softcap, .sinks = sinks};
    return loom_sdpa_opts(ctx, q, k, v, mask, scale, &o);
}

loom_tensor *loom_sdpa_opts(loom_ctx *ctx, loom_tensor *q, loom_tensor *k, loom_tensor *v, loom_tensor *mask,
                            float scale, const loom_attn_opts *opts) {
    const loom_op op = LOOM_OP_FLASH_ATTN;
    const loom_attn_opts none = {0};
    if (!opts) opts = &none;
    float softcap = opts->softcap;
    const float max_bias = opts->max_bias;
    loom_tensor *sinks = opts->sinks;
    loom_tensor *args[4] = {q, k, v, mask};
    if (!loom_op_check(ctx, op, mask ? 4 : 3, args)) return loom_ctx_poison(ctx);
    if (attn_extras_check(ctx, q, q->ne[1], softcap, sinks, max_bias, mask) != q) return loom_ctx_poison(ctx);
    const bool extras = softcap > 0.0f || sinks || max_bias > 0.0f;
    /* q [Dk,H,T], k [Dk,Hkv,L] */
    const int64_t H = q->ne[1], T = q->ne[2], Hkv = k->ne[1], L = k->ne[2];
    if (q->ne[0] != k->ne[0])
        return loom_ctx_fail(ctx, LOOM_ERR_SHAPE, op, q, k, "sdpa: q.ne0 != k.ne0");
    if (Hkv <= 0 || H % Hkv != 0)
        return loom_ctx_fail(ctx, LOOM_ERR_SHAPE, op, q, k, "sdpa: heads not a multiple of kv heads");
    if (q->ne[3] != 1 || k->ne[3] != 1 || v->ne[3] != 1)
        return loom_ctx_fail(ctx, LOOM_ERR_SHAPE, op, q, k, "sdpa: q, k, v must be 3-D");
    if (mask && (mask->ne[0] != L || mask->ne[1] < T))
        return loom_ctx_fail(ctx, LOOM_ERR_SHAPE, op, mask, k, "sdpa: mask must be [L, >= T]");
    loom_tensor *qp = loom_permute(ctx, q, 0, 2, 1, 3); /* [Dk,T,H] */
    loom_tensor *kp = loom_permute(ctx, k, 0, 2, 1, 3); /* [Dk,L,Hkv] */
    if (loom_ctx_flash_attn(ctx)) {
        if (v->ne[1] != Hkv || v->ne[2] != L)
            return loom_ctx_fail(ctx, LOOM_ERR_SHAPE, op, v, k, "sdpa (flash): v must be [Dv, Hkv, L]");
        loom_tensor *vp = loom_permute(ctx, v, 0, 2, 1, 3); /* [Dv,L,Hkv] */
        return loom_flash_attn_opts(ctx, qp, kp, vp, mask, scale, opts);
    }
    if (v->ne[0] != L || v->ne[2] != Hkv)
        return loom_ctx_fail(ctx, LOOM_ERR_SHAPE, op, v, k, "sdpa: v must be PermutedV [L, Dv, Hkv]");
    if (T == 1) {
        /* one query (decode): the fused kernel reads the PermutedV cache transposed
         * ([Dv, L, Hkv] with adjacent keys), so scores, softmax and p.V are one node
         * with one barrier, the query heads sharing a KV head as the columns of gemm
         * tiles. Measured (one sdpa per compute, Dk 128, 32 / 4 heads, F16 cache, 2
         * threads): L = 64 13 us against 20-24 us for the three nodes below, L = 256
         * 40 against 48-57 us, L = 512 about even. */
        loom_tensor *vt = loom_transpose(ctx, v); /* [Dv, L, Hkv] */
        if (vt && loom_tensor_is_transposed(vt))
            return loom_flash_attn_opts(ctx, qp, kp, vt, mask, scale, opts);
    }
    if (T == 1 && H > Hkv && loom_tensor_is_contiguous(q) && !extras) {
        /* one query (decode) with grouped KV heads: the G = H/Hkv query heads sharing a
         * KV head are the columns of one product per KV head ([Dk, G, Hkv]), so each
         * key/value row is used G times per load (a gemm tile, not G matrix x vector
         * products). Same memory layouts as the general path for T = 1. */
        const int64_t G = H / Hkv, Dk = q->ne[0], Dv = v->ne[1];
        const int64_t ne_qg[3] = {Dk, G, Hkv}, ne_row[3] = {L, 1, H}, ne_grp[3] = {L, G, Hkv}, ne_o[3] = {Dv, H, 1};
        loom_tensor *kq = loom_mul_mat_full_prec(ctx, kp, loom_reshape(ctx, q, 3, ne_qg)); /* [L,G,Hkv] */
        kq = loom_softmax_ext(ctx, loom_reshape(ctx, kq, 3, ne_row), mask, scale);       /* per head: mask row 0 */
        loom_tensor *kqv = loom_mul_mat(ctx, v, loom_reshape(ctx, kq, 3, ne_grp));       /* [Dv,G,Hkv] */
        return loom_cont(ctx, loom_reshape(ctx, kqv, 3, ne_o)); /* a computed node, as below */
    }
    /* with a mask (prompts: causal, windows, other sequences' cells), both products
     * carry it as a hint (core/tensor.h loom_mm_mask_role): the CPU skips the scores of
     * masked keys and the p.V products of their zero probabilities (bit-identical to
     * computing them; 1.1B BF16 pp512 spent 14% in these nodes, half of it masked) */
    /* (only masks the hint accepts: any other still goes to the softmax alone) */
    const bool hint = mask && T > 1 && mm_hint_mask_ok(mask);
    loom_tensor *kq = mul_mat_impl(ctx, kp, qp, true, hint ? mask : NULL, hint ? LOOM_MM_MASK_ROWS : LOOM_MM_MASK_NONE); /* [L,T,H] */
    if (softcap > 0.0f) { /* softcap * tanh(scale * s / softcap), then the softmax unscaled */
        kq = loom_scale(ctx, loom_tanh(ctx, loom_scale(ctx, kq, scale / softcap)), softcap);
        scale = 1.0f;
    }
    kq = loom_softmax_ext_sinks(ctx, kq, mask, scale, sinks);
    if (max_bias > 0.0f && !loom_tensor_is_poison(kq)) loom_set_op_param_f32(kq, 1, max_bias); /* heads: dim 2 */
    loom_tensor *kqv = mul_mat_impl(ctx, v, kq, false, hint ? mask : NULL, hint ? LOOM_MM_MASK_K : LOOM_MM_MASK_NONE); /* [Dv,T,H] */
    kqv = loom_permute(ctx, kqv, 0, 2, 1, 3);               /* [Dv,H,T] */
    return loom_cont(ctx, kqv);
}
