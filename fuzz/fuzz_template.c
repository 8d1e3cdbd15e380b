/* libFuzzer target: chat templates and conversations. The input is a template,
 * optionally followed by "\n#CONV#\n" and a conversation JSON (else a fixed
 * conversation with tools, tool calls and list content is used). It is compiled
 * and rendered under small limits, and the result is tokenized with the qwen2
 * vocabulary (run from the repository root or set LOOM_VOCAB_DIR).
 * Checks (abort on violation): every failure has a status and a message; a
 * success has text whose spans are sorted, disjoint and inside it; render errors
 * have a position unless they come from the JSON; token ids are in range. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "loom_gguf.h"
#include "loom_template.h"
#include "loom_tokenizer.h"

static loom_tokenizer *g_tok;

static const char default_conv[] =
    "{\"messages\": [{\"role\": \"system\", \"content\": \"You are <|im_start|> helpful.\"},"
    " {\"role\": \"user\", \"content\": [{\"type\": \"text\", \"text\": \"Hi {{ x }}\"}]},"
    " {\"role\": \"assistant\", \"content\": null, \"tool_calls\": [{\"id\": \"abcdefghi\", \"type\": \"function\","
    " \"function\": {\"name\": \"f\", \"arguments\": {\"a\": [1, 2.5, true, null, \"\\u00e9\"]}}}]},"
    " {\"role\": \"tool\", \"tool_call_id\": \"abcdefghi\", \"content\": \"42\"}],"
    " \"tools\": [{\"type\": \"function\", \"function\": {\"name\": \"f\", \"description\": \"d\","
    " \"parameters\": {\"type\": \"object\", \"properties\": {\"a\": {\"type\": \"array\"}}}}}],"
    " \"add_generation_prompt\": true, \"kwargs\": {\"enable_thinking\": false, \"n\": 3}}";

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    const char *dir = getenv("LOOM_VOCAB_DIR");
    char path[1024];
    snprintf(path, sizeof path, "%s/ggml-vocab-qwen2.gguf", dir ? dir : "tests/data/vocab");
    loom_gguf *g = NULL;
    loom_error err = {0};
    if (loom_gguf_open(path, NULL, &g, &err) != LOOM_OK || loom_tokenizer_new_from_gguf(g, &g_tok, &err) != LOOM_OK) {
        fprintf(stderr, "fuzz_template: %s\n", err.msg);
        abort();
    }
    loom_gguf_close(g);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size > 1 << 17) return 0;
    const char *src = (const char *)data;
    size_t src_len = size;
    const char *conv = default_conv;
    size_t conv_len = sizeof default_conv - 1;
    static const char sep[] = "\n#CONV#\n";
    const char *hit = memmem(data, size, sep, sizeof sep - 1);
    if (hit) {
        src_len = (size_t)(hit - src);
        conv = hit + sizeof sep - 1;
        conv_len = size - src_len - (sizeof sep - 1);
    }
    loom_template_limits lim = {0};
    lim.max_steps = 200000;
    lim.max_iterations = 20000;
    lim.max_output = 1 << 20;
    lim.max_memory = 64 << 20;
    lim.max_recursion = 30;
    loom_template *t = NULL;
    loom_error err = {0};
    loom_status st = loom_template_compile(src, src_len, &lim, &t, &err);
    if (st != LOOM_OK) {
        if (t || err.status != st || !err.msg[0] || st == LOOM_ERR_INTERNAL) abort();
        return 0;
    }
    loom_template_time now = {2024, 7, 26, 12, 0, 0};
    loom_template_params p = {"<|endoftext|>", "<|im_end|>", &now};
    loom_template_result r = {0};
    st = loom_template_render_json(t, conv, conv_len, &p, &r, &err);
    if (st != LOOM_OK) {
        if (r.text || !r.error[0] || !err.msg[0] || st == LOOM_ERR_INTERNAL) abort();
        if (strncmp(r.error, "conversation JSON", 17) != 0 && r.error_line <= 0 && st != LOOM_ERR_NOMEM) abort();
    } else {
        if (!r.text || r.text[r.len] != 0) abort();
        size_t prev = 0;
        for (size_t i = 0; i < r.n_spans; i++) {
            if (r.spans[i].start >= r.spans[i].end || r.spans[i].end > r.len || (i && r.spans[i].start <= prev)) abort();
            prev = r.spans[i].end;
        }
        int32_t *ids = NULL;
        int32_t n = 0;
        if (r.len < (1 << 16)) {
            st = loom_template_tokenize(g_tok, r.text, r.len, r.spans, r.n_spans, true, &ids, &n, &err);
            if (st != LOOM_OK && st != LOOM_ERR_NOMEM) abort();
            for (int32_t i = 0; i < n; i++)
                if (ids[i] < 0 || ids[i] >= loom_tokenizer_n_vocab(g_tok)) abort();
            free(ids);
        }
    }
    loom_template_result_free(&r);
    loom_template_free(t);
    return 0;
}
