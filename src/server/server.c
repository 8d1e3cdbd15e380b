/*
 * server.c - the server object, routing, CORS, the request log, and the in-process
 * transport (loom_server_call).
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "quant/alloc.h"
#include "server/server_internal.h"

#define LOOM_SERVER_VERSION "0.12.0"      /* the Ollama API level this server speaks */
#define LOOM_SERVER_LOOM_VERSION "0.1.0"

loom_server_params loom_server_default_params(void) {
    loom_server_params p;
    memset(&p, 0, sizeof p);
    p.port = 11434;
    p.parallel = 4;
    p.max_queue = 512;
    p.keep_alive_ns = (int64_t)5 * 60 * 1000000000;
    p.max_loaded = 3;
    p.model = loom_model_default_params();
    /* Flash attention on (llama-server's "-fa auto" default on CPUs): every query row
     * then takes the same arithmetic whatever else is in the step, so a request gets
     * the same answer alone or batched with others (the plain path computes one-query
     * steps in a fused kernel and wider steps as matmul + softmax, which round
     * differently). Soft-capped scores (gemma2) and sinks (gpt-oss) are part of the
     * fused kernel too. */
    p.model.flash_attn = true;
    p.max_body = (size_t)32 << 20;
    p.max_json_depth = 64;
    p.timeout_s = 30;
    return p;
}

/* Ollama's default allowed origins: localhost / 127.0.0.1 / 0.0.0.0 (any port, http
 * and https) and the schemes of desktop and editor apps. */
static const char *const k_default_origins[] = {
    "http://localhost",   "https://localhost",   "http://localhost:*",   "https://localhost:*",
    "http://127.0.0.1",   "https://127.0.0.1",   "http://127.0.0.1:*",   "https://127.0.0.1:*",
    "http://0.0.0.0",     "https://0.0.0.0",     "http://0.0.0.0:*",     "https://0.0.0.0:*",
    "http://[::1]",       "https://[::1]",       "http://[::1]:*",       "https://[::1]:*",
    "app://*",            "file://*",            "tauri://*",            "vscode-webview://*",
    "vscode-file://*",    NULL};

static bool add_origin(loom_server *s, const char *o, size_t n) {
    while (n && (*o == ' ' || *o == '\t')) o++, n--;
    while (n && (o[n - 1] == ' ' || o[n - 1] == '\t')) n--;
    if (!n) return true;
    char **v = loom_realloc(s->origins, (size_t)(s->n_origins + 1) * sizeof *v);
    if (!v) return false;
    s->origins = v;
    char *c = loom_malloc(n + 1);
    if (!c) return false;
    memcpy(c, o, n);
    c[n] = 0;
    s->origins[s->n_origins++] = c;
    return true;
}

bool srv_origin_allowed(const loom_server *s, const char *origin) {
    if (!origin) return true;
    for (int i = 0; i < s->n_origins; i++)
        if (srv_glob_match(s->origins[i], origin)) return true;
    return false;
}

static char *home_path(const char *rel) {
    const char *h = getenv("HOME");
    if (!h || !*h) return NULL;
    size_t n = strlen(h) + strlen(rel) + 2;
    char *p = loom_malloc(n);
    if (p) snprintf(p, n, "%s/%s", h, rel);
    return p;
}

