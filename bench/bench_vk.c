/* loom bench vk: the Vulkan kernels on a device, timed with GPU timestamps around each
 * run's command buffer (loom_vk_stats.gpu_ns; wall clock where the queue has none).
 *
 *   copy      a byte copy of a large buffer: the device's achievable bandwidth
 *             (read + write bytes / time), the reference for the rows below;
 *   decode    per weight type: matrix x vector over 8 distinct [K, M] weights (more
 *             than the largest GPU L2 together), weight bytes / time as GB/s and as a
 *             fraction of the copy bandwidth;
 *   prompt    per weight type: one [K, M] weight x 512 columns, TFLOP/s.
 * The float path and (with --int8) the int8-dot path. Nothing is asserted; see
 * bench/README.md and docs/vulkan.md. Needs a Vulkan device (LOOM_VK_DEVICES=all
 * admits software ones such as lavapipe; use --quick there). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "backend/backend_internal.h"
#include "backend/vulkan/vk.h"
#include "bench.h"
#include "cli_util.h"
#include "loom.h"
#include "loom_gguf.h"

static double bv_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

typedef struct bv {
    loom_backend *be;
    loom_vk_dev *vk;
    int reps;
} bv;

/* Median device seconds of computing out (graph of ctx) reps times. */
static double timed(bv *b, loom_ctx *ctx, loom_tensor *out) {
    double best[64];
    int n = b->reps < 64 ? b->reps : 64;
    for (int r = 0; r <= n; r++) {
        double t0 = bv_now();
        if (loom_ctx_compute(ctx, 1, &out) != LOOM_OK) {
            fprintf(stderr, "loom bench vk: %s\n", loom_ctx_error(ctx));
            return -1;
        }
        double wall = bv_now() - t0;
        loom_vk_stats st;
        loom_vk_get_stats(b->vk, &st);
        if (r > 0) best[r - 1] = st.gpu_ns > 0 ? st.gpu_ns * 1e-9 : wall; /* r == 0: warm-up */
    }
    for (int i = 1; i < n; i++) /* median */
        for (int j = i; j > 0 && best[j] < best[j - 1]; j--) {
            double t = best[j];
            best[j] = best[j - 1];
            best[j - 1] = t;
        }
    return best[n / 2];
}

static loom_tensor *weight(loom_ctx *lc, loom_type t, int64_t K, int64_t M, unsigned seed) {
    size_t rb = 0;
    if (loom_type_row_bytes(t, K, &rb)) return NULL;
    unsigned char *q = malloc(rb * (size_t)M);
    float *x = malloc((size_t)K * sizeof *x);
    if (!q || !x) {
        free(q);
        free(x);
        return NULL;
    }
    /* 16 distinct quantized rows, repeated (the reference quantizers are slow) */
    uint64_t s = 0x9E3779B97F4A7C15ull ^ seed;
    for (int64_t r = 0; r < M; r++) {
        if (r < 16) {
            for (int64_t i = 0; i < K; i++) {
                s ^= s << 13;
                s ^= s >> 7;
                s ^= s << 17;
                x[i] = (float)((double)(s >> 11) / 4503599627370496.0 - 1.0);
            }
            loom_quantize_row(t, x, q + (size_t)r * rb, K);
        } else {
            memcpy(q + (size_t)r * rb, q + (size_t)(r % 16) * rb, rb);
        }
    }
    int64_t ne[2] = {K, M};
    loom_tensor *w = loom_from_bytes(lc, t, q, rb * (size_t)M, 2, ne);
    free(q);
    free(x);
    return w;
}

