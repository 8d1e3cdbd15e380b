/*
 * llamacpp_ref.h - the tiny F32 llama model behind tests/data/llamacpp/ (the files
 * llama.cpp's llama-quantize made from it and llama.cpp's dequantized values and
 * logits), and readers for that reference data. Used by test_gguf_llamacpp.c and
 * test_llm_llamacpp.c; tests/data/llamacpp/README.md says how the data was made.
 *
 * The F32 model is not committed (750 KB): ref_write_f32 regenerates it bit for bit
 * (integer PRNG, exact float arithmetic, no libm), and the tests check every tensor
 * against the hashes llama.cpp recorded when it read the file it quantized, so a
 * change here cannot go unnoticed. Shape: llama, 2 blocks, n_embd 64, 4 heads
 * (head_dim 16), 2 KV heads, n_ff 256 (ffn_down rows are 256 long: K-quant blocks),
 * context 256, stories260K's 512-token SentencePiece vocabulary, tied output (no
 * output.weight: token_embd is the output projection too, as in many small models).
 */
#ifndef LOOM_TESTS_LLAMACPP_REF_H
#define LOOM_TESTS_LLAMACPP_REF_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "loom_gguf.h"

#define REF_DIR "tests/data/llamacpp"
#define REF_N_EMBD 64
#define REF_N_FF 256
#define REF_N_LAYER 2
#define REF_N_HEAD 4
#define REF_N_HEAD_KV 2
#define REF_N_CTX 256

/* splitmix64 */
static inline uint64_t ref_next(uint64_t *s) {
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* Unit-variance value: (sum of four uniforms in [0,1) - 2) * sqrt(3), every step
 * exact or correctly rounded in double, so the result is the same everywhere. */
static inline double ref_unit(uint64_t *s) {
    double u = 0;
    for (int k = 0; k < 4; k++) u += (double)(ref_next(s) >> 11) * (1.0 / 9007199254740992.0);
    return (u - 2.0) * 1.7320508075688772;
}

static inline uint64_t ref_name_seed(const char *name) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (const char *p = name; *p; p++) h = (h ^ (uint8_t)*p) * 0x100000001b3ull;
    return h;
}

/* Fill one tensor: 1-D tensors are norm weights 1 + 0.1 z; matrices z * scale with
 * scale 1/sqrt(ne0), token embeddings 0.5 (as the tied output: logits of a few units). */
static inline void ref_fill(const char *name, int64_t ne0, int64_t ne1, float *dst) {
    uint64_t s = ref_name_seed(name);
    double scale = 1.0;
    if (ne1 > 1) {
        /* 1/sqrt(ne0) for ne0 = 64 or 256: exact powers of two */
        scale = ne0 == 64 ? 0.125 : ne0 == 256 ? 0.0625 : 1.0;
        if (!strcmp(name, "token_embd.weight")) scale = 0.5;
    }
    for (int64_t i = 0; i < ne0 * ne1; i++) {
        double z = ref_unit(&s);
        dst[i] = (float)(ne1 > 1 ? z * scale : 1.0 + 0.1 * z);
    }
}

/* Write the F32 model to path with the tokenizer keys of vocab_path (stories260K).
 * Returns 0 on success. */
