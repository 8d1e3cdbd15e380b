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
    case LOOM_OP_SOFTPLUS: return loom_cpu_op_softplus;
    case LOOM_OP_SSM_CONV: return loom_cpu_op_ssm_conv;
    case LOOM_OP_GATED_DELTA: return loom_cpu_op_gated_delta;
    case LOOM_OP_SSM_SCAN: return loom_cpu_op_ssm_scan;
    case LOOM_OP_RWKV_WKV7: return loom_cpu_op_rwkv_wkv7;
    case LOOM_OP_RWKV_WKV6: return loom_cpu_op_rwkv_wkv6;
    case LOOM_OP_XIELU: return loom_cpu_op_xielu;
    case LOOM_OP_EXP: return loom_cpu_op_exp;
    case LOOM_OP_TOP_K_MASK: return loom_cpu_op_top_k_mask;
    case LOOM_OP_HADAMARD: return loom_cpu_op_hadamard;
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
    case LOOM_OP_TOP_K_MASK: return loom_cpu_work_size_top_k_mask(dst, nth);
    case LOOM_OP_IM2COL: return loom_cpu_work_size_im2col(dst, nth);
    case LOOM_OP_POOL_2D: return loom_cpu_work_size_pool_2d(dst, nth);
    case LOOM_OP_GATED_DELTA: return loom_cpu_work_size_gated_delta(dst, nth);
    case LOOM_OP_RWKV_WKV7: return loom_cpu_work_size_rwkv_wkv7(dst, nth);
    case LOOM_OP_RWKV_WKV6: return loom_cpu_work_size_rwkv_wkv6(dst, nth);
    default: return loom_cpu_work_size_basic(dst, nth);
    }
}

/* Max over the nodes. Grouped matmuls (run_fn) need no more: the members of a group
 * share src[1], K and the activation type, so each one's work size is the activation's
 * (converted once for the whole group), the same for all of them. */
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

/* Work below which a node runs on one thread (the others skip ahead to the next
 * multi-threaded node): waking/synchronising threads costs microseconds, much more
 * on a loaded machine, while small nodes take less. Multiply-adds for matmuls and
 * attention, elements for everything else. */
#define EXEC_MIN_MT_MACS 131072.0
#define EXEC_MIN_MT_ELEMS 32768.0
#define EXEC_MIN_MT_SWIGLU 4096

/* Threads for node t: 1 or nth. Depends only on shapes, so every thread agrees. */
static int node_tasks(const loom_tensor *t, int nth) {
    if (nth <= 1) return 1;
    const loom_tensor *a = t->src[0], *b = t->src[1];
    double work;
    switch (t->op) {
    case LOOM_OP_MUL_MAT:
        work = (double)a->ne[0] * (double)loom_nelements(t);
        return work < EXEC_MIN_MT_MACS ? 1 : nth;
    case LOOM_OP_MUL_MAT_ID: return nth;
    case LOOM_OP_SSM_CONV:    /* per channel / per (head, sequence): the state is the work */
    case LOOM_OP_GATED_DELTA: return nth;
    case LOOM_OP_SSM_SCAN:
    case LOOM_OP_RWKV_WKV7:
    case LOOM_OP_RWKV_WKV6: return nth;
    case LOOM_OP_FLASH_ATTN:
        work = (double)loom_nelements(a) * (double)(b ? b->ne[1] : 1);
        return work < EXEC_MIN_MT_MACS ? 1 : nth;
    case LOOM_OP_SILU:
        /* loom_swiglu (a multiplier in src[1]) sits between two matmuls (gate/up and
         * down): as a multi-threaded node its end barrier replaces the one down would
         * wait at anyway, and each thread reads mostly the rows it computed */
        if (b) return loom_nelements(t) < EXEC_MIN_MT_SWIGLU ? 1 : nth;
        return loom_nelements(t) < EXEC_MIN_MT_ELEMS ? 1 : nth;
    case LOOM_OP_SUM_ROWS:
    case LOOM_OP_MEAN: /* reductions: the input is the work */
        work = (double)loom_nelements(a);
        return work < EXEC_MIN_MT_ELEMS ? 1 : nth;
    default: /* element-wise, copies, gathers: the output */
        work = (double)loom_nelements(t);
        return work < EXEC_MIN_MT_ELEMS ? 1 : nth;
    }
}

/* Sibling matmuls (same activation, e.g. Q/K/V or gate/up, made adjacent by the graph
 * pass in core/ctx.c) run as one job: one activation conversion, one tile counter and
 * one end barrier instead of one each. Members of the group led by node i: the
 * following nodes, none skipped, that are multi-threaded, not poison, groupable MUL_MATs
 * (loom_cpu_mul_mat_groupable) and do not read an earlier member's output. Depends only
 * on shapes and pointers, so every thread forms the same groups. */
