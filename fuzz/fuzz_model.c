/* libFuzzer target: opens a model from the fuzzed bytes (seeded with tiny valid
 * llama models, fuzz/corpus/model) through the public model API, with no_mmap,
 * one thread and a small context, then - if it opens - evaluates a two-token
 * prompt and one decode step, reads the logits and builds the tokenizer.
 * The bytes go to one reused memfd opened as /proc/self/fd/N (no disk I/O).
 * Checks: no crash/UB/leak (ASan+UBSan), a rejected file has an error message, an
 * accepted one evaluates or fails with a message (never LOOM_ERR_INTERNAL), the
 * argmax is a valid token id. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "loom_model.h"
#include "fuzz_memfd.h"

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    fuzz_memfd_init("loom_fuzz_model");
    return 0;
}

static void check_error(loom_status s, const loom_error *e) { fuzz_check_error("fuzz_model", s, e); }

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size > (1u << 20)) return 0;
    fuzz_memfd_write(data, size);
    loom_model_params p = loom_model_default_params();
    p.path = g_path;
    p.n_ctx = 8;
    p.n_batch = 8;
    p.n_threads = 1;
    p.no_mmap = true;
    loom_model *m = NULL;
    loom_error e = {0};
    loom_status s = loom_model_open(&p, &m, &e);
    check_error(s, &e);
    if (s != LOOM_OK) {
        if (m) abort(); /* *out must be NULL on failure */
        return 0;
    }
    int nv = loom_model_n_vocab(m);
    int32_t toks[2] = {nv > 1 ? 1 : 0, 0};
    loom_error e2 = {0};
    s = loom_model_eval(m, toks, 2, true, &e2);
    check_error(s, &e2);
    if (s == LOOM_OK) {
        int32_t t = loom_model_argmax(m, -1);
        const float *last = loom_model_logits(m, -1);
        if (t >= nv || !loom_model_logits(m, 0) || !loom_model_logits(m, 1) || !last) abort();
        if (t < 0) {
            /* NaN never wins: -1 only when every logit is NaN (weights with inf/NaN) */
            for (int i = 0; i < nv; i++)
                if (last[i] == last[i]) abort();
        } else {
            loom_error e3 = {0};
            s = loom_model_eval(m, &t, 1, false, &e3);
            check_error(s, &e3);
        }
    }
    const loom_tokenizer *tok = NULL;
    loom_error e4 = {0};
    s = loom_model_tokenizer(m, &tok, &e4);
    check_error(s, &e4);
    if (s == LOOM_OK) {
        int32_t ids[32];
        int32_t n = 0;
        loom_status ts = loom_tokenize(tok, "Once upon a time", 16, true, false, ids, 32, &n, NULL);
        if (ts != LOOM_OK && ts != LOOM_ERR_RANGE && ts != LOOM_ERR_NOMEM) abort();
    }
    loom_model_close(m);
    return 0;
}
