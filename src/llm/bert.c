/*
 * bert.c - the BERT encoder graph (general.architecture "bert": all-MiniLM, bge,
 * mxbai-embed ...), written only against the public engine API (loom.h).
 *
 *   h = LN(token_embd[tok] + token_types[0] + position_embd[pos]) * w + b   [E, T]
 *   per layer il (post-norm):
 *     q = Wq h + bq, k = Wk h + bk, v = Wv h + bv                          [D, H, T]
 *     a = softmax(q.k / sqrt(D) + mask) v    (mask: 0 within a sequence, -inf across)
 *     h = LN(Wo a + bo + h)                   (attn_output_norm)
 *     h = LN(Wdown gelu(Wup h + bup) + bdown + h)   (layer_output_norm)
 *   result: h (no final norm, no output projection)
 * Token types are all 0 ("sentence A"), as llama.cpp does.
 */
#include <math.h>

#include "embed_internal.h"

static loom_tensor *linear(loom_ctx *ctx, loom_tensor *w, loom_tensor *b, loom_tensor *x) {
    loom_tensor *y = loom_mul_mat(ctx, w, x);
    return b ? loom_add(ctx, y, b) : y;
}

loom_tensor *emb_build_bert(loom_embedder *e, loom_ctx *ctx, const emb_batch *b) {
    const emb_hparams *hp = &e->hp;
    const int64_t T = b->n_tokens, H = hp->n_head, D = hp->head_dim;
    loom_tensor *tok, *pos, *mask;
    emb_inputs(e, ctx, b, &tok, &pos, &mask, NULL);
    loom_tensor *outs = emb_out_ids(ctx, b);

    loom_tensor *h = loom_get_rows(ctx, e->tok_embd, tok);
    if (e->type_embd) {
        int64_t ne1[1] = {1};
        loom_tensor *zero = loom_zeros(loom_ctx_input(ctx), LOOM_TYPE_I32, 1, ne1);
        h = loom_add(ctx, h, loom_get_rows(ctx, e->type_embd, zero));
    }
    h = emb_named(loom_add(ctx, loom_get_rows(ctx, e->pos_embd, pos), h), "inp_embd", -1);
    h = emb_named(loom_layer_norm(ctx, h, e->tok_norm, e->tok_norm_b, hp->norm_eps), "inp_norm", -1);

    for (int il = 0; il < hp->n_layer; il++) {
        const emb_layer *ly = &e->layers[il];
        int64_t ne3[3] = {D, H, T};
        loom_tensor *q = emb_named(loom_reshape(ctx, linear(ctx, ly->wq, ly->bq, h), 3, ne3), "q", il);
        loom_tensor *k = emb_named(loom_reshape(ctx, linear(ctx, ly->wk, ly->bk, h), 3, ne3), "k", il);
        loom_tensor *v = emb_named(loom_reshape(ctx, linear(ctx, ly->wv, ly->bv, h), 3, ne3), "v", il);
        loom_tensor *a = emb_attention(e, ctx, q, k, v, mask, (int)T);
        loom_tensor *x = emb_named(linear(ctx, ly->wo, ly->bo, a), "attn_out", il);
        if (outs && il == hp->n_layer - 1) { /* only the pooled rows go on */
            x = loom_get_rows(ctx, x, outs);
            h = loom_get_rows(ctx, h, outs);
        }
        x = loom_add(ctx, x, h);
        h = emb_named(loom_layer_norm(ctx, x, ly->attn_out_norm, ly->attn_out_norm_b, hp->norm_eps), "ffn_inp",
                      il);
        x = loom_gelu(ctx, linear(ctx, ly->ffn_up, ly->ffn_up_b, h));
        x = emb_named(linear(ctx, ly->ffn_down, ly->ffn_down_b, x), "ffn_out", il);
        x = loom_add(ctx, x, h);
        h = emb_named(loom_layer_norm(ctx, x, ly->out_norm, ly->out_norm_b, hp->norm_eps), "l_out", il);
    }
    return emb_named(h, "result_embd", -1);
}
