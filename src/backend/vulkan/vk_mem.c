/*
 * vk_mem.c - Vulkan device memory: allocations addressed by reserved host address
 * ranges (see vk.h), pieces bounded by maxMemoryAllocationSize, synchronous
 * transfers through staging buffers (or the mapping on unified-memory devices),
 * and the batched uploader used by the parallel weight load.
 */
#include "backend/vulkan/vk_internal.h"
#include "quant/alloc.h"

#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

#define VK_STAGE_MAX ((size_t)64 << 20)   /* largest synchronous staging buffer */
#define VK_TRACE_MAX 1024

static atomic_llong g_live_memory;
static pthread_mutex_t g_trace_mu = PTHREAD_MUTEX_INITIALIZER;
static long g_trace[VK_TRACE_MAX];
static int g_n_trace;

int64_t loom_vk_live_memory(void) { return atomic_load(&g_live_memory); }

int loom_vk_alloc_trace(long *out, int max, bool reset) {
    pthread_mutex_lock(&g_trace_mu);
    if (reset) g_n_trace = 0;
    int n = g_n_trace;
    for (int i = 0; i < n && i < max && i < VK_TRACE_MAX; i++) out[i] = g_trace[i];
    pthread_mutex_unlock(&g_trace_mu);
    return n;
}
#define VK_UPLOAD_STAGE ((size_t)8 << 20) /* per load worker */

static size_t page_round(size_t n) { return (n + 4095) & ~(size_t)4095; }

/* ---------------------------------------------------------------- chunks */

bool vk_chunk_new(loom_vk_dev *d, uint32_t mt, size_t size, bool map, vk_chunk *out) {
    memset(out, 0, sizeof *out);
    if (size == 0) return false;
    const bool fail = loom_alloc_should_fail(); /* one allocation of the library-wide sequence */
    pthread_mutex_lock(&g_trace_mu);
    if (g_n_trace < VK_TRACE_MAX) g_trace[g_n_trace] = loom_alloc_count();
    g_n_trace++;
    pthread_mutex_unlock(&g_trace_mu);
    if (fail) return false;
    VkBufferCreateInfo bi = {.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
                             .size = size,
                             .usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
                                      VK_BUFFER_USAGE_TRANSFER_DST_BIT,
                             .sharingMode = VK_SHARING_MODE_EXCLUSIVE};
    if (d->f.vkCreateBuffer(d->dev, &bi, NULL, &out->buf) != VK_SUCCESS) {
        out->buf = VK_NULL_HANDLE;
        return false;
    }
    VkMemoryRequirements req;
    d->f.vkGetBufferMemoryRequirements(d->dev, out->buf, &req);
    if (!(req.memoryTypeBits & (1u << mt))) goto fail;
    VkMemoryAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
                               .allocationSize = req.size,
                               .memoryTypeIndex = mt};
    if (d->f.vkAllocateMemory(d->dev, &ai, NULL, &out->mem) != VK_SUCCESS) {
        out->mem = VK_NULL_HANDLE;
        goto fail;
    }
    if (d->f.vkBindBufferMemory(d->dev, out->buf, out->mem, 0) != VK_SUCCESS) goto fail;
    if (map && d->f.vkMapMemory(d->dev, out->mem, 0, VK_WHOLE_SIZE, 0, &out->map) != VK_SUCCESS) {
        out->map = NULL;
        goto fail;
    }
    out->size = size;
    atomic_fetch_add(&d->live_chunks, 1);
    atomic_fetch_add(&g_live_memory, 1);
    return true;
fail:
    if (out->mem) d->f.vkFreeMemory(d->dev, out->mem, NULL);
    if (out->buf) d->f.vkDestroyBuffer(d->dev, out->buf, NULL);
    memset(out, 0, sizeof *out);
    return false;
}

void vk_chunk_free(loom_vk_dev *d, vk_chunk *c) {
    if (!c->buf && !c->mem) return;
    if (c->map) d->f.vkUnmapMemory(d->dev, c->mem);
    if (c->buf) d->f.vkDestroyBuffer(d->dev, c->buf, NULL);
    if (c->mem) d->f.vkFreeMemory(d->dev, c->mem, NULL);
    atomic_fetch_sub(&d->live_chunks, 1);
    atomic_fetch_sub(&g_live_memory, 1);
    memset(c, 0, sizeof *c);
}

