/* Context family, arena, sticky errors, graph building, tensor creation and accessors. */
#include "core/ctx.h"
#include "quant/alloc.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LOOM_MAX_NODES_LIMIT ((int64_t)1 << 26)

static const char *const g_op_names[LOOM_OP_COUNT] = {
    [LOOM_OP_NONE] = "NONE",         [LOOM_OP_VIEW] = "VIEW",
    [LOOM_OP_DUP] = "DUP",           [LOOM_OP_CPY] = "CPY",
    [LOOM_OP_SET] = "SET",           [LOOM_OP_PAD] = "PAD",
    [LOOM_OP_CONCAT] = "CONCAT",     [LOOM_OP_REPEAT] = "REPEAT",
    [LOOM_OP_GET_ROWS] = "GET_ROWS", [LOOM_OP_ARANGE] = "ARANGE",
    [LOOM_OP_ADD] = "ADD",           [LOOM_OP_SUB] = "SUB",
    [LOOM_OP_MUL] = "MUL",           [LOOM_OP_DIV] = "DIV",
    [LOOM_OP_SCALE] = "SCALE",       [LOOM_OP_NEG] = "NEG",
    [LOOM_OP_SQR] = "SQR",           [LOOM_OP_SQRT] = "SQRT",
    [LOOM_OP_SIN] = "SIN",           [LOOM_OP_COS] = "COS",
    [LOOM_OP_TANH] = "TANH",         [LOOM_OP_SIGMOID] = "SIGMOID",
    [LOOM_OP_SILU] = "SILU",         [LOOM_OP_RELU] = "RELU",
    [LOOM_OP_GELU] = "GELU",         [LOOM_OP_QUICK_GELU] = "QUICK_GELU",
    [LOOM_OP_CLAMP] = "CLAMP",       [LOOM_OP_SUM_ROWS] = "SUM_ROWS",
    [LOOM_OP_MEAN] = "MEAN",         [LOOM_OP_SOFT_MAX] = "SOFT_MAX",
    [LOOM_OP_NORM] = "NORM",         [LOOM_OP_RMS_NORM] = "RMS_NORM",
    [LOOM_OP_MUL_MAT] = "MUL_MAT",   [LOOM_OP_MUL_MAT_ID] = "MUL_MAT_ID",
    [LOOM_OP_ARGSORT] = "ARGSORT",   [LOOM_OP_ROPE] = "ROPE",
    [LOOM_OP_IM2COL] = "IM2COL",     [LOOM_OP_POOL_2D] = "POOL_2D",
    [LOOM_OP_FLASH_ATTN] = "FLASH_ATTN", [LOOM_OP_SOFTPLUS] = "SOFTPLUS",
    [LOOM_OP_SSM_CONV] = "SSM_CONV",     [LOOM_OP_GATED_DELTA] = "GATED_DELTA",
    [LOOM_OP_SSM_SCAN] = "SSM_SCAN",
    [LOOM_OP_RWKV_WKV7] = "RWKV_WKV7",
    [LOOM_OP_RWKV_WKV6] = "RWKV_WKV6",
    [LOOM_OP_XIELU] = "XIELU", [LOOM_OP_EXP] = "EXP", [LOOM_OP_TOP_K_MASK] = "TOP_K_MASK", [LOOM_OP_HADAMARD] = "HADAMARD",
};

const char *loom_op_name(loom_op op) {
    if ((int)op < 0 || op >= LOOM_OP_COUNT || !g_op_names[op]) return "?";
    return g_op_names[op];
}

loom_ctx_params loom_ctx_default_params(void) {
    loom_ctx_params p;
    memset(&p, 0, sizeof p);
    p.max_nodes = 8192;
    p.n_threads = 0;
    p.flash_attn = false;
    return p;
}

loom_rope_opts loom_rope_default_opts(void) {
    loom_rope_opts o;
    memset(&o, 0, sizeof o);
    o.mode = LOOM_ROPE_NORMAL;
    o.factors = NULL;
    o.orig_ctx = 131072;
    o.ext_factor = 0.0f;
    o.attn_factor = 1.0f;
    o.beta_fast = 32.0f;
    o.beta_slow = 1.0f;
    return o;
}

/* ------------------------------------------------------------------ tensor helpers */

void loom_tensor_set_contiguous_strides(loom_tensor *t) {
    t->nb[0] = loom_type_size(t->type);
    t->nb[1] = t->nb[0] * (size_t)(t->ne[0] / loom_blck_size(t->type));
    for (int i = 2; i < LOOM_MAX_DIMS; i++) t->nb[i] = t->nb[i - 1] * (size_t)t->ne[i - 1];
}

size_t loom_tensor_span(const loom_tensor *t) {
    if (loom_nelements(t) == 0) return 0;
    const size_t bs = loom_type_size(t->type);
    /* rows of whole blocks; a strided dim 0 (a permuted/transposed view) spans its stride */
    size_t s = t->nb[0] == bs ? loom_row_size(t) : (size_t)(t->ne[0] / loom_blck_size(t->type) - 1) * t->nb[0] + bs;
    for (int i = 1; i < LOOM_MAX_DIMS; i++) s += (size_t)(t->ne[i] - 1) * t->nb[i];
    return s;
}

bool loom_tensor_is_contiguous_1(const loom_tensor *t) {
    if (!loom_tensor_is_contiguous_rows(t)) return false;
    /* dims 2,3 must follow dim 1 densely */
    return (t->ne[2] == 1 || t->nb[2] == t->nb[1] * (size_t)t->ne[1]) &&
           (t->ne[3] == 1 || t->nb[3] == t->nb[2] * (size_t)t->ne[2]);
}

