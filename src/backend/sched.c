/* Backend contexts and the multi-device scheduler (contract §3.7, §5).
 *
 * A backend context is a core context (core/ctx.h) driven by this file's
 * loom_exec_iface:
 *   - alloc_tensor: input()/root tensors on the CPU (not counted), layer(i)
 *     tensors on layer i's device, counted as cache[i] (Allocated / Failed);
 *   - compute/reserve: assign every node to a device, split the node list into
 *     runs of consecutive nodes on one device, plan each device's compute memory
 *     with the core's liveness planner, add a staging area for tensors copied in
 *     from other devices and the executor's work area, and (compute) run each run
 *     with the CPU executor after copying its cross-device inputs.
 * Device assignment: a view (or in-place node) lives with its base; an op with a
 * weight operand runs on the (first) weight's device (CPU weights are never
 * moved); otherwise it follows its first input's device; an op without inputs
 * runs on the CPU. A node a Vulkan device cannot run (loom_vk_supports) goes to
 * the CPU instead, its inputs and consumers copied at the boundary.
 * Vulkan runs (backend/vulkan/vk.h): the run's inputs from other devices are
 * uploads recorded at the start of its one command buffer, the outputs of the
 * compute that live on the device are downloads recorded at the end of the
 * device's last run (into a host area, so they stay readable like CPU outputs);
 * inputs a CPU run needs from a Vulkan device are read synchronously.
 * Compute buffers (one per device, grow-only) and the thread pool belong to the
 * backend, so outputs stay readable until the next compute/reserve on it.
 */
#include "backend/backend_internal.h"
#include "backend/vulkan/vk.h"
#include "core/ctx.h"
#include "cpu/exec.h"
#include "quant/alloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SCHED_ALIGN LOOM_TENSOR_ALIGN
#define BC_KEEP_MAX ((size_t)64 << 10) /* input blocks a recycled context keeps */

typedef struct sched_copy {
    loom_tensor *base;  /* source base (another device) */
    loom_tensor desc;   /* staging copy on the run's device */
    int run;
    size_t offs;        /* in the device's staging area */
} sched_copy;

typedef struct sched_subst {
    loom_tensor *node;
    int k;
    loom_tensor *old;
} sched_subst;

typedef struct sched_run {
    int dev;
    int64_t start, end; /* node range */
    int64_t copy0, copy1; /* copies made at the start of the run */
} sched_run;

typedef struct be_sched {
    loom_pool *pool;
    int nth;
    void *buf[LOOM_BE_MAX_DEVICES];
    size_t buf_size[LOOM_BE_MAX_DEVICES];
    size_t planned[LOOM_BE_MAX_DEVICES]; /* last plan: total per device */
    size_t work_off[LOOM_BE_MAX_DEVICES]; /* last plan: executor work area offset */
    /* grow-only scratch */
    size_t *offs, *offs_tmp;
    int64_t cap_nodes, cap_tmp;
    sched_copy *copies;
    int64_t n_copies, cap_copies;
    loom_tensor *views;   /* scratch view descriptors over copies */
    int64_t n_views, cap_views;
    sched_subst *subst;
    int64_t n_subst, cap_subst;
    sched_run *runs;
    int64_t n_runs, cap_runs;
    loom_plan_scratch plan_scratch; /* liveness planner scratch (grow-only) */
    loom_vk_xfer *xf;               /* uploads/downloads of a Vulkan run (grow-only) */
    int64_t cap_xf;
    char *host;                     /* bounce copies between Vulkan devices + output copies */
    size_t host_size;
    size_t *out_offs;               /* per output: offset in host (SIZE_MAX = on a host device) */
    int cap_out;
    /* The graph the current plan (runs, copies, offsets, buffer sizes) is for: its
     * graph_gen and a hash of the outputs (which the planner keeps alive); 0 = none.
     * A graph computed again unchanged (a reused decode graph) skips planning. */
    uint64_t plan_gen, plan_outs;
    loom_ctx *spare;                /* a freed input-only context kept for reuse */
} be_sched;

typedef struct be_alloc {
    void *p;
    size_t size;
    int dev;
} be_alloc;

/* per-context state */
typedef struct be_ctx {
    loom_backend *be;
    be_alloc *allocs;   /* [0, n_live) in use; [n_live, n_allocs) kept from an earlier use */
    size_t n_allocs, cap_allocs, n_live;
    bool layer_allocs;  /* some allocation is counted in a layer's cache (never recycled) */
} be_ctx;

