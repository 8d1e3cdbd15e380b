/* CPU executor: all pool threads step through the nodes together. */
#include "cpu/exec.h"

#include "cpu/ops.h"

#include <stdatomic.h>
#include <stdio.h>

loom_cpu_op_fn loom_cpu_op_kernel(loom_op op) {
    switch (op) {
    case LOOM_OP_NONE:
    case LOOM_OP_VIEW:
    case LOOM_OP_COUNT: return NULL;
    case LOOM_OP_DUP: return loom_cpu_op_dup;
    case LOOM_OP_CPY: return loom_cpu_op_cpy;
    case LOOM_OP_SET: return loom_cpu_op_set;
    case LOOM_OP_PAD: return loom_cpu_op_pad;
    case LOOM_OP_CONCAT: return loom_cpu_op_concat;
    case LOOM_OP_REPEAT: return loom_cpu_op_repeat;
    case LOOM_OP_GET_ROWS: return loom_cpu_op_get_rows;
    case LOOM_OP_ARANGE: return loom_cpu_op_arange;
    case LOOM_OP_ADD: return loom_cpu_op_add;
    case LOOM_OP_SUB: return loom_cpu_op_sub;
    case LOOM_OP_MUL: return loom_cpu_op_mul;
    case LOOM_OP_DIV: return loom_cpu_op_div;
    case LOOM_OP_SCALE: return loom_cpu_op_scale;
    case LOOM_OP_NEG: return loom_cpu_op_neg;
    case LOOM_OP_SQR: return loom_cpu_op_sqr;
    case LOOM_OP_SQRT: return loom_cpu_op_sqrt;
    case LOOM_OP_SIN: return loom_cpu_op_sin;
    case LOOM_OP_COS: return loom_cpu_op_cos;
    case LOOM_OP_TANH: return loom_cpu_op_tanh;
    case LOOM_OP_SIGMOID: return loom_cpu_op_sigmoid;
    case LOOM_OP_SILU: return loom_cpu_op_silu;
    case LOOM_OP_RELU: return loom_cpu_op_relu;
    case LOOM_OP_GELU: return loom_cpu_op_gelu;
    case LOOM_OP_QUICK_GELU: return loom_cpu_op_quick_gelu;
    case LOOM_OP_CLAMP: return loom_cpu_op_clamp;
    case LOOM_OP_SUM_ROWS: return loom_cpu_op_sum_rows;
    case LOOM_OP_MEAN: return loom_cpu_op_mean;
    case LOOM_OP_SOFT_MAX: return loom_cpu_op_soft_max;
    case LOOM_OP_NORM: return loom_cpu_op_norm;
    case LOOM_OP_RMS_NORM: return loom_cpu_op_rms_norm;
    case LOOM_OP_MUL_MAT: return loom_cpu_op_mul_mat;
    case LOOM_OP_MUL_MAT_ID: return loom_cpu_op_mul_mat_id;
    case LOOM_OP_ARGSORT: return loom_cpu_op_argsort;
    case LOOM_OP_ROPE: return loom_cpu_op_rope;
    case LOOM_OP_IM2COL: return loom_cpu_op_im2col;
    case LOOM_OP_POOL_2D: return loom_cpu_op_pool_2d;
    case LOOM_OP_FLASH_ATTN: return loom_cpu_op_flash_attn;
    }
    return NULL;
}

size_t loom_cpu_op_work_size(const loom_tensor *dst, int nth) {
    switch (dst->op) {
    case LOOM_OP_MUL_MAT: return loom_cpu_work_size_mul_mat(dst, nth);
    case LOOM_OP_MUL_MAT_ID: return loom_cpu_work_size_mul_mat_id(dst, nth);
    case LOOM_OP_ROPE: return loom_cpu_work_size_rope(dst, nth);
    case LOOM_OP_FLASH_ATTN: return loom_cpu_work_size_flash_attn(dst, nth);
    case LOOM_OP_ARGSORT: return loom_cpu_work_size_argsort(dst, nth);
    case LOOM_OP_IM2COL: return loom_cpu_work_size_im2col(dst, nth);
    case LOOM_OP_POOL_2D: return loom_cpu_work_size_pool_2d(dst, nth);
    default: return loom_cpu_work_size_basic(dst, nth);
    }
}