const char *loom_tensor_describe(const loom_tensor *t, char *buf, size_t size) {
    if (!t) {
        snprintf(buf, size, "NULL");
    } else if (t->flags & LOOM_TF_POISON) {
        snprintf(buf, size, "poison");
    } else {
        snprintf(buf, size, "%s [%lld,%lld,%lld,%lld]%s%s%s", loom_type_name(t->type), (long long)t->ne[0],
                 (long long)t->ne[1], (long long)t->ne[2], (long long)t->ne[3], t->name[0] ? " '" : "",
                 t->name, t->name[0] ? "'" : "");
    }
    return buf;
}

/* Checked bytes of a contiguous tensor; false on overflow / partial block. */
static bool shape_bytes(loom_type type, const int64_t ne[4], size_t *out) {
    size_t row;
    if (loom_type_row_bytes(type, ne[0], &row) != LOOM_OK) return false;
    size_t total = row;
    for (int i = 1; i < 4; i++) {
        if (ne[i] < 0) return false;
        if (ne[i] != 0 && total > SIZE_MAX / (size_t)ne[i]) return false;
        total *= (size_t)ne[i];
    }
    if (total > SIZE_MAX / 2) return false;
    *out = total;
    return true;
}

/* ------------------------------------------------------------------ errors */

loom_tensor *loom_ctx_poison(loom_ctx *ctx) { return ctx ? &ctx->root->poison : NULL; }

void loom_ctx_set_error(loom_ctx *ctx, loom_status st, const char *fmt, ...) {
    if (!ctx) return;
    loom_ctx *r = ctx->root;
    if (r->err.status != LOOM_OK) return;
    r->err.status = st;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->err.msg, sizeof r->err.msg, fmt, ap);
    va_end(ap);
}

loom_tensor *loom_ctx_fail(loom_ctx *ctx, loom_status st, loom_op op, const loom_tensor *a,
                           const loom_tensor *b, const char *fmt, ...) {
    if (!ctx) return NULL;
    loom_ctx *r = ctx->root;
    if (r->err.status == LOOM_OK) {
        char msg[256], da[128], db[128];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof msg, fmt, ap);
        va_end(ap);
        if (a && b)
            loom_ctx_set_error(ctx, st, "%s: %s (a: %s, b: %s)", loom_op_name(op), msg,
                               loom_tensor_describe(a, da, sizeof da), loom_tensor_describe(b, db, sizeof db));
        else if (a)
            loom_ctx_set_error(ctx, st, "%s: %s (a: %s)", loom_op_name(op), msg,
                               loom_tensor_describe(a, da, sizeof da));
        else
            loom_ctx_set_error(ctx, st, "%s: %s", loom_op_name(op), msg);
    }
    return &r->poison;
}

bool loom_op_check(loom_ctx *ctx, loom_op op, int n, loom_tensor *const *ts) {
    if (!ctx) return false;
    if (ctx->root->err.status != LOOM_OK) return false;
    for (int i = 0; i < n; i++) {
        if (!ts[i]) {
            loom_ctx_fail(ctx, LOOM_ERR_INVALID_ARG, op, NULL, NULL, "argument %d is NULL", i);
            return false;
        }
        if (ts[i]->flags & LOOM_TF_POISON) {
            loom_ctx_fail(ctx, LOOM_ERR_INVALID_ARG, op, NULL, NULL, "argument %d is a poison tensor", i);
            return false;
        }
    }
    return true;
}

/* ------------------------------------------------------------------ arena */

static loom_tensor *arena_take(loom_ctx *ctx, loom_op op) {
    loom_ctx *r = ctx->root;
    if (r->n_tensors >= r->params.max_nodes) {
        loom_ctx_fail(ctx, LOOM_ERR_RANGE, op, NULL, NULL, "tensor arena full (max_nodes %lld)",
                      (long long)r->params.max_nodes);
        return NULL;
    }
    loom_tensor *t = &r->arena[r->n_tensors++];
    memset(t, 0, sizeof *t);
    t->owner = r;
    t->device = ctx->device;
    t->layer = ctx->layer >= 0 ? ctx->layer : -1;
    t->graph_idx = -1;
    t->plan_offs = SIZE_MAX;
    t->sched_dev = -1;
    for (int i = 0; i < 4; i++) t->ne[i] = 1;
    return t;
}

loom_tensor *loom_new_node(loom_ctx *ctx, loom_op op, loom_type type, const int64_t ne[4], int n_src,
                           loom_tensor *const *srcs) {
    if (!ctx) return NULL;
    if (ctx->root->err.status != LOOM_OK) return &ctx->root->poison;
    if (n_src < 0 || n_src > LOOM_MAX_SRC)
        return loom_ctx_fail(ctx, LOOM_ERR_INTERNAL, op, NULL, NULL, "bad source count %d", n_src);
    size_t bytes;
    if (!loom_type_get((uint32_t)type))
        return loom_ctx_fail(ctx, LOOM_ERR_TYPE, op, NULL, NULL, "unknown result type %d", (int)type);
    if (!shape_bytes(type, ne, &bytes))
        return loom_ctx_fail(ctx, LOOM_ERR_SHAPE, op, NULL, NULL, "invalid result shape [%lld,%lld,%lld,%lld] for %s",
                             (long long)ne[0], (long long)ne[1], (long long)ne[2], (long long)ne[3],
                             loom_type_name(type));
    for (int i = 0; i < n_src; i++) {
        const loom_tensor *sb = srcs[i] ? loom_tensor_base(srcs[i]) : NULL;
        if (sb && (sb->flags & LOOM_TF_REPACKED) &&
            !((op == LOOM_OP_MUL_MAT || op == LOOM_OP_MUL_MAT_ID) && i == 0 && srcs[i] == sb))
            return loom_ctx_fail(ctx, LOOM_ERR_UNSUPPORTED, op, srcs[i], NULL,
                                 "tensor '%s' is stored in the CPU repacked layout: only MUL_MAT and MUL_MAT_ID "
                                 "accept it, as their weight operand",
                                 sb->name);
    }
    loom_tensor *t = arena_take(ctx, op);
    if (!t) return &ctx->root->poison;
    t->op = op;
    t->type = type;
    for (int i = 0; i < 4; i++) t->ne[i] = ne[i];
    loom_tensor_set_contiguous_strides(t);
    for (int i = 0; i < n_src; i++) t->src[i] = srcs[i];
    if (loom_nelements(t) == 0) t->flags |= LOOM_TF_EMPTY;
    return t;
}

