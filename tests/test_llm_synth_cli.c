/* `loom gen` and `loom bench MODEL` through the CLI binary ($LOOM_BIN, set by
 * ctest): gen writes a readable file with the requested shape; bench --json
 * prints every documented key with sane (positive, finite) values. Speed is not
 * asserted. Exit 77 (skipped) when LOOM_BIN is not set. */
#include "loom_gguf.h"
#include "test_util.h"

#include <unistd.h>

static char g_out[1 << 16];

#define run(cmd) test_run((cmd), g_out, sizeof g_out)
#define json_num(key) test_json_num(g_out, (key))

int main(void) {
    const char *bin = test_cli();
    if (!bin) return test_skip("test_llm_synth_cli", TEST_NO_CLI);
    char path[256], cmd[8192];
    snprintf(path, sizeof path, "/tmp/loom_test_synth_cli_%ld.gguf", (long)getpid());
    snprintf(cmd, sizeof cmd,
             "%s gen --vocab %s --dim 256 --layers 1 --heads 4 --kv-heads 1 --ffn 256 "
             "--type Q8_0 --tied --seed 7 -t 1 -o %s 2>&1",
             bin, test_path("tests/data/vocab/ggml-vocab-llama-spm.gguf"), path);
    CHECK_MSG(run(cmd) == 0, "%s", g_out);
    loom_gguf *g = NULL;
    loom_error err = {0};
    CHECK_MSG(loom_gguf_open(path, NULL, &g, &err) == LOOM_OK, "%s", err.msg);
    if (g) {
        uint32_t v = 0;
        CHECK(loom_gguf_get_u32(g, "llama.attention.head_count_kv", &v) == LOOM_OK && v == 1);
        CHECK_EQ_INT(loom_gguf_tensor_count(g), 1 + 9 + 1); /* tied: no output.weight */
        const loom_gguf_tensor_info *t = loom_gguf_tensor(g, loom_gguf_find_tensor(g, "blk.0.attn_k.weight"));
        CHECK(t && t->ne[0] == 256 && t->ne[1] == 64 && t->type == LOOM_TYPE_Q8_0);
        loom_gguf_close(g);
    }

    /* bad arguments are refused with a message, not a crash */
    snprintf(cmd, sizeof cmd, "%s gen --vocab x --dim abc -o %s 2>&1", bin, path);
    CHECK(run(cmd) != 0 && strstr(g_out, "--dim"));
    snprintf(cmd, sizeof cmd, "%s gen --dim 64 2>&1", bin);
    CHECK(run(cmd) != 0 && strstr(g_out, "required"));

    /* the tiny synthetic model through bench (short, one repetition) */
    snprintf(cmd, sizeof cmd, "%s bench %s -p 8 -n 4 -r 2 -t 1 --bw-mib 16 --json 2>&1", bin, path);
    int rc = run(cmd);
    CHECK_MSG(rc == 0, "%s", g_out);
    const char *keys[] = {"pp_tps", "tg_tps", "bandwidth_gbs", "tg_bound_tps", "load_s",
                          "peak_rss_bytes", "pp_tps_stddev", "tg_tps_stddev", "bytes_per_token"};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        double x = json_num(keys[i]);
        CHECK_MSG(isfinite(x), "missing %s in: %s", keys[i], g_out);
        if (strstr(keys[i], "stddev")) CHECK_MSG(x >= 0, "%s = %g", keys[i], x);
        else CHECK_MSG(x > 0, "%s = %g", keys[i], x);
    }
    /* bytes per token: all weights except the 32000-row embedding (tied: it is the
     * output too, so it counts fully) -> at least the file's tensor bytes / 2 */
    double bpt = json_num("bytes_per_token"), mb = json_num("model_bytes");
    CHECK_MSG(bpt >= mb && bpt < mb * 1.1, "bytes_per_token %g, model_bytes %g", bpt, mb);
    CHECK_NEAR(json_num("tg_bound_tps"), json_num("bandwidth_gbs") * 1e9 / bpt,
               1e-3 * json_num("tg_bound_tps") + 1e-2);
    CHECK(json_num("n_prompt") == 8 && json_num("n_gen") == 4 && json_num("reps") == 2);

    snprintf(cmd, sizeof cmd, "%s bench /nonexistent.gguf -r 1 2>&1", bin);
    CHECK(run(cmd) != 0 && strstr(g_out, "nonexistent"));
    snprintf(cmd, sizeof cmd, "%s bench %s -r 0 2>&1", bin, path);
    CHECK(run(cmd) != 0 && strstr(g_out, "-r"));

    /* --arch: another architecture's tiny model, readable and runnable */
    snprintf(cmd, sizeof cmd, "%s gen --arch gpt-oss --vocab %s -o %s 2>&1", bin, test_path("models/stories260K.gguf"),
             path);
    CHECK_MSG(run(cmd) == 0, "%s", g_out);
    g = NULL;
    CHECK_MSG(loom_gguf_open(path, NULL, &g, &err) == LOOM_OK, "%s", err.msg);
    if (g) {
        uint32_t v = 0;
        CHECK(loom_gguf_get_u32(g, "gpt-oss.expert_count", &v) == LOOM_OK && v == 4);
        CHECK(loom_gguf_find_tensor(g, "blk.1.attn_sinks.weight") >= 0);
        loom_gguf_close(g);
    }
    snprintf(cmd, sizeof cmd, "%s run %s -p \"Once upon a time\" -n 4 -t 1 2>&1", bin, path);
    CHECK_MSG(run(cmd) == 0, "%s", g_out);
    snprintf(cmd, sizeof cmd, "%s gen --arch nosuch --vocab %s -o %s 2>&1", bin, test_path("models/stories260K.gguf"),
             path);
    CHECK(run(cmd) != 0 && strstr(g_out, "nosuch") && strstr(g_out, "gemma2"));
    unlink(path);
    return test_finish("test_llm_synth_cli");
}
