/* `loom template`: exact stdout for shared cases, the template's message and exit 1
 * on a render error, exit 2 on bad arguments, --tools / --no-generation-prompt /
 * --var reproduce the matching shared cases, a GGUF's own template and vocabulary
 * (bos/eos, --tokens) and the no-template fallback. Needs $LOOM_BIN. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "loom_gguf.h"
#include "loom_template.h"
#include "loom_tokenizer.h"
#include "test_util.h"

static char out[1 << 20], errbuf[1 << 16];
static size_t out_n;

/* run a shell command; stdout -> out, stderr -> errbuf; returns the exit status */
static int run(const char *cmd) {
    char full[16384];
    snprintf(full, sizeof full, "%s 2>/tmp/loom_tpl_cli_err_%d", cmd, (int)getpid());
    FILE *p = popen(full, "r");
    if (!p) return -1;
    out_n = fread(out, 1, sizeof out - 1, p);
    out[out_n] = 0;
    int st = pclose(p);
    char ep[64];
    snprintf(ep, sizeof ep, "/tmp/loom_tpl_cli_err_%d", (int)getpid());
    FILE *e = fopen(ep, "rb");
    size_t en = e ? fread(errbuf, 1, sizeof errbuf - 1, e) : 0;
    errbuf[en] = 0;
    if (e) fclose(e);
    remove(ep);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static char *slurp(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long sz = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc((size_t)sz + 1);
    if (b && fread(b, 1, (size_t)sz, f) != (size_t)sz) { free(b); b = NULL; }
    fclose(f);
    if (b) { b[sz] = 0; *n = (size_t)sz; }
    return b;
}

static void expect_file(const char *what, const char *path) {
    size_t n = 0;
    char *want = slurp(path, &n);
    CHECK_MSG(want && out_n == n && !memcmp(out, want, n), "%s: stdout differs from %s", what, path);
    free(want);
}

static void write_file(const char *path, const char *s) {
    FILE *f = fopen(path, "wb");
    CHECK(f != NULL);
    if (f) { fputs(s, f); fclose(f); }
}

int main(void) {
    const char *bin = test_cli();
    if (!bin) return test_skip("test_template_cli", TEST_NO_CLI);
    char sh[4096], cmd[16384], tmp[64] = "/tmp/loom_tpl_XXXXXX";
    snprintf(sh, sizeof sh, "%s", test_path("tests/data/templates/shared"));
    CHECK(mkdtemp(tmp) != NULL);
    const char *fixed = "--bos '<s>' --eos '</s>' --now 2024-07-26T12:00:00";

    /* exact output, from an array of cases */
    snprintf(cmd, sizeof cmd, "'%s' template '%s/Qwen-Qwen3-0.6B.jinja' --messages '%s/conversations.json' --case tools %s", bin, sh, sh, fixed);
    CHECK_EQ_INT(run(cmd), 0);
    expect_file("qwen3 tools", "tests/data/templates/shared/expected/Qwen-Qwen3-0.6B__tools.out");
    snprintf(cmd, sizeof cmd, "'%s' template '%s/openai-gpt-oss-120b.jinja' --messages '%s/conversations.json' --case user %s", bin, sh, sh, fixed);
    CHECK_EQ_INT(run(cmd), 0);
    expect_file("gpt-oss user (strftime_now)", "tests/data/templates/shared/expected/openai-gpt-oss-120b__user.out");

    /* render error: exit 1, the template's message first, then its location */
    snprintf(cmd, sizeof cmd, "'%s' template '%s/google-gemma-2-2b-it.jinja' --messages '%s/conversations.json' --case system_multi %s", bin, sh, sh, fixed);
    CHECK_EQ_INT(run(cmd), 1);
    CHECK_MSG(!strncmp(errbuf, "TemplateError: System role not supported\n", 41), "stderr: %s", errbuf);
    CHECK_MSG(strstr(errbuf, "google-gemma-2-2b-it.jinja:1:") != NULL, "no location in: %s", errbuf);
    CHECK_EQ_INT(out_n, 0);

    /* a conversation object plus --tools / --no-generation-prompt / --var give the same texts as the cases */
    char conv[256], tools[256];
    snprintf(conv, sizeof conv, "%s/conv.json", tmp);
    snprintf(tools, sizeof tools, "%s/tools.json", tmp);
    write_file(conv, "{\"messages\": [{\"role\": \"user\", \"content\": \"Weather in Paris?\"}, {\"role\": \"assistant\", \"content\": \"\", "
                     "\"tool_calls\": [{\"id\": \"a1b2c3d4e\", \"type\": \"function\", \"function\": {\"name\": \"get_weather\", "
                     "\"arguments\": {\"city\": \"Paris\"}}}]}, {\"role\": \"tool\", \"tool_call_id\": \"a1b2c3d4e\", \"name\": "
                     "\"get_weather\", \"content\": \"{\\\"temp_c\\\": 21}\"}]}");
    write_file(tools, "[{\"type\": \"function\", \"function\": {\"name\": \"get_weather\", \"description\": \"Current weather for a city\", "
                      "\"parameters\": {\"type\": \"object\", \"properties\": {\"city\": {\"type\": \"string\", \"description\": \"City name\"}}, "
                      "\"required\": [\"city\"]}}}]");
    snprintf(cmd, sizeof cmd, "'%s' template '%s/meta-llama-Llama-3.1-8B-Instruct.jinja' --messages '%s' --tools '%s' %s", bin, sh, conv, tools, fixed);
    CHECK_EQ_INT(run(cmd), 0);
    expect_file("--tools", "tests/data/templates/shared/expected/meta-llama-Llama-3.1-8B-Instruct__tools.out");
    write_file(conv, "{\"messages\": [{\"role\": \"user\", \"content\": \"Name a color.\"}, {\"role\": \"assistant\", \"content\": \"Blue.\"}]}");
    snprintf(cmd, sizeof cmd, "'%s' template '%s/Qwen-Qwen3-0.6B.jinja' --messages '%s' --no-generation-prompt %s", bin, sh, conv, fixed);
    CHECK_EQ_INT(run(cmd), 0);
    expect_file("--no-generation-prompt", "tests/data/templates/shared/expected/Qwen-Qwen3-0.6B__no_gen_prompt.out");
    write_file(conv, "{\"messages\": [{\"role\": \"user\", \"content\": \"Think less.\"}]}");
    snprintf(cmd, sizeof cmd, "'%s' template '%s/Qwen-Qwen3-0.6B.jinja' --messages '%s' --var enable_thinking=false %s", bin, sh, conv, fixed);
    CHECK_EQ_INT(run(cmd), 0);
    expect_file("--var", "tests/data/templates/shared/expected/Qwen-Qwen3-0.6B__thinking_off.out");

    /* bad arguments: exit 2 */
    const char *bad[] = {
        "template",                                                            /* nothing */
        "template x.jinja",                                                    /* no --messages */
        "template SH/Qwen-Qwen3-0.6B.jinja --messages SH/conversations.json",  /* several cases, no --case */
        "template SH/Qwen-Qwen3-0.6B.jinja --messages SH/conversations.json --case nosuch",
        "template SH/Qwen-Qwen3-0.6B.jinja --messages /nonexistent.json",
        "template /nonexistent.jinja --messages CONV",
        "template SH/Qwen-Qwen3-0.6B.jinja --messages CONV --var novalue",
        "template SH/Qwen-Qwen3-0.6B.jinja --messages CONV --var x={bad",
        "template SH/Qwen-Qwen3-0.6B.jinja --messages CONV --now yesterday",
        "template SH/Qwen-Qwen3-0.6B.jinja --messages CONV --frobnicate",
        "template SH/Qwen-Qwen3-0.6B.jinja --messages CONV --tokens",          /* needs a GGUF */
        "template SH/Qwen-Qwen3-0.6B.jinja --messages SH/Qwen-Qwen3-0.6B.jinja", /* not JSON */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char args[2048];
        size_t k = 0;
        for (const char *p = bad[i]; *p && k < sizeof args - 300;) {
            if (!strncmp(p, "SH", 2)) { k += (size_t)snprintf(args + k, sizeof args - k, "%s", sh); p += 2; }
            else if (!strncmp(p, "CONV", 4)) { k += (size_t)snprintf(args + k, sizeof args - k, "%s", conv); p += 4; }
            else args[k++] = *p++;
        }
        args[k] = 0;
        snprintf(cmd, sizeof cmd, "'%s' %s", bin, args);
        CHECK_MSG(run(cmd) == 2, "exit status for: %s (stderr %s)", bad[i], errbuf);
    }
    /* a syntax error is a render error (1) */
    char broken[256];
    snprintf(broken, sizeof broken, "%s/broken.jinja", tmp);
    write_file(broken, "{% if %}");
    snprintf(cmd, sizeof cmd, "'%s' template '%s' --messages '%s'", bin, broken, conv);
    CHECK_EQ_INT(run(cmd), 1);
    CHECK_MSG(!strncmp(errbuf, "TemplateSyntaxError: ", 21), "%s", errbuf);

    /* a GGUF with its own template and vocabulary */
    loom_gguf *g = NULL;
    loom_error err = {0};
    char vocab[4096], gg[256], gg_none[256];
    snprintf(vocab, sizeof vocab, "%s", test_path("tests/data/vocab/ggml-vocab-qwen2.gguf"));
    snprintf(gg, sizeof gg, "%s/with_template.gguf", tmp);
    snprintf(gg_none, sizeof gg_none, "%s/no_template.gguf", tmp);
    CHECK(loom_gguf_open(vocab, NULL, &g, &err) == LOOM_OK);
    size_t tl = 0;
    char *tsrc = slurp("tests/data/templates/shared/Qwen-Qwen2.5-7B-Instruct.jinja", &tl);
    for (int pass = 0; pass < 2 && g && tsrc; pass++) {
        loom_gguf_writer *w = NULL;
        CHECK(loom_gguf_writer_new(&w) == LOOM_OK);
        for (int64_t i = 0; i < loom_gguf_kv_count(g); i++)
            if (strcmp(loom_gguf_kv_key(g, i), "tokenizer.chat_template")) CHECK(loom_gguf_writer_copy_kv(w, g, i) == LOOM_OK);
        if (pass == 0) CHECK(loom_gguf_writer_add_str(w, "tokenizer.chat_template", tsrc, tl) == LOOM_OK);
        CHECK(loom_gguf_writer_write_file(w, pass == 0 ? gg : gg_none, &err) == LOOM_OK);
        loom_gguf_writer_free(w);
    }
    loom_tokenizer *tok = NULL;
    if (g) CHECK(loom_tokenizer_new_from_gguf(g, &tok, &err) == LOOM_OK);
    loom_gguf_close(g);
    free(tsrc);
    /* text: the same as the library with the vocabulary's bos/eos */
    snprintf(cmd, sizeof cmd, "'%s' template '%s' --messages '%s/conversations.json' --case special_content", bin, gg, sh);
    CHECK_EQ_INT(run(cmd), 0);
    expect_file("GGUF template", "tests/data/templates/shared/expected/Qwen-Qwen2.5-7B-Instruct__special_content.out");
    /* --tokens: the ids of loom_template_render_tokens */
    snprintf(cmd, sizeof cmd, "'%s' template '%s' --messages '%s/conversations.json' --case special_content --tokens", bin, gg, sh);
    CHECK_EQ_INT(run(cmd), 0);
    size_t cl = 0;
    char *cj = slurp("tests/data/templates/shared/conversations.json", &cl);
    if (tok && cj) {
        /* the special_content case, as a conversation object */
        const char *conv_sc =
            "{\"messages\": [{\"role\": \"user\", \"content\": \"  Ignore <|im_end|><|eot_id|></s> and {{ 1 + 1 }} {% if x %}\\nh\\u00e9llo "
            "\\u4e16\\u754c \\ud83e\\udd99\\n\\n  \"}]}";
        size_t sl = 0;
        char *src = slurp("tests/data/templates/shared/Qwen-Qwen2.5-7B-Instruct.jinja", &sl);
        loom_template *t = NULL;
        CHECK(loom_template_compile(src, sl, NULL, &t, &err) == LOOM_OK);
        int32_t *ids = NULL;
        int32_t n = 0;
        CHECK(loom_template_render_tokens(t, tok, conv_sc, strlen(conv_sc), NULL, &ids, &n, NULL, &err) == LOOM_OK);
        char want[1 << 14];
        size_t k = 0;
        for (int32_t i = 0; i < n && k < sizeof want - 16; i++) k += (size_t)snprintf(want + k, sizeof want - k, i ? " %d" : "%d", ids[i]);
        want[k++] = '\n';
        want[k] = 0;
        CHECK_MSG(!strcmp(out, want), "--tokens: %s\nwant %s", out, want);
        free(ids);
        loom_template_free(t);
        free(src);
    }
    free(cj);
    /* no template in the file: the fallback (contents joined by newlines); --template overrides */
    write_file(conv, "{\"messages\": [{\"role\": \"system\", \"content\": \"S\"}, {\"role\": \"user\", \"content\": [{\"type\": \"text\", \"text\": \"A\"}, {\"type\": \"image\"}, {\"type\": \"text\", \"text\": \"B\"}]}]}");
    snprintf(cmd, sizeof cmd, "'%s' template '%s' --messages '%s'", bin, gg_none, conv);
    CHECK_EQ_INT(run(cmd), 0);
    CHECK_MSG(!strcmp(out, "S\nAB"), "fallback: [%s]", out);
    snprintf(cmd, sizeof cmd, "'%s' template '%s' --template '%s/Qwen-Qwen3-0.6B.jinja' --messages '%s' --no-generation-prompt", bin, gg_none, sh, conv);
    CHECK_EQ_INT(run(cmd), 1); /* Qwen3 calls str methods on list content: an error, as in Python */
    CHECK_MSG(!strncmp(errbuf, "UndefinedError: 'list object' has no attribute 'startswith'\n", 60), "%s", errbuf);
    loom_tokenizer_free(tok);
    remove(conv);
    remove(tools);
    remove(broken);
    remove(gg);
    remove(gg_none);
    rmdir(tmp);
    return test_finish("test_template_cli");
}
