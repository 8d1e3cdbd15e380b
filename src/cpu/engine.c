/* The standalone CPU engine behind loom_ctx_new: host allocations, one thread pool,
 * a grow-only planned compute buffer. */
#include "core/ctx.h"
#include "cpu/exec.h"
#include "quant/alloc.h"

#include <stdlib.h>
#include <string.h>

typedef struct cpu_engine {
    loom_pool *pool;
    int nth;
    void **allocs; /* leaf allocations, freed with the context */
    size_t n_allocs, cap_allocs;
    void *buf;     /* compute buffer (grow-only) */
    size_t buf_size;
    size_t planned; /* last planned size */
    size_t *offsets; /* [max_nodes] */
    void *wdata;
    size_t wsize;
    int fill; /* test hook: < 0 off */
    loom_plan_scratch scratch;
} cpu_engine;

static void *aligned_bytes(size_t n) {
    size_t sz = (n + LOOM_TENSOR_ALIGN - 1) & ~(size_t)(LOOM_TENSOR_ALIGN - 1);
    if (sz < n) return NULL;
    return loom_aligned_alloc(LOOM_TENSOR_ALIGN, sz ? sz : LOOM_TENSOR_ALIGN);
}

static loom_status eng_alloc(void *impl, loom_ctx *cctx, loom_tensor *t, bool zero) {
    (void)cctx;
    cpu_engine *e = impl;
    size_t n = loom_tensor_nbytes(t);
    if (e->n_allocs == e->cap_allocs) {
        size_t nc = e->cap_allocs ? 2 * e->cap_allocs : 64;
        void **na = loom_realloc(e->allocs, nc * sizeof *na);
        if (!na) return LOOM_ERR_NOMEM;
        e->allocs = na;
        e->cap_allocs = nc;
    }
    void *p = aligned_bytes(n);
    if (!p) return LOOM_ERR_NOMEM;
    if (zero) memset(p, 0, n);
    e->allocs[e->n_allocs++] = p;
    t->data = p;
    t->device = 0;
    return LOOM_OK;
}

static loom_status plan(cpu_engine *e, loom_ctx *r) {
    loom_graph *g = loom_ctx_graph(r);
    size_t total = 0;
    loom_status s = loom_plan_graph_ex(g, NULL, NULL, LOOM_TENSOR_ALIGN, e->offsets, &total, &e->scratch);
    if (s) {
        loom_ctx_set_error(r, s, "compute: planning %lld nodes failed (%s)", (long long)g->n_nodes,
                           loom_status_name(s));
        return s;
    }
    e->planned = total;
    if (total > e->buf_size) {
        void *nb = aligned_bytes(total);
        if (!nb) {
            loom_ctx_set_error(r, LOOM_ERR_NOMEM, "compute: cannot allocate a %zu-byte compute buffer", total);
            return LOOM_ERR_NOMEM;
        }
        loom_free(e->buf);
        e->buf = nb;
        e->buf_size = total;
    }
    size_t ws = loom_cpu_graph_work_size(g->nodes, g->n_nodes, e->nth);
    if (ws == SIZE_MAX) {
        loom_ctx_set_error(r, LOOM_ERR_RANGE, "compute: work buffer size overflow");
        return LOOM_ERR_RANGE;
    }
    if (ws > e->wsize) {
        void *nw = aligned_bytes(ws);
        if (!nw) {
            loom_ctx_set_error(r, LOOM_ERR_NOMEM, "compute: cannot allocate a %zu-byte work buffer", ws);
            return LOOM_ERR_NOMEM;
        }
        loom_free(e->wdata);
        e->wdata = nw;
        e->wsize = ws;
    }
    return LOOM_OK;
}

static loom_status eng_reserve(void *impl, loom_ctx *r) { return plan(impl, r); }

