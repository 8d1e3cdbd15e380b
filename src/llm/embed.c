/*
 * embed.c - embedding models (loom_embed.h): the worst-case reserve, packing
 * sequences into graphs (and their masks), pooling and normalization, input
 * tokenization. Hyperparameters and weights: embed_load.c; the graphs: bert.c,
 * nomic_bert.c, decoder_embed.c.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "embed_internal.h"
#include "model_internal.h"
#include "quant/alloc.h"


const char *loom_pooling_name(loom_pooling p) {
    switch (p) {
    case LOOM_POOLING_UNSPECIFIED: return "unspecified";
    case LOOM_POOLING_NONE: return "none";
    case LOOM_POOLING_MEAN: return "mean";
    case LOOM_POOLING_CLS: return "cls";
    case LOOM_POOLING_LAST: return "last";
    }
    return "?";
}

bool loom_pooling_from_name(const char *s, loom_pooling *out) {
    static const loom_pooling all[] = {LOOM_POOLING_NONE, LOOM_POOLING_MEAN, LOOM_POOLING_CLS, LOOM_POOLING_LAST};
    if (!s || !out) return false;
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        if (!strcmp(s, loom_pooling_name(all[i]))) {
            *out = all[i];
            return true;
        }
    return false;
}

loom_embed_params loom_embed_default_params(void) {
    loom_embed_params p;
    memset(&p, 0, sizeof p);
    p.pooling = LOOM_POOLING_UNSPECIFIED;
    return p;
}

bool loom_embed_arch_supported(const char *arch) {
    return emb_arch_of(NULL, arch, false, NULL); /* no file: the decoder families need one */
}

bool loom_embed_gguf_supported(const loom_gguf *g) {
    loom_gguf_str a;
    char arch[64];
    if (!g || loom_gguf_get_str(g, "general.architecture", &a) != LOOM_OK || a.len >= sizeof arch) return false;
    memcpy(arch, a.ptr, a.len);
    arch[a.len] = 0;
    return emb_arch_of(g, arch, false, NULL);
}

/* ------------------------------------------------------------------ shared graph pieces */

loom_tensor *emb_named(loom_tensor *t, const char *what, int il) {
    char name[LOOM_MAX_NAME];
    if (il >= 0) snprintf(name, sizeof name, "%s-%d", what, il);
    else snprintf(name, sizeof name, "%s", what);
    return loom_tensor_set_name(t, name);
}

void emb_inputs(loom_embedder *e, loom_ctx *ctx, const emb_batch *b, loom_tensor **tok, loom_tensor **pos,
                loom_tensor **mask, loom_tensor **mask_swa) {
    loom_ctx *in = loom_ctx_input(ctx);
    const int64_t T = b->n_tokens;
    int64_t ne_t[1] = {T}, ne_m[2] = {T, T};
    (void)e;
    if (b->reserve) {
        *tok = loom_zeros(in, LOOM_TYPE_I32, 1, ne_t);
        *pos = loom_zeros(in, LOOM_TYPE_I32, 1, ne_t);
        *mask = loom_zeros(in, LOOM_TYPE_F32, 2, ne_m);
        if (mask_swa) *mask_swa = loom_zeros(in, LOOM_TYPE_F32, 2, ne_m);
    } else {
        *tok = loom_from_i32(in, b->tokens, (size_t)T, 1, ne_t);
        *pos = loom_from_i32(in, b->pos, (size_t)T, 1, ne_t);
        *mask = loom_from_f32(in, b->mask, (size_t)(T * T), 2, ne_m);
        if (mask_swa) *mask_swa = loom_from_f32(in, b->mask_swa, (size_t)(T * T), 2, ne_m);
    }
    loom_tensor_set_name(*tok, "inp_tokens");
    loom_tensor_set_name(*pos, "inp_pos");
    loom_tensor_set_name(*mask, "inp_mask");
    if (mask_swa) loom_tensor_set_name(*mask_swa, "inp_mask_swa");
}