static bool grow(void **arr, int64_t *cap, int64_t need, size_t elem) {
    if (need <= *cap) return true;
    int64_t nc = *cap ? *cap : 16;
    while (nc < need) nc *= 2;
    void *p = loom_realloc(*arr, (size_t)nc * elem);
    if (!p) return false;
    *arr = p;
    *cap = nc;
    return true;
}

void be_sched_free(loom_backend *be) {
    be_sched *s = be->sched;
    if (!s) return;
    if (s->spare) {
        loom_ctx *sp = s->spare;
        s->spare = NULL;
        loom_ctx_destroy(sp);
    }
    for (int d = 0; d < be->n_devices; d++) loom_device_free(&be->devices[d], s->buf[d], s->buf_size[d]);
    loom_pool_free(s->pool);
    loom_free(s->offs);
    loom_free(s->offs_tmp);
    loom_free(s->copies);
    loom_free(s->views);
    loom_free(s->subst);
    loom_free(s->runs);
    loom_free(s->plan_scratch.ptr);
    loom_free(s->xf);
    loom_free(s->host);
    loom_free(s->out_offs);
    loom_free(s);
    be->sched = NULL;
}

void be_sched_counts(const loom_backend *be, int64_t *n_runs, int64_t *n_copies) {
    const be_sched *s = be->sched;
    *n_runs = s ? s->n_runs : 0;
    *n_copies = s ? s->n_copies : 0;
}

/* ---------------------------------------------------------------- allocation */

static loom_status bc_alloc(void *impl, loom_ctx *cctx, loom_tensor *t, bool zero) {
    be_ctx *c = impl;
    loom_backend *be = c->be;
    int layer = cctx->layer;
    int dev = layer >= 0 && layer <= be->blocks ? be->layer_dev[layer] : 0;
    size_t n = loom_tensor_nbytes(t);
    size_t sz = (size_t)be_round_up(n, LOOM_WEIGHT_ALIGN);
    if (layer < 0) {
        /* inputs: reuse a block kept from an earlier use of this (recycled) context */
        for (size_t i = c->n_live; i < c->n_allocs; i++) {
            be_alloc *ba = &c->allocs[i];
            if (ba->dev != dev || ba->size < sz) continue;
            be_alloc tmp = *ba;
            *ba = c->allocs[c->n_live];
            c->allocs[c->n_live++] = tmp;
            if (zero) memset(tmp.p, 0, n);
            t->data = tmp.p;
            t->device = dev;
            return LOOM_OK;
        }
        /* headroom so small inputs that grow a little per step (the decode mask) are reused */
        if (sz < BC_KEEP_MAX) sz = (size_t)be_round_up(sz + sz / 4, LOOM_WEIGHT_ALIGN);
    }
    if (c->n_allocs == c->cap_allocs) {
        size_t nc = c->cap_allocs ? 2 * c->cap_allocs : 64;
        be_alloc *na = loom_realloc(c->allocs, nc * sizeof *na);
        if (!na) return LOOM_ERR_NOMEM;
        c->allocs = na;
        c->cap_allocs = nc;
    }
    void *p = loom_device_alloc(&be->devices[dev], sz);
    if (layer >= 0) be_account_cache(be, layer, sz, p != NULL);
    if (!p) {
        loom_ctx_set_error(cctx, LOOM_ERR_NOMEM, "device %s: cannot allocate %zu bytes for layer %d",
                           be->devices[dev].name, sz, layer);
        return LOOM_ERR_NOMEM;
    }
    /* fresh mappings read as zeros; layer tensors (the KV cache) are written anyway, so
     * their pages are faulted in here rather than by decode steps (about 5 first-touch
     * faults per token on the 1.1B test model otherwise) */
    if (!loom_device_is_host(&be->devices[dev])) {
        t->flags |= LOOM_TF_DEVMEM;
        if (zero) {
            loom_status zs = loom_device_fill_zero(&be->devices[dev], p, n);
            if (zs) {
                loom_device_free(&be->devices[dev], p, sz);
                loom_ctx_set_error(cctx, zs, "device %s: cannot clear %zu bytes for layer %d",
                                   be->devices[dev].name, n, layer);
                return zs;
            }
        }
    } else if (zero && (layer >= 0 || !loom_device_alloc_zeroed(sz))) {
        memset(p, 0, n);
    }
    c->allocs[c->n_allocs++] = (be_alloc){p, sz, dev};
    if (c->n_allocs - 1 != c->n_live) { /* keep the live blocks first */
        be_alloc tmp = c->allocs[c->n_allocs - 1];
        c->allocs[c->n_allocs - 1] = c->allocs[c->n_live];
        c->allocs[c->n_live] = tmp;
    }
    c->n_live++;
    if (layer >= 0) c->layer_allocs = true;
    t->data = p;
    t->device = dev;
    return LOOM_OK;
}

