/* embed_ref.c - llama.cpp's embeddings of token sequences, as reference data for
 * Loom's embedding tests (tests/data/embed/README.md says how it is built and run).
 * Written for Loom against llama.cpp's public header llama.h; not part of Loom and
 * not built by CMake.
 *
 *   embed_ref tokenize MODEL TEXT
 *       token ids of TEXT as llama.cpp tokenizes an embedding input (add_special:
 *       [CLS] ... [SEP]; special-token texts not parsed), comma-separated
 *   embed_ref embed MODEL POOLING OUT IDS...
 *       every IDS (comma-separated) is one sequence; all of them are decoded in ONE
 *       llama_decode (sequence ids 0..n-1; llama_encode for an encoder-only model:
 *       t5encoder), CPU, 2 threads, no flash attention,
 *       pooling none|mean|cls|last. OUT: int32 n_vectors, int32 n_embd, then
 *       float32 [n_vectors][n_embd], little-endian, NOT normalized (the raw pooled
 *       vectors; pooling none: every token's hidden state, sequence after sequence).
 *   embed_ref bench MODEL FILE THREADS
 *       times llama.cpp on the lines of FILE as llama-embedding batches them: inputs
 *       tokenized, packed into batches of at most 512 tokens (one sequence id per
 *       input), one llama_decode per batch, the model's pooling; prints the compute
 *       time (load and tokenization excluded) for bench/embed_vs_llama.sh.
 *   embed_ref embed1 MODEL POOLING OUT IDS...
 *       as embed, but one llama_decode per sequence (sequence id 0, the memory
 *       cleared between them) and an F32 K/V cache: the decoder embedding models
 *       (README.md says why).
 */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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

