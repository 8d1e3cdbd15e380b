/*
 * vk_internal.h (internal to src/backend/vulkan) - shared structures of the Vulkan
 * device: loader/instance (vk_device.c), memory (vk_mem.c), pipelines and
 * descriptors (vk_pipe.c), op recording (vk_ops*.c) and runs (vk_run.c).
 */
#ifndef LOOM_VK_INTERNAL_H
#define LOOM_VK_INTERNAL_H

#include "backend/vulkan/vk.h"
#include "backend/vulkan/vk_fns.h"
#include "vk_shaders.h" /* generated: enum vk_shader_id, loom_vk_spirv[] */

#include <pthread.h>
#include <stdatomic.h>

#define VK_MAX_DEVICES 16
#define VK_BINDINGS 6         /* storage buffers of the one descriptor-set layout */
#define VK_PUSH_BYTES 128     /* push constants every device supports */
#define VK_DSET_CACHE 4096    /* cached descriptor sets per device (power of two) */

/* One VkDeviceMemory with one VkBuffer over all of it. */
typedef struct vk_chunk {
    VkDeviceMemory mem;
    VkBuffer buf;
    size_t size;
    void *map; /* host mapping (unified memory / staging), else NULL */
} vk_chunk;

/* One allocation: a reserved (inaccessible) host address range of `size` bytes whose
 * piece i (chunk_stride bytes each, the last shorter) is chunks[i]. */
typedef struct vk_alloc {
    uintptr_t base;
    size_t size;
    size_t chunk_stride;
    int n_chunks;
    bool host; /* host-visible staging memory (not counted as device memory) */
    vk_chunk *chunks;
} vk_alloc;

/* A resolved device range: buffer chunk + byte offset inside it. */
typedef struct vk_span {
    const vk_chunk *c;
    size_t off;
} vk_span;

/* Host-visible buffer that grows (staging for uploads, readback for downloads). */
typedef struct vk_hostbuf {
    vk_chunk c;
    size_t used;
} vk_hostbuf;

typedef struct vk_dset_entry {
    uint64_t key[VK_BINDINGS * 3]; /* (buffer, offset, range) per binding */
    VkDescriptorSet set;
    bool used;
} vk_dset_entry;

/* Hazard tracking between barriers: device ranges read / written since the last one. */
typedef struct vk_range {
    uintptr_t a, b;
} vk_range;

struct loom_vk_dev {
    loom_vk *vk;
    vk_dfns f;
    int index; /* physical device index */
    VkPhysicalDevice pd;
    VkDevice dev;
    VkQueue queue;
    uint32_t qfam;
    char name[128];
    char uuid[40];
    VkPhysicalDeviceType type;
    /* limits */
    uint64_t max_range;     /* bytes one binding may span */
    uint64_t min_align;     /* minStorageBufferOffsetAlignment */
    uint64_t chunk_max;     /* bytes of one device memory piece */
    uint32_t max_shared;    /* shared memory per workgroup */
    uint32_t max_wg_count[3];
    uint32_t subgroup;
    bool int8_accel;        /* integer dot products reported accelerated */
    bool fp16;              /* shaderFloat16 */
    bool int8_path;         /* quantized matmuls use the int8-dot kernels */
    bool dot4;              /* ... with OpSDot (shaderIntegerDotProduct enabled) */
    /* memory */
    uint32_t mt_device;     /* memory type for device-local buffers */
    uint32_t mt_host;       /* host-visible coherent type for staging */
    uint32_t heap;          /* heap of mt_device */
    uint64_t heap_size;
    bool unified;           /* device-local memory is mapped and written directly */
    bool budget_ext;        /* VK_EXT_memory_budget enabled */
    atomic_uint_least64_t dev_bytes; /* device-local bytes allocated by us */

    pthread_mutex_t mu;     /* the allocation table (short holds) */
    pthread_mutex_t qmu;    /* queue, run command buffer, staging, pipelines, descriptor cache */
    vk_alloc **allocs;      /* sorted by base */
    int n_allocs, cap_allocs;
    atomic_llong live_chunks;

    /* pipelines (lazy) */
    VkDescriptorSetLayout dsl;
    VkPipelineLayout layout;
    VkPipelineCache pcache;
    VkPipeline pipe[VKS_COUNT];
    int64_t n_pipes;
    /* descriptor sets: cache keyed by the bindings, pools grow */
    VkDescriptorPool *pools;   /* kept for the device's life; reset and reused */
    int n_pools, cap_pools, cur_pool;
    uint32_t pool_left;
    vk_dset_entry *dsets;   /* [VK_DSET_CACHE] */
    int n_dsets;
    VkBuffer dummy_buf;     /* bound to unused bindings */
    vk_alloc *dummy;

    /* runs */
    VkCommandPool cmd_pool;
    VkCommandBuffer cmd;
    VkFence fence;
    VkQueryPool ts_pool;    /* 2 timestamps per run (none: VK_NULL_HANDLE) */
    double ts_period_ns;
    vk_hostbuf up, down;    /* staging for uploads / readback */
    vk_alloc *flag;         /* host-visible error flags written by kernels */
    vk_range *rd, *wr;      /* hazards since the last barrier */
    int n_rd, n_wr, cap_rd, cap_wr;
    bool recording_ok;
    loom_vk_stats stats;
};