/* ---------------------------------------------------------------- allocations */

static void alloc_destroy(loom_vk_dev *d, vk_alloc *a) {
    for (int i = 0; i < a->n_chunks; i++) vk_chunk_free(d, &a->chunks[i]);
    if (a->base) munmap((void *)a->base, page_round(a->size));
    if (!a->host) atomic_fetch_sub(&d->dev_bytes, (uint64_t)a->size);
    loom_free(a->chunks);
    loom_free(a);
}

void *loom_vk_alloc(loom_vk_dev *d, size_t size) {
    if (!d || size == 0 || size > SIZE_MAX - 4096) return NULL;
    vk_alloc *a = loom_calloc(1, sizeof *a);
    if (!a) return NULL;
    a->size = size;
    a->chunk_stride = (size_t)d->chunk_max;
    a->n_chunks = (int)((size + a->chunk_stride - 1) / a->chunk_stride);
    a->chunks = loom_calloc((size_t)a->n_chunks, sizeof *a->chunks);
    void *addr = MAP_FAILED;
    if (a->chunks) addr = mmap(NULL, page_round(size), PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (addr == MAP_FAILED) {
        loom_free(a->chunks);
        loom_free(a);
        return NULL;
    }
    a->base = (uintptr_t)addr;
    atomic_fetch_add(&d->dev_bytes, (uint64_t)size);
    pthread_mutex_lock(&d->mu);
    bool ok = true;
    for (int i = 0; i < a->n_chunks && ok; i++) {
        size_t cs = i + 1 < a->n_chunks ? a->chunk_stride : size - (size_t)i * a->chunk_stride;
        ok = vk_chunk_new(d, d->mt_device, cs, d->unified, &a->chunks[i]);
    }
    if (ok && d->n_allocs == d->cap_allocs) {
        int nc = d->cap_allocs ? 2 * d->cap_allocs : 64;
        vk_alloc **na = loom_realloc(d->allocs, (size_t)nc * sizeof *na);
        if (!na) ok = false;
        else {
            d->allocs = na;
            d->cap_allocs = nc;
        }
    }
    if (!ok) {
        alloc_destroy(d, a);
        pthread_mutex_unlock(&d->mu);
        return NULL;
    }
    int k = d->n_allocs++;
    while (k > 0 && d->allocs[k - 1]->base > a->base) {
        d->allocs[k] = d->allocs[k - 1];
        k--;
    }
    d->allocs[k] = a;
    pthread_mutex_unlock(&d->mu);
    return addr;
}

vk_alloc *vk_alloc_find(loom_vk_dev *d, uintptr_t p) {
    int lo = 0, hi = d->n_allocs - 1;
    while (lo <= hi) {
        int mid = (lo + hi) / 2;
        vk_alloc *a = d->allocs[mid];
        if (p < a->base) hi = mid - 1;
        else if (p >= a->base + a->size) lo = mid + 1;
        else return a;
    }
    return NULL;
}

void loom_vk_free(loom_vk_dev *d, void *p) {
    if (!d || !p) return;
    /* cached descriptor sets may name the buffers: forget them (lock order qmu, mu) */
    pthread_mutex_lock(&d->qmu);
    vk_dset_clear(d);
    pthread_mutex_lock(&d->mu);
    int lo = 0, hi = d->n_allocs - 1, at = -1;
    while (lo <= hi) {
        int mid = (lo + hi) / 2;
        uintptr_t b = d->allocs[mid]->base;
        if ((uintptr_t)p == b) {
            at = mid;
            break;
        }
        if ((uintptr_t)p < b) hi = mid - 1;
        else lo = mid + 1;
    }
    if (at >= 0) {
        vk_alloc *a = d->allocs[at];
        memmove(d->allocs + at, d->allocs + at + 1, (size_t)(d->n_allocs - at - 1) * sizeof *d->allocs);
        d->n_allocs--;
        alloc_destroy(d, a);
    }
    pthread_mutex_unlock(&d->mu);
    pthread_mutex_unlock(&d->qmu);
}

bool loom_vk_owns(const loom_vk_dev *d, const void *p) {
    loom_vk_dev *dd = (loom_vk_dev *)d;
    pthread_mutex_lock(&dd->mu);
    bool ok = vk_alloc_find(dd, (uintptr_t)p) != NULL;
    pthread_mutex_unlock(&dd->mu);
    return ok;
}

static bool resolve_locked(loom_vk_dev *d, const void *p, size_t n, vk_span *out) {
    vk_alloc *a = vk_alloc_find(d, (uintptr_t)p);
    if (!a) return false;
    size_t off = (uintptr_t)p - a->base;
    size_t i = off / a->chunk_stride;
    size_t in = off - i * a->chunk_stride;
    if ((int)i >= a->n_chunks || n > a->chunks[i].size || in > a->chunks[i].size - n) return false;
    out->c = &a->chunks[i];
    out->off = in;
    return true;
}

bool vk_resolve(loom_vk_dev *d, const void *p, size_t n, vk_span *out) {
    pthread_mutex_lock(&d->mu);
    bool ok = resolve_locked(d, p, n, out);
    pthread_mutex_unlock(&d->mu);
    return ok;
}

void vk_mem_close(loom_vk_dev *d) {
    for (int i = 0; i < d->n_allocs; i++) alloc_destroy(d, d->allocs[i]);
    loom_free(d->allocs);
    d->allocs = NULL;
    d->n_allocs = d->cap_allocs = 0;
    vk_hostbuf_free(d, &d->up);
    vk_hostbuf_free(d, &d->down);
}

/* ---------------------------------------------------------------- host buffers */

loom_status vk_hostbuf_reserve(loom_vk_dev *d, vk_hostbuf *h, size_t n) {
    if (n <= h->c.size) return LOOM_OK;
    size_t want = h->c.size ? h->c.size * 2 : ((size_t)1 << 20);
    while (want < n) want *= 2;
    vk_chunk c;
    if (!vk_chunk_new(d, d->mt_host, want, true, &c) && !vk_chunk_new(d, d->mt_host, n, true, &c))
        return LOOM_ERR_NOMEM;
    vk_chunk_free(d, &h->c);
    h->c = c;
    h->used = 0;
    return LOOM_OK;
}

void vk_hostbuf_free(loom_vk_dev *d, vk_hostbuf *h) {
    vk_chunk_free(d, &h->c);
    h->used = 0;
}

/* ---------------------------------------------------------------- synchronous transfers */

static void begin_cmd(loom_vk_dev *d) {
    d->f.vkResetCommandPool(d->dev, d->cmd_pool, 0);
    VkCommandBufferBeginInfo bi = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
                                   .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT};
    d->f.vkBeginCommandBuffer(d->cmd, &bi);
}

