/* llama_load_time.c - time llama_model_load_from_file (mmap, default params) and
 * llama_init_from_model for one GGUF file, then one decoded token (mmap is lazy: the
 * first decode faults the weights in); prints seconds as JSON. Reference program for
 * bench/README.md's load-time comparison (not built by CI). Build against a llama.cpp
 * build's static libs:
 *   gcc -O2 llama_load_time.c -I$SRC/include -I$SRC/ggml/include \
 *       $B/src/libllama.a $B/ggml/src/libggml.a $B/ggml/src/libggml-cpu.a \
 *       $B/ggml/src/libggml-base.a -lstdc++ -lgomp -lm -lpthread -o llama_load_time */
#include "llama.h"
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void quiet(enum ggml_log_level level, const char *text, void *ud) {
    (void)level; (void)text; (void)ud;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s MODEL.gguf [threads]\n", argv[0]);
        return 2;
    }
    llama_log_set(quiet, NULL);
    double t0 = now();
    llama_backend_init();
    struct llama_model_params mp = llama_model_default_params();
    double t1 = now();
    struct llama_model *m = llama_model_load_from_file(argv[1], mp);
    double t2 = now();
    if (!m) {
        fprintf(stderr, "load failed\n");
        return 1;
    }
    struct llama_context_params cp = llama_context_default_params();
    cp.n_ctx = 4096;
    cp.n_threads = cp.n_threads_batch = argc > 2 ? atoi(argv[2]) : 2;
    struct llama_context *ctx = llama_init_from_model(m, cp);
    double t3 = now();
    if (!ctx) {
        fprintf(stderr, "context failed\n");
        return 1;
    }
    llama_token tok = 1; /* one token decoded: touches every weight (mmap is lazy) */
    int rc = llama_decode(ctx, llama_batch_get_one(&tok, 1));
    double t4 = now();
    if (rc != 0) {
        fprintf(stderr, "decode failed (%d)\n", rc);
        return 1;
    }
    printf("{\"backend_init_s\": %.4f, \"model_load_s\": %.4f, \"context_s\": %.4f, \"first_decode_s\": %.4f, "
           "\"total_s\": %.4f}\n", t1 - t0, t2 - t1, t3 - t2, t4 - t3, t4 - t0);
    llama_free(ctx);
    llama_model_free(m);
    llama_backend_free();
    return 0;
}