static bool bc_layer_valid(void *impl, int layer) {
    be_ctx *c = impl;
    return layer >= 0 && layer <= c->be->blocks;
}

static int bc_layer_device(void *impl, int layer) {
    be_ctx *c = impl;
    return layer >= 0 && layer <= c->be->blocks ? c->be->layer_dev[layer] : 0;
}

/* Keep a freed context whose memory is all inputs (one per backend) for the next
 * loom_backend_ctx_new: the per-token path then allocates nothing once warm. */
static bool bc_recycle(void *impl, loom_ctx *ctx) {
    be_ctx *c = impl;
    be_sched *s = c->be->sched;
    if (!s || s->spare || c->layer_allocs) return false;
    /* keep only small blocks (decode inputs); big ones (prompt masks) are not held */
    size_t k = 0;
    for (size_t i = 0; i < c->n_allocs; i++) {
        be_alloc *ba = &c->allocs[i];
        if (ba->size > BC_KEEP_MAX) loom_device_free(&c->be->devices[ba->dev], ba->p, ba->size);
        else c->allocs[k++] = *ba;
    }
    c->n_allocs = k;
    c->n_live = 0;
    s->spare = ctx;
    return true;
}

static void bc_free(void *impl, loom_ctx *ctx) {
    (void)ctx;
    be_ctx *c = impl;
    for (size_t i = 0; i < c->n_allocs; i++)
        loom_device_free(&c->be->devices[c->allocs[i].dev], c->allocs[i].p, c->allocs[i].size);
    loom_free(c->allocs);
    loom_free(c);
}

/* ---------------------------------------------------------------- splitting */

static bool in_graph(const loom_graph *g, const loom_tensor *t) {
    return t->graph_idx >= 0 && t->graph_idx < g->n_nodes && g->nodes[t->graph_idx] == t;
}

/* Device holding a base tensor's memory. */
static int base_dev(const loom_graph *g, const loom_tensor *b) {
    if (in_graph(g, b)) return b->sched_dev >= 0 ? b->sched_dev : 0;
    return b->device;
}

static void assign_devices(loom_backend *be, loom_graph *g) {
    for (int64_t i = 0; i < g->n_nodes; i++) {
        loom_tensor *t = g->nodes[i];
        int dev = -1;
        if (t->view_src) {
            dev = base_dev(g, t->view_src);
        } else {
            for (int k = 0; k < LOOM_MAX_SRC && dev < 0; k++) {
                if (!t->src[k]) continue;
                loom_tensor *b = loom_tensor_base(t->src[k]);
                if ((b->flags & LOOM_TF_WEIGHT) && !in_graph(g, b)) dev = b->device;
            }
            for (int k = 0; k < LOOM_MAX_SRC && dev < 0; k++)
                if (t->src[k]) dev = base_dev(g, loom_tensor_base(t->src[k]));
        }
        if (dev < 0 || dev >= be->n_devices) dev = 0;
        /* what the Vulkan device cannot run goes to the CPU (not in-place nodes: they
         * write into the device's memory; sched_plan reports them) */
        if (dev > 0 && !t->view_src && be->devices[dev].vk && !loom_vk_supports(be->devices[dev].vk, t)) dev = 0;
        t->sched_dev = dev;
    }
}

static bool filter_dev(const loom_tensor *t, void *user) { return t->sched_dev == *(int *)user; }

/* Split into runs, find cross-device copies, plan every device's memory and make
 * sure the buffers are big enough. */
