/*
 * tensor.h (internal) - the tensor descriptor and the helpers op constructors use.
 *
 * A loom_tensor lives in its context family's arena (never freed individually).
 * Leaves (op NONE) own memory set at creation (or are empty / poison); op nodes
 * get memory from the compute planner; views (view_src != NULL) never allocate:
 * data = view_src->data + view_offs, where view_src is always the ultimate
 * memory-owning base (never itself a view).
 *
 * Writing an op constructor (pattern used by every op in src/core):
 *
 *     loom_tensor *loom_foo(loom_ctx *ctx, loom_tensor *a, loom_tensor *b) {
 *         loom_tensor *args[2] = {a, b};
 *         if (!loom_op_check(ctx, LOOM_OP_FOO, 2, args)) return loom_ctx_poison(ctx);
 *         if (a->ne[0] != b->ne[0])
 *             return loom_ctx_fail(ctx, LOOM_ERR_SHAPE, LOOM_OP_FOO, a, b, "ne0 %lld != %lld", ...);
 *         int64_t ne[4] = {a->ne[1], b->ne[1], 1, 1};
 *         loom_tensor *t = loom_new_node(ctx, LOOM_OP_FOO, LOOM_TYPE_F32, ne, 2, args);
 *         loom_set_op_param_f32(t, 0, 1.5f);   // no-op on poison
 *         return t;
 *     }
 *
 * Threading: descriptors are built by one thread; kernels read them concurrently.
 */
#ifndef LOOM_CORE_TENSOR_H
#define LOOM_CORE_TENSOR_H

#include "loom.h"

#include <string.h>

#define LOOM_MAX_SRC 8
#define LOOM_MAX_OP_PARAMS 16
/* Alignment of every allocation (leaves and planned compute tensors). */
#define LOOM_TENSOR_ALIGN 64

enum loom_tensor_flag {
    LOOM_TF_POISON = 1u << 0,  /* result of a failed op: no data, never computed */
    LOOM_TF_INPUT = 1u << 1,   /* allocated through an input() context */
    LOOM_TF_WEIGHT = 1u << 2,  /* model weight (set by the backend) */
    LOOM_TF_OUTPUT = 1u << 3,  /* requested output of the current compute (planner keeps it alive) */
    LOOM_TF_ALLOCATED = 1u << 4, /* leaf whose memory was committed at creation */
    LOOM_TF_EMPTY = 1u << 5,   /* zero elements (ne0 == 0): no memory */
    LOOM_TF_REPACKED = 1u << 6, /* weight data in the CPU row-interleaved layout (quant/repack.h):
                                  only MUL_MAT and MUL_MAT_ID accept it, as src[0]; set by the backend */
    LOOM_TF_DEVMEM = 1u << 7    /* data is device memory (a Vulkan device address), not
                                  host-addressable: loom_tensor_read/write go through the
                                  engine's tensor_io hook (core/ctx.h); set by the backend */
};

struct loom_tensor {
    loom_type type;
    loom_op op;
    int64_t ne[LOOM_MAX_DIMS];
    size_t nb[LOOM_MAX_DIMS];
    int32_t op_params[LOOM_MAX_OP_PARAMS]; /* floats stored bit-wise (memcpy) */
    loom_tensor *src[LOOM_MAX_SRC];        /* NULL = absent (optional inputs allowed) */
    loom_tensor *view_src;                 /* ultimate base (never a view) or NULL */
    size_t view_offs;                      /* bytes from view_src->data */
    void *data;                            /* NULL until allocated / computed */
    uint32_t flags;                        /* enum loom_tensor_flag */
    int device;                            /* 0 = CPU; backend device index otherwise */
    int layer;                             /* -1 input/none, else layer of a layer() ctx */
    loom_ctx *owner;                       /* root context of the family owning it */
    char name[LOOM_MAX_NAME];
    loom_tensor *mm_scale;                 /* a weight's output scale (F32 [1], or [ne2] per expert; NULL: none) */

