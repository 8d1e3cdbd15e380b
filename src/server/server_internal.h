/*
 * server_internal.h (internal) - the server object, the model manager and the
 * transport-independent request handler shared by http.c (libmicrohttpd) and
 * loom_server_call (in-process).
 */
#ifndef LOOM_SERVER_INTERNAL_H
#define LOOM_SERVER_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>

#include "loom_server.h"
#include "server/engine.h"
#include "server/render.h"
#include "server/request.h"
#include "server/response.h"
#include "server/store.h"

/* ------------------------------------------------------------------ model manager */

/* Options fixed when a model is loaded: a request asking for others reloads it. */
typedef struct srv_load_opts {
    int n_ctx;      /* per slot */
    int n_batch;
    int n_gpu;      /* -1 = the server's --gpu-layers */
    int n_thread;   /* 0 = the server's -t */
    bool mmap;
} srv_load_opts;

typedef struct srv_inst srv_inst;
struct srv_inst {
    srv_model_info info;
    srv_load_opts lo;
    srv_engine *eng;
    loom_model *model;          /* owned by eng (through its srv_llm) */
    const loom_tokenizer *tok;
    srv_render *render;
    pthread_mutex_t gv_mu;
    loom_grammar_vocab *gvocab; /* structured output: built on the first request that needs it */
    int n_ctx_train;
    srv_plan plan;              /* dry-run memory plan, per device */
    uint64_t mem, mem_accel;    /* its total, and the part on accelerators */
    int refs;                   /* requests using it */
    bool ready, failed;
    loom_status fail_status;
    char fail_msg[512];
    int64_t keep_alive_ns;      /* of the latest request; < 0 forever */
    int64_t expires_mono;       /* INT64_MAX = never */
    int64_t load_ns;
    srv_inst *next;
};

typedef struct srv_models srv_models;

srv_models *srv_models_new(loom_server *s);
void srv_models_free(srv_models *m);
/* Get a loaded instance of info's model with load options lo (loading it, evicting
 * idle models by LRU when the memory plans or --max-loaded require, or reloading it
 * when lo differs). *load_ns receives the time this call spent loading. The
 * instance stays loaded until srv_models_release. e: 404/500/503. */
srv_inst *srv_models_acquire(srv_models *m, const srv_model_info *info, const srv_load_opts *lo, int64_t *load_ns,
                             srv_err *e);
/* Done with it. keep_alive (when set) becomes the instance's; 0 unloads it now if
 * no other request uses it. */
void srv_models_release(srv_models *m, srv_inst *inst, bool keep_alive_set, int64_t keep_alive_ns);
/* The model's grammar vocabulary (built once, on the first call; thread-safe), or
 * NULL with e set. */
const loom_grammar_vocab *srv_inst_grammar_vocab(srv_inst *in, srv_err *e);
/* Unload the model now if it is loaded and idle (keep_alive 0 without a prompt);
 * else it unloads when its last request ends. */
void srv_models_unload(srv_models *m, const char *name);
/* Number of models being loaded right now (/health answers 503 while > 0). */
int srv_models_loading(srv_models *m);

typedef struct srv_ps_entry {
    srv_model_info info;
    uint64_t mem, mem_accel;
    int64_t expires_ns;         /* wall clock; INT64_MAX = never */
    int n_ctx, n_slots;
    srv_engine_stats st;
} srv_ps_entry;
/* Snapshot of the loaded models (free with srv_ps_free). */
bool srv_models_ps(srv_models *m, srv_ps_entry **out, int *n);
void srv_ps_free(srv_ps_entry *v, int n);

/* ------------------------------------------------------------------ server */

typedef struct srv_metrics {
    atomic_ullong req_by_class[6];  /* 1xx..5xx by hundreds (index status/100) */
    atomic_ullong req_200, req_400, req_404, req_413, req_499, req_500, req_503, req_other;
    atomic_ullong tokens_prompt, tokens_gen;
    atomic_ullong loads, load_ns_total;
    atomic_llong in_flight;
} srv_metrics;