static loom_status sched_plan(loom_backend *be, loom_ctx *r) {
    be_sched *s = be->sched;
    loom_graph *g = loom_ctx_graph(r);
    int64_t n = g->n_nodes;
    if (!grow((void **)&s->offs, &s->cap_nodes, n + 1, sizeof *s->offs)) goto oom;
    if (!grow((void **)&s->offs_tmp, &s->cap_tmp, n + 1, sizeof *s->offs_tmp)) goto oom;
    assign_devices(be, g);

    /* runs and the copies each run needs */
    s->n_runs = s->n_copies = 0;
    for (int64_t i = 0; i < n; i++) {
        loom_tensor *t = g->nodes[i];
        const loom_device *td = &be->devices[t->sched_dev];
        if (td->vk && t->op != LOOM_OP_VIEW && !loom_vk_supports(td->vk, t)) {
            char dsc[128];
            loom_ctx_set_error(r, LOOM_ERR_UNSUPPORTED, "device %s cannot run %s into its memory (%s)", td->name,
                               loom_op_name(t->op), loom_tensor_describe(t, dsc, sizeof dsc));
            return LOOM_ERR_UNSUPPORTED;
        }
        if (s->n_runs == 0 || s->runs[s->n_runs - 1].dev != t->sched_dev) {
            if (!grow((void **)&s->runs, &s->cap_runs, s->n_runs + 1, sizeof *s->runs)) goto oom;
            s->runs[s->n_runs++] = (sched_run){t->sched_dev, i, i, s->n_copies, s->n_copies};
        }
        sched_run *run = &s->runs[s->n_runs - 1];
        run->end = i + 1;
        if (t->op == LOOM_OP_VIEW) continue; /* no compute: data follows the base */
        for (int k = 0; k < LOOM_MAX_SRC; k++) {
            if (!t->src[k]) continue;
            loom_tensor *b = loom_tensor_base(t->src[k]);
            if (base_dev(g, b) == t->sched_dev || loom_tensor_nbytes(b) == 0) continue;
            bool have = false;
            for (int64_t c = run->copy0; c < s->n_copies; c++)
                if (s->copies[c].base == b) have = true;
            if (have) continue;
            if (!grow((void **)&s->copies, &s->cap_copies, s->n_copies + 1, sizeof *s->copies)) goto oom;
            sched_copy *cp = &s->copies[s->n_copies++];
            memset(cp, 0, sizeof *cp);
            cp->base = b;
            cp->run = (int)(s->n_runs - 1);
            run->copy1 = s->n_copies;
        }
    }

    /* memory per device: [liveness plan | staging | executor work] */
    for (int d = 0; d < be->n_devices; d++) {
        size_t total = 0;
        loom_status st = loom_plan_graph_ex(g, filter_dev, &d, SCHED_ALIGN, s->offs_tmp, &total, &s->plan_scratch);
        if (st) {
            loom_ctx_set_error(r, st, "reserve: planning %lld nodes for %s failed", (long long)n,
                               be->devices[d].name);
            return st;
        }
        for (int64_t i = 0; i < n; i++)
            if (g->nodes[i]->sched_dev == d) s->offs[i] = s->offs_tmp[i];
        size_t stage = 0;
        for (int64_t c = 0; c < s->n_copies; c++) {
            if (s->runs[s->copies[c].run].dev != d) continue;
            size_t nb = loom_tensor_nbytes(s->copies[c].base);
            s->copies[c].offs = total + stage;
            stage += (nb + SCHED_ALIGN - 1) & ~(size_t)(SCHED_ALIGN - 1);
        }
        size_t work = 0;
        for (int64_t ri = 0; ri < s->n_runs; ri++) {
            if (s->runs[ri].dev != d) continue;
            const int64_t rn = s->runs[ri].end - s->runs[ri].start;
            size_t w = be->devices[d].vk ? loom_vk_work_size(be->devices[d].vk, g->nodes + s->runs[ri].start, rn)
                                         : loom_cpu_graph_work_size(g->nodes + s->runs[ri].start, rn, s->nth);
            if (w == SIZE_MAX) {
                loom_ctx_set_error(r, LOOM_ERR_RANGE, "reserve: work buffer size overflow");
                return LOOM_ERR_RANGE;
            }
            if (w > work) work = w;
        }
        work = (work + SCHED_ALIGN - 1) & ~(size_t)(SCHED_ALIGN - 1);
        s->work_off[d] = total + stage;
        s->planned[d] = total + stage + work;
        if (s->planned[d] < total) {
            loom_ctx_set_error(r, LOOM_ERR_RANGE, "reserve: compute size overflow");
            return LOOM_ERR_RANGE;
        }
        if (be->devices[d].chunk && s->planned[d] > be->devices[d].chunk) {
            /* one device memory piece: a planned tensor must not cross two */
            loom_memory *gm = &be->mem.devices[d].graph;
            gm->size = s->planned[d];
            gm->status = LOOM_ALLOC_FAILED;
            loom_ctx_set_error(r, LOOM_ERR_NOMEM,
                               "device %s: a %zu-byte compute buffer exceeds its largest allocation (%llu bytes); "
                               "use a smaller batch", be->devices[d].name, s->planned[d],
                               (unsigned long long)be->devices[d].chunk);
            return LOOM_ERR_NOMEM;
        }
    }

    /* grow buffers and record graph memory (max over reserves: buffers never shrink) */
    loom_status res = LOOM_OK;
    for (int d = 0; d < be->n_devices; d++) {
        loom_memory *gm = &be->mem.devices[d].graph;
        size_t need = s->planned[d];
        if (need > s->buf_size[d]) {
            void *nb = loom_device_alloc(&be->devices[d], need);
            if (!nb) {
                gm->size = need;
                gm->status = LOOM_ALLOC_FAILED;
                if (!res) {
                    loom_ctx_set_error(r, LOOM_ERR_NOMEM,
                                       "device %s: cannot allocate a %zu-byte compute buffer",
                                       be->devices[d].name, need);
                    res = LOOM_ERR_NOMEM;
                }
                continue;
            }
            loom_device_free(&be->devices[d], s->buf[d], s->buf_size[d]);
            s->buf[d] = nb;
            s->buf_size[d] = need;
        }
        gm->size = s->buf_size[d];
        gm->status = s->buf_size[d] ? LOOM_ALLOC_ALLOCATED : LOOM_ALLOC_UNALLOCATED;
    }
    return res;
oom:
    loom_ctx_set_error(r, LOOM_ERR_NOMEM, "scheduler: out of host memory");
    return LOOM_ERR_NOMEM;
}

