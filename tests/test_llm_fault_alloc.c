/* Allocation failure walk: open + load + tokenize + one prompt + 16 greedy decode
 * steps of stories260K, then the sequence copied and 4 batched steps of both
 * sequences (loom_batch, loom_model_decode), through the public API, with allocation N failing, for EVERY
 * N the clean run makes (quant/alloc.h counts host and device allocations in one
 * sequence). Each run must either fail with a status and a message (and close
 * cleanly) or, when the failure was recoverable, produce exactly the tokens of the
 * clean run. Under ASan/LSan (the sanitizer build) every failure path is also
 * checked for leaks and bad frees. Both walks (1 thread, then 2 threads: pool and
 * parallel load workers) visit every N in every build: ~115 allocations per run,
 * 0.3 s Release, ~1 s ASan. No striding is needed; LOOM_FAULT_WALK_STRIDE=k
 * (visit every k-th N plus the first and last 32) exists for bigger sequences. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "loom_model.h"
#include "quant/alloc.h"
#include "test_util.h"

#define MODEL "models/stories260K.gguf"
#define N_DECODE 16
#define N_BATCHED 4

typedef struct run_out {
    loom_status status;
    char msg[LOOM_ERROR_MSG_MAX];
    int32_t toks[N_DECODE + 2 * N_BATCHED];
    int n_toks;
} run_out;

static int g_threads = 1;

static void run_seq(run_out *r) {
    memset(r, 0, sizeof *r);
    loom_error err = {0};
    loom_model_params p = loom_model_default_params();
    p.path = test_path(MODEL);
    p.n_ctx = 64;
    p.n_threads = g_threads;
    p.n_seq_max = 2;
    loom_model *m = NULL;
    loom_status s = loom_model_open(&p, &m, &err);
    if (s == LOOM_OK && !m) s = loom_error_set(&err, LOOM_ERR_INTERNAL, "open returned OK and no model");
    const loom_tokenizer *tok = NULL;
    if (s == LOOM_OK) s = loom_model_tokenizer(m, &tok, &err);
    int32_t ids[64];
    int32_t n = 0;
    if (s == LOOM_OK) {
        const char *text = "Once upon a time, there was a little";
        s = loom_tokenize(tok, text, strlen(text), true, false, ids, 64, &n, NULL);
        if (s) loom_error_set(&err, s, "tokenize failed");
    }
    if (s == LOOM_OK) s = loom_model_eval(m, ids, (int)n, false, &err);
    for (int i = 0; s == LOOM_OK && i < N_DECODE; i++) {
        int32_t t = loom_model_argmax(m, -1);
        r->toks[r->n_toks++] = t;
        s = loom_model_eval(m, &t, 1, false, &err);
    }
    /* fork the sequence and decode both together */
    loom_batch b = {0};
    if (s == LOOM_OK) s = loom_model_seq_copy(m, 0, 1, -1, -1, &err);
    if (s == LOOM_OK) s = loom_batch_init(&b, 2, 1, &err);
    int32_t next[2] = {loom_model_argmax(m, -1), loom_model_argmax(m, -1)};
    for (int i = 0; s == LOOM_OK && i < N_BATCHED; i++) {
        int32_t pos = loom_model_n_past(m);
        loom_batch_clear(&b);
        for (int32_t q = 0; q < 2 && s == LOOM_OK; q++) s = loom_batch_add(&b, next[q], pos, &q, 1, true, &err);
        if (s == LOOM_OK) s = loom_model_decode(m, &b, &err);
        for (int32_t q = 0; q < 2 && s == LOOM_OK; q++) r->toks[r->n_toks++] = next[q] = loom_model_batch_argmax(m, q);
    }
    loom_batch_free(&b);
    loom_model_close(m);
    r->status = s;
    snprintf(r->msg, sizeof r->msg, "%s", err.msg);
}

static void walk(int threads, long stride) {
    g_threads = threads;
    run_out ref, r;
    long c0 = loom_alloc_count();
    run_seq(&ref);
    long total = loom_alloc_count() - c0;
    CHECK_MSG(ref.status == LOOM_OK, "clean run: %s", ref.msg);
    CHECK_EQ_INT(ref.n_toks, N_DECODE + 2 * N_BATCHED);
    CHECK(total > 0);
    if (threads == 1) {
        /* a second clean run makes the same number of allocations (deterministic walk) */
        long c1 = loom_alloc_count();
        run_seq(&r);
        CHECK_EQ_INT(loom_alloc_count() - c1, total);
    }
    const char *env = getenv("LOOM_FAULT_WALK_STRIDE");
    if (env && atol(env) > 0) stride = atol(env);

    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    long n_runs = 0, n_failed = 0, n_recovered = 0, n_not_fired = 0;
    long status_hist[16] = {0};
    for (long k = 1; k <= total; k++) {
        if (stride > 1 && k > 32 && k <= total - 32 && k % stride != 0) continue;
        long before = loom_alloc_count();
        loom_alloc_fail_at(k);
        run_seq(&r);
        long made = loom_alloc_count() - before;
        loom_alloc_fail_at(0);
        n_runs++;
        if (made < k) n_not_fired++; /* the run stopped before making k allocations */
        if (r.status == LOOM_OK) {
            n_recovered++;
            bool same = r.n_toks == ref.n_toks && !memcmp(r.toks, ref.toks, sizeof r.toks);
            CHECK_MSG(same, "allocation %ld failed, run succeeded with different tokens", k);
        } else {
            n_failed++;
            if ((unsigned)r.status < 16) status_hist[r.status]++;
            CHECK_MSG(r.msg[0] != '\0', "allocation %ld: status %s with an empty message", k,
                      loom_status_name(r.status));
            CHECK_MSG(r.status != LOOM_ERR_INTERNAL, "allocation %ld: %s", k, r.msg);
        }
    }
    if (threads == 1) CHECK_EQ_INT(n_not_fired, 0);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double secs = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
    printf("allocation walk (%d thread%s): %ld allocations per run, %ld runs (stride %ld), %ld failed cleanly, "
           "%ld recovered, %.1f s\n", threads, threads > 1 ? "s" : "", total, n_runs, stride, n_failed,
           n_recovered, secs);
    for (int i = 0; i < 16; i++)
        if (status_hist[i]) printf("  %s: %ld\n", loom_status_name((loom_status)i), status_hist[i]);
}

int main(void) {
    if (!loom_fault_injection_enabled()) return test_skip("test_llm_fault_alloc", TEST_NO_FAULT_INJECTION);
    walk(1, 1);
    /* with a worker pool the order of allocations can vary between runs; the
     * property checked is the same (error + message, or the reference tokens) */
    walk(2, 1);
    const char *env = getenv("LOOM_FAULT_WALK_STRIDE");
    return test_finish_part("test_llm_fault_alloc", env && atol(env) > 1
                                                        ? "LOOM_FAULT_WALK_STRIDE: not every allocation was failed"
                                                        : NULL);
}