loom_status loom_server_new(const loom_server_params *pp, loom_server **out, loom_error *err) {
    *out = NULL;
    loom_server_params p = pp ? *pp : loom_server_default_params();
    if (p.port < 0 || p.port > 65535) return loom_error_set(err, LOOM_ERR_INVALID_ARG, "port %d is out of range", p.port);
    if (p.parallel <= 0) p.parallel = 4;
    if (p.parallel > 256) return loom_error_set(err, LOOM_ERR_INVALID_ARG, "--parallel %d: at most 256", p.parallel);
    if (p.max_queue <= 0) p.max_queue = 512;
    if (!p.max_body) p.max_body = (size_t)32 << 20;
    if (p.max_json_depth <= 0) p.max_json_depth = 64;
    if (p.timeout_s <= 0) p.timeout_s = 30;
    if (p.max_loaded <= 0) p.max_loaded = 3;
    json_set_alloc_funcs(loom_malloc, loom_free);
    loom_server *s = loom_calloc(1, sizeof *s);
    if (!s) return loom_error_set(err, LOOM_ERR_NOMEM, "out of memory");
    s->p = p;
    s->host = loom_strdup(p.host ? p.host : "127.0.0.1");
    s->models_dir = p.models_dir ? loom_strdup(p.models_dir) : home_path(".loom/models");
    if (p.ollama_dir) s->ollama_dir = *p.ollama_dir ? loom_strdup(p.ollama_dir) : NULL;
    else s->ollama_dir = home_path(".ollama/models");
    bool ok = s->host != NULL;
    for (int i = 0; ok && k_default_origins[i]; i++) ok = add_origin(s, k_default_origins[i], strlen(k_default_origins[i]));
    const char *extra = p.origins;
    for (const char *o = extra; ok && o && *o;) {
        const char *c = strchr(o, ',');
        size_t n = c ? (size_t)(c - o) : strlen(o);
        ok = add_origin(s, o, n);
        o = c ? c + 1 : o + n;
    }
    s->lim = srv_limits_default();
    s->lim.max_depth = p.max_json_depth;
    if (s->lim.max_string > p.max_body) s->lim.max_string = p.max_body;
    s->log = p.log ? p.log : stderr;
    pthread_mutex_init(&s->log_mu, NULL);
    s->started_ns = srv_now_ns();
    s->p.host = s->host;
    s->p.models_dir = s->models_dir;
    s->p.ollama_dir = s->ollama_dir;
    s->p.origins = NULL;
    if (ok) s->store = srv_store_new(s->models_dir, s->ollama_dir);
    if (ok && s->store) s->models = srv_models_new(s);
    if (ok) s->embeds = srv_embeds_new();
    if (!ok || !s->store || !s->models || !s->embeds) {
        loom_server_free(s);
        return loom_error_set(err, LOOM_ERR_NOMEM, "out of memory");
    }
    *out = s;
    return LOOM_OK;
}

loom_status loom_server_listen(loom_server *s, loom_error *err) { return srv_http_start(s, err); }

int loom_server_port(const loom_server *s) { return s ? s->port : 0; }

void loom_server_free(loom_server *s) {
    if (!s) return;
    srv_http_stop(s);
    srv_models_free(s->models);
    srv_embeds_free(s->embeds);
    srv_store_free(s->store);
    for (int i = 0; i < s->n_origins; i++) loom_free(s->origins[i]);
    loom_free(s->origins);
    loom_free(s->host);
    loom_free(s->models_dir);
    loom_free(s->ollama_dir);
    pthread_mutex_destroy(&s->log_mu);
    loom_free(s);
}

/* ------------------------------------------------------------------ log, metrics */

void srv_log_request(loom_server *s, const char *method, const char *path, int status, const char *model,
                     int prompt_tokens, int eval_tokens, int64_t dur_ns) {
    srv_metrics *m = &s->metrics;
    switch (status) {
    case 200: atomic_fetch_add(&m->req_200, 1); break;
    case 400: atomic_fetch_add(&m->req_400, 1); break;
    case 404: atomic_fetch_add(&m->req_404, 1); break;
    case 413: atomic_fetch_add(&m->req_413, 1); break;
    case 499: atomic_fetch_add(&m->req_499, 1); break;
    case 500: atomic_fetch_add(&m->req_500, 1); break;
    case 503: atomic_fetch_add(&m->req_503, 1); break;
    default: atomic_fetch_add(&m->req_other, 1); break;
    }
    if (s->p.quiet) return;
    char ts[40];
    int64_t now = srv_now_ns();
    time_t sec = (time_t)(now / 1000000000);
    struct tm tm;
    localtime_r(&sec, &tm);
    size_t tl = strftime(ts, sizeof ts, "%Y-%m-%d %H:%M:%S", &tm);
    snprintf(ts + tl, sizeof ts - tl, ".%03d", (int)(now / 1000000 % 1000));
    pthread_mutex_lock(&s->log_mu);
    fprintf(s->log, "[loom] %s | %3d | %10.3f ms | %-6s %s", ts, status, (double)dur_ns / 1e6, method, path);
    if (model && *model) fprintf(s->log, " | model=%s", model);
    if (prompt_tokens || eval_tokens) fprintf(s->log, " prompt=%d eval=%d", prompt_tokens, eval_tokens);
    fputc('\n', s->log);
    fflush(s->log);
    pthread_mutex_unlock(&s->log_mu);
}

