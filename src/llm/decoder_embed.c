/*
 * decoder_embed.c - the graph of the decoder-style embedding models, written only
 * against the public engine API (loom.h): llama / mistral / qwen2 / qwen3 files with
 * a pooling type (Qwen3-Embedding, e5-mistral ...) and gemma-embedding
 * (EmbeddingGemma). The hidden states after the final norm are the token vectors,
 * as llama.cpp's embeddings of these models.
 *
 *   h = token_embd[tok]                  (gemma-embedding: * sqrt(E))           [E, T]
 *   per layer il (pre-RMSNorm):
 *     x = rms_norm(h) * attn_norm
 *     q = Wq x (+ bq), k = Wk x (+ bk), v = Wv x (+ bv)      [D, H, T], [D, Hkv, T]
 *     q, k = rms_norm(q) * q_norm, rms_norm(k) * k_norm      (when the file has them)
 *     q, k = rope(q, k, pos)    (normal for llama/mistral, neox otherwise; a window
 *                                layer of gemma-embedding uses rope.freq_base_swa)
 *     a = softmax(q.k / sqrt(D) + mask) v
 *          mask: the token's own sequence; causal (keys up to the query) unless the
 *          model is bidirectional (gemma-embedding, attention.causal = false); a
 *          gemma-embedding window layer also needs |i - j| <= sliding_window / 2
 *     x = Wo a (+ bo)                    (gemma-embedding: rms_norm(x) * post_attention_norm)
 *     h = h + x
 *     x = rms_norm(h) * ffn_norm
 *     x = Wdown (silu(Wgate x) * Wup x)  (gemma-embedding: gelu(Wgate x) * Wup x, then
 *                                         rms_norm(x) * post_ffw_norm)
 *     h = h + x
 *   result: rms_norm(h) * output_norm; with dense layers (EmbeddingGemma's
 *   sentence-transformers Dense modules) W3 (W2 r (+ b2)): llama.cpp applies them
 *   after pooling, here to each kept row (linear, so the same for mean / cls / last
 *   pooling, and llama.cpp's rows for pooling none).
 */
#include <math.h>

#include "embed_internal.h"

static loom_tensor *proj(loom_ctx *ctx, loom_tensor *w, loom_tensor *b, loom_tensor *x) {
    loom_tensor *y = loom_mul_mat(ctx, w, x);
    return b ? loom_add(ctx, y, b) : y;
}

loom_tensor *emb_build_decoder(loom_embedder *e, loom_ctx *ctx, const emb_batch *b) {
    const emb_hparams *hp = &e->hp;
    const bool gemma = hp->arch == EMB_GEMMA;
    const int64_t T = b->n_tokens, H = hp->n_head, HKV = hp->n_head_kv, D = hp->head_dim;
    const float eps = hp->norm_eps;
    loom_tensor *tok, *pos, *mask, *mask_swa = NULL;
    emb_inputs(e, ctx, b, &tok, &pos, &mask, e->any_swa ? &mask_swa : NULL);
    loom_tensor *outs = emb_out_ids(ctx, b);

    loom_tensor *h = loom_get_rows(ctx, e->tok_embd, tok);
    if (gemma) h = loom_scale(ctx, h, sqrtf((float)hp->n_embd));
    h = emb_named(h, "inp_embd", -1);

    loom_rope_opts ro = loom_rope_default_opts();
    ro.mode = hp->rope_mode;
    for (int il = 0; il < hp->n_layer; il++) {
        const emb_layer *ly = &e->layers[il];
        loom_tensor *x = emb_named(loom_rms_norm(ctx, h, ly->attn_norm, eps), "attn_norm", il);
        int64_t ne_q[3] = {D, H, T}, ne_k[3] = {D, HKV, T};
        loom_tensor *q = loom_reshape(ctx, proj(ctx, ly->wq, ly->bq, x), 3, ne_q);
        loom_tensor *k = loom_reshape(ctx, proj(ctx, ly->wk, ly->bk, x), 3, ne_k);
        loom_tensor *v = loom_reshape(ctx, proj(ctx, ly->wv, ly->bv, x), 3, ne_k);
        if (ly->q_norm) q = loom_rms_norm(ctx, q, ly->q_norm, eps);
        if (ly->k_norm) k = loom_rms_norm(ctx, k, ly->k_norm, eps);
        const float base = ly->swa ? hp->rope_base_swa : hp->rope_base;
        ro.factors = ly->rope_freqs;
        q = emb_named(loom_rope(ctx, q, pos, hp->n_rot, base, hp->rope_freq_scale, &ro), "q", il);
        k = emb_named(loom_rope(ctx, k, pos, hp->n_rot, base, hp->rope_freq_scale, &ro), "k", il);
        v = emb_named(v, "v", il);
        loom_tensor *a = emb_attention(e, ctx, q, k, v, ly->swa ? mask_swa : mask, (int)T);
        x = emb_named(proj(ctx, ly->wo, ly->bo, a), "attn_out", il);
        if (outs && il == hp->n_layer - 1) { /* only the pooled rows go on */
            x = loom_get_rows(ctx, x, outs);
            h = loom_get_rows(ctx, h, outs);
        }
        if (ly->attn_post_norm) x = loom_rms_norm(ctx, x, ly->attn_post_norm, eps);
        h = emb_named(loom_add(ctx, x, h), "ffn_inp", il);
        x = emb_named(loom_rms_norm(ctx, h, ly->ffn_norm, eps), "ffn_norm", il);
        loom_tensor *g = loom_mul_mat(ctx, ly->ffn_gate, x), *u = loom_mul_mat(ctx, ly->ffn_up, x);
        /* gemma: GELU through llama.cpp's F16 table (loom_gelu_f16), as arch_gemma.c */
        loom_tensor *act = gemma ? loom_mul(ctx, loom_gelu_f16(ctx, g), u) : loom_swiglu(ctx, g, u);
        x = loom_mul_mat(ctx, ly->ffn_down, act);
        if (ly->ffn_post_norm) x = loom_rms_norm(ctx, x, ly->ffn_post_norm, eps);
        h = emb_named(loom_add(ctx, x, h), "l_out", il);
    }
    h = emb_named(loom_rms_norm(ctx, h, e->output_norm, eps), "result_norm", -1);
    if (e->dense_2) h = loom_mul_mat(ctx, e->dense_3, proj(ctx, e->dense_2, e->dense_2_b, h));
    return emb_named(h, "result_embd", -1);
}
