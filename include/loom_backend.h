/*
 * loom_backend.h - a model file opened onto devices.
 *
 * loom_backend_open decides which device holds every tensor (CPU and accelerators;
 * simulated devices for tests/planning), accounts every byte per device and per
 * layer, and allocates weight buffers - before reading any weight byte.
 * loom_backend_load then reads the weights in parallel with progress and
 * cancellation. Model code creates one context per forward pass with
 * loom_backend_ctx_new, builds a graph with the ops of loom.h, and computes it;
 * the scheduler splits the graph by device.
 *
 * Example:
 *     loom_backend_params p = loom_backend_default_params();
 *     p.n_gpu_layers = 6;
 *     loom_backend_memory rep;
 *     p.nomem_report = &rep;
 *     loom_backend *be; loom_error err = {0};
 *     loom_status s = loom_backend_open("m.gguf", &p, &be, &err);
 *     if (s == LOOM_ERR_NOMEM) { ... re-plan with rep ...; loom_backend_memory_free(&rep); }
 *     else if (s) { fprintf(stderr, "%s\n", err.msg); }
 *     s = loom_backend_load(be, progress_cb, user, &err);
 *
 * Layer placement follows the backend contract (§3.3): the last n_gpu_layers
 * repeating layers go to accelerators; the output layer only when
 * n_gpu_layers >= block_count + 1. Memory report layout (§1.3): per device,
 * weights[] and cache[] have block_count+1 entries (last = output layer).
 *
 * Threading: one thread uses a backend at a time, except loom_backend_cancel,
 * which may be called from any thread during load or compute.
 */
#ifndef LOOM_BACKEND_H
#define LOOM_BACKEND_H

#include "loom.h"
#include "loom_gguf.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct loom_backend loom_backend;

typedef enum loom_device_kind {
    LOOM_DEVICE_CPU = 0,
    LOOM_DEVICE_GPU = 1,
    LOOM_DEVICE_ACCEL = 2
} loom_device_kind;

/* A simulated accelerator: kind GPU, fixed capacity, separate buffers, computes
 * with the CPU kernels. Allocations past the capacity fail like a device OOM. */
typedef struct loom_sim_device {
    char name[32];
    uint64_t memory_bytes;
} loom_sim_device;

/* Parse "gpu0=512MiB,gpu1=256MiB" (units B, KiB, MiB, GiB; no unit = bytes) into
 * at most max devices. LOOM_ERR_INVALID_ARG with a message on a malformed spec. */
loom_status loom_sim_devices_parse(const char *spec, loom_sim_device *out, int max, int *n_out,
                                   loom_error *err);

/* Tensor split (per-accelerator proportions of the offloaded layers, contract §3.2).
 * At most LOOM_TENSOR_SPLIT_MAX entries. */
#define LOOM_TENSOR_SPLIT_MAX 64
/* Parse "3,1" (or "3/1") into at most max proportions and check them as
 * loom_tensor_split_check does. LOOM_ERR_INVALID_ARG with a message naming the
 * element on a malformed list or a refused value; *n_out is 0 then. */
loom_status loom_tensor_split_parse(const char *spec, float *out, int max, int *n_out, loom_error *err);
/* The values loom_backend_open accepts: 1..LOOM_TENSOR_SPLIT_MAX proportions, each
 * finite and >= 0, not all zero, whose float32 sum is finite. (The contract takes an
 * all-zero list to mean "by free memory"; Loom refuses it as a likely mistake: give
 * no split for that.) LOOM_ERR_INVALID_ARG with a message otherwise. */
loom_status loom_tensor_split_check(const float *split, int n, loom_error *err);