/* ------------------------------------------------------------------ routing */

void srv_response_free(srv_response *r) {
    srv_buf_free(&r->body);
    if (r->stream) srv_stream_close(r->stream, false);
    r->stream = NULL;
}

static void text(srv_response *out, int status, const char *t) {
    srv_buf_clear(&out->body);
    srv_buf_puts(&out->body, t);
    out->status = status;
    out->content_type = "text/plain; charset=utf-8";
}

/* OpenAI's paths answer errors in OpenAI's shape ({"error": {"message", "type", ...}}),
 * which the openai SDKs parse into their error classes; Ollama's paths as Ollama does. */
static bool oai_path(const char *p) { return !strncmp(p, "/v1/", 4); }

static void method_not_allowed(srv_response *out, const char *path, const char *allow) {
    if (oai_path(path)) srv_api_error(out, SRV_API_OAI_CHAT, 405, "method not allowed");
    else srv_respond_json(out, 405, json_pack("{s:s}", "error", "method not allowed"));
    out->allow = allow;
}

#define IS(m) (!strcmp(rq->method, m))

void srv_handle(loom_server *s, const srv_request *rq, const srv_conn *conn, srv_response *out) {
    memset(out, 0, sizeof *out);
    out->status = 500;
    const char *p = rq->path;
    bool get = IS("GET") || IS("HEAD");
    if (rq->origin && !srv_origin_allowed(s, rq->origin)) {
        srv_respond_json(out, 403, json_pack("{s:s}", "error", "origin not allowed (set LOOM_ORIGINS)"));
        return;
    }
    if (IS("OPTIONS")) { /* CORS preflight */
        out->status = 204;
        out->cors_preflight = true;
        return;
    }
    if (!strcmp(p, "/")) {
        if (get) text(out, 200, "Ollama is running");
        else method_not_allowed(out, p, "GET, HEAD");
        return;
    }
    if (!strcmp(p, "/api/version")) {
        if (get) srv_respond_json(out, 200, json_pack("{s:s,s:s}", "version", LOOM_SERVER_VERSION, "loom", LOOM_SERVER_LOOM_VERSION));
        else method_not_allowed(out, p, "GET, HEAD");
        return;
    }
    if (!strcmp(p, "/api/tags")) {
        if (get) srv_api_tags(s, out, false);
        else method_not_allowed(out, p, "GET, HEAD");
        return;
    }
    if (!strcmp(p, "/v1/models")) {
        if (get) srv_api_tags(s, out, true);
        else method_not_allowed(out, p, "GET, HEAD");
        return;
    }
    if (!strncmp(p, "/v1/models/", 11) && p[11]) {
        if (get) srv_api_model_get(s, p + 11, out);
        else method_not_allowed(out, p, "GET, HEAD");
        return;
    }
    if (!strcmp(p, "/api/ps")) {
        if (get) srv_api_ps(s, out);
        else method_not_allowed(out, p, "GET, HEAD");
        return;
    }
    if (!strcmp(p, "/health")) {
        if (get) srv_api_health(s, out);
        else method_not_allowed(out, p, "GET, HEAD");
        return;
    }
    if (!strcmp(p, "/metrics")) {
        if (get) srv_api_metrics(s, out);
        else method_not_allowed(out, p, "GET, HEAD");
        return;
    }
    static const struct {
        const char *path;
        srv_api api;
    } gen[] = {{"/api/generate", SRV_API_GENERATE},
               {"/api/chat", SRV_API_CHAT},
               {"/v1/chat/completions", SRV_API_OAI_CHAT},
               {"/v1/completions", SRV_API_OAI_COMPLETE},
               {"/v1/responses", SRV_API_OAI_RESPONSES},
               {"/v1/messages", SRV_API_ANTHROPIC},
               {"/v1/messages/count_tokens", SRV_API_ANTHROPIC_COUNT}};
    for (size_t i = 0; i < sizeof gen / sizeof gen[0]; i++) {
        if (strcmp(p, gen[i].path)) continue;
        if (IS("POST")) srv_api_generate(s, gen[i].api, rq, conn, out);
        else method_not_allowed(out, p, "POST");
        return;
    }
    if (!strcmp(p, "/api/show")) {
        if (IS("POST") || IS("GET")) srv_api_show(s, rq, out);
        else method_not_allowed(out, p, "POST");
        return;
    }
    static const struct {
        const char *path, *method, *op;
    } ops[] = {{"/api/delete", "DELETE", "delete"},     {"/api/copy", "POST", "copy"},
               {"/api/create", "POST", "create"},       {"/api/pull", "POST", "pull"},
               {"/api/push", "POST", "push"}};
    if (!strcmp(p, "/api/embed") || !strcmp(p, "/api/embeddings") || !strcmp(p, "/v1/embeddings")) {
        if (IS("POST")) srv_api_embed(s, rq, out);
        else method_not_allowed(out, p, "POST");
        return;
    }
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) {
        if (strcmp(p, ops[i].path)) continue;
        if (IS(ops[i].method)) srv_api_store_op(s, rq, ops[i].op, out);
        else method_not_allowed(out, p, ops[i].method);
        return;
    }
    if (oai_path(p)) {
        char msg[400];
        snprintf(msg, sizeof msg, "unknown endpoint %s %.200s (served: /v1/chat/completions, /v1/completions, "
                 "/v1/responses, /v1/messages, /v1/embeddings, /v1/models)", rq->method, p);
        srv_api_error(out, SRV_API_OAI_CHAT, 404, msg);
        return;
    }
    text(out, 404, "404 page not found");
}

