/* `loom tokenize --vectors` reproduces every llama.cpp .out file (line by
 * line, ignoring leading spaces), plain `loom tokenize` prints the
 * stories260K golden ids, special tokens are parsed unless --no-special,
 * --detokenize inverts, and a file with an unsupported tokenizer fails with
 * exit status 1 and a message naming the file and the key. Needs the CLI
 * ($LOOM_BIN, set by ctest); exit 77 (skipped) when it is not built. */
#include "tok_test_util.h"

static size_t run(const char *cmd, char *out, size_t cap, int *rc) {
    FILE *p = popen(cmd, "r");
    if (!p) return 0;
    size_t n = fread(out, 1, cap - 1, p);
    out[n] = 0;
    int r = pclose(p);
    *rc = WIFEXITED(r) ? WEXITSTATUS(r) : -1;
    return n;
}

/* Compare two .out texts line by line, ignoring leading/trailing spaces. */
static bool same_lines(const char *a, size_t na, const char *b, size_t nb) {
    size_t i = 0, j = 0;
    while (i < na || j < nb) {
        while (i < na && a[i] == ' ') i++;
        while (j < nb && b[j] == ' ') j++;
        size_t ie = i, je = j;
        while (ie < na && a[ie] != '\n') ie++;
        while (je < nb && b[je] != '\n') je++;
        size_t il = ie, jl = je;
        while (il > i && a[il - 1] == ' ') il--;
        while (jl > j && b[jl - 1] == ' ') jl--;
        if (il - i != jl - j || memcmp(a + i, b + j, il - i) != 0) return false;
        if ((ie < na) != (je < nb)) return false;
        i = ie + 1;
        j = je + 1;
    }
    return true;
}

int main(void) {
    const char *bin = test_cli();
    if (!bin) return test_skip("test_llm_tokenizer_cli", TEST_NO_CLI);
    static char out[1 << 20];
    char cmd[16384], path[4096], inp[4096];
    int rc, n_sets = 0;
    for (size_t i = 0; i < TT_N_VOCABS; i++) {
        const tt_vocab *v = &TT_VOCABS[i];
        snprintf(inp, sizeof inp, "%s/tests/data/vocab/ggml-vocab-%s.gguf.inp", LOOM_SOURCE_DIR, v->name);
        if (access(inp, R_OK) != 0) continue;
        const char *vp = tt_vocab_path(v->file);
        CHECK_MSG(vp != NULL, "%s", v->file);
        if (!vp) continue;
        if (v->pre) {
            /* derived vocabulary: written next to the unpacked ones */
            void *img = NULL;
            size_t sz = 0;
            snprintf(path, sizeof path, "%s/derived-%s.gguf", LOOM_VOCAB_DIR, v->name);
            CHECK(tt_derive(vp, NULL, v->pre, &img, &sz) == LOOM_OK);
            FILE *f = fopen(path, "wb");
            CHECK(f && fwrite(img, 1, sz, f) == sz);
            if (f) fclose(f);
            free(img);
        } else {
            snprintf(path, sizeof path, "%s", vp);
        }
        snprintf(cmd, sizeof cmd, "'%s' tokenize '%s' --vectors '%s' --no-special", bin, path, inp);
        size_t n = run(cmd, out, sizeof out, &rc);
        CHECK_MSG(rc == 0, "%s: exit %d", cmd, rc);
        char outp[4200];
        snprintf(outp, sizeof outp, "%s/tests/data/vocab/ggml-vocab-%s.gguf.out", LOOM_SOURCE_DIR, v->name);
        size_t wn = 0;
        char *want = tt_read_file(outp, &wn);
        CHECK(want != NULL);
        CHECK_MSG(want && same_lines(out, n, want, wn), "loom tokenize --vectors %s differs from the .out file", v->name);
        free(want);
        n_sets++;
    }
    printf("test_llm_tokenizer_cli: %d vector sets\n", n_sets);
    CHECK(n_sets >= 15);

    snprintf(cmd, sizeof cmd, "'%s' tokenize '%s' 'hello, world'", bin, test_path("models/stories260K.gguf"));
    run(cmd, out, sizeof out, &rc);
    CHECK_MSG(rc == 0 && strcmp(out, "1 281 306 414 432 263 304 341\n") == 0, "got %s", out); /* stories260K.json */
    snprintf(cmd, sizeof cmd, "'%s' tokenize '%s' --no-bos Lily", bin, test_path("models/stories260K.gguf"));
    run(cmd, out, sizeof out, &rc);
    CHECK_MSG(rc == 0 && strcmp(out, "317\n") == 0, "got %s", out);

    /* special tokens: parsed by default, text with --no-special */
    const char *qwen = tt_vocab_path("ggml-vocab-qwen2.gguf");
    if (qwen) {
        snprintf(path, sizeof path, "%s", qwen);
        snprintf(cmd, sizeof cmd, "'%s' tokenize '%s' '<|im_start|>user'", bin, path);
        run(cmd, out, sizeof out, &rc);
        CHECK_MSG(rc == 0 && strcmp(out, "151644 872\n") == 0, "got %s", out);
        snprintf(cmd, sizeof cmd, "'%s' tokenize '%s' --no-special '<|im_start|>user'", bin, path);
        run(cmd, out, sizeof out, &rc);
        CHECK_MSG(rc == 0 && strncmp(out, "151644", 6) != 0 && strchr(out, ' '), "got %s", out);
        snprintf(cmd, sizeof cmd, "'%s' tokenize '%s' --detokenize '151644 872 11 1879'", bin, path);
        run(cmd, out, sizeof out, &rc);
        CHECK_MSG(rc == 0 && strcmp(out, "user, world\n") == 0, "got %s", out);
        snprintf(cmd, sizeof cmd, "'%s' tokenize '%s' --special --detokenize '151644 872'", bin, path);
        run(cmd, out, sizeof out, &rc);
        CHECK_MSG(rc == 0 && strcmp(out, "<|im_start|>user\n") == 0, "got %s", out);
    }

    /* unsupported tokenizer: exit 1, the message names the file and the key */
    snprintf(path, sizeof path, "%s/unsupported-tokenizer.gguf", LOOM_VOCAB_DIR);
    loom_gguf_writer *w = NULL;
    CHECK(loom_gguf_writer_new(&w) == LOOM_OK);
    const char *toks[] = {"a", "b"};
    loom_gguf_writer_add_str(w, "tokenizer.ggml.model", "wordpiece-x", 11);
    loom_gguf_writer_add_arr_str(w, "tokenizer.ggml.tokens", toks, NULL, 2);
    loom_error err = {0};
    CHECK(loom_gguf_writer_write_file(w, path, &err) == LOOM_OK);
    loom_gguf_writer_free(w);
    snprintf(cmd, sizeof cmd, "'%s' tokenize '%s' hello 2>&1", bin, path);
    run(cmd, out, sizeof out, &rc);
    CHECK_EQ_INT(rc, 1);
    CHECK_MSG(strstr(out, "tokenizer.ggml.model") && strstr(out, "wordpiece-x") && strstr(out, "unsupported-tokenizer.gguf"),
              "message: %s", out);
    return test_finish("test_llm_tokenizer_cli");
}