loom_tensor *loom_new_view(loom_ctx *ctx, loom_tensor *a, loom_type type, const int64_t ne[4],
                           const size_t nb[4], size_t offset) {
    if (!ctx) return NULL;
    if (ctx->root->err.status != LOOM_OK) return &ctx->root->poison;
    loom_tensor *base = loom_tensor_base(a);
    if (base->flags & LOOM_TF_REPACKED)
        return loom_ctx_fail(ctx, LOOM_ERR_UNSUPPORTED, LOOM_OP_VIEW, a, NULL,
                             "tensor '%s' is stored in the CPU repacked layout: it cannot be viewed", base->name);
    size_t base_offs = a->view_src ? a->view_offs : 0;
    if (offset > SIZE_MAX / 2 || base_offs > SIZE_MAX / 2)
        return loom_ctx_fail(ctx, LOOM_ERR_SHAPE, LOOM_OP_VIEW, a, NULL, "offset %zu out of range", offset);
    loom_tensor tmp;
    memset(&tmp, 0, sizeof tmp);
    tmp.type = type;
    for (int i = 0; i < 4; i++) {
        if (ne[i] < 0)
            return loom_ctx_fail(ctx, LOOM_ERR_SHAPE, LOOM_OP_VIEW, a, NULL, "negative extent");
        tmp.ne[i] = ne[i];
        tmp.nb[i] = nb[i];
    }
    if (ne[0] % loom_blck_size(type) != 0)
        return loom_ctx_fail(ctx, LOOM_ERR_SHAPE, LOOM_OP_VIEW, a, NULL, "ne0 %lld not a multiple of the block size",
                             (long long)ne[0]);
    /* span with overflow checks */
    size_t span = 0;
    if (loom_nelements(&tmp) > 0) {
        size_t row;
        if (loom_type_row_bytes(type, ne[0], &row) != LOOM_OK)
            return loom_ctx_fail(ctx, LOOM_ERR_SHAPE, LOOM_OP_VIEW, a, NULL, "bad row");
        span = row;
        for (int i = 1; i < 4; i++) {
            size_t k = (size_t)(ne[i] - 1);
            if (k && nb[i] > (SIZE_MAX / 4) / k)
                return loom_ctx_fail(ctx, LOOM_ERR_SHAPE, LOOM_OP_VIEW, a, NULL, "stride overflow");
            span += k * nb[i];
            if (span > SIZE_MAX / 4)
                return loom_ctx_fail(ctx, LOOM_ERR_SHAPE, LOOM_OP_VIEW, a, NULL, "stride overflow");
        }
    }
    size_t base_bytes = loom_tensor_span(base);
    size_t start = base_offs + offset;
    if (span > 0 && (start > base_bytes || span > base_bytes - start))
        return loom_ctx_fail(ctx, LOOM_ERR_SHAPE, LOOM_OP_VIEW, a, NULL,
                             "view [offset %zu, %zu bytes) exceeds the %zu bytes of its base", start, span,
                             base_bytes);
    loom_tensor *t = arena_take(ctx, LOOM_OP_VIEW);
    if (!t) return &ctx->root->poison;
    t->op = LOOM_OP_VIEW;
    t->type = type;
    for (int i = 0; i < 4; i++) {
        t->ne[i] = ne[i];
        t->nb[i] = nb[i];
    }
    t->src[0] = a;
    t->view_src = base;
    t->view_offs = start;
    t->device = base->device;
    t->layer = base->layer;
    if (base->data) t->data = (char *)base->data + start;
    if (loom_nelements(t) == 0) t->flags |= LOOM_TF_EMPTY;
    if (a->name[0]) { /* "%.48s (view)" without snprintf (per-token hot path) */
        static const char suffix[] = " (view)";
        size_t k = 0;
        for (; k < 48 && a->name[k]; k++) t->name[k] = a->name[k];
        memcpy(t->name + k, suffix, sizeof suffix);
    }
    return t;
}

/* ------------------------------------------------------------------ contexts */

typedef struct dfs_frame {
    loom_tensor *t;
    int next;
} dfs_frame;

