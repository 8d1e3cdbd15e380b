/*
 * api_embed.c - POST /api/embed, /api/embeddings (legacy) and /v1/embeddings on
 * embedding models (loom_embed.h: bert, nomic-bert(-moe), gemma-embedding, and decoders
 * with a pooling type such as Qwen3-Embedding).
 *
 *   /api/embed       {"model", "input": "text" | ["text", ...], "truncate" (default
 *                    true), "dimensions", "options": {"num_ctx"}} ->
 *                    {"model", "embeddings": [[...], ...], "total_duration",
 *                    "load_duration", "prompt_eval_count"}; unit-norm vectors
 *                    (dimensions: the first N components, normalized again). No
 *                    input (or an empty one) loads the model and answers [].
 *   /api/embeddings  {"model", "prompt"} -> {"embedding": [...]}, the raw pooled
 *                    vector (not normalized), as Ollama's legacy endpoint.
 *   /v1/embeddings   {"model", "input": "text" | ["text", ...] | [id, ...] |
 *                    [[id, ...], ...], "encoding_format": "float" | "base64",
 *                    "dimensions"} -> {"object": "list", "data": [{"object":
 *                    "embedding", "embedding", "index"}], "model", "usage":
 *                    {"prompt_tokens", "total_tokens"}}; token arrays are used as
 *                    given (no [CLS]/[SEP] added).
 * An input longer than the context is cut (truncate true, the default) or a 400.
 * A model that is not an embedding model is a 400 ("does not support embeddings").
 *
 * Embedding models are kept open by a small cache of their own (the last
 * SRV_EMBED_SLOTS models, least recently used goes), outside the generative
 * model manager; requests on them are served one at a time.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "loom_embed.h"
#include "quant/alloc.h"
#include "server/server_internal.h"

#define SRV_EMBED_SLOTS 2

struct srv_embeds {
    pthread_mutex_t mu;
    struct {
        char *path;
        int n_ctx;          /* as asked (0 = the model's) */
        loom_embedder *e;
        int64_t used;
    } slot[SRV_EMBED_SLOTS];
};

srv_embeds *srv_embeds_new(void) {
    srv_embeds *m = loom_calloc(1, sizeof *m);
    if (m) pthread_mutex_init(&m->mu, NULL);
    return m;
}

void srv_embeds_free(srv_embeds *m) {
    if (!m) return;
    for (int i = 0; i < SRV_EMBED_SLOTS; i++) {
        loom_embed_close(m->slot[i].e);
        loom_free(m->slot[i].path);
    }
    pthread_mutex_destroy(&m->mu);
    loom_free(m);
}

bool srv_gguf_is_embedding(const char *path) {
    loom_gguf *g = NULL;
    if (!path || loom_gguf_open(path, NULL, &g, NULL)) return false;
    bool yes = loom_embed_gguf_supported(g);
    loom_gguf_close(g);
    return yes;
}

/* The open embedder of path with n_ctx (loading it, evicting the least recently used
 * slot). Called with m->mu held. */
static loom_embedder *embeds_get(loom_server *s, srv_embeds *m, const char *path, int n_ctx, int64_t *load_ns,
                                 srv_err *e) {
    int victim = 0;
    for (int i = 0; i < SRV_EMBED_SLOTS; i++) {
        if (m->slot[i].e && !strcmp(m->slot[i].path, path) && m->slot[i].n_ctx == n_ctx) {
            m->slot[i].used = srv_mono_ns();
            return m->slot[i].e;
        }
        if (!m->slot[i].e || (m->slot[victim].e && m->slot[i].used < m->slot[victim].used)) victim = i;
    }
    loom_embed_close(m->slot[victim].e);
    loom_free(m->slot[victim].path);
    m->slot[victim].e = NULL;
    m->slot[victim].path = loom_strdup(path);
    if (!m->slot[victim].path) {
        srv_err_set(e, 500, "out of memory");
        return NULL;
    }
    int64_t t0 = srv_mono_ns();
    loom_embed_params p = loom_embed_default_params();
    p.path = path;
    p.n_ctx = n_ctx;
    p.n_threads = s->p.model.n_threads;
    p.no_mmap = s->p.model.no_mmap;
    p.flash_attn = s->p.model.flash_attn; /* as `loom embed` and the chat models: on unless --no-flash-attn */
    loom_error err = {0};
    loom_status st = loom_embed_open(&p, &m->slot[victim].e, &err);
    *load_ns = srv_mono_ns() - t0;
    if (st) {
        srv_err_set(e, st == LOOM_ERR_INVALID_ARG ? 400 : 500, "loading the embedding model failed: %s", err.msg);
        loom_free(m->slot[victim].path);
        m->slot[victim].path = NULL;
        return NULL;
    }
    m->slot[victim].n_ctx = n_ctx;
    m->slot[victim].used = srv_mono_ns();
    return m->slot[victim].e;
}

