/* gen_ref.c - dumps llama.cpp's view of a GGUF file, as reference data for Loom's
 * tests (tests/data/llamacpp/README.md says how it is built and run). A test-data
 * generator written for Loom against llama.cpp's public headers (llama.h, ggml.h,
 * gguf.h); not part of Loom and not built by CMake.
 *
 *   gen_ref tokenize MODEL TEXT          token ids of TEXT (with BOS), comma-separated
 *   gen_ref dequant MODEL...             per tensor: file, name, type, elements, and the
 *                                        FNV-1a 64 hash of the float32 values ggml's own
 *                                        dequantizer (type traits to_float) gives
 *   gen_ref logits MODEL IDS OUT [f32]   logits of every position of IDS (comma-
 *                                        separated) as int32 n, int32 n_vocab, float32
 *                                        [n][n_vocab], little-endian; CPU, 1 thread, no
 *                                        flash attention, KV cache F16 (llama.cpp's
 *                                        default) or F32 with the 5th argument f32
 *   gen_ref nrmse REF X                  sqrt(mean((x-ref)^2)) / sqrt(mean(ref^2)) of two
 *                                        logits files, and max |x - ref|
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>

#include "ggml.h"
#include "gguf.h"
#include "llama.h"

static uint64_t fnv_f32(const float *x, int64_t n) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (int64_t i = 0; i < n; i++) {
        uint32_t u;
        memcpy(&u, &x[i], 4);
        for (int b = 0; b < 4; b++) h = (h ^ ((u >> (8 * b)) & 0xff)) * 0x100000001b3ull;
    }
    return h;
}

static int dequant(const char *path) {
    struct ggml_context *ctx = NULL;
    struct gguf_init_params p = {.no_alloc = false, .ctx = &ctx};
    struct gguf_context *g = gguf_init_from_file(path, p);
    if (!g) return 1;
    const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
    for (int64_t i = 0; i < gguf_get_n_tensors(g); i++) {
        const char *name = gguf_get_tensor_name(g, i);
        struct ggml_tensor *t = ggml_get_tensor(ctx, name);
        int64_t n = ggml_nelements(t);
        float *y = malloc((size_t)n * sizeof *y);
        if (t->type == GGML_TYPE_F32) {
            memcpy(y, t->data, (size_t)n * sizeof *y);
        } else {
            const struct ggml_type_traits *tr = ggml_get_type_traits(t->type);
            if (!tr->to_float) {
                fprintf(stderr, "%s: no to_float for %s\n", name, ggml_type_name(t->type));
                return 1;
            }
            /* row by row, as the dequantizer is used on rows */
            int64_t ne0 = t->ne[0], rows = n / ne0;
            for (int64_t r = 0; r < rows; r++)
                tr->to_float((const char *)t->data + r * t->nb[1], y + r * ne0, ne0);
        }
        printf("%s %s %s %lld %016llx\n", base, name, ggml_type_name(t->type), (long long)n,
               (unsigned long long)fnv_f32(y, n));
        free(y);
    }
    gguf_free(g);
    ggml_free(ctx);
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

int main(int argc, char **argv) {
    if (argc >= 3 && !strcmp(argv[1], "dequant")) {
        for (int i = 2; i < argc; i++)
            if (dequant(argv[i])) return 1;
        return 0;
    }
    if (argc == 4 && !strcmp(argv[1], "nrmse")) {
        FILE *a = fopen(argv[2], "rb"), *b = fopen(argv[3], "rb");
        int32_t ha[2], hb[2];
        if (!a || !b || fread(ha, 4, 2, a) != 2 || fread(hb, 4, 2, b) != 2 || ha[0] != hb[0] || ha[1] != hb[1])
            return 1;
        int64_t n = (int64_t)ha[0] * ha[1];
        double se = 0, sr = 0, mx = 0;
        for (int64_t i = 0; i < n; i++) {
            float r, x;
            if (fread(&r, 4, 1, a) != 1 || fread(&x, 4, 1, b) != 1) return 1;
            se += ((double)x - r) * ((double)x - r);
            sr += (double)r * r;
            if (fabs((double)x - r) > mx) mx = fabs((double)x - r);
        }
        printf("%.9g %.9g\n", sqrt(se / (double)n) / sqrt(sr / (double)n), mx);
        return 0;
    }
    llama_backend_init();
    struct llama_model_params mp = llama_model_default_params();
    mp.n_gpu_layers = 0;
    if (argc == 4 && !strcmp(argv[1], "tokenize")) {
        struct llama_model *m = llama_model_load_from_file(argv[2], mp);
        if (!m) return 1;
        llama_token ids[1024];
        int n = llama_tokenize(llama_model_get_vocab(m), argv[3], (int32_t)strlen(argv[3]), ids, 1024, true, false);
        for (int i = 0; i < n; i++) printf(i ? ",%d" : "%d", ids[i]);
        printf("\n");
        llama_model_free(m);
        return n > 0 ? 0 : 1;
    }
    if ((argc == 5 || argc == 6) && !strcmp(argv[1], "logits")) {
        llama_token ids[1024];
        int n = parse_ids(argv[3], ids, 1024);
        struct llama_model *m = llama_model_load_from_file(argv[2], mp);
        if (!m || n <= 0) return 1;
        struct llama_context_params cp = llama_context_default_params();
        cp.n_ctx = 256;
        cp.n_batch = 256;
        cp.n_ubatch = 256;
        cp.n_threads = 1;
        cp.n_threads_batch = 1;
        cp.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_DISABLED;
        if (argc == 6 && !strcmp(argv[5], "f32")) {
            cp.type_k = GGML_TYPE_F32;
            cp.type_v = GGML_TYPE_F32;
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
    fprintf(stderr, "usage: see the comment at the top of gen_ref.c\n");
    return 2;
}
