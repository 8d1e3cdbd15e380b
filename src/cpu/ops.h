/*
 * ops.h (internal) - CPU kernel interface: one function per loom_op.
 *
 * The executor (exec.c) calls every kernel of a node on all nth threads at once
 * (thread ith in [0, nth)); each thread does its share (split rows by ith/nth) and
 * returns. Kernels must not allocate: scratch comes from p->wdata (p->wsize bytes,
 * shared by all threads; size requested through loom_cpu_op_work_size; a kernel
 * usually takes the slice [ith * per_thread, (ith+1) * per_thread)).
 * A kernel needing two phases (e.g. convert activations, then multiply) calls
 * loom_cpu_barrier(p) - every thread of the node must reach it the same number of times.
 *
 * Inputs and dst have data set (dst->data may be NULL only if dst has 0 bytes).
 * Kernels report unsupported type combinations / bad values via loom_cpu_fail
 * (the executor stops after the node and returns that status); constructors should
 * already have rejected everything reachable.
 */
#ifndef LOOM_CPU_OPS_H
#define LOOM_CPU_OPS_H

#include "core/tensor.h"

#include <stdatomic.h>

typedef struct loom_compute_params {
    int ith, nth;
    void *wdata;               /* shared scratch for this node (>= work size requested) */
    size_t wsize;
    void (*barrier)(void *);   /* use loom_cpu_barrier */
    void *barrier_ctx;
    _Atomic int *status;       /* first error wins; use loom_cpu_fail */
    /* Optional work counter for dynamic scheduling: 0 when the node starts, shared by
     * its nth threads (claim work items with atomic_fetch_add); NULL = split statically. */
    _Atomic int64_t *counter;
} loom_compute_params;

static inline void loom_cpu_barrier(const loom_compute_params *p) {
    if (p->nth > 1 && p->barrier) p->barrier(p->barrier_ctx);
}
static inline void loom_cpu_fail(const loom_compute_params *p, loom_status s) {
    if (!p->status) return;
    int expected = 0;
    atomic_compare_exchange_strong(p->status, &expected, (int)s);
}
/* Rows [*r0, *r1) of nr for thread ith of nth. */
static inline void loom_cpu_split(int64_t nr, int ith, int nth, int64_t *r0, int64_t *r1) {
    int64_t per = (nr + nth - 1) / nth;
    int64_t a = per * ith, b = a + per;
    if (a > nr) a = nr;
    if (b > nr) b = nr;
    *r0 = a;
    *r1 = b;
}

/* Load/store one float of a plain float type (F32, F16, BF16; I32 converts). */
static inline float loom_ld_f(const void *ptr, loom_type t) {
    switch (t) {
    case LOOM_TYPE_F16: { uint16_t h; memcpy(&h, ptr, 2); return loom_fp16_to_fp32(h); }
    case LOOM_TYPE_BF16: { uint16_t h; memcpy(&h, ptr, 2); return loom_bf16_to_fp32(h); }
    case LOOM_TYPE_I32: { int32_t v; memcpy(&v, ptr, 4); return (float)v; }
    default: { float v; memcpy(&v, ptr, 4); return v; }
    }
}
static inline void loom_st_f(void *ptr, loom_type t, float v) {
    switch (t) {
    case LOOM_TYPE_F16: { uint16_t h = loom_fp32_to_fp16(v); memcpy(ptr, &h, 2); break; }
    case LOOM_TYPE_BF16: { uint16_t h = loom_fp32_to_bf16(v); memcpy(ptr, &h, 2); break; }
    case LOOM_TYPE_I32: {
        int32_t x = v != v ? 0 : v >= 2147483647.0f ? INT32_MAX : v <= -2147483648.0f ? INT32_MIN : (int32_t)v;
        memcpy(ptr, &x, 4);
        break;
    }
    default: memcpy(ptr, &v, 4); break;
    }
}

typedef void (*loom_cpu_op_fn)(const loom_compute_params *p, loom_tensor *dst);

/* ---- core ops (ops_basic.c, ops_copy.c) */
void loom_cpu_op_dup(const loom_compute_params *p, loom_tensor *dst);
void loom_cpu_op_cpy(const loom_compute_params *p, loom_tensor *dst);
void loom_cpu_op_set(const loom_compute_params *p, loom_tensor *dst);
void loom_cpu_op_pad(const loom_compute_params *p, loom_tensor *dst);
void loom_cpu_op_concat(const loom_compute_params *p, loom_tensor *dst);
void loom_cpu_op_repeat(const loom_compute_params *p, loom_tensor *dst);
void loom_cpu_op_get_rows(const loom_compute_params *p, loom_tensor *dst);
void loom_cpu_op_arange(const loom_compute_params *p, loom_tensor *dst);
void loom_cpu_op_add(const loom_compute_params *p, loom_tensor *dst);
void loom_cpu_op_sub(const loom_compute_params *p, loom_tensor *dst);
void loom_cpu_op_mul(const loom_compute_params *p, loom_tensor *dst);
void loom_cpu_op_div(const loom_compute_params *p, loom_tensor *dst);
void loom_cpu_op_scale(const loom_compute_params *p, loom_tensor *dst);
void loom_cpu_op_neg(const loom_compute_params *p, loom_tensor *dst);
void loom_cpu_op_sqr(const loom_compute_params *p, loom_tensor *dst);
void loom_cpu_op_sqrt(const loom_compute_params *p, loom_tensor *dst);
void loom_cpu_op_sin(const loom_compute_params *p, loom_tensor *dst);
void loom_cpu_op_cos(const loom_compute_params *p, loom_tensor *dst);
void loom_cpu_op_tanh(const loom_compute_params *p, loom_tensor *dst);
void loom_cpu_op_sigmoid(const loom_compute_params *p, loom_tensor *dst);
void loom_cpu_op_silu(const loom_compute_params *p, loom_tensor *dst);
void loom_cpu_op_relu(const loom_compute_params *p, loom_tensor *dst);
void loom_cpu_op_gelu(const loom_compute_params *p, loom_tensor *dst);
void loom_cpu_op_quick_gelu(const loom_compute_params *p, loom_tensor *dst);
void loom_cpu_op_clamp(const loom_compute_params *p, loom_tensor *dst);
void loom_cpu_op_sum_rows(const loom_compute_params *p, loom_tensor *dst);
void loom_cpu_op_mean(const loom_compute_params *p, loom_tensor *dst);
void loom_cpu_op_soft_max(const loom_compute_params *p, loom_tensor *dst);
void loom_cpu_op_norm(const loom_compute_params *p, loom_tensor *dst);
void loom_cpu_op_rms_norm(const loom_compute_params *p, loom_tensor *dst);

