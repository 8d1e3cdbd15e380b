/*
 * api_gen.c - POST /api/generate, /api/chat, /v1/chat/completions, /v1/completions,
 * /v1/responses, /v1/messages (and /v1/messages/count_tokens):
 * request -> options -> model -> prompt tokens -> engine task, then the answer
 * streamed (NDJSON / SSE) or whole.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "quant/alloc.h"
#include "server/anthropic.h"
#include "server/chatout.h"
#include "server/responses.h"
#include "server/server_internal.h"
#include "server/toolgram.h"

struct srv_stream {
    loom_server *s;
    srv_inst *inst;
    srv_task *task;
    srv_api api;
    char model[256];        /* the name as the client wrote it (echoed back) */
    bool stream;
    srv_oai_ctx oai;
    srv_resp resp;          /* /v1/responses */
    srv_anth anth;          /* /v1/messages */
    json_t *lp;             /* token logprobs not yet sent (Ollama's form), when asked */
    int lp_top;             /* alternatives asked per token */
    bool first_sent, final_done, logged;
    int64_t t_start, load_ns;
    bool ka_set;
    int64_t ka_ns;
    srv_buf full;           /* the whole answer (not streaming, without the chat parser) */
    bool use_co;            /* the answer goes through the chat output parser */
    srv_chatout co;
    bool co_failed;
    char co_err[512];
    int status;             /* 200, or the error's once done */
    char err[256];
    const char *method, *path;
};

static bool is_openai(srv_api api) { return srv_api_is_openai(api); }

/* The error body in the API's shape; OpenAI's carries param and code (NULL = null). */
static void api_error(srv_response *out, srv_api api, int status, const char *msg, const char *param,
                      const char *code) {
    srv_buf_clear(&out->body);
    out->status = status;
    out->content_type = "application/json; charset=utf-8";
    if (srv_api_is_anthropic(api)) srv_anth_error(&out->body, status, msg);
    else if (is_openai(api)) srv_oai_error_ex(&out->body, status, msg, param, code);
    else srv_ollama_error(&out->body, msg, false);
}

void srv_api_error(srv_response *out, srv_api api, int status, const char *msg) {
    api_error(out, api, status, msg, NULL, NULL);
}

void srv_api_error_e(srv_response *out, srv_api api, const srv_err *e) {
    api_error(out, api, e->status ? e->status : 500, e->msg, e->param, e->code);
}

/* ------------------------------------------------------------------ options */

/* Request options over the model's params layer over the server defaults. */
static bool resolve_options(loom_server *s, const srv_model_info *info, const srv_gen_req *r, srv_options *o,
                            srv_err *e) {
    srv_options_defaults(o);
    if (s->p.n_ctx > 0) o->num_ctx = s->p.n_ctx, o->num_ctx_set = true; /* --ctx: not capped */
    if (info->params) {
        srv_options pl;
        srv_options_defaults(&pl);
        srv_err ie = {0};
        if (srv_options_parse(info->params, &s->lim, &pl, &ie) && !srv_options_merge(o, &pl)) {
            srv_options_free(&pl);
            srv_err_set(e, 500, "out of memory");
            return false;
        }
        srv_options_free(&pl);
    }
    if (!srv_options_merge(o, &r->opt)) {
        srv_err_set(e, 500, "out of memory");
        return false;
    }
    return true;
}

/* ------------------------------------------------------------------ stream */

static const char *reason_str(srv_done d) { return d == SRV_DONE_LENGTH ? "length" : "stop"; }

static void stream_release(srv_stream *st) {
    if (st->inst) srv_models_release(st->s->models, st->inst, st->ka_set, st->ka_ns);
    st->inst = NULL;
}

/* The logprob records as Ollama's entries {token, logprob, bytes, top_logprobs?},
 * appended to st->lp. */
