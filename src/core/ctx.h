/*
 * ctx.h (internal) - context family, graph, memory planner and the executor seam.
 *
 * A root context owns: the tensor arena (max_nodes descriptors + 1 poison, one
 * allocation at creation), the graph (capacity max_nodes), the sticky error, the
 * eval/abort callbacks and the derived input()/layer(i) contexts. Derived contexts
 * only carry (root, layer, device). Every function here accepts any context of a
 * family and works on its root.
 *
 * Where memory comes from and how graphs run is delegated to a loom_exec_iface:
 *   - the standalone CPU engine (src/cpu/engine.c, loom_ctx_new) allocates leaves in
 *     host memory and computes with its own thread pool;
 *   - the backend (src/backend) plugs a multi-device scheduler in via loom_ctx_new_with.
 * Reusable pieces for both: loom_graph (nodes in topological order, leafs),
 * loom_plan_graph (liveness planner), and in src/cpu/exec.h the CPU executor.
 *
 * Threading: a context family is used by one thread at a time.
 */
#ifndef LOOM_CORE_CTX_H
#define LOOM_CORE_CTX_H

#include "core/tensor.h"

/* Layer value passed to alloc_tensor for tensors created through the root itself. */
#define LOOM_LAYER_ROOT (-2)
/* Layer value for input() contexts. */
#define LOOM_LAYER_INPUT (-1)

typedef struct loom_graph {
    loom_tensor **nodes;  /* op nodes (op != NONE, incl. VIEW nodes) in topological order */
    int64_t n_nodes;
    loom_tensor **leafs;  /* op NONE tensors reachable from the nodes (weights, inputs) */
    int64_t n_leafs;
    int64_t cap;          /* max nodes (== max leafs) */
} loom_graph;

/* Executor/allocator seam. All function pointers except the optional ones must be set.
 * `ctx` arguments are ROOT contexts unless noted. */
typedef struct loom_exec_iface {
    /* Commit memory for leaf t (ne/nb/type set, layer/device from the creating ctx,
     * `cctx` = the derived or root context used to create it). Must set t->data
     * (host-addressable) and t->device; zero-fill if zero. Return LOOM_ERR_NOMEM etc.
     * Only called for tensors with nbytes > 0. */
    loom_status (*alloc_tensor)(void *impl, loom_ctx *cctx, loom_tensor *t, bool zero);
    /* Run the whole graph of root ctx. outputs (n >= 0) have LOOM_TF_OUTPUT set for the
     * duration of the call. Set errors with loom_ctx_set_error (or just return a status). */
    loom_status (*compute)(void *impl, loom_ctx *ctx, int n_outputs, loom_tensor *const *outputs);
    /* Plan/allocate compute memory for the graph without running it. */
    loom_status (*reserve)(void *impl, loom_ctx *ctx);
    /* Bytes planned for intermediates on the CPU by the last reserve/compute. */
    size_t (*compute_bytes)(void *impl, const loom_ctx *ctx);
    /* Optional: is `layer` a known layer (else loom_ctx_layer returns the receiver)?
     * NULL = every layer >= 0 is known. */
    bool (*layer_valid)(void *impl, int layer);
    /* Optional: device index for tensors created through layer(i)/input() (layer may be
     * LOOM_LAYER_INPUT / LOOM_LAYER_ROOT). NULL = 0 (CPU). */
    int (*layer_device)(void *impl, int layer);
    /* Called once from loom_ctx_free before the arena is released: free whatever
     * alloc_tensor / compute allocated for this context (impl itself if it is per-context). */
    void (*ctx_free)(void *impl, loom_ctx *ctx);
    /* Optional: called first by loom_ctx_free. Returning true means the impl keeps the
     * whole root (arena, graph, derived contexts, impl) for reuse: loom_ctx_free then
     * does nothing else; the impl later calls loom_ctx_reset before handing it out again
     * and loom_ctx_destroy to really free it. NULL / false = normal free. */
    bool (*recycle)(void *impl, loom_ctx *ctx);
    /* Optional: move nbytes (= loom_tensor_nbytes(t), logical order) between host memory
     * and a tensor whose base has LOOM_TF_DEVMEM (device memory the host cannot address):
     * used by loom_tensor_read/write and the from_* constructors. NULL = such tensors are
     * LOOM_ERR_UNSUPPORTED there. */
    loom_status (*tensor_io)(void *impl, loom_tensor *t, void *host, size_t nbytes, bool write);
} loom_exec_iface;

struct loom_ctx {
    loom_ctx *root;             /* self for a root */
    int layer;                  /* LOOM_LAYER_ROOT, LOOM_LAYER_INPUT or >= 0 */
    int device;
    loom_ctx *next_derived;     /* root: list of derived contexts (owned) */