static const char *bv_tmp_gguf(void) {
    static char path[96];
    snprintf(path, sizeof path, "/tmp/loom_bench_vk_%d.gguf", (int)getpid());
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

int loom_bench_vk(int argc, char **argv) {
    bool quick = false, json = false, int8 = false;
    const char *types = "F16,Q8_0,Q4_0,Q4_1,Q5_0,Q4_K,Q5_K,Q6_K,Q2_K,Q3_K,MXFP4";
    loom_backend_params p = loom_backend_default_params();
    cli_vk_env(&p.vk_devices, &p.vk_flags);
    p.vk_loader = cli_vk_loader();
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--quick")) quick = true;
        else if (!strcmp(argv[i], "--json")) json = true;
        else if (!strcmp(argv[i], "--int8")) int8 = true;
        else if (!strcmp(argv[i], "--types") && i + 1 < argc) types = argv[++i];
        else if (!strcmp(argv[i], "--vk-devices") && i + 1 < argc) p.vk_devices = argv[++i];
        else {
            fprintf(stderr, "usage: loom bench vk [--quick] [--int8] [--types F16,Q4_0,...] [--vk-devices LIST] [--json]\n");
            return strcmp(argv[i], "-h") && strcmp(argv[i], "--help") ? 2 : 0;
        }
    }
    if (int8) p.vk_flags |= LOOM_VK_FORCE_INT8;
    p.n_gpu_layers = 99;
    const char *path = bv_tmp_gguf();
    loom_error e = {0};
    bv b = {0};
    b.reps = quick ? 3 : 9;
    if (!path || loom_backend_open(path, &p, &b.be, &e)) {
        fprintf(stderr, "loom bench vk: %s\n", path ? e.msg : "cannot write a temporary file");
        if (path) unlink(path);
        return 1;
    }
    unlink(path);
    int dev = loom_backend_layer_device(b.be, 0);
    if (dev < 1 || !b.be->devices[dev].vk) {
        fprintf(stderr, "loom bench vk: no Vulkan device (%s); LOOM_VK_DEVICES=all admits software devices\n",
                b.be->vk_note);
        loom_backend_close(b.be);
        return 1;
    }
    b.vk = b.be->devices[dev].vk;
    const int64_t K = 4096, M = quick ? 2048 : 14336, NW = quick ? 2 : 8, NP = quick ? 64 : 512;
    if (!json)
        printf("device %s (%s), %s path, timing: %s\n", loom_vk_dev_name(b.vk), b.be->devices[dev].id,
               int8 ? "int8-dot" : "float", "GPU timestamps (wall clock where unavailable)");

    /* copy bandwidth */
    double copy_bw = 0;
    {
        loom_ctx *ctx = NULL;
        loom_backend_ctx_new(b.be, 0, &ctx, &e);
        int64_t n = quick ? (16 << 20) : (256 << 20); /* floats: 64 MiB / 1 GiB */
        int64_t ne[1] = {n};
        loom_tensor *a = ctx ? loom_zeros(loom_ctx_layer(ctx, 0), LOOM_TYPE_F32, 1, ne) : NULL;
        loom_tensor *c = ctx ? loom_dup(ctx, a) : NULL;
        if (ctx && !loom_ctx_status(ctx)) {
            loom_ctx_forward(ctx, c);
            double t = timed(&b, ctx, c);
            if (t > 0) copy_bw = 2.0 * (double)n * 4.0 / t;
        }
        if (!json) printf("copy %.0f MiB: %.1f GB/s (read + write)\n", (double)n * 4 / 1048576.0, copy_bw / 1e9);
        loom_ctx_free(ctx);
    }
    if (json) printf("{\"device\": \"%s\", \"int8\": %s, \"copy_gbs\": %.2f, \"types\": [", loom_vk_dev_name(b.vk),
                     int8 ? "true" : "false", copy_bw / 1e9);
    else printf("\n| type | weights MiB | decode us | decode GB/s | of copy bw | prompt%lld TFLOP/s |\n"
                "| --- | ---: | ---: | ---: | ---: | ---: |\n", (long long)NP);
    char buf[256];
    snprintf(buf, sizeof buf, "%s", types);
    int first = 1;
    for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
        loom_type t;
        if (!loom_type_from_name(tok, &t)) {
            fprintf(stderr, "loom bench vk: unknown type %s\n", tok);
            continue;
        }
        loom_ctx *ctx = NULL;
        if (loom_backend_ctx_new(b.be, 0, &ctx, &e)) break;
        loom_ctx *lc = loom_ctx_layer(ctx, 0);
        loom_tensor *w[8];
        size_t wbytes = 0;
        for (int i = 0; i < NW; i++) w[i] = weight(lc, t, K, M, (unsigned)i);
        int64_t nx[2] = {K, 1}, np[2] = {K, NP};
        float *xs = malloc((size_t)(K * NP) * sizeof *xs);
        for (int64_t i = 0; i < K * NP; i++) xs[i] = (float)((i * 37) % 101) / 101.0f - 0.5f;
        loom_tensor *x = loom_from_f32(lc, xs, (size_t)K, 2, nx), *xp;
        if (loom_ctx_status(ctx)) {
            fprintf(stderr, "loom bench vk: %s: %s\n", tok, loom_ctx_error(ctx));
            loom_ctx_free(ctx);
            free(xs);
            continue;
        }
        /* decode: the 8 products summed into one output so the graph has one result */
        loom_tensor *acc = NULL;
        for (int i = 0; i < NW; i++) {
            loom_tensor *y = loom_mul_mat(ctx, w[i], x);
            acc = acc ? loom_add(ctx, acc, y) : y;
            wbytes += loom_tensor_nbytes(w[i]);
        }
        loom_ctx_forward(ctx, acc);
        double td = timed(&b, ctx, acc);
        loom_ctx_free(ctx);
        /* prompt: one weight x NP columns */
        if (loom_backend_ctx_new(b.be, 0, &ctx, &e)) {
            free(xs);
            break;
        }
        lc = loom_ctx_layer(ctx, 0);
        loom_tensor *w0 = weight(lc, t, K, M, 99);
        xp = loom_from_f32(lc, xs, (size_t)(K * NP), 2, np);
        free(xs);
        loom_tensor *yp = loom_mul_mat(ctx, w0, xp);
        loom_ctx_forward(ctx, yp);
        double tp = loom_ctx_status(ctx) ? -1 : timed(&b, ctx, yp);
        loom_ctx_free(ctx);
        double gbs = td > 0 ? (double)wbytes / td : 0, tf = tp > 0 ? 2.0 * (double)K * (double)M * NP / tp / 1e12 : 0;
        if (json)
            printf("%s{\"type\": \"%s\", \"weight_bytes\": %zu, \"decode_s\": %.9f, \"decode_gbs\": %.2f, "
                   "\"decode_of_copy\": %.4f, \"prompt_s\": %.9f, \"prompt_tflops\": %.3f}",
                   first ? "" : ", ", tok, wbytes, td, gbs / 1e9, copy_bw > 0 ? gbs / copy_bw : 0, tp, tf);
        else
            printf("| %s | %.1f | %.1f | %.1f | %.0f%% | %.2f |\n", tok, (double)wbytes / 1048576.0, td * 1e6,
                   gbs / 1e9, copy_bw > 0 ? 100.0 * gbs / copy_bw : 0, tf);
        first = 0;
    }
    if (json) printf("]}\n");
    loom_backend_close(b.be);
    return 0;
}
