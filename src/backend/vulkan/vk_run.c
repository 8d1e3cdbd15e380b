/*
 * vk_run.c - one device run: uploads, the run's nodes recorded into ONE command
 * buffer, downloads, one submission and a fence wait.
 *
 * Barriers: every dispatch declares the device ranges it reads and writes; a memory
 * barrier (compute -> compute) is recorded only before a dispatch that reads or
 * writes a range written since the last barrier, or writes a range read since then.
 * Independent dispatches (Q, K and V projections, the two FFN matmuls) therefore run
 * without barriers between them.
 *
 * Bindings: an operand is bound through the window of its exact byte range (start
 * aligned down to minStorageBufferOffsetAlignment); its offset inside the window goes
 * into the kernel's push constants. A decode step binds the same windows as the
 * previous one except for the KV-cache writes, so the descriptor cache serves almost
 * every dispatch. Validation layers (synchronization validation in the tests) see the
 * exact ranges and so check the barriers.
 */
#include "backend/vulkan/vk_internal.h"
#include "quant/alloc.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

bool vk_fail(vk_rec *r, loom_status st, const char *fmt, ...) {
    if (!r->st) {
        r->st = st;
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(r->msg, sizeof r->msg, fmt, ap);
        va_end(ap);
    }
    return false;
}

void vk_groups_1d(uint64_t n, uint32_t per, uint32_t g[3]) {
    uint64_t groups = (n + per - 1) / per;
    if (groups == 0) groups = 1;
    uint64_t x = groups < 65535 ? groups : 65535;
    g[0] = (uint32_t)x;
    g[1] = (uint32_t)((groups + x - 1) / x);
    g[2] = 1;
}

uint64_t vk_window_span(const loom_vk_dev *d) { return d->max_range - d->min_align; }

/* The window of [p, p+n): from p aligned down to minStorageBufferOffsetAlignment to
 * its end (rounded up to 4 bytes), so validation layers see exactly what a dispatch
 * may touch and the hazard tracking below uses the same ranges. */
static bool window(vk_rec *r, const void *p, size_t n, VkDescriptorBufferInfo *win, uint32_t *off) {
    loom_vk_dev *d = r->d;
    vk_span sp;
    if (n == 0) n = 1;
    if (!vk_resolve(d, p, n, &sp))
        return vk_fail(r, LOOM_ERR_INTERNAL, "device %s: operand %p (%zu bytes) is not in one of its buffers", d->name,
                       p, n);
    const size_t start = sp.off / d->min_align * d->min_align;
    size_t range = (sp.off + n - start + 3) & ~(size_t)3;
    if (start + range > sp.c->size) range = sp.c->size - start;
    if (range > d->max_range)
        return vk_fail(r, LOOM_ERR_UNSUPPORTED, "device %s: an operand of %zu bytes exceeds the binding range %llu",
                       d->name, n, (unsigned long long)d->max_range);
    *win = (VkDescriptorBufferInfo){sp.c->buf, start, range};
    *off = (uint32_t)(sp.off - start);
    return true;
}

bool vk_bind(vk_rec *r, vk_disp *x) {
    loom_vk_dev *d = r->d;
    for (int i = 0; i < VK_BINDINGS; i++) {
        x->off[i] = 0;
        if (i == 5 && x->flag) {
            x->win[i] = (VkDescriptorBufferInfo){d->flag->chunks[0].buf, 0, d->flag->chunks[0].size};
            continue;
        }
        if (!x->p[i]) {
            x->win[i] = (VkDescriptorBufferInfo){d->dummy_buf, 0, VK_WHOLE_SIZE};
            continue;
        }
        if (!window(r, x->p[i], x->n[i], &x->win[i], &x->off[i])) return false;
    }
    return true;
}

/* ---------------------------------------------------------------- hazards */

static bool overlaps(const vk_range *list, int n, uintptr_t a, uintptr_t b) {
    for (int i = 0; i < n; i++)
        if (a < list[i].b && list[i].a < b) return true;
    return false;
}

static bool push_range(vk_range **list, int *n, int *cap, uintptr_t a, uintptr_t b) {
    if (*n == *cap) {
        int nc = *cap ? 2 * *cap : 64;
        vk_range *nl = loom_realloc(*list, (size_t)nc * sizeof *nl);
        if (!nl) return false;
        *list = nl;
        *cap = nc;
    }
    (*list)[(*n)++] = (vk_range){a, b};
    return true;
}

static void barrier_compute(loom_vk_dev *d) {
    VkMemoryBarrier mb = {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
                          .srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT,
                          .dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT};
    d->f.vkCmdPipelineBarrier(d->cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0, 1,
                              &mb, 0, NULL, 0, NULL);
    d->n_rd = d->n_wr = 0;
    d->stats.barriers++;
}