loom_status vk_submit_wait(loom_vk_dev *d) {
    VkSubmitInfo si = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO, .commandBufferCount = 1, .pCommandBuffers = &d->cmd};
    VkResult r = d->f.vkQueueSubmit(d->queue, 1, &si, d->fence);
    if (r == VK_SUCCESS) r = d->f.vkWaitForFences(d->dev, 1, &d->fence, VK_TRUE, UINT64_MAX);
    d->f.vkResetFences(d->dev, 1, &d->fence);
    d->stats.submits++;
    if (r == VK_ERROR_OUT_OF_HOST_MEMORY || r == VK_ERROR_OUT_OF_DEVICE_MEMORY) return LOOM_ERR_NOMEM;
    return r == VK_SUCCESS ? LOOM_OK : LOOM_ERR_INTERNAL;
}

static void host_barrier(loom_vk_dev *d, VkAccessFlags src, VkPipelineStageFlags ss, VkAccessFlags dst,
                         VkPipelineStageFlags ds) {
    VkMemoryBarrier mb = {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER, .srcAccessMask = src, .dstAccessMask = dst};
    d->f.vkCmdPipelineBarrier(d->cmd, ss, ds, 0, 1, &mb, 0, NULL, 0, NULL);
}

/* dir 0: host -> device, 1: device -> host, 2: zero fill. */
loom_status vk_transfer_locked(loom_vk_dev *d, void *dev_p, void *host, size_t n, int dir) {
    if (n == 0) return LOOM_OK;
    vk_span sp;
    loom_status st = LOOM_OK;
    if (!vk_resolve(d, dev_p, n, &sp)) return LOOM_ERR_INVALID_ARG;
    if (sp.c->map) {
        char *m = (char *)sp.c->map + sp.off;
        if (dir == 0) memcpy(m, host, n);
        else if (dir == 1) memcpy(host, m, n);
        else memset(m, 0, n);
        return LOOM_OK;
    }
    if (dir == 2 && (sp.off % 4 == 0) && (n % 4 == 0)) {
        begin_cmd(d);
        d->f.vkCmdFillBuffer(d->cmd, sp.c->buf, sp.off, n, 0);
        host_barrier(d, VK_ACCESS_TRANSFER_WRITE_BIT, VK_PIPELINE_STAGE_TRANSFER_BIT,
                     VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT);
        d->f.vkEndCommandBuffer(d->cmd);
        return vk_submit_wait(d);
    }
    vk_hostbuf *hb = dir == 1 ? &d->down : &d->up;
    size_t step = n < VK_STAGE_MAX ? n : VK_STAGE_MAX;
    st = vk_hostbuf_reserve(d, hb, step);
    for (size_t done = 0; done < n && !st; done += step) {
        size_t m = n - done < step ? n - done : step;
        if (dir == 0) memcpy(hb->c.map, (char *)host + done, m);
        else if (dir == 2) memset(hb->c.map, 0, m);
        begin_cmd(d);
        VkBufferCopy r = {.size = m};
        if (dir == 1) {
            r.srcOffset = sp.off + done;
            d->f.vkCmdCopyBuffer(d->cmd, sp.c->buf, hb->c.buf, 1, &r);
            host_barrier(d, VK_ACCESS_TRANSFER_WRITE_BIT, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_HOST_READ_BIT,
                         VK_PIPELINE_STAGE_HOST_BIT);
        } else {
            r.dstOffset = sp.off + done;
            d->f.vkCmdCopyBuffer(d->cmd, hb->c.buf, sp.c->buf, 1, &r);
            host_barrier(d, VK_ACCESS_TRANSFER_WRITE_BIT, VK_PIPELINE_STAGE_TRANSFER_BIT,
                         VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT);
        }
        d->f.vkEndCommandBuffer(d->cmd);
        st = vk_submit_wait(d);
        if (!st && dir == 1) memcpy((char *)host + done, hb->c.map, m);
    }
    return st;
}

