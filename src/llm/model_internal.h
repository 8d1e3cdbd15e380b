/*
 * model_internal.h (internal) - the model object shared by model.c, llama.c,
 * kvcache.c and generate.c. Not part of the public API.
 */
#ifndef LOOM_LLM_MODEL_INTERNAL_H
#define LOOM_LLM_MODEL_INTERNAL_H

#include <stdatomic.h>

#include "loom_model.h"

/* Weights of one repeating layer (borrowed from the backend; NULL = absent). */
typedef struct llm_layer {
    loom_tensor *attn_norm;
    loom_tensor *wq, *wk, *wv, *wo;
    loom_tensor *bq, *bk, *bv, *bo;   /* optional biases */
    loom_tensor *q_norm, *k_norm;     /* qwen3 */
    loom_tensor *rope_freqs;          /* optional */
    loom_tensor *ffn_norm;
    loom_tensor *ffn_gate, *ffn_up, *ffn_down;
} llm_layer;

/* KV cache (contract §7) for a single sequence that starts at cell 0. */
typedef struct llm_kv_cache {
    loom_ctx *ctx;          /* long-lived context that owns K/V (Layer(i) => Cache[i]) */
    int n_layer;
    int64_t cells;          /* round_up(n_ctx, padding) */
    loom_type type;
    int64_t dk, dv, hkv;
    loom_cache_config cfg;
    loom_tensor **k;        /* [n_layer] K [dk, hkv, cells] */
    loom_tensor **v;        /* [n_layer] V [cells, dv, hkv] (permuted) or [dv, hkv, cells] */
} llm_kv_cache;

/* Handles into a built graph to what changes from one decode step to the next, so
 * generate.c can compute the same graph again (no build, no plan) with new inputs. */
typedef struct llm_graph_io {
    loom_tensor *tok, *pos, *outs; /* input leafs */
    loom_tensor *mask;             /* the F32 input leaf of the mask */
    loom_tensor **store;           /* [4 * n_layer]: per layer the K view, K copy, V view, V copy */
} llm_graph_io;

/* What one forward graph evaluates. */
typedef struct llm_batch {
    int n_tokens;           /* T */
    int n_past;             /* position of the first token (= first cache cell) */
    const int32_t *tokens;  /* [T] (NULL in reserve mode) */
    int n_outputs;          /* rows whose logits are computed */
    const int32_t *out_ids; /* [n_outputs] indices into the batch (NULL in reserve mode) */
    bool reserve;           /* worst case: whole cache visible, inputs uninitialised */
    llm_graph_io *io;       /* filled by the builder when not NULL */
} llm_batch;

struct loom_model {
    loom_backend *be;
    loom_model_hparams hp;
    int n_ctx, n_batch;
    bool dry_run;

    loom_tensor *tok_embd, *output_norm, *output;
    llm_layer *layers;

    llm_kv_cache kv;
    int n_past;

    /* host scratch (grown rarely; decode steps reuse it) */
    int32_t *pos;           /* [n_batch] */
    int32_t *out_ids;       /* [n_batch] */
    float *mask;            /* mask_cap floats */
    size_t mask_cap;
    float *logits;          /* logits_cap floats */
    size_t logits_cap;
    int n_logits;

    loom_tokenizer *tok;    /* built on first loom_model_tokenizer */

    loom_eval_cb eval_cb;
    void *eval_user;
    atomic_bool cancel;

    /* The last single-token decode graph, kept for the next step while the visible
     * history L stays the same (generate.c); ctx NULL when there is none. */
    struct {
        loom_ctx *ctx;
        loom_tensor *logits;
        int64_t L;
        llm_graph_io io; /* io.store allocated at open */
    } dec;
};

/* kvcache.c */
loom_status llm_kv_init(llm_kv_cache *kv, loom_backend *be, const loom_model_hparams *hp,
                        int n_ctx, loom_type type, loom_error *err);
void llm_kv_free(llm_kv_cache *kv);
/* Visible history for a batch ending at n_end tokens: round_up(n_end, padding) <= cells. */
int64_t llm_kv_n_visible(const llm_kv_cache *kv, int64_t n_end);
/* Copy k_cur [dk, hkv, T] and v_cur [dv, hkv, T] into cells [loc, loc+T) of layer il;
 * the copies are forwarded into ctx (so they precede later reads in graph order). */
void llm_kv_put(loom_ctx *ctx, llm_kv_cache *kv, int il, loom_tensor *k_cur, loom_tensor *v_cur,
                int64_t loc, loom_tensor **store);
/* Byte offsets in layer il's K and V tensors of the views llm_kv_put writes cell loc
 * through (store, when not NULL, receives {K view, K copy, V view, V copy}: moving all
 * four to the offsets of another loc retargets the copies). */
void llm_kv_store_offsets(const llm_kv_cache *kv, int il, int64_t loc, size_t *k_off, size_t *v_off);
/* Views of the first L cells of layer il: K [dk, hkv, L], V [L, dv, hkv] or [dv, hkv, L]. */
void llm_kv_get(loom_ctx *ctx, llm_kv_cache *kv, int il, int64_t L, loom_tensor **k,
                loom_tensor **v);
/* Causal mask [L, round_up(T, mask_batch_padding)] of the configured type. In reserve mode
 * the tensor is left uninitialised. host must hold L * Tpad floats (unused in reserve). */
loom_tensor *llm_kv_mask(loom_ctx *ctx, const llm_kv_cache *kv, int64_t L, int n_past, int T,
                         bool reserve, float *host, loom_tensor **leaf);
/* The mask's values (F32, L * Tpad) for a batch of T tokens after n_past into host. */
void llm_kv_mask_fill(const llm_kv_cache *kv, int64_t L, int n_past, int T, float *host);
size_t llm_kv_mask_floats(const llm_kv_cache *kv, int64_t L, int T);

/* llama.c: builds the graph of one batch and returns the logits [n_vocab, n_outputs]
 * (poison on error: check loom_ctx_status). Forwards KV copies into ctx itself. */
loom_tensor *llm_build_llama(loom_model *m, loom_ctx *ctx, const llm_batch *b);

/* model.c */
/* Index of the first largest of n values (NaN never wins; 0 when x[0] is NaN or no
 * value exceeds -inf); -1 for n <= 0. */
int32_t llm_argmax_f32(const float *x, int32_t n);
loom_status llm_load_hparams(const loom_backend *be, loom_model_hparams *hp, loom_error *err);
loom_status llm_bind_weights(loom_model *m, loom_error *err);

/* generate.c: run one batch (T <= n_batch) and store the logits (appended at row
 * logit_row of m->logits, which must have room). */
loom_status llm_decode_batch(loom_model *m, const int32_t *tokens, int T, bool all_logits,
                             int logit_row, loom_error *err);
/* Free the kept single-token decode graph, if any (before the backend closes, or
 * when the cache or callbacks change). */
void llm_decode_drop(loom_model *m);
/* Build and reserve the worst-case graph (n_batch tokens, full context). */
loom_status llm_reserve(loom_model *m, loom_error *err);

#endif