loom_status loom_ctx_new_with(const loom_exec_iface *iface, void *impl, const loom_ctx_params *params,
                              loom_ctx **out, loom_error *err) {
    if (out) *out = NULL;
    if (!out || !iface || !iface->alloc_tensor || !iface->compute || !iface->reserve || !iface->compute_bytes)
        return loom_error_set(err, LOOM_ERR_INVALID_ARG, "loom_ctx_new: NULL argument");
    loom_ctx_params p = params ? *params : loom_ctx_default_params();
    if (p.max_nodes <= 0 || p.max_nodes > LOOM_MAX_NODES_LIMIT)
        return loom_error_set(err, LOOM_ERR_INVALID_ARG, "loom_ctx_new: max_nodes %lld out of range (1..%lld)",
                              (long long)p.max_nodes, (long long)LOOM_MAX_NODES_LIMIT);
    if (p.n_threads < 0)
        return loom_error_set(err, LOOM_ERR_INVALID_ARG, "loom_ctx_new: n_threads %d < 0", p.n_threads);
    loom_ctx *r = loom_calloc(1, sizeof *r);
    if (!r) return loom_error_set(err, LOOM_ERR_NOMEM, "loom_ctx_new: out of memory");
    r->root = r;
    r->layer = LOOM_LAYER_ROOT;
    r->iface = iface;
    r->impl = impl;
    r->params = p;
    r->device = iface->layer_device ? iface->layer_device(impl, LOOM_LAYER_ROOT) : 0;
    size_t n = (size_t)p.max_nodes;
    size_t cap = 16;
    while (cap < 4 * n) cap <<= 1;
    r->arena = loom_malloc(n * sizeof *r->arena);
    r->graph.nodes = loom_malloc(n * sizeof *r->graph.nodes);
    r->graph.leafs = loom_malloc(n * sizeof *r->graph.leafs);
    r->gset = loom_calloc(cap, sizeof *r->gset);
    r->dfs_cap = (int64_t)(2 * n + 1);
    r->dfs = loom_malloc((size_t)r->dfs_cap * sizeof(dfs_frame));
    if (!r->arena || !r->graph.nodes || !r->graph.leafs || !r->gset || !r->dfs) {
        loom_free(r->arena);
        loom_free(r->graph.nodes);
        loom_free(r->graph.leafs);
        loom_free(r->gset);
        loom_free(r->dfs);
        loom_free(r);
        return loom_error_set(err, LOOM_ERR_NOMEM, "loom_ctx_new: out of memory for %lld nodes",
                              (long long)p.max_nodes);
    }
    r->gset_cap = cap;
    r->graph.cap = p.max_nodes;
    memset(&r->poison, 0, sizeof r->poison);
    r->poison.type = LOOM_TYPE_F32;
    r->poison.op = LOOM_OP_NONE;
    for (int i = 0; i < 4; i++) r->poison.ne[i] = 1;
    loom_tensor_set_contiguous_strides(&r->poison);
    r->poison.flags = LOOM_TF_POISON;
    r->poison.owner = r;
    r->poison.graph_idx = -1;
    r->poison.plan_offs = SIZE_MAX;
    r->poison.layer = -1;
    r->poison.sched_dev = -1;
    snprintf(r->poison.name, sizeof r->poison.name, "poison");
    *out = r;
    return LOOM_OK;
}

void loom_ctx_free(loom_ctx *ctx) {
    if (!ctx) return;
    loom_ctx *r = ctx->root;
    if (r->iface && r->iface->recycle && r->iface->recycle(r->impl, r)) return;
    loom_ctx_destroy(r);
}

void loom_ctx_destroy(loom_ctx *ctx) {
    if (!ctx) return;
    loom_ctx *r = ctx->root;
    if (r->iface && r->iface->ctx_free) r->iface->ctx_free(r->impl, r);
    loom_ctx *d = r->next_derived;
    while (d) {
        loom_ctx *nx = d->next_derived;
        loom_free(d);
        d = nx;
    }
    loom_free(r->arena);
    loom_free(r->graph.nodes);
    loom_free(r->graph.leafs);
    loom_free(r->gset);
    loom_free(r->dfs);
    loom_free(r);
}

static loom_ctx *derived(loom_ctx *ctx, int layer) {
    loom_ctx *r = ctx->root;
    for (loom_ctx *d = r->next_derived; d; d = d->next_derived)
        if (d->layer == layer) return d;
    loom_ctx *d = loom_calloc(1, sizeof *d);
    if (!d) {
        loom_ctx_set_error(ctx, LOOM_ERR_NOMEM, "out of memory creating a derived context");
        return r;
    }
    d->root = r;
    d->layer = layer;
    d->device = r->iface->layer_device ? r->iface->layer_device(r->impl, layer) : 0;
    d->next_derived = r->next_derived;
    r->next_derived = d;
    return d;
}

loom_ctx *loom_ctx_input(loom_ctx *ctx) {
    if (!ctx) return NULL;
    return derived(ctx, LOOM_LAYER_INPUT);
}

loom_ctx *loom_ctx_layer(loom_ctx *ctx, int layer) {
    if (!ctx) return NULL;
    loom_ctx *r = ctx->root;
    if (layer < 0 || (r->iface->layer_valid && !r->iface->layer_valid(r->impl, layer))) {
        /* The contract returns the receiver; Loom also makes the mistake visible. */
        loom_ctx_set_error(ctx, LOOM_ERR_RANGE, "loom_ctx_layer: layer %d does not exist", layer);
        return ctx;
    }
    return derived(ctx, layer);
}

loom_status loom_ctx_status(const loom_ctx *ctx) { return ctx ? ctx->root->err.status : LOOM_ERR_INVALID_ARG; }
const char *loom_ctx_error(const loom_ctx *ctx) { return ctx ? ctx->root->err.msg : "NULL context"; }
int64_t loom_ctx_max_nodes(const loom_ctx *ctx) { return ctx ? ctx->root->params.max_nodes : 0; }
bool loom_ctx_flash_attn(const loom_ctx *ctx) { return ctx ? ctx->root->params.flash_attn : false; }
int64_t loom_ctx_graph_size(const loom_ctx *ctx) { return ctx ? ctx->root->graph.n_nodes : 0; }

void loom_ctx_set_eval_callback(loom_ctx *ctx, loom_eval_cb cb, void *user) {
    if (!ctx) return;
    ctx->root->eval_cb = cb;
    ctx->root->eval_user = user;
}
void loom_ctx_set_abort_callback(loom_ctx *ctx, loom_abort_cb cb, void *user) {
    if (!ctx) return;
    ctx->root->abort_cb = cb;
    ctx->root->abort_user = user;
}

/* ------------------------------------------------------------------ graph */

static size_t ptr_hash(const void *p) {
    uint64_t x = (uint64_t)(uintptr_t)p;
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    return (size_t)x;
}

