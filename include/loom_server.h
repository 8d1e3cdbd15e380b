/*
 * loom_server.h - `loom serve` as a library: the Ollama and OpenAI HTTP APIs over
 * Loom models, with one engine loop per loaded model batching every active request,
 * and an in-process entry point (`loom chat` uses it) that answers the same
 * requests without HTTP.
 *
 * Example:
 *     loom_server_params p = loom_server_default_params();
 *     p.port = 0;                                  // any free port
 *     loom_server *s; loom_error err = {0};
 *     if (loom_server_new(&p, &s, &err) || loom_server_listen(s, &err)) { ... err.msg ... }
 *     printf("listening on port %d\n", loom_server_port(s));
 *     ...
 *     loom_server_free(s);                         // stops listening, unloads models
 *
 * Endpoints (docs/server.md has the details): GET|HEAD /, GET /api/version,
 * GET /api/tags, POST /api/show, GET /api/ps, POST /api/generate, POST /api/chat,
 * POST /api/embed and /api/embeddings, DELETE /api/delete, POST /api/copy,
 * POST /api/create, POST /api/pull and /api/push (refused: no registry),
 * POST /v1/chat/completions, POST /v1/completions, GET /v1/models,
 * GET /v1/models/{model}, POST /v1/embeddings, GET /health, GET /metrics.
 *
 * Threading: every function may be called from any thread; a server's requests
 * run concurrently (one thread per connection, one engine thread per model).
 */
#ifndef LOOM_SERVER_H
#define LOOM_SERVER_H

#include <stdio.h>

#include "loom_model.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct loom_server loom_server;

typedef struct loom_server_params {
    const char *host;           /* address to bind; NULL = "127.0.0.1" */
    int port;                   /* 11434 by default; 0 = any free port */
    const char *models_dir;     /* Loom's store; NULL = ~/.loom/models (the CLI maps LOOM_MODELS) */
    const char *ollama_dir;     /* Ollama's store (read-only); NULL = ~/.ollama/models (the CLI
                                   maps OLLAMA_MODELS); "" = none */
    int parallel;               /* slots per loaded model (default 4) */
    int max_queue;              /* requests waiting per model beyond the slots (default 512) */
    int n_ctx;                  /* default context per slot (num_ctx); 0 = 4096, capped at the
                                   model's training context unless a request asks for more */
    int64_t keep_alive_ns;      /* default keep_alive: 5 minutes; < 0 = forever */
    int max_loaded;             /* models loaded at once (default 3) */
    uint64_t max_memory;        /* bytes the loaded models' plans may total; 0 = 90% of RAM */
    loom_model_params model;    /* threads, devices, flash attention (default on: a request's
                                   answer does not depend on what it is batched with),
                                   cache type ... (path and
                                   n_ctx are set per model); what its pointers point to
                                   (sim_devices, tensor_split, vk_devices) must outlive the
                                   server; model.progress, when set, sees every load (from
                                   loader threads) */
    const char *origins;        /* extra CORS origins, comma-separated, '*' a wildcard ("*" =
                                   any); the CLI maps LOOM_ORIGINS. localhost origins are
                                   always allowed */
    size_t max_body;            /* request body limit in bytes (default 32 MiB): 413 beyond */
    int max_json_depth;         /* JSON nesting limit (default 64) */
    int timeout_s;              /* idle connection timeout (default 30 s); a request body must
                                   arrive within 4x this */
    FILE *log;                  /* one line per request; NULL = stderr */
    bool quiet;                 /* no request log */
} loom_server_params;

loom_server_params loom_server_default_params(void);

/* Create a server (store, model manager); nothing listens yet and no model is
 * loaded. Fails with LOOM_ERR_INVALID_ARG on bad parameters, LOOM_ERR_NOMEM. */
loom_status loom_server_new(const loom_server_params *p, loom_server **out, loom_error *err);
/* Bind and start serving HTTP in background threads. LOOM_ERR_IO when the address
 * cannot be bound (the message names it). */
loom_status loom_server_listen(loom_server *s, loom_error *err);
/* The bound port (after listen), else 0. */
int loom_server_port(const loom_server *s);
/* Stop listening (finishing running requests with an error), unload every model,
 * free. NULL is a no-op. */
void loom_server_free(loom_server *s);

/* Called with each piece of a response body as the engine produces it (a line of
 * NDJSON, an SSE event, or a whole JSON body). Return false to stop (the request is
 * cancelled). */
typedef bool (*loom_server_write_cb)(const char *data, size_t len, void *user);
/* Polled about every 50 ms while a request runs; return true to cancel it (e.g. on
 * Ctrl-C). May be NULL. */
typedef bool (*loom_server_stop_cb)(void *user);

/* Answer one API request in-process, exactly as HTTP would (same routes, bodies
 * and status codes): method ("GET", "POST" ...), path ("/api/chat"), body (JSON,
 * may be NULL). *status receives the HTTP status. Returns LOOM_OK when a response
 * was delivered (whatever its status), LOOM_ERR_CANCELLED when stop/write ended it. */
loom_status loom_server_call(loom_server *s, const char *method, const char *path, const char *body,
                             size_t body_len, int *status, loom_server_write_cb write, loom_server_stop_cb stop,
                             void *user);

#ifdef __cplusplus
}
#endif
#endif /* LOOM_SERVER_H */
