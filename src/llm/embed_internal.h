/*
 * embed_internal.h (internal) - the embedding-model object shared by embed.c (open,
 * batching, pooling), bert.c and nomic_bert.c (graphs). Not part of the public API.
 */
#ifndef LOOM_LLM_EMBED_INTERNAL_H
#define LOOM_LLM_EMBED_INTERNAL_H

#include <stdatomic.h>

#include "loom_embed.h"

typedef enum emb_arch { EMB_BERT = 0, EMB_NOMIC_BERT = 1 } emb_arch;

/* Weights of one encoder layer (borrowed from the backend; NULL = absent). */
typedef struct emb_layer {
    loom_tensor *wq, *wk, *wv, *bq, *bk, *bv; /* bert */
    loom_tensor *wqkv, *bqkv;                 /* nomic-bert (fused [E, 3E]) */
    loom_tensor *wo, *bo;
    loom_tensor *attn_out_norm, *attn_out_norm_b;
    loom_tensor *ffn_up, *ffn_up_b, *ffn_gate, *ffn_down, *ffn_down_b;
    loom_tensor *out_norm, *out_norm_b;
} emb_layer;

typedef struct emb_hparams {
    emb_arch arch;
    int n_embd, n_layer, n_head, n_ff, head_dim, n_rot;
    int32_t n_vocab, n_ctx_train;
    float norm_eps, rope_base, rope_freq_scale;
} emb_hparams;

/* One graph's worth of tokens: T tokens of n_seq whole sequences. */
typedef struct emb_batch {
    int n_tokens;
    const int32_t *tokens;  /* [T] (NULL in reserve mode) */
    const int32_t *pos;     /* [T] position of each token in its sequence */
    const float *mask;      /* [T * T]: 0 within a sequence, -inf across */
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
    emb_layer *layers;

    /* host scratch for one graph */
    int32_t *tok, *pos;     /* [n_batch] */
    float *mask;            /* [n_batch * n_batch] */
    float *hidden;          /* [n_batch * n_embd] */
    int32_t *out_ids;       /* [n_batch] */

    loom_tokenizer *tokzr;
    atomic_bool cancel;
};

/* bert.c / nomic_bert.c: the hidden states [n_embd, T] of a batch (poison on error). */
loom_tensor *emb_build_bert(loom_embedder *e, loom_ctx *ctx, const emb_batch *b);
loom_tensor *emb_build_nomic_bert(loom_embedder *e, loom_ctx *ctx, const emb_batch *b);

/* embed.c: shared graph pieces */
loom_tensor *emb_named(loom_tensor *t, const char *what, int il);
/* Inputs of a batch: token ids, positions and mask leafs (zeros in reserve mode). */
void emb_inputs(loom_embedder *e, loom_ctx *ctx, const emb_batch *b, loom_tensor **tok, loom_tensor **pos,
                loom_tensor **mask);
/* The output-row ids leaf of a batch, or NULL when every row is kept. */
loom_tensor *emb_out_ids(loom_ctx *ctx, const emb_batch *b);
/* Non-causal attention of q [D, H, T], k [D, H, T], v [D, H, T] under the batch mask
 * -> [D*H, T]. */
loom_tensor *emb_attention(loom_embedder *e, loom_ctx *ctx, loom_tensor *q, loom_tensor *k, loom_tensor *v,
                           loom_tensor *mask, int T);

#endif
