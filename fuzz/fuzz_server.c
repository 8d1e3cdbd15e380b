/* libFuzzer target: the server's request decoder and what follows it without a model.
 * The first input byte picks the API (generate, chat, OpenAI chat, OpenAI
 * completions; bit 4: OpenAI responses; bit 5: Anthropic messages, with bit 6 its
 * count_tokens) and the path: the rest is a request body, parsed with the limits
 * (srv_json_parse), decoded (srv_gen_req_decode), its options merged over the
 * defaults, and its prompt rendered and tokenized with the llama-spm vocabulary
 * under a ChatML, a Llama 3 and no chat template (srv_render_prompt); its tools, if
 * any, become a forced-call grammar (srv_tool_gbnf) that must compile; a Responses or
 * Anthropic request's messages also go through that API's answer layer (srv_resp,
 * srv_anth: the stream events and the whole answer must be valid JSON). A third of the
 * inputs instead drive the stop-string filter and the JSON text encoder: the bytes
 * are split into a text and stop strings and fed in random pieces.
 * Checks (abort on violation): a rejected body has a status and a message; a
 * decoded request has a model name; rendered prompts have tokens in the vocabulary;
 * the stop filter's output is a prefix of its input; encoded text is valid JSON.
 * Run from the repository root (or set LOOM_VOCAB_DIR to tests/data/vocab). */
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "loom_gguf.h"
#include "loom_grammar.h"
#include "loom_tokenizer.h"
#include "server/anthropic.h"
#include "server/render.h"
#include "server/request.h"
#include "server/response.h"
#include "server/responses.h"
#include "server/textout.h"
#include "server/toolgram.h"

static loom_tokenizer *g_tok;
static srv_render *g_rd;

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc, (void)argv;
    const char *dir = getenv("LOOM_VOCAB_DIR");
    char path[1024];
    snprintf(path, sizeof path, "%s/ggml-vocab-llama-spm.gguf", dir ? dir : "tests/data/vocab");
    loom_gguf *g = NULL;
    loom_error err = {0};
    if (loom_gguf_open(path, NULL, &g, &err) || loom_tokenizer_new_from_gguf(g, &g_tok, &err)) {
        fprintf(stderr, "fuzz_server: %s\n", err.msg);
        abort();
    }
    g_rd = srv_render_new(g, g_tok);
    loom_gguf_close(g);
    if (!g_rd) abort();
    return 0;
}

/* Every message of the request as a delta (thinking, content, its calls), streamed and
 * whole, through the API's answer layer: each event and the answer must parse. */
static void fuzz_answer(const srv_gen_req *r) {
    bool anth = r->api == SRV_API_ANTHROPIC;
    for (int stream = 0; stream < 2; stream++) {
        srv_resp c;
        srv_anth a;
        srv_buf out = {0};
        if (anth) srv_anth_init(&a, r->model, 1);
        else srv_resp_init(&c, r->model, r->resp_echo, 1);
        if (stream && anth) srv_anth_start(&a, &out, 3);
        else if (stream) srv_resp_start(&c, &out);
        for (size_t i = 0; i < json_array_size(r->messages); i++) {
            const json_t *m = json_array_get(r->messages, i);
            const json_t *th = json_object_get(m, "thinking"), *co = json_object_get(m, "content");
            srv_delta d = {.thinking = json_string_value(th), .thinking_len = json_string_length(th),
                           .content = json_string_value(co), .content_len = json_string_length(co),
                           .tool_calls = json_object_get(m, "tool_calls")};
            if (anth) srv_anth_delta(&a, stream ? &out : NULL, &d);
            else srv_resp_delta(&c, stream ? &out : NULL, &d);
        }
        if (anth) srv_anth_end(&a, &out, stream, r->opt.n_stop ? "stop_sequence" : "end_turn",
                               r->opt.n_stop ? r->opt.stop[0] : NULL, 1, 1);
        else srv_resp_end(&c, &out, stream, r->opt.num_predict_set, 1, 0, 1);
        if (out.oom) abort();
        const char *p = out.data, *end = out.data + out.len;
        while (stream && p < end) { /* event: T\ndata: JSON\n\n */
            const char *d = strstr(p, "\ndata: "), *stop = d ? strstr(d, "\n\n") : NULL;
            if (strncmp(p, "event: ", 7) || !d || !stop) abort();
            json_t *j = json_loadb(d + 7, (size_t)(stop - d - 7), 0, NULL);
            if (!j) abort();
            json_decref(j);
            p = stop + 2;
        }
        if (!stream) {
            json_t *j = json_loadb(out.data, out.len, 0, NULL);
            if (!j) abort();
            json_decref(j);
        }
        srv_buf_free(&out);
        if (anth) srv_anth_free(&a);
        else srv_resp_free(&c);
    }
}