static json_t *lp_entry(const loom_tokenizer *tok, unsigned flags, int32_t id, float logprob) {
    char buf[256];
    size_t len = 0;
    if (loom_detokenize(tok, &id, 1, flags, buf, sizeof buf, &len) != LOOM_OK) len = 0;
    json_t *bytes = json_array();
    for (size_t i = 0; bytes && i < len; i++) json_array_append_new(bytes, json_integer((unsigned char)buf[i]));
    return json_pack("{s:o,s:f,s:o}", "token", srv_json_text(buf, len), "logprob", (double)logprob, "bytes", bytes);
}

static void take_logprobs(srv_stream *st, const srv_logprob *r, int n) {
    const loom_tokenizer *tok = st->inst ? st->inst->tok : NULL;
    unsigned flags = LOOM_DETOK_NO_STRIP | (st->task->render_special ? LOOM_DETOK_SPECIAL : 0u);
    for (int i = 0; tok && st->lp && i < n; i++) {
        json_t *e = lp_entry(tok, flags, r[i].id, r[i].logprob);
        if (e && st->lp_top > 0) {
            json_t *top = json_array();
            for (int k = 0; top && k < r[i].n_top; k++)
                json_array_append_new(top, lp_entry(tok, flags, r[i].top_id[k], r[i].top_logprob[k]));
            json_object_set_new(e, "top_logprobs", top);
        }
        json_array_append_new(st->lp, e);
    }
}

/* One streamed chunk (with the logprobs gathered since the previous one). */
static void stream_emit(srv_stream *st, srv_buf *out, const srv_delta *dd) {
    srv_delta dl = *dd;
    const srv_delta *d = &dl;
    if (st->lp && json_array_size(st->lp)) dl.logprobs = st->lp;
    if (st->api == SRV_API_OAI_RESPONSES) {
        srv_resp_delta(&st->resp, out, d);
    } else if (st->api == SRV_API_ANTHROPIC) {
        srv_anth_delta(&st->anth, out, d);
    } else if (is_openai(st->api)) {
        int first_index = st->co.n_calls - (int)json_array_size(d->tool_calls);
        srv_oai_chunk_d(out, &st->oai, d, !st->first_sent, first_index);
    } else {
        srv_ollama_chunk_d(out, st->api, st->model, srv_now_ns(), d);
    }
    st->first_sent = true;
    if (dl.logprobs) json_array_clear(st->lp);
}