static int mm_group_len(loom_tensor *const *nodes, int64_t i, int64_t n, int nth) {
    const loom_tensor *h = nodes[i];
    int g = 1;
    while (g < LOOM_CPU_MM_GROUP_MAX && i + g < n) {
        const loom_tensor *t = nodes[i + g];
        if ((t->flags & LOOM_TF_POISON) || !loom_cpu_mul_mat_groupable(h, t) || node_tasks(t, nth) == 1) break;
        const loom_tensor *wa = loom_tensor_base(t->src[0]), *wb = loom_tensor_base(t->src[1]);
        bool dep = false;
        for (int m = 0; m < g; m++) dep = dep || wa == nodes[i + m] || wb == nodes[i + m];
        if (dep) break;
        g++;
    }
    return g;
}

/* Small inputs not computed in the graph (norm weights, biases: cold after a pass over
 * the big matrices) of the single-threaded nodes from i up to the next multi-threaded
 * node, at most PREFETCH_LEAF_MAX bytes in all: prefetched by thread 0 at the end of a
 * multi-threaded node (while it waits for the others), instead of fetched line by line
 * when the nodes need them. */
#define PREFETCH_LEAF_MAX ((size_t)64 * 1024)
static void prefetch_small_leaves(loom_tensor *const *nodes, int64_t i, int64_t n, int nth) {
    size_t budget = PREFETCH_LEAF_MAX;
    for (; i < n; i++) {
        const loom_tensor *t = nodes[i];
        if (!loom_cpu_op_kernel(t->op) || (t->flags & LOOM_TF_POISON)) continue;
        if (node_tasks(t, nth) > 1) return;
        for (int k = 0; k < LOOM_MAX_SRC; k++) {
            const loom_tensor *s = t->src[k];
            if (!s || s->op != LOOM_OP_NONE || !s->data) continue;
            const size_t sz = loom_tensor_span(s);
            if (sz > budget) continue;
            budget -= sz;
            for (size_t o = 0; o < sz; o += 64) __builtin_prefetch((const char *)s->data + o, 0, 3);
        }
    }
}

typedef struct job {
    loom_pool *pool;
    loom_tensor *const *nodes;
    int64_t n;
    void *wdata;
    size_t wsize;
    /* Kernel status of multi-threaded nodes, alternating per executor barrier so a
     * fast thread failing in the next node cannot change the value a slower thread
     * reads after the previous barrier. st_single: nodes run by thread 0 alone. */
    _Atomic int st_mt[2];
    _Atomic int st_single;
    /* Work counters of multi-threaded nodes, same alternation; thread 0 zeroes the one
     * the next node will use just before it arrives at each executor barrier. */
    _Atomic int64_t ctr[2];
    /* Written by thread 0 only, before it arrives at executor barrier stop_at: every
     * thread stops after passing that barrier (0 = no stop). */
    _Atomic int64_t stop_at;
    int64_t failed_node; /* thread 0 only */
    int status;          /* thread 0 only: first failure */
    bool cancelled;      /* thread 0 only */
    bool stopped;        /* thread 0 only: decided to stop */
    loom_abort_cb abort_cb;
    void *abort_user;
    loom_eval_cb eval_cb;
    void *eval_user;
} job;

static void barrier_fn(void *pool) { loom_pool_barrier(pool); }

/* Thread 0, after node i completed (all its threads done): record a failure, call
 * the callbacks; true = stop. */
static bool after_node(job *j, int64_t i, loom_tensor *t, int st, bool call_abort) {
    if (st) {
        if (!j->status) {
            j->status = st;
            j->failed_node = i;
        }
        return true;
    }
    if (j->eval_cb && !j->eval_cb(t, j->eval_user)) return j->cancelled = true;
    if (call_abort && j->abort_cb && j->abort_cb(j->abort_user)) return j->cancelled = true;
    return false;
}

/* Node loop. Small nodes run on thread 0 alone while the other threads go on to the
 * next multi-threaded node, where they wait at a barrier only if thread 0 ran
 * something since the last one. Each multi-threaded node ends with a barrier. All
 * threads see the same node list and so pass the same sequence of barriers; a stop
 * (failure, callback) takes effect for everyone after a barrier. */
