/* The API rules of loom_base.h, checked for every public constructor: on failure
 * *out is NULL (it was pre-set to a non-NULL sentinel) and err says why; a failed
 * loom_ctx_layer is visible (sticky LOOM_ERR_RANGE) on standalone and backend
 * contexts; loom_tokenize and loom_sampler_new report through loom_error. */
#include <stdint.h>
#include <string.h>

#include "loom_backend.h"
#include "loom_model.h"
#include "loom_sampler.h"
#include "test_util.h"

#define MODEL "models/stories260K.gguf"
#define SENTINEL ((void *)&g_sentinel)
static int g_sentinel;

static void check_constructors(void) {
    loom_error e = {0};
    /* loom_ctx_new: max_nodes out of range */
    loom_ctx *ctx = SENTINEL;
    loom_ctx_params cp = loom_ctx_default_params();
    cp.max_nodes = -1;
    CHECK(loom_ctx_new(&cp, &ctx, &e) == LOOM_ERR_INVALID_ARG);
    CHECK(ctx == NULL);
    CHECK(e.msg[0] != 0);

    /* loom_gguf_open / loom_gguf_open_memory */
    loom_gguf *g = SENTINEL;
    loom_error_clear(&e);
    CHECK(loom_gguf_open("/nonexistent/x.gguf", NULL, &g, &e) == LOOM_ERR_IO);
    CHECK(g == NULL);
    CHECK(strstr(e.msg, "/nonexistent/x.gguf") != NULL);
    static const char junk[64] = "GGUF but not really";
    g = SENTINEL;
    loom_error_clear(&e);
    CHECK(loom_gguf_open_memory(junk, sizeof junk, &g, &e) != LOOM_OK);
    CHECK(g == NULL);

    /* loom_gguf_writer_new: NULL out is refused (nothing to clear); success sets it */
    CHECK(loom_gguf_writer_new(NULL) == LOOM_ERR_INVALID_ARG);

    /* loom_backend_open: missing file, bad tensor split */
    loom_backend *be = SENTINEL;
    loom_error_clear(&e);
    CHECK(loom_backend_open("/nonexistent/x.gguf", NULL, &be, &e) != LOOM_OK);
    CHECK(be == NULL);
    loom_backend_params bp = loom_backend_default_params();
    bp.n_tensor_split = 2; /* with a NULL array */
    be = SENTINEL;
    loom_error_clear(&e);
    CHECK(loom_backend_open(test_path(MODEL), &bp, &be, &e) == LOOM_ERR_INVALID_ARG);
    CHECK(be == NULL);

    /* loom_backend_ctx_new on a dry-run backend */
    bp = loom_backend_default_params();
    bp.dry_run = true;
    loom_error_clear(&e);
    CHECK_MSG(loom_backend_open(test_path(MODEL), &bp, &be, &e) == LOOM_OK, "%s", e.msg);
    if (be) {
        ctx = SENTINEL;
        CHECK(loom_backend_ctx_new(be, 0, &ctx, &e) == LOOM_ERR_INVALID_ARG);
        CHECK(ctx == NULL);
        loom_backend_close(be);
    }

    /* loom_model_open: missing file, unknown cache type */
    loom_model_params mp = loom_model_default_params();
    mp.path = "/nonexistent/x.gguf";
    loom_model *m = SENTINEL;
    loom_error_clear(&e);
    CHECK(loom_model_open(&mp, &m, &e) != LOOM_OK);
    CHECK(m == NULL);
    mp.path = test_path(MODEL);
    mp.n_ctx = -4;
    m = SENTINEL;
    loom_error_clear(&e);
    CHECK(loom_model_open(&mp, &m, &e) == LOOM_ERR_INVALID_ARG);
    CHECK(m == NULL);

    /* loom_tokenizer_new_from_gguf on a file without a vocabulary */
    loom_gguf_writer *w = NULL;
    CHECK(loom_gguf_writer_new(&w) == LOOM_OK);
    void *img = NULL;
    size_t img_size = 0;
    if (w) {
        loom_gguf_writer_add_str(w, "general.architecture", "llama", 5);
        CHECK(loom_gguf_writer_write_memory(w, &img, &img_size, NULL) == LOOM_OK);
        loom_gguf_writer_free(w);
    }
    g = NULL;
    if (img) CHECK(loom_gguf_open_memory(img, img_size, &g, NULL) == LOOM_OK);
    if (g) {
        loom_tokenizer *t = SENTINEL;
        loom_error_clear(&e);
        CHECK(loom_tokenizer_new_from_gguf(g, &t, &e) == LOOM_ERR_NOT_FOUND);
        CHECK(t == NULL);
        CHECK(strstr(e.msg, "tokenizer.ggml") != NULL);
        loom_gguf_close(g);
    }
    free(img);

    /* loom_sampler_new */
    loom_sampler *s = SENTINEL;
    loom_sampler_params sp = loom_sampler_default_params();
    sp.repeat_penalty = -1;
    loom_error_clear(&e);
    CHECK(loom_sampler_new(&sp, 10, &s, &e) == LOOM_ERR_INVALID_ARG);
    CHECK(s == NULL);
    CHECK_MSG(strstr(e.msg, "repeat_penalty") != NULL, "%s", e.msg);
}