/* true if t was already in the set; inserts otherwise. */
static bool gset_insert(loom_ctx *r, loom_tensor *t) {
    size_t mask = r->gset_cap - 1;
    for (size_t i = ptr_hash(t) & mask;; i = (i + 1) & mask) {
        if (r->gset[i] == t) return true;
        if (!r->gset[i]) {
            r->gset[i] = t;
            return false;
        }
    }
}

static bool gset_has(const loom_ctx *r, const loom_tensor *t) {
    size_t mask = r->gset_cap - 1;
    for (size_t i = ptr_hash(t) & mask;; i = (i + 1) & mask) {
        if (r->gset[i] == t) return true;
        if (!r->gset[i]) return false;
    }
}

/* Remove t (present) from the set: probe from its home slot until found (slots freed
 * by earlier removals are skipped, so clearing members one by one stays correct). */
static void gset_clear_member(loom_ctx *r, const loom_tensor *t) {
    size_t mask = r->gset_cap - 1;
    size_t i = ptr_hash(t) & mask;
    for (size_t n = 0; n <= mask; n++, i = (i + 1) & mask)
        if (r->gset[i] == t) {
            r->gset[i] = NULL;
            return;
        }
}

void loom_ctx_reset(loom_ctx *ctx) {
    if (!ctx) return;
    loom_ctx *r = ctx->root;
    loom_graph *g = &r->graph;
    /* after an error the set may hold tensors that never reached nodes/leafs */
    if (r->err.status != LOOM_OK || (size_t)(g->n_nodes + g->n_leafs) * 8 > r->gset_cap) {
        memset(r->gset, 0, r->gset_cap * sizeof *r->gset);
    } else {
        for (int64_t i = 0; i < g->n_nodes; i++) gset_clear_member(r, g->nodes[i]);
        for (int64_t i = 0; i < g->n_leafs; i++) gset_clear_member(r, g->leafs[i]);
    }
    g->n_nodes = 0;
    g->n_leafs = 0;
    loom_graph_touch(r);
    r->n_tensors = 0;
    memset(&r->err, 0, sizeof r->err);
    r->eval_cb = NULL;
    r->eval_user = NULL;
    r->abort_cb = NULL;
    r->abort_user = NULL;
}

static _Atomic uint64_t g_graph_gen;

void loom_graph_touch(loom_ctx *r) {
    r->graph_gen = atomic_fetch_add_explicit(&g_graph_gen, 1, memory_order_relaxed) + 1;
}

loom_status loom_view_set_offset(loom_tensor *t, size_t view_offs) {
    if (!t || !t->view_src) return LOOM_ERR_INVALID_ARG;
    const size_t span = loom_tensor_span(t), base = loom_tensor_span(t->view_src);
    if (view_offs > base || span > base - view_offs) return LOOM_ERR_SHAPE;
    t->view_offs = view_offs;
    if (t->view_src->data) t->data = (char *)t->view_src->data + view_offs;
    return LOOM_OK;
}

loom_status loom_graph_expand(loom_ctx *r, loom_tensor *t) {
    dfs_frame *st = r->dfs;
    int64_t sp = 0;
    loom_graph *g = &r->graph;
    /* set holds at most nodes+leafs <= 2*max_nodes entries; capacity >= 4*max_nodes */
    if (gset_has(r, t)) return LOOM_OK;
    loom_graph_touch(r);
    gset_insert(r, t);
    st[sp].t = t;
    st[sp].next = 0;
    sp++;
    while (sp > 0) {
        dfs_frame *f = &st[sp - 1];
        if (f->next < LOOM_MAX_SRC) {
            loom_tensor *s = f->t->src[f->next++];
            if (!s || gset_has(r, s)) continue;
            if (s->flags & LOOM_TF_POISON) {
                loom_ctx_set_error(r, LOOM_ERR_INVALID_ARG, "forward: graph contains a poison tensor");
                return r->err.status;
            }
            if (sp >= r->dfs_cap) {
                loom_ctx_set_error(r, LOOM_ERR_RANGE, "forward: graph deeper than %lld", (long long)r->dfs_cap);
                return r->err.status;
            }
            gset_insert(r, s);
            st[sp].t = s;
            st[sp].next = 0;
            sp++;
            continue;
        }
        loom_tensor *n = f->t;
        sp--;
        if (n->op == LOOM_OP_NONE) {
            if (g->n_leafs >= g->cap) {
                loom_ctx_set_error(r, LOOM_ERR_RANGE, "forward: graph exceeds max_nodes %lld leafs",
                                   (long long)g->cap);
                return r->err.status;
            }
            if (n->owner == r) n->graph_idx = g->n_leafs;
            g->leafs[g->n_leafs++] = n;
        } else {
            if (g->n_nodes >= g->cap) {
                loom_ctx_set_error(r, LOOM_ERR_RANGE, "forward: graph exceeds max_nodes (%lld nodes)",
                                   (long long)g->cap);
                return r->err.status;
            }
            n->graph_idx = g->n_nodes;
            g->nodes[g->n_nodes++] = n;
        }
    }
    return LOOM_OK;
}

loom_status loom_ctx_forward(loom_ctx *ctx, loom_tensor *t) {
    if (!ctx) return LOOM_ERR_INVALID_ARG;
    loom_ctx *r = ctx->root;
    if (r->err.status) return r->err.status;
    if (!t) {
        loom_ctx_set_error(r, LOOM_ERR_INVALID_ARG, "forward: NULL tensor");
        return r->err.status;
    }
    if (t->flags & LOOM_TF_POISON) {
        loom_ctx_set_error(r, LOOM_ERR_INVALID_ARG, "forward: poison tensor");
        return r->err.status;
    }
    return loom_graph_expand(r, t);
}