loom_tensor *emb_out_ids(loom_ctx *ctx, const emb_batch *b) {
    if (!b->out_ids && !b->reserve) return NULL;
    if (b->reserve && b->n_outputs >= b->n_tokens) return NULL;
    int64_t ne[1] = {b->n_outputs};
    loom_ctx *in = loom_ctx_input(ctx);
    loom_tensor *t = b->reserve ? loom_zeros(in, LOOM_TYPE_I32, 1, ne)
                                : loom_from_i32(in, b->out_ids, (size_t)b->n_outputs, 1, ne);
    return loom_tensor_set_name(t, "inp_out_ids");
}

loom_tensor *emb_attention(loom_embedder *e, loom_ctx *ctx, loom_tensor *q, loom_tensor *k, loom_tensor *v,
                           loom_tensor *mask, int T) {
    const int64_t D = e->hp.head_dim, H = e->hp.n_head;
    /* with flash attention loom_sdpa takes V as [D, H, T]; without, as [T, D, H] (PermutedV) */
    loom_tensor *vp = loom_ctx_flash_attn(ctx) ? v : loom_cont(ctx, loom_permute(ctx, v, 1, 2, 0, 3));
    const loom_attn_opts o = {.max_bias = e->hp.alibi_bias}; /* jina-bert-v2: ALiBi */
    loom_tensor *a = loom_sdpa_opts(ctx, q, k, vp, mask, 1.0f / sqrtf((float)D), &o);
    int64_t ne_a[2] = {D * H, T};
    return loom_reshape(ctx, a, 2, ne_a);
}

/* ------------------------------------------------------------------ graphs */

static bool abort_cb(void *user) {
    loom_embedder *e = user;
    return atomic_load(&e->cancel);
}

static loom_status build(loom_embedder *e, const emb_batch *b, loom_ctx **ctx_out, loom_tensor **out,
                         loom_error *err) {
    loom_ctx *ctx;
    loom_status s = loom_backend_ctx_new(e->be, 0, &ctx, err);
    if (s) return s;
    loom_tensor *h = e->hp.arch == EMB_BERT         ? emb_build_bert(e, ctx, b)
                     : e->hp.arch == EMB_NOMIC_BERT ? emb_build_nomic_bert(e, ctx, b)
                     : e->hp.arch == EMB_MODERN     ? emb_build_modern_bert(e, ctx, b)
                     : e->hp.arch == EMB_T5         ? emb_build_t5(e, ctx, b)
                                                    : emb_build_decoder(e, ctx, b);
    loom_ctx_forward(ctx, h);
    s = loom_ctx_status(ctx);
    if (s) {
        loom_error_set(err, s, "embed graph: %s", loom_ctx_error(ctx));
        loom_ctx_free(ctx);
        return s;
    }
    *ctx_out = ctx;
    *out = h;
    return LOOM_OK;
}

static loom_status reserve(loom_embedder *e, loom_error *err) {
    emb_batch b = {0};
    b.n_tokens = e->n_batch;
    b.n_outputs = e->n_batch; /* the worst case keeps every row */
    b.reserve = true;
    loom_ctx *ctx;
    loom_tensor *h;
    loom_status s = build(e, &b, &ctx, &h, err);
    if (s) return s;
    s = loom_ctx_reserve(ctx);
    if (s) loom_error_set(err, s, "embed: reserving the worst-case graph (%d tokens): %s", e->n_batch, loom_ctx_error(ctx));
    loom_ctx_free(ctx);
    return s;
}

/* Hidden states of T packed tokens (e->tok, e->pos, e->mask) into e->hidden: every
 * row, or the n_out rows e->out_ids (n_out < T). */
