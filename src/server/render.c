/*
 * render.c - prompts as token ids (see render.h): the conversation rendered by the Jinja
 * engine (src/template) with the model's chat template, or a request's / manifest's,
 * then tokenized with special tokens recognised only outside the content spans
 * (loom_template_tokenize).
 */
#include "server/render.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "loom_template.h"
#include "quant/alloc.h"
#include "server/util.h"

struct srv_render {
    const loom_tokenizer *tok;
    char *tmpl;                 /* the GGUF's template text (NULL: none) */
    size_t tmpl_len;
    loom_template *compiled;    /* compiled once; NULL when it did not compile */
    char compile_err[LOOM_ERROR_MSG_MAX];
    loom_template *fallback;    /* for models without a template (chat) */
    int32_t fim_pre, fim_suf, fim_mid;
    char *bos_text, *eos_text;
};

static char *tok_text_dup(const loom_tokenizer *tok, int32_t id) {
    const char *t;
    size_t n;
    if (id < 0 || loom_token_text(tok, id, &t, &n)) return NULL;
    char *s = loom_malloc(n + 1);
    if (s) memcpy(s, t, n), s[n] = 0;
    return s;
}

static int32_t gguf_id(const loom_gguf *g, const char *k1, const char *k2, int32_t n_vocab) {
    int64_t v;
    if (loom_gguf_get_int(g, k1, &v) && (!k2 || loom_gguf_get_int(g, k2, &v))) return -1;
    return v >= 0 && v < n_vocab ? (int32_t)v : -1;
}

srv_render *srv_render_new(const loom_gguf *g, const loom_tokenizer *tok) {
    srv_render *rd = loom_calloc(1, sizeof *rd);
    if (!rd) return NULL;
    rd->tok = tok;
    const char *src;
    size_t len;
    if (g && loom_template_source_from_gguf(g, NULL, &src, &len, NULL) == LOOM_OK) {
        rd->tmpl = loom_malloc(len + 1);
        if (!rd->tmpl) goto fail;
        memcpy(rd->tmpl, src, len);
        rd->tmpl[len] = 0;
        rd->tmpl_len = len;
        loom_error err = {0};
        if (loom_template_compile(rd->tmpl, len, NULL, &rd->compiled, &err))
            snprintf(rd->compile_err, sizeof rd->compile_err, "%s", err.msg);
    }
    const char *fb = loom_template_fallback_source();
    if (loom_template_compile(fb, strlen(fb), NULL, &rd->fallback, NULL)) goto fail;
    int32_t nv = loom_tokenizer_n_vocab(tok);
    rd->fim_pre = g ? gguf_id(g, "tokenizer.ggml.fim_pre_token_id", "tokenizer.ggml.prefix_token_id", nv) : -1;
    rd->fim_suf = g ? gguf_id(g, "tokenizer.ggml.fim_suf_token_id", "tokenizer.ggml.suffix_token_id", nv) : -1;
    rd->fim_mid = g ? gguf_id(g, "tokenizer.ggml.fim_mid_token_id", "tokenizer.ggml.middle_token_id", nv) : -1;
    rd->bos_text = tok_text_dup(tok, loom_tokenizer_bos(tok));
    rd->eos_text = tok_text_dup(tok, loom_tokenizer_eos(tok));
    return rd;
fail:
    srv_render_free(rd);
    return NULL;
}

void srv_render_free(srv_render *rd) {
    if (!rd) return;
    loom_free(rd->tmpl);
    loom_template_free(rd->compiled);
    loom_template_free(rd->fallback);
    loom_free(rd->bos_text);
    loom_free(rd->eos_text);
    loom_free(rd);
}

const char *srv_render_template(const srv_render *rd) { return rd->tmpl; }
bool srv_render_can_insert(const srv_render *rd) { return rd->fim_pre >= 0 && rd->fim_suf >= 0 && rd->fim_mid >= 0; }