static loom_status bc_reserve(void *impl, loom_ctx *r) {
    be_ctx *c = impl;
    ((be_sched *)c->be->sched)->plan_gen = 0; /* a reserve plan has no outputs: never reused */
    return sched_plan(c->be, r);
}

typedef struct abort_wrap {
    loom_backend *be;
    loom_abort_cb cb;
    void *user;
} abort_wrap;

static bool abort_fn(void *u) {
    abort_wrap *a = u;
    if (atomic_load(&a->be->cancel)) return true;
    return a->cb ? a->cb(a->user) : false;
}

/* The staging copy of src's base in the run, or NULL. */
static sched_copy *run_copy(be_sched *s, const sched_run *run, const loom_tensor *b) {
    sched_copy *cp = NULL;
    for (int64_t ci = run->copy0; ci < run->copy1; ci++)
        if (s->copies[ci].base == b) cp = &s->copies[ci];
    return cp;
}

/* Point node->src[k] at the staging copy (or a view of it) while the run executes. The
 * views array is sized for the whole run first: nodes point into it, so it must not
 * move while they do (a run with more views than its capacity, e.g. 40 layers'
 * attention reading views of one staged mask, left the first ones dangling). */
static loom_status substitute(be_sched *s, loom_graph *g, sched_run *run) {
    int64_t n_view = 0;
    for (int64_t i = run->start; i < run->end; i++) {
        const loom_tensor *t = g->nodes[i];
        if (t->op == LOOM_OP_VIEW) continue;
        for (int k = 0; k < LOOM_MAX_SRC; k++)
            if (t->src[k] && t->src[k] != loom_tensor_base(t->src[k]) && run_copy(s, run, loom_tensor_base(t->src[k])))
                n_view++;
    }
    if (!grow((void **)&s->views, &s->cap_views, s->n_views + n_view, sizeof *s->views)) return LOOM_ERR_NOMEM;
    for (int64_t i = run->start; i < run->end; i++) {
        loom_tensor *t = g->nodes[i];
        if (t->op == LOOM_OP_VIEW) continue;
        for (int k = 0; k < LOOM_MAX_SRC; k++) {
            loom_tensor *src = t->src[k];
            if (!src) continue;
            loom_tensor *b = loom_tensor_base(src);
            sched_copy *cp = run_copy(s, run, b);
            if (!cp) continue;
            loom_tensor *rep = &cp->desc;
            if (src != b) {
                rep = &s->views[s->n_views++]; /* room made above */
                *rep = *src;
                rep->view_src = &cp->desc;
                rep->data = (char *)cp->desc.data + src->view_offs;
            }
            if (!grow((void **)&s->subst, &s->cap_subst, s->n_subst + 1, sizeof *s->subst))
                return LOOM_ERR_NOMEM;
            s->subst[s->n_subst++] = (sched_subst){t, k, src};
            t->src[k] = rep;
        }
    }
    return LOOM_OK;
}

static void restore(be_sched *s) {
    for (int64_t i = s->n_subst - 1; i >= 0; i--) s->subst[i].node->src[s->subst[i].k] = s->subst[i].old;
    s->n_subst = 0;
}