/* Format what the task has produced since the last call into out. */
static bool stream_pump(srv_stream *st, srv_buf *out) {
    srv_task *t = st->task;
    srv_buf text = {0};
    size_t *seg = NULL;
    int n_seg = 0;
    srv_logprob *lps = NULL;
    int n_lps = 0;
    pthread_mutex_lock(&t->mu);
    if (t->n_lps) { /* taken whole, like the text */
        lps = t->lps;
        n_lps = t->n_lps;
        t->lps = NULL;
        t->n_lps = t->cap_lps = 0;
    }
    if (t->text.len) {
        text = t->text;
        seg = t->seg;
        n_seg = t->n_seg;
        memset(&t->text, 0, sizeof t->text);
        t->seg = NULL;
        t->n_seg = t->cap_seg = 0;
    }
    bool done = t->done;
    pthread_mutex_unlock(&t->mu);
    take_logprobs(st, lps, n_lps);
    loom_free(lps);
    if (st->api == SRV_API_OAI_RESPONSES && st->stream) srv_resp_start(&st->resp, out); /* once */
    if (st->api == SRV_API_ANTHROPIC && st->stream) srv_anth_start(&st->anth, out, t->n_prompt);
    size_t prev = 0;
    for (int i = 0; i < n_seg; i++) {
        const char *p = text.data + prev;
        size_t n = seg[i] - prev;
        prev = seg[i];
        if (st->use_co) { /* thinking and tool calls out of the text */
            if (st->co_failed) continue;
            srv_delta d;
            srv_err ce = {0};
            if (!srv_chatout_push(&st->co, p, n, &d, &ce)) {
                st->co_failed = true;
                snprintf(st->co_err, sizeof st->co_err, "%s", ce.msg);
                continue;
            }
            if (st->stream && !srv_delta_empty(&d)) stream_emit(st, out, &d);
            continue;
        }
        if (!st->stream) {
            srv_buf_append(&st->full, p, n);
            continue;
        }
        /* one chunk per token's text */
        srv_delta d = {.content = p, .content_len = n};
        stream_emit(st, out, &d);
    }
    srv_buf_free(&text);
    loom_free(seg);
    if (!done || st->final_done) return done;
    /* the end */
    st->final_done = true;
    srv_delta whole = {.content = st->full.data ? st->full.data : "", .content_len = st->full.len};
    if (st->use_co && !st->co_failed && (t->reason == SRV_DONE_STOP || t->reason == SRV_DONE_LENGTH)) {
        srv_delta d;
        srv_err ce = {0};
        if (!srv_chatout_finish(&st->co, &d, &ce)) {
            st->co_failed = true;
            snprintf(st->co_err, sizeof st->co_err, "%s", ce.msg);
        } else if (st->stream && !srv_delta_empty(&d)) {
            stream_emit(st, out, &d);
        }
        srv_chatout_whole(&st->co, &whole);
    }
    if (st->lp && json_array_size(st->lp)) {
        if (st->stream && t->reason != SRV_DONE_ERROR && t->reason != SRV_DONE_CANCEL) {
            srv_delta only = {.content = "", .content_len = 0}; /* the last tokens' logprobs, before the end */
            stream_emit(st, out, &only);
        } else {
            whole.logprobs = st->lp;
        }
    }
    srv_done reason = t->reason;
    int err_status = t->err_status;
    const char *err_msg = t->err;
    if (st->co_failed && reason != SRV_DONE_CANCEL) { /* the parser failed (out of memory): an error */
        reason = SRV_DONE_ERROR;
        err_status = 500;
        err_msg = st->co_err;
    }
    if (reason == SRV_DONE_ERROR) {
        st->status = err_status;
        snprintf(st->err, sizeof st->err, "%.255s", err_msg);
        if (st->stream) {
            if (st->api == SRV_API_OAI_RESPONSES) srv_resp_stream_error(&st->resp, out, err_status, err_msg);
            else if (st->api == SRV_API_ANTHROPIC) srv_anth_stream_error(out, err_status, err_msg);
            else if (is_openai(st->api)) srv_oai_stream_error(out, err_status, err_msg);
            else srv_ollama_error(out, err_msg, true);
        }
    } else if (reason != SRV_DONE_CANCEL) {
        int64_t now = srv_mono_ns();
        srv_final f = {0};
        f.done_reason = reason_str(reason);
        f.total_ns = now - st->t_start;
        f.load_ns = st->load_ns;
        f.prompt_count = t->n_prompt;
        f.prompt_ns = t->t_first - t->t_admit;
        f.eval_count = t->n_eval;
        f.eval_ns = t->t_end - t->t_first;
        int32_t *ctx = NULL;
        if (st->api == SRV_API_GENERATE) {
            ctx = loom_malloc(((size_t)t->n_prompt + (size_t)t->n_gen + 1) * sizeof *ctx);
            if (ctx) {
                memcpy(ctx, t->prompt, (size_t)t->n_prompt * sizeof *ctx);
                memcpy(ctx + t->n_prompt, t->gen, (size_t)t->n_gen * sizeof *ctx);
                f.context = ctx;
                f.n_context = t->n_prompt + t->n_gen;
            }
        }
        atomic_fetch_add(&st->s->metrics.tokens_prompt, (unsigned long long)(t->n_prompt - t->n_cached));
        atomic_fetch_add(&st->s->metrics.tokens_gen, (unsigned long long)t->n_eval);
        if (st->api == SRV_API_OAI_RESPONSES) {
            if (!st->stream) srv_resp_delta(&st->resp, NULL, &whole);
            srv_resp_end(&st->resp, out, st->stream, reason == SRV_DONE_LENGTH, t->n_prompt, t->n_cached, t->n_eval);
        } else if (st->api == SRV_API_ANTHROPIC) {
            if (!st->stream) srv_anth_delta(&st->anth, NULL, &whole);
            const char *stop_seq = reason == SRV_DONE_STOP && t->stop_hit >= 0 && t->stop_hit < t->n_stop
                                       ? t->stop[t->stop_hit] : NULL;
            const char *why = reason == SRV_DONE_LENGTH ? "max_tokens"
                              : stop_seq                ? "stop_sequence"
                              : st->anth.n_calls        ? "tool_use"
                                                        : "end_turn";
            srv_anth_end(&st->anth, out, st->stream, why, stop_seq, t->n_prompt, t->n_eval);
        } else if (is_openai(st->api)) {
            /* OpenAI: "tool_calls" when the answer has calls (a cut-off answer stays "length") */
            const char *finish = st->use_co && st->co.n_calls > 0 && reason == SRV_DONE_STOP ? "tool_calls"
                                                                                                : f.done_reason;
            if (st->stream) srv_oai_stream_end(out, &st->oai, finish, t->n_prompt, t->n_eval);
            else srv_oai_final_d(out, &st->oai, &whole, finish, t->n_prompt, t->n_eval);
        } else {
            srv_ollama_final_d(out, st->api, st->model, srv_now_ns(), st->stream ? NULL : &whole, &f, st->stream);
        }
        loom_free(ctx);
    } else {
        st->status = 499;
    }
    stream_release(st);
    return true;
}