/* ---- nn ops (ops_matmul.c, ops_rope.c, ops_attn.c, ops_sort.c, ops_conv.c; "nn ops" helper) */
void loom_cpu_op_mul_mat(const loom_compute_params *p, loom_tensor *dst);
/* Sibling matmuls as ONE job: dsts[0..n) (1 <= n <= LOOM_CPU_MM_GROUP_MAX) are MUL_MAT
 * nodes with the same activation (src[1] pointer), the same K and weight types with
 * the same vec_dot_type (loom_cpu_mul_mat_groupable), none reading another's output.
 * The activation is converted once (the work size of one member is enough: they are
 * all the same), then all threads claim tiles from the members' tile grids laid end to
 * end through p->counter, with no barrier between members; results are bit-identical
 * to running each member alone. loom_cpu_op_mul_mat is the group of one.
 * Every member is checked before anything is computed: on a failure (reported through
 * p->status, no product computed) returns the index of the failing member, else -1. The
 * return value depends only on the shapes, so every thread returns the same. */
#define LOOM_CPU_MM_GROUP_MAX 4
int loom_cpu_op_mul_mat_group(const loom_compute_params *p, loom_tensor *const *dsts, int n);
/* True when MUL_MAT node t may join a group led by MUL_MAT node head: same src[1]
 * pointer, same K (ne[0] of the weights), same activation type (vec_dot_type). */
bool loom_cpu_mul_mat_groupable(const loom_tensor *head, const loom_tensor *t);
void loom_cpu_op_mul_mat_id(const loom_compute_params *p, loom_tensor *dst);
void loom_cpu_op_rope(const loom_compute_params *p, loom_tensor *dst);
void loom_cpu_op_flash_attn(const loom_compute_params *p, loom_tensor *dst);
void loom_cpu_op_argsort(const loom_compute_params *p, loom_tensor *dst);
void loom_cpu_op_top_k_mask(const loom_compute_params *p, loom_tensor *dst);
void loom_cpu_op_hadamard(const loom_compute_params *p, loom_tensor *dst);
void loom_cpu_op_im2col(const loom_compute_params *p, loom_tensor *dst);
void loom_cpu_op_pool_2d(const loom_compute_params *p, loom_tensor *dst);
void loom_cpu_op_softplus(const loom_compute_params *p, loom_tensor *dst);
void loom_cpu_op_ssm_conv(const loom_compute_params *p, loom_tensor *dst);
void loom_cpu_op_gated_delta(const loom_compute_params *p, loom_tensor *dst);
void loom_cpu_op_ssm_scan(const loom_compute_params *p, loom_tensor *dst);
void loom_cpu_op_rwkv_wkv7(const loom_compute_params *p, loom_tensor *dst);
void loom_cpu_op_rwkv_wkv6(const loom_compute_params *p, loom_tensor *dst);
void loom_cpu_op_xielu(const loom_compute_params *p, loom_tensor *dst);
void loom_cpu_op_exp(const loom_compute_params *p, loom_tensor *dst);

/* Scratch bytes the nn kernels need for dst with nth threads (0 = none). */
size_t loom_cpu_work_size_mul_mat(const loom_tensor *dst, int nth);
size_t loom_cpu_work_size_mul_mat_id(const loom_tensor *dst, int nth);
size_t loom_cpu_work_size_rope(const loom_tensor *dst, int nth);
size_t loom_cpu_work_size_flash_attn(const loom_tensor *dst, int nth);
size_t loom_cpu_work_size_argsort(const loom_tensor *dst, int nth);
size_t loom_cpu_work_size_top_k_mask(const loom_tensor *dst, int nth);
size_t loom_cpu_work_size_im2col(const loom_tensor *dst, int nth);
size_t loom_cpu_work_size_pool_2d(const loom_tensor *dst, int nth);
size_t loom_cpu_work_size_gated_delta(const loom_tensor *dst, int nth);
size_t loom_cpu_work_size_rwkv_wkv7(const loom_tensor *dst, int nth);
size_t loom_cpu_work_size_rwkv_wkv6(const loom_tensor *dst, int nth);

/* ---- dispatch (exec.c) */
/* Kernel for op (NULL for NONE and VIEW, which compute nothing). */
loom_cpu_op_fn loom_cpu_op_kernel(loom_op op);
/* Scratch bytes dst's kernel needs with nth threads (SIZE_MAX on overflow). */
size_t loom_cpu_op_work_size(const loom_tensor *dst, int nth);
/* Work size of the core ops (ops_basic.c); 0 for ops that need none. */
size_t loom_cpu_work_size_basic(const loom_tensor *dst, int nth);

#endif