typedef enum { EMB_OLLAMA = 0, EMB_LEGACY = 1, EMB_OPENAI = 2 } emb_kind;

/* One input: text, or token ids (OpenAI). */
typedef struct emb_input {
    const char *text;
    size_t len;
    const json_t *ids;      /* array of integers, or NULL */
} emb_input;

static bool collect_inputs(emb_kind k, const json_t *b, emb_input **out, int *n, srv_err *e) {
    *out = NULL;
    *n = 0;
    const json_t *in = json_object_get(b, k == EMB_LEGACY ? "prompt" : "input");
    if (!in || json_is_null(in)) {
        if (k == EMB_OPENAI) {
            srv_err_set(e, 400, "\"input\" is required");
            return false;
        }
        return true;
    }
    size_t cnt = json_is_array(in) ? json_array_size(in) : 1;
    emb_input *v = loom_calloc(cnt ? cnt : 1, sizeof *v);
    if (!v) {
        srv_err_set(e, 500, "out of memory");
        return false;
    }
    int m = 0;
    if (json_is_string(in)) {
        if (json_string_length(in)) v[m++] = (emb_input){json_string_value(in), json_string_length(in), NULL};
        else if (k == EMB_OPENAI) {
            loom_free(v);
            srv_err_set(e, 400, "\"input\" must not be empty");
            return false;
        }
    } else if (json_is_array(in) && k != EMB_LEGACY) {
        bool ints = cnt > 0 && json_is_integer(json_array_get(in, 0));
        if (ints) {
            if (k != EMB_OPENAI) {
                loom_free(v);
                srv_err_set(e, 400, "\"input\" must be a string or a list of strings");
                return false;
            }
            v[m++] = (emb_input){NULL, 0, in};
        } else {
            for (size_t i = 0; i < cnt; i++) {
                const json_t *x = json_array_get(in, i);
                if (json_is_string(x) && json_string_length(x))
                    v[m++] = (emb_input){json_string_value(x), json_string_length(x), NULL};
                else if (k == EMB_OPENAI && json_is_array(x) && json_array_size(x) > 0)
                    v[m++] = (emb_input){NULL, 0, x};
                else {
                    loom_free(v);
                    srv_err_set(e, 400, "\"input\"[%zu] must be a non-empty %s", i,
                                k == EMB_OPENAI ? "string or list of token ids" : "string");
                    return false;
                }
            }
        }
    } else {
        loom_free(v);
        srv_err_set(e, 400, "\"%s\" must be a string%s", k == EMB_LEGACY ? "prompt" : "input",
                    k == EMB_LEGACY ? "" : " or a list");
        return false;
    }
    *out = v;
    *n = m;
    return true;
}

static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

static json_t *base64_floats(const float *x, int n) {
    size_t nb = (size_t)n * 4, outn = (nb + 2) / 3 * 4;
    char *o = loom_malloc(outn + 1);
    if (!o) return NULL;
    const unsigned char *p = (const unsigned char *)x; /* little-endian hosts only (x86-64, aarch64) */
    size_t j = 0;
    for (size_t i = 0; i < nb; i += 3) {
        uint32_t v = (uint32_t)p[i] << 16 | (i + 1 < nb ? (uint32_t)p[i + 1] << 8 : 0) | (i + 2 < nb ? p[i + 2] : 0);
        o[j++] = b64[v >> 18 & 63];
        o[j++] = b64[v >> 12 & 63];
        o[j++] = i + 1 < nb ? b64[v >> 6 & 63] : '=';
        o[j++] = i + 2 < nb ? b64[v & 63] : '=';
    }
    json_t *r = json_stringn(o, j);
    loom_free(o);
    return r;
}

static json_t *float_array(const float *x, int n) {
    json_t *a = json_array();
    for (int i = 0; a && i < n; i++)
        if (json_array_append_new(a, json_real((double)x[i]))) {
            json_decref(a);
            return NULL;
        }
    return a;
}

static void unit(float *v, int n) {
    double ss = 0;
    for (int i = 0; i < n; i++) ss += (double)v[i] * v[i];
    double inv = ss > 0 ? 1.0 / sqrt(ss) : 0;
    for (int i = 0; i < n; i++) v[i] = (float)(v[i] * inv);
}

