/* libFuzzer target: tokenizes the input with the llama-spm (SentencePiece) and
 * gpt-2 (byte-level BPE) vocabularies, detokenizes, streams the ids through the
 * UTF-8 stream decoder. Checks: no crash/UB (ASan+UBSan), ids in range, BPE
 * round trip exact (byte-level BPE is lossless), stream output == detokenize.
 * Build: cmake -DLOOM_FUZZ=ON -DCMAKE_C_COMPILER=clang; run from the
 * repository root (or set LOOM_VOCAB_DIR to tests/data/vocab). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "loom_gguf.h"
#include "loom_tokenizer.h"

static loom_tokenizer *g_tok[2];

static loom_tokenizer *load(const char *name) {
    const char *dir = getenv("LOOM_VOCAB_DIR");
    char path[1024];
    snprintf(path, sizeof path, "%s/ggml-vocab-%s.gguf", dir ? dir : "tests/data/vocab", name);
    loom_gguf *g = NULL;
    loom_error err = {0};
    if (loom_gguf_open(path, NULL, &g, &err) != LOOM_OK) {
        fprintf(stderr, "fuzz_tokenizer: %s\n", err.msg);
        abort();
    }
    loom_tokenizer *t = NULL;
    if (loom_tokenizer_new_from_gguf(g, &t, &err) != LOOM_OK) {
        fprintf(stderr, "fuzz_tokenizer: %s\n", err.msg);
        abort();
    }
    loom_gguf_close(g);
    return t;
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    g_tok[0] = load("llama-spm");
    g_tok[1] = load("gpt-2");
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size > 1 << 16) return 0;
    bool special = size > 0 && (data[0] & 1);
    for (int k = 0; k < 2; k++) {
        loom_tokenizer *t = g_tok[k];
        int64_t n = 0;
        loom_status st = loom_tokenize(t, (const char *)data, size, true, special, NULL, 0, &n);
        if (st != LOOM_OK && st != LOOM_ERR_RANGE) abort();
        int32_t *ids = malloc(sizeof(int32_t) * (size_t)(n ? n : 1));
        if (!ids) return 0;
        int64_t n2 = 0;
        if (loom_tokenize(t, (const char *)data, size, true, special, ids, n, &n2) != LOOM_OK || n2 != n) abort();
        for (int64_t i = 0; i < n; i++)
            if (ids[i] < 0 || ids[i] >= loom_tokenizer_n_vocab(t)) abort();
        size_t cap = size * 4 + 64, len = 0;
        char *text = malloc(cap);
        if (!text) { free(ids); return 0; }
        if (loom_detokenize(t, ids, n, 0, text, cap, &len) != LOOM_OK) abort();
        if (k == 1 && !special && (len != size || memcmp(text, data, size) != 0)) abort();
        /* stream decoding reproduces detokenize */
        loom_detok_stream ds;
        loom_detok_stream_init(&ds, t, 0);
        char *acc = malloc(cap), chunk[2048];
        size_t an = 0, cn = 0;
        if (!acc) { free(ids); free(text); return 0; }
        for (int64_t i = 0; i < n; i++) {
            if (loom_detok_stream_push(&ds, ids[i], chunk, sizeof chunk, &cn) != LOOM_OK || an + cn > cap) abort();
            memcpy(acc + an, chunk, cn);
            an += cn;
        }
        if (loom_detok_stream_flush(&ds, chunk, sizeof chunk, &cn) != LOOM_OK || an + cn > cap) abort();
        memcpy(acc + an, chunk, cn);
        an += cn;
        if (an != len || memcmp(acc, text, len) != 0) abort();
        free(acc);
        free(text);
        free(ids);
    }
    return 0;
}
