/*
 * vk.h (internal) - the Vulkan device kind, as seen by the rest of the backend.
 *
 * A loom_vk is one backend's Vulkan state: the loader (dlopen'd once per process),
 * an instance, and the admitted devices (loom_vk_dev), each with its queue,
 * allocations, pipelines and caches. Built only with LOOM_HAVE_VULKAN; without it
 * vk_stub.c provides the same functions, reporting no devices.
 *
 * Device memory is addressed with "device addresses": loom_vk_alloc reserves an
 * inaccessible host address range (PROT_NONE, never dereferenced) of the allocation's
 * size and returns its start, so tensor data pointers keep their usual arithmetic
 * (views, planner offsets) while any accidental host access faults. The device maps
 * an address back to (VkBuffer, offset) with loom_vk_* calls only.
 *
 * Threading: alloc/free/read/write/fill and the uploader may be called from several
 * threads (a device mutex guards the allocation table and queue submissions);
 * loom_vk_run is called by the thread computing a graph.
 */
#ifndef LOOM_BACKEND_VK_H
#define LOOM_BACKEND_VK_H

#include "core/tensor.h"
#include "loom_backend.h"

typedef struct loom_vk loom_vk;
typedef struct loom_vk_dev loom_vk_dev;

/* The vk_devices filter (loom_backend_params): mode 0 = real GPUs, 1 = all, 2 = none,
 * 3 = the listed physical-device indices in that order. Parsed by devices.c (every
 * build, so a malformed list is an error with or without the Vulkan backend). */
#define LOOM_VK_MAX_LISTED 16
typedef struct loom_vk_filter {
    int mode;
    int idx[LOOM_VK_MAX_LISTED];
    int n;
} loom_vk_filter;
loom_status loom_vk_filter_parse(const char *s, loom_vk_filter *f, loom_error *err);

/* True when the library was built with the Vulkan backend. */
bool loom_vk_built(void);

/* Open the loader and an instance and create every admitted device (p->vk_devices
 * filter). A missing loader, no driver or no admitted device is not an error: *out is
 * NULL and note says why. LOOM_ERR_INVALID_ARG for a malformed filter, LOOM_ERR_NOMEM
 * for host memory. */
loom_status loom_vk_open(const loom_backend_params *p, loom_vk **out, char *note, size_t note_size,
                         loom_error *err);
void loom_vk_close(loom_vk *vk); /* NULL is a no-op; every device must be idle */
int loom_vk_device_count(const loom_vk *vk);
loom_vk_dev *loom_vk_device(loom_vk *vk, int i);
int64_t loom_vk_reports(const loom_vk *vk);

/* Describe the physical devices for loom_devices_list (appends at out[*n]). */
loom_status loom_vk_list(const loom_backend_params *p, loom_device_info *out, int max, int *n, char *note,
                         size_t note_size, loom_error *err);

/* Facts of an admitted device. */
const char *loom_vk_dev_name(const loom_vk_dev *d);
const char *loom_vk_dev_uuid(const loom_vk_dev *d);
uint64_t loom_vk_dev_total(const loom_vk_dev *d);
uint64_t loom_vk_dev_free(const loom_vk_dev *d); /* budget - usage, else total - our bytes */
/* Largest span of one allocation piece: a tensor placed in an allocation must not
 * cross a multiple of this (weights are laid out accordingly). */
uint64_t loom_vk_dev_chunk(const loom_vk_dev *d);

/* ---- memory (device addresses; see above) */
/* NULL when the device is out of memory, the fault hook fired, or size is 0. Counts
 * one allocation in the library-wide failure-injection sequence per piece. */
void *loom_vk_alloc(loom_vk_dev *d, size_t size);
void loom_vk_free(loom_vk_dev *d, void *p);
/* Synchronous transfers between host memory and a device range [p, p+n) that lies
 * in one allocation. */
loom_status loom_vk_write(loom_vk_dev *d, void *dst, const void *src, size_t n);
loom_status loom_vk_read(loom_vk_dev *d, void *dst, const void *src, size_t n);
loom_status loom_vk_fill_zero(loom_vk_dev *d, void *dst, size_t n);
/* True when p is a device address of d. */
bool loom_vk_owns(const loom_vk_dev *d, const void *p);

/* Uploads from one load worker: staged and submitted in batches. */
typedef struct loom_vk_uploader loom_vk_uploader;
loom_status loom_vk_uploader_new(loom_vk_dev *d, loom_vk_uploader **out);
loom_status loom_vk_upload(loom_vk_uploader *u, void *dst, const void *src, size_t n);
/* Submit what is staged and wait (flush) or drop it, then free u. */
loom_status loom_vk_uploader_done(loom_vk_uploader *u, bool flush);

/* ---- compute */
/* Can the device run node t (op, types, shapes, binding limits)? Views are always
 * supported (no compute). */
bool loom_vk_supports(const loom_vk_dev *d, const loom_tensor *t);
/* Device scratch bytes the nodes need (max over nodes). */
size_t loom_vk_work_size(const loom_vk_dev *d, loom_tensor *const *nodes, int64_t n);

typedef struct loom_vk_xfer {
    void *dev;   /* device address */
    void *host;  /* host memory */
    size_t n;
} loom_vk_xfer;

typedef struct loom_vk_run_desc {
    loom_tensor *const *nodes; /* data set (device addresses), views resolved here */
    int64_t n_nodes;
    const loom_vk_xfer *up;    /* host -> device before the first node */
    int64_t n_up;
    const loom_vk_xfer *down;  /* device -> host after the last node */
    int64_t n_down;
    void *work;                /* device scratch of loom_vk_work_size bytes (or NULL) */
    size_t work_size;
    loom_abort_cb abort_cb;    /* polled before the submission */
    void *abort_user;
    loom_eval_cb eval_cb;      /* when set: one submission per node, the node's result
                                  readable from host memory during the callback */
    void *eval_user;
} loom_vk_run_desc;

/* Record the run into one command buffer (barriers only between dependent
 * dispatches), submit it, wait on its fence. LOOM_ERR_RANGE when a kernel saw an
 * out-of-range index (get_rows, mul_mat_id), LOOM_ERR_UNSUPPORTED for a node the
 * device cannot run, LOOM_ERR_NOMEM for staging memory, LOOM_ERR_INTERNAL when the
 * device is lost. */
loom_status loom_vk_run(loom_vk_dev *d, const loom_vk_run_desc *r, loom_error *err);

/* Statistics of the last run (tests). */
typedef struct loom_vk_stats {
    int64_t dispatches, barriers, submits, descriptor_writes, uploads, downloads;
    double gpu_ns;          /* device time of the last run's command buffer (timestamps; 0 unknown) */
    int64_t pipelines;      /* created so far */
    int64_t live_allocs;    /* device allocations alive */
} loom_vk_stats;
void loom_vk_get_stats(const loom_vk_dev *d, loom_vk_stats *out);

/* ---- process-wide test hooks */
/* Vulkan memory objects (VkDeviceMemory) alive in the process: back to its old value
 * when everything is freed. */
int64_t loom_vk_live_memory(void);
/* Validation messages (warnings/errors) reported in the process so far, including
 * those emitted while devices and instances were destroyed (leaked objects). */
int64_t loom_vk_process_reports(void);
/* Allocation numbers (loom_alloc_count() values, quant/alloc.h) at which device memory
 * was requested since the last reset: up to max into out; returns how many were
 * recorded (may exceed max). reset clears the trace first. */
int loom_vk_alloc_trace(long *out, int max, bool reset);

#endif
