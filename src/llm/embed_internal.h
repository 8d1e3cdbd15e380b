/*
 * embed_internal.h (internal) - the embedding-model object shared by embed.c (open,
 * batching, pooling), embed_load.c (hyperparameters, weights) and the graphs of
 * bert.c, nomic_bert.c and decoder_embed.c. Not part of the public API.
 */
#ifndef LOOM_LLM_EMBED_INTERNAL_H
#define LOOM_LLM_EMBED_INTERNAL_H

#include <stdatomic.h>

#include "loom_embed.h"

/* EMB_BERT also covers jina-bert-v2 (hp.alibi_bias > 0). EMB_DECODER: a decoder's layers (llama, mistral, qwen2, qwen3 files with a
 * `<arch>.pooling_type`: Qwen3-Embedding, e5-mistral ...); EMB_GEMMA:
 * gemma-embedding (EmbeddingGemma); EMB_T5: t5encoder (a T5 encoder stack: relative
 * position buckets, no rope). */
typedef enum emb_arch { EMB_BERT = 0, EMB_NOMIC_BERT = 1, EMB_DECODER = 2, EMB_GEMMA = 3, EMB_MODERN = 4, EMB_T5 = 5 } emb_arch;

/* modern-bert's gated MLP: act(first half of ffn_up's rows) * second half */
typedef enum emb_glu { EMB_GLU_GELU = 0, EMB_GLU_SILU = 1, EMB_GLU_RELU = 2 } emb_glu;

/* Weights of one encoder layer (borrowed from the backend; NULL = absent). */
typedef struct emb_layer {
    loom_tensor *wq, *wk, *wv, *bq, *bk, *bv; /* bert */
    loom_tensor *wqkv, *bqkv;                 /* nomic-bert (fused [E, 3E]) */
    loom_tensor *wo, *bo;
    loom_tensor *attn_out_norm, *attn_out_norm_b;
    loom_tensor *ffn_up, *ffn_up_b, *ffn_gate, *ffn_down, *ffn_down_b;
    loom_tensor *out_norm, *out_norm_b;
    /* decoders (pre-RMSNorm) */
    loom_tensor *attn_norm, *q_norm, *k_norm, *attn_post_norm, *ffn_norm, *ffn_post_norm, *rope_freqs;
    bool swa; /* gemma-embedding: a sliding-window layer */
    loom_tensor *ffn_gate_inp, *ffn_up_exps, *ffn_down_exps; /* nomic-bert-moe expert layers */
    /* jina-bert-v2: LayerNorms over all of q and of k (weights q_norm / k_norm), a second
     * residual LayerNorm after attn_out_norm, ffn_up twice ffn wide (GEGLU) or ffn_gate */
    loom_tensor *q_norm_b, *k_norm_b, *attn_norm_2, *attn_norm_2_b;
    bool geglu;
    loom_tensor *rel_b; /* t5encoder: the relative position bias [heads, buckets] (NULL: layer 0's) */
} emb_layer;

typedef struct emb_hparams {
    emb_arch arch;
    int n_embd, n_layer, n_head, n_ff, head_dim, n_rot;
    int n_head_kv;          /* = n_head for the encoders */
    int32_t n_vocab, n_ctx_train;
    float norm_eps, rope_base, rope_freq_scale;
    /* decoders */
    bool causal;            /* each token sees itself and the tokens before it */
    loom_rope_mode rope_mode;
    int n_swa;              /* gemma-embedding: window layers see |i - j| <= n_swa / 2 */
    int swa_period;         /* sliding_window_pattern (-1: no window layers) */
    float rope_base_swa;    /* rope base of the window layers */
    int dense_ff;           /* dense_2 output = dense_3 input width (0: no dense layers) */
    char name[32];          /* general.architecture */
    /* nomic-bert-moe: GELU MLPs (with biases) instead of SwiGLU; every moe_every-th layer
     * (il % moe_every == 1) a mixture of n_expert GELU experts, top n_expert_used */
    bool gelu_ffn;
    int moe_every, n_expert, n_expert_used;
    float expert_weights_scale;
    /* jina-bert-v2: ALiBi (max bias; 0: none) instead of position embeddings */
    float alibi_bias;
    /* modern-bert: window layers il % swa_period != 0 (the first of each period is
     * global), the MLP's gate activation */
    bool swa_dense_first;
    emb_glu glu;
    /* t5encoder: relative_buckets_count (bidirectional: half per direction) */
    int n_rel_buckets;
} emb_hparams;

