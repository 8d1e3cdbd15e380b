/* response.c - NDJSON and SSE framing of the Ollama and OpenAI APIs (see response.h). */
#include "server/response.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "quant/alloc.h"

#define FINGERPRINT "fp_loom"

static int dump_cb(const char *buf, size_t size, void *data) {
    return srv_buf_append(data, buf, size) ? 0 : -1;
}

bool srv_json_append(srv_buf *out, const json_t *j) {
    if (!j) {
        out->oom = true;
        return false;
    }
    if (json_dump_callback(j, dump_cb, out, JSON_COMPACT | JSON_REAL_PRECISION(16)) != 0) {
        out->oom = true;
        return false;
    }
    return true;
}

/* Length of a valid UTF-8 sequence at s (n bytes left), 0 if invalid. */
static size_t utf8_seq(const unsigned char *s, size_t n) {
    unsigned c = s[0];
    if (c < 0x80) return c ? 1 : 1;
    size_t len;
    unsigned min;
    if ((c & 0xE0) == 0xC0) len = 2, min = 0x80;
    else if ((c & 0xF0) == 0xE0) len = 3, min = 0x800;
    else if ((c & 0xF8) == 0xF0) len = 4, min = 0x10000;
    else return 0;
    if (len > n) return 0;
    unsigned cp = c & (0xFF >> (len + 1));
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xC0) != 0x80) return 0;
        cp = (cp << 6) | (s[i] & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
    return len;
}

json_t *srv_json_text(const char *s, size_t n) {
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0;
    while (i < n) {
        size_t l = utf8_seq(p + i, n - i);
        if (!l) break;
        i += l;
    }
    if (i == n) return json_stringn_nocheck(n ? s : "", n);
    srv_buf b = {0};
    srv_buf_append(&b, s, i);
    while (i < n) {
        size_t l = utf8_seq(p + i, n - i);
        if (l) {
            srv_buf_append(&b, s + i, l);
            i += l;
        } else {
            srv_buf_append(&b, "\xEF\xBF\xBD", 3); /* U+FFFD */
            i++;
        }
    }
    json_t *j = b.oom ? NULL : json_stringn_nocheck(b.data, b.len);
    srv_buf_free(&b);
    return j;
}

static json_t *created_at(int64_t ns) {
    char ts[40];
    return json_string(srv_rfc3339nano(ns, true, ts));
}

/* ------------------------------------------------------------------ Ollama */

static json_t *ollama_message(const srv_delta *d) {
    json_t *m = json_object();
    json_object_set_new(m, "role", json_string("assistant"));
    json_object_set_new(m, "content", srv_json_text(d->content ? d->content : "", d->content ? d->content_len : 0));
    if (d->thinking) json_object_set_new(m, "thinking", srv_json_text(d->thinking, d->thinking_len));
    if (d->tool_calls) json_object_set_new(m, "tool_calls", json_deep_copy(d->tool_calls));
    return m;
}

/* Ollama: "logprobs" next to "message" / "response" when there are any. */
static void ollama_logprobs(json_t *j, const srv_delta *d) {
    if (d && d->logprobs && json_array_size(d->logprobs)) json_object_set_new(j, "logprobs", json_deep_copy(d->logprobs));
}

void srv_ollama_chunk_d(srv_buf *out, srv_api api, const char *model, int64_t created_ns, const srv_delta *d) {
    json_t *j = json_object();
    json_object_set_new(j, "model", json_string(model));
    json_object_set_new(j, "created_at", created_at(created_ns));
    if (api == SRV_API_CHAT) {
        json_object_set_new(j, "message", ollama_message(d));
    } else {
        json_object_set_new(j, "response", srv_json_text(d->content ? d->content : "", d->content ? d->content_len : 0));
        if (d->thinking) json_object_set_new(j, "thinking", srv_json_text(d->thinking, d->thinking_len));
    }
    ollama_logprobs(j, d);
    json_object_set_new(j, "done", json_false());
    srv_json_append(out, j);
    srv_buf_append(out, "\n", 1);
    json_decref(j);
}

void srv_ollama_chunk(srv_buf *out, srv_api api, const char *model, int64_t created_ns, const char *text,
                      size_t n) {
    srv_delta d = {.content = text, .content_len = n};
    srv_ollama_chunk_d(out, api, model, created_ns, &d);
}