void srv_api_embed(loom_server *s, const srv_request *rq, srv_response *out) {
    const emb_kind k = rq->path[1] == 'v' ? EMB_OPENAI : !strcmp(rq->path, "/api/embeddings") ? EMB_LEGACY : EMB_OLLAMA;
    const srv_api api = k == EMB_OPENAI ? SRV_API_OAI_CHAT : SRV_API_CHAT;
    const int64_t t0 = srv_mono_ns();
    srv_err e = {0};
    emb_input *in = NULL;
    int n_in = 0;
    int32_t **ids = NULL, *n_ids = NULL;
    float *vec = NULL;
    json_t *res = NULL;
    bool locked = false;
    srv_model_info info;
    memset(&info, 0, sizeof info);
    json_t *b = srv_json_parse(rq->body, rq->body_len, &s->lim, &e);
    if (!b) goto error;
    const json_t *mj = json_object_get(b, "model");
    if (!json_is_string(mj) || !json_string_length(mj)) {
        srv_err_set(&e, 400, "model is required");
        goto error;
    }
    const char *name = json_string_value(mj);
    snprintf(out->model, sizeof out->model, "%s", name);
    if (!srv_store_find(s->store, name, &info, false, &e)) goto error;
    if (!srv_gguf_is_embedding(info.gguf)) {
        srv_err_set(&e, 400, "\"%s\" does not support embeddings", name);
        goto error;
    }
    bool truncate = true;
    const json_t *tj = json_object_get(b, "truncate");
    if (tj && !json_is_null(tj)) {
        if (!json_is_boolean(tj)) {
            srv_err_set(&e, 400, "\"truncate\" must be a boolean");
            goto error;
        }
        truncate = json_is_true(tj);
    }
    int64_t dims = 0;
    const json_t *dj = json_object_get(b, "dimensions");
    if (dj && !json_is_null(dj)) {
        if (!json_is_integer(dj) || json_integer_value(dj) < 1) {
            srv_err_set(&e, 400, "\"dimensions\" must be a positive integer");
            goto error;
        }
        dims = json_integer_value(dj);
    }
    bool b64out = false;
    const json_t *fj = json_object_get(b, "encoding_format");
    if (k == EMB_OPENAI && fj && !json_is_null(fj)) {
        if (json_is_string(fj) && !strcmp(json_string_value(fj), "base64")) b64out = true;
        else if (!json_is_string(fj) || strcmp(json_string_value(fj), "float")) {
            srv_err_set(&e, 400, "\"encoding_format\" must be \"float\" or \"base64\"");
            goto error;
        }
    }
    int n_ctx = 0;
    const json_t *oj = json_object_get(b, "options");
    const json_t *cj = json_is_object(oj) ? json_object_get(oj, "num_ctx") : NULL;
    if (cj && !json_is_null(cj)) {
        if (!json_is_integer(cj) || json_integer_value(cj) < 1 || json_integer_value(cj) > (1 << 20)) {
            srv_err_set(&e, 400, "\"options.num_ctx\" must be a positive integer");
            goto error;
        }
        n_ctx = (int)json_integer_value(cj);
    }
    if (!collect_inputs(k, b, &in, &n_in, &e)) goto error;

    pthread_mutex_lock(&s->embeds->mu);
    locked = true;
    int64_t load_ns = 0;
    loom_embedder *em = embeds_get(s, s->embeds, info.gguf, n_ctx, &load_ns, &e);
    if (!em) goto error;
    const int E = loom_embed_n_embd(em), ctx = loom_embed_n_ctx(em);
    const bool none = loom_embed_pooling(em) == LOOM_POOLING_NONE;
    if (none && n_in > 0) { /* one vector per input is the contract of these endpoints */
        srv_err_set(&e, 400, "model '%s' has pooling type none (a vector per token): the embed endpoints need a "
                             "pooled model", name);
        goto error;
    }
    int total = 0;
    if (n_in > 0) {
        ids = loom_calloc((size_t)n_in, sizeof *ids);
        n_ids = loom_calloc((size_t)n_in, sizeof *n_ids);
        if (!ids || !n_ids) {
            srv_err_set(&e, 500, "out of memory");
            goto error;
        }
    }
    for (int i = 0; i < n_in; i++) {
        ids[i] = loom_malloc((size_t)ctx * sizeof **ids);
        if (!ids[i]) {
            srv_err_set(&e, 500, "out of memory");
            goto error;
        }
        if (in[i].ids) {
            size_t n = json_array_size(in[i].ids);
            if (n > (size_t)ctx && !truncate) {
                srv_err_set(&e, 400, "input %d: %zu tokens exceed the context length (%d)", i, n, ctx);
                goto error;
            }
            if (n > (size_t)ctx) n = (size_t)ctx;
            for (size_t j = 0; j < n; j++) {
                const json_t *x = json_array_get(in[i].ids, j);
                json_int_t v = json_is_integer(x) ? json_integer_value(x) : -1;
                if (v < 0 || v >= loom_embed_n_vocab(em)) {
                    srv_err_set(&e, 400, "input %d: token %zu is not a token id of the model [0, %d)", i, j,
                                loom_embed_n_vocab(em));
                    goto error;
                }
                ids[i][j] = (int32_t)v;
            }
            n_ids[i] = (int32_t)n;
        } else {
            loom_error err = {0};
            loom_status st = loom_embed_tokenize(em, in[i].text, in[i].len, truncate, ids[i], ctx, &n_ids[i], &err);
            if (st) {
                srv_err_set(&e, st == LOOM_ERR_CONTEXT_FULL || st == LOOM_ERR_INVALID_ARG ? 400 : 500,
                            "input %d: %s", i, err.msg);
                goto error;
            }
        }
        total += n_ids[i];
    }
    size_t rows = 0;
    for (int i = 0; i < n_in; i++) rows += none ? (size_t)n_ids[i] : 1;
    if (n_in > 0) {
        vec = loom_malloc(rows * (size_t)E * sizeof *vec);
        if (!vec) {
            srv_err_set(&e, 500, "out of memory");
            goto error;
        }
        loom_error err = {0};
        loom_status st = loom_embed_compute(em, (const int32_t *const *)ids, n_ids, n_in, k != EMB_LEGACY, vec,
                                            rows * (size_t)E, &err);
        if (st) {
            srv_err_set(&e, st == LOOM_ERR_CANCELLED ? 499 : 500, "embedding failed: %s", err.msg);
            goto error;
        }
    }
    pthread_mutex_unlock(&s->embeds->mu);
    locked = false;

    int D = dims > 0 && dims < E ? (int)dims : E;
    if (D < E && k != EMB_LEGACY)
        for (int i = 0; i < n_in; i++) unit(vec + (size_t)i * E, D);
    out->prompt_tokens = total;
    if (k == EMB_LEGACY) {
        res = json_object();
        json_t *a = n_in ? float_array(vec, D) : json_array();
        if (!res || !a || json_object_set_new(res, "embedding", a)) goto oom;
    } else if (k == EMB_OLLAMA) {
        json_t *all = json_array();
        for (int i = 0; all && i < n_in; i++)
            if (json_array_append_new(all, float_array(vec + (size_t)i * E, D))) goto oom_all;
        res = json_pack("{s:s,s:o,s:I,s:I,s:i}", "model", name, "embeddings", all, "total_duration",
                        (json_int_t)(srv_mono_ns() - t0), "load_duration", (json_int_t)load_ns, "prompt_eval_count",
                        total);
        if (!res) goto oom;
        /* Ollama's EmbedResponse: the durations and the count are omitempty */
        if (!load_ns) json_object_del(res, "load_duration");
        if (!total) json_object_del(res, "prompt_eval_count");
        goto send;
    oom_all:
        json_decref(all);
        goto oom;
    } else {
        json_t *data = json_array();
        for (int i = 0; data && i < n_in; i++) {
            json_t *v = b64out ? base64_floats(vec + (size_t)i * E, D) : float_array(vec + (size_t)i * E, D);
            json_t *o = json_pack("{s:s,s:o,s:i}", "object", "embedding", "embedding", v, "index", i);
            if (!o || json_array_append_new(data, o)) {
                json_decref(data);
                goto oom;
            }
        }
        res = json_pack("{s:s,s:o,s:s,s:{s:i,s:i}}", "object", "list", "data", data, "model", name, "usage",
                        "prompt_tokens", total, "total_tokens", total);
        if (!res) goto oom;
    }
send:
    srv_respond_json(out, 200, res);
    res = NULL;
    goto done;
oom:
    srv_err_set(&e, 500, "out of memory");
error:
    if (locked) pthread_mutex_unlock(&s->embeds->mu);
    locked = false;
    srv_api_error_e(out, api, &e);
done:
    json_decref(res);
    if (ids)
        for (int i = 0; i < n_in; i++) loom_free(ids[i]);
    loom_free(ids);
    loom_free(n_ids);
    loom_free(vec);
    loom_free(in);
    srv_model_info_free(&info);
    json_decref(b);
}