    /* ---- root-only state */
    const loom_exec_iface *iface;
    void *impl;
    loom_ctx_params params;
    loom_tensor *arena;         /* [max_nodes] */
    int64_t n_tensors;          /* used arena slots */
    loom_tensor poison;
    loom_graph graph;
    loom_tensor **gset;         /* open-addressing set of graph members (nodes + leafs) */
    size_t gset_cap;            /* power of two */
    void *dfs;                  /* DFS scratch stack for forward */
    int64_t dfs_cap;
    loom_error err;             /* sticky error */
    loom_eval_cb eval_cb;
    void *eval_user;
    loom_abort_cb abort_cb;
    void *abort_user;
    /* Identity of the graph as it stands: a process-wide unique value, renewed whenever
     * nodes or leafs are added, reordered or dropped (loom_graph_touch), so an engine
     * can keep a plan for a graph computed again unchanged (even across contexts: no
     * two graphs ever share a value). grouped_gen: graph_gen when siblings were last
     * grouped. */
    uint64_t graph_gen;
    uint64_t grouped_gen;
};

/* Renew r->graph_gen (root ctx). */
void loom_graph_touch(loom_ctx *r);

/* Create a root context driven by iface/impl. params may be NULL (defaults).
 * On failure *out is NULL, err filled, and iface->ctx_free is NOT called (the
 * caller still owns impl). */
loom_status loom_ctx_new_with(const loom_exec_iface *iface, void *impl, const loom_ctx_params *params,
                              loom_ctx **out, loom_error *err);

static inline loom_ctx *loom_ctx_root(const loom_ctx *ctx) { return ctx ? ctx->root : NULL; }
static inline loom_graph *loom_ctx_graph(loom_ctx *ctx) { return &ctx->root->graph; }
/* Arena iteration (for backends that must free per-tensor resources). */
static inline int64_t loom_ctx_tensor_count(const loom_ctx *ctx) { return ctx->root->n_tensors; }
static inline loom_tensor *loom_ctx_tensor_at(loom_ctx *ctx, int64_t i) { return &ctx->root->arena[i]; }

/* Compute memory planner (liveness based).
 * Considers the graph's nodes that need memory: op != NONE, no view_src, nbytes > 0,
 * not poison, and filter(node, user) true (filter NULL = all). Walking the nodes in
 * order, a node gets an offset (aligned to align, a power of two) in one buffer; after
 * the node, every base (view_src resolved) of its sources whose consumers have all
 * run is freed, unless it has LOOM_TF_OUTPUT. A node with no consumers is freed right
 * after it runs unless it has LOOM_TF_OUTPUT. Freed ranges are reused (best fit,
 * neighbours merged). Nodes never overlap their own sources.
 * offsets[i] (for graph node i) = offset or SIZE_MAX when the node gets no memory;
 * also stored in node->plan_offs (and node->graph_idx is reset to i). *total = peak buffer size (multiple of align).
 * Returns LOOM_ERR_NOMEM if scratch allocation fails, LOOM_ERR_RANGE on overflow. */
loom_status loom_plan_graph(const loom_graph *g, bool (*filter)(const loom_tensor *t, void *user),
                            void *user, size_t align, size_t *offsets, size_t *total);

/* Same, with caller-owned grow-only scratch so repeated planning does not allocate once
 * the scratch is big enough (free scratch->ptr with loom_free() when done). scratch may be NULL. */
typedef struct loom_plan_scratch {
    void *ptr;
    size_t size;
} loom_plan_scratch;
loom_status loom_plan_graph_ex(const loom_graph *g, bool (*filter)(const loom_tensor *t, void *user), void *user,
                               size_t align, size_t *offsets, size_t *total, loom_plan_scratch *scratch);

/* Forget every tensor, the graph, the sticky error and the callbacks of root ctx, keeping
 * its buffers and derived contexts (no allocation; cost proportional to the last graph).
 * Only for a root held through iface->recycle (no tensor of it may be in use). */
void loom_ctx_reset(loom_ctx *ctx);
/* Free a root for real (ctx_free is called, recycle is not). */
void loom_ctx_destroy(loom_ctx *ctx);

/* Make sibling matmuls adjacent (called by loom_ctx_compute and loom_ctx_reserve, before
 * the executor plans memory, so both see the same order): for each MUL_MAT i whose weight
 * is a leaf, later MUL_MATs (within 64 nodes) with the same src[1] pointer, a leaf
 * weight, no other sources and the same layer/device (node and weight) move to right
 * after i, in their order; every other node keeps its relative order. A sibling never
 * passes a node that writes into its inputs' memory (an in-place op: CPY into a view). Legal because
 * a sibling's inputs are all ready at i. Idempotent; updates graph_idx of moved nodes.
 * The CPU executor runs such adjacent siblings as one job (cpu/exec.c). */
void loom_graph_group_siblings(loom_graph *g);

/* Internal: called by loom_ctx_forward; appends t's ancestors. */
loom_status loom_graph_expand(loom_ctx *root, loom_tensor *t);

#endif
