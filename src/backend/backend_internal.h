/*
 * backend_internal.h (internal) - the loom_backend object shared by backend.c
 * (open/close/accounting), load.c (parallel load) and sched.c (contexts, scheduler).
 */
#ifndef LOOM_BACKEND_INTERNAL_H
#define LOOM_BACKEND_INTERNAL_H

#include "loom_backend.h"
#include "backend/device.h"
#include "core/tensor.h"

#include <stdatomic.h>

#define LOOM_BE_MAX_DEVICES 17 /* CPU + 16 accelerators */
#define LOOM_BE_MAX_SIM 16

/* One weight descriptor created by open (a "target" of one file tensor). */
typedef struct be_weight {
    loom_tensor t;                  /* descriptor: file type/shape, flags WEIGHT|ALLOCATED */
    char name[LOOM_GGUF_MAX_NAME];  /* full name (t.name is truncated to LOOM_MAX_NAME-1) */
    int64_t file_index;             /* source tensor in the GGUF file */
    int dev;                        /* device index (0 = CPU) */
    int layer;                      /* -1 = input weights, else 0..blocks */
    uint64_t nbytes;                /* exact bytes */
    uint64_t offset;                /* in its device's weight buffer (unless mapped) */
    bool mapped;                    /* data points into the file mapping */
    bool repack;                    /* CPU weight stored in the interleaved layout (quant/repack.h) */
} be_weight;

struct loom_backend {
    loom_gguf *gguf;
    loom_backend_params params;     /* copy; pointer members cleared */
    char arch[64];
    int blocks;
    int n_threads;
    int64_t max_nodes;
    bool dry_run;
    bool failed;                    /* open hit NOMEM: only memory_get/close allowed */
    bool use_mmap;                  /* CPU weights that map 1:1 point into the file mapping */
    bool loaded;

    int n_devices;                  /* CPU + accelerators */
    loom_device devices[LOOM_BE_MAX_DEVICES];
    int *layer_dev;                 /* [blocks+1] */

    be_weight *w;                   /* created weights, creation order */
    int64_t n_w, cap_w;
    int64_t *hash;                  /* open addressing: weight index + 1, 0 = empty */
    uint64_t hash_cap;              /* power of two */
    int64_t n_file;                 /* tensors in the file */
    int64_t *tgt_start;             /* [n_file+1] CSR of targets per file tensor */
    int64_t *tgt;                   /* weight indices */

    void *wbuf[LOOM_BE_MAX_DEVICES];       /* weight buffer per device (or NULL) */
    uint64_t wbuf_size[LOOM_BE_MAX_DEVICES];

    loom_backend_memory mem;        /* the live report */
    atomic_int cancel;

    struct loom_vk *vk;             /* Vulkan instance + devices (devices[1 + n_sim + j]) */
    char vk_note[160];              /* why there is no Vulkan device, if none */

    /* scheduler state (sched.c) */
    void *sched;
};

/* Weight index of name, or -1. */
int64_t be_find(const loom_backend *be, const char *name);
/* Cache accounting for a layer allocation: adds size to the cache of layer on its
 * device and sets the status. (Used by sched.c.) */
void be_account_cache(loom_backend *be, int layer, uint64_t size, bool ok);
/* Free scheduler state (sched.c). */
void be_sched_free(loom_backend *be);
/* Runs and cross-device copies of the last compute/reserve (tests). */
void be_sched_counts(const loom_backend *be, int64_t *n_runs, int64_t *n_copies);

static inline uint64_t be_round_up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

#endif
