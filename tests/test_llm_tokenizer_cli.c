/* `loom tokenize --vectors` reproduces every llama.cpp .out file byte for byte,
 * and plain `loom tokenize` prints the stories260K golden ids. Needs the CLI
 * ($LOOM_BIN, set by ctest); skipped when it is not built. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "test_util.h"

static size_t run(const char *cmd, char *out, size_t cap) {
    FILE *p = popen(cmd, "r");
    if (!p) return 0;
    size_t n = fread(out, 1, cap - 1, p);
    out[n] = 0;
    int rc = pclose(p);
    CHECK_MSG(rc == 0, "%s: exit %d", cmd, rc);
    return n;
}

int main(void) {
    const char *bin = getenv("LOOM_BIN");
    if (!bin || access(bin, X_OK) != 0) {
        printf("test_llm_tokenizer_cli: %s not built, skipped\n", bin ? bin : "LOOM_BIN");
        return test_finish("test_llm_tokenizer_cli");
    }
    static char out[1 << 20], want[1 << 20];
    const char *names[] = {"llama-spm", "phi-3", "gpt-2", "llama-bpe", "qwen2"};
    for (int i = 0; i < 5; i++) {
        char gg[4096], cmd[16384];
        snprintf(gg, sizeof gg, "%s", test_path("tests/data/vocab/ggml-vocab-"));
        snprintf(cmd, sizeof cmd, "'%s' tokenize '%s%s.gguf' --vectors '%s%s.gguf.inp'", bin, gg, names[i], gg,
                 names[i]);
        size_t n = run(cmd, out, sizeof out);
        char path[4200];
        snprintf(path, sizeof path, "%s%s.gguf.out", gg, names[i]);
        FILE *f = fopen(path, "rb");
        CHECK(f != NULL);
        if (!f) continue;
        size_t m = fread(want, 1, sizeof want, f);
        fclose(f);
        CHECK_MSG(n == m && memcmp(out, want, n) == 0, "loom tokenize --vectors %s differs from .out", names[i]);
    }
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "'%s' tokenize '%s' 'hello, world'", bin, test_path("models/stories260K.gguf"));
    run(cmd, out, sizeof out);
    CHECK_MSG(strcmp(out, "1 281 306 414 432 263 304 341\n") == 0, "got %s", out); /* stories260K.json */
    snprintf(cmd, sizeof cmd, "'%s' tokenize '%s' --no-bos Lily", bin, test_path("models/stories260K.gguf"));
    run(cmd, out, sizeof out);
    CHECK_MSG(strcmp(out, "317\n") == 0, "got %s", out);
    return test_finish("test_llm_tokenizer_cli");
}