size_t loom_cpu_graph_work_size(loom_tensor *const *nodes, int64_t n, int nth) {
    size_t mx = 0;
    for (int64_t i = 0; i < n; i++) {
        if (!loom_cpu_op_kernel(nodes[i]->op)) continue;
        size_t w = loom_cpu_op_work_size(nodes[i], nth);
        if (w == SIZE_MAX) return SIZE_MAX;
        if (w > mx) mx = w;
    }
    if (mx > SIZE_MAX - 64 * (size_t)nth) return SIZE_MAX;
    return mx ? mx + 64 * (size_t)nth : 0;
}

void loom_cpu_resolve_views(loom_tensor *const *nodes, int64_t n) {
    for (int64_t i = 0; i < n; i++) {
        loom_tensor *t = nodes[i];
        if (!t->view_src) continue;
        t->data = t->view_src->data ? (char *)t->view_src->data + t->view_offs : NULL;
    }
}

typedef struct job {
    loom_pool *pool;
    loom_tensor *const *nodes;
    int64_t n;
    void *wdata;
    size_t wsize;
    _Atomic int status;
    _Atomic int stop;
    int64_t failed_node; /* thread 0 only */
    bool cancelled;      /* thread 0 only */
    bool sync_each;
    loom_abort_cb abort_cb;
    void *abort_user;
    loom_eval_cb eval_cb;
    void *eval_user;
} job;

static void barrier_fn(void *pool) { loom_pool_barrier(pool); }

static void run_fn(void *arg, int ith, int nth) {
    job *j = arg;
    loom_compute_params p;
    p.ith = ith;
    p.nth = nth;
    p.wdata = j->wdata;
    p.wsize = j->wsize;
    p.barrier = barrier_fn;
    p.barrier_ctx = j->pool;
    p.status = &j->status;
    for (int64_t i = 0; i < j->n; i++) {
        loom_tensor *t = j->nodes[i];
        loom_cpu_op_fn fn = loom_cpu_op_kernel(t->op);
        if (!fn || (t->flags & LOOM_TF_POISON)) continue;
        fn(&p, t);
        loom_pool_barrier(j->pool);
        if (ith == 0 && j->failed_node < 0 && atomic_load_explicit(&j->status, memory_order_relaxed))
            j->failed_node = i;
        if (j->sync_each) {
            if (ith == 0) {
                bool stop = j->failed_node >= 0;
                if (!stop && j->eval_cb && !j->eval_cb(t, j->eval_user)) stop = j->cancelled = true;
                if (!stop && j->abort_cb && j->abort_cb(j->abort_user)) stop = j->cancelled = true;
                atomic_store_explicit(&j->stop, stop, memory_order_relaxed);
            }
            loom_pool_barrier(j->pool);
            if (atomic_load_explicit(&j->stop, memory_order_relaxed)) break;
        }
    }
}

loom_status loom_cpu_compute_nodes(loom_pool *pool, int nth, loom_tensor *const *nodes, int64_t n,
                                   void *wdata, size_t wsize, loom_abort_cb abort_cb, void *abort_user,
                                   loom_eval_cb eval_cb, void *eval_user, loom_error *err) {
    loom_cpu_resolve_views(nodes, n);
    if (abort_cb && abort_cb(abort_user))
        return loom_error_set(err, LOOM_ERR_CANCELLED, "compute cancelled by the abort callback");
    job j;
    j.pool = pool;
    j.nodes = nodes;
    j.n = n;
    j.wdata = wdata;
    j.wsize = wsize;
    atomic_init(&j.status, 0);
    atomic_init(&j.stop, 0);
    j.failed_node = -1;
    j.cancelled = false;
    j.sync_each = abort_cb || eval_cb;
    j.abort_cb = abort_cb;
    j.abort_user = abort_user;
    j.eval_cb = eval_cb;
    j.eval_user = eval_user;
    loom_pool_run(pool, run_fn, &j, nth);
    int st = atomic_load(&j.status);
    if (st) {
        char d[128];
        const loom_tensor *t = j.failed_node >= 0 ? nodes[j.failed_node] : NULL;
        return loom_error_set(err, (loom_status)st, "compute: %s kernel failed on %s: %s",
                              t ? loom_op_name(t->op) : "a", t ? loom_tensor_describe(t, d, sizeof d) : "?",
                              loom_status_name((loom_status)st));
    }
    if (j.cancelled) return loom_error_set(err, LOOM_ERR_CANCELLED, "compute cancelled by a callback");
    return LOOM_OK;
}