bool srv_is_go_template(const char *t) {
    for (const char *p = strstr(t, "{{"); p; p = strstr(p + 2, "{{")) {
        const char *q = p + 2;
        if (*q == '-') q++;
        while (*q == ' ') q++;
        if (*q == '.' || !strncmp(q, "if .", 4) || !strncmp(q, "range .", 7) || !strncmp(q, "end }}", 6) ||
            !strncmp(q, "end -}}", 7) || !strncmp(q, "if and", 6) || !strncmp(q, "if or", 5) ||
            !strncmp(q, "else }}", 7))
            return true;
    }
    return false;
}

bool srv_template_thinks(const char *t) {
    return t && (strstr(t, "enable_thinking") || strstr(t, "<think>") || strstr(t, "reasoning_content") ||
                 strstr(t, "<|channel|>") || strstr(t, "thinking"));
}

/* ------------------------------------------------------------------ token vector */

typedef struct tokvec {
    int32_t *v;
    int n, cap;
    bool oom;
} tokvec;

static bool tv_reserve(tokvec *t, int extra) {
    if (t->oom) return false;
    if (t->n + extra <= t->cap) return true;
    int cap = t->cap ? t->cap : 256;
    while (cap < t->n + extra) {
        if (cap > (1 << 29)) {
            t->oom = true;
            return false;
        }
        cap *= 2;
    }
    int32_t *v = loom_realloc(t->v, (size_t)cap * sizeof *v);
    if (!v) {
        t->oom = true;
        return false;
    }
    t->v = v, t->cap = cap;
    return true;
}

static void tv_push(tokvec *t, int32_t id) {
    if (tv_reserve(t, 1)) t->v[t->n++] = id;
}

static bool tv_append(tokvec *t, const int32_t *ids, int n) {
    if (!tv_reserve(t, n)) return false;
    if (n) memcpy(t->v + t->n, ids, (size_t)n * sizeof *ids);
    t->n += n;
    return true;
}

/* Plain text (no special tokens parsed unless special). */
static bool tokenize_into(const loom_tokenizer *tok, const char *s, size_t len, bool special, tokvec *t) {
    if (!len) return true;
    if (len > (size_t)1 << 28) {
        t->oom = true;
        return false;
    }
    int guess = (int)len + 4;
    if (!tv_reserve(t, guess)) return false;
    int32_t n = 0;
    loom_status st = loom_tokenize(tok, s, len, false, special, t->v + t->n, t->cap - t->n, &n, NULL);
    if (st == LOOM_ERR_RANGE && n > 0 && n < (1 << 29)) {
        if (!tv_reserve(t, (int)n)) return false;
        st = loom_tokenize(tok, s, len, false, special, t->v + t->n, t->cap - t->n, &n, NULL);
    }
    if (st) {
        t->oom = true;
        return false;
    }
    t->n += (int)n;
    return true;
}

/* Prepend BOS at `at` when the vocabulary adds one and it is not there. */
static void ensure_bos(const srv_render *rd, tokvec *tv, int at) {
    int32_t bos = loom_tokenizer_bos(rd->tok);
    if (!loom_tokenizer_add_bos(rd->tok) || bos < 0) return;
    if (tv->n > at && tv->v[at] == bos) return;
    tv_push(tv, 0);
    if (tv->oom) return;
    memmove(tv->v + at + 1, tv->v + at, (size_t)(tv->n - 1 - at) * sizeof *tv->v);
    tv->v[at] = bos;
}

/* ------------------------------------------------------------------ the prompt */