    /* ---- scratch for graph building / planning / scheduling (single-threaded users) */
    uint64_t visit;     /* free scratch (not used by the core) */
    int64_t graph_idx;  /* index in its graph's nodes (or leafs, for leaves), -1 when none */
    int64_t n_uses;     /* planner: consumers not yet computed */
    size_t plan_offs;   /* planner: offset in the compute buffer, SIZE_MAX when none */
    int sched_dev;      /* backend scheduler: device assigned to this node (-1 none) */
    void *extra;        /* backend-private per-tensor pointer (NULL for the standalone engine) */
};

/* ---------------------------------------------------------------- small helpers */

static inline int64_t loom_blck_size(loom_type t) {
    const loom_type_info *ti = loom_type_get((uint32_t)t);
    return ti ? ti->block_size : 1;
}
/* Bytes of one block (the "element size" of plain types). 0 for unknown types. */
static inline size_t loom_type_size(loom_type t) {
    const loom_type_info *ti = loom_type_get((uint32_t)t);
    return ti ? ti->block_bytes : 0;
}
static inline bool loom_type_is_quantized(loom_type t) {
    const loom_type_info *ti = loom_type_get((uint32_t)t);
    return ti && ti->is_quantized;
}
static inline int64_t loom_nrows(const loom_tensor *t) { return t->ne[1] * t->ne[2] * t->ne[3]; }
static inline int64_t loom_nelements(const loom_tensor *t) {
    return t->ne[0] * t->ne[1] * t->ne[2] * t->ne[3];
}
/* Bytes of one row of t (ne0 elements, contiguous). */
static inline size_t loom_row_size(const loom_tensor *t) {
    return (size_t)(t->ne[0] / loom_blck_size(t->type)) * loom_type_size(t->type);
}
/* Elements within a row are contiguous (nb0 == block bytes). */
static inline bool loom_tensor_is_contiguous_rows(const loom_tensor *t) {
    return t->nb[0] == loom_type_size(t->type);
}
/* The transpose of a tensor with contiguous rows: a plain (block size 1) type whose
 * dim-1 neighbours are adjacent (nb1 == element size) while dim-0 ones are not; its
 * "columns" (fixed i0, all i1) are contiguous runs of ne1 elements. */
static inline bool loom_tensor_is_transposed(const loom_tensor *t) {
    const size_t es = loom_type_size(t->type);
    return loom_blck_size(t->type) == 1 && t->nb[1] == es && t->nb[0] != es && t->ne[1] > 1;
}
/* Rows contiguous and dims 1..3 strided only as a block (ggml's is_contiguous_1). */
bool loom_tensor_is_contiguous_1(const loom_tensor *t);
/* Byte offset of element (i0,i1,i2,i3) (i0 must be a multiple of the block size). */
static inline size_t loom_offset(const loom_tensor *t, int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
    return (size_t)(i0 / loom_blck_size(t->type)) * t->nb[0] + (size_t)i1 * t->nb[1] +
           (size_t)i2 * t->nb[2] + (size_t)i3 * t->nb[3];
}
static inline void *loom_row_ptr(const loom_tensor *t, int64_t i1, int64_t i2, int64_t i3) {
    return (char *)t->data + (size_t)i1 * t->nb[1] + (size_t)i2 * t->nb[2] + (size_t)i3 * t->nb[3];
}
/* Same shape (ne) in all 4 dims. */
static inline bool loom_same_shape(const loom_tensor *a, const loom_tensor *b) {
    return a->ne[0] == b->ne[0] && a->ne[1] == b->ne[1] && a->ne[2] == b->ne[2] && a->ne[3] == b->ne[3];
}
/* MUL_MAT's optional mask hint (src[2], op param 1; set by loom_sdpa_ext's explicit
 * attention for prompts): a mask M [L, >= N] (F16 / F32, rows contiguous) whose row j
 * belongs to column j of b, broadcast over the slices. Where M[i, j] is -inf:
 *  LOOM_MM_MASK_ROWS (L = M rows of a: the scores K x Q): dst[i, j] is unspecified (a
 *                    backend may skip it; the CPU writes 0), the softmax masks it;
 *  LOOM_MM_MASK_K    (L = K: p.V over the softmax's probabilities): b[i, j] is taken as
 *                    exactly 0, so its products may be skipped.
 * A backend may ignore the hint (compute every product): results are the same. */