static loom_status transfer(loom_vk_dev *d, void *dev_p, void *host, size_t n, int dir) {
    pthread_mutex_lock(&d->qmu);
    loom_status st = vk_transfer_locked(d, dev_p, host, n, dir);
    pthread_mutex_unlock(&d->qmu);
    return st;
}

loom_status loom_vk_write(loom_vk_dev *d, void *dst, const void *src, size_t n) {
    return transfer(d, dst, (void *)src, n, 0);
}
loom_status loom_vk_read(loom_vk_dev *d, void *dst, const void *src, size_t n) {
    return transfer(d, (void *)src, dst, n, 1);
}
loom_status loom_vk_fill_zero(loom_vk_dev *d, void *dst, size_t n) { return transfer(d, dst, NULL, n, 2); }

/* ---------------------------------------------------------------- uploader */

struct loom_vk_uploader {
    loom_vk_dev *d;
    VkCommandPool pool;
    VkCommandBuffer cmd;
    VkFence fence;
    vk_chunk stage;
    size_t used;
    bool recording;
};

loom_status loom_vk_uploader_new(loom_vk_dev *d, loom_vk_uploader **out) {
    *out = NULL;
    loom_vk_uploader *u = loom_calloc(1, sizeof *u);
    if (!u) return LOOM_ERR_NOMEM;
    u->d = d;
    if (d->unified) { /* writes go through the mapping */
        *out = u;
        return LOOM_OK;
    }
    VkCommandPoolCreateInfo cp = {.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
                                  .flags = VK_COMMAND_POOL_CREATE_TRANSIENT_BIT,
                                  .queueFamilyIndex = d->qfam};
    VkFenceCreateInfo fi = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    VkCommandBufferAllocateInfo ca = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
                                      .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
                                      .commandBufferCount = 1};
    if (d->f.vkCreateCommandPool(d->dev, &cp, NULL, &u->pool) != VK_SUCCESS) u->pool = VK_NULL_HANDLE;
    ca.commandPool = u->pool;
    if (!u->pool || d->f.vkCreateFence(d->dev, &fi, NULL, &u->fence) != VK_SUCCESS ||
        d->f.vkAllocateCommandBuffers(d->dev, &ca, &u->cmd) != VK_SUCCESS) {
        loom_vk_uploader_done(u, false);
        return LOOM_ERR_INTERNAL;
    }
    if (!vk_chunk_new(d, d->mt_host, VK_UPLOAD_STAGE, true, &u->stage)) {
        loom_vk_uploader_done(u, false);
        return LOOM_ERR_NOMEM;
    }
    *out = u;
    return LOOM_OK;
}