typedef struct loom_backend_params {
    int n_threads;            /* CPU threads; 0 = physical cores available */
    int n_gpu_layers;         /* trailing layers (incl. output pseudo-layer) on accelerators */
    const float *tensor_split;/* per-accelerator proportions (see loom_tensor_split_check);
                                 NULL / n_tensor_split 0 = by free memory */
    int n_tensor_split;
    bool flash_attn;          /* contexts use flash attention; selects the cache config */
    bool dry_run;             /* plan and account only: no buffers, load/compute refused */
    bool no_mmap;             /* read weights with pread instead of mapping the file.
                                 Default (false): CPU weights that are their own file
                                 tensor point into a read-only MAP_PRIVATE mapping and
                                 load only faults the pages in (measured ~10x faster
                                 than pread into buffers, warm and cold cache); copies
                                 (tied output, rope per layer) and accelerator weights
                                 are always read into buffers. Mapped bytes are still
                                 accounted as weights. Truncating the file while it is
                                 mapped raises SIGBUS: use no_mmap if that can happen. */
    const loom_sim_device *sim_devices; /* simulated accelerators, or NULL */
    int n_sim_devices;        /* 0 = none (the library reads no environment; the CLI
                                 maps LOOM_SIM_DEVICES onto these) */
    int64_t max_nodes;        /* graph node limit; 0 = max(8192, 5 * tensors) */
    /* Opt-in CPU weight repacking (an extension of contract §4, which copies raw
     * bytes). A CPU weight for which repack_filter(name, repack_user) returns true
     * and whose type and shape the process's kernel level has a faster interleaved
     * layout for (today: rows a multiple of 16, 2-D or a 3-D stack of experts; Q4_0,
     * Q8_0, IQ4_NL, Q4_K, Q5_K, Q6_K and IQ4_XS from the AVX2 level up, Q2_K, Q4_1, Q5_0
     * and Q5_1 from the AVX-512 VNNI level up; none at scalar or NEON)
     * is read into the CPU weight buffer (not mapped) and rearranged after its last
     * byte is read. Same size, same accounting. Such a tensor may only be the weight
     * operand (a) of loom_mul_mat (2-D) or loom_mul_mat_id (3-D): any other use fails
     * when the graph is built (LOOM_ERR_UNSUPPORTED). NULL (default): every weight keeps the GGUF layout
     * (the CLI maps LOOM_REPACK=0 and --no-repack onto that). The filter is called during
     * open, on the opening thread, and not kept. */
    bool (*repack_filter)(const char *name, void *user);
    void *repack_user;
    /* Optional (NULL = none): when loom_backend_open fails with LOOM_ERR_NOMEM, a deep
     * copy of the memory report (every entry's size, the failed allocations with their
     * attempted size and status Failed), for the caller to re-plan with (contract
     * §1.3's ErrNoMem). Zeroed on entry to every open, so loom_backend_memory_free on
     * it is always safe; filled only on NOMEM. Free it with loom_backend_memory_free. */
    struct loom_backend_memory *nomem_report;
    /* ---- Vulkan devices (builds with the Vulkan backend; see docs/vulkan.md). The
     * library reads no environment variable for these: the CLI fills them from
     * LOOM_VK_DEVICES. Admitted Vulkan devices come after the simulated ones in the
     * device list (index 1 + n_sim_devices + j). Vulkan is opened only when
     * n_gpu_layers > 0 (loom_devices_list shows the devices either way). */
    const char *vk_devices;   /* which physical devices to use: NULL or "" = the real GPUs
                                 (discrete, integrated; not CPU/software devices such as
                                 Mesa's lavapipe); "all" = every device; "none" = no Vulkan;
                                 "0,2" = these physical-device indices (any type). A
                                 malformed list is LOOM_ERR_INVALID_ARG. */
    unsigned vk_flags;        /* LOOM_VK_* below */
    const char *vk_loader;    /* loader library to dlopen; NULL = "libvulkan.so.1". A loader
                                 that cannot be opened means no Vulkan devices (not an error) */
    uint64_t vk_max_binding;  /* 0 = the device's maxStorageBufferRange; smaller values cap
                                 the bytes one shader binding may span (tests of big-tensor
                                 splitting on small tensors) */
    uint64_t vk_max_alloc;    /* 0 = the device's maxMemoryAllocationSize; smaller values cap
                                 one device memory allocation (tests) */
} loom_backend_params;

/* loom_backend_params.vk_flags */
#define LOOM_VK_VALIDATE (1u << 0)      /* enable VK_LAYER_KHRONOS_validation when installed and
                                           count its warnings/errors (loom_backend_vk_reports) */
#define LOOM_VK_FORCE_INT8 (1u << 1)    /* quantized matmuls always take the int8-dot path
                                           (activations quantized to 8 bits; tests) */
#define LOOM_VK_NO_INT8 (1u << 2)       /* never take the int8-dot path */
#define LOOM_VK_FORCE_STAGING (1u << 3) /* never write/read device memory through a host
                                           mapping, even on unified-memory devices (tests) */
#define LOOM_VK_NO_DOT (1u << 4)        /* int8-dot path without the device's packed integer
                                           dot product (OpSDot), even where it has one (tests) */

loom_backend_params loom_backend_default_params(void);

/* ---- memory accounting (contract §1.3) */
typedef enum loom_alloc_status {
    LOOM_ALLOC_UNALLOCATED = 0,
    LOOM_ALLOC_FAILED = 1,    /* size holds the attempted size */
    LOOM_ALLOC_ALLOCATED = 2
} loom_alloc_status;

