/* `loom bench -d N` (tokens already in the cache before each test, llama-bench's
 * -d) and --cache-type through the CLI binary ($LOOM_BIN, set by ctest), on a tiny
 * synthetic model with a 512-token context: the JSON reports the depth, the
 * context is sized for depth + test tokens, the planned KV cache bytes and the
 * bytes per token match the cache geometry computed here, the cache holds depth +
 * n_gen tokens after the last tg test, a depth beyond the model's trained context is
 * timed with a warning (as llama-bench), one beyond what a model or the memory can
 * hold is refused with a message, and bad cache-type combinations are refused. Speed is
 * not asserted. Exit 77 (skipped) when LOOM_BIN is not set. */
#include "test_util.h"

#include <unistd.h>

static char g_out[1 << 16];

#define run(cmd) test_run((cmd), g_out, sizeof g_out)
#define json_num(key) test_json_num(g_out, (key))

#define N_LAYER 2
#define HEAD_DIM 64 /* dim 256 / 4 heads; 1 kv head */
#define CTX_TRAIN 512

static double round_up(double x, double m) { return ceil(x / m) * m; }

int main(void) {
    const char *bin = test_cli();
    if (!bin) return test_skip("test_llm_bench_depth", TEST_NO_CLI);
    char path[256], cmd[8192];
    snprintf(path, sizeof path, "/tmp/loom_test_bench_depth_%ld.gguf", (long)getpid());
    snprintf(cmd, sizeof cmd,
             "%s gen --vocab %s --dim 256 --layers %d --heads 4 --kv-heads 1 --ffn 256 --ctx %d "
             "--type Q8_0 --tied --seed 11 -t 1 -o %s 2>&1",
             bin, test_path("tests/data/vocab/ggml-vocab-llama-spm.gguf"), N_LAYER, CTX_TRAIN, path);
    CHECK_MSG(run(cmd) == 0, "%s", g_out);
    /* K and V bytes of one cached token over all layers, F16 */
    const double tok_f16 = (double)N_LAYER * 1 * (HEAD_DIM + HEAD_DIM) * 2;

    /* depth 0, for the bytes-per-token baseline */
    snprintf(cmd, sizeof cmd, "%s bench %s -p 8 -n 4 -r 1 -t 1 --bw-mib 0 --json 2>&1", bin, path);
    CHECK_MSG(run(cmd) == 0, "%s", g_out);
    /* flash attention on by default, as llama-bench's auto on a CPU */
    CHECK_MSG(strstr(g_out, "\"flash_attn\": true") != NULL, "%s", g_out);
    CHECK(json_num("depth") == 0);
    CHECK(json_num("n_past_end") == 4);
    const double bpt0 = json_num("bytes_per_token");

    /* depth 256, F16 cache, no flash attention (cells padded to 32), two repetitions:
     * each test starts again from the 256 cached tokens */
    snprintf(cmd, sizeof cmd, "%s bench %s -d 256 -p 8 -n 4 -r 2 -t 1 --bw-mib 0 -fa off --json 2>&1", bin, path);
    CHECK_MSG(run(cmd) == 0, "%s", g_out);
    CHECK_MSG(json_num("depth") == 256, "%s", g_out);
    CHECK_MSG(json_num("n_ctx") == 256 + 8, "%s", g_out);
    CHECK_MSG(strstr(g_out, "\"flash_attn\": false") != NULL, "%s", g_out);
    CHECK_MSG(strstr(g_out, "\"cache_type\": \"f16\"") != NULL, "%s", g_out);
    CHECK_MSG(json_num("n_past_end") == 256 + 4, "%s", g_out);
    CHECK_NEAR(json_num("kv_cache_bytes"), round_up(256 + 8, 32) * tok_f16, 0.5);
    CHECK_MSG(json_num("pp_tps") > 0 && json_num("tg_tps") > 0, "%s", g_out);
    /* tg reads the depth's K/V too: bytes per token grow by 256 tokens' worth */
    CHECK_NEAR(json_num("bytes_per_token") - bpt0, 256 * tok_f16, 1.0);

    /* the table names the depth like llama-bench */
    snprintf(cmd, sizeof cmd, "%s bench %s -d 256 -p 8 -n 4 -r 1 -t 1 --bw-mib 0 2>&1", bin, path);
    CHECK_MSG(run(cmd) == 0, "%s", g_out);
    CHECK_MSG(strstr(g_out, "| pp8 @ d256 |") && strstr(g_out, "| tg4 @ d256 |"), "%s", g_out);

    /* quantized cache with flash attention (cells padded to 256; a bare -fa, then the
     * default): q8_0 is 34 bytes per 32 values, q4_0 18; -ctk/-ctv that agree are accepted */
    snprintf(cmd, sizeof cmd, "%s bench %s -d 300 -p 8 -n 4 -r 1 -t 1 --bw-mib 0 -fa -ctk q8_0 -ctv q8_0 --json 2>&1",
             bin, path);
    CHECK_MSG(run(cmd) == 0, "%s", g_out);
    CHECK_MSG(strstr(g_out, "\"cache_type\": \"q8_0\"") && json_num("depth") == 300, "%s", g_out);
    CHECK_NEAR(json_num("kv_cache_bytes"), round_up(300 + 8, 256) * tok_f16 / 2 * 34 / 32, 0.5);
    CHECK_MSG(json_num("n_past_end") == 300 + 4, "%s", g_out);
    snprintf(cmd, sizeof cmd, "%s bench %s -d 100 -p 8 -n 0 -r 1 -t 1 --bw-mib 0 --cache-type q4_0 --json 2>&1",
             bin, path);
    CHECK_MSG(run(cmd) == 0, "%s", g_out);
    CHECK_NEAR(json_num("kv_cache_bytes"), round_up(100 + 8, 256) * tok_f16 / 2 * 18 / 32, 0.5);
    CHECK_MSG(json_num("n_past_end") == 100 + 8, "%s", g_out); /* pp only: depth + prompt */

    /* the whole trained context: 504 + 8 = 512 fits exactly */
    snprintf(cmd, sizeof cmd, "%s bench %s -d 504 -p 8 -n 4 -r 1 -t 1 --bw-mib 0 -fa on --json 2>&1", bin, path);
    CHECK_MSG(run(cmd) == 0, "%s", g_out);
    CHECK_MSG(json_num("n_ctx") == 512 && json_num("n_past_end") == 504 + 4, "%s", g_out);

    /* beyond the trained context: timed anyway (as llama-bench), with a warning */
    snprintf(cmd, sizeof cmd, "%s bench %s -d 505 -p 8 -n 4 -r 1 -t 1 --bw-mib 0 --json 2>&1", bin, path);
    CHECK_MSG(run(cmd) == 0 && strstr(g_out, "warning") && strstr(g_out, "context length 512"), "%s", g_out);
    CHECK_MSG(json_num("n_ctx") == 513 && json_num("n_past_end") == 505 + 4, "%s", g_out);

    /* refused with a message, not a crash: a context beyond what a model accepts
     * (2^24 tokens) */
    snprintf(cmd, sizeof cmd, "%s bench %s -d 16777216 -p 8 -n 4 -r 1 -t 1 --bw-mib 0 2>&1", bin, path);
    CHECK_MSG(run(cmd) != 0 && strstr(g_out, "n_ctx") && strstr(g_out, "too large"), "%s", g_out);
    snprintf(cmd, sizeof cmd, "%s bench %s -d 99999999 -r 1 2>&1", bin, path);
    CHECK_MSG(run(cmd) != 0 && strstr(g_out, "-d"), "%s", g_out);
    snprintf(cmd, sizeof cmd, "%s bench %s -d -1 -r 1 2>&1", bin, path);
    CHECK_MSG(run(cmd) != 0 && strstr(g_out, "-d"), "%s", g_out);
    snprintf(cmd, sizeof cmd, "%s bench %s -d 16 -p 8 -n 4 -r 1 --bw-mib 0 --no-flash-attn --cache-type q8_0 2>&1",
             bin, path);
    CHECK_MSG(run(cmd) != 0 && strstr(g_out, "flash attention"), "%s", g_out);
    snprintf(cmd, sizeof cmd, "%s bench %s -d 16 -p 8 -n 4 -r 1 --bw-mib 0 -fa 0 --cache-type q8_0 2>&1", bin, path);
    CHECK_MSG(run(cmd) != 0 && strstr(g_out, "flash attention"), "%s", g_out);
    snprintf(cmd, sizeof cmd, "%s bench %s -fa -ctk q8_0 -ctv q4_0 -r 1 2>&1", bin, path);
    CHECK_MSG(run(cmd) != 0 && strstr(g_out, "-ctv"), "%s", g_out);
    snprintf(cmd, sizeof cmd, "%s bench %s --cache-type q5_k -r 1 2>&1", bin, path);
    CHECK_MSG(run(cmd) != 0 && strstr(g_out, "q5_k"), "%s", g_out);
    snprintf(cmd, sizeof cmd, "%s bench %s -d 16 --parallel 2 -r 1 2>&1", bin, path);
    CHECK_MSG(run(cmd) != 0 && strstr(g_out, "--parallel"), "%s", g_out);

    /* a cache bigger than any memory: 8 layers x 4 kv heads x 2^24 - 64 tokens of F32
     * K/V = 256 GiB, refused from the plan before anything is allocated */
    snprintf(cmd, sizeof cmd,
             "%s gen --vocab %s --dim 256 --layers 8 --heads 4 --kv-heads 4 --ffn 256 --ctx 512 "
             "--type Q8_0 --tied --seed 11 -t 1 -o %s 2>&1",
             bin, test_path("tests/data/vocab/ggml-vocab-llama-spm.gguf"), path);
    CHECK_MSG(run(cmd) == 0, "%s", g_out);
    snprintf(cmd, sizeof cmd, "%s bench %s -d 16777152 -p 8 -n 4 -r 1 -t 1 --bw-mib 0 --cache-type f32 2>&1", bin,
             path);
    CHECK_MSG(run(cmd) != 0 && strstr(g_out, "MiB of memory is available"), "%s", g_out);
    unlink(path);
    return test_finish("test_llm_bench_depth");
}
