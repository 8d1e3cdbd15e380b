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
 *
 * jina-bert-v2 (jina-embeddings-v2: hp.alibi_bias > 0), as llama.cpp's bert graph for it:
 * no position embeddings (ALiBi: each head adds slope(h) * -|i - j| to its scores, the
 * batch mask carrying the distances), optional LayerNorms over all of q and of k, an
 * optional second residual LayerNorm (attn_norm_2: LN(LN(a + h) + h)), and a GEGLU MLP
 * (ffn_up of twice ffn_length: gelu(first half) * second half), or gelu(Wgate x) *
 * (Wup x + b) with a separate gate, or a plain GELU MLP.
 */
#include <math.h>

#include "embed_internal.h"

static loom_tensor *linear(loom_ctx *ctx, loom_tensor *w, loom_tensor *b, loom_tensor *x) {
    loom_tensor *y = loom_mul_mat(ctx, w, x);
    return b ? loom_add(ctx, y, b) : y;
}

/* jina-bert-v2: a LayerNorm over all of x [E, T] when the layer has the weights */
static loom_tensor *norm_opt(loom_ctx *ctx, loom_tensor *x, loom_tensor *w, loom_tensor *b, float eps) {
    return w ? loom_layer_norm(ctx, x, w, b, eps) : x;
}

/* rows [off, off + n) of y [rows, T], contiguous */
static loom_tensor *rows(loom_ctx *ctx, loom_tensor *y, int64_t off, int64_t n) {
    const int64_t a[3] = {n, (int64_t)loom_tensor_nb(y, 1), loom_tensor_ne(y, 1)};
    return loom_cont(ctx, loom_view(ctx, y, (size_t)off * sizeof(float), 3, a));
}

/* jina-bert-v2's MLP (llama.cpp's rule): a GEGLU from ffn_up's two halves (gelu(first) *
 * second), gelu(Wgate x) * (Wup x + b) with a gate, else gelu(Wup x + b); GELU through
 * llama.cpp's F16 table, as its CPU geglu */
static loom_tensor *jina_mlp(loom_ctx *ctx, const emb_layer *ly, loom_tensor *x, int64_t F) {
    loom_tensor *u = linear(ctx, ly->ffn_up, ly->ffn_up_b, x);
    if (ly->geglu) return loom_mul(ctx, loom_gelu_f16(ctx, rows(ctx, u, 0, F)), rows(ctx, u, F, F));
    if (ly->ffn_gate) return loom_mul(ctx, loom_gelu_f16(ctx, loom_mul_mat(ctx, ly->ffn_gate, x)), u);
    return loom_gelu_f16(ctx, u);
}

loom_tensor *emb_build_bert(loom_embedder *e, loom_ctx *ctx, const emb_batch *b) {
    const emb_hparams *hp = &e->hp;
    const int64_t T = b->n_tokens, H = hp->n_head, D = hp->head_dim, E = hp->n_embd;
    const bool jina = hp->alibi_bias > 0.0f;
    loom_tensor *tok, *pos, *mask;
    emb_inputs(e, ctx, b, &tok, &pos, &mask, NULL);
    loom_tensor *outs = emb_out_ids(ctx, b);

    loom_tensor *h = loom_get_rows(ctx, e->tok_embd, tok);
    if (e->type_embd) {
        int64_t ne1[1] = {1};
        loom_tensor *zero = loom_zeros(loom_ctx_input(ctx), LOOM_TYPE_I32, 1, ne1);
        h = loom_add(ctx, h, loom_get_rows(ctx, e->type_embd, zero));
    }
    if (e->pos_embd) h = loom_add(ctx, loom_get_rows(ctx, e->pos_embd, pos), h);
    h = emb_named(h, "inp_embd", -1);
    h = emb_named(loom_layer_norm(ctx, h, e->tok_norm, e->tok_norm_b, hp->norm_eps), "inp_norm", -1);

    for (int il = 0; il < hp->n_layer; il++) {
        const emb_layer *ly = &e->layers[il];
        int64_t ne3[3] = {D, H, T};
        loom_tensor *q, *k, *v;
        if (ly->wqkv) { /* jina-bert-v2 files may fuse them (llama.cpp's create_tensor_qkv) */
            loom_tensor *y = linear(ctx, ly->wqkv, ly->bqkv, h);
            q = rows(ctx, y, 0, E), k = rows(ctx, y, E, E), v = rows(ctx, y, 2 * E, E);
        } else {
            q = linear(ctx, ly->wq, ly->bq, h), k = linear(ctx, ly->wk, ly->bk, h), v = linear(ctx, ly->wv, ly->bv, h);
        }
        q = emb_named(loom_reshape(ctx, norm_opt(ctx, q, ly->q_norm, ly->q_norm_b, hp->norm_eps), 3, ne3), "q", il);
        k = emb_named(loom_reshape(ctx, norm_opt(ctx, k, ly->k_norm, ly->k_norm_b, hp->norm_eps), 3, ne3), "k", il);
        v = emb_named(loom_reshape(ctx, v, 3, ne3), "v", il);
        loom_tensor *a = emb_attention(e, ctx, q, k, v, mask, (int)T);
        loom_tensor *x = emb_named(linear(ctx, ly->wo, ly->bo, a), "attn_out", il);
        if (outs && il == hp->n_layer - 1) { /* only the pooled rows go on */
            x = loom_get_rows(ctx, x, outs);
            h = loom_get_rows(ctx, h, outs);
        }
        x = loom_add(ctx, x, h);
        x = loom_layer_norm(ctx, x, ly->attn_out_norm, ly->attn_out_norm_b, hp->norm_eps);
        if (ly->attn_norm_2) /* jina-bert-v2: the layer input added again, a second LayerNorm */
            x = loom_layer_norm(ctx, loom_add(ctx, x, h), ly->attn_norm_2, ly->attn_norm_2_b, hp->norm_eps);
        h = emb_named(x, "ffn_inp", il);
        x = jina ? jina_mlp(ctx, ly, h, hp->n_ff) : loom_gelu(ctx, linear(ctx, ly->ffn_up, ly->ffn_up_b, h));
        x = emb_named(linear(ctx, ly->ffn_down, ly->ffn_down_b, x), "ffn_out", il);
        x = loom_add(ctx, x, h);
        h = emb_named(loom_layer_norm(ctx, x, ly->out_norm, ly->out_norm_b, hp->norm_eps), "l_out", il);
    }
    return emb_named(h, "result_embd", -1);
}
