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
 *                                         "f32" (flash attention off, F32 cache)
 *   gen_arch_ref cmp REF X                 rms and max |x - ref| of two logits files and
 *                                         the share of positions whose argmax agrees
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "llama.h"

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