int srv_stream_next(srv_stream *st, srv_buf *out) {
    if (st->final_done) return 0;
    size_t before = out->len;
    stream_pump(st, out);
    return out->len > before || !st->final_done ? 1 : 0;
}

int srv_stream_fd(const srv_stream *st) { return st->task->efd; }

static void stream_log(srv_stream *st) {
    if (st->logged) return;
    st->logged = true;
    srv_task *t = st->task;
    pthread_mutex_lock(&t->mu);
    int np = t->n_prompt, ne = t->n_eval;
    pthread_mutex_unlock(&t->mu);
    srv_log_request(st->s, st->method, st->path, st->status, st->model, np, ne, srv_mono_ns() - st->t_start);
}

void srv_stream_close(srv_stream *st, bool gone) {
    if (!st) return;
    srv_task *t = st->task;
    pthread_mutex_lock(&t->mu);
    bool done = t->done;
    pthread_mutex_unlock(&t->mu);
    if (!done && st->inst) {
        srv_engine_cancel(st->inst->eng, t);
        if (gone) st->status = 499;
    }
    stream_release(st);
    stream_log(st);
    srv_task_unref(t);
    srv_buf_free(&st->full);
    if (st->use_co) srv_chatout_free(&st->co);
    if (st->api == SRV_API_OAI_RESPONSES) srv_resp_free(&st->resp);
    if (st->api == SRV_API_ANTHROPIC) srv_anth_free(&st->anth);
    json_decref(st->lp);
    loom_free(st);
}

/* Wait for the task (not streaming) while watching the client. false: it left. */
static bool wait_done(srv_stream *st, const srv_conn *conn) {
    srv_task *t = st->task;
    for (;;) {
        pthread_mutex_lock(&t->mu);
        bool done = t->done;
        pthread_mutex_unlock(&t->mu);
        if (done) return true;
        struct pollfd p[2] = {{.fd = t->efd, .events = POLLIN}, {.fd = conn ? conn->fd : -1, .events = POLLRDHUP}};
        int r = poll(p, conn && conn->fd >= 0 ? 2 : 1, 50);
        if (r > 0 && (p[0].revents & POLLIN)) {
            uint64_t v;
            ssize_t rr = read(t->efd, &v, sizeof v);
            (void)rr;
        }
        if (r > 0 && conn && conn->fd >= 0 && (p[1].revents & (POLLRDHUP | POLLHUP | POLLERR))) return false;
        if (conn && conn->stop && conn->stop(conn->user)) return false;
    }
}

/* ------------------------------------------------------------------ the handler */

