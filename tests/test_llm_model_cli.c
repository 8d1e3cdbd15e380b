/* `loom eval` and `loom run` against the stories260K golden data: the logits file
 * format and values, greedy ids, greedy text, context-full and bad-token errors.
 * Needs LOOM_BIN (set by ctest); exit 77 (skipped) without it. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "test_util.h"

static const char *g_bin;

/* Run a command, capture stdout (max cap-1 bytes); returns the exit status. */
static int run(const char *cmd, char *out, size_t cap) {
    FILE *f = popen(cmd, "r");
    if (!f) return -1;
    size_t n = fread(out, 1, cap - 1, f);
    out[n] = 0;
    int st = pclose(f);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static uint32_t le32(const unsigned char *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

int main(void) {
    g_bin = test_cli();
    if (!g_bin) return test_skip("test_llm_model_cli", TEST_NO_CLI);
    const char *model = test_path("models/stories260K.gguf");
    char cmd[16384], out[8192], tmp[256];
    snprintf(tmp, sizeof tmp, "/tmp/loom_test_eval_%d.bin", (int)getpid());

    /* eval: header, logits at position 0 (F32 cache: exact), greedy continuation */
    snprintf(cmd, sizeof cmd, "%s eval %s --tokens 1,403,407,261,378 --cache-type f32 --out %s --greedy 6",
             g_bin, model, tmp);
    CHECK_EQ_INT(run(cmd, out, sizeof out), 0);
    CHECK_MSG(strstr(out, "greedy: 432 383 286 261 376 298") != NULL, "got '%s'", out);
    FILE *f = fopen(tmp, "rb");
    CHECK(f != NULL);
    if (f) {
        unsigned char hdr[8];
        CHECK(fread(hdr, 1, 8, f) == 8);
        CHECK_EQ_INT(le32(hdr), 5);
        CHECK_EQ_INT(le32(hdr + 4), 512);
        static unsigned char buf[5 * 512 * 4];
        CHECK(fread(buf, 1, sizeof buf, f) == sizeof buf);
        CHECK(fgetc(f) == EOF);
        const double want[8] = {-6.22291, 8.40434, -6.22374, -6.22254, -6.22195, -6.22288, -6.22188, -6.22342};
        for (int j = 0; j < 8; j++) {
            uint32_t u = le32(buf + 4 * j);
            float v;
            memcpy(&v, &u, 4);
            CHECK_NEAR(v, want[j], 3e-5); /* golden: 5 decimals; measured max 5.1e-6 */
        }
        /* argmax of the last row = the next golden token (432) */
        int best = 0;
        float bv = -1e30f;
        for (int j = 0; j < 512; j++) {
            uint32_t u = le32(buf + (4 * 512 + j) * 4);
            float v;
            memcpy(&v, &u, 4);
            if (v > bv) bv = v, best = j;
        }
        CHECK_EQ_INT(best, 432);
        fclose(f);
    }
    unlink(tmp);

    /* eval --prompt tokenizes with BOS */
    snprintf(cmd, sizeof cmd, "%s eval %s --prompt 'Once upon a time' --greedy 3", g_bin, model);
    CHECK_EQ_INT(run(cmd, out, sizeof out), 0);
    CHECK_MSG(strstr(out, "greedy: 432 383 286") != NULL, "got '%s'", out);

    /* bad token, bad option */
    snprintf(cmd, sizeof cmd, "%s eval %s --tokens 1,512 2>/dev/null", g_bin, model);
    CHECK(run(cmd, out, sizeof out) != 0);
    snprintf(cmd, sizeof cmd, "%s eval %s --tokens 1,x 2>/dev/null", g_bin, model);
    CHECK(run(cmd, out, sizeof out) != 0);

    /* run: greedy text equals the golden story */
    snprintf(cmd, sizeof cmd, "%s run %s -p 'Once upon a time' -n 30 --temp 0 2>/dev/null", g_bin, model);
    CHECK_EQ_INT(run(cmd, out, sizeof out), 0);
    CHECK_MSG(!strncmp(out, "Once upon a time, there was a little girl named Lily. She loved to play outside",
                       strlen("Once upon a time, there was a little girl named Lily. She loved to play outside")),
              "got '%s'", out);
    /* sampling with a fixed seed is reproducible */
    char out2[8192];
    snprintf(cmd, sizeof cmd, "%s run %s -p 'Once upon a time' -n 30 --seed 42 2>/dev/null", g_bin, model);
    CHECK_EQ_INT(run(cmd, out, sizeof out), 0);
    CHECK_EQ_INT(run(cmd, out2, sizeof out2), 0);
    CHECK(!strcmp(out, out2));
    CHECK(!strncmp(out, "Once upon a time", 16));
    /* context full is reported, not an error */
    snprintf(cmd, sizeof cmd, "%s run %s -p 'Once upon a time' -n 100 -c 16 --temp 0 2>&1 >/dev/null", g_bin,
             model);
    CHECK_EQ_INT(run(cmd, out, sizeof out), 0);
    CHECK_MSG(strstr(out, "context full") != NULL, "stderr '%s'", out);
    CHECK(strstr(out, "tok/s") != NULL);
    /* a prompt longer than the context is an error */
    snprintf(cmd, sizeof cmd, "%s run %s -p 'Once upon a time there was' -c 4 2>&1 >/dev/null", g_bin, model);
    CHECK(run(cmd, out, sizeof out) != 0);
    CHECK_MSG(strstr(out, "CONTEXT_FULL") != NULL, "stderr '%s'", out);
    /* info --archs: the general.architecture values, comma-separated, each once (gpt-oss is
     * the last of the table: the list is whole); it names
     * the families this test data covers (the unsupported-architecture error points here) */
    snprintf(cmd, sizeof cmd, "%s info --archs", g_bin);
    CHECK_EQ_INT(run(cmd, out, sizeof out), 0);
    {
        static const char *const want[] = {"llama", "qwen35", "gemma4", "gpt-oss", "mamba", "mamba2", "jamba",
                                           "rwkv6", "rwkv7", "deci", "gptneox", "bitnet", "hunyuan-moe"};
        char list[8200];
        snprintf(list, sizeof list, ", %.8000s", out);
        char *nl = strchr(list, '\n');
        if (nl) *nl = 0;
        strcat(list, ",");
        for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
            char item[64];
            snprintf(item, sizeof item, " %s,", want[i]);
            const char *at = strstr(list, item);
            CHECK_MSG(at != NULL, "info --archs lacks '%s': %s", want[i], out);
            CHECK_MSG(!at || !strstr(at + 1, item), "info --archs lists '%s' twice", want[i]);
        }
    }
    return test_finish("test_llm_model_cli");
}