static loom_status up_flush(loom_vk_uploader *u) {
    loom_vk_dev *d = u->d;
    if (!u->recording) return LOOM_OK;
    u->recording = false;
    u->used = 0;
    VkMemoryBarrier mb = {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
                          .srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT,
                          .dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT};
    d->f.vkCmdPipelineBarrier(u->cmd, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0, 1, &mb,
                              0, NULL, 0, NULL);
    d->f.vkEndCommandBuffer(u->cmd);
    VkSubmitInfo si = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO, .commandBufferCount = 1, .pCommandBuffers = &u->cmd};
    pthread_mutex_lock(&d->qmu); /* the queue is shared */
    VkResult r = d->f.vkQueueSubmit(d->queue, 1, &si, u->fence);
    pthread_mutex_unlock(&d->qmu);
    if (r == VK_SUCCESS) r = d->f.vkWaitForFences(d->dev, 1, &u->fence, VK_TRUE, UINT64_MAX);
    d->f.vkResetFences(d->dev, 1, &u->fence);
    d->f.vkResetCommandPool(d->dev, u->pool, 0);
    if (r == VK_ERROR_OUT_OF_HOST_MEMORY || r == VK_ERROR_OUT_OF_DEVICE_MEMORY) return LOOM_ERR_NOMEM;
    return r == VK_SUCCESS ? LOOM_OK : LOOM_ERR_INTERNAL;
}

loom_status loom_vk_upload(loom_vk_uploader *u, void *dst, const void *src, size_t n) {
    loom_vk_dev *d = u->d;
    vk_span sp;
    if (!vk_resolve(d, dst, n, &sp)) return LOOM_ERR_INVALID_ARG;
    if (sp.c->map) {
        memcpy((char *)sp.c->map + sp.off, src, n);
        return LOOM_OK;
    }
    size_t done = 0;
    while (done < n) {
        if (u->used == u->stage.size) {
            loom_status st = up_flush(u);
            if (st) return st;
        }
        size_t m = n - done;
        if (m > u->stage.size - u->used) m = u->stage.size - u->used;
        memcpy((char *)u->stage.map + u->used, (const char *)src + done, m);
        if (!u->recording) {
            VkCommandBufferBeginInfo bi = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
                                           .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT};
            d->f.vkBeginCommandBuffer(u->cmd, &bi);
            u->recording = true;
        }
        VkBufferCopy r = {.srcOffset = u->used, .dstOffset = sp.off + done, .size = m};
        d->f.vkCmdCopyBuffer(u->cmd, u->stage.buf, sp.c->buf, 1, &r);
        u->used += m;
        done += m;
    }
    return LOOM_OK;
}

loom_status loom_vk_uploader_done(loom_vk_uploader *u, bool flush) {
    if (!u) return LOOM_OK;
    loom_vk_dev *d = u->d;
    loom_status st = LOOM_OK;
    if (u->recording) {
        if (flush) st = up_flush(u);
        else {
            d->f.vkEndCommandBuffer(u->cmd);
            u->recording = false;
        }
    }
    if (u->stage.buf) vk_chunk_free(d, &u->stage);
    if (u->fence) d->f.vkDestroyFence(d->dev, u->fence, NULL);
    if (u->pool) d->f.vkDestroyCommandPool(d->dev, u->pool, NULL);
    loom_free(u);
    return st;
}

void loom_vk_get_stats(const loom_vk_dev *d, loom_vk_stats *out) {
    *out = d->stats;
    out->pipelines = d->n_pipes;
    out->live_allocs = d->n_allocs;
}
