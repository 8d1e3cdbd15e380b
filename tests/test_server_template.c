/* Prompts through the server's chat-template path (the Jinja engine), checked
 * against independent references:
 *   - a request template, a manifest's system message and template, and a conversation
 *     ending with an assistant message (continued, not closed) give exactly the text
 *     `loom run -p TEXT --temp 0` generates from the text the template must produce;
 *   - safe tokenization: "<|im_end|>" typed by the user in a Qwen-vocabulary model is
 *     content, so the prompt has as many <|im_end|> control tokens as the same prompt
 *     without it (the template's own), and more plain tokens;
 *   - think: false renders Qwen3's empty think block (a longer prompt than think unset);
 *     think with a template that does not think, a Go template, a template that raises,
 *     and tools for a template without tools are 400 with the reason. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "loom_tokenizer.h"
#include "test_util.h"
#include "server_test_common.h"

static json_t *post(int port, const char *path, const char *body, int *status) {
    test_http r;
    *status = 0;
    if (!test_http_do(port, "POST", path, body, NULL, &r)) return NULL;
    *status = r.status;
    json_t *j = json_loads(r.body, 0, NULL);
    if (!j) fprintf(stderr, "%s -> %d %s\n", path, r.status, r.body);
    test_http_free(&r);
    return j;
}

static char *read_text(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = malloc((size_t)n + 1);
    if (fread(s, 1, (size_t)n, f) != (size_t)n) n = 0;
    s[n] = 0;
    fclose(f);
    return s;
}

/* The greedy answer of model `name` to a request body; NULL on failure. */
static char *answer(int port, const char *path, const char *body) {
    int st;
    json_t *j = post(port, path, body, &st);
    const json_t *t = json_object_get(j, "response");
    if (!t) t = json_object_get(json_object_get(j, "message"), "content");
    char *s = st == 200 && json_is_string(t) ? strdup(json_string_value(t)) : NULL;
    if (!s) fprintf(stderr, "%s: status %d\n", path, st);
    json_decref(j);
    return s;
}

static void test_texts(int port) {
    const int n = 16;
    char body[2048];
    /* 1. a request template */
    char *want = test_loom_run_greedy(test_path("models/stories260K.gguf"), "[user:Once upon a time]", n);
    snprintf(body, sizeof body,
             "{\"model\":\"stories\",\"stream\":false,\"template\":\"{%% for m in messages %%}[{{ m.role }}:{{ m.content "
             "}}]{%% endfor %%}\",\"prompt\":\"Once upon a time\",\"options\":{\"temperature\":0,\"num_predict\":%d}}", n);
    char *got = answer(port, "/api/generate", body);
    CHECK_MSG(want && got && !strcmp(want, got), "request template: '%s' want '%s'", got ? got : "", want ? want : "");
    free(want), free(got);
    /* 2. a manifest's system and template (/api/create) */
    int st;
    json_t *j = post(port, "/api/create",
                     "{\"model\":\"sysmodel\",\"from\":\"stories\",\"system\":\"SYS\",\"stream\":false,\"template\":"
                     "\"{% for m in messages %}[{{ m.role }}:{{ m.content }}]{% endfor %}\"}",
                     &st);
    CHECK(st == 200);
    json_decref(j);
    want = test_loom_run_greedy(test_path("models/stories260K.gguf"), "[system:SYS][user:Once upon a time]", n);
    snprintf(body, sizeof body, "{\"model\":\"sysmodel\",\"stream\":false,\"prompt\":\"Once upon a time\","
                                "\"options\":{\"temperature\":0,\"num_predict\":%d}}", n);
    got = answer(port, "/api/generate", body);
    CHECK_MSG(want && got && !strcmp(want, got), "manifest: '%s' want '%s'", got ? got : "", want ? want : "");
    free(want), free(got);
    /* 3. a conversation ending with an assistant message is continued */
    want = test_loom_run_greedy(test_path("models/stories260K.gguf"), "Once upon a time|, there was", n);
    snprintf(body, sizeof body,
             "{\"model\":\"stories\",\"stream\":false,\"template\":\"{%% for m in messages %%}{{ m.content }}|{%% endfor "
             "%%}{%% if add_generation_prompt %%}>{%% endif %%}\",\"messages\":[{\"role\":\"user\",\"content\":\"Once upon "
             "a time\"},{\"role\":\"assistant\",\"content\":\", there was\"}],\"options\":{\"temperature\":0,"
             "\"num_predict\":%d}}", n);
    got = answer(port, "/api/chat", body);
    CHECK_MSG(want && got && !strcmp(want, got), "prefill: '%s' want '%s'", got ? got : "", want ? want : "");
    free(want), free(got);
}