/* ------------------------------------------------------------------ in-process */

loom_status loom_server_call(loom_server *s, const char *method, const char *path, const char *body, size_t body_len,
                             int *status, loom_server_write_cb write, loom_server_stop_cb stop, void *user) {
    int64_t t0 = srv_mono_ns();
    srv_request rq = {.method = method, .path = path, .body = body ? body : "", .body_len = body ? body_len : 0};
    srv_conn conn = {.fd = -1, .stop = stop, .user = user};
    srv_response out;
    atomic_fetch_add(&s->metrics.in_flight, 1);
    srv_handle(s, &rq, &conn, &out);
    if (status) *status = out.status;
    loom_status rc = LOOM_OK;
    if (out.stream) {
        srv_buf chunk = {0};
        for (;;) {
            srv_buf_clear(&chunk);
            int r = srv_stream_next(out.stream, &chunk);
            if (chunk.len && write && !write(chunk.data, chunk.len, user)) {
                rc = LOOM_ERR_CANCELLED;
                break;
            }
            if (r == 0) break;
            if (!chunk.len) {
                struct pollfd pf = {.fd = srv_stream_fd(out.stream), .events = POLLIN};
                if (poll(&pf, 1, 50) > 0) {
                    uint64_t v;
                    ssize_t rr = read(pf.fd, &v, sizeof v);
                    (void)rr;
                }
            }
            if (stop && stop(user)) {
                rc = LOOM_ERR_CANCELLED;
                break;
            }
        }
        srv_buf_free(&chunk);
        srv_stream_close(out.stream, rc != LOOM_OK);
        out.stream = NULL;
    } else {
        if (out.status == 499) rc = LOOM_ERR_CANCELLED;
        else if (write && out.body.len && !write(out.body.data, out.body.len, user)) rc = LOOM_ERR_CANCELLED;
        srv_log_request(s, method, path, out.status, out.model, out.prompt_tokens, out.eval_tokens, srv_mono_ns() - t0);
    }
    atomic_fetch_sub(&s->metrics.in_flight, 1);
    srv_response_free(&out);
    return rc;
}
