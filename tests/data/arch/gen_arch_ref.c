/* gen_arch_ref.c - llama.cpp's logits for the synthetic models of `loom gen --arch`, as
 * reference data for Loom's test_llm_arch (README.md says how it is built and run). A
 * test-data generator written for Loom against llama.cpp's public header llama.h; not
 * part of Loom and not built by CMake.
 *
 *   gen_arch_ref fnv FILE                 FNV-1a 64 of the file's bytes (16 hex digits)
 *   gen_arch_ref logits MODEL IDS OUT RUN  logits of every position of IDS (comma-
 *                                         separated) as int32 n, int32 n_vocab, float32
 *                                         [n][n_vocab]; CPU, 1 thread, n_ctx 256, one
 *                                         batch, no extra buffer types (no AMX or
 *                                         repacked weights). RUN: "default" (llama.cpp's default
 *                                         context: flash attention auto, F16 cache) or
 *                                         "f32" (flash attention off, F32 cache) or
 *                                         "q8_0" / "q4_0" (flash attention on, K and V
 *                                         caches of that type: Hadamard-turned)
 *   gen_arch_ref bench MODEL PP TG THREADS REPS
 *                                         llama.cpp's prompt (one batch of PP tokens) and
 *                                         generation (TG single-token steps) speed, median
 *                                         t/s of REPS runs, without extra buffer types
 *                                         (llama-bench cannot: AMX faults here)
 *   gen_arch_ref cmp REF X                 rms and max |x - ref| of two logits files and
 *                                         the share of positions whose argmax agrees
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <time.h>

#include "llama.h"

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int cmp_dbl(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static int bench(const char *path, int pp, int tg, int nth, int reps) {
    llama_backend_init();
    struct llama_model_params mp = llama_model_default_params();
    mp.n_gpu_layers = 0;
    mp.use_extra_bufts = false;
    struct llama_model *m = llama_model_load_from_file(path, mp);
    if (!m || pp < 1 || tg < 1 || reps < 1 || reps > 64) return 1;
    struct llama_context_params cp = llama_context_default_params();
    cp.n_ctx = (uint32_t)(pp + tg + 16);
    cp.n_batch = (uint32_t)pp;
    cp.n_ubatch = (uint32_t)pp;
    cp.n_threads = nth;
    cp.n_threads_batch = nth;
    struct llama_context *ctx = llama_init_from_model(m, cp);
    if (!ctx) return 1;
    int32_t nv = llama_vocab_n_tokens(llama_model_get_vocab(m));
    double tpp[64], ttg[64];
    struct llama_batch b = llama_batch_init(pp, 0, 1);
    for (int r = -1; r < reps; r++) { /* r = -1: warm-up */
        llama_memory_clear(llama_get_memory(ctx), true);
        for (int i = 0; i < pp; i++) {
            b.token[i] = (llama_token)((i * 7 + 1) % nv);
            b.pos[i] = i;
            b.n_seq_id[i] = 1;
            b.seq_id[i][0] = 0;
            b.logits[i] = i == pp - 1;
        }
        b.n_tokens = pp;
        double t0 = now_s();
        if (llama_decode(ctx, b)) return 1;
        double t1 = now_s();
        for (int i = 0; i < tg; i++) {
            b.token[0] = (llama_token)((i * 13 + 3) % nv);
            b.pos[0] = pp + i;
            b.logits[0] = 1;
            b.n_tokens = 1;
            if (llama_decode(ctx, b)) return 1;
        }
        double t2 = now_s();
        if (r >= 0) {
            tpp[r] = pp / (t1 - t0);
            ttg[r] = tg / (t2 - t1);
        }
    }
    qsort(tpp, (size_t)reps, sizeof *tpp, cmp_dbl);
    qsort(ttg, (size_t)reps, sizeof *ttg, cmp_dbl);
    printf("pp%d %.2f t/s  tg%d %.2f t/s  (median of %d, %d threads)\n", pp, tpp[reps / 2], tg, ttg[reps / 2], reps, nth);
    llama_batch_free(b);
    llama_free(ctx);
    llama_model_free(m);
    return 0;
}

static int parse_ids(const char *s, llama_token *ids, int max) {
    int n = 0;
    while (*s && n < max) {
        ids[n++] = (llama_token)strtol(s, (char **)&s, 10);
        if (*s == ',') s++;
    }
    return n;
}

static void put_i32(FILE *f, int32_t v) { fwrite(&v, 4, 1, f); }