static void fuzz_request(srv_api api, const char *body, size_t n) {
    srv_limits lim = srv_limits_default();
    lim.max_depth = 32;
    lim.max_string = 1 << 16;
    srv_err e = {0};
    json_t *j = srv_json_parse(body, n, &lim, &e);
    if (!j) {
        if (!e.status || !e.msg[0]) abort();
        return;
    }
    srv_gen_req r;
    memset(&e, 0, sizeof e);
    if (!srv_gen_req_decode(api, j, &lim, &r, &e)) {
        if (!e.status || !e.msg[0]) abort();
        srv_gen_req_free(&r);
        json_decref(j);
        return;
    }
    json_decref(j);
    if (!r.model || !*r.model) abort();
    srv_options o;
    srv_options_defaults(&o);
    if (!srv_options_merge(&o, &r.opt)) abort();
    if (o.n_stop > lim.max_stop) abort();
    srv_options_free(&o);
    static const char *const tmpl[] = {
        "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}",
        "{{ bos_token }}{% for m in messages %}<|start_header_id|>{{ m.role }}<|end_header_id|>{% endfor %}", NULL};
    for (int t = 0; t < 3; t++) {
        int32_t *toks = NULL;
        int nt = 0, nm = 0;
        srv_err re = {0};
        bool ok = srv_render_prompt(g_rd, &r, tmpl[t], t == 1 ? "system text" : NULL, t, &toks, &nt, &nm, &re);
        if (ok) {
            if (nt <= 0) abort();
            for (int i = 0; i < nt; i++)
                if (toks[i] < 0 || toks[i] >= loom_tokenizer_n_vocab(g_tok)) abort();
        } else if (!re.status || !re.msg[0]) {
            abort();
        }
        free(toks);
    }
    /* forced tool calls: the grammar built from the request's tools compiles whenever
     * it is built (a tool's schema the subset cannot express is a 400 with a message) */
    if (json_array_size(r.tools)) {
        static const loom_chat_format fmts[] = {LOOM_CHAT_FORMAT_HERMES, LOOM_CHAT_FORMAT_MISTRAL,
                                                LOOM_CHAT_FORMAT_DEEPSEEK_R1, LOOM_CHAT_FORMAT_KIMI_K2,
                                                LOOM_CHAT_FORMAT_XML_FUNCTION, LOOM_CHAT_FORMAT_MINIMAX};
        loom_chat_syntax syn = {fmts[n % 6], LOOM_CHAT_THINKING_THINK_TAGS, NULL, NULL};
        srv_buf gb = {0};
        srv_err te = {0};
        if (srv_tool_gbnf(&syn, NULL, r.tools, r.tool_choice_name, r.parallel_tool_calls, n % 3 == 0, g_tok, &gb,
                          &te)) {
            loom_grammar *g = NULL;
            loom_error ge = {0};
            loom_status gs = loom_grammar_new(gb.data, gb.len, SRV_TOOL_ROOT, g_tok, &g, &ge);
            if (gs && gs != LOOM_ERR_NOMEM && gs != LOOM_ERR_RANGE) {
                fprintf(stderr, "tool grammar does not compile: %s\n%s\n", ge.msg, gb.data);
                abort();
            }
            loom_grammar_free(g);
        } else if (!te.status || !te.msg[0]) {
            abort();
        }
        srv_buf_free(&gb);
    }
    if (r.api == SRV_API_OAI_RESPONSES || r.api == SRV_API_ANTHROPIC) fuzz_answer(&r);
    srv_gen_req_free(&r);
}

static void fuzz_text(const uint8_t *d, size_t n) {
    /* layout: [n_stop][len_i]... stop strings, then the text; piece sizes from the text */
    if (n < 2) return;
    int ns = d[0] % 5;
    size_t p = 1;
    char *stops[4] = {0};
    int k = 0;
    for (; k < ns && p < n; k++) {
        size_t l = d[p++] % 8 + 1;
        if (p + l > n) l = n - p;
        stops[k] = strndup((const char *)d + p, l);
        p += l;
        if (!strlen(stops[k])) { /* an empty (NUL-led) stop string is dropped, as the decoder does */
            free(stops[k]);
            break;
        }
    }
    const char *text = (const char *)d + p;
    size_t tl = n - p;
    srv_textout to;
    srv_textout_init(&to, stops, k);
    srv_buf out = {0};
    size_t off = 0;
    bool stopped = false;
    while (off < tl && !stopped) {
        size_t piece = (size_t)(unsigned char)text[off] % 5 + 1;
        if (piece > tl - off) piece = tl - off;
        stopped = srv_textout_push(&to, text + off, piece, &out);
        off += piece;
    }
    if (!stopped) srv_textout_flush(&to, &out);
    if (out.len > tl || (out.len && memcmp(out.data, text, out.len))) abort();
    json_t *s = srv_json_text(out.data ? out.data : "", out.len);
    if (!s) abort();
    char *dump = json_dumps(s, JSON_ENCODE_ANY);
    if (!dump) abort();
    json_t *back = json_loads(dump, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
    if (!back) abort();
    json_decref(back);
    free(dump);
    json_decref(s);
    srv_textout_free(&to);
    srv_buf_free(&out);
    for (int i = 0; i < k; i++) free(stops[i]);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    uint8_t sel = data[0];
    if (sel % 3 == 2) {
        fuzz_text(data + 1, size - 1);
        return 0;
    }
    static const srv_api apis[] = {SRV_API_GENERATE, SRV_API_CHAT, SRV_API_OAI_CHAT, SRV_API_OAI_COMPLETE};
    srv_api api = sel & 0x20   ? (sel & 0x40 ? SRV_API_ANTHROPIC_COUNT : SRV_API_ANTHROPIC)
                  : sel & 0x10 ? SRV_API_OAI_RESPONSES
                               : apis[(sel >> 2) & 3];
    fuzz_request(api, (const char *)data + 1, size - 1);
    return 0;
}