static loom_status bc_compute(void *impl, loom_ctx *r, int n_out, loom_tensor *const *outs) {
    be_ctx *c = impl;
    loom_backend *be = c->be;
    be_sched *s = be->sched;
    atomic_store(&be->cancel, 0); /* a cancel applies to the compute in progress */
    uint64_t oh = 0x9E3779B97F4A7C15ull ^ (uint64_t)n_out;
    for (int i = 0; i < n_out; i++) oh = (oh ^ (uint64_t)(uintptr_t)outs[i]) * 0x100000001B3ull;
    loom_status st = LOOM_OK;
    if (s->plan_gen != r->graph_gen || s->plan_outs != oh || !r->graph_gen) {
        s->plan_gen = 0;
        st = sched_plan(be, r);
        if (st) return st;
        s->plan_gen = r->graph_gen;
        s->plan_outs = oh;
    }
    loom_graph *g = loom_ctx_graph(r);
    for (int64_t i = 0; i < g->n_nodes; i++) {
        loom_tensor *t = g->nodes[i];
        if (s->offs[i] != SIZE_MAX) t->data = (char *)s->buf[t->sched_dev] + s->offs[i];
    }
    for (int64_t ci = 0; ci < s->n_copies; ci++) {
        sched_copy *cp = &s->copies[ci];
        int d = s->runs[cp->run].dev;
        cp->desc = *cp->base;
        cp->desc.view_src = NULL;
        cp->desc.view_offs = 0;
        cp->desc.op = LOOM_OP_NONE; /* a leaf for the executor */
        memset(cp->desc.src, 0, sizeof cp->desc.src);
        cp->desc.device = d;
        cp->desc.graph_idx = -1;
        cp->desc.data = (char *)s->buf[d] + cp->offs;
    }
    abort_wrap aw = {be, r->abort_cb, r->abort_user};
    loom_error err = {0};
    s->n_views = 0;
    /* host area: bounce copies between two Vulkan devices, then copies of the outputs
     * that live on Vulkan devices (grow-only) */
    size_t need = 0;
    for (int64_t ci = 0; ci < s->n_copies; ci++) {
        const sched_copy *cp = &s->copies[ci];
        if (be->devices[s->runs[cp->run].dev].vk && be->devices[base_dev(g, cp->base)].vk)
            need += (loom_tensor_nbytes(cp->base) + 63) & ~(size_t)63;
    }
    if (n_out > s->cap_out) {
        size_t *no = loom_realloc(s->out_offs, (size_t)n_out * sizeof *no);
        if (!no) {
            loom_ctx_set_error(r, LOOM_ERR_NOMEM, "scheduler: out of host memory");
            return LOOM_ERR_NOMEM;
        }
        s->out_offs = no;
        s->cap_out = n_out;
    }
    int last_run[LOOM_BE_MAX_DEVICES];
    for (int d = 0; d < be->n_devices; d++) last_run[d] = -1;
    for (int64_t ri = 0; ri < s->n_runs; ri++) last_run[s->runs[ri].dev] = (int)ri;
    for (int i = 0; i < n_out; i++) {
        loom_tensor *b = loom_tensor_base(outs[i]);
        int od = base_dev(g, b);
        s->out_offs[i] = SIZE_MAX;
        /* a leaf stays where it is (read through tensor_io) */
        if (!be->devices[od].vk || !loom_tensor_nbytes(outs[i]) || outs[i]->op == LOOM_OP_NONE) continue;
        s->out_offs[i] = need;
        need += (loom_tensor_span(outs[i]) + 63) & ~(size_t)63;
    }
    if (need > s->host_size) {
        char *nh = loom_realloc(s->host, need);
        if (!nh) {
            loom_ctx_set_error(r, LOOM_ERR_NOMEM, "scheduler: out of host memory (%zu bytes of output copies)", need);
            return LOOM_ERR_NOMEM;
        }
        s->host = nh;
        s->host_size = need;
    }
    size_t bounce_at = 0;
    for (int64_t ri = 0; ri < s->n_runs && !st; ri++) {
        sched_run *run = &s->runs[ri];
        loom_device *rd = &be->devices[run->dev];
        if (abort_fn(&aw)) {
            st = LOOM_ERR_CANCELLED;
            break;
        }
        int64_t n_up = 0;
        for (int64_t ci = run->copy0; ci < run->copy1 && !st; ci++) {
            sched_copy *cp = &s->copies[ci];
            const size_t nb = loom_tensor_nbytes(cp->base);
            if (!cp->base->data) {
                char d[128];
                loom_ctx_set_error(r, LOOM_ERR_INVALID_ARG, "compute: input %s has no data",
                                   loom_tensor_describe(cp->base, d, sizeof d));
                st = LOOM_ERR_INVALID_ARG;
                break;
            }
            loom_device *sd = &be->devices[base_dev(g, cp->base)];
            if (!rd->vk) { /* into host memory (from a Vulkan device: a synchronous read) */
                st = loom_device_copy(rd, cp->desc.data, sd, cp->base->data, nb, NULL);
                continue;
            }
            const void *src = cp->base->data;
            if (sd->vk) { /* another Vulkan device: through host memory */
                st = loom_device_copy_out(sd, s->host + bounce_at, src, nb);
                src = s->host + bounce_at;
                bounce_at += (nb + 63) & ~(size_t)63;
            }
            if (!grow((void **)&s->xf, &s->cap_xf, n_up + 1, sizeof *s->xf)) st = LOOM_ERR_NOMEM;
            else s->xf[n_up++] = (loom_vk_xfer){cp->desc.data, (void *)src, nb};
        }
        if (st) {
            loom_ctx_set_error(r, st, "compute: copying an input to %s failed (%s)", rd->name, loom_status_name(st));
            break;
        }
        st = substitute(s, g, run);
        if (st) {
            restore(s);
            loom_ctx_set_error(r, st, "scheduler: out of host memory");
            break;
        }
        /* the executor's work area follows the plan and the staging area */
        size_t wbeg = s->work_off[run->dev];
        size_t wsize = s->planned[run->dev] - wbeg;
        void *wdata = wsize ? (char *)s->buf[run->dev] + wbeg : NULL;
        if (rd->vk) {
            /* the device's last run also brings the outputs that live on it back */
            int64_t n_dn = 0;
            for (int i = 0; i < n_out && last_run[run->dev] == (int)ri; i++) {
                if (s->out_offs[i] == SIZE_MAX) continue;
                loom_tensor *o = outs[i], *b = loom_tensor_base(o);
                if (base_dev(g, b) != run->dev) continue;
                if (!grow((void **)&s->xf, &s->cap_xf, n_up + n_dn + 1, sizeof *s->xf)) {
                    st = LOOM_ERR_NOMEM;
                    break;
                }
                void *dp = o->view_src ? (char *)b->data + o->view_offs : o->data;
                s->xf[n_up + n_dn++] = (loom_vk_xfer){dp, s->host + s->out_offs[i], loom_tensor_span(o)};
            }
            if (!st) {
                loom_vk_run_desc rdsc = {.nodes = g->nodes + run->start,
                                         .n_nodes = run->end - run->start,
                                         .up = s->xf,
                                         .n_up = n_up,
                                         .down = s->xf + n_up,
                                         .n_down = n_dn,
                                         .work = wdata,
                                         .work_size = wsize,
                                         .abort_cb = abort_fn,
                                         .abort_user = &aw,
                                         .eval_cb = r->eval_cb,
                                         .eval_user = r->eval_user};
                st = loom_vk_run(rd->vk, &rdsc, &err);
            } else {
                loom_ctx_set_error(r, st, "scheduler: out of host memory");
            }
        } else {
            st = loom_cpu_compute_nodes(s->pool, s->nth, g->nodes + run->start, run->end - run->start, wdata,
                                        wsize, abort_fn, &aw, r->eval_cb, r->eval_user, &err);
        }
        restore(s);
    }
    /* outputs on Vulkan devices: read from the host copies (a leaf or a tensor no run of
     * its device produced is read now) */
    for (int i = 0; i < n_out && !st; i++) {
        if (s->out_offs[i] == SIZE_MAX) continue;
        loom_tensor *o = outs[i], *b = loom_tensor_base(o);
        const int od = base_dev(g, b);
        char *host = s->host + s->out_offs[i];
        if (last_run[od] < 0) {
            void *dp = o->view_src ? (char *)b->data + o->view_offs : o->data;
            st = loom_device_copy_out(&be->devices[od], host, dp, loom_tensor_span(o));
            if (st) {
                loom_ctx_set_error(r, st, "compute: reading an output from %s failed", be->devices[od].name);
                break;
            }
        }
        o->data = host;
    }
    /* only the requested outputs stay readable */
    for (int64_t i = 0; i < g->n_nodes; i++) {
        loom_tensor *t = g->nodes[i];
        loom_tensor *b = loom_tensor_base(t);
        if (b->op != LOOM_OP_NONE && !(t->flags & LOOM_TF_OUTPUT)) t->data = NULL;
    }
    if (st && st != LOOM_ERR_CANCELLED && err.status) loom_ctx_set_error(r, st, "%s", err.msg);
    return st;
}