static loom_status run_graph(loom_embedder *e, int T, int n_out, loom_error *err) {
    emb_batch b = {0};
    b.n_tokens = T;
    b.tokens = e->tok;
    b.pos = e->pos;
    b.mask = e->mask;
    b.mask_swa = e->mask_swa;
    b.n_outputs = n_out;
    b.out_ids = n_out < T ? e->out_ids : NULL;
    loom_ctx *ctx;
    loom_tensor *h;
    loom_status s = build(e, &b, &ctx, &h, err);
    if (s) return s;
    loom_ctx_set_abort_callback(ctx, abort_cb, e);
    s = loom_ctx_compute(ctx, 1, &h);
    if (s)
        loom_error_set(err, s, "embed: computing %d tokens: %s", T,
                       *loom_ctx_error(ctx) ? loom_ctx_error(ctx) : loom_status_name(s));
    else if ((s = loom_tensor_read_f32(h, e->hidden, (size_t)n_out * (size_t)e->hp.n_embd)))
        loom_error_set(err, s, "embed: reading the hidden states failed");
    loom_ctx_free(ctx);
    return s;
}

/* ------------------------------------------------------------------ lifecycle */

static bool repack_filter(const char *name, void *user) {
    (void)user;
    static const char *const mm[] = {"attn_q.weight", "attn_k.weight", "attn_v.weight", "attn_qkv.weight",
                                     "attn_output.weight", "ffn_gate.weight", "ffn_up.weight", "ffn_down.weight"};
    return llm_blk_tensor_in(name, mm, sizeof mm / sizeof mm[0]);
}

loom_status loom_embed_open(const loom_embed_params *params, loom_embedder **out, loom_error *err) {
    if (!out) return loom_error_set(err, LOOM_ERR_INVALID_ARG, "loom_embed_open: out is NULL");
    *out = NULL;
    if (!params || !params->path) return loom_error_set(err, LOOM_ERR_INVALID_ARG, "loom_embed_open: no model path");
    if (params->n_ctx < 0 || params->n_batch < 0 || params->n_threads < 0)
        return loom_error_set(err, LOOM_ERR_INVALID_ARG, "loom_embed_open: negative n_ctx/n_batch/n_threads");
    if (params->pooling < LOOM_POOLING_UNSPECIFIED || params->pooling > LOOM_POOLING_LAST)
        return loom_error_set(err, LOOM_ERR_INVALID_ARG, "loom_embed_open: unknown pooling %d", (int)params->pooling);
    loom_embedder *e = loom_calloc(1, sizeof *e);
    if (!e) return loom_error_set(err, LOOM_ERR_NOMEM, "loom_embed_open: out of memory");
    atomic_init(&e->cancel, false);

    loom_backend_params bp = loom_backend_default_params();
    bp.n_threads = params->n_threads;
    bp.no_mmap = params->no_mmap;
    bp.flash_attn = params->flash_attn;
    bp.repack_filter = repack_filter;
    loom_status s = loom_backend_open(params->path, &bp, &e->be, err);
    if (s) goto fail;
    e->pooling = params->pooling;
    if ((s = emb_load_hparams(e, err))) goto fail;
    if ((s = emb_bind_weights(e, err))) goto fail;

    int64_t n_ctx = params->n_ctx ? params->n_ctx : e->hp.n_ctx_train;
    if (n_ctx > EMB_MAX_CTX && !params->n_ctx) n_ctx = EMB_MAX_CTX;
    if (n_ctx > EMB_MAX_CTX || (e->hp.arch == EMB_BERT && n_ctx > e->hp.n_ctx_train)) {
        s = loom_error_set(err, LOOM_ERR_INVALID_ARG,
                           "loom_embed_open: n_ctx %lld is too large (%s: at most %d)", (long long)n_ctx,
                           loom_backend_arch(e->be),
                           e->hp.arch == EMB_BERT ? (int)e->hp.n_ctx_train : EMB_MAX_CTX);
        goto fail;
    }
    int64_t n_batch = params->n_batch ? params->n_batch : n_ctx;
    if (n_batch < n_ctx) n_batch = n_ctx;
    if (n_batch > EMB_MAX_CTX) n_batch = EMB_MAX_CTX;
    e->n_ctx = (int)n_ctx;
    e->n_batch = (int)n_batch;

    e->tok = loom_malloc((size_t)n_batch * sizeof *e->tok);
    e->pos = loom_malloc((size_t)n_batch * sizeof *e->pos);
    e->mask = loom_malloc((size_t)n_batch * (size_t)n_batch * sizeof *e->mask);
    if (e->any_swa) e->mask_swa = loom_malloc((size_t)n_batch * (size_t)n_batch * sizeof *e->mask_swa);
    e->hidden = loom_malloc((size_t)n_batch * (size_t)e->hp.n_embd * sizeof *e->hidden);
    e->out_ids = loom_malloc((size_t)n_batch * sizeof *e->out_ids);
    if (e->hp.arch == EMB_T5) e->bucket = loom_malloc((size_t)n_batch * (size_t)n_batch * sizeof *e->bucket);
    if (!e->tok || !e->pos || !e->mask || !e->hidden || !e->out_ids || (e->any_swa && !e->mask_swa) ||
        (e->hp.arch == EMB_T5 && !e->bucket)) {
        s = loom_error_set(err, LOOM_ERR_NOMEM, "loom_embed_open: out of host memory (n_batch %lld)",
                           (long long)n_batch);
        goto fail;
    }
    if ((s = reserve(e, err))) goto fail;
    if ((s = loom_backend_load(e->be, params->progress, params->progress_user, err))) goto fail;
    *out = e;
    return LOOM_OK;
fail:
    loom_embed_close(e);
    return s;
}