static void run_fn(void *arg, int ith, int nth) {
    job *j = arg;
    loom_compute_params p;
    p.wdata = j->wdata;
    p.wsize = j->wsize;
    p.barrier = barrier_fn;
    p.barrier_ctx = j->pool;
    int64_t nbar = 0;   /* executor barriers passed */
    bool dirty = false; /* thread 0 ran nodes since the last barrier */
    for (int64_t i = 0; i < j->n; i++) {
        loom_tensor *t = j->nodes[i];
        loom_cpu_op_fn fn = loom_cpu_op_kernel(t->op);
        if (!fn || (t->flags & LOOM_TF_POISON)) continue;
        if (node_tasks(t, nth) == 1) {
            if (ith == 0 && !j->stopped) {
                p.ith = 0;
                p.nth = 1;
                p.status = &j->st_single;
                p.counter = NULL;
                fn(&p, t);
                if (after_node(j, i, t, atomic_load_explicit(&j->st_single, memory_order_relaxed), true))
                    j->stopped = true;
            }
            dirty = true;
            continue;
        }
        if (dirty) {
            if (ith == 0 && j->stopped) atomic_store_explicit(&j->stop_at, nbar + 1, memory_order_relaxed);
            if (ith == 0) atomic_store_explicit(&j->ctr[(nbar + 1) & 1], 0, memory_order_relaxed);
            loom_pool_barrier(j->pool);
            nbar++;
            dirty = false;
            int64_t sa = atomic_load_explicit(&j->stop_at, memory_order_relaxed);
            if (sa && sa <= nbar) break;
        }
        _Atomic int *st = &j->st_mt[nbar & 1];
        p.ith = ith;
        p.nth = nth;
        p.status = st;
        p.counter = &j->ctr[nbar & 1];
        /* with an eval callback every node is its own step (the callback sees each) */
        int gn = t->op == LOOM_OP_MUL_MAT && !j->eval_cb ? mm_group_len(j->nodes, i, j->n, nth) : 1;
        int64_t fail_at = i; /* the node a failure is reported for */
        if (gn > 1) {
            int fm = loom_cpu_op_mul_mat_group(&p, j->nodes + i, gn);
            if (fm > 0) fail_at = i + fm;
            i += gn - 1; /* the group is one step */
        } else {
            fn(&p, t);
        }
        /* thread 0 runs the single-threaded nodes up to the next multi-threaded one:
         * their small leaf inputs come into its cache while it waits for the others */
        if (ith == 0 && nth > 1) prefetch_small_leaves(j->nodes, i + 1, j->n, nth);
        /* the abort callback does not look at data: poll it before the end barrier */
        if (ith == 0 && !j->eval_cb && j->abort_cb && j->abort_cb(j->abort_user)) {
            j->cancelled = j->stopped = true;
            atomic_store_explicit(&j->stop_at, nbar + 1, memory_order_relaxed);
        }
        if (ith == 0) atomic_store_explicit(&j->ctr[(nbar + 1) & 1], 0, memory_order_relaxed);
        loom_pool_barrier(j->pool);
        nbar++;
        int s = atomic_load_explicit(st, memory_order_relaxed);
        if (ith == 0 && s && !j->status) {
            j->status = s;
            j->failed_node = fail_at;
        }
        if (s) break; /* every thread read the same slot after the same barrier */
        int64_t sa = atomic_load_explicit(&j->stop_at, memory_order_relaxed);
        if (sa && sa <= nbar) break;
        if (j->eval_cb) { /* the callback sees the finished node, then everyone learns the verdict */
            if (ith == 0 && after_node(j, i, t, 0, true)) {
                j->stopped = true;
                atomic_store_explicit(&j->stop_at, nbar + 1, memory_order_relaxed);
            }
            if (ith == 0) atomic_store_explicit(&j->ctr[(nbar + 1) & 1], 0, memory_order_relaxed);
            loom_pool_barrier(j->pool);
            nbar++;
            sa = atomic_load_explicit(&j->stop_at, memory_order_relaxed);
            if (sa && sa <= nbar) break;
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
    atomic_init(&j.st_mt[0], 0);
    atomic_init(&j.st_mt[1], 0);
    atomic_init(&j.st_single, 0);
    atomic_init(&j.stop_at, 0);
    atomic_init(&j.ctr[0], 0);
    atomic_init(&j.ctr[1], 0);
    j.failed_node = -1;
    j.status = 0;
    j.cancelled = false;
    j.stopped = false;
    j.abort_cb = abort_cb;
    j.abort_user = abort_user;
    j.eval_cb = eval_cb;
    j.eval_user = eval_user;
    /* no multi-threaded node: do not wake the other threads at all */
    int run_nth = 1;
    for (int64_t i = 0; i < n && nth > 1 && run_nth == 1; i++)
        if (loom_cpu_op_kernel(nodes[i]->op) && !(nodes[i]->flags & LOOM_TF_POISON) && node_tasks(nodes[i], nth) > 1)
            run_nth = nth;
    loom_pool_run(pool, run_fn, &j, run_nth);
    int st = j.status;
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