struct loom_server {
    loom_server_params p;
    char *host, *models_dir, *ollama_dir, *origins_env;
    char **origins;             /* allowed CORS origin patterns */
    int n_origins;
    srv_limits lim;
    srv_store *store;
    srv_models *models;
    srv_metrics metrics;
    void *mhd;                  /* struct MHD_Daemon */
    int port;
    FILE *log;
    pthread_mutex_t log_mu;
    int64_t started_ns;
    struct srv_embeds *embeds;  /* open embedding models (api_embed.c) */
};

/* ------------------------------------------------------------------ request handling */

typedef struct srv_request {
    const char *method;
    const char *path;           /* without the query */
    const char *body;
    size_t body_len;
    const char *origin;         /* Origin header or NULL */
} srv_request;

/* How a blocking handler notices that the client left. */
typedef struct srv_conn {
    int fd;                     /* the client's socket (poll POLLRDHUP), or -1 */
    loom_server_stop_cb stop;   /* polled every 50 ms, or NULL */
    void *user;
} srv_conn;

typedef struct srv_stream srv_stream;

typedef struct srv_response {
    int status;
    const char *content_type;
    srv_buf body;
    srv_stream *stream;         /* a streaming body (status 200); NULL = body */
    const char *allow;          /* 405: the Allow header */
    bool cors_preflight;
    /* for the request log */
    char model[160];
    int prompt_tokens, eval_tokens;
} srv_response;

/* Route and answer a request. Non-streaming generations block until done (or the
 * client leaves). */
void srv_handle(loom_server *s, const srv_request *rq, const srv_conn *conn, srv_response *out);
void srv_response_free(srv_response *r);

/* A streaming body: srv_stream_next appends what is ready to out and returns 1, or
 * returns 0 at the end (nothing more will come). Wait on srv_stream_fd (POLLIN)
 * when it appended nothing. srv_stream_close cancels an unfinished generation and
 * frees everything (also writes the request log line). */
int srv_stream_next(srv_stream *st, srv_buf *out);
int srv_stream_fd(const srv_stream *st);
void srv_stream_close(srv_stream *st, bool client_gone);

/* CORS: whether origin is allowed. */
bool srv_origin_allowed(const loom_server *s, const char *origin);
/* Request log line + metrics; dur_ns from the request's start. */
void srv_log_request(loom_server *s, const char *method, const char *path, int status, const char *model,
                     int prompt_tokens, int eval_tokens, int64_t dur_ns);

/* HTTP transport (http.c). */
loom_status srv_http_start(loom_server *s, loom_error *err);
void srv_http_stop(loom_server *s);

/* Handlers (api_*.c). */
void srv_api_generate(loom_server *s, srv_api api, const srv_request *rq, const srv_conn *conn, srv_response *out);
void srv_api_error(srv_response *out, srv_api api, int status, const char *msg);
/* e's status (500 when unset), message, and for OpenAI its code and param. */
void srv_api_error_e(srv_response *out, srv_api api, const srv_err *e);
void srv_api_tags(loom_server *s, srv_response *out, bool openai);
void srv_api_show(loom_server *s, const srv_request *rq, srv_response *out);
void srv_api_ps(loom_server *s, srv_response *out);
void srv_api_model_get(loom_server *s, const char *name, srv_response *out);
void srv_api_store_op(loom_server *s, const srv_request *rq, const char *op, srv_response *out);
void srv_api_metrics(loom_server *s, srv_response *out);
void srv_api_health(loom_server *s, srv_response *out);

/* Embedding models (api_embed.c): their cache, the endpoints, and whether a GGUF is one. */
typedef struct srv_embeds srv_embeds;
srv_embeds *srv_embeds_new(void);
void srv_embeds_free(srv_embeds *m);
void srv_api_embed(loom_server *s, const srv_request *rq, srv_response *out);
bool srv_gguf_is_embedding(const char *path);

/* Text of a JSON body response. */
void srv_respond_json(srv_response *out, int status, json_t *j);

#endif