/* Device-address range of binding i: its window (see window()). */
static void bound_range(const vk_disp *x, int i, uintptr_t *a, uintptr_t *b) {
    *a = (uintptr_t)x->p[i] - x->off[i];
    *b = *a + x->win[i].range;
}

bool vk_dispatch(vk_rec *r, vk_disp *x) {
    loom_vk_dev *d = r->d;
    bool need = false;
    for (int i = 0; i < VK_BINDINGS && !need; i++) {
        if (!x->p[i]) continue;
        uintptr_t a, b;
        bound_range(x, i, &a, &b);
        if (overlaps(d->wr, d->n_wr, a, b)) need = true;
        if (x->w[i] && overlaps(d->rd, d->n_rd, a, b)) need = true;
    }
    if (need) barrier_compute(d);
    for (int i = 0; i < VK_BINDINGS; i++) {
        if (!x->p[i]) continue;
        uintptr_t a, b;
        bound_range(x, i, &a, &b);
        bool ok = x->w[i] ? push_range(&d->wr, &d->n_wr, &d->cap_wr, a, b) : push_range(&d->rd, &d->n_rd, &d->cap_rd, a, b);
        if (!ok) return vk_fail(r, LOOM_ERR_NOMEM, "device %s: out of host memory", d->name);
    }
    VkPipeline pl = vk_pipeline(d, x->shader);
    if (!pl) return vk_fail(r, LOOM_ERR_INTERNAL, "device %s: cannot create pipeline %s", d->name,
                            loom_vk_spirv[x->shader].name);
    VkDescriptorSet set = vk_dset(d, x->win);
    if (!set) return vk_fail(r, LOOM_ERR_NOMEM, "device %s: cannot allocate a descriptor set", d->name);
    if (x->groups[0] == 0 || x->groups[1] == 0 || x->groups[2] == 0) return true;
    if (x->groups[0] > d->max_wg_count[0] || x->groups[1] > d->max_wg_count[1] || x->groups[2] > d->max_wg_count[2])
        return vk_fail(r, LOOM_ERR_UNSUPPORTED, "device %s: %u x %u x %u workgroups exceed the device limits", d->name,
                       x->groups[0], x->groups[1], x->groups[2]);
    d->f.vkCmdBindPipeline(d->cmd, VK_PIPELINE_BIND_POINT_COMPUTE, pl);
    d->f.vkCmdBindDescriptorSets(d->cmd, VK_PIPELINE_BIND_POINT_COMPUTE, d->layout, 0, 1, &set, 0, NULL);
    d->f.vkCmdPushConstants(d->cmd, d->layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, VK_PUSH_BYTES, x->pc);
    d->f.vkCmdDispatch(d->cmd, x->groups[0], x->groups[1], x->groups[2]);
    d->stats.dispatches++;
    return true;
}

/* ---------------------------------------------------------------- transfers in a run */

static void begin(loom_vk_dev *d) {
    d->f.vkResetCommandPool(d->dev, d->cmd_pool, 0);
    VkCommandBufferBeginInfo bi = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
                                   .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT};
    d->f.vkBeginCommandBuffer(d->cmd, &bi);
    d->n_rd = d->n_wr = 0;
}

static void mem_barrier(loom_vk_dev *d, VkPipelineStageFlags ss, VkAccessFlags sa, VkPipelineStageFlags ds,
                        VkAccessFlags da) {
    VkMemoryBarrier mb = {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER, .srcAccessMask = sa, .dstAccessMask = da};
    d->f.vkCmdPipelineBarrier(d->cmd, ss, ds, 0, 1, &mb, 0, NULL, 0, NULL);
    d->stats.barriers++;
}

/* Uploads: through the mapping (unified memory, the device is idle) or staged and
 * copied at the start of the command buffer. */
