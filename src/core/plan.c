/* Liveness-based compute memory planner (see ctx.h). */
#include "core/ctx.h"
#include "quant/alloc.h"

#include <stdlib.h>

typedef struct blk {
    size_t off, size;
} blk;

typedef struct fl {
    blk *b;
    int64_t n, cap;
    size_t end, peak;
} fl;

static size_t fl_alloc(fl *f, size_t size) {
    int64_t best = -1;
    for (int64_t i = 0; i < f->n; i++)
        if (f->b[i].size >= size && (best < 0 || f->b[i].size < f->b[best].size)) best = i;
    if (best >= 0) {
        size_t off = f->b[best].off;
        f->b[best].off += size;
        f->b[best].size -= size;
        if (f->b[best].size == 0) {
            for (int64_t j = best; j + 1 < f->n; j++) f->b[j] = f->b[j + 1];
            f->n--;
        }
        return off;
    }
    size_t off = f->end;
    f->end += size;
    if (f->end > f->peak) f->peak = f->end;
    return off;
}

static void fl_free(fl *f, size_t off, size_t size) {
    int64_t i = 0;
    while (i < f->n && f->b[i].off < off) i++;
    /* insert at i */
    for (int64_t j = f->n; j > i; j--) f->b[j] = f->b[j - 1];
    f->b[i].off = off;
    f->b[i].size = size;
    f->n++;
    /* merge with next */
    if (i + 1 < f->n && f->b[i].off + f->b[i].size == f->b[i + 1].off) {
        f->b[i].size += f->b[i + 1].size;
        for (int64_t j = i + 1; j + 1 < f->n; j++) f->b[j] = f->b[j + 1];
        f->n--;
    }
    /* merge with previous */
    if (i > 0 && f->b[i - 1].off + f->b[i - 1].size == f->b[i].off) {
        f->b[i - 1].size += f->b[i].size;
        for (int64_t j = i; j + 1 < f->n; j++) f->b[j] = f->b[j + 1];
        f->n--;
        i--;
    }
    /* a block touching the top shrinks the top */
    if (i == f->n - 1 && f->b[i].off + f->b[i].size == f->end) {
        f->end = f->b[i].off;
        f->n--;
    }
}

static bool in_graph(const loom_graph *g, const loom_tensor *t) {
    return t->graph_idx >= 0 && t->graph_idx < g->n_nodes && g->nodes[t->graph_idx] == t;
}

loom_status loom_plan_graph(const loom_graph *g, bool (*filter)(const loom_tensor *t, void *user), void *user,
                            size_t align, size_t *offsets, size_t *total) {
    return loom_plan_graph_ex(g, filter, user, align, offsets, total, NULL);
}

loom_status loom_plan_graph_ex(const loom_graph *g, bool (*filter)(const loom_tensor *t, void *user), void *user,
                               size_t align, size_t *offsets, size_t *total, loom_plan_scratch *scratch) {
    *total = 0;
    if (align == 0 || (align & (align - 1))) return LOOM_ERR_INVALID_ARG;
    int64_t n = g->n_nodes;
    for (int64_t i = 0; i < n; i++) {
        loom_tensor *t = g->nodes[i];
        t->graph_idx = i; /* a node may have been forwarded into another graph since */
        t->n_uses = 0;
        t->plan_offs = SIZE_MAX;
        offsets[i] = SIZE_MAX;
    }
    fl f = {0};
    f.cap = n + 2;
    size_t need = (size_t)f.cap * sizeof(blk) + (size_t)(n + 1) * sizeof(size_t);
    loom_plan_scratch local = {0};
    if (!scratch) scratch = &local;
    if (scratch->size < need) {
        void *p = loom_malloc(need);
        if (!p) {
            loom_free(local.ptr);
            return LOOM_ERR_NOMEM;
        }
        loom_free(scratch->ptr);
        scratch->ptr = p;
        scratch->size = need;
    }
    f.b = scratch->ptr;
    size_t *sizes = (size_t *)(void *)((char *)scratch->ptr + (size_t)f.cap * sizeof(blk));
    /* which nodes need memory, and their aligned sizes */
    for (int64_t i = 0; i < n; i++) {
        loom_tensor *t = g->nodes[i];
        sizes[i] = 0;
        if (t->op == LOOM_OP_NONE || t->view_src || (t->flags & LOOM_TF_POISON)) continue;
        if (filter && !filter(t, user)) continue;
        size_t b = loom_tensor_nbytes(t);
        if (b == 0) continue;
        if (b > SIZE_MAX - align) {
            loom_free(local.ptr);
            return LOOM_ERR_RANGE;
        }
        sizes[i] = (b + align - 1) & ~(align - 1);
    }
    /* consumer counts (sources resolved to their memory-owning base) */
    for (int64_t i = 0; i < n; i++) {
        loom_tensor *t = g->nodes[i];
        for (int k = 0; k < LOOM_MAX_SRC; k++) {
            if (!t->src[k]) continue;
            loom_tensor *b = loom_tensor_base(t->src[k]);
            if (in_graph(g, b) && sizes[b->graph_idx]) b->n_uses++;
        }
    }
    for (int64_t i = 0; i < n; i++) {
        loom_tensor *t = g->nodes[i];
        if (sizes[i]) {
            size_t top = f.end;
            size_t off = fl_alloc(&f, sizes[i]);
            if (off > SIZE_MAX / 2 || top > SIZE_MAX / 2) {
                loom_free(local.ptr);
                return LOOM_ERR_RANGE;
            }
            offsets[i] = off;
            t->plan_offs = off;
        }
        for (int k = 0; k < LOOM_MAX_SRC; k++) {
            if (!t->src[k]) continue;
            loom_tensor *b = loom_tensor_base(t->src[k]);
            if (!in_graph(g, b) || !sizes[b->graph_idx]) continue;
            if (--b->n_uses == 0 && !(b->flags & LOOM_TF_OUTPUT)) fl_free(&f, b->plan_offs, sizes[b->graph_idx]);
        }
        if (sizes[i] && t->n_uses == 0 && !(t->flags & LOOM_TF_OUTPUT)) fl_free(&f, t->plan_offs, sizes[i]);
    }
    *total = f.peak;
    loom_free(local.ptr);
    return LOOM_OK;
}