enum loom_mm_mask_role { LOOM_MM_MASK_NONE = 0, LOOM_MM_MASK_ROWS = 1, LOOM_MM_MASK_K = 2 };

/* Memory-owning base of t (t itself if not a view). */
static inline loom_tensor *loom_tensor_base(loom_tensor *t) { return t->view_src ? t->view_src : t; }
/* Bytes spanned by t from its first byte: sum over dims of (ne-1)*nb + one block (a row
 * of whole blocks when dim 0 is contiguous); 0 if empty. */
size_t loom_tensor_span(const loom_tensor *t);
/* Fill nb[] contiguously for ne[] and type. */
void loom_tensor_set_contiguous_strides(loom_tensor *t);

static inline void loom_set_op_param_i32(loom_tensor *t, int i, int32_t v) {
    if (t && !(t->flags & LOOM_TF_POISON) && i >= 0 && i < LOOM_MAX_OP_PARAMS) t->op_params[i] = v;
}
static inline void loom_set_op_param_f32(loom_tensor *t, int i, float v) {
    if (t && !(t->flags & LOOM_TF_POISON) && i >= 0 && i < LOOM_MAX_OP_PARAMS)
        memcpy(&t->op_params[i], &v, sizeof v);
}
static inline int32_t loom_get_op_param_i32(const loom_tensor *t, int i) { return t->op_params[i]; }
static inline float loom_get_op_param_f32(const loom_tensor *t, int i) {
    float v;
    memcpy(&v, &t->op_params[i], sizeof v);
    return v;
}

/* ---------------------------------------------------------------- constructor helpers
 * (implemented in src/core/ctx.c). ctx may be any context of the family. */

/* The family's poison tensor (flags POISON, type F32, ne {1,1,1,1}, no data). NULL only if ctx is NULL. */
loom_tensor *loom_ctx_poison(loom_ctx *ctx);

/* Record the sticky error (first error wins) as
 *   "<OP_NAME>: <message> (a: F32 [4,3,1,1] 'name', b: ...)"
 * and return the poison tensor. a/b may be NULL (omitted from the message). */
loom_tensor *loom_ctx_fail(loom_ctx *ctx, loom_status st, loom_op op, const loom_tensor *a,
                           const loom_tensor *b, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 6, 7)))
#endif
    ;
/* Same without a tensor/op context (message used as-is). No-op if an error is already set. */
void loom_ctx_set_error(loom_ctx *ctx, loom_status st, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* True when an op may proceed: ctx non-NULL and OK, and each of the n tensors is
 * non-NULL and not poison. Otherwise records an error if none is set yet (NULL
 * argument -> LOOM_ERR_INVALID_ARG naming the op) and returns false; the caller
 * then returns loom_ctx_poison(ctx). Optional inputs: do not pass them here when NULL. */
bool loom_op_check(loom_ctx *ctx, loom_op op, int n, loom_tensor *const *ts);

/* New arena descriptor for an op node: given op/type/ne, contiguous strides, the n
 * sources copied (NULL entries allowed), device/layer taken from ctx, no data.
 * Returns the poison tensor (error LOOM_ERR_RANGE "arena full") when the arena is
 * exhausted, or LOOM_ERR_SHAPE on a bad shape (extent < 0, byte size overflow, row
 * not a whole number of blocks). Does not check the sources for poison. */
loom_tensor *loom_new_node(loom_ctx *ctx, loom_op op, loom_type type, const int64_t ne[4], int n_src,
                           loom_tensor *const *srcs);

/* New LOOM_OP_VIEW descriptor of a (src[0] = a) with the given type/ne/nb and a
 * byte offset relative to a's data; view_src/view_offs resolved to a's base.
 * Bounds are checked against the base's span (LOOM_ERR_SHAPE -> poison). */
loom_tensor *loom_new_view(loom_ctx *ctx, loom_tensor *a, loom_type type, const int64_t ne[4],
                           const size_t nb[4], size_t offset);

/* "F32 [4,3,1,1] 'name'" into buf (for messages). Returns buf. */
const char *loom_tensor_describe(const loom_tensor *t, char *buf, size_t size);

#endif