static loom_status record_uploads(vk_rec *r, const loom_vk_xfer *up, int64_t n) {
    loom_vk_dev *d = r->d;
    size_t total = 0;
    for (int64_t i = 0; i < n; i++) {
        vk_span sp;
        if (!vk_resolve(d, up[i].dev, up[i].n ? up[i].n : 1, &sp)) return LOOM_ERR_INTERNAL;
        if (!sp.c->map) total += (up[i].n + 15) & ~(size_t)15;
    }
    if (total) {
        loom_status st = vk_hostbuf_reserve(d, &d->up, total);
        if (st) return st;
    }
    size_t at = 0;
    bool copied = false;
    for (int64_t i = 0; i < n; i++) {
        if (!up[i].n) continue;
        vk_span sp;
        vk_resolve(d, up[i].dev, up[i].n, &sp);
        if (sp.c->map) {
            memcpy((char *)sp.c->map + sp.off, up[i].host, up[i].n);
            continue;
        }
        memcpy((char *)d->up.c.map + at, up[i].host, up[i].n);
        VkBufferCopy c = {.srcOffset = at, .dstOffset = sp.off, .size = up[i].n};
        d->f.vkCmdCopyBuffer(d->cmd, d->up.c.buf, sp.c->buf, 1, &c);
        at += (up[i].n + 15) & ~(size_t)15;
        copied = true;
    }
    d->stats.uploads += n;
    if (copied)
        mem_barrier(d, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                    VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT);
    return LOOM_OK;
}

/* Downloads: copies into the readback buffer recorded at the end (or read through the
 * mapping after the fence). *staged = bytes staged. */
static loom_status record_downloads(vk_rec *r, const loom_vk_xfer *dn, int64_t n) {
    loom_vk_dev *d = r->d;
    size_t total = 0;
    for (int64_t i = 0; i < n; i++) {
        vk_span sp;
        if (!vk_resolve(d, dn[i].dev, dn[i].n ? dn[i].n : 1, &sp)) return LOOM_ERR_INTERNAL;
        if (!sp.c->map) total += (dn[i].n + 15) & ~(size_t)15;
    }
    mem_barrier(d, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_WRITE_BIT,
                VK_PIPELINE_STAGE_TRANSFER_BIT | VK_PIPELINE_STAGE_HOST_BIT,
                VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_HOST_READ_BIT);
    if (!total) return LOOM_OK;
    loom_status st = vk_hostbuf_reserve(d, &d->down, total);
    if (st) return st;
    size_t at = 0;
    for (int64_t i = 0; i < n; i++) {
        if (!dn[i].n) continue;
        vk_span sp;
        vk_resolve(d, dn[i].dev, dn[i].n, &sp);
        if (sp.c->map) continue;
        VkBufferCopy c = {.srcOffset = sp.off, .dstOffset = at, .size = dn[i].n};
        d->f.vkCmdCopyBuffer(d->cmd, sp.c->buf, d->down.c.buf, 1, &c);
        at += (dn[i].n + 15) & ~(size_t)15;
    }
    mem_barrier(d, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT, VK_PIPELINE_STAGE_HOST_BIT,
                VK_ACCESS_HOST_READ_BIT);
    return LOOM_OK;
}

static void finish_downloads(loom_vk_dev *d, const loom_vk_xfer *dn, int64_t n) {
    size_t at = 0;
    for (int64_t i = 0; i < n; i++) {
        if (!dn[i].n) continue;
        vk_span sp;
        vk_resolve(d, dn[i].dev, dn[i].n, &sp);
        if (sp.c->map) {
            memcpy(dn[i].host, (const char *)sp.c->map + sp.off, dn[i].n);
            continue;
        }
        memcpy(dn[i].host, (const char *)d->down.c.map + at, dn[i].n);
        at += (dn[i].n + 15) & ~(size_t)15;
    }
    d->stats.downloads += n;
}

/* ---------------------------------------------------------------- runs */

static loom_status check_flags(loom_vk_dev *d, loom_error *err) {
    volatile uint32_t *fl = d->flag->chunks[0].map;
    if (fl[0]) {
        fl[0] = 0;
        return loom_error_set(err, LOOM_ERR_RANGE, "device %s: an index (get_rows / mul_mat_id ids) is out of range",
                              d->name);
    }
    return LOOM_OK;
}

static void resolve_views(loom_tensor *const *nodes, int64_t n) {
    for (int64_t i = 0; i < n; i++) {
        loom_tensor *t = nodes[i];
        if (t->view_src) t->data = t->view_src->data ? (char *)t->view_src->data + t->view_offs : NULL;
    }
}

static bool node_computes(const loom_tensor *t) {
    return t->op != LOOM_OP_NONE && t->op != LOOM_OP_VIEW && !(t->flags & LOOM_TF_POISON) &&
           loom_nelements(t) > 0;
}

/* eval callback: one submission per node, the node's bytes downloaded to host memory
 * and t->data pointed there while the callback runs. */
