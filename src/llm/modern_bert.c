/*
 * modern_bert.c - the ModernBERT encoder graph (general.architecture "modern-bert":
 * ModernBERT, gte-modernbert, nomic modernbert-embed, IBM Granite Embedding R2), as
 * llama.cpp's modern-bert graph, written only against the public engine API (loom.h).
 *
 *   h = LN(token_embd[tok]) * token_embd_norm                       [E, T] (no biases anywhere)
 *   per layer il (pre-norm):
 *     n = LN(h) * attn_norm        (layer 0: n = h, it has no attn_norm)
 *     [q; k; v] = Wqkv n           q, k = rope_neox(q, k, pos; base of the layer)
 *     h = h + Wo softmax(q.k / sqrt(D) + mask) v
 *         (global layers, the first of every sliding_window_pattern: the sequence's mask;
 *          the others: a symmetric window |i - j| <= sliding_window / 2, rope.freq_base_swa)
 *     u = Wup (LN(h) * ffn_norm)   [2F, T]
 *     h = h + Wdown (act(u[0:F]) * u[F:2F])   (act: GELU through llama.cpp's F16 table, SiLU
 *                                              or ReLU: hidden_activation)
 *   result: LN(h) * output_norm
 */
#include <math.h>

#include "embed_internal.h"

/* rows [off, off + n) of y [rows, T], contiguous */
static loom_tensor *rows(loom_ctx *ctx, loom_tensor *y, int64_t off, int64_t n) {
    const int64_t a[3] = {n, (int64_t)loom_tensor_nb(y, 1), loom_tensor_ne(y, 1)};
    return loom_cont(ctx, loom_view(ctx, y, (size_t)off * sizeof(float), 3, a));
}

static loom_tensor *glu(loom_ctx *ctx, emb_glu kind, loom_tensor *u, int64_t F) {
    loom_tensor *a = rows(ctx, u, 0, F), *b = rows(ctx, u, F, F);
    switch (kind) {
    case EMB_GLU_SILU: return loom_swiglu(ctx, a, b);
    case EMB_GLU_RELU: return loom_mul(ctx, loom_relu(ctx, a), b);
    default: return loom_mul(ctx, loom_gelu_f16(ctx, a), b);
    }
}

loom_tensor *emb_build_modern_bert(loom_embedder *e, loom_ctx *ctx, const emb_batch *b) {
    const emb_hparams *hp = &e->hp;
    const int64_t T = b->n_tokens, H = hp->n_head, D = hp->head_dim, E = hp->n_embd;
    loom_tensor *tok, *pos, *mask, *mask_swa = NULL;
    emb_inputs(e, ctx, b, &tok, &pos, &mask, e->any_swa ? &mask_swa : NULL);
    loom_tensor *outs = emb_out_ids(ctx, b);

    loom_tensor *h = emb_named(loom_get_rows(ctx, e->tok_embd, tok), "inp_embd", -1);
    h = emb_named(loom_layer_norm(ctx, h, e->tok_norm, NULL, hp->norm_eps), "inp_norm", -1);
    loom_rope_opts ro = loom_rope_default_opts();
    ro.mode = LOOM_ROPE_NEOX;
    for (int il = 0; il < hp->n_layer; il++) {
        const emb_layer *ly = &e->layers[il];
        loom_tensor *n = ly->attn_norm ? loom_layer_norm(ctx, h, ly->attn_norm, NULL, hp->norm_eps) : h;
        loom_tensor *qkv = loom_mul_mat(ctx, ly->wqkv, n); /* [3E, T] */
        const int64_t ne3[3] = {D, H, T};
        loom_tensor *part[3];
        for (int j = 0; j < 3; j++) {
            const int64_t args[3] = {E, (int64_t)loom_tensor_nb(qkv, 1), T};
            part[j] = loom_cont_nd(ctx, loom_view(ctx, qkv, (size_t)j * (size_t)E * sizeof(float), 3, args), 3, ne3);
        }
        const float base = ly->swa ? hp->rope_base_swa : hp->rope_base;
        loom_tensor *q = emb_named(loom_rope(ctx, part[0], pos, hp->n_rot, base, 1.0f, &ro), "q", il);
        loom_tensor *k = emb_named(loom_rope(ctx, part[1], pos, hp->n_rot, base, 1.0f, &ro), "k", il);
        loom_tensor *a = emb_attention(e, ctx, q, k, part[2], ly->swa ? mask_swa : mask, (int)T);
        loom_tensor *x = emb_named(loom_mul_mat(ctx, ly->wo, a), "attn_out", il);
        if (outs && il == hp->n_layer - 1) { /* only the pooled rows go on */
            x = loom_get_rows(ctx, x, outs);
            h = loom_get_rows(ctx, h, outs);
        }
        h = emb_named(loom_add(ctx, x, h), "ffn_inp", il);
        loom_tensor *u = loom_mul_mat(ctx, ly->ffn_up, loom_layer_norm(ctx, h, ly->ffn_norm, NULL, hp->norm_eps));
        x = emb_named(loom_mul_mat(ctx, ly->ffn_down, glu(ctx, hp->glu, u, hp->n_ff)), "ffn_out", il);
        h = emb_named(loom_add(ctx, x, h), "l_out", il);
    }
    return emb_named(loom_layer_norm(ctx, h, e->output_norm, NULL, hp->norm_eps), "result_embd", -1);
}