typedef struct loom_memory {
    uint64_t size;
    loom_alloc_status status;
} loom_memory;

typedef struct loom_device_memory {
    char name[32];            /* "CPU", "gpu0", ... */
    char id[64];              /* device id string ("" for the CPU) */
    loom_device_kind kind;
    uint64_t total_bytes;     /* capacity (host RAM for the CPU) */
    uint64_t free_bytes;      /* free at open */
    int n_layers;             /* block_count + 1 */
    loom_memory *weights;     /* [n_layers]; last = output layer */
    loom_memory *cache;       /* [n_layers] */
    loom_memory graph;        /* compute buffer, max over reserves */
} loom_device_memory;

typedef struct loom_backend_memory {
    loom_memory input_weights;     /* token embeddings and other CPU-forced tensors */
    int n_devices;                 /* devices[0] is the CPU, then accelerators in order */
    loom_device_memory *devices;
} loom_backend_memory;

/* Deep copy of the current report into *out (free with loom_backend_memory_free). */
loom_status loom_backend_memory_get(const loom_backend *be, loom_backend_memory *out);
void loom_backend_memory_free(loom_backend_memory *m);
/* Sum of every entry's size (weights + cache + graph + input weights). */
uint64_t loom_backend_memory_total(const loom_backend_memory *m);

/* ---- cache configuration (contract §1.4/§3.9) */
typedef struct loom_cache_config {
    int cache_padding;        /* FA: 256, else 32 */
    bool permuted_v;          /* FA: false, else true */
    loom_type mask_type;      /* FA: F16, else F32 */
    int mask_batch_padding;   /* FA: 64, else 1 */
} loom_cache_config;

/* ---- lifecycle */

/* Open path, place and account every tensor, allocate weight buffers (unless
 * dry_run). No weight bytes are read. On every failure *out is NULL (the rule of
 * loom_base.h); on LOOM_ERR_NOMEM the memory report is in params->nomem_report when
 * the caller gave one. A tensor whose layer index >= block_count is LOOM_ERR_FORMAT. */
loom_status loom_backend_open(const char *path, const loom_backend_params *params,
                              loom_backend **out, loom_error *err);

/* Progress: bytes done / total (called from worker threads, possibly
 * concurrently; keep it cheap). Return false to cancel the load. */
typedef bool (*loom_progress_cb)(uint64_t done, uint64_t total, void *user);

/* Read all weights into their buffers with a pool of min(n_threads, tensors)
 * workers, each with its own file descriptor, in 128 KiB chunks written to every
 * target of a file tensor. Progress total = file size - data offset. Cancellation
 * (the callback or loom_backend_cancel) and I/O errors (short reads included)
 * stop all workers at their next chunk boundary and return LOOM_ERR_CANCELLED /
 * LOOM_ERR_IO (message names the tensor and file offset). Worker resources are
 * freed; weight buffers stay until close, so the backend stays closable and a
 * later load may retry. LOOM_ERR_INVALID_ARG on a dry-run backend. */
loom_status loom_backend_load(loom_backend *be, loom_progress_cb cb, void *user, loom_error *err);
/* Ask a running load or compute to stop. Thread-safe, async-signal-unsafe. */
void loom_backend_cancel(loom_backend *be);
void loom_backend_close(loom_backend *be); /* NULL is a no-op */

/* ---- what model code uses */
const loom_gguf *loom_backend_gguf(const loom_backend *be);
const char *loom_backend_arch(const loom_backend *be);  /* general.architecture or "" */
int loom_backend_block_count(const loom_backend *be);
/* Weight tensor by name (incl. the tied "output.weight" copy and per-layer
 * "blk.N.rope_freqs.weight" copies), or NULL when absent. Read-only. */
loom_tensor *loom_backend_get_tensor(const loom_backend *be, const char *name);
loom_cache_config loom_backend_cache_config(const loom_backend *be);
bool loom_backend_flash_attn(const loom_backend *be);
int64_t loom_backend_max_nodes(const loom_backend *be);
/* New root context (max_nodes 0 = backend max; more is LOOM_ERR_INVALID_ARG).
 * Use loom_ctx_input/loom_ctx_layer to create tensors (tensors created on the root
 * itself go to the CPU, uncounted, like input()); free with loom_ctx_free before
 * loom_backend_close. Layer allocations are counted as cache (Failed + NOMEM when
 * the device is full); reserve/compute record per-device compute memory as graph
 * (planned nodes + staging for cross-device copies + executor work area; buffers
 * only grow, so graph is the max over calls; NOMEM leaves Failed + attempted size).
 * Refused (LOOM_ERR_INVALID_ARG) on dry-run backends. */
