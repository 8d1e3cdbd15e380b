/* libFuzzer target over every test vocabulary (SPM, byte-level BPE with many
 * pre-tokenizers, Gemma 4, WordPiece, unigram). Input: byte 0 selects the
 * vocabulary, byte 1 the flags (bit 0 parse_special, bit 1 add BOS/EOS),
 * the rest is the text. Checks: no crash/UB (ASan+UBSan), the count from a
 * max = 0 call equals the real one, ids in range, detokenize succeeds and the
 * stream decoder reproduces it; for valid UTF-8 without special tokens: the
 * exact text comes back from the lossless vocabularies (SPM / byte-level BPE
 * / Gemma 4, when every byte has a fallback token and the text has no U+2581
 * for the space-escaping ones, and no <dna> span for HybriDNA), and
 * re-tokenizing the decoded text gives the same ids for WordPiece.
 * Build: cmake -DLOOM_FUZZ=ON -DCMAKE_C_COMPILER=clang. The vocabularies are
 * read from tests/data/vocab and the build's unpacked copies (LOOM_VOCAB_DIR
 * overrides both). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "llm/tokenizer_internal.h"
#include "loom_gguf.h"
#include "loom_tokenizer.h"

static const char *const k_names[] = {"llama-spm", "phi-3",     "baichuan",     "gpt-2",   "llama-bpe",      "qwen2",
                                      "bert-bge",  "command-r", "deepseek-llm", "falcon",  "deepseek-coder", "gemma-4",
                                      "gpt-neox",  "starcoder", "refact",       "nomic-bert-moe", "synth-rwkv",
                                      "synth-plamo2",   "synth-hybriddna"};
#define N_VOCAB (sizeof k_names / sizeof k_names[0])
static loom_tokenizer *g_tok[N_VOCAB];
static bool g_lossless[N_VOCAB];

static loom_tokenizer *load(const char *name) {
    char path[2048];
    const char *env = getenv("LOOM_VOCAB_DIR");
    const char *dirs[3] = {env, NULL, NULL};
#ifdef LOOM_SOURCE_DIR
    static char src[1024];
    snprintf(src, sizeof src, "%s/tests/data/vocab", LOOM_SOURCE_DIR);
    dirs[1] = src;
#else
    dirs[1] = "tests/data/vocab";
#endif
#ifdef LOOM_VOCAB_DIR
    dirs[2] = LOOM_VOCAB_DIR;
#endif
    for (int d = 0; d < 3; d++) {
        if (!dirs[d]) continue;
        snprintf(path, sizeof path, "%s/ggml-vocab-%s.gguf", dirs[d], name);
        if (access(path, R_OK) != 0) continue;
        loom_gguf *g = NULL;
        loom_error err = {0};
        loom_tokenizer *t = NULL;
        if (loom_gguf_open(path, NULL, &g, &err) != LOOM_OK || loom_tokenizer_new_from_gguf(g, &t, &err) != LOOM_OK) {
            fprintf(stderr, "fuzz_tokenizer: %s: %s\n", path, err.msg);
            abort();
        }
        loom_gguf_close(g);
        return t;
    }
    fprintf(stderr, "fuzz_tokenizer: ggml-vocab-%s.gguf not found (set LOOM_VOCAB_DIR)\n", name);
    abort();
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    for (size_t i = 0; i < N_VOCAB; i++) {
        g_tok[i] = load(k_names[i]);
        const loom_tokenizer *t = g_tok[i];
        bool all = true;
        for (int b = 0; b < 256; b++) {
            int32_t id = t->byte_token[b];
            if (t->type == LOOM_VOCAB_BPE && t->byte_encode) id = t->byte_sym[b];
            all = all && id >= 0;
        }
        g_lossless[i] = all && (t->type == LOOM_VOCAB_SPM || t->type == LOOM_VOCAB_BPE);
    }
    return 0;
}

static bool valid_utf8(const uint8_t *u, size_t n) {
    for (size_t i = 0; i < n;) {
        uint32_t cp;
        size_t l = tok_utf8_decode(u + i, n - i, &cp);
        if (cp == TOK_CP_INVALID) return false;
        i += l;
    }
    return true;
}

static bool any_special(const loom_tokenizer *t, const int32_t *ids, int32_t n) {
    for (int32_t i = 0; i < n; i++)
        if (t->attr[ids[i]] & (TOK_ATTR_CONTROL | TOK_ATTR_USER_DEFINED | TOK_ATTR_UNKNOWN) || ids[i] == t->unk)
            return true;
    return false;
}

static int32_t *tokenize(const loom_tokenizer *t, const char *s, size_t n, bool add, bool sp, int32_t *count) {
    int32_t c = 0;
    loom_status st = loom_tokenize(t, s, n, add, sp, NULL, 0, &c, NULL);
    if (st != LOOM_OK && st != LOOM_ERR_RANGE) abort();
    int32_t *ids = malloc(sizeof(int32_t) * (size_t)(c ? c : 1));
    if (!ids) abort();
    int32_t c2 = 0;
    if (loom_tokenize(t, s, n, add, sp, ids, c, &c2, NULL) != LOOM_OK || c2 != c) abort();
    for (int32_t i = 0; i < c; i++)
        if (ids[i] < 0 || ids[i] >= loom_tokenizer_n_vocab(t)) abort();
    *count = c;
    return ids;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 2 || size > (1 << 16)) return 0;
    size_t k = data[0] % N_VOCAB;
    bool special = data[1] & 1, add = (data[1] & 2) != 0;
    const char *text = (const char *)data + 2;
    size_t len = size - 2;
    const loom_tokenizer *t = g_tok[k];
    int32_t n = 0;
    int32_t *ids = tokenize(t, text, len, add, special, &n);
    size_t cap = 0, dl = 0;
    loom_status st = loom_detokenize(t, ids, n, 0, NULL, 0, &cap);
    if (st != LOOM_OK && st != LOOM_ERR_RANGE) abort();
    char *det = malloc(cap + 1);
    if (!det || loom_detokenize(t, ids, n, 0, det, cap + 1, &dl) != LOOM_OK || dl != cap) abort();
    /* the stream decoder gives the same bytes */
    loom_detok_stream ds;
    loom_detok_stream_init(&ds, t, 0);
    size_t ccap = loom_tokenizer_max_piece_len(t) + 4, an = 0, cn = 0;
    char *chunk = malloc(ccap), *acc = malloc(dl + 8);
    if (!chunk || !acc) abort();
    for (int32_t i = 0; i < n; i++) {
        if (loom_detok_stream_push(&ds, ids[i], chunk, ccap, &cn) != LOOM_OK || an + cn > dl) abort();
        memcpy(acc + an, chunk, cn);
        an += cn;
    }
    if (loom_detok_stream_flush(&ds, chunk, ccap, &cn) != LOOM_OK || an + cn > dl) abort();
    memcpy(acc + an, chunk, cn);
    an += cn;
    if (an != dl || memcmp(acc, det, dl) != 0) abort();
    bool clean = !add && valid_utf8((const uint8_t *)text, len) && !any_special(t, ids, n);
    if (clean && g_lossless[k]) {
        bool escapes = t->type == LOOM_VOCAB_SPM || t->escape_ws;
        bool has_2581 = false;
        for (size_t i = 0; i + 2 < len; i++)
            if (!memcmp(text + i, "\xE2\x96\x81", 3)) has_2581 = true;
        bool dna = t->dna && memmem(text, len, "<dna>", 5); /* HybriDNA upper-cases and pads k-mers */
        if (!(escapes && has_2581) && !dna && (dl != len || memcmp(det, text, len) != 0)) abort();
    }
    if (clean && t->type == LOOM_VOCAB_WPM) {
        int32_t n2 = 0;
        int32_t *ids2 = tokenize(t, det, dl, false, false, &n2);
        if (n2 != n || (n && memcmp(ids, ids2, sizeof(int32_t) * (size_t)n) != 0)) abort();
        free(ids2);
    }
    free(chunk);
    free(acc);
    free(det);
    free(ids);
    return 0;
}