struct loom_vk {
    vk_fns f;
    VkInstance inst;
    VkDebugUtilsMessengerEXT messenger;
    atomic_llong reports;   /* validation messages (warning/error) */
    int n_devices;
    loom_vk_dev *devices[VK_MAX_DEVICES];
    unsigned flags;
    uint64_t max_binding, max_alloc; /* test caps (0 = none) */
};

/* vk_loader.c: the loader's vkGetInstanceProcAddr (dlopen once per name), or NULL
 * with a reason. Thread-safe. */
PFN_vkGetInstanceProcAddr loom_vk_loader_open(const char *name, char *why, size_t why_size);
/* Keep every library loaded so far mapped for the rest of the process (see vk_loader.c). */
void loom_vk_pin_modules(void);

/* vk_mem.c */
void vk_mem_close(loom_vk_dev *d);                       /* free everything left */
vk_alloc *vk_alloc_find(loom_vk_dev *d, uintptr_t p);    /* caller holds d->mu */
/* Resolve [p, p+n) to a chunk + offset; false if not inside one chunk. */
bool vk_resolve(loom_vk_dev *d, const void *p, size_t n, vk_span *out);
loom_status vk_hostbuf_reserve(loom_vk_dev *d, vk_hostbuf *h, size_t n);
void vk_hostbuf_free(loom_vk_dev *d, vk_hostbuf *h);
/* Allocate one chunk of memory type mt (fault injection, OOM -> false). */
bool vk_chunk_new(loom_vk_dev *d, uint32_t mt, size_t size, bool map, vk_chunk *out);
void vk_chunk_free(loom_vk_dev *d, vk_chunk *c);
/* Submit the device's command buffer (begun and ended by the caller) and wait. */
loom_status vk_submit_wait(loom_vk_dev *d);
/* Synchronous transfer with d->qmu held: dir 0 host -> device, 1 device -> host, 2 zero. */
loom_status vk_transfer_locked(loom_vk_dev *d, void *dev_p, void *host, size_t n, int dir);

/* vk_pipe.c */
loom_status vk_pipe_init(loom_vk_dev *d);
void vk_pipe_close(loom_vk_dev *d);
VkPipeline vk_pipeline(loom_vk_dev *d, int shader);      /* lazy; VK_NULL_HANDLE on failure */
/* Descriptor set for the given windows (cached); VK_NULL_HANDLE on failure. */
VkDescriptorSet vk_dset(loom_vk_dev *d, const VkDescriptorBufferInfo *b);
void vk_dset_reset_if_full(loom_vk_dev *d);
/* Forget every cached set (a buffer they may reference is being destroyed). qmu held. */
void vk_dset_clear(loom_vk_dev *d);

/* ---- recording (vk_run.c), used by the op recorders (vk_ops.c) */

/* One dispatch: bindings by device address (NULL = unused), push constants, groups. */
typedef struct vk_disp {
    int shader;
    const void *p[VK_BINDINGS];
    size_t n[VK_BINDINGS];   /* bytes the kernel may touch from p */
    bool w[VK_BINDINGS];     /* written */
    bool flag;               /* binding 5 = the error-flag buffer */
    uint32_t off[VK_BINDINGS]; /* out of vk_bind: byte offset of p in its window */
    VkDescriptorBufferInfo win[VK_BINDINGS];
    uint32_t pc[VK_PUSH_BYTES / 4];
    uint32_t groups[3];
} vk_disp;

typedef struct vk_rec {
    loom_vk_dev *d;
    loom_status st;
    char msg[200];
    void *work;
    size_t work_size;
    /* the activation the work area holds quantized (int8-dot path): sibling matmuls of
     * the same input (Q/K/V, gate/up) reuse it; NULL once anything else writes there */
    const loom_tensor *q8_src;
    int q8_mode;
} vk_rec;

/* Resolve every binding of x into a window (sets x->off, x->win). false + rec error
 * when an operand is not device memory of d or does not fit one binding. */
bool vk_bind(vk_rec *r, vk_disp *x);
/* Record x (after vk_bind): a barrier first when x touches a range written, or writes
 * a range touched, since the last barrier; then pipeline, descriptor set, push
 * constants, dispatch. false + rec error on failure. */
bool vk_dispatch(vk_rec *r, vk_disp *x);
/* Groups for n work items of `per` items per group over a 2-D grid (x <= 65535). */
void vk_groups_1d(uint64_t n, uint32_t per, uint32_t g[3]);
bool vk_fail(vk_rec *r, loom_status st, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* vk_ops.c: record node t (data of t and its sources set). */
bool vk_record_node(vk_rec *r, loom_tensor *t);
/* Bytes one binding window can span for an operand at a worst-case offset. */
uint64_t vk_window_span(const loom_vk_dev *d);

#endif