/* Bytes of a tensor in device memory (LOOM_TF_DEVMEM base) from/to host memory. */
static loom_status bc_tensor_io(void *impl, loom_tensor *t, void *host, size_t nbytes, bool write) {
    be_ctx *c = impl;
    loom_backend *be = c->be;
    loom_tensor *b = loom_tensor_base(t);
    const int dev = b->device;
    if (dev < 0 || dev >= be->n_devices) return LOOM_ERR_INVALID_ARG;
    loom_device *d = &be->devices[dev];
    const bool on_dev = d->vk && loom_vk_owns(d->vk, t->data);
    if (loom_tensor_is_contiguous(t)) {
        if (!on_dev) {
            if (write) memcpy(t->data, host, nbytes);
            else memcpy(host, t->data, nbytes);
            return LOOM_OK;
        }
        return write ? loom_device_copy_in(d, t->data, host, nbytes) : loom_device_copy_out(d, host, t->data, nbytes);
    }
    if (write || !loom_tensor_is_contiguous_rows(t)) return LOOM_ERR_UNSUPPORTED;
    const size_t sp = loom_tensor_span(t), row = loom_row_size(t);
    char *tmp = on_dev ? loom_malloc(sp) : (char *)t->data;
    if (!tmp) return LOOM_ERR_NOMEM;
    loom_status st = on_dev ? loom_device_copy_out(d, tmp, t->data, sp) : LOOM_OK;
    char *o = host;
    for (int64_t i3 = 0; i3 < t->ne[3] && !st; i3++)
        for (int64_t i2 = 0; i2 < t->ne[2]; i2++)
            for (int64_t i1 = 0; i1 < t->ne[1]; i1++) {
                memcpy(o, tmp + (size_t)i1 * t->nb[1] + (size_t)i2 * t->nb[2] + (size_t)i3 * t->nb[3], row);
                o += row;
            }
    if (on_dev) loom_free(tmp);
    return st;
}