static loom_status check_outputs(loom_ctx *r, int n, loom_tensor *const *outs) {
    if (n < 0 || (n > 0 && !outs)) {
        loom_ctx_set_error(r, LOOM_ERR_INVALID_ARG, "compute: bad outputs array");
        return r->err.status;
    }
    for (int i = 0; i < n; i++) {
        if (!outs[i] || (outs[i]->flags & LOOM_TF_POISON)) {
            loom_ctx_set_error(r, LOOM_ERR_INVALID_ARG, "compute: output %d is %s", i,
                               outs[i] ? "poison" : "NULL");
            return r->err.status;
        }
        if (outs[i]->op != LOOM_OP_NONE && !gset_has(r, outs[i])) {
            char d[128];
            loom_ctx_set_error(r, LOOM_ERR_INVALID_ARG, "compute: output %d (%s) was not forwarded", i,
                               loom_tensor_describe(outs[i], d, sizeof d));
            return r->err.status;
        }
    }
    return LOOM_OK;
}

/* ------------------------------------------------------------------ sibling matmuls */

#define SIBLING_WINDOW 64 /* nodes looked at after each matmul */

/* A matmul whose weight operand is a leaf (not computed in the graph). */
static bool mm_leaf_weight(const loom_tensor *t) {
    return t->op == LOOM_OP_MUL_MAT && !(t->flags & LOOM_TF_POISON) && !t->view_src && t->src[0] &&
           t->src[0]->op == LOOM_OP_NONE && t->src[1];
}

/* Group once per graph version (the pass is idempotent but not free). */
static void group_siblings_once(loom_ctx *r) {
    if (r->grouped_gen == r->graph_gen) return;
    loom_graph_group_siblings(&r->graph);
    loom_graph_touch(r); /* the order may have changed */
    r->grouped_gen = r->graph_gen;
}

void loom_graph_group_siblings(loom_graph *g) {
    loom_tensor **nd = g->nodes;
    const int64_t n = g->n_nodes;
    for (int64_t i = 0; i < n; i++) {
        const loom_tensor *h = nd[i];
        if (!mm_leaf_weight(h)) continue;
        int64_t ins = i + 1; /* where the next sibling goes */
        const int64_t end = n - ins > SIBLING_WINDOW ? ins + SIBLING_WINDOW : n;
        for (int64_t j = ins; j < end; j++) {
            loom_tensor *u = nd[j];
            if (u->src[1] != h->src[1] || !mm_leaf_weight(u) || u->layer != h->layer || u->device != h->device ||
                u->src[0]->device != h->src[0]->device)
                continue;
            bool other = false;
            for (int k = 2; k < LOOM_MAX_SRC; k++) other = other || u->src[k];
            if (other) continue;
            if (j > ins) {
                /* u's inputs are ready at i (the weight is a leaf, the activation is h's);
                 * it must not pass a node writing into their memory (an in-place op: CPY into a view) */
                const loom_tensor *wb = loom_tensor_base(u->src[0]), *xb = loom_tensor_base(u->src[1]);
                bool hazard = false;
                for (int64_t k = ins; k < j && !hazard; k++)
                    hazard = nd[k]->op != LOOM_OP_VIEW && nd[k]->view_src &&
                             (nd[k]->view_src == wb || nd[k]->view_src == xb);
                if (hazard) continue;
                memmove(nd + ins + 1, nd + ins, (size_t)(j - ins) * sizeof *nd);
                nd[ins] = u;
                for (int64_t k = ins; k <= j; k++) nd[k]->graph_idx = k;
            }
            ins++;
        }
        i = ins - 1; /* the siblings do not lead groups of their own */
    }
}

static loom_status finish_status(loom_ctx *r, loom_status s) {
    /* Cancellation is not sticky; other compute failures are (message set by the engine
     * or, if it did not set one, a generic one). */
    if (s != LOOM_OK && s != LOOM_ERR_CANCELLED && r->err.status == LOOM_OK)
        loom_ctx_set_error(r, s, "compute failed: %s", loom_status_name(s));
    return s;
}

loom_status loom_ctx_compute(loom_ctx *ctx, int n_outputs, loom_tensor *const *outputs) {
    if (!ctx) return LOOM_ERR_INVALID_ARG;
    loom_ctx *r = ctx->root;
    if (r->err.status) return r->err.status;
    loom_status s = check_outputs(r, n_outputs, outputs);
    if (s) return s;
    for (int i = 0; i < n_outputs; i++) outputs[i]->flags |= LOOM_TF_OUTPUT;
    group_siblings_once(r);
    s = r->iface->compute(r->impl, r, n_outputs, outputs);
    for (int i = 0; i < n_outputs; i++) outputs[i]->flags &= ~(uint32_t)LOOM_TF_OUTPUT;
    return finish_status(r, s);
}

loom_status loom_ctx_reserve(loom_ctx *ctx) {
    if (!ctx) return LOOM_ERR_INVALID_ARG;
    loom_ctx *r = ctx->root;
    if (r->err.status) return r->err.status;
    group_siblings_once(r);
    return finish_status(r, r->iface->reserve(r->impl, r));
}

size_t loom_ctx_compute_bytes(const loom_ctx *ctx) {
    if (!ctx) return 0;
    const loom_ctx *r = ctx->root;
    return r->iface->compute_bytes(r->impl, r);
}

/* ------------------------------------------------------------------ tensor creation */

