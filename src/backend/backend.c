/* loom_backend_open/close: devices, placement, classification, accounting and
 * weight buffers (contract §3). */
#include "backend/backend_internal.h"
#include "backend/placement.h"
#include "backend/vulkan/vk.h"
#include "cpu/kernels.h"
#include "cpu/ops.h"
#include "quant/alloc.h"
#include "quant/repack.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

loom_backend_params loom_backend_default_params(void) {
    loom_backend_params p;
    memset(&p, 0, sizeof p);
    return p;
}

/* ---------------------------------------------------------------- name table */

static uint64_t name_hash(const char *s) {
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

int64_t be_find(const loom_backend *be, const char *name) {
    if (!be->hash_cap || !name) return -1;
    uint64_t m = be->hash_cap - 1;
    for (uint64_t i = name_hash(name) & m;; i = (i + 1) & m) {
        int64_t v = be->hash[i];
        if (!v) return -1;
        if (!strcmp(be->w[v - 1].name, name)) return v - 1;
    }
}

/* Insert or replace (the latest creation wins, as in the contract's map). */
static void hash_put(loom_backend *be, int64_t idx) {
    uint64_t m = be->hash_cap - 1;
    for (uint64_t i = name_hash(be->w[idx].name) & m;; i = (i + 1) & m) {
        int64_t v = be->hash[i];
        if (!v || !strcmp(be->w[v - 1].name, be->w[idx].name)) {
            be->hash[i] = idx + 1;
            return;
        }
    }
}

/* ---------------------------------------------------------------- memory report */

static loom_status mem_init(loom_backend *be) {
    loom_backend_memory *m = &be->mem;
    m->n_devices = be->n_devices;
    m->devices = loom_calloc((size_t)be->n_devices, sizeof *m->devices);
    if (!m->devices) return LOOM_ERR_NOMEM;
    int nl = be->blocks + 1;
    for (int d = 0; d < be->n_devices; d++) {
        loom_device_memory *dm = &m->devices[d];
        const loom_device *dev = &be->devices[d];
        snprintf(dm->name, sizeof dm->name, "%s", dev->name);
        snprintf(dm->id, sizeof dm->id, "%s", dev->id);
        dm->kind = dev->kind;
        dm->total_bytes = dev->total_bytes;
        dm->free_bytes = dev->free_at_open;
        dm->n_layers = nl;
        dm->weights = loom_calloc((size_t)nl, sizeof *dm->weights);
        dm->cache = loom_calloc((size_t)nl, sizeof *dm->cache);
        if (!dm->weights || !dm->cache) return LOOM_ERR_NOMEM;
    }
    return LOOM_OK;
}

void loom_backend_memory_free(loom_backend_memory *m) {
    if (!m) return;
    if (m->devices)
        for (int d = 0; d < m->n_devices; d++) {
            loom_free(m->devices[d].weights);
            loom_free(m->devices[d].cache);
        }
    loom_free(m->devices);
    memset(m, 0, sizeof *m);
}

loom_status loom_backend_memory_get(const loom_backend *be, loom_backend_memory *out) {
    if (!out) return LOOM_ERR_INVALID_ARG;
    memset(out, 0, sizeof *out);
    if (!be) return LOOM_ERR_INVALID_ARG;
    const loom_backend_memory *m = &be->mem;
    out->input_weights = m->input_weights;
    out->devices = loom_calloc((size_t)m->n_devices, sizeof *out->devices);
    if (!out->devices) return LOOM_ERR_NOMEM;
    out->n_devices = m->n_devices;
    for (int d = 0; d < m->n_devices; d++) {
        loom_device_memory *o = &out->devices[d];
        *o = m->devices[d];
        size_t n = (size_t)m->devices[d].n_layers;
        o->weights = loom_malloc(n * sizeof *o->weights);
        o->cache = loom_malloc(n * sizeof *o->cache);
        if (!o->weights || !o->cache) {
            loom_backend_memory_free(out);
            return LOOM_ERR_NOMEM;
        }
        memcpy(o->weights, m->devices[d].weights, n * sizeof *o->weights);
        memcpy(o->cache, m->devices[d].cache, n * sizeof *o->cache);
    }
    return LOOM_OK;
}

uint64_t loom_backend_memory_total(const loom_backend_memory *m) {
    if (!m) return 0;
    uint64_t s = m->input_weights.size;
    for (int d = 0; d < m->n_devices; d++) {
        const loom_device_memory *dm = &m->devices[d];
        for (int i = 0; i < dm->n_layers; i++) s += dm->weights[i].size + dm->cache[i].size;
        s += dm->graph.size;
    }
    return s;
}

void be_account_cache(loom_backend *be, int layer, uint64_t size, bool ok) {
    if (!be || layer < 0 || layer > be->blocks) return;
    loom_memory *c = &be->mem.devices[be->layer_dev[layer]].cache[layer];
    c->size += size;
    if (!ok) c->status = LOOM_ALLOC_FAILED;
    else if (c->status != LOOM_ALLOC_FAILED && !be->dry_run) c->status = LOOM_ALLOC_ALLOCATED;
}

loom_status loom_backend_account_cache(loom_backend *be, int layer, uint64_t bytes) {
    if (!be || layer < 0 || layer > be->blocks) return LOOM_ERR_INVALID_ARG;
    be_account_cache(be, layer, bytes, true);
    return LOOM_OK;
}

loom_status loom_backend_account_graph(loom_backend *be, int dev, uint64_t bytes) {
    if (!be || dev < 0 || dev >= be->n_devices) return LOOM_ERR_INVALID_ARG;
    loom_memory *g = &be->mem.devices[dev].graph;
    if (bytes > g->size) g->size = bytes;
    return LOOM_OK;
}

/* A stack tensor of the given type and shape, contiguous (no data: sizing only). */
static void work_tensor(loom_tensor *t, loom_type type, int64_t ne0, int64_t ne1, int64_t ne2) {
    memset(t, 0, sizeof *t);
    t->type = type;
    t->ne[0] = ne0;
    t->ne[1] = ne1;
    t->ne[2] = ne2;
    t->ne[3] = 1;
    t->nb[0] = loom_type_size(type);
    for (int i = 1; i < LOOM_MAX_DIMS; i++) t->nb[i] = t->nb[i - 1] * (size_t)t->ne[i - 1];
}

/* n_used > 0: the expert product (mul_mat_id) of w [K, rows, experts] for n_cols tokens
 * of n_used (slot, token) pairs each, with per-slot activations (the larger case: the
 * shared-activation gate/up products convert the same rows per pair). */
static uint64_t mul_mat_work(const loom_backend *be, int dev, const loom_tensor *w, int64_t n_used, int64_t n_cols) {
    if (!be || !w || dev < 0 || dev >= be->n_devices || n_cols <= 0) return 0;
    if (be->devices[dev].vk) return 0; /* Vulkan sizes its work per graph (loom_vk_work_size) */
    const int nth = be->n_threads > 0 ? be->n_threads : 1;
    loom_tensor act, ids, dst;
    if (n_used > 0) {
        if (w->ne[2] < 1) return 0;
        work_tensor(&act, LOOM_TYPE_F32, w->ne[0], n_used, n_cols);
        work_tensor(&ids, LOOM_TYPE_I32, n_used, n_cols, 1);
        work_tensor(&dst, LOOM_TYPE_F32, w->ne[1], n_used, n_cols);
        dst.op = LOOM_OP_MUL_MAT_ID;
        dst.src[2] = &ids;
    } else {
        work_tensor(&act, LOOM_TYPE_F32, w->ne[0], n_cols, 1);
        work_tensor(&dst, LOOM_TYPE_F32, w->ne[1], n_cols, 1);
        dst.op = LOOM_OP_MUL_MAT;
    }
    dst.src[0] = (loom_tensor *)w;
    dst.src[1] = &act;
    const size_t s = n_used > 0 ? loom_cpu_work_size_mul_mat_id(&dst, nth) : loom_cpu_work_size_mul_mat(&dst, nth);
    return s == SIZE_MAX ? 0 : (uint64_t)s;
}

uint64_t loom_backend_mul_mat_work(const loom_backend *be, int dev, const loom_tensor *w, int64_t n_cols) {
    return mul_mat_work(be, dev, w, 0, n_cols);
}

uint64_t loom_backend_mul_mat_id_work(const loom_backend *be, int dev, const loom_tensor *w, int64_t n_used,
                                      int64_t n_cols) {
    return n_used > 0 ? mul_mat_work(be, dev, w, n_used, n_cols) : 0;
}

/* ---------------------------------------------------------------- creation */

static loom_status add_weight(loom_backend *be, const char *name, int64_t file_index, int dev,
                              int layer, loom_error *err) {
    const loom_gguf_tensor_info *ti = loom_gguf_tensor(be->gguf, file_index);
    int64_t ex = be_find(be, name);
    if (ex >= 0 && be->w[ex].dev == dev) {
        /* dedupe: the same name in the same arena is reused (another target) */
        if (be->w[ex].nbytes != ti->size)
            return loom_error_set(err, LOOM_ERR_FORMAT,
                                  "tensor '%s' is created twice with different sizes", name);
        return LOOM_OK;
    }
    if (be->n_w == be->cap_w) return loom_error_set(err, LOOM_ERR_INTERNAL, "weight table full");
    be_weight *w = &be->w[be->n_w];
    memset(w, 0, sizeof *w);
    snprintf(w->name, sizeof w->name, "%s", name);
    w->file_index = file_index;
    w->dev = dev;
    w->layer = layer;
    w->nbytes = ti->size;
    loom_tensor *t = &w->t;
    t->type = ti->type;
    t->op = LOOM_OP_NONE;
    for (int k = 0; k < LOOM_MAX_DIMS; k++) t->ne[k] = ti->ne[k];
    const loom_type_info *info = loom_type_get((uint32_t)ti->type);
    if (!info || ti->ne[0] % info->block_size)
        return loom_error_set(err, LOOM_ERR_FORMAT, "tensor '%s': bad type or row size", name);
    t->nb[0] = info->block_bytes;
    t->nb[1] = (size_t)(ti->ne[0] / info->block_size) * info->block_bytes;
    t->nb[2] = t->nb[1] * (size_t)ti->ne[1];
    t->nb[3] = t->nb[2] * (size_t)ti->ne[2];
    t->flags = LOOM_TF_WEIGHT | LOOM_TF_ALLOCATED;
    t->device = dev;
    t->layer = layer;
    t->graph_idx = -1;
    t->sched_dev = -1;
    t->plan_offs = SIZE_MAX;
    snprintf(t->name, sizeof t->name, "%s", name);

    /* accounting (§3.5): size rounded up to 32 */
    uint64_t sz = be_round_up(ti->size, LOOM_WEIGHT_ALIGN);
    if (layer < 0) be->mem.input_weights.size += sz;
    else be->mem.devices[dev].weights[layer].size += sz;
    hash_put(be, be->n_w);
    be->n_w++;
    return LOOM_OK;
}

/* Which file tensor each weight reads from, as CSR lists per file tensor. */
static loom_status build_targets(loom_backend *be) {
    be->tgt_start = loom_calloc((size_t)be->n_file + 1, sizeof *be->tgt_start);
    be->tgt = loom_malloc((size_t)(be->n_w ? be->n_w : 1) * sizeof *be->tgt);
    if (!be->tgt_start || !be->tgt) return LOOM_ERR_NOMEM;
    for (int64_t i = 0; i < be->n_w; i++) be->tgt_start[be->w[i].file_index + 1]++;
    for (int64_t f = 0; f < be->n_file; f++) be->tgt_start[f + 1] += be->tgt_start[f];
    int64_t *fill = loom_calloc((size_t)be->n_file + 1, sizeof *fill);
    if (!fill) return LOOM_ERR_NOMEM;
    for (int64_t i = 0; i < be->n_w; i++) {
        int64_t f = be->w[i].file_index;
        be->tgt[be->tgt_start[f] + fill[f]++] = i;
    }
    loom_free(fill);
    return LOOM_OK;
}

static loom_status classify_all(loom_backend *be, loom_error *err) {
    const loom_gguf *g = be->gguf;
    int out_dev = be->layer_dev[be->blocks];
    bool has_output_group = false;
    for (int64_t i = 0; i < be->n_file; i++)
        if (!strncmp(loom_gguf_tensor(g, i)->name, "output.", 7)) has_output_group = true;
    char nm[LOOM_GGUF_MAX_NAME + 32];
    for (int64_t i = 0; i < be->n_file; i++) {
        const char *name = loom_gguf_tensor(g, i)->name;
        int64_t idx;
        loom_status s = LOOM_OK;
        switch (loom_place_classify(name, &idx)) {
        case LOOM_RULE_INPUT:
            s = add_weight(be, name, i, 0, -1, err);
            if (!s && !strcmp(name, "token_embd.weight") && !has_output_group)
                s = add_weight(be, "output.weight", i, out_dev, be->blocks, err);
            break;
        case LOOM_RULE_OUTPUT:
        case LOOM_RULE_VISION:
            s = add_weight(be, name, i, out_dev, be->blocks, err);
            break;
        case LOOM_RULE_ROPE:
            for (int l = 0; l < be->blocks && !s; l++) {
                int n = snprintf(nm, sizeof nm, "blk.%d.%s", l, name);
                if (n < 0 || n >= LOOM_GGUF_MAX_NAME)
                    return loom_error_set(err, LOOM_ERR_FORMAT, "tensor '%s': per-layer name too long", name);
                s = add_weight(be, nm, i, be->layer_dev[l], l, err);
            }
            break;
        case LOOM_RULE_LAYER:
            if (idx >= be->blocks)
                return loom_error_set(err, LOOM_ERR_FORMAT,
                                      "tensor '%s': layer index %lld >= block_count %d", name,
                                      (long long)idx, be->blocks);
            s = add_weight(be, name, i, be->layer_dev[idx], (int)idx, err);
            break;
        case LOOM_RULE_NODIGIT:
            s = add_weight(be, name, i, 0, -1, err);
            break;
        }
        if (s) return s;
    }
    return LOOM_OK;
}

/* Which CPU weights are stored repacked (params.repack_filter; see loom_backend.h). */
static void choose_repack(loom_backend *be, const loom_backend_params *p) {
    if (!p->repack_filter) return;
    const loom_kernels *kt = loom_kernels_get();
    for (int64_t i = 0; i < be->n_w; i++) {
        be_weight *w = &be->w[i];
        if (w->dev != 0 || (unsigned)w->t.type >= LOOM_TYPE_COUNT || !kt->repack[w->t.type] ||
            !loom_repack_shape_ok(w->t.type, w->t.ne) || !p->repack_filter(w->name, p->repack_user))
            continue;
        w->repack = true;
        w->t.flags |= LOOM_TF_REPACKED;
    }
}

/* Weights below this size are not mapped when others of the file are read (alloc_weights). */
#define LOOM_MAP_MIN_BYTES ((uint64_t)4 << 20)

/* A CPU weight that is its file tensor (not a copy) can live in the mapping, unless it is
 * rearranged at load. */
static bool weight_mappable(const loom_backend *be, const be_weight *w) {
    const loom_gguf_tensor_info *ti = loom_gguf_tensor(be->gguf, w->file_index);
    return be->use_mmap && w->dev == 0 && !w->repack && !strcmp(w->name, ti->name) &&
           loom_gguf_tensor_data(be->gguf, w->file_index) != NULL;
}

/* Lay out and allocate one weight buffer per device (§3.6). */
static loom_status alloc_weights(loom_backend *be, loom_error *err) {
    /* When some weights are read rather than mapped (repacked, placed on another device,
     * copies), small ones are read too: faulting a small mapped tensor in can map the
     * whole large page-cache folio around it (2 MiB PMD mappings of file folios on Linux
     * 6.x ext4), i.e. file pages of its read neighbours, which then count in RSS a second
     * time (measured: +72 MiB on a 1.1B model whose 45 norms sat between repacked
     * matrices, an 11 % gap against the memory plan). */
    bool some_read = false;
    for (int64_t i = 0; i < be->n_w && !some_read; i++) some_read = !weight_mappable(be, &be->w[i]);
    for (int64_t i = 0; i < be->n_w; i++) {
        be_weight *w = &be->w[i];
        if (weight_mappable(be, w) && !(some_read && w->nbytes < LOOM_MAP_MIN_BYTES)) {
            w->mapped = true;
            continue;
        }
        uint64_t off = be->wbuf_size[w->dev], sz = be_round_up(w->nbytes, LOOM_WEIGHT_ALIGN);
        const uint64_t chunk = be->devices[w->dev].chunk;
        if (chunk && w->nbytes > chunk)
            return loom_error_set(err, LOOM_ERR_UNSUPPORTED,
                                  "tensor '%s' (%llu bytes) exceeds the largest allocation of device %s (%llu bytes)",
                                  w->name, (unsigned long long)w->nbytes, be->devices[w->dev].name,
                                  (unsigned long long)chunk);
        if (chunk && off / chunk != (off + w->nbytes - 1) / chunk) {
            /* a tensor never crosses a device memory piece: start it at the next one and
             * account the gap to its layer, in the plan and in the real layout alike */
            uint64_t next = (off / chunk + 1) * chunk;
            if (w->layer < 0) be->mem.input_weights.size += next - off;
            else be->mem.devices[w->dev].weights[w->layer].size += next - off;
            off = next;
        }
        w->offset = off;
        be->wbuf_size[w->dev] = off + sz;
    }
    loom_status first = LOOM_OK;
    for (int d = 0; d < be->n_devices; d++) {
        bool ok = true;
        if (be->wbuf_size[d] && !be->dry_run) {
            if (be->wbuf_size[d] > SIZE_MAX) ok = false;
            else be->wbuf[d] = loom_device_alloc(&be->devices[d], (size_t)be->wbuf_size[d]);
            if (!be->wbuf[d]) ok = false;
            if (!ok && !first)
                first = loom_error_set(err, LOOM_ERR_NOMEM,
                                       "device %s: cannot allocate %llu bytes of weights (capacity %llu, in use %llu)",
                                       be->devices[d].name, (unsigned long long)be->wbuf_size[d],
                                       (unsigned long long)be->devices[d].capacity,
                                       (unsigned long long)atomic_load(&be->devices[d].used));
        }
        if (be->dry_run) continue;
        loom_device_memory *dm = &be->mem.devices[d];
        for (int l = 0; l <= be->blocks; l++)
            if (dm->weights[l].size) dm->weights[l].status = ok ? LOOM_ALLOC_ALLOCATED : LOOM_ALLOC_FAILED;
        if (d == 0 && be->mem.input_weights.size)
            be->mem.input_weights.status = ok ? LOOM_ALLOC_ALLOCATED : LOOM_ALLOC_FAILED;
    }
    if (first || be->dry_run) return first;
    for (int64_t i = 0; i < be->n_w; i++) {
        be_weight *w = &be->w[i];
        w->t.data = w->mapped ? (void *)loom_gguf_tensor_data(be->gguf, w->file_index)
                              : (char *)be->wbuf[w->dev] + w->offset;
        if (!loom_device_is_host(&be->devices[w->dev])) w->t.flags |= LOOM_TF_DEVMEM;
    }
    return LOOM_OK;
}

static loom_status setup_devices(loom_backend *be, const loom_backend_params *p, loom_error *err) {
    loom_device_init_cpu(&be->devices[0]);
    be->n_devices = 1;
    /* Only what the caller passes: the library reads no environment (the CLI maps
     * LOOM_SIM_DEVICES onto these parameters). */
    const loom_sim_device *sims = p->sim_devices;
    int n_sims = p->sim_devices ? p->n_sim_devices : 0;
    if (n_sims < 0) return loom_error_set(err, LOOM_ERR_INVALID_ARG, "n_sim_devices < 0");
    if (n_sims > LOOM_BE_MAX_SIM)
        return loom_error_set(err, LOOM_ERR_INVALID_ARG, "at most %d simulated devices", LOOM_BE_MAX_SIM);
    for (int i = 0; i < n_sims; i++) {
        if (!sims[i].name[0] || !memchr(sims[i].name, '\0', sizeof sims[i].name) ||
            !strcmp(sims[i].name, "CPU"))
            return loom_error_set(err, LOOM_ERR_INVALID_ARG, "simulated device %d: bad name", i);
        loom_device_init_sim(&be->devices[be->n_devices++], &sims[i]);
    }
    /* Vulkan devices after the simulated ones, opened only when layers are offloaded
     * (instance creation loads the drivers: tens of ms and MBs a CPU-only run does not
     * need) */
    loom_vk_filter flt;
    loom_status s = loom_vk_filter_parse(p->vk_devices, &flt, err);
    if (s) return s;
    if (p->n_gpu_layers > 0) s = loom_vk_open(p, &be->vk, be->vk_note, sizeof be->vk_note, err);
    else snprintf(be->vk_note, sizeof be->vk_note, "no layers offloaded (n_gpu_layers 0)");
    if (s) return s;
    for (int j = 0; j < loom_vk_device_count(be->vk); j++) {
        if (be->n_devices >= LOOM_BE_MAX_DEVICES)
            return loom_error_set(err, LOOM_ERR_INVALID_ARG, "at most %d accelerators", LOOM_BE_MAX_DEVICES - 1);
        loom_device_init_vk(&be->devices[be->n_devices++], loom_vk_device(be->vk, j), j);
    }
    return LOOM_OK;
}

static loom_status read_block_count(loom_backend *be, loom_error *err) {
    const loom_gguf *g = be->gguf;
    loom_gguf_str s;
    be->arch[0] = '\0';
    if (loom_gguf_get_str(g, "general.architecture", &s) == LOOM_OK) {
        if (s.len >= sizeof be->arch || memchr(s.ptr, '\0', (size_t)s.len))
            return loom_error_set(err, LOOM_ERR_FORMAT, "general.architecture: bad value");
        memcpy(be->arch, s.ptr, (size_t)s.len);
        be->arch[s.len] = '\0';
    }
    char key[128];
    snprintf(key, sizeof key, "%s.block_count", be->arch);
    /* The contract reads block_count as an exact u32; Loom accepts any integer type
     * (robustness: some converters write i32/u64). Absent = 0 blocks (then any
     * tensor with a layer index is rejected below). */
    int64_t v = 0;
    loom_status st = loom_gguf_get_int(g, key, &v);
    if (st == LOOM_ERR_NOT_FOUND) v = 0;
    else if (st) return loom_error_set(err, LOOM_ERR_FORMAT, "%s: not an integer", key);
    if (v < 0 || v > 1000000)
        return loom_error_set(err, LOOM_ERR_FORMAT, "%s = %lld is out of range", key, (long long)v);
    be->blocks = (int)v;
    return LOOM_OK;
}

loom_status loom_backend_open(const char *path, const loom_backend_params *params,
                              loom_backend **out, loom_error *err) {
    if (out) *out = NULL;
    if (params && params->nomem_report) memset(params->nomem_report, 0, sizeof *params->nomem_report);
    if (!path || !out) return loom_error_set(err, LOOM_ERR_INVALID_ARG, "backend open: NULL argument");
    loom_backend_params p = params ? *params : loom_backend_default_params();
    if (p.n_threads < 0) return loom_error_set(err, LOOM_ERR_INVALID_ARG, "n_threads < 0");
    if (p.max_nodes < 0) return loom_error_set(err, LOOM_ERR_INVALID_ARG, "max_nodes < 0");
    if (p.n_tensor_split < 0 || (p.n_tensor_split > 0 && !p.tensor_split))
        return loom_error_set(err, LOOM_ERR_INVALID_ARG, "tensor_split: bad count");
    if (p.n_tensor_split > 0) {
        loom_status ss = loom_tensor_split_check(p.tensor_split, p.n_tensor_split, err);
        if (ss) return ss;
    }

    loom_backend *be = loom_calloc(1, sizeof *be);
    if (!be) return loom_error_set(err, LOOM_ERR_NOMEM, "backend open: out of memory");
    atomic_init(&be->cancel, 0);
    be->params = p;
    be->params.sim_devices = NULL;
    be->params.tensor_split = NULL;
    be->dry_run = p.dry_run;
    be->use_mmap = !p.no_mmap;
    be->n_threads = p.n_threads ? p.n_threads : loom_host_cpu_count();

    loom_status s = setup_devices(be, &p, err);
    if (!s) {
        loom_gguf_params gp = {.no_mmap = p.no_mmap};
        s = loom_gguf_open(path, &gp, &be->gguf, err);
    }
    if (!s) s = read_block_count(be, err);
    if (s) goto fail;
    be->n_file = loom_gguf_tensor_count(be->gguf);
    be->max_nodes = p.max_nodes ? p.max_nodes : (5 * be->n_file > 8192 ? 5 * be->n_file : 8192);

    /* splits and layer map (§3.2, §3.3) */
    {
        int n_gpus = be->n_devices - 1;
        int n_cap = n_gpus > p.n_tensor_split ? n_gpus : p.n_tensor_split;
        float *splits = loom_calloc((size_t)n_cap + 1, sizeof *splits);
        uint64_t free_mem[LOOM_BE_MAX_DEVICES];
        for (int j = 0; j < n_gpus; j++) free_mem[j] = loom_device_free_now(&be->devices[1 + j]);
        int n_splits = 0;
        be->layer_dev = loom_calloc((size_t)be->blocks + 1, sizeof *be->layer_dev);
        if (!splits || !be->layer_dev) {
            loom_free(splits);
            s = loom_error_set(err, LOOM_ERR_NOMEM, "backend open: out of memory");
            goto fail;
        }
        s = loom_place_splits(p.tensor_split, p.n_tensor_split, free_mem, n_gpus, splits, &n_splits);
        if (s) {
            loom_free(splits);
            s = loom_error_set(err, s, "tensor_split: proportions must be finite and >= 0");
            goto fail;
        }
        for (int i = 0; i <= be->blocks; i++)
            be->layer_dev[i] = loom_place_layer(i, be->blocks, p.n_gpu_layers, splits, n_splits, n_gpus);
        loom_free(splits);
    }

    if (mem_init(be)) {
        s = loom_error_set(err, LOOM_ERR_NOMEM, "backend open: out of memory");
        goto fail;
    }
    /* descriptor table: n_tensors + 1 (tied output) + blocks per rope tensor */
    {
        int64_t n_rope = 0;
        for (int64_t i = 0; i < be->n_file; i++) {
            int64_t idx;
            if (loom_place_classify(loom_gguf_tensor(be->gguf, i)->name, &idx) == LOOM_RULE_ROPE) n_rope++;
        }
        be->cap_w = be->n_file + 1 + n_rope * (int64_t)be->blocks;
        uint64_t hc = 16;
        while (hc < (uint64_t)be->cap_w * 2) hc <<= 1;
        be->w = loom_calloc((size_t)be->cap_w, sizeof *be->w);
        be->hash = loom_calloc(hc, sizeof *be->hash);
        be->hash_cap = hc;
        if (!be->w || !be->hash) {
            s = loom_error_set(err, LOOM_ERR_NOMEM, "backend open: out of memory");
            goto fail;
        }
    }
    s = classify_all(be, err);
    if (!s) s = build_targets(be) ? loom_error_set(err, LOOM_ERR_NOMEM, "backend open: out of memory") : LOOM_OK;
    if (s) goto fail;
    choose_repack(be, &p);
    s = alloc_weights(be, err);
    if (s == LOOM_ERR_NOMEM && p.nomem_report) {
        /* the attempted sizes and Failed statuses for the caller to re-plan with */
        if (loom_backend_memory_get(be, p.nomem_report) != LOOM_OK)
            memset(p.nomem_report, 0, sizeof *p.nomem_report);
    }
    if (s) goto fail;
    *out = be;
    return LOOM_OK;
fail:
    loom_backend_close(be);
    return s;
}

void loom_backend_close(loom_backend *be) {
    if (!be) return;
    be_sched_free(be);
    for (int d = 0; d < be->n_devices; d++)
        loom_device_free(&be->devices[d], be->wbuf[d], (size_t)be->wbuf_size[d]);
    loom_vk_close(be->vk);
    loom_backend_memory_free(&be->mem);
    loom_free(be->w);
    loom_free(be->hash);
    loom_free(be->tgt_start);
    loom_free(be->tgt);
    loom_free(be->layer_dev);
    loom_gguf_close(be->gguf);
    loom_free(be);
}

/* ---------------------------------------------------------------- queries */

const loom_gguf *loom_backend_gguf(const loom_backend *be) { return be ? be->gguf : NULL; }
const char *loom_backend_arch(const loom_backend *be) { return be ? be->arch : ""; }
int loom_backend_block_count(const loom_backend *be) { return be ? be->blocks : 0; }
bool loom_backend_flash_attn(const loom_backend *be) { return be && be->params.flash_attn; }
int64_t loom_backend_max_nodes(const loom_backend *be) { return be ? be->max_nodes : 0; }
int loom_backend_device_count(const loom_backend *be) { return be ? be->n_devices : 0; }
bool loom_backend_is_dry_run(const loom_backend *be) { return be && be->dry_run; }

const char *loom_backend_device_name(const loom_backend *be, int dev) {
    if (!be || dev < 0 || dev >= be->n_devices) return NULL;
    return be->devices[dev].name;
}

int loom_backend_layer_device(const loom_backend *be, int layer) {
    if (!be || layer < 0 || layer > be->blocks) return -1;
    return be->layer_dev[layer];
}

loom_tensor *loom_backend_get_tensor(const loom_backend *be, const char *name) {
    if (!be || !name) return NULL;
    int64_t i = be_find(be, name);
    return i < 0 ? NULL : (loom_tensor *)&be->w[i].t;
}

loom_cache_config loom_backend_cache_config(const loom_backend *be) {
    loom_cache_config c;
    if (be && be->params.flash_attn) {
        c.cache_padding = 256;
        c.permuted_v = false;
        c.mask_type = LOOM_TYPE_F16;
        c.mask_batch_padding = 64;
    } else {
        c.cache_padding = 32;
        c.permuted_v = true;
        c.mask_type = LOOM_TYPE_F32;
        c.mask_batch_padding = 1;
    }
    return c;
}

int64_t loom_backend_vk_reports(const loom_backend *be) { return be ? loom_vk_reports(be->vk) : 0; }

/* ---------------------------------------------------------------- device listing */

loom_status loom_devices_list(const loom_backend_params *params, loom_device_info *out, int max, int *n_out,
                              loom_error *err) {
    if (n_out) *n_out = 0;
    if (!out || !n_out || max < 1) return loom_error_set(err, LOOM_ERR_INVALID_ARG, "devices list: bad arguments");
    loom_backend_params p = params ? *params : loom_backend_default_params();
    int n = 0;
    loom_device_info *c = &out[n++];
    memset(c, 0, sizeof *c);
    loom_device cpu;
    loom_device_init_cpu(&cpu);
    snprintf(c->name, sizeof c->name, "CPU");
    snprintf(c->type, sizeof c->type, "cpu");
    c->kind = LOOM_DEVICE_CPU;
    c->vk_index = -1;
    c->used = true;
    c->total_bytes = cpu.total_bytes;
    c->free_bytes = cpu.free_at_open;
    snprintf(c->note, sizeof c->note, "%d threads", loom_host_cpu_count());
    for (int i = 0; p.sim_devices && i < p.n_sim_devices && n < max; i++) {
        loom_device_info *o = &out[n++];
        memset(o, 0, sizeof *o);
        snprintf(o->name, sizeof o->name, "%.31s", p.sim_devices[i].name);
        snprintf(o->id, sizeof o->id, "SIM-%.31s", p.sim_devices[i].name);
        snprintf(o->type, sizeof o->type, "simulated");
        o->kind = LOOM_DEVICE_GPU;
        o->vk_index = -1;
        o->used = true;
        o->total_bytes = o->free_bytes = p.sim_devices[i].memory_bytes;
    }
    char note[160] = "";
    loom_status s = loom_vk_list(&p, out, max, &n, note, sizeof note, err);
    if (note[0]) snprintf(c->note, sizeof c->note, "%d threads; Vulkan: %.120s", loom_host_cpu_count(), note);
    *n_out = n;
    return s;
}
