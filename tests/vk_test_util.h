/* Helpers of the Vulkan tests: a backend whose layer 0 lives on a Vulkan device (so
 * tensors created through loom_ctx_layer(ctx, 0) are device memory and ops on them
 * run there), the same graph on the standalone CPU engine, comparisons, and the skip
 * convention (exit code 77 with a visible reason when no Vulkan device exists). */
#ifndef LOOM_VK_TEST_UTIL_H
#define LOOM_VK_TEST_UTIL_H

#include "test_util.h"
#include "backend/backend_internal.h"
#include "backend/vulkan/vk.h"
#include "loom_gguf.h"

#include <unistd.h>

/* Exit with the skip code (test_util.h test_skip), saying why. */
static inline void vk_test_skip(const char *name, const char *why) { exit(test_skip(name, why)); }

/* A minimal GGUF: block_count 1 and one layer tensor (so layer 0 exists). */
static inline const char *vk_test_gguf(void) {
    static char path[96];
    snprintf(path, sizeof path, "/tmp/loom_vk_test_%d.gguf", (int)getpid());
    loom_gguf_writer *w;
    if (loom_gguf_writer_new(&w)) return NULL;
    loom_gguf_writer_add_str(w, "general.architecture", "llama", 5);
    loom_gguf_writer_add_u32(w, "llama.block_count", 1);
    float x[32] = {0};
    int64_t ne[1] = {32};
    loom_gguf_writer_add_tensor(w, "blk.0.dummy.weight", LOOM_TYPE_F32, 1, ne, x);
    loom_error e = {0};
    bool ok = loom_gguf_writer_write_file(w, path, &e) == LOOM_OK;
    loom_gguf_writer_free(w);
    return ok ? path : NULL;
}

/* Open a backend with layer 0 (and the output layer) on the first Vulkan device, with
 * extra params applied by the caller through p (vk_devices defaults to "all"). Skips
 * the test (exit 77) when there is no Vulkan device. */
static inline loom_backend *vk_test_backend(const char *test, loom_backend_params *p) {
    const char *path = vk_test_gguf();
    if (!path) {
        fprintf(stderr, "%s: cannot write the test GGUF\n", test);
        exit(1);
    }
    loom_backend_params q = p ? *p : loom_backend_default_params();
    if (!q.vk_devices) q.vk_devices = "all";
    q.n_gpu_layers = 99;
    if (!q.n_threads) q.n_threads = 2;
    q.vk_flags |= LOOM_VK_VALIDATE;
    loom_backend *be = NULL;
    loom_error e = {0};
    loom_status s = loom_backend_open(path, &q, &be, &e);
    unlink(path);
    if (s) {
        fprintf(stderr, "%s: backend open: %s\n", test, e.msg);
        exit(1);
    }
    if (!be->vk || loom_backend_layer_device(be, 0) < 1 || !be->devices[loom_backend_layer_device(be, 0)].vk) {
        char why[256];
        snprintf(why, sizeof why, "no Vulkan device (%s)", be->vk_note[0] ? be->vk_note : "none admitted");
        loom_backend_close(be);
        vk_test_skip(test, why);
    }
    return be;
}

/* nrmse of got against ref (double), NaN-aware: a NaN anywhere in one and not the
 * other makes it infinite. */
static inline double vk_nrmse(const float *got, const double *ref, size_t n) {
    double num = 0, den = 0;
    for (size_t i = 0; i < n; i++) {
        if (isnan(got[i]) != isnan(ref[i])) return INFINITY;
        if (isnan(ref[i])) continue;
        double d = (double)got[i] - ref[i];
        num += d * d;
        den += ref[i] * ref[i];
    }
    if (den == 0) return sqrt(num);
    return sqrt(num / den);
}

static inline double vk_maxabs(const float *got, const float *ref, size_t n) {
    double m = 0;
    for (size_t i = 0; i < n; i++) {
        if (isnan(got[i]) && isnan(ref[i])) continue;
        double d = fabs((double)got[i] - (double)ref[i]);
        if (isnan(d)) return INFINITY;
        if (d > m) m = d;
    }
    return m;
}

static uint64_t g_vk_rng = 0x243F6A8885A308D3ull;
static inline float vk_rnd(void) { /* uniform [-1, 1) */
    g_vk_rng ^= g_vk_rng << 13;
    g_vk_rng ^= g_vk_rng >> 7;
    g_vk_rng ^= g_vk_rng << 17;
    return (float)((double)(g_vk_rng >> 11) / 4503599627370496.0 - 1.0);
}

#endif