static loom_tensor *new_leaf(loom_ctx *ctx, const char *fn, loom_type type, int n_dims, const int64_t *ne,
                             bool zero) {
    if (!ctx) return NULL;
    loom_ctx *r = ctx->root;
    if (r->err.status) return &r->poison;
    if (!loom_type_get((uint32_t)type)) {
        loom_ctx_set_error(ctx, LOOM_ERR_TYPE, "%s: unknown type %d", fn, (int)type);
        return &r->poison;
    }
    if (n_dims < 0 || n_dims > LOOM_MAX_DIMS || (n_dims > 0 && !ne)) {
        loom_ctx_set_error(ctx, LOOM_ERR_SHAPE, "%s: n_dims %d out of range (0..4)", fn, n_dims);
        return &r->poison;
    }
    int64_t e[4] = {1, 1, 1, 1};
    bool empty = n_dims == 0 || ne[0] == 0;
    if (empty) {
        e[0] = 0;
    } else {
        for (int i = 0; i < n_dims; i++) {
            if (ne[i] < 1) {
                loom_ctx_set_error(ctx, LOOM_ERR_SHAPE, "%s: invalid extent ne[%d] = %lld", fn, i,
                                   (long long)ne[i]);
                return &r->poison;
            }
            e[i] = ne[i];
        }
    }
    size_t bytes;
    if (!shape_bytes(type, e, &bytes)) {
        loom_ctx_set_error(ctx, LOOM_ERR_SHAPE,
                           "%s: shape [%lld,%lld,%lld,%lld] invalid for %s (block size or size overflow)", fn,
                           (long long)e[0], (long long)e[1], (long long)e[2], (long long)e[3],
                           loom_type_name(type));
        return &r->poison;
    }
    loom_tensor *t = arena_take(ctx, LOOM_OP_NONE);
    if (!t) return &r->poison;
    t->type = type;
    for (int i = 0; i < 4; i++) t->ne[i] = e[i];
    loom_tensor_set_contiguous_strides(t);
    if (ctx->layer == LOOM_LAYER_INPUT) t->flags |= LOOM_TF_INPUT;
    if (bytes == 0) {
        t->flags |= LOOM_TF_EMPTY;
        return t;
    }
    loom_status s = r->iface->alloc_tensor(r->impl, ctx, t, zero);
    if (s != LOOM_OK || !t->data) {
        loom_ctx_set_error(ctx, s ? s : LOOM_ERR_NOMEM, "%s: cannot allocate %zu bytes (%s)", fn, bytes,
                           loom_status_name(s ? s : LOOM_ERR_NOMEM));
        t->flags |= LOOM_TF_POISON;
        t->data = NULL;
        return &r->poison;
    }
    t->flags |= LOOM_TF_ALLOCATED;
    return t;
}

loom_tensor *loom_empty(loom_ctx *ctx, loom_type type, int n_dims, const int64_t *ne) {
    return new_leaf(ctx, "empty", type, n_dims, ne, false);
}

loom_tensor *loom_zeros(loom_ctx *ctx, loom_type type, int n_dims, const int64_t *ne) {
    return new_leaf(ctx, "zeros", type, n_dims, ne, true);
}

/* Tensors in device memory (LOOM_TF_DEVMEM base) move through the engine's tensor_io. */
static bool is_devmem(const loom_tensor *t) {
    const loom_tensor *b = t->view_src ? t->view_src : t;
    return (b->flags & LOOM_TF_DEVMEM) != 0;
}

static loom_status devmem_io(const loom_tensor *t, void *host, size_t n, bool write) {
    const loom_tensor *b = t->view_src ? t->view_src : t;
    const loom_ctx *o = b->owner ? b->owner : t->owner;
    if (!o || !o->root || !o->root->iface || !o->root->iface->tensor_io) return LOOM_ERR_UNSUPPORTED;
    return o->root->iface->tensor_io(o->root->impl, (loom_tensor *)t, host, n, write);
}

static loom_tensor *from_data(loom_ctx *ctx, const char *fn, loom_type type, const void *data, size_t n,
                              size_t esize, int n_dims, const int64_t *ne) {
    if (!ctx) return NULL;
    if (ctx->root->err.status) return &ctx->root->poison;
    if (n > 0 && !data) {
        loom_ctx_set_error(ctx, LOOM_ERR_INVALID_ARG, "%s: NULL data", fn);
        return &ctx->root->poison;
    }
    loom_tensor *t = new_leaf(ctx, fn, type, n_dims, ne, false);
    if (t->flags & LOOM_TF_POISON) return t;
    if ((uint64_t)loom_nelements(t) != (uint64_t)n) {
        loom_ctx_set_error(ctx, LOOM_ERR_SHAPE, "%s: %zu elements given, shape [%lld,%lld,%lld,%lld] has %lld", fn,
                           n, (long long)t->ne[0], (long long)t->ne[1], (long long)t->ne[2], (long long)t->ne[3],
                           (long long)loom_nelements(t));
        return &ctx->root->poison;
    }
    if (n > 0) {
        if (!is_devmem(t)) {
            memcpy(t->data, data, n * esize);
        } else {
            loom_status s = devmem_io(t, (void *)data, n * esize, true);
            if (s) {
                loom_ctx_set_error(ctx, s, "%s: cannot write %zu bytes to device memory (%s)", fn, n * esize,
                                   loom_status_name(s));
                return &ctx->root->poison;
            }
        }
    }
    return t;
}

loom_tensor *loom_from_f32(loom_ctx *ctx, const float *data, size_t n, int n_dims, const int64_t *ne) {
    return from_data(ctx, "from_f32", LOOM_TYPE_F32, data, n, sizeof(float), n_dims, ne);
}

loom_tensor *loom_from_i32(loom_ctx *ctx, const int32_t *data, size_t n, int n_dims, const int64_t *ne) {
    return from_data(ctx, "from_i32", LOOM_TYPE_I32, data, n, sizeof(int32_t), n_dims, ne);
}