void loom_embed_close(loom_embedder *e) {
    if (!e) return;
    loom_tokenizer_free(e->tokzr);
    loom_backend_close(e->be);
    loom_free(e->layers);
    loom_free(e->tok);
    loom_free(e->pos);
    loom_free(e->mask);
    loom_free(e->mask_swa);
    loom_free(e->hidden);
    loom_free(e->out_ids);
    loom_free(e->bucket);
    loom_free(e);
}

int32_t loom_embed_n_embd(const loom_embedder *e) { return e ? e->hp.n_embd : 0; }
int32_t loom_embed_n_ctx(const loom_embedder *e) { return e ? e->n_ctx : 0; }
int32_t loom_embed_n_batch(const loom_embedder *e) { return e ? e->n_batch : 0; }
int32_t loom_embed_n_vocab(const loom_embedder *e) { return e ? e->hp.n_vocab : 0; }
loom_pooling loom_embed_pooling(const loom_embedder *e) { return e ? e->pooling : LOOM_POOLING_UNSPECIFIED; }
const char *loom_embed_arch(const loom_embedder *e) { return e ? e->hp.name : ""; }
loom_backend *loom_embed_backend(const loom_embedder *e) { return e ? e->be : NULL; }

void loom_embed_cancel(loom_embedder *e) {
    if (!e) return;
    atomic_store(&e->cancel, true); /* polled by the compute's abort callback: see loom_model_cancel */
}

loom_status loom_embed_tokenizer(loom_embedder *e, const loom_tokenizer **out, loom_error *err) {
    if (!e || !out) return loom_error_set(err, LOOM_ERR_INVALID_ARG, "loom_embed_tokenizer: NULL argument");
    *out = NULL;
    if (!e->tokzr) {
        loom_status s = loom_tokenizer_new_from_gguf(loom_backend_gguf(e->be), &e->tokzr, err);
        if (s) return s;
    }
    *out = e->tokzr;
    return LOOM_OK;
}

