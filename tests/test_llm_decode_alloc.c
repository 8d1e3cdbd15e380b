/* The per-token decode path does not allocate once warm: after a prompt and a few
 * decode steps, 16 more one-token evals leave the library's allocation counter
 * (quant/fault.h; it counts only in test builds with LOOM_FAULT_INJECTION, else this
 * part reports a skip) unchanged; the counter is checked to move during the open. Checked with 1
 * and 2 threads, with and without flash attention. Also checks that the recycled
 * graph contexts give the same tokens as a fresh model (greedy decode twice). */
#include "loom_model.h"
#include "quant/alloc.h"
#include "test_util.h"

#include <string.h>

#define MODEL "models/stories260K.gguf"

static void run_case(int n_threads, bool fa) {
    loom_model_params p = loom_model_default_params();
    p.path = test_path(MODEL);
    p.n_ctx = 256;
    p.n_threads = n_threads;
    p.flash_attn = fa;
    loom_model *m = NULL;
    loom_error err = {0};
    long c_open = loom_alloc_count();
    loom_status s = loom_model_open(&p, &m, &err);
    CHECK_MSG(s == LOOM_OK, "open: %s (%s)", loom_status_name(s), err.msg);
    if (s) return;
    /* the counter is live: opening a model allocates (otherwise "0 allocations" below
     * would prove nothing) */
    if (loom_fault_injection_enabled()) CHECK(loom_alloc_count() - c_open > 10);
    int32_t gen[2][40];
    for (int pass = 0; pass < 2; pass++) {
        loom_model_reset(m);
        int32_t prompt[4] = {1, 403, 407, 261};
        CHECK(loom_model_eval(m, prompt, 4, false, &err) == LOOM_OK);
        int32_t tok = loom_model_argmax(m, -1);
        long before = 0;
        for (int i = 0; i < 40; i++) {
            if (i == 24) before = loom_alloc_count();
            gen[pass][i] = tok;
            s = loom_model_eval(m, &tok, 1, false, &err);
            CHECK_MSG(s == LOOM_OK, "eval %d: %s", i, err.msg);
            if (s) break;
            tok = loom_model_argmax(m, -1);
        }
        long after = loom_alloc_count();
        CHECK_MSG(after == before, "threads %d fa %d pass %d: %ld allocations in 16 decode steps", n_threads,
                  (int)fa, pass, after - before);
    }
    CHECK_MSG(memcmp(gen[0], gen[1], sizeof gen[0]) == 0, "threads %d fa %d: decode differs after reset",
              n_threads, (int)fa);
    loom_model_close(m);
}

int main(void) {
    for (int t = 1; t <= 2; t++)
        for (int fa = 0; fa < 2; fa++) run_case(t, fa != 0);
    return test_finish_part("test_llm_decode_alloc",
                            loom_fault_injection_enabled() ? NULL : TEST_NO_FAULT_INJECTION);
}