static inline int ref_write_f32(const char *vocab_path, const char *path) {
    loom_gguf *v = NULL;
    if (loom_gguf_open(vocab_path, NULL, &v, NULL) != LOOM_OK) return -1;
    loom_gguf_writer *w = NULL;
    if (loom_gguf_writer_new(&w) != LOOM_OK) {
        loom_gguf_close(v);
        return -1;
    }
    int bad = 0;
    bad |= loom_gguf_writer_add_str(w, "general.architecture", "llama", 5) != LOOM_OK;
    bad |= loom_gguf_writer_add_str(w, "general.name", "loom-llamacpp-ref", 17) != LOOM_OK;
    bad |= loom_gguf_writer_add_u32(w, "general.file_type", 0) != LOOM_OK;
    bad |= loom_gguf_writer_add_u32(w, "llama.context_length", REF_N_CTX) != LOOM_OK;
    bad |= loom_gguf_writer_add_u32(w, "llama.embedding_length", REF_N_EMBD) != LOOM_OK;
    bad |= loom_gguf_writer_add_u32(w, "llama.block_count", REF_N_LAYER) != LOOM_OK;
    bad |= loom_gguf_writer_add_u32(w, "llama.feed_forward_length", REF_N_FF) != LOOM_OK;
    bad |= loom_gguf_writer_add_u32(w, "llama.attention.head_count", REF_N_HEAD) != LOOM_OK;
    bad |= loom_gguf_writer_add_u32(w, "llama.attention.head_count_kv", REF_N_HEAD_KV) != LOOM_OK;
    bad |= loom_gguf_writer_add_u32(w, "llama.rope.dimension_count", REF_N_EMBD / REF_N_HEAD) != LOOM_OK;
    bad |= loom_gguf_writer_add_f32(w, "llama.rope.freq_base", 10000.0f) != LOOM_OK;
    bad |= loom_gguf_writer_add_f32(w, "llama.attention.layer_norm_rms_epsilon", 1e-5f) != LOOM_OK;
    for (int64_t i = 0; i < loom_gguf_kv_count(v) && !bad; i++)
        if (!strncmp(loom_gguf_kv_key(v, i), "tokenizer.", 10)) bad |= loom_gguf_writer_copy_kv(w, v, i) != LOOM_OK;
    int64_t n_vocab = 0;
    int64_t ti = loom_gguf_find_key(v, "tokenizer.ggml.tokens");
    if (ti >= 0) n_vocab = (int64_t)loom_gguf_kv_array_len(v, ti);
    loom_gguf_close(v);
    if (n_vocab <= 0) bad = 1;
    const int64_t E = REF_N_EMBD, F = REF_N_FF, KV = REF_N_EMBD / REF_N_HEAD * REF_N_HEAD_KV;
    float *buf = malloc((size_t)(F * (E > n_vocab ? E : n_vocab) * 4 + 64) * sizeof(float));
    if (!buf) bad = 1;
    struct {
        char name[64];
        int64_t ne0, ne1;
    } t[2 + 9 * REF_N_LAYER];
    int nt = 0;
#define REF_T(nm, a, b) (snprintf(t[nt].name, sizeof t[nt].name, "%s", nm), t[nt].ne0 = (a), t[nt].ne1 = (b), nt++)
    REF_T("token_embd.weight", E, n_vocab);
    for (int l = 0; l < REF_N_LAYER; l++) {
        static const char *const names[9] = {"attn_norm", "attn_q", "attn_k", "attn_v", "attn_output",
                                             "ffn_norm", "ffn_gate", "ffn_up", "ffn_down"};
        const int64_t shapes[9][2] = {{E, 1}, {E, E}, {E, KV}, {E, KV}, {E, E}, {E, 1}, {E, F}, {E, F}, {F, E}};
        for (int k = 0; k < 9; k++) {
            char nm[64];
            snprintf(nm, sizeof nm, "blk.%d.%s.weight", l, names[k]);
            REF_T(nm, shapes[k][0], shapes[k][1]);
        }
    }
    REF_T("output_norm.weight", E, 1);
#undef REF_T
    for (int i = 0; i < nt && !bad; i++) {
        ref_fill(t[i].name, t[i].ne0, t[i].ne1, buf);
        int64_t ne[2] = {t[i].ne0, t[i].ne1};
        bad |= loom_gguf_writer_add_tensor(w, t[i].name, LOOM_TYPE_F32, t[i].ne1 > 1 ? 2 : 1, ne, buf) != LOOM_OK;
    }
    free(buf);
    if (!bad) bad = loom_gguf_writer_write_file(w, path, NULL) != LOOM_OK;
    loom_gguf_writer_free(w);
    return bad ? -1 : 0;
}

/* FNV-1a 64 over the bit patterns of n floats (the dequantization fingerprint). */
static inline uint64_t ref_hash_f32(const float *x, int64_t n) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (int64_t i = 0; i < n; i++) {
        uint32_t u;
        memcpy(&u, &x[i], 4);
        for (int b = 0; b < 4; b++) h = (h ^ ((u >> (8 * b)) & 0xff)) * 0x100000001b3ull;
    }
    return h;
}

#endif