static size_t bc_compute_bytes(void *impl, const loom_ctx *r) {
    (void)r;
    be_ctx *c = impl;
    be_sched *s = c->be->sched;
    return s ? s->planned[0] : 0;
}

static const loom_exec_iface g_be_iface = {
    .alloc_tensor = bc_alloc,
    .compute = bc_compute,
    .reserve = bc_reserve,
    .compute_bytes = bc_compute_bytes,
    .layer_valid = bc_layer_valid,
    .layer_device = bc_layer_device,
    .ctx_free = bc_free,
    .recycle = bc_recycle,
    .tensor_io = bc_tensor_io,
};

void loom_backend_warm(loom_backend *be) {
    if (be && be->sched) loom_pool_warm(((be_sched *)be->sched)->pool);
}

loom_status loom_backend_ctx_new(loom_backend *be, int64_t max_nodes, loom_ctx **out, loom_error *err) {
    if (out) *out = NULL;
    if (!be || !out) return loom_error_set(err, LOOM_ERR_INVALID_ARG, "backend ctx: NULL argument");
    if (be->failed)
        return loom_error_set(err, LOOM_ERR_INVALID_ARG, "backend ctx: the backend failed to allocate its weights");
    if (be->dry_run)
        return loom_error_set(err, LOOM_ERR_INVALID_ARG,
                              "backend ctx: dry-run backend (use loom_backend_account_cache/_graph)");
    if (max_nodes < 0 || max_nodes > be->max_nodes)
        return loom_error_set(err, LOOM_ERR_INVALID_ARG,
                              "requested number of graph nodes (%lld) exceeds maximum (%lld)",
                              (long long)max_nodes, (long long)be->max_nodes);
    if (max_nodes == 0) max_nodes = be->max_nodes;
    be_sched *bs = be->sched;
    /* a compute follows every context: let sleeping workers wake while it is built */
    if (bs) loom_pool_warm(bs->pool);
    if (bs && bs->spare) {
        loom_ctx *sp = bs->spare;
        if (sp->params.max_nodes == max_nodes && sp->params.flash_attn == be->params.flash_attn) {
            bs->spare = NULL;
            loom_ctx_reset(sp);
            *out = sp;
            return LOOM_OK;
        }
    }
    if (!be->sched) {
        be_sched *s = loom_calloc(1, sizeof *s);
        if (!s) return loom_error_set(err, LOOM_ERR_NOMEM, "backend ctx: out of memory");
        loom_status st = loom_pool_new(be->params.n_threads, &s->pool, err);
        if (st) {
            loom_free(s);
            return st;
        }
        s->nth = loom_pool_size(s->pool);
        be->sched = s;
    }
    be_ctx *c = loom_calloc(1, sizeof *c);
    if (!c) return loom_error_set(err, LOOM_ERR_NOMEM, "backend ctx: out of memory");
    c->be = be;
    loom_ctx_params p = loom_ctx_default_params();
    p.max_nodes = max_nodes;
    p.flash_attn = be->params.flash_attn;
    loom_status st = loom_ctx_new_with(&g_be_iface, c, &p, out, err);
    if (st) {
        loom_free(c);
        return st;
    }
    return LOOM_OK;
}