static int count_id(const json_t *ctx, int32_t id) {
    int c = 0;
    for (size_t i = 0; i < json_array_size(ctx); i++) c += json_integer_value(json_array_get(ctx, i)) == id;
    return c;
}

static void test_safe_tokens(int port, const char *qw_path) {
    loom_gguf *g = NULL;
    loom_tokenizer *tok = NULL;
    CHECK(loom_gguf_open(qw_path, NULL, &g, NULL) == LOOM_OK && loom_tokenizer_new_from_gguf(g, &tok, NULL) == LOOM_OK);
    int32_t id[4];
    int32_t n = 0;
    CHECK(tok && loom_tokenize(tok, "<|im_end|>", 10, false, true, id, 4, &n, NULL) == LOOM_OK && n == 1);
    int32_t im_end = id[0];
    loom_tokenizer_free(tok);
    loom_gguf_close(g);
    int st;
    json_t *a = post(port, "/api/generate",
                     "{\"model\":\"qw\",\"stream\":false,\"prompt\":\"hi there\",\"options\":{\"num_predict\":1}}", &st);
    CHECK(st == 200);
    json_t *b = post(port, "/api/generate",
                     "{\"model\":\"qw\",\"stream\":false,\"prompt\":\"hi <|im_end|> there\",\"options\":{\"num_predict\":1}}",
                     &st);
    CHECK(st == 200);
    const json_t *ca = json_object_get(a, "context"), *cb = json_object_get(b, "context");
    int na = count_id(ca, im_end), nb = count_id(cb, im_end);
    CHECK_MSG(na >= 1 && na == nb, "<|im_end|> control tokens: %d without, %d with the typed text", na, nb);
    CHECK(json_array_size(cb) > json_array_size(ca) + 1);
    printf("safe tokens: %d template <|im_end|> in both prompts; %zu vs %zu tokens\n", na, json_array_size(ca),
           json_array_size(cb));
    json_decref(a);
    json_decref(b);
}

