/* Context overflow and bad requests, through the API and the CLI: a prompt longer
 * than the context, generation past it, zero/negative token counts, NULL tokens,
 * token ids outside the vocabulary, and files whose BOS/EOS ids are outside the
 * vocabulary. Each is a specific status with a message, the cache is untouched
 * by a rejected request, and the CLI exits non-zero with one line on stderr. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "loom_model.h"
#include "test_util.h"

#define MODEL "models/stories260K.gguf"

static loom_model *open_model(const char *path, int n_ctx, int n_batch) {
    loom_model_params p = loom_model_default_params();
    p.path = path;
    p.n_ctx = n_ctx;
    p.n_batch = n_batch;
    p.n_threads = 1;
    loom_model *m = NULL;
    loom_error e = {0};
    CHECK_MSG(loom_model_open(&p, &m, &e) == LOOM_OK, "%s", e.msg);
    return m;
}

static void expect(loom_model *m, const int32_t *t, int n, loom_status want, const char *needle) {
    int before = loom_model_n_past(m);
    loom_error e = {0};
    loom_status s = loom_model_eval(m, t, n, false, &e);
    CHECK_MSG(s == want, "eval n=%d: got %s (%s), want %s", n, loom_status_name(s), e.msg,
              loom_status_name(want));
    CHECK_MSG(e.msg[0] && (!needle || strstr(e.msg, needle)), "message '%s' lacks '%s'", e.msg,
              needle ? needle : "");
    CHECK_EQ_INT(loom_model_n_past(m), before); /* nothing evaluated */
}

static void test_api(void) {
    loom_model *m = open_model(test_path(MODEL), 16, 8);
    if (!m) return;
    CHECK_EQ_INT(loom_model_n_ctx(m), 16);
    int32_t t[32];
    for (int i = 0; i < 32; i++) t[i] = 1 + i;
    /* prompt longer than the context (and longer than the batch) */
    expect(m, t, 17, LOOM_ERR_CONTEXT_FULL, "n_ctx 16");
    expect(m, t, 32, LOOM_ERR_CONTEXT_FULL, NULL);
    /* counts */
    expect(m, t, 0, LOOM_ERR_INVALID_ARG, NULL);
    expect(m, t, -1, LOOM_ERR_INVALID_ARG, NULL);
    expect(m, t, -2147483647 - 1, LOOM_ERR_INVALID_ARG, NULL);
    expect(m, NULL, 3, LOOM_ERR_INVALID_ARG, NULL);
    /* ids: the message names the offending index */
    int32_t bad[4] = {1, 2, -1, 3};
    expect(m, bad, 4, LOOM_ERR_RANGE, "token 2");
    bad[2] = 512; /* n_vocab */
    expect(m, bad, 4, LOOM_ERR_RANGE, "512");
    bad[2] = 2147483647;
    expect(m, bad, 4, LOOM_ERR_RANGE, NULL);
    CHECK(loom_model_logits(m, -1) == NULL); /* nothing evaluated yet */
    CHECK_EQ_INT(loom_model_argmax(m, 0), -1);
    /* fill exactly to the context: prompt 10 + 6 decode steps */
    loom_error e = {0};
    CHECK_MSG(loom_model_eval(m, t, 10, false, &e) == LOOM_OK, "%s", e.msg);
    for (int i = 0; i < 6; i++) {
        int32_t tok = loom_model_argmax(m, -1);
        CHECK(tok >= 0 && tok < 512);
        CHECK_MSG(loom_model_eval(m, &tok, 1, false, &e) == LOOM_OK, "%s", e.msg);
    }
    CHECK_EQ_INT(loom_model_n_past(m), 16);
    const float *before = loom_model_logits(m, -1);
    float keep = before ? before[0] : 0;
    /* generation past the context */
    int32_t tok = 1;
    expect(m, &tok, 1, LOOM_ERR_CONTEXT_FULL, "context full");
    CHECK(loom_model_logits(m, -1) && loom_model_logits(m, -1)[0] == keep); /* logits kept */
    CHECK(loom_model_logits(m, 1) == NULL);  /* only the last row was kept */
    /* reset makes room again */
    loom_model_reset(m);
    CHECK_MSG(loom_model_eval(m, t, 16, true, &e) == LOOM_OK, "%s", e.msg);
    CHECK_EQ_INT(loom_model_n_logits(m), 16);
    CHECK(loom_model_logits(m, 16) == NULL);
    CHECK(loom_model_logits(m, -2) == NULL);
    loom_model_close(m);

    /* bad open parameters */
    loom_model_params p = loom_model_default_params();
    loom_model *m2 = (loom_model *)1;
    loom_error e2 = {0};
    CHECK(loom_model_open(&p, &m2, &e2) != LOOM_OK); /* no path */
    CHECK(m2 == NULL && e2.msg[0]);
    CHECK(loom_model_open(NULL, &m2, NULL) != LOOM_OK);
    CHECK(loom_model_eval(NULL, t, 1, false, NULL) == LOOM_ERR_INVALID_ARG);
}