void srv_ollama_final_d(srv_buf *out, srv_api api, const char *model, int64_t created_ns, const srv_delta *whole,
                        const srv_final *f, bool stream) {
    static const srv_delta none = {0};
    if (!whole) whole = &none;
    json_t *j = json_object();
    json_object_set_new(j, "model", json_string(model));
    json_object_set_new(j, "created_at", created_at(created_ns));
    if (api == SRV_API_CHAT) {
        json_object_set_new(j, "message", ollama_message(whole));
        if (f->done_reason) json_object_set_new(j, "done_reason", json_string(f->done_reason));
        json_object_set_new(j, "done", json_true());
    } else {
        json_object_set_new(j, "response",
                            srv_json_text(whole->content ? whole->content : "", whole->content ? whole->content_len : 0));
        if (whole->thinking) json_object_set_new(j, "thinking", srv_json_text(whole->thinking, whole->thinking_len));
        json_object_set_new(j, "done", json_true());
        if (f->done_reason) json_object_set_new(j, "done_reason", json_string(f->done_reason));
        if (f->context) {
            json_t *c = json_array();
            for (int i = 0; i < f->n_context; i++) json_array_append_new(c, json_integer(f->context[i]));
            json_object_set_new(j, "context", c);
        }
    }
    ollama_logprobs(j, whole);
    /* Ollama's Metrics are omitempty: zero values are left out */
#define PUT(k, v)                                                                        \
    if ((v) > 0) json_object_set_new(j, k, json_integer((json_int_t)(v)))
    PUT("total_duration", f->total_ns);
    PUT("load_duration", f->load_ns);
    PUT("prompt_eval_count", f->prompt_count);
    PUT("prompt_eval_duration", f->prompt_ns);
    PUT("eval_count", f->eval_count);
    PUT("eval_duration", f->eval_ns);
#undef PUT
    srv_json_append(out, j);
    if (stream) srv_buf_append(out, "\n", 1);
    json_decref(j);
}

void srv_ollama_final(srv_buf *out, srv_api api, const char *model, int64_t created_ns, const char *text,
                      size_t n, const srv_final *f, bool stream) {
    srv_delta d = {.content = text ? text : "", .content_len = text ? n : 0};
    srv_ollama_final_d(out, api, model, created_ns, &d, f, stream);
}

void srv_ollama_error(srv_buf *out, const char *msg, bool line) {
    json_t *j = json_pack("{s:o}", "error", srv_json_text(msg, strlen(msg)));
    srv_json_append(out, j);
    if (line) srv_buf_append(out, "\n", 1);
    json_decref(j);
}

/* ------------------------------------------------------------------ OpenAI */

void srv_oai_ctx_init(srv_oai_ctx *c, srv_api api, const char *model, bool include_usage) {
    memset(c, 0, sizeof *c);
    c->api = api;
    c->model = model;
    c->include_usage = include_usage;
    c->created = srv_now_ns() / 1000000000;
    unsigned r = (unsigned)(srv_now_ns() % 1000);
    snprintf(c->id, sizeof c->id, "%s-%u", api == SRV_API_OAI_CHAT ? "chatcmpl" : "cmpl", r);
}

static json_t *oai_head(srv_oai_ctx *c, bool chunk) {
    json_t *j = json_object();
    json_object_set_new(j, "id", json_string(c->id));
    const char *obj = c->api == SRV_API_OAI_CHAT ? (chunk ? "chat.completion.chunk" : "chat.completion")
                                                  : "text_completion";
    json_object_set_new(j, "object", json_string(obj));
    json_object_set_new(j, "created", json_integer(c->created));
    json_object_set_new(j, "model", json_string(c->model));
    json_object_set_new(j, "system_fingerprint", json_string(FINGERPRINT));
    return j;
}

