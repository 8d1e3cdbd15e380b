/*
 * exec.h (internal) - run graph nodes with the CPU kernels on a thread pool.
 */
#ifndef LOOM_CPU_EXEC_H
#define LOOM_CPU_EXEC_H

#include "core/ctx.h"
#include "cpu/pool.h"

/* Scratch bytes needed to run nodes[0..n) with nth threads (max over nodes, plus
 * per-thread padding). SIZE_MAX on overflow. */
size_t loom_cpu_graph_work_size(loom_tensor *const *nodes, int64_t n, int nth);

/* Compute nodes[0..n) in order on pool (all threads step through the nodes
 * together, barrier after each). Every node's data (and its sources') must already
 * be set, except VIEW-like nodes (view_src != NULL), whose data is set here from
 * their base before the run. abort_cb is polled and eval_cb called on the calling
 * thread after each node (either may be NULL); either stopping -> LOOM_ERR_CANCELLED.
 * A kernel error -> that status. err (may be NULL) names the failing node.
 * wdata must hold loom_cpu_graph_work_size(nodes, n, nth) bytes. */
loom_status loom_cpu_compute_nodes(loom_pool *pool, int nth, loom_tensor *const *nodes, int64_t n,
                                   void *wdata, size_t wsize, loom_abort_cb abort_cb, void *abort_user,
                                   loom_eval_cb eval_cb, void *eval_user, loom_error *err);

/* Set data of every view in nodes[0..n) from its base (views of bases without data stay NULL). */
void loom_cpu_resolve_views(loom_tensor *const *nodes, int64_t n);

/* Test hook (standalone engine contexts only; no-op otherwise): before every compute,
 * fill the whole compute buffer with byte (0..255), e.g. 0xFF = NaN for F32/F16, so
 * elements a kernel forgets to write are detected. byte < 0 turns it off. */
void loom_cpu_ctx_set_fill(loom_ctx *ctx, int byte);

#endif
