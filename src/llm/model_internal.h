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
    /* other architectures (arch_*.c) */
    loom_tensor *wqkv, *bqkv;                   /* phi3: fused q|k|v rows */
    loom_tensor *attn_post_norm, *ffn_post_norm; /* gemma2/3 */
    loom_tensor *rope_long, *rope_short;        /* phi3 LongRoPE (per-layer copies) */
    loom_tensor *sinks;                         /* gpt-oss attention sinks [n_head] */
    loom_tensor *ffn_gate_inp, *ffn_gate_inp_b; /* MoE router [E, n_expert] */
    loom_tensor *ffn_gate_exps, *ffn_up_exps, *ffn_down_exps;   /* [.., .., n_expert] */
    loom_tensor *ffn_gate_exps_b, *ffn_up_exps_b, *ffn_down_exps_b;
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
    loom_tensor *mask_swa;         /* the F32 input leaf of the sliding-window mask (or NULL) */
    loom_tensor *attn_temp;        /* the query temperature leaf [1, 1, T] (or NULL) */
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

/* Hyperparameters beyond loom_model_hparams, for the architectures of arch_*.c (0 = off). */
typedef struct llm_hparams_x {
    int n_expert, n_expert_used, n_ff_exp;  /* MoE */
    int n_swa;               /* attention.sliding_window (0: no sliding layers) */
    int swa_period;          /* sliding layers: il % period < period - 1 (llama.cpp's rule) */
    float rope_base_swa;     /* rope.freq_base_swa (sliding layers) */
    float rope_scale_swa;    /* freq scale of sliding layers (1: no scaling) */
    float attn_softcap;      /* attn_logit_softcapping */
    float final_softcap;     /* final_logit_softcapping */
    float q_scale;           /* query scale before attention (then kq scale 1); 0: 1/sqrt(Dk) on kq */
    float embd_scale;        /* input embeddings * embd_scale (0: none) */
    int n_ctx_orig;          /* rope.scaling.original_context_length (0: n_ctx_train) */
    float rope_attn_factor;  /* rope.scaling.attn_factor (default 1) */
    bool yarn;               /* rope.scaling.type == yarn */
    float yarn_log_mul;      /* rope.scaling.yarn_log_multiplier (0: none) */
    float yarn_beta_fast, yarn_beta_slow;
    bool longrope;           /* phi3 rope_factors_long/short present */
    float attn_temp_scale;   /* mistral3 / llama4 query temperature (0: off) */
    int attn_temp_floor;     /* attention.temperature_length */
    float swiglu_limit;      /* gpt-oss clamped SwiGLU limit (0: plain SwiGLU) */
} llm_hparams_x;

struct llm_arch;

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

    /* architecture (arch.c) and its extra hyperparameters */
    const struct llm_arch *arch;
    llm_hparams_x hx;
    float *mask_swa;        /* host scratch of the sliding-window mask (mask_cap floats) */
    float *attn_temp;       /* host scratch of the query temperatures (n_batch floats) */
};

/* An architecture: name, rope mode, its extra keys, weight binding and graph. */
typedef struct llm_arch {
    const char *name;
    loom_rope_mode rope_mode;
    /* extra keys after the common ones (NULL: none) */
    loom_status (*hparams)(const loom_gguf *g, loom_model_hparams *hp, llm_hparams_x *hx, loom_error *err);
    loom_status (*bind)(loom_model *m, loom_error *err);
    loom_tensor *(*build)(loom_model *m, loom_ctx *ctx, const llm_batch *b);
} llm_arch;

/* arch.c: the architecture called name, or NULL; the supported names for messages. */
const llm_arch *llm_arch_find(const char *name);
const char *llm_arch_names(void);

/* model.c key and tensor helpers for arch_*.c. Keys are "<arch>.<key>". */
loom_status llm_get_int_key(const loom_gguf *g, const char *arch, const char *key, bool required,
                            int64_t def, int64_t *out, loom_error *err);
loom_status llm_get_float_key(const loom_gguf *g, const char *arch, const char *key, double def,
                              double *out, bool *present, loom_error *err);
/* The tensor name (printf fmt with the layer il) of shape [ne0, ne1, ne2] (ne2 = 1 for 2-D),
 * NULL when absent and not required; *st set (once) on a missing or misshapen tensor. */
loom_tensor *llm_bind_tensor(const loom_backend *be, bool required, int64_t ne0, int64_t ne1, int64_t ne2,
                             loom_error *err, loom_status *st, const char *fmt, int il);
/* llm_graph.c: the sliding-window mask of a batch (F32, as llm_kv_mask_fill) into host. */
void llm_swa_mask_fill(const loom_model *m, int64_t L, int n_past, int T, float *host);
/* llm_graph.c: query temperatures of positions n_past .. n_past+T-1 into host (mistral3). */
void llm_attn_temp_fill(const loom_model *m, int n_past, int T, float *host);
/* The llama family's weights (llama.c). */
loom_status llm_bind_llama(loom_model *m, loom_error *err);

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
loom_status llm_load_hparams(const loom_backend *be, loom_model_hparams *hp, llm_hparams_x *hx,
                             const llm_arch **arch, loom_error *err);
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