static void check_tokenize_err(void) {
    loom_model_params mp = loom_model_default_params();
    mp.path = test_path(MODEL);
    mp.n_ctx = 64;
    mp.n_threads = 1;
    loom_model *m = NULL;
    loom_error e = {0};
    CHECK_MSG(loom_model_open(&mp, &m, &e) == LOOM_OK, "%s", e.msg);
    if (!m) return;
    const loom_tokenizer *tk = SENTINEL;
    CHECK(loom_model_tokenizer(NULL, &tk, &e) == LOOM_ERR_INVALID_ARG);
    CHECK(loom_model_tokenizer(m, &tk, &e) == LOOM_OK);
    int32_t ids[8], n = -1;
    loom_error_clear(&e);
    CHECK(loom_tokenize(tk, "Once upon a time", 16, true, false, ids, 2, &n, &e) == LOOM_ERR_RANGE);
    CHECK(n > 2);
    CHECK_MSG(strstr(e.msg, "max = 2") != NULL, "%s", e.msg);
    loom_error_clear(&e);
    CHECK(loom_tokenize(tk, "x", 1, true, false, ids, -1, &n, &e) == LOOM_ERR_INVALID_ARG);
    CHECK(e.msg[0] != 0);
    CHECK(loom_tokenize(tk, "x", 1, true, false, ids, 8, &n, NULL) == LOOM_OK); /* err optional */
    loom_model_close(m);
}

static void check_ctx_layer(void) {
    /* backend context: layers 0..block_count exist (block_count = the output layer) */
    loom_backend_params bp = loom_backend_default_params();
    bp.n_threads = 1;
    loom_backend *be = NULL;
    loom_error e = {0};
    CHECK_MSG(loom_backend_open(test_path(MODEL), &bp, &be, &e) == LOOM_OK, "%s", e.msg);
    if (!be) return;
    int nb = loom_backend_block_count(be);
    loom_ctx *ctx = NULL;
    CHECK(loom_backend_ctx_new(be, 0, &ctx, &e) == LOOM_OK);
    if (ctx) {
        CHECK(loom_ctx_layer(ctx, nb) != ctx);
        CHECK_EQ_INT(loom_ctx_status(ctx), LOOM_OK);
        CHECK(loom_ctx_layer(ctx, nb + 1) == ctx); /* the contract's return value */
        CHECK_EQ_INT(loom_ctx_status(ctx), LOOM_ERR_RANGE);
        CHECK_MSG(strstr(loom_ctx_error(ctx), "layer") != NULL, "%s", loom_ctx_error(ctx));
        int64_t ne[1] = {4};
        loom_tensor *t = loom_zeros(loom_ctx_input(ctx), LOOM_TYPE_F32, 1, ne);
        CHECK(loom_ctx_forward(ctx, loom_scale(ctx, t, 2.0f)) == LOOM_ERR_RANGE);
        loom_ctx_free(ctx);
    }
    loom_backend_close(be);
}

int main(void) {
    check_constructors();
    check_tokenize_err();
    check_ctx_layer();
    return test_finish("test_llm_api_rules");
}