/* One graph's worth of tokens: T tokens of n_seq whole sequences. */
typedef struct emb_batch {
    int n_tokens;
    const int32_t *tokens;  /* [T] (NULL in reserve mode) */
    const int32_t *pos;     /* [T] position of each token in its sequence */
    const float *mask;      /* [T * T]: 0 within a sequence, -inf across (decoders:
                               causal within a sequence unless non-causal) */
    const float *mask_swa;  /* [T * T] the window layers' mask (gemma-embedding) */
    int n_outputs;          /* rows of the result: T, or (cls/last pooling) one per sequence */
    const int32_t *out_ids; /* [n_outputs] batch rows kept after the last attention; NULL = all */
    bool reserve;
} emb_batch;

struct loom_embedder {
    loom_backend *be;
    emb_hparams hp;
    loom_pooling pooling;
    int n_ctx, n_batch;

    loom_tensor *tok_embd, *type_embd, *pos_embd, *tok_norm, *tok_norm_b;
    loom_tensor *output_norm, *dense_2, *dense_2_b, *dense_3; /* decoders */
    emb_layer *layers;
    bool any_swa;

    /* host scratch for one graph */
    int32_t *tok, *pos;     /* [n_batch] */
    float *mask;            /* [n_batch * n_batch] */
    float *mask_swa;        /* [n_batch * n_batch] when any_swa */
    float *hidden;          /* [n_batch * n_embd] */
    int32_t *out_ids;       /* [n_batch] */
    int32_t *bucket;        /* [n_batch * n_batch] t5encoder: each (key, query) pair's bucket */

    loom_tokenizer *tokzr;
    atomic_bool cancel;
};

/* bert.c / nomic_bert.c / decoder_embed.c: the hidden states [n_embd, T] of a batch
 * (poison on error). */
loom_tensor *emb_build_bert(loom_embedder *e, loom_ctx *ctx, const emb_batch *b);
loom_tensor *emb_build_nomic_bert(loom_embedder *e, loom_ctx *ctx, const emb_batch *b);
loom_tensor *emb_build_decoder(loom_embedder *e, loom_ctx *ctx, const emb_batch *b);
loom_tensor *emb_build_modern_bert(loom_embedder *e, loom_ctx *ctx, const emb_batch *b);
loom_tensor *emb_build_t5(loom_embedder *e, loom_ctx *ctx, const emb_batch *b);
/* t5_embed.c: T5's bucket of a relative position (key - query), bidirectional */
int32_t emb_t5_bucket(int32_t rel, int n_buckets);

/* embed_load.c: hyperparameters (e->hp, e->pooling: kept when set on entry, the
 * pooling asked for) and weights of e->be's file. */
loom_status emb_load_hparams(loom_embedder *e, loom_error *err);
loom_status emb_bind_weights(loom_embedder *e, loom_error *err);
/* The embedding family of general.architecture `arch` in g (pooling_type decides for
 * the decoder architectures, unless any_decoder; g NULL: those are not); false when g
 * is not an embedding model. */
bool emb_arch_of(const loom_gguf *g, const char *arch, bool any_decoder, emb_arch *out);

#define EMB_MAX_DIM ((int64_t)1 << 20)
#define EMB_MAX_CTX 8192 /* longest input (and graph): the attention scores are [T, T, heads] */

/* embed.c: shared graph pieces */
loom_tensor *emb_named(loom_tensor *t, const char *what, int il);
/* Inputs of a batch: token ids, positions and mask leafs (zeros in reserve mode);
 * mask_swa (may be NULL: not made) the window layers' mask. */
void emb_inputs(loom_embedder *e, loom_ctx *ctx, const emb_batch *b, loom_tensor **tok, loom_tensor **pos,
                loom_tensor **mask, loom_tensor **mask_swa);
/* The output-row ids leaf of a batch, or NULL when every row is kept. */
loom_tensor *emb_out_ids(loom_ctx *ctx, const emb_batch *b);
/* Attention of q [D, H, T], k [D, Hkv, T], v [D, Hkv, T] under the batch mask
 * -> [D*H, T]. */
loom_tensor *emb_attention(loom_embedder *e, loom_ctx *ctx, loom_tensor *q, loom_tensor *k, loom_tensor *v,
                           loom_tensor *mask, int T);

#endif
