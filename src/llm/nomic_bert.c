/*
 * nomic_bert.c - the nomic-bert encoder graph (general.architecture "nomic-bert":
 * nomic-embed-text), written only against the public engine API (loom.h).
 *
 *   h = LN(token_embd[tok] + token_types[0]) * w + b                       [E, T]
 *   per layer il (post-norm):
 *     [q; k; v] = Wqkv h (+ bqkv)     q, k = rope_neox(q, k, pos)          [D, H, T]
 *     a = softmax(q.k / sqrt(D) + mask) v    (mask: 0 within a sequence, -inf across)
 *     h = LN(Wo a (+ bo) + h)                 (attn_output_norm)
 *     h = LN(Wdown (silu(Wgate h) * (Wup h)) + h)   (layer_output_norm)
 *   result: h
 * nomic-bert-moe (nomic-embed-text-v2-moe): the MLP is Wdown gelu(Wup h + bup) + bdown,
 * and every moe_every_n_layers-th layer (il % n == 1) a mixture of GELU experts:
 * softmax router, top-k, weights as routed (times expert_weights_scale when set). */
#include <math.h>

#include "embed_internal.h"

static loom_tensor *moe_gelu(const emb_hparams *hp, loom_ctx *ctx, const emb_layer *ly, loom_tensor *x) {
    const int64_t E = loom_tensor_ne(x, 0), T = loom_tensor_ne(x, 1), K = hp->n_expert_used;
    loom_tensor *probs = loom_softmax(ctx, loom_mul_mat(ctx, ly->ffn_gate_inp, x)); /* [n_expert, T] */
    loom_tensor *sel = loom_cont(ctx, loom_top_k(ctx, probs, (int)K));              /* [K, T] */
    const int64_t ne_p[3] = {1, hp->n_expert, T}, ne_x[3] = {E, 1, T};
    loom_tensor *w = loom_get_rows(ctx, loom_reshape(ctx, probs, 3, ne_p), sel); /* [1, K, T] */
    if (hp->expert_weights_scale != 0.0f && hp->expert_weights_scale != 1.0f) w = loom_scale(ctx, w, hp->expert_weights_scale);
    loom_tensor *up = loom_mul_mat_id(ctx, ly->ffn_up_exps, loom_reshape(ctx, x, 3, ne_x), sel); /* [F, K, T] */
    loom_tensor *down = loom_mul(ctx, loom_mul_mat_id(ctx, ly->ffn_down_exps, loom_gelu_f16(ctx, up), sel), w);
    loom_tensor *out = NULL;
    for (int64_t k = 0; k < K; k++) {
        const int64_t args[3] = {E, (int64_t)loom_tensor_nb(down, 2), T};
        loom_tensor *v = loom_view(ctx, down, (size_t)k * loom_tensor_nb(down, 1), 3, args);
        out = out ? loom_add(ctx, out, v) : (K == 1 ? loom_cont(ctx, v) : v);
    }
    return out;
}

loom_tensor *emb_build_nomic_bert(loom_embedder *e, loom_ctx *ctx, const emb_batch *b) {
    const emb_hparams *hp = &e->hp;
    const int64_t T = b->n_tokens, H = hp->n_head, D = hp->head_dim, E = hp->n_embd;
    loom_tensor *tok, *pos, *mask;
    emb_inputs(e, ctx, b, &tok, &pos, &mask, NULL);
    loom_tensor *outs = emb_out_ids(ctx, b);

    loom_tensor *h = loom_get_rows(ctx, e->tok_embd, tok);
    if (e->type_embd) {
        int64_t ne1[1] = {1};
        loom_tensor *zero = loom_zeros(loom_ctx_input(ctx), LOOM_TYPE_I32, 1, ne1);
        h = loom_add(ctx, h, loom_get_rows(ctx, e->type_embd, zero));
    }
    h = emb_named(h, "inp_embd", -1);
    h = emb_named(loom_layer_norm(ctx, h, e->tok_norm, e->tok_norm_b, hp->norm_eps), "inp_norm", -1);

    loom_rope_opts ro = loom_rope_default_opts();
    ro.mode = LOOM_ROPE_NEOX;
    for (int il = 0; il < hp->n_layer; il++) {
        const emb_layer *ly = &e->layers[il];
        loom_tensor *qkv = loom_mul_mat(ctx, ly->wqkv, h); /* [3E, T] */
        if (ly->bqkv) qkv = loom_add(ctx, qkv, ly->bqkv);
        int64_t ne3[3] = {D, H, T};
        loom_tensor *part[3];
        for (int j = 0; j < 3; j++) {
            int64_t args[3] = {E, (int64_t)loom_tensor_nb(qkv, 1), T};
            loom_tensor *vw = loom_view(ctx, qkv, (size_t)j * (size_t)E * sizeof(float), 3, args);
            part[j] = loom_cont_nd(ctx, vw, 3, ne3);
        }
        loom_tensor *q = loom_rope(ctx, part[0], pos, hp->n_rot, hp->rope_base, hp->rope_freq_scale, &ro);
        loom_tensor *k = loom_rope(ctx, part[1], pos, hp->n_rot, hp->rope_base, hp->rope_freq_scale, &ro);
        q = emb_named(q, "q", il);
        k = emb_named(k, "k", il);
        loom_tensor *v = emb_named(part[2], "v", il);
        loom_tensor *a = emb_attention(e, ctx, q, k, v, mask, (int)T);
        loom_tensor *x = loom_mul_mat(ctx, ly->wo, a);
        if (ly->bo) x = loom_add(ctx, x, ly->bo);
        x = emb_named(x, "attn_out", il);
        if (outs && il == hp->n_layer - 1) { /* only the pooled rows go on */
            x = loom_get_rows(ctx, x, outs);
            h = loom_get_rows(ctx, h, outs);
        }
        x = loom_add(ctx, x, h);
        h = emb_named(loom_layer_norm(ctx, x, ly->attn_out_norm, ly->attn_out_norm_b, hp->norm_eps), "ffn_inp",
                      il);
        if (ly->ffn_gate_inp) {
            x = moe_gelu(hp, ctx, ly, h);
        } else if (hp->gelu_ffn) {
            x = loom_mul_mat(ctx, ly->ffn_up, h);
            if (ly->ffn_up_b) x = loom_add(ctx, x, ly->ffn_up_b);
            x = loom_mul_mat(ctx, ly->ffn_down, loom_gelu_f16(ctx, x));
            if (ly->ffn_down_b) x = loom_add(ctx, x, ly->ffn_down_b);
        } else {
            loom_tensor *g = loom_mul_mat(ctx, ly->ffn_gate, h);
            loom_tensor *u = loom_mul_mat(ctx, ly->ffn_up, h);
            x = loom_mul_mat(ctx, ly->ffn_down, loom_swiglu(ctx, g, u));
        }
        x = emb_named(x, "ffn_out", il);
        x = loom_add(ctx, x, h);
        h = emb_named(loom_layer_norm(ctx, x, ly->out_norm, ly->out_norm_b, hp->norm_eps), "l_out", il);
    }
    return emb_named(h, "result_embd", -1);
}
