/* A worker thread that cannot be started (the thread-creation hook of the test
 * build fails the k-th pthread_create) is a resource error: LOOM_ERR_RESOURCE, a
 * message naming the thread limit and suggesting fewer threads, *out NULL, nothing
 * leaked (ASan), and the next attempt works. Checked for the standalone engine
 * (loom_ctx_new) and for a model open (its backend pool starts in the reserve).
 * Before issue #14 item 5 this was LOOM_ERR_INTERNAL "cannot create the thread pool".
 * Needs failure injection (exit 77 otherwise). */
#include "loom_model.h"
#include "quant/fault.h"
#include "test_util.h"

static void check_msg(const char *what, const char *msg) {
    CHECK_MSG(strstr(msg, "thread") && strstr(msg, "fewer threads"), "%s: %s", what, msg);
}

int main(void) {
    if (!loom_fault_injection_enabled()) return test_skip("test_llm_fault_thread", TEST_NO_FAULT_INJECTION);
    for (int k = 1; k <= 3; k++) {
        loom_ctx_params cp = loom_ctx_default_params();
        cp.n_threads = 4;
        loom_ctx *ctx = (loom_ctx *)&cp;
        loom_error e = {0};
        loom_thread_fail_at(k);
        loom_status s = loom_ctx_new(&cp, &ctx, &e);
        loom_thread_fail_at(0);
        CHECK_EQ_INT(s, LOOM_ERR_RESOURCE);
        CHECK(ctx == NULL);
        check_msg("loom_ctx_new", e.msg);
    }
    loom_ctx_params cp = loom_ctx_default_params();
    cp.n_threads = 4;
    loom_ctx *ctx = NULL;
    CHECK(loom_ctx_new(&cp, &ctx, NULL) == LOOM_OK);
    loom_ctx_free(ctx);

    loom_model_params p = loom_model_default_params();
    p.path = test_path("models/stories260K.gguf");
    p.n_ctx = 64;
    p.n_threads = 3;
    loom_model *m = (loom_model *)&p;
    loom_error e = {0};
    loom_thread_fail_at(2);
    loom_status s = loom_model_open(&p, &m, &e);
    loom_thread_fail_at(0);
    CHECK_EQ_INT(s, LOOM_ERR_RESOURCE);
    CHECK(m == NULL);
    check_msg("loom_model_open", e.msg);
    loom_error e2 = {0};
    CHECK_MSG(loom_model_open(&p, &m, &e2) == LOOM_OK, "%s", e2.msg);
    loom_model_close(m);
    return test_finish("test_llm_fault_thread");
}