static void load_only(loom_server *s, srv_api api, const srv_gen_req *r, const srv_model_info *info,
                      const srv_load_opts *lo, srv_response *out) {
    srv_err e = {0};
    const char *reason = "load";
    if (r->keep_alive_set && r->keep_alive_ns == 0) {
        srv_models_unload(s->models, info->name);
        reason = "unload";
    } else {
        int64_t load_ns;
        srv_inst *in = srv_models_acquire(s->models, info, lo, &load_ns, &e);
        if (!in) {
            if (srv_gguf_is_embedding(info->gguf) && (e.status = 0) == 0)
                srv_err_set(&e, 400, "\"%s\" is an embedding model: it does not support generate or chat "
                                     "(use /api/embed)", r->model);
            srv_api_error_e(out, api, &e);
            return;
        }
        srv_models_release(s->models, in, r->keep_alive_set, r->keep_alive_ns);
    }
    srv_final f = {0};
    f.done_reason = reason;
    srv_buf_clear(&out->body);
    srv_ollama_final(&out->body, api, r->model, srv_now_ns(), "", 0, &f, false);
    out->status = 200;
    out->content_type = "application/json; charset=utf-8";
}

static int model_ctx_train(const srv_model_info *info) {
    loom_gguf *g = NULL;
    if (loom_gguf_open(info->gguf, NULL, &g, NULL)) return 0;
    int64_t v = 0;
    loom_gguf_str arch;
    if (loom_gguf_get_str(g, "general.architecture", &arch) == LOOM_OK && arch.len < 64) {
        char key[96];
        snprintf(key, sizeof key, "%.*s.context_length", (int)arch.len, arch.ptr);
        if (loom_gguf_get_int(g, key, &v)) v = 0;
    }
    loom_gguf_close(g);
    return v > 0 && v < (1 << 24) ? (int)v : 0;
}