bool srv_render_prompt(const srv_render *rd, const srv_gen_req *rq, const char *tmpl, const char *default_system,
                       int drop, int32_t **toks, int *n_toks, int *n_messages, srv_err *e) {
    *toks = NULL;
    *n_toks = 0;
    if (n_messages) *n_messages = 0;
    tokvec tv = {0};
    json_t *msgs = NULL, *conv = NULL;
    loom_template *own = NULL;
    loom_template_result res;
    memset(&res, 0, sizeof res);
    int32_t *ids = NULL;
    bool chat = srv_api_is_chat(rq->api);
    bool go_prompt = false;
    if (tmpl && srv_is_go_template(tmpl)) {
        /* Ollama's trivial default "{{ .Prompt }}" means: the prompt as it is */
        const char *p = tmpl;
        while (isspace((unsigned char)*p)) p++;
        if (!strncmp(p, "{{ .Prompt }}", 13) || !strncmp(p, "{{.Prompt}}", 11)) {
            const char *q = p + (p[2] == ' ' ? 13 : 11);
            while (isspace((unsigned char)*q)) q++;
            if (!*q) go_prompt = true;
        }
        if (!go_prompt) {
            srv_err_set(e, 400, "the template is a Go template (Ollama's syntax); Loom renders Jinja chat "
                        "templates (the model's tokenizer.chat_template) - send a Jinja template or none");
            return false;
        }
        tmpl = NULL;
    }
    int at = 0;
    bool add_bos = true;
    if (rq->n_context > 0) { /* generate's context: the earlier conversation's tokens */
        if (!tv_append(&tv, rq->context, rq->n_context)) goto oom;
        at = rq->n_context;
        add_bos = false;
    }
    if (!chat && rq->suffix && rq->suffix_len) { /* fill-in-the-middle */
        if (!srv_render_can_insert(rd)) {
            srv_err_set(e, 400, "model '%s' does not support insert (no FIM tokens in its vocabulary)", rq->model);
            goto fail;
        }
        if (add_bos) ensure_bos(rd, &tv, at);
        tv_push(&tv, rd->fim_pre);
        tokenize_into(rd->tok, rq->prompt ? rq->prompt : "", rq->prompt_len, false, &tv);
        tv_push(&tv, rd->fim_suf);
        tokenize_into(rd->tok, rq->suffix, rq->suffix_len, false, &tv);
        tv_push(&tv, rd->fim_mid);
        if (tv.oom) goto oom;
        goto done;
    }
    if (!chat && (rq->raw || !tmpl)) {
        /* raw: the caller wrote the whole prompt, special tokens included; no template
         * (Ollama's "{{ .Prompt }}"): the prompt as it is, as content */
        if (!tokenize_into(rd->tok, rq->prompt ? rq->prompt : "", rq->prompt_len, rq->raw, &tv)) goto oom;
        if (add_bos) ensure_bos(rd, &tv, at);
        if (tv.oom) goto oom;
        goto done;
    }

    /* the template: the model's (compiled at load), an override (compiled here), or,
     * for a chat with a model without one, the fallback (contents joined by "\n") */
    const loom_template *t = NULL;
    if (!tmpl) {
        t = rd->fallback;
    } else if (rd->tmpl && tmpl == rd->tmpl) {
        if (!rd->compiled) {
            srv_err_set(e, 500, "the model's chat template does not compile: %s", rd->compile_err);
            goto fail;
        }
        t = rd->compiled;
    } else {
        loom_error cerr = {0};
        if (loom_template_compile(tmpl, strlen(tmpl), NULL, &own, &cerr)) {
            srv_err_set(e, cerr.status == LOOM_ERR_NOMEM ? 500 : 400, "the template does not compile: %s", cerr.msg);
            goto fail;
        }
        t = own;
    }

    /* the conversation */
    msgs = json_array();
    if (!msgs) goto oom;
    const char *sys = chat ? default_system : (rq->system ? rq->system : default_system);
    bool has_sys = false;
    size_t n_in = chat ? json_array_size(rq->messages) : 0;
    for (size_t i = 0; i < n_in; i++) {
        const json_t *m = json_array_get(rq->messages, i);
        if (!strcmp(json_string_value(json_object_get(m, "role")), "system")) has_sys = true;
    }
    if (sys && *sys && !has_sys) json_array_append_new(msgs, json_pack("{s:s,s:s}", "role", "system", "content", sys));
    if (chat) {
        int skip = drop;
        for (size_t i = 0; i < n_in; i++) {
            json_t *m = json_array_get(rq->messages, i);
            bool is_sys = !strcmp(json_string_value(json_object_get(m, "role")), "system");
            if (!is_sys && skip > 0 && i + 1 < n_in) {
                skip--;
                continue;
            }
            json_array_append(msgs, m);
        }
    } else {
        json_array_append_new(msgs, json_pack("{s:s,s:s%}", "role", "user", "content", rq->prompt ? rq->prompt : "",
                                              rq->prompt_len));
    }
    size_t nm = json_array_size(msgs);
    const json_t *last = nm ? json_array_get(msgs, nm - 1) : NULL;
    bool prefill = last && !strcmp(json_string_value(json_object_get(last, "role")), "assistant");
    if (prefill && !json_string_length(json_object_get(last, "content")) && !json_object_get(last, "tool_calls")) {
        json_array_remove(msgs, nm - 1); /* an empty assistant message: answer anew */
        prefill = false;
        nm--;
    }
    if (n_messages) *n_messages = (int)nm;
    conv = json_pack("{s:O,s:b}", "messages", msgs, "add_generation_prompt", !prefill);
    if (!conv) goto oom;
    if (rq->tools && json_array_size(rq->tools) && rq->tool_choice != SRV_TOOL_CHOICE_NONE)
        json_object_set(conv, "tools", rq->tools); /* tool_choice "none" hides them */
    json_t *kw = json_object();
    /* as llama.cpp: enable_thinking is true unless thinking is turned off (think: false,
     * reasoning_effort "none", chat_template_kwargs.enable_thinking false) */
    json_object_set_new(kw, "enable_thinking", json_boolean(rq->think != 0));
    if (rq->think_level) json_object_set_new(kw, "reasoning_effort", json_string(rq->think_level));
    json_object_set_new(conv, "kwargs", kw);

    loom_template_params tp = {.bos_token = rd->bos_text, .eos_token = rd->eos_text, .now = NULL};
    loom_error rerr = {0};
    if (loom_template_render_jansson(t, conv, &tp, &res, &rerr)) {
        srv_err_set(e, rerr.status == LOOM_ERR_NOMEM ? 500 : 400, "the chat template failed: %s", rerr.msg);
        goto fail;
    }
    size_t len = res.len;
    size_t n_spans = res.n_spans;
    if (prefill && n_spans) { /* continue the last assistant message: cut after its content */
        len = res.spans[n_spans - 1].end;
    }
    int32_t n_ids = 0;
    loom_error terr = {0};
    if (loom_template_tokenize(rd->tok, res.text, len, res.spans, n_spans, add_bos, &ids, &n_ids, &terr)) {
        srv_err_set(e, terr.status == LOOM_ERR_NOMEM ? 500 : 400, "tokenizing the prompt failed: %s", terr.msg);
        goto fail;
    }
    if (!tv_append(&tv, ids, n_ids)) goto oom;
done:
    if (tv.n == 0) { /* an empty prompt starts from BOS (or token 0), as `loom run` does */
        int32_t bos = loom_tokenizer_bos(rd->tok);
        tv_push(&tv, bos >= 0 ? bos : 0);
        if (tv.oom) goto oom;
    }
    free(ids);
    loom_template_result_free(&res);
    loom_template_free(own);
    json_decref(conv);
    json_decref(msgs);
    *toks = tv.v;
    *n_toks = tv.n;
    return true;
oom:
    srv_err_set(e, 500, "out of memory rendering the prompt");
fail:
    free(ids);
    loom_template_result_free(&res);
    loom_template_free(own);
    json_decref(conv);
    json_decref(msgs);
    loom_free(tv.v);
    return false;
}