/* stories260K with one tokenizer id KV replaced by an out-of-range value. */
static bool write_bad_ids(const char *out, const char *key, uint32_t value) {
    loom_gguf *g = NULL;
    loom_error e = {0};
    if (loom_gguf_open(test_path(MODEL), NULL, &g, &e)) return false;
    loom_gguf_writer *w = NULL;
    bool ok = loom_gguf_writer_new(&w) == LOOM_OK;
    for (int64_t i = 0; ok && i < loom_gguf_kv_count(g); i++) {
        const char *k = loom_gguf_kv_key(g, i);
        if (!strcmp(k, "general.alignment")) continue;
        if (!strcmp(k, key)) ok = loom_gguf_writer_add_u32(w, key, value) == LOOM_OK;
        else ok = loom_gguf_writer_copy_kv(w, g, i) == LOOM_OK;
    }
    for (int64_t i = 0; ok && i < loom_gguf_tensor_count(g); i++) {
        const loom_gguf_tensor_info *ti = loom_gguf_tensor(g, i);
        ok = loom_gguf_writer_add_tensor(w, ti->name, ti->type, ti->n_dims, ti->ne,
                                         loom_gguf_tensor_data(g, i)) == LOOM_OK;
    }
    if (ok) ok = loom_gguf_writer_write_file(w, out, &e) == LOOM_OK;
    loom_gguf_writer_free(w);
    loom_gguf_close(g);
    return ok;
}

static int run_cli(const char *args, char *err_out, size_t cap) {
    const char *bin = getenv("LOOM_BIN");
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "'%s' %s 2>&1 >/dev/null", bin, args);
    FILE *f = popen(cmd, "r");
    if (!f) return -1;
    size_t n = fread(err_out, 1, cap - 1, f);
    err_out[n] = 0;
    int st = pclose(f);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static int count_lines(const char *s) {
    int n = 0;
    for (; *s; s++) n += *s == '\n';
    return n;
}

static void test_bad_vocab_ids(void) {
    const char *keys[2] = {"tokenizer.ggml.bos_token_id", "tokenizer.ggml.eos_token_id"};
    char path[128];
    const char *bin = getenv("LOOM_BIN");
    for (int k = 0; k < 2; k++) {
        snprintf(path, sizeof path, "/tmp/loom_test_badid_%d_%d.gguf", (int)getpid(), k);
        bool ok = write_bad_ids(path, keys[k], 5000);
        CHECK_MSG(ok, "writing %s", path);
        if (!ok) continue;
        loom_model *m = open_model(path, 32, 32);
        if (m) {
            const loom_tokenizer *tok = NULL;
            loom_error e = {0};
            loom_status s = loom_model_tokenizer(m, &tok, &e);
            CHECK_MSG(s == LOOM_ERR_FORMAT, "%s = 5000: %s %s", keys[k], loom_status_name(s), e.msg);
            CHECK_MSG(strstr(e.msg, keys[k]) != NULL, "message '%s'", e.msg);
            CHECK(tok == NULL);
            /* the weights still evaluate (the tokenizer is separate) */
            int32_t t = 1;
            CHECK(loom_model_eval(m, &t, 1, false, NULL) == LOOM_OK);
            loom_model_close(m);
        }
        if (bin && access(bin, X_OK) == 0) {
            char args[512], out[4096];
            snprintf(args, sizeof args, "run '%s' -p hello -n 4 --temp 0", path);
            int rc = run_cli(args, out, sizeof out);
            CHECK_MSG(rc != 0 && rc != -1, "loom run with %s = 5000: exit %d", keys[k], rc);
            CHECK_MSG(count_lines(out) == 1 && strstr(out, keys[k]), "stderr: %s", out);
        }
        unlink(path);
    }
}

static void check_cli(void) {
    if (!test_cli()) return; /* main reports the skip */
    char args[8192], out[4096];
    const char *model = test_path(MODEL);
    struct {
        const char *fmt;
        int rc;          /* expected exit code */
        const char *needle;
    } cases[] = {
        {"run '%s' -p 'Once upon a time there was a little girl named Lily' -c 8 -n 4 --temp 0", 1,
         "LOOM_ERR_CONTEXT_FULL"},
        {"eval '%s' --tokens 1,2,3,4,5,6,7,8,9 -c 4", 1, "LOOM_ERR_CONTEXT_FULL"},
        {"eval '%s' --tokens 1,600", 1, "LOOM_ERR_RANGE"},
        {"eval '%s' --tokens 1,-1", 1, "LOOM_ERR_RANGE"},
        {"eval '%s' --tokens ''", 2, "--tokens"},
        {"eval '%s' --tokens 1,99999999999", 2, "--tokens"},
        {"run '%s' -p x -n -5", 2, "-n"},
        {"run '%s' -p x -c 0", 2, "-c"},
        {"run '%s' -p x -c -3", 2, "-c"},
        {"run '%s' -p x -b -1", 2, "-b"},
        {"run '%s' -p x -t -2", 2, "-t"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        snprintf(args, sizeof args, cases[i].fmt, model);
        int rc = run_cli(args, out, sizeof out);
        CHECK_MSG(rc == cases[i].rc, "loom %s: exit %d, want %d", args, rc, cases[i].rc);
        CHECK_MSG(count_lines(out) == 1 && strstr(out, cases[i].needle), "loom %s: stderr '%s'", args, out);
    }
    /* generation that reaches the end of the context stops cleanly (exit 0) and says so */
    snprintf(args, sizeof args, "run '%s' -p Once -c 16 -n 64 --temp 0", model);
    int rc = run_cli(args, out, sizeof out);
    CHECK_EQ_INT(rc, 0);
    CHECK_MSG(strstr(out, "context full") != NULL, "stderr: %s", out);
}

int main(void) {
    test_api();
    test_bad_vocab_ids();
    check_cli();
    return test_finish_part("test_llm_bad_requests", test_cli() ? NULL : TEST_NO_CLI);
}