static float *read_logits(const char *path, int32_t *n, int32_t *nv) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    float *v = NULL;
    if (fread(n, 4, 1, f) == 1 && fread(nv, 4, 1, f) == 1 && *n > 0 && *nv > 0) {
        size_t c = (size_t)*n * (size_t)*nv;
        v = malloc(c * sizeof *v);
        if (v && fread(v, sizeof *v, c, f) != c) {
            free(v);
            v = NULL;
        }
    }
    fclose(f);
    return v;
}

int main(int argc, char **argv) {
    if (argc == 3 && !strcmp(argv[1], "fnv")) {
        FILE *f = fopen(argv[2], "rb");
        if (!f) return 1;
        uint64_t h = 0xcbf29ce484222325ull;
        int c;
        while ((c = fgetc(f)) != EOF) h = (h ^ (uint8_t)c) * 0x100000001b3ull;
        fclose(f);
        printf("%016llx\n", (unsigned long long)h);
        return 0;
    }
    if (argc == 7 && !strcmp(argv[1], "bench"))
        return bench(argv[2], atoi(argv[3]), atoi(argv[4]), atoi(argv[5]), atoi(argv[6]));
    if (argc == 4 && !strcmp(argv[1], "cmp")) {
        int32_t n, nv, n2, nv2;
        float *r = read_logits(argv[2], &n, &nv), *x = read_logits(argv[3], &n2, &nv2);
        if (!r || !x || n != n2 || nv != nv2) return 1;
        double se = 0, mx = 0;
        int agree = 0;
        for (int i = 0; i < n; i++) {
            int ar = 0, ax = 0;
            for (int j = 0; j < nv; j++) {
                double d = (double)x[i * nv + j] - r[i * nv + j];
                se += d * d;
                if (fabs(d) > mx) mx = fabs(d);
                if (r[i * nv + j] > r[i * nv + ar]) ar = j;
                if (x[i * nv + j] > x[i * nv + ax]) ax = j;
            }
            agree += ar == ax;
        }
        printf("rms %.6g max %.6g top1 %.4f\n", sqrt(se / ((double)n * nv)), mx, (double)agree / n);
        return 0;
    }
    if (argc == 6 && !strcmp(argv[1], "logits")) {
        llama_backend_init();
        llama_token ids[1024];
        int n = parse_ids(argv[3], ids, 1024);
        struct llama_model_params mp = llama_model_default_params();
        mp.n_gpu_layers = 0;
        /* no extra buffer types: on the machine that made the data ggml's AMX kernels
         * (chosen for quantized weights) fault on tile loads (the VM does not grant the
         * AMX state), so the plain CPU kernels are used */
        mp.use_extra_bufts = false;
        struct llama_model *m = llama_model_load_from_file(argv[2], mp);
        if (!m || n <= 0) return 1;
        struct llama_context_params cp = llama_context_default_params();
        cp.n_ctx = 256;
        cp.n_batch = 256;
        cp.n_ubatch = 256;
        cp.n_threads = 1;
        cp.n_threads_batch = 1;
        if (!strcmp(argv[5], "f32")) {
            cp.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_DISABLED;
            cp.type_k = GGML_TYPE_F32;
            cp.type_v = GGML_TYPE_F32;
        } else if (!strcmp(argv[5], "q8_0") || !strcmp(argv[5], "q4_0")) {
            cp.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_ENABLED;
            cp.type_k = cp.type_v = argv[5][1] == '8' ? GGML_TYPE_Q8_0 : GGML_TYPE_Q4_0;
        } else if (strcmp(argv[5], "default") != 0) {
            return 2;
        }
        struct llama_context *ctx = llama_init_from_model(m, cp);
        if (!ctx) return 1;
        struct llama_batch b = llama_batch_init(n, 0, 1);
        for (int i = 0; i < n; i++) {
            b.token[i] = ids[i];
            b.pos[i] = i;
            b.n_seq_id[i] = 1;
            b.seq_id[i][0] = 0;
            b.logits[i] = 1;
        }
        b.n_tokens = n;
        if (llama_decode(ctx, b)) return 1;
        int32_t nv = llama_vocab_n_tokens(llama_model_get_vocab(m));
        FILE *f = fopen(argv[4], "wb");
        if (!f) return 1;
        put_i32(f, n);
        put_i32(f, nv);
        for (int i = 0; i < n; i++) fwrite(llama_get_logits_ith(ctx, i), 4, (size_t)nv, f);
        if (fclose(f)) return 1;
        llama_batch_free(b);
        llama_free(ctx);
        llama_model_free(m);
        return 0;
    }
    fprintf(stderr, "usage: see the comment at the top of gen_arch_ref.c\n");
    return 2;
}