static void test_thinking_and_errors(int port) {
    int st;
    json_t *a = post(port, "/api/generate", "{\"model\":\"qw3\",\"stream\":false,\"prompt\":\"hi\",\"options\":{\"num_predict\":1}}", &st);
    CHECK(st == 200);
    json_t *b = post(port, "/api/generate",
                     "{\"model\":\"qw3\",\"stream\":false,\"think\":false,\"prompt\":\"hi\",\"options\":{\"num_predict\":1}}", &st);
    CHECK(st == 200);
    /* Qwen3's template writes an empty <think></think> block when enable_thinking is false */
    CHECK_MSG(json_array_size(json_object_get(b, "context")) > json_array_size(json_object_get(a, "context")),
              "think false: %zu tokens, unset: %zu", json_array_size(json_object_get(b, "context")),
              json_array_size(json_object_get(a, "context")));
    json_decref(a);
    json_decref(b);
    a = post(port, "/api/chat", "{\"model\":\"tiny\",\"think\":true,\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}", &st);
    CHECK(st == 400 && strstr(json_string_value(json_object_get(a, "error")), "does not support thinking"));
    json_decref(a);
    a = post(port, "/api/chat", "{\"model\":\"tiny\",\"template\":\"{{ .Prompt }} {{ .System }}\",\"messages\":[{\"role\":"
                                "\"user\",\"content\":\"x\"}]}", &st);
    CHECK(st == 400 && strstr(json_string_value(json_object_get(a, "error")), "Go template"));
    json_decref(a);
    a = post(port, "/api/chat", "{\"model\":\"tiny\",\"template\":\"{{ raise_exception('no system role here') }}\","
                                "\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}", &st);
    CHECK(st == 400 && strstr(json_string_value(json_object_get(a, "error")), "no system role here"));
    json_decref(a);
    a = post(port, "/api/chat", "{\"model\":\"tiny\",\"template\":\"{% for x in %}\",\"messages\":[{\"role\":\"user\","
                                "\"content\":\"x\"}]}", &st);
    CHECK(st == 400 && strstr(json_string_value(json_object_get(a, "error")), "compile"));
    json_decref(a);
    a = post(port, "/api/chat", "{\"model\":\"tiny\",\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"f\"}}],"
                                "\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}", &st);
    CHECK(st == 400 && strstr(json_string_value(json_object_get(a, "error")), "does not support tools"));
    json_decref(a);
    /* a template with tools takes them (Qwen2.5) */
    a = post(port, "/api/chat", "{\"model\":\"qw\",\"stream\":false,\"tools\":[{\"type\":\"function\",\"function\":"
                                "{\"name\":\"get_weather\",\"parameters\":{\"type\":\"object\"}}}],\"messages\":[{\"role\":"
                                "\"user\",\"content\":\"x\"}],\"options\":{\"num_predict\":1}}", &st);
    CHECK(st == 200);
    json_decref(a);
}

int main(void) {
    const char *bin = getenv("LOOM_BIN");
    CHECK(bin != NULL);
    char dir[256];
    CHECK(test_make_models(dir, sizeof dir));
    /* small synthetic models with the Qwen2 vocabulary and real Qwen templates */
    char raw[600], qw[600], qw3[600];
    snprintf(raw, sizeof raw, "%s/qwraw.gguf", dir);
    snprintf(qw, sizeof qw, "%s/models/qw.gguf", dir);
    snprintf(qw3, sizeof qw3, "%s/models/qw3.gguf", dir);
    char *gen[] = {(char *)bin, "gen", "--vocab", (char *)test_path("tests/data/vocab/ggml-vocab-qwen2.gguf"), "--dim", "64",
                   "--layers", "1", "--heads", "2", "--kv-heads", "1", "--ffn", "128", "--type", "F32", "--ctx", "2048",
                   "-o", raw, "-t", "1", NULL};
    char *out = NULL;
    char vocab[4200];
    snprintf(vocab, sizeof vocab, "%s", test_path("tests/data/vocab/ggml-vocab-qwen2.gguf"));
    gen[3] = vocab;
    CHECK(test_run_capture(gen, &out) == 0);
    free(out);
    char *t25 = read_text(test_path("tests/data/templates/shared/Qwen-Qwen2.5-7B-Instruct.jinja"));
    char *t3 = read_text(test_path("tests/data/templates/shared/Qwen-Qwen3-0.6B.jinja"));
    CHECK(t25 && t3);
    CHECK(t25 && test_make_chat_model(raw, qw, t25));
    CHECK(t3 && test_make_chat_model(raw, qw3, t3));
    free(t25);
    free(t3);
    loom_server *s = test_server_start(dir, 2, 8);
    CHECK(s != NULL);
    if (s) {
        int port = loom_server_port(s);
        test_texts(port);
        test_safe_tokens(port, qw);
        test_thinking_and_errors(port);
        loom_server_free(s);
    }
    test_rm_rf(dir);
    return test_finish("test_server_template");
}
