/*
 * loom.h - the tensor engine: contexts, tensors, graph ops, compute.
 *
 * A context (loom_ctx) is made per forward pass. It owns an arena of tensor
 * descriptors (sized up front: max_nodes), the graph accumulated with
 * loom_ctx_forward, and the memory of tensors created through it. Ops only
 * describe work (they create graph nodes); loom_ctx_compute runs the graph.
 *
 * Example (standalone CPU engine):
 *     loom_ctx *ctx; loom_error err = {0};
 *     loom_ctx_params p = loom_ctx_default_params();
 *     if (loom_ctx_new(&p, &ctx, &err)) { fprintf(stderr, "%s\n", err.msg); return 1; }
 *     int64_t ne[2] = {4, 3};
 *     loom_tensor *a = loom_from_f32(loom_ctx_input(ctx), data, 12, 2, ne);
 *     loom_tensor *y = loom_silu(ctx, loom_rms_norm(ctx, a, NULL, 1e-5f));
 *     loom_ctx_forward(ctx, y);
 *     if (loom_ctx_compute(ctx, 1, &y) == LOOM_OK) loom_tensor_read_f32(y, out, 12);
 *     loom_ctx_free(ctx);
 *
 * Errors: every op checks shapes/types/arity. On the first failure the context
 * records a sticky error (op name, shapes, message) and the op returns a poison
 * tensor (never NULL); ops on poison tensors return poison. forward/compute/
 * reserve then return that status. Check once with loom_ctx_status().
 *
 * Conventions (ggml/GGUF order): ne[0] is the innermost (contiguous) dimension;
 * nb[i] are byte strides; at most 4 dims; unused dims have ne=1.
 *
 * Threading: a context and its tensors belong to one thread at a time.
 * Compute internally uses the engine's/backend's thread pool.
 */
#ifndef LOOM_H
#define LOOM_H

#include "loom_base.h"

