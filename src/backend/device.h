/*
 * device.h (internal) - the backend's devices: the CPU, simulated accelerators and
 * Vulkan devices (src/backend/vulkan).
 *
 * Every buffer the backend allocates for weights, cache, graph/staging memory goes
 * through loom_device_alloc: it counts the bytes in use per device, enforces a
 * device's capacity (an allocation past it fails exactly like a device OOM: NULL,
 * nothing allocated), and consults the failure-injection hook (fault.h). Simulated
 * devices keep their buffers in separate host allocations and compute with the CPU
 * kernels, so copies are memcpy. A Vulkan device's buffers are device memory: the
 * pointers are device addresses (backend/vulkan/vk.h) that only loom_device_copy /
 * loom_device_fill_zero and the device's own runs may touch (loom_device_is_host
 * is false).
 *
 * Threading: alloc/free/copy may be called from any thread (atomic accounting).
 */
#ifndef LOOM_BACKEND_DEVICE_H
#define LOOM_BACKEND_DEVICE_H

#include "loom_backend.h"

#include <stdatomic.h>

struct loom_vk_dev;

#define LOOM_DEVICE_ALIGN 64   /* buffer base alignment */
#define LOOM_WEIGHT_ALIGN 32   /* per-tensor size rounding / offset alignment (contract §3.5) */

typedef struct loom_device {
    char name[32];
    char id[64];
    loom_device_kind kind;
    bool simulated;
    uint64_t capacity;      /* bytes that may be allocated; UINT64_MAX = unlimited (CPU) */
    uint64_t total_bytes;   /* reported total */
    uint64_t free_at_open;  /* reported free at open */
    atomic_uint_least64_t used; /* bytes currently allocated through this device */
    atomic_uint_least64_t peak;
    struct loom_vk_dev *vk;     /* Vulkan device, else NULL (host memory) */
    uint64_t chunk;             /* a tensor must not cross a multiple of this inside one
                                   buffer (Vulkan: max allocation piece); 0 = no limit */
} loom_device;

/* Fill the CPU device (total from sysconf, free from /proc/meminfo MemAvailable). */
void loom_device_init_cpu(loom_device *d);
/* Fill a simulated GPU of the given capacity. */
void loom_device_init_sim(loom_device *d, const loom_sim_device *sim);
/* Fill a Vulkan device (name "Vulkan<index>", id = UUID, capacity = its heap). */
void loom_device_init_vk(loom_device *d, struct loom_vk_dev *vk, int index);
/* Memory of d is host-addressable (CPU, simulated). */
static inline bool loom_device_is_host(const loom_device *d) { return !d->vk; }

/* Allocate size bytes (>0) aligned to LOOM_DEVICE_ALIGN. NULL when the device is
 * out of memory, the host allocation failed, or the fault hook fired. */
void *loom_device_alloc(loom_device *d, size_t size);
/* True when a fresh loom_device_alloc of size bytes is known to read as zeros (big
 * buffers are anonymous mappings), so a zero-initialised buffer needs no memset. */
bool loom_device_alloc_zeroed(size_t size);
/* Free a buffer from loom_device_alloc of that size. NULL is a no-op. */
void loom_device_free(loom_device *d, void *p, size_t size);
/* Copies between host memory and a device buffer (synchronous). */
loom_status loom_device_copy_in(loom_device *d, void *dst, const void *src, size_t n);
loom_status loom_device_copy_out(loom_device *d, void *dst, const void *src, size_t n);
/* Copy n bytes from src on device sd to dst on device dd (either may be a Vulkan
 * device; two Vulkan devices go through bounce, host memory of n bytes). */
loom_status loom_device_copy(loom_device *dd, void *dst, loom_device *sd, const void *src, size_t n, void *bounce);
loom_status loom_device_fill_zero(loom_device *d, void *dst, size_t n);
/* Free bytes now: capacity - used for simulated devices, MemAvailable for the CPU. */
uint64_t loom_device_free_now(const loom_device *d);

/* Host memory facts (0 when unknown). */
uint64_t loom_host_total_bytes(void);
uint64_t loom_host_available_bytes(void);
/* CPUs this process may run on (>= 1). */
int loom_host_cpu_count(void);

#endif