static loom_status run_with_eval(vk_rec *rec, const loom_vk_run_desc *r, loom_error *err) {
    loom_vk_dev *d = rec->d;
    loom_status st = LOOM_OK;
    bool first = true;
    for (int64_t i = 0; i < r->n_nodes && !st; i++) {
        loom_tensor *t = r->nodes[i];
        if (!node_computes(t)) continue;
        if (r->abort_cb && r->abort_cb(r->abort_user)) return loom_error_set(err, LOOM_ERR_CANCELLED, "compute cancelled");
        begin(d);
        if (first) {
            st = record_uploads(rec, r->up, r->n_up);
            first = false;
        }
        if (!st && !vk_record_node(rec, t)) st = rec->st;
        d->f.vkEndCommandBuffer(d->cmd);
        if (!st) st = vk_submit_wait(d);
        if (!st) st = check_flags(d, err);
        if (st) break;
        size_t n = loom_tensor_span(t);
        void *host = n ? loom_malloc(n) : NULL;
        if (n && !host) return loom_error_set(err, LOOM_ERR_NOMEM, "eval callback: out of host memory");
        st = n ? vk_transfer_locked(d, t->data, host, n, 1) : LOOM_OK;
        void *dev_data = t->data;
        bool go = true;
        if (!st) {
            t->data = host;
            go = r->eval_cb(t, r->eval_user);
            t->data = dev_data;
        }
        loom_free(host);
        if (!st && !go) return loom_error_set(err, LOOM_ERR_CANCELLED, "compute cancelled by the eval callback");
    }
    if (!st && first && r->n_up) { /* no computing node: still upload */
        begin(d);
        st = record_uploads(rec, r->up, r->n_up);
        d->f.vkEndCommandBuffer(d->cmd);
        if (!st) st = vk_submit_wait(d);
    }
    if (!st && r->n_down) {
        begin(d);
        st = record_downloads(rec, r->down, r->n_down);
        d->f.vkEndCommandBuffer(d->cmd);
        if (!st) st = vk_submit_wait(d);
        if (!st) finish_downloads(d, r->down, r->n_down);
    }
    if (st && !err->status) {
        if (rec->st) loom_error_set(err, st, "%s", rec->msg);
        else loom_error_set(err, st, "device %s: run failed (%s)", d->name, loom_status_name(st));
    }
    return st;
}

loom_status loom_vk_run(loom_vk_dev *d, const loom_vk_run_desc *r, loom_error *err) {
    vk_rec rec;
    memset(&rec, 0, sizeof rec);
    rec.d = d;
    rec.work = r->work;
    rec.work_size = r->work_size;
    resolve_views(r->nodes, r->n_nodes);
    pthread_mutex_lock(&d->qmu);
    memset(&d->stats, 0, sizeof d->stats);
    vk_dset_reset_if_full(d);
    loom_status st;
    if (r->eval_cb) {
        st = run_with_eval(&rec, r, err);
        pthread_mutex_unlock(&d->qmu);
        return st;
    }
    begin(d);
    if (d->ts_pool) {
        d->f.vkCmdResetQueryPool(d->cmd, d->ts_pool, 0, 2);
        d->f.vkCmdWriteTimestamp(d->cmd, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, d->ts_pool, 0);
    }
    st = record_uploads(&rec, r->up, r->n_up);
    for (int64_t i = 0; i < r->n_nodes && !st; i++) {
        loom_tensor *t = r->nodes[i];
        if (!node_computes(t)) continue;
        if (!vk_record_node(&rec, t)) st = rec.st ? rec.st : LOOM_ERR_INTERNAL;
    }
    if (!st && r->n_down) st = record_downloads(&rec, r->down, r->n_down);
    if (d->ts_pool) d->f.vkCmdWriteTimestamp(d->cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, d->ts_pool, 1);
    d->f.vkEndCommandBuffer(d->cmd);
    if (!st && r->abort_cb && r->abort_cb(r->abort_user)) {
        pthread_mutex_unlock(&d->qmu);
        return loom_error_set(err, LOOM_ERR_CANCELLED, "compute cancelled");
    }
    if (!st) st = vk_submit_wait(d);
    if (!st) st = check_flags(d, err);
    if (!st && r->n_down) finish_downloads(d, r->down, r->n_down);
    if (!st && d->ts_pool) {
        uint64_t ts[2];
        if (d->f.vkGetQueryPoolResults(d->dev, d->ts_pool, 0, 2, sizeof ts, ts, sizeof ts[0],
                                       VK_QUERY_RESULT_64_BIT) == VK_SUCCESS && ts[1] >= ts[0])
            d->stats.gpu_ns = (double)(ts[1] - ts[0]) * d->ts_period_ns;
    }
    pthread_mutex_unlock(&d->qmu);
    if (st && !err->status) {
        if (rec.st) loom_error_set(err, st, "%s", rec.msg);
        else loom_error_set(err, st, "device %s: run failed (%s)", d->name, loom_status_name(st));
    }
    return st;
}