static loom_status eng_compute(void *impl, loom_ctx *r, int n_out, loom_tensor *const *outs) {
    (void)n_out;
    (void)outs;
    cpu_engine *e = impl;
    loom_status s = plan(e, r);
    if (s) return s;
    loom_graph *g = loom_ctx_graph(r);
    if (e->fill >= 0 && e->buf) memset(e->buf, e->fill, e->buf_size);
    for (int64_t i = 0; i < g->n_nodes; i++)
        if (e->offsets[i] != SIZE_MAX) g->nodes[i]->data = (char *)e->buf + e->offsets[i];
    loom_error err = {0};
    s = loom_cpu_compute_nodes(e->pool, e->nth, g->nodes, g->n_nodes, e->wdata, e->wsize, r->abort_cb,
                               r->abort_user, r->eval_cb, r->eval_user, &err);
    /* only the requested outputs (and views of allocated leaves) stay readable */
    for (int64_t i = 0; i < g->n_nodes; i++) {
        loom_tensor *t = g->nodes[i];
        loom_tensor *b = loom_tensor_base(t);
        if (b->op != LOOM_OP_NONE && !(t->flags & LOOM_TF_OUTPUT)) t->data = NULL;
    }
    if (s && s != LOOM_ERR_CANCELLED) loom_ctx_set_error(r, s, "%s", err.msg);
    return s;
}

static size_t eng_compute_bytes(void *impl, const loom_ctx *r) {
    (void)r;
    return ((cpu_engine *)impl)->planned;
}

static void eng_free(void *impl, loom_ctx *r) {
    (void)r;
    cpu_engine *e = impl;
    for (size_t i = 0; i < e->n_allocs; i++) loom_free(e->allocs[i]);
    loom_free(e->allocs);
    loom_free(e->buf);
    loom_free(e->wdata);
    loom_free(e->offsets);
    loom_free(e->scratch.ptr);
    loom_pool_free(e->pool);
    loom_free(e);
}

static const loom_exec_iface g_cpu_iface = {
    .alloc_tensor = eng_alloc,
    .compute = eng_compute,
    .reserve = eng_reserve,
    .compute_bytes = eng_compute_bytes,
    .layer_valid = NULL,
    .layer_device = NULL,
    .ctx_free = eng_free,
};

loom_status loom_ctx_new(const loom_ctx_params *params, loom_ctx **out, loom_error *err) {
    if (out) *out = NULL;
    if (!out) return loom_error_set(err, LOOM_ERR_INVALID_ARG, "loom_ctx_new: NULL out");
    loom_ctx_params p = params ? *params : loom_ctx_default_params();
    if (p.max_nodes <= 0 || p.max_nodes > ((int64_t)1 << 26))
        return loom_error_set(err, LOOM_ERR_INVALID_ARG, "loom_ctx_new: max_nodes %lld out of range",
                              (long long)p.max_nodes);
    if (p.n_threads < 0)
        return loom_error_set(err, LOOM_ERR_INVALID_ARG, "loom_ctx_new: n_threads %d < 0", p.n_threads);
    cpu_engine *e = loom_calloc(1, sizeof *e);
    if (!e) return loom_error_set(err, LOOM_ERR_NOMEM, "loom_ctx_new: out of memory");
    e->offsets = loom_malloc((size_t)p.max_nodes * sizeof *e->offsets);
    if (!e->offsets) {
        loom_free(e);
        return loom_error_set(err, LOOM_ERR_NOMEM, "loom_ctx_new: out of memory");
    }
    loom_status s = loom_pool_new(p.n_threads, &e->pool, err);
    if (s) {
        loom_free(e->offsets);
        loom_free(e);
        return s;
    }
    e->nth = loom_pool_size(e->pool);
    e->fill = -1;
    s = loom_ctx_new_with(&g_cpu_iface, e, &p, out, err);
    if (s) {
        loom_pool_free(e->pool);
        loom_free(e->offsets);
        loom_free(e);
        return s;
    }
    return LOOM_OK;
}

void loom_cpu_ctx_set_fill(loom_ctx *ctx, int byte) {
    if (!ctx || ctx->root->iface != &g_cpu_iface) return;
    ((cpu_engine *)ctx->root->impl)->fill = byte > 255 ? 255 : byte;
}