loom_status loom_embed_tokenize(loom_embedder *e, const char *text, size_t len, bool truncate, int32_t *ids,
                                int32_t max, int32_t *n_out, loom_error *err) {
    if (!e || (!text && len) || !ids || !n_out || max < 0)
        return loom_error_set(err, LOOM_ERR_INVALID_ARG, "loom_embed_tokenize: NULL argument");
    *n_out = 0;
    const loom_tokenizer *tk;
    loom_status s = loom_embed_tokenizer(e, &tk, err);
    if (s) return s;
    int32_t n = 0;
    /* e->tok is n_batch >= n_ctx ids of scratch (one thread uses an embedder) */
    s = loom_tokenize(tk, text ? text : "", len, true, false, e->tok, e->n_ctx, &n, err);
    if (s == LOOM_ERR_RANGE) {
        loom_error_clear(err);
        if (!truncate)
            return loom_error_set(err, LOOM_ERR_CONTEXT_FULL,
                                  "embed: the input has %lld tokens, more than the context (%d); "
                                  "shorten it or ask for truncation",
                                  n > 0 ? (long long)n : (long long)len, e->n_ctx);
        n = e->n_ctx;
        /* the cut input still ends as the vocabulary ends one: [SEP] (BERT) or EOS
         * (decoders that append it, such as Qwen3-Embedding's <|endoftext|>) */
        int32_t sep = loom_tokenizer_sep(tk), eos = loom_tokenizer_eos(tk);
        if (loom_tokenizer_add_sep(tk) && sep >= 0) e->tok[n - 1] = sep;
        else if (loom_tokenizer_add_eos(tk) && eos >= 0) e->tok[n - 1] = eos;
    } else if (s) {
        return s;
    }
    if (n < 1) return loom_error_set(err, LOOM_ERR_INVALID_ARG, "embed: the input has no tokens");
    if (n > max) {
        *n_out = n;
        return loom_error_set(err, LOOM_ERR_RANGE, "loom_embed_tokenize: %d ids do not fit in %d", n, max);
    }
    memcpy(ids, e->tok, (size_t)n * sizeof *ids);
    *n_out = n;
    return LOOM_OK;
}

/* ------------------------------------------------------------------ compute */

static void normalize_vec(float *v, int n) {
    double ss = 0;
    for (int i = 0; i < n; i++) ss += (double)v[i] * v[i];
    double norm = sqrt(ss);
    double inv = norm > 0 ? 1.0 / norm : 0.0;
    for (int i = 0; i < n; i++) v[i] = (float)(v[i] * inv);
}

