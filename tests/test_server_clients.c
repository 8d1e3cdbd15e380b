/* End to end with the real clients: the npm packages `ollama` (0.6.x) and `openai`
 * (7.x), pinned by tests/clients/package-lock.json and installed with `npm ci` on the
 * first run, talk to an in-process `loom serve` (this process: the ASan build checks
 * the server too) on a free port. The models are made here: stories260K as
 * "stories", stories260K plus a ChatML chat template as "tiny", and with Qwen3's and
 * DeepSeek-R1's templates as "qwen3" and "r1" (tool calls and thinking). The expected
 * texts come from `loom run --temp 0` (the CLI, a separate process). Needs node and
 * npm (Debian: nodejs npm; `make deps-test`) and the npm registry for the first
 * `npm ci`. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

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