void srv_api_generate(loom_server *s, srv_api api, const srv_request *rq, const srv_conn *conn, srv_response *out) {
    int64_t t_start = srv_mono_ns();
    srv_err e = {0};
    srv_gen_req r;
    memset(&r, 0, sizeof r);
    srv_model_info info;
    memset(&info, 0, sizeof info);
    srv_options o;
    srv_options_defaults(&o);
    srv_inst *in = NULL;
    srv_task *t = NULL;
    loom_grammar *grammar = NULL;
    int32_t *toks = NULL;
    int n_toks = 0;

    json_t *body = srv_json_parse(rq->body, rq->body_len, &s->lim, &e);
    if (!body) goto error;
    bool ok = srv_gen_req_decode(api, body, &s->lim, &r, &e);
    json_decref(body);
    if (!ok) goto error;
    snprintf(out->model, sizeof out->model, "%s", r.model);
    if (!srv_store_find(s->store, r.model, &info, false, &e)) goto error;
    if (!resolve_options(s, &info, &r, &o, &e)) goto error;

    srv_load_opts lo = {0};
    lo.n_ctx = o.num_ctx;
    if (!o.num_ctx_set && !r.opt.num_ctx_set) { /* the default stays within the training context */
        int train = model_ctx_train(&info);
        if (train > 0 && lo.n_ctx > train) lo.n_ctx = train;
    }
    lo.n_batch = o.num_batch < lo.n_ctx ? o.num_batch : lo.n_ctx;
    lo.n_gpu = o.num_gpu_set ? o.num_gpu : -1;
    lo.n_thread = o.num_thread;
    lo.mmap = o.use_mmap;

    bool empty = (api == SRV_API_GENERATE && (!r.prompt || !r.prompt_len) && (!r.suffix || !r.suffix_len)) ||
                 (api == SRV_API_CHAT && (!r.messages || json_array_size(r.messages) == 0));
    if (empty) {
        load_only(s, api, &r, &info, &lo, out);
        goto done;
    }
    int64_t load_ns = 0;
    in = srv_models_acquire(s->models, &info, &lo, &load_ns, &e);
    if (!in) {
        if (srv_gguf_is_embedding(info.gguf) && (e.status = 0) == 0) /* replaces the load error */
            srv_err_set(&e, 400, "\"%s\" is an embedding model: it does not support generate or chat (use "
                                 "/api/embed)", r.model);
        goto error;
    }

    /* the prompt */
    const char *tmpl = r.template_text ? r.template_text
                       : in->info.template_text ? in->info.template_text
                                                : srv_render_template(in->render);
    bool chat = srv_api_is_chat(api);
    bool tools_on = chat && r.tools && json_array_size(r.tools) && r.tool_choice != SRV_TOOL_CHOICE_NONE;
    if (tools_on && !(tmpl && strstr(tmpl, "tools"))) {
        srv_err_set(&e, 400, "model '%s' does not support tools (its template has none)", r.model);
        goto error;
    }
    if (r.think == 1 && !srv_template_thinks(tmpl)) { /* as Ollama: think needs a template that thinks */
        if (r.think_soft) { /* ...except where the API asks "if you can" (Anthropic, Responses) */
            r.think = -1;
            loom_free(r.think_level);
            r.think_level = NULL;
        } else {
            srv_err_set(&e, 400, "\"%s\" does not support thinking", r.model);
            goto error;
        }
    }
    int n_ctx = srv_engine_n_ctx(in->eng);
    int n_msgs = 0;
    if (!srv_render_prompt(in->render, &r, tmpl, in->info.system, 0, &toks, &n_toks, &n_msgs, &e)) goto error;
    if (n_toks > n_ctx) {
        bool trunc = r.truncate;
        if (trunc && chat) {
            /* drop the oldest messages (system messages and the last one stay) */
            for (int drop = 1; n_toks > n_ctx && drop < n_msgs; drop++) {
                loom_free(toks);
                toks = NULL;
                if (!srv_render_prompt(in->render, &r, tmpl, in->info.system, drop, &toks, &n_toks, NULL, &e))
                    goto error;
            }
        } else if (trunc) { /* keep the first num_keep tokens and the most recent rest */
            int keep = o.num_keep < 0 ? 0 : o.num_keep > n_ctx / 2 ? n_ctx / 2 : o.num_keep;
            int tail = n_ctx - keep;
            memmove(toks + keep, toks + n_toks - tail, (size_t)tail * sizeof *toks);
            n_toks = n_ctx;
        }
        if (n_toks > n_ctx) {
            srv_err_set(&e, 400, "the prompt has %d tokens, more than the context window (num_ctx = %d); shorten it, "
                        "raise num_ctx, or send \"truncate\": true", n_toks, n_ctx);
            e.code = "context_length_exceeded"; /* OpenAI's code, which clients test to trim a history */
            e.param = api == SRV_API_OAI_COMPLETE ? "prompt" : api == SRV_API_OAI_RESPONSES ? "input" : "messages";
            goto error;
        }
    }
    if (api == SRV_API_ANTHROPIC_COUNT) { /* /v1/messages/count_tokens: the prompt's size, nothing generated */
        srv_buf_clear(&out->body);
        srv_buf_printf(&out->body, "{\"input_tokens\":%d}\n", n_toks);
        out->status = 200;
        out->content_type = "application/json; charset=utf-8";
        out->prompt_tokens = n_toks;
        goto done;
    }

    /* tool calls and thinking: the chat output parser, for templates whose syntax has them */
    loom_chat_syntax syn = loom_chat_detect(tmpl && !srv_is_go_template(tmpl) ? tmpl : NULL,
                                            tmpl && !srv_is_go_template(tmpl) ? strlen(tmpl) : 0);
    bool use_co = (chat || (api == SRV_API_GENERATE && !r.raw)) && srv_chatout_wanted(&syn, tools_on);
    char tail[4096];
    size_t tail_len = 0;
    /* the prompt's end as text: does the answer start inside a thinking block? (fewer
     * tokens when their text does not fit) */
    for (int k = 64; use_co && k >= 4; k /= 2) {
        int from = n_toks > k ? n_toks - k : 0;
        if (loom_detokenize(in->tok, toks + from, n_toks - from, LOOM_DETOK_SPECIAL | LOOM_DETOK_NO_STRIP, tail,
                            sizeof tail, &tail_len) == LOOM_OK)
            break;
        tail_len = 0;
    }
    /* forced calls: a grammar of the family's call syntax and the tools' schemas */
    const loom_grammar_vocab *gvocab = NULL;
    if (tools_on && (r.tool_choice == SRV_TOOL_CHOICE_REQUIRED || r.tool_choice == SRV_TOOL_CHOICE_FUNCTION)) {
        srv_buf gb = {0};
        srv_err te = {0};
        bool in_think = srv_prompt_in_thinking(&syn, tail, tail_len);
        if (srv_tool_gbnf(&syn, tmpl, r.tools, r.tool_choice_name, r.parallel_tool_calls, in_think, in->tok, &gb, &te)) {
            loom_error gerr = {0};
            loom_status gs = loom_grammar_new(gb.data, gb.len, SRV_TOOL_ROOT, in->tok, &grammar, &gerr);
            srv_buf_free(&gb);
            if (gs) {
                srv_err_set(&e, gs == LOOM_ERR_NOMEM ? 500 : 400, "tool_choice: %s", gerr.msg);
                goto error;
            }
            if (!(gvocab = srv_inst_grammar_vocab(in, &e))) goto error;
        } else {
            srv_buf_free(&gb);
            if (te.status) {
                e = te;
                goto error;
            }
            /* a syntax Loom does not force (docs/server.md): the model decides, as "auto" */
        }
    }
    /* structured output: Ollama's format ("json" or a JSON schema), OpenAI's response_format
     * (forced tool calls take precedence) */
    if (r.format && !grammar) {
        loom_error gerr = {0};
        loom_status gs;
        if (json_is_string(r.format)) {
            gs = loom_grammar_new_json_object(&grammar, &gerr);
        } else {
            char *schema = json_dumps(r.format, JSON_COMPACT);
            gs = schema ? loom_grammar_new_json_schema(schema, strlen(schema), &grammar, &gerr) : LOOM_ERR_NOMEM;
            free(schema);
        }
        if (gs) {
            srv_err_set(&e, gs == LOOM_ERR_NOMEM ? 500 : 400, "invalid format: %s", gerr.msg[0] ? gerr.msg : "out of memory");
            goto error;
        }
        if (!(gvocab = srv_inst_grammar_vocab(in, &e))) goto error;
    }

    /* the task */
    t = srv_task_new();
    if (!t) {
        srv_err_set(&e, 500, "out of memory");
        goto error;
    }
    t->prompt = toks;
    t->n_prompt = n_toks;
    toks = NULL;
    t->sp = loom_sampler_default_params();
    t->sp.temperature = o.temperature;
    t->sp.top_k = o.top_k;
    t->sp.top_p = o.top_p;
    t->sp.min_p = o.min_p;
    t->sp.repeat_penalty = o.repeat_penalty;
    t->sp.presence_penalty = o.presence_penalty;
    t->sp.freq_penalty = o.frequency_penalty;
    t->sp.penalty_last_n = o.repeat_last_n < 0 ? n_ctx : o.repeat_last_n;
    t->sp.seed = o.seed >= 0 ? (uint64_t)o.seed : srv_engine_random_seed();
    t->num_predict = o.num_predict == -2 ? n_ctx - t->n_prompt : o.num_predict;
    t->num_keep = o.num_keep;
    t->shift = true;
    t->keep_tokens = api == SRV_API_GENERATE;
    t->grammar = grammar;
    t->gvocab = gvocab;
    grammar = NULL; /* the task owns it */
    t->render_special = use_co; /* the parser reads the syntax's control tokens */
    for (int i = 0, nv = srv_engine_n_vocab(in->eng); i < r.n_bias; i++) {
        if (r.bias_ids[i] >= nv) {
            srv_err_set(&e, 400, "\"logit_bias\": token id %d is out of range (the vocabulary has %d tokens)",
                        (int)r.bias_ids[i], nv);
            goto error;
        }
    }
    t->logprobs = r.logprobs;
    t->bias_ids = r.bias_ids, r.bias_ids = NULL;
    t->bias_vals = r.bias_vals, r.bias_vals = NULL;
    t->n_bias = r.n_bias;
    if (o.n_stop) {
        t->stop = loom_calloc((size_t)o.n_stop, sizeof *t->stop);
        if (!t->stop) {
            srv_err_set(&e, 500, "out of memory");
            goto error;
        }
        for (int i = 0; i < o.n_stop; i++) {
            if (!(t->stop[i] = loom_strdup(o.stop[i]))) {
                srv_err_set(&e, 500, "out of memory");
                goto error;
            }
            t->n_stop = i + 1;
        }
    }
    out->prompt_tokens = t->n_prompt;
    int rc = srv_engine_submit(in->eng, t);
    if (rc) {
        srv_err_set(&e, 503, rc == -1 ? "server busy, please try again: maximum pending requests exceeded"
                                      : "the model is being unloaded; try again");
        goto error;
    }
    srv_stream *st = loom_calloc(1, sizeof *st);
    if (!st) {
        srv_engine_cancel(in->eng, t);
        srv_err_set(&e, 500, "out of memory");
        goto error;
    }
    st->s = s;
    st->inst = in;
    st->task = t;
    st->api = api;
    snprintf(st->model, sizeof st->model, "%s", r.model);
    st->stream = r.stream;
    st->t_start = t_start;
    st->load_ns = load_ns;
    st->ka_set = r.keep_alive_set;
    st->ka_ns = r.keep_alive_ns;
    st->status = 200;
    st->method = rq->method;
    st->path = rq->path;
    if (r.logprobs >= 0) {
        st->lp = json_array();
        st->lp_top = r.logprobs;
    }
    if (api == SRV_API_OAI_RESPONSES) srv_resp_init(&st->resp, st->model, r.resp_echo, srv_engine_random_seed());
    else if (api == SRV_API_ANTHROPIC) srv_anth_init(&st->anth, st->model, srv_engine_random_seed());
    else if (is_openai(api)) srv_oai_ctx_init(&st->oai, api, st->model, r.include_usage);
    if (use_co) {
        srv_chatout_params cp = {.syntax = syn, .prompt = tail, .prompt_len = tail_len, .parse_tools = tools_on,
                                 .hide_thinking = r.think == 0, .tools = r.tools, .id_seed = srv_engine_random_seed()};
        srv_err ce = {0};
        if (!srv_chatout_init(&st->co, &cp, &ce)) { /* out of memory: report it at the end */
            st->co_failed = true;
            snprintf(st->co_err, sizeof st->co_err, "%s", ce.msg);
        }
        st->use_co = true;
    }
    in = NULL; /* the stream releases it */
    t = NULL;  /* and owns the task reference */
    if (r.stream) {
        out->status = 200;
        out->content_type = is_openai(api) || api == SRV_API_ANTHROPIC ? "text/event-stream" : "application/x-ndjson";
        out->stream = st;
        goto done;
    }
    /* not streaming: wait for the whole answer */
    if (!wait_done(st, conn)) {
        out->status = 499;
        st->logged = true; /* the transport logs whole responses */
        srv_stream_close(st, true);
        goto done;
    }
    srv_buf_clear(&out->body);
    stream_pump(st, &out->body);
    if (st->status != 200) {
        srv_api_error(out, api, st->status, st->err);
    } else {
        out->status = 200;
        out->content_type = "application/json; charset=utf-8";
    }
    pthread_mutex_lock(&st->task->mu);
    out->eval_tokens = st->task->n_eval;
    pthread_mutex_unlock(&st->task->mu);
    st->logged = true; /* the transport logs whole responses */
    srv_stream_close(st, false);
    goto done;

error:
    srv_api_error_e(out, api, &e);
done:
    loom_grammar_free(grammar);
    if (t) srv_task_unref(t);
    if (in) srv_models_release(s->models, in, r.keep_alive_set, r.keep_alive_ns);
    loom_free(toks);
    srv_options_free(&o);
    srv_model_info_free(&info);
    srv_gen_req_free(&r);
}
