/* End to end with the real clients: the npm packages `ollama` (0.6.x), `openai` (7.x)
 * and `@anthropic-ai/sdk` (1.x), pinned by tests/clients/package-lock.json and installed with `npm ci` on the
 * first run, talk to an in-process `loom serve` (this process: the ASan build checks
 * the server too) on a free port. The models are made here: stories260K as
 * "stories", stories260K plus a ChatML chat template as "tiny", and with Qwen3's and
 * DeepSeek-R1's templates as "qwen3" and "r1" (tool calls and thinking), and the
 * synthetic bert of tests/data/embed as "embed" (llama.cpp's vectors). The expected
 * texts come from `loom run --temp 0` (the CLI, a separate process). Needs node and
 * npm (Debian: nodejs npm; `make deps-test`) and the npm registry for the first
 * `npm ci`. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "embed_test_common.h"
#include "test_util.h"
#include "server_test_common.h"

static bool have(const char *prog) {
    char *argv[] = {(char *)prog, "--version", NULL};
    char *out = NULL;
    int rc = test_run_capture(argv, &out);
    if (rc == 0) printf("%s %s", prog, out);
    free(out);
    return rc == 0;
}

static bool npm_ci(void) {
    char lock[4200], stamp[4200];
    snprintf(lock, sizeof lock, "%s", test_path("tests/clients/package-lock.json"));
    snprintf(stamp, sizeof stamp, "%s", test_path("tests/clients/node_modules/.package-lock.json"));
    struct stat a, b;
    if (!stat(stamp, &b) && !stat(lock, &a) && b.st_mtime >= a.st_mtime) return true;
    char dir[4200];
    snprintf(dir, sizeof dir, "%s", test_path("tests/clients"));
    printf("npm ci in %s\n", dir);
    fflush(stdout);
    char *argv[] = {"npm", "ci", "--prefix", dir, "--no-audit", "--no-fund", "--loglevel=error", NULL};
    char *out = NULL;
    int rc = test_run_capture(argv, &out);
    if (out && *out) printf("%s", out);
    free(out);
    return rc == 0;
}

int main(void) {
    test_clean_env(); /* node runs `loom eval` too: the CLI's LOOM_* settings must not reach it */
    if (!have("node") || !have("npm")) {
        fprintf(stderr, "test_server_clients: node and npm are needed (Debian: apt-get install nodejs npm; `make deps-test`)\n");
        CHECK(false);
        return test_finish("test_server_clients");
    }
    if (!npm_ci()) {
        fprintf(stderr, "test_server_clients: `npm ci` in tests/clients failed (is the npm registry reachable?)\n");
        CHECK(false);
        return test_finish("test_server_clients");
    }
    char dir[256];
    CHECK(test_make_models(dir, sizeof dir));
    /* tool calls and thinking: stories260K with Qwen3's and DeepSeek-R1's templates */
    static const char *const tmpl_models[][2] = {{"qwen3", "Qwen-Qwen3-0.6B.jinja"},
                                                 {"r1", "deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja"}};
    for (int i = 0; i < 2; i++) {
        char tp[4200], mp[512];
        snprintf(tp, sizeof tp, "%s/%s", test_path("tests/data/templates/shared"), tmpl_models[i][1]);
        FILE *f = fopen(tp, "rb");
        char *text = calloc(1, 1 << 16);
        size_t n = f && text ? fread(text, 1, (1 << 16) - 1, f) : 0;
        if (f) fclose(f);
        CHECK_MSG(n > 0, "cannot read %s", tp);
        snprintf(mp, sizeof mp, "%s/models/%s.gguf", dir, tmpl_models[i][0]);
        CHECK(n > 0 && test_make_chat_model(test_path("models/stories260K.gguf"), mp, text));
        free(text);
    }
    /* embeddings: the synthetic bert of tests/data/embed as "embed", with llama.cpp's
     * pooled (mean) vectors of texts.txt, normalized, as the reference */
    char ep[512];
    snprintf(ep, sizeof ep, "%s/models/embed.gguf", dir);
    loom_error eerr = {0};
    CHECK_MSG(et_make_model("bert", "F32", ep, &eerr) == LOOM_OK, "%s", eerr.msg);
    CHECK_MSG(et_file_hash(ep) == 0x474e1cf12a3c95f9ull, "embed.gguf is not the file of tests/data/embed/models.txt");
    json_t *etexts = json_array(), *eref = json_array();
    {
        FILE *tf = fopen(test_path("tests/data/embed/texts.txt"), "r");
        char line[512];
        while (tf && fgets(line, sizeof line, tf)) {
            line[strcspn(line, "\n")] = 0;
            if (line[0]) json_array_append_new(etexts, json_string(line));
        }
        if (tf) fclose(tf);
        FILE *rf = fopen(test_path("tests/data/embed/syn-bert-F32.mean.bin"), "rb");
        int32_t h[2] = {0, 0};
        if (rf && fread(h, 4, 2, rf) == 2 && h[0] == (int32_t)json_array_size(etexts) && h[1] > 0 && h[1] < 4096) {
            float *v = malloc((size_t)h[1] * sizeof *v);
            for (int i = 0; v && i < h[0]; i++) {
                if (fread(v, 4, (size_t)h[1], rf) != (size_t)h[1]) break;
                double nn = 0;
                for (int j = 0; j < h[1]; j++) nn += (double)v[j] * v[j];
                json_t *row = json_array();
                for (int j = 0; j < h[1]; j++) json_array_append_new(row, json_real(v[j] / sqrt(nn)));
                json_array_append_new(eref, row);
            }
            free(v);
        }
        if (rf) fclose(rf);
        CHECK_MSG(json_array_size(etexts) == 3 && json_array_size(eref) == 3, "texts.txt / syn-bert-F32.mean.bin unreadable");
    }
    const char *prompt = "Once upon a time";
    const int n = 24;
    char *greedy = test_loom_run_greedy(test_path("models/stories260K.gguf"), prompt, n);
    CHECK(greedy && strlen(greedy) > 8);
    if (!greedy) return test_finish("test_server_clients");
    /* a stop string from the middle of the greedy answer */
    size_t gl = strlen(greedy), at = gl / 2;
    char stop[8];
    snprintf(stop, sizeof stop, "%.4s", greedy + at);
    const char *first = strstr(greedy, stop);
    json_t *prompts = json_pack("[s,s,s,s,s,s]", "Once upon a time", "The cat", "Lily and Ben", "One day, a little",
                                "There was a big", "The sun was");
    json_t *exp = json_pack("{s:s,s:i,s:s,s:s,s:s%,s:s,s:o}", "prompt", prompt, "n", n, "greedy", greedy, "stop", stop,
                            "greedy_stop", greedy, (size_t)(first - greedy), "stories_sha256",
                            "270cba1bd5109f42d03350f60406024560464db173c0e387d91f0426d3bd256d", "concurrent_prompts",
                            prompts);
    json_object_set_new(exp, "embed_texts", etexts);
    json_object_set_new(exp, "embed_ref", eref);
    char expf[512];
    snprintf(expf, sizeof expf, "%s/expect.json", dir);
    CHECK(json_dump_file(exp, expf, JSON_INDENT(1)) == 0);
    json_decref(exp);

    loom_server *s = test_server_start(dir, 4, 64);
    CHECK(s != NULL);
    if (s) {
        char url[64];
        snprintf(url, sizeof url, "http://127.0.0.1:%d", loom_server_port(s));
        setenv("LOOM_URL", url, 1);
        setenv("LOOM_TEST_EXPECT", expf, 1);
        char script[4200];
        snprintf(script, sizeof script, "%s", test_path("tests/clients/test.mjs"));
        char *argv[] = {"node", script, NULL};
        char *out = NULL;
        int rc = test_run_capture(argv, &out);
        printf("%s", out ? out : "");
        CHECK_MSG(rc == 0, "node tests/clients/test.mjs exited with %d", rc);
        free(out);
        loom_server_free(s);
    }
    free(greedy);
    test_rm_rf(dir);
    return test_finish("test_server_clients");
}