loom_status loom_backend_ctx_new(loom_backend *be, int64_t max_nodes, loom_ctx **out, loom_error *err);
/* A compute follows soon (e.g. on a context kept from an earlier step, which
 * loom_backend_ctx_new did not just create): wakes the CPU worker threads now so the
 * compute does not wait for them. Optional and cheap; contexts from
 * loom_backend_ctx_new do it themselves. NULL, dry-run and not-yet-computing backends:
 * a no-op. Call from the thread that computes. */
void loom_backend_warm(loom_backend *be);

/* ---- planning hooks (model code, dry runs: `loom plan`)
 * Add bytes to the cache of layer (0..block_count) on that layer's device, as a
 * layer(i) allocation would (status stays Unallocated on a dry-run backend).
 * LOOM_ERR_INVALID_ARG for a bad layer. */
loom_status loom_backend_account_cache(loom_backend *be, int layer, uint64_t bytes);
/* Record a compute-buffer size for device dev (kept as the max over calls, like
 * reserve does). LOOM_ERR_INVALID_ARG for a bad device index. */
loom_status loom_backend_account_graph(loom_backend *be, int dev, uint64_t bytes);
/* Bytes of work area (converted / packed activations) that the product of weight w by
 * n_cols F32 activation columns asks of device dev's compute buffer: the CPU engine's
 * own sizing (loom_cpu_work_size_mul_mat) at the backend's thread count; 0 for NULL
 * arguments, a bad device, n_cols <= 0 and Vulkan devices (sized per graph). For dry-run
 * estimates (`loom plan`); reading w's type and shape only, any thread. */
uint64_t loom_backend_mul_mat_work(const loom_backend *be, int dev, const loom_tensor *w, int64_t n_cols);
/* The same for an expert product (mul_mat_id) of w [K, rows, experts] over n_cols tokens
 * with n_used experts each (loom_cpu_work_size_mul_mat_id: the (slot, token) pairs grouped
 * by expert and their activations converted per pair); 0 also for n_used <= 0. */
uint64_t loom_backend_mul_mat_id_work(const loom_backend *be, int dev, const loom_tensor *w, int64_t n_used,
                                      int64_t n_cols);
/* True when opened with params.dry_run (no buffers; load/compute refused). */
bool loom_backend_is_dry_run(const loom_backend *be);

/* ---- devices */
typedef struct loom_device_info {
    char name[128];           /* "CPU", a simulated device's name, a Vulkan device's name */
    char id[64];              /* UUID string for Vulkan devices ("" for the CPU) */
    char type[16];            /* "cpu", "simulated", "discrete", "integrated", "virtual",
                                 "cpu-vulkan" (a software Vulkan device), "other" */
    char driver[64];          /* Vulkan driver name + info, else "" */
    loom_device_kind kind;
    int vk_index;             /* Vulkan physical-device index, -1 otherwise */
    bool used;                /* would be used by loom_backend_open with these params */
    uint64_t total_bytes;     /* device-local memory (host RAM for the CPU) */
    uint64_t free_bytes;      /* free now (VK_EXT_memory_budget where present) */
    char note[160];           /* why a device is not used, or facts (subgroup, fp16, int8 dot) */
} loom_device_info;

/* List the devices loom_backend_open would see with params p (NULL = defaults): the
 * CPU, the simulated devices, then every Vulkan physical device (used or not, with
 * the reason in note). Up to max entries into out; *n_out = the number written.
 * No model is needed. A missing Vulkan loader or driver lists only CPU/simulated
 * devices (note on the CPU entry says why). */
loom_status loom_devices_list(const loom_backend_params *p, loom_device_info *out, int max, int *n_out,
                              loom_error *err);
/* Validation-layer messages (warnings and errors) reported since open on a backend
 * opened with LOOM_VK_VALIDATE (0 otherwise). */
int64_t loom_backend_vk_reports(const loom_backend *be);

/* ---- placement queries */
int loom_backend_device_count(const loom_backend *be);        /* CPU + accelerators */
const char *loom_backend_device_name(const loom_backend *be, int dev);
/* Device index holding repeating layer i (0..block_count-1) or, for
 * i == block_count, the output layer. -1 if out of range. */
int loom_backend_layer_device(const loom_backend *be, int layer);

#ifdef __cplusplus
}
#endif
#endif /* LOOM_BACKEND_H */
