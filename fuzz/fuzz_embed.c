/* libFuzzer target: opens an embedding model (bert, nomic-bert, gemma-embedding, a
 * decoder with a pooling type) from the fuzzed
 * bytes (seeded with tiny valid models made by tests/data/embed/make_model.py,
 * fuzz/corpus/embed) through loom_embed.h, with no_mmap, one thread and a small
 * context, then - if it opens - embeds two short sequences (ids within the
 * vocabulary, pooled and per token) and tokenizes a text. The bytes go to one reused
 * memfd opened as /proc/self/fd/N (no disk I/O).
 * Checks: no crash/UB/leak (ASan+UBSan), a rejected file has an error message and no
 * handle, an accepted one computes or fails with a message (never
 * LOOM_ERR_INTERNAL). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "loom_embed.h"
#include "fuzz_memfd.h"

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    fuzz_memfd_init("loom_fuzz_embed");
    return 0;
}

static void check_error(loom_status s, const loom_error *e) { fuzz_check_error("fuzz_embed", s, e); }

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size > (1u << 20)) return 0;
    fuzz_memfd_write(data, size);
    for (int pass = 0; pass < 2; pass++) {
        loom_embed_params p = loom_embed_default_params();
        p.path = g_path;
        p.n_ctx = 8;
        p.n_threads = 1;
        p.no_mmap = true;
        p.pooling = pass ? LOOM_POOLING_NONE : LOOM_POOLING_UNSPECIFIED;
        loom_embedder *e = NULL;
        loom_error err = {0};
        loom_status s = loom_embed_open(&p, &e, &err);
        check_error(s, &err);
        if (s != LOOM_OK) {
            if (e) abort(); /* *out must be NULL on failure */
            return 0;
        }
        const int32_t nv = loom_embed_n_vocab(e), E = loom_embed_n_embd(e);
        int32_t a[3] = {0, nv > 1 ? 1 : 0, nv - 1}, b[2] = {nv / 2, 0}, n[2] = {3, 2};
        const int32_t *seqs[2] = {a, b};
        float *out = malloc((size_t)5 * (size_t)E * sizeof *out);
        if (!out) abort();
        loom_error e2 = {0};
        s = loom_embed_compute(e, seqs, n, 2, pass == 0, out, (size_t)5 * (size_t)E, &e2);
        check_error(s, &e2);
        free(out);
        const loom_tokenizer *tok = NULL;
        loom_error e3 = {0};
        s = loom_embed_tokenizer(e, &tok, &e3);
        check_error(s, &e3);
        if (s == LOOM_OK) {
            int32_t ids[16], k = 0;
            loom_error e4 = {0};
            s = loom_embed_tokenize(e, "hello embedding world", 21, pass == 1, ids, 16, &k, &e4);
            check_error(s, &e4);
        }
        loom_embed_close(e);
    }
    return 0;
}