loom_status loom_embed_compute(loom_embedder *e, const int32_t *const *tokens, const int32_t *n_tokens,
                               int32_t n_seq, bool normalize, float *out, size_t out_floats, loom_error *err) {
    if (!e || !tokens || !n_tokens || !out || n_seq < 1)
        return loom_error_set(err, LOOM_ERR_INVALID_ARG, "loom_embed_compute: NULL argument or no sequences");
    const int E = e->hp.n_embd;
    size_t total = 0;
    for (int32_t i = 0; i < n_seq; i++) {
        if (n_tokens[i] < 1 || !tokens[i])
            return loom_error_set(err, LOOM_ERR_INVALID_ARG, "embed: sequence %d is empty", i);
        if (n_tokens[i] > e->n_ctx)
            return loom_error_set(err, LOOM_ERR_CONTEXT_FULL,
                                  "embed: sequence %d has %d tokens, more than the context (%d)", i, n_tokens[i],
                                  e->n_ctx);
        for (int32_t j = 0; j < n_tokens[i]; j++)
            if (tokens[i][j] < 0 || tokens[i][j] >= e->hp.n_vocab)
                return loom_error_set(err, LOOM_ERR_RANGE,
                                      "embed: sequence %d token %d has id %d, outside the vocabulary [0, %d)", i, j,
                                      tokens[i][j], e->hp.n_vocab);
        total += (size_t)n_tokens[i];
    }
    const bool none = e->pooling == LOOM_POOLING_NONE;
    size_t need = (none ? total : (size_t)n_seq) * (size_t)E;
    if (out_floats < need)
        return loom_error_set(err, LOOM_ERR_INVALID_ARG, "loom_embed_compute: out holds %zu floats, %zu needed",
                              out_floats, need);
    if (atomic_exchange(&e->cancel, false))
        return loom_error_set(err, LOOM_ERR_CANCELLED, "embed: cancelled before it started (loom_embed_cancel)");

    float *o = out;
    for (int32_t i = 0; i < n_seq;) {
        /* pack whole sequences into one graph of at most n_batch tokens */
        int32_t j = i;
        int T = 0;
        while (j < n_seq && T + n_tokens[j] <= e->n_batch) {
            memcpy(e->tok + T, tokens[j], (size_t)n_tokens[j] * sizeof *e->tok);
            for (int32_t p = 0; p < n_tokens[j]; p++) e->pos[T + p] = p;
            T += n_tokens[j++];
        }
        /* mask: row t (query) sees the columns (keys) of its own sequence (causal: up
         * to itself); the window layers' mask also needs |t - c| <= n_swa / 2 */
        const int half = e->hp.n_swa / 2;
        for (int t = 0, s0 = 0, k = i; k < j; s0 += n_tokens[k++])
            for (int r = 0; r < n_tokens[k]; r++, t++) {
                float *row = e->mask + (size_t)t * (size_t)T;
                const int hi = e->hp.causal ? t + 1 : s0 + n_tokens[k];
                /* ALiBi (jina-bert-v2): a visible key's value is -|distance| */
                const bool alibi = e->hp.alibi_bias > 0.0f;
                for (int c = 0; c < T; c++)
                    row[c] = c >= s0 && c < hi ? (alibi ? -(float)abs(c - t) : 0.0f) : -INFINITY;
                if (!e->mask_swa) continue;
                float *rw = e->mask_swa + (size_t)t * (size_t)T;
                for (int c = 0; c < T; c++) rw[c] = row[c] == 0.0f && abs(c - t) <= half ? 0.0f : -INFINITY;
            }
        /* cls / last pooling: only those rows go past the last attention */
        const bool one_row = e->pooling == LOOM_POOLING_CLS || e->pooling == LOOM_POOLING_LAST;
        int n_out = T;
        if (one_row) {
            n_out = 0;
            for (int32_t k = i, s0 = 0; k < j; s0 += n_tokens[k++])
                e->out_ids[n_out++] = e->pooling == LOOM_POOLING_CLS ? s0 : s0 + n_tokens[k] - 1;
        }
        loom_status s = run_graph(e, T, n_out, err);
        if (s == LOOM_ERR_CANCELLED) atomic_store(&e->cancel, false);
        if (s) return s;
        const float *hid = e->hidden;
        for (int32_t k = i; k < j; k++) {
            const int n = one_row ? 1 : n_tokens[k]; /* rows of this sequence in hid */
            switch (e->pooling) {
            case LOOM_POOLING_NONE:
                memcpy(o, hid, (size_t)n * (size_t)E * sizeof *o);
                if (normalize)
                    for (int r = 0; r < n; r++) normalize_vec(o + (size_t)r * E, E);
                o += (size_t)n * E;
                break;
            case LOOM_POOLING_MEAN:
                for (int c = 0; c < E; c++) {
                    double acc = 0;
                    for (int r = 0; r < n; r++) acc += hid[(size_t)r * E + c];
                    o[c] = (float)(acc / n);
                }
                break;
            case LOOM_POOLING_CLS:
            case LOOM_POOLING_LAST:
            default: memcpy(o, hid, (size_t)E * sizeof *o); break;
            }
            if (!none) {
                if (normalize) normalize_vec(o, E);
                o += E;
            }
            hid += (size_t)n * E;
        }
        i = j;
    }
    return LOOM_OK;
}
