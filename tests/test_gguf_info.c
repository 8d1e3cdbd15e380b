/* `loom info` end to end: runs the CLI ($LOOM_BIN, set by CTest) on real files and on
 * a broken one. Expected facts come from the model description (5 layers, dim 64,
 * 8 heads, 4 KV heads, FFN 172, 48 tensors). Exit 77 (skipped) when LOOM_BIN is not set. */
#include "loom_gguf.h"
#include "test_util.h"

#include <sys/wait.h>
#include <unistd.h>

/* Run cmd; capture stdout (up to cap bytes) and return the exit status (-1 on failure). */
static int run(const char *cmd, char *out, size_t cap) {
    FILE *p = popen(cmd, "r");
    if (!p) return -1;
    size_t n = 0, k;
    while (n + 1 < cap && (k = fread(out + n, 1, cap - 1 - n, p)) > 0) n += k;
    out[n] = '\0';
    char sink[4096];
    while (fread(sink, 1, sizeof sink, p) > 0) {}
    int st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static int count_lines(const char *s) {
    int n = 0;
    for (; *s; s++) n += *s == '\n';
    return n;
}

int main(void) {
    const char *bin = test_cli();
    if (!bin) return test_skip("test_gguf_info", TEST_NO_CLI);
    static char out[1 << 20];
    static char cmd[16384];

    snprintf(cmd, sizeof cmd, "'%s' info '%s' --json", bin, test_path("models/stories260K.gguf"));
    CHECK_EQ_INT(run(cmd, out, sizeof out), 0);
    CHECK(strstr(out, "\"architecture\":\"llama\"") != NULL);
    CHECK(strstr(out, "\"n_tensors\":48") != NULL);
    CHECK(strstr(out, "\"n_kv\":19") != NULL);
    CHECK(strstr(out, "\"block_count\":5") != NULL);
    CHECK(strstr(out, "\"embedding_length\":64") != NULL);
    CHECK(strstr(out, "\"feed_forward_length\":172") != NULL);
    CHECK(strstr(out, "\"attention.head_count\":8") != NULL);
    CHECK(strstr(out, "\"attention.head_count_kv\":4") != NULL);
    CHECK(strstr(out, "\"data_offset\":14176") != NULL);
    CHECK(strstr(out, "{\"name\":\"blk.0.ffn_down.weight\",\"type\":\"F32\",\"shape\":[172, 64],"
                      "\"bytes\":44032,\"offset\":355840}") != NULL);
    CHECK(strstr(out, "{\"name\":\"blk.4\",\"n_tensors\":9,") != NULL);
    CHECK(count_lines(out) == 1); /* one JSON object on one line */

    snprintf(cmd, sizeof cmd, "'%s' info '%s'", bin, test_path("models/stories260K.gguf"));
    CHECK_EQ_INT(run(cmd, out, sizeof out), 0);
    CHECK(strstr(out, "tensors (48)") != NULL);
    CHECK(strstr(out, "architecture: llama") != NULL);

    static const char *const vocab[] = {"gpt-2", "llama-bpe", "llama-spm", "phi-3", "qwen2"};
    for (size_t k = 0; k < sizeof vocab / sizeof vocab[0]; k++) {
        char rel[128];
        snprintf(rel, sizeof rel, "tests/data/vocab/ggml-vocab-%s.gguf", vocab[k]);
        snprintf(cmd, sizeof cmd, "'%s' info '%s' >/dev/null", bin, test_path(rel));
        CHECK_MSG(run(cmd, out, sizeof out) == 0, "%s", rel);
        snprintf(cmd, sizeof cmd, "'%s' info '%s' --json", bin, test_path(rel));
        CHECK_MSG(run(cmd, out, sizeof out) == 0 && strstr(out, "\"n_tensors\":0"), "%s --json", rel);
    }

    /* errors: non-zero exit, exactly one line on stderr naming the problem */
    snprintf(cmd, sizeof cmd, "'%s' info '%s' 2>&1 >/dev/null", bin,
             test_path("tests/data/vocab/ggml-vocab-gpt-2.gguf.inp"));
    CHECK(run(cmd, out, sizeof out) != 0);
    CHECK(count_lines(out) == 1 && strstr(out, "magic") != NULL);
    snprintf(cmd, sizeof cmd, "'%s' info /no/such.gguf 2>&1 >/dev/null", bin);
    CHECK(run(cmd, out, sizeof out) != 0);
    CHECK(count_lines(out) == 1 && strstr(out, "/no/such.gguf") != NULL);
    snprintf(cmd, sizeof cmd, "'%s' info 2>&1 >/dev/null", bin);
    CHECK(run(cmd, out, sizeof out) != 0 && count_lines(out) == 1);
    return test_finish("test_gguf_info");
}