/* OpenAI tool calls from Ollama's form: arguments become JSON text. */
static json_t *oai_tool_calls(const json_t *calls, int first_index) {
    json_t *a = json_array();
    for (size_t i = 0; i < json_array_size(calls); i++) {
        const json_t *c = json_array_get(calls, i);
        const json_t *f = json_object_get(c, "function");
        const json_t *av = json_object_get(f, "arguments");
        char *args = av ? json_dumps(av, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
        const json_t *id = json_object_get(c, "id");
        char idbuf[40];
        if (!json_is_string(id)) snprintf(idbuf, sizeof idbuf, "call_%d", first_index + (int)i);
        json_t *fn = json_pack("{s:O,s:s}", "name", json_object_get(f, "name"), "arguments", args ? args : "{}");
        free(args);
        json_array_append_new(a, json_pack("{s:i,s:s,s:s,s:o}", "index", first_index + (int)i, "id",
                                           json_is_string(id) ? json_string_value(id) : idbuf, "type", "function",
                                           "function", fn));
    }
    return a;
}

/* OpenAI's logprobs objects from Ollama's form. Chat: {content: [{token, logprob,
 * bytes, top_logprobs: [...]}], refusal: null}; completions (the legacy form): {tokens,
 * token_logprobs, top_logprobs: [{token: logprob}] (null when no alternatives were
 * asked), text_offset} with offsets in characters from *offset (advanced). */
static json_t *oai_logprobs(srv_oai_ctx *c, const json_t *lps, size_t *offset) {
    if (!lps || !json_array_size(lps)) return json_null();
    if (c->api == SRV_API_OAI_CHAT) {
        json_t *content = json_array();
        for (size_t i = 0; i < json_array_size(lps); i++) {
            json_t *e = json_deep_copy(json_array_get(lps, i));
            if (e && !json_object_get(e, "top_logprobs")) json_object_set_new(e, "top_logprobs", json_array());
            json_array_append_new(content, e);
        }
        return json_pack("{s:o,s:n}", "content", content, "refusal");
    }
    json_t *tokens = json_array(), *lp = json_array(), *tops = json_array(), *offs = json_array();
    bool any_top = false;
    for (size_t i = 0; i < json_array_size(lps); i++) {
        const json_t *e = json_array_get(lps, i);
        const json_t *tok = json_object_get(e, "token");
        json_array_append(tokens, (json_t *)tok);
        json_array_append(lp, json_object_get(e, "logprob"));
        const json_t *t = json_object_get(e, "top_logprobs");
        json_t *d = json_object();
        for (size_t k = 0; k < json_array_size(t); k++) {
            const json_t *a = json_array_get(t, k);
            const char *key = json_string_value(json_object_get(a, "token"));
            if (key && !json_object_get(d, key)) json_object_set(d, key, json_object_get(a, "logprob"));
        }
        any_top |= t != NULL;
        json_array_append_new(tops, d);
        json_array_append_new(offs, json_integer((json_int_t)*offset));
        const char *s = json_string_value(tok);
        for (size_t b = 0, n = json_string_length(tok); s && b < n; b++) *offset += ((unsigned char)s[b] & 0xC0) != 0x80;
    }
    if (!any_top) {
        json_decref(tops);
        tops = json_null();
    }
    return json_pack("{s:o,s:o,s:o,s:o}", "tokens", tokens, "token_logprobs", lp, "top_logprobs", tops, "text_offset", offs);
}

static json_t *oai_choice(srv_oai_ctx *c, bool chunk, const srv_delta *d, bool role, bool with_content,
                          const char *finish, int first_tool_index) {
    json_t *ch = json_object();
    const char *text = d && d->content ? d->content : "";
    size_t n = d && d->content ? d->content_len : 0;
    if (c->api == SRV_API_OAI_CHAT) {
        json_object_set_new(ch, "index", json_integer(0));
        json_t *m = json_object();
        if (role || !chunk) json_object_set_new(m, "role", json_string("assistant"));
        bool calls = d && d->tool_calls && json_array_size(d->tool_calls);
        if (!chunk && !n && calls) json_object_set_new(m, "content", json_null()); /* as OpenAI: calls, no text */
        else if (with_content && (!chunk || n || !d || !(d->thinking || calls)))
            json_object_set_new(m, "content", srv_json_text(text, n));
        if (d && d->thinking) json_object_set_new(m, "reasoning_content", srv_json_text(d->thinking, d->thinking_len));
        if (d && d->tool_calls && json_array_size(d->tool_calls))
            json_object_set_new(m, "tool_calls", oai_tool_calls(d->tool_calls, first_tool_index));
        json_object_set_new(ch, chunk ? "delta" : "message", m);
        /* as OpenAI: present, null when not asked */
        json_object_set_new(ch, "logprobs", oai_logprobs(c, d ? d->logprobs : NULL, NULL));
    } else {
        json_object_set_new(ch, "text", srv_json_text(with_content ? text : "", with_content ? n : 0));
        json_object_set_new(ch, "index", json_integer(0));
        json_object_set_new(ch, "logprobs", oai_logprobs(c, d ? d->logprobs : NULL, &c->text_offset));
    }
    json_object_set_new(ch, "finish_reason", finish ? json_string(finish) : json_null());
    return ch;
}

static json_t *oai_usage(int p, int c) {
    return json_pack("{s:i,s:i,s:i}", "prompt_tokens", p, "completion_tokens", c, "total_tokens", p + c);
}

static void sse(srv_buf *out, json_t *j) {
    srv_buf_append(out, "data: ", 6);
    srv_json_append(out, j);
    srv_buf_append(out, "\n\n", 2);
    json_decref(j);
}

void srv_oai_chunk_d(srv_buf *out, srv_oai_ctx *c, const srv_delta *d, bool first, int first_tool_index) {
    json_t *j = oai_head(c, true);
    json_t *choices = json_array();
    json_array_append_new(choices, oai_choice(c, true, d, first, true, NULL, first_tool_index));
    json_object_set_new(j, "choices", choices);
    /* OpenAI: with include_usage every chunk but the last carries "usage": null */
    if (c->include_usage) json_object_set_new(j, "usage", json_null());
    sse(out, j);
}

void srv_oai_chunk(srv_buf *out, srv_oai_ctx *c, const char *text, size_t n, bool first) {
    srv_delta d = {.content = text, .content_len = n};
    srv_oai_chunk_d(out, c, &d, first, 0);
}

void srv_oai_stream_end(srv_buf *out, srv_oai_ctx *c, const char *finish, int pt, int ct) {
    json_t *j = oai_head(c, true);
    json_t *choices = json_array();
    json_array_append_new(choices, oai_choice(c, true, NULL, false, false, finish, 0));
    json_object_set_new(j, "choices", choices);
    if (c->include_usage) json_object_set_new(j, "usage", json_null());
    sse(out, j);
    if (c->include_usage) {
        j = oai_head(c, true);
        json_object_set_new(j, "choices", json_array());
        json_object_set_new(j, "usage", oai_usage(pt, ct));
        sse(out, j);
    }
    srv_buf_puts(out, "data: [DONE]\n\n");
}

void srv_oai_final_d(srv_buf *out, srv_oai_ctx *c, const srv_delta *whole, const char *finish, int pt,
                     int ct) {
    json_t *j = oai_head(c, false);
    json_t *choices = json_array();
    json_array_append_new(choices, oai_choice(c, false, whole, false, true, finish, 0));
    json_object_set_new(j, "choices", choices);
    json_object_set_new(j, "usage", oai_usage(pt, ct));
    srv_json_append(out, j);
    srv_buf_append(out, "\n", 1);
    json_decref(j);
}

void srv_oai_final(srv_buf *out, srv_oai_ctx *c, const char *text, size_t n, const char *finish, int pt,
                   int ct) {
    srv_delta d = {.content = text, .content_len = n};
    srv_oai_final_d(out, c, &d, finish, pt, ct);
}

static json_t *oai_error_obj(int status, const char *msg, const char *param, const char *code) {
    const char *type = status == 400 || status == 413 ? "invalid_request_error"
                       : status == 404                ? "not_found_error"
                                                      : "api_error";
    json_t *e = json_object();
    json_object_set_new(e, "message", srv_json_text(msg, strlen(msg)));
    json_object_set_new(e, "type", json_string(type));
    json_object_set_new(e, "param", param ? json_string(param) : json_null());
    json_object_set_new(e, "code", code ? json_string(code) : json_null());
    return json_pack("{s:o}", "error", e);
}

void srv_oai_error(srv_buf *out, int status, const char *msg) { srv_oai_error_ex(out, status, msg, NULL, NULL); }

void srv_oai_error_ex(srv_buf *out, int status, const char *msg, const char *param, const char *code) {
    json_t *j = oai_error_obj(status, msg, param, code);
    srv_json_append(out, j);
    srv_buf_append(out, "\n", 1);
    json_decref(j);
}

void srv_oai_stream_error(srv_buf *out, int status, const char *msg) { sse(out, oai_error_obj(status, msg, NULL, NULL)); }