loom_tensor *loom_from_bytes(loom_ctx *ctx, loom_type type, const void *data, size_t nbytes, int n_dims,
                             const int64_t *ne) {
    if (!ctx) return NULL;
    if (ctx->root->err.status) return &ctx->root->poison;
    loom_tensor *t = new_leaf(ctx, "from_bytes", type, n_dims, ne, false);
    if (t->flags & LOOM_TF_POISON) return t;
    size_t want = loom_tensor_nbytes(t);
    if (nbytes != want) {
        loom_ctx_set_error(ctx, LOOM_ERR_SHAPE, "from_bytes: %zu bytes given, tensor %s has %zu", nbytes,
                           loom_type_name(type), want);
        return &ctx->root->poison;
    }
    if (want > 0) {
        if (!data) {
            loom_ctx_set_error(ctx, LOOM_ERR_INVALID_ARG, "from_bytes: NULL data");
            return &ctx->root->poison;
        }
        if (!is_devmem(t)) {
            memcpy(t->data, data, want);
        } else {
            loom_status s = devmem_io(t, (void *)data, want, true);
            if (s) {
                loom_ctx_set_error(ctx, s, "from_bytes: cannot write %zu bytes to device memory (%s)", want,
                                   loom_status_name(s));
                return &ctx->root->poison;
            }
        }
    }
    return t;
}

/* ------------------------------------------------------------------ accessors */

loom_type loom_tensor_type(const loom_tensor *t) { return t ? t->type : LOOM_TYPE_F32; }
int64_t loom_tensor_ne(const loom_tensor *t, int i) { return (t && i >= 0 && i < 4) ? t->ne[i] : 1; }
size_t loom_tensor_nb(const loom_tensor *t, int i) { return (t && i >= 0 && i < 4) ? t->nb[i] : 0; }
int loom_tensor_n_dims(const loom_tensor *t) {
    if (!t) return 1;
    for (int i = 3; i >= 1; i--)
        if (t->ne[i] > 1) return i + 1;
    return 1;
}
int64_t loom_tensor_nelements(const loom_tensor *t) { return t ? loom_nelements(t) : 0; }
size_t loom_tensor_nbytes(const loom_tensor *t) {
    if (!t || loom_nelements(t) == 0) return 0;
    return loom_row_size(t) * (size_t)loom_nrows(t);
}
loom_op loom_tensor_op(const loom_tensor *t) { return t ? t->op : LOOM_OP_NONE; }
bool loom_tensor_is_poison(const loom_tensor *t) { return !t || (t->flags & LOOM_TF_POISON); }
bool loom_tensor_is_contiguous(const loom_tensor *t) {
    if (!t) return false;
    size_t nb = loom_type_size(t->type);
    if (t->nb[0] != nb && t->ne[0] > loom_blck_size(t->type)) return false;
    nb = loom_row_size(t);
    for (int i = 1; i < 4; i++) {
        if (t->ne[i] != 1 && t->nb[i] != nb) return false;
        nb *= (size_t)t->ne[i];
    }
    return true;
}
const loom_tensor *loom_tensor_src(const loom_tensor *t, int i) {
    return (t && i >= 0 && i < LOOM_MAX_SRC) ? t->src[i] : NULL;
}
loom_tensor *loom_tensor_set_name(loom_tensor *t, const char *name) {
    if (!t || (t->flags & LOOM_TF_POISON)) return t;
    /* plain bounded copy (snprintf showed up in per-token graph building) */
    size_t i = 0;
    if (name)
        for (; i + 1 < sizeof t->name && name[i]; i++) t->name[i] = name[i];
    t->name[i] = '\0';
    return t;
}
const char *loom_tensor_name(const loom_tensor *t) { return t ? t->name : ""; }

loom_status loom_tensor_read(const loom_tensor *t, void *dst, size_t nbytes) {
    if (!t || (t->flags & LOOM_TF_POISON)) return LOOM_ERR_INVALID_ARG;
    size_t want = loom_tensor_nbytes(t);
    if (nbytes != want) return LOOM_ERR_INVALID_ARG;
    if (want == 0) return LOOM_OK;
    if (!dst || !t->data) return LOOM_ERR_INVALID_ARG;
    if (is_devmem(t)) return devmem_io(t, dst, want, false);
    if (loom_tensor_is_contiguous(t)) {
        memcpy(dst, t->data, want);
        return LOOM_OK;
    }
    if (!loom_tensor_is_contiguous_rows(t)) return LOOM_ERR_INVALID_ARG;
    size_t row = loom_row_size(t);
    char *o = dst;
    for (int64_t i3 = 0; i3 < t->ne[3]; i3++)
        for (int64_t i2 = 0; i2 < t->ne[2]; i2++)
            for (int64_t i1 = 0; i1 < t->ne[1]; i1++) {
                memcpy(o, loom_row_ptr(t, i1, i2, i3), row);
                o += row;
            }
    return LOOM_OK;
}

loom_status loom_tensor_read_f32(const loom_tensor *t, float *dst, size_t n) {
    if (!t || t->type != LOOM_TYPE_F32) return LOOM_ERR_TYPE;
    if (n > SIZE_MAX / sizeof(float)) return LOOM_ERR_INVALID_ARG;
    return loom_tensor_read(t, dst, n * sizeof(float));
}

loom_status loom_tensor_write(loom_tensor *t, const void *src, size_t nbytes) {
    if (!t || (t->flags & LOOM_TF_POISON) || t->op != LOOM_OP_NONE) return LOOM_ERR_INVALID_ARG;
    size_t want = loom_tensor_nbytes(t);
    if (nbytes != want) return LOOM_ERR_INVALID_ARG;
    if (want == 0) return LOOM_OK;
    if (!src || !t->data) return LOOM_ERR_INVALID_ARG;
    if (is_devmem(t)) return devmem_io(t, (void *)src, want, true);
    memcpy(t->data, src, want);
    return LOOM_OK;
}
