/* `loom embed` (the CLI binary under test: LOOM_BIN) on a synthetic bert model:
 * text, --tokens and --file inputs give the float64 reference's vectors, --json and
 * plain output agree, --no-normalize, --pooling none, --truncate, and the exit
 * statuses of bad input (usage 2, runtime 1 with a message). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "embed_test_common.h"
#include "test_util.h"

static char g_out[1 << 20];

/* Floats in text (skipping anything that is not a number) into v; the count. */
static int floats_of(const char *s, float *v, int cap) {
    int n = 0;
    while (*s && n < cap) {
        if ((*s >= '0' && *s <= '9') || *s == '-') {
            char *e;
            v[n++] = strtof(s, &e);
            s = e;
        } else {
            s++;
        }
    }
    return n;
}

static int run(const char *cmd) { return test_run(cmd, g_out, sizeof g_out); }

int main(void) {
    const char *bin = test_cli();
    if (!bin) return test_skip("test_llm_embed_cli", TEST_NO_CLI);
    if (!et_vocab()) return test_skip("test_llm_embed_cli", "bert-bge vocab missing (tests/data/vocab)");
    char path[256], file[256], cmd[8192];
    snprintf(path, sizeof path, "/tmp/loom_test_embed_cli_%ld.gguf", (long)getpid());
    snprintf(file, sizeof file, "/tmp/loom_test_embed_cli_%ld.txt", (long)getpid());
    loom_error err = {0};
    CHECK_MSG(et_make_model("bert", "F32", path, &err) == LOOM_OK, "%s", err.msg);

    /* reference: "hello world" = [CLS] hello world [SEP], mean pooling, unit norm */
    const int32_t ids[4] = {101, 7592, 2088, 102};
    et_ref r;
    double hid[4 * 64], want[64] = {0};
    CHECK(et_ref_open(&r, path) && et_ref_forward(&r, ids, 4, hid));
    et_ref_close(&r);
    double nn = 0;
    for (int c = 0; c < 64; c++) {
        for (int t = 0; t < 4; t++) want[c] += hid[t * 64 + c] / 4;
        nn += want[c] * want[c];
    }
    nn = sqrt(nn);

    float v[256], w[256];
    snprintf(cmd, sizeof cmd, "%s embed %s 'hello world' 'second input' --json 2>&1", bin, path);
    CHECK_EQ_INT(run(cmd), 0);
    CHECK(!strncmp(g_out, "{\"embeddings\": [[", 17));
    CHECK_EQ_INT(floats_of(g_out, v, 256), 128);
    double cs = et_cosine(v, want, 64);
    printf("loom embed cosine vs float64 %.9f\n", cs);
    CHECK_MSG(cs >= 0.99999, "%.9f", cs);
    double n1 = 0;
    for (int c = 0; c < 64; c++) n1 += (double)v[c] * v[c];
    CHECK_NEAR(n1, 1.0, 1e-5);

    /* plain output, --tokens and --file give the same first vector */
    snprintf(cmd, sizeof cmd, "%s embed %s --tokens 101,7592,2088,102 2>&1", bin, path);
    CHECK_EQ_INT(run(cmd), 0);
    CHECK(strchr(g_out, '\n') == g_out + strlen(g_out) - 1); /* one line */
    CHECK_EQ_INT(floats_of(g_out, w, 256), 64);
    for (int c = 0; c < 64; c++) CHECK_NEAR(w[c], v[c], 1e-7);
    FILE *f = fopen(file, "w");
    CHECK(f && fputs("hello world\n\nsecond input\r\n", f) >= 0 && fclose(f) == 0);
    snprintf(cmd, sizeof cmd, "%s embed %s --file %s 2>&1", bin, path, file);
    CHECK_EQ_INT(run(cmd), 0);
    CHECK_EQ_INT(floats_of(g_out, w, 256), 128);
    for (int c = 0; c < 128; c++) CHECK_NEAR(w[c], v[c], 1e-7);

    /* --no-normalize: the raw mean */
    snprintf(cmd, sizeof cmd, "%s embed %s 'hello world' --no-normalize 2>&1", bin, path);
    CHECK_EQ_INT(run(cmd), 0);
    CHECK_EQ_INT(floats_of(g_out, w, 256), 64);
    for (int c = 0; c < 64; c++) CHECK_NEAR(w[c], want[c], 1e-5 * nn);
    /* --pooling none: one vector per token, in a list per input */
    snprintf(cmd, sizeof cmd, "%s embed %s 'hello world' --pooling none --json --no-normalize 2>&1", bin, path);
    CHECK_EQ_INT(run(cmd), 0);
    CHECK(!strncmp(g_out, "{\"embeddings\": [[[", 18));
    CHECK_EQ_INT(floats_of(g_out, w, 256), 256);
    for (int i = 0; i < 256; i++) CHECK_NEAR(w[i], hid[i], 1e-4);
    /* --truncate */
    snprintf(cmd, sizeof cmd, "%s embed %s 'one two three four five' --ctx 4 2>&1", bin, path);
    CHECK_EQ_INT(run(cmd), 1);
    CHECK(strstr(g_out, "more than the context") != NULL);
    snprintf(cmd, sizeof cmd, "%s embed %s 'one two three four five' --ctx 4 --truncate 2>&1", bin, path);
    CHECK_EQ_INT(run(cmd), 0);

    /* bad input */
    static const struct {
        const char *args;
        int rc;
        const char *msg;
    } bad[] = {
        {"", 2, "no model"},
        {"%s", 2, "exactly one"},
        {"%s x --tokens 1,2", 2, "exactly one"},
        {"%s --tokens 1,,2", 2, "--tokens"},
        {"%s --tokens abc", 2, "--tokens"},
        {"%s x --pooling max", 2, "--pooling"},
        {"%s x --ctx 0", 2, "--ctx"},
        {"%s x --bogus 1", 2, "unknown option"},
        {"%s --tokens 101,40000,102", 1, "outside the vocabulary"},
        {"%s --file /nonexistent/x.txt", 1, "x.txt"},
        {"/nonexistent/m.gguf x", 1, "m.gguf"},
        {"%s x --ctx 1000", 1, "too large"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char args[512];
        snprintf(args, sizeof args, bad[i].args, path);
        snprintf(cmd, sizeof cmd, "%s embed %s 2>&1", bin, args);
        int rc = run(cmd);
        CHECK_MSG(rc == bad[i].rc && strstr(g_out, bad[i].msg), "'%s': rc %d, output: %s", args, rc, g_out);
    }
    snprintf(cmd, sizeof cmd, "%s embed %s x 2>&1", bin, test_path("models/stories260K.gguf"));
    CHECK_EQ_INT(run(cmd), 1);
    CHECK_MSG(strstr(g_out, "not an embedding model") != NULL, "%s", g_out);
    unlink(path);
    unlink(file);
    return test_finish("test_llm_embed_cli");
}