int main(int argc, char **argv) {
    llama_backend_init();
    struct llama_model_params mp = llama_model_default_params();
    mp.n_gpu_layers = 0;
    if (argc == 4 && !strcmp(argv[1], "tokenize")) {
        struct llama_model *m = llama_model_load_from_file(argv[2], mp);
        if (!m) return 1;
        llama_token ids[4096];
        int n = llama_tokenize(llama_model_get_vocab(m), argv[3], (int32_t)strlen(argv[3]), ids, 4096, true, false);
        for (int i = 0; i < n; i++) printf(i ? ",%d" : "%d", ids[i]);
        printf("\n");
        llama_model_free(m);
        return n > 0 ? 0 : 1;
    }
    if (argc == 5 && !strcmp(argv[1], "bench")) {
        struct llama_model *m = llama_model_load_from_file(argv[2], mp);
        FILE *f = fopen(argv[3], "r");
        if (!m || !f) return 1;
        static llama_token ids[1024][512];
        static int n[1024];
        int ns = 0;
        char line[8192];
        while (ns < 1024 && fgets(line, sizeof line, f)) {
            line[strcspn(line, "\n")] = 0;
            if (!*line) continue;
            n[ns] = llama_tokenize(llama_model_get_vocab(m), line, (int32_t)strlen(line), ids[ns], 512, true, false);
            if (n[ns] <= 0) return 1;
            ns++;
        }
        fclose(f);
        struct llama_context_params cp = llama_context_default_params();
        cp.n_ctx = 512 * 64;
        cp.n_batch = 512;
        cp.n_ubatch = 512;
        cp.n_seq_max = 64;
        cp.n_threads = atoi(argv[4]);
        cp.n_threads_batch = cp.n_threads;
        cp.embeddings = true;
        cp.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_DISABLED;
        struct llama_context *ctx = llama_init_from_model(m, cp);
        if (!ctx) return 1;
        struct llama_batch b = llama_batch_init(512, 0, 1);
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        long toks = 0;
        for (int i = 0; i < ns;) {
            b.n_tokens = 0;
            int s = 0;
            while (i < ns && b.n_tokens + n[i] <= 512 && s < 64) {
                for (int j = 0; j < n[i]; j++) {
                    int k = b.n_tokens++;
                    b.token[k] = ids[i][j];
                    b.pos[k] = j;
                    b.n_seq_id[k] = 1;
                    b.seq_id[k][0] = s;
                    b.logits[k] = 1;
                }
                toks += n[i++];
                s++;
            }
            llama_memory_clear(llama_get_memory(ctx), true);
            if (llama_decode(ctx, b)) return 1;
            for (int q = 0; q < s; q++)
                if (!llama_get_embeddings_seq(ctx, q)) return 1;
        }
        clock_gettime(CLOCK_MONOTONIC, &t1);
        double ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
        printf("llama.cpp: %d inputs, %ld tokens in %.1f ms: %.2f embeddings/s\n", ns, toks, ms, ns * 1e3 / ms);
        return 0;
    }
    if (argc < 6 || (strcmp(argv[1], "embed") && strcmp(argv[1], "embed1"))) {
        fprintf(stderr, "usage: embed_ref tokenize MODEL TEXT | embed|embed1 MODEL POOLING OUT IDS...\n");
        return 2;
    }
    const int one = !strcmp(argv[1], "embed1");
    enum llama_pooling_type pt;
    if (!strcmp(argv[3], "none")) pt = LLAMA_POOLING_TYPE_NONE;
    else if (!strcmp(argv[3], "mean")) pt = LLAMA_POOLING_TYPE_MEAN;
    else if (!strcmp(argv[3], "cls")) pt = LLAMA_POOLING_TYPE_CLS;
    else if (!strcmp(argv[3], "last")) pt = LLAMA_POOLING_TYPE_LAST;
    else return 2;
    int n_seq = argc - 5;
    static llama_token ids[64][2048];
    int n[64], total = 0;
    if (n_seq > 64) return 2;
    for (int s = 0; s < n_seq; s++) {
        n[s] = parse_ids(argv[5 + s], ids[s], 2048);
        total += n[s];
    }
    struct llama_model *m = llama_model_load_from_file(argv[2], mp);
    if (!m) return 1;
    struct llama_context_params cp = llama_context_default_params();
    /* a context of 256 cells per sequence (llama.cpp's mean pooling failed an assert
     * with 3 sequences in a context of 512) */
    cp.n_ctx = (uint32_t)(256 * (n_seq < 2 ? 2 : n_seq));
    if (cp.n_ctx < (uint32_t)total) return 2;
    cp.n_batch = cp.n_ctx;
    cp.n_ubatch = cp.n_ctx; /* non-causal: the whole batch in one ubatch */
    cp.n_seq_max = (uint32_t)n_seq;
    cp.n_threads = 2;
    cp.n_threads_batch = 2;
    cp.embeddings = true;
    cp.pooling_type = pt;
    cp.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_DISABLED;
    if (one) cp.type_k = cp.type_v = GGML_TYPE_F32; /* causal models keep K/V in the cache */
    struct llama_context *ctx = llama_init_from_model(m, cp);
    if (!ctx) return 1;
    int32_t ne = llama_model_n_embd(m);
    if (one) {
        FILE *f = fopen(argv[4], "wb");
        if (!f) return 1;
        put_i32(f, pt == LLAMA_POOLING_TYPE_NONE ? total : n_seq);
        put_i32(f, ne);
        struct llama_batch b = llama_batch_init(2048, 0, 1);
        for (int s = 0; s < n_seq; s++) {
            for (int i = 0; i < n[s]; i++) {
                b.token[i] = ids[s][i];
                b.pos[i] = i;
                b.n_seq_id[i] = 1;
                b.seq_id[i][0] = 0;
                b.logits[i] = 1;
            }
            b.n_tokens = n[s];
            llama_memory_clear(llama_get_memory(ctx), true);
            if (llama_decode(ctx, b)) return 1;
            if (pt == LLAMA_POOLING_TYPE_NONE)
                for (int i = 0; i < n[s]; i++) fwrite(llama_get_embeddings_ith(ctx, i), 4, (size_t)ne, f);
            else
                fwrite(llama_get_embeddings_seq(ctx, 0), 4, (size_t)ne, f);
        }
        llama_batch_free(b);
        if (fclose(f)) return 1;
        llama_free(ctx);
        llama_model_free(m);
        return 0;
    }
    struct llama_batch b = llama_batch_init(total, 0, 1);
    int k = 0;
    for (int s = 0; s < n_seq; s++)
        for (int i = 0; i < n[s]; i++, k++) {
            b.token[k] = ids[s][i];
            b.pos[k] = i;
            b.n_seq_id[k] = 1;
            b.seq_id[k][0] = s;
            b.logits[k] = 1;
        }
    b.n_tokens = total;
    /* encoder-only models (t5encoder) run through llama_encode */
    const bool enc = llama_model_has_encoder(m) && !llama_model_has_decoder(m);
    if (enc ? llama_encode(ctx, b) : llama_decode(ctx, b)) return 1;
    FILE *f = fopen(argv[4], "wb");
    if (!f) return 1;
    put_i32(f, pt == LLAMA_POOLING_TYPE_NONE ? total : n_seq);
    put_i32(f, ne);
    if (pt == LLAMA_POOLING_TYPE_NONE) {
        for (int i = 0; i < total; i++) fwrite(llama_get_embeddings_ith(ctx, i), 4, (size_t)ne, f);
    } else {
        for (int s = 0; s < n_seq; s++) fwrite(llama_get_embeddings_seq(ctx, s), 4, (size_t)ne, f);
    }
    if (fclose(f)) return 1;
    llama_batch_free(b);
    llama_free(ctx);
    llama_model_free(m);
    return 0;
}