#ifdef __cplusplus
extern "C" {
#endif

#define LOOM_MAX_DIMS 4
#define LOOM_MAX_NAME 64

typedef struct loom_ctx loom_ctx;
typedef struct loom_tensor loom_tensor;

/* Every op of the engine. Composite ops (variance, stddev, layer_norm with
 * weights, stack, conv2d, sdpa without flash) are built from these. */
typedef enum loom_op {
    LOOM_OP_NONE = 0, /* leaf: weight, input, allocated tensor */
    LOOM_OP_VIEW,     /* reshape/view/permute/transpose: no compute */
    LOOM_OP_DUP,      /* contiguous copy (cont, dup), same type */
    LOOM_OP_CPY,      /* copy into another tensor's memory, converting type */
    LOOM_OP_SET,
    LOOM_OP_PAD,
    LOOM_OP_CONCAT,
    LOOM_OP_REPEAT,
    LOOM_OP_GET_ROWS,
    LOOM_OP_ARANGE,
    LOOM_OP_ADD, LOOM_OP_SUB, LOOM_OP_MUL, LOOM_OP_DIV,
    LOOM_OP_SCALE,
    LOOM_OP_NEG, LOOM_OP_SQR, LOOM_OP_SQRT, LOOM_OP_SIN, LOOM_OP_COS,
    LOOM_OP_TANH, LOOM_OP_SIGMOID, LOOM_OP_SILU, LOOM_OP_RELU, LOOM_OP_GELU,
    LOOM_OP_QUICK_GELU, LOOM_OP_CLAMP,
    LOOM_OP_SUM_ROWS, LOOM_OP_MEAN,
    LOOM_OP_SOFT_MAX,     /* softmax(x*scale + mask) along ne0; mask optional */
    LOOM_OP_NORM,         /* (x-mean)/sqrt(var+eps) */
    LOOM_OP_RMS_NORM,     /* x/sqrt(mean(x^2)+eps) */
    LOOM_OP_MUL_MAT,
    LOOM_OP_MUL_MAT_ID,
    LOOM_OP_ARGSORT,      /* op_param: 0 ascending, 1 descending */
    LOOM_OP_ROPE,
    LOOM_OP_IM2COL,
    LOOM_OP_POOL_2D,
    LOOM_OP_FLASH_ATTN,
    LOOM_OP_SOFTPLUS,     /* log(1 + e^x) (x > 20: x) */
    LOOM_OP_SSM_CONV,     /* causal depthwise conv over a batch of tokens with per-sequence state */
    LOOM_OP_GATED_DELTA,  /* gated delta rule over a batch of tokens with per-sequence state */
    LOOM_OP_SSM_SCAN,     /* Mamba-2 selective scan over a batch of tokens with per-sequence state */
    LOOM_OP_RWKV_WKV7,    /* RWKV-7 generalized delta rule over a batch of tokens with per-sequence state */
    LOOM_OP_RWKV_WKV6,    /* RWKV-6 state update over a batch of tokens with per-sequence state */
    LOOM_OP_XIELU,        /* xIELU activation (Apertus); op_params: alpha_n, alpha_p, beta, eps as applied */
    LOOM_OP_EXP,          /* e^x */
    LOOM_OP_TOP_K_MASK,   /* a mask keeping each row's k best-scored keys; op_param: k */
    LOOM_OP_HADAMARD,     /* orthonormal Walsh-Hadamard transform of blocks along ne0; op_param: n */
    LOOM_OP_COUNT
} loom_op;

/* Static op name ("MUL_MAT", ...). */
const char *loom_op_name(loom_op op);

/* ------------------------------------------------------------------ contexts */

typedef struct loom_ctx_params {
    int64_t max_nodes;  /* tensor objects and graph nodes this context may hold (default 8192) */
    int n_threads;      /* standalone engine only: 0 = physical cores available */
    bool flash_attn;    /* loom_sdpa uses flash attention (standalone engine only;
                           backend contexts take it from the backend params) */
} loom_ctx_params;

loom_ctx_params loom_ctx_default_params(void);

/* Standalone CPU context (no model, no backend): tensors are allocated in host
 * memory; compute runs on an internal thread pool owned by the context.
 * Backend contexts come from loom_backend_ctx_new (loom_backend.h). */
loom_status loom_ctx_new(const loom_ctx_params *params, loom_ctx **out, loom_error *err);

/* Free the context, its derived contexts, its graph, and every tensor allocated
 * through the family. Outputs of compute become invalid. NULL is a no-op. */
void loom_ctx_free(loom_ctx *ctx);

/* Derived contexts share the root's arena and graph but place new tensors:
 * input() on the CPU (input device); layer(i) on layer i's device, with the bytes
 * counted as cache of layer i. Owned by the root (do not free). For a standalone
 * context both allocate host memory (every i >= 0 is a layer there). layer(i) with
 * an unknown i (negative, or >= block_count + 1 on a backend context) returns ctx
 * itself, as the backend contract does, and sets the family's sticky error
 * (LOOM_ERR_RANGE naming i), so the mistake is visible at loom_ctx_status and
 * makes the next forward/compute fail. */
loom_ctx *loom_ctx_input(loom_ctx *ctx);
loom_ctx *loom_ctx_layer(loom_ctx *ctx, int layer);

/* Sticky error: LOOM_OK until the first failure in this context family. */
loom_status loom_ctx_status(const loom_ctx *ctx);
const char *loom_ctx_error(const loom_ctx *ctx); /* "" when OK; valid until free */
int64_t loom_ctx_max_nodes(const loom_ctx *ctx);

/* Append t and all its ancestors (dedup, topological order) to the graph.
 * LOOM_ERR_RANGE if the graph would exceed max_nodes (error is sticky). */
loom_status loom_ctx_forward(loom_ctx *ctx, loom_tensor *t);
/* Run the whole accumulated graph. Afterwards the listed outputs are readable
 * with loom_tensor_read until the next compute/reserve on the same engine/backend. */
loom_status loom_ctx_compute(loom_ctx *ctx, int n_outputs, loom_tensor *const *outputs);
/* Plan (and allocate) compute memory for the accumulated graph without running it. */
loom_status loom_ctx_reserve(loom_ctx *ctx);
/* Bytes the last reserve/compute planned for intermediates on the CPU. */
size_t loom_ctx_compute_bytes(const loom_ctx *ctx);
int64_t loom_ctx_graph_size(const loom_ctx *ctx); /* nodes in the graph */

/* Called after each node is computed (in graph order, on the calling thread).
 * Return false to stop compute with LOOM_ERR_CANCELLED. */
typedef bool (*loom_eval_cb)(loom_tensor *t, void *user);
void loom_ctx_set_eval_callback(loom_ctx *ctx, loom_eval_cb cb, void *user);
/* Polled between graph nodes; return true to abort compute (LOOM_ERR_CANCELLED). */
typedef bool (*loom_abort_cb)(void *user);
void loom_ctx_set_abort_callback(loom_ctx *ctx, loom_abort_cb cb, void *user);

/* ------------------------------------------------------------------ tensors */

/* Allocating constructors (memory committed now, freed with the context family).
 * n_dims 1..4; every extent >= 1, except: n_dims == 0 or ne[0] == 0 gives an empty
 * 1-D tensor (ne0 = 0, no memory). Bad arguments set the sticky error. */
loom_tensor *loom_empty(loom_ctx *ctx, loom_type type, int n_dims, const int64_t *ne);
loom_tensor *loom_zeros(loom_ctx *ctx, loom_type type, int n_dims, const int64_t *ne);
/* data has exactly n elements; n must equal the shape's element count. */
loom_tensor *loom_from_f32(loom_ctx *ctx, const float *data, size_t n, int n_dims, const int64_t *ne);
loom_tensor *loom_from_i32(loom_ctx *ctx, const int32_t *data, size_t n, int n_dims, const int64_t *ne);
/* Raw bytes in the type's block layout; nbytes must equal the tensor's size. */
loom_tensor *loom_from_bytes(loom_ctx *ctx, loom_type type, const void *data, size_t nbytes,
                             int n_dims, const int64_t *ne);
/* [start, stop) with step. F32: a graph op; I32: filled now. */
loom_tensor *loom_arange(loom_ctx *ctx, float start, float stop, float step, loom_type type);

loom_type loom_tensor_type(const loom_tensor *t);
int64_t loom_tensor_ne(const loom_tensor *t, int i);  /* i in 0..3, else 1 */
size_t loom_tensor_nb(const loom_tensor *t, int i);   /* i in 0..3, else 0 */
int loom_tensor_n_dims(const loom_tensor *t);         /* trailing 1s dropped, min 1 */
int64_t loom_tensor_nelements(const loom_tensor *t);
size_t loom_tensor_nbytes(const loom_tensor *t);
loom_op loom_tensor_op(const loom_tensor *t);
bool loom_tensor_is_poison(const loom_tensor *t);
bool loom_tensor_is_contiguous(const loom_tensor *t);
const loom_tensor *loom_tensor_src(const loom_tensor *t, int i); /* NULL if none */
/* Names (for debugging, callbacks, weights). Truncated to LOOM_MAX_NAME-1. */
loom_tensor *loom_tensor_set_name(loom_tensor *t, const char *name);
const char *loom_tensor_name(const loom_tensor *t);
/* A weight's output scale (the "<name>.scale" tensors of NVFP4 and BitNet GGUF files):
 * graphs built afterwards compute loom_mul_mat(ctx, w, x) as (w x) * scale, and
 * loom_mul_mat_id(ctx, w, x, ids) with expert e's products times scale[e]. scale: F32,
 * contiguous, one value (for any w) or one per expert (a 3-D w's ne2), read when the graph
 * runs (it may be a weight not loaded yet); borrowed: it must outlive the graphs using w.
 * NULL clears it. Views of w do not carry it. Not thread-safe against graphs being built
 * on w. LOOM_ERR_INVALID_ARG: w NULL or poisoned, scale of another type or size. */
loom_status loom_tensor_set_matmul_scale(loom_tensor *w, loom_tensor *scale);

/* Read the bytes of a computed output (or of any allocated tensor), in logical
 * order for contiguous tensors. nbytes must equal loom_tensor_nbytes(t).
 * LOOM_ERR_INVALID_ARG if t has no readable data. */
loom_status loom_tensor_read(const loom_tensor *t, void *dst, size_t nbytes);
loom_status loom_tensor_read_f32(const loom_tensor *t, float *dst, size_t n);
/* Overwrite the data of an allocated (non-op) tensor. */
loom_status loom_tensor_write(loom_tensor *t, const void *src, size_t nbytes);
/* Move a view (loom_view, or an op writing into one such as loom_cpy's result) to byte
 * offset `offset` of its base tensor, keeping shape and strides, so a graph can be
 * computed again with e.g. its KV-cache copies aimed at another cell (with
 * loom_tensor_write for new inputs: no rebuild, and the engine keeps its plan). Moves
 * that would leave the base are refused. LOOM_ERR_INVALID_ARG: NULL or not a view;
 * LOOM_ERR_SHAPE: out of bounds (t unchanged). Not during a compute of its graph. */
loom_status loom_view_set_offset(loom_tensor *t, size_t offset);

/* ------------------------------------------------------------------ ops */
/* All ops return a new node (or a view) in ctx's arena; a poison tensor on error. */

/* Elementwise binary, b broadcast into a: b.ne[i] must divide a.ne[i]. Result = a's shape/type. */
loom_tensor *loom_add(loom_ctx *ctx, loom_tensor *a, loom_tensor *b);
loom_tensor *loom_sub(loom_ctx *ctx, loom_tensor *a, loom_tensor *b);
loom_tensor *loom_mul(loom_ctx *ctx, loom_tensor *a, loom_tensor *b);
loom_tensor *loom_div(loom_ctx *ctx, loom_tensor *a, loom_tensor *b);

/* Unary (F32; F16 input allowed where noted in the docs). */
loom_tensor *loom_neg(loom_ctx *ctx, loom_tensor *a);
loom_tensor *loom_scale(loom_ctx *ctx, loom_tensor *a, float s);
loom_tensor *loom_sqr(loom_ctx *ctx, loom_tensor *a);
loom_tensor *loom_sqrt(loom_ctx *ctx, loom_tensor *a);
loom_tensor *loom_sin(loom_ctx *ctx, loom_tensor *a);
loom_tensor *loom_cos(loom_ctx *ctx, loom_tensor *a);
loom_tensor *loom_tanh(loom_ctx *ctx, loom_tensor *a);
loom_tensor *loom_sigmoid(loom_ctx *ctx, loom_tensor *a);
loom_tensor *loom_silu(loom_ctx *ctx, loom_tensor *a);
/* silu(g) * u (the SwiGLU gate). F32 operands of one shape, both contiguous: one SILU
 * node that multiplies as it writes (src[1] = u; the same roundings as SILU then MUL);
 * otherwise exactly loom_mul(ctx, loom_silu(ctx, g), u). */
loom_tensor *loom_swiglu(loom_ctx *ctx, loom_tensor *g, loom_tensor *u);
loom_tensor *loom_relu(loom_ctx *ctx, loom_tensor *a);
loom_tensor *loom_gelu(loom_ctx *ctx, loom_tensor *a);       /* tanh form */
/* GELU (tanh form) as ggml's CPU computes it from its F16 table: the input rounded to F16,
 * the result rounded to F16, 0 for x <= -10 and x for x >= 10 (for models checked against
 * llama.cpp, whose Gemma FFNs use it). CPU only. */
loom_tensor *loom_gelu_f16(loom_ctx *ctx, loom_tensor *a);
loom_tensor *loom_quick_gelu(loom_ctx *ctx, loom_tensor *a); /* x*sigmoid(1.702x) */
loom_tensor *loom_clamp(loom_ctx *ctx, loom_tensor *a, float lo, float hi);

/* Reductions / normalisation along ne0. */
loom_tensor *loom_sum_rows(loom_ctx *ctx, loom_tensor *a);  /* [1,ne1,ne2,ne3] */
loom_tensor *loom_mean(loom_ctx *ctx, loom_tensor *a);
loom_tensor *loom_variance(loom_ctx *ctx, loom_tensor *a);  /* population variance */
loom_tensor *loom_stddev(loom_ctx *ctx, loom_tensor *a);
loom_tensor *loom_softmax(loom_ctx *ctx, loom_tensor *a);
/* softmax(a*scale + mask) per row; mask F32/F16 [ne0, >=ne1] broadcast over dims 2,3; may be NULL. */
loom_tensor *loom_softmax_ext(loom_ctx *ctx, loom_tensor *a, loom_tensor *mask, float scale);
/* The same with attention sinks: sinks F32 [a.ne2] (one logit per head, dim 2) joins each
 * row's normaliser only: y_i = exp(x_i) / (sum_j exp(x_j) + exp(sinks[i2])). NULL = plain. */
loom_tensor *loom_softmax_ext_sinks(loom_ctx *ctx, loom_tensor *a, loom_tensor *mask, float scale,
                                    loom_tensor *sinks);
/* ALiBi (attention with linear biases: BLOOM, MPT, jina-bert-v2 ...): the slope of head h
 * of n_head for max_bias > 0, as ggml computes it: with n = 2^floor(log2(n_head)),
 * m0 = 2^(-max_bias / n), m1 = 2^(-max_bias / 2 / n), slope = m0^(h + 1) for h < n, else
 * m1^(2 (h - n) + 1); 1 when max_bias <= 0. Pure; any thread. */
float loom_alibi_slope(float max_bias, int64_t h, int64_t n_head);
/* softmax(a*scale + slope(i2) * mask) per row, slope(i2) = loom_alibi_slope(max_bias, i2,
 * a.ne2) (the head is dim 2): the mask holds -|distance| for visible keys, -inf for the
 * others. max_bias 0 = loom_softmax_ext. LOOM_ERR_INVALID_ARG: max_bias negative or not
 * finite, or max_bias > 0 without a mask. */
loom_tensor *loom_softmax_ext_alibi(loom_ctx *ctx, loom_tensor *a, loom_tensor *mask, float scale, float max_bias);
/* (x-mean)/sqrt(var+eps), then *w if w, then +b if w and b. */
loom_tensor *loom_layer_norm(loom_ctx *ctx, loom_tensor *a, loom_tensor *w, loom_tensor *b, float eps);
/* x/sqrt(mean(x^2)+eps), then *w if w. */
loom_tensor *loom_rms_norm(loom_ctx *ctx, loom_tensor *a, loom_tensor *w, float eps);

/* out[i,j,k,l] = sum_d a[d,i,k/(b.ne2/a.ne2),l/(b.ne3/a.ne3)] * b[d,j,k,l]; result F32
 * [a.ne1, b.ne1, b.ne2, b.ne3]. a: any weight type; b: F32. */
loom_tensor *loom_mul_mat(loom_ctx *ctx, loom_tensor *a, loom_tensor *b);
loom_tensor *loom_mul_mat_full_prec(loom_ctx *ctx, loom_tensor *a, loom_tensor *b);
/* MoE: a [K,N,E], b [K,B1,T], ids I32 [S,T] (S % B1 == 0) -> F32 [N,S,T]. */
loom_tensor *loom_mul_mat_id(loom_ctx *ctx, loom_tensor *a, loom_tensor *b, loom_tensor *ids);

/* Shape and view ops (O(1) descriptor changes unless noted). */
loom_tensor *loom_reshape(loom_ctx *ctx, loom_tensor *a, int n_dims, const int64_t *ne); /* a contiguous */
/* View: args alternate ne0, nb1, ne1, nb2, ne2, nb3, ne3 (n_args 1, 3, 5 or 7);
 * offset in bytes from a's data. Bounds-checked. */
loom_tensor *loom_view(loom_ctx *ctx, loom_tensor *a, size_t offset, int n_args, const int64_t *args);
/* Source dim i moves to position p[i]. */
loom_tensor *loom_permute(loom_ctx *ctx, loom_tensor *a, int p0, int p1, int p2, int p3);
loom_tensor *loom_transpose(loom_ctx *ctx, loom_tensor *a); /* swap dims 0 and 1 */
loom_tensor *loom_cont(loom_ctx *ctx, loom_tensor *a);      /* contiguous copy */
loom_tensor *loom_cont_nd(loom_ctx *ctx, loom_tensor *a, int n_dims, const int64_t *ne);
loom_tensor *loom_dup(loom_ctx *ctx, loom_tensor *a);
/* Copy a's elements (flattened logical order) into b's memory, converting type
 * (F32->F32/F16/BF16/Q8_0/Q4_0, F16->F32/F16, I32->I32, and any quantized type -> F32
 * when a and b have one shape, rows of whole blocks, contiguous along ne0: dequantization,
 * CPU). Returns a view of b; has effect only if the returned node is forwarded. Counts
 * must match. */
loom_tensor *loom_cpy(loom_ctx *ctx, loom_tensor *a, loom_tensor *b);
/* Copy of a with b's elements written from byte offset (1-D), or as rows of stride nb1. */
loom_tensor *loom_set(loom_ctx *ctx, loom_tensor *a, loom_tensor *b, size_t offset);
loom_tensor *loom_set_2d(loom_ctx *ctx, loom_tensor *a, loom_tensor *b, size_t offset, size_t nb1);
/* Pad at the end of each dim with zeros; negative values truncate. p3 must be 0. */
loom_tensor *loom_pad(loom_ctx *ctx, loom_tensor *a, int p0, int p1, int p2, int p3);
loom_tensor *loom_concat(loom_ctx *ctx, loom_tensor *a, loom_tensor *b, int dim);
/* a.concat(s[0].concat(s[1] ...)) along dim (right-nested). */
loom_tensor *loom_stack(loom_ctx *ctx, loom_tensor *a, int dim, int n, loom_tensor *const *s);
loom_tensor *loom_repeat(loom_ctx *ctx, loom_tensor *a, int dim, int n);
/* a [E,R,A2,A3], ids I32 [n] / [n,m] / [n,m,k] with a.ne2 == ids.ne1 -> F32 [E,n,m,k]
 * (I32 if a is I32). Dequantises. */
loom_tensor *loom_get_rows(loom_ctx *ctx, loom_tensor *a, loom_tensor *ids);

/* Sorting / selection along ne0 (I32 results). */
loom_tensor *loom_argsort(loom_ctx *ctx, loom_tensor *a, bool descending);
/* Indices of the k largest per row, descending; a strided view [k,ne1,ne2,ne3]. */
loom_tensor *loom_top_k(loom_ctx *ctx, loom_tensor *a, int k);
/* Sparse attention's key selection (DeepSeek's lightning indexer): scores F32 [L, T]
 * (rows contiguous), mask F32/F16 [L, Tp] with Tp >= T (an attention mask: 0 or a finite
 * bias where a key is visible, -inf where not). Returns a tensor of the mask's type and
 * shape: in row t < T, mask[j, t] where key j is one of the k largest v_j = scores[j, t] +
 * mask[j, t] among the finite ones (ties: the lower j first), -inf elsewhere; rows t >= T
 * are the mask's. A row with at most k finite v keeps its mask. CPU only. Errors (sticky,
 * poison result): LOOM_ERR_TYPE, LOOM_ERR_SHAPE (k < 1, shapes). */
loom_tensor *loom_top_k_mask(loom_ctx *ctx, loom_tensor *scores, loom_tensor *mask, int k);

/* The orthonormal Walsh-Hadamard transform of every n consecutive elements along ne0:
 * y = H_n x / sqrt(n) per block, H_n[r][c] = (-1)^popcount(r & c) (Sylvester's order;
 * symmetric, so the transform is its own inverse). a F32 with contiguous rows (nb0 = 4),
 * n a power of two in [2, 4096] dividing ne0; result F32, a's shape, contiguous.
 * Computed by the fast transform (n log2 n additions per block). Quantized KV caches
 * store keys and values turned by it (llama.cpp's attention rotation). Errors (sticky,
 * poison result): LOOM_ERR_TYPE, LOOM_ERR_SHAPE. */
loom_tensor *loom_hadamard(loom_ctx *ctx, loom_tensor *a, int n);

/* RoPE. a [head_dim, heads, T, 1] F32/F16 (quantized: cast to F32 first);
 * pos I32 [T]. n_dims even, <= ne0; dims >= n_dims copied unchanged. */
typedef enum loom_rope_mode { LOOM_ROPE_NORMAL = 0, LOOM_ROPE_NEOX = 2 } loom_rope_mode;
typedef struct loom_rope_opts {
    loom_rope_mode mode;
    loom_tensor *factors;     /* F32 [>= n_dims/2] frequency divisors, or NULL */
    int orig_ctx;             /* YaRN original context length (default 131072) */
    float ext_factor;         /* YaRN extrapolation mix (0 = off) */
    float attn_factor;        /* magnitude scale (default 1) */
    float beta_fast, beta_slow; /* defaults 32, 1 */
} loom_rope_opts;
loom_rope_opts loom_rope_default_opts(void);
loom_tensor *loom_rope(loom_ctx *ctx, loom_tensor *a, loom_tensor *pos, int n_dims, float base,
                       float freq_scale, const loom_rope_opts *opts /* NULL = defaults */);

/* Convolution / pooling (2-D). kernel [KW,KH,IC,OC], input [W,H,IC,N]. */
loom_tensor *loom_im2col(loom_ctx *ctx, loom_tensor *kernel, loom_tensor *input, int s0, int s1,
                         int p0, int p1, int d0, int d1, loom_type dst_type);
loom_tensor *loom_conv2d(loom_ctx *ctx, loom_tensor *kernel, loom_tensor *input, int s0, int s1,
                         int p0, int p1, int d0, int d1); /* -> F32 [OW,OH,OC,N] */
loom_tensor *loom_avg_pool2d(loom_ctx *ctx, loom_tensor *a, int k, int s, int p);

/* ---- recurrent layers (gated delta net: Qwen3.5 / Qwen3-Next). A batch of T tokens,
 * token t belonging to state slot seq[t] (I32 [T], values in [0, S)); tokens of one slot
 * are processed in batch order, slots independently. The result holds the outputs and
 * then every slot's new state (slots without a token: unchanged): the caller takes the
 * two parts with views and copies the states back (loom_cpy).
 *
 * log(1 + e^x), x itself above 20 (F32). */
loom_tensor *loom_softplus(loom_ctx *ctx, loom_tensor *a);
/* e^x, F32, elementwise (expf; RWKV-6's decay exp(-exp(w)) in graph form). */
loom_tensor *loom_exp(loom_ctx *ctx, loom_tensor *a);
/* xIELU (Apertus's activation), F32, elementwise, with an = beta + softplus(alpha_n) and
 * ap = softplus(alpha_p) (the parameters as the checkpoint stores them, as ggml_xielu
 * takes them): x > 0: ap x^2 + beta x; else (expm1(min(x, eps)) - x) an + beta x.
 * LOOM_ERR_INVALID_ARG for a non-finite parameter. */
loom_tensor *loom_xielu(loom_ctx *ctx, loom_tensor *a, float alpha_n, float alpha_p, float beta, float eps);
/* Causal depthwise convolution: x F32 [C, T], kernel w F32, F16 or BF16 [K, C] (K 2..16), state F32
 * [(K-1) * C, S] (per slot the last K-1 inputs of each channel, oldest first, channel
 * by channel). y[c, t] = sum_k w[k, c] * window[k], window = the slot's K-1 previous
 * inputs then x[c, t]. Result F32 [C, T + (K-1) * S]: y in columns 0..T-1, the new
 * states after them. The state's columns may be a view with a larger stride (rows of a
 * wider per-slot state: RWKV's two token shifts); the result's states are contiguous. */
loom_tensor *loom_ssm_conv(loom_ctx *ctx, loom_tensor *x, loom_tensor *w, loom_tensor *state, loom_tensor *seq);
/* Gated delta rule: qk F32 [Dk, 2 Hk, T] (heads 0..Hk-1 the queries, Hk..2Hk-1 the
 * keys; rows contiguous), v F32 [Dv, Hv, T] (Hv a multiple of Hk: value head h reads
 * query/key head h % Hk), g F32 [Hv, T] (log decay) or [Dk, Hv, T] (one per key dim:
 * Kimi's KDA, column i of M decays by exp(g[i])), beta F32 [Hv, T], state F32
 * [Dv * Dk * Hv, S] (per slot and head a Dv x Dk matrix M, row j = value dim j). Per
 * token: q, k L2-normalised (1 / max(|x|, eps)); M *= exp(g); d = beta (v - M k);
 * M += d k^T; out = M q / sqrt(Dk). Result F32 [Dv * Hv, T + Dk * S]: the outputs
 * ([Dv, Hv] per token) in columns 0..T-1, the new states after them. */
loom_tensor *loom_gated_delta(loom_ctx *ctx, loom_tensor *qk, loom_tensor *v, loom_tensor *g, loom_tensor *beta,
                              loom_tensor *state, loom_tensor *seq, float eps);
/* Selective scan (Mamba-2; Mamba-1 as Dh = 1, H = channels, G = 1): x F32 [Dh, H, T]
 * (rows contiguous), dt F32 [H, T] (before the softplus: any bias already added), A F32
 * contiguous with H values (Mamba-2: one decay rate per head) or [N, H] (Mamba-1: one
 * per head and state; A[h] below is then A[n, h]), bc
 * F32 [N, 2 G, T] (rows contiguous; rows 0..G-1 are B, G..2G-1 are C; H a multiple of G:
 * head h reads group h / (H / G)),
 * state F32 [N * Dh * H, S] (per slot, head and channel i the N values s[n], n fastest).
 * Per token, for its slot: d = softplus(dt[h]); s = s * exp(d * A[h]) + B[n] * x[i] * d;
 * y[i, h] = sum_n s[n] C[n]. Result F32 [Dh * H, T + N * S]: y in columns 0..T-1, the
 * new states after them (slots without a token: unchanged). */
loom_tensor *loom_ssm_scan(loom_ctx *ctx, loom_tensor *x, loom_tensor *dt, loom_tensor *A, loom_tensor *bc,
                           loom_tensor *state, loom_tensor *seq);
/* RWKV-7 state update: r, w, k, v, a, b F32 [D, H, T] (rows contiguous; w the log of the
 * decay), state F32 [D * D * H, S] (per slot and head a D x D matrix M, row i = value
 * dim i). Per token, for its slot and each head: for every row i, sa = sum_j a[j] M[i][j]
 * (M before this token), M[i][j] = M[i][j] exp(w[j]) + v[i] k[j] + sa b[j], y[i] =
 * sum_j M[i][j] r[j] (llama.cpp's rwkv_wkv7 with the exp of its decay inside). Result
 * F32 [D * H, T + D * S]: y in columns 0..T-1, the new states after them (slots without
 * a token: unchanged). */
/* RWKV-6 state update: k, v, r F32 [D, H, T] (rows contiguous), u F32 [D, H] (the bonus
 * time_mix_first, contiguous), w F32 [D, H, T] (rows contiguous; the decay is
 * exp(-exp(w))), state F32 [D * D * H, S] (per slot and head a D x D matrix M, row i =
 * key dim i). Per token, for its slot and each head: y[j] = sum_i r[i] (u[i] k[i] v[j] +
 * M[i][j]); then M[i][j] = M[i][j] exp(-exp(w[i])) + k[i] v[j] (llama.cpp's rwkv_wkv6
 * with its decay's two exps inside). Result F32 [D * H, T + D * S] as loom_rwkv_wkv7's. */
loom_tensor *loom_rwkv_wkv6(loom_ctx *ctx, loom_tensor *k, loom_tensor *v, loom_tensor *r, loom_tensor *u,
                            loom_tensor *w, loom_tensor *state, loom_tensor *seq);
loom_tensor *loom_rwkv_wkv7(loom_ctx *ctx, loom_tensor *r, loom_tensor *w, loom_tensor *k, loom_tensor *v,
                            loom_tensor *a, loom_tensor *b, loom_tensor *state, loom_tensor *seq);
/* In-place forms of the four state updates above (same arguments and errors): the new
 * states are written into `state` itself, for the slots that have a token only (the
 * others are neither read nor written), and the result is the outputs alone, F32
 * [rows, T]. What a decode step needs: no copy of every slot's state into the result
 * and back. The node must run where `state`'s memory is (the CPU: these ops have no
 * device kernels, so `state` must be host memory) and nothing else in the graph may read
 * `state`. At most 256 slots (LOOM_ERR_SHAPE beyond). */
loom_tensor *loom_gated_delta_inplace(loom_ctx *ctx, loom_tensor *qk, loom_tensor *v, loom_tensor *g, loom_tensor *beta,
                                      loom_tensor *state, loom_tensor *seq, float eps);
loom_tensor *loom_ssm_scan_inplace(loom_ctx *ctx, loom_tensor *x, loom_tensor *dt, loom_tensor *A, loom_tensor *bc,
                                   loom_tensor *state, loom_tensor *seq);
loom_tensor *loom_rwkv_wkv6_inplace(loom_ctx *ctx, loom_tensor *k, loom_tensor *v, loom_tensor *r, loom_tensor *u,
                                    loom_tensor *w, loom_tensor *state, loom_tensor *seq);
loom_tensor *loom_rwkv_wkv7_inplace(loom_ctx *ctx, loom_tensor *r, loom_tensor *w, loom_tensor *k, loom_tensor *v,
                                    loom_tensor *a, loom_tensor *b, loom_tensor *state, loom_tensor *seq);

/* Attention. q [Dk,H,T], k [Dk,Hkv,L]; v is [Dv,Hkv,L] when flash attention is on,
 * or PermutedV [L,Dv,Hkv] when off; mask [L,Tpad] (F16 for flash, F32/F16 otherwise)
 * or NULL. Returns F32 [Dv,H,T]. Uses the context's flash_attn setting; with it off,
 * a single query (T = 1) is still one fused node (loom_flash_attn on the transposed
 * PermutedV), longer batches are scores, softmax and the V product as three nodes
 * (with a mask, both products carry it as a hint: a backend may skip the scores of
 * masked keys and the products of their zero probabilities; the CPU does, with the
 * same bits as computing them). */
loom_tensor *loom_sdpa(loom_ctx *ctx, loom_tensor *q, loom_tensor *k, loom_tensor *v,
                       loom_tensor *mask, float scale);
/* The fused primitive: q [Dk,T,H], k [Dk,L,Hkv], v [Dv,L,Hkv] (views), mask F16/F32
 * [L,>=T] or NULL -> F32 [Dv,H,T]. k and v rows must be contiguous, except that v may
 * be TRANSPOSED: an F32/F16/BF16 view whose dim-1 (key) neighbours are adjacent, such
 * as loom_transpose of a PermutedV cache. Errors (sticky, poison result): LOOM_ERR_TYPE,
 * LOOM_ERR_SHAPE. */
loom_tensor *loom_flash_attn(loom_ctx *ctx, loom_tensor *q, loom_tensor *k, loom_tensor *v,
                             loom_tensor *mask, float scale);
/* Both with two extras of some models (NULL / 0 = none, as above):
 *   softcap > 0: each score s = scale * q.k becomes softcap * tanh(s / softcap) before
 *     the mask is added (gemma2's attn_logit_softcapping; llama.cpp's flash-attention
 *     order: scale, then cap);
 *   sinks F32 [H] (contiguous, one logit per query head): joins each row's normaliser
 *     only, y = sum_j exp(x_j) v_j / (sum_j exp(x_j) + exp(sinks[h])) (gpt-oss); a row
 *     whose keys are all masked then gives 0 rather than NaN.
 * Errors as above, plus LOOM_ERR_INVALID_ARG (softcap negative or not finite) and
 * LOOM_ERR_SHAPE (sinks). */
loom_tensor *loom_sdpa_ext(loom_ctx *ctx, loom_tensor *q, loom_tensor *k, loom_tensor *v, loom_tensor *mask,
                           float scale, float softcap, loom_tensor *sinks);
loom_tensor *loom_flash_attn_ext(loom_ctx *ctx, loom_tensor *q, loom_tensor *k, loom_tensor *v, loom_tensor *mask,
                                 float scale, float softcap, loom_tensor *sinks);
/* Every extra at once (zero-initialise; softcap and sinks as above):
 *   max_bias > 0: ALiBi: each query head h adds loom_alibi_slope(max_bias, h, H) times
 *     the mask value to its scores (after the scale and the cap), so the mask carries
 *     -|distance| where a key is visible (llama.cpp's use_alibi masks); requires a mask.
 * Errors as above, plus LOOM_ERR_INVALID_ARG (max_bias negative, not finite, or > 0
 * without a mask). */
typedef struct loom_attn_opts {
    float softcap;
    loom_tensor *sinks;
    float max_bias;
} loom_attn_opts;
loom_tensor *loom_sdpa_opts(loom_ctx *ctx, loom_tensor *q, loom_tensor *k, loom_tensor *v, loom_tensor *mask,
                            float scale, const loom_attn_opts *opts);
loom_tensor *loom_flash_attn_opts(loom_ctx *ctx, loom_tensor *q, loom_tensor *k, loom_tensor *v, loom_tensor *mask,
                                  float scale, const loom_attn_opts *opts);
/* Whether this context's sdpa uses flash attention. */
bool loom_ctx_flash_attn(const loom_ctx *ctx);

#ifdef __cplusplus
}
#endif
#endif /* LOOM_H */
